package esdsl

import (
	"net/url"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index/scoring"
)

var countParams = map[string]bool{
	"q": true, "df": true, "default_operator": true, "analyzer": true, "analyze_wildcard": true,
	"lenient": true, "allow_no_indices": true, "expand_wildcards": true, "ignore_unavailable": true,
	"ignore_throttled": true, "preference": true, "routing": true, "pretty": true, "human": true,
	"error_trace": true, "filter_path": true, "source": true, "source_content_type": true,
	"min_score": true,
}

// ParseCount translates an Elasticsearch _count request (a body holding at
// most {"query": ...}, and the q/df/default_operator URL parameters) into a
// Search whose Request returns no hits; its result's Total is the count.
func ParseCount(body []byte, params url.Values, fields Fields) (*Search, error) {
	return Scope{}.ParseCount(body, params, fields)
}

func parseCountAt(body []byte, params url.Values, fields Fields, now time.Time, sc Scope) (*Search, error) {
	o, err := parseBody(body)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedParamKeys(params) {
		if !countParams[k] {
			return nil, argErr("request [/_count] contains unrecognized parameter: [%s]", k)
		}
	}
	t := &translator{fields: fields, now: now, scope: sc}
	var q query.Query = query.NewMatchAllQuery()
	for _, k := range o.sortedKeys() {
		if k != "query" {
			return nil, parsingErr("request does not support [%s]; a _count body holds only \"query\"", k)
		}
		if q, err = t.query(o[k], "query"); err != nil {
			return nil, err
		}
	}
	if params.Has("q") {
		if q, err = t.urlQueryString(params); err != nil {
			return nil, err
		}
	}
	if q, err = t.scoped(q); err != nil {
		return nil, err
	}
	if q, err = withMinScore(q, nil, params); err != nil {
		return nil, err
	}
	req := bleve.NewSearchRequestOptions(q, 0, 0, false)
	if err := req.Validate(); err != nil {
		return nil, argErr("invalid count request: %v", err)
	}
	_, minScore := q.(*scoring.MinScore)
	return &Search{Request: req, trackTotal: -1, scoreSorted: true, minScore: minScore, body: body, params: params, now: now, count: true, scope: sc}, nil
}
