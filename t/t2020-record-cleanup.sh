#!/usr/bin/env bash
test_description='record: nothing left in the kernel on any way out, SIGKILL included'
. ./test-lib.sh

no_leftovers() {
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
}

# Starts a recording of a long workload in the background; sets rec and child.
start_long() {
	ingero record -q -o "$1" -- "$WORKLOADS/launch" -u 1000 -S 1000000 >/dev/null 2>"$1.err" &
	rec=$!
	# Wait until the command runs under ingero: its launches are being traced.
	for i in $(seq 100); do
		child=$(pgrep -P $rec -x launch) && break
		sleep 0.05
	done
	sleep 0.3
}

test_expect_success TRACEFS 'a normal end leaves nothing' '
	ingero record -q -o n.ing.zst -- "$WORKLOADS/alloc-free" 5 >/dev/null &&
	no_leftovers
'

test_expect_success TRACEFS 'ingero exits once its probes and instance are gone: a tool started next sees none' '
	ingero record -q -o g.ing.zst -- sh -c "pgrep -P \$PPID -x ingero-cleanup >keeper && exec \"$WORKLOADS/alloc-free\" 5" >/dev/null &&
	keeper=$(cat keeper) &&
	test_api_calls g.ing.zst cudaMalloc 5 &&
	! grep -q "^[pr]:ingero_$keeper/" "$TRACING_DIR/uprobe_events" &&
	test ! -e "$TRACING_DIR/instances/ingero-$keeper" &&
	! kill -0 $keeper 2>/dev/null
'

for sig in INT TERM HUP; do
	test_expect_success TRACEFS "SIG$sig stops both and leaves a complete file" '
		start_long $sig.ing.zst &&
		test_when_finished "kill -9 $rec $child 2>/dev/null; true" &&
		kill -$sig $rec &&
		{ wait $rec; status=$?; } &&
		test $status -gt 128 &&
		! kill -0 $child 2>/dev/null &&
		ingero info $sig.ing.zst >info &&
		test $(api_calls $sig.ing.zst cuLaunchKernel) -gt 0 &&
		no_leftovers
	'
done

test_expect_success TRACEFS 'the traced command crashing leaves nothing' '
	test_expect_code 139 ingero record -q -o c.ing.zst -- "$WORKLOADS/exit-status" -s 11 0 &&
	test_api_calls c.ing.zst cudaMalloc 1 &&
	no_leftovers
'

test_expect_success TRACEFS 'the keeper holds none of the files of ingero: nothing that reads them waits for it' '
	start_long f.ing.zst 5>extra &&
	test_when_finished "kill -9 $rec $child 2>/dev/null; true" &&
	keeper=$(pgrep -P $rec -x ingero-cleanup) &&
	for fd in /proc/$keeper/fd/*; do echo "${fd##*/} $(readlink $fd)"; done >fds &&
	printf "0 /dev/null\n1 /dev/null\n2 /dev/null\n4 anon_inode:seccomp notify\n" >expect &&
	grep -v "^3 " fds >held &&
	test_cmp expect held &&
	grep -q "^3 socket:" fds &&
	kill -INT $rec && { wait $rec || :; } &&
	no_leftovers
'

