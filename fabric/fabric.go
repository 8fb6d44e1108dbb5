// Package fabric defines how Weft nodes talk to each other: a multiplexed
// message RPC (Transport, Conn, Handler) that every transport — TCP, RDMA,
// the in-memory test transport, and the adaptive transport that chooses
// between them — implements with the same contract, proved by the
// conformance suite in fabric/fabrictest.
//
// Buffer ownership, once for the whole package:
//   - A payload passed to Conn.Call or Conn.Send belongs to the caller again
//     as soon as the call returns; the transport never keeps it.
//   - A reply returned by Conn.Call belongs to the caller; the transport
//     never touches it again.
//   - Request.Payload given to a Handler is valid only until the handler
//     returns; a handler that keeps bytes copies them. This lets the RDMA
//     transport hand a handler a slice of registered receive memory.
//   - The reply a Handler returns must not be modified after it returns; the
//     transport may read it until it has been sent. The reply may be
//     Request.Payload or a part of it (an echo need not copy): every
//     transport keeps the request's memory until the reply has been sent,
//     and the conformance suite's echo handlers do exactly that.
//   - A handler that needs Request.Payload (or a reply aliasing it) for
//     longer than its call may borrow it through Request.Lender, when the
//     transport offers that, instead of copying it.
package fabric

import (
	"context"
	"errors"
	"fmt"
)

// Method names an RPC. Values below MethodUserBase are reserved for the
// fabric itself (probes, stream control); each package that serves calls
// declares its own methods at or above MethodUserBase.
type Method uint16

// MethodUserBase is the first method number free for callers.
const MethodUserBase Method = 256

// Reserved methods used by the fabric's own machinery.
const (
	// MethodPing echoes its payload; every transport answers it without a
	// registered handler, so probes and benchmarks work against any peer.
	MethodPing Method = 1
	// MethodStream carries chunks of a stream opened by SendStream.
	MethodStream Method = 2
	// MethodAdaptiveEnvelope carries the adaptive transport's calls, each
	// wrapped in its session envelope (fabric/adaptive).
	MethodAdaptiveEnvelope Method = 64
)

// MaxMessageSize is the largest payload (request or reply) a transport must
// accept in one Call. Larger transfers use SendStream.
const MaxMessageSize = 256 << 20

// Request is what a Handler receives.
type Request struct {
	Method Method
	// Payload is valid only until the handler returns.
	Payload []byte
	// Peer is the remote address as the transport names it, for logs.
	Peer string
	// OneWay is true for messages sent with Conn.Send: the reply is dropped.
	OneWay bool
	// Lender, when not nil, lends Payload's memory for longer than the
	// handler runs; nil when the transport cannot (its memory is reused
	// as soon as the reply is sent).
	Lender Lender
}

// Lender is a transport's offer to lend a request's memory past its
// handler's return, so that a handler that keeps the payload, or a reply
// that aliases it, need not copy it (the adaptive transport keeps replies
// for re-sends).
type Lender interface {
	// Lend keeps the memory of Request.Payload valid and unmodified until
	// both the reply has been sent and Return has been called; then the
	// transport takes it back. A handler calls Lend at most once, before
	// it returns.
	Lend()
	// Return ends the loan, from any goroutine, before or after the reply
	// is sent. Calls without a loan, or after the first, do nothing.
	Return()
}

// Handler serves requests. It is called concurrently from many goroutines;
// ctx is cancelled when the caller cancels or the connection closes. An error
// that is (or wraps) a *RemoteError reaches the caller with its code; any
// other error reaches it as CodeInternal with the error's text.
type Handler interface {
	ServeFabric(ctx context.Context, req *Request) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) ([]byte, error)

// ServeFabric calls f.
func (f HandlerFunc) ServeFabric(ctx context.Context, req *Request) ([]byte, error) {
	return f(ctx, req)
}

// Transport makes connections of one kind. Implementations are safe for
// concurrent use.
type Transport interface {
	// Name is a short lowercase name: "tcp", "rdma", "mem", "adaptive".
	Name() string
	// Listen starts serving h on addr (transport-specific form; TCP takes
	// "host:port", port 0 picks one). It returns once the listener accepts.
	Listen(ctx context.Context, addr string, h Handler) (Listener, error)
	// Dial connects to a listener. The returned Conn is ready for calls.
	Dial(ctx context.Context, addr string) (Conn, error)
}

