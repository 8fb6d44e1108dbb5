package index

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// stateKey is the bleve internal key holding the index state: the highest
// applied sequence number and the field-length totals that go with it. It
// is written by the small batch that follows every document batch, so a
// persisted snapshot holds all documents up to State.Seq (and possibly some
// after it, which log replay re-applies).
var stateKey = []byte("_weft_state")

type state struct {
	Seq  uint64            `json:"seq"`
	Lens map[string]uint64 `json:"lens"`
	// GCP is the global checkpoint the copy knew when this state was
	// written: every operation up to it is on every in-sync copy.
	GCP uint64 `json:"gcp,omitempty"`
}

// Op is one write to apply to an index. Source is the full JSON object of the
// document (nil for Delete). SeqNo, Version and PrimaryTerm are recorded with
// the document and returned by Get.
type Op struct {
	Delete      bool
	ID          string
	Source      []byte
	SeqNo       uint64
	Version     int64
	PrimaryTerm uint64

	// Prev is the caller's Lookup of the document this op replaces, taken
	// under the same write serialization; nil makes Apply look it up.
	Prev *Prev

	doc *document.Document // built by Prepare
}

// Prev describes the stored document an op replaces.
type Prev struct {
	Exists      bool
	SeqNo       uint64
	Version     int64
	PrimaryTerm uint64
	source      []byte
}

// Source returns the stored JSON source (nil if the document does not exist).
// The caller must not modify it.
func (p *Prev) Source() []byte { return p.source }

// Doc is a stored document.
type Doc struct {
	ID          string
	Source      []byte
	SeqNo       uint64
	Version     int64
	PrimaryTerm uint64
}

// IndexStats describes an index for _cat/indices and _nodes/stats.
type IndexStats struct {
	DocCount       uint64
	StoreSizeBytes int64
	AppliedSeq     uint64
	PersistedSeq   uint64
}

// Index is one bleve (scorch) index in a directory: one shard copy's search
// index. Apply calls are serialized by the Index; Search, Get and Stats may
// run concurrently with them and with each other.
type Index struct {
	dir string
	m   *Mapping
	an  analyzerSet
	bl  bleve.Index

	mu     sync.RWMutex // R: searches and bleve-mapping reads; W: mapping swap, Close
	im     *mapping.IndexMappingImpl
	imVer  uint64 // mapping version + 1 that im reflects
	closed bool

	applyMu      sync.Mutex // serializes Apply
	lens         map[string]uint64
	countedUpTo  uint64              // docs with seq <= this are in lens (log replay only)
	replayed     map[string]struct{} // ids applied since Open while replaying
	lensMu       sync.RWMutex        // guards lens for readers
	appliedSeq   atomic.Uint64
	persistedSeq atomic.Uint64
	gcp          atomic.Uint64 // see SetGlobalCheckpoint

	// writes counts Apply calls as a sequence lock: odd while one is
	// changing the searchable contents, even otherwise. With genSeed (this
	// Index's own) and the mapping version it makes the Generation of a
	// reader's contents.
	writes  atomic.Uint64
	genSeed maphash.Seed

	pinned *pinnedIndex // a view from Pin: its snapshot
}

func bleveConfig() map[string]any {
	// unsafe_batch: Batch returns once the segment is searchable, without
	// waiting for scorch to persist it; durability comes from the shard log,
	// and persisted progress is learnt from batch persisted-callbacks.
	return map[string]any{"unsafe_batch": true}
}

// Create makes a new index in dir (which must not hold one) with mapping m.
// m is shared, not copied: dynamic fields are added to it.
func Create(dir string, m *Mapping) (*Index, error) {
	registerIndexType()
	im, err := m.bleveMapping(true)
	if err != nil {
		return nil, err
	}
	bl, err := bleve.NewUsing(dir, im, IndexType, bleve.Config.DefaultKVStore, bleveConfig())
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", dir, err)
	}
	return newIndex(dir, m, bl, false)
}

// Open opens the index in dir with mapping m (the mapping persisted by the
// caller; it replaces the one bleve stored at creation). The index starts in
// log-replay mode: the caller applies the operations logged after
// AppliedSeq, then calls EndReplay.
func Open(dir string, m *Mapping) (*Index, error) {
	registerIndexType()
	bl, err := bleve.OpenUsing(dir, bleveConfig())
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", dir, err)
	}
	return newIndex(dir, m, bl, true)
}

