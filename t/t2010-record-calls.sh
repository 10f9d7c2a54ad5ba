#!/usr/bin/env bash
test_description='record: every call of workloads whose calls are known, exactly once'
. ./test-lib.sh

test_expect_success TRACEFS 'a hundred allocations and frees at both levels' '
	ingero record -q -o a.ing.zst -- "$WORKLOADS/alloc-free" 100 >out &&
	grep -q "cudaMalloc=100 cudaFree=100" out &&
	test_api_calls a.ing.zst cudaMalloc 100 &&
	test_api_calls a.ing.zst cuMemAlloc_v2 100 &&
	test_api_calls a.ing.zst cudaFree 100 &&
	test_api_calls a.ing.zst cuMemFree_v2 100
'

test_expect_success TRACEFS 'the allocated bytes are exact, the unfreed ones listed' '
	ingero record -q -o k.ing.zst -- "$WORKLOADS/alloc-free" -k 3 -p 50 >out &&
	bytes=$(sed -n "s/.* bytes=\([0-9]*\).*/\1/p" out) &&
	leaked=$(sed -n "s/.* leaked_bytes=\([0-9]*\).*/\1/p" out) &&
	ingero analyze --json k.ing.zst >k.json &&
	test_json k.json .memory.alloc_bytes "$bytes" &&
	test_json k.json .memory.live_bytes_end "$leaked" &&
	test_json k.json ".memory.unfreed | length" 3 &&
	grep "^alloc " out | tail -3 | awk "{ print \$2 }" >want &&
	jq -r ".memory.unfreed[].ptr" k.json | sort >got &&
	sort want >want.sorted &&
	test_cmp want.sorted got
'

test_expect_success TRACEFS 'launches are seen once, in the driver, at their entries, by default' '
	ingero record -q -o l.ing.zst -- "$WORKLOADS/launch" 1000 >out &&
	test_api_calls l.ing.zst cuLaunchKernel 1000 &&
	test_api_calls l.ing.zst cudaLaunchKernel 0 &&
	test_json l.ing.zst.json ".apis[] | select(.name == \"cuLaunchKernel\") | \"\(.entry_only) \(.p50_ns) \(.total_ns)\"" "true 0 0" &&
	ingero dump --json --stream call l.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cuLaunchKernel\" and .dur_ns == 0)] | length" calls.json >n &&
	test "$(cat n)" = 1000 &&
	ingero analyze l.ing.zst >report &&
	grep -q "^cuLaunchKernel  *1000 .*entry only" report
'

test_expect_success TRACEFS '--returns times every launch' '
	ingero record -q --returns -o lr.ing.zst -- "$WORKLOADS/launch" 300 >out &&
	test_api_calls lr.ing.zst cuLaunchKernel 300 &&
	test_json lr.ing.zst.json ".apis[] | select(.name == \"cuLaunchKernel\") | .entry_only" false &&
	ingero dump --json --stream call lr.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cuLaunchKernel\" and .dur_ns > 0)] | length" calls.json >n &&
	test "$(cat n)" = 300
'

test_expect_success TRACEFS 'rt-launch adds the runtime launches, each enclosing its driver launch' '
	ingero record -q -e default,rt-launch --returns -o r.ing.zst -- "$WORKLOADS/launch" 500 >out &&
	test_api_calls r.ing.zst cudaLaunchKernel 500 &&
	test_api_calls r.ing.zst cuLaunchKernel 500 &&
	ingero dump --json --stream call r.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cudaLaunchKernel\") | .id] | sort" calls.json >outer &&
	jq -s "[.[] | select(.api == \"cuLaunchKernel\") | .parent] | sort" calls.json >parents &&
	test_cmp outer parents
'

test_expect_success TRACEFS 'four threads, each call once, with its own tid' '
	ingero record -q -o t.ing.zst -- "$WORKLOADS/threads" 4 250 >out &&
	test_api_calls t.ing.zst cudaMalloc 1000 &&
	test_api_calls t.ing.zst cudaStreamSynchronize 4 &&
	ingero dump --json --stream call t.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cudaMalloc\") | .tid] | unique | length" calls.json >n &&
	test "$(cat n)" = 4
'

