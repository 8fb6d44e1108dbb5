package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) matchAll(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	if err := (params{}).readObject(body, "match_all", &c); err != nil {
		return nil, err
	}
	return t.apply(query.NewMatchAllQuery(), c), nil
}
