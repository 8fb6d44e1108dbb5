#!/usr/bin/env bash
# Soft-RoCE guest harness: runs Weft's RDMA tests and fabric benchmarks on real
# verbs (the kernel's rdma_rxe driver) inside a small QEMU guest, on machines
# whose own kernel has no RDMA support.
#
# Phases (each prints how long it took):
#   host     install qemu-system-x86, cpio, kmod, libibverbs-dev, librdmacm-dev
#            from Debian's archive when missing (needs root or passwordless sudo)
#   fetch    download the guest's .deb packages (kernel + rdma userland) into
#            ${WEFT_CACHE:-$HOME/.cache/weft}/softroce, reused on later runs
#   build    build fabric/rdma's test binary (also with -race), node's and
#            fabricbench with -tags rdma (node's also for --recovery)
#   guest    unpack the packages into a tree, add the kernel modules, /init and
#            the binaries, check every ELF resolves its libraries, pack an initramfs
#   boot     boot it with QEMU (TCG, or KVM where hardware KVM exists); the guest
#            brings up rxe0 on a veth and runs the tests, a subset of them again
#            built with -race, fabricbench, the peer recovery benchmark
#            (--recovery) and perftest, writing its results to a 9p share
#            (build/softroce/guest-out)
#   report   build/softroce/results.json (JSON lines) and results.txt (a table),
#            then exactly one line: softroce: N passed, M failed, K skipped
#
# Exit status: 0 only when the guest finished, the tests ran (N > 0; the -race
# run's tests are counted in) and none failed or skipped, and (unless
# --tests-only) fabricbench exited 0 and benchmark results came back (and
# the recovery benchmark, when it ran, exited 0). With
# --bench-only no tests run (N = 0). With --host-only only the host phase runs.
# With --auto on a machine that cannot run the guest it skips with a boxed
# notice, except under CI (CI=true), where it fails (scripts/lib/ci.sh).
# See docs/softroce.md.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/softroce/run.sh [options]

  --tests-only       run only the RDMA test binary in the guest
  --bench-only       run only fabricbench, the recovery benchmark (--recovery)
                     and perftest in the guest
  --host-only        only install the host packages (the verbs headers that
                     make vet's cgo step needs, QEMU), then exit
  --run REGEX        pass REGEX to the test binary as -test.run
  --race REGEX       also run the test binary built with -race, with
                     -test.run REGEX ('.' for all its tests, 'none' for no
                     -race run); default: RACE_DEFAULT in this script without
                     --run, --bench or --test-bin, else none
  --bench REGEX      also run the test binary's benchmarks matching REGEX
                     (-test.bench, -test.benchmem); without --run, no tests run
  --count N          run each test and benchmark N times (-test.count, default 1)
  --recovery MIB     also run node.test's BenchmarkPeerRecovery (peer recovery
                     of a one-shard index of MIB MiB over the fabric pinned to
                     rdma, pinned to tcp, and free) after fabricbench; 0 skips
                     it. Default: 64 (RECOVERY_BENCH_MIB) with --bench-only,
                     else 0 (make test does not run it)
  --timeout SECONDS  wall-clock limit of the guest (default 1200)
  --keep             keep the guest tree (build/softroce/tree) after the run
  --test-bin FILE    run this prebuilt test binary (go test -c -tags rdma of any
                     package) in the guest instead of building fabric/rdma's
  --auto             run only if this machine can (Linux, root or passwordless
                     sudo for apt, Debian's archive reachable or everything
                     cached); otherwise print a boxed notice saying why and
                     exit 0, or, under CI (CI=true), fail with the reason
  -h, --help         this text

environment:
  WEFT_CACHE         cache root (default $HOME/.cache/weft); packages go under softroce/
  SOFTROCE_SIZES     benchmark sizes in bytes, comma-separated (default 64,4096,65536,1048576)
  SOFTROCE_DURATION  fabricbench time per point (default 1s)
  SOFTROCE_INFLIGHT  fabricbench calls in flight per point (default 1,16; 64
                     would add minutes of emulation to every run)
  SOFTROCE_TRANSPORTS fabricbench transports (default tcp,rdma,adaptive)
  SOFTROCE_BENCH_ARGS fabricbench's address flags, split on spaces (default:
                     -tcp-addr, -rdma-addr and -adaptive-paths rdma+tcp on 10.77.0.1)
  SOFTROCE_RACE_SKIP -test.skip of the -race run (default in RACE_SKIP below; empty: none)
  SOFTROCE_RECOVERY_REPS recoveries per path of --recovery, the paths taking turns (default 1)
  SOFTROCE_MEMORY    the guest's memory, as QEMU's -m takes it (default 2G); its /tmp,
                     where the tests and the recovery benchmark keep their data, is a
                     tmpfs of up to 75 % of it (--recovery 1024 needs about 8G)
  CI                 true (any value but empty, 0, false): never skip (--auto fails)
