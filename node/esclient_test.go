package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/elastic/go-elasticsearch/v8/typedapi/types"
	"github.com/stretchr/testify/require"
)

// sampleEmails reads the checked-in sample corpus: id → document.
func sampleEmails(t *testing.T) (ids []string, docs map[string][]byte, labels map[string]string) {
	t.Helper()
	f, err := os.Open("../testdata/sample/emails.ndjson")
	require.NoError(t, err)
	defer f.Close()
	docs, labels = map[string][]byte{}, map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var d struct {
			ID    string `json:"id"`
			Label string `json:"label"`
		}
		line := append([]byte(nil), sc.Bytes()...)
		require.NoError(t, json.Unmarshal(line, &d))
		ids = append(ids, d.ID)
		docs[d.ID], labels[d.ID] = line, d.Label
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, ids)
	return ids, docs, labels
}

// decode reads an esapi response, requiring the status.
func decode(t *testing.T, res *esapi.Response, err error, status int) map[string]any {
	t.Helper()
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, status, res.StatusCode, "%s", b)
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v), "%s", b)
	return v
}

// TestOfficialGoClient drives a node with Elastic's own Go client — its
// product check, the bulk indexer, search, count, scroll and health, plus
// the typed client, whose strict decoding checks the reply shapes.
func TestOfficialGoClient(t *testing.T) {
	ctx := context.Background()
	n := startNode(t, testConfig(t.TempDir()))
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses: []string{n.URL()},
		Transport: &http.Transport{DisableKeepAlives: true},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = es.Close(ctx) })

	res, err := es.Info()
	info := decode(t, res, err, 200)
	require.Equal(t, "weft", info["cluster_name"])

	mapping, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(t, err)
	res, err = es.Indices.Create("emails", es.Indices.Create.WithBody(strings.NewReader(
		`{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":`+string(mapping)+`}`)))
	decode(t, res, err, 200)

	ids, docs, labels := sampleEmails(t)
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{Client: es, Index: "emails", NumWorkers: 2, FlushBytes: 256 << 10})
	require.NoError(t, err)
	for _, id := range ids {
		require.NoError(t, bi.Add(ctx, esutil.BulkIndexerItem{Action: "index", DocumentID: id, Body: bytes.NewReader(docs[id]),
			OnFailure: func(_ context.Context, item esutil.BulkIndexerItem, r esutil.BulkIndexerResponseItem, err error) {
				t.Errorf("bulk item %s failed: %v %+v", item.DocumentID, err, r.Error)
			}}))
	}
	require.NoError(t, bi.Close(ctx))
	st := bi.Stats()
	require.EqualValues(t, len(ids), st.NumIndexed)
	require.Zero(t, st.NumFailed)

	res, err = es.Indices.Refresh(es.Indices.Refresh.WithIndex("emails"))
	decode(t, res, err, 200)

	spam := 0
	for _, l := range labels {
		if l == "spam" {
			spam++
		}
	}
	res, err = es.Search(es.Search.WithIndex("emails"), es.Search.WithSize(1000),
		es.Search.WithBody(strings.NewReader(`{"query":{"term":{"label":"spam"}}}`)))
	body := decode(t, res, err, 200)
	hits := body["hits"].(map[string]any)
	require.EqualValues(t, spam, hits["total"].(map[string]any)["value"])
	for _, h := range hits["hits"].([]any) {
		hit := h.(map[string]any)
		id := hit["_id"].(string)
		require.Equal(t, "spam", labels[id])
		require.JSONEq(t, string(docs[id]), mustJSON(t, hit["_source"]))
	}

	res, err = es.Count(es.Count.WithIndex("emails"))
	body = decode(t, res, err, 200)
	require.EqualValues(t, len(ids), body["count"])

	res, err = es.Get("emails", ids[7])
	body = decode(t, res, err, 200)
	require.JSONEq(t, string(docs[ids[7]]), mustJSON(t, body["_source"]))

	// Scroll through everything, 64 at a time.
	res, err = es.Search(es.Search.WithIndex("emails"), es.Search.WithScroll(time.Minute), es.Search.WithSize(64),
		es.Search.WithBody(strings.NewReader(`{"query":{"match_all":{}}}`)))
	body = decode(t, res, err, 200)
	var scrolled []string
	for {
		page := body["hits"].(map[string]any)["hits"].([]any)
		if len(page) == 0 {
			break
		}
		for _, h := range page {
			scrolled = append(scrolled, h.(map[string]any)["_id"].(string))
		}
		res, err = es.Scroll(es.Scroll.WithScrollID(body["_scroll_id"].(string)), es.Scroll.WithScroll(time.Minute))
		body = decode(t, res, err, 200)
	}
	sort.Strings(scrolled)
	want := append([]string(nil), ids...)
	sort.Strings(want)
	require.Equal(t, want, scrolled, "the scroll returns every document once")
	res, err = es.ClearScroll(es.ClearScroll.WithScrollID(body["_scroll_id"].(string)))
	decode(t, res, err, 200)

	res, err = es.Cluster.Health(es.Cluster.Health.WithWaitForStatus("green"), es.Cluster.Health.WithTimeout(time.Second))
	body = decode(t, res, err, 200)
	require.Equal(t, "green", body["status"])

	// The typed client decodes replies into strict structs.
	typed, err := elasticsearch.NewTypedClient(elasticsearch.Config{
		Addresses: []string{n.URL()},
		Transport: &http.Transport{DisableKeepAlives: true},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = typed.Close(ctx) })
	sr, err := typed.Search().Index("emails").Query(&types.Query{Match: map[string]types.MatchQuery{"subject": {Query: "sequences"}}}).Do(ctx)
	require.NoError(t, err)
	require.NotZero(t, sr.Hits.Total.Value)
	cr, err := typed.Count().Index("emails").Do(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(ids), cr.Count)
	hr, err := typed.Cluster.Health().Do(ctx)
	require.NoError(t, err)
	require.Equal(t, "green", hr.Status.String())
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestOfficialGoClientOverHTTPS drives a node with security on (its
// default) through Elastic's Go client as its documentation sets it up:
// the CA certificate (CACert) or its fingerprint (CertificateFingerprint),
// the elastic user's password, then an API key the client creates and
// narrows to reading. Wrong credentials are a 401; the read-only key is
// refused a write with 403 and may search.
func TestOfficialGoClientOverHTTPS(t *testing.T) {
	ctx := context.Background()
	n := startNode(t, secureConfig(t.TempDir()))
	require.True(t, strings.HasPrefix(n.URL(), "https://"), n.URL())
	ca, err := os.ReadFile(n.Security().CACert)
	require.NoError(t, err)
	client := func(t *testing.T, cfg elasticsearch.Config) *elasticsearch.Client {
		cfg.Addresses = []string{n.URL()}
		es, err := elasticsearch.NewClient(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = es.Close(ctx) })
		return es
	}

	es := client(t, elasticsearch.Config{CACert: ca, Username: "elastic", Password: testPassword})
	res, err := es.Info()
	decode(t, res, err, 200)
	res, err = es.Indices.Create("mail", es.Indices.Create.WithBody(strings.NewReader(`{"settings":{"number_of_replicas":0}}`)))
	decode(t, res, err, 200)
	res, err = es.Bulk(strings.NewReader(`{"index":{"_index":"mail","_id":"1"}}`+"\n"+`{"subject":"over https"}`+"\n"),
		es.Bulk.WithRefresh("true"))
	require.False(t, decode(t, res, err, 200)["errors"].(bool))

	t.Run("CA fingerprint", func(t *testing.T) {
		es := client(t, elasticsearch.Config{CertificateFingerprint: n.Security().CAFingerprint, Username: "elastic", Password: testPassword})
		res, err := es.Count(es.Count.WithIndex("mail"))
		require.EqualValues(t, 1, decode(t, res, err, 200)["count"])
	})
	t.Run("wrong password", func(t *testing.T) {
		es := client(t, elasticsearch.Config{CACert: ca, Username: "elastic", Password: "not-" + testPassword})
		res, err := es.Count(es.Count.WithIndex("mail"))
		require.Equal(t, "security_exception", decode(t, res, err, 401)["error"].(map[string]any)["type"])
	})
	t.Run("without the CA", func(t *testing.T) {
		es := client(t, elasticsearch.Config{Username: "elastic", Password: testPassword})
		_, err := es.Info()
		require.Error(t, err, "the node's certificate is not from a CA the system trusts")
	})
	t.Run("API key", func(t *testing.T) {
		res, err := es.Security.CreateAPIKey(strings.NewReader(`{"name":"reader","role_descriptors":{"r":{"indices":[{"names":["mail"],"privileges":["read"]}]}}}`))
		key := decode(t, res, err, 200)
		reader := client(t, elasticsearch.Config{CACert: ca, APIKey: key["encoded"].(string)})
		res, err = reader.Search(reader.Search.WithIndex("mail"), reader.Search.WithBody(strings.NewReader(`{"query":{"match":{"subject":"https"}}}`)))
		hits := decode(t, res, err, 200)["hits"].(map[string]any)
		require.EqualValues(t, 1, hits["total"].(map[string]any)["value"])
		res, err = reader.Index("mail", strings.NewReader(`{"subject":"refused"}`))
		require.Equal(t, "security_exception", decode(t, res, err, 403)["error"].(map[string]any)["type"])
		res, err = reader.Security.Authenticate()
		require.Equal(t, "elastic", decode(t, res, err, 200)["username"], "a key acts for its owner")
	})
}
