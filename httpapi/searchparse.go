package httpapi

import (
	"errors"
	"net/url"
	"sort"

	"github.com/weftsearch/weft/coord"
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
	srch, err := sc.ParseSearch(body, params, s.fieldsOf(names))
	if len(names) < 2 {
		return srch, names, nil, err
	}
	unfit := map[string]error{}
	var fit []string
	for _, n := range names {
		_, perr := sc.ParseSearch(body, params, s.fieldsOf([]string{n}))
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
	srch, err = sc.ParseSearch(body, params, s.fieldsOf(fit))
	return srch, fit, unfit, err
}

// addUnfit counts the shards of the indices the request did not fit (see
// parseOverIndices) as failed.
func (s *Server) addUnfit(res *coord.SearchResult, unfit map[string]error) {
	if len(unfit) == 0 || res.Status == nil {
		return
	}
	v, err := s.eng.ClusterView()
	if err != nil {
		return
	}
	names := make([]string, 0, len(unfit))
	for n := range unfit {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ix, ok := v.Indices[n]
		if !ok {
			continue
		}
		for k := 0; k < ix.NumberOfShards; k++ {
			res.Failures = append(res.Failures, coord.ShardFailure{Index: n, Shard: k, Err: unfit[n]})
			res.Status.Total++
			res.Status.Failed++
		}
	}
}
