#!/usr/bin/env bash
test_description='analyze on small traces of exactly known events, whose true answer is worked out by hand'
. ./test-lib.sh

MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace
[ -x "$MKTRACE" ] && test_set_prereq MKTRACE

# trace NAME: writes NAME.ing.zst from the description on stdin (see mktrace --text).
trace() {
	cat >"$1.txt" && "$MKTRACE" --text "$1.txt" "$1.ing.zst"
}

test_expect_success MKTRACE 'a tid taken by another task after its traced thread exited is that task'"'"'s' '
	trace reuse <<-\EOF &&
	name tid=1001 comm=trainer
	comm t=0 pid=1000 tid=1001 comm=trainer
	fork t=10 pid=1000 tid=1001 cpid=1000 ctid=1002 comm=trainer
	switch t=500 cpu=0 prev=0 next=1001
	switch t=600 cpu=1 prev=0 next=1002 next_comm=worker
	call t=700 end=800 tid=1002 api=cudaFree
	exit t=900 pid=1000 tid=1002 comm=worker
	switch t=900 cpu=1 prev=1002 state=X next=0 prev_comm=worker
	call t=1000 end=9000 tid=1001 api=cudaFree a0=0x10
	switch t=2000 cpu=0 prev=1001 state=R+ next=1002 next_comm=backup
	switch t=6000 cpu=0 prev=1002 state=S next=1001 prev_comm=backup
	EOF
	ingero analyze --json reuse.ing.zst >reuse.json &&
	test_json reuse.json ".chains[0].culprits[0] | \"\(.comm) \(.pid) \(.traced) \(.ns)\"" "backup 1002 false 4000" &&
	test_json reuse.json ".chains[0].severity" high &&
	test_json reuse.json ".interference[0] | \"\(.comm) \(.traced) \(.ns)\"" "backup false 4000" &&
	test_json reuse.json "[.threads[] | \"\(.tid):\(.comm):\(.run_ns):\(.voluntary):\(.calls)\"] | join(\",\")" \
		1001:trainer:4500:0:1,1002:worker:300:1:1
'

test_expect_success MKTRACE 'a preemption cut by --to: what the interferer took inside calls is within what it took' '
	trace cut <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=612 comm=journald
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=500 cpu=0 prev=0 next=1001
	call t=9000 end=13000 tid=1001 api=cudaFree a0=0x10
	switch t=10000 cpu=0 prev=1001 state=R+ next=612
	switch t=12000 cpu=0 prev=612 state=S next=1001
	EOF
	ingero analyze --json --to 11us cut.ing.zst >cut.json &&
	test_json cut.json ".apis[0] | \"\(.total_ns) \(.preempted_ns)\"" "4000 2000" &&
	test_json cut.json ".chains[0].culprits[0] | \"\(.comm) \(.ns)\"" "journald 2000" &&
	test_json cut.json ".interference[0] | \"\(.comm) \(.ns) \(.in_calls_ns) \(.apis[0].ns)\"" "journald 1000 1000 1000" &&
	ingero analyze --json --to 10us cut.ing.zst >cut0.json &&
	test_json cut0.json ".chains[0].culprits[0] | \"\(.comm) \(.ns)\"" "journald 2000" &&
	test_json cut0.json ".interference_total" 0
'

test_expect_success MKTRACE '--api: a preemption inside a call of another API is inside a CUDA call, not between calls' '
	trace other-api <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=700 comm=hog
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=1 cpu=0 prev=0 next=1001
	call t=100 end=200 tid=1001 api=cudaFree
	call t=1000 end=9000 tid=1001 api=cudaStreamSynchronize
	switch t=2000 cpu=0 prev=1001 state=R+ next=700
	switch t=6000 cpu=0 prev=700 state=S next=1001
	call t=9100 end=9200 tid=1001 api=cudaFree
	EOF
	ingero analyze --json other-api.ing.zst >all.json &&
	ingero analyze --json --api cudaFree other-api.ing.zst >free.json &&
	for f in all.json free.json; do
		test_json $f ".interference[0] | \"\(.comm) \(.ns) \(.in_calls_ns)\"" "hog 4000 4000" &&
		test_json $f "[.chains[] | select(.scope == \"between\")] | length" 0 || return 1
	done &&
	test_json free.json ".session.uncovered_calls" 0 &&
	test_json free.json "[.apis[].name] | join(\",\")" cudaFree
