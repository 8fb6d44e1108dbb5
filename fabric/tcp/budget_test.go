package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/internal/bufpool"
)

// logLines is a slog sink a test can search: what the listener logged about
// the peers it disconnected.
type logLines struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return l.b.Write(p)
}

// waitFor waits up to 10 s for a logged line holding every one of parts.
func (l *logLines) waitFor(parts ...string) string {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		lines := strings.Split(l.b.String(), "\n")
		l.mu.Unlock()
		for _, line := range lines {
			found := true
			for _, p := range parts {
				found = found && strings.Contains(line, p)
			}
			if found {
				return line
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.t.Fatalf("no log line with %q within 10 s", parts)
	return ""
}

// budgetConfig is a server config whose warnings go to the returned sink;
// its idle timeout is long, so that only the guards under test disconnect.
func budgetConfig(t *testing.T) (Config, *logLines) {
	lines := &logLines{t: t}
	cfg := testConfig(t)
	cfg.Logger = slog.New(slog.NewTextHandler(lines, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.IdleTimeout = time.Minute
	cfg.BulkSockets, cfg.Lanes = 0, 0
	return cfg, lines
}

// hostile serves m with cfg and dials it with a raw socket that has done
// the handshake (its hello offered by hi): the test speaks the frame format
// itself from there.
func hostile(t *testing.T, cfg Config, m *fabric.Mux, hi hello) (*Transport, net.Conn) {
	t.Helper()
	tr := newTransport(t, cfg)
	l, err := tr.Listen(context.Background(), "127.0.0.1:0", m)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	nc, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	p := hi.encode()
	var hb [headerSize]byte
	putHeader(&hb, typeHello, 0, 0, p, true)
	_, err = nc.Write(append(hb[:], p...))
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, _, err = readFrame(nc, &hb, helloPayload, alloc, nil)
	require.NoError(t, err, "the server's hello")
	return tr, nc
}

// requestHeader is the header of a request frame declaring n payload bytes.
func requestHeader(id uint64, n uint32) []byte {
	var hb [headerSize]byte
	encodeHeader(&hb, typeRequest, mEcho, id, 0, false)
	binary.BigEndian.PutUint32(hb[16:], n)
	return hb[:]
}

// requireHungUp waits up to limit for the server to close nc.
func requireHungUp(t *testing.T, nc net.Conn, limit time.Duration, why string) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(limit)))
	_, err := io.Copy(io.Discard, nc)
	if err != nil {
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server did not hang up within %v: %s", limit, why)
	}
}

func echoMux() *fabric.Mux {
	var m fabric.Mux
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	return &m
}

// A frame declaring more than MaxMessageSize closes the connection at its
// header, before anything is allocated for it, and the listener says who
// and why.
func TestHostileOversizedDeclarationDisconnects(t *testing.T) {
	cfg, lines := budgetConfig(t)
	tr, nc := hostile(t, cfg, echoMux(), hello{maxMessage: 1 << 20, window: 8})
	_, err := nc.Write(requestHeader(1, 0xffffffff))
	require.NoError(t, err)
	_, _ = nc.Write(make([]byte, 1000)) // the start of a trickle
	requireHungUp(t, nc, 10*time.Second, "a 4 GiB declaration")
	lines.waitFor("fabric peer disconnected", nc.LocalAddr().String(), "declares 4294967295 payload bytes, above the limit")
	require.Zero(t, tr.mem.used.Load(), "nothing may be charged for a refused frame")
}

// A peer that declares a large frame within the limits and trickles its
// bytes makes the server hold about what it sent, not what it declared:
// the buffer grows as bytes arrive. Both the transport's budget counter and
// the heap say so.
func TestHostileTrickleDoesNotAllocateDeclaredSize(t *testing.T) {
	cfg, _ := budgetConfig(t)
	const declared = 64 << 20
	tr, nc := hostile(t, cfg, echoMux(), hello{maxMessage: 1 << 20, window: 8})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	_, err := nc.Write(requestHeader(1, declared))
	require.NoError(t, err)
	sent := 0
	trickle := func(n int) {
		_, err := nc.Write(bytes.Repeat([]byte{'t'}, n))
		require.NoError(t, err)
		sent += n
	}
	// A few bytes: the first buffer (for 64 MiB, 256 KiB) is charged.
	trickle(100)
	require.Eventually(t, func() bool { return tr.mem.used.Load() > 0 }, 10*time.Second, time.Millisecond)
	require.LessOrEqual(t, tr.mem.used.Load(), int64(eagerPayload), "held before the frame's bytes came")
	// Past the first buffer: it grows to 16 times what arrived, no more.
	trickle(300 << 10)
	require.Eventually(t, func() bool { return tr.mem.used.Load() > 256<<10 }, 10*time.Second, time.Millisecond)
	held := tr.mem.used.Load()
	require.LessOrEqual(t, held, int64(bufpool.Cap(payloadGrowth*sent)), "held after %d bytes of a %d-byte frame", sent, declared)
	require.Less(t, held, int64(declared/4))

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	require.Less(t, grew, int64(declared/4), "the heap grew by %d bytes for a %d-byte declaration of which %d were sent", grew, declared, sent)

	_ = nc.Close()
	require.Eventually(t, func() bool { return tr.mem.used.Load() == 0 }, 10*time.Second, time.Millisecond,
		"a connection's buffers are given back when it goes")
}

// A peer that stops sending in the middle of a payload, or of a header, is
// disconnected once StallTimeout has passed (IdleTimeout is a minute), and
// the listener says who and why.
func TestStallMidFrameDisconnects(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"in a payload", append(requestHeader(1, 100<<10), make([]byte, 1000)...), "bytes 1000 to"},
		{"in a header", requestHeader(1, 100)[:10], "the last 14 bytes of a frame header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, lines := budgetConfig(t)
			cfg.StallTimeout = 200 * time.Millisecond
			tr, nc := hostile(t, cfg, echoMux(), hello{maxMessage: 1 << 20, window: 8})
			_, err := nc.Write(tc.bytes)
			require.NoError(t, err)
			requireHungUp(t, nc, 10*time.Second, "a stalled frame")
			lines.waitFor("fabric peer disconnected", nc.LocalAddr().String(), "stalled mid-frame", tc.want, "StallTimeout 200ms")
			require.Eventually(t, func() bool { return tr.mem.used.Load() == 0 }, 10*time.Second, time.Millisecond)
		})
	}
}

