package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/vocab"
)

// refreshFails is the real engine with a Refresh that fails with err.
type refreshFails struct {
	*coord.Coordinator
	err *error
}

func (r refreshFails) Refresh(context.Context, []string) error { return *r.err }

// levels records the level of each "httpapi: request failed" record.
type levels struct {
	mu   sync.Mutex
	seen []slog.Level
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "httpapi: request failed" {
		l.mu.Lock()
		l.seen = append(l.seen, r.Level)
		l.mu.Unlock()
	}
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

func (l *levels) take() []slog.Level {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = nil
	return out
}

// A 503 (a cluster block while the cluster forms, a shard with no copy) is
// a state that passes and is logged as a warning; any other 5xx is the
// node's failure and is logged as an error; a 4xx is the client's and is
// not logged.
func TestFailedRequestsAreLoggedByStatus(t *testing.T) {
	var err error
	eng := refreshFails{Coordinator: openEngine(t, testlog.New(t)), err: &err}
	rec := &levels{}
	api, e := httpapi.New(apiConfig(), eng, slog.New(rec), prometheus.NewRegistry())
	require.NoError(t, e)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		err    error
		status int
		logged []slog.Level
	}{
		{fmt.Errorf("%w: this node has not joined a cluster", vocab.ErrClusterBlocked), http.StatusServiceUnavailable, []slog.Level{slog.LevelWarn}},
		{fmt.Errorf("%w: shard 0 has no active copy", vocab.ErrUnavailable), http.StatusServiceUnavailable, []slog.Level{slog.LevelWarn}},
		{errors.New("disk on fire"), http.StatusInternalServerError, []slog.Level{slog.LevelError}},
		{fmt.Errorf("%w: bad", vocab.ErrInvalidRequest), http.StatusBadRequest, nil},
	} {
		err = tc.err
		resp, e := http.Post(srv.URL+"/_refresh", "application/json", nil)
		require.NoError(t, e)
		_ = resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, "%v", tc.err)
		require.Equal(t, tc.logged, rec.take(), "%v", tc.err)
	}
}