'

test_expect_success MKTRACE 'never freed, under --from and --to: the allocations of the calls they keep' '
	trace unfreed <<-\EOF &&
	name tid=1001 comm=trainer
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=1 cpu=0 prev=0 next=1001
	call t=100 end=200 tid=1001 api=cudaMalloc out=0x1000 a1=4096
	call t=300 end=400 tid=1001 api=cudaMalloc out=0x2000 a1=8192
	call t=1000 end=1100 tid=1001 api=cudaMalloc out=0x3000 a1=100
	call t=2000 end=2100 tid=1001 api=cudaFree a0=0x2000
	EOF
	ingero analyze --json unfreed.ing.zst >whole.json &&
	test_json whole.json "[.memory.unfreed[].ptr] | join(\",\")" 0x1000,0x3000 &&
	ingero analyze --json --to 550ns unfreed.ing.zst >to.json &&
	test_json to.json ".memory | \"\(.alloc_calls) \(.unfreed_total)\"" "2 1" &&
	test_json to.json "[.memory.unfreed[].ptr] | join(\",\")" 0x1000 &&
	ingero analyze --json --from 900ns unfreed.ing.zst >from.json &&
	test_json from.json ".memory | \"\(.alloc_calls) \(.free_calls) \(.free_bytes) \(.unfreed_total)\"" "1 1 8192 1" &&
	test_json from.json "[.memory.unfreed[].ptr] | join(\",\")" 0x3000 &&
	ingero analyze --to 550ns unfreed.ing.zst >to.txt &&
	grep "^never freed: 1 allocation$" to.txt
'

test_expect_success MKTRACE 'a p50 of 0 has no p99/p50 ratio, rather than 0.0x' '
	trace zero-p50 <<-\EOF &&
	name tid=1001 comm=trainer
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=1 cpu=0 prev=0 next=1001
	call t=100 end=100 tid=1001 api=cudaFree
	call t=200 end=200 tid=1001 api=cudaFree
	call t=300 end=5300 tid=1001 api=cudaFree
	call t=6000 end=6070 tid=1001 api=cudaMemcpy
	call t=7000 end=7130 tid=1001 api=cudaMemcpy
	EOF
	ingero analyze --json zero-p50.ing.zst >zero.json &&
	test_json zero.json ".apis[0] | \"\(.name) \(.p50_ns) \(.p90_ns) \(.p99_ns)\"" "cudaFree 0 5000 5000" &&
	test_json zero.json ".chains[0].summary | startswith(\"cudaFree p99 = 5.00 us (p50 0 ns): \")" true &&
	test_json zero.json ".chains[1].summary | startswith(\"cudaMemcpy p99 = 130 ns (1.9x p50 70 ns): \")" true &&
	ingero analyze zero-p50.ing.zst >zero.txt &&
	grep -E "^cudaFree +3 +0 +5.00 us +96.2% +1.67 us +0 ns +5.00 us +5.00 us +5.00 us +- " zero.txt &&
	grep -E "^cudaMemcpy +2 .* 130 ns +1.9x " zero.txt
'

test_expect_success MKTRACE 'frees alone: a peak of 0 bytes has no time' '
	trace frees <<-\EOF &&
	name tid=1001 comm=trainer
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=1 cpu=0 prev=0 next=1001
	call t=100 end=200 tid=1001 api=cudaFree a0=0x10
	call t=300 end=400 tid=1001 api=cudaFree a0=0
	EOF
	ingero analyze frees.ing.zst >frees.txt &&
	grep "^peak 0 B; 0 B live at the end$" frees.txt &&
	grep "^not tracked: 0 allocations with no pointer read, 1 frees of pointers not allocated in the trace, 1 frees of NULL$" frees.txt
'