// A peer slower than StallTimeout between frames is fine: the stall
// deadline covers a frame once begun, never the wait for the next one.
func TestIdleBetweenFramesIsNoStall(t *testing.T) {
	cfg, _ := budgetConfig(t)
	cfg.StallTimeout = 50 * time.Millisecond
	_, c := listenDial(t, cfg, testConfig(t), echoMux())
	for i := range 3 {
		payload := bytes.Repeat([]byte{byte(i)}, 300<<10) // read in steps, armed
		reply, err := c.Call(context.Background(), mEcho, payload)
		require.NoError(t, err)
		require.Equal(t, payload, reply)
		time.Sleep(3 * cfg.StallTimeout)
	}
}

// blocker is a handler (method mBlock) that holds its request until
// released, counting the requests that reached it.
type blocker struct {
	entered atomic.Int32
	release chan struct{}
}

func newBlocker(m *fabric.Mux) *blocker {
	b := &blocker{release: make(chan struct{})}
	m.HandleFunc(mBlock, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		b.entered.Add(1)
		select {
		case <-b.release:
		case <-time.After(time.Minute):
		}
		return []byte("done"), nil
	})
	return b
}

// callAsync runs a Call and delivers its error.
func callAsync(c fabric.Conn, method fabric.Method, n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), method, make([]byte, n))
		done <- err
	}()
	return done
}

