package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// A coordinator reaches the shard copies of one node through Copies: this
// node's own (the Store, called in place) or another node's (Remote, one
// fabric message per call, served by the Store there through the same
// methods). Both take the same requests and give the same answers and
// sentinel errors, so the coordinator never asks where a copy lives.

// Copies are the shard copies of one node as a coordinator calls them.
// Every method is safe for concurrent use.
type Copies interface {
	// Write runs a group of writes on the primary copy h names, under
	// primary term h.Term, filling in each item's result.
	Write(ctx context.Context, h Header, items []Item) error
	// Get reads documents (realtime) from the primary copy h names: found
	// tells which exist.
	Get(ctx context.Context, h Header, ids []string) (docs []index.Doc, found []bool, err error)
	// Refresh returns once the copy's writes in flight are searchable and it
	// has indexed what it acknowledged.
	Refresh(ctx context.Context, h Header) error
	// OpenContext pins the copy's current contents in a reader context of
	// kind (point in time, scroll) for keep, and returns the context's id.
	// A node that holds as many contexts of kind as its cluster setting
	// allows refuses it (ErrTooManyScrollContexts, ErrTooManyPITContexts).
	OpenContext(ctx context.Context, h Header, keep time.Duration, kind vocab.ContextKind) (string, error)
	// CloseContext releases a reader context; false when it was gone.
	CloseContext(ctx context.Context, h Header, id string) (bool, error)
	// ClaimScroll takes a scroll's cursor from its home context for a page;
	// CommitScroll stores the cursor the page ended at.
	ClaimScroll(ctx context.Context, h Header, id string) (vocab.ScrollCursor, error)
	CommitScroll(ctx context.Context, h Header, id string, cur vocab.ScrollCursor) error
	// Report is the node's statistics: its copies, recoveries and request
	// counters.
	Report(ctx context.Context) (NodeReport, error)
}

var (
	_ Copies = (*Store)(nil)
	_ Copies = Remote{}
)

// Header addresses a request to one shard copy as the sender's view of the
// shard table routed it: the one header of every request to a copy.
type Header struct {
	Cluster string // the cluster's UUID
	Index   string // the index's UUID
	Shard   int
	Alloc   string // the copy's allocation ID
	// Term is the primary term a write was routed by (0 where none is
	// checked).
	Term uint64
}

func (e *enc) copyHeader(h Header) {
	e.str(h.Cluster)
	e.str(h.Index)
	e.uvarint(uint64(h.Shard))
	e.str(h.Alloc)
	e.u64(h.Term)
}

func (d *dec) copyHeader() Header {
	var h Header
	h.Cluster, h.Index = d.str(), d.str()
	h.Shard = int(d.uvarint() & 0x7fffffff)
	h.Alloc = d.str()
	h.Term = d.u64()
	return h
}

// NodeReport is one node's statistics as it reports them to others.
type NodeReport struct {
	Copies     map[string]vocab.CopyStats      `json:"copies"`
	Recoveries []vocab.RecoveryInfo            `json:"recoveries"`
	Counters   map[string]vocab.IndexNodeStats `json:"counters,omitempty"`
}

// routing says what serving a request checks of the copy it names.
type routing int

const (
	anyCopy     routing = iota // nothing: the request does no harm to any copy
	heldCopy                   // the copy is this node's in the sender's shard table
	primaryCopy                // and it is the shard's primary
)

// serveCopy is the one way this node serves a request to one of its
// copies: decode the header and the body, check the routing, handle,
// encode the reply. A malformed request is CodeBadRequest; a refused or
// failed one crosses as its sentinel's code (remoteErr).
func serveCopy[Req any](s *Store, check routing, decode func(*dec) Req, handle func(context.Context, Header, Req) ([]byte, error)) fabric.HandlerFunc {
	return func(ctx context.Context, req *fabric.Request) ([]byte, error) {
		d := dec{b: req.Payload}
		d.version()
		h := d.copyHeader()
		body := decode(&d)
		if err := d.end(); err != nil {
			return nil, fabric.Errorf(fabric.CodeBadRequest, "%v", err)
		}
		if check != anyCopy {
			if err := s.checkRouting(ctx, h, check == primaryCopy); err != nil {
				return nil, remoteErr(err)
			}
		}
		reply, err := handle(ctx, h, body)
		if err != nil {
			return nil, remoteErr(err)
		}
		return reply, nil
	}
}

// Remote is another node's shard copies, reached over the fabric through
// peers. A request that only reads and whose connection broke is sent once
// more (callRead).
type Remote struct {
	peers fabric.Caller
	node  string
}

// NewRemote returns the copies of node, reached through peers.
func NewRemote(peers fabric.Caller, node string) Remote { return Remote{peers: peers, node: node} }

// request encodes a request to a copy: the version, the header, the body.
func request(h Header, size int, body func(*enc)) []byte {
	e := enc{b: make([]byte, 0, 64+len(h.Cluster)+len(h.Index)+len(h.Alloc)+size)}
	e.u8(wireVersion)
	e.copyHeader(h)
	if body != nil {
		body(&e)
	}
	return e.b
}

// call sends a request that may change something: never sent twice.
func (r Remote) call(ctx context.Context, m fabric.Method, payload []byte) ([]byte, error) {
	reply, err := r.peers.Call(ctx, r.node, m, payload)
	if err != nil {
		return nil, fromRemote(err)
	}
	return reply, nil
}

