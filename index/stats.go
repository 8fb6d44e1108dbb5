package index

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Global BM25 statistics.
//
// bleve's own "global scoring" (IndexAlias preSearch) sums doc counts and
// per-segment dictionary sizes across shards, but a term's document frequency
// stays per shard, the "average field length" depends on segment layout, and
// multi-term queries (prefix, wildcard, regexp, fuzzy, ranges) expand against
// each shard's own dictionary, so N shards do not score like one index.
// Weft instead runs two phases:
//
//  1. TermStats on every shard: builds the query's searchers without running
//     them and records the local document frequency of every (field, term)
//     they open and every dictionary expansion they make, with the shard's
//     doc count and total field lengths (tokens indexed per field, kept by
//     Apply).
//  2. The sums go into the search context (WithGlobalStats); every shard then
//     expands multi-term queries to the union of all shards' terms and scores
//     with the global doc count, each term's global document frequency, and
//     avgdl = ceil(total tokens / doc count).
//
// Both phases see the index through weftScorch, a scorch index whose readers
// carry the statistics (set by globalQuery, the wrapper Index.Search puts
// around the query). A search of one shard skips phase 1: its reader reports
// the same field-length total as FieldCardinality, so bleve's own BM25 code
// computes the same avgdl, and local counts are the global ones. One shard
// and N shards therefore give identical totals, hits and scores.

// IndexType is the bleve index type name this package registers and uses.
const IndexType = "weft_scorch"

var registerOnce sync.Once

func registerIndexType() {
	registerOnce.Do(func() {
		// Registration is process-wide in bleve; this name is ours alone.
		_ = registry.RegisterIndexType(IndexType, func(storeName string, config map[string]any, q *bindex.AnalysisQueue) (bindex.Index, error) {
			s, err := scorch.NewScorch(storeName, config, q)
			if err != nil {
				return nil, err
			}
			sc, ok := s.(*scorch.Scorch)
			if !ok {
				return nil, fmt.Errorf("index: scorch constructor returned %T", s)
			}
			return &weftScorch{Scorch: sc}, nil
		})
	})
}

// weftScorch is scorch with readers that apply global term statistics.
type weftScorch struct {
	*scorch.Scorch
	// fieldLength reports the tokens indexed in a field, and writes is
	// the Index's write sequence lock (both set by Index before the first
	// search, read-only afterwards).
	fieldLength func(field string) uint64
	writes      *atomic.Uint64
}

func (w *weftScorch) Reader() (bindex.IndexReader, error) {
	var before uint64
	if w.writes != nil {
		before = w.writes.Load()
	}
	r, err := w.Scorch.Reader()
	if err != nil {
		return nil, err
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return r, nil
	}
	sr := &statsReader{IndexSnapshot: snap, fieldLength: w.fieldLength, writes: before | 1}
	if w.writes != nil && w.writes.Load() == before {
		// No write began or ended while the snapshot was taken: it holds
		// exactly the contents after the writes counted in before.
		sr.writes = before
	}
	return sr, nil
}

// statsReader is one search's view of a shard. In phase 1 rec is set and
// every term reader and dictionary expansion is recorded; in phase 2 global
// is set (by globalQuery) and term counts and dictionary expansions
// (prefix, range, regexp, wildcard, fuzzy, numeric/date ranges) come from
// the global statistics, so every shard builds the same clauses a single
// index would.
type statsReader struct {
	*scorch.IndexSnapshot
	rec         *recorder
	global      *TermStats
	fieldLength func(string) uint64
	// writes is the Index's write sequence lock as the snapshot saw it:
	// even when no write was changing the contents, odd when unknown.
	writes uint64

	hitsMu sync.Mutex
	hits   map[string]uint64 // external id → doc number, from ExternalID
	slab   storedSlab        // the hits' stored fields (under hitsMu)
}

// FieldCardinality is what bleve divides by the doc count to get BM25's
// average field length when no global statistics are in the context (a
// search of one shard): the tokens indexed in the field, the same quantity
// WithGlobalStats sums over shards.
func (r *statsReader) FieldCardinality(field string) (int, error) {
	if r.fieldLength == nil {
		return r.IndexSnapshot.FieldCardinality(field)
	}
	return int(r.fieldLength(field)), nil
}

