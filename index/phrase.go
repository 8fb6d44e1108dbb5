package index

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

// MatchPhrase is bleve's MatchPhraseQuery with a cheaper phrase check for
// the common case. bleve's phrase searcher turns every candidate document
// (every document holding all the phrase's terms) into maps of term
// locations before checking the phrase; for a search of a few thousand
// documents that is the largest part of its time and garbage. MatchPhrase
// builds the same term and conjunction searchers (so the same candidates,
// scores and query norm) and checks positions straight from the
// candidate's location list; a match carries the same locations as
// bleve's. It falls back to bleve's own searcher whenever the shortcut
// does not apply: locations or highlighting requested, fuzziness, synonym
// maps, fewer than two tokens, a token repeated, several tokens at one
// position, or gaps (removed stop words) in the analyzed phrase.
//
// JSON, the field, the analyzer and the boost are the embedded query's, so
// a MatchPhrase marshals exactly as a MatchPhraseQuery does.
type MatchPhrase struct {
	*query.MatchPhraseQuery
}

var (
	_ query.Query          = (*MatchPhrase)(nil)
	_ query.FieldableQuery = (*MatchPhrase)(nil)
	_ query.BoostableQuery = (*MatchPhrase)(nil)
)

// NewMatchPhrase wraps q, which must not set fuzziness (the fallback
// handles Fuzziness, but auto fuzziness is not visible from outside bleve,
// so a query with it must not be wrapped). The caller keeps configuring q
// (field, analyzer, boost) through the wrapper or directly.
func NewMatchPhrase(q *query.MatchPhraseQuery) *MatchPhrase { return &MatchPhrase{q} }

// Searcher returns the fast phrase searcher or, outside its case, bleve's.
func (q *MatchPhrase) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, opts search.SearcherOptions) (search.Searcher, error) {
	inner := q.MatchPhraseQuery
	if opts.IncludeTermVectors || inner.Fuzziness != 0 {
		return inner.Searcher(ctx, r, m, opts)
	}
	if ctx != nil && ctx.Value(search.FieldTermSynonymMapKey) != nil {
		return inner.Searcher(ctx, r, m, opts)
	}
	field := inner.FieldVal
	if field == "" {
		field = m.DefaultSearchField()
	}
	analyzerName := inner.Analyzer
	if analyzerName == "" {
		analyzerName = m.AnalyzerNameForPath(field)
	}
	an := m.AnalyzerNamed(analyzerName)
	if an == nil {
		return inner.Searcher(ctx, r, m, opts) // bleve reports the missing analyzer
	}
	terms, ok := plainPhrase(an.Analyze([]byte(inner.MatchPhrase)))
	if !ok {
		return inner.Searcher(ctx, r, m, opts)
	}
	// As bleve's NewMultiPhraseSearcher: term searchers with term vectors
	// under one conjunction, normalized by its weight.
	opts.IncludeTermVectors = true
	boost := inner.BoostVal.Value()
	tss := make([]search.Searcher, 0, len(terms))
	closeAll := func() {
		for _, s := range tss {
			_ = s.Close()
		}
	}
	for _, t := range terms {
		ts, err := searcher.NewTermSearcher(ctx, r, t, field, boost, opts)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("phrase searcher error building term searcher: %w", err)
		}
		tss = append(tss, ts)
	}
	must, err := searcher.NewConjunctionSearcher(ctx, r, tss, opts)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("phrase searcher error building conjunction searcher: %w", err)
	}
	must.SetQueryNorm(1.0 / math.Sqrt(must.Weight()))
	return &phraseSearcher{must: must, terms: terms, field: field, byTerm: make([][]int, len(terms))}, nil
}

// plainPhrase returns the terms of an analyzed phrase in order if the fast
// searcher can check it: at least two tokens, one per position, positions
// consecutive, no term twice.
func plainPhrase(tokens []*analysis.Token) ([]string, bool) {
	if len(tokens) < 2 {
		return nil, false
	}
	sorted := slices.Clone(tokens)
	slices.SortStableFunc(sorted, func(a, b *analysis.Token) int { return a.Position - b.Position })
	terms := make([]string, len(sorted))
	for i, t := range sorted {
		if t.Position != sorted[0].Position+i {
			return nil, false
		}
		terms[i] = string(t.Term)
		if slices.Contains(terms[:i], terms[i]) {
			return nil, false
		}
	}
	return terms, true
}