EOF
}

MODE=all
RUN_RE=
RACE_RE=default
BENCH_RE=
COUNT=1
GUEST_TIMEOUT=1200
KEEP=0
AUTO=0
TEST_BIN=
RECOVERY_MIB=default
while [[ $# -gt 0 ]]; do
	case $1 in
	--tests-only) MODE=tests ;;
	--bench-only) MODE=bench ;;
	--host-only) MODE=host ;;
	--run)
		[[ $# -ge 2 ]] || { echo "softroce: --run needs a regular expression" >&2; exit 2; }
		RUN_RE=$2
		shift
		;;
	--race)
		[[ $# -ge 2 && -n $2 ]] || { echo "softroce: --race needs a regular expression, '.' or 'none'" >&2; exit 2; }
		RACE_RE=$2
		shift
		;;
	--bench)
		[[ $# -ge 2 ]] || { echo "softroce: --bench needs a regular expression" >&2; exit 2; }
		BENCH_RE=$2
		shift
		;;
	--count)
		[[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "softroce: --count needs a positive number (got '${2:-}')" >&2; exit 2; }
		COUNT=$2
		shift
		;;
	--timeout)
		[[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -ge 60 ]] || {
			echo "softroce: --timeout needs a number of seconds, at least 60 (got '${2:-}')" >&2
			exit 2
		}
		GUEST_TIMEOUT=$2
		shift
		;;
	--recovery)
		[[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || { echo "softroce: --recovery needs a size in MiB, 0 to skip (got '${2:-}')" >&2; exit 2; }
		RECOVERY_MIB=$2
		shift
		;;
	--keep) KEEP=1 ;;
	--test-bin)
		[[ $# -ge 2 && -x $2 ]] || { echo "softroce: --test-bin needs an executable test binary (got '${2:-}')" >&2; exit 2; }
		TEST_BIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
		shift
		;;
	--auto) AUTO=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "softroce: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib/ci.sh
. "$ROOT/scripts/lib/ci.sh"
OUT=$ROOT/build/softroce
CACHE=${WEFT_CACHE:-${HOME:?neither WEFT_CACHE nor HOME is set: say where the package cache goes}/.cache/weft}/softroce
GUEST_MEMORY=${SOFTROCE_MEMORY:-2G}
DEBS=$CACHE/debs
SIZES=${SOFTROCE_SIZES:-64,4096,65536,1048576}
DURATION=${SOFTROCE_DURATION:-1s}
INFLIGHT=${SOFTROCE_INFLIGHT:-1,16}
TRANSPORTS=${SOFTROCE_TRANSPORTS:-tcp,rdma,adaptive}
# The guest IP (veth0, under rxe0) is where every fabricbench peer listens.
GUEST_IP=10.77.0.1
BENCH_ARGS=${SOFTROCE_BENCH_ARGS:--tcp-addr $GUEST_IP:0 -rdma-addr $GUEST_IP:0 -adaptive-paths rdma:$GUEST_IP:0,tcp:$GUEST_IP:0}
GO=${GO:-go}
# The tests `make test` runs again with the -race binary (--race), and those
# the -race run skips (-test.skip; SOFTROCE_RACE_SKIP overrides it, empty for
# none): the TLS conformance suite (the plain one's code paths again) and the
# plain suite's sequential, one-caller subtests, which the race detector
# makes 3-5 times slower under emulation for little to find; the concurrent
# ones stay (docs/softroce.md says what the -race run costs).
RACE_DEFAULT=.
RACE_SKIP=${SOFTROCE_RACE_SKIP-'^TestConformanceTLS$|^TestConformance$/^(Echo|PingWithoutHandler|OrderingPerCaller|PayloadSizes|TooLarge|Deadline|RemoteErrorCodes|UnknownMethod|HandlerPanicIsAnError|ConnCloseIdempotent|Stats)$'}
# node.test's tests that need the guest's device.
NODE_RE='^TestFabricRDMAPath(OnVerbs|ComesBackAfterDeviceLoss)$|^TestPeerRecoveryCrossesRDMA$'
# --recovery's default with --bench-only: the shard's MiB of documents. The
# guest loads them under emulation first (docs/benchmarks-cluster.md says
# what that costs), and holds the index twice (primary, replica) plus the
# primary's log and snapshot in its 2 GiB of RAM.
RECOVERY_BENCH_MIB=64
RECOVERY_REPS=${SOFTROCE_RECOVERY_REPS:-1}
[[ $RECOVERY_REPS =~ ^[1-9][0-9]*$ ]] || { echo "softroce: SOFTROCE_RECOVERY_REPS must be a positive number (got '$RECOVERY_REPS')" >&2; exit 2; }

# The guest: one rxe device on veth0, both ends of every test on it.
RXE=rxe0
HOST_PKGS=(qemu-system-x86 cpio kmod libibverbs-dev librdmacm-dev)
# Guest userland. rdma-core itself (daemons, udev rules) is not needed.
GUEST_PKGS=(busybox-static iproute2 libc6 libgcc-s1 libibverbs1 ibverbs-providers
	librdmacm1 libibumad3 ibverbs-utils rdmacm-utils perftest libnl-3-200
	libnl-route-3-200 libpci3 libudev1 libbpf1 libelf1 libmnl0 libcap2 libbsd0 libmd0 zlib1g)
# Of iproute2 the guest needs only ip and rdma (the rest pulls in many libraries).
IPROUTE2_KEEP=(bin/ip usr/bin/rdma)
# Modules loaded in the guest, with their dependency closure. crc32_generic is
# needed though nothing declares it: without it `rdma link add` fails.
MODULES=(rdma_rxe rdma_ucm ib_uverbs veth crc32_generic crc32-pclmul 9p 9pnet_virtio virtio_pci)

T0=$SECONDS
PHASE=
PHASE_T=0
TIMINGS=()
log() { echo "softroce: $*"; }
warn() { echo "softroce: WARNING: $*" >&2; }
die() {
	echo "softroce: ERROR: $*" >&2
	exit 1
}
phase() {
	end_phase
	PHASE=$1
	PHASE_T=$SECONDS
	log "== $1: $2"
}
end_phase() {
	if [[ -n $PHASE ]]; then
		TIMINGS+=("$PHASE=$((SECONDS - PHASE_T))s")
		log "   $PHASE took $((SECONDS - PHASE_T)) s"
		PHASE=
	fi
}

as_root() {
	if [[ $EUID -eq 0 ]]; then
		"$@"
	else
		sudo -n "$@"
	fi
}

missing_host_pkgs() {
	local p
	for p in "${HOST_PKGS[@]}"; do
		[[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || echo "$p"
	done
}

cached_deb() { compgen -G "$DEBS/${1}_*.deb" | sort -V | tail -n 1; }

APT_UPDATED=0
apt_update() {
	[[ $APT_UPDATED -eq 1 ]] && return 0
	APT_UPDATED=1
	log "apt-get update"
	mkdir -p "$OUT"
	as_root apt-get update -q >"$OUT/apt-update.log" 2>&1
}

kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}

# can_run prints why this machine cannot run the harness (with --host-only:
# cannot install the host packages) and fails, or succeeds quietly. It may run
# apt-get update (the only way to know the archive answers).
can_run() {
	[[ $(uname -s) == Linux ]] || { echo "not Linux"; return 1; }
	local need_apt=0 p
	[[ -z $(missing_host_pkgs) ]] || need_apt=1
	if [[ $MODE != host ]]; then
		[[ $(uname -m) == x86_64 ]] || { echo "not x86_64 (the guest is amd64)"; return 1; }
		command -v "$GO" >/dev/null || { echo "no Go toolchain ($GO)"; return 1; }
		command -v cc >/dev/null || { echo "no C compiler (cgo needs cc)"; return 1; }
		for p in "${GUEST_PKGS[@]}"; do
			[[ -n $(cached_deb "$p") ]] || need_apt=1
		done
		[[ -n $(compgen -G "$DEBS/linux-image-*.deb") ]] || need_apt=1
	fi
	[[ $need_apt -eq 1 ]] || return 0
	local missing
	missing=$(missing_host_pkgs | paste -sd ' ')
	missing="${missing:+host packages missing ($missing)}"
	[[ $MODE == host ]] || missing="${missing:-guest packages not cached in $DEBS}"
	command -v apt-get >/dev/null || { echo "$missing and no apt-get"; return 1; }
	if [[ $EUID -ne 0 ]] && ! sudo -n true 2>/dev/null; then
		echo "$missing and neither root nor passwordless sudo for apt-get"
		return 1
	fi
	apt_update || true
	[[ -n $(kernel_pkg) ]] || { echo "Debian's archive is not reachable (apt-cache knows no linux-image-amd64)"; return 1; }
}

if [[ $AUTO -eq 1 ]] && ! why=$(can_run); then
	what="the RDMA tests in the Soft-RoCE guest (real verbs on rxe0)"
	then="fabric/rdma's verbs code is NOT tested on this machine"
	if [[ $MODE == host ]]; then
		what="installing the host packages (${HOST_PKGS[*]})"
		then="make vet cannot compile fabric/rdma's verbs code without libibverbs-dev"
	fi
	cannot_run softroce "$what" "$why" "$then" \
		"to run it: Debian/Ubuntu on x86_64 as root (or with passwordless sudo for apt-get), Debian's archive reachable" \
		"then: make test, or make test-rdma for the guest alone (docs/softroce.md)"
	exit 0
fi
if [[ $RACE_RE == default ]]; then
	RACE_RE=none
	[[ -n $RUN_RE || -n $BENCH_RE || -n $TEST_BIN ]] || RACE_RE=$RACE_DEFAULT
fi
[[ $RACE_RE != none ]] || RACE_RE=
[[ $MODE != bench ]] || RACE_RE= # --bench-only runs no tests, so builds no -race binary
if [[ $RECOVERY_MIB == default ]]; then
	RECOVERY_MIB=0
	[[ $MODE != bench ]] || RECOVERY_MIB=$RECOVERY_BENCH_MIB
fi
[[ $MODE != tests ]] || RECOVERY_MIB=0
mkdir -p "$OUT" "$DEBS"

#### host: packages the host needs ##########################################
phase host "host packages (${HOST_PKGS[*]})"
mapfile -t need < <(missing_host_pkgs)
if [[ ${#need[@]} -gt 0 ]]; then
	apt_update || warn "apt-get update failed (see $OUT/apt-update.log); trying with the package lists present"
	log "installing ${need[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=300 "${need[@]}" \
		>"$OUT/apt-install.log" 2>&1 || die "apt-get install ${need[*]} failed; see $OUT/apt-install.log"
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found after installing qemu-system-x86"
if [[ $MODE == host ]]; then
	end_phase
	log "host packages present: ${HOST_PKGS[*]}"
	exit 0
fi

# One run at a time per tree: runs share build/softroce and the CPUs. Every
# run (make test-rdma, make test, anyone's --test-bin run) takes this lock
# for its whole life, so two runs serialize by themselves; the holder writes
# who it is next to the lock, so a waiting run can say what it waits for.
exec 9<>"$OUT/.lock"
if ! flock -n 9; then
	log "another run holds $OUT/.lock ($(cat "$OUT/.lock.holder" 2>/dev/null || echo unknown)); waiting for it"
	waited=$SECONDS
	flock 9
	log "waited $((SECONDS - waited)) s for the other run (not counted in the timings below)"
	T0=$((T0 + SECONDS - waited))
fi
echo "pid $$ since $(date -u +%H:%M:%SZ), mode $MODE${RUN_RE:+, --run $RUN_RE}${BENCH_RE:+, --bench $BENCH_RE}${TEST_BIN:+, --test-bin $TEST_BIN}, --recovery $RECOVERY_MIB" >"$OUT/.lock.holder"

#### fetch: guest packages, cached outside git ##############################
phase fetch "guest packages into $DEBS"
# The cache is shared by every tree on this machine: one writer at a time.
exec 8>"$CACHE/.lock"
flock 8
KPKG=$(kernel_pkg || true)
if [[ -z $KPKG ]]; then
	apt_update || true
	KPKG=$(kernel_pkg || true)
fi
if [[ -z $KPKG ]]; then
	kdeb=$(compgen -G "$DEBS/linux-image-*.deb" | sort -V | tail -n 1 || true)
	[[ -n $kdeb ]] || die "cannot resolve the kernel package linux-image-amd64 depends on (apt-cache has no lists?) and none is cached"
	KPKG=$(basename "$kdeb" | cut -d_ -f1)
	warn "apt-cache cannot resolve linux-image-amd64; using the cached $KPKG"
fi
fetch=()
for p in "$KPKG" "${GUEST_PKGS[@]}"; do
	[[ -n $(cached_deb "$p") ]] || fetch+=("$p")
done
if [[ ${#fetch[@]} -gt 0 ]]; then
	log "downloading ${fetch[*]}"
	dl=(apt-get download -q)
	[[ $EUID -ne 0 ]] || dl+=(-o APT::Sandbox::User=root)
	if ! (cd "$DEBS" && "${dl[@]}" "${fetch[@]}") >"$OUT/apt-download.log" 2>&1; then
		apt_update || true
		(cd "$DEBS" && "${dl[@]}" "${fetch[@]}") >"$OUT/apt-download.log" 2>&1 ||
			die "apt-get download ${fetch[*]} failed; see $OUT/apt-download.log"
	fi
fi
log "kernel package: $KPKG ($(du -sh "$DEBS" | cut -f1) of packages cached)"

# The kernel is unpacked once per version into the cache, with its modules.dep.
kdeb=$(cached_deb "$KPKG")
KDIR=$CACHE/kernel/$(basename "$kdeb" .deb)
if [[ ! -d $KDIR ]]; then
	rm -rf "$KDIR.tmp"
	mkdir -p "$KDIR.tmp"
	dpkg-deb -x "$kdeb" "$KDIR.tmp"
	kv=$(ls "$KDIR.tmp/lib/modules")
	depmod -b "$KDIR.tmp" "$kv"
	mv "$KDIR.tmp" "$KDIR"
fi
KVER=$(ls "$KDIR/lib/modules")
VMLINUZ=$KDIR/boot/vmlinuz-$KVER
[[ -f $VMLINUZ ]] || die "no kernel image at $VMLINUZ"
flock -u 8

#### build: the binaries the guest runs ######################################
phase build "go test -c / go build with -tags rdma"
BIN=$OUT
rm -f "$BIN/rdma.test" "$BIN/rdma-race.test" "$BIN/node.test" "$BIN/fabricbench"
HAVE_TESTS=0
HAVE_NODE_TESTS=0
HAVE_NODE_BIN=0
HAVE_BENCH=0
cd "$ROOT"
if [[ $MODE != bench ]]; then
	if [[ -n $TEST_BIN ]]; then
		cp "$TEST_BIN" "$BIN/rdma.test"
		log "test binary: $TEST_BIN (--test-bin)"
	else
		CGO_ENABLED=1 "$GO" test -c -tags rdma -o "$BIN/rdma.test" ./fabric/rdma ||
			die "building fabric/rdma's tests with -tags rdma failed (above)"
		# The node's own RDMA path (node/fabric_rdma_test.go), on the same device.
		CGO_ENABLED=1 "$GO" test -c -tags rdma -o "$BIN/node.test" ./node ||
			die "building node's tests with -tags rdma failed (above)"
		HAVE_NODE_TESTS=1 HAVE_NODE_BIN=1
	fi
	[[ -x $BIN/rdma.test ]] || die "no test binary at $BIN/rdma.test to run in the guest"
	HAVE_TESTS=1
	if [[ -n $RACE_RE ]]; then
		t=$SECONDS
		CGO_ENABLED=1 "$GO" test -c -race -tags rdma -o "$BIN/rdma-race.test" ./fabric/rdma ||
			die "building fabric/rdma's tests with -race -tags rdma failed (above)"
		log "rdma-race.test built in $((SECONDS - t)) s; the guest runs it with -test.run '$RACE_RE' -test.skip '$RACE_SKIP'"
	fi
fi
if [[ $MODE != tests ]]; then
	CGO_ENABLED=1 "$GO" build -tags rdma -o "$BIN/fabricbench" ./benchmarks/cmd/fabricbench ||
		die "building fabricbench with -tags rdma failed (above)"
	HAVE_BENCH=1
	if [[ $RECOVERY_MIB -gt 0 && $HAVE_NODE_BIN -eq 0 ]]; then
		CGO_ENABLED=1 "$GO" test -c -tags rdma -o "$BIN/node.test" ./node ||
			die "building node's tests (for --recovery) with -tags rdma failed (above)"
		HAVE_NODE_BIN=1
	fi
fi

#### guest: the initramfs ####################################################
phase guest "guest tree and initramfs"
TREE=$OUT/tree
rm -rf "$TREE"
mkdir -p "$TREE"
for p in "${GUEST_PKGS[@]}"; do
	deb=$(cached_deb "$p")
	if [[ $p == iproute2 ]]; then
		tmp=$OUT/iproute2.x
		rm -rf "$tmp"
		dpkg-deb -x "$deb" "$tmp"
		for f in "${IPROUTE2_KEEP[@]}"; do
			mkdir -p "$TREE/$(dirname "$f")"
			cp -a "$tmp/$f" "$TREE/$f"
		done
		rm -rf "$tmp"
	else
		dpkg-deb -x "$deb" "$TREE"
	fi
done
rm -rf "$TREE"/usr/share/{doc,man,info,locale,lintian,bug,bash-completion} "$TREE"/lib/systemd "$TREE"/lib/udev "$TREE"/etc/init.d

# busybox applets only where no real binary of that name exists (busybox's own
# ip would shadow iproute2's, which is why /init calls /bin/ip explicitly).
while read -r applet; do
	name=$(basename "$applet")
	[[ $name == busybox || $name == linuxrc ]] && continue
	real=0
	for d in bin sbin usr/bin usr/sbin; do
		if [[ -e $TREE/$d/$name || -L $TREE/$d/$name ]]; then real=1; fi
	done
	if [[ $real -eq 0 ]]; then
		mkdir -p "$TREE/$(dirname "$applet")"
		ln -s /bin/busybox "$TREE/$applet"
	fi
done < <("$TREE/bin/busybox" --list-full)

# Kernel modules: the dependency closure of MODULES, then depmod on the tree.
mkdir -p "$TREE/lib/modules/$KVER"
cp "$KDIR/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$TREE/lib/modules/$KVER/"
for m in "${MODULES[@]}"; do
	deps=$(modprobe -d "$KDIR" -S "$KVER" --show-depends "$m" 2>&1) || die "kernel $KVER has no module $m: $deps"
	while read -r kind path _; do
		[[ $kind == insmod ]] || continue
		rel=${path#"$KDIR"/}
		mkdir -p "$TREE/$(dirname "$rel")"
		cp "$path" "$TREE/$rel"
	done <<<"$deps"
done
depmod -b "$TREE" "$KVER"

mkdir -p "$TREE"/{proc,sys,dev,tmp,run,out,opt/weft,etc,root}
install -m 0755 "$HERE/guest-init.sh" "$TREE/init"
[[ $HAVE_TESTS -eq 0 ]] || install -m 0755 "$BIN/rdma.test" "$TREE/opt/weft/rdma.test"
[[ $HAVE_NODE_BIN -eq 0 ]] || install -m 0755 "$BIN/node.test" "$TREE/opt/weft/node.test"
[[ -z $RACE_RE ]] || install -m 0755 "$BIN/rdma-race.test" "$TREE/opt/weft/rdma-race.test"
[[ $HAVE_BENCH -eq 0 ]] || install -m 0755 "$BIN/fabricbench" "$TREE/opt/weft/fabricbench"
{
	printf 'MODE=%q\n' "$MODE"
	printf 'RUN_RE=%q\n' "$RUN_RE"
	printf 'RACE_RE=%q\n' "$RACE_RE"
	printf 'RACE_SKIP=%q\n' "$RACE_SKIP"
	printf 'NODE_RE=%q\n' "$NODE_RE"
	printf 'HAVE_NODE_TESTS=%q\n' "$HAVE_NODE_TESTS"
	printf 'RECOVERY_MIB=%q\n' "$RECOVERY_MIB"
	printf 'RECOVERY_REPS=%q\n' "$RECOVERY_REPS"
	printf 'BENCH_RE=%q\n' "$BENCH_RE"
	printf 'COUNT=%q\n' "$COUNT"
	if [[ $MODE == tests ]]; then
		printf 'TEST_TIMEOUT=%q\n' "$((GUEST_TIMEOUT - 60))"
	else
		printf 'TEST_TIMEOUT=%q\n' "$((GUEST_TIMEOUT / 2))"
	fi
	printf 'BENCH_TIMEOUT=%q\n' "$((GUEST_TIMEOUT / 4))"
	printf 'GUEST_IP=%q\n' "$GUEST_IP"
	printf 'RXE=%q\n' "$RXE"
	printf 'SIZES=%q\n' "$SIZES"
	printf 'DURATION=%q\n' "$DURATION"
	printf 'INFLIGHT=%q\n' "$INFLIGHT"
	printf 'TRANSPORTS=%q\n' "$TRANSPORTS"
	printf 'BENCH_ARGS=%q\n' "$BENCH_ARGS"
	printf 'MODULES=%q\n' "${MODULES[*]}"
} >"$TREE/etc/weft-softroce.conf"
ldconfig -r "$TREE"

# Every dynamic ELF must resolve all its libraries inside the tree, as the
# guest's loader will see it (chroot + the tree's own ld.so and ld.so.cache).
in_tree() {
	if [[ $EUID -eq 0 ]]; then
		chroot "$TREE" "$@"
	else
		unshare -r chroot "$TREE" "$@"
	fi
}
bad=0
checked=0
while IFS= read -r -d '' f; do
	[[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == '177ELF' ]] || continue
	rel=/${f#"$TREE"/}
	if ! res=$(in_tree /lib64/ld-linux-x86-64.so.2 --list "$rel" 2>&1); then
		[[ $res == *"not a dynamic executable"* || $res == *"statically linked"* ]] && continue
	fi
	checked=$((checked + 1))
	if [[ $res == *"not found"* ]]; then
		warn "$rel: $(grep 'not found' <<<"$res" | tr -s ' \t\n' ' ')"
		bad=1
	fi
done < <(find "$TREE" -type f ! -name '*.ko' \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)
[[ $bad -eq 0 ]] || die "some ELF files in the guest tree miss libraries (above); add their packages to GUEST_PKGS"
log "$checked dynamic ELF files resolve all their libraries in the guest tree"

(cd "$TREE" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$OUT/initramfs.gz"
log "initramfs $(du -h "$OUT/initramfs.gz" | cut -f1), kernel $KVER"

#### boot ####################################################################
if [[ -d /sys/module/kvm_intel || -d /sys/module/kvm_amd ]] && [[ -w /dev/kvm ]]; then
	ACCEL=kvm
	accel_args=(-enable-kvm -cpu 'host,-arch-capabilities')
else
	ACCEL=tcg
	accel_args=(-accel 'tcg,thread=multi' -cpu max)
fi
phase boot "QEMU ($ACCEL), guest limit ${GUEST_TIMEOUT}s"
GOUT=$OUT/guest-out
rm -rf "$GOUT"
mkdir -p "$GOUT"
set +e
timeout -k 10 "$GUEST_TIMEOUT" qemu-system-x86_64 "${accel_args[@]}" \
	-m "$GUEST_MEMORY" -smp 2 -display none -monitor none -serial stdio -no-reboot -nic none \
	-kernel "$VMLINUZ" -initrd "$OUT/initramfs.gz" \
	-append "console=ttyS0 quiet panic=-1 rdinit=/init" \
	-fsdev "local,id=weftout,path=$GOUT,security_model=none" \
	-device virtio-9p-pci,fsdev=weftout,mount_tag=weftout \
	</dev/null 2>&1 | tr -d '\r' | tee "$OUT/console.log" | sed -u 's/^/  guest| /'
qemu_rc=${PIPESTATUS[0]}
set -e
GUEST_DONE=0
if [[ -f $GOUT/done ]]; then
	GUEST_DONE=1
elif [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
	warn "the guest did not finish within ${GUEST_TIMEOUT}s (raise --timeout); see $OUT/console.log"
else
	warn "the guest stopped before finishing (qemu exit $qemu_rc); see $OUT/console.log"
fi

#### report ##################################################################
phase report "results"
fail=0
if [[ $MODE != tests ]]; then
	if "$GO" run ./scripts/softroce/report -dir "$GOUT" -device "$RXE" -accel "$ACCEL" \
		-json "$OUT/results.json" -table "$OUT/results.txt"; then
		cat "$OUT/results.txt"
		log "results: $OUT/results.json, $OUT/results.txt"
	else
		warn "no benchmark results could be assembled"
		fail=1
	fi
	bench_rc=$(cat "$GOUT/fabricbench.rc" 2>/dev/null || echo missing)
	if [[ $bench_rc != 0 ]]; then
		warn "fabricbench failed in the guest (exit $bench_rc); its stderr ends:"
		tail -n 20 "$GOUT/fabricbench.log" >&2 || true
		fail=1
	elif grep -q '"error":' "$GOUT/fabricbench.jsonl"; then
		warn "$(grep -c '"error":' "$GOUT/fabricbench.jsonl") fabricbench points failed (shown as err in the table); the first:"
		grep -m 1 '"error":' "$GOUT/fabricbench.jsonl" >&2
	fi
	if [[ $RECOVERY_MIB -gt 0 ]]; then
		rec_rc=$(cat "$GOUT/recovery.rc" 2>/dev/null || echo missing)
		[[ ! -f $GOUT/recovery.txt ]] || cp "$GOUT/recovery.txt" "$OUT/recovery.txt"
		if [[ $rec_rc != 0 ]]; then
			warn "the recovery benchmark failed in the guest (exit $rec_rc); its output ends:"
			tail -n 30 "$GOUT/recovery.txt" >&2 || true
			fail=1
		fi
		ref_rc=$(cat "$GOUT/recovery-fabricbench.rc" 2>/dev/null || echo missing)
		if [[ $ref_rc != 0 ]]; then
			warn "fabricbench at the recovery's chunk and window failed in the guest (exit $ref_rc); see $GOUT/recovery-fabricbench.log"
			fail=1
		fi
	fi
fi

# tally NAME adds the verdicts in the guest's NAME.log to passed, failed and
# skipped (subtests included), and one failure when the binary exited
# non-zero (NAME.rc) without a failing test: a panic, a timeout, a data race
# reported outside any test, or a binary that never ran.
passed=0 failed=0 skipped=0
tally() {
	local p f k rc races
	[[ ! -f $GOUT/$1.log ]] || cp "$GOUT/$1.log" "$OUT/$1.log"
	touch "$OUT/$1.log"
	rc=$(cat "$GOUT/$1.rc" 2>/dev/null || echo missing)
	p=$(grep -c -- '--- PASS' "$OUT/$1.log" || true)
	f=$(grep -c -- '--- FAIL' "$OUT/$1.log" || true)
	k=$(grep -c -- '--- SKIP' "$OUT/$1.log" || true)
	races=$(grep -c 'WARNING: DATA RACE' "$OUT/$1.log" || true)
	if [[ $rc != 0 && $f -eq 0 ]]; then
		warn "$1 exited with status $rc without a failing test (panic, timeout, or a race outside a test?); counted as one failure; see $OUT/$1.log"
		f=1
	fi
	[[ $races -eq 0 ]] || warn "$1: the race detector reported $races data races; see $OUT/$1.log"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
	log "$1: $p passed, $f failed, $k skipped ($OUT/$1.log)"
}
if [[ $MODE != bench ]]; then
	tally test
	[[ $HAVE_NODE_TESTS -eq 0 || -n $RUN_RE || -n $BENCH_RE ]] || tally node-test
	[[ -z $RACE_RE ]] || tally race
fi
end_phase
log "timings: ${TIMINGS[*]} total=$((SECONDS - T0))s (accelerator $ACCEL)"
[[ $KEEP -eq 1 ]] || rm -rf "$TREE"

[[ $GUEST_DONE -eq 1 ]] || fail=1
if [[ $MODE != bench ]]; then
	# Benchmarks alone (--bench without --run) pass no test.
	[[ $failed -eq 0 && $skipped -eq 0 && ($passed -gt 0 || (-n $BENCH_RE && -z $RUN_RE)) ]] || fail=1
fi
echo "softroce: $passed passed, $failed failed, $skipped skipped"
exit "$fail"
