package esdsl

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"
)

// ParseValidate translates the body of a _validate/query request (at most
// {"query": ...}) and its q parameters; the error says why the query is
// invalid. QueryString shows what it became.
func ParseValidate(body []byte, params url.Values, fields Fields) (*Search, error) {
	return Scope{}.ParseValidate(body, params, fields)
}

// ParseValidate is ParseValidate within the scope.
func (sc Scope) ParseValidate(body []byte, params url.Values, fields Fields) (*Search, error) {
	if _, err := queryOnlyBody(body); err != nil {
		return nil, err
	}
	return parseCountAt(body, params, fields, time.Now(), sc)
}

// queryOnlyBody parses a body that may hold only "query".
func queryOnlyBody(body []byte) (object, error) {
	o, err := parseBody(body)
	if err != nil {
		return nil, err
	}
	for _, k := range o.sortedKeys() {
		if k != "query" {
			return nil, parsingErr("request does not support [%s]", k)
		}
	}
	return o, nil
}

// QueryString renders the translated query for _validate/query's
// explanation: "*:*" for match_all, else the bleve query as JSON.
func (s *Search) QueryString() string {
	q := s.Request.Query
	if _, ok := q.(*query.MatchAllQuery); ok {
		return "*:*"
	}
	raw, err := json.Marshal(q)
	if err != nil {
		return "(query)"
	}
	return string(raw)
}

// ParseExplain translates an _explain request for document id (routed by
// routing, or by its id): a search of the shard that holds it, for that
// document only, with explanations. Its body holds at most {"query": ...}.
func ParseExplain(body []byte, params url.Values, id, routing string, fields Fields) (*Search, error) {
	return Scope{}.ParseExplain(body, params, id, routing, fields)
}

// ParseExplain is ParseExplain within the scope.
func (sc Scope) ParseExplain(body []byte, params url.Values, id, routing string, fields Fields) (*Search, error) {
	o, err := queryOnlyBody(body)
	if err != nil {
		return nil, err
	}
	q := json.RawMessage(`{"match_all":{}}`)
	if raw, ok := o["query"]; ok {
		q = raw
	}
	if routing == "" {
		routing = id
	}
	// A plain search body, so that a copy on another node rebuilds the
	// same search from it.
	search, err := json.Marshal(map[string]any{
		"query":   map[string]any{"bool": map[string]any{"must": []json.RawMessage{q}, "filter": []any{map[string]any{"ids": map[string]any{"values": []string{id}}}}}},
		"explain": true, "size": 1, "_source": false,
	})
	if err != nil {
		return nil, err
	}
	p := url.Values{"routing": {routing}}
	for _, k := range []string{"q", "df", "default_operator", "analyzer", "analyze_wildcard", "lenient"} {
		if params.Has(k) {
			return nil, argErr("[%s] is not supported by _explain on this node; send the query in the body", k)
		}
	}
	return sc.ParseSearch(search, p, fields)
}
