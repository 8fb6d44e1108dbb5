#!/usr/bin/env bash
# elasticdump.sh — install elasticdump (the npm package) into
# ~/.cache/weft/elasticdump and run the export and re-import test against a
# node (httpapi's TestElasticdumpRoundTrip). Opt-in: CI does not run it,
# since it needs the package registry. Without npm it says so and stops.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${HOME}/.cache/weft/elasticdump"
version="${ELASTICDUMP_VERSION:-6.125.1}"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "elasticdump.sh: SKIPPED: npm and node are needed to install and run elasticdump" >&2
	exit 0
fi
if [[ ! -x "$cache/node_modules/.bin/elasticdump" ]]; then
	mkdir -p "$cache"
	echo "elasticdump.sh: installing elasticdump@$version into $cache" >&2
	npm install --prefix "$cache" --no-audit --no-fund "elasticdump@$version" >&2
fi
cd "$root"
WEFT_ELASTICDUMP="$cache/node_modules/.bin/elasticdump" go test -count=1 -run TestElasticdumpRoundTrip -v ./httpapi/
