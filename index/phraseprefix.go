package index

import (
	"context"
	"fmt"
	"math"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/weftsearch/weft/index/scoring"
)

// DefaultMaxExpansions is Elasticsearch's default max_expansions of
// match_phrase_prefix: how many terms the final prefix may stand for.
const DefaultMaxExpansions = 50

// PhrasePrefix is Elasticsearch's match_phrase_prefix on one field: Text,
// analyzed at search time by the field's analyzer (or Analyzer), matches as
// a phrase whose final term is a prefix. The prefix stands for the first
// MaxExpansions terms of the field's term dictionary that start with it, in
// term order, as Lucene's MultiPhrasePrefixQuery collects them (per shard,
// as there). A text of one term is a BestPrefix of its term. A prefix
// that no indexed term starts with, or a text with no terms, matches
// nothing.
//
// Positions left empty by the analyzer (removed stop words) match any term,
// as in bleve's match_phrase. Slop is not supported: the phrase must be
// exact. A PhrasePrefix is not modified by searching, so one may be shared
// by concurrent searches.
type PhrasePrefix struct {
	Text          string       `json:"match_phrase_prefix"`
	FieldVal      string       `json:"field,omitempty"`
	Analyzer      string       `json:"analyzer,omitempty"`
	MaxExpansions int          `json:"max_expansions"`
	BoostVal      *query.Boost `json:"boost,omitempty"`
}

var (
	_ query.Query          = (*PhrasePrefix)(nil)
	_ query.FieldableQuery = (*PhrasePrefix)(nil)
	_ query.BoostableQuery = (*PhrasePrefix)(nil)
)

// NewPhrasePrefix returns a PhrasePrefix for text on field with the default
// max_expansions.
func NewPhrasePrefix(text, field string) *PhrasePrefix {
	return &PhrasePrefix{Text: text, FieldVal: field, MaxExpansions: DefaultMaxExpansions}
}

// SetBoost multiplies every score of the query by b.
func (q *PhrasePrefix) SetBoost(b float64) {
	boost := query.Boost(b)
	q.BoostVal = &boost
}

// Boost is the query's boost (1 when unset).
func (q *PhrasePrefix) Boost() float64 { return q.BoostVal.Value() }

// SetField sets the field searched.
func (q *PhrasePrefix) SetField(f string) { q.FieldVal = f }

// Field is the field searched.
func (q *PhrasePrefix) Field() string { return q.FieldVal }

// Searcher analyzes the text, expands the final prefix against r's term
// dictionary and returns bleve's multi-phrase searcher over the result.
func (q *PhrasePrefix) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, opts search.SearcherOptions) (search.Searcher, error) {
	field := q.FieldVal
	if field == "" {
		field = m.DefaultSearchField()
	}
	analyzerName := q.Analyzer
	if analyzerName == "" {
		analyzerName = m.AnalyzerNameForPath(field)
	}
	an := m.AnalyzerNamed(analyzerName)
	if an == nil {
		return nil, fmt.Errorf("match_phrase_prefix: no analyzer named %q registered", analyzerName)
	}
	phrase := positions(an.Analyze([]byte(q.Text)))
	if len(phrase) == 0 {
		return query.NewMatchNoneQuery().Searcher(ctx, r, m, opts)
	}
	last := len(phrase) - 1
	expanded, err := expandPrefixes(r, field, phrase[last], q.MaxExpansions)
	if err != nil {
		return nil, err
	}
	if len(expanded) == 0 {
		return query.NewMatchNoneQuery().Searcher(ctx, r, m, opts)
	}
	if len(phrase) == 1 {
		return bestTerm(expanded, field, q.BoostVal.Value()).Searcher(ctx, r, m, opts)
	}
	phrase[last] = expanded
	mp := query.NewMultiPhraseQuery(phrase, field)
	mp.SetBoost(q.BoostVal.Value())
	return mp.Searcher(ctx, r, m, opts)
}

