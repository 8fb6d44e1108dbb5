package httpapi

import (
	"errors"
	"net/url"

	"github.com/weftsearch/weft/index/esdsl"
)

// parseOverIndices translates a search over several indices as
// Elasticsearch does, where each shard parses the request against its own
// mapping: an index whose mapping the request does not fit (a query value
// its field type cannot take, an aggregation its field cannot run) fails
// its shards, and the others answer. It returns the search over the
// indices that fit and the error of each that does not; when none fits,
// the first error.
func (s *Server) parseOverIndices(sc esdsl.Scope, body []byte, params url.Values, names []string) (*esdsl.Search, []string, map[string]error, error) {
	srch, err := sc.ParseSearch(body, params, s.eng.SearchFields(names))
	if len(names) < 2 {
		return srch, names, nil, err
	}
	unfit := map[string]error{}
	var fit []string
	for _, n := range names {
		_, perr := sc.ParseSearch(body, params, s.eng.SearchFields([]string{n}))
		if errors.Is(perr, esdsl.ErrInvalidRequest) {
			unfit[n] = perr
			continue
		}
		fit = append(fit, n)
	}
	switch {
	case len(unfit) == 0:
		return srch, names, nil, err
	case len(fit) == 0:
		if err == nil {
			err = unfit[names[0]]
		}
		return nil, nil, nil, err
	}
	srch, err = sc.ParseSearch(body, params, s.eng.SearchFields(fit))
	return srch, fit, unfit, err
}
