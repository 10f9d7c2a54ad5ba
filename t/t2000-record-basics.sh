#!/usr/bin/env bash
test_description='record: its interface, its errors, the exit status passed through'
. ./test-lib.sh

test_expect_success 'record --help shows the usage and exits 0' '
	ingero record --help >help &&
	grep -q "^usage: ingero record" help &&
	grep -q -- "--duration" help
'

test_expect_success 'no command, no -p, no -a: a usage error' '
	test_expect_code 129 ingero record 2>err &&
	grep -q "give a command" err
'

test_expect_success 'a buffer of no size, a duration of none and a malformed pid list are usage errors' '
	test_expect_code 129 ingero record -b 0 -- true 2>err &&
	grep -q "positive number of KiB" err &&
	test_expect_code 129 ingero record --duration 0 -- true 2>err &&
	grep -x "ingero: the duration must be longer than 0" err &&
	for t in -5 1.5x inf 0x10; do
		test_expect_code 129 ingero record --duration $t -- true 2>err &&
		grep -q "^ingero: option .--duration. wants a time: " err || return 1
	done &&
	test_expect_code 129 ingero record -p 1,,2 2>err &&
	test_line_count = 1 err &&
	grep -q "not .1,,2." err &&
	test_expect_code 129 ingero record -p 99999999999 2>err &&
	grep -q "not .99999999999." err
'

test_expect_success 'an unknown probe set is named' '
	test_expect_code 129 ingero record -e alloc,nosuch -- true 2>err &&
	grep -q "nosuch" err
'

test_expect_success TRACEFS 'a command that does not exist: 127, one line, nothing left behind' '
	test_expect_code 127 ingero record -o t.ing.zst -- /nonexistent/cmd 2>err &&
	test_line_count = 1 err &&
	grep -q "cannot run ./nonexistent/cmd." err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a command execvp cannot run: 127, its errno in one line, nothing left behind' '
	mkdir dir &&
	printf "#!/bin/sh\ntrue\n" >noexec.sh && chmod 644 noexec.sh &&
	mkfifo fifo && chmod +x fifo &&
	for cmd in ./dir:Permission ./noexec.sh:Permission ./fifo:Permission :No; do
		test_expect_code 127 timeout 10 ingero record -q -o c.ing.zst -- "${cmd%:*}" 2>err &&
		test_line_count = 1 err &&
		grep -q "^ingero: cannot run .${cmd%:*}.: ${cmd#*:}" err &&
		! test -e c.ing.zst || return 1
	done &&
	test_expect_code 127 env PATH="$PWD:/nonexistent" "$BUILD_DIR/ingero" record -q -o c.ing.zst -- noexec.sh 2>err &&
	grep -q "cannot run .noexec.sh.: Permission denied" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'the command is found as execvp finds it: folders and files that cannot run are passed over' '
	mkdir -p pd/static-rt &&
	PATH="$PWD/pd:$WORKLOADS:$PATH" ingero record -q -o s.ing.zst -- static-rt 7 >out 2>err &&
	test_line_count = 0 err &&
	test_api_calls s.ing.zst cudaMalloc 7 &&
	env -u PATH "$BUILD_DIR/ingero" record -q -o p.ing.zst -- true 2>err &&
	grep -q "no CUDA library" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a shell script as the command: recorded, and nothing said about it' '
	printf "#!/bin/sh\nexec \"%s/alloc-free\" 5\n" "$WORKLOADS" >script.sh && chmod +x script.sh &&
	ingero record -q -o sh.ing.zst -- ./script.sh >out 2>err &&
	test_line_count = 0 err &&
	test_api_calls sh.ing.zst cudaMalloc 5
'

test_expect_success TRACEFS 'a dead pid is refused' '
	sleep 0.01 & dead=$! && wait $dead &&
	test_must_fail ingero record -o t.ing.zst -p $dead 2>err &&
	grep -q "no process $dead" err
'

test_expect_success TRACEFS 'a zombie pid is refused as a process that has ended' '
	(sleep 0.1 & exec sleep 5) &
	parent=$! &&
	test_when_finished "kill $parent" &&
	sleep 0.5 &&
	zombie=$(pgrep -P $parent) &&
	test_expect_code 1 timeout 10 ingero record -o z.ing.zst -p $zombie 2>err &&
	test_line_count = 1 err &&
	grep -x "ingero: process $zombie has ended (its parent has not reaped it yet)" err &&
	! test -e z.ing.zst
'

