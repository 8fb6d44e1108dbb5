package esdsl

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/weftsearch/weft/index"
)

// top_hits: the best documents of a bucket, by score or by fields (read
// from doc values). Each shard keeps its from+size best with their sources
// (read at the end of the search, on the same snapshot); the coordinating
// node merges them and cuts the page.

type topHitsAgg struct {
	from    int
	size    int
	sorts   []*topSort // empty: by score
	source  sourceFilter
	fetch   fetchSpec
	version bool
	seqNo   bool
	scores  bool // _score is reported (sorted by score, or track_scores)
}

// topSort is one sort criterion: _score or a field.
type topSort struct {
	spec  *aggSpec // the field (slot)
	score bool
	desc  bool
}

// maxInnerResultWindow is Elasticsearch's index.max_inner_result_window
// default.
const maxInnerResultWindow = 100

// aggHit is one hit of a top_hits partial.
type aggHit struct {
	Index   string          `json:"i"` // Index and Shard are set by the shard's root collector
	Shard   int             `json:"sh"`
	ID      string          `json:"id"`
	Score   float64         `json:"sc"`
	Sort    []sortVal       `json:"so,omitempty"`
	Source  json.RawMessage `json:"src,omitempty"`
	SeqNo   uint64          `json:"seq,omitempty"`
	Version int64           `json:"ver,omitempty"`
	Term    uint64          `json:"pt,omitempty"`

	ref index.DocRef // on the shard, until the source is read
}

// sortVal is one sort key of a hit: a number, a string, or missing.
type sortVal struct {
	Num   float64 `json:"n,omitempty"`
	Str   string  `json:"s,omitempty"`
	IsStr bool    `json:"t,omitempty"`
	Miss  bool    `json:"x,omitempty"`
}

func (th *topHitsAgg) typedName(*aggSpec) string { return "top_hits" }

// sourceSpecs are the sort fields, each with its own field slot.
func (th *topHitsAgg) sourceSpecs() []*aggSpec {
	var out []*aggSpec
	for _, s := range th.sorts {
		if !s.score {
			out = append(out, s.spec)
		}
	}
	return out
}

func (th *topHitsAgg) parse(a *aggSpec, p object, t *translator) error {
	th.size = 3
	trackScores := false
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "size":
			if th.size, err = asInt(v, a.where()+".size"); err == nil && th.size < 0 {
				err = argErr("[size] must be >= 0 in [%s]", a.name)
			}
		case "from":
			if th.from, err = asInt(v, a.where()+".from"); err == nil && th.from < 0 {
				err = argErr("[from] must be >= 0 in [%s]", a.name)
			}
		case "sort":
			err = th.parseSort(a, v, t)
		case "_source":
			th.source, err = parseSourceFilter(v, nil)
		case "version":
			th.version, err = asBool(v, a.where()+".version")
		case "seq_no_primary_term":
			th.seqNo, err = asBool(v, a.where()+"."+k)
		case "track_scores":
			trackScores, err = asBool(v, a.where()+"."+k)
		case "stored_fields":
			th.fetch.stored, err = stringList(v, a.where()+".stored_fields")
		case "docvalue_fields":
			if th.fetch.docvalue, err = parseFieldList(v, a.where()+".docvalue_fields"); err == nil {
				err = checkDocvalue(t.fields, th.fetch.docvalue)
			}
		case "fields":
			th.fetch.fields, err = parseFieldList(v, a.where()+".fields")
		case "explain", "highlight", "script_fields":
			err = aggErr("[%s] %s is not supported in top_hits; drop it", a.where(), k)
		default:
			err = a.unknownKey(k)
		}
		if err != nil {
			return err
		}
	}
	if max := t.scope.maxInnerResultWindow(); th.from+th.size > max {
		return argErr("Top hits result window is too large, the top hits aggregator [%s]'s from + size must be less than or equal to: [%d] but was [%d]. This limit can be set by changing the [index.max_inner_result_window] index level setting.", a.name, max, th.from+th.size)
	}
	th.scores = len(th.sorts) == 0 || trackScores
	for _, s := range th.sorts {
		th.scores = th.scores || s.score
	}
	return nil
}

