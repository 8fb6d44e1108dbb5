package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/vocab"
)

// The data node's side of the shard layer: the Store serves the requests
// of every coordinator (its own node's in place, as Copies; other nodes'
// as fabric messages, through serveCopy), and the replication and
// recovery messages of other copies of its shards.

// Register serves this node's side of the shard layer's methods on mux —
// writes and gets on its primaries, reader contexts and search phases on
// its copies, replication and recovery — and the recovery file streams on
// streams (a receiver the node registered on mux for fabric.MethodStream).
// Call it before the fabric listens.
func (s *Store) Register(mux *fabric.Mux, streams *fabric.StreamReceiver) {
	mux.HandleFunc(MethodBulk, s.underPressure(membudget.Primary, bulkCount, serveCopy(s, primaryCopy, decodeBulkItems, func(ctx context.Context, h Header, items []Item) ([]byte, error) {
		if err := s.write(h, items); err != nil {
			return nil, err
		}
		return encodeBulkReply(items), nil
	})))
	mux.HandleFunc(MethodMget, serveCopy(s, primaryCopy, decodeIDs, func(ctx context.Context, h Header, ids []string) ([]byte, error) {
		docs, found, err := s.Get(ctx, h, ids)
		if err != nil {
			return nil, err
		}
		return encodeMgetReply(docs, found), nil
	}))
	mux.HandleFunc(MethodRefresh, serveCopy(s, anyCopy, noBody, func(ctx context.Context, h Header, _ struct{}) ([]byte, error) {
		return []byte{wireVersion}, s.Refresh(ctx, h)
	}))
	mux.HandleFunc(MethodContextOpen, serveCopy(s, anyCopy, decodeOpenContext, func(ctx context.Context, h Header, a openContextArg) ([]byte, error) {
		id, err := s.OpenContext(ctx, h, a.keep, a.kind)
		if err != nil {
			return nil, err
		}
		e := enc{}
		e.u8(wireVersion)
		e.str(id)
		return e.b, nil
	}))
	mux.HandleFunc(MethodContextClose, serveCopy(s, anyCopy, decodeContextArg, func(ctx context.Context, h Header, a contextArg) ([]byte, error) {
		open, err := s.CloseContext(ctx, h, a.id)
		if err != nil {
			return nil, err
		}
		if open {
			return []byte{wireVersion, 1}, nil
		}
		return []byte{wireVersion, 0}, nil
	}))
	mux.HandleFunc(MethodScrollClaim, serveCopy(s, anyCopy, decodeContextArg, func(ctx context.Context, h Header, a contextArg) ([]byte, error) {
		cur, err := s.ClaimScroll(ctx, h, a.id)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(cur)
		return append([]byte{wireVersion}, raw...), err
	}))
	mux.HandleFunc(MethodScrollCommit, serveCopy(s, anyCopy, decodeContextArg, func(ctx context.Context, h Header, a contextArg) ([]byte, error) {
		var cur vocab.ScrollCursor
		if err := json.Unmarshal(a.arg, &cur); err != nil {
			return nil, fmt.Errorf("%w: scroll cursor: %v", vocab.ErrInvalidRequest, err)
		}
		return []byte{wireVersion}, s.CommitScroll(ctx, h, a.id, cur)
	}))
	mux.HandleFunc(MethodCopyStats, s.serveReport)
	mux.HandleFunc(MethodSearchStats, s.serveSearchStats)
	mux.HandleFunc(MethodSearchQuery, s.serveSearchQuery)
	mux.HandleFunc(MethodSearchFetch, s.serveSearchFetch)
	mux.HandleFunc(MethodReplicate, s.underPressure(membudget.Replica, replicateCount, serveCopy(s, heldCopy, decodeReplicateBody, s.serveReplicate)))
	mux.HandleFunc(MethodRecoveryStart, s.serveRecoveryStart)
	mux.HandleFunc(MethodRecoveryFiles, s.serveRecoveryFiles)
	mux.HandleFunc(MethodRecoveryOps, s.serveRecoveryOps)
	streams.Handle(MethodRecoveryFiles, s.receiveFiles)
}

// CloseContext implements Copies.
func (s *Store) CloseContext(_ context.Context, _ Header, id string) (bool, error) {
	return s.pits.close(id), nil
}

// ClaimScroll implements Copies.
func (s *Store) ClaimScroll(_ context.Context, _ Header, id string) (vocab.ScrollCursor, error) {
	return s.pits.claim(id)
}

// CommitScroll implements Copies.
func (s *Store) CommitScroll(_ context.Context, _ Header, id string, cur vocab.ScrollCursor) error {
	return s.pits.commit(id, cur)
}

// Report implements Copies.
func (s *Store) Report(context.Context) (NodeReport, error) {
	return NodeReport{Copies: s.LocalCopyStats(), Recoveries: s.Recoveries(), Counters: s.reportedCounters()}, nil
}

func (s *Store) serveReport(ctx context.Context, req *fabric.Request) ([]byte, error) {
	if len(req.Payload) != 1 || req.Payload[0] != wireVersion {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "copy stats: unknown request version")
	}
	rep, err := s.Report(ctx)
	if err != nil {
		return nil, remoteErr(err)
	}
	return jsonReply(rep)
}

// Request bodies after the header.

func noBody(*dec) struct{} { return struct{}{} }

func decodeIDs(d *dec) []string {
	n := d.count(1)
	ids := make([]string, 0, n)
	for k := 0; k < n && d.err == nil; k++ {
		ids = append(ids, d.str())
	}
	return ids
}

// openContextArg is the body of MethodContextOpen: the keep-alive and
// (since wire version 6) the context's kind.
type openContextArg struct {
	keep time.Duration
	kind vocab.ContextKind
}

func encodeOpenContext(e *enc, a openContextArg) {
	e.varint(int64(a.keep))
	e.u8(byte(a.kind))
}

func decodeOpenContext(d *dec) openContextArg {
	a := openContextArg{keep: time.Duration(d.varint()), kind: vocab.ContextKind(d.u8())}
	if d.err == nil && (a.keep <= 0 || a.keep > vocab.MaxKeepAlive) {
		d.fail(fmt.Sprintf("context keep-alive %v must be positive and at most %v", a.keep, vocab.MaxKeepAlive))
	}
	if d.err == nil && !a.kind.Valid() {
		d.fail(fmt.Sprintf("unknown reader context kind %d", a.kind))
	}
	return a
}

// contextArg names a reader context and carries a method's argument.
type contextArg struct {
	id  string
	arg []byte
}

func decodeContextArg(d *dec) contextArg { return contextArg{id: d.str(), arg: d.bytes()} }
