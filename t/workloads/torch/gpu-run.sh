#!/usr/bin/env bash
# The GPU machine's runs for the case study, phase by phase:
#   gpu-run.sh INGERO BARE OUT PHASE...
# PHASE: facts (versions, where the libraries are, what ingero probes in them),
# memory (the empty_cache workload traced, analysed, counts cross-checked
# against the kernel's own hit counts), neighbour (the same beside a CPU hog),
# launch / compute (overhead: untraced, ingero's default set, the same with
# the launches' returns, and the bare kernel probes and scheduler events of
# ingero's default set drained by BARE, interleaved, ROUNDS rounds, 5 unless set); attach-launch /
# attach-compute (the same inside one warm process, the tracers attached in
# turn for WINDOW seconds each: the runs' own spread left out; VARIANTS picks them
# among untraced, ingero, ingero-ret (--returns), ingero-rt (-e default,rt-launch),
# ingero-all (-e all) and bare); startup (what ingero adds before and after a
# command: 'record -- true', and PyTorch's start with and without ingero).
set -u
INGERO=$(realpath "$1") BARE=$(realpath "$2") OUT=$3
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
T=/sys/kernel/tracing
[ -e $T/uprobe_events ] || mount -t tracefs nodev $T
mkdir -p "$OUT"
ROUNDS=${ROUNDS:-5}
# The scheduler events ingero records beside its probes: the bare kernel pays for them too.
SCHED_EVENTS="-e sched/sched_switch -e sched/sched_waking -e sched/sched_process_fork -e sched/sched_process_exec -e sched/sched_process_exit -e task/task_rename"
cd "$HERE" || exit 1

log() { printf '%s\n' "$*" | tee -a "$OUT/gpu-run.txt" >&2; }

# Records CMD with ingero, and inside the traced run copies the kernel's probe list and hit counts.
record_checked() {
	local name=$1; shift
	"$INGERO" record -o "$OUT/$name.ing.zst" -- sh -c \
		"$* && pgrep -P \$PPID -x ingero-cleanup >$OUT/$name.pid && cat $T/uprobe_events >$OUT/$name.events && cat $T/uprobe_profile >$OUT/$name.profile" \
		>"$OUT/$name.out" 2>"$OUT/$name.err"
	log "record $name: exit $? $(tail -1 "$OUT/$name.err")"
	"$INGERO" info --json "$OUT/$name.ing.zst" >"$OUT/$name.info.json"
	"$INGERO" analyze "$OUT/$name.ing.zst" >"$OUT/$name.report.txt" 2>&1
	"$INGERO" analyze --json "$OUT/$name.ing.zst" >"$OUT/$name.report.json" 2>&1
	python3 crosscheck.py "ingero_$(cat "$OUT/$name.pid")" "$OUT/$name.events" "$OUT/$name.profile" \
		"$OUT/$name.info.json" >"$OUT/$name.crosscheck.txt"
	log "crosscheck $name: exit $? ($(wc -l <"$OUT/$name.crosscheck.txt") APIs)"
}

facts() {
	python3 -c 'import torch, transformers, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "gpu", torch.cuda.get_device_name(0))' | tee -a "$OUT/gpu-run.txt"
	uname -r | tee -a "$OUT/gpu-run.txt"
	rt=$(python3 -c 'import torch, os; print(os.path.realpath(torch.__file__))' | xargs dirname | xargs dirname)
	find "$rt" -name 'libcudart.so*' 2>/dev/null | tee "$OUT/libs.txt"
	ldconfig -p | awk '/libcuda\.so/ { print $NF }' | tee -a "$OUT/libs.txt"
	for l in $(cat "$OUT/libs.txt"); do "$INGERO" probes --lib "$l"; done >"$OUT/probes.txt" 2>&1
	log "probes: $(grep -c . "$OUT/probes.txt") lines"
}

memory() { record_checked empty python3 empty_cache.py; }
# A CPU-bound process of its own (comm "hog"), pinned to the CPU the traced run is pinned to.
neighbour() {
	local hog
	taskset -c 0 python3 -c 'open("/proc/self/comm", "w").write("hog")
while True: pass' &
	hog=$!
	log "hog pid=$hog on CPU 0"
	record_checked neighbour taskset -c 0 python3 empty_cache.py
	kill $hog
}

# The default set's probes, made again under a group of our own for BARE to drain.
bare_probes() {
	local pid group=ingero_bare_$$
	pid=$(cat "$OUT/empty.pid")
	grep -E "^[pr]:ingero_$pid/" "$OUT/empty.events" | sed "s,^\([pr]\):ingero_$pid/,\1:$group/," |
		while read -r line; do echo "$line" >>$T/uprobe_events; done
	grep -oE "^[pr]:$group/[^ ]+" $T/uprobe_events | sed 's/^[pr]://' | sort -u | sed 's/^/-e /' | tr '\n' ' '
	echo "$SCHED_EVENTS"
}

remove_bare() {
	grep -oE "^[pr]:ingero_bare_$$/[^ ]+" $T/uprobe_events | sed 's/^[pr]:/-:/' | sort -u |
		while read -r ev; do echo "$ev" >>$T/uprobe_events; done
}

