#!/usr/bin/env bash
# ingero's costs beside the bare kernel, perf, trace-cmd and bpftrace, measured
# in one run on the same probes: see t/perf/README.md. Prints a table, writes
# it to OUT/bench.txt and one JSON line per figure to OUT/bench.json; exits 1
# when a sanity check fails (a contender that did not record every call).
set -u
export LC_ALL=C

quick=0 out= bin= ingero= rounds= figures=1,2,3,4,5,6,7,8 contenders=
usage="usage: bench.sh [--quick] [--rounds N] [--figures N,...] [--contenders WHO,...] --out DIR --bin DIR --ingero PATH"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=$2; shift ;;
	--figures) figures=$2; shift ;;
	--contenders) contenders=$2; shift ;;
	--out) out=$2; shift ;;
	--bin) bin=$2; shift ;;
	--ingero) ingero=$2; shift ;;
	*) echo "$usage" >&2; exit 129 ;;
	esac
	shift
done
[ -n "$out" ] && [ -n "$bin" ] && [ -n "$ingero" ] || { echo "$usage" >&2; exit 129; }
case $figures in *[!1-8,]*|"") echo "bench: --figures takes numbers 1 to 8, comma-separated" >&2; exit 129 ;; esac
case ,$figures, in *,4,*) figures=$figures,3 ;; esac	# figure 4 reads the recordings of 3
case $rounds in ''|[1-9]|[1-9][0-9]) ;; *) echo "bench: --rounds takes 1 to 99" >&2; exit 129 ;; esac
bin=$(cd "$bin" && pwd) && ingero=$(cd "$(dirname "$ingero")" && pwd)/$(basename "$ingero") || exit 1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench-lib.sh"
T=/sys/kernel/tracing
# The driver finds the stand-ins beside it through its RUNPATH, which a CUDA set-up's
# LD_LIBRARY_PATH would override with the real libraries, where no probe of ours is.
unset LD_LIBRARY_PATH
[ "$(id -u)" = 0 ] || { echo "bench: run as root (uprobes through tracefs)" >&2; exit 1; }
[ -d $T/instances ] || mount -t tracefs nodev $T 2>/dev/null || { echo "bench: no tracefs at $T (mount -t tracefs nodev $T)" >&2; exit 1; }

if [ $quick = 1 ]; then
	ROUNDS=1 CALLS=20000 RATES="max" RATE_CALLS=40000 MIX="60 4 24" SCHED_LOOPS=20000 SETS=default
else
	ROUNDS=5 CALLS=200000 RATES="100000 200000 400000 max" RATE_CALLS= MIX="2500 4 24" SCHED_LOOPS=200000 SETS=
fi
RATE_THREADS=2	# the driver's threads that share a set rate: more than one thread's uprobes can make on a slow machine
ROUNDS=${rounds:-$ROUNDS}

mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
w=$(mktemp -d "$out/work.XXXXXX") || exit 1
G=ingero_bench_$$
LIB=$bin/libcuda.so.1
RT=$bin/libcudart.so.13
DRV=$bin/bench-driver
json=$out/bench.json table=$out/bench.txt
: >"$json"
: >"$table"
failed=0
bg_pid=

cleanup() {
	[ -n "$bg_pid" ] && kill -INT "$bg_pid" 2>/dev/null && wait "$bg_pid" 2>/dev/null
	remove_uprobes $G
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$w"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t_start=$(date +%s.%N)
elapsed() { awk -v a=$t_start -v b=$(date +%s.%N) 'BEGIN { printf "%.1f s", b - a }'; }
have() { command -v "$1" >/dev/null; }
# Whether figure N was asked for; says so on stderr when it begins.
figure() { case ,$figures, in *,$1,*) echo "bench: figure $1, at $(elapsed)" >&2 ;; *) return 1 ;; esac; }


# --- the probes: ingero's own, copied into our group, so every contender has the same ones ---
# ingero shows the command it runs its uprobes and its instance's events, both named after
# its keeper (a child of ingero): take those of this session.
"$ingero" record -q --returns -o "$w/probes.ing.zst" --lib "$LIB" --lib "$RT" -- \
	sh -c "k=\$(pgrep -P \$PPID -x ingero-cleanup); echo \$k; cat $T/uprobe_events; echo --; cat $T/instances/ingero-\$k/set_event" >"$w/ingero-probes" 2>"$w/probes.err" ||
	{ echo "bench: 'ingero record' failed:" >&2; cat "$w/probes.err" >&2; exit 1; }
ipid=$(head -1 "$w/ingero-probes")
sed '1,/^--$/d' "$w/ingero-probes" | grep -E '^(sched|task):' | tr : / >"$w/sched-events"
sched_bare=()	# bench-bare's options for ingero's scheduler events
while read -r ev; do sched_bare+=(-e "$ev"); done <"$w/sched-events"
grep -E "^[pr]:ingero_$ipid/[^ ]+ ($LIB|$RT):" "$w/ingero-probes" | sed "s,^\\([pr]\\):ingero_$ipid/,\\1:$G/," >"$w/our-probes"
off=$("$bin/bench-bare" offset "$LIB" cuLaunchKernel) || exit 1
LE=$(grep -iE "^p:$G/[^ ]+ $LIB:0x0*${off#0x} " "$w/our-probes" | sed 's,^p:[^/]*/\([^ ]*\).*,\1,')
[ -n "$LE" ] && [ -s "$w/sched-events" ] || { echo "bench: cannot find ingero's probe on cuLaunchKernel in $LIB" >&2; exit 1; }
# ingero names a return event after its entry: entry_N/return_N (probes grouped by library), or API_N/API_N_ret.
case "$LE" in entry_*) LR=return_${LE#entry_} ;; *) LR=${LE}_ret ;; esac
{ cat "$w/our-probes"; echo "p:$G/launch0 $LIB:$off"; echo "r:$G/launch0_ret $LIB:$off"; } |
	while read -r line; do echo "$line" >>$T/uprobe_events || exit 1; done || { echo "bench: cannot add uprobes" >&2; exit 1; }
grep -q "^r:$G/$LR " $T/uprobe_events || { echo "bench: no return probe '$LR' beside '$LE'" >&2; exit 1; }
nprobes=$(grep -c "^[pr]:$G/" $T/uprobe_events)

# trace-cmd opens set_ftrace_pid and its kin and writes ftrace_enabled, which this kernel
# refuses: it runs in a mount namespace of its own where those are harmless plain files.
cat >"$w/no-ftrace" <<EOF
#!/bin/sh
for f in set_ftrace_pid set_ftrace_notrace_pid set_ftrace_filter set_ftrace_notrace; do
	: >"$w/\$f" && mount --bind "$w/\$f" $T/\$f 2>/dev/null
done
echo 1 >"$w/ftrace_enabled" && mount --bind "$w/ftrace_enabled" /proc/sys/kernel/ftrace_enabled 2>/dev/null
exec "\$@"
EOF
chmod +x "$w/no-ftrace"
trace_cmd() { unshare -m --propagation private "$w/no-ftrace" trace-cmd "$@"; }

# Past the first figure a quick run leaves the peers out, to stay within seconds.
peers_here=1
peer_ok() {
	[ $peers_here = 1 ] || case $1 in perf*|trace-cmd*|bpftrace*) return 1 ;; esac
	case $1 in
	perf) have perf ;;
	trace-cmd*) have trace-cmd && have unshare ;;
	bpftrace*) have bpftrace && [ "${bpftrace_ok:-1}" = 1 ] ;;
	*) true ;;
	esac
}
bpftrace_ok=1
if have bpftrace && ! timeout 30 bpftrace -e "uprobe:$LIB:cuLaunchKernel { @n = count(); }" -c "$DRV loop 10" >"$w/bt-probe" 2>&1; then
	bpftrace_ok=0
	bpftrace_why=$(grep -m1 -i error "$w/bt-probe")