func newIndex(dir string, m *Mapping, bl bleve.Index, replaying bool) (*Index, error) {
	an, err := newAnalyzerSet()
	if err != nil {
		_ = bl.Close()
		return nil, err
	}
	im, ok := bl.Mapping().(*mapping.IndexMappingImpl)
	if !ok {
		_ = bl.Close()
		return nil, fmt.Errorf("index: %s: unexpected bleve mapping type %T", dir, bl.Mapping())
	}
	i := &Index{dir: dir, m: m, an: an, bl: bl, im: im, lens: map[string]uint64{}, genSeed: maphash.MakeSeed()}
	if replaying {
		i.replayed = map[string]struct{}{}
	}
	adv, err := bl.Advanced()
	if err != nil {
		_ = bl.Close()
		return nil, err
	}
	ws, ok := adv.(*weftScorch)
	if !ok {
		_ = bl.Close()
		return nil, fmt.Errorf("index: %s is a %T index, not %s; it was not created by Weft", dir, adv, IndexType)
	}
	ws.fieldLength = i.fieldLength
	ws.writes = &i.writes
	if err := i.syncMapping(); err != nil {
		_ = bl.Close()
		return nil, err
	}
	raw, err := bl.GetInternal(stateKey)
	if err != nil {
		_ = bl.Close()
		return nil, fmt.Errorf("index: %s: read state: %w", dir, err)
	}
	if len(raw) > 0 {
		var st state
		if err := json.Unmarshal(raw, &st); err != nil {
			_ = bl.Close()
			return nil, fmt.Errorf("index: %s: corrupt state %q: %w", dir, raw, err)
		}
		if st.Lens != nil {
			i.lens = st.Lens
		}
		i.appliedSeq.Store(st.Seq)
		i.persistedSeq.Store(st.Seq)
		i.gcp.Store(st.GCP)
		i.countedUpTo = st.Seq
	}
	return i, nil
}

// syncMapping makes the live bleve mapping match m if m changed.
func (i *Index) syncMapping() error {
	want := i.m.Version() + 1 // imVer 0: never synced
	i.mu.RLock()
	cur := i.imVer
	i.mu.RUnlock()
	if cur == want {
		return nil
	}
	fresh, err := i.m.bleveMapping(true)
	if err != nil {
		return err
	}
	i.mu.Lock()
	*i.im = *fresh // in place: the bleve index keeps its pointer
	i.imVer = want
	i.mu.Unlock()
	return nil
}

// Mapping returns the ES mapping this index documents are parsed with.
func (i *Index) Mapping() *Mapping { return i.m }

// Prepare parses op.Source against the mapping (adding dynamic fields to it)
// and keeps the built document in op for Apply. Errors wrap ErrDocParse or
// ErrStrictDynamic and mean the op must not be applied. Safe to call
// concurrently.
func (i *Index) Prepare(op *Op) error {
	if op.Delete {
		return nil
	}
	if op.ID == "" {
		return fmt.Errorf("%w: document id is empty", ErrDocParse)
	}
	d, err := i.m.buildDocument(op.ID, op.Source, i.an)
	if err != nil {
		return err
	}
	op.doc = d
	return nil
}

func encodeMeta(seq uint64, version int64, term uint64) []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b[0:], seq)
	binary.BigEndian.PutUint64(b[8:], uint64(version))
	binary.BigEndian.PutUint64(b[16:], term)
	return b
}

// Lookup returns what is stored for id (realtime: every applied op is
// visible). Apply's callers use it to compute versions.
func (i *Index) Lookup(id string) (*Prev, error) {
	d, err := i.bl.Document(id)
	if err != nil {
		return nil, fmt.Errorf("index: get %q: %w", id, err)
	}
	p := &Prev{}
	if d == nil {
		return p, nil
	}
	p.Exists = true
	d.VisitFields(func(f bindex.Field) {
		switch f.Name() {
		case SourceField:
			p.source = append([]byte(nil), f.Value()...)
		case metaField:
			v := f.Value()
			if len(v) == 24 {
				p.SeqNo = binary.BigEndian.Uint64(v[0:])
				p.Version = int64(binary.BigEndian.Uint64(v[8:]))
				p.PrimaryTerm = binary.BigEndian.Uint64(v[16:])
			}
		}
	})
	return p, nil
}

