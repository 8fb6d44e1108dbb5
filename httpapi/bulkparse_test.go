package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBulk(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		index      string
		wantErr    string // substring of the whole-request error; "" = none
		wantStatus int
		strictKeys bool // REST API 9
		check      func(t *testing.T, as []bulkAction)
	}{
		{
			name: "all four actions",
			body: `{"index":{"_index":"a","_id":"1"}}
{"title":"one"}
{"create":{"_index":"a","_id":"2","routing":"r"}}
{"title":"two"}
{"update":{"_index":"a","_id":"1"}}
{"doc":{"title":"uno"},"doc_as_upsert":true}
{"delete":{"_index":"a","_id":"2"}}
`,
			check: func(t *testing.T, as []bulkAction) {
				require.Len(t, as, 4)
				require.Equal(t, []string{"index", "create", "update", "delete"},
					[]string{as[0].Action, as[1].Action, as[2].Action, as[3].Action})
				require.JSONEq(t, `{"title":"one"}`, string(as[0].Source))
				require.Equal(t, "r", as[1].Routing)
				require.JSONEq(t, `{"title":"uno"}`, string(as[2].Doc))
				require.True(t, as[2].DocAsUpsert)
				for _, a := range as {
					require.Nil(t, a.Err)
					require.Equal(t, "a", a.Index)
				}
			},
		},
		{
			name:  "default index from the URL, no id, CRLF, blank lines, no final newline",
			index: "dflt",
			body:  "{\"index\":{}}\r\n\r\n{\"x\":1}\r\n{\"index\":{\"_index\":\"other\"}}\n{\"x\":2}",
			check: func(t *testing.T, as []bulkAction) {
				require.Len(t, as, 2)
				require.Equal(t, "dflt", as[0].Index)
				require.Equal(t, "", as[0].ID)
				require.Equal(t, "other", as[1].Index)
			},
		},
		{
			name: "document that is not JSON fails only its item",
			body: "{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{not json\n{\"index\":{\"_index\":\"a\",\"_id\":\"2\"}}\n{\"ok\":true}\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Len(t, as, 2)
				require.NotNil(t, as[0].Err)
				require.Equal(t, "document_parsing_exception", as[0].Err.Type)
				require.Nil(t, as[1].Err)
			},
		},
		{
			name: "document that is an array fails only its item",
			body: "{\"create\":{\"_index\":\"a\",\"_id\":\"1\"}}\n[1,2]\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Equal(t, 400, as[0].Err.Status)
			},
		},
		{
			name: "unsupported option fails only its item",
			body: "{\"index\":{\"_index\":\"a\",\"_id\":\"1\",\"pipeline\":\"p\"}}\n{}\n{\"delete\":{\"_index\":\"a\",\"_id\":\"1\"}}\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Contains(t, as[0].Err.Reason, "pipeline")
				require.Nil(t, as[1].Err)
			},
		},
		{
			name: "scripted update fails only its item",
			body: "{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"script\":\"ctx._source.x++\"}\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Contains(t, as[0].Err.Reason, "scripted updates")
			},
		},
		{
			name: "update without doc fails its item",
			body: "{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"upsert\":{}}\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Equal(t, "action_request_validation_exception", as[0].Err.Type)
			},
		},
		{
			name: "delete without id fails its item",
			body: "{\"delete\":{\"_index\":\"a\"}}\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Contains(t, as[0].Err.Reason, "id is missing")
			},
		},
		{name: "action line not JSON rejects the request", body: "hello\n{}\n", wantErr: "malformed action/metadata line [1]", wantStatus: 400},
		{name: "action line broken JSON rejects the request", body: "{\"index\":\n", wantErr: "line [1]", wantStatus: 400},
		{name: "unknown action", body: "{\"upsert\":{\"_index\":\"a\"}}\n{}\n", wantErr: "[upsert]", wantStatus: 400},
		{name: "two actions on one line", body: "{\"index\":{},\"delete\":{}}\n", wantErr: "exactly one action", wantStatus: 400},
		{name: "unknown metadata field under REST API 9", body: "{\"index\":{\"_index\":\"a\",\"colour\":1}}\n{}\n", strictKeys: true,
			wantErr: "Action/metadata line [1] contains an unknown parameter [colour]", wantStatus: 400},
		{name: "wrong type of _id", body: "{\"index\":{\"_index\":\"a\",\"_id\":{\"a\":1}}}\n{}\n", wantErr: "line [1]", wantStatus: 400},
		{name: "missing index", body: "{\"index\":{\"_id\":\"1\"}}\n{}\n", wantErr: "index is missing", wantStatus: 400},
		{name: "a lone action without its source line", body: "{\"index\":{\"_index\":\"a\"}}\n", wantErr: "no requests added", wantStatus: 400},
		{
			name: "a last action without its source line is dropped, as in Elasticsearch",
			body: "{\"index\":{\"_index\":\"a\"}}\n{}\n{\"index\":{\"_index\":\"a\"}}\n",
			check: func(t *testing.T, as []bulkAction) {
				require.Len(t, as, 1)
			},
		},
		{name: "empty body", body: "\n\n", wantErr: "no requests added", wantStatus: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as, err := parseBulk([]byte(tc.body), tc.index, "", nil, bulkLeniency{strictKeys: tc.strictKeys})
			if tc.wantErr != "" {
				var ae *apiError
				require.True(t, errors.As(err, &ae), "error %v is not an *apiError", err)
				require.Equal(t, tc.wantStatus, ae.Status)
				require.Contains(t, ae.Reason, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, as)
		})
	}
}

