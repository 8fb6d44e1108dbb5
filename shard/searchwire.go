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

// The search phases' messages (MethodSearchStats, MethodSearchQuery,
// MethodSearchFetch). One message carries the parts of every shard whose
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

// SearchHeader is what every phase request starts with: the request as
// the client sent it (with its scope) and the names it was translated
// against, in the coordinator's order. KeepAlive is what a point-in-time
// search extends its reader contexts' keep-alive to (0: their own).
type SearchHeader struct {
	Cluster   string
	Indices   []string
	Wire      esdsl.Wire
	KeepAlive time.Duration
}

// ShardRef addresses one copy in a phase request, with the mapping
// version of its index the coordinator translated against (the data node
// waits until it has it). Ctx is the copy's reader context for a
// point-in-time search ("" for none): the phase runs on that pinned view,
// not on the copy as it is now.
type ShardRef struct {
	Index          string // uuid
	Shard          int
	Alloc          string
	MappingVersion uint64
	Ctx            string
}

// StatsRequest asks for the term statistics of the query on each shard.
type StatsRequest struct {
	SearchHeader
	Shards []ShardRef
}

// StatsPart is one shard's answer to the statistics phase.
type StatsPart struct {
	Err   error
	Stats *index.TermStats
	Gen   uint64 // index.TermStats's generation; 0: none
}

// QueryRequest asks for the query phase on each shard.
type QueryRequest struct {
	SearchHeader
	// Stats are the global statistics (nil: the shard's own).
	Stats      *index.TermStats
	From, Size int
	// Prefetch asks the node to load the stored fields named in fields
	// for its best Prefetch hits over all the message's shards, so that
	// the fetch phase has nothing to ask for if those are the ones the
	// final page takes from it.
	Prefetch int
	Fields   []string
	Shards   []QueryShard
}

// QueryShard is one shard of a QueryRequest.
type QueryShard struct {
	ShardRef
	// Expect is the generation of the copy's contents stats were summed
	// from (0: any); a copy at another one answers stale.
	Expect uint64
}

// QueryPart is one shard's answer to the query phase: an error, stale
// statistics (with the copy's fresh ones), or its hits.
type QueryPart struct {
	Err   error
	Stale *StatsPart
	Res   QueryResult
}

// QueryResult is one shard's hits and aggregations in the query phase.
type QueryResult struct {
	Total    uint64
	GTE      bool
	MaxScore float64
	Hits     []WireHit
	Aggs     esdsl.AggPartials
	Fetched  []FetchedHit // of hits, those the request asked to prefetch
}

// WireHit is a hit of the query phase: what merging and paging need.
type WireHit struct {
	ID    string
	Score float64
	Sort  []string
	Num   uint64 // bleve's HitNumber, its tiebreak
	Expl  *search.Explanation
}

// FetchRequest asks for the stored fields (and term locations) of hits.
// Without locations or named queries the data node needs no query: it
// loads the documents by id.
type FetchRequest struct {
	SearchHeader
	Fields    []string
	Locations bool
	Named     bool
	Shards    []FetchShard
}

// FetchShard is one shard of a FetchRequest: the ids of its hits to load.
type FetchShard struct {
	ShardRef
	IDs []string
}

// FetchPart is one shard's answer to the fetch phase.
type FetchPart struct {
	Err  error
	Hits []FetchedHit
}

