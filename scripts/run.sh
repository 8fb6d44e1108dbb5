#!/usr/bin/env bash
# run.sh — what `make run` does: build searchnode and searchctl, start a
# single node on the embedded default (./data, 127.0.0.1:9200), wait until it
# is healthy, load the sample emails into the index "emails" (skipped when
# they are already there), print the URL and queries to try, then keep the
# node in the foreground until Ctrl-C (or SIGTERM), which stops it cleanly.
#
# Security is on: the node makes its own CA and certificate in
# DATA_DIR/certs on first start, and serves HTTPS; the clients here trust
# DATA_DIR/certs/ca.crt. The elastic user's password is kept in
# DATA_DIR.elastic-password (made on the first run, mode 0600).
#
# Environment: WEFT_DATA_DIR, WEFT_HTTP_ADDR, WEFT_SECURITY (as searchnode
# reads them; WEFT_SECURITY=false serves plain HTTP), WEFT_SAMPLE=small to
# load the 400 checked-in emails instead of fetching the full 6,046-email
# corpus, GO (the go command).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

data_dir="${WEFT_DATA_DIR:-./data}"
http_addr="${WEFT_HTTP_ADDR:-127.0.0.1:9200}"
if [[ "${WEFT_SECURITY:-true}" == false ]]; then
	url="http://${http_addr}"
else
	url="https://${http_addr}"
	use_ca "${data_dir}/certs/ca.crt" # written by the node at its first start
	password_file="${data_dir}.elastic-password"
	use_password "$password_file"
fi

build
refuse_busy "$http_addr"
log "starting searchnode (data in ${data_dir}, HTTP on ${http_addr})"
trap stop_nodes INT TERM
start_node --data-dir "$data_dir" --http-addr "$http_addr" ${reset_flag[@]+"${reset_flag[@]}"}
wait_healthy "$url" "wait_for_status=yellow"
load_emails "$url" 1 0

client_lines "$url"
cat <<MSG

Weft is running at ${url}  (data in ${data_dir}; Ctrl-C stops it)
$(print_security)

Try:
  ${curl_line} '${url}/${index}/_search' -H 'Content-Type: application/json' \\
       -d '{"query":{"match":{"subject":"linux kernel"}},"size":3}'
  ${ctl_line} search ${index} 'subject:linux AND label:ham'
  ${ctl_line} index list

MSG
wait "${nodes[0]}" || true
stop_nodes
