package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) wildcard(body json.RawMessage) (query.Query, error) {
	return t.textPattern(body, "wildcard", func(s string, ci bool) fieldQuery {
		if ci {
			return query.NewRegexpQuery(foldPattern(s, true, false))
		}
		return query.NewWildcardQuery(s)
	})
}
