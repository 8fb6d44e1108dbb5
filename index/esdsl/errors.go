package esdsl

import (
	"errors"
	"fmt"
)

// ErrInvalidRequest is the kind of an Error whose request the client must
// change: it does not parse, names a key or parameter this translator does
// not know or support, or gives a value its field or context cannot take.
// It is the only kind this package has; the caller's edge (an HTTP front
// end) decides what it answers for it.
var ErrInvalidRequest = errors.New("esdsl: invalid request")

// Error is a client error in Elasticsearch's shape: Type is the
// Elasticsearch exception type ("parsing_exception",
// "x_content_parse_exception", "illegal_argument_exception",
// "query_shard_exception", ...) and Reason a message that names the offending
// key or value and says what to do.
type Error struct {
	// Kind classifies the failure without saying how it is answered: one of
	// this package's sentinel errors (ErrInvalidRequest). Unwrap returns it,
	// so errors.Is(err, esdsl.ErrInvalidRequest) holds for an err that
	// holds such an Error.
	Kind   error
	Type   string
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Type, e.Reason)
}

// Unwrap returns e's Kind.
func (e *Error) Unwrap() error { return e.Kind }

// invalid is an ErrInvalidRequest of Elasticsearch type typ.
func invalid(typ, reason string) *Error {
	return &Error{Kind: ErrInvalidRequest, Type: typ, Reason: reason}
}

func parsingErr(format string, args ...any) *Error {
	return invalid("parsing_exception", fmt.Sprintf(format, args...))
}

func contentErr(format string, args ...any) *Error {
	return invalid("x_content_parse_exception", fmt.Sprintf(format, args...))
}

func argErr(format string, args ...any) *Error {
	return invalid("illegal_argument_exception", fmt.Sprintf(format, args...))
}

func shardErr(format string, args ...any) *Error {
	return invalid("query_shard_exception", fmt.Sprintf(format, args...))
}

func aggErr(format string, args ...any) *Error {
	return invalid("illegal_argument_exception", fmt.Sprintf(format, args...))
}

var _ error = (*Error)(nil)
