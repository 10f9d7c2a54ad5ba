#!/usr/bin/env bash
# make demo: record the bundled workload next to a CPU hog on the same CPU,
# then print the report. Needs root (tracefs and uprobes).
set -e
INGERO=${1:-./ingero}
WL=$(dirname "$INGERO")/t/workloads/bin
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ "$(id -u)" != 0 ]; then
	echo "make demo: recording needs root (tracefs and uprobes); run 'sudo make demo'" >&2
	exit 1
fi
taskset -c 0 "$WL/analyze-hog" 60 >"$out/hog" &
hog=$!
trap 'kill $hog 2>/dev/null; rm -rf "$out"' EXIT
echo "== ingero record -- demo workload, beside a CPU hog on its CPU (pid $hog)" >&2
"$INGERO" record -q -o "$out/demo.ing.zst" -- "$WL/demo" >&2
echo "== ingero analyze" >&2
"$INGERO" analyze "$out/demo.ing.zst"
