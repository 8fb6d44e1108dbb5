package index

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/registry"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Pinned views: a point in time of an index (Elasticsearch's reader
// contexts, behind point-in-time searches and scrolls). A view holds one
// reference on a scorch snapshot, so the segments it sees stay open however
// the index changes, and it searches like the index through a bleve index
// whose only reader is that snapshot.

// pinnedType is the bleve index type of a pinned view.
const pinnedType = "weft_pinned"

// pinnedKey is where the view travels to its constructor in bleve's
// configuration map.
const pinnedKey = "weft.pinned"

var registerPinnedOnce sync.Once

func registerPinned() {
	registerPinnedOnce.Do(func() {
		_ = registry.RegisterIndexType(pinnedType, func(_ string, config map[string]any, _ *bindex.AnalysisQueue) (bindex.Index, error) {
			p, ok := config[pinnedKey].(*pinnedIndex)
			if !ok {
				return nil, errors.New("index: a pinned view is created only by Pin")
			}
			return p, nil
		})
	})
}

// ErrReadOnly: a write to a pinned view.
var ErrReadOnly = errors.New("index: a pinned view is read-only")

// Pin returns a read-only view of the index as it is now: searches of the
// view (Search, SearchCollect, TermStats) see this moment's documents,
// whatever is written, deleted or merged afterwards. The caller must
// Release the view; until then the snapshot's segments stay open.
func (i *Index) Pin() (*Index, error) {
	registerPinned()
	if err := i.syncMapping(); err != nil {
		return nil, err
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.closed {
		return nil, ErrClosed
	}
	adv, err := i.bl.Advanced()
	if err != nil {
		return nil, err
	}
	ws, ok := adv.(*weftScorch)
	if !ok {
		return nil, fmt.Errorf("index: %s cannot be pinned (a %T index)", i.dir, adv)
	}
	r, err := ws.Scorch.Reader()
	if err != nil {
		return nil, err
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		_ = r.Close()
		return nil, fmt.Errorf("index: %s: unexpected reader %T", i.dir, r)
	}
	i.lensMu.RLock()
	lens := maps.Clone(i.lens)
	i.lensMu.RUnlock()
	im, err := i.m.bleveMapping(true)
	if err != nil {
		_ = snap.Close()
		return nil, err
	}
	p := &pinnedIndex{snap: snap, fieldLength: func(f string) uint64 { return lens[f] }}
	bl, err := bleve.NewUsing("", im, pinnedType, pinnedType, map[string]any{pinnedKey: p})
	if err != nil {
		_ = snap.Close()
		return nil, fmt.Errorf("index: pin %s: %w", i.dir, err)
	}
	v := &Index{dir: i.dir, m: i.m, an: i.an, bl: bl, im: im, imVer: i.imVer, lens: lens, pinned: p}
	v.appliedSeq.Store(i.appliedSeq.Load())
	return v, nil
}

// Release drops a pinned view's snapshot; searches of the view fail with
// ErrClosed afterwards. Idempotent; a no-op on an index that is no view.
func (i *Index) Release() error {
	if i.pinned == nil {
		return nil
	}
	i.mu.Lock()
	i.closed = true
	i.mu.Unlock()
	return i.pinned.release()
}

// pinnedIndex is the bleve index behind a pinned view: its reader is always
// the pinned snapshot.
type pinnedIndex struct {
	snap        *scorch.IndexSnapshot
	fieldLength func(string) uint64
	released    atomic.Bool
}

var _ bindex.Index = (*pinnedIndex)(nil)

func (p *pinnedIndex) release() error {
	if p.released.Swap(true) {
		return nil
	}
	return p.snap.DecRef()
}

func (p *pinnedIndex) Open() error  { return nil }
func (p *pinnedIndex) Close() error { return nil } // the snapshot goes with release

func (p *pinnedIndex) Update(bindex.Document) error { return ErrReadOnly }
func (p *pinnedIndex) Delete(string) error          { return ErrReadOnly }
func (p *pinnedIndex) Batch(*bindex.Batch) error    { return ErrReadOnly }

// SetInternal accepts what bleve writes when it builds the view (the
// mapping), in memory only: nothing of the view is persisted.
func (p *pinnedIndex) SetInternal(_, _ []byte) error { return nil }
func (p *pinnedIndex) DeleteInternal([]byte) error   { return ErrReadOnly }

// Reader returns the pinned snapshot, with a reference of its own that the
// reader's Close drops.
func (p *pinnedIndex) Reader() (bindex.IndexReader, error) {
	if p.released.Load() {
		return nil, ErrClosed
	}
	p.snap.AddRef()
	return &statsReader{IndexSnapshot: p.snap, fieldLength: p.fieldLength}, nil
}

func (p *pinnedIndex) StatsMap() map[string]any { return map[string]any{} }
