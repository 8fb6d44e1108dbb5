package index

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/collector"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Per-document values for aggregations: a search can hand every document it
// matches, with the doc values of chosen fields, to a Collector, in the same
// pass and on the same snapshot as the search that finds the page of hits.

// Collector sees every document a search matches (SearchCollect). It is
// called from one goroutine, in index order.
type Collector interface {
	// Fields names the fields whose values Collect reads, by position:
	// MatchedDoc.Numbers(k) and Strings(k) read Fields()[k].
	Fields() []string
	// Filters are queries that MatchedDoc.Matches(k) tests a document
	// against (filter and filters aggregations).
	Filters() []query.Query
	// Collect is called once for every matching document; doc is valid
	// only during the call.
	Collect(doc *MatchedDoc) error
	// Finish is called once after the last document, with the snapshot
	// still open; snap is valid only during the call.
	Finish(snap *Snapshot) error
}

// ValueKind says how a field's values are read.
type ValueKind uint8

const (
	// KindNone: the field is not mapped here or has no doc values.
	KindNone ValueKind = iota
	// KindNumber: numbers; dates as epoch milliseconds; booleans as 1 and 0.
	KindNumber
	// KindString: keyword, ip and completion values.
	KindString
)

// kindOf is how the values of a field of ES type t are read.
func kindOf(t string) ValueKind {
	switch t {
	case TypeKeyword, TypeIP, TypeCompletion:
		return KindString
	case TypeLong, TypeInteger, TypeShort, TypeByte, TypeDouble, TypeFloat, TypeHalfFloat, TypeScaledFloat,
		TypeDate, TypeDateNanos, TypeBoolean:
		return KindNumber
	}
	return KindNone
}

// DocRef names a matched document within the search's snapshot, for
// Snapshot.Load. It may be kept past Collect.
type DocRef struct{ iid uint64 }

// MatchedDoc is one document a search matched.
type MatchedDoc struct {
	// Score is the document's score (0 when the search does not score).
	Score float64

	run  *collectRun
	iid  bindex.IndexInternalID
	nums [][]float64
	strs [][]string
}

// Kind is how the values of Fields()[k] are read on this shard.
func (d *MatchedDoc) Kind(k int) ValueKind { return d.run.kinds[k] }

// Numbers returns the values of Fields()[k] when its kind is KindNumber
// (ascending; a value the document holds twice is listed once).
func (d *MatchedDoc) Numbers(k int) []float64 { return d.nums[k] }

// Strings returns the values of Fields()[k] when its kind is KindString
// (in term order, each once).
func (d *MatchedDoc) Strings(k int) []string { return d.strs[k] }

// Ref names the document for Snapshot.Load.
func (d *MatchedDoc) Ref() DocRef { return DocRef{iid: binary.BigEndian.Uint64(d.iid)} }

// Matches reports whether the document matches Filters()[k].
func (d *MatchedDoc) Matches(k int) (bool, error) { return d.run.filters[k].matches(d.iid) }

// Snapshot is the searched snapshot, open during Collector.Finish.
type Snapshot struct {
	r bindex.IndexReader
}

// Loaded is a document read back by Snapshot.Load.
type Loaded struct {
	ID          string
	Source      []byte
	SeqNo       uint64
	Version     int64
	PrimaryTerm uint64
}

// Load reads the id, source and versions of a matched document.
func (s *Snapshot) Load(ref DocRef) (Loaded, error) {
	iid := make(bindex.IndexInternalID, 8)
	binary.BigEndian.PutUint64(iid, ref.iid)
	id, err := s.r.ExternalID(iid)
	if err != nil {
		return Loaded{}, err
	}
	out := Loaded{ID: id}
	doc, err := s.r.Document(id)
	if err != nil || doc == nil {
		return out, err
	}
	doc.VisitFields(func(f bindex.Field) {
		switch f.Name() {
		case SourceField:
			out.Source = append([]byte(nil), f.Value()...)
		case metaField:
			if v := f.Value(); len(v) == 24 {
				out.SeqNo = binary.BigEndian.Uint64(v[0:])
				out.Version = int64(binary.BigEndian.Uint64(v[8:]))
				out.PrimaryTerm = binary.BigEndian.Uint64(v[16:])
			}
		}
	})
	return out, nil
}

// Terms calls visit with every value of a KindString field in this
// shard, in term order (terms aggregations that list terms no matching
// document holds).
func (s *Snapshot) Terms(field string, visit func(term string)) error {
	d, err := s.r.FieldDict(field)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	for e, err := d.Next(); e != nil || err != nil; e, err = d.Next() {
		if err != nil {
			return err
		}
		visit(e.Term)
	}
	return nil
}

