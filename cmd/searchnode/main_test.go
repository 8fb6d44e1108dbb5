package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/node"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, o options)
	}{
		{
			name: "defaults",
			check: func(t *testing.T, o options) {
				require.Equal(t, "./data", o.node.DataDir)
				require.Equal(t, "127.0.0.1:9200", o.node.HTTPAddr)
				require.Equal(t, "weft", o.node.ClusterName)
				require.EqualValues(t, 100<<20, o.node.MaxBodyBytes)
				require.False(t, o.node.EnablePprof)
				require.Equal(t, slog.LevelInfo, o.logLevel)
				require.Equal(t, "text", o.logFormat)
				require.Empty(t, o.node.FabricAddr, "the fabric is off by default")
				require.Equal(t, "auto", o.node.FabricRDMA)
				require.EqualValues(t, 40<<20, o.node.RecoveryMaxBytesPerSec, "Elasticsearch's default recovery throttle")
				require.Zero(t, o.node.Processors, "every CPU the process may use")
				require.True(t, o.node.Security.Enabled, "security is on by default")
				require.False(t, o.node.Security.AllowInsecureNetwork)
				require.Empty(t, o.node.Security.CertsDir)
				require.Equal(t, 4096, o.node.HTTPMaxConnections)
				require.Equal(t, 10*time.Second, o.node.HTTPHeaderTimeout)
				require.Equal(t, 2*time.Minute, o.node.HTTPIdleTimeout)
				require.Equal(t, 30*time.Second, o.node.HTTPBodyTimeout)
				require.EqualValues(t, 16<<10, o.node.HTTPBodyMinRate)
				require.False(t, o.node.CORS.Enabled, "CORS is off by default, as in Elasticsearch")
				require.Equal(t, []string{"OPTIONS", "HEAD", "GET", "POST", "PUT", "DELETE"}, o.node.CORS.AllowMethods)
				require.Equal(t, 1728000, o.node.CORS.MaxAgeSeconds)
			},
		},
		{
			name: "cors from flags over environment",
			args: []string{"--http-cors-enabled", "--http-cors-allow-origin", "/https?:\\/\\/localhost(:[0-9]+)?/",
				"--http-cors-allow-headers", "X-Custom, Content-Type", "--http-cors-allow-credentials", "--http-cors-max-age", "60"},
			env: map[string]string{"WEFT_HTTP_CORS_ALLOW_ORIGIN": "*", "WEFT_HTTP_CORS_ALLOW_METHODS": "GET,POST", "WEFT_HTTP_CORS_MAX_AGE": "5"},
			check: func(t *testing.T, o options) {
				require.True(t, o.node.CORS.Enabled)
				require.Equal(t, "/https?:\\/\\/localhost(:[0-9]+)?/", o.node.CORS.AllowOrigin)
				require.Equal(t, []string{"GET", "POST"}, o.node.CORS.AllowMethods)
				require.Equal(t, []string{"X-Custom", "Content-Type"}, o.node.CORS.AllowHeaders)
				require.True(t, o.node.CORS.AllowCredentials)
				require.Equal(t, 60, o.node.CORS.MaxAgeSeconds)
			},
		},
		{
			name: "http limits from flags over environment",
			args: []string{"--http-max-connections", "100", "--http-header-timeout", "3s", "--http-idle-timeout", "30s",
				"--http-body-timeout", "5s", "--http-body-min-rate", "1mb"},
			env: map[string]string{"WEFT_HTTP_MAX_CONNECTIONS": "7", "WEFT_HTTP_HEADER_TIMEOUT": "1s", "WEFT_HTTP_IDLE_TIMEOUT": "1s",
				"WEFT_HTTP_BODY_TIMEOUT": "1s", "WEFT_HTTP_BODY_MIN_RATE": "1kb"},
			check: func(t *testing.T, o options) {
				require.Equal(t, 100, o.node.HTTPMaxConnections)
				require.Equal(t, 3*time.Second, o.node.HTTPHeaderTimeout)
				require.Equal(t, 30*time.Second, o.node.HTTPIdleTimeout)
				require.Equal(t, 5*time.Second, o.node.HTTPBodyTimeout)
				require.EqualValues(t, 1<<20, o.node.HTTPBodyMinRate)
			},
		},
		{
			name: "http limits from the environment",
			env: map[string]string{"WEFT_HTTP_MAX_CONNECTIONS": "7", "WEFT_HTTP_HEADER_TIMEOUT": "1s", "WEFT_HTTP_IDLE_TIMEOUT": "1s",
				"WEFT_HTTP_BODY_TIMEOUT": "2s", "WEFT_HTTP_BODY_MIN_RATE": "0"},
			check: func(t *testing.T, o options) {
				require.Equal(t, 7, o.node.HTTPMaxConnections)
				require.Equal(t, time.Second, o.node.HTTPHeaderTimeout)
				require.Equal(t, time.Second, o.node.HTTPIdleTimeout)
				require.Equal(t, 2*time.Second, o.node.HTTPBodyTimeout)
				require.Zero(t, o.node.HTTPBodyMinRate, "0: only the stall rule")
			},
		},
		{name: "bad cors origin pattern", args: []string{"--http-cors-enabled", "--http-cors-allow-origin", "/(/"}, wantErr: "http.cors.allow-origin"},
		{name: "negative cors max age", args: []string{"--http-cors-enabled", "--http-cors-max-age", "-1"}, wantErr: "http.cors.max-age"},
		{name: "no http connections", args: []string{"--http-max-connections", "0"}, wantErr: "HTTPMaxConnections 0"},
		{name: "no idle timeout", env: map[string]string{"WEFT_HTTP_IDLE_TIMEOUT": "0s"}, wantErr: "--http-idle-timeout"},
		{name: "no body timeout", args: []string{"--http-body-timeout", "0"}, wantErr: "HTTPBodyTimeout"},
		{name: "no header timeout", args: []string{"--http-header-timeout", "-1s"}, wantErr: "HTTPHeaderTimeout"},
		{name: "bad body rate", args: []string{"--http-body-min-rate", "quick"}, wantErr: "not a byte size"},
		{
			name: "security flags",
			args: []string{"--certs", "/etc/weft/certs", "--http-cert", "/etc/weft/web.crt", "--http-key", "/etc/weft/web.key",
				"--audit-log", "/var/log/weft/audit.json", "--audit-log-granted"},
			check: func(t *testing.T, o options) {
				require.Equal(t, node.SecurityConfig{Enabled: true, CertsDir: "/etc/weft/certs", HTTPCert: "/etc/weft/web.crt",
					HTTPKey: "/etc/weft/web.key", AuditLog: "/var/log/weft/audit.json", AuditGranted: true}, o.node.Security)
			},
		},
		{
			name: "security from the environment",
			env: map[string]string{"WEFT_SECURITY": "false", "WEFT_ALLOW_INSECURE_NETWORK": "true", "WEFT_HTTP_ADDR": "0.0.0.0:9200",
				"WEFT_AUDIT_LOG": "/tmp/audit", "WEFT_AUDIT_LOG_GRANTED": "true"},
			check: func(t *testing.T, o options) {
				require.Equal(t, node.SecurityConfig{AllowInsecureNetwork: true, AuditLog: "/tmp/audit", AuditGranted: true}, o.node.Security)
			},
		},
		{
			name: "certs from the environment, flag over it",
			args: []string{"--certs", "/flag"},
			env:  map[string]string{"WEFT_CERTS": "/env"},
			check: func(t *testing.T, o options) {
				require.Equal(t, "/flag", o.node.Security.CertsDir)
			},
		},
		{
			name: "security off on loopback",
			args: []string{"--security=false", "--http-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:9400", "--raft-addr", "localhost:9500",
				"--fabric-addr", "[::1]:9300", "--seeds", "127.0.0.1:9400"},
			check: func(t *testing.T, o options) {
				require.False(t, o.node.Security.Enabled)
			},
		},
		{name: "security off on all interfaces", args: []string{"--security=false", "--http-addr", ":9200"}, wantErr: "--allow-insecure-network"},
		{name: "security off on a LAN address", env: map[string]string{"WEFT_SECURITY": "false"},
			args: []string{"--fabric-addr", "10.1.2.3:9300"}, wantErr: `FabricAddr "10.1.2.3:9300" (--fabric-addr) is reachable`},
		{name: "security off with certificates", args: []string{"--security=false", "--certs", "/c"}, wantErr: "need security on"},
		{name: "http cert without key", args: []string{"--http-cert", "/c.crt"}, wantErr: "--http-cert and --http-key go together"},
		{name: "audit granted without a log", args: []string{"--audit-log-granted"}, wantErr: "--audit-log-granted needs --audit-log"},
		{
			name: "cluster node without certificates",
			args: []string{"--node-name", "n1", "--gossip-addr", "127.0.0.1:9400", "--raft-addr", "127.0.0.1:9500", "--fabric-addr", "127.0.0.1:9300",
				"--seeds", "127.0.0.1:9400", "--initial-nodes", "n1,n2"},
			wantErr: "searchctl certs create --out DIR --nodes n1,n2,n3",
		},
		{
			name: "cluster of one makes its own certificates",
			args: []string{"--node-name", "n1", "--gossip-addr", "127.0.0.1:9400", "--raft-addr", "127.0.0.1:9500", "--fabric-addr", "127.0.0.1:9300",
				"--initial-nodes", "n1"},
			check: func(t *testing.T, o options) {
				require.Empty(t, o.node.Security.CertsDir)
				require.True(t, o.node.Security.Enabled)
			},
		},
		{
			name: "processors from the environment, flag over it",
			args: []string{"--processors", "1"},
			env:  map[string]string{"WEFT_PROCESSORS": "2"},
			check: func(t *testing.T, o options) {
				require.Equal(t, 1, o.node.Processors)
			},
		},
		{name: "processors above the CPUs", args: []string{"--processors", "100000"}, wantErr: "Processors 100000 is out of range"},
		{name: "negative processors", env: map[string]string{"WEFT_PROCESSORS": "-1"}, wantErr: "Processors -1"},
		{
			name: "recovery throttle from the environment",
			env:  map[string]string{"WEFT_RECOVERY_MAX_BYTES_PER_SEC": "100mb"},
			check: func(t *testing.T, o options) {
				require.EqualValues(t, 100<<20, o.node.RecoveryMaxBytesPerSec)
			},
		},
		{
			name: "recovery throttle off by flag over environment",
			args: []string{"--recovery-max-bytes-per-sec", "0"},
			env:  map[string]string{"WEFT_RECOVERY_MAX_BYTES_PER_SEC": "100mb"},
			check: func(t *testing.T, o options) {
				require.Zero(t, o.node.RecoveryMaxBytesPerSec, "0 is no limit")
			},
		},
		{name: "bad recovery throttle", args: []string{"--recovery-max-bytes-per-sec", "fast"}, wantErr: "not a byte size"},
		{
			name: "memory limit by flag over environment",
			args: []string{"--memory-limit", "2gb"},
			env:  map[string]string{"WEFT_MEMORY_LIMIT": "1gb"},
			check: func(t *testing.T, o options) {
				require.EqualValues(t, 2<<30, o.node.MemoryLimit)
			},
		},
		{name: "memory limit too small", env: map[string]string{"WEFT_MEMORY_LIMIT": "1mb"}, wantErr: "MemoryLimit 1048576 is below the minimum"},
		{
			name: "fabric from the environment",
			env:  map[string]string{"WEFT_FABRIC_ADDR": "127.0.0.1:9300", "WEFT_FABRIC_RDMA": "off"},
			check: func(t *testing.T, o options) {
				require.Equal(t, "127.0.0.1:9300", o.node.FabricAddr)
				require.Equal(t, "off", o.node.FabricRDMA)
			},
		},
		{
			name: "fabric flags over environment",
			args: []string{"--fabric-addr", "127.0.0.1:0", "--fabric-rdma=on"},
			env:  map[string]string{"WEFT_FABRIC_ADDR": "127.0.0.1:9300", "WEFT_FABRIC_RDMA": "off"},
			check: func(t *testing.T, o options) {
				require.Equal(t, "127.0.0.1:0", o.node.FabricAddr)
				require.Equal(t, "on", o.node.FabricRDMA)
			},
		},
		{name: "bad fabric rdma mode", args: []string{"--fabric-rdma", "yes"}, wantErr: `unknown fabric RDMA mode "yes"`},
		{name: "bad fabric rdma env names the variable", env: map[string]string{"WEFT_FABRIC_RDMA": "always"}, wantErr: "WEFT_FABRIC_RDMA"},
		{name: "fabric address without port", args: []string{"--fabric-addr", "127.0.0.1"}, wantErr: "FabricAddr"},
		{
			name: "environment over defaults",
			env: map[string]string{"WEFT_DATA_DIR": "/srv/weft", "WEFT_HTTP_ADDR": ":9201", "WEFT_NODE_NAME": "n-env",
				"WEFT_CLUSTER_NAME": "c-env", "WEFT_MAX_BODY_BYTES": "2mb", "WEFT_PPROF": "true", "WEFT_LOG_LEVEL": "debug",
				"WEFT_LOG_FORMAT": "json", "WEFT_SHUTDOWN_TIMEOUT": "5s"},
			check: func(t *testing.T, o options) {
				require.Equal(t, "/srv/weft", o.node.DataDir)
				require.Equal(t, ":9201", o.node.HTTPAddr)
				require.Equal(t, "n-env", o.node.NodeName)
				require.Equal(t, "c-env", o.node.ClusterName)
				require.EqualValues(t, 2<<20, o.node.MaxBodyBytes)
				require.True(t, o.node.EnablePprof)
				require.Equal(t, slog.LevelDebug, o.logLevel)
				require.Equal(t, "json", o.logFormat)
				require.Equal(t, 5*time.Second, o.node.ShutdownTimeout)
			},
		},
		{
			name: "flags over environment",
			args: []string{"--data-dir", "/flag", "--http-addr=127.0.0.1:0", "--max-body-bytes", "4096", "--pprof=false", "--log-level", "warn", "--node-name", "n-flag"},
			env:  map[string]string{"WEFT_DATA_DIR": "/env", "WEFT_PPROF": "true", "WEFT_NODE_NAME": "n-env", "WEFT_LOG_LEVEL": "debug"},
			check: func(t *testing.T, o options) {
				require.Equal(t, "/flag", o.node.DataDir)
				require.Equal(t, "127.0.0.1:0", o.node.HTTPAddr)
				require.EqualValues(t, 4096, o.node.MaxBodyBytes)
				require.False(t, o.node.EnablePprof)
				require.Equal(t, slog.LevelWarn, o.logLevel)
				require.Equal(t, "n-flag", o.node.NodeName)
			},
		},
		{name: "bad env value names the variable", env: map[string]string{"WEFT_MAX_BODY_BYTES": "lots"}, wantErr: "WEFT_MAX_BODY_BYTES"},
		{name: "bad log format", args: []string{"--log-format", "xml"}, wantErr: "unknown log format"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "unknown log level"},
		{name: "invalid config", args: []string{"--http-addr", "nohostport"}, wantErr: "HTTPAddr"},
		{name: "body limit too small", args: []string{"--max-body-bytes", "1b"}, wantErr: "MaxBodyBytes"},
		{name: "unknown flag", args: []string{"--colour"}, wantErr: "colour"},
		{name: "stray argument", args: []string{"serve"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true}, {"100mb", 100 << 20, true}, {"1GB", 1 << 30, true}, {"2 kb", 2048, true}, {"7b", 7, true},
		{"-1", 0, false}, {"ten", 0, false}, {"", 0, false}, {"9999999999gb", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var b byteSize
			err := b.Set(tc.in)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.EqualValues(t, tc.want, b)
		})
	}
}
