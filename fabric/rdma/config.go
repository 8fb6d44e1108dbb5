package rdma

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// headerSize is the size of the header in front of every message on the QP.
const headerSize = 40

// Config sets up a Transport. Zero fields are not defaulted: start from
// DefaultConfig or TestConfig and change what you need; New calls Validate.
type Config struct {
	// Device is the verbs device name (e.g. "mlx5_0", "rxe0"); empty picks
	// the first device that has an active port.
	Device string
	// Port is the device port, counted from 1.
	Port int
	// GIDIndex picks the source GID; -1 chooses the first RoCE v2 GID that
	// is IPv4-mapped, preferring the one whose address is the listen or dial
	// source address.
	GIDIndex int
	// EagerSize is the size of one eager buffer (receive and send slot),
	// header included. Payloads that do not fit go by rendezvous.
	EagerSize int
	// RecvBuffers is the number of eager buffers posted to the shared
	// receive queue; it bounds the connections (RecvBuffers / (Credits +
	// creditReserve)).
	RecvBuffers int
	// Credits is the number of eager messages a peer may have outstanding
	// towards this side of one connection.
	Credits int
	// SendQueueDepth is the number of send work requests (and send ring
	// slots) per connection.
	SendQueueDepth int
	// MaxInline is the inline data size asked of each QP; the QP's reported
	// capability is what is used.
	MaxInline int
	// RendezvousThreshold: payloads of at least this many bytes go by
	// rendezvous (RDMA READ by the receiver). It must not exceed
	// EagerSize - headerSize.
	RendezvousThreshold int
	// RendezvousMode is how a large message moves: "write" (the receiver
	// allocates a registered region and the sender RDMA WRITEs into it, then
	// SENDs a done message) or "read" (the sender exposes its copy and the
	// receiver RDMA READs it). Either side accepts both.
	RendezvousMode string
	// ReadChunk is the size of one RDMA READ or WRITE of a rendezvous
	// (capped by the port's largest message), and ReadsInFlight how many of
	// them one transfer keeps outstanding. Soft-RoCE drops READ responses when many
	// large READs are outstanding (16 MiB as 16 × 1 MiB READs took 7 s,
	// against 0.05 s per lone 1 MiB READ, under QEMU TCG), so the default
	// pipeline is short.
	ReadChunk     int
	ReadsInFlight int
	// RendezvousCacheBytes bounds the registered rendezvous regions kept per
	// connection for reuse; regions beyond it are deregistered after use.
	RendezvousCacheBytes int
	// MaxMessageSize is the largest payload accepted in one message, at
	// most fabric.MaxMessageSize; larger Calls and Sends fail with
	// fabric.ErrTooLarge, and a peer that announces more is cut off.
	MaxMessageSize int
	// MaxInFlight is the per-connection window: calls and one-way messages
	// sent whose handler has not yet finished at the peer. Call and Send
	// block (until their context ends) while it is full.
	MaxInFlight int
	// SpinTime is how long the poller keeps polling the completion queue
	// after the last completion before it sleeps on the completion channel:
	// a wall-clock bound, so the poller spins as long on a NIC as under an
	// emulator, whatever one poll costs there. 0 sleeps at once.
	SpinTime time.Duration
	// HandshakeTimeout bounds the TCP control handshake when the caller's
	// context has no earlier deadline.
	HandshakeTimeout time.Duration
	// LastWQETimeout bounds how long the QP of a closed connection waits
	// for IBV_EVENT_QP_LAST_WQE_REACHED (the device takes no more receive
	// buffers for it) before it is destroyed anyway, with a warning:
	// receive buffers the QP took may then be lost to the shared receive
	// queue. Some devices never raise the event (rxe on Linux 6.1). The
	// connection's Close does not wait for it.
	LastWQETimeout time.Duration
	// Timeout and RetryCount are the QP's transport timer exponent
	// (4.096 µs × 2^Timeout) and retry count; a peer that vanishes is
	// detected after about RetryCount × that time (or at once when its
	// control connection ends).
	Timeout    int
	RetryCount int
	// DisableMemoryWindows makes the transport expose rendezvous regions
	// with their memory-region keys even where the device has type-2 memory
	// windows (see KeyScopeRegion); for comparison and for devices whose
	// windows misbehave. By default windows are used where the device has them.
	DisableMemoryWindows bool
	// TLS, when set, runs the TCP control connection (the exchange of QP
	// numbers, PSNs, GIDs and MTU) over crypto/tls: Listen serves it with
	// tls.Server and this config, Dial uses tls.Client with the same config
	// (an empty ServerName is taken from the dialled host). One config
	// serves both roles, so it carries the node's certificate (Certificates
	// or GetCertificate), the CAs it trusts for servers (RootCAs) and, with
	// ClientAuth set to tls.RequireAndVerifyClientCert and ClientCAs, for
	// clients: then both ends are authenticated before any QP is created on
	// the listening side. A transport that only dials may leave out its
	// certificate when servers do not ask for one; Listen refuses a TLS
	// config without one. Leave CurvePreferences unset so Go's default
	// hybrid key exchange (X25519MLKEM768) stays on. Nil means a plaintext,
	// unauthenticated control connection: for trusted networks only. The
	// RDMA traffic itself (RoCE) is never encrypted; see docs/rdma.md.
	TLS *tls.Config
}