test_expect_success MKTRACE 'a wakeup of the same ns as the switch-in still names the waker of the sleep' '
	trace same-ns <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=1002 comm=gpu
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=100 cpu=1 prev=0 next=1002
	switch t=500 cpu=0 prev=0 next=1001
	call t=1000 end=6000 tid=1001 api=cudaStreamSynchronize
	switch t=2000 cpu=0 prev=1001 state=S next=0
	wake t=4000 cpu=1 waker=1002 wakee=1001 target=0
	switch t=4000 cpu=0 prev=0 next=1001
	EOF
	ingero analyze --json same-ns.ing.zst >same-ns.json &&
	test_json same-ns.json ".apis[0] | \"\(.blocked_ns) \(.wait_ns) \(.waker.tid) \(.waker.ns)\"" "2000 0 1002 2000" &&
	ingero analyze same-ns.ing.zst >same-ns.txt &&
	grep "^cudaStreamSynchronize slept 40% of its time, woken mostly by gpu (pid 1002, tid 1002): 2.00 us of it$" same-ns.txt
'

test_expect_success MKTRACE 'an allocation retried inside one cudaMalloc counts once' '
	trace retry <<-\EOF &&
	name tid=1001 comm=trainer
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=1 cpu=0 prev=0 next=1001
	call t=100 end=1000 tid=1001 id=1 api=cudaMalloc out=0x1000 a1=4096
	call t=200 end=300 tid=1001 id=2 parent=1 api=cuMemAlloc_v2 ret=2 a1=4096
	call t=400 end=900 tid=1001 id=3 parent=1 api=cuMemAlloc_v2 out=0x1000 a1=4096
	call t=2000 end=2100 tid=1001 id=4 api=cudaFree a0=0x1000
	EOF
	ingero analyze --json retry.ing.zst >retry.json &&
	test_json retry.json ".memory | \"\(.alloc_calls) \(.alloc_bytes) \(.free_bytes) \(.live_bytes_end) \(.peak_bytes)\"" \
		"1 4096 4096 0 4096" &&
	test_json retry.json "[.memory.apis[] | \"\(.name):\(.allocs):\(.frees)\"] | join(\",\")" cudaMalloc:1:0,cudaFree:0:1
'

test_expect_success MKTRACE 'under --from and --to, the live bytes are those of the blocks the calls kept allocated' '
	trace window-live <<-\EOF &&
	name tid=1001 comm=trainer
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=1 cpu=0 prev=0 next=1001
	call t=100 end=200 tid=1001 api=cudaMalloc out=0x1000 a1=4096
	call t=1000 end=1100 tid=1001 api=cudaMalloc out=0x2000 a1=100
	call t=1200 end=1300 tid=1001 api=cudaMalloc out=0x3000 a1=10
	call t=3000 end=3100 tid=1001 api=cudaFree a0=0x3000
	call t=3200 end=3300 tid=1001 api=cudaMalloc out=0x4000 a1=7
	EOF
	ingero analyze --json --from 900ns --to 2us window-live.ing.zst >window-live.json &&
	test_json window-live.json ".memory | \"\(.peak_bytes) \(.peak_at_ns) \(.live_bytes_end) \(.timeline[0].bytes)\"" \
		"110 1000001300 100 110" &&
	test_json window-live.json "[.memory.unfreed[].size] | add" 100
'

test_expect_success MKTRACE 'a switch-out of a tid whose exited thread lost its own is the new task'"'"'s' '
	trace lost-exit <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=700 comm=hog
	comm t=0 pid=1000 tid=1000 comm=main
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=100 cpu=0 prev=0 next=1001
	exit t=900 pid=1000 tid=1001 comm=trainer
	lost t=950 cpu=0 end=1200 count=2
	fork t=1000 pid=1000 tid=1000 cpid=1000 ctid=1001 comm=worker
	call t=1500 end=4000 tid=1001 api=cudaFree a0=0x10
	switch t=2000 cpu=0 prev=1001 state=R+ next=700 prev_comm=worker
	switch t=3000 cpu=0 prev=700 state=S next=1001 next_comm=worker
	EOF
	ingero analyze --json lost-exit.ing.zst >lost-exit.json &&
	test_json lost-exit.json ".apis[0] | \"\(.oncpu_ns) \(.preempted_ns) \(.unknown_ns)\"" "1500 1000 0" &&
	test_json lost-exit.json ".chains[0].culprits[0] | \"\(.comm) \(.ns)\"" "hog 1000" &&
	test_json lost-exit.json ".threads[] | select(.comm == \"worker\") | \"\(.run_ns) \(.involuntary) \(.delays)\"" "2000 1 1" &&
	test_json lost-exit.json ".threads[] | select(.comm == \"trainer\") | \"\(.run_ns) \(.involuntary)\"" "800 0"
