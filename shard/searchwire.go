package shard

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"time"

	"github.com/blevesearch/bleve/v2/search"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// The search phases' messages (methodSearchStats, methodSearchQuery,
// methodSearchFetch). One message carries the parts of every shard whose
// chosen copy is on the node it goes to, so a phase costs one round trip
// per node, not per shard, and the node translates the request once. The
// reply holds one part per shard, in the request's order: a shard can fail
// (or, in the query phase, find its statistics stale) while the others
// answer. The encoding is binary, like the write path's, so that fetched
// sources travel as they are stored, without JSON escaping.

// searchWireVersion starts every search phase request and reply. Version 1
// was JSON with one shard per message; 3 adds the request's scope (alias
// filters, index limits) and points in time (reader contexts and their
// keep-alive).
const searchWireVersion = 3

// searchHeader is what every phase request starts with: the request as
// the client sent it (with its scope) and the names it was translated
// against, in the coordinator's order. keepAlive is what a point-in-time
// search extends its reader contexts' keep-alive to (0: their own).
type searchHeader struct {
	cluster   string
	indices   []string
	wire      esdsl.Wire
	keepAlive time.Duration
}

// shardRef addresses one copy in a phase request, with the mapping
// version of its index the coordinator translated against (the data node
// waits until it has it). ctx is the copy's reader context for a
// point-in-time search ("" for none): the phase runs on that pinned view,
// not on the copy as it is now.
type shardRef struct {
	index          string // uuid
	shard          int
	alloc          string
	mappingVersion uint64
	ctx            string
}

type statsRequest struct {
	searchHeader
	shards []shardRef
}

// statsPart is one shard's answer to the statistics phase.
type statsPart struct {
	err   error
	stats *index.TermStats
	gen   uint64 // index.TermStats's generation; 0: none
}

type queryRequest struct {
	searchHeader
	// stats are the global statistics (nil: the shard's own).
	stats      *index.TermStats
	from, size int
	// prefetch asks the node to load the stored fields named in fields
	// for its best prefetch hits over all the message's shards, so that
	// the fetch phase has nothing to ask for if those are the ones the
	// final page takes from it.
	prefetch int
	fields   []string
	shards   []queryShard
}

type queryShard struct {
	shardRef
	// expect is the generation of the copy's contents stats were summed
	// from (0: any); a copy at another one answers stale.
	expect uint64
}

// queryPart is one shard's answer to the query phase: an error, stale
// statistics (with the copy's fresh ones), or its hits.
type queryPart struct {
	err   error
	stale *statsPart
	res   queryResult
}

type queryResult struct {
	total    uint64
	gte      bool
	maxScore float64
	hits     []wireHit
	aggs     esdsl.AggPartials
	fetched  []fetchedHit // of hits, those the request asked to prefetch
}

// wireHit is a hit of the query phase: what merging and paging need.
type wireHit struct {
	id    string
	score float64
	sort  []string
	num   uint64 // bleve's HitNumber, its tiebreak
	expl  *search.Explanation
}

// fetchRequest asks for the stored fields (and term locations) of hits.
// Without locations or named queries the data node needs no query: it
// loads the documents by id.
type fetchRequest struct {
	searchHeader
	fields    []string
	locations bool
	named     bool
	shards    []fetchShard
}

type fetchShard struct {
	shardRef
	ids []string
}

type fetchPart struct {
	err  error
	hits []fetchedHit
}

type fetchedHit struct {
	id        string
	fields    map[string]any
	locations search.FieldTermLocationMap
	matched   []string // named queries
}

// Part kinds in replies.
const (
	partOK = iota
	partErr
	partStale
)

// --- encoding ---

func (e *enc) strs(v []string) {
	e.uvarint(uint64(len(v)))
	for _, s := range v {
		e.str(s)
	}
}

func (e *enc) f64(v float64) { e.u64(math.Float64bits(v)) }