// phraseSearcher returns the documents of must (a conjunction of the
// terms' searchers with term vectors) in which the terms occur at
// consecutive positions of field, with the same array positions. It is used
// by one search goroutine, as every bleve searcher.
type phraseSearcher struct {
	must  search.Searcher
	terms []string
	field string

	cur         *search.DocumentMatch
	initialized bool
	byTerm      [][]int                    // per term: indexes into cur's FieldTermLocations
	found       []search.FieldTermLocation // the matched locations, before they replace cur's
}

var _ search.Searcher = (*phraseSearcher)(nil)

func (s *phraseSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	if !s.initialized {
		if err := s.advance(ctx); err != nil {
			return nil, err
		}
		s.initialized = true
	}
	for s.cur != nil {
		var rv *search.DocumentMatch
		if s.match(s.cur) {
			rv, s.cur = s.cur, nil
		}
		if err := s.advance(ctx); err != nil {
			return nil, err
		}
		if rv != nil {
			return rv, nil
		}
	}
	return nil, nil
}

// advance returns the current candidate to the pool (unless it was
// handed out) and reads the next one.
func (s *phraseSearcher) advance(ctx *search.SearchContext) error {
	if s.cur != nil {
		ctx.DocumentMatchPool.Put(s.cur)
	}
	var err error
	s.cur, err = s.must.Next(ctx)
	return err
}

// match reports whether dm holds the phrase and, if so, replaces dm's
// locations with those of every occurrence of the phrase (in the order of
// the first term's locations, each occurrence's terms in phrase order), as
// bleve's phrase searcher does.
func (s *phraseSearcher) match(dm *search.DocumentMatch) bool {
	ftls := dm.FieldTermLocations
	for i := range s.byTerm {
		s.byTerm[i] = s.byTerm[i][:0]
	}
	for k := range ftls {
		if ftls[k].Field != s.field {
			continue
		}
		for i, t := range s.terms {
			if ftls[k].Term == t {
				s.byTerm[i] = append(s.byTerm[i], k)
				break
			}
		}
	}
	s.found = s.found[:0]
	for _, k0 := range s.byTerm[0] {
		first := &ftls[k0].Location
		n := len(s.found)
		s.found = append(s.found, phrasePart(ftls[k0]))
		for i := 1; i < len(s.terms); i++ {
			next := -1
			for _, k := range s.byTerm[i] {
				if l := &ftls[k].Location; l.Pos == first.Pos+uint64(i) && l.ArrayPositions.Equals(first.ArrayPositions) {
					next = k
					break
				}
			}
			if next < 0 {
				s.found = s.found[:n]
				break
			}
			s.found = append(s.found, phrasePart(ftls[next]))
		}
	}
	dm.Locations = nil
	if len(s.found) == 0 {
		return false
	}
	dm.FieldTermLocations = append(ftls[:0], s.found...)
	return true
}

// phrasePart is a matched location as bleve's phrase searcher records it:
// array positions copied out of the candidate's recycled locations.
func phrasePart(ftl search.FieldTermLocation) search.FieldTermLocation {
	if len(ftl.Location.ArrayPositions) > 0 {
		ftl.Location.ArrayPositions = append(search.ArrayPositions(nil), ftl.Location.ArrayPositions...)
	}
	return ftl
}

func (s *phraseSearcher) Advance(ctx *search.SearchContext, id bindex.IndexInternalID) (*search.DocumentMatch, error) {
	if !s.initialized {
		if err := s.advance(ctx); err != nil {
			return nil, err
		}
		s.initialized = true
	}
	if s.cur != nil {
		if s.cur.IndexInternalID.Compare(id) >= 0 {
			return s.Next(ctx)
		}
		ctx.DocumentMatchPool.Put(s.cur)
	}
	if s.cur == nil {
		return nil, nil
	}
	var err error
	s.cur, err = s.must.Advance(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.Next(ctx)
}

func (s *phraseSearcher) Close() error               { return s.must.Close() }
func (s *phraseSearcher) Weight() float64            { return s.must.Weight() }
func (s *phraseSearcher) SetQueryNorm(n float64)     { s.must.SetQueryNorm(n) }
func (s *phraseSearcher) Count() uint64              { return s.must.Count() }
func (s *phraseSearcher) Min() int                   { return 0 }
func (s *phraseSearcher) DocumentMatchPoolSize() int { return s.must.DocumentMatchPoolSize() + 1 }
func (s *phraseSearcher) Size() int {
	n := 64 + s.must.Size()
	for _, t := range s.terms {
		n += 16 + len(t)
	}
	return n
}