'

test_expect_success MKTRACE 'a runnable stretch cut by --from or --to counts its part inside them as delay' '
	trace cut-delay <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=700 comm=hog
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=100 cpu=0 prev=0 next=1001
	switch t=1000 cpu=0 prev=1001 state=R+ next=700
	switch t=3000 cpu=0 prev=700 state=S next=1001
	call t=3500 end=4000 tid=1001 api=cudaFree
	switch t=5000 cpu=0 prev=1001 state=S next=0
	EOF
	ingero analyze --json --from 2us cut-delay.ing.zst >from.json &&
	test_json from.json ".threads[0] | \"\(.run_ns) \(.delays) \(.avg_delay_ns) \(.max_delay_ns) \(.max_delay_at_ns)\"" \
		"2000 1 1000 1000 1000002000" &&
	ingero analyze --json --to 2us cut-delay.ing.zst >to.json &&
	test_json to.json ".threads[0] | \"\(.run_ns) \(.delays) \(.avg_delay_ns) \(.max_delay_ns) \(.max_delay_at_ns)\"" \
		"900 1 1000 1000 1000001000"
'

test_expect_success MKTRACE 'a runnable stretch cut by --from or --to: what each culprit ran in the part kept' '
	trace cut-two <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=700 comm=hogA
	name tid=800 comm=hogB
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=500 cpu=0 prev=0 next=1001
	call t=9000 end=13000 tid=1001 api=cudaFree a0=0x10
	switch t=10000 cpu=0 prev=1001 state=R+ next=700
	switch t=11000 cpu=0 prev=700 state=R+ next=800
	switch t=12000 cpu=0 prev=800 state=S next=1001
	EOF
	ingero analyze --json --to 11us cut-two.ing.zst >to.json &&
	test_json to.json "[.interference[] | \"\(.comm):\(.ns):\(.in_calls_ns)\"] | join(\",\")" hogA:1000:1000 &&
	test_json to.json "[.chains[0].culprits[] | \"\(.comm):\(.ns)\"] | join(\",\")" hogA:1000,hogB:1000 &&
	ingero analyze --json --from 11us cut-two.ing.zst >from.json &&
	test_json from.json "[.interference[] | \"\(.comm):\(.ns):\(.in_calls_ns)\"] | join(\",\")" hogB:1000:0
'

test_expect_success MKTRACE 'between calls: the time wanted and taken from the first call'"'"'s entry on' '
	trace first-call <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=700 comm=hog
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=0 cpu=0 prev=0 next=1001
	call t=10000 end=20000 tid=1001 api=cudaFree
	switch t=12000 cpu=0 prev=1001 state=R+ next=700
	switch t=14000 cpu=0 prev=700 state=S next=1001
	switch t=30000 cpu=0 prev=1001 state=R+ next=700
	switch t=31000 cpu=0 prev=700 state=S next=1001
	call t=40000 end=40100 tid=1001 api=cudaLaunchKernel
	switch t=50000 cpu=0 prev=1001 state=S next=0
	EOF
	ingero analyze --json first-call.ing.zst >first-call.json &&
	test_json first-call.json ".chains[] | select(.scope == \"between\") | \"\(.severity) \(.wanted_ns) \(.taken_ns)\"" \
		"medium 40000 1000" &&
	test_json first-call.json ".interference[0] | \"\(.ns) \(.in_calls_ns)\"" "3000 2000"
'

