package rdma

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	require.NoError(t, TestConfig().Validate())
	tests := []struct {
		name string
		mod  func(c *Config)
		want string
	}{
		{"port", func(c *Config) { c.Port = 0 }, "Port 0"},
		{"gid", func(c *Config) { c.GIDIndex = -2 }, "GIDIndex -2"},
		{"eager", func(c *Config) { c.EagerSize = 100 }, "EagerSize 100"},
		{"credits", func(c *Config) { c.Credits = 1 }, "Credits 1"},
		{"recv", func(c *Config) { c.RecvBuffers = 10 }, "RecvBuffers 10"},
		{"sq power of two", func(c *Config) { c.SendQueueDepth = 100 }, "SendQueueDepth 100"},
		{"inline", func(c *Config) { c.MaxInline = -1 }, "MaxInline -1"},
		{"threshold", func(c *Config) { c.RendezvousThreshold = c.EagerSize }, "RendezvousThreshold"},
		{"mode", func(c *Config) { c.RendezvousMode = "push" }, `RendezvousMode "push"`},
		{"read chunk", func(c *Config) { c.ReadChunk = 1 }, "ReadChunk 1"},
		{"reads in flight", func(c *Config) { c.ReadsInFlight = c.SendQueueDepth }, "ReadsInFlight"},
		{"cache", func(c *Config) { c.RendezvousCacheBytes = -1 }, "RendezvousCacheBytes"},
		{"message size", func(c *Config) { c.MaxMessageSize = 0 }, "MaxMessageSize 0"},
		{"window", func(c *Config) { c.MaxInFlight = 0 }, "MaxInFlight 0"},
		{"spin negative", func(c *Config) { c.SpinTime = -1 }, "SpinTime"},
		{"last WQE wait zero", func(c *Config) { c.LastWQETimeout = 0 }, "LastWQETimeout"},
		{"spin above a second", func(c *Config) { c.SpinTime = 2 * time.Second }, "SpinTime"},
		{"handshake", func(c *Config) { c.HandshakeTimeout = 0 }, "HandshakeTimeout"},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "Timeout 0"},
		{"retry", func(c *Config) { c.RetryCount = 8 }, "RetryCount 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			require.ErrorContains(t, c.Validate(), tc.want)
		})
	}
}

func TestTLSServerNeedsACertificate(t *testing.T) {
	require.ErrorContains(t, tlsServerReady(&tls.Config{}), "TLS has no certificate")
	require.NoError(t, tlsServerReady(nil))
	require.NoError(t, tlsServerReady(&tls.Config{Certificates: []tls.Certificate{{}}}))
	c := DefaultConfig()
	c.TLS = &tls.Config{}
	require.NoError(t, c.Validate(), "a dial-only transport may go without a certificate")
}

// fakeSysfs writes a device's GID table the way the kernel lists it.
func fakeSysfs(t *testing.T, gids map[string][3]string) string {
	root := t.TempDir()
	dir := filepath.Join(root, "rxe0", "ports", "1")
	for _, sub := range []string{"gids", "gid_attrs/types", "gid_attrs/ndevs"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}
	for idx, v := range gids {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "gids", idx), []byte(v[0]+"\n"), 0o644))
		if v[1] != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "gid_attrs/types", idx), []byte(v[1]+"\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "gid_attrs/ndevs", idx), []byte(v[2]+"\n"), 0o644))
		}
	}
	return root
}

func TestChooseGID(t *testing.T) {
	root := fakeSysfs(t, map[string][3]string{
		"0": {"fe80:0000:0000:0000:b0a4:5aff:fe1c:0001", "IB/RoCE v1", "veth0"},
		"1": {"0000:0000:0000:0000:0000:ffff:0a63:0001", "RoCE v2", "veth0"},
		"2": {"0000:0000:0000:0000:0000:ffff:0a63:0002", "RoCE v2", "veth0"},
		"3": {"0000:0000:0000:0000:0000:ffff:0a63:0003", "IB/RoCE v1", "veth0"},
		"4": {"0000:0000:0000:0000:0000:0000:0000:0000", "", ""},
		"5": {"0000:0000:0000:0000:0000:ffff:0a63:0005", "", ""}, // type unreadable: unpopulated
	})
	gids, err := readGIDs(root, "rxe0", 1)
	require.NoError(t, err)
	require.Len(t, gids, 4)
	tests := []struct {
		name  string
		index int
		want  net.IP
		link  string
		got   int
		err   string
	}{
		{"first RoCE v2 IPv4", -1, nil, "Ethernet", 1, ""},
		{"matching address", -1, net.ParseIP("10.99.0.2"), "Ethernet", 2, ""},
		{"v1 entry of the address is skipped", -1, net.ParseIP("10.99.0.3"), "Ethernet", 1, ""},
		{"explicit index", 0, nil, "Ethernet", 0, ""},
		{"explicit unpopulated", 4, nil, "Ethernet", 0, "GID index 4 is not populated"},
		{"infiniband takes the first", -1, nil, "InfiniBand", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := chooseGID(gids, tc.index, tc.want, tc.link)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.got, g.Index)
		})
	}
	_, err = chooseGID(gids[:1], -1, nil, "Ethernet")
	require.ErrorContains(t, err, "no IPv4-mapped RoCE v2 GID")
	_, err = readGIDs(root, "mlx5_0", 1)
	require.ErrorContains(t, err, "listing GIDs of mlx5_0 port 1")
}