func (e *enc) boolean(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// jsonBlob appends v as JSON (empty when v is nil).
func (e *enc) jsonBlob(v any, isNil bool) error {
	if isNil {
		e.uvarint(0)
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.bytes(raw)
	return nil
}

func (e *enc) header(h *searchHeader) {
	e.u8(searchWireVersion)
	e.str(h.cluster)
	e.strs(h.indices)
	w := &h.wire
	e.bytes(w.Body)
	keys := make([]string, 0, len(w.Params))
	for k := range w.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.strs(w.Params[k])
	}
	e.varint(w.Now)
	e.boolean(w.Count)
	e.uvarint(uint64(w.ScrollPage))
	e.boolean(w.After != nil)
	if w.After != nil {
		e.uvarint(uint64(len(w.After)))
		for _, a := range w.After {
			e.bytes(a)
		}
	}
	e.bytes(w.Scope.Filter)
	e.uvarint(uint64(w.Scope.MaxResultWindow))
	e.uvarint(uint64(w.Scope.MaxInnerResultWindow))
	e.uvarint(uint64(w.Scope.MaxTermsCount))
	e.varint(int64(h.keepAlive))
}

func (e *enc) ref(r *shardRef) {
	e.str(r.index)
	e.uvarint(uint64(r.shard))
	e.str(r.alloc)
	e.uvarint(r.mappingVersion)
	e.str(r.ctx)
}

// termStats appends s (nil allowed).
func (e *enc) termStats(s *index.TermStats) {
	e.boolean(s != nil)
	if s == nil {
		return
	}
	e.uvarint(s.DocCount)
	e.uvarint(uint64(len(s.FieldLength)))
	for f, n := range s.FieldLength {
		e.str(f)
		e.uvarint(n)
	}
	e.uvarint(uint64(len(s.DocFreq)))
	for f, terms := range s.DocFreq {
		e.str(f)
		e.uvarint(uint64(len(terms)))
		for t, n := range terms {
			e.str(t)
			e.uvarint(n)
		}
	}
	e.uvarint(uint64(len(s.Dicts)))
	for sig, terms := range s.Dicts {
		e.str(sig)
		e.uvarint(uint64(len(terms)))
		for _, t := range terms {
			e.str(t.Term)
			e.u8(t.EditDistance)
		}
	}
}

func (e *enc) partErr(err error) {
	code, msg := errCode(err)
	e.u8(partErr)
	e.u16(code)
	e.str(msg)
}

func encodeStatsRequest(m *statsRequest) []byte {
	e := enc{b: make([]byte, 0, 256+len(m.wire.Body))}
	e.header(&m.searchHeader)
	e.uvarint(uint64(len(m.shards)))
	for k := range m.shards {
		e.ref(&m.shards[k])
	}
	return e.b
}

func encodeStatsReply(parts []statsPart) []byte {
	e := enc{b: make([]byte, 0, 512)}
	e.u8(searchWireVersion)
	e.uvarint(uint64(len(parts)))
	for k := range parts {
		p := &parts[k]
		if p.err != nil {
			e.partErr(p.err)
			continue
		}
		e.u8(partOK)
		e.termStats(p.stats)
		e.u64(p.gen)
	}
	return e.b
}

func encodeQueryRequest(m *queryRequest) []byte {
	e := enc{b: make([]byte, 0, 512+len(m.wire.Body))}
	e.header(&m.searchHeader)
	e.termStats(m.stats)
	e.uvarint(uint64(m.from))
	e.uvarint(uint64(m.size))
	e.uvarint(uint64(m.prefetch))
	e.strs(m.fields)
	e.uvarint(uint64(len(m.shards)))
	for k := range m.shards {
		e.ref(&m.shards[k].shardRef)
		e.u64(m.shards[k].expect)
	}
	return e.b
}

func encodeQueryReply(parts []queryPart) ([]byte, error) {
	size := 1024
	for k := range parts {
		size += fetchedSize(parts[k].res.fetched)
	}
	e := enc{b: make([]byte, 0, size)}
	e.u8(searchWireVersion)
	e.uvarint(uint64(len(parts)))
	for k := range parts {
		p := &parts[k]
		switch {
		case p.err != nil:
			e.partErr(p.err)
		case p.stale != nil:
			e.u8(partStale)
			e.termStats(p.stale.stats)
			e.u64(p.stale.gen)
		default:
			r := &p.res
			e.u8(partOK)
			e.uvarint(r.total)
			e.boolean(r.gte)
			e.f64(r.maxScore)
			e.uvarint(uint64(len(r.hits)))
			for _, h := range r.hits {
				e.str(h.id)
				e.f64(h.score)
				e.strs(h.sort)
				e.uvarint(h.num)
				if err := e.jsonBlob(h.expl, h.expl == nil); err != nil {
					return nil, err
				}
			}
			if err := e.jsonBlob(r.aggs, r.aggs == nil); err != nil {
				return nil, err
			}
			if err := e.fetchedHits(r.fetched); err != nil {
				return nil, err
			}
		}
	}
	return e.b, nil
}

func encodeFetchRequest(m *fetchRequest) []byte {
	e := enc{b: make([]byte, 0, 256+len(m.wire.Body))}
	e.header(&m.searchHeader)
	e.strs(m.fields)
	e.boolean(m.locations)
	e.boolean(m.named)
	e.uvarint(uint64(len(m.shards)))
	for k := range m.shards {
		e.ref(&m.shards[k].shardRef)
		e.strs(m.shards[k].ids)
	}
	return e.b
}

// Kinds of a fetched field's value.
const (
	valueString = iota // the string itself (a stored _source)
	valueJSON          // anything else, as JSON
)

// fetchedSize estimates the encoded bytes of hits.
func fetchedSize(hits []fetchedHit) int {
	size := 0
	for _, h := range hits {
		size += 64 + len(h.id)
		for _, v := range h.fields {
			if s, ok := v.(string); ok {
				size += len(s) + 16
			}
		}
	}
	return size
}

// fetchedHits appends fetched hits.
func (e *enc) fetchedHits(hits []fetchedHit) error {
	e.uvarint(uint64(len(hits)))
	for _, h := range hits {
		e.str(h.id)
		e.uvarint(uint64(len(h.fields)))
		for name, v := range h.fields {
			e.str(name)
			if s, ok := v.(string); ok {
				e.u8(valueString)
				e.str(s)
				continue
			}
			e.u8(valueJSON)
			if err := e.jsonBlob(v, false); err != nil {
				return err
			}
		}
		e.uvarint(uint64(len(h.locations)))
		for field, terms := range h.locations {
			e.str(field)
			e.uvarint(uint64(len(terms)))
			for term, locs := range terms {
				e.str(term)
				e.uvarint(uint64(len(locs)))
				for _, l := range locs {
					e.uvarint(l.Pos)
					e.uvarint(l.Start)
					e.uvarint(l.End)
					e.uvarint(uint64(len(l.ArrayPositions)))
					for _, a := range l.ArrayPositions {
						e.uvarint(a)
					}
				}
			}
		}
		e.strs(h.matched)
	}
	return nil
}

func encodeFetchReply(parts []fetchPart) ([]byte, error) {
	size := 64
	for k := range parts {
		size += fetchedSize(parts[k].hits)
	}
	e := enc{b: make([]byte, 0, size)}
	e.u8(searchWireVersion)
	e.uvarint(uint64(len(parts)))
	for k := range parts {
		p := &parts[k]
		if p.err != nil {
			e.partErr(p.err)
			continue
		}
		e.u8(partOK)
		if err := e.fetchedHits(p.hits); err != nil {
			return nil, err
		}
	}
	return e.b, nil
}

// --- decoding ---

func (d *dec) strs() []string {
	n := d.count(1)
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]string, n)
	for k := range out {
		out[k] = d.str()
	}
	return out
}

