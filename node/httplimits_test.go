package node_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/node"
)

// The HTTP limits are tested with small configured values; every bound a
// test asserts is many times the configured one, so that a loaded machine
// does not fail them, while a missing guard (no bound at all) does.
const limitBound = 15 * time.Second

// startLoggedNode starts a node whose log is kept in the returned buffer.
func startLoggedNode(t *testing.T, cfg node.Config) (*node.Node, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	n, err := node.New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	return n, logs
}

// trickle sends a bulk request's headers announcing a 1 MB body and the
// body's first bytes at once, then one more byte every gap until the
// connection fails or stop closes. It returns the connection, whose reads
// give the node's reply.
func trickle(t *testing.T, addr, first string, gap time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, limitBound)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = fmt.Fprintf(c, "POST /_bulk HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: 1000000\r\n\r\n%s", addr, first)
	require.NoError(t, err)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(`x`)); err != nil {
					return
				}
			}
		}
	}()
	return c
}

// readCutOff reads the node's reply to a body it cut off: a 408 in the
// Elasticsearch error shape, then the end of the connection, both within
// limitBound.
func readCutOff(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(limitBound)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "no reply to a body that stopped keeping pace")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
	require.True(t, resp.Close, "the reply announces the connection's end")
	var e struct {
		Error struct {
			Type, Reason string
		}
		Status int
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.Equal(t, "request_timeout_exception", e.Error.Type)
	require.Contains(t, e.Error.Reason, "--http-body-timeout")
	require.Equal(t, 408, e.Status)
	_, err = br.ReadByte()
	require.Error(t, err, "the connection stays open after the 408")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection was not closed within %v", limitBound)
}

// getRoot asks GET / with a client that has a timeout, as the other
// clients of a node the slow ones must not starve.
func getRoot(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{Timeout: limitBound, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// TestTricklingBodiesAreCutOff: clients that send a body's bytes far below
// --http-body-min-rate get 408 and lose their connection once the body
// falls behind, logged once each and without the body's content, while
// the node keeps serving the others. (Without the body pacing the node
// waits for the bodies for ever.)
func TestTricklingBodiesAreCutOff(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.HTTPBodyTimeout = 300 * time.Millisecond
	cfg.HTTPBodyMinRate = 1 << 10 // the tricklers send 20 bytes a second
	n, logs := startLoggedNode(t, cfg)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)

	const secret = `{"index":{"_index":"i"}}` + "\n" + `{"password":"hunter2"}`
	conns := make([]net.Conn, 8)
	for i := range conns {
		conns[i] = trickle(t, n.HTTPAddr(), secret, 50*time.Millisecond, stop, &wg)
	}
	require.Equal(t, http.StatusOK, getRoot(t, n.URL()), "the node serves others while bodies trickle in")
	for _, c := range conns {
		readCutOff(t, c)
	}
	require.Equal(t, http.StatusOK, getRoot(t, n.URL()), "the node serves others after cutting the bodies off")
	require.Equal(t, len(conns), strings.Count(logs.String(), "request body arrived too slowly"), "one log line per body cut off:\n%s", logs)
	require.NotContains(t, logs.String(), "hunter2", "the log holds no body content")
}

// TestStalledBodyIsCutOff: a body that arrives fast and then stops is cut
// off --http-body-timeout after its last bytes, although the bytes it sent
// bought it a long time under the rate rule. (Without the stall rule it
// would have 100 s.)
func TestStalledBodyIsCutOff(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.HTTPBodyTimeout = 300 * time.Millisecond
	cfg.HTTPBodyMinRate = 1 << 10
	n, _ := startLoggedNode(t, cfg)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)

	// 100 KiB at once: 100 s of credit at 1 KiB/s; then nothing.
	c := trickle(t, n.HTTPAddr(), strings.Repeat(" ", 100<<10), time.Hour, stop, &wg)
	readCutOff(t, c)
	require.Equal(t, http.StatusOK, getRoot(t, n.URL()))
}