func (th *topHitsAgg) parseSort(a *aggSpec, raw json.RawMessage, t *translator) error {
	var entries []json.RawMessage
	if kind(raw) == 'a' {
		entries = decodeArray(raw)
	} else {
		entries = []json.RawMessage{raw}
	}
	for _, e := range entries {
		var name string
		desc := false
		explicit := false
		switch kind(e) {
		case 's':
			name, _ = asString(e, "")
		case 'o':
			o, _ := asObject(e, "")
			for _, k := range o.sortedKeys() {
				name = k
				v := o[k]
				if kind(v) == 's' {
					d, _ := asString(v, "")
					desc, explicit = d == "desc", true
					continue
				}
				opts, err := asObject(v, a.where()+".sort."+k)
				if err != nil {
					return err
				}
				for ok, ov := range opts {
					switch ok {
					case "order":
						d, _ := asString(ov, "")
						desc, explicit = d == "desc", true
					case "unmapped_type", "missing", "mode":
					default:
						return aggErr("[%s] sort option [%s] is not supported in top_hits", a.where(), ok)
					}
				}
			}
		default:
			return argErr("[%s.sort] must be a field name or an object", a.where())
		}
		if name == "_score" {
			th.sorts = append(th.sorts, &topSort{score: true, desc: !explicit || desc})
			continue
		}
		spec := &aggSpec{name: name, typ: "sort", field: name, ftype: t.fieldType(name)}
		if spec.ftype == "text" {
			return argErr("Text fields are not optimised for operations that require per-document field data like aggregations and sorting. Sort field: [%s]", name)
		}
		th.sorts = append(th.sorts, &topSort{spec: spec, desc: desc})
	}
	return nil
}

// keys returns a document's sort keys.
func (th *topHitsAgg) keys(d *index.MatchedDoc) []sortVal {
	out := make([]sortVal, len(th.sorts))
	for k, s := range th.sorts {
		switch {
		case s.score:
			out[k] = sortVal{Num: d.Score}
		case s.spec.slot < 0:
			out[k] = sortVal{Miss: true}
		case d.Kind(s.spec.slot) == index.KindString:
			vs := d.Strings(s.spec.slot)
			if len(vs) == 0 {
				out[k] = sortVal{Miss: true}
			} else if s.desc {
				out[k] = sortVal{Str: vs[len(vs)-1], IsStr: true}
			} else {
				out[k] = sortVal{Str: vs[0], IsStr: true}
			}
		default:
			vs := d.Numbers(s.spec.slot)
			if len(vs) == 0 {
				out[k] = sortVal{Miss: true}
			} else if s.desc {
				out[k] = sortVal{Num: vs[len(vs)-1]}
			} else {
				out[k] = sortVal{Num: vs[0]}
			}
		}
	}
	return out
}

// less reports whether hit x sorts before y; ties go by index and shard
// (and within a shard stay in indexing order, the order of its partial).
func (th *topHitsAgg) less(x, y *aggHit) bool {
	if c := th.cmp(x, y); c != 0 {
		return c < 0
	}
	return x.Index < y.Index || (x.Index == y.Index && x.Shard < y.Shard)
}

