package esdsl

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
)

// A scroll pages through a point in time (the coordinating node opens one
// for the first page): its id carries the indices, the original request
// and the point in time's id — compressed, checksummed and base64url
// encoded — while the cursor (where the last page ended) is kept with the
// point in time's contexts on the data nodes. Every request with the same
// id therefore continues where the last one ended, from any node, and the
// pages see the documents of the moment the scroll began. The checksum
// rejects garbled ids; it is not a secret, and needs not be: an id only
// pages a search its holder could send anyway.

const scrollVersion = 2

// maxScrollState bounds the decompressed size of a scroll id's state.
const maxScrollState = 1 << 22

type scrollState struct {
	V         int        `json:"v"`
	Indices   []string   `json:"i"`
	Body      string     `json:"b,omitempty"`
	Params    url.Values `json:"p,omitempty"`
	KeepAlive int64      `json:"k"`
	Now       int64      `json:"t"` // first page's now, Unix nanoseconds
	Scope     Scope      `json:"s,omitzero"`
	PIT       string     `json:"pit"`
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

// ScrollID returns the id of the scroll s begins over the point in time
// pit, or "" when s is not a scroll search. indices are the concrete
// indices searched.
func (s *Search) ScrollID(pit string, indices []string) (string, error) {
	if s.Scroll <= 0 {
		return "", nil
	}
	st := scrollState{
		V: scrollVersion, Indices: indices, Body: string(s.body), Params: s.params,
		KeepAlive: s.Scroll.Milliseconds(), Now: s.now.UnixNano(), Scope: s.scope, PIT: pit,
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

// ScrollCursor is where the page res of s ended: the page number and the
// raw sort keys of its last hit (the previous page's when res is empty, so
// that a scroll past its end stays there).
func (s *Search) ScrollCursor(res *bleve.SearchResult) (page int, after [][]byte) {
	after = s.after
	if res != nil && len(res.Hits) > 0 {
		last := res.Hits[len(res.Hits)-1]
		after = make([][]byte, 0, len(s.Request.Sort))
		for i, sp := range s.allSorts() {
			switch {
			case sp.kind == sortScore:
				after = append(after, []byte(strconv.FormatFloat(last.Score, 'g', -1, 64)))
			case sp.kind == sortID:
				after = append(after, []byte(last.ID))
			case i < len(last.Sort):
				after = append(after, []byte(last.Sort[i]))
			default:
				after = append(after, nil)
			}
		}
	}
	return s.scrollPage + 1, after
}

func badScrollID(why string) *Error {
	return &Error{Kind: ErrInvalidRequest, Type: "illegal_argument_exception",
		Reason: "Cannot parse scroll id: " + why + "; use the _scroll_id of the previous response unchanged"}
}

// Scroll is a decoded scroll id: the indices and point in time it pages
// through, and what rebuilds its search for a page.
type Scroll struct {
	Indices []string
	PIT     string
	// KeepAlive is the scroll's keep-alive: the id's, or the one the
	// continuation asked for.
	KeepAlive time.Duration
	st        scrollState
}

// ParseScroll decodes a scroll id; keepAlive (the request's "scroll", may
// be "") renews the keep-alive. A garbled id is a 400.
func ParseScroll(scrollID string, keepAlive string) (*Scroll, error) {
	if scrollID == "" {
		return nil, &Error{Kind: ErrInvalidRequest, Type: "action_request_validation_exception",
			Reason: "Validation Failed: 1: scrollId is missing;"}
	}
	data, err := base64.RawURLEncoding.DecodeString(scrollID)
	if err != nil || len(data) < 9 {
		return nil, badScrollID("not a scroll id of this node")
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(data[8:])), maxScrollState+1))
	if err != nil || len(raw) > maxScrollState {
		return nil, badScrollID("corrupt")
	}
	sum := sha256.Sum256(raw)
	if !bytes.Equal(sum[:8], data[:8]) {
		return nil, badScrollID("checksum mismatch")
	}
	var st scrollState
	if err := json.Unmarshal(raw, &st); err != nil || st.V != scrollVersion || st.PIT == "" {
		return nil, badScrollID("unknown format")
	}
	sc := &Scroll{Indices: st.Indices, PIT: st.PIT, KeepAlive: time.Duration(st.KeepAlive) * time.Millisecond, st: st}
	if keepAlive != "" {
		if sc.KeepAlive, err = parseDuration(keepAlive, "scroll"); err != nil {
			return nil, err
		}
		if sc.KeepAlive <= 0 {
			return nil, argErr("[scroll] keep-alive must be positive, got [%s]", keepAlive)
		}
	}
	return sc, nil
}

// Page rebuilds the scroll's search for the page after the one that ended
// at cursor (page, after), on the scroll's point in time. Date math
// resolves against the first page's now, so every page runs the same
// query.
func (sc *Scroll) Page(fields Fields, page int, after [][]byte) (*Search, error) {
	s, err := parseSearchAt([]byte(sc.st.Body), sc.st.Params, fields, time.Unix(0, sc.st.Now).UTC(), sc.st.Scope)
	if err != nil {
		return nil, err
	}
	if s.Scroll <= 0 {
		return nil, badScrollID("not a scroll search")
	}
	s.Scroll = sc.KeepAlive
	if err := s.continueScroll(page, after); err != nil {
		return nil, err
	}
	s.SetPointInTime(sc.PIT, sc.KeepAlive)
	return s, nil
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