// TestIdleKeepAliveConnectionIsClosed: a keep-alive connection that sends
// no next request is closed after --http-idle-timeout. (Without it the
// node keeps it open for ever.)
func TestIdleKeepAliveConnectionIsClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.HTTPIdleTimeout = 300 * time.Millisecond
	n, _ := startLoggedNode(t, cfg)

	c, err := net.DialTimeout("tcp", n.HTTPAddr(), limitBound)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(limitBound)))
	_, err = fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", n.HTTPAddr())
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "the connection is kept alive after the reply")

	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection was not closed within %v", limitBound)
}

// dialTLS completes a TLS handshake with the node, or fails.
func dialTLS(addr string, cfg *tls.Config) (*tls.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: limitBound}, Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), limitBound)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// served requires that a request on c gets a reply (401: it sends no
// credentials).
func served(t *testing.T, c net.Conn, host string) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(limitBound)))
	_, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// TestConnectionLimitRefusesOverIt: with --http-max-connections N held
// open over HTTPS, the node refuses the next connection at once (its TLS
// handshake fails well within the header timeout), and accepts again once
// one of the N closes. (Without the limit the N+1th is served.)
func TestConnectionLimitRefusesOverIt(t *testing.T) {
	const max = 3
	cfg := secureConfig(t.TempDir())
	cfg.HTTPMaxConnections = max
	cfg.HTTPHeaderTimeout = time.Minute // the held connections stay
	n, logs := startLoggedNode(t, cfg)
	tcfg := &tls.Config{RootCAs: caPool(t, n)}

	held := make([]*tls.Conn, max)
	for i := range held {
		c, err := dialTLS(n.HTTPAddr(), tcfg)
		require.NoError(t, err, "connection %d of %d", i+1, max)
		defer c.Close()
		held[i] = c
	}
	served(t, held[0], n.HTTPAddr())

	start := time.Now()
	c, err := dialTLS(n.HTTPAddr(), tcfg)
	if err == nil {
		c.Close()
	}
	require.Error(t, err, "connection %d was accepted over the limit of %d", max+1, max)
	require.Less(t, time.Since(start), limitBound, "the refusal was not prompt")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "refusing HTTP connections") },
		limitBound, 10*time.Millisecond, "the refusal is logged (after the close the client saw)")

	require.NoError(t, held[0].Close())
	var again *tls.Conn
	require.Eventually(t, func() bool {
		again, err = dialTLS(n.HTTPAddr(), tcfg)
		return err == nil
	}, limitBound, 20*time.Millisecond, "no connection accepted after one of the %d closed", max)
	defer again.Close()
	served(t, again, n.HTTPAddr())
	served(t, held[1], n.HTTPAddr())
}

// TestUnfinishedTLSHandshakeFreesItsPlace: a connection that never starts
// its TLS handshake is closed after --http-header-timeout, so that it
// cannot hold its place under --http-max-connections. (Without the
// handshake's timeout the node keeps it open for ever.)
func TestUnfinishedTLSHandshakeFreesItsPlace(t *testing.T) {
	cfg := secureConfig(t.TempDir())
	cfg.HTTPMaxConnections = 1
	cfg.HTTPHeaderTimeout = 300 * time.Millisecond
	n, _ := startLoggedNode(t, cfg)
	tcfg := &tls.Config{RootCAs: caPool(t, n)}

	silent, err := net.DialTimeout("tcp", n.HTTPAddr(), limitBound)
	require.NoError(t, err)
	defer silent.Close()
	require.NoError(t, silent.SetReadDeadline(time.Now().Add(limitBound)))
	_, err = silent.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the silent connection was not closed within %v", limitBound)

	var c *tls.Conn
	require.Eventually(t, func() bool {
		c, err = dialTLS(n.HTTPAddr(), tcfg)
		return err == nil
	}, limitBound, 20*time.Millisecond, "the silent connection's place was not freed")
	defer c.Close()
	served(t, c, n.HTTPAddr())
}
