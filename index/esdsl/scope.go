package esdsl

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"
)

// Scope is what the indices a request runs on add to it: the filter of the
// aliases it reached them through, and the limits their settings set
// (index.max_result_window and the like; 0 means Elasticsearch's default).
// The coordinating node derives it from the cluster's metadata; it travels
// with the request (Wire, scroll ids) so that every node translates the
// same search. The zero Scope adds nothing.
type Scope struct {
	// Filter is ANDed with the request's query, without scoring: a query
	// object (see AliasFilter).
	Filter json.RawMessage `json:"f,omitempty"`
	// MaxResultWindow bounds from + size (index.max_result_window).
	MaxResultWindow int `json:"w,omitempty"`
	// MaxInnerResultWindow bounds a top_hits' from + size
	// (index.max_inner_result_window).
	MaxInnerResultWindow int `json:"iw,omitempty"`
	// MaxTermsCount bounds a terms query's values (index.max_terms_count).
	MaxTermsCount int `json:"tc,omitempty"`
}

// AliasFilter combines the filters of the aliases an index was reached
// through: one as it is, several OR'ed; nil for none.
func AliasFilter(filters []json.RawMessage) json.RawMessage {
	switch len(filters) {
	case 0:
		return nil
	case 1:
		return filters[0]
	}
	raw, _ := json.Marshal(map[string]any{"bool": map[string]any{"should": filters, "minimum_should_match": 1}})
	return raw
}

// ParseSearch is ParseSearch within the scope.
func (sc Scope) ParseSearch(body []byte, params url.Values, fields Fields) (*Search, error) {
	return parseSearchAt(body, params, fields, time.Now(), sc)
}

// ParseCount is ParseCount within the scope.
func (sc Scope) ParseCount(body []byte, params url.Values, fields Fields) (*Search, error) {
	return parseCountAt(body, params, fields, time.Now(), sc)
}

func (sc Scope) maxResultWindow() int { return orDefault(sc.MaxResultWindow, MaxResultWindow) }
func (sc Scope) maxInnerResultWindow() int {
	return orDefault(sc.MaxInnerResultWindow, maxInnerResultWindow)
}
func (sc Scope) maxTermsCount() int { return orDefault(sc.MaxTermsCount, maxTermsCount) }

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// scoped restricts q by the scope's filter. Names given inside the filter
// are not the request's: they are not reported in matched_queries.
func (t *translator) scoped(q query.Query) (query.Query, error) {
	if len(t.scope.Filter) == 0 {
		return q, nil
	}
	named := len(t.named)
	f, err := t.query(t.scope.Filter, "alias filter")
	t.named = t.named[:named]
	if err != nil {
		return nil, err
	}
	return buildBool([]query.Query{q}, nil, nil, []query.Query{f}, 0), nil
}
