// Package freeport picks loopback addresses for programs that must name a
// port before anything listens on it: the gossip seeds of a cluster formed
// in one test process, and the flags of searchnode processes started by
// tests and benchmarks.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Pick returns "127.0.0.1:PORT" with PORT free now for TCP, and for UDP
// too when udp is set (gossip listens on both). The port is drawn below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range), from which the
// kernel picks the local port of every outgoing connection and of every
// listener on port 0: a port taken from that range (listening on port 0
// and closing) can be handed to another process's connection before the
// program's own listener binds it, which failed tests and benchmark runs
// with "address already in use". Below the range only another program
// drawing the same way could take it.
func Pick(udp bool) (string, error) {
	low := ephemeralLow()
	span := min(low-1024, 12000)
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(low-1-rand.IntN(span)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		_ = ln.Close()
		if !udp {
			return addr, nil
		}
		if pc, err := net.ListenPacket("udp", addr); err == nil {
			_ = pc.Close()
			return addr, nil
		}
	}
	proto := "TCP"
	if udp {
		proto = "TCP and UDP"
	}
	return "", fmt.Errorf("freeport: no loopback port below %d free for %s after 100 tries", low, proto)
}

// TB is the part of testing.TB that Free uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Free is Pick for tests: it fails tb when no port is free.
func Free(tb TB, udp bool) string {
	tb.Helper()
	addr, err := Pick(udp)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return addr
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default, 32768, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				return n
			}
		}
	}
	return 32768
}