test_expect_success TRACEFS 'threads gone before ingero reads their events keep their process, and their fork its comm' '
	# the command stops ingero while the threads live, and lets it read once the process is gone
	ingero record -q -o gone.ing.zst -- sh -c "\"$WORKLOADS/threads\" -s 4 50 >out & t=\$!
		until grep -q \"^State:.*T\" /proc/\$t/status; do sleep 0.001; done
		kill -STOP \$PPID; kill -CONT \$t; wait \$t; echo \$t >pid; kill -CONT \$PPID" &&
	test_api_calls gone.ing.zst cudaMalloc 200 &&
	ingero dump --json --stream call gone.ing.zst >calls.json &&
	jq -s "[.[] | .pid] | unique | .[]" calls.json >pids &&
	test_cmp pid pids &&
	jq -s "[.[] | .tid] | unique | length" calls.json >n &&
	test "$(cat n)" = 4 &&
	ingero dump --json --stream task gone.ing.zst >tasks.json &&
	jq -r "select(.kind == \"fork\" and .pid == $(cat pid)) | \"\(.child_pid) \(.comm)\"" tasks.json >forks &&
	grep -c "^$(cat pid) threads\$" forks >workers &&
	test "$(cat workers)" = 4 &&
	! grep -v "^$(cat pid) " forks
'

test_expect_success TRACEFS 'a process killed inside a call: the call never returned, and ends with its thread' '
	ingero record -q -o killed.ing.zst -- sh -c "timeout -s KILL 0.5 \"$WORKLOADS/launch\" -u 3000000 1; sleep 1" &&
	ingero dump --json --stream open,task killed.ing.zst >events.json &&
	jq -r "select(.stream == \"open\" and .api == \"cudaDeviceSynchronize\") | \"\(.tid) \(.ts_ns + .dur_ns)\"" events.json >open &&
	test_line_count = 1 open &&
	read tid end <open &&
	jq -r "select(.stream == \"task\" and .kind == \"exit\" and .tid == $tid) | \"\(.tid) \(.ts_ns)\"" events.json >exit &&
	test_cmp open exit
'

test_expect_success TRACEFS 'a process that forks: parent and child both traced' '
	ingero record -q -o f.ing.zst -- "$WORKLOADS/fork" 50 >out &&
	test_api_calls f.ing.zst cudaMalloc 100 &&
	ingero dump --json --stream call f.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cudaMalloc\") | .pid] | unique | length" calls.json >n &&
	test "$(cat n)" = 2
'

# Lays out DIR so that only late-dlopen's RUNPATH leads to the runtime:
# late-dlopen and liblate.so in DIR, libcudart.so.13 and libcuda.so.1 in DIR/late.
late_layout() {
	mkdir "$1/late" &&
	cp "$WORKLOADS/late-dlopen" "$WORKLOADS/liblate.so" "$1/" &&
	cp "$WORKLOADS/libcudart.so.13" "$WORKLOADS/libcuda.so.1" "$1/late/"
}

