package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/httpapi"
)

// countingListener counts the writes its connections make to their sockets.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// rawExchange sends one HTTP/1.1 request on conn and reads the whole
// response (status line, headers, body) as sent.
func rawExchange(t *testing.T, conn net.Conn, br *bufio.Reader, method, path, body string) *http.Response {
	t.Helper()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, len(body), body)
	_, err := io.WriteString(conn, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	require.NoError(t, err)
	return resp
}

// tookRe matches the one field of a reply that may differ between two
// runs of the same request.
var tookRe = regexp.MustCompile(`"took" ?: ?[0-9]+`)

// requireSameReply requires two reply bodies to be equal but for "took",
// without printing them whole.
func requireSameReply(t *testing.T, want, got []byte) {
	t.Helper()
	w, g := tookRe.ReplaceAll(want, []byte(`"took":0`)), tookRe.ReplaceAll(got, []byte(`"took":0`))
	if bytes.Equal(w, g) {
		return
	}
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	t.Fatalf("replies differ at byte %d (want %d bytes, got %d): want …%.80s…, got …%.80s…", i, len(w), len(g), w[i:], g[i:])
}

// TestCoalescedReplies checks that the API behind CoalescingListener and
// ConnContext sends each JSON reply in one write to the socket, on a
// keep-alive connection, and that the replies (status, headers, body) are
// those of the same API served the ordinary way.
func TestCoalescedReplies(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/docs", `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
	var bulk strings.Builder
	for i := range 40 {
		// Distinct scores (term frequency i+1), so that hits come in one order.
		body := strings.Repeat("common ", i+1) + strings.Repeat(fmt.Sprintf("word%d ", i), 80)
		fmt.Fprintf(&bulk, "{\"index\":{\"_id\":\"d%d\"}}\n{\"title\":\"doc %d\",\"body\":%q}\n", i, i, body)
	}
	a.must(200, "POST", "/docs/_bulk?refresh=true", bulk.String())

	srv, writes := coalescingServer(t, a.srv.Config.Handler)

	bigBody := `{"query":{"match":{"body":"common"}},"size":40}`
	tests := []struct {
		name, method, path, body string
		status                   int
		oneWrite                 bool
	}{
		{"search reply of about 40 kB", "POST", "/docs/_search", `{"query":{"match":{"body":"common"}},"size":40}`, 200, true},
		{"search reply of about 10 kB", "POST", "/docs/_search", `{"query":{"match":{"body":"common"}},"size":10}`, 200, true},
		{"small search reply", "POST", "/docs/_search", `{"query":{"match":{"body":"common"}},"size":0}`, 200, true},
		{"pretty search reply", "POST", "/docs/_search?pretty", `{"query":{"match":{"body":"common"}},"size":20}`, 200, true},
		{"msearch reply", "POST", "/_msearch", "{\"index\":\"docs\"}\n" + bigBody + "\n{\"index\":\"docs\"}\n" + bigBody + "\n", 200, true},
		{"get document", "GET", "/docs/_doc/d3", "", 200, true},
		{"error reply", "POST", "/docs/_search", `{"query":{"nope":{}}}`, 400, true},
		{"missing index", "GET", "/nothere/_search", "", 404, true},
		{"head of an index", "HEAD", "/docs", "", 200, true},
		{"text reply (not JSON)", "GET", "/_cat/indices?v", "", 200, false},
	}
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	br := bufio.NewReader(conn)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := a.do(tc.method, tc.path, tc.body)
			before := writes.Load()
			resp := rawExchange(t, conn, br, tc.method, tc.path, tc.body)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			n := writes.Load() - before

			require.Equal(t, tc.status, resp.StatusCode, "body: %s", got)
			require.Equal(t, want.Status, resp.StatusCode)
			requireSameReply(t, want.Body, got)
			if tc.method != "HEAD" {
				require.Equal(t, strconv.Itoa(len(got)), resp.Header.Get("Content-Length"))
			}
			// Date and (with "took") Content-Length may differ.
			wantHeader, gotHeader := want.Header.Clone(), resp.Header.Clone()
			for _, h := range []string{"Date", "Content-Length"} {
				wantHeader.Del(h)
				gotHeader.Del(h)
			}
			require.Equal(t, wantHeader, gotHeader)
			require.False(t, resp.Close, "the connection stays open")
			if tc.oneWrite {
				require.EqualValues(t, 1, n, "writes to the socket for a %d-byte reply", len(got))
			}
		})
	}
}

// TestCoalescedReplyLargerThanTheLimit checks that a reply above the
// coalescing limit is sent whole, the ordinary way.
func TestCoalescedReplyLargerThanTheLimit(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/docs", `{"settings":{"number_of_replicas":0}}`)
	var bulk strings.Builder
	for i := range 60 {
		fmt.Fprintf(&bulk, "{\"index\":{\"_id\":\"d%d\"}}\n{\"body\":%q}\n", i, strings.Repeat("x common ", 800))
	}
	a.must(200, "POST", "/docs/_bulk?refresh=true", bulk.String())

	srv, writes := coalescingServer(t, a.srv.Config.Handler)

	body := `{"query":{"match":{"body":"common"}},"size":60}`
	want := a.do("POST", "/docs/_search", body)
	require.Equal(t, 200, want.Status)
	require.Greater(t, len(want.Body), 256<<10, "the reply must exceed the coalescing limit")
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	resp := rawExchange(t, conn, bufio.NewReader(conn), "POST", "/docs/_search", body)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	requireSameReply(t, want.Body, got)
	require.Greater(t, writes.Load(), int64(1))
}

// coalescingServer serves h through CoalescingListener, as the node does,
// counting the writes that reach the sockets.
func coalescingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	writes := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = httpapi.CoalescingListener(countingListener{Listener: srv.Listener, writes: writes})
	srv.Config.ConnContext = httpapi.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, writes
}
