package esdsl

import (
	"testing"
	"time"
)

const benchBody = `{"query":{"bool":{"must":{"match":{"body":{"query":"quick brown fox","operator":"and"}}},"filter":[{"range":{"published":{"gte":"now-1y/d"}}},{"terms":{"tags":["animal","food"]}}]}},"sort":[{"views":"desc"},"_id"],"size":20,"_source":["title","views"],"aggs":{"t":{"terms":{"field":"tags"}}}}`

// BenchmarkParseSearch measures translating a typical request body.
func BenchmarkParseSearch(b *testing.B) {
	fields := &testFields{types: testTypes, m: testMapping(b)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSearch([]byte(benchBody), nil, fields); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponse measures shaping a result (sort values, _source
// filtering, a terms aggregation) as Elasticsearch JSON.
func BenchmarkResponse(b *testing.B) {
	ti := newTestIndex(b)
	s, err := ParseSearch([]byte(`{"sort":[{"views":"desc"},"_id"],"_source":["title","views"],"highlight":{"fields":{"body":{}}},"query":{"match":{"body":"the"}},"aggs":{"t":{"terms":{"field":"tags"}}}}`), nil, ti.fields)
	if err != nil {
		b.Fatal(err)
	}
	res, err := ti.idx.Search(s.Request)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Response(res, time.Millisecond)
	}
}

// BenchmarkParseSearchKinds measures translating the engine benchmark's
// three query kinds (benchmarks/enginebench), small bodies whose cost is
// mostly decoding.
func BenchmarkParseSearchKinds(b *testing.B) {
	fields := &testFields{types: testTypes, m: testMapping(b)}
	for _, bc := range []struct{ name, body string }{
		{"term", `{"query":{"term":{"body":"linux"}},"size":10}`},
		{"boolean", `{"query":{"bool":{"must":[{"term":{"body":"a"}}],"must_not":[{"term":{"body":"c"}}],"should":[{"term":{"title":"b"}}]}},"size":10}`},
		{"phrase", `{"query":{"match_phrase":{"body":"red hat"}},"size":10}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseSearch([]byte(bc.body), nil, fields); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