fi
why_skipped() {
	[ $peers_here = 1 ] || { echo "quick run"; return; }
	case $1 in
	perf) echo "perf not installed (Debian: linux-perf)" ;;
	trace-cmd*) echo "trace-cmd or unshare not installed" ;;
	bpftrace*) have bpftrace && echo "bpftrace refuses: ${bpftrace_why:-?}" || echo "bpftrace not installed" ;;
	esac
}

# --- running one contender: trace the driver, leave its output in $w/drv and the counts in $w/cnt ---
# Each counts what it recorded itself: "ENTRIES RETURNS LOST" for the launch probes.
count_lines() { awk -v a="$2" -v b="$3" '$0 ~ a { e++ } $0 ~ b { r++ } END { print e + 0, r + 0 }' "$1"; }

# What WHO recorded of the launch probes in its files at F (F.err, F.ing.zst, F.data, F.dat).
recorded() { # who f
	local e=$LE r=$LR
	[ $1 = bare0 ] && e=launch0 r=launch0_ret
	case $1 in
	bare*)
		echo "$(field "$G/$e" "$2.err") $(field "$G/$r" "$2.err" | grep . || echo 0) $(field lost "$2.err")" ;;
	ingero*) ingero_count "$2.ing.zst" ;;
	perf) perf_count "$2.data" ;;
	trace-cmd*)
		trace-cmd report -i "$2.dat" 2>/dev/null >"$2.txt" && echo "$(count_lines "$2.txt" " $LE:" " $LR:") 0" ;;
	esac
}

trace() {
	local who=$1; shift
	local f=$w/rec.$who
	rm -f "$w/drv" "$w/cnt" "$f"*
	case $who in
	none)
		"$@" >"$w/drv" && echo "0 0 0" >"$w/cnt" ;;
	bare0|bare)
		local e=$LE r=$LR
		[ $who = bare0 ] && e=launch0 r=launch0_ret
		"$bin/bench-bare" -e "$G/$e" -e "$G/$r" -- "$@" >"$w/drv" 2>"$f.err" && recorded $who "$f" >"$w/cnt" ;;
	bare-entry)
		"$bin/bench-bare" -e "$G/$LE" -- "$@" >"$w/drv" 2>"$f.err" && recorded $who "$f" >"$w/cnt" ;;
	ingero)
		"$ingero" record -q -o "$f.ing.zst" -- "$@" >"$w/drv" 2>"$f.err" && recorded $who "$f" >"$w/cnt" ;;
	ingero-ret)
		"$ingero" record -q --returns -o "$f.ing.zst" -- "$@" >"$w/drv" 2>"$f.err" && recorded $who "$f" >"$w/cnt" ;;
	ingero-*)
		"$ingero" record -q -e "${who#ingero-}" -o "$f.ing.zst" -- "$@" >"$w/drv" 2>"$f.err" &&
			recorded $who "$f" >"$w/cnt" ;;
	perf)
		perf record -q -e "$G:$LE" -e "$G:$LR" -o "$f.data" -- "$@" >"$w/drv" 2>"$f.err" && recorded $who "$f" >"$w/cnt" ;;
	trace-cmd|trace-cmd-mono)
		# its own default trace clock (local), or ingero's (mono), whose reading costs more on some machines
		local clock=()
		[ $who = trace-cmd-mono ] && clock=(-C mono)
		trace_cmd record -q "${clock[@]}" -e "$G:$LE" -e "$G:$LR" -F -c -o "$f.dat" "$@" >"$w/drv" 2>"$f.err" &&
			recorded $who "$f" >"$w/cnt" ;;
	bpftrace-hist)
		timeout 120 bpftrace -o "$f.txt" -e "
			uprobe:$LIB:cuLaunchKernel /pid == cpid/ { @start[tid] = nsecs; @e = count(); }
			uretprobe:$LIB:cuLaunchKernel /pid == cpid && @start[tid]/ {
				@ns = hist(nsecs - @start[tid]); delete(@start[tid]); @r = count(); }" \
			-c "$*" >"$w/drv" 2>"$f.err" &&
			echo "$(sed -n 's/^@e: //p' "$f.txt" | grep . || echo 0) $(sed -n 's/^@r: //p' "$f.txt" | grep . || echo 0) 0" >"$w/cnt" ;;
	bpftrace-print)
		timeout 120 bpftrace -o "$f.txt" -e "
			uprobe:$LIB:cuLaunchKernel /pid == cpid/ { printf(\"E %d %lx %u %u %u %u %u\\n\", tid, arg0, arg1, arg2, arg3, arg4, arg5); }
			uretprobe:$LIB:cuLaunchKernel /pid == cpid/ { printf(\"R %d %u\\n\", tid, retval); }" \
			-c "$*" >"$w/drv" 2>"$f.err" &&
			echo "$(count_lines "$f.txt" "^E " "^R ") $(sed -n 's/.*Lost \([0-9]*\) events.*/\1/p' "$f.err" "$f.txt" | awk '{ s += $1 } END { print s + 0 }')" >"$w/cnt" ;;
	esac
}

# Attaches WHO to the running loop PID for SECONDS, from the moment it is called; the counts in $w/cnt.
attach() { # who pid seconds
	local who=$1 pid=$2 s=$3 f=$w/att.$1
	rm -f "$w/cnt" "$f"*
	case $who in
	none) sleep "$s" && echo "0 0 0" >"$w/cnt"; return ;;
	bare) "$bin/bench-bare" -p "$pid" -e "$G/$LE" -e "$G/$LR" -- sleep "$s" 2>"$f.err" ;;
	ingero-ret) "$ingero" record -q --returns -p "$pid" --duration "$s" -o "$f.ing.zst" 2>"$f.err" ;;
	perf) perf record -q -e "$G:$LE" -e "$G:$LR" -p "$pid" -o "$f.data" -- sleep "$s" 2>"$f.err" ;;
	trace-cmd)
		timeout --preserve-status -s INT "$s" unshare -m --propagation private "$w/no-ftrace" \
			trace-cmd record -q -e "$G:$LE" -e "$G:$LR" -P "$pid" -o "$f.dat" >/dev/null 2>"$f.err" ;;
	esac && recorded $who "$f" >"$w/cnt"
}

