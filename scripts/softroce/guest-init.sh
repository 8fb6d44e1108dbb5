#!/bin/sh
# shellcheck shell=dash # busybox ash: ulimit -l and sleep 0.1 work there
# /init (PID 1) of the Soft-RoCE guest built by scripts/softroce/run.sh.
#
# It brings up one rxe device (rxe0) on veth0, runs the RDMA test binary (and
# node's RDMA tests, and the -race build of the RDMA tests), fabricbench,
# node's peer recovery benchmark (RECOVERY_MIB > 0) and perftest with both
# ends on that device, writes everything to the 9p share "weftout" (the
# host's build/softroce/guest-out) and powers off. The host reads only
# files: test.log/.rc, node-test.log/.rc, race.log/.rc, fabricbench.jsonl,
# recovery-fabricbench.jsonl/.rc, recovery.txt/.rc, perftest/*.txt,
# guest.txt, dmesg.txt, and finally "done".
#
# Rules for this file: busybox's applets run ahead of $PATH, so real binaries
# (iproute2's ip and rdma, perftest) are called by full path; as PID 1 it
# inherits every orphan, so it waits on PIDs, never a bare `wait`.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/tmp

say() { echo "guest: [$(cut -d' ' -f1 /proc/uptime)s] $*"; }
halt() {
	sync
	poweroff -f
	sleep 5
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o size=75% tmpfs /tmp
mount -t tmpfs tmpfs /run
# shellcheck source=/dev/null # written by run.sh
. /etc/weft-softroce.conf

for m in $MODULES; do
	modprobe "$m" || say "modprobe $m failed"
done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 weftout /out; then
	say "cannot mount the results share weftout; dmesg follows"
	dmesg | tail -n 30
	halt
fi
mkdir -p /out/perftest
{
	echo "kernel $(uname -r)"
	echo "cpus $(nproc)"
	grep MemTotal /proc/meminfo
} >/out/guest.txt

# Memory registration needs locked memory.
ulimit -l unlimited

# One rxe device on a veth: rxe does not work across network namespaces and
# not on lo (rdma_cm), so both ends of every test use rxe0.
/bin/ip link set lo up
/bin/ip link add veth0 type veth peer name veth1
/bin/ip addr add "$GUEST_IP/24" dev veth0
/bin/ip link set veth1 up
/bin/ip link set veth0 up
if ! /usr/bin/rdma link add "$RXE" type rxe netdev veth0; then
	say "rdma link add $RXE failed; dmesg follows"
	dmesg | tail -n 30 | tee /out/dmesg.txt
	halt
fi

# Wait for the port to be ACTIVE and for the RoCE v2 GID of GUEST_IP.
port=/sys/class/infiniband/$RXE/ports/1
want=$(echo "$GUEST_IP" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
GID=
i=0
while [ $i -lt 300 ]; do
	if grep -q ACTIVE "$port/state" 2>/dev/null; then
		for g in "$port"/gids/*; do
			n=${g##*/}
			if [ "$(cat "$g" 2>/dev/null)" = "$want" ] &&
				[ "$(cat "$port/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ]; then
				GID=$n
			fi
		done
	fi
	[ -n "$GID" ] && break
	sleep 0.1
	i=$((i + 1))
done
if [ -z "$GID" ]; then
	say "$RXE: port not ACTIVE with a RoCE v2 GID for $GUEST_IP after 30 s (state: $(cat "$port/state" 2>/dev/null))"
	halt
fi
say "$RXE ACTIVE on veth0 ($GUEST_IP), RoCE v2 GID index $GID"
{
	echo "device $RXE"
	echo "gid_index $GID"
	echo "gid $want"
	/usr/bin/ibv_devinfo -v -d "$RXE"
} >>/out/guest.txt 2>&1

export WEFT_RDMA_DEVICE="$RXE" WEFT_RDMA_ADDR="$GUEST_IP" WEFT_RDMA_GUEST=1 WEFT_RDMA_GID_INDEX="$GID" WEFT_RDMA_NETDEV=veth0

# (a) the RDMA transport's tests.
if [ "$MODE" != bench ] && [ -x /opt/weft/rdma.test ]; then
	say "running rdma.test (timeout ${TEST_TIMEOUT}s${RUN_RE:+, -test.run $RUN_RE}${BENCH_RE:+, -test.bench $BENCH_RE})"
	cd /tmp || halt
	set -- -test.v -test.count="${COUNT:-1}" -test.timeout="${TEST_TIMEOUT}s"
	if [ -n "$RUN_RE" ]; then
		set -- "$@" -test.run "$RUN_RE"
	elif [ -n "$BENCH_RE" ]; then
		set -- "$@" -test.run '^$'
	fi
	[ -z "$BENCH_RE" ] || set -- "$@" -test.bench "$BENCH_RE" -test.benchmem
	{
		/opt/weft/rdma.test "$@"
		echo $? >/out/test.rc
	} 2>&1 | tee /out/test.log
	cd /
fi

# (a2) the node's RDMA fabric path (two nodes, a real QP), unless --run
# narrowed the run to some of rdma.test's tests.
if [ "$MODE" != bench ] && [ -z "$RUN_RE" ] && [ -z "$BENCH_RE" ] && [ "$HAVE_NODE_TESTS" = 1 ]; then
	say "running node.test -test.run '$NODE_RE'"
	cd /tmp || halt
	{
		/opt/weft/node.test -test.v -test.count=1 -test.timeout="${TEST_TIMEOUT}s" -test.run "$NODE_RE"
		echo $? >/out/node-test.rc
	} 2>&1 | tee /out/node-test.log
	cd /
fi

# (a3) the RDMA tests again, built with -race (RACE_RE; skipping RACE_SKIP).
if [ "$MODE" != bench ] && [ -n "$RACE_RE" ] && [ -x /opt/weft/rdma-race.test ]; then
	say "running rdma-race.test (-race, -test.run '$RACE_RE', -test.skip '$RACE_SKIP')"
	cd /tmp || halt
	{
		/opt/weft/rdma-race.test -test.v -test.count=1 -test.timeout="${TEST_TIMEOUT}s" \
			-test.run "$RACE_RE" -test.skip "$RACE_SKIP"
		echo $? >/out/race.rc
	} 2>&1 | tee /out/race.log
	cd /
	say "rdma-race.test exit $(cat /out/race.rc)"
fi

# (b) fabricbench: tcp, rdma and adaptive on the same rxe device.
if [ "$MODE" != tests ] && [ -x /opt/weft/fabricbench ]; then
	say "running fabricbench ($TRANSPORTS, sizes $SIZES, $DURATION per point)"
	# shellcheck disable=SC2086 # BENCH_ARGS is a word list on purpose
	timeout "$BENCH_TIMEOUT" /opt/weft/fabricbench -transports "$TRANSPORTS" -json \
		-sizes "$SIZES" -duration "$DURATION" -inflight "${INFLIGHT:-1,16}" $BENCH_ARGS >/out/fabricbench.jsonl 2>/out/fabricbench.log
	echo $? >/out/fabricbench.rc
	say "fabricbench exit $(cat /out/fabricbench.rc), $(wc -l </out/fabricbench.jsonl) result lines"
fi

# (b2) peer recovery over the node's fabric (node.test's
# BenchmarkPeerRecovery): a one-shard index of RECOVERY_MIB MiB recovers a
# replica with the fabric pinned to rdma, to tcp, and free, RECOVERY_REPS
# times; go test's benchmark format (no -test.v) for the host's report.
if [ "$MODE" != tests ] && [ "${RECOVERY_MIB:-0}" -gt 0 ] && [ -x /opt/weft/node.test ]; then
	# Its reference: fabricbench at the stream's chunk and window (1 MiB,
	# 4 in flight), longer per point than above (a 1 MiB point of 1 s is a
	# handful of calls under emulation).
	say "running fabricbench at 1 MiB, 4 in flight, 5s per point (the recovery's reference)"
	# shellcheck disable=SC2086 # BENCH_ARGS is a word list on purpose
	timeout "$BENCH_TIMEOUT" /opt/weft/fabricbench -transports "$TRANSPORTS" -json -sizes 1048576 -duration 5s -inflight 4 \
		$BENCH_ARGS >/out/recovery-fabricbench.jsonl 2>/out/recovery-fabricbench.log
	echo $? >/out/recovery-fabricbench.rc
	say "running node.test BenchmarkPeerRecovery ($RECOVERY_MIB MiB, $RECOVERY_REPS per path)"
	cd /tmp || halt
	WEFT_RECOVERY_MIB=$RECOVERY_MIB WEFT_RECOVERY_REPS=$RECOVERY_REPS /opt/weft/node.test -test.run '^$' \
		-test.bench '^BenchmarkPeerRecovery$' -test.benchtime 1x -test.timeout "${TEST_TIMEOUT}s" >/out/recovery.txt 2>&1
	echo $? >/out/recovery.rc
	cd /
	say "recovery benchmark exit $(cat /out/recovery.rc)"
	grep '^BenchmarkPeerRecovery' /out/recovery.txt
fi

# (c) perftest on the same device: server and client both on rxe0.
# perf_once TOOL SIZE ITERATIONS PORT: one server + one client run of
# /usr/bin/TOOL; the client's output goes to perftest/TOOL-SIZE.txt and its
# wall-clock seconds to perftest/TOOL-SIZE.wall.
perf_once() {
	tool=$1 size=$2 iters=$3 port=$4
	args="-d $RXE -i 1 -x $GID -F -s $size -n $iters -p $port"
	out=/out/perftest/$tool-$size
	# Each end pinned to its own CPU: the guest's TSCs are not synchronized,
	# and perftest converts cycle counts to time.
	# shellcheck disable=SC2086 # args is a word list on purpose
	timeout 120 taskset -c 0 /usr/bin/$tool $args >"$out.server.txt" 2>&1 &
	spid=$!
	try=0
	while :; do
		sleep 0.5
		t0=$(cut -d' ' -f1 /proc/uptime)
		# shellcheck disable=SC2086
		timeout 120 taskset -c 1 /usr/bin/$tool $args "$GUEST_IP" >"$out.txt" 2>&1
		rc=$?
		echo "$t0 $(cut -d' ' -f1 /proc/uptime)" | awk '{ print $2 - $1 }' >"$out.wall"
		try=$((try + 1))
		if [ $rc -ne 0 ] && grep -q "Couldn't connect" "$out.txt" && kill -0 $spid 2>/dev/null && [ $try -lt 20 ]; then
			continue
		fi
		break
	done
	wait $spid
	src=$?
	if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ]; then
		say "$tool -s $size: client exit $rc, server exit $src (see perftest/$tool-$size*.txt)"
	fi
}
# perf TOOL SIZE ITERATIONS PORT runs perf_once again (up to 3 times, on a new
# port) while the result holds inf or nan: perftest calibrates the CPU clock
# against gettimeofday and gives up (0 MHz, so inf) when the emulator is
# preempted during the calibration.
perf() {
	attempt=1
	while :; do
		perf_once "$1" "$2" "$3" $(($4 + 100 * (attempt - 1)))
		grep -Eq '(^|[[:space:]])(inf|-?nan)([[:space:]]|$)' "/out/perftest/$1-$2.txt" || break
		[ $attempt -lt 3 ] || break
		say "$1 -s $2: perftest printed inf/nan (clock calibration failed); again"
		attempt=$((attempt + 1))
	done
}
if [ "$MODE" != tests ]; then
	say "running perftest (ib_send_lat, ib_write_lat, ib_write_bw at $SIZES)"
	p=18515
	for s in $(echo "$SIZES" | tr , ' '); do
		if [ "$s" -le 4096 ]; then n=1000; elif [ "$s" -le 65536 ]; then n=300; else n=50; fi
		perf ib_send_lat "$s" "$n" $p
		perf ib_write_lat "$s" "$n" $((p + 1))
		if [ "$s" -le 4096 ]; then n=2000; elif [ "$s" -le 65536 ]; then n=500; else n=100; fi
		perf ib_write_bw "$s" "$n" $((p + 2))
		p=$((p + 3))
	done
fi

dmesg >/out/dmesg.txt
echo finished >/out/done
say "finished"
halt