// Get returns the stored document with id, false if there is none.
func (i *Index) Get(id string) (Doc, bool, error) {
	p, err := i.Lookup(id)
	if err != nil || !p.Exists {
		return Doc{}, false, err
	}
	return Doc{ID: id, Source: p.source, SeqNo: p.SeqNo, Version: p.Version, PrimaryTerm: p.PrimaryTerm}, true, nil
}

// fieldLengths returns the tokens an analyzed document indexes per field.
func fieldLengths(d *document.Document, into map[string]int64, sign int64) {
	for _, f := range d.Fields {
		if f.Options().IsIndexed() && f.Name() != "_id" {
			into[f.Name()] += sign * int64(f.AnalyzedLength())
		}
	}
}

// Apply applies ops as one bleve batch and returns when they are
// searchable. Ops not passed through Prepare are prepared here; a bad op
// fails the whole call, so callers Prepare first. ctx is checked before the
// batch starts; once started the batch completes.
func (i *Index) Apply(ctx context.Context, ops []Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for k := range ops {
		if ops[k].doc == nil && !ops[k].Delete {
			if err := i.Prepare(&ops[k]); err != nil {
				return err
			}
		}
	}
	i.applyMu.Lock()
	defer i.applyMu.Unlock()
	i.mu.RLock()
	closed := i.closed
	i.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := i.syncMapping(); err != nil {
		return err
	}

	// From here until the field lengths are counted the contents change:
	// readers opened meanwhile have no Generation.
	i.writes.Add(1)
	defer i.writes.Add(1)
	delta := map[string]int64{}
	final := make(map[string]*document.Document, len(ops))
	b := i.bl.NewBatch()
	var maxSeq uint64
	for k := range ops {
		op := &ops[k]
		maxSeq = max(maxSeq, op.SeqNo)
		if _, seen := final[op.ID]; !seen {
			if err := i.uncount(op, delta); err != nil {
				return err
			}
		}
		if i.replayed != nil {
			i.replayed[op.ID] = struct{}{}
		}
		if op.Delete {
			b.Delete(op.ID)
			final[op.ID] = nil
			continue
		}
		d := op.doc
		d.AddField(document.NewTextFieldCustom(metaField, nil, encodeMeta(op.SeqNo, op.Version, op.PrimaryTerm), bindex.StoreField, nil))
		if err := b.IndexAdvanced(d); err != nil {
			return fmt.Errorf("index: batch %q: %w", op.ID, err)
		}
		final[op.ID] = d
		op.doc = nil
	}
	if err := i.bl.Batch(b); err != nil {
		return fmt.Errorf("index: %s: apply batch: %w", i.dir, err)
	}
	// Documents are analyzed now: count their tokens.
	for _, d := range final {
		if d != nil {
			fieldLengths(d, delta, 1)
		}
	}
	i.lensMu.Lock()
	for f, n := range delta {
		v := int64(i.lens[f]) + n
		if v < 0 {
			v = 0
		}
		i.lens[f] = uint64(v)
	}
	maxSeq = max(maxSeq, i.appliedSeq.Load())
	raw, err := json.Marshal(state{Seq: maxSeq, Lens: i.lens, GCP: i.gcp.Load()})
	i.lensMu.Unlock()
	if err != nil {
		return err
	}
	sb := i.bl.NewBatch()
	sb.SetInternal(stateKey, raw)
	sb.SetPersistedCallback(func(err error) {
		if err != nil {
			return
		}
		for {
			cur := i.persistedSeq.Load()
			if cur >= maxSeq || i.persistedSeq.CompareAndSwap(cur, maxSeq) {
				return
			}
		}
	})
	if err := i.bl.Batch(sb); err != nil {
		return fmt.Errorf("index: %s: record state: %w", i.dir, err)
	}
	i.appliedSeq.Store(maxSeq)
	return nil
}

