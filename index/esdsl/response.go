package esdsl

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/weftsearch/weft/index"
)

// SearchResponse is the body of an Elasticsearch 8 _search response; it is
// meant for json.Marshal.
type SearchResponse struct {
	PitID        string         `json:"pit_id,omitempty"`
	Took         int64          `json:"took"`
	TimedOut     bool           `json:"timed_out"`
	Shards       ShardsInfo     `json:"_shards"`
	Hits         Hits           `json:"hits"`
	Aggregations map[string]any `json:"aggregations,omitempty"`
	ScrollID     string         `json:"_scroll_id,omitempty"`
}

// ShardsInfo is the _shards section. Response fills it from bleve's
// SearchStatus (one entry per index searched); the caller may overwrite it
// with per-shard figures.
type ShardsInfo struct {
	Total      int            `json:"total"`
	Successful int            `json:"successful"`
	Skipped    int            `json:"skipped"`
	Failed     int            `json:"failed"`
	Failures   []ShardFailure `json:"failures,omitempty"`
}

// ShardFailure is one entry of _shards.failures.
type ShardFailure struct {
	Index  string         `json:"index,omitempty"`
	Shard  int            `json:"shard"`
	Node   string         `json:"node,omitempty"`
	Reason map[string]any `json:"reason"`
}

// Hits is the hits section.
type Hits struct {
	Total    *TotalHits `json:"total,omitempty"`
	MaxScore *float64   `json:"max_score"`
	Hits     []Hit      `json:"hits"`
}

// TotalHits is hits.total: {"value": n, "relation": "eq"|"gte"}, or a bare
// number when the request asked for rest_total_hits_as_int.
type TotalHits struct {
	Value    int64  `json:"value"`
	Relation string `json:"relation"`
	asInt    bool
}

// MarshalJSON implements json.Marshaler.
func (t TotalHits) MarshalJSON() ([]byte, error) {
	if t.asInt {
		return []byte(strconv.FormatInt(t.Value, 10)), nil
	}
	type plain TotalHits
	return json.Marshal(plain(t))
}

var _ json.Marshaler = TotalHits{}

// Hit is one element of hits.hits.
type Hit struct {
	Index          string              `json:"_index"`
	ID             string              `json:"_id,omitempty"`
	Version        *int64              `json:"_version,omitempty"`
	SeqNo          *uint64             `json:"_seq_no,omitempty"`
	PrimaryTerm    *uint64             `json:"_primary_term,omitempty"`
	Score          *float64            `json:"_score"`
	MatchedQueries []string            `json:"matched_queries,omitempty"`
	Source         json.RawMessage     `json:"_source,omitempty"`
	Fields         map[string][]any    `json:"fields,omitempty"`
	Highlight      map[string][]string `json:"highlight,omitempty"`
	Sort           []any               `json:"sort,omitempty"`
	Explanation    *Explanation        `json:"_explanation,omitempty"`
}

// Explanation is Elasticsearch's _explanation shape.
type Explanation struct {
	Value       float64        `json:"value"`
	Description string         `json:"description"`
	Details     []*Explanation `json:"details"`
}