// SearchCollect runs req like Search and hands every matching document to
// c (Collect for each, then Finish), on the snapshot the hits come from. A
// non-nil post is Elasticsearch's post_filter: the hits, the total and the
// max score are of the documents that match post too, while c (the
// aggregations) still sees every document req's query matches. post is
// tested unscored, so the hits keep the scores of req's query. Either c or
// post may be nil.
func (i *Index) SearchCollect(ctx context.Context, req *bleve.SearchRequest, c Collector, post query.Query) (*bleve.SearchResult, error) {
	if c == nil && post == nil {
		return i.Search(ctx, req)
	}
	var kept postFiltered
	// stops close the filters' searchers once the search is over, however
	// it ended (a cancelled search never hands the handler its end).
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	maker := search.MakeDocumentMatchHandler(func(sctx *search.SearchContext) (search.DocumentMatchHandler, bool, error) {
		inner, loadID, err := collector.MakeTopNDocumentMatchHandler(sctx)
		if err != nil || inner == nil {
			return nil, false, fmt.Errorf("index: collecting needs bleve's top-n collector: %v", err)
		}
		var run *collectRun
		if c != nil {
			if run, err = i.newCollectRun(ctx, sctx.IndexReader, c); err != nil {
				return nil, false, err
			}
			stops = append(stops, run.close)
		}
		var pf *filterState
		if post != nil {
			pf = &filterState{ctx: ctx, q: post, r: filterReader(sctx.IndexReader), im: i.im}
			stops = append(stops, pf.close)
		}
		return func(d *search.DocumentMatch) error {
			if d == nil {
				if run != nil {
					err := run.finish()
					run.close()
					if err != nil {
						return err
					}
				}
				if pf != nil {
					pf.close()
				}
				return inner(nil)
			}
			if run != nil {
				if err := run.collect(d); err != nil {
					return err
				}
			}
			if pf != nil {
				ok, err := pf.matches(d.IndexInternalID)
				if err != nil {
					return err
				}
				if !ok {
					sctx.DocumentMatchPool.Put(d)
					return nil
				}
				kept.add(d.Score)
			}
			return inner(d)
		}, loadID, nil
	})
	res, err := i.Search(context.WithValue(ctx, search.MakeDocumentMatchHandlerKey, maker), req)
	if err == nil && post != nil {
		res.Total, res.MaxScore = kept.total, kept.maxScore
	}
	return res, err
}

// postFiltered counts the documents a post filter kept: bleve's collector
// counts every document the query matches before its handler sees it.
type postFiltered struct {
	total    uint64
	maxScore float64
}

func (p *postFiltered) add(score float64) {
	p.total++
	if score > p.maxScore {
		p.maxScore = score
	}
}

// collectRun is one search's collection state.
type collectRun struct {
	c       Collector
	r       bindex.IndexReader
	kinds   []ValueKind
	dates   []bool           // Fields()[k] holds dates (stored in nanoseconds)
	slots   map[string][]int // field → positions in Fields()
	dv      bindex.DocValueReader
	filters []*filterState
	doc     MatchedDoc
}

func (i *Index) newCollectRun(ctx context.Context, r bindex.IndexReader, c Collector) (*collectRun, error) {
	fields := c.Fields()
	run := &collectRun{c: c, r: r, kinds: make([]ValueKind, len(fields)), dates: make([]bool, len(fields)), slots: map[string][]int{}}
	var names []string
	for k, f := range fields {
		t := i.m.FieldType(f)
		if t == "" {
			t = i.m.rangeBoundType(f)
		}
		run.kinds[k], run.dates[k] = kindOf(t), t == TypeDate || t == TypeDateNanos
		if run.kinds[k] == KindNone {
			continue
		}
		if len(run.slots[f]) == 0 {
			names = append(names, f)
		}
		run.slots[f] = append(run.slots[f], k)
	}
	if len(names) > 0 {
		dv, err := r.DocValueReader(names)
		if err != nil {
			return nil, err
		}
		run.dv = dv
	}
	fr := filterReader(r)
	for _, q := range c.Filters() {
		run.filters = append(run.filters, &filterState{ctx: ctx, q: q, r: fr, im: i.im})
	}
	run.doc = MatchedDoc{run: run, nums: make([][]float64, len(fields)), strs: make([][]string, len(fields))}
	return run, nil
}

