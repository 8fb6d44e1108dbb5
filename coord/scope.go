package coord

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

// Scope is what the indices a request resolved to add to it: the alias
// filter and search routing it is restricted by (the routing is set in
// params), and the limits their settings set (the smallest over the
// indices). A request reaching indices through aliases with different
// filters or routing at once is refused (ErrInvalidRequest): one request
// carries one filter.
func (c *Coordinator) Scope(res Resolved, params map[string][]string) (esdsl.Scope, error) {
	var sc esdsl.Scope
	var filters []json.RawMessage
	var routing []string
	for k, name := range res.Indices {
		f, r := res.Filters[name], res.Routing[name]
		if k > 0 && (!sameRaws(f, filters) || !slices.Equal(r, routing)) {
			return sc, fmt.Errorf("%w: indices [%s] are reached through aliases with different filters or routing; Weft runs one filter per request, so search them separately", vocab.ErrInvalidRequest, strings.Join(res.Indices, ","))
		}
		filters, routing = f, r
	}
	sc.Filter = esdsl.AliasFilter(filters)
	if len(routing) > 0 {
		if err := restrictRouting(params, routing); err != nil {
			return sc, err
		}
	}
	v, err := c.readView()
	if err != nil {
		return sc, err
	}
	for _, name := range res.Indices {
		ix, ok := v.Indices[name]
		if !ok {
			continue
		}
		sc.MaxResultWindow = minLimit(sc.MaxResultWindow, IntSetting(ix.Settings, "index.max_result_window", 0))
		sc.MaxInnerResultWindow = minLimit(sc.MaxInnerResultWindow, IntSetting(ix.Settings, "index.max_inner_result_window", 0))
		sc.MaxTermsCount = minLimit(sc.MaxTermsCount, IntSetting(ix.Settings, "index.max_terms_count", 0))
	}
	return sc, nil
}

// minLimit is the smaller of two limits, 0 meaning none.
func minLimit(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

func sameRaws(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return string(x) == string(y) })
}

// restrictRouting sets the request's routing to the aliases' search
// routing, or to the values both name when the request has its own.
func restrictRouting(params map[string][]string, alias []string) error {
	var own []string
	for _, r := range strings.Split(strings.Join(params["routing"], ","), ",") {
		if r = strings.TrimSpace(r); r != "" {
			own = append(own, r)
		}
	}
	if len(own) == 0 {
		params["routing"] = []string{strings.Join(alias, ",")}
		return nil
	}
	var both []string
	for _, r := range own {
		if slices.Contains(alias, r) {
			both = append(both, r)
		}
	}
	if len(both) == 0 {
		return fmt.Errorf("%w: routing [%s] and the alias's search routing [%s] have no value in common, so no shard would be searched", vocab.ErrInvalidRequest, strings.Join(own, ","), strings.Join(alias, ","))
	}
	params["routing"] = []string{strings.Join(both, ",")}
	return nil
}

// IntSetting reads an int setting of an index (def when unset or not an
// int).
func IntSetting(settings map[string]json.RawMessage, key string, def int) int {
	raw, ok := settings[key]
	if !ok {
		return def
	}
	n, err := ParseIntSetting(raw)
	if err != nil {
		return def
	}
	return n
}

// ParseIntSetting reads an int setting's value: a JSON number or a string
// holding one, as Elasticsearch accepts both.
func ParseIntSetting(v json.RawMessage) (int, error) {
	var n int
	if err := json.Unmarshal(v, &n); err == nil {
		return n, nil
	}
	var str string
	if err := json.Unmarshal(v, &str); err != nil {
		return 0, err
	}
	return strconv.Atoi(str)
}

// IndexFields is the mapping of the indices a search reads, with each
// index's _source mapping parameter (esdsl.SourcePolicy) for the replies.
type IndexFields struct {
	vocab.FieldTypes
	byIndex map[string]*index.Mapping
}

// SourcePolicy implements esdsl.SourcePolicy.
func (f IndexFields) SourcePolicy(name string) (bool, []string, []string) {
	if m, ok := f.byIndex[name]; ok {
		return m.SourceFilter()
	}
	return true, nil, nil
}

// SearchFields is the mapping a search over the indices, and its reply,
// are translated with.
func (c *Coordinator) SearchFields(names []string) IndexFields {
	f := IndexFields{FieldTypes: c.Fields(names), byIndex: make(map[string]*index.Mapping, len(names))}
	for _, n := range names {
		if ft := c.Fields([]string{n}); len(ft) == 1 {
			f.byIndex[n] = ft[0]
		}
	}
	return f
}
