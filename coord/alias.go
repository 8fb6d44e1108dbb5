package coord

import (
	"context"
	"errors"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/weftsearch/weft/index"
)

// aliasChild presents a ShardSearcher as the bleve.Index that IndexAlias
// fans out to. Only searching is supported: the alias is built per search
// and never written through. Hits of a searcher that fetches separately
// are remembered in pending, for the fetch phase, and so is every searcher
// that answered (its aggregations count) or found its statistics stale.
type aliasChild struct {
	s       ShardSearcher
	pending *fetchSet
	expect  uint64 // the generation the statistics assume of the copy; 0: any
	// after, when set, is awaited before searching (a copy on this node
	// waits until the other nodes' messages are on their way).
	after *dispatch
	// rank is the shard's place, by name, among the of shards searched.
	// Each hit's HitNumber (its place within its shard, bleve's tiebreak
	// after the sort keys) becomes HitNumber×of + rank: hits keep their
	// order within a shard, and hits of different shards that bleve would
	// find equal — the same score, the same place — go by shard, the same
	// way on every node, instead of in whatever order the shards answered
	// (bleve's merge sorts with sort.Sort, which is not stable).
	rank, of int
}

var _ bleve.Index = aliasChild{}

func errReadOnly(op string) error {
	return fmt.Errorf("shard: %s is not supported on a search-only shard view", op)
}

func (a aliasChild) SearchInContext(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	if a.expect != 0 {
		ctx = index.ExpectGeneration(ctx, a.expect)
	}
	a.after.wait(ctx)
	res, err := a.s.Search(ctx, req)
	if err == nil {
		a.renumber(res.Hits)
	}
	var stale *staleStats
	switch {
	case a.pending == nil:
	case err == nil:
		a.pending.searched(a.s)
		a.pending.add(a.s, res.Hits)
	case errors.As(err, &stale):
		a.pending.markStale(a.s, stale.ShardStats)
	}
	return res, err
}

// renumber gives hits their HitNumber among every shard's (see rank).
func (a aliasChild) renumber(hits search.DocumentMatchCollection) {
	if a.of < 2 {
		return
	}
	for _, h := range hits {
		h.HitNumber = h.HitNumber*uint64(a.of) + uint64(a.rank)
	}
}

func (a aliasChild) Search(req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	return a.SearchInContext(context.Background(), req)
}
func (a aliasChild) Name() string                             { return a.s.Name() }
func (a aliasChild) SetName(string)                           {}
func (a aliasChild) Index(string, interface{}) error          { return errReadOnly("Index") }
func (a aliasChild) Delete(string) error                      { return errReadOnly("Delete") }
func (a aliasChild) NewBatch() *bleve.Batch                   { return nil }
func (a aliasChild) Batch(*bleve.Batch) error                 { return errReadOnly("Batch") }
func (a aliasChild) Document(string) (bindex.Document, error) { return nil, errReadOnly("Document") }
func (a aliasChild) DocCount() (uint64, error)                { return 0, errReadOnly("DocCount") }
func (a aliasChild) Fields() ([]string, error)                { return nil, errReadOnly("Fields") }
func (a aliasChild) FieldDict(string) (bindex.FieldDict, error) {
	return nil, errReadOnly("FieldDict")
}
func (a aliasChild) FieldDictRange(string, []byte, []byte) (bindex.FieldDict, error) {
	return nil, errReadOnly("FieldDictRange")
}
func (a aliasChild) FieldDictPrefix(string, []byte) (bindex.FieldDict, error) {
	return nil, errReadOnly("FieldDictPrefix")
}
func (a aliasChild) Close() error                       { return nil }
func (a aliasChild) Mapping() mapping.IndexMapping      { return nil }
func (a aliasChild) Stats() *bleve.IndexStat            { return nil }
func (a aliasChild) StatsMap() map[string]interface{}   { return nil }
func (a aliasChild) GetInternal([]byte) ([]byte, error) { return nil, errReadOnly("GetInternal") }
func (a aliasChild) SetInternal([]byte, []byte) error   { return errReadOnly("SetInternal") }
func (a aliasChild) DeleteInternal([]byte) error        { return errReadOnly("DeleteInternal") }
func (a aliasChild) Advanced() (bindex.Index, error)    { return nil, errReadOnly("Advanced") }
