#!/usr/bin/env bash
# What the kernel takes for each tracefs step of a recording's start and end,
# timed one by one on a throwaway instance, in microseconds:
#   tracefs-steps.sh BENCH_BARE [ROUNDS]
# Each round makes an instance as 'ingero record' does (buffers of 8192 KiB a
# CPU, ingero's scheduler events, a pid filter) and removes it three ways:
# plain (rmdir at once), explicit (events disabled and the filter cleared
# first), uprobes (with 8 uprobe events on libc, two disabled one at a time,
# the rest together). BENCH_BARE is t/perf/bin/bench-bare, for the offsets.
set -u
. "$(dirname "$0")/bench-lib.sh"
[ $# -ge 1 ] || { echo "usage: tracefs-steps.sh BENCH_BARE [ROUNDS]" >&2; exit 129; }
BARE=$1 ROUNDS=${2:-3}
T=/sys/kernel/tracing
[ -e $T/uprobe_events ] || mount -t tracefs nodev $T
I=$T/instances/ingero_steps_$$ G=ingero_steps_$$
LIBC=$(ldconfig -p | awk '/libc\.so\.6 .*x86-64/ { print $NF; exit }')
SCHED="sched/sched_switch sched/sched_waking sched/sched_process_fork sched/sched_process_exec
	sched/sched_process_exit task/task_rename task/task_newtask"
offsets=$(for f in getpid getppid getuid geteuid getgid getegid sched_yield getpgrp; do
	"$BARE" offset "$LIBC" $f; done) || exit 1

put() { echo "$2" >"$1"; }
# step NAME COMMAND...: runs it and prints NAME=microseconds
step() {
	local name=$1 t0
	shift
	t0=$(date +%s%N)
	"$@" || echo "tracefs-steps: $name failed" >&2
	printf '%s=%s ' "$name" $((($(date +%s%N) - t0) / 1000))
}
cleanup() {
	[ -d $I ] && { put $I/events/enable 0; rmdir $I; }
	remove_uprobes $G
}
trap cleanup EXIT

round() {
	local how=$1 i=0 o e
	step mkdir mkdir $I
	step resize put $I/buffer_size_kb 8192
	for e in $SCHED; do put $I/events/$e/enable 1; done
	if [ $how = uprobes ]; then
		for o in $offsets; do echo "p:$G/e_$i $LIBC:$o" >>$T/uprobe_events; i=$((i + 1)); done
		step uenable put $I/events/$G/enable 1
	fi
	put $I/options/event-fork 1
	step pid put $I/set_event_pid $$
	put $I/tracing_on 1
	sleep 0.2
	put $I/tracing_on 0
	case $how in
	explicit)
		step disable put $I/events/enable 0
		step clearpid put $I/set_event_pid "" ;;
	uprobes)
		step udisable_one put $I/events/$G/e_0/enable 0
		step udisable_one put $I/events/$G/e_1/enable 0
		step udisable_rest put $I/events/$G/enable 0 ;;
	esac
	step rmdir rmdir $I
	remove_uprobes $G
	echo
}

echo "# $(nproc) CPUs, kernel $(uname -r), $(echo $offsets | wc -w) uprobes in $LIBC; microseconds"
for ((r = 0; r < ROUNDS; r++)); do
	for how in plain explicit uprobes; do
		printf '%-9s ' $how
		round $how
	done
done