# Those of the contenders named that --contenders asked for, beside the two rows every
# ratio needs: no tracer and the kernel's own pair.
asked() {
	local who
	for who; do
		case $who,${contenders:-$who}, in none,*|bare,*|*,$who,*) echo $who ;; esac
	done | tr '\n' ' '
}

# ingero's count: the launches (driver's and runtime's) that analyze sees, and those of them with a return.
ingero_count() {
	local n r lost
	"$ingero" analyze --json "$1" >"$1.json" 2>/dev/null || { echo "0 0 -1"; return; }
	n=$(jq '[.apis[] | select(.name == "cuLaunchKernel" or .name == "cudaLaunchKernel") | .calls] | add // 0' "$1.json")
	r=$(jq '[.apis[] | select((.name == "cuLaunchKernel" or .name == "cudaLaunchKernel") and (.entry_only | not)) | .calls] | add // 0' "$1.json")
	lost=$(jq '.lost_events.total // 0' "$1.json")
	echo "$n $r $lost"
}

# perf 6.1 writes some samples twice when its buffer wraps: count each (cpu, time, event) once.
perf_count() {
	perf script -i "$1" -F cpu,time,event --ns 2>/dev/null | sort -u >"$1.txt"
	echo "$(count_lines "$1.txt" " $G:$LE:" " $G:$LR:") $(perf report -i "$1" --stats 2>/dev/null | awk '/LOST/ { s += $NF } END { print s + 0 }')"
}

# The count check: a contender that missed calls would look fast.
counted_ok() { # entries returns: expected
	local e r
	read -r e r _ <"$w/cnt" 2>/dev/null || return 1
	[ "$e" = "$1" ] && [ "$r" = "$2" ]
}

order() { # round, names...: each round starts one further along, so no contender always goes first
	local k=$1; shift
	local n=$#
	local i
	for ((i = 0; i < n; i++)); do
		local j=$(((i + k) % n + 1))
		echo "${!j}"
	done
}

label() {
	case $1 in
	none) echo "no tracer" ;;
	bare0) echo "kernel, no fetch args" ;;
	bare) echo "kernel, ingero's args" ;;
	bare-entry) echo "kernel, entry only" ;;
	ingero) echo "ingero (default: entry)" ;;
	ingero-ret) echo "ingero --returns" ;;
	ingero-*) echo "ingero -e ${1#ingero-}" ;;
	perf) echo "perf record" ;;
	trace-cmd) echo "trace-cmd record" ;;
	trace-cmd-mono) echo "trace-cmd record -C mono" ;;
	bpftrace-hist) echo "bpftrace, histogram" ;;
	bpftrace-print) echo "bpftrace, printf each" ;;
	*) echo "$1" ;;
	esac
}

# One figure's medians: FILE has "WHO VALUE STATUS" rows; prints "median min max runs status" for WHO.
summarise() { # file who
	local vals st
	vals=$(awk -v w="$2" '$1 == w && $3 == "ok" { print $2 }' "$1")
	st=$(awk -v w="$2" '$1 == w && $3 != "ok" { print $3; exit }' "$1")
	[ -n "$vals" ] || { echo "- - - 0 ${st:-skipped}"; return; }
	echo "$(echo "$vals" | stats) $(echo "$vals" | wc -l) ${st:-ok}"
}

# Ratios of medians, and the median of the ratios within each round, which the drift between rounds leaves alone.
paired() { # file who base: over the rounds both completed, the median, least and greatest of who's ns/call over base's
	awk -v a="$2" -v b="$3" '$3 == "ok" && ($1 == a || $1 == b) { v[$1, $4] = $2; r[$4] = 1 }
		END { for (i in r) if ((a, i) in v && v[b, i] > 0) print v[a, i] / v[b, i] }' "$1" | stats
}
# The rounds' spread is said beside the verdict: where it straddles the limit, the noise outweighs the difference.
ratio_goal() { # file figure label who base limit
	local m b r lo hi
	read -r m _ <<<"$(summarise "$1" $4)"
	read -r b _ <<<"$(summarise "$1" $5)"
	read -r r lo hi <<<"$(paired "$1" $4 $5)"
	say "goal: $3 <= $6: $(awk -v m="$m" -v b="$b" -v r="${r:--}" -v lo="$lo" -v hi="$hi" -v l="$6" 'BEGIN { if (m == "-" || b == "-" || r == "-") print "not measured"; else printf "%.3f on medians, %.3f paired by round (rounds %.3f-%.3f), %s", m / b, r, lo, hi, r <= l ? "met" : "NOT met" }')"
	emit "{\"figure\":\"$2-goal\",\"contender\":\"$4\",\"base\":\"$5\",\"paired_ratio\":${r:-null},\"paired_min\":${lo:-null},\"paired_max\":${hi:-null},\"limit\":$6}"
}

