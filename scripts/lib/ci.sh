# shellcheck shell=bash
# Sourced by the test scripts (scripts/vet-rdma.sh, scripts/softroce/run.sh):
# what a check that cannot run does, in CI and outside it.
#
# CI is the environment variable CI services set (CI=true); .ci/run exports
# CI=true itself, so `make test` there runs under this contract whatever the
# runner sets. Any value but empty, "0" or "false" counts as CI.

# ci_mode succeeds when this run is CI.
ci_mode() {
	case ${CI:-} in
	"" | 0 | false | FALSE | False) return 1 ;;
	*) return 0 ;;
	esac
}

# cannot_run PREFIX WHAT WHY [HOW...] is called when the check WHAT cannot run
# on this machine because of WHY. In CI it prints one error line and exits 1:
# CI never passes without the check. Elsewhere it prints a boxed notice of
# several lines to stderr (WHAT did not run, WHY, each HOW line saying how to
# run it) and returns 0, so a newcomer's `make test` goes on, loudly.
cannot_run() {
	local prefix=$1 what=$2 why=$3
	shift 3
	if ci_mode; then
		echo "$prefix: ERROR: CI=${CI}, but $what cannot run here: $why" >&2
		echo "$prefix: ERROR: CI must not pass without it; fix the machine (the lines below say how) or unset CI to skip it" >&2
		local how
		for how in "$@"; do echo "$prefix: ERROR:   $how" >&2; done
		exit 1
	fi
	local bar='************************************************************************'
	{
		echo "$prefix: $bar"
		echo "$prefix: *** SKIPPED: $what"
		echo "$prefix: *** why: $why"
		local how
		for how in "$@"; do echo "$prefix: *** $how"; done
		echo "$prefix: *** CI (CI=true, which .ci/run sets) fails here instead of skipping."
		echo "$prefix: $bar"
	} >&2
}
