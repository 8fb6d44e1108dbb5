#!/usr/bin/env bash
# vet-rdma.sh — the part of `make vet` for fabric/rdma's real verbs code
# (files constrained `linux && cgo && rdma`), which `go vet ./...` and
# `CGO_ENABLED=0 go build -tags rdma ./...` never compile (they see the stub).
#
# Where the verbs headers are installed (/usr/include/infiniband/verbs.h, from
# libibverbs-dev; `make host-deps` installs it) and a C compiler exists, it
# runs with CGO_ENABLED=1
#   go vet -tags rdma ./...              every package, tests included
#   go vet -tags 'rdma rdmacalib' ./fabric/rdma   the calibration tests too
#   go build -tags rdma ./...            every package compiles
# and fails on any error. Otherwise it says so loudly (scripts/lib/ci.sh):
# under CI it fails.
#
# Environment: GO (the go command), VERBS_H (the header to look for).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/ci.sh
. scripts/lib/ci.sh
GO=${GO:-go}
VERBS_H=${VERBS_H:-/usr/include/infiniband/verbs.h}

how=("install them: apt-get install libibverbs-dev librdmacm-dev (or make host-deps as root)")
if [[ ! -f $VERBS_H ]]; then
	cannot_run vet "vetting and building fabric/rdma's verbs code with cgo (-tags rdma)" \
		"the verbs headers are not installed ($VERBS_H is missing)" "${how[@]}"
	exit 0
fi
if ! command -v "$(CGO_ENABLED=1 "$GO" env CC)" >/dev/null; then
	cannot_run vet "vetting and building fabric/rdma's verbs code with cgo (-tags rdma)" \
		"no C compiler ($("$GO" env CC))" "install one: apt-get install gcc"
	exit 0
fi
# The real files must be the ones selected, not the stub.
cgo=$(CGO_ENABLED=1 "$GO" list -tags rdma -f '{{join .CgoFiles " "}}' ./fabric/rdma)
[[ $cgo == *transport.go* ]] || {
	echo "vet: ERROR: with CGO_ENABLED=1 -tags rdma, fabric/rdma's cgo files are '$cgo', not the verbs transport" >&2
	exit 1
}
CGO_ENABLED=1 "$GO" vet -tags rdma ./...
CGO_ENABLED=1 "$GO" vet -tags 'rdma rdmacalib' ./fabric/rdma
CGO_ENABLED=1 "$GO" build -tags rdma ./...
echo "vet: fabric/rdma's verbs code ($cgo) vetted and built with cgo"
