//go:build !(linux && cgo && rdma)

package rdma

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

func TestStubSaysHowToBuild(t *testing.T) {
	require.False(t, Available)
	_, err := New(DefaultConfig(), nil)
	require.ErrorIs(t, err, fabric.ErrNotSupported)
	require.ErrorContains(t, err, "-tags rdma")
	require.ErrorContains(t, err, "CGO_ENABLED=1")
	_, err = Devices()
	require.ErrorIs(t, err, fabric.ErrNotSupported)
	var tr Transport
	_, err = tr.Dial(context.Background(), "127.0.0.1:1")
	require.ErrorIs(t, err, fabric.ErrNotSupported)
	_, err = tr.Listen(context.Background(), "127.0.0.1:0", &fabric.Mux{})
	require.ErrorIs(t, err, fabric.ErrNotSupported)
	require.Equal(t, "rdma", tr.Name())
}