say "ingero benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) CPUs$([ $quick = 1 ] && echo ', quick')"
say "probes: ingero's own definitions on private copies of the stand-ins ($nprobes uprobes in group $G)"
say ""

if figure 1; then
	# ==== 1. cost per traced launch ====
	# Each probe set of 'ingero probes', and how many of the loop's two launch calls it probes.
	"$ingero" probes | awk '/^[a-z-]+ \((default|opt-in)\):/ { set = $1; k[set] = 0; order[++n] = set; next }
		{ for (i = 2; i <= NF; i++) if ($i == "cuLaunchKernel" || $i == "cudaLaunchKernel") k[set]++ }
		END { for (i = 1; i <= n; i++) { print order[i], k[order[i]]; all += k[order[i]] }; print "all", all }' >"$w/sets"
	ingero_expected() { [ "$1" = default ] && echo "$CALLS" || echo $((CALLS * $(awk -v s="$1" '$1 == s { print $2 }' "$w/sets"))); }
	sets=${SETS:-$(cut -d' ' -f1 "$w/sets" | tr '\n' ' ')}
	cost_who="none bare0 bare bare-entry ingero ingero-ret perf trace-cmd trace-cmd-mono bpftrace-hist bpftrace-print"
	for s in $sets; do [ "$s" != default ] && cost_who="$cost_who ingero-$s"; done
	cost_who=$(asked $cost_who)
	: >"$w/cost"
	for ((round = 0; round < ROUNDS; round++)); do
		for who in $(order $round $cost_who); do
			peer_ok $who || continue
			if trace $who "$DRV" loop $CALLS && [ -s "$w/drv" ]; then
				ns=$(field ns_per_call "$w/drv")
				# launches are probed at entries alone but with --returns and in the kernel's own rows
				want=$CALLS rets=$CALLS
				case $who in
				none) want=0 rets=0 ;;
				bare-entry|ingero) rets=0 ;;
				ingero-ret) ;;
				ingero-*) want=$(ingero_expected "${who#ingero-}") rets=0 ;;
				esac
				if [ $who = none ] || counted_ok $want $rets; then
					echo "$who $ns ok $round" >>"$w/cost"
				else
					echo "$who $ns miscount:$(tr ' ' / <"$w/cnt" 2>/dev/null)" >>"$w/cost"
					# what it said, and the driver's own count, for a look afterwards
					cat "$w/rec.$who.err" "$w/drv" >"$out/miscount.$who.$round.txt" 2>/dev/null
				fi
			else
				echo "$who - failed:$(tail -1 "$w/rec.$who.err" 2>/dev/null | tr ' ' _)" >>"$w/cost"
			fi
		done
	done

	say "1. cost per traced launch: cudaLaunchKernel -> cuLaunchKernel, $CALLS calls a run, $ROUNDS round(s) interleaved"
	say "$(printf '%-26s %10s %17s %10s %8s  %s' contender 'ns/call' 'min-max' overhead 'x kernel' check)"
	read -r base _ <<<"$(summarise "$w/cost" none)"
	read -r kern _ <<<"$(summarise "$w/cost" bare)"
	for who in $cost_who; do
		if ! peer_ok $who; then
			say "$(printf '%-26s %s' "$(label $who)" "skipped: $(why_skipped $who)")"
			emit "{\"figure\":\"cost\",\"contender\":\"$who\",\"status\":\"skipped\",\"why\":\"$(why_skipped $who)\"}"
			continue
		fi
		read -r med lo hi runs st <<<"$(summarise "$w/cost" $who)"
		if [ "$med" = - ]; then
			# a peer that dropped events in every round: its finding, not the harness's failure
			case $who:$st in
			bare*|ingero*|*:failed*) failed=1 st_json=failed ;;
			*) st_json=$st ;;
			esac
			say "$(printf '%-26s %s' "$(label $who)" "$([ $st_json = failed ] && echo FAILED || echo 'no complete run'): $st")"
			emit "{\"figure\":\"cost\",\"contender\":\"$who\",\"status\":\"$st_json\",\"why\":\"$st\"}"
			continue
		fi
		[ $who = none ] && ratio=- || ratio=$(awk -v m="$med" -v k="$kern" 'BEGIN { if (k > 0) printf "%.3f", m / k; else print "null" }')
		over=$(awk -v m="$med" -v b="$base" 'BEGIN { printf "%.1f", m - b }')
		# A peer that drops events is a finding; the floor or ingero missing calls is a broken harness.
		[ "$st" = ok ] || case $who in bare*|ingero*) failed=1 ;; esac
		say "$(printf '%-26s %10.1f %8.1f-%-8.1f %10s %8s  %s' "$(label $who)" "$med" "$lo" "$hi" "$over" "$ratio" "$st")"
		emit "{\"figure\":\"cost\",\"contender\":\"$who\",\"calls\":$CALLS,\"runs\":$runs,\"median_ns\":$med,\"min_ns\":$lo,\"max_ns\":$hi,\"overhead_ns\":$over,\"ratio_to_kernel\":${ratio/-/null},\"status\":\"$st\"}"
	done
	say "(a miscount row: ENTRIES/RETURNS/LOST of its worst run; its times are those of its complete runs)"
	ratio_goal "$w/cost" cost "ingero --returns / kernel, same probes" ingero-ret bare 1.10
	ratio_goal "$w/cost" cost "ingero (default) / kernel, entry only" ingero bare-entry 1.10
	peer_ok perf && ratio_goal "$w/cost" cost "ingero --returns / perf record" ingero-ret perf 1.00
	peer_ok trace-cmd && ratio_goal "$w/cost" cost "ingero --returns / trace-cmd record" ingero-ret trace-cmd 1.00
	peer_ok trace-cmd && ratio_goal "$w/cost" cost "ingero --returns / trace-cmd record, ingero's clock" ingero-ret trace-cmd-mono 1.00
	say ""

fi
[ $quick = 1 ] && peers_here=0
# The launch0 probes sit on cuLaunchKernel too: out of the way of the next figures.
for ev in launch0 launch0_ret; do echo "-:$G/$ev" >>$T/uprobe_events; done