test_expect_success MKTRACE 'a wait on an idle CPU does not decide the cause of the slow calls' '
	trace idle-wait <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=1002 comm=gpu
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=0 cpu=0 prev=0 next=1001
	switch t=0 cpu=1 prev=0 next=1002
	call t=1000 end=2000 tid=1001 api=cudaStreamSynchronize
	call t=3000 end=4000 tid=1001 api=cudaStreamSynchronize
	call t=5000 end=6000 tid=1001 api=cudaStreamSynchronize
	call t=10000 end=20000 tid=1001 api=cudaStreamSynchronize
	switch t=11000 cpu=0 prev=1001 state=S next=0
	wake t=14000 cpu=1 waker=1002 wakee=1001 target=0
	switch t=19000 cpu=0 prev=0 next=1001
	EOF
	ingero analyze --json idle-wait.ing.zst >idle-wait.json &&
	test_json idle-wait.json ".chains_total" 1 &&
	test_json idle-wait.json ".chains[0] | \"\(.cause) \(.severity) \(.slow_split.wait_ns)\"" "gpu-wait info 5000" &&
	test_json idle-wait.json ".chains[0].remedy | startswith(\"nothing to fix on the CPU\")" true
'

test_expect_success MKTRACE 'a call that returns at the ns of its thread'"'"'s switch-in needs no repair' '
	trace same-ns-in <<-\EOF &&
	name tid=1001 comm=trainer
	name tid=1002 comm=gpu
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=100 cpu=1 prev=0 next=1002
	switch t=100 cpu=0 prev=0 next=1001
	switch t=200 cpu=0 prev=1001 state=S next=0
	switch t=500 cpu=0 prev=0 next=1001
	call t=500 end=500 tid=1001 api=cudaLaunchKernel
	call t=1000 end=4000 tid=1001 api=cudaStreamSynchronize
	switch t=2000 cpu=0 prev=1001 state=S next=0
	wake t=3000 cpu=1 waker=1002 wakee=1001 target=0
	switch t=4000 cpu=0 prev=0 next=1001
	EOF
	ingero analyze --json same-ns-in.ing.zst >same-ns-in.json &&
	test_json same-ns-in.json ".session.repaired_switch_ins" 0 &&
	test_json same-ns-in.json ".apis[] | select(.name == \"cudaStreamSynchronize\") |
		\"\(.oncpu_ns) \(.blocked_ns) \(.wait_ns) \(.unknown_ns) \(.waker.comm)\"" "1000 1000 1000 0 gpu"
'

# The same preemption by a neighbour, and by the recorder itself (the process ingero record names "ingero").
preempted_by() {
	cat <<-EOF
	name tid=1001 comm=trainer
	name tid=1500 comm=$1
	comm t=0 pid=1000 tid=1001 comm=trainer
	switch t=500 cpu=0 prev=0 next=1001
	call t=700 end=800 tid=1001 api=cudaFree
	call t=1000 end=9000 tid=1001 api=cudaFree a0=0x10
	switch t=2000 cpu=0 prev=1001 state=R+ next=1500 next_comm=$1
	switch t=6000 cpu=0 prev=1500 state=S next=1001 prev_comm=$1
	EOF
}

test_expect_success MKTRACE 'the recorder.s own reading is named as such, and rates no chain as a neighbour does' '
	preempted_by journald | trace neighbour &&
	ingero analyze --json neighbour.ing.zst >neighbour.json &&
	test_json neighbour.json ".chains[0] | \"\(.severity) \(.culprits[0].comm) \(.culprits[0].recorder)\"" "high journald false" &&
	preempted_by ingero | trace recorder &&
	ingero analyze --json recorder.ing.zst >recorder.json &&
	ingero analyze recorder.ing.zst >recorder.txt &&
	test_json recorder.json ".chains[0] | \"\(.severity) \(.culprits[0].comm) \(.culprits[0].recorder) \(.culprits[0].ns)\"" \
		"low ingero true 4000" &&
	test_json recorder.json ".interference[0] | \"\(.comm) \(.recorder) \(.ns)\"" "ingero true 4000" &&
	grep -q "by ingero (pid 1500, the recorder itself)" recorder.txt &&
	grep -q "ingero.*(the recorder itself)" recorder.txt &&
	grep -q "remedy: the recorder.s own reading of the trace" recorder.txt
'

test_done
