package esdsl

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
)

// Scroll ids are stateless: each one carries what the next page needs — the
// indices, the original request, the sort key of the last hit returned
// (search_after) and the expiry — compressed, checksummed and base64url
// encoded. Nothing is kept on the node, so a scroll survives a restart and
// clearing one is a no-op. The checksum rejects garbled ids; it is not a
// secret, and needs not be: an id only replays a search its holder could send
// anyway. Unlike Elasticsearch's scroll contexts, pages are not a
// point-in-time snapshot: documents written between pages may be seen or
// skipped, as with search_after.

const scrollVersion = 1

// maxScrollState bounds the decompressed size of a scroll id's state.
const maxScrollState = 1 << 22

type scrollState struct {
	V         int        `json:"v"`
	Indices   []string   `json:"i"`
	Body      string     `json:"b,omitempty"`
	Params    url.Values `json:"p,omitempty"`
	After     [][]byte   `json:"a,omitempty"`
	Expires   int64      `json:"e"`
	KeepAlive int64      `json:"k"`
	Page      int        `json:"n"`
	Now       int64      `json:"t"` // first page's now, Unix nanoseconds
	Scope     Scope      `json:"s,omitzero"`
}

// ensureTiebreak makes the sort of a scroll search total: the user's sort
// (or _score) followed by _id, so search_after never skips or repeats a hit.
func (s *Search) ensureTiebreak() {
	order := s.Request.Sort
	if len(s.sorts) == 0 {
		order = search.SortOrder{&search.SortScore{Desc: true}}
		s.hiddenSorts = append(s.hiddenSorts, sortSpec{kind: sortScore, desc: true})
	}
	for _, sp := range s.sorts {
		if sp.kind == sortID {
			return
		}
	}
	order = append(order, &search.SortDocID{})
	s.hiddenSorts = append(s.hiddenSorts, sortSpec{kind: sortID})
	s.Request.SortByCustom(order)
}

// allSorts is the user's sort followed by the tiebreak added for scrolling.
func (s *Search) allSorts() []sortSpec {
	return append(append([]sortSpec(nil), s.sorts...), s.hiddenSorts...)
}

// ScrollID returns the id that continues s after res, or "" when s is not
// a scroll search. indices are the concrete indices searched; now starts the
// keep-alive.
func (s *Search) ScrollID(indices []string, res *bleve.SearchResult, now time.Time) (string, error) {
	if s.Scroll <= 0 {
		return "", nil
	}
	st := scrollState{
		V: scrollVersion, Indices: indices, Body: string(s.body), Params: s.params,
		After: s.after, Expires: now.Add(s.Scroll).UnixMilli(), KeepAlive: s.Scroll.Milliseconds(),
		Page: s.scrollPage + 1, Now: s.now.UnixNano(), Scope: s.scope,
	}
	if res != nil && len(res.Hits) > 0 {
		last := res.Hits[len(res.Hits)-1]
		st.After = make([][]byte, 0, len(s.Request.Sort))
		for i, sp := range s.allSorts() {
			switch {
			case sp.kind == sortScore:
				st.After = append(st.After, []byte(strconv.FormatFloat(last.Score, 'g', -1, 64)))
			case sp.kind == sortID:
				st.After = append(st.After, []byte(last.ID))
			case i < len(last.Sort):
				st.After = append(st.After, []byte(last.Sort[i]))
			default:
				st.After = append(st.After, nil)
			}
		}
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	sum := sha256.Sum256(raw)
	buf.Write(sum[:8])
	zw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(raw); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(buf.Bytes()), nil
}

func badScrollID(why string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "illegal_argument_exception",
		Reason: "Cannot parse scroll id: " + why + "; use the _scroll_id of the previous response unchanged"}
}

// ParseScroll decodes a scroll id into the indices to search and the
// Search for the next page. keepAlive (the request's "scroll", may be "")
// renews the keep-alive; an id past its expiry at now is a 404
// search_context_missing_exception, a garbled one a 400.
func ParseScroll(scrollID string, keepAlive string, fields Fields, now time.Time) ([]string, *Search, error) {
	if scrollID == "" {
		return nil, nil, &Error{Status: http.StatusBadRequest, Type: "action_request_validation_exception",
			Reason: "Validation Failed: 1: scrollId is missing;"}
	}
	data, err := base64.RawURLEncoding.DecodeString(scrollID)
	if err != nil || len(data) < 9 {
		return nil, nil, badScrollID("not a scroll id of this node")
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(data[8:])), maxScrollState+1))
	if err != nil || len(raw) > maxScrollState {
		return nil, nil, badScrollID("corrupt")
	}
	sum := sha256.Sum256(raw)
	if !bytes.Equal(sum[:8], data[:8]) {
		return nil, nil, badScrollID("checksum mismatch")
	}
	var st scrollState
	if err := json.Unmarshal(raw, &st); err != nil || st.V != scrollVersion {
		return nil, nil, badScrollID("unknown format")
	}
	if now.UnixMilli() > st.Expires {
		return nil, nil, &Error{Status: http.StatusNotFound, Type: "search_context_missing_exception",
			Reason: "No search context found for id [" + scrollID[:min(len(scrollID), 32)] + "...]: the scroll expired; start a new scroll"}
	}
	// Date math resolves against the first page's now, so every page runs
	// the same query.
	s, err := parseSearchAt([]byte(st.Body), st.Params, fields, time.Unix(0, st.Now).UTC(), st.Scope)
	if err != nil {
		return nil, nil, err
	}
	if s.Scroll <= 0 {
		return nil, nil, badScrollID("not a scroll search")
	}
	s.Scroll = time.Duration(st.KeepAlive) * time.Millisecond
	if keepAlive != "" {
		if s.Scroll, err = parseDuration(keepAlive, "scroll"); err != nil {
			return nil, nil, err
		}
		if s.Scroll <= 0 {
			return nil, nil, argErr("[scroll] keep-alive must be positive, got [%s]", keepAlive)
		}
	}
	if err := s.continueScroll(st.Page, st.After); err != nil {
		return nil, nil, err
	}
	return st.Indices, s, nil
}

// continueScroll makes s the scroll page after the one that ended at the
// raw sort keys after (nil: the first page).
func (s *Search) continueScroll(page int, after [][]byte) error {
	s.scrollPage = page
	s.after = after
	if after == nil {
		return nil
	}
	if len(after) != len(s.Request.Sort) {
		return badScrollID("sort mismatch")
	}
	keys := make([]string, len(after))
	for i, a := range after {
		keys[i] = string(a)
		if sf, ok := s.Request.Sort[i].(*search.SortField); ok {
			// The id holds bleve's raw sort keys (prefix-coded numbers,
			// missing-value markers); compare them as they are.
			sf.Type = search.SortFieldAuto
		}
	}
	s.Request.SearchAfter = keys
	s.Request.From = 0
	return nil
}
