# Weft — build, run and test. `make run` and `make test` are the README's two commands.
GO      ?= go
BIN     := bin
GOFLAGS ?=

.PHONY: all build run test vet test-go test-rdma test-rdma-auto fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# test is what CI runs (.ci/run): static checks, the race-enabled Go tests,
# and the RDMA tests inside the Soft-RoCE guest when this machine can boot it.
test: vet test-go test-rdma-auto

vet:
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build -tags rdma ./...

test-go:
	$(GO) test -race -count=1 ./...

# run builds, starts a node on ./data and 127.0.0.1:9200, loads the sample
# emails and stays in the foreground (scripts/run.sh; Ctrl-C stops it).
run:
	GO=$(GO) scripts/run.sh

# sample-data fetches and converts the SpamAssassin corpus into the cache
# (scripts/sample-data.sh prints the NDJSON file's path).
.PHONY: sample-data
sample-data:
	GO=$(GO) scripts/sample-data.sh

clean:
	rm -rf $(BIN) build
