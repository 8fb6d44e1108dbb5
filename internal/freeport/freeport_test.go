package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFreeIsBelowTheEphemeralRangeAndBindable(t *testing.T) {
	low := ephemeralLow()
	for _, udp := range []bool{false, true} {
		addr := Free(t, udp)
		host, port, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host)
		p, err := strconv.Atoi(port)
		require.NoError(t, err)
		require.Less(t, p, low, "a port the kernel may hand to a connection")
		require.Greater(t, p, 1024)
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		require.NoError(t, ln.Close())
		if udp {
			pc, err := net.ListenPacket("udp", addr)
			require.NoError(t, err)
			require.NoError(t, pc.Close())
		}
	}
}