if figure 2; then
	# ==== 2. lossless rate ====
	rate_who="bare ingero ingero-ret perf trace-cmd bpftrace-hist bpftrace-print"
	: >"$w/rate"
	for ((round = 0; round < (quick ? 1 : 3); round++)); do
		for rate in $RATES; do
			for who in $(order $round $rate_who); do
				peer_ok $who || continue
				if [ $rate = max ]; then
					n=${RATE_CALLS:-$((CALLS * 4))}
					trace $who "$DRV" loop $n
					got=$(awk '{ printf "%.0f", $0 }' <<<"$(field ns_per_call "$w/drv" | awk '{ print 1e9 / $1 }')")
				else
					n=${RATE_CALLS:-$rate}
					trace $who "$DRV" paced $n $rate $RATE_THREADS
					got=$(field rate "$w/drv")
				fi
				read -r e r lost <"$w/cnt" 2>/dev/null || e=0 r=0 lost=?
				echo "$rate $who $n $((e + r)) $lost ${got:-0}" >>"$w/rate"
			done
		done
	done
	say "2. lossless rate: launches at a set rate for ~1 s shared by $RATE_THREADS threads (max: one thread back to back), default buffers, events expected vs recorded (worst of the rounds)"
	say "$(printf '%-10s %-24s %10s %12s %12s %10s  %s' rate contender 'calls/s' expected recorded 'lost(own)' verdict)"
	for rate in $RATES; do
		for who in $rate_who; do
			if ! peer_ok $who; then
				say "$(printf '%-10s %-24s %s' $rate "$(label $who)" "skipped: $(why_skipped $who)")"
				emit "{\"figure\":\"rate\",\"rate\":\"$rate\",\"contender\":\"$who\",\"status\":\"skipped\"}"
				continue
			fi
			# the worst round: the fewest events recorded
			read -r n rec lost got <<<"$(awk -v r=$rate -v w=$who '$1 == r && $2 == w { if (!seen || $4 < min) { min = $4; line = $3 " " $4 " " $5 " " $6 }; seen = 1 } END { print line }' "$w/rate")"
			# an event a launch with ingero's default probes, its entry; two for the others
			per=2
			[ $who = ingero ] && per=1
			exp=$((per * n))
			verdict=$([ "$rec" = "$exp" ] && echo lossless || echo "LOST $((exp - rec))")
			say "$(printf '%-10s %-24s %10s %12s %12s %10s  %s' $rate "$(label $who)" "$got" $exp $rec "$lost" "$verdict")"
			emit "{\"figure\":\"rate\",\"rate\":\"$rate\",\"contender\":\"$who\",\"calls_per_s\":$got,\"expected\":$exp,\"recorded\":$rec,\"lost_reported\":\"$lost\",\"lossless\":$([ "$rec" = "$exp" ] && echo true || echo false)}"
		done
	done
	say ""

fi

if figure 3; then
	# ==== 3. size, on a realistic mix ====
	read -r mix_iters mix_threads mix_noise <<<"$MIX"
	mix_cmd=("$DRV" mix $mix_iters $mix_threads $mix_noise)
	sched_e=() tc_e=() perf_e=() bare_e=()
	while read -r ev; do bare_e+=(-e "$ev"); tc_e+=(-e "${ev/\//:}"); perf_e+=(-e "${ev/\//:}"); done <"$w/sched-events"
	while read -r ev; do bare_e+=(-e "$G/$ev"); done < <(sed -n "s,^[pr]:$G/\\([^ ]*\\).*,\\1,p" $T/uprobe_events)
	tc_e+=(-e "$G")
	perf_e+=(-e "$G:*")
	# kernel events: each uprobe hit and each scheduler event; ingero keeps a call (entry and return) as one
	ingero_events() { jq '.session.events_by_stream | 2 * .call + .open + .switch + .wakeup + .task' "$1"; }
	: >"$w/size"
	"$bin/bench-bare" "${bare_e[@]}" -- "${mix_cmd[@]}" >/dev/null 2>"$w/mix.bare" &&
		echo "bare 0 $(awk '/^bench-bare:/ { for (i = 2; i <= NF; i++) if ($i !~ /^(other|lost)=/) { sub(/.*=/, "", $i); s += $i } } END { print s }' "$w/mix.bare")" >>"$w/size"
	"$ingero" record -q --returns -o "$w/mix.ing.zst" -- "${mix_cmd[@]}" >/dev/null 2>&1 &&
		"$ingero" analyze --json "$w/mix.ing.zst" >"$w/mix.json" 2>/dev/null &&
		echo "ingero $(stat -c %s "$w/mix.ing.zst") $(ingero_events "$w/mix.json")" >>"$w/size"
	if peer_ok trace-cmd; then
		trace_cmd record -q "${tc_e[@]}" -F -c --file-version 7 --compression zstd -o "$w/mix.dat" "${mix_cmd[@]}" >/dev/null 2>&1 &&
			echo "trace-cmd $(stat -c %s "$w/mix.dat") $(trace-cmd report -i "$w/mix.dat" 2>/dev/null | grep -cE '^ *.*-[0-9]+ +\[[0-9]+\]')" >>"$w/size"
fi
if peer_ok perf; then
	for z in -z ""; do
		perf record -q $z "${perf_e[@]}" -o "$w/mix$z.data" -- "${mix_cmd[@]}" >/dev/null 2>&1 &&
			echo "perf$z $(stat -c %s "$w/mix$z.data") $(perf script -i "$w/mix$z.data" -F cpu,time,event --ns 2>/dev/null | sort -u | wc -l)" >>"$w/size"
	done