// maxRememberedHits bounds the ids one search's reader remembers (a sort
// on _id resolves the id of every candidate, not only of the hits).
const maxRememberedHits = 1024

// ExternalID is the snapshot's, remembering the doc number of the id: bleve
// resolves the id of every hit it returns, then loads the hit's stored
// fields by id (Document), which would look the id up again in the _id
// dictionary.
func (r *statsReader) ExternalID(id bindex.IndexInternalID) (string, error) {
	ext, err := r.IndexSnapshot.ExternalID(id)
	if err != nil {
		return ext, err
	}
	r.hitsMu.Lock()
	if r.hits == nil {
		r.hits = make(map[string]uint64, 16)
	}
	if len(r.hits) < maxRememberedHits {
		r.hits[ext] = id.Value()
	}
	r.hitsMu.Unlock()
	return ext, nil
}

// Document is the snapshot's document with its text fields' Text sharing
// the field's bytes: bleve loads a hit's stored fields (the _source) with
// Document and converts each with Text, a second copy of every returned
// source otherwise. The document owns those bytes (copied out of the
// segment) and nothing modifies them. A hit of this reader's search is
// read by its doc number, without a dictionary lookup, into this reader's
// slab (see storedDoc).
func (r *statsReader) Document(id string) (bindex.Document, error) {
	r.hitsMu.Lock()
	num, ok := r.hits[id]
	if ok {
		if d, ok := r.storedTextDoc(id, num); ok {
			r.hitsMu.Unlock()
			return d, nil
		}
	}
	r.hitsMu.Unlock()
	d, err := r.IndexSnapshot.Document(id)
	if err != nil || d == nil {
		return d, err
	}
	if doc, ok := d.(*document.Document); ok {
		for k, f := range doc.Fields {
			if tf, ok := f.(*document.TextField); ok {
				doc.Fields[k] = sharedText{tf}
			}
		}
	}
	return d, nil
}

// storedTextDoc reads the stored fields of global doc number num (of id)
// as scorch's Document does, for documents whose stored fields are all text
// (this package stores only _source and its metadata that way). ok is false
// if num is not in the snapshot or a stored field is of another kind; the
// caller then asks scorch. The caller holds hitsMu.
func (r *statsReader) storedTextDoc(id string, num uint64) (bindex.Document, bool) {
	var off uint64
	for _, seg := range r.Segments() {
		size := uint64(seg.FullSize()) // doc numbers of a segment include its deleted ones
		if num >= off+size {
			off += size
			continue
		}
		r.slab.begin(len(r.hits))
		ok := true
		err := seg.VisitDocument(num-off, func(name string, typ byte, val []byte, pos []uint64) bool {
			if name == "_id" {
				return true
			}
			if typ != 't' {
				ok = false
				return false
			}
			r.slab.addField(name, val, pos)
			return true
		})
		if !ok || err != nil {
			r.slab.abort()
			return nil, false
		}
		return r.slab.doc(id), true
	}
	return nil, false
}

// storedSlab holds the stored fields of one search's hits: values in
// chunks of bytes, fields and documents in chunks of structs, so that
// loading a hit's _source costs no allocation of its own once a chunk has
// room. What it hands out stays valid as long as it is referenced (a full
// chunk is replaced, never overwritten), which is how a hit's _source
// string outlives the search.
type storedSlab struct {
	bytes  []byte
	fields []storedField
	docs   []storedDoc
	// The fields of the document being read: fields[start:].
	start int
	// left is how many more documents the search will likely read,
	// which sizes the next chunk: the search's hits at first (at most
	// maxFirstChunkDocs of them, since a sort on _id resolves the ids of
	// more candidates than it returns), then as many as were read so far.
	left int
}

// maxFirstChunkDocs bounds the documents the first chunks are sized for.
const maxFirstChunkDocs = 32

// begin starts reading a document; hits is how many documents the search
// may read in all (a hint for sizing chunks).
func (s *storedSlab) begin(hits int) {
	s.start = len(s.fields)
	switch {
	case s.docs == nil:
		s.left = min(hits, maxFirstChunkDocs)
	case s.left < 1:
		s.left = len(s.docs)
	}
	s.left = max(s.left, 1)
}

