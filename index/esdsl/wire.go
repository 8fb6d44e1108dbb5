package esdsl

import (
	"net/url"
	"time"
)

// Wire is what rebuilds a Search on another node: the request as the client
// sent it, the instant its date math was resolved against, and where a
// scroll continuation starts. Data nodes of a cluster translate the request
// themselves from it (with their own copy of the same mapping version), as
// Elasticsearch's shards do, because the bleve request a Search holds does
// not serialise (Weft's own scoring queries, global statistics in the
// context). It is plain data, meant for JSON.
type Wire struct {
	Body   []byte     `json:"b,omitempty"`
	Params url.Values `json:"p,omitempty"`
	// Now is the Unix nanosecond instant date math resolves against.
	Now int64 `json:"t"`
	// Count marks a _count request.
	Count bool `json:"c,omitempty"`
	// ScrollPage and After continue a scroll (After: the raw sort keys of
	// the last hit of the previous page).
	ScrollPage int      `json:"n,omitempty"`
	After      [][]byte `json:"a,omitempty"`
	// Scope is what the indices searched add to the request.
	Scope Scope `json:"s,omitzero"`
}

// Wire returns what FromWire needs to rebuild s elsewhere.
func (s *Search) Wire() Wire {
	return Wire{Body: s.body, Params: s.params, Now: s.now.UnixNano(), Count: s.count, ScrollPage: s.scrollPage, After: s.after, Scope: s.scope}
}

// FromWire rebuilds the Search that w was taken from, translating the
// request against fields (the same mapping the sender used, or a newer
// one). Errors are as ParseSearch's.
func FromWire(w Wire, fields Fields) (*Search, error) {
	now := time.Unix(0, w.Now).UTC()
	if w.Count {
		return parseCountAt(w.Body, w.Params, fields, now, w.Scope)
	}
	s, err := parseSearchAt(w.Body, w.Params, fields, now, w.Scope)
	if err != nil {
		return nil, err
	}
	if w.ScrollPage > 0 || w.After != nil {
		if err := s.continueScroll(w.ScrollPage, w.After); err != nil {
			return nil, err
		}
	}
	return s, nil
}
