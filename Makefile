# Weft — build, run and test. `make run` and `make test` are the README's two commands.
GO      ?= go
BIN     := bin
GOFLAGS ?=

.PHONY: all build run run-cluster test host-deps vet test-go test-rdma test-rdma-auto fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# test is what CI runs (.ci/run, which exports CI=true): the host packages,
# static checks (the verbs code with cgo included), the race-enabled Go tests,
# and the RDMA tests inside the Soft-RoCE guest. Where the machine cannot
# install the packages or boot the guest, each step says so in a boxed notice
# and goes on; under CI=true it fails instead.
test: host-deps vet test-go test-rdma-auto

# host-deps installs what vet's cgo step and the guest need on the host (the
# verbs headers, QEMU; scripts/softroce/run.sh --host-only --auto).
host-deps:
	GO=$(GO) scripts/softroce/run.sh --host-only --auto

# vet: go vet and the stub's build everywhere, then fabric/rdma's verbs code
# vetted and built with cgo and -tags rdma (scripts/vet-rdma.sh; it needs the
# verbs headers, and says loudly when they are missing, failing under CI).
vet:
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build -tags rdma ./...
	GO=$(GO) scripts/vet-rdma.sh

test-go:
	$(GO) test -race -count=1 ./...

# test-rdma boots the Soft-RoCE guest (QEMU, rdma_rxe on a veth) and runs the
# RDMA tests, fabricbench and perftest inside it (scripts/softroce/run.sh,
# docs/softroce.md); SOFTROCE_FLAGS passes options, e.g. --tests-only.
test-rdma:
	GO=$(GO) scripts/softroce/run.sh $(SOFTROCE_FLAGS)

# test-rdma-auto runs test-rdma where this machine can (Linux, root or
# passwordless sudo for apt, Debian's archive reachable or everything cached),
# and otherwise prints a boxed notice saying why it was skipped (under
# CI=true it fails with the reason instead).
test-rdma-auto:
	GO=$(GO) scripts/softroce/run.sh --auto $(SOFTROCE_FLAGS)

# run builds, starts a node on ./data and 127.0.0.1:9200, loads the sample
# emails and stays in the foreground (scripts/run.sh; Ctrl-C stops it).
run:
	GO=$(GO) scripts/run.sh

# run-cluster builds, starts three nodes on this machine that form one
# cluster (HTTP 127.0.0.1:9201-9203), loads the sample emails into an index
# of 6 shards and stays in the foreground (scripts/run-cluster.sh).
run-cluster:
	GO=$(GO) scripts/run-cluster.sh

# sample-data fetches and converts the SpamAssassin corpus into the cache
# (scripts/sample-data.sh prints the NDJSON file's path).
.PHONY: sample-data bench-engine bench-cluster
sample-data:
	GO=$(GO) scripts/sample-data.sh

# bench-engine: the node's HTTP API vs raw bleve in one run (bulk docs/s; term,
# boolean, phrase p50/p99; empty round trip) on the full sample corpus.
# More flags: make bench-engine BENCHFLAGS='-docs 20000 -json bench.json'.
bench-engine:
	$(GO) run ./benchmarks/cmd/enginebench -corpus "$$(GO=$(GO) scripts/sample-data.sh)" $(BENCHFLAGS)

# bench-cluster: searchnode processes on 127.0.0.1, side by side in one run:
# one node vs three (fabric tcp and adaptive; each of the three with
# --processors, its share of the CPUs) on the full sample corpus,
# query p50/p99/QPS at 1, 8 and 32 clients and fabric bytes per query; bulk
# with 0 and 1 replica; recovery of a 1 GiB shard vs raw TCP bandwidth.
# More flags: make bench-cluster BENCHFLAGS='-recovery-bytes 256MiB -json cluster.json'.
bench-cluster:
	$(GO) run ./benchmarks/cmd/clusterbench -corpus "$$(GO=$(GO) scripts/sample-data.sh)" $(BENCHFLAGS)

clean:
	rm -rf $(BIN) build
