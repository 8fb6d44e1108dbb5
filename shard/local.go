package shard

import (
	"fmt"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// This file holds what the coordinator of the same node reads from its
// data node directly, without a message: a local copy's index to search,
// a pinned reader context, the node's mapping of an index and the
// counters of its copies. A remote coordinator reaches the same data
// through Copies and the search phases.

// Readable returns the index of this node's copy alloc, to search in
// place. It fails with ErrUnavailable when the copy is not open here, and
// with the copy's failure when it cannot index what it acknowledged (it
// is being failed, and the shard is left to the other copies).
func (s *Store) Readable(alloc string) (*index.Index, error) {
	sc, ok := s.copy(alloc)
	if !ok {
		return nil, fmt.Errorf("%w: copy %s is not open on this node", vocab.ErrUnavailable, alloc)
	}
	return sc.readable()
}

// PinnedContext returns the pinned view of this node's reader context id
// and extends its keep-alive to keep (at most MaxKeepAlive); an error
// wrapping ErrContextMissing when there is no such context.
func (s *Store) PinnedContext(id string, keep time.Duration) (*index.Index, error) {
	return s.pits.use(id, keep)
}

// OpenContextCount returns how many reader contexts of kind (points in
// time, scrolls) this node holds open.
func (s *Store) OpenContextCount(kind vocab.ContextKind) int { return s.pits.count(kind) }

// Mapping returns a copy of this node's mapping of ix, with the committed
// mapping of ix merged in first (the view may be newer than what the
// reconcile loop merged, and a PUT _mapping must be seen by the next
// GET); false when no copy of ix was ever opened here.
func (s *Store) Mapping(ix *state.Index) (*index.Mapping, bool) {
	nm, ok := s.mapping(ix.UUID)
	if !ok {
		return nil, false
	}
	if err := nm.merge(ix); err != nil {
		s.logger.Warn("shard: merging the committed mapping", "index", ix.Name, "err", err)
	}
	return nm.m.Clone(), true
}

// CopyCounters returns, per index name, the documents, bytes and shard
// log fsyncs of this node's open copies (the request counters of
// IndexNodeStats are the coordinator's).
func (s *Store) CopyCounters() map[string]vocab.IndexNodeStats {
	out := map[string]vocab.IndexNodeStats{}
	for _, sc := range s.openCopies() {
		st := out[sc.meta.Index]
		is := sc.idx.Stats()
		st.Docs += is.DocCount
		st.StoreSizeBytes += is.StoreSizeBytes
		st.LogFsyncs += sc.log.Fsyncs()
		out[sc.meta.Index] = st
	}
	return out
}

// Metadata returns the cluster metadata the node's data node follows; the
// node's coordinator reads the same.
func (s *Store) Metadata() Metadata { return s.meta }

// Peers returns how this node reaches other nodes' fabric; nil on a node
// without a fabric.
func (s *Store) Peers() fabric.Caller { return s.peers }
