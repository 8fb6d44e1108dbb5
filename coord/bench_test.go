package coord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// benchDocs returns n sample documents with distinct ids.
func benchDocs(b *testing.B, n int) ([]string, []json.RawMessage) {
	ids, srcs := coordtest.SampleDocs(b)
	outIDs := make([]string, n)
	outSrc := make([]json.RawMessage, n)
	for k := range n {
		outIDs[k] = fmt.Sprintf("%s-%d", ids[k%len(ids)], k)
		outSrc[k] = srcs[k%len(srcs)]
	}
	return outIDs, outSrc
}

const benchBatch = 500

// BenchmarkBulkManager indexes batches through Manager.Bulk (log + fsync +
// batch apply), one shard, explicit ids.
func BenchmarkBulkManager(b *testing.B) {
	m := coordtest.OpenManager(b, b.TempDir())
	defer m.Close()
	raw, err := json.Marshal(coordtest.SampleMapping(b))
	require.NoError(b, err)
	mp, err := index.ParseMapping(raw)
	require.NoError(b, err)
	require.NoError(b, m.CreateIndex(context.Background(), "b", coord.IndexSettings{NumberOfShards: 1}, mp))
	ids, srcs := benchDocs(b, b.N*benchBatch)
	b.ResetTimer()
	for k := range b.N {
		ops := make([]vocab.Op, benchBatch)
		for j := range ops {
			ops[j] = vocab.Op{Type: vocab.OpIndex, Index: "b", ID: ids[k*benchBatch+j], Source: srcs[k*benchBatch+j]}
		}
		res, err := m.Bulk(context.Background(), ops, coord.WriteOptions{Refresh: coord.RefreshFalse})
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res[0].Err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkBulkRawBleve indexes the same batches into plain bleve (default
// scorch config: Batch waits for persistence) with the equivalent mapping.
func BenchmarkBulkRawBleve(b *testing.B) {
	idx, err := bleve.New(filepath.Join(b.TempDir(), "raw"), coordtest.SampleMapping(b).BleveMapping())
	require.NoError(b, err)
	defer idx.Close()
	ids, srcs := benchDocs(b, b.N*benchBatch)
	b.ResetTimer()
	for k := range b.N {
		batch := idx.NewBatch()
		for j := range benchBatch {
			var doc map[string]any
			if err := json.Unmarshal(srcs[k*benchBatch+j], &doc); err != nil {
				b.Fatal(err)
			}
			if err := batch.Index(ids[k*benchBatch+j], doc); err != nil {
				b.Fatal(err)
			}
		}
		if err := idx.Batch(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "docs/s")
}

func benchSearchSetup(b *testing.B) (*coordtest.Node, bleve.Index) {
	m := coordtest.OpenManager(b, b.TempDir())
	b.Cleanup(func() { _ = m.Close() })
	require.NoError(b, m.CreateIndex(context.Background(), "b", coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(b)))
	ids, srcs := coordtest.SampleDocs(b)
	ops := make([]vocab.Op, len(ids))
	for k := range ids {
		ops[k] = vocab.Op{Type: vocab.OpIndex, Index: "b", ID: ids[k], Source: srcs[k]}
	}
	_, err := m.Bulk(context.Background(), ops, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(b, err)
	raw, err := bleve.New(filepath.Join(b.TempDir(), "raw"), coordtest.SampleMapping(b).BleveMapping())
	require.NoError(b, err)
	b.Cleanup(func() { _ = raw.Close() })
	batch := raw.NewBatch()
	for k := range ids {
		var doc map[string]any
		require.NoError(b, json.Unmarshal(srcs[k], &doc))
		require.NoError(b, batch.Index(ids[k], doc))
	}
	require.NoError(b, raw.Batch(batch))
	return m, raw
}

// benchQueries are enginebench's three query kinds on the sample, top 10
// hits with their source (_source on the node, every stored field in raw
// bleve).
func benchQueries(raw bool) map[string]func() *bleve.SearchRequest {
	fields := []string{index.SourceField}
	if raw {
		fields = []string{"*"}
	}
	term := func(field, v string) query.Query {
		q := bleve.NewTermQuery(v)
		q.SetField(field)
		return q
	}
	req := func(q query.Query) *bleve.SearchRequest {
		r := bleve.NewSearchRequestOptions(q, 10, 0, false)
		r.Fields = fields
		return r
	}
	return map[string]func() *bleve.SearchRequest{
		"term": func() *bleve.SearchRequest { return req(term("body", "linux")) },
		"boolean": func() *bleve.SearchRequest {
			q := bleve.NewBooleanQuery()
			q.AddMust(term("body", "linux"))
			q.AddShould(term("subject", "kernel"))
			q.AddMustNot(term("body", "windows"))
			return req(q)
		},
		"phrase": func() *bleve.SearchRequest {
			q := bleve.NewMatchPhraseQuery("mailing list")
			q.SetField("body")
			return req(q)
		},
	}
}

// BenchmarkSearchKinds runs enginebench's query kinds on one shard through
// the Manager and on raw bleve, same documents.
func BenchmarkSearchKinds(b *testing.B) {
	m, raw := benchSearchSetup(b)
	for _, kind := range []string{"term", "boolean", "phrase"} {
		b.Run(kind+"/manager", func(b *testing.B) {
			mk := benchQueries(false)[kind]
			for b.Loop() {
				res, err := m.SearchBleve(context.Background(), []string{"b"}, mk())
				if err != nil || len(res.Hits) == 0 {
					b.Fatal(err, "no hits")
				}
			}
		})
		b.Run(kind+"/raw", func(b *testing.B) {
			mk := benchQueries(true)[kind]
			for b.Loop() {
				res, err := raw.Search(mk())
				if err != nil || len(res.Hits) == 0 {
					b.Fatal(err, "no hits")
				}
			}
		})
	}
}

func benchQuery() *bleve.SearchRequest {
	q := bleve.NewMatchQuery("linux kernel")
	q.SetField("body")
	return bleve.NewSearchRequestOptions(q, 10, 0, false)
}

// BenchmarkSearchManager: Manager.Search (two phases, global statistics)
// against BenchmarkSearchRawBleve on the same documents and query.
func BenchmarkSearchManager(b *testing.B) {
	m, _ := benchSearchSetup(b)
	b.ResetTimer()
	for range b.N {
		if _, err := m.SearchBleve(context.Background(), []string{"b"}, benchQuery()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchRawBleve(b *testing.B) {
	_, raw := benchSearchSetup(b)
	b.ResetTimer()
	for range b.N {
		if _, err := raw.Search(benchQuery()); err != nil {
			b.Fatal(err)
		}
	}
}