overhead() {
	local kind=$1 n=$2 events variant r
	events=$(bare_probes)
	trap remove_bare EXIT
	for r in $(seq "$ROUNDS"); do
		for variant in untraced ingero ingero-ret bare; do
			case $variant in
			untraced) python3 loop.py "$kind" "$n" ;;
			ingero) "$INGERO" record -q -o "$OUT/o.ing.zst" -- python3 loop.py "$kind" "$n" ;;
			ingero-ret) "$INGERO" record -q --returns -o "$OUT/o.ing.zst" -- python3 loop.py "$kind" "$n" ;;
			bare) $BARE $events -- python3 loop.py "$kind" "$n" ;;
			esac 2>>"$OUT/overhead.err" | sed -n "s/^loop=.* seconds=/$kind $variant $r /p" | tee -a "$OUT/overhead.txt"
		done
	done
	remove_bare
	trap - EXIT
	for variant in untraced ingero ingero-ret bare; do
		awk -v k="$kind" -v v="$variant" '$1 == k && $2 == v { print $4 }' "$OUT/overhead.txt" | sort -g |
			awk -v k="$kind" -v v="$variant" '{ a[NR] = $1 } END { if (NR) printf "%s %-10s median %.3f s (min %.3f max %.3f, %d runs)\n", k, v, (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR], NR }'
	done | tee -a "$OUT/gpu-run.txt"
}

# Inside one warm process: the loop runs in chunks while each variant is
# attached for a window in turn; a chunk counts for the window it lies in,
# without the window's first 2 s (the tracer's start) and last 1 s (its end),
# and each round's windows are set against its untraced one.
attached() {
	local kind=$1 win=${WINDOW:-10} events pid r v t0 t1 variants=${VARIANTS:-untraced ingero ingero-ret bare} n
	events=$(bare_probes)
	trap remove_bare EXIT
	n=$(echo $variants | wc -w)
	python3 loop.py "$kind" chunks $((ROUNDS * n * (win + 2) + 20)) >"$OUT/chunks-$kind.txt" 2>>"$OUT/overhead.err" &
	pid=$!
	until grep -q ready "$OUT/chunks-$kind.txt"; do sleep 0.5; done
	: >"$OUT/windows-$kind.txt"
	for r in $(seq "$ROUNDS"); do
		# each round starts one further along, so no variant always goes first
		for v in $(echo $variants $variants | cut -d' ' -f$((r % n + 1))-$((r % n + n))); do
			t0=$(date +%s%N)
			case $v in
			untraced) sleep "$win" ;;
			ingero) "$INGERO" record -q -p $pid --duration "$win" -o "$OUT/attached.ing.zst" ;;
			ingero-ret) "$INGERO" record -q --returns -p $pid --duration "$win" -o "$OUT/attached.ing.zst" ;;
			ingero-rt) "$INGERO" record -q -e default,rt-launch -p $pid --duration "$win" -o "$OUT/attached.ing.zst" ;;
			ingero-all) "$INGERO" record -q -e all -p $pid --duration "$win" -o "$OUT/attached.ing.zst" ;;
			bare) $BARE -p $pid $events -- sleep "$win" ;;
			esac 2>>"$OUT/overhead.err" >/dev/null
			t1=$(date +%s%N)
			echo "$r $v $((t0 + 2000000000)) $((t1 - 1000000000))" >>"$OUT/windows-$kind.txt"
		done
	done
	kill $pid
	wait $pid
	remove_bare
	trap - EXIT
	python3 windows.py "$OUT/chunks-$kind.txt" "$OUT/windows-$kind.txt" | sed "s/^/$kind attached: /" |
		tee -a "$OUT/gpu-run.txt"
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "median %.1f (min %.1f max %.1f, %d runs)", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR], NR }'; }

# 'record -- true' maps no CUDA library, so it times ingero's own start and end;
# PyTorch's start maps them, and the time from its end to ingero's exit is the
# kernel removing the probes, once per uprobe event.
startup() {
	local r t0 t1 torch='import torch; torch.zeros(1, device="cuda"); torch.cuda.synchronize()'
	: >"$OUT/startup.txt"
	for r in $(seq "$ROUNDS"); do
		t0=$(date +%s%N)
		"$INGERO" record -q -o "$OUT/s.ing.zst" -- true
		t1=$(date +%s%N)
		echo "true $(((t1 - t0) / 1000))" >>"$OUT/startup.txt"
		t0=$(date +%s%N)
		python3 -c "$torch"
		t1=$(date +%s%N)
		echo "torch-untraced $(((t1 - t0) / 1000))" >>"$OUT/startup.txt"
		t0=$(date +%s%N)
		"$INGERO" record -q -o "$OUT/s.ing.zst" -- sh -c "python3 -c '$torch' && date +%s%N >$OUT/end &&
			grep -o '^[pr]:ingero_'\$(pgrep -P \$PPID -x ingero-cleanup)'/[^ ]*' $T/uprobe_events | sort -u | wc -l >$OUT/nevents"
		t1=$(date +%s%N)
		echo "torch-ingero $(((t1 - t0) / 1000)) exit-after-end $(((t1 - $(cat "$OUT/end")) / 1000)) events $(cat "$OUT/nevents")" >>"$OUT/startup.txt"
	done
	for v in true torch-untraced torch-ingero exit-after-end; do
		log "startup $v ms: $(awk -v v=$v '{ for (i = 1; i < NF; i += 2) if ($i == v) print $(i + 1) / 1000 }' "$OUT/startup.txt" | median)"
	done
	log "startup uprobe events: $(awk '$1 == "torch-ingero" { print $NF }' "$OUT/startup.txt" | sort -u | tr '\n' ' ')"
}

for phase; do
	case $phase in
	facts|memory|neighbour|startup) $phase ;;
	launch) overhead launch 20 ;;
	compute) overhead compute 1000 ;;
	attach-launch) attached launch ;;
	attach-compute) attached compute ;;
	*) echo "gpu-run.sh: unknown phase '$phase'" >&2; exit 129 ;;
	esac
done
