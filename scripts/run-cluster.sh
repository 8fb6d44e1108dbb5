#!/usr/bin/env bash
# run-cluster.sh — what `make run-cluster` does: build searchnode and
# searchctl, start three nodes on this machine (one data directory each)
# that form one cluster over loopback, wait until it is green, load the
# sample emails into the index "emails" with 6 shards spread over the three
# nodes, print where to look, then keep the nodes in the foreground until
# Ctrl-C (or SIGTERM), which stops them cleanly.
#
# Node i (1..3) uses HTTP 127.0.0.1:920i, fabric 930i, gossip 940i, Raft
# 950i, and data in ${WEFT_CLUSTER_DIR:-./data-cluster}/ni.
# Security is on: the cluster's certificates (a CA, one certificate per
# node, the gossip key) are created once with searchctl certs create in
# ${WEFT_CLUSTER_DIR:-./data-cluster}/certs, every node gets --certs, and
# the clients here trust its ca.crt.
#
# Environment: WEFT_CLUSTER_DIR, WEFT_SAMPLE=small (the 400 checked-in
# emails instead of the full corpus), GO (the go command).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

dir="${WEFT_CLUSTER_DIR:-./data-cluster}"
seeds=127.0.0.1:9401,127.0.0.1:9402,127.0.0.1:9403

# Three nodes share this machine: each gets its share of the CPUs
# (--processors, like Elasticsearch's node.processors), at least one, so
# that they do not each schedule work on every CPU.
procs=$(( $(nproc) / 3 ))
[ "$procs" -ge 1 ] || procs=1

build
certs="${dir}/certs"
if [[ ! -f "${certs}/ca.crt" ]]; then
	log "creating the cluster's certificates in ${certs}"
	bin/searchctl certs create --out "$certs" --nodes n1,n2,n3 >&2
fi
use_ca "${certs}/ca.crt"
password_file="${dir}/elastic-password"
use_password "$password_file"
for i in 1 2 3; do
	for p in 920 930 940 950; do refuse_busy "127.0.0.1:${p}${i}"; done
done
trap stop_nodes INT TERM
for i in 1 2 3; do
	log "starting node n${i} (HTTP 127.0.0.1:920${i}, data in ${dir}/n${i})"
	start_node --node-name "n${i}" --data-dir "${dir}/n${i}" --log-level warn --processors "$procs" \
		--http-addr "127.0.0.1:920${i}" --fabric-addr "127.0.0.1:930${i}" \
		--gossip-addr "127.0.0.1:940${i}" --raft-addr "127.0.0.1:950${i}" \
		--seeds "$seeds" --initial-nodes n1,n2,n3 --certs "$certs" ${reset_flag[@]+"${reset_flag[@]}"}
done
url=https://127.0.0.1:9201
wait_healthy "$url" "wait_for_nodes=3&wait_for_status=green"
load_emails "$url" 6 0

client_lines https://127.0.0.1:9202
ctl2="$ctl_line"
client_lines https://127.0.0.1:9201
cat <<MSG

A three-node Weft cluster is running (data in ${dir}; Ctrl-C stops it):
  n1 https://127.0.0.1:9201   n2 https://127.0.0.1:9202   n3 https://127.0.0.1:9203
Any node answers any request; searches fan out over the fabric to the nodes holding the shards.
$(print_security)

Try:
  ${ctl2} cluster status
  ${ctl2} cluster nodes
  ${ctl2} cluster shards ${index}
  ${curl_line} 'https://127.0.0.1:9203/${index}/_search' -H 'Content-Type: application/json' \\
       -d '{"query":{"match":{"subject":"linux kernel"}},"size":3}'
  ${ctl_line} shard move ${index} 0 n1 n2
  ${ctl_line} cluster drain n3 --wait 2m

MSG
wait -n "${nodes[@]}" || true
stop_nodes