// DefaultConfig is for production nodes.
func DefaultConfig() Config {
	return Config{
		Port:                 1,
		GIDIndex:             -1,
		EagerSize:            8192,
		RecvBuffers:          2048,
		Credits:              32,
		SendQueueDepth:       128,
		MaxInline:            256,
		RendezvousThreshold:  8192 - headerSize,
		RendezvousMode:       "write",
		ReadChunk:            1 << 20,
		ReadsInFlight:        2,
		RendezvousCacheBytes: 64 << 20,
		MaxMessageSize:       fabric.MaxMessageSize,
		MaxInFlight:          256,
		SpinTime:             50 * time.Microsecond,
		HandshakeTimeout:     10 * time.Second,
		LastWQETimeout:       10 * time.Second,
		Timeout:              14,
		RetryCount:           7,
	}
}

// TestConfig is small and quick to give up on a dead peer, for tests.
func TestConfig() Config {
	c := DefaultConfig()
	c.RecvBuffers = 256
	c.Credits = 16
	c.SendQueueDepth = 64
	c.MaxInFlight = 64
	c.RendezvousCacheBytes = 16 << 20
	c.SpinTime = 20 * time.Microsecond
	c.Timeout = 12
	c.RetryCount = 3
	return c
}

// creditReserve is the number of receive buffers per connection, beyond its
// credits, kept for credit-return messages (which consume no credit).
const creditReserve = 4