func (d *dec) f64() float64 { return math.Float64frombits(d.u64()) }

func (d *dec) boolean() bool {
	switch d.u8() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad bool")
	return false
}

// jsonBlob decodes a blob jsonBlob wrote into v; it reports whether there
// was one.
func (d *dec) jsonBlob(v any) bool {
	raw := d.bytes()
	if d.err != nil || len(raw) == 0 {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		d.fail("bad JSON blob")
		return false
	}
	return true
}

func (d *dec) searchVersion() {
	if v := d.u8(); d.err == nil && v != searchWireVersion {
		d.err = fmt.Errorf("%w: search message version %d, this node speaks %d", errBadMessage, v, searchWireVersion)
	}
}

func (d *dec) header(h *searchHeader) {
	d.searchVersion()
	h.cluster = d.str()
	h.indices = d.strs()
	w := &h.wire
	if b := d.bytes(); len(b) > 0 {
		w.Body = append([]byte(nil), b...)
	}
	if n := d.count(2); n > 0 {
		w.Params = make(url.Values, n)
		for range n {
			k := d.str()
			w.Params[k] = d.strs()
		}
	}
	w.Now = d.varint()
	w.Count = d.boolean()
	w.ScrollPage = int(d.uvarint() & math.MaxInt32)
	if d.boolean() {
		n := d.count(1)
		w.After = make([][]byte, n)
		for k := range w.After {
			w.After[k] = append([]byte{}, d.bytes()...)
		}
	}
	if f := d.bytes(); len(f) > 0 {
		w.Scope.Filter = append(json.RawMessage(nil), f...)
	}
	w.Scope.MaxResultWindow = int(d.uvarint() & math.MaxInt32)
	w.Scope.MaxInnerResultWindow = int(d.uvarint() & math.MaxInt32)
	w.Scope.MaxTermsCount = int(d.uvarint() & math.MaxInt32)
	h.keepAlive = time.Duration(d.varint())
}