// abort forgets the fields added since begin (a document that is not all
// text; the bytes of its values stay unused).
func (s *storedSlab) abort() { s.fields = s.fields[:s.start] }

func (s *storedSlab) addField(name string, val []byte, pos []uint64) {
	if cap(s.bytes)-len(s.bytes) < len(val) {
		// Room for this value and, if the documents left are of about
		// this size, for theirs.
		s.bytes = make([]byte, 0, len(val)+min((len(val)+64)*(s.left-1), 256<<10))
	}
	lo := len(s.bytes)
	s.bytes = append(s.bytes, val...)
	if len(s.fields) == cap(s.fields) {
		// Move the current document's fields to the new chunk.
		cur := s.fields[s.start:]
		s.fields = append(make([]storedField, 0, len(cur)+2*s.left), cur...)
		s.start = 0
	}
	f := storedField{name: name, value: s.bytes[lo:len(s.bytes):len(s.bytes)]}
	if len(pos) > 0 {
		f.pos = append([]uint64(nil), pos...)
	}
	s.fields = append(s.fields, f)
}

// doc returns the document of the fields added since begin.
func (s *storedSlab) doc(id string) *storedDoc {
	if len(s.docs) == cap(s.docs) {
		s.docs = make([]storedDoc, 0, s.left)
	}
	s.left--
	fs := s.fields[s.start:len(s.fields):len(s.fields)]
	var n uint64
	for i := range fs {
		n += uint64(len(fs[i].value))
	}
	s.docs = append(s.docs, storedDoc{id: id, fields: fs, storedBytes: n})
	return &s.docs[len(s.docs)-1]
}

// storedDoc is a hit's stored text fields as bleve's search reads them
// (VisitFields, StoredFieldsBytes); it is never indexed.
type storedDoc struct {
	id          string
	fields      []storedField
	storedBytes uint64
}

var _ bindex.Document = (*storedDoc)(nil)

func (d *storedDoc) ID() string { return d.id }
func (d *storedDoc) Size() int {
	n := int(unsafe.Sizeof(*d)) + len(d.id)
	for i := range d.fields {
		n += int(unsafe.Sizeof(d.fields[i])) + len(d.fields[i].name) + len(d.fields[i].value) + 8*len(d.fields[i].pos)
	}
	return n
}
func (d *storedDoc) VisitFields(visitor bindex.FieldVisitor) {
	for i := range d.fields {
		visitor(&d.fields[i])
	}
}
func (d *storedDoc) VisitComposite(bindex.CompositeFieldVisitor) {}
func (d *storedDoc) HasComposite() bool                          { return false }
func (d *storedDoc) NumPlainTextBytes() uint64                   { return d.storedBytes }
func (d *storedDoc) AddIDField()                                 {}
func (d *storedDoc) StoredFieldsBytes() uint64                   { return d.storedBytes }
func (d *storedDoc) Indexed() bool                               { return false }

// storedField is a stored text field as read back: its Text aliases its
// value, which nothing modifies.
type storedField struct {
	name  string
	value []byte
	pos   []uint64
}

var (
	_ bindex.Field     = (*storedField)(nil)
	_ bindex.TextField = (*storedField)(nil)
)

func (f *storedField) Name() string                                      { return f.name }
func (f *storedField) Value() []byte                                     { return f.value }
func (f *storedField) ArrayPositions() []uint64                          { return f.pos }
func (f *storedField) EncodedFieldType() byte                            { return 't' }
func (f *storedField) Analyze()                                          {}
func (f *storedField) Options() bindex.FieldIndexingOptions              { return bindex.StoreField }
func (f *storedField) AnalyzedLength() int                               { return 0 }
func (f *storedField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return nil }
func (f *storedField) NumPlainTextBytes() uint64                         { return uint64(len(f.value)) }
func (f *storedField) Text() string {
	if len(f.value) == 0 {
		return ""
	}
	return unsafe.String(&f.value[0], len(f.value))
}