// Listener is a serving endpoint.
type Listener interface {
	// Addr is the address peers dial, with the real port when 0 was asked.
	Addr() string
	// Close stops accepting, fails the in-flight calls of its connections
	// with ErrClosed on the caller side and waits for its handlers to return.
	// It is idempotent.
	Close() error
}

// Conn is one client connection. All methods are safe for concurrent use;
// concurrent calls are multiplexed and do not wait for each other beyond the
// transport's bounded in-flight window.
type Conn interface {
	// Call sends payload to the peer's handler for method and waits for its
	// reply. It returns promptly with ctx.Err() when ctx ends (the peer is
	// told to cancel), ErrClosed when the connection is closed or broken, or
	// a *RemoteError from the handler.
	Call(ctx context.Context, method Method, payload []byte) ([]byte, error)
	// Send delivers a one-way message: it returns once the transport has
	// taken the payload (queued or written), without waiting for the handler.
	// Messages sent by one goroutine reach the handler in order of Send:
	// a connection's one-way messages are served one at a time, and a Call
	// or Send made after a Send is served after that Send's handler has
	// returned. A Send counts against the in-flight window until its
	// handler returns, so a slow receiver blocks the sender.
	Send(ctx context.Context, method Method, payload []byte) error
	// Stats returns counters for this connection.
	Stats() ConnStats
	// RemoteAddr is the address that was dialled.
	RemoteAddr() string
	// Close fails in-flight calls with ErrClosed and releases resources. It
	// is idempotent.
	Close() error
}

// VectorCaller is an optional ability of a Conn, checked at run time: a
// Call whose payload is given in pieces and sent as one message equal to
// their concatenation, without first copying them into one buffer. Layers
// that put a header before a caller's payload (the adaptive envelope) use
// it when a path offers it. The pieces are only read, and only until
// CallVector returns; the reply and errors are as for Call.
type VectorCaller interface {
	CallVector(ctx context.Context, method Method, payload [][]byte) ([]byte, error)
}

// ConnStats are cumulative counters of one connection.
type ConnStats struct {
	Transport     string `json:"transport"`
	Calls         uint64 `json:"calls"`
	CallErrors    uint64 `json:"call_errors"`
	Sends         uint64 `json:"sends"`
	BytesSent     uint64 `json:"bytes_sent"`
	BytesReceived uint64 `json:"bytes_received"`
	InFlight      int    `json:"in_flight"`
}

// Errors shared by every transport. Transports wrap them with %w and detail.
var (
	// ErrClosed: the connection or listener is closed or broken.
	ErrClosed = errors.New("fabric: connection closed")
	// ErrNotSupported: the transport cannot run here (e.g. no RDMA device,
	// or a build without RDMA support) or lacks an optional ability.
	ErrNotSupported = errors.New("fabric: not supported")
	// ErrTooLarge: a payload exceeds MaxMessageSize or the peer's limit.
	ErrTooLarge = errors.New("fabric: message too large")
)

// Code classifies a RemoteError. Codes below CodeUserBase are the fabric's;
// callers define their own at or above it.
type Code uint16

// Fabric error codes.
const (
	CodeInternal      Code = 1 // the handler failed with a plain error
	CodeUnknownMethod Code = 2 // no handler for the method
	CodeBadRequest    Code = 3 // the payload could not be decoded
	CodeUnavailable   Code = 4 // the server is shutting down
	// CodeStripedReply is internal to fabric/adaptive: the call succeeded and
	// its reply waits on the server to be fetched in chunks. It never
	// reaches callers of Conn.Call.
	CodeStripedReply Code = 100
	CodeUserBase     Code = 1000
)

// RemoteError is an error returned by the peer's handler.
type RemoteError struct {
	Code    Code
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("fabric: remote error %d: %s", e.Code, e.Message)
}

// Is reports whether target is a *RemoteError with the same code, so callers
// can write errors.Is(err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod}).
func (e *RemoteError) Is(target error) bool {
	t, ok := target.(*RemoteError)
	return ok && t.Code == e.Code
}

// Errorf returns a *RemoteError with the given code, for handlers.
func Errorf(code Code, format string, args ...any) error {
	return &RemoteError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsRemote converts a handler error to the *RemoteError the caller will see.
// Transports call it on the server side.
func AsRemote(err error) *RemoteError {
	var re *RemoteError
	if errors.As(err, &re) {
		return re
	}
	return &RemoteError{Code: CodeInternal, Message: err.Error()}
}