// cmp orders two hits by the sort keys (by score, best first, without
// any): negative when x comes first, 0 for a tie.
func (th *topHitsAgg) cmp(x, y *aggHit) int {
	if len(th.sorts) == 0 {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return 0
	}
	for k, s := range th.sorts {
		a, b := x.Sort[k], y.Sort[k]
		if a.Miss != b.Miss {
			if b.Miss {
				return -1 // missing values sort last
			}
			return 1
		}
		var c int
		switch {
		case a.Miss:
		case a.IsStr:
			c = strings.Compare(a.Str, b.Str)
		case a.Num < b.Num:
			c = -1
		case a.Num > b.Num:
			c = 1
		}
		if s.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

type topHitsCollector struct {
	a    *aggSpec
	th   *topHitsAgg
	hits []*aggHit
	seen int64
}

func (th *topHitsAgg) newCollector(a *aggSpec) aggCollector {
	return &topHitsCollector{a: a, th: th}
}

func (tc *topHitsCollector) collect(d *index.MatchedDoc) error {
	tc.seen++
	keep := tc.th.from + tc.th.size
	if keep == 0 {
		return nil
	}
	h := &aggHit{Score: d.Score, Sort: tc.th.keys(d), ref: d.Ref()}
	if len(tc.hits) == keep && !tc.before(h, tc.hits[keep-1]) {
		return nil
	}
	i := sort.Search(len(tc.hits), func(i int) bool { return tc.before(h, tc.hits[i]) })
	tc.hits = append(tc.hits, nil)
	copy(tc.hits[i+1:], tc.hits[i:])
	tc.hits[i] = h
	if len(tc.hits) > keep {
		tc.hits = tc.hits[:keep]
	}
	return nil
}

// before orders hits on a shard, where ids are not read yet: by the sort
// keys, then in document order (which a hit met first has).
func (tc *topHitsCollector) before(x, y *aggHit) bool { return tc.th.cmp(x, y) < 0 }

func (tc *topHitsCollector) finish(snap *index.Snapshot) error {
	for _, h := range tc.hits {
		doc, err := snap.Load(h.ref)
		if err != nil {
			return err
		}
		h.ID, h.Source, h.SeqNo, h.Version, h.Term = doc.ID, doc.Source, doc.SeqNo, doc.Version, doc.PrimaryTerm
	}
	// Ties go in indexing order (Elasticsearch's: Lucene's document
	// order), not bleve's, which within one batch is arbitrary.
	sort.SliceStable(tc.hits, func(i, j int) bool {
		if c := tc.th.cmp(tc.hits[i], tc.hits[j]); c != 0 {
			return c < 0
		}
		return tc.hits[i].SeqNo < tc.hits[j].SeqNo
	})
	return nil
}

func (tc *topHitsCollector) partial() *AggPartial {
	return &AggPartial{Hits: tc.hits, DocCount: tc.seen}
}

func (th *topHitsAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	out := &AggPartial{}
	for _, p := range parts {
		out.DocCount += p.DocCount
		out.Hits = append(out.Hits, p.Hits...)
	}
	sort.SliceStable(out.Hits, func(i, j int) bool { return th.less(out.Hits[i], out.Hits[j]) })
	if keep := th.from + th.size; len(out.Hits) > keep {
		out.Hits = out.Hits[:keep]
	}
	return out
}

func (th *topHitsAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	hits := []any{}
	var maxScore any
	best := math.Inf(-1)
	for k, h := range p.Hits {
		if k < th.from {
			continue
		}
		m := map[string]any{"_index": h.Index, "_id": h.ID}
		if th.scores {
			m["_score"] = h.Score
			best = math.Max(best, h.Score)
		} else {
			m["_score"] = nil
		}
		stored := h.Source
		if r.fields != nil && len(stored) > 0 {
			stored = PresentSource(r.fields, h.Index, stored)
		}
		if src := th.source.apply(string(stored)); src != nil && len(stored) > 0 {
			m["_source"] = src
		}
		fetch := th.fetch
		fetch.fields = append(slices.Clip(r.fetch.fields), fetch.fields...)
		if vals, _ := fetch.values(r.fields, h.Source); len(vals) > 0 {
			m["fields"] = vals
		}
		if len(th.sorts) > 0 {
			vals := make([]any, len(h.Sort))
			for k, v := range h.Sort {
				switch {
				case v.Miss:
				case v.IsStr:
					vals[k] = v.Str
				case th.sorts[k].spec != nil:
					vals[k] = numberKey(th.sorts[k].spec.ftype, v.Num)
				default:
					vals[k] = v.Num
				}
			}
			m["sort"] = vals
		}
		if th.version {
			m["_version"] = h.Version
		}
		if th.seqNo {
			m["_seq_no"], m["_primary_term"] = h.SeqNo, h.Term
		}
		hits = append(hits, m)
	}
	if th.scores && len(hits) > 0 {
		maxScore = best
	}
	return map[string]any{"hits": map[string]any{
		"total":     map[string]any{"value": p.DocCount, "relation": "eq"},
		"max_score": maxScore,
		"hits":      hits,
	}}, nil
}
