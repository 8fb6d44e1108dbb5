package httpapi

import (
	"net/http"
)

// POST /{index}/_close and /{index}/_open. A closed index keeps its shard
// copies (assigned, replicated, on disk) and refuses reads and writes with
// index_closed_exception until it is opened again; wildcards skip it unless
// expand_wildcards names closed indices. The state is part of the index's
// committed metadata, so every node refuses the same requests.

// handleCloseIndex serves POST /{index}/_close.
func (s *Server) handleCloseIndex(w http.ResponseWriter, r *http.Request) error {
	return s.setClosed(w, r, true)
}

// handleOpenIndex serves POST /{index}/_open.
func (s *Server) handleOpenIndex(w http.ResponseWriter, r *http.Request) error {
	return s.setClosed(w, r, false)
}

func (s *Server) setClosed(w http.ResponseWriter, r *http.Request, closed bool) error {
	expr := r.PathValue("index")
	if closed && s.destructiveRequiresName() {
		for _, part := range splitComma(expr) {
			if isWildcard(part) {
				return illegalArgument("Wildcard expressions or all indices are not allowed when closing [%s]; name each index, or set the cluster setting action.destructive_requires_name to false", expr)
			}
		}
	}
	names, err := s.resolveAdmin(expr, r)
	if err != nil {
		return err
	}
	if _, err := writeOptions(r); err != nil { // wait_for_active_shards is checked, the change waits for its commit
		return err
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.eng.SetClosed(ctx, names, closed); err != nil {
		return err
	}
	reply := map[string]any{"acknowledged": true, "shards_acknowledged": true}
	if closed {
		indices := map[string]any{}
		for _, n := range names {
			indices[n] = map[string]any{"closed": true}
		}
		reply["indices"] = indices
	}
	s.writeJSON(w, r, http.StatusOK, reply)
	return nil
}