// sharedText is a stored text field whose Text aliases its value.
type sharedText struct{ *document.TextField }

func (t sharedText) Text() string {
	v := t.Value()
	if len(v) == 0 {
		return ""
	}
	return unsafe.String(&v[0], len(v))
}

type ctxKey int

const (
	statsCtxKey ctxKey = 1
	genCtxKey   ctxKey = 2
)

func (r *statsReader) TermFieldReader(ctx context.Context, term []byte, field string, includeFreq, includeNorm, includeTermVectors bool) (bindex.TermFieldReader, error) {
	tfr, err := r.IndexSnapshot.TermFieldReader(ctx, term, field, includeFreq, includeNorm, includeTermVectors)
	if err != nil {
		return tfr, err
	}
	rec, global := r.rec, r.global
	if rec == nil && global == nil && ctx != nil {
		switch v := ctx.Value(statsCtxKey).(type) {
		case *recorder:
			rec = v
		case *TermStats:
			global = v
		}
	}
	switch {
	case rec != nil:
		rec.record(field, term, tfr.Count())
	case global != nil:
		if df, ok := global.DocFreq[field][string(term)]; ok {
			if st, ok := tfr.(*scorch.IndexSnapshotTermFieldReader); ok {
				return &countedTFR{IndexSnapshotTermFieldReader: st, count: df}, nil
			}
			return &countedGenericTFR{TermFieldReader: tfr, count: df}, nil
		}
	}
	return tfr, nil
}

// dict returns the dictionary to hand out for an expansion with signature
// sig: recorded in phase 1, global in phase 2, local otherwise.
func (r *statsReader) dict(sig string, local bindex.FieldDict, err error) (bindex.FieldDict, error) {
	if err != nil {
		return local, err
	}
	switch {
	case r.rec != nil:
		return &recordingDict{FieldDict: local, rec: r.rec, sig: sig}, nil
	case r.global != nil:
		if terms, ok := r.global.Dicts[sig]; ok {
			_ = local.Close()
			return &sliceDict{terms: terms, field: dictField(sig), stats: r.global}, nil
		}
	}
	return local, nil
}

func dictSig(kind, field string, args ...string) string {
	return kind + "\x00" + field + "\x00" + strings.Join(args, "\x00")
}

