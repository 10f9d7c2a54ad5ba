#!/usr/bin/env bash
# The analyzer's speed and memory on one core: writes a synthetic trace of N
# events (t/perf/mix.h), runs `ingero analyze` and `ingero analyze --json` on
# it ROUNDS times, interleaved, and prints events/s, wall time and peak RSS as
# a table (OUT/analyze.txt) and one JSON line per figure (OUT/analyze.json).
# An event is a record of the trace: a call's entry and return are one.
set -u
export LC_ALL=C
. "$(dirname "$0")/bench-lib.sh"

usage="usage: analyze-bench.sh [--events N] [--rounds R] --out DIR --bin DIR --ingero PATH"
events=20000000 rounds=3 out= bin= ingero=
while [ $# -gt 0 ]; do
	case $1 in
	--events) events=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--out) out=$2; shift ;;
	--bin) bin=$2; shift ;;
	--ingero) ingero=$2; shift ;;
	*) echo "$usage" >&2; exit 129 ;;
	esac
	shift
done
[ -n "$out" ] && [ -n "$bin" ] && [ -n "$ingero" ] || { echo "$usage" >&2; exit 129; }
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
w=$(mktemp -d "$out/analyze.XXXXXX") || exit 1
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$w"' EXIT
trap 'exit 130' INT TERM
json=$out/analyze.json table=$out/analyze.txt
: >"$json"
: >"$table"


trace=$w/mix.ing.zst
# the mix ends a nested call or a wakeup's switch whole: a few events more than asked, counted here
events=$("$bin/bench-time" -o "$w/gen" -- "$bin/mkmix" "$events" "$trace") || { echo "analyze-bench: cannot write the trace" >&2; exit 1; }
bytes=$(stat -c %s "$trace")
# the count checks the analyzer read every event before its time is used
"$ingero" analyze --json "$trace" >"$w/report.json" || { echo "analyze-bench: 'ingero analyze --json' failed" >&2; exit 1; }
seen=$(jq .session.events "$w/report.json")
[ "$seen" = "$events" ] || { echo "analyze-bench: the analyzer saw $seen events of $events" >&2; exit 1; }

for ((r = 0; r < rounds; r++)); do
	modes="text json"
	[ $((r % 2)) = 1 ] && modes="json text"
	for mode in $modes; do
		opt=()
		[ $mode = json ] && opt=(--json)
		"$bin/bench-time" -o "$w/$mode" -- "$ingero" analyze "${opt[@]}" "$trace" >/dev/null ||
			{ echo "analyze-bench: 'ingero analyze ${opt[*]}' failed" >&2; exit 1; }
	done
done

say "analyze: $events events ($(awk -v b=$bytes -v n=$events 'BEGIN { printf "%.2f", b / n }') bytes each, written in $(awk -v t=$(field wall_ns "$w/gen") 'BEGIN { printf "%.1f", t / 1e9 }') s), $rounds round(s), interleaved, output to /dev/null"
say "$(printf '%-16s %14s %12s %17s %12s %12s' command 'events/s' 's median' 's min-max' 'user s' 'peak MiB')"
for mode in text json; do
	read -r med lo hi <<<"$(fields wall_ns "$w/$mode" | stats)"
	read -r user _ <<<"$(fields user_ns "$w/$mode" | stats)"
	read -r rss _ <<<"$(fields maxrss_kb "$w/$mode" | stats)"
	eps=$(awk -v n=$events -v t=$med 'BEGIN { printf "%.0f", n / (t / 1e9) }')
	name="analyze"
	[ $mode = json ] && name="analyze --json"
	say "$(printf '%-16s %14s %12.3f %8.3f-%-8.3f %12.3f %12.1f' "$name" $eps \
		$(awk "BEGIN { print $med / 1e9, $lo / 1e9, $hi / 1e9, $user / 1e9, $rss / 1024 }"))"
	emit "{\"bench\":\"analyze\",\"figure\":\"analyze\",\"mode\":\"$mode\",\"events\":$events,\"bytes\":$bytes,\"runs\":$rounds,\"median_ns\":$med,\"min_ns\":$lo,\"max_ns\":$hi,\"user_ns\":$user,\"events_per_s\":$eps,\"peak_rss_kb\":$rss}"
done
