package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/vocab"
)

// translate turns any error a handler meets into the status and
// Elasticsearch error type the client sees. It is the one place where
// sentinel errors of the lower layers become HTTP statuses.
func translate(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var be *membudget.BreakingError
	if errors.As(err, &be) {
		return &apiError{Status: http.StatusTooManyRequests, Type: "circuit_breaking_exception", Reason: be.Error(), Breaking: be}
	}
	var pe *coord.PartialFailureError
	if errors.As(err, &pe) {
		// Before the first shard's error, which it wraps as its cause.
		return &apiError{Status: http.StatusServiceUnavailable, Type: "search_phase_execution_exception", Reason: pe.Error(), CausedBy: translate(pe.First.Err)}
	}
	var de *esdsl.Error
	if errors.As(err, &de) {
		return &apiError{Status: dslStatus(de), Type: de.Type, Reason: de.Reason}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errContentTooLong(mbe.Limit)
	}
	if ae := securityError(err); ae != nil {
		return ae
	}
	reason := err.Error()
	for _, t := range []struct {
		sentinel error
		status   int
		typ      string
	}{
		{state.ErrIndexNotFound, http.StatusNotFound, "index_not_found_exception"},
		{state.ErrIndexExists, http.StatusBadRequest, "resource_already_exists_exception"},
		{vocab.ErrInvalidIndexName, http.StatusBadRequest, "invalid_index_name_exception"},
		{vocab.ErrDocumentNotFound, http.StatusNotFound, "document_missing_exception"},
		{vocab.ErrVersionConflict, http.StatusConflict, "version_conflict_engine_exception"},
		{index.ErrInvalidMapping, http.StatusBadRequest, "mapper_parsing_exception"},
		{index.ErrMappingConflict, http.StatusBadRequest, "illegal_argument_exception"},
		{index.ErrIllegalArgument, http.StatusBadRequest, "illegal_argument_exception"},
		{index.ErrStrictDynamic, http.StatusBadRequest, "strict_dynamic_mapping_exception"},
		{index.ErrDocParse, http.StatusBadRequest, "document_parsing_exception"},
		{vocab.ErrInvalidRequest, http.StatusBadRequest, "illegal_argument_exception"},
		{vocab.ErrIndexClosed, http.StatusBadRequest, "index_closed_exception"},
		{vocab.ErrContextMissing, http.StatusNotFound, "search_context_missing_exception"},
		// A node holds as many reader contexts as its limit allows: retry
		// once some are closed or expire. Elasticsearch's type for scrolls;
		// it has no limit on points in time (OpenSearch's
		// search.max_open_pit_context refuses them as a rejected
		// execution), so theirs is its type of a 429 rejection.
		{vocab.ErrTooManyScrollContexts, http.StatusTooManyRequests, "too_many_scroll_contexts_exception"},
		{vocab.ErrTooManyPITContexts, http.StatusTooManyRequests, "es_rejected_execution_exception"},
		// Indexing pressure: the node holds as many bytes of writes as its
		// share of the memory limit allows; retry later or send less.
		{membudget.ErrRejected, http.StatusTooManyRequests, "es_rejected_execution_exception"},
		// The flood stage disk watermark's read_only_allow_delete block:
		// retry once the disk is below the high watermark (Elasticsearch's
		// TOO_MANY_REQUESTS/12 block).
		{state.ErrIndexBlocked, http.StatusTooManyRequests, "cluster_block_exception"},
		{coord.ErrNotSupported, http.StatusNotImplemented, "not_implemented"},
		// No shard answered: ES's search_phase_execution_exception. The
		// cause is in the reason; client errors were caught before the
		// engine ran (esdsl validates queries), so this is the node's side.
		{coord.ErrAllShardsFailed, http.StatusServiceUnavailable, "search_phase_execution_exception"},
		{vocab.ErrClusterBlocked, http.StatusServiceUnavailable, "cluster_block_exception"},
		{vocab.ErrUnavailable, http.StatusServiceUnavailable, "unavailable_shards_exception"},
		{vocab.ErrStaleRouting, http.StatusServiceUnavailable, "unavailable_shards_exception"},
		{state.ErrMappingVersion, http.StatusServiceUnavailable, "process_cluster_event_timeout_exception"},
		{vocab.ErrClosed, http.StatusServiceUnavailable, "node_closed_exception"},
		{index.ErrClosed, http.StatusServiceUnavailable, "node_closed_exception"},
	} {
		if errors.Is(err, t.sentinel) {
			// The type already says what the sentinel says; keep the detail
			// ("no such index [x]"), as Elasticsearch's reasons read.
			if detail, ok := strings.CutPrefix(reason, t.sentinel.Error()+": "); ok && detail != "" {
				reason = detail
			}
			out := &apiError{Status: t.status, Type: t.typ, Reason: reason}
			if t.sentinel == state.ErrIndexNotFound || t.sentinel == vocab.ErrIndexClosed {
				out.Index = notFoundName(reason)
			}
			if inner := causeOf(err, t.sentinel); inner != nil {
				out.CausedBy = translate(inner)
			}
			return out
		}
	}
	if ce := contextError(err); ce != nil {
		return ce
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "internal_server_error", Reason: reason}
}

// dslStatus is the status of an error of the DSL translator, by its kind;
// the Elasticsearch type and reason come with the error itself.
func dslStatus(de *esdsl.Error) int {
	switch {
	case errors.Is(de, esdsl.ErrInvalidRequest):
		return http.StatusBadRequest
	default:
		// A kind not given a status here yet: the translator judges only
		// the request, so it is the client's.
		return http.StatusBadRequest
	}
}

// causeOf returns the error that err wraps beside sentinel (an error made
// with two %w verbs, such as "all shards failed: <the first shard's
// error>"), or nil.
func causeOf(err, sentinel error) error {
	u, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	for _, e := range u.Unwrap() {
		if !errors.Is(e, sentinel) {
			return e
		}
	}
	return nil
}

// notFoundName reads the index name of "no such index [x]".
func notFoundName(reason string) string {
	i := strings.LastIndexByte(reason, '[')
	j := strings.LastIndexByte(reason, ']')
	if i < 0 || j < i {
		return ""
	}
	return reason[i+1 : j]
}

// securityError translates the errors of security/auth: a refused action
// is 403 security_exception naming the action and the user; a request the
// security APIs refuse is a 400 in Elasticsearch's shape.
func securityError(err error) *apiError {
	var fe *auth.ForbiddenError
	switch {
	case errors.As(err, &fe):
		return &apiError{Status: http.StatusForbidden, Type: "security_exception", Reason: fe.Error()}
	case errors.Is(err, auth.ErrForbidden):
		return &apiError{Status: http.StatusForbidden, Type: "security_exception", Reason: err.Error()}
	case errors.Is(err, auth.ErrPasswordPolicy), errors.Is(err, auth.ErrInvalidName), errors.Is(err, auth.ErrInvalidAPIKeyRequest):
		reason := err.Error()
		for _, sentinel := range []error{auth.ErrInvalidName, auth.ErrInvalidAPIKeyRequest} {
			reason = strings.TrimPrefix(reason, sentinel.Error()+": ")
		}
		return validationErr(reason)
	case errors.Is(err, auth.ErrInvalidRole):
		return &apiError{Status: http.StatusBadRequest, Type: "parse_exception", Reason: err.Error()}
	}
	return nil
}