func dictField(sig string) string {
	parts := strings.SplitN(sig, "\x00", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

func (r *statsReader) FieldDictRange(field string, start, end []byte) (bindex.FieldDict, error) {
	d, err := r.IndexSnapshot.FieldDictRange(field, start, end)
	return r.dict(dictSig("range", field, string(start), string(end)), d, err)
}

func (r *statsReader) FieldDictPrefix(field string, prefix []byte) (bindex.FieldDict, error) {
	d, err := r.IndexSnapshot.FieldDictPrefix(field, prefix)
	return r.dict(dictSig("prefix", field, string(prefix)), d, err)
}

func (r *statsReader) FieldDictRegexp(field, re string) (bindex.FieldDict, error) {
	d, _, err := r.FieldDictRegexpAutomaton(field, re)
	return d, err
}

func (r *statsReader) FieldDictRegexpAutomaton(field, re string) (bindex.FieldDict, bindex.RegexAutomaton, error) {
	d, a, err := r.IndexSnapshot.FieldDictRegexpAutomaton(field, re)
	d, err = r.dict(dictSig("regexp", field, re), d, err)
	return d, a, err
}

func (r *statsReader) FieldDictFuzzy(field, term string, fuzziness int, prefix string) (bindex.FieldDict, error) {
	d, _, err := r.FieldDictFuzzyAutomaton(field, term, fuzziness, prefix)
	return d, err
}

func (r *statsReader) FieldDictFuzzyAutomaton(field, term string, fuzziness int, prefix string) (bindex.FieldDict, bindex.FuzzyAutomaton, error) {
	d, a, err := r.IndexSnapshot.FieldDictFuzzyAutomaton(field, term, fuzziness, prefix)
	d, err = r.dict(dictSig("fuzzy", field, term, strconv.Itoa(fuzziness), prefix), d, err)
	return d, a, err
}

// FieldDictContains answers from the global statistics in phase 2: a term
// exists if some shard holds it (numeric and date ranges enumerate their
// candidate terms and keep the existing ones).
func (r *statsReader) FieldDictContains(field string) (bindex.FieldDictContains, error) {
	d, err := r.IndexSnapshot.FieldDictContains(field)
	if err != nil || r.global == nil {
		return d, err
	}
	if fd, ok := d.(bindex.FieldDict); ok {
		_ = fd.Close()
	}
	return &globalContains{df: r.global.DocFreq[field]}, nil
}

type globalContains struct{ df map[string]uint64 }

func (g *globalContains) Contains(key []byte) (bool, error) { return g.df[string(key)] > 0, nil }
func (g *globalContains) BytesRead() uint64                 { return 0 }

// DictTerm is one term of a dictionary expansion.
type DictTerm struct {
	Term         string `json:"t"`
	EditDistance uint8  `json:"d,omitempty"`
}

type recordingDict struct {
	bindex.FieldDict
	rec   *recorder
	sig   string
	terms []DictTerm
}

func (d *recordingDict) Next() (*bindex.DictEntry, error) {
	e, err := d.FieldDict.Next()
	if err == nil && e != nil {
		d.terms = append(d.terms, DictTerm{Term: e.Term, EditDistance: e.EditDistance})
	}
	return e, err
}

func (d *recordingDict) Close() error {
	d.rec.mu.Lock()
	d.rec.dicts[d.sig] = mergeDictTerms(d.rec.dicts[d.sig], d.terms)
	d.rec.mu.Unlock()
	return d.FieldDict.Close()
}

type sliceDict struct {
	terms []DictTerm
	field string
	stats *TermStats
	pos   int
	entry bindex.DictEntry
}

func (d *sliceDict) Next() (*bindex.DictEntry, error) {
	if d.pos >= len(d.terms) {
		return nil, nil
	}
	t := d.terms[d.pos]
	d.pos++
	d.entry = bindex.DictEntry{Term: t.Term, Count: d.stats.DocFreq[d.field][t.Term], EditDistance: t.EditDistance}
	return &d.entry, nil
}
func (d *sliceDict) Close() error      { return nil }
func (d *sliceDict) Cardinality() int  { return len(d.terms) }
func (d *sliceDict) BytesRead() uint64 { return 0 }

// mergeDictTerms returns the sorted union of two term lists.
func mergeDictTerms(a, b []DictTerm) []DictTerm {
	seen := make(map[string]DictTerm, len(a)+len(b))
	for _, t := range a {
		seen[t.Term] = t
	}
	for _, t := range b {
		seen[t.Term] = t
	}
	out := make([]DictTerm, 0, len(seen))
	for _, t := range seen {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Term < out[j].Term })
	return out
}

// globalQuery puts the global statistics on the reader of the search that
// builds its searcher (bleve creates one reader per search), after checking
// that the reader's contents are of the generation expected, if one is.
type globalQuery struct {
	query.Query
	stats  *TermStats
	expect uint64                    // 0: any generation
	gen    func(*statsReader) uint64 // the Index's generation of a reader
}

func (g *globalQuery) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, o search.SearcherOptions) (search.Searcher, error) {
	sr, ok := r.(*statsReader)
	if g.expect != 0 && (!ok || g.gen(sr) != g.expect) {
		return nil, ErrStaleStats
	}
	if ok {
		sr.global = g.stats
	}
	return g.Query.Searcher(ctx, r, m, o)
}

func (g *globalQuery) Validate() error {
	if v, ok := g.Query.(query.ValidatableQuery); ok {
		return v.Validate()
	}
	return nil
}

func (g *globalQuery) MarshalJSON() ([]byte, error) { return json.Marshal(g.Query) }

// countedTFR reports the global document frequency; everything else
// (including scorch's Optimizable) is the shard's reader.
type countedTFR struct {
	*scorch.IndexSnapshotTermFieldReader
	count uint64
}

func (c *countedTFR) Count() uint64 { return c.count }

type countedGenericTFR struct {
	bindex.TermFieldReader
	count uint64
}

func (c *countedGenericTFR) Count() uint64 { return c.count }

