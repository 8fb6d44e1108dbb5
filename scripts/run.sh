#!/usr/bin/env bash
# run.sh — what `make run` does: build searchnode and searchctl, start a
# single node on the embedded default (./data, 127.0.0.1:9200), wait until it
# is healthy, load the sample emails into the index "emails" (skipped when
# they are already there), print the URL and queries to try, then keep the
# node in the foreground until Ctrl-C (or SIGTERM), which stops it cleanly.
#
# Environment: WEFT_DATA_DIR, WEFT_HTTP_ADDR (as searchnode reads them),
# WEFT_SAMPLE=small to load the 400 checked-in emails instead of fetching the
# full 6,046-email corpus, GO (the go command).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

data_dir="${WEFT_DATA_DIR:-./data}"
http_addr="${WEFT_HTTP_ADDR:-127.0.0.1:9200}"
url="http://${http_addr}"

build
refuse_busy "$http_addr"
log "starting searchnode (data in ${data_dir}, HTTP on ${http_addr})"
trap stop_nodes INT TERM
start_node --data-dir "$data_dir" --http-addr "$http_addr"
wait_healthy "$url" "wait_for_status=yellow"
load_emails "$url" 1 0

cat <<MSG

Weft is running at ${url}  (data in ${data_dir}; Ctrl-C stops it)

Try:
  curl -s '${url}/${index}/_search' -H 'Content-Type: application/json' \\
       -d '{"query":{"match":{"subject":"linux kernel"}},"size":3}'
  bin/searchctl --addr ${url} search ${index} 'subject:linux AND label:ham'
  bin/searchctl --addr ${url} index list

MSG
wait "${nodes[0]}" || true
stop_nodes
