package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/weftsearch/weft/internal/membudget"
)

// apiError is an error answered to the client in Elasticsearch's error shape:
//
//	{"error":{"root_cause":[{"type":..,"reason":..}],"type":..,"reason":..},"status":..}
//
// Handlers build one directly for input they reject themselves; everything
// that comes back from the engine or the DSL translator goes through
// translate, the one place where sentinel errors become statuses.
type apiError struct {
	Status int
	Type   string
	Reason string
	// Index, when set, is reported as the error's "index" field, as ES does
	// for index-scoped failures.
	Index string
	// CausedBy is the error this one wraps, reported as "caused_by".
	CausedBy *apiError
	// Breaking, for a circuit_breaking_exception, reports bytes_wanted,
	// bytes_limit and durability as Elasticsearch does.
	Breaking *membudget.BreakingError
}

func (e *apiError) Error() string { return fmt.Sprintf("%s: %s", e.Type, e.Reason) }

func badRequest(typ, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typ, Reason: fmt.Sprintf(format, args...)}
}

func illegalArgument(format string, args ...any) *apiError {
	return badRequest("illegal_argument_exception", format, args...)
}

// esErrorCause is one element of ES's root_cause list and the body of "error".
type esErrorCause struct {
	Type         string        `json:"type"`
	Reason       string        `json:"reason"`
	ResourceType string        `json:"resource.type,omitempty"`
	ResourceID   string        `json:"resource.id,omitempty"`
	Index        string        `json:"index,omitempty"`
	IndexUUID    string        `json:"index_uuid,omitempty"`
	BytesWanted  *int64        `json:"bytes_wanted,omitempty"`
	BytesLimit   *int64        `json:"bytes_limit,omitempty"`
	Durability   string        `json:"durability,omitempty"`
	CausedBy     *esErrorCause `json:"caused_by,omitempty"`
}

type esErrorBody struct {
	RootCause []esErrorCause `json:"root_cause"`
	esErrorCause
}

type esErrorResponse struct {
	Error  esErrorBody `json:"error"`
	Status int         `json:"status"`
}

func (e *apiError) cause() esErrorCause {
	c := esErrorCause{Type: e.Type, Reason: e.Reason, Index: e.Index}
	if e.Index != "" {
		c.IndexUUID = "_na_"
		if e.Type == "index_not_found_exception" {
			c.ResourceType, c.ResourceID = "index_or_alias", e.Index
		}
	}
	if b := e.Breaking; b != nil {
		c.BytesWanted, c.BytesLimit, c.Durability = &b.Wanted, &b.Limit, "TRANSIENT"
	}
	if e.CausedBy != nil {
		cb := e.CausedBy.cause()
		c.CausedBy = &cb
	}
	return c
}

// rootCause is the innermost error of the caused_by chain, as ES reports
// in root_cause.
func (e *apiError) rootCause() *apiError {
	for e.CausedBy != nil {
		e = e.CausedBy
	}
	return e
}

func (e *apiError) response() esErrorResponse {
	root := e.rootCause().cause()
	root.CausedBy = nil
	return esErrorResponse{Error: esErrorBody{RootCause: []esErrorCause{root}, esErrorCause: e.cause()}, Status: e.Status}
}

// errContentTooLong answers bodies over Config.MaxBodyBytes.
func errContentTooLong(limit int64) *apiError {
	return &apiError{
		Status: http.StatusRequestEntityTooLarge,
		Type:   "content_too_long_exception",
		Reason: fmt.Sprintf("request body is larger than the node's limit of %d bytes; send smaller requests (split the bulk) or raise --max-body-bytes", limit),
	}
}

// contextError translates cancellation and deadlines, which every layer may
// return; the client usually has gone away already.
func contextError(err error) *apiError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusGatewayTimeout, Type: "timeout_exception", Reason: err.Error()}
	case errors.Is(err, context.Canceled):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "task_cancelled_exception", Reason: err.Error()}
	}
	return nil
}
