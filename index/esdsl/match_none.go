package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) matchNone(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	if err := (params{}).readObject(body, "match_none", &c); err != nil {
		return nil, err
	}
	return t.apply(query.NewMatchNoneQuery(), common{boost: 1, name: c.name}), nil
}
