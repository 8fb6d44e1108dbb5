// Package rdma is Weft's fabric transport over RDMA verbs: reliable-connected
// queue pairs on a RoCE v2 (or InfiniBand) device, set up over a TCP control
// connection at the transport's address, carrying the fabric's message RPC.
//
// The verbs code is built only with cgo on Linux and the build tag rdma
// (`CGO_ENABLED=1 go build -tags rdma`, needing libibverbs-dev). Every other
// build gets a stub with the same API whose constructor returns an error
// wrapping fabric.ErrNotSupported, and Available is false.
//
// Data path, per device context (one per Transport): one protection domain,
// one completion channel and completion queue, one shared receive queue fed
// from an mmap'd pool of eager buffers registered once. Small messages are
// copied into a per-connection mmap'd send ring (inline when they fit the QP's
// inline limit) and sent with SEND into the shared receive queue; credits
// (granted per connection, returned in every header and by credit messages
// that use a reserved allowance) keep a sender from ever finding the
// receive queue empty. Messages at or above the rendezvous threshold are
// copied into a per-connection registered region and announced; the data
// moves by RDMA WRITE into a region the receiver offers (or by RDMA READ of
// the sender's copy). The key sent for an exposed region is a type-2 memory
// window bound on the connection's own QP for that one transfer and
// invalidated when it ends, where the device has such windows (else the
// region's memory-region key).
// One goroutine per Transport polls the completion queue in batches, spins
// for a bounded number of empty polls, then sleeps on the completion channel.
//
// A work completion with an error status, the end of the control
// connection, or an asynchronous event of the device (QP error, port down,
// device fatal; read by one goroutine per Transport) moves the connection to
// failed: its in-flight calls return
// fabric.ErrClosed at once, so an adaptive layer above can re-send them.
// See docs/rdma.md for the wire format and the measurements.
package rdma