// Response shapes a bleve result of s.Request as an Elasticsearch response.
// took is the time the search took. It sets neither ScrollID (see
// ScrollID) nor Aggregations (see RenderAggs).
func (s *Search) Response(res *bleve.SearchResult, took time.Duration) *SearchResponse {
	out := &SearchResponse{Took: took.Milliseconds(), Hits: Hits{Hits: []Hit{}}}
	if res == nil {
		res = &bleve.SearchResult{}
	}
	if res.Status != nil {
		out.Shards = ShardsInfo{Total: res.Status.Total, Successful: res.Status.Successful, Failed: res.Status.Failed}
		for idx, err := range res.Status.Errors {
			out.Shards.Failures = append(out.Shards.Failures, ShardFailure{Index: idx,
				Reason: map[string]any{"type": "exception", "reason": err.Error()}})
		}
	}
	if s.trackTotal == -2 && s.totalAsInt {
		out.Hits.Total = &TotalHits{Value: -1, asInt: true} // as Elasticsearch answers
	}
	if s.trackTotal != -2 {
		total := int64(res.Total)
		th := &TotalHits{Value: total, Relation: "eq", asInt: s.totalAsInt}
		if res.TotalRelation == bleve.TotalRelationGte {
			th.Relation = "gte"
		}
		if s.trackTotal >= 0 && total > s.trackTotal {
			th.Value, th.Relation = s.trackTotal, "gte"
		}
		out.Hits.Total = th
	}
	showScores := s.scoreSorted || s.trackScores
	if showScores && len(res.Hits) > 0 {
		ms := res.MaxScore
		out.Hits.MaxScore = &ms
	}
	out.Hits.Hits = make([]Hit, 0, len(res.Hits))
	var scores []float64 // one allocation for every hit's _score
	if showScores {
		scores = make([]float64, len(res.Hits))
	}
	for i, h := range res.Hits {
		hit := Hit{Index: h.Index, ID: h.ID}
		if s.noID {
			hit.ID = ""
		}
		if m, ok := h.Fields[index.MatchedQueriesField].([]string); ok && len(m) > 0 {
			hit.MatchedQueries = m
		}
		if s.version || s.seqNo {
			if seq, ver, term, ok := index.HitMeta(h.Fields); ok {
				if s.version {
					hit.Version = &ver
				}
				if s.seqNo {
					hit.SeqNo, hit.PrimaryTerm = &seq, &term
				}
			}
		}
		if showScores {
			scores[i] = h.Score
			hit.Score = &scores[i]
		}
		src, _ := h.Fields[index.SourceField].(string)
		if src != "" && !s.fetch.empty() {
			hit.Fields, _ = s.fetch.values(s.fields, []byte(src))
		}
		if src != "" && s.fields != nil {
			src = string(PresentSource(s.fields, h.Index, []byte(src)))
		}
		if src != "" {
			hit.Source = s.source.apply(src)
			if s.highlight != nil {
				var doc map[string]any
				if json.Unmarshal([]byte(src), &doc) == nil {
					hit.Highlight = s.highlight.build(h, doc)
				}
			}
		}
		if len(s.sorts) > 0 {
			hit.Sort = s.sortValues(h)
		}
		if h.Expl != nil {
			hit.Explanation = explanation(h.Expl)
		}
		out.Hits.Hits = append(out.Hits.Hits, hit)
	}
	return out
}

// sortValues renders a hit's sort keys the way Elasticsearch returns them
// (numbers for numeric and date fields, strings for keywords).
func (s *Search) sortValues(h *search.DocumentMatch) []any {
	vals := make([]any, len(s.sorts))
	for i, sp := range s.sorts {
		raw := ""
		if i < len(h.Sort) {
			raw = h.Sort[i]
		}
		switch sp.kind {
		case sortScore:
			vals[i] = h.Score
		case sortID:
			vals[i] = h.ID
		case sortNumber, sortDate:
			n, err := numeric.PrefixCoded(raw).Int64()
			if err != nil {
				vals[i] = nil // the hit has no value in this field
				continue
			}
			if sp.kind == sortDate {
				vals[i] = time.Unix(0, n).UnixMilli()
				continue
			}
			f := numeric.Int64ToFloat64(n)
			if sp.integral && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				vals[i] = int64(f)
			} else {
				vals[i] = f
			}
		case sortBool:
			switch raw {
			case "T":
				vals[i] = 1
			case "F":
				vals[i] = 0
			default:
				vals[i] = nil
			}
		default:
			if raw == "" || strings.HasPrefix(raw, search.HighTerm) {
				vals[i] = nil
			} else {
				vals[i] = raw
			}
		}
	}
	return vals
}

func explanation(e *search.Explanation) *Explanation {
	out := &Explanation{Value: e.Value, Description: e.Message, Details: []*Explanation{}}
	for _, c := range e.Children {
		if c != nil {
			out.Details = append(out.Details, explanation(c))
		}
	}
	return out
}
