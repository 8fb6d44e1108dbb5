//go:build !(linux && cgo && rdma)

package rdma

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/weftsearch/weft/fabric"
)

// Available reports whether this build carries the verbs transport.
const Available = false

// errBuild says how to get a build with RDMA.
var errBuild = fmt.Errorf("rdma: this binary was built without RDMA support; rebuild with CGO_ENABLED=1 and -tags rdma on Linux with libibverbs-dev and librdmacm-dev installed: %w", fabric.ErrNotSupported)

// Transport is the RDMA transport; in this build it cannot be constructed.
type Transport struct{}

var _ fabric.Transport = (*Transport)(nil)

// New always fails in this build with an error wrapping fabric.ErrNotSupported.
func New(cfg Config, logger *slog.Logger) (*Transport, error) { return nil, errBuild }

// Devices always fails in this build with an error wrapping fabric.ErrNotSupported.
func Devices() ([]DeviceInfo, error) { return nil, errBuild }

// Name returns "rdma".
func (t *Transport) Name() string { return "rdma" }

// Listen fails with fabric.ErrNotSupported.
func (t *Transport) Listen(ctx context.Context, addr string, h fabric.Handler) (fabric.Listener, error) {
	return nil, errBuild
}

// Dial fails with fabric.ErrNotSupported.
func (t *Transport) Dial(ctx context.Context, addr string) (fabric.Conn, error) {
	return nil, errBuild
}

// Info returns the zero TransportInfo in this build.
func (t *Transport) Info() TransportInfo { return TransportInfo{} }

// Conns returns nothing in this build.
func (t *Transport) Conns() []ConnInfo { return nil }

// Close does nothing in this build.
func (t *Transport) Close() error { return nil }
