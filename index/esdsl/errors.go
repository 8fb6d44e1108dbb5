package esdsl

import (
	"fmt"
	"net/http"
)

// Error is a client error in Elasticsearch's shape: Status is the HTTP status
// (4xx), Type the Elasticsearch exception type ("parsing_exception",
// "x_content_parse_exception", "illegal_argument_exception",
// "search_context_missing_exception", ...) and Reason a message that names
// the offending key or value and says what to do.
type Error struct {
	Status int
	Type   string
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Type, e.Reason)
}

func parsingErr(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "parsing_exception", Reason: fmt.Sprintf(format, args...)}
}

func contentErr(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "x_content_parse_exception", Reason: fmt.Sprintf(format, args...)}
}

func argErr(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "illegal_argument_exception", Reason: fmt.Sprintf(format, args...)}
}

func shardErr(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "query_shard_exception", Reason: fmt.Sprintf(format, args...)}
}

func aggErr(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "illegal_argument_exception", Reason: fmt.Sprintf(format, args...)}
}

var _ error = (*Error)(nil)