// BestPrefix matches the documents that hold a term of the field starting
// with Prefix (taken as it is, not analyzed) and scores each by the best of
// those terms it holds: a dis_max of term queries over the first
// MaxExpansions terms in term order (every term when MaxExpansions is 0).
// It stands for the final term of Elasticsearch's match_bool_prefix and a
// one-term match_phrase_prefix. Elasticsearch scores that prefix as a
// constant; bleve's own prefix query sums the scores of every expansion a
// document holds, so a short prefix that stands for several of its terms
// would outrank a document that matches the other terms of the query. The
// best expansion keeps a prefix worth one term, as in Elasticsearch, while
// still ranking a rare completion above a common one.
type BestPrefix struct {
	Prefix        string       `json:"best_prefix"`
	FieldVal      string       `json:"field,omitempty"`
	MaxExpansions int          `json:"max_expansions,omitempty"`
	BoostVal      *query.Boost `json:"boost,omitempty"`
}

var (
	_ query.Query          = (*BestPrefix)(nil)
	_ query.FieldableQuery = (*BestPrefix)(nil)
	_ query.BoostableQuery = (*BestPrefix)(nil)
)

// NewBestPrefix returns a BestPrefix for prefix on field, without a limit
// on expansions.
func NewBestPrefix(prefix, field string) *BestPrefix {
	return &BestPrefix{Prefix: prefix, FieldVal: field}
}

// SetBoost multiplies every score of the query by b.
func (q *BestPrefix) SetBoost(b float64) {
	boost := query.Boost(b)
	q.BoostVal = &boost
}

// Boost is the query's boost (1 when unset).
func (q *BestPrefix) Boost() float64 { return q.BoostVal.Value() }

// SetField sets the field searched.
func (q *BestPrefix) SetField(f string) { q.FieldVal = f }

// Field is the field searched.
func (q *BestPrefix) Field() string { return q.FieldVal }

// Searcher expands the prefix against r's term dictionary and returns a
// dis_max searcher over the expansions' term searchers.
func (q *BestPrefix) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, opts search.SearcherOptions) (search.Searcher, error) {
	field := q.FieldVal
	if field == "" {
		field = m.DefaultSearchField()
	}
	limit := q.MaxExpansions
	if limit <= 0 {
		limit = math.MaxInt
	}
	expanded, err := expandPrefixes(r, field, []string{q.Prefix}, limit)
	if err != nil {
		return nil, err
	}
	if len(expanded) == 0 {
		return query.NewMatchNoneQuery().Searcher(ctx, r, m, opts)
	}
	return bestTerm(expanded, field, q.BoostVal.Value()).Searcher(ctx, r, m, opts)
}

// bestTerm is a dis_max (tie breaker 0) of term queries on field.
func bestTerm(terms []string, field string, boost float64) query.Query {
	if len(terms) == 1 {
		tq := query.NewTermQuery(terms[0])
		tq.SetField(field)
		tq.SetBoost(boost)
		return tq
	}
	clauses := make([]query.Query, len(terms))
	for i, t := range terms {
		tq := query.NewTermQuery(t)
		tq.SetField(field)
		clauses[i] = tq
	}
	d := scoring.NewDisMax(clauses, 0)
	d.SetBoost(boost)
	return d
}

// positions groups tokens by position, first position first; a position
// no token holds (a removed stop word) is left empty.
func positions(tokens analysis.TokenStream) [][]string {
	if len(tokens) == 0 {
		return nil
	}
	first, last := tokens[0].Position, tokens[0].Position
	for _, t := range tokens {
		first, last = min(first, t.Position), max(last, t.Position)
	}
	out := make([][]string, last-first+1)
	for _, t := range tokens {
		out[t.Position-first] = append(out[t.Position-first], string(t.Term))
	}
	return out
}

// expandPrefixes returns the terms of field that start with any of
// prefixes, at most limit of them, in term order per prefix.
func expandPrefixes(r bindex.IndexReader, field string, prefixes []string, limit int) ([]string, error) {
	var out []string
	for _, p := range prefixes {
		if len(out) >= limit {
			break
		}
		d, err := r.FieldDictPrefix(field, []byte(p))
		if err != nil {
			return nil, fmt.Errorf("match_phrase_prefix: reading the terms of [%s] that start with %q: %w", field, p, err)
		}
		for len(out) < limit {
			e, err := d.Next()
			if err != nil {
				_ = d.Close()
				return nil, fmt.Errorf("match_phrase_prefix: reading the terms of [%s] that start with %q: %w", field, p, err)
			}
			if e == nil {
				break
			}
			out = append(out, e.Term)
		}
		if err := d.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