// Validate names the first field that is out of bounds.
func (c Config) Validate() error {
	switch {
	case c.Port < 1 || c.Port > 255:
		return fmt.Errorf("rdma: config Port %d out of range [1,255]", c.Port)
	case c.GIDIndex < -1 || c.GIDIndex > 65535:
		return fmt.Errorf("rdma: config GIDIndex %d out of range [-1,65535]", c.GIDIndex)
	case c.EagerSize < 256 || c.EagerSize > 1<<20:
		return fmt.Errorf("rdma: config EagerSize %d out of range [256,1MiB]", c.EagerSize)
	case c.Credits < 2 || c.Credits > 4096:
		return fmt.Errorf("rdma: config Credits %d out of range [2,4096]", c.Credits)
	case c.RecvBuffers < c.Credits+creditReserve:
		return fmt.Errorf("rdma: config RecvBuffers %d is below Credits+%d = %d, room for no connection", c.RecvBuffers, creditReserve, c.Credits+creditReserve)
	case c.SendQueueDepth < 8 || c.SendQueueDepth > 16384 || c.SendQueueDepth&(c.SendQueueDepth-1) != 0:
		return fmt.Errorf("rdma: config SendQueueDepth %d must be a power of two in [8,16384]", c.SendQueueDepth)
	case c.MaxInline < 0 || c.MaxInline > 4096:
		return fmt.Errorf("rdma: config MaxInline %d out of range [0,4096]", c.MaxInline)
	case c.RendezvousThreshold < 1 || c.RendezvousThreshold > c.EagerSize-headerSize:
		return fmt.Errorf("rdma: config RendezvousThreshold %d out of range [1,EagerSize-%d=%d]", c.RendezvousThreshold, headerSize, c.EagerSize-headerSize)
	case c.RendezvousMode != "write" && c.RendezvousMode != "read":
		return fmt.Errorf("rdma: config RendezvousMode %q must be \"write\" or \"read\"", c.RendezvousMode)
	case c.ReadChunk < 4096 || c.ReadChunk > 1<<30:
		return fmt.Errorf("rdma: config ReadChunk %d out of range [4096,1GiB]", c.ReadChunk)
	case c.ReadsInFlight < 1 || c.ReadsInFlight > c.SendQueueDepth/2:
		return fmt.Errorf("rdma: config ReadsInFlight %d out of range [1,SendQueueDepth/2=%d]", c.ReadsInFlight, c.SendQueueDepth/2)
	case c.RendezvousCacheBytes < 0:
		return fmt.Errorf("rdma: config RendezvousCacheBytes %d is negative", c.RendezvousCacheBytes)
	case c.MaxMessageSize < 1 || c.MaxMessageSize > fabric.MaxMessageSize:
		return fmt.Errorf("rdma: config MaxMessageSize %d out of range [1,%d]", c.MaxMessageSize, fabric.MaxMessageSize)
	case c.MaxInFlight < 1 || c.MaxInFlight > 1<<16:
		return fmt.Errorf("rdma: config MaxInFlight %d out of range [1,65536]", c.MaxInFlight)
	case c.SpinTime < 0 || c.SpinTime > time.Second:
		return fmt.Errorf("rdma: config SpinTime %v out of range [0,1s]", c.SpinTime)
	case c.HandshakeTimeout <= 0:
		return fmt.Errorf("rdma: config HandshakeTimeout %v must be positive", c.HandshakeTimeout)
	case c.LastWQETimeout <= 0 || c.LastWQETimeout > 5*time.Minute:
		return fmt.Errorf("rdma: config LastWQETimeout %v out of range (0,5m]", c.LastWQETimeout)
	case c.Timeout < 1 || c.Timeout > 31:
		return fmt.Errorf("rdma: config Timeout %d out of range [1,31]", c.Timeout)
	case c.RetryCount < 0 || c.RetryCount > 7:
		return fmt.Errorf("rdma: config RetryCount %d out of range [0,7]", c.RetryCount)
	}
	return nil
}

// ErrPortDown is wrapped by the errors of Dial (and of connections refused
// by a listener) while the transport's port is down, as the device reported
// with an asynchronous event; it clears when the port is ACTIVE again.
var ErrPortDown = errors.New("rdma: port down")

// ErrDeviceLost is wrapped by the errors of Dial (and of connections
// refused by a listener) while the transport rebuilds itself after losing
// its device (IBV_EVENT_DEVICE_FATAL, CQ_ERR or SRQ_ERR, or the device's
// removal); it clears when the device is back and the transport runs on a
// fresh context (TransportInfo.Rebuilds counts those).
var ErrDeviceLost = errors.New("rdma: device lost")

// TransportInfo describes a Transport as a whole, for diagnostics.
type TransportInfo struct {
	Device    string `json:"device"`
	Port      int    `json:"port"`
	PortState string `json:"port_state"` // from ibv_query_port now
	GIDIndex  int    `json:"gid_index"`
	// KeyScope is KeyScopeWindow or KeyScopeRegion (see ConnInfo).
	KeyScope string `json:"key_scope"`
	// Refusing says why new connections are refused (the port is down, or
	// the device was lost and the transport is being rebuilt); empty while
	// they are accepted.
	Refusing string `json:"refusing,omitempty"`
	// AsyncEvents counts the device's asynchronous events;
	// ConnsFailedByEvents the connections they failed.
	AsyncEvents         uint64 `json:"async_events"`
	ConnsFailedByEvents uint64 `json:"conns_failed_by_events"`
	LastAsyncEvent      string `json:"last_async_event,omitempty"`
	// QPsAwaitingLastWQE counts closed connections' QPs waiting for
	// IBV_EVENT_QP_LAST_WQE_REACHED before they are destroyed;
	// LastWQETimeouts those destroyed after Config.LastWQETimeout without it.
	QPsAwaitingLastWQE int    `json:"qps_awaiting_last_wqe"`
	LastWQETimeouts    uint64 `json:"last_wqe_timeouts"`
	// Rebuilds counts the times the transport reopened its device after
	// losing it; LastRebuild says when, why and how long it took.
	Rebuilds    uint64 `json:"rebuilds"`
	LastRebuild string `json:"last_rebuild,omitempty"`
}