// FuzzParseBulk checks that no body panics the parser, that every rejection
// of the whole request is a 4xx *apiError, and that every item error is 4xx.
func FuzzParseBulk(f *testing.F) {
	seeds := []string{
		"{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"title\":\"one\"}\n",
		"{\"create\":{\"_index\":\"a\"}}\n{\"n\":1}\n{\"delete\":{\"_index\":\"a\",\"_id\":\"x\"}}\n",
		"{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"doc\":{\"a\":{\"b\":[1,2]}},\"upsert\":{\"a\":1}}\n",
		"{\"index\":{}}\n{}\n",
		"{\"index\":{\"_index\":\"a\",\"if_seq_no\":1}}\n{}\n",
		"{\"index\":\n",
		"\n\n\r\n",
		"{\"delete\":{\"_index\":\"a\",\"_id\":\"\"}}",
		"{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"doc\":1}\n",
		"[]\n{}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "dflt")
	}
	f.Fuzz(func(t *testing.T, body []byte, index string) {
		as, err := parseBulk(body, index, "", nil, bulkLeniency{})
		if err != nil {
			var ae *apiError
			require.True(t, errors.As(err, &ae), "error %v is not an *apiError", err)
			require.GreaterOrEqual(t, ae.Status, 400)
			require.Less(t, ae.Status, 500)
			require.Nil(t, as)
			return
		}
		require.NotEmpty(t, as)
		for _, a := range as {
			require.NotEmpty(t, a.Index)
			if a.Err != nil {
				require.GreaterOrEqual(t, a.Err.Status, 400)
				require.Less(t, a.Err.Status, 500)
				continue
			}
			switch a.Action {
			case actionIndex, actionCreate:
				require.NoError(t, checkObject(a.Source))
			case actionUpdate:
				require.NoError(t, checkObject(a.Doc))
				require.NotEmpty(t, a.ID)
			case actionDelete:
				require.NotEmpty(t, a.ID)
			default:
				t.Fatalf("unexpected action %q", a.Action)
			}
		}
	})
}

// BenchmarkParseBulk measures the parser alone on the sample corpus, per
// document (compare with the engine's per-document indexing cost).
func BenchmarkParseBulk(b *testing.B) {
	src, err := os.ReadFile("../testdata/sample/emails.ndjson")
	require.NoError(b, err)
	var body bytes.Buffer
	n := 0
	for line := range bytes.SplitSeq(bytes.TrimSpace(src), []byte("\n")) {
		fmt.Fprintf(&body, "{\"index\":{\"_index\":\"emails\",\"_id\":\"%d\"}}\n%s\n", n, line)
		n++
	}
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		as, err := parseBulk(body.Bytes(), "", "", nil, bulkLeniency{})
		if err != nil || len(as) != n {
			b.Fatalf("parsed %d of %d: %v", len(as), n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/doc")
}

// TestParseBulkConditions: if_seq_no and if_primary_term reach the action;
// a value that is not a non-negative number fails only its item.
func TestParseBulkConditions(t *testing.T) {
	as, err := parseBulk([]byte("{\"index\":{\"_index\":\"a\",\"_id\":\"1\",\"if_seq_no\":3,\"if_primary_term\":2}}\n{}\n{\"delete\":{\"_index\":\"a\",\"_id\":\"2\",\"if_seq_no\":-1}}\n"), "", "", nil, bulkLeniency{})
	require.NoError(t, err)
	require.Nil(t, as[0].Err)
	require.Equal(t, uint64(3), *as[0].IfSeqNo)
	require.Equal(t, uint64(2), *as[0].IfPrimaryTerm)
	require.NotNil(t, as[1].Err)
	require.Contains(t, as[1].Err.Reason, "if_seq_no")
}

// Under REST API 8 an action line's unknown keys are skipped with a
// warning and a null option is an absent one, as Elasticsearch 8 reads
// them (winston-elasticsearch sends "attempts":0 and "pipeline":null).
func TestParseBulkIsLenientUnderRESTAPI8(t *testing.T) {
	var warnings []string
	body := "{\"index\":{\"_index\":\"logs\",\"attempts\":0,\"pipeline\":null}}\n{\"message\":\"hi\"}\n"
	as, err := parseBulk([]byte(body), "", "", nil, bulkLeniency{warn: func(m string) { warnings = append(warnings, m) }})
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Nil(t, as[0].Err, "the item is written: a null pipeline is no pipeline")
	require.Equal(t, []string{"Action/metadata line [1] contains an unknown parameter [attempts]"}, warnings)
}
