#!/usr/bin/env bash
# fabric-scale.sh — regenerate issue 12's fabric tables on this machine:
# tcp and adaptive against the raw floor at 64 B–64 MiB with 1, 16 and 64
# calls in flight, the fan-out case (one caller, 16 calls in flight spread
# over 8 servers of each transport), a sweep of tcp's lanes, and CPU,
# mutex and block profiles of tcp at 64 B × 16 and × 64. Run it on a quiet
# machine; every table says what GOMAXPROCS and CPU count it ran with.
#
#   scripts/fabric-scale.sh [OUTDIR]          (default build/fabric-scale)
#
# Environment: DURATION (time per point, default 500ms), REPS (default 5),
# SIZES (the matrix's sizes, default fabricbench's: 64 B to 64 MiB),
# LANES (tcp.Config.Lanes values to sweep, default "1 2 4 8 16"; empty
# skips the sweep), PROFILE=0 to skip the profiles, GO (the go command).
#
# It writes OUTDIR/machine.txt (host, kernel, CPUs, Go, commit), and for
# each part the JSON lines (*.jsonl) and the tables fabricbench prints
# from them (*.txt): matrix, fanout, lanes-N, and the profiles (*.prof,
# read with `go tool pprof OUTDIR/fabricbench OUTDIR/cpu-64x16.prof`).
# The 64 MiB × 64 point holds about 8 GiB per transport while it runs.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
out="${1:-build/fabric-scale}"
duration="${DURATION:-500ms}"
reps="${REPS:-5}"
sizes="${SIZES:-64,256,1KiB,4KiB,16KiB,64KiB,1MiB,16MiB,64MiB}"
lanes="${LANES-1 2 4 8 16}"
profile="${PROFILE:-1}"

mkdir -p "$out"
fb="$out/fabricbench"
log() { echo "fabric-scale: $*" >&2; }

log "building $fb"
"$GO" build -o "$fb" ./benchmarks/cmd/fabricbench
{
	echo "host: $(hostname)"
	echo "kernel: $(uname -sr)"
	echo "cpus: $(nproc) online; $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
	echo "go: $("$GO" version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "duration $duration, reps $reps"
} >"$out/machine.txt"
cat "$out/machine.txt" >&2

# run NAME ARGS...: measure into NAME.jsonl, then print NAME.txt from it.
run() {
	local name=$1
	shift
	log "$name: fabricbench $*"
	"$fb" "$@" -duration "$duration" -reps "$reps" -json >"$out/$name.jsonl"
	"$fb" -from "$out/$name.jsonl" >"$out/$name.txt"
}

run matrix -transports raw,tcp,adaptive -sizes "$sizes" -inflight 1,16,64
run fanout -transports raw,tcp,adaptive -sizes 64,1KiB,16KiB,1MiB -inflight 16 -peers 8
for n in $lanes; do
	run "lanes-$n" -transports raw,tcp -sizes 64,1KiB,16KiB,1MiB -inflight 16,64 -tcp-lanes "$n"
done
if [ "$profile" != 0 ]; then
	for infl in 16 64; do
		log "profiles: tcp, 64 B x $infl"
		"$fb" -transports tcp -sizes 64 -inflight "$infl" -duration 5s \
			-cpuprofile "$out/cpu-64x$infl.prof" -mutexprofile "$out/mutex-64x$infl.prof" \
			-blockprofile "$out/block-64x$infl.prof" >"$out/profile-64x$infl.txt"
	done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
log "done: tables in $out/*.txt"
