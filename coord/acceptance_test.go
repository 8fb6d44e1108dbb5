package coord_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/scoring"
)

func matchQ(field, text string) *query.MatchQuery {
	q := bleve.NewMatchQuery(text)
	q.SetField(field)
	return q
}

func termQ(field, term string) *query.TermQuery {
	q := bleve.NewTermQuery(term)
	q.SetField(field)
	return q
}

func acceptanceQueries() map[string]query.Query {
	and := matchQ("body", "please send")
	and.SetOperator(query.MatchQueryOperatorAnd)
	phrase := bleve.NewMatchPhraseQuery("mailing list")
	phrase.SetField("body")
	subjPhrase := bleve.NewMatchPhraseQuery("new sequences")
	subjPhrase.SetField("subject")
	prefix := bleve.NewPrefixQuery("comp")
	prefix.SetField("body")
	fromPrefix := bleve.NewPrefixQuery("j")
	fromPrefix.SetField("from")
	fuzzy := bleve.NewFuzzyQuery("mesage")
	fuzzy.SetField("body")
	fuzzy.SetFuzziness(1)
	fuzzy2 := bleve.NewFuzzyQuery("lnux")
	fuzzy2.SetField("subject")
	fuzzy2.SetFuzziness(2)
	wildcard := bleve.NewWildcardQuery("pro*ing")
	wildcard.SetField("body")
	regexp := bleve.NewRegexpQuery("spam.*")
	regexp.SetField("body")
	dr := bleve.NewDateRangeQuery(time.Date(2002, 8, 1, 0, 0, 0, 0, time.UTC), time.Date(2002, 9, 15, 0, 0, 0, 0, time.UTC))
	dr.SetField("date")
	lo, hi := "easy-ham-1", "hard-ham"
	tr := bleve.NewTermRangeQuery(lo, hi)
	tr.SetField("group")
	boolQ := bleve.NewBooleanQuery()
	boolQ.AddMust(matchQ("body", "linux"))
	boolQ.AddShould(termQ("label", "ham"))
	boolQ.AddMustNot(matchQ("subject", "re"))
	boolShould := bleve.NewBooleanQuery()
	boolShould.AddShould(matchQ("body", "free"), matchQ("body", "money"), matchQ("subject", "offer"))
	boolShould.SetMinShould(2)
	boosted := matchQ("subject", "python")
	boosted.SetBoost(3)
	multi := bleve.NewDisjunctionQuery(boosted, matchQ("body", "python"))
	conj := bleve.NewConjunctionQuery(matchQ("body", "the"), termQ("label", "spam"))
	filtered := bleve.NewBooleanQuery()
	filtered.AddMust(matchQ("body", "internet business"))
	filtered.AddMust(dr)
	disMax := scoring.NewDisMax([]query.Query{matchQ("subject", "linux"), matchQ("body", "linux kernel")}, 0.2)
	boostedBool := &scoring.Boost{Query: bleve.NewConjunctionQuery(matchQ("body", "money")), Factor: 4}
	boostedSibling := bleve.NewBooleanQuery()
	boostedSibling.AddShould(boostedBool, matchQ("subject", "offer"))
	fastPhrase := bleve.NewMatchPhraseQuery("mailing list")
	fastPhrase.SetField("body")
	return map[string]query.Query{
		"phrase, Weft's matcher": index.NewMatchPhrase(fastPhrase),
		"dis_max":                disMax,
		"boosted compound":       boostedSibling,
		"match":                  matchQ("body", "sequence window"),
		"match subject":          matchQ("subject", "new"),
		"match stop word":        matchQ("body", "the"),
		"match operator and":     and,
		"term keyword":           termQ("label", "spam"),
		"term subfield":          termQ("subject.keyword", "Re: New Sequences Window"),
		"phrase body":            phrase,
		"phrase subject":         subjPhrase,
		"prefix":                 prefix,
		"prefix from":            fromPrefix,
		"fuzzy":                  fuzzy,
		"fuzzy 2":                fuzzy2,
		"wildcard":               wildcard,
		"regexp":                 regexp,
		"date range":             dr,
		"term range":             tr,
		"bool must should not":   boolQ,
		"bool min should":        boolShould,
		"boosted disjunction":    multi,
		"conjunction":            conj,
		"bool with filter":       filtered,
		"query string":           bleve.NewQueryStringQuery("subject:free body:money -label:ham"),
		"match all":              bleve.NewMatchAllQuery(),
	}
}

// TestOneShardRanksLikeFive is the acceptance test of issue 2: the same
// documents in a 1-shard and a 5-shard index give, for every query, the same
// total, the same top-10 ids and the same scores.
func TestOneShardRanksLikeFive(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	ids, sources := coordtest.SampleDocs(t)
	mp := coordtest.SampleMapping(t)
	require.NoError(t, m.CreateIndex(ctx, "one", coord.IndexSettings{NumberOfShards: 1}, mp))
	require.NoError(t, m.CreateIndex(ctx, "five", coord.IndexSettings{NumberOfShards: 5}, mp))
	// A second bulk overwrites some documents, so that the field-length
	// bookkeeping of updates is exercised too.
	for _, name := range []string{"one", "five"} {
		coordtest.BulkIndex(t, m, name, ids, sources)
		coordtest.BulkIndex(t, m, name, ids[:30], sources[:30])
	}
	for _, name := range []string{"one", "five"} {
		inf, err := m.Index(name)
		require.NoError(t, err)
		require.Equal(t, uint64(len(ids)), inf.DocsCount)
	}

	queries := acceptanceQueries()
	require.GreaterOrEqual(t, len(queries), 20)
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			run := func(idx string) *bleve.SearchResult {
				req := bleve.NewSearchRequestOptions(q, 10, 0, false)
				req.SortBy([]string{"-_score", "_id"})
				req.Fields = []string{index.SourceField}
				res, err := m.SearchBleve(ctx, []string{idx}, req)
				require.NoError(t, err)
				require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
				return res
			}
			one, five := run("one"), run("five")
			require.Positive(t, one.Total, "query must match something to prove anything")
			require.Equal(t, one.Total, five.Total)
			require.Len(t, five.Hits, len(one.Hits))
			for k := range one.Hits {
				require.Equal(t, one.Hits[k].ID, five.Hits[k].ID, "hit %d", k)
				a, b := one.Hits[k].Score, five.Hits[k].Score
				require.LessOrEqual(t, math.Abs(a-b), 1e-9*math.Max(math.Abs(a), math.Abs(b)), "hit %d (%s): %v vs %v", k, one.Hits[k].ID, a, b)
				require.Equal(t, "five", five.Hits[k].Index)
				require.NotEmpty(t, five.Hits[k].Fields[index.SourceField])
			}
		})
	}
}
