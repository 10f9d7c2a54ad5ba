#!/usr/bin/env bash
test_description='record: sessions side by side, and no use of BTF or of global tracing state'
. ./test-lib.sh

test_expect_success TRACEFS 'two sessions at once each record exactly their own command' '
	ingero record -q -o one.ing.zst -- "$WORKLOADS/alloc-free" 300 >out1 &
	one=$! &&
	ingero record -q -o two.ing.zst -- "$WORKLOADS/launch" 700 >out2 &&
	wait $one &&
	test_api_calls one.ing.zst cudaMalloc 300 &&
	test_api_calls one.ing.zst cuLaunchKernel 0 &&
	test_api_calls two.ing.zst cuLaunchKernel 700 &&
	test_api_calls two.ing.zst cudaMalloc 0
'

test_expect_success TRACEFS 'the global tracing state is left as it was' '
	T=$TRACING_DIR &&
	cat $T/tracing_on $T/trace_clock $T/set_event $T/buffer_size_kb >before &&
	ingero record -q -o g.ing.zst -- "$WORKLOADS/alloc-free" 10 >/dev/null &&
	cat $T/tracing_on $T/trace_clock $T/set_event $T/buffer_size_kb >after &&
	test_cmp before after
'

test_expect_success TRACEFS 'BTF hidden: the same calls recorded' '
	test -d /sys/kernel/btf || { echo "this kernel has no BTF to hide" >&2; false; } &&
	unshare -m sh -c "mount -t tmpfs none /sys/kernel/btf &&
		test -z \"\$(ls /sys/kernel/btf)\" &&
		ingero record -q -o nobtf.ing.zst -- \"$WORKLOADS/alloc-free\" 40" >out &&
	test_api_calls nobtf.ing.zst cudaMalloc 40 &&
	test_api_calls nobtf.ing.zst cuMemFree_v2 40
'

test_expect_success TRACEFS 'tracefs under /sys/kernel/debug/tracing works as well' '
	unshare -m sh -c "umount /sys/kernel/tracing 2>/dev/null;
		mount -t debugfs nodev /sys/kernel/debug 2>/dev/null;
		test -e /sys/kernel/debug/tracing/uprobe_events || mount -t tracefs nodev /sys/kernel/debug/tracing;
		test ! -e /sys/kernel/tracing/uprobe_events &&
		ingero record -q -o dbg.ing.zst -- \"$WORKLOADS/alloc-free\" 25" >out &&
	test_api_calls dbg.ing.zst cudaMalloc 25
'

test_expect_success TRACEFS 'tracefs not mounted at all: ingero mounts it, as perf and trace-cmd do' '
	unshare -m sh -c "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null;
		! grep -q \" tracefs \" /proc/mounts &&
		ingero record -q -o unmounted.ing.zst -- \"$WORKLOADS/alloc-free\" 35 &&
		grep -q \" tracefs \" /proc/mounts" >out &&
	test_api_calls unmounted.ing.zst cudaMalloc 35
'

test_expect_success TRACEFS 'a buffer too small for a burst: the losses are in the trace, the summary and, even quiet, a warning' '
	ingero record -b 4 -o lost.ing.zst -- "$WORKLOADS/launch" -d 200000 >/dev/null 2>err &&
	grep -E "[1-9][0-9]* lost \(cpu" err &&
	ingero analyze --json lost.ing.zst >lost.json &&
	test $(jq .lost_events.total lost.json) -gt 0 &&
	grep -q "^ingero: warning: $(jq .lost_events.total lost.json) events were lost: the kernel.s buffers were full" err &&
	ingero record -q -b 4 -o quiet.ing.zst -- "$WORKLOADS/launch" -d 200000 >/dev/null 2>err &&
	ingero analyze --json quiet.ing.zst >quiet.json &&
	grep "events were lost" err >warned &&
	test_line_count = 1 warned &&
	grep -q "^ingero: warning: $(jq .lost_events.total quiet.json) events were lost" err
'

test_expect_success TRACEFS 'events that piled up while ingero could not read are all in the trace' '
	# stopped, ingero lets about 10 MB gather on one CPU: more than it reads at once, less than the buffer;
	# it is stopped once launch has mapped its libraries, as their loads wait for ingero to probe them
	ingero record -q -b 32768 -o late.ing.zst -- sh -c "taskset -c 0 \"$WORKLOADS/launch\" -d 100000 >/dev/null &
		until grep -q libcuda.so.1 /proc/\$!/maps && grep -q libc.so.6 /proc/\$!/maps; do sleep 0.001; done
		kill -STOP \$PPID; wait; kill -CONT \$PPID" 2>err &&
	ingero analyze --json late.ing.zst >late.json &&
	test "$(jq .lost_events.total late.json)" = 0 &&
	test_api_calls late.ing.zst cuLaunchKernel 100000
'

test_done
