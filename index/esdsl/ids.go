package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) ids(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var ids []string
	values := func(v json.RawMessage, where string) error {
		arr, err := asArray(v, where, false)
		if err != nil {
			return err
		}
		for _, e := range arr {
			s, err := asScalarString(e, where)
			if err != nil {
				return err
			}
			ids = append(ids, s)
		}
		return nil
	}
	if err := (params{"values": values}).readObject(body, "ids", &c); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return t.apply(query.NewMatchNoneQuery(), common{boost: 1, name: c.name}), nil
	}
	return t.apply(query.NewDocIDQuery(ids), c), nil
}