type recorder struct {
	mu    sync.Mutex
	df    map[string]map[string]uint64
	dicts map[string][]DictTerm
}

func (r *recorder) record(field string, term []byte, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.df[field]
	if m == nil {
		m = map[string]uint64{}
		r.df[field] = m
	}
	m[string(term)] = n
}

// TermStats are the scoring statistics of one query over one or more shards.
// They are plain data (JSON-encodable) so that a remote shard can return them.
type TermStats struct {
	DocCount    uint64                       `json:"doc_count"`
	FieldLength map[string]uint64            `json:"field_length"` // tokens indexed per field
	DocFreq     map[string]map[string]uint64 `json:"doc_freq"`     // field → term → docs
	Dicts       map[string][]DictTerm        `json:"dicts"`        // expansion → sorted terms
}

// Add sums o into s.
func (s *TermStats) Add(o *TermStats) {
	if o == nil {
		return
	}
	s.DocCount += o.DocCount
	if s.FieldLength == nil {
		s.FieldLength = map[string]uint64{}
	}
	for f, n := range o.FieldLength {
		s.FieldLength[f] += n
	}
	if s.DocFreq == nil {
		s.DocFreq = map[string]map[string]uint64{}
	}
	for f, terms := range o.DocFreq {
		m := s.DocFreq[f]
		if m == nil {
			m = make(map[string]uint64, len(terms))
			s.DocFreq[f] = m
		}
		for t, n := range terms {
			m[t] += n
		}
	}
	if s.Dicts == nil {
		s.Dicts = map[string][]DictTerm{}
	}
	for sig, terms := range o.Dicts {
		s.Dicts[sig] = mergeDictTerms(s.Dicts[sig], terms)
	}
}

// WithGlobalStats returns a context under which searches of this package's
// indexes score with the given statistics (phase 2 above). s must not be
// modified afterwards. Statistics of no document (read while the indexes
// were empty, by a search racing the first writes) are not applied: under
// them bleve's scores would be NaN (an idf of log 0 under an infinite
// normalisation), so each shard scores with its own.
func WithGlobalStats(ctx context.Context, s *TermStats) context.Context {
	if s.DocCount == 0 {
		return ctx
	}
	card := make(map[string]int, len(s.FieldLength)+len(s.DocFreq))
	for f, n := range s.FieldLength {
		card[f] = int(n)
	}
	for f := range s.DocFreq {
		if _, ok := card[f]; !ok {
			card[f] = 0
		}
	}
	// bleve's unscored disjunction optimisation (a filter over a range, say)
	// builds a term searcher on the pseudo-field "*", whose BM25 set-up fails
	// without an entry; it never scores, so any value does.
	if _, ok := card["*"]; !ok {
		card["*"] = 0
	}
	ctx = context.WithValue(ctx, statsCtxKey, s)
	return context.WithValue(ctx, search.BM25StatsKey, &search.BM25Stats{
		DocCount:         float64(s.DocCount),
		FieldCardinality: card,
	})
}

// ExpectGeneration returns a context under which a search with global
// statistics (WithGlobalStats) runs only if the index's contents are still
// of generation gen, as TermStats returned it, and fails with ErrStaleStats
// otherwise: so statistics read earlier (and kept) score exactly as fresh
// ones would. gen 0 expects nothing.
func ExpectGeneration(ctx context.Context, gen uint64) context.Context {
	return context.WithValue(ctx, genCtxKey, gen)
}

// ExpectedGeneration returns the generation ExpectGeneration put in ctx, or
// 0 (a shard reached over the network gets it passed explicitly).
func ExpectedGeneration(ctx context.Context) uint64 {
	g, _ := ctx.Value(genCtxKey).(uint64)
	return g
}

func cloneLens(m map[string]uint64) map[string]uint64 { return maps.Clone(m) }

// GlobalStatsFrom returns the statistics WithGlobalStats put in ctx, or nil
// (a shard reached over the network gets them passed explicitly).
func GlobalStatsFrom(ctx context.Context) *TermStats {
	s, _ := ctx.Value(statsCtxKey).(*TermStats)
	return s
}
