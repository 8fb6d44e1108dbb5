package coord

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/vocab"
)

// Resolving index expressions, as Elasticsearch does: a request names
// indices, aliases and wildcards ("logs-*", "_all", "*"), comma-separated,
// and a "-pattern" after a wildcard takes matches out again. An alias
// stands for its indices; a search through an alias is restricted by the
// alias's filter and search routing, a write through it goes to its write
// index with its index routing.

// ResolveOptions are a request's indices options.
type ResolveOptions struct {
	// IgnoreUnavailable skips concrete names that are missing (or closed,
	// with ForbidClosed) instead of failing.
	IgnoreUnavailable bool
	// AllowNoIndices: an expression that matches no index is fine; else it
	// is ErrIndexNotFound.
	AllowNoIndices bool
	// ExpandOpen and ExpandClosed say which indices wildcards match
	// (expand_wildcards).
	ExpandOpen, ExpandClosed bool
	// ForbidClosed: a closed index named, or reached through an alias, is
	// ErrIndexClosed (reads and writes); without it closed indices resolve
	// like open ones (administration: get, open, delete).
	ForbidClosed bool
	// NoAliases: names are indices only, as for index deletion: a name
	// that is an alias is ErrInvalidRequest, wildcards match no alias.
	NoAliases bool
	// Visible, when set, limits what wildcards and _all (or an empty
	// expression) expand to: an index it refuses is left out, as if it
	// did not exist, whether a pattern matched it by name or through an
	// alias. Explicit names are not filtered: authorizing them (and
	// refusing them by name) is the caller's. The security layer sets it
	// to "the principal may run this action here", Elasticsearch's rule
	// that a wildcard expands only to the indices a user may see. It must
	// not block.
	Visible func(index string) bool
}

// DefaultResolve are the options of a request that names none: wildcards
// match open indices, a missing name fails, closed indices are refused.
var DefaultResolve = ResolveOptions{AllowNoIndices: true, ExpandOpen: true, ForbidClosed: true}

// Resolved is what an expression names.
type Resolved struct {
	// Indices are the concrete index names, sorted.
	Indices []string
	// Filters are, per index, the alias filters a search through the
	// expression is restricted by (OR'ed); an index also reached by name,
	// or through an alias without a filter, has none.
	Filters map[string][]json.RawMessage
	// Routing are, per index, the search_routing values of the aliases it
	// was reached through; an index also reached without routing has none
	// (every shard).
	Routing map[string][]string
}

// reach is how an index was reached: directly, or through aliases.
type reach struct {
	direct    bool
	filters   []json.RawMessage
	unfilterd bool // through an alias without a filter
	routing   []string
	unrouted  bool // through an alias without search routing
}

// Resolve expands expr ("" means every index) under o.
func Resolve(v *state.State, expr string, o ResolveOptions) (Resolved, error) {
	found := map[string]*reach{}
	add := func(name string) *reach {
		r := found[name]
		if r == nil {
			r = &reach{}
			found[name] = r
		}
		return r
	}
	parts := strings.Split(expr, ",")
	if strings.TrimSpace(expr) == "" {
		parts = []string{"_all"}
	}
	wildSeen := false
	for _, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.HasPrefix(part, "-") && wildSeen {
			pat := part[1:]
			for name := range found {
				if ok, _ := path.Match(pat, name); ok || pat == name {
					delete(found, name)
				}
			}
			continue
		}
		if part == "_all" || isPattern(part) {
			wildSeen = true
			if part == "_all" {
				part = "*"
			}
			matched, err := expandPattern(v, part, o, add)
			if err != nil {
				return Resolved{}, err
			}
			if !matched && !o.AllowNoIndices {
				return Resolved{}, fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, part)
			}
			continue
		}
		if ix, ok := v.Indices[part]; ok {
			if ix.Closed && o.ForbidClosed {
				if o.IgnoreUnavailable {
					continue
				}
				return Resolved{}, closedErr(part)
			}
			add(part).direct = true
			continue
		}
		names := aliases(v)[part]
		switch {
		case len(names) > 0 && o.NoAliases:
			if o.IgnoreUnavailable {
				continue
			}
			//lint:ignore ST1005 Elasticsearch's own message, word for word
			return Resolved{}, fmt.Errorf("%w: The provided expression [%s] matches an alias, specify the corresponding concrete indices instead.", vocab.ErrInvalidRequest, part)
		case len(names) == 0:
			if o.IgnoreUnavailable {
				continue
			}
			return Resolved{}, fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, part)
		}
		for _, name := range names {
			ix := v.Indices[name]
			if ix.Closed && o.ForbidClosed {
				if o.IgnoreUnavailable {
					continue
				}
				return Resolved{}, closedErr(name)
			}
			add(name).through(ix.Aliases[part])
		}
	}
	if len(found) == 0 && !o.AllowNoIndices {
		return Resolved{}, fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, expr)
	}
	out := Resolved{Indices: append([]string{}, slices.Sorted(maps.Keys(found))...)}
	for _, name := range out.Indices {
		r := found[name]
		if !r.direct && !r.unfilterd && len(r.filters) > 0 {
			if out.Filters == nil {
				out.Filters = map[string][]json.RawMessage{}
			}
			out.Filters[name] = r.filters
		}
		if !r.direct && !r.unrouted && len(r.routing) > 0 {
			if out.Routing == nil {
				out.Routing = map[string][]string{}
			}
			out.Routing[name] = r.routing
		}
	}
	return out, nil
}