test_expect_success TRACEFS '-p of a process whose mappings cannot be read: said once' '
	sleep 10 &
	pid=$! &&
	test_when_finished "kill $pid" &&
	# its /proc entry hidden by an empty mount: kill -0 still finds it
	unshare -m sh -c "mount -t tmpfs none /proc/$pid &&
		ingero record -q -o m.ing.zst -p $pid --duration 3" 2>err &&
	test_line_count = 1 err &&
	grep -x "ingero: cannot read the mappings of process $pid: No such file or directory" err
'

test_expect_success TRACEFS 'an output that cannot be created: one line, nothing left behind' '
	test_must_fail ingero record -o /nonexistent/dir/t.ing.zst -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "cannot create ./nonexistent/dir/t.ing.zst." err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success 'a --lib that is missing, not a file, not ELF, or without the sets'"'"' symbols: one line, exit 1' '
	test_expect_code 1 ingero record -o t.ing.zst --lib /nonexistent/libcudart.so -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "cannot open ./nonexistent/libcudart.so." err &&
	echo "not a library" >fake.so &&
	test_expect_code 1 ingero record -o t.ing.zst --lib fake.so -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "not an ELF file" err &&
	mkfifo lib.fifo &&
	test_expect_code 1 timeout 10 ingero record -o t.ing.zst --lib lib.fifo -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "^ingero: .lib.fifo. is not a regular file" err &&
	test_expect_code 1 ingero record -o t.ing.zst --lib "$WORKLOADS/liblate.so" -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "liblate.so. has none of the symbols" err &&
	test_expect_code 1 ingero record -o t.ing.zst -e launch --lib "$WORKLOADS/libcudart.so.13" -- true 2>err &&
	grep -q "libcudart.so.13. has none of the symbols" err &&
	test ! -e t.ing.zst
'

test_expect_success TRACEFS 'uprobe_events not writable: one line naming it, nothing left behind' '
	test_expect_code 1 unshare -m sh -c "mount --bind -o ro $TRACING_DIR/uprobe_events $TRACING_DIR/uprobe_events &&
		ingero record -o t.ing.zst -- true" 2>err &&
	test_line_count = 1 err &&
	grep -q "cannot write .$TRACING_DIR/uprobe_events.: Read-only file system" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'


test_expect_success TRACEFS 'from a PID namespace of its own (a container): every call, its bytes, its pointers' '
	unshare -p -f --mount-proc ingero record -q -o ns.ing.zst -- "$WORKLOADS/alloc-free" 100 >out &&
	grep -q "cudaMalloc=100 cudaFree=100 bytes=1676800 leaked=0" out &&
	test_api_calls ns.ing.zst cudaMalloc 100 &&
	test_api_calls ns.ing.zst cuMemFree_v2 100 &&
	ingero analyze --json ns.ing.zst >ns.json &&
	test_json ns.json ".memory | \"\(.alloc_bytes) \(.live_bytes_end) \(.unfreed | length)\"" "1676800 0 0" &&
	ingero dump --json --stream call ns.ing.zst >calls.json &&
	jq -s "[.[] | select(.api == \"cudaMalloc\" and .out == \"0x700000000000\")] | length" calls.json >read &&
	test "$(cat read)" = 100 &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'two containers and the host at once: sessions named apart though the pids are the same' '
	unshare -p -f --mount-proc ingero record -q -o ns1.ing.zst -- sh -c "sleep 1; \"$WORKLOADS/alloc-free\" 300" >out1 &
	first=$! &&
	sleep 0.5 &&
	unshare -p -f --mount-proc ingero record -q -o ns2.ing.zst -- "$WORKLOADS/alloc-free" 300 >out2 &&
	ingero record -q -o host.ing.zst -- "$WORKLOADS/alloc-free" 300 >out3 2>err &&
	! grep -q "removed" err &&
	wait $first &&
	test_api_calls ns1.ing.zst cudaMalloc 300 &&
	test_api_calls ns2.ing.zst cudaMalloc 300 &&
	test_api_calls host.ing.zst cudaMalloc 300 &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a killed container leaves its session, which the host.s next ingero removes' '
	# the namespace ends with its first process: ingero and its keeper are killed with it
	# once the command runs, the session is whole: probes, instance and filter are in place before it starts
	unshare -p -f --mount-proc sh -c "ingero record -q --lib \"$WORKLOADS/libcudart.so.13\" -o dead.ing.zst -- sleep 30 &
		for i in \$(seq 1000); do pgrep -xf \"sleep 30\" >/dev/null && break; sleep 0.01; done" &&
	ingero_kernel_leftovers >left &&
	grep -q "ingero-[0-9]*_[0-9]" left &&
	ingero record -q -o t.ing.zst -- true 2>err &&
	grep -q "removed 1 instance(s) and 3 uprobe(s) left by ingero sessions whose process is gone" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'in a PID namespace of its own, -p and -a: one line, nothing left behind' '
	test_expect_code 1 unshare -p -f --mount-proc ingero record -p 1 -o t.ing.zst 2>err &&
	test_line_count = 1 err &&
	grep -q "records a command it starts; -p and -a need the host" err &&
	test_expect_code 1 unshare -p -f --mount-proc ingero record -a -o t.ing.zst 2>err &&
	grep -q "records a command it starts" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'not root: names the capability, leaves nothing' '
	test_must_fail setpriv --reuid=65534 --regid=65534 --clear-groups ingero record -o /tmp/ingero-nobody.$$ -- true 2>err &&
	grep -q "CAP_SYS_ADMIN" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'the command exit status is passed through' '
	test_expect_code 3 ingero record -q -o t.ing.zst -- "$WORKLOADS/exit-status" 3 >out &&
	grep -q "code=3" out