fi
say "3. size: the mix ($mix_threads threads of alloc/copy/launch/sync/free with varied sizes and gaps, $mix_noise tasks that sleep and wake), ingero's default set with the launches' returns, and scheduler events, for every contender"
say "$(printf '%-28s %12s %14s %12s' file bytes 'kernel events' bytes/event)"
for who in bare ingero trace-cmd perf-z perf; do
	case $who in
	bare) name="(kernel: events delivered)" ;; ingero) name=".ing.zst" ;; trace-cmd) name="trace.dat (zstd)" ;;
	perf-z) name="perf.data -z" ;; perf) name="perf.data" ;;
	esac
	read -r _ bytes events <<<"$(grep "^$who " "$w/size")"
	if [ -z "${events:-}" ]; then
		peer_ok ${who%-z} && { st=failed; failed=1; } || st="skipped: $(why_skipped ${who%-z})"
		say "$(printf '%-28s %s' "$name" "$st")"
		emit "{\"figure\":\"size\",\"contender\":\"$who\",\"status\":\"${st%%:*}\"}"
		continue
	fi
	bpe=$(awk -v b=$bytes -v e=$events 'BEGIN { printf "%.2f", e ? b / e : 0 }')
	say "$(printf '%-28s %12s %14s %12s' "$name" $([ $who = bare ] && echo - || echo $bytes) $events $([ $who = bare ] && echo - || echo $bpe))"
	emit "{\"figure\":\"size\",\"contender\":\"$who\",\"bytes\":$bytes,\"events\":$events,\"bytes_per_event\":$bpe}"
done
say ""

fi

if figure 4; then
	# ==== 4. decode and analyze speed, on the mix recordings ====
	: >"$w/decode"
	dec_who="ingero-analyze ingero-dump trace-cmd-report perf-script"
	decode() {
		case $1 in
		ingero-analyze) [ -s "$w/mix.ing.zst" ] && "$bin/bench-time" -o "$w/t" -- "$ingero" analyze "$w/mix.ing.zst" ;;
		ingero-dump) [ -s "$w/mix.ing.zst" ] && "$bin/bench-time" -o "$w/t" -- "$ingero" dump "$w/mix.ing.zst" ;;
		trace-cmd-report) [ -s "$w/mix.dat" ] && "$bin/bench-time" -o "$w/t" -- trace-cmd report -i "$w/mix.dat" ;;
		perf-script) [ -s "$w/mix-z.data" ] && "$bin/bench-time" -o "$w/t" -- perf script -i "$w/mix-z.data" ;;
		esac
	}
	for ((round = 0; round < ROUNDS; round++)); do
		for who in $(order $round $dec_who); do
			rm -f "$w/t"
			if decode $who >/dev/null 2>"$w/dec.err"; then
				echo "$who $(field wall_ns "$w/t") ok $(field maxrss_kb "$w/t")" >>"$w/decode"
			else
				echo "$who - $(head -1 "$w/dec.err" | tr ' ' _ | cut -c1-60)" >>"$w/decode"
			fi
		done
	done
	say "4. decode and analyze: the mix recordings read $ROUNDS time(s), interleaved, output to /dev/null"
	say "$(printf '%-20s %14s %12s %17s %12s' reader 'events/s' 'ms median' 'ms min-max' 'peak MB')"
	for who in $dec_who; do
		case $who in ingero-*) src=ingero ;; trace-cmd-*) src=trace-cmd ;; perf-*) src=perf-z ;; esac
		read -r _ _ events <<<"$(grep "^$src " "$w/size")"
		read -r med lo hi runs st <<<"$(summarise "$w/decode" $who)"
		if [ "$med" = - ]; then
			say "$(printf '%-20s %s' $who "not measured: ${st//_/ }")"
			emit "{\"figure\":\"decode\",\"reader\":\"$who\",\"status\":\"skipped\",\"why\":\"${st//_/ }\"}"
			continue
		fi
		rss=$(awk -v w=$who '$1 == w && $3 == "ok" { print $4 }' "$w/decode" | stats | cut -d' ' -f1)
		eps=$(awk -v e=${events:-0} -v t=$med 'BEGIN { printf "%.0f", e / (t / 1e9) }')
		say "$(printf '%-20s %14s %12.1f %8.1f-%-8.1f %12.1f' $who $eps $(awk "BEGIN { print $med / 1e6, $lo / 1e6, $hi / 1e6, $rss / 1024 }"))"
		emit "{\"figure\":\"decode\",\"reader\":\"$who\",\"events\":${events:-0},\"runs\":$runs,\"median_ns\":$med,\"min_ns\":$lo,\"max_ns\":$hi,\"events_per_s\":$eps,\"peak_rss_kb\":$rss}"
	done
	say ""

fi

if figure 5; then
	# ==== 5. scheduler cost per context switch ====
	# perf bench sched pipe on one CPU: each op is a round trip, two context switches.
	sched_who="none bare bare-all ingero ingero-all"
	[ $quick = 1 ] && sched_who="none bare ingero"
	: >"$w/sched"
	wait_instance() { # pid: until its instance traces (named after its keeper, a child of ingero)
		local i k
		for ((i = 0; i < 300; i++)); do
			k=$(pgrep -P "$1" -x ingero-cleanup)
			[ -n "$k" ] && [ "$(cat $T/instances/ingero-$k/tracing_on 2>/dev/null)" = 1 ] && return 0
			kill -0 "$1" 2>/dev/null || return 1
			sleep 0.05
		done
		return 1
	}
	sched_run() {
		local pipe=(taskset -c 0 perf bench sched pipe -l $SCHED_LOOPS) sw=
		rm -f "$w/sched.out" "$w/sched.ing.zst"*
		case $1 in
		none) "${pipe[@]}" >"$w/sched.out" 2>&1 && sw=nocheck ;;
		bare) "$bin/bench-bare" "${sched_bare[@]}" -- "${pipe[@]}" >"$w/sched.out" 2>"$w/sched.err" ;;
		bare-all) "$bin/bench-bare" -a "${sched_bare[@]}" -- "${pipe[@]}" >"$w/sched.out" 2>"$w/sched.err" ;;
		ingero) "$ingero" record -q -o "$w/sched.ing.zst" -- "${pipe[@]}" >"$w/sched.out" 2>"$w/sched.err" ;;
		ingero-all)
			"$ingero" record -q -a -o "$w/sched.ing.zst" 2>"$w/sched.err" &
			bg_pid=$!
			wait_instance $bg_pid && "${pipe[@]}" >"$w/sched.out" 2>&1
			kill -INT $bg_pid && wait $bg_pid
			bg_pid= ;;
		esac
		case $1 in
		bare*) sw=$(field sched/sched_switch "$w/sched.err") ;;
		ingero*) "$ingero" analyze --json "$w/sched.ing.zst" >"$w/sched.json" 2>/dev/null &&
			sw=$(jq '.session.events_by_stream.switch' "$w/sched.json") ;;
		esac
		us=$(awk '/usecs\/op/ { print $1 }' "$w/sched.out")
		# the check: at least the two switches of every round trip were recorded; with -a, which
		# follows only the processes that call CUDA, none of this one's
		if [ -z "$us" ]; then
			echo "$1 - failed"
		elif [ $1 = ingero-all ]; then
			[ "$sw" = 0 ] && echo "$1 $us ok 0" || echo "$1 $us miscount:${sw:-none}>0"
		elif [ "$sw" = nocheck ] || [ "${sw:-0}" -ge $((2 * SCHED_LOOPS)) ]; then
			echo "$1 $us ok $sw"
		else
			echo "$1 $us miscount:${sw:-0}<$((2 * SCHED_LOOPS))"
		fi
	}
	if have perf && have taskset; then
		for ((round = 0; round < ROUNDS; round++)); do
			for who in $(order $round $sched_who); do sched_run $who >>"$w/sched"; done
		done