// expandPattern adds what a wildcard matches: indices (those o expands
// to) and the indices of aliases it matches. It reports whether it matched
// anything.
func expandPattern(v *state.State, pat string, o ResolveOptions, add func(string) *reach) (bool, error) {
	matched := false
	for _, name := range slices.Sorted(maps.Keys(v.Indices)) {
		ix := v.Indices[name]
		if ok, _ := path.Match(pat, name); !ok || !expands(v, ix, o) || !o.visible(name) {
			continue
		}
		if ix.Closed && o.ForbidClosed {
			if o.IgnoreUnavailable {
				continue
			}
			return false, closedErr(name)
		}
		add(name).direct = true
		matched = true
	}
	if o.NoAliases {
		return matched, nil
	}
	for alias, names := range aliases(v) {
		if ok, _ := path.Match(pat, alias); !ok {
			continue
		}
		for _, name := range names {
			if ix := v.Indices[name]; expands(v, ix, o) && !(ix.Closed && o.ForbidClosed) && o.visible(name) {
				add(name).through(ix.Aliases[alias])
				matched = true
			}
		}
	}
	return matched, nil
}

// visible reports whether a wildcard may expand to the index.
func (o ResolveOptions) visible(index string) bool { return o.Visible == nil || o.Visible(index) }

func (r *reach) through(a state.Alias) {
	if len(a.Filter) > 0 {
		r.filters = append(r.filters, a.Filter)
	} else {
		r.unfilterd = true
	}
	if a.SearchRouting != "" {
		for _, v := range strings.Split(a.SearchRouting, ",") {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(r.routing, v) {
				r.routing = append(r.routing, v)
			}
		}
	} else {
		r.unrouted = true
	}
}

// expands reports whether a wildcard under o matches the index.
func expands(v *state.State, ix *state.Index, o ResolveOptions) bool {
	if ix.Closed {
		return o.ExpandClosed
	}
	return o.ExpandOpen
}

func isPattern(s string) bool { return strings.ContainsAny(s, "*?") }

func closedErr(name string) error {
	return fmt.Errorf("%w: closed [%s]", vocab.ErrIndexClosed, name)
}

// aliases maps every alias to its indices, sorted.
func aliases(v *state.State) map[string][]string {
	out := map[string][]string{}
	for name, ix := range v.Indices {
		for alias := range ix.Aliases {
			out[alias] = append(out[alias], name)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// IsAlias reports whether name is an alias of some index.
func IsAlias(v *state.State, name string) bool { return len(aliases(v)[name]) > 0 }

// SingleIndex resolves the target of a single-document operation named
// name: an index, or an alias — for a write (write true), the alias's
// write index (its only index, unless that says is_write_index false);
// for a read, its only index. routing is the request's; an alias's index
// routing applies when the request has none, and a different one is
// refused, as in Elasticsearch. A closed index is ErrIndexClosed.
func SingleIndex(v *state.State, name, routing string, write bool) (*state.Index, string, error) {
	if ix, ok := v.Indices[name]; ok {
		if ix.Closed {
			return nil, "", closedErr(name)
		}
		return ix, routing, nil
	}
	names := aliases(v)[name]
	if len(names) == 0 {
		if BadText(name) != "" {
			// A name no index or alias may take is the client's error,
			// said as such (an index made under older rules still
			// resolves above).
			return nil, "", ValidateIndexName(name)
		}
		return nil, "", fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, name)
	}
	target := ""
	if write {
		for _, n := range names {
			if w := v.Indices[n].Aliases[name].IsWriteIndex; w != nil && *w {
				target = n
			}
		}
		if w := v.Indices[names[0]].Aliases[name].IsWriteIndex; target == "" && len(names) == 1 && w == nil {
			target = names[0]
		}
		if target == "" {
			return nil, "", fmt.Errorf("%w: no write index is defined for alias [%s]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index", vocab.ErrInvalidRequest, name)
		}
	} else {
		if len(names) > 1 {
			return nil, "", fmt.Errorf("%w: alias [%s] has more than one index associated with it [%s], can't execute a single index op", vocab.ErrInvalidRequest, name, strings.Join(names, ", "))
		}
		target = names[0]
	}
	ix := v.Indices[target]
	if ix.Closed {
		return nil, "", closedErr(target)
	}
	if r := ix.Aliases[name].IndexRouting; r != "" {
		if routing != "" && routing != r {
			return nil, "", fmt.Errorf("%w: Alias [%s] has index routing associated with it [%s], and was provided with routing value [%s], rejecting operation", vocab.ErrInvalidRequest, name, r, routing)
		}
		routing = r
	}
	return ix, routing, nil
}