'

test_expect_success TRACEFS 'a command that leaves processes running: how many is said, even with -q' '
	ingero record -q -o bg.ing.zst -- sh -c "sleep 2 & sleep 2 & \"$WORKLOADS/alloc-free\" 4 >/dev/null" 2>err &&
	test_line_count = 1 err &&
	grep -x "ingero: warning: 2 process(es) that .sh. started still run: what they do after its end is not recorded (record them with -p)" err &&
	test_api_calls bg.ing.zst cudaMalloc 4 &&
	ingero record -q -o fg.ing.zst -- sh -c "sleep 0.2 & \"$WORKLOADS/alloc-free\" 4 >/dev/null; wait" 2>err &&
	test_line_count = 0 err
'

test_expect_success TRACEFS 'the command line in the trace reads back in a shell as the arguments it had' '
	ingero record -q -o argv.ing.zst -- sh -c "exit 0" "a b" "it'\''s" "" "x\$y" 2>/dev/null &&
	ingero info --json argv.ing.zst | jq -r .header.command >command &&
	grep -q "^sh -c " command &&
	eval "set -- $(cat command)" &&
	test $# = 7 && test "$3" = "exit 0" && test "$4" = "a b" && test "$5" = "it'\''s" &&
	test "$6" = "" && test "$7" = "x\$y"
'

test_expect_success TRACEFS 'death by a signal is 128+N' '
	test_expect_code 137 ingero record -q -o t.ing.zst -- "$WORKLOADS/exit-status" -s 9 0
'