// FetchedHit is one hit's stored fields, term locations and matched
// named queries.
type FetchedHit struct {
	ID        string
	Fields    map[string]any
	Locations search.FieldTermLocationMap
	Matched   []string // named queries
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

func (e *enc) header(h *SearchHeader) {
	e.u8(searchWireVersion)
	e.str(h.Cluster)
	e.strs(h.Indices)
	w := &h.Wire
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
	e.varint(int64(h.KeepAlive))
}

func (e *enc) ref(r *ShardRef) {
	e.str(r.Index)
	e.uvarint(uint64(r.Shard))
	e.str(r.Alloc)
	e.uvarint(r.MappingVersion)
	e.str(r.Ctx)
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

func encodeStatsRequest(m *StatsRequest) []byte {
	e := enc{b: make([]byte, 0, 256+len(m.Wire.Body))}
	e.header(&m.SearchHeader)
	e.uvarint(uint64(len(m.Shards)))
	for k := range m.Shards {
		e.ref(&m.Shards[k])
	}
	return e.b
}

func encodeStatsReply(parts []StatsPart) []byte {
	e := enc{b: make([]byte, 0, 512)}
	e.u8(searchWireVersion)
	e.uvarint(uint64(len(parts)))
	for k := range parts {
		p := &parts[k]
		if p.Err != nil {
			e.partErr(p.Err)
			continue
		}
		e.u8(partOK)
		e.termStats(p.Stats)
		e.u64(p.Gen)
	}
	return e.b
}

func encodeQueryRequest(m *QueryRequest) []byte {
	e := enc{b: make([]byte, 0, 512+len(m.Wire.Body))}
	e.header(&m.SearchHeader)
	e.termStats(m.Stats)
	e.uvarint(uint64(m.From))
	e.uvarint(uint64(m.Size))
	e.uvarint(uint64(m.Prefetch))
	e.strs(m.Fields)
	e.uvarint(uint64(len(m.Shards)))
	for k := range m.Shards {
		e.ref(&m.Shards[k].ShardRef)
		e.u64(m.Shards[k].Expect)
	}
	return e.b
}

func encodeQueryReply(parts []QueryPart) ([]byte, error) {
	size := 1024
	for k := range parts {
		size += fetchedSize(parts[k].Res.Fetched)
	}
	e := enc{b: make([]byte, 0, size)}
	e.u8(searchWireVersion)
	e.uvarint(uint64(len(parts)))
	for k := range parts {
		p := &parts[k]
		switch {
		case p.Err != nil:
			e.partErr(p.Err)
		case p.Stale != nil:
			e.u8(partStale)
			e.termStats(p.Stale.Stats)
			e.u64(p.Stale.Gen)
		default:
			r := &p.Res
			e.u8(partOK)
			e.uvarint(r.Total)
			e.boolean(r.GTE)
			e.f64(r.MaxScore)
			e.uvarint(uint64(len(r.Hits)))
			for _, h := range r.Hits {
				e.str(h.ID)
				e.f64(h.Score)
				e.strs(h.Sort)
				e.uvarint(h.Num)
				if err := e.jsonBlob(h.Expl, h.Expl == nil); err != nil {
					return nil, err
				}
			}
			if err := e.jsonBlob(r.Aggs, r.Aggs == nil); err != nil {
				return nil, err
			}
			if err := e.fetchedHits(r.Fetched); err != nil {
				return nil, err
			}
		}
	}
	return e.b, nil
}

func encodeFetchRequest(m *FetchRequest) []byte {
	e := enc{b: make([]byte, 0, 256+len(m.Wire.Body))}
	e.header(&m.SearchHeader)
	e.strs(m.Fields)
	e.boolean(m.Locations)
	e.boolean(m.Named)
	e.uvarint(uint64(len(m.Shards)))
	for k := range m.Shards {
		e.ref(&m.Shards[k].ShardRef)
		e.strs(m.Shards[k].IDs)
	}
	return e.b
}

// Kinds of a fetched field's value.
const (
	valueString = iota // the string itself (a stored _source)
	valueJSON          // anything else, as JSON
)

// fetchedSize estimates the encoded bytes of hits.
func fetchedSize(hits []FetchedHit) int {
	size := 0
	for _, h := range hits {
		size += 64 + len(h.ID)
		for _, v := range h.Fields {
			if s, ok := v.(string); ok {
				size += len(s) + 16
			}
		}
	}
	return size
}

// fetchedHits appends fetched hits.
func (e *enc) fetchedHits(hits []FetchedHit) error {
	e.uvarint(uint64(len(hits)))
	for _, h := range hits {
		e.str(h.ID)
		e.uvarint(uint64(len(h.Fields)))
		for name, v := range h.Fields {
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
		e.uvarint(uint64(len(h.Locations)))
		for field, terms := range h.Locations {
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
		e.strs(h.Matched)
	}
	return nil
}

func encodeFetchReply(parts []FetchPart) ([]byte, error) {
	size := 64
	for k := range parts {
		size += fetchedSize(parts[k].Hits)
	}
	e := enc{b: make([]byte, 0, size)}
	e.u8(searchWireVersion)
	e.uvarint(uint64(len(parts)))
	for k := range parts {
		p := &parts[k]
		if p.Err != nil {
			e.partErr(p.Err)
			continue
		}
		e.u8(partOK)
		if err := e.fetchedHits(p.Hits); err != nil {
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
		d.err = fmt.Errorf("%w: search message version %d, this node speaks %d", ErrBadMessage, v, searchWireVersion)
	}
}

func (d *dec) header(h *SearchHeader) {
	d.searchVersion()
	h.Cluster = d.str()
	h.Indices = d.strs()
	w := &h.Wire
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
	h.KeepAlive = time.Duration(d.varint())
}

func (d *dec) ref() ShardRef {
	return ShardRef{Index: d.str(), Shard: int(d.uvarint() & math.MaxInt32), Alloc: d.str(), MappingVersion: d.uvarint(), Ctx: d.str()}
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

func decodeStatsRequest(p []byte) (*StatsRequest, error) {
	d := dec{b: p}
	m := &StatsRequest{}
	d.header(&m.SearchHeader)
	m.Shards = make([]ShardRef, d.count(4))
	for k := range m.Shards {
		m.Shards[k] = d.ref()
	}
	return m, d.end()
}

// replyDec starts reading a phase's reply to a message for n shards: its
// version and its count of parts, which must be n.
func replyDec(p []byte, n int) (dec, error) {
	d := dec{b: p}
	d.searchVersion()
	if c := d.count(1); d.err == nil && c != n {
		return d, fmt.Errorf("%w: %d parts for %d shards", ErrBadMessage, c, n)
	}
	return d, nil
}

func decodeStatsReply(p []byte, n int) ([]StatsPart, error) {
	d, err := replyDec(p, n)
	if err != nil {
		return nil, err
	}
	parts := make([]StatsPart, n)
	for k := 0; k < n && d.err == nil; k++ {
		kind, err := d.partKind()
		switch {
		case err != nil:
			parts[k].Err = err
		case kind == partOK:
			parts[k].Stats = d.termStats()
			parts[k].Gen = d.u64()
		default:
			d.fail("stale part in a statistics reply")
		}
	}
	return parts, d.end()
}

func decodeQueryRequest(p []byte) (*QueryRequest, error) {
	d := dec{b: p}
	m := &QueryRequest{}
	d.header(&m.SearchHeader)
	m.Stats = d.termStats()
	m.From = int(d.uvarint() & math.MaxInt32)
	m.Size = int(d.uvarint() & math.MaxInt32)
	m.Prefetch = int(d.uvarint() & math.MaxInt32)
	m.Fields = d.strs()
	m.Shards = make([]QueryShard, d.count(12))
	for k := range m.Shards {
		m.Shards[k] = QueryShard{ShardRef: d.ref(), Expect: d.u64()}
	}
	return m, d.end()
}

func decodeQueryReply(p []byte, n int) ([]QueryPart, error) {
	d, err := replyDec(p, n)
	if err != nil {
		return nil, err
	}
	parts := make([]QueryPart, n)
	for k := 0; k < n && d.err == nil; k++ {
		kind, err := d.partKind()
		switch {
		case err != nil:
			parts[k].Err = err
		case kind == partStale:
			parts[k].Stale = &StatsPart{Stats: d.termStats(), Gen: d.u64()}
		default:
			r := &parts[k].Res
			r.Total = d.uvarint()
			r.GTE = d.boolean()
			r.MaxScore = d.f64()
			r.Hits = make([]WireHit, d.count(12))
			for j := range r.Hits {
				h := &r.Hits[j]
				h.ID = d.str()
				h.Score = d.f64()
				h.Sort = d.strs()
				h.Num = d.uvarint()
				var expl search.Explanation
				if d.jsonBlob(&expl) {
					h.Expl = &expl
				}
			}
			var aggs esdsl.AggPartials
			if d.jsonBlob(&aggs) {
				r.Aggs = aggs
			}
			r.Fetched = d.fetchedHits()
		}
	}
	return parts, d.end()
}

func decodeFetchRequest(p []byte) (*FetchRequest, error) {
	d := dec{b: p}
	m := &FetchRequest{}
	d.header(&m.SearchHeader)
	m.Fields = d.strs()
	m.Locations = d.boolean()
	m.Named = d.boolean()
	m.Shards = make([]FetchShard, d.count(5))
	for k := range m.Shards {
		m.Shards[k] = FetchShard{ShardRef: d.ref(), IDs: d.strs()}
	}
	return m, d.end()
}

func decodeFetchReply(p []byte, n int) ([]FetchPart, error) {
	d, err := replyDec(p, n)
	if err != nil {
		return nil, err
	}
	parts := make([]FetchPart, n)
	for k := 0; k < n && d.err == nil; k++ {
		kind, err := d.partKind()
		if err != nil {
			parts[k].Err = err
			continue
		}
		if kind != partOK {
			d.fail("stale part in a fetch reply")
			break
		}
		parts[k].Hits = d.fetchedHits()
	}
	return parts, d.end()
}

// fetchedHits reads what enc.fetchedHits wrote (nil for none).
func (d *dec) fetchedHits() []FetchedHit {
	n := d.count(4)
	if d.err != nil || n == 0 {
		return nil
	}
	hits := make([]FetchedHit, n)
	for j := range hits {
		h := &hits[j]
		h.ID = d.str()
		if nf := d.count(2); nf > 0 {
			h.Fields = make(map[string]any, nf)
			for range nf {
				name := d.str()
				switch d.u8() {
				case valueString:
					h.Fields[name] = d.str()
				case valueJSON:
					var v any
					d.jsonBlob(&v)
					h.Fields[name] = v
				default:
					d.fail("unknown field value kind")
				}
			}
		}
		if nl := d.count(2); nl > 0 {
			h.Locations = make(search.FieldTermLocationMap, nl)
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
				h.Locations[field] = terms
			}
		}
		h.Matched = d.strs()
	}
	return hits
}

// Failure returns why the shard's part failed; nil when it did not.
func (p StatsPart) Failure() error { return p.Err }

// Failure returns why the shard's part failed; nil when it did not.
func (p QueryPart) Failure() error { return p.Err }

// Failure returns why the shard's part failed; nil when it did not.
func (p FetchPart) Failure() error { return p.Err }