test_expect_success TRACEFS 'the runtime dlopened late from a folder no search path knows' '
	dir=$(mktemp -d) && test_when_finished "rm -rf $dir" &&
	late_layout "$dir" &&
	ingero record -q -o d.ing.zst -- "$dir/late-dlopen" -d 100 20 >out &&
	grep -q "runtime=$dir/late/" out &&
	test_api_calls d.ing.zst cudaMalloc 20 &&
	test_api_calls d.ing.zst cuMemFree_v2 20 &&
	ingero analyze --json d.ing.zst >d.json &&
	test_json d.json ".session.start_ns as \$s | [.session.libraries[] |
		select(.late and .probed_ns - \$s >= 100000000) | .path] | join(\",\")" \
		"$dir/late/libcudart.so.13,$dir/late/libcuda.so.1" &&
	ingero analyze d.ing.zst >d.txt &&
	grep -Ec "^library    $dir/late/libcuda(rt)?\.so\.1[0-9]? \(build-id [0-9a-f]+\) [0-9]+ probes, probed at \+[0-9]+\.[0-9]{6} s for pid [0-9]+$" d.txt >n &&
	echo 2 >expect &&
	test_cmp expect n
'

# What ingero stamps itself (CLOCK_MONOTONIC, moved onto the kernel's trace
# clock): each late library's probing falls after the name the workload takes
# right before its dlopen, before its first call, while it waits for them.
test_expect_success TRACEFS 'a library probed late is stamped on the trace clock, while its process waits for it' '
	ingero record -q -o n.ing.zst -- "$WORKLOADS/late-dlopen" -d 100 -n go 3 >out &&
	ingero dump --json n.ing.zst >n.json &&
	cat >late.jq <<-\EOF &&
	(map(select(.stream == "task" and .kind == "comm" and .comm == "go"))[0]) as $go
	| (map(select(.stream == "call") | .ts_ns) | min) as $first
	| map(select(.stream == "switch" and (.prev_tid == $go.tid or .next_tid == $go.tid))) as $sw
	| map(select(.stream == "lib"))[]
	| .ts_ns as $t
	| ([$sw[] | select(.ts_ns < $t)] | last) as $last
	| (.path | sub(".*/"; "")) + " " +
	  (if $t < $go.ts_ns then "before the dlopen"
	   elif $t > $first then "after the first call"
	   elif $last.prev_tid != $go.tid then "while the process ran"
	   else "while the process waited" end)
	EOF
	jq -rs -f late.jq n.json >got &&
	printf "%s\n" "libcudart.so.13 while the process waited" "libcuda.so.1 while the process waited" >expect &&
	test_cmp expect got
'

test_expect_success TRACEFS '-p: a runtime the running process maps later is probed by the next look' '
	dir=$(mktemp -d) && test_when_finished "rm -rf $dir" &&
	late_layout "$dir" &&
	{ (sleep 3; echo go) | "$dir/late-dlopen" -d 1000 -w 40 >out & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null" &&
	ingero record -q -p $pid --duration 4 -o p.ing.zst 2>err &&
	grep -q "runtime=$dir/late/" out &&
	test_api_calls p.ing.zst cudaMalloc 40 &&
	test_api_calls p.ing.zst cuMemAlloc_v2 40
'

# Records with -p into TRACE the process that runs COMMAND... (a late-dlopen
# laid out in $dir, or what starts one), which makes N rounds of cudaMalloc and
# cudaFree; checks that all of them were recorded, in the runtime and the driver.
record_late_loads() {
	trace=$1 n=$2 && shift 2 &&
	{ "$@" >out & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null" &&
	timeout 20 ingero record -q -p $pid -o $trace 2>err &&
	test_line_count = 0 err &&
	grep -q "runtime=$dir/late/" out &&
	test_api_calls $trace cudaMalloc $n &&
	test_api_calls $trace cuMemAlloc_v2 $n
}

# The looks at all of -p's processes come a second apart, from ingero's start
# on: ingero probes the runtime that late-dlopen loads after 1.5 s, and calls
# 0.4 s later, as its loader hook says it loads it, not at the next look.
test_expect_success TRACEFS '-p: a runtime the process loads between two looks is probed as it loads it' '
	dir=$(mktemp -d) && test_when_finished "rm -rf $dir" &&
	late_layout "$dir" &&
	record_late_loads l.ing.zst 25 "$dir/late-dlopen" -d 1500 -g 400 25
'

test_expect_success TRACEFS '-p: a runtime that a child of the process loads is probed as the child loads it' '
	dir=$(mktemp -d) && test_when_finished "rm -rf $dir" &&
	late_layout "$dir" &&
	record_late_loads kid.ing.zst 15 sh -c "sleep 1; \"$dir/late-dlopen\" -d 300 -g 300 15; sleep 0.2"
'

test_expect_success TRACEFS '-p: a process in mount and PID namespaces of its own, its runtime at a path only it sees' '
	dir=$(mktemp -d) && test_when_finished "rm -rf $dir" &&
	late_layout "$dir" &&
	{ (sleep 2; echo go) | unshare -m -p -f --mount-proc --propagation private sh -c \
		"mount -t tmpfs none /mnt && cp -r $dir /mnt/app && exec /mnt/app/late-dlopen -w 30" >out & } &&
	test_when_finished "kill $! 2>/dev/null" &&
	sleep 1 &&
	pid=$(pgrep -P $!) &&
	grep -q "^NSpid:.*[0-9][^0-9][^0-9]*1\$" /proc/$pid/status &&
	! test -e /mnt/app/late/libcudart.so.13 &&
	ingero record -q -p $pid --duration 3 -o c.ing.zst 2>err &&
	grep -q "runtime=/mnt/app/late/" out &&
	test_api_calls c.ing.zst cudaMalloc 30 &&
	test_api_calls c.ing.zst cuMemAlloc_v2 30
'

test_expect_success TRACEFS '-p: recording ends by itself once the process has ended' '
	{ (sleep 2; echo go) | "$WORKLOADS/late-dlopen" -d 0 -w 10 >out & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null" &&
	timeout 20 ingero record -q -p $pid -o e.ing.zst &&
	! kill -0 $pid 2>/dev/null &&
	test_api_calls e.ing.zst cudaMalloc 10
'

test_expect_success TRACEFS '-p: the threads a process has already, every call of each, though given by a thread' '
	{ (sleep 3; echo go) | "$WORKLOADS/threads" -w 3 20 >out & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null" &&
	for i in $(seq 200); do test "$(ls /proc/$pid/task | wc -l)" = 4 && break; sleep 0.01; done &&
	tid=$(ls /proc/$pid/task | grep -vx $pid | head -1) &&
	timeout 20 ingero record -q -p $tid,$pid -o w.ing.zst &&
	grep -q "cudaMalloc=60" out &&
	test_api_calls w.ing.zst cudaMalloc 60 &&
	test_api_calls w.ing.zst cudaStreamSynchronize 3 &&
	ingero dump --json --stream call w.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cudaMalloc\") | .tid] | unique | length" calls.json >n &&
	test "$(cat n)" = 3 &&
	jq -s "[.[] | .pid] | unique | .[]" calls.json >pids &&
	echo $pid >expect &&
	test_cmp expect pids
'

test_expect_success TRACEFS '-p: recording ends once the process has ended, though its parent has not reaped it' '
	(sleep 1 & exec sleep 30) &
	parent=$! &&
	test_when_finished "kill $parent" &&
	sleep 0.3 &&
	child=$(pgrep -P $parent) &&
	timeout 10 ingero record -q -p $child -o z.ing.zst &&
	grep -q "^State:.*Z" /proc/$child/status
'

# The pids of the calls of an API in a dump's call lines, each once.
pids_of() {
	sed -n "s/.* api=$1 .* pid=\([0-9]*\).*/\1/p" | sort -u
}

# Waits until the recording rec (pid) has its probes in place and is tracing.
wait_tracing() {
	local i keeper
	for i in $(seq 200); do
		keeper=$(pgrep -P $1 -x ingero-cleanup) &&
			[ "$(cat "$TRACING_DIR/instances/ingero-$keeper/tracing_on" 2>/dev/null)" = 1 ] && return 0
		sleep 0.05
	done
	return 1
}

test_expect_success TRACEFS '-a: processes started apart from ingero, each call of each' '
	ingero record -q -a --lib "$WORKLOADS/libcudart.so.13" --lib "$WORKLOADS/libcuda.so.1" -o all.ing.zst &
	rec=$! &&
	test_when_finished "kill -9 $rec 2>/dev/null; true" &&
	wait_tracing $rec &&
	"$WORKLOADS/alloc-free" 17 >out1 &&
	"$WORKLOADS/launch" 23 >out2 &&
	kill -INT $rec &&
	{ wait $rec || :; } &&
	test_api_calls all.ing.zst cudaMalloc 17 &&
	test_api_calls all.ing.zst cuLaunchKernel 23 &&
	ingero dump --stream call all.ing.zst >calls &&
	pids_of cudaMalloc <calls >alloc.pids &&
	pids_of cuLaunchKernel <calls >launch.pids &&
	test_line_count = 1 alloc.pids &&
	test_line_count = 1 launch.pids &&
	! cmp -s alloc.pids launch.pids
'

# The pid filter of the scheduler's instance of -a, whose keeper is rec's.
sched_filter() {
	cat "$TRACING_DIR/instances/ingero-$(pgrep -P $1 -x ingero-cleanup).sched/set_event_pid"
}

wait_state_stopped() {
	local i
	for i in $(seq 500); do
		grep -q "^State:.*T" /proc/$1/status && return 0
		sleep 0.01
	done
	return 1
}

test_expect_success TRACEFS '-a: the scheduler events of the processes that use CUDA, and of no other' '
	"$WORKLOADS/threads" -s 2 20 >out &
	wl=$! &&
	test_when_finished "kill -9 $wl 2>/dev/null; true" &&
	wait_state_stopped $wl &&
	{ ingero record -q -a --lib "$WORKLOADS/libcudart.so.13" --lib "$WORKLOADS/libcuda.so.1" -o sched.ing.zst & } &&
	rec=$! &&
	test_when_finished "kill -9 $rec 2>/dev/null; true" &&
	wait_tracing $rec &&
	sched_filter $rec >filter &&
	grep -qx $wl filter &&
	# a pipe of byte-sized writes: tens of thousands of switches of tasks that use no CUDA
	{ dd if=/dev/zero bs=1 count=20000 2>/dev/null | cat >/dev/null; } &&
	kill -CONT $wl &&
	wait $wl &&
	kill -INT $rec &&
	{ wait $rec || :; } &&
	ingero dump --stream switch sched.ing.zst >switches &&
	ingero dump --stream task sched.ing.zst >tasks &&
	! grep -E "prev_comm=(dd|cat) " switches | grep -vE "next_comm=(threads|wl-thread-[01]|stub-gpu) " &&
	grep -c "kind=fork pid=$wl .* comm=threads\$" tasks >forks &&
	test "$(cat forks)" = 2 &&
	grep -q "prev_comm=wl-thread-0 " switches &&
	grep -q "prev_comm=wl-thread-1 " switches &&
	test_api_calls sched.ing.zst cudaMalloc 40
'

test_expect_success TRACEFS '-a: a process that starts using CUDA later joins at its first call, whole' '
	ingero record -q -a --lib "$WORKLOADS/libcudart.so.13" --lib "$WORKLOADS/libcuda.so.1" -o late.ing.zst &
	rec=$! &&
	test_when_finished "kill -9 $rec 2>/dev/null; true" &&
	wait_tracing $rec &&
	{ "$WORKLOADS/threads" -c 2 20 >out & } &&
	wl=$! &&
	test_when_finished "kill -9 $wl 2>/dev/null; true" &&
	wait_state_stopped $wl &&
	for i in $(seq 500); do sched_filter $rec | grep -qx $wl && break; sleep 0.01; done &&
	sched_filter $rec >filter &&
	grep -qx $wl filter &&
	kill -CONT $wl &&
	wait $wl &&
	kill -INT $rec &&
	{ wait $rec || :; } &&
	ingero dump --stream task late.ing.zst >tasks &&
	grep -c "kind=fork pid=$wl .* comm=threads\$" tasks >forks &&
	test "$(cat forks)" = 2 &&
	test_api_calls late.ing.zst cudaStreamSynchronize 3 &&
	# the trace says from when its scheduling is recorded: after the first sync, before the threads
	grep "kind=follow" tasks >follows &&
	head -1 follows | grep -q " kind=follow pid=0 " &&
	grep -c " kind=follow pid=$wl " follows >joined &&
	test "$(cat joined)" = 1 &&
	ingero dump late.ing.zst | grep -E "kind=follow pid=$wl |kind=fork pid=$wl |cudaStreamSynchronize" |
		sed -E "s/.*(kind=[a-z]+|cudaStreamSynchronize).*/\1/" | uniq >order &&
	printf "%s\n" cudaStreamSynchronize kind=follow kind=fork cudaStreamSynchronize >want &&
	test_cmp want order &&
	ingero analyze --json late.ing.zst >report.json &&
	test "$(jq .session.unfollowed_calls report.json)" = 2
'

test_expect_success TRACEFS '-a: a runtime that no search knows is probed once its process calls the driver' '
	mkdir venv &&
	cp "$WORKLOADS/libcudart.so.13" venv/ &&
	{ ingero record -q -a --lib "$WORKLOADS/libcuda.so.1" -o venv.ing.zst & } &&
	rec=$! &&
	test_when_finished "kill -9 $rec 2>/dev/null; true" &&
	wait_tracing $rec &&
	{ LD_LIBRARY_PATH="$PWD/venv:$WORKLOADS" "$WORKLOADS/threads" -c 2 20 >out & } &&
	wl=$! &&
	test_when_finished "kill -9 $wl 2>/dev/null; true" &&
	wait_state_stopped $wl &&
	for i in $(seq 500); do grep -q "$PWD/venv/libcudart.so.13" "$TRACING_DIR/uprobe_events" && break; sleep 0.01; done &&
	kill -CONT $wl &&
	wait $wl &&
	kill -INT $rec &&
	{ wait $rec || :; } &&
	ingero info venv.ing.zst >info &&
	grep -q "$PWD/venv/libcudart.so.13 pid $wl," info &&
	test_api_calls venv.ing.zst cudaMalloc 40 &&
	# the sync before the runtime was probed is seen in the driver only
	test_api_calls venv.ing.zst cudaStreamSynchronize 2 &&
	test_api_calls venv.ing.zst cuStreamSynchronize 3
'

# As with -p above; the look every second comes at any moment of the
# workload's 200 ms between its dlopen and its calls.
test_expect_success TRACEFS '-a: a runtime a followed process loads later is probed as it loads it' '
	dir=$(mktemp -d) && test_when_finished "rm -rf $dir" &&
	late_layout "$dir" &&
	{ ingero record -q -a --lib "$WORKLOADS/libcuda.so.1" -o la.ing.zst & } &&
	rec=$! &&
	test_when_finished "kill -9 $rec 2>/dev/null; true" &&
	wait_tracing $rec &&
	"$dir/late-dlopen" -s "$WORKLOADS/libcuda.so.1" -d 1500 -g 200 25 >out &&
	kill -INT $rec &&
	{ wait $rec || :; } &&
	grep -q "runtime=$dir/late/" out &&
	test_api_calls la.ing.zst cuCtxSynchronize 1 &&
	test_api_calls la.ing.zst cudaMalloc 25 &&
	test_api_calls la.ing.zst cuMemAlloc_v2 25
'

test_expect_success TRACEFS 'the runtime linked into the executable, found through .symtab' '
	ingero record -q -o s.ing.zst -- "$WORKLOADS/static-rt" 30 >out &&
	test_api_calls s.ing.zst cudaMalloc 30 &&
	test_api_calls s.ing.zst cuMemAlloc_v2 30 &&
	test_api_calls s.ing.zst cudaDeviceSynchronize 1
'

test_expect_success TRACEFS 'a library named with --lib is probed, once however reached' '
	ingero record -q --lib "$WORKLOADS/libcudart.so.13" --lib "$WORKLOADS/../bin/libcudart.so.13" \
		-o b.ing.zst -- "$WORKLOADS/alloc-free" 7 >out &&
	test_api_calls b.ing.zst cudaMalloc 7
'

test_expect_success TRACEFS 'a runtime in a folder whose name has a space' '
	mkdir "rt dir" &&
	cp "$WORKLOADS/libcudart.so.13" "$WORKLOADS/libcuda.so.1" "rt dir/" &&
	LD_LIBRARY_PATH="$PWD/rt dir" ingero record -q -o space.ing.zst -- "$WORKLOADS/alloc-free" 13 >out &&
	test_api_calls space.ing.zst cudaMalloc 13 &&
	test_api_calls space.ing.zst cuMemFree_v2 13 &&
	ingero info space.ing.zst >info &&
	grep -q "rt dir/libcudart.so.13 pid" info
'

# How many runtime symbols the default sets want, from the listing of 'ingero probes'.
default_runtime_symbols() {
	ingero probes | awk '/^[a-z-]+ \(/ { on = /\(default\)/ } on && $1 == "cudart:" { n += NF - 1 } END { print n }'
}

test_expect_success TRACEFS 'a runtime without some wanted symbols: they are counted and named in one warning' '
	printf "int cudaMalloc(void **p, unsigned long n) { *p = 0; return n ? 0 : 1; }\n" >partial.c &&
	printf "int cudaFree(void *p) { return p != 0; }\n" >>partial.c &&
	${CC:-cc} -shared -fPIC -o libpartial.so partial.c &&
	want=$(($(default_runtime_symbols) - 2)) &&
	test "$want" -gt 8 &&
	ingero record -q -o p.ing.zst --lib "$PWD/libpartial.so" -- true 2>err &&
	grep -q "libpartial.so lacks $want wanted symbol(s): cudaMallocAsync, " err &&
	ingero record -q -o q.ing.zst --lib "$WORKLOADS/libcudart.so.13" -- true 2>err &&
	! grep -q lacks err
'

test_done