fi
say "5. scheduler events per context switch: perf bench sched pipe -l $SCHED_LOOPS on CPU 0 (2 switches an op), $ROUNDS round(s)"
say "$(printf '%-30s %10s %17s %14s  %s' contender 'us/op' 'min-max' 'ns/switch' check)"
read -r sbase _ <<<"$(summarise "$w/sched" none)"
for who in $sched_who; do
	case $who in
	none) name="no tracer" ;; bare) name="kernel, pid filter" ;; bare-all) name="kernel, no filter" ;;
	ingero) name="ingero record -- CMD (filter)" ;; ingero-all) name="ingero record -a, not traced" ;;
	esac
	if ! have perf; then
		say "$(printf '%-30s %s' "$name" "skipped: perf bench needs perf (Debian: linux-perf)")"
		emit "{\"figure\":\"sched\",\"contender\":\"$who\",\"status\":\"skipped\"}"
		continue
	fi
	read -r med lo hi runs st <<<"$(summarise "$w/sched" $who)"
	if [ "$med" = - ]; then
		say "$(printf '%-30s %s' "$name" "FAILED: $st")"
		emit "{\"figure\":\"sched\",\"contender\":\"$who\",\"status\":\"failed\"}"
		failed=1
		continue
	fi
	per=$(awk -v m=$med -v b=$sbase 'BEGIN { printf "%.0f", (m - b) * 1000 / 2 }')
	say "$(printf '%-30s %10.3f %8.3f-%-8.3f %14s  %s' "$name" $med $lo $hi $([ $who = none ] && echo - || echo $per) $st)"
	emit "{\"figure\":\"sched\",\"contender\":\"$who\",\"loops\":$SCHED_LOOPS,\"runs\":$runs,\"median_us_per_op\":$med,\"min\":$lo,\"max\":$hi,\"ns_per_switch\":$([ $who = none ] && echo null || echo $per),\"status\":\"$st\"}"
done
say ""

fi

if figure 6; then
	# ==== 6. start-up ====
	# With and without probes: removing each uprobe event waits for the kernel's grace periods.
	# The floor of 'record -- true' is bench-bare with ingero's scheduler events: the same
	# instance, clock, buffers and pid filter, set up and removed in the fewest steps.
	start_who="bare-sched ingero bare ingero-probed perf trace-cmd bpftrace-hist"
	[ $quick = 1 ] || start_who="$start_who ingero-all-sets"
	: >"$w/start"
	start_run() {
		rm -f "$w/t" "$w/s.ing.zst"*
		case $1 in
		bare) "$bin/bench-time" -o "$w/t" -- "$bin/bench-bare" -e "$G/$LE" -e "$G/$LR" -- true 2>/dev/null ;;
		bare-sched) "$bin/bench-time" -o "$w/t" -- "$bin/bench-bare" "${sched_bare[@]}" -- true 2>/dev/null ;;
		ingero) "$bin/bench-time" -o "$w/t" -- "$ingero" record -q -o "$w/s.ing.zst" -- true ;;
		ingero-probed) "$bin/bench-time" -o "$w/t" -- "$ingero" record -q -o "$w/s.ing.zst" -- \
			env LD_LIBRARY_PATH="$bin" "$DRV" loop 1 ;;
		ingero-all-sets) "$bin/bench-time" -o "$w/t" -- "$ingero" record -q -e all -o "$w/s.ing.zst" -- true ;;
		perf) "$bin/bench-time" -o "$w/t" -- perf record -q -e "$G:$LE" -e "$G:$LR" -o "$w/s.data" -- true ;;
		trace-cmd) "$bin/bench-time" -o "$w/t" -- unshare -m --propagation private "$w/no-ftrace" \
			trace-cmd record -q -e "$G:$LE" -e "$G:$LR" -F -c -o "$w/s.dat" true ;;
		bpftrace-hist) "$bin/bench-time" -o "$w/t" -- bpftrace -e "uprobe:$LIB:cuLaunchKernel { @n = count(); }" -c "$(type -P true)" ;;
		esac
	}
	for ((round = 0; round < ROUNDS; round++)); do
		for who in $(order $round $start_who); do
			peer_ok $who || continue
			if start_run $who >/dev/null 2>&1 && [ -s "$w/t" ]; then
				echo "$who $(field wall_ns "$w/t") ok" >>"$w/start"
			else
				echo "$who - failed" >>"$w/start"
			fi
		done
	done
	say "6. start-up: 'record -- true', wall time from start to exit, $ROUNDS round(s)"
	say "$(printf '%-38s %10s %17s' contender 'ms median' 'ms min-max')"
	for who in $start_who; do
		name=$(label $who)
		[ $who = ingero-all-sets ] && name="ingero -e all"
		[ $who = ingero-probed ] && name="ingero -- a launch (6 uprobe events)"
		[ $who = bare-sched ] && name="kernel, ingero's scheduler events"
		peer_ok $who || { say "$(printf '%-38s %s' "$name" "skipped: $(why_skipped $who)")"; continue; }
		read -r med lo hi runs st <<<"$(summarise "$w/start" $who)"
		[ "$med" = - ] && { say "$(printf '%-38s %s' "$name" "FAILED")"; failed=1; continue; }
		say "$(printf '%-38s %10.1f %8.1f-%-8.1f' "$name" $(awk "BEGIN { print $med / 1e6, $lo / 1e6, $hi / 1e6 }"))"
		emit "{\"figure\":\"startup\",\"contender\":\"$who\",\"runs\":$runs,\"median_ns\":$med,\"min_ns\":$lo,\"max_ns\":$hi}"
	done
	read -r ing _ <<<"$(summarise "$w/start" ingero)"
	read -r floor _ <<<"$(summarise "$w/start" bare-sched)"
	say "goal: ingero record -- true < 150 ms: $(awk -v i="$ing" -v f="$floor" 'BEGIN { if (i == "-") print "not measured"; else printf "%.0f ms, %s (the kernel'"'"'s own steps: %s)", i / 1e6, i < 150e6 ? "met" : "NOT met", f == "-" ? "not measured" : sprintf("%.0f ms", f / 1e6) }')"
	say ""

