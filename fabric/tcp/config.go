package tcp

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// Config tunes the TCP transport. Build it with DefaultConfig and change
// what you need; New calls Validate.
type Config struct {
	// MaxMessageSize is the largest payload this side accepts in one frame
	// (requests when serving, replies when calling). Peers learn it in the
	// handshake; a larger Call fails with fabric.ErrTooLarge before sending.
	MaxMessageSize int
	// MaxInFlight is the per-connection window: calls and one-way messages
	// sent but not yet finished by the peer. The smaller of the two sides'
	// values applies. A full window blocks Call and Send (honouring ctx).
	MaxInFlight int
	// KeepaliveInterval is how often an idle connection sends a ping.
	KeepaliveInterval time.Duration
	// IdleTimeout declares the peer dead when nothing (frames or pings)
	// arrived for this long, as seen at the keepalive's ticks (so up to one
	// KeepaliveInterval later): in-flight calls fail with fabric.ErrClosed.
	// It must exceed KeepaliveInterval.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the TLS and protocol handshake of an accepted
	// connection (Dial uses its ctx).
	HandshakeTimeout time.Duration
	// DrainTimeout bounds how long Listener.Close waits for handlers.
	DrainTimeout time.Duration
	// ConnInFlightBytes bounds the request payload bytes one accepted
	// connection (socket) holds: requests being read and requests whose
	// handler has not returned or still borrows the payload
	// (fabric.Lender). A request's declared size is reserved against it
	// before any of its payload is read; while it does not fit, the
	// connection stops reading until its own handlers free enough
	// (back-pressure on that peer alone, through TCP flow control, as the
	// MaxInFlight window does), so a client may pipeline as much as it
	// likes without this side holding more. It must be at least
	// MaxMessageSize, so that every frame a peer is allowed to send fits;
	// a frame declaring more than MaxMessageSize closes the connection
	// (logged as a warning naming the peer). DefaultConfig: 256 MiB.
	ConnInFlightBytes int
	// InFlightBytes bounds the memory that the request buffers of all the
	// connections accepted by this transport's listeners hold together:
	// the node-wide budget. Buffers are charged before they are taken,
	// and a payload above 1 MiB is read into buffers that grow (by 16×) as
	// its bytes arrive, so a peer that declares a large frame and sends
	// little of it costs little: at most 16 times what it sent, or 1 MiB.
	// When the budget is exhausted, the connection that needs more stops
	// reading until other requests free memory, rather than being
	// disconnected: its peer is most likely honest, just unlucky to come
	// when the node is busy, and TCP flow control slows it down at no cost.
	// That wait is bounded by StallTimeout, after which the connection is
	// closed and logged, so that connections each holding part of a frame
	// cannot wait for each other forever. It must be at least what one
	// frame of MaxMessageSize holds at its peak, while its last growth
	// copies: MaxMessageSize rounded up to a power of two, plus a 16th of
	// that (272 MiB for 256 MiB). DefaultConfig: 1 GiB.
	InFlightBytes int
	// StallTimeout bounds how long a peer that has begun a frame may leave
	// it unfinished: the rest of a header once its first byte is in, and
	// each step of up to 1 MiB of a payload, must arrive within it, else
	// the connection is closed and logged as a warning naming the peer. A
	// peer must therefore send a large payload at 1 MiB per StallTimeout at
	// least (100 KiB/s with the default), and cannot hold buffers by
	// trickling bytes. It also bounds a wait for InFlightBytes (see
	// there). Accepted connections only: a client is served by peers it
	// chose, and keeps IdleTimeout. DefaultConfig: 10 s.
	StallTimeout time.Duration
	// Checksum adds a CRC32C to every frame this side sends and asks the
	// peer to do the same. Off by default: TCP and TLS already check, and
	// it costs about a memory pass per payload.
	Checksum bool
	// BulkSockets is how many extra sockets a client connection may open to
	// its peer for bulk calls: a Call whose request payload is at least
	// BulkThreshold bytes goes on the extra socket with the fewest calls in
	// flight, so that large transfers run side by side through the kernel
	// (on a loopback or LAN link one TCP stream, one reader and one writer
	// per direction leave CPU idle that 16 parallel streams use), and small
	// calls do not queue behind them. The first bulk call starts opening
	// them, one after another in the background; until the first is up,
	// bulk calls use the first socket. A bulk Call made while a Send awaits
	// its handler uses the first socket, which keeps Send's ordering. Each
	// socket has its own in-flight window; the failure of any socket fails
	// the connection. 0 keeps bulk calls with the others (see Lanes).
	// DefaultConfig sets one per processor (GOMAXPROCS, at most 16), and
	// at least 4.
	BulkSockets int
	// BulkThreshold is the request size from which a Call is bulk.
	BulkThreshold int
	// Lanes is how many sockets a client connection may use for calls
	// below BulkThreshold, the first one included: each such call goes to
	// the one with the fewest calls in flight, and when even that one is
	// busy another is opened in the background, up to Lanes. Concurrent
	// calls then run side by side, each socket with its own reader and
	// writer at both ends, instead of queueing for the one socket's; a lone
	// call on a socket is read by its caller and served on the server's
	// reader goroutine, with no goroutine hand-off. Sends, and any Call made
	// while a Send awaits its handler, use the first socket. Each socket has
	// its own in-flight window; the failure of any fails the connection.
	// 0 or 1 keeps these calls on one socket. DefaultConfig sets one per
	// processor the process may use (GOMAXPROCS), at most 16.
	Lanes int
	// SocketBuffer sets SO_SNDBUF and SO_RCVBUF when positive; 0 leaves the
	// kernel's autotuning, which is what fills loopback and LAN links best.
	SocketBuffer int
	// ServerTLS, when set, makes Listen serve TLS; ClientTLS makes Dial use
	// TLS (an empty ServerName is taken from the dialled host). Leave
	// CurvePreferences empty to keep Go's default key exchange, the
	// post-quantum hybrid X25519MLKEM768.
	ServerTLS, ClientTLS *tls.Config
	// TLSServerName, when set, names the server Dial expects at addr (the
	// address given to Dial, also when it opens lanes): Dial sets it as
	// the ServerName of a clone of ClientTLS, so the server's certificate
	// must carry that name. Used with a node name and a cluster CA whose
	// certificates name their node (security/certs), it makes a dial of
	// node X fail during the TLS handshake unless the server proves to be
	// X. An empty result, or a ClientTLS with ServerName set, keeps the
	// rules above.
	TLSServerName func(addr string) string
	// PeerIdentity, when set, is called on the server with the TLS state of
	// every accepted connection once its TLS handshake has completed, and
	// before the protocol handshake: an error closes the connection, so no
	// request of it reaches the handler; otherwise the returned name is the
	// peer's identity, and the connection's requests carry
	// fabric.Request.Peer "NAME@HOST:PORT". It requires ServerTLS, which
	// should require and verify client certificates (security/certs's
	// ServerConfig and PeerNode fit together).
	PeerIdentity func(tls.ConnectionState) (string, error)
	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns production settings.
func DefaultConfig() Config {
	return Config{
		MaxMessageSize:    fabric.MaxMessageSize,
		MaxInFlight:       512,
		KeepaliveInterval: 5 * time.Second,
		IdleTimeout:       20 * time.Second,
		HandshakeTimeout:  10 * time.Second,
		DrainTimeout:      10 * time.Second,
		ConnInFlightBytes: fabric.MaxMessageSize,
		InFlightBytes:     1 << 30,
		StallTimeout:      10 * time.Second,
		BulkSockets:       max(4, perProcessor()),
		BulkThreshold:     4 << 10,
		Lanes:             perProcessor(),
	}
}

// perProcessor is one socket per processor the process may use
// (GOMAXPROCS), at most 16: the unit of DefaultConfig's Lanes and
// BulkSockets. A socket is read by one goroutine at a time at each end and
// its writes are serialised, so with fewer sockets than processors
// concurrent calls queue for a socket while processors idle; with more,
// calls that could share a system call no longer do. On the 2-vCPU
// machine the benchmarks ran on, 2 lanes gave the best round trips with
// 16 and 64 calls of 64 B–1 KiB in flight, 1, 4 and 16 worse
// (BenchmarkLanesRatioToRaw); the cap of 16 is the largest machine the
// figures were wanted for, and keeps the sockets per peer bounded.
func perProcessor() int { return min(runtime.GOMAXPROCS(0), 16) }

// Validate reports the first field out of bounds, naming it and the bound.
func (c Config) Validate() error {
	switch {
	case c.MaxMessageSize < 1 || c.MaxMessageSize > fabric.MaxMessageSize:
		return fmt.Errorf("tcp: Config.MaxMessageSize %d is outside [1, %d]", c.MaxMessageSize, fabric.MaxMessageSize)
	case c.MaxInFlight < 1 || c.MaxInFlight > helloMaxWindow:
		return fmt.Errorf("tcp: Config.MaxInFlight %d is outside [1, %d]", c.MaxInFlight, helloMaxWindow)
	case c.KeepaliveInterval < time.Millisecond:
		return fmt.Errorf("tcp: Config.KeepaliveInterval %v is below 1ms", c.KeepaliveInterval)
	case c.IdleTimeout <= c.KeepaliveInterval:
		return fmt.Errorf("tcp: Config.IdleTimeout %v must exceed KeepaliveInterval %v", c.IdleTimeout, c.KeepaliveInterval)
	case c.HandshakeTimeout <= 0:
		return fmt.Errorf("tcp: Config.HandshakeTimeout %v must be positive", c.HandshakeTimeout)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("tcp: Config.DrainTimeout %v must be positive", c.DrainTimeout)
	case c.ConnInFlightBytes < c.MaxMessageSize:
		return fmt.Errorf("tcp: Config.ConnInFlightBytes %d is below MaxMessageSize %d; every frame a peer may send must fit", c.ConnInFlightBytes, c.MaxMessageSize)
	case c.InFlightBytes < peakCharge(c.MaxMessageSize):
		return fmt.Errorf("tcp: Config.InFlightBytes %d is below %d, what reading one frame of MaxMessageSize %d holds at its peak; every frame a peer may send must fit",
			c.InFlightBytes, peakCharge(c.MaxMessageSize), c.MaxMessageSize)
	case c.StallTimeout <= 0:
		return fmt.Errorf("tcp: Config.StallTimeout %v must be positive", c.StallTimeout)
	case c.BulkSockets < 0 || c.BulkSockets > 64:
		return fmt.Errorf("tcp: Config.BulkSockets %d is outside [0, 64]", c.BulkSockets)
	case c.BulkSockets > 0 && c.BulkThreshold < 1:
		return fmt.Errorf("tcp: Config.BulkThreshold %d must be positive when BulkSockets is %d", c.BulkThreshold, c.BulkSockets)
	case c.Lanes < 0 || c.Lanes > 64:
		return fmt.Errorf("tcp: Config.Lanes %d is outside [0, 64]", c.Lanes)
	case c.SocketBuffer < 0:
		return fmt.Errorf("tcp: Config.SocketBuffer %d must be 0 (kernel autotuning) or positive", c.SocketBuffer)
	case c.ServerTLS != nil && len(c.ServerTLS.Certificates) == 0 && c.ServerTLS.GetCertificate == nil && c.ServerTLS.GetConfigForClient == nil:
		return fmt.Errorf("tcp: Config.ServerTLS has no certificate; set Certificates or GetCertificate")
	case c.PeerIdentity != nil && c.ServerTLS == nil:
		return fmt.Errorf("tcp: Config.PeerIdentity is set but ServerTLS is nil; peers can only be identified over TLS")
	}
	return nil
}