func (d *dec) ref() shardRef {
	return shardRef{index: d.str(), shard: int(d.uvarint() & math.MaxInt32), alloc: d.str(), mappingVersion: d.uvarint(), ctx: d.str()}
}

func (d *dec) termStats() *index.TermStats {
	if !d.boolean() {
		return nil
	}
	s := &index.TermStats{DocCount: d.uvarint()}
	n := d.count(2)
	s.FieldLength = make(map[string]uint64, n)
	for range n {
		f := d.str()
		s.FieldLength[f] = d.uvarint()
	}
	n = d.count(2)
	s.DocFreq = make(map[string]map[string]uint64, n)
	for range n {
		f := d.str()
		m := d.count(2)
		terms := make(map[string]uint64, m)
		for range m {
			t := d.str()
			terms[t] = d.uvarint()
		}
		s.DocFreq[f] = terms
	}
	n = d.count(2)
	s.Dicts = make(map[string][]index.DictTerm, n)
	for range n {
		sig := d.str()
		m := d.count(2)
		terms := make([]index.DictTerm, m)
		for k := range terms {
			terms[k] = index.DictTerm{Term: d.str(), EditDistance: d.u8()}
		}
		s.Dicts[sig] = terms
	}
	return s
}

// partKind reads a part's kind; an error part is read whole into err.
func (d *dec) partKind() (kind byte, err error) {
	kind = d.u8()
	switch kind {
	case partErr:
		code := d.u16()
		return kind, codeErr(code, d.str())
	case partOK, partStale:
	default:
		d.fail("unknown part kind")
	}
	return kind, nil
}

func decodeStatsRequest(p []byte) (*statsRequest, error) {
	d := dec{b: p}
	m := &statsRequest{}
	d.header(&m.searchHeader)
	m.shards = make([]shardRef, d.count(4))
	for k := range m.shards {
		m.shards[k] = d.ref()
	}
	return m, d.end()
}

// replyDec starts reading a phase's reply to a message for n shards: its
// version and its count of parts, which must be n.
func replyDec(p []byte, n int) (dec, error) {
	d := dec{b: p}
	d.searchVersion()
	if c := d.count(1); d.err == nil && c != n {
		return d, fmt.Errorf("%w: %d parts for %d shards", errBadMessage, c, n)
	}
	return d, nil
}

func decodeStatsReply(p []byte, n int) ([]statsPart, error) {
	d, err := replyDec(p, n)
	if err != nil {
		return nil, err
	}
	parts := make([]statsPart, n)
	for k := 0; k < n && d.err == nil; k++ {
		kind, err := d.partKind()
		switch {
		case err != nil:
			parts[k].err = err
		case kind == partOK:
			parts[k].stats = d.termStats()
			parts[k].gen = d.u64()
		default:
			d.fail("stale part in a statistics reply")
		}
	}
	return parts, d.end()
}