fi

if figure 7; then
	# ==== 7. a real workload: measured on the GPU machine ====
	say "7. real workload (PyTorch on a GPU): not measured here; a slot for the figure from the GPU machine"
	emit '{"figure":"real-workload","status":"slot","note":"measured on the GPU machine, not by this harness"}'
fi

if figure 8; then
	# ==== 8. cost per traced launch, the tracers attached in turn to one running loop ====
	# Each round gives each contender a window of WIN seconds on the same warm process; its
	# chunks from LEAD seconds in (the tracer's start, perf's the slowest) to TAIL before the
	# end count, so that the process's own start and the machine's slow stretches between
	# processes are left out of the pairs.
	att_who=$(asked none bare ingero-ret perf trace-cmd)
	if [ $quick = 1 ]; then WIN=2 LEAD=0.5; else WIN=5 LEAD=1.5; fi
	TAIL=0.3
	n=0
	for who in $att_who; do peer_ok $who && n=$((n + 1)); done
	# long enough for every window and the counting after each (trace-cmd's report, perf script)
	"$DRV" chunks $((ROUNDS * n * (WIN + 30) + 60)) >"$w/chunks" &
	drv=$!
	until grep -q ready "$w/chunks" || ! kill -0 $drv 2>/dev/null; do sleep 0.1; done
	: >"$w/attached"
	for ((round = 0; round < ROUNDS; round++)); do
		for who in $(order $round $att_who); do
			peer_ok $who || continue
			from=$(date +%s%N)
			to=$(awk -v t=$from -v w=$WIN -v e=$TAIL 'BEGIN { printf "%.0f", t + (w - e) * 1e9 }')
			from=$(awk -v t=$from -v l=$LEAD 'BEGIN { printf "%.0f", t + l * 1e9 }')
			ok=0
			attach $who $drv $WIN && ok=1
			# the chunks that ended inside the window: their median ns/call and their calls
			read -r ns calls <<<"$(awk -v a=$from -v b=$to '$1 == "chunk" && $2 >= a && $2 <= b { print $3, $4 }' "$w/chunks" |
				sort -g | awk '{ v[NR] = $1; c += $2 } END { if (NR) print v[int((NR + 1) / 2)], c }')"
			if [ $ok = 0 ] || [ -z "$ns" ]; then
				echo "$who - failed:$(tail -1 "$w/att.$who.err" 2>/dev/null | tr ' ' _) $round" >>"$w/attached"
			elif [ $who = none ] || { read -r e r _ <"$w/cnt" && [ "$e" -ge "$calls" ] && [ "$r" -ge "$calls" ]; }; then
				echo "$who $ns ok $round" >>"$w/attached"
			else
				echo "$who $ns miscount:$(tr ' ' / <"$w/cnt")<$calls $round" >>"$w/attached"
			fi
		done
	done
	kill $drv 2>/dev/null
	wait $drv 2>/dev/null

	say "8. cost per traced launch, the tracers attached in turn to one running loop: $ROUNDS round(s) of ${WIN} s windows"
	say "$(printf '%-26s %10s %17s %8s %8s  %s' contender 'ns/call' 'min-max' windows 'x kernel' check)"
	read -r kern _ <<<"$(summarise "$w/attached" bare)"
	for who in $att_who; do
		if ! peer_ok $who; then
			say "$(printf '%-26s %s' "$(label $who)" "skipped: $(why_skipped $who)")"
			continue
		fi
		read -r med lo hi runs st <<<"$(summarise "$w/attached" $who)"
		if [ "$med" = - ]; then
			case $who in bare|ingero*) failed=1 ;; esac
			say "$(printf '%-26s %s' "$(label $who)" "no complete window: $st")"
			emit "{\"figure\":\"attached\",\"contender\":\"$who\",\"status\":\"failed\",\"why\":\"$st\"}"
			continue
		fi
		[ "$st" = ok ] || case $who in bare|ingero*) failed=1 ;; esac
		[ $who = none ] && ratio=- || ratio=$(awk -v m="$med" -v k="$kern" 'BEGIN { if (k > 0) printf "%.3f", m / k; else print "null" }')
		say "$(printf '%-26s %10.1f %8.1f-%-8.1f %8s %8s  %s' "$(label $who)" "$med" "$lo" "$hi" "$runs" "$ratio" "$st")"
		emit "{\"figure\":\"attached\",\"contender\":\"$who\",\"windows\":$runs,\"median_ns\":$med,\"min_ns\":$lo,\"max_ns\":$hi,\"ratio_to_kernel\":${ratio/-/null},\"status\":\"$st\"}"
	done
	say "(a window's figure is the median of its 10 ms chunks; a miscount row: ENTRIES/RETURNS/LOST<CALLS of the window)"
	ratio_goal "$w/attached" attached "ingero --returns / kernel, same probes" ingero-ret bare 1.10
	peer_ok perf && ratio_goal "$w/attached" attached "ingero --returns / perf record" ingero-ret perf 1.00
	peer_ok trace-cmd && ratio_goal "$w/attached" attached "ingero --returns / trace-cmd record" ingero-ret trace-cmd 1.00
	say ""
fi

# The count checks above are the harness's sanity checks.
[ $failed = 0 ] || { say "bench: a sanity check failed (a contender that did not record every call, or failed to run)"; exit 1; }
