package coord

import (
	"context"
	"sync"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index"
)

// MgetItem names one document of a multi-get by concrete index name.
type MgetItem struct {
	Index, ID, Routing string
}

// MgetResult is one document's outcome: found or not, or the error that
// kept it from being read.
type MgetResult struct {
	Doc   index.Doc
	Found bool
	Err   error
}

// Mget reads the documents (realtime, from their primaries) and returns one
// result per item, in item order. The error is for whole-request failures
// (ctx ended, the node not in a cluster).
func (c *Coordinator) Mget(ctx context.Context, items []MgetItem) ([]MgetResult, error) {
	v, err := c.readView()
	if err != nil {
		return nil, err
	}
	out := make([]MgetResult, len(items))
	type key struct {
		uuid string
		num  int
	}
	groups := map[key][]int{}
	var order []key
	for k, it := range items {
		if err := ValidateID(it.ID); err != nil {
			out[k].Err = err
			continue
		}
		ix, err := v.Index(it.Index)
		if err == nil && ix.Closed {
			err = closedErr(it.Index)
		}
		if err != nil {
			out[k].Err = err
			continue
		}
		kk := key{ix.UUID, ShardFor(it.ID, it.Routing, ix.NumberOfShards)}
		if groups[kk] == nil {
			order = append(order, kk)
		}
		groups[kk] = append(groups[kk], k)
	}
	var wg sync.WaitGroup
	for _, kk := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots := groups[kk]
			ids := make([]string, len(slots))
			for j, k := range slots {
				ids[j] = items[k].ID
			}
			var docs []index.Doc
			var found []bool
			err := c.onPrimary(ctx, kk.uuid, kk.num, func(v *state.State, p state.Copy) error {
				var err error
				docs, found, err = c.getFromPrimary(ctx, v, kk.uuid, kk.num, p, ids)
				return err
			})
			for j, k := range slots {
				if err != nil {
					out[k].Err = err
					continue
				}
				out[k].Doc, out[k].Found = docs[j], found[j]
			}
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}