// How the keys of rendezvous regions that a peer may reach are scoped
// (ConnInfo.KeyScope, TransportInfo.KeyScope).
const (
	// KeyScopeWindow: each transfer binds a type-2 memory window over the
	// region on the connection's own QP and sends the window's key; the key
	// works only on that QP, only over the bytes of that transfer, and only
	// until the transfer ends (the window is invalidated then) or the
	// connection closes (the window is deallocated). The region's own
	// memory-region key carries no remote rights.
	KeyScopeWindow = "mw2-qp"
	// KeyScopeRegion: the device has no type-2 memory windows (or
	// Config.DisableMemoryWindows is set): the region is registered with
	// the remote right it needs and its memory-region key is sent; it is
	// valid on every QP of the transport's protection domain until the
	// region is deregistered (at the end of the transfer, or when the
	// connection closes for regions kept in its cache).
	KeyScopeRegion = "mr-pd"
)

// DeviceInfo describes one verbs device, for diagnostics.
type DeviceInfo struct {
	Name  string     `json:"name"`
	Ports []PortInfo `json:"ports"`
	// MemoryWindowType2 reports the device capability (type 2A or 2B
	// windows) that KeyScopeWindow needs.
	MemoryWindowType2 bool `json:"memory_window_type2"`
}

// PortInfo describes one port of a device.
type PortInfo struct {
	Port      int       `json:"port"`
	State     string    `json:"state"` // DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER
	ActiveMTU int       `json:"active_mtu"`
	MaxMTU    int       `json:"max_mtu"`
	LinkLayer string    `json:"link_layer"`
	GIDs      []GIDInfo `json:"gids"`
}

// GIDInfo is one populated GID table entry.
type GIDInfo struct {
	Index  int    `json:"index"`
	GID    net.IP `json:"gid"`
	Type   string `json:"type"`   // "RoCE v2", "IB/RoCE v1"
	Netdev string `json:"netdev"` // bound network device, if any
}

// ConnInfo describes one live connection, for diagnostics.
type ConnInfo struct {
	Peer          string `json:"peer"`
	Dialed        bool   `json:"dialed"` // true on the dialling side
	LocalQPN      uint32 `json:"local_qpn"`
	RemoteQPN     uint32 `json:"remote_qpn"`
	QPState       string `json:"qp_state"` // from ibv_query_qp
	SendCredits   int    `json:"send_credits"`
	CreditsOwed   int    `json:"credits_owed"`
	MessagesSent  uint64 `json:"messages_sent"`
	MessagesRecv  uint64 `json:"messages_recv"`
	BytesSent     uint64 `json:"bytes_sent"`
	BytesRecv     uint64 `json:"bytes_recv"`
	Rendezvous    uint64 `json:"rendezvous"` // large messages sent by rendezvous
	Errors        uint64 `json:"errors"`
	FailureReason string `json:"failure_reason,omitempty"`
	// KeyScope is how the keys this side sends the peer are scoped:
	// KeyScopeWindow or KeyScopeRegion. WindowsBound and WindowsRevoked
	// count the memory-window binds and invalidations on this QP.
	KeyScope       string `json:"key_scope"`
	WindowsBound   uint64 `json:"windows_bound"`
	WindowsRevoked uint64 `json:"windows_revoked"`
}

// tlsServerReady reports why cfg cannot serve TLS (no certificate), or nil.
func tlsServerReady(cfg *tls.Config) error {
	if cfg != nil && len(cfg.Certificates) == 0 && cfg.GetCertificate == nil && cfg.GetConfigForClient == nil {
		return fmt.Errorf("rdma: config TLS has no certificate to serve with; set Certificates or GetCertificate")
	}
	return nil
}
