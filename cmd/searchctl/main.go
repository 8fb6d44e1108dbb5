// Command searchctl administers a Weft cluster over a node's HTTP API:
// health, index create/delete/list/get, bulk loading of NDJSON files,
// searches, the fabric, and the cluster (status, nodes, shards, Raft, node
// drains and shard moves).
// Run `searchctl --help`; the logic lives in internal/ctl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/weftsearch/weft/internal/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.Main(ctx, os.Args[1:], ctl.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}
