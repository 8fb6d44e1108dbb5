package shard

import (
	"context"
	"fmt"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// Multi-get: the documents are grouped by shard, and each shard's primary
// is asked for its whole group at once — in place on this node, or in one
// fabric call to the primary's node — so that a primary confirms its role
// with its replication group once per group rather than once per document.
// Groups run in parallel; a group that fails fails only its documents.

// Get implements Copies on the local primary copy h.Alloc. It reads under
// one hold of the copy's write lock (between write groups), so it never
// sees a write that is not acknowledged yet (one a new primary might not
// have); then it confirms once with the replication group that no other
// copy has been promoted since (one that may have acknowledged newer
// writes).
func (s *Store) Get(_ context.Context, h Header, ids []string) ([]index.Doc, []bool, error) {
	allocationID := h.Alloc
	sc, ok := s.copy(allocationID)
	if !ok {
		return nil, nil, fmt.Errorf("%w: copy %s is not open on this node yet", vocab.ErrUnavailable, allocationID)
	}
	docs, found := make([]index.Doc, len(ids)), make([]bool, len(ids))
	sc.leader.Lock()
	if !sc.primary.Load() {
		sc.leader.Unlock()
		return nil, nil, fmt.Errorf("%w: copy %s is not serving as primary", vocab.ErrUnavailable, allocationID)
	}
	term, last := sc.term.Load(), sc.lastSeq()
	var err error
	for k, id := range ids {
		if docs[k], found[k], err = sc.idx.Get(id); err != nil {
			break
		}
	}
	sc.leader.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if err := s.confirmPrimary(sc, term, last); err != nil {
		return nil, nil, err
	}
	return docs, found, nil
}

func decodeMgetReply(reply []byte, ids []string) ([]index.Doc, []bool, error) {
	d := dec{b: reply}
	d.version()
	if n := d.count(1); d.err == nil && n != len(ids) {
		d.fail("a reply for another number of documents")
	}
	docs, found := make([]index.Doc, len(ids)), make([]bool, len(ids))
	for k := 0; k < len(ids) && d.err == nil; k++ {
		docs[k].ID = ids[k]
		if found[k] = d.u8() == 1; found[k] {
			docs[k].Source = d.bytes()
			docs[k].SeqNo, docs[k].Version, docs[k].PrimaryTerm = d.u64(), d.varint(), d.u64()
		}
	}
	return docs, found, d.end()
}

func encodeMgetReply(docs []index.Doc, found []bool) []byte {
	size := 8
	for _, d := range docs {
		size += 32 + len(d.Source)
	}
	e := enc{b: make([]byte, 0, size)}
	e.u8(wireVersion)
	e.uvarint(uint64(len(docs)))
	for k, doc := range docs {
		if !found[k] {
			e.u8(0)
			continue
		}
		e.u8(1)
		e.bytes(doc.Source)
		e.u64(doc.SeqNo)
		e.varint(doc.Version)
		e.u64(doc.PrimaryTerm)
	}
	return e.b
}