func decodeQueryRequest(p []byte) (*queryRequest, error) {
	d := dec{b: p}
	m := &queryRequest{}
	d.header(&m.searchHeader)
	m.stats = d.termStats()
	m.from = int(d.uvarint() & math.MaxInt32)
	m.size = int(d.uvarint() & math.MaxInt32)
	m.prefetch = int(d.uvarint() & math.MaxInt32)
	m.fields = d.strs()
	m.shards = make([]queryShard, d.count(12))
	for k := range m.shards {
		m.shards[k] = queryShard{shardRef: d.ref(), expect: d.u64()}
	}
	return m, d.end()
}

func decodeQueryReply(p []byte, n int) ([]queryPart, error) {
	d, err := replyDec(p, n)
	if err != nil {
		return nil, err
	}
	parts := make([]queryPart, n)
	for k := 0; k < n && d.err == nil; k++ {
		kind, err := d.partKind()
		switch {
		case err != nil:
			parts[k].err = err
		case kind == partStale:
			parts[k].stale = &statsPart{stats: d.termStats(), gen: d.u64()}
		default:
			r := &parts[k].res
			r.total = d.uvarint()
			r.gte = d.boolean()
			r.maxScore = d.f64()
			r.hits = make([]wireHit, d.count(12))
			for j := range r.hits {
				h := &r.hits[j]
				h.id = d.str()
				h.score = d.f64()
				h.sort = d.strs()
				h.num = d.uvarint()
				var expl search.Explanation
				if d.jsonBlob(&expl) {
					h.expl = &expl
				}
			}
			var aggs esdsl.AggPartials
			if d.jsonBlob(&aggs) {
				r.aggs = aggs
			}
			r.fetched = d.fetchedHits()
		}
	}
	return parts, d.end()
}

func decodeFetchRequest(p []byte) (*fetchRequest, error) {
	d := dec{b: p}
	m := &fetchRequest{}
	d.header(&m.searchHeader)
	m.fields = d.strs()
	m.locations = d.boolean()
	m.named = d.boolean()
	m.shards = make([]fetchShard, d.count(5))
	for k := range m.shards {
		m.shards[k] = fetchShard{shardRef: d.ref(), ids: d.strs()}
	}
	return m, d.end()
}

func decodeFetchReply(p []byte, n int) ([]fetchPart, error) {
	d, err := replyDec(p, n)
	if err != nil {
		return nil, err
	}
	parts := make([]fetchPart, n)
	for k := 0; k < n && d.err == nil; k++ {
		kind, err := d.partKind()
		if err != nil {
			parts[k].err = err
			continue
		}
		if kind != partOK {
			d.fail("stale part in a fetch reply")
			break
		}
		parts[k].hits = d.fetchedHits()
	}
	return parts, d.end()
}

// fetchedHits reads what enc.fetchedHits wrote (nil for none).
func (d *dec) fetchedHits() []fetchedHit {
	n := d.count(4)
	if d.err != nil || n == 0 {
		return nil
	}
	hits := make([]fetchedHit, n)
	for j := range hits {
		h := &hits[j]
		h.id = d.str()
		if nf := d.count(2); nf > 0 {
			h.fields = make(map[string]any, nf)
			for range nf {
				name := d.str()
				switch d.u8() {
				case valueString:
					h.fields[name] = d.str()
				case valueJSON:
					var v any
					d.jsonBlob(&v)
					h.fields[name] = v
				default:
					d.fail("unknown field value kind")
				}
			}
		}
		if nl := d.count(2); nl > 0 {
			h.locations = make(search.FieldTermLocationMap, nl)
			for range nl {
				field := d.str()
				nt := d.count(2)
				terms := make(search.TermLocationMap, nt)
				for range nt {
					term := d.str()
					locs := make(search.Locations, d.count(4))
					for i := range locs {
						l := &search.Location{Pos: d.uvarint(), Start: d.uvarint(), End: d.uvarint()}
						if na := d.count(1); na > 0 {
							l.ArrayPositions = make(search.ArrayPositions, na)
							for a := range l.ArrayPositions {
								l.ArrayPositions[a] = d.uvarint()
							}
						}
						locs[i] = l
					}
					terms[term] = locs
				}
				h.locations[field] = terms
			}
		}
		h.matched = d.strs()
	}
	return hits
}
