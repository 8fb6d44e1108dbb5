package httpapi

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/weftsearch/weft/security/auth"

	"github.com/weftsearch/weft/coord"
)

// POST /{index}/_pit opens a point in time: one copy of every shard of the
// indices pinned (on its node) for keep_alive, which every search with it
// extends; DELETE /_pit closes it. Searches name it in their body
// ("pit": {"id": ..., "keep_alive": ...}) instead of indices in the path.

// handleOpenPIT serves POST /{index}/_pit.
func (s *Server) handleOpenPIT(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if !q.Has("keep_alive") {
		return validationErr("[keep_alive] is not specified")
	}
	keep, err := parseTimeValue(q.Get("keep_alive"))
	if err != nil {
		return err
	}
	if keep <= 0 {
		return illegalArgument("[keep_alive] must be positive, got [%s]", q.Get("keep_alive"))
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 && !bytes.Equal(bytes.TrimSpace(body), []byte("{}")) {
		return illegalArgument("a point in time body ([index_filter]) is not supported; open it over the indices you name")
	}
	res, err := s.resolveReq(r.Context(), r.PathValue("index"), q, coord.DefaultResolve)
	if err != nil {
		return err
	}
	if len(res.Indices) == 0 {
		return validationErr("a point in time needs at least one index")
	}
	if len(res.Filters) > 0 || len(res.Routing) > 0 {
		return illegalArgument("a point in time over filtered or routed aliases is not supported; name the indices")
	}
	pit, err := s.eng.OpenPIT(r.Context(), res.Indices, keep)
	if err != nil {
		return err
	}
	s.recordOwner(r.Context(), pit)
	s.writeJSON(w, r, http.StatusOK, map[string]any{"id": pit.Encode(),
		"_shards": shardsHeader{Total: len(pit.Shards), Successful: len(pit.Shards)}})
	return nil
}

// handleClosePIT serves DELETE /_pit: {"id": ...}.
func (s *Server) handleClosePIT(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var b struct {
		ID string `json:"id"`
	}
	if err := decodeStrict(body, &b); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the close point in time body: %v", err)
	}
	if b.ID == "" {
		return validationErr("point in time id is missing")
	}
	pit, err := coord.DecodePIT(b.ID)
	if err != nil {
		return err
	}
	if err := s.authorizePIT(r.Context(), pit, auth.ActionClosePointInTime); err != nil {
		if errors.Is(err, errForeignContext) {
			// Another user's: answered as a point in time already gone.
			s.writeJSON(w, r, http.StatusNotFound, map[string]any{"succeeded": true, "num_freed": 0})
			return nil
		}
		return err
	}
	s.forgetOwner(pit)
	n, err := s.eng.ClosePIT(r.Context(), pit)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if n == 0 {
		status = http.StatusNotFound
	}
	s.writeJSON(w, r, status, map[string]any{"succeeded": true, "num_freed": n})
	return nil
}