// callRead sends a request that only reads, and so may run twice: one
// that failed with fabric.ErrClosed is sent once more, on the connection
// the pool dials in place of the broken one. That is the first call to a
// node whose process restarted since the pool connected to it (before
// failure detection noticed, or while this node missed it), which would
// otherwise fail the read though the node is up. Writes are never sent
// again this way: one that reached the peer before the break would run
// twice.
func (r Remote) callRead(ctx context.Context, m fabric.Method, payload []byte) ([]byte, error) {
	reply, err := callRead(ctx, r.peers, r.node, m, payload)
	if err != nil {
		return nil, fromRemote(err)
	}
	return reply, nil
}

// Write implements Copies.
func (r Remote) Write(ctx context.Context, h Header, items []Item) error {
	reply, err := r.call(ctx, MethodBulk, encodeBulk(h, items))
	if err != nil {
		return err
	}
	return decodeBulkReply(reply, items)
}

// Get implements Copies.
func (r Remote) Get(ctx context.Context, h Header, ids []string) ([]index.Doc, []bool, error) {
	reply, err := r.callRead(ctx, MethodMget, request(h, 16*len(ids), func(e *enc) {
		e.uvarint(uint64(len(ids)))
		for _, id := range ids {
			e.str(id)
		}
	}))
	if err != nil {
		return nil, nil, err
	}
	return decodeMgetReply(reply, ids)
}

// Refresh implements Copies.
func (r Remote) Refresh(ctx context.Context, h Header) error {
	_, err := r.call(ctx, MethodRefresh, request(h, 0, nil))
	return err
}

// OpenContext implements Copies.
func (r Remote) OpenContext(ctx context.Context, h Header, keep time.Duration, kind vocab.ContextKind) (string, error) {
	reply, err := r.call(ctx, MethodContextOpen, request(h, 9, func(e *enc) { encodeOpenContext(e, openContextArg{keep: keep, kind: kind}) }))
	if err != nil {
		return "", err
	}
	d := dec{b: reply}
	d.version()
	id := d.str()
	return id, d.end()
}

// contextCall runs a context method on the context id of the copy h
// names, returning the reply's body.
func (r Remote) contextCall(ctx context.Context, h Header, m fabric.Method, id string, arg []byte) ([]byte, error) {
	reply, err := r.call(ctx, m, request(h, len(id)+len(arg), func(e *enc) {
		e.str(id)
		e.bytes(arg)
	}))
	if err != nil {
		return nil, err
	}
	if len(reply) < 1 || reply[0] != wireVersion {
		return nil, fmt.Errorf("%w: reply version", ErrBadMessage)
	}
	return reply[1:], nil
}

// CloseContext implements Copies.
func (r Remote) CloseContext(ctx context.Context, h Header, id string) (bool, error) {
	reply, err := r.contextCall(ctx, h, MethodContextClose, id, nil)
	if err != nil {
		return false, err
	}
	return len(reply) == 1 && reply[0] == 1, nil
}

// ClaimScroll implements Copies.
func (r Remote) ClaimScroll(ctx context.Context, h Header, id string) (vocab.ScrollCursor, error) {
	reply, err := r.contextCall(ctx, h, MethodScrollClaim, id, nil)
	if err != nil {
		return vocab.ScrollCursor{}, err
	}
	var cur vocab.ScrollCursor
	if err := json.Unmarshal(reply, &cur); err != nil {
		return vocab.ScrollCursor{}, fmt.Errorf("%w: scroll cursor: %v", ErrBadMessage, err)
	}
	return cur, nil
}

// CommitScroll implements Copies.
func (r Remote) CommitScroll(ctx context.Context, h Header, id string, cur vocab.ScrollCursor) error {
	raw, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	_, err = r.contextCall(ctx, h, MethodScrollCommit, id, raw)
	return err
}

// Report implements Copies.
func (r Remote) Report(ctx context.Context) (NodeReport, error) {
	reply, err := r.callRead(ctx, MethodCopyStats, []byte{wireVersion})
	if err != nil {
		return NodeReport{}, err
	}
	var rep NodeReport
	if len(reply) < 1 || reply[0] != wireVersion {
		return NodeReport{}, fmt.Errorf("%w: reply version", ErrBadMessage)
	}
	if err := json.Unmarshal(reply[1:], &rep); err != nil {
		return NodeReport{}, fmt.Errorf("%w: node report: %v", ErrBadMessage, err)
	}
	return rep, nil
}

// SearchStats runs search phase 1 (term statistics) on the copies the
// request names, all on this node: one part per shard, in order. An error
// is the whole call's.
func (r Remote) SearchStats(ctx context.Context, m *StatsRequest) ([]StatsPart, error) {
	raw, err := r.callRead(ctx, MethodSearchStats, encodeStatsRequest(m))
	if err != nil {
		return nil, err
	}
	return decodeStatsReply(raw, len(m.Shards))
}

// SearchQuery runs search phase 2 (ids, scores, sort keys, aggregations)
// as SearchStats runs phase 1.
func (r Remote) SearchQuery(ctx context.Context, m *QueryRequest) ([]QueryPart, error) {
	raw, err := r.callRead(ctx, MethodSearchQuery, encodeQueryRequest(m))
	if err != nil {
		return nil, err
	}
	return decodeQueryReply(raw, len(m.Shards))
}

// SearchFetch runs search phase 3 (the final page's stored fields and term
// locations) as SearchStats runs phase 1.
func (r Remote) SearchFetch(ctx context.Context, m *FetchRequest) ([]FetchPart, error) {
	raw, err := r.callRead(ctx, MethodSearchFetch, encodeFetchRequest(m))
	if err != nil {
		return nil, err
	}
	return decodeFetchReply(raw, len(m.Shards))
}