// uncount subtracts the field lengths of the document op replaces, if that
// document is counted in lens.
func (i *Index) uncount(op *Op, delta map[string]int64) error {
	prev := op.Prev
	if prev == nil || (prev.Exists && prev.source == nil) {
		p, err := i.Lookup(op.ID)
		if err != nil {
			return err
		}
		prev = p
	}
	if !prev.Exists {
		return nil
	}
	if i.replayed != nil && prev.SeqNo > i.countedUpTo {
		if _, ok := i.replayed[op.ID]; !ok {
			return nil // persisted ahead of the state record: not counted yet
		}
	}
	old, err := i.m.buildDocument(op.ID, prev.source, i.an)
	if err != nil {
		return nil // cannot happen for a document that was indexed; count nothing
	}
	for _, f := range old.Fields {
		if f.Options().IsIndexed() {
			f.Analyze()
		}
	}
	fieldLengths(old, delta, -1)
	return nil
}

func (i *Index) fieldLength(field string) uint64 {
	i.lensMu.RLock()
	defer i.lensMu.RUnlock()
	return i.lens[field]
}

// EndReplay tells the index that log replay after Open is complete. Until
// then it remembers every id applied (to keep field-length totals exact for
// documents persisted ahead of the state record).
func (i *Index) EndReplay() {
	i.applyMu.Lock()
	defer i.applyMu.Unlock()
	i.replayed = nil
}

// SetGlobalCheckpoint records the copy's global checkpoint (never
// lowering it); it is persisted with the state of the next Apply, so after
// a crash the copy knows a checkpoint at most this one — on the safe side.
func (i *Index) SetGlobalCheckpoint(g uint64) {
	for {
		cur := i.gcp.Load()
		if g <= cur || i.gcp.CompareAndSwap(cur, g) {
			return
		}
	}
}

// GlobalCheckpoint is the highest global checkpoint recorded.
func (i *Index) GlobalCheckpoint() uint64 { return i.gcp.Load() }

// AppliedSeq is the highest sequence number applied (in memory, searchable).
func (i *Index) AppliedSeq() uint64 { return i.appliedSeq.Load() }

// PersistedSeq is the highest sequence number whose batch scorch has
// persisted: after a crash, Open finds at least everything up to it.
func (i *Index) PersistedSeq() uint64 { return i.persistedSeq.Load() }

// Bleve returns the bleve index, for searches that hold no lock (an
// IndexAlias); prefer Search, which is safe against mapping changes.
func (i *Index) Bleve() bleve.Index { return i.bl }