test_expect_success TRACEFS '--duration takes a fraction or a unit: -p ends after it, the process still running' '
	{ sleep 30 & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null; true" &&
	timeout 20 ingero record -q -o dur.ing.zst -p $pid --duration 300ms &&
	kill -0 $pid &&
	timeout 20 ingero record -q -o dur.ing.zst -p $pid --duration 0.3 &&
	kill -0 $pid
'

test_expect_success TRACEFS 'a signal after --duration is passed on, and the command waited for' '
	for sig in TERM:143 INT:130 HUP:129; do
		ingero record -q -o d.ing.zst --duration 1 -- sleep 6 2>/dev/null &
		pid=$! &&
		sleep 2 &&
		kill -${sig%:*} $pid &&
		{ wait $pid; echo $? >status; } &&
		echo ${sig#*:} >expect &&
		test_cmp expect status || return 1
	done &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a command that stopped itself ends on the signal passed on, not killed after the grace' '
	ingero record -q -o stopped.ing.zst -- sh -c "kill -STOP \$\$; exit 3" &
	pid=$! &&
	for i in $(seq 1000); do
		c=$(pgrep -P $pid -x sh) && test "$(cut -d" " -f3 /proc/$c/stat)" = T && break
		sleep 0.01
	done &&
	kill -TERM $pid &&
	{ wait $pid; echo $? >status; } &&
	echo 143 >expect &&
	test_cmp expect status &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'Ctrl-C before the command starts: 130, nothing recorded, nothing left behind' '
	# a large buffer and probes made one by one give the set-up time to be interrupted in
	INGERO_NO_GROUPED_PROBES=1 setsid env --default-signal=INT ingero record -b 131072 -o w.ing.zst \
		--lib "$WORKLOADS/libcuda.so.1" -- "$WORKLOADS/alloc-free" 5 >w.out 2>w.err &
	pid=$! &&
	# the command waits for its start as a child named ingero, forked as the set-up begins
	for i in $(seq 1000); do pgrep -x -P $pid ingero >/dev/null && break; sleep 0.01; done &&
	kill -INT -- -$pid &&
	{ wait $pid; echo $? >w.status; } &&
	echo 130 >expect &&
	test_cmp expect w.status &&
	test_line_count = 1 w.err &&
	grep -q "interrupted before .*alloc-free. started: nothing recorded" w.err &&
	! test -e w.ing.zst &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'the command keeps its stdin and stdout' '
	echo hello | ingero record -q -o t.ing.zst -- cat >out &&
	test "$(cat out)" = hello
'

test_expect_success TRACEFS 'standard error closed: the summary and the warnings stay out of the trace' '
	ingero record -o closed.ing.zst -- "$WORKLOADS/alloc-free" 10 >out 2>&- &&
	test_api_calls closed.ing.zst cudaMalloc 10 &&
	ingero record -q -o nocuda.ing.zst -- "$WORKLOADS/nocuda" 10 >out 2>&- &&
	ingero info nocuda.ing.zst >info
'

test_expect_success TRACEFS 'default output, an existing trace kept as .old, mode 0600' '
	echo previous >ingero.ing.zst &&
	ingero record -q -- "$WORKLOADS/nocuda" 10 >/dev/null 2>err &&
	test "$(cat ingero.ing.zst.old)" = previous &&
	test "$(stat -c %a ingero.ing.zst)" = 600 &&
	grep -q "no CUDA library" err
'

test_expect_success TRACEFS 'the summary counts events, bytes and losses, the events as ingero info does' '
	ingero record -o s.ing.zst -- "$WORKLOADS/alloc-free" 10 >/dev/null 2>err &&
	grep -E "^ingero: [0-9]+ events \(40 calls, 0 still open\) in .s.ing.zst.: [0-9]+ bytes, [0-9.]+ bytes/event, 0 lost" err &&
	test "$(sed -n "s/.*: \([0-9]*\) bytes,.*/\1/p" err)" = "$(stat -c %s s.ing.zst)" &&
	ingero info s.ing.zst >info &&
	sed -n "s/^events: *\([0-9]*\) .*/\1/p" info >expect &&
	sed -n "s/^ingero: \([0-9]*\) events .*/\1/p" err >events &&
	test_line_count = 1 events &&
	test_cmp expect events
'

test_expect_success TRACEFS '-o -, a pipe, a device and a link to the standard output are written through' '
	ingero record -q -o - -- sh -c "\"$WORKLOADS/launch\" 20 >&2" 2>/dev/null | cat >piped.ing.zst &&
	test_api_calls piped.ing.zst cuLaunchKernel 20 &&
	ingero record -o /dev/null -- "$WORKLOADS/launch" 10 >/dev/null 2>err &&
	test -c /dev/null &&
	grep -q "(12 calls, 0 still open) in ./dev/null.: [0-9]* bytes" err &&
	ln -s /proc/self/fd/1 to-stdout &&
	ingero record -q -o to-stdout -- sh -c "\"$WORKLOADS/launch\" 30 >&2" 2>/dev/null >linked.ing.zst &&
	test -L to-stdout &&
	! test -e to-stdout.old &&
	test_api_calls linked.ing.zst cuLaunchKernel 30
'

test_expect_success TRACEFS '-o - piped straight into analyze -: every launch in the report, the command'"'"'s output on stderr' '
	ingero record -q -o - -- sh -c "echo to-stdout; \"$WORKLOADS/launch\" 25" 2>err |
		ingero analyze --json - >report.json &&
	test_json report.json ".apis[] | select(.name == \"cuLaunchKernel\") | .calls" 25 &&
	grep -x to-stdout err
'

test_expect_success TRACEFS '-o - on a terminal: refused in one line, nothing left behind' '
	script -qec "ingero record -o - -- true; echo status=\$?" /dev/null >tty &&
	grep -q "the trace is binary: not writing it to a terminal" tty &&
	grep -q "status=1" tty &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a directory, or a link to a file with data, is refused and left as it was' '
	mkdir traces &&
	test_expect_code 1 ingero record -o traces -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "cannot write the trace to .traces.: it is a directory" err &&
	test -d traces && ! test -e traces.old &&
	echo precious >kept && ln -s kept to-kept &&
	test_expect_code 1 ingero record -o to-kept -- true 2>err &&
	test_line_count = 1 err &&
	grep -q "links to a file that holds data" err &&
	test "$(cat kept)" = precious && test -L to-kept &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a trace another recording writes: refused in one line, and left where that one says' '
	ingero record -o same.ing.zst -- sh -c "sleep 2; \"$WORKLOADS/alloc-free\" 11" >/dev/null 2>first.err &
	first=$! &&
	test_when_finished "kill $first 2>/dev/null; true" &&
	for i in $(seq 500); do pgrep -P $first -x sh >/dev/null && break; sleep 0.01; done &&
	test_expect_code 1 ingero record -q -o same.ing.zst -- "$WORKLOADS/alloc-free" 22 >/dev/null 2>err &&
	wait $first &&
	test_line_count = 1 err &&
	grep -x "ingero: .same.ing.zst. is being written by another recording: give another -o" err &&
	grep -q "(44 calls, 0 still open) in .same.ing.zst." first.err &&
	! test -e same.ing.zst.old &&
	test_api_calls same.ing.zst cudaMalloc 11 &&
	ingero record -q -o same.ing.zst -- "$WORKLOADS/alloc-free" 3 >/dev/null &&
	test_api_calls same.ing.zst.old cudaMalloc 11 &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a trace file is claimed under a lock of its folder: none appears while another holds it' '
	mkdir claim &&
	flock -o claim sh -c "ingero record -q -o claim/t.ing.zst -- true 2>/dev/null & echo \$! >pid; sleep 0.5;
		test ! -e claim/t.ing.zst" &&
	pid=$(cat pid) &&
	for i in $(seq 500); do kill -0 $pid 2>/dev/null || break; sleep 0.01; done &&
	ingero info claim/t.ing.zst >info &&
	grep -qx "command: *true" info &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

# Some kernels never report a switch out of the idle task on some CPUs: ingero says which, as its trace shows.
test_expect_success TRACEFS 'CPUs that never report leaving the idle task are named, as the trace shows them' '
	ingero record -o idle.ing.zst -- taskset -c 1 sh -c "for i in \$(seq 40); do sleep 0.002; done" 2>err &&
	ingero dump idle.ing.zst | awk "\$4 == \"switch\" && /next_tid=0 / { to[\$2]++ }
		\$4 == \"switch\" && /prev_tid=0 / { from[\$2]++ }
		END { print (to[\"[001]\"] >= 16 && !from[\"[001]\"]) ? \"silent\" : \"seen\" }" >cpu1 &&
	cat cpu1 &&
	if test "$(cat cpu1)" = silent
	then
		grep -q "^ingero: warning: the kernel reported no switch out of the idle task on CPU \(1\|1-[0-9]*\|1, .*\): " err
	else
		! grep -q "no switch out of the idle task" err
	fi
'

test_expect_success TRACEFS 'the idle task is swapper/CPU on each CPU, a name the file leaves out' '
	ingero dump idle.ing.zst | awk "\$4 == \"switch\" && / next_tid=0 / { cpu = substr(\$2, 2, 3) + 0; n++;
		if (index(\$0, \" next_comm=swapper/\" cpu \" \")) named++ }
		END { print ((n >= 16 && named == n) ? \"named\" : n \" idle, \" named \" named\") }" >idle &&
	echo named >expect && test_cmp expect idle &&
	zstd -q -d -c idle.ing.zst >plain &&
	! grep -a -q swapper plain
'

test_expect_success TRACEFS 'a full disk: the trace says how many of the events it holds, and holds them' '
	unshare -m sh -c "mount -t tmpfs -o size=32k none /mnt &&
		ingero record -o /mnt/full.ing.zst -- sh -c \"$WORKLOADS/launch 10; sleep 1.2; $WORKLOADS/launch 200000\" \
			>/dev/null 2>err;
		echo \$? >status; ingero dump /mnt/full.ing.zst >dump 2>dump-err; true" &&
	test "$(cat status)" = 0 &&
	grep -q "cannot write the trace: No space left on device" err &&
	grep -E "holds [0-9]+ of the [0-9]+ events recorded: the rest could not be written" err &&
	written=$(sed -n "s/.* holds \([0-9]*\) of the.*/\1/p" err) &&
	test "$written" -gt 0 &&
	test_line_count = "$written" dump &&
	grep -q "is damaged: block [0-9]* at offset [0-9]*: truncated at offset 32768" dump-err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success TRACEFS 'a trace piped to a reader that goes away: said, and the command runs to its end' '
	{ ingero record -o - -- sh -c "\"$WORKLOADS/launch\" 100000 >/dev/null; touch ran" 2>err; echo $? >status; } |
		head -c 100 >/dev/null &&
	test "$(cat status)" = 0 &&
	test -e ran &&
	grep -q "cannot write the trace: Broken pipe" err &&
	grep -q "holds [0-9]* of the [0-9]* events recorded" err &&
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_expect_success 'a trace on a pipe: one line saying to save it first' '
	cat piped.ing.zst | test_expect_code 1 ingero info /dev/stdin 2>err &&
	test_line_count = 1 err &&
	grep -q "is not a file: a trace is read out of order" err
'

test_done
