package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 6, 7, 8, 9, 10, 123e6, time.UTC)

func fixed() time.Time { return t0 }

func TestLogLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		granted bool
		e       Event
		want    string // "" = nothing written
	}{
		{name: "authentication failed", e: Event{Kind: AuthenticationFailed, User: "bob", RemoteAddress: "127.0.0.1:5000", RequestID: "r1", Method: "GET", Path: "/_search"},
			want: `{"@timestamp":"2025-06-07T08:09:10.123Z","event.type":"rest","event.action":"authentication_failed","user.name":"bob","origin.address":"127.0.0.1:5000","request.id":"r1","request.method":"GET","url.path":"/_search"}`},
		{name: "access denied", e: Event{Kind: AccessDenied, User: "bob", Realm: "native", Action: "indices:data/read/search", Indices: []string{"secret"}, RemoteAddress: "[::1]:1", RequestID: "r2", Reason: "action [x] is unauthorized"},
			want: `{"@timestamp":"2025-06-07T08:09:10.123Z","event.type":"rest","event.action":"access_denied","user.name":"bob","user.realm":"native","action":"indices:data/read/search","indices":["secret"],"origin.address":"[::1]:1","request.id":"r2","reason":"action [x] is unauthorized"}`},
		{name: "api key", e: Event{Kind: AccessDenied, User: "bob", Realm: "_es_api_key", APIKeyID: "k1", Action: "cluster:monitor/health"},
			want: `{"@timestamp":"2025-06-07T08:09:10.123Z","event.type":"rest","event.action":"access_denied","user.name":"bob","user.realm":"_es_api_key","apikey.id":"k1","action":"cluster:monitor/health"}`},
		{name: "granted dropped by default", e: Event{Kind: AccessGranted, User: "bob", Action: "cluster:monitor/health"}},
		{name: "granted when included", granted: true, e: Event{Kind: AccessGranted, User: "bob", Action: "cluster:monitor/health"},
			want: `{"@timestamp":"2025-06-07T08:09:10.123Z","event.type":"rest","event.action":"access_granted","user.name":"bob","action":"cluster:monitor/health"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := New(&buf, Options{IncludeGranted: tc.granted, Now: fixed})
			require.NoError(t, l.Log(tc.e))
			if tc.want == "" {
				require.Empty(t, buf.String())
				return
			}
			require.True(t, strings.HasSuffix(buf.String(), "}\n"))
			require.Equal(t, 1, strings.Count(buf.String(), "\n"))
			require.JSONEq(t, tc.want, buf.String())
		})
	}
}

func TestNilLoggerIsOff(t *testing.T) {
	var l *Logger
	require.False(t, l.Enabled(AccessDenied))
	require.NoError(t, l.Log(Event{Kind: AccessDenied}))
	require.NoError(t, l.Close())
}

func TestOpenAppendsWithPrivateMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.json")
	for i := range 2 {
		l, err := Open(path, Options{Now: fixed})
		require.NoError(t, err)
		require.NoError(t, l.Log(Event{Kind: AuthenticationFailed, User: "u", RequestID: string(rune('a' + i))}))
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "Close is idempotent")
		require.ErrorIs(t, l.Log(Event{Kind: AuthenticationFailed}), ErrClosed)
	}
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(b), "\n"), "the second Open appended")

	_, err = Open(filepath.Join(t.TempDir(), "missing", "audit.json"), Options{})
	require.ErrorContains(t, err, "--audit-log")
}

// TestConcurrentLinesStayWhole writes from many goroutines into a
// bytes.Buffer, which is not safe for concurrent use on its own: the
// Logger's lock must make it so (run with -race), and no line may tear.
func TestConcurrentLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, Options{IncludeGranted: true})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				_ = l.Log(Event{Kind: AccessGranted, User: strings.Repeat("u", g*50+i), Indices: []string{"a", "b"}})
			}
		}()
	}
	wg.Wait()
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		n++
	}
	require.Equal(t, 800, n)
}