// filterReader is the reader filters run on: the same snapshot as r
// without the main query's global statistics, which cover only the main
// query's terms.
func filterReader(r bindex.IndexReader) bindex.IndexReader {
	if sr, ok := r.(*statsReader); ok {
		return &statsReader{IndexSnapshot: sr.IndexSnapshot, fieldLength: sr.fieldLength}
	}
	return r
}

func (run *collectRun) collect(d *search.DocumentMatch) error {
	doc := &run.doc
	doc.Score, doc.iid = d.Score, d.IndexInternalID
	for k := range doc.nums {
		doc.nums[k], doc.strs[k] = doc.nums[k][:0], doc.strs[k][:0]
	}
	if run.dv != nil && doc.iid != nil {
		err := run.dv.VisitDocValues(doc.iid, func(field string, term []byte) {
			for _, k := range run.slots[field] {
				run.add(k, term)
			}
		})
		if err != nil {
			return err
		}
	}
	return run.c.Collect(doc)
}

// add decodes one doc-value term of Fields()[k].
func (run *collectRun) add(k int, term []byte) {
	doc := &run.doc
	if run.kinds[k] == KindString {
		doc.strs[k] = append(doc.strs[k], string(term))
		return
	}
	switch string(term) {
	case "T":
		doc.nums[k] = append(doc.nums[k], 1)
		return
	case "F":
		doc.nums[k] = append(doc.nums[k], 0)
		return
	}
	pc := numeric.PrefixCoded(term)
	if shift, err := pc.Shift(); err != nil || shift != 0 {
		return // a lower-precision term of the same value
	}
	n, err := pc.Int64()
	if err != nil {
		return
	}
	doc.nums[k] = append(doc.nums[k], run.number(k, n))
}

// number turns a full-precision term into a value: dates are stored in
// nanoseconds and read in (whole) milliseconds, numbers as sortable int64
// bits.
func (run *collectRun) number(k int, n int64) float64 {
	if run.dates[k] {
		ms := n / 1e6
		if n%1e6 < 0 {
			ms--
		}
		return float64(ms)
	}
	return numeric.Int64ToFloat64(n)
}

func (run *collectRun) finish() error {
	return run.c.Finish(&Snapshot{r: run.r})
}

func (run *collectRun) close() {
	for _, f := range run.filters {
		f.close()
	}
}

// filterState walks a filter's matches alongside the main query's (both in
// document order), so testing a document costs an Advance, not a search.
type filterState struct {
	ctx  context.Context
	q    query.Query
	r    bindex.IndexReader
	im   mapping.IndexMapping
	s    search.Searcher
	sctx *search.SearchContext
	cur  *search.DocumentMatch
	done bool
	err  error
}

func (f *filterState) matches(iid bindex.IndexInternalID) (bool, error) {
	if f.err != nil {
		return false, f.err
	}
	if f.s == nil && !f.done {
		if err := f.open(); err != nil {
			f.err = err
			return false, err
		}
	}
	for !f.done && (f.cur == nil || f.cur.IndexInternalID.Compare(iid) < 0) {
		if f.cur != nil {
			f.sctx.DocumentMatchPool.Put(f.cur)
		}
		next, err := f.s.Advance(f.sctx, iid)
		if err != nil {
			f.err = err
			return false, err
		}
		f.cur = next
		f.done = next == nil
	}
	return f.cur != nil && f.cur.IndexInternalID.Equals(iid), nil
}

func (f *filterState) open() error {
	s, err := f.q.Searcher(f.ctx, f.r, f.im, search.SearcherOptions{Score: "none"})
	if err != nil {
		return err
	}
	f.s = s
	f.sctx = &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize()+1, 0), IndexReader: f.r}
	return nil
}

func (f *filterState) close() {
	if f.s != nil {
		_ = f.s.Close()
		f.s = nil
		f.done = true
	}
}

// MatchedQueriesField is the key under which a hit's Fields hold the names
// of the named queries it matches ([]string), once the search layer has
// tested the hits of the final page (Matching).
const MatchedQueriesField = "_weft_matched_queries"

// Matching returns which of ids match q (an unscored search restricted to
// them).
func (i *Index) Matching(ctx context.Context, q query.Query, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(q, bleve.NewDocIDQuery(ids)), len(ids), 0, false)
	req.Score = "none"
	res, err := i.Search(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(res.Hits))
	for _, h := range res.Hits {
		out[h.ID] = true
	}
	return out, nil
}