test_expect_success TRACEFS 'the command holds no file of the tracing instance, which it would keep busy' '
	start_long c.ing.zst &&
	test_when_finished "kill -9 $rec $child 2>/dev/null; true" &&
	for fd in /proc/$child/fd/*; do readlink $fd; done >child-fds &&
	grep -q . child-fds &&
	! grep -q "^$TRACING_DIR/" child-fds &&
	kill -INT $rec && { wait $rec || :; } &&
	no_leftovers
'

test_expect_success TRACEFS 'too few file descriptors, wherever it fails: one line, exit 1, nothing left behind' '
	echo "an earlier trace" >fd.ing.zst &&
	cp fd.ing.zst earlier &&
	for n in $(seq 4 64); do
		# a sanitized build: the leak check at exit needs descriptors of its own
		(ulimit -n $n && ASAN_OPTIONS=detect_leaks=0 exec ingero record -q -o fd.ing.zst -- "$WORKLOADS/alloc-free" 3) >out 2>err
		status=$?
		test $status = 0 && break
		# too few for the dynamic loader to start ingero at all
		test $status = 127 && grep -q "error while loading shared libraries" err && continue
		# the earlier trace is where it was, not moved to .old for a trace that never began
		{ test $status = 1 &&
		  test_line_count = 1 err &&
		  ! grep -q "this kernel has no event" err &&
		  cmp earlier fd.ing.zst && ! test -e fd.ing.zst.old &&
		  ingero_kernel_leftovers >left &&
		  test_line_count = 0 left; } || { echo "ulimit -n $n: exit $status" >&2; cat err left >&2; return 1; }
	done &&
	cmp earlier fd.ing.zst.old &&
	test $status = 0 &&
	test_api_calls fd.ing.zst cudaMalloc 3
'

test_expect_success TRACEFS 'a SIGKILLed ingero leaves nothing: its keeper removes the session' '
	start_long k.ing.zst &&
	test_when_finished "kill -9 $child 2>/dev/null; true" &&
	keeper=$(pgrep -P $rec -x ingero-cleanup) &&
	grep -q "^[pr]:ingero_$keeper/" "$TRACING_DIR/uprobe_events" &&
	kill -9 $rec && { wait $rec || :; } && { kill -9 $child || :; } &&
	no_leftovers
'

test_expect_success TRACEFS 'a SIGKILLed ingero leaves its command whole: the libraries it loads later still map' '
	ingero record -q -o late.ing.zst -- "$WORKLOADS/late-dlopen" -d 1500 7 >late.out &
	rec=$! &&
	test_when_finished "kill -9 $rec 2>/dev/null; pkill -x late-dlopen; true" &&
	for i in $(seq 100); do child=$(pgrep -P $rec -x late-dlopen) && break; sleep 0.05; done &&
	kill -9 $rec &&
	{ wait $rec; status=$?; } &&
	test $status = 137 &&
	for i in $(seq 100); do kill -0 $child 2>/dev/null || break; sleep 0.05; done &&
	! kill -0 $child 2>/dev/null &&
	grep -q "cudaMalloc=7 cudaFree=7" late.out &&
	no_leftovers
'

test_expect_success TRACEFS 'a library the command'"'"'s background process loads as ingero ends: it waits for the keeper, ingero exits 0' '
	mkdir -p bg/late && mkfifo bg/go &&
	cp "$WORKLOADS/late-dlopen" "$WORKLOADS/liblate.so" bg/ &&
	cp "$WORKLOADS/libcudart.so.13" "$WORKLOADS/libcuda.so.1" bg/late/ &&
	printf "echo \$\$ >bg/pid\nread x <bg/go\nexec bg/late-dlopen -d 0 3 >bg.out\n" >bg/run.sh &&
	# the command ends once its background process runs, loaded, and waits for the go
	{ ingero record -q -o bg.ing.zst --lib "$WORKLOADS/libcuda.so.1" -- \
		sh -c "sh bg/run.sh & until test -s bg/pid; do sleep 0.01; done" & } &&
	rec=$! &&
	test_when_finished "kill -CONT \$keeper 2>/dev/null; kill -9 $rec 2>/dev/null; exec 9<>bg/go; echo >&9; sleep 0.2; kill -9 \$(cat bg/pid) 2>/dev/null; true" &&
	for i in $(seq 500); do keeper=$(pgrep -P $rec -x ingero-cleanup) && break; sleep 0.01; done &&
	# the keeper stopped, ingero waits for it once the command has ended and the trace is done
	kill -STOP $keeper &&
	for i in $(seq 500); do test "$(cat /proc/$rec/wchan)" = do_wait && break; sleep 0.01; done &&
	test "$(cat /proc/$rec/wchan)" = do_wait &&
	timeout 10 sh -c "echo >bg/go" &&
	sleep 0.5 &&
	kill -CONT $keeper &&
	{ wait $rec; echo $? >status; } &&
	echo 0 >expect &&
	test_cmp expect status &&
	for i in $(seq 100); do grep -q cudaMalloc bg.out && break; sleep 0.05; done &&
	grep -q "cudaMalloc=3 cudaFree=3" bg.out &&
	no_leftovers
'

test_expect_success TRACEFS 'after SIGKILLs of ingero and its keeper the next run removes the leftovers and says so' '
	start_long k2.ing.zst &&
	test_when_finished "kill -9 $child 2>/dev/null; true" &&
	keeper=$(pgrep -P $rec -x ingero-cleanup) &&
	kill -9 $keeper $rec && { wait $rec || :; } && { kill -9 $child || :; } &&
	ingero_kernel_leftovers >left &&
	test_line_count -gt 0 left &&
	ingero record -q -o again.ing.zst -- true 2>err &&
	grep -q "left by ingero sessions whose process is gone" err &&
	no_leftovers
'

test_done