// When the transport's InFlightBytes are taken, a connection that needs
// more waits for them (it is not disconnected) and goes on once they free.
func TestBudgetExhaustedBacksPressure(t *testing.T) {
	cfg, _ := budgetConfig(t)
	cfg.MaxMessageSize, cfg.ConnInFlightBytes, cfg.InFlightBytes = 1<<20, 1<<20, 1<<20
	cfg.StallTimeout = time.Minute
	m := echoMux()
	b := newBlocker(m)
	tr := newTransport(t, cfg)
	l, err := tr.Listen(context.Background(), "127.0.0.1:0", m)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	dial := func() fabric.Conn {
		c, err := newTransport(t, testConfig(t)).Dial(context.Background(), l.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, c.Close()) })
		return c
	}
	first := callAsync(dial(), mBlock, 1<<20)
	require.Eventually(t, func() bool { return b.entered.Load() == 1 }, 10*time.Second, time.Millisecond)
	require.EqualValues(t, 1<<20, tr.mem.used.Load())

	second := callAsync(dial(), mBlock, 512<<10)
	time.Sleep(100 * time.Millisecond)
	require.EqualValues(t, 1, b.entered.Load(), "the second request must wait for buffer memory")
	close(b.release)
	require.NoError(t, <-first)
	require.NoError(t, <-second, "a peer that waited for budget is served, not disconnected")
	require.Eventually(t, func() bool { return tr.mem.used.Load() == 0 }, 10*time.Second, time.Millisecond)
}

// A wait for InFlightBytes is bounded by StallTimeout: then that connection
// is closed and logged, and its call fails with fabric.ErrClosed.
func TestBudgetWaitBoundedByStallTimeout(t *testing.T) {
	cfg, lines := budgetConfig(t)
	cfg.MaxMessageSize, cfg.ConnInFlightBytes, cfg.InFlightBytes = 1<<20, 1<<20, 1<<20
	cfg.StallTimeout = 200 * time.Millisecond
	m := echoMux()
	b := newBlocker(m)
	defer close(b.release)
	tr := newTransport(t, cfg)
	l, err := tr.Listen(context.Background(), "127.0.0.1:0", m)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	first, err := newTransport(t, testConfig(t)).Dial(context.Background(), l.Addr())
	require.NoError(t, err)
	defer first.Close()
	firstDone := callAsync(first, mBlock, 1<<20)
	require.Eventually(t, func() bool { return b.entered.Load() == 1 }, 10*time.Second, time.Millisecond)

	second, err := newTransport(t, testConfig(t)).Dial(context.Background(), l.Addr())
	require.NoError(t, err)
	defer second.Close()
	err = <-callAsync(second, mEcho, 512<<10)
	require.ErrorIs(t, err, fabric.ErrClosed)
	lines.waitFor("fabric peer disconnected", "in-flight byte budget exhausted", "InFlightBytes 1048576")
	b.release <- struct{}{}
	require.NoError(t, <-firstDone, "the connection holding the budget is not the one closed")
}

