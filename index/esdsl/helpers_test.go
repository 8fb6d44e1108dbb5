package esdsl

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
)

// testFields is the mapping of the test index, in the Fields shape the
// index layer provides, with the optional analyzer abilities backed by the
// bleve mapping.
type testFields struct {
	types map[string]string
	m     mapping.IndexMapping
}

func (f *testFields) FieldType(path string) string { return f.types[path] }

func (f *testFields) Paths() map[string]string { return f.types }

func (f *testFields) AnalyzeField(path, analyzer, text string) ([]string, error) {
	name := analyzer
	if name == "" {
		name = f.m.AnalyzerNameForPath(path)
	} else if b, ok := f.BleveAnalyzer(name); ok {
		name = b
	}
	a := f.m.AnalyzerNamed(name)
	if a == nil {
		return nil, &Error{Kind: ErrInvalidRequest, Type: "illegal_argument_exception", Reason: "no analyzer " + name}
	}
	var out []string
	for _, tok := range a.Analyze([]byte(text)) {
		out = append(out, string(tok.Term))
	}
	return out, nil
}

func (f *testFields) BleveAnalyzer(name string) (string, bool) {
	switch name {
	case "standard":
		return "es_standard", true
	case "keyword":
		return keyword.Name, true
	}
	return "", false
}

var testTypes = map[string]string{
	"title": "text", "title.keyword": "keyword", "body": "text", "tags": "keyword",
	"views": "long", "price": "double", "published": "date", "active": "boolean",
	"user": "object", "user.name": "text",
}

// testMapping follows the index layer's conventions: ES dotted paths as
// field names, keyword sub-fields as fields of their own, _source stored.
func testMapping(t testing.TB) *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	require.NoError(t, im.AddCustomAnalyzer("es_standard", map[string]any{
		"type": custom.Name, "tokenizer": unicode.Name, "token_filters": []any{lowercase.Name},
	}))
	im.DefaultAnalyzer = "es_standard"
	im.ScoringModel = "bm25"
	doc := bleve.NewDocumentStaticMapping()
	text := func(name string) *mapping.FieldMapping {
		fm := bleve.NewTextFieldMapping()
		fm.Name = name
		fm.Analyzer = "es_standard"
		fm.IncludeTermVectors = true
		fm.Store = false
		return fm
	}
	kw := func(name string) *mapping.FieldMapping {
		fm := bleve.NewKeywordFieldMapping()
		fm.Name = name
		fm.Store = false
		fm.IncludeTermVectors = true
		return fm
	}
	doc.AddFieldMappingsAt("title", text("title"), kw("title.keyword"))
	// As the index layer does: the sub-field is also found by its path,
	// so bleve resolves its analyzer (keyword) for query text.
	kwLookup := bleve.NewDocumentStaticMapping()
	kwLookup.AddFieldMapping(kw(""))
	doc.Properties["title"].AddSubDocumentMapping("keyword", kwLookup)
	doc.AddFieldMappingsAt("body", text("body"))
	doc.AddFieldMappingsAt("tags", kw("tags"))
	num := bleve.NewNumericFieldMapping()
	num.Store = false
	doc.AddFieldMappingsAt("views", num)
	doc.AddFieldMappingsAt("price", num)
	dt := bleve.NewDateTimeFieldMapping()
	dt.Store = false
	doc.AddFieldMappingsAt("published", dt)
	bl := bleve.NewBooleanFieldMapping()
	bl.Store = false
	doc.AddFieldMappingsAt("active", bl)
	user := bleve.NewDocumentStaticMapping()
	user.AddFieldMappingsAt("name", text("name"))
	doc.AddSubDocumentMapping("user", user)
	src := bleve.NewTextFieldMapping()
	src.Index = false
	src.Store = true
	src.IncludeInAll = false
	src.IncludeTermVectors = false
	src.DocValues = false
	doc.AddFieldMappingsAt(index.SourceField, src)
	im.DefaultMapping = doc
	return im
}

var testDocs = []struct {
	id  string
	src string
}{
	{"1", `{"title":"The Quick Brown Fox","body":"the quick brown fox jumps over the lazy dog","tags":["animal","fast"],"views":100,"price":9.99,"published":"2024-01-15T10:00:00Z","active":true,"user":{"name":"Alice Smith"}}`},
	{"2", `{"title":"Lazy Dogs Sleep","body":"a lazy dog sleeps all day in the sun","tags":["animal","slow"],"views":50,"price":19.5,"published":"2024-02-20T08:30:00Z","active":false,"user":{"name":"Bob Jones"}}`},
	{"3", `{"title":"Brown Bread Recipe","body":"bake brown bread with whole wheat flour","tags":["food"],"views":300,"price":5,"published":"2024-02-03T12:00:00Z","active":true,"user":{"name":"Carol Smith"}}`},
	{"4", `{"title":"Fox News Today","body":"news about a fox and a hound","tags":["news","animal"],"views":10,"price":0.5,"published":"2023-12-31T23:00:00Z","active":true,"user":{"name":"Dave"}}`},
	{"5", `{"title":"Quick Recipes","body":"quick and easy recipes for busy people","tags":["food","fast"],"views":75,"price":12,"published":"2024-03-10T00:00:00Z","active":false,"user":{"name":"Eve Smith"}}`},
	{"6", `{"title":"Ocean Waves","body":"waves crash on the shore","price":30,"published":"2024-03-11T00:00:00Z","active":true,"user":{"name":"Frank"}}`},
}

type testIndex struct {
	idx    bleve.Index
	fields *testFields
}

// newTestIndex builds a real scorch index in t.TempDir() holding testDocs.
func newTestIndex(t testing.TB) *testIndex {
	t.Helper()
	im := testMapping(t)
	idx, err := bleve.New(t.TempDir()+"/idx", im)
	require.NoError(t, err)
	t.Cleanup(func() { _ = idx.Close() })
	b := idx.NewBatch()
	for _, d := range testDocs {
		var data map[string]any
		require.NoError(t, json.Unmarshal([]byte(d.src), &data))
		data[index.SourceField] = d.src
		require.NoError(t, b.Index(d.id, data))
	}
	require.NoError(t, idx.Batch(b))
	return &testIndex{idx: idx, fields: &testFields{types: testTypes, m: im}}
}

// search runs an ES body through ParseSearch, bleve and Response, and
// returns the response decoded as generic JSON.
func (ti *testIndex) search(t testing.TB, body string, params url.Values) map[string]any {
	t.Helper()
	s, err := ParseSearch([]byte(body), params, ti.fields)
	require.NoError(t, err, "body %s", body)
	return ti.run(t, s)
}

func (ti *testIndex) run(t testing.TB, s *Search) map[string]any {
	t.Helper()
	res, err := ti.idx.Search(s.Request)
	require.NoError(t, err)
	for _, h := range res.Hits {
		h.Index = "test"
	}
	resp := s.Response(res, time.Millisecond)
	raw, err := json.Marshal(resp)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func hitIDs(resp map[string]any) []string {
	ids := []string{}
	for _, h := range resp["hits"].(map[string]any)["hits"].([]any) {
		ids = append(ids, h.(map[string]any)["_id"].(string))
	}
	return ids
}

func hitList(resp map[string]any) []map[string]any {
	var out []map[string]any
	for _, h := range resp["hits"].(map[string]any)["hits"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

func total(resp map[string]any) map[string]any {
	return resp["hits"].(map[string]any)["total"].(map[string]any)
}