// Search runs req on this index. Under a context from WithGlobalStats it
// scores with those statistics; without, with this index's own, computed the
// same way (so a lone shard needs no statistics phase). Under a context from
// ExpectGeneration too, it fails with ErrStaleStats unless the contents it
// would search are still of that generation.
func (i *Index) Search(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	if err := i.syncMapping(); err != nil {
		return nil, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.closed {
		return nil, ErrClosed
	}
	if st, ok := ctx.Value(statsCtxKey).(*TermStats); ok && req.Query != nil {
		r := *req
		r.Query = &globalQuery{Query: req.Query, stats: st, expect: ExpectedGeneration(ctx), gen: i.generation}
		req = &r
	}
	res, err := i.bl.SearchInContext(ctx, req)
	if err == nil && slices.Contains(req.Fields, MetaField) {
		for _, h := range res.Hits {
			textMeta(h.Fields)
		}
	}
	return res, err
}

// textMeta rewrites a hit's binary MetaField value as text
// ("seq:version:term"), which survives JSON between nodes.
func textMeta(fields map[string]any) {
	v, ok := fields[MetaField].(string)
	if !ok || len(v) != 24 {
		return
	}
	b := []byte(v)
	fields[MetaField] = fmt.Sprintf("%d:%d:%d", binary.BigEndian.Uint64(b[0:]), int64(binary.BigEndian.Uint64(b[8:])), binary.BigEndian.Uint64(b[16:]))
}

// HitMeta reads a hit's seq no, version and primary term from its Fields
// (the search asked for MetaField); false when the hit has none.
func HitMeta(fields map[string]any) (seq uint64, version int64, term uint64, ok bool) {
	v, isStr := fields[MetaField].(string)
	if !isStr {
		return 0, 0, 0, false
	}
	n, err := fmt.Sscanf(v, "%d:%d:%d", &seq, &version, &term)
	return seq, version, term, err == nil && n == 3
}

// TermStats returns this index's statistics for q (phase 1 of global
// scoring, see WithGlobalStats): its searchers are built, never run. gen is
// the Generation of the contents they were read from (0 when a write was
// changing them: such statistics are right for no generation to come).
func (i *Index) TermStats(ctx context.Context, q query.Query) (st *TermStats, gen uint64, err error) {
	if err := i.syncMapping(); err != nil {
		return nil, 0, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.closed {
		return nil, 0, ErrClosed
	}
	adv, err := i.bl.Advanced()
	if err != nil {
		return nil, 0, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = r.Close() }()
	rec := &recorder{df: map[string]map[string]uint64{}, dicts: map[string][]DictTerm{}}
	if sr, ok := r.(*statsReader); ok {
		sr.rec = rec
		gen = i.generation(sr)
	}
	sctx := context.WithValue(ctx, statsCtxKey, rec)
	s, err := q.Searcher(sctx, r, i.im, search.SearcherOptions{Score: "none"})
	if err != nil {
		return nil, 0, err
	}
	if s != nil {
		_ = s.Close()
	}
	n, err := r.DocCount()
	if err != nil {
		return nil, 0, err
	}
	i.lensMu.RLock()
	lens := cloneLens(i.lens)
	i.lensMu.RUnlock()
	return &TermStats{DocCount: n, FieldLength: lens, DocFreq: rec.df, Dicts: rec.dicts}, gen, nil
}

// Documents returns the documents ids that exist, in that order, as hits
// whose Fields hold the stored fields named in fields ("*": all) the way a
// search's hits do (MetaField as text, as Search gives it): the fetch phase
// of a search, without a query.
func (i *Index) Documents(ids, fields []string) ([]*search.DocumentMatch, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.closed {
		return nil, ErrClosed
	}
	r, err := i.bl.Advanced()
	if err != nil {
		return nil, err
	}
	rd, err := r.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rd.Close() }()
	req := &bleve.SearchRequest{Fields: fields}
	meta := slices.Contains(fields, MetaField)
	out := make([]*search.DocumentMatch, 0, len(ids))
	for _, id := range ids {
		d, err := rd.Document(id)
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		hit := &search.DocumentMatch{ID: id}
		if len(fields) > 0 {
			_, _ = bleve.LoadAndHighlightFields(hit, req, "", loadedDoc{IndexReader: rd, doc: d}, nil)
			if meta {
				textMeta(hit.Fields)
			}
		}
		out = append(out, hit)
	}
	return out, nil
}

// loadedDoc is a reader whose Document is the one already loaded.
type loadedDoc struct {
	bindex.IndexReader
	doc bindex.Document
}

func (l loadedDoc) Document(string) (bindex.Document, error) { return l.doc, nil }

// generation is the Generation of r's contents under the mapping in use:
// a hash of this Index's seed, the writes r saw and the mapping version, so
// two readers of one Index with the same generation hold the same documents
// and statistics. 0 when r was opened while a write changed the contents,
// and always for a pinned view: its contents are no generation of the
// index's, and statistics read from it must never stand for the index's.
// The caller holds mu (read), which keeps the mapping version still.
func (i *Index) generation(r *statsReader) uint64 {
	if i.pinned != nil || r.writes&1 == 1 {
		return 0
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], r.writes)
	binary.BigEndian.PutUint64(b[8:], i.imVer)
	return max(maphash.Bytes(i.genSeed, b[:]), 1)
}

// Stats reports doc count, size on disk and sequence numbers.
func (i *Index) Stats() IndexStats {
	n, _ := i.bl.DocCount()
	var size int64
	_ = filepath.WalkDir(i.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return IndexStats{DocCount: n, StoreSizeBytes: size, AppliedSeq: i.AppliedSeq(), PersistedSeq: i.PersistedSeq()}
}

// closePersistWait bounds how long Close waits for scorch to persist.
const closePersistWait = 30 * time.Second

// Close waits (up to 30 s) for scorch to persist every applied batch, then
// closes the bleve index; whatever is not persisted by then is replayed from
// the shard log on the next open. Idempotent.
func (i *Index) Close() error {
	if i.pinned != nil {
		return i.Release()
	}
	i.applyMu.Lock()
	defer i.applyMu.Unlock()
	deadline := time.Now().Add(closePersistWait)
	for i.persistedSeq.Load() < i.appliedSeq.Load() && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil
	}
	i.closed = true
	if err := i.bl.Close(); err != nil {
		return fmt.Errorf("index: close %s: %w", i.dir, err)
	}
	return nil
}

// Exists reports whether dir holds a bleve index.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "index_meta.json"))
	return !errors.Is(err, fs.ErrNotExist)
}
