#!/usr/bin/env bash
test_description='analyze on recordings of the stand-ins with known causes: a pinned neighbour, a sleeping sync, known allocations'
. ./test-lib.sh

# The neighbour: CPU-bound, named "hog", on CPU 0 where analyze-sync pins its
# thread, at a higher priority so that it takes the CPU at every chance.
start_hog() {
	taskset -c 0 nice -n -10 "$WORKLOADS/analyze-hog" 300 >hog.out &
	hog=$!
	for i in $(seq 50); do grep -q pid= hog.out && return 0; sleep 0.1; done
	return 1
}

# analyze-sync spends its delays inside its launches: they are timed only with --returns;
# with the default set they are the time between calls.

# "KEY=VALUE" off a workload's summary line.
field() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

test_expect_success TRACEFS 'with a hog on its CPU: recorded' '
	start_hog &&
	test_when_finished "kill $hog" &&
	ingero record -q --returns -o hog.ing.zst -- "$WORKLOADS/analyze-sync" 100 500 200 >sync.out &&
	ingero analyze --json hog.ing.zst >hog.json &&
	echo $hog >hog.pid
'

test_expect_success TRACEFS 'a chain of medium or high severity names the hog by comm and pid' '
	jq -c ".chains[] | {api, severity, scope, summary}" hog.json &&
	test_json hog.json "[.chains[] | select((.severity == \"high\" or .severity == \"medium\") and
		.culprits[0].comm == \"hog\" and .culprits[0].pid == $(cat hog.pid))] | length > 0" true
'

test_expect_success TRACEFS 'what the hog took inside the calls is within 20% of what the workload measured' '
	measured=$(field sync.out delay_in_calls_ns) &&
	taken=$(jq "[.interference[] | select(.comm == \"hog\") | .in_calls_ns] | add" hog.json) &&
	split=$(jq "[.apis[] | select(.nested | not) | .preempted_ns + .wait_ns] | add" hog.json) &&
	echo "measured $measured, hog took $taken, runnable in calls $split" &&
	test_within "$taken" "$measured" 20 &&
	test_within "$split" "$measured" 20
'

test_expect_success TRACEFS 'with a hog, launches at their entries alone: the chain between calls names it' '
	start_hog &&
	test_when_finished "kill $hog" &&
	ingero record -q -o entry.ing.zst -- "$WORKLOADS/analyze-sync" 100 500 200 >entry.out &&
	ingero analyze --json entry.ing.zst >entry.json &&
	between=".chains[] | select(.scope == \"between\")" &&
	jq -c "$between | {severity, summary}" entry.json &&
	test_json entry.json "$between | .culprits[0].comm" hog &&
	test_json entry.json "$between | .culprits[0].pid" $hog &&
	test_json entry.json "$between | .severity == \"high\" or .severity == \"medium\"" true
'

test_expect_success TRACEFS 'what the hog took between and in the calls is within 20% of all the delay the workload measured' '
	measured=$(field entry.out delay_ns) &&
	taken=$(jq "[(.chains[] | select(.scope == \"between\") | .culprits[0].ns),
		(.interference[] | select(.comm == \"hog\") | .in_calls_ns)] | add" entry.json) &&
	echo "measured $measured, hog took $taken" &&
	test_within "$taken" "$measured" 20
'

test_expect_success TRACEFS 'without the hog: recorded, with the allocation workload after it' '
	ingero record -q --returns -o calm.ing.zst -- sh -c "\"$WORKLOADS/analyze-sync\" 100 500 200 >sync2.out &&
		\"$WORKLOADS/analyze-memory\" >mem.out" &&
	ingero analyze --json calm.ing.zst >calm.json &&
	ingero analyze calm.ing.zst >calm.txt
'

test_expect_success TRACEFS 'without the hog no chain is of medium or higher severity' '
	jq -c ".chains[] | {api, severity, summary}" calm.json &&
	test_json calm.json "[.chains[] | select(.severity == \"high\" or .severity == \"medium\")] | length" 0
'

test_expect_success TRACEFS 'the sleeping sync is blocked, woken by stub-gpu, and no interference' '
	sync=".apis[] | select(.name == \"cudaStreamSynchronize\" and (.nested | not))" &&
	test_json calm.json "$sync | .waker.comm" stub-gpu &&
	test_json calm.json "$sync | .blocked_ns * 10 >= .total_ns * 8" true &&
	test_json calm.json "$sync | (.preempted_ns + .wait_ns) * 10 < .total_ns" true &&
	test_json calm.json "[.chains[] | select(.api == \"cudaStreamSynchronize\") |
		select(.cause != \"gpu-wait\" and .severity != \"low\")] | length" 0
'

# make demo: copies and syncs that wait for the GPU, beside a hog of the same priority on their CPU.
test_expect_success TRACEFS 'the demo beside a hog: a chain names it, and none calls preempted calls not interference' '
	taskset -c 0 "$WORKLOADS/analyze-hog" 60 >demo-hog.out &
	dhog=$! &&
	test_when_finished "kill $dhog" &&
	ingero record -q -o demo.ing.zst -- "$WORKLOADS/demo" >demo.out &&
	ingero analyze --json demo.ing.zst >demo.json &&
	jq -c ".chains[] | {api, cause, summary, slow_split}" demo.json &&
	test_json demo.json "[.chains[] | select(.culprits[0].comm == \"hog\" and .culprits[0].pid == $dhog)] | length > 0" true &&
	test_json demo.json "[.chains[] | select(.summary | test(\"not interference\")) | .slow_split |
		select((.preempted_ns + .wait_ns) * 100 >= 12 * (.oncpu_ns + .preempted_ns + .blocked_ns + .wait_ns + .unknown_ns))] |
		length" 0
'

test_expect_success TRACEFS 'allocations: exact peak, live bytes at the end and the unfreed list' '
	test_json calm.json .memory.peak_bytes "$(field mem.out peak)" &&
	test_json calm.json .memory.live_bytes_end "$(field mem.out live)" &&
	test_json calm.json "[.memory.unfreed[] | \"\(.ptr):\(.size)\"] | join(\",\")" "$(field mem.out unfreed)" &&
	test_json calm.json ".memory.unfreed[0].api" cudaMalloc &&
	test_json calm.json .memory.alloc_calls 6 &&
	test_json calm.json .memory.free_calls 3 &&
	test_json calm.json "[.errors[] | select(.nested | not) | \"\(.api):\(.code):\(.count)\"] | join(\",\")" cudaMalloc:2:1
'

# What varies between runs goes: times, pids and tids, the order of the rows by time;
# t/golden/analyze-recorded.txt is in this form.
normalise() {
	awk '
		/^== / { section = $0 }
		section ~ /API summary/ && /^cu/ && $2 ~ /^[0-9]+$/ { print "api", $1, $2, $3; next }
		section ~ /Memory/ && !/^  \+/ && !/^live bytes over time/ { print }
		section ~ /Errors/ { print }
	' "$1" | sed -E -e "s/\+[0-9]+\.[0-9]+ s/+T/g" -e "s/tid [0-9]+ /tid TID /g" -e "s/ +/ /g" | sort
}

test_expect_success TRACEFS 'the normalised text report is the golden one' '
	normalise calm.txt >calm.norm &&
	test_cmp "$SRC_DIR/t/golden/analyze-recorded.txt" calm.norm
'

test_done