// A connection's requests hold at most ConnInFlightBytes (declared sizes):
// the next one is not read until an earlier one's handler has returned.
func TestConnBudgetBacksPressure(t *testing.T) {
	cfg, _ := budgetConfig(t)
	cfg.MaxMessageSize, cfg.ConnInFlightBytes = 1<<20, 1<<20
	m := echoMux()
	b := newBlocker(m)
	ccfg := testConfig(t)
	ccfg.Lanes, ccfg.BulkSockets = 0, 0 // both calls on one socket
	_, c := listenDial(t, cfg, ccfg, m)
	first := callAsync(c, mBlock, 600<<10)
	second := callAsync(c, mBlock, 600<<10)
	require.Eventually(t, func() bool { return b.entered.Load() == 1 }, 10*time.Second, time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.EqualValues(t, 1, b.entered.Load(), "1200 KiB of requests on a connection allowed 1 MiB")
	close(b.release)
	require.NoError(t, <-first)
	require.NoError(t, <-second)
}

// decodeHello refuses every field out of range, naming it.
func TestHelloFieldsRangeChecked(t *testing.T) {
	valid := hello{maxMessage: 1 << 20, window: 8, wantCRC: true}.encode()
	with := func(edit func(p []byte)) []byte {
		p := bytes.Clone(valid)
		edit(p)
		return p
	}
	tests := []struct {
		name string
		p    []byte
		want string
	}{
		{"valid", valid, ""},
		{"largest allowed", hello{maxMessage: fabric.MaxMessageSize, window: helloMaxWindow}.encode(), ""},
		{"all 0xFF", bytes.Repeat([]byte{0xff}, helloPayload), "max message of 4294967295 bytes, outside [1, 268435456]"},
		{"zero max message", with(func(p []byte) { binary.BigEndian.PutUint32(p, 0) }), "max message of 0 bytes"},
		{"max message above the contract", with(func(p []byte) { binary.BigEndian.PutUint32(p, fabric.MaxMessageSize+1) }), "outside [1, 268435456]"},
		{"zero window", with(func(p []byte) { binary.BigEndian.PutUint32(p[4:], 0) }), "window of 0 calls"},
		{"window above the bound", with(func(p []byte) { binary.BigEndian.PutUint32(p[4:], helloMaxWindow+1) }), "window of 65537 calls, outside [1, 65536]"},
		{"unknown option bit", with(func(p []byte) { p[8] = 0x81 }), "options byte 0x81 has unknown bits"},
		{"reserved byte set", with(func(p []byte) { p[11] = 1 }), "reserved bytes are 0x000001"},
		{"short", valid[:11], "hello of 11 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeHello(tc.p)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrProtocol)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A client whose hello is all 0xFF is refused during the handshake: the
// server answers with no hello, hangs up and says who and why.
func TestAllFFHelloRefused(t *testing.T) {
	cfg, lines := budgetConfig(t)
	l, err := newTransport(t, cfg).Listen(context.Background(), "127.0.0.1:0", echoMux())
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	nc, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	defer nc.Close()
	p := bytes.Repeat([]byte{0xff}, helloPayload)
	var hb [headerSize]byte
	putHeader(&hb, typeHello, 0, 0, p, true)
	_, err = nc.Write(append(hb[:], p...))
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(nc)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server must hang up on an out-of-range hello")
	require.Empty(t, got, "no hello may answer an out-of-range one")
	lines.waitFor("fabric handshake failed", nc.LocalAddr().String(), "max message of 4294967295 bytes")
}

// A hello's header must carry method 0 and id 0 like any this build sends.
func TestHelloHeaderFieldsChecked(t *testing.T) {
	cfg, lines := budgetConfig(t)
	l, err := newTransport(t, cfg).Listen(context.Background(), "127.0.0.1:0", echoMux())
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	nc, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	defer nc.Close()
	p := hello{maxMessage: 1 << 20, window: 8}.encode()
	var hb [headerSize]byte
	putHeader(&hb, typeHello, 0xffff, 0xffffffffffffffff, p, true)
	_, err = nc.Write(append(hb[:], p...))
	require.NoError(t, err)
	requireHungUp(t, nc, 10*time.Second, "a hello with method and id set")
	lines.waitFor("fabric handshake failed", "hello with method 65535 and id 18446744073709551615")
}

// fuzzStream is a peer's stream for FuzzBodyReader: data delivered in
// pieces whose sizes come from cuts, with nothing more after stallAt bytes
// but a read deadline error, as a socket whose peer stalled gives.
type fuzzStream struct {
	data    []byte
	cuts    []byte
	pos, i  int
	stallAt int
}

func (s *fuzzStream) piece() int {
	n := len(s.data) - s.pos
	if len(s.cuts) > 0 {
		n = min(n, 1+int(s.cuts[s.i%len(s.cuts)])*7)
	}
	return min(n, s.stallAt-s.pos)
}

func (s *fuzzStream) Buffered() int { return max(s.piece(), 0) }

func (s *fuzzStream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.pos >= len(s.data) {
		return 0, io.EOF
	}
	if s.pos >= s.stallAt {
		return 0, fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	}
	n := min(len(p), s.piece())
	copy(p, s.data[s.pos:s.pos+n])
	s.pos += n
	s.i++
	return n, nil
}

// bodyInput is FuzzBodyReader's input: the declared size (4 bytes, up to
// 64 MiB), where the stream stalls (2 bytes, 0xffff: never), how many
// piece sizes follow (1 byte), the piece sizes, then the stream's bytes.
func bodyInput(declared uint32, stallAt uint16, cuts, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, declared)
	b = binary.BigEndian.AppendUint16(b, stallAt)
	b = append(b, byte(len(cuts)))
	return append(append(b, cuts...), data...)
}

// fuzzEager stands for eagerPayload in FuzzBodyReader, so that inputs of a
// few KiB grow their buffer several times.
const fuzzEager = 64

// FuzzBodyReader reads payloads of arbitrary declared sizes (up to 64 MiB)
// from streams cut anywhere, which may stall. Whatever the input: a
// payload read whole equals the bytes sent; every buffer charged is at most
// payloadGrowth times the bytes that had arrived, or the first buffer
// (eager bytes at most), never the declared size up front; a stall is reported
// as errStalled, and an error leaves nothing charged nor the deadline
// armed.
func FuzzBodyReader(f *testing.F) {
	f.Add(bodyInput(100, 0xffff, nil, []byte("short")))
	f.Add(bodyInput(5, 0xffff, []byte{0, 1}, []byte("exact")))
	f.Add(bodyInput(64<<20, 0xffff, []byte{3, 9}, bytes.Repeat([]byte{1}, 500)))
	f.Add(bodyInput(3000, 1500, []byte{7}, bytes.Repeat([]byte{2}, 3000)))
	f.Add(bodyInput(1025, 0xffff, []byte{0, 2}, bytes.Repeat([]byte{3}, 1025)))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 7 || len(in) < 7+int(in[6]) {
			return
		}
		n := int(binary.BigEndian.Uint32(in)%(64<<20)) + 1
		stallAt := int(binary.BigEndian.Uint16(in[4:]))
		if stallAt == 0xffff {
			stallAt = math.MaxInt
		}
		cuts, data := in[7:7+int(in[6])], in[7+int(in[6]):]
		s := &fuzzStream{data: data, cuts: cuts, stallAt: stallAt}
		var charged int64
		armed := false
		b := bodyReader{
			charge: func(c int) error {
				if limit := bufpool.Cap(max(firstBuffer(n, fuzzEager), payloadGrowth*s.pos)); c > limit {
					t.Fatalf("charged %d bytes with %d of %d arrived; at most %d", c, s.pos, n, limit)
				}
				charged += int64(c)
				return nil
			},
			refund:   func(c int) { charged -= int64(c) },
			arm:      func() error { armed = true; return nil },
			disarm:   func() error { armed = false; return nil },
			progress: func(int) {},
			stall:    time.Second,
			eager:    fuzzEager,
		}
		bp, err := b.read(s, n)
		if armed {
			t.Fatal("left the stall deadline armed")
		}
		if err != nil {
			if charged != 0 {
				t.Fatalf("%d bytes still charged after %v", charged, err)
			}
			stalled := s.pos >= s.stallAt && s.pos < len(data)
			if stalled != errors.Is(err, errStalled) {
				t.Fatalf("stalled %v at %d of %d, but the error is %v", stalled, s.pos, len(data), err)
			}
			if !stalled && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("a short stream gave %v, want io.ErrUnexpectedEOF", err)
			}
			return
		}
		if !bytes.Equal(*bp, data[:n]) {
			t.Fatalf("read %d bytes that differ from those sent", n)
		}
		if charged != int64(cap(*bp)) {
			t.Fatalf("%d bytes charged for a buffer of %d", charged, cap(*bp))
		}
		bufpool.Put(bp)
	})
}

// peakCharge is what a frame's growing buffer holds at most: for 256 MiB,
// the 16 MiB buffer and the 256 MiB one it grows into; a frame read into
// one buffer holds just that, rounded to its size class.
func TestPeakCharge(t *testing.T) {
	require.Equal(t, 256<<20+16<<20, peakCharge(256<<20))
	require.Equal(t, 1<<20, peakCharge(1<<20))
	require.Equal(t, 1024, peakCharge(1000))
}
