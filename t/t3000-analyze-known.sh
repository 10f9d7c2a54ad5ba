#!/usr/bin/env bash
test_description='analyze on a trace of known content: the golden report, the JSON, the filters and the errors'
. ./test-lib.sh

GEN=$BUILD_DIR/t/unit/analysis-trace
command -v script >/dev/null && test_set_prereq SCRIPT
MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace

# Runs ingero analyze on a terminal (script(1)'s pseudo-terminal): 0 when its report has colours.
colored_on_terminal() {
	TERM=xterm script -qec "ingero analyze known.ing.zst" /dev/null >tty.txt &&
	grep -q "$(printf "\033")" tty.txt
}

test_expect_success 'the known trace is written, and one made odd' '
	"$GEN" known.ing.zst &&
	"$GEN" --odd odd.ing.zst
'

test_expect_success 'the text report is the golden one' '
	ingero analyze --no-color known.ing.zst >out.txt &&
	test_cmp "$SRC_DIR/t/golden/analyze-known.txt" out.txt
'

test_expect_success 'in a pipe there are no colours even without --no-color' '
	ingero analyze known.ing.zst >plain.txt &&
	! grep -q "$(printf "\033")" plain.txt &&
	test_cmp out.txt plain.txt
'

test_expect_success SCRIPT 'on a terminal there are colours, unless NO_COLOR has a value' '
	(unset NO_COLOR; colored_on_terminal) &&
	NO_COLOR= colored_on_terminal &&
	! NO_COLOR=1 colored_on_terminal
'

test_expect_success 'the JSON parses and names its schema' '
	ingero analyze --json known.ing.zst >r.json &&
	test_json r.json .schema ingero-analyze/1 &&
	test_json r.json .session.command "python3 train.py --steps 100" &&
	test_json r.json .session.events 208
'

test_expect_success 'the API summary: counts, split and percentiles' '
	test_json r.json "[.apis[] | select(.nested | not) | .name] | join(\",\")" \
		cudaFree,cudaStreamSynchronize,cudaLaunchKernel,cudaMalloc &&
	test_json r.json ".apis[] | select(.name==\"cudaFree\") | .calls" 102 &&
	test_json r.json ".apis[] | select(.name==\"cudaFree\") | .preempted_ns" 6000000 &&
	test_json r.json ".apis[] | select(.name==\"cudaFree\") | .p50_ns" 400000 &&
	test_json r.json ".apis[] | select(.name==\"cudaFree\") | .p99_ns" 1600000 &&
	test_json r.json ".apis[] | select(.name==\"cudaStreamSynchronize\") | .blocked_ns" 900000 &&
	test_json r.json ".apis[] | select(.name==\"cudaStreamSynchronize\") | .waker.comm" gpu &&
	test_json r.json ".apis[] | select(.name==\"cudaStreamSynchronize\") | .waker.ns" 900000 &&
	test_json r.json ".apis[] | select(.name==\"cuMemAlloc_v2\") | .nested" true &&
	test_json r.json ".apis[] | select(.name==\"cudaMalloc\") | .errors" 1
'

test_expect_success 'the first chain names journald for cudaFree, with its time' '
	test_json r.json ".chains[0].api" cudaFree &&
	test_json r.json ".chains[0].severity" high &&
	test_json r.json ".chains[0].cause" preempted &&
	test_json r.json ".chains[0].culprits[0].comm" journald &&
	test_json r.json ".chains[0].culprits[0].pid" 612 &&
	test_json r.json ".chains[0].culprits[0].ns" 6000000 &&
	test_json r.json ".chains[0].slow_calls" 5
'

test_expect_success 'the sleeping sync is waiting for the GPU, woken by its thread, not interference' '
	test_json r.json ".chains[] | select(.api==\"cudaStreamSynchronize\") | .cause" gpu-wait &&
	test_json r.json ".chains[] | select(.api==\"cudaStreamSynchronize\") | .severity" info &&
	test_json r.json ".chains[] | select(.api==\"cudaStreamSynchronize\") | .waker.tid" 1002 &&
	test_json r.json "[.interference[].comm] | join(\",\")" journald
'

test_expect_success 'interference, threads, memory, losses, open calls, errors' '
	test_json r.json ".interference[0].preemptions" 5 &&
	test_json r.json ".interference[0].longest_ns" 1200000 &&
	test_json r.json ".threads[0].tid" 1001 &&
	test_json r.json ".threads[0].involuntary" 5 &&
	test_json r.json ".threads[0].voluntary" 10 &&
	test_json r.json ".memory.alloc_calls" 5 &&
	test_json r.json ".memory.peak_bytes" 15728640 &&
	test_json r.json ".memory.live_bytes_end" 10485760 &&
	test_json r.json "[.memory.unfreed[] | \"\(.ptr):\(.size):\(.api)\"] | join(\",\")" \
		0x7f0001000000:2097152:cudaMalloc,0x7f0003000000:8388608:cudaMalloc &&
	test_json r.json ".lost_events.total" 3 &&
	test_json r.json ".lost_events.per_cpu[0].cpu" 1 &&
	test_json r.json ".open_calls[0].api" cudaStreamSynchronize &&
	test_json r.json "[.errors[] | \"\(.api):\(.code):\(.count)\"] | join(\",\")" cudaMalloc:2:1
'

test_expect_success '--api, --tid, --from/--to and --top narrow the report' '
	ingero analyze --json --api cudaFree known.ing.zst >api.json &&
	test_json api.json "[.apis[].name] | join(\",\")" cudaFree &&
	ingero analyze --json --tid 1002 known.ing.zst >tid.json &&
	test_json tid.json ".apis | length" 0 &&
	test_json tid.json "[.threads[].tid] | join(\",\")" 1002 &&
	ingero analyze --json --to 10ms known.ing.zst >win.json &&
	test_json win.json ".apis[] | select(.name==\"cudaFree\") | .calls" 18 &&
	ingero analyze --json --from 20ms --to 30ms known.ing.zst >win2.json &&
	test_json win2.json ".apis[] | select(.name==\"cudaFree\") | .calls" 17 &&
	ingero analyze --json --top 1 known.ing.zst >top.json &&
	test_json top.json ".chains | length" 1
'

test_expect_success 'numbers are decimal: --tid 01002 is thread 1002, --top 08 eight, hex a usage error' '
	ingero analyze --json --tid 01002 known.ing.zst >tid0.json &&
	test_cmp tid.json tid0.json &&
	ingero analyze --json --top 08 known.ing.zst >top8.json &&
	test_json top8.json ".chains | length" 2 &&
	test_expect_code 129 ingero analyze --tid 0x3ea known.ing.zst 2>err &&
	grep "^ingero: option .--tid. wants a decimal number, not .0x3ea.$" err &&
	test_expect_code 129 ingero analyze --top 0x10 known.ing.zst
'

test_expect_success '--tid 0, the idle task, is refused as dump refuses it' '
	test_expect_code 129 ingero analyze --tid 0 known.ing.zst 2>err &&
	grep "^ingero: option .--tid.: 0 is the idle task, not a thread$" err
'

test_expect_success 'a time past the end: --from keeps no call, --to every one' '
	for t in 1e30 18446744073 99999999999999999999ns; do
		ingero analyze --json --from $t known.ing.zst >far.json &&
		test_json far.json ".apis | length" 0 || return 1
	done &&
	ingero analyze --json --to 1e30 known.ing.zst >all.json &&
	test_json all.json ".apis[] | select(.name==\"cudaFree\") | .calls" 102 &&
	ingero analyze --json --from 1e30 --to 1e31 known.ing.zst >far.json &&
	test_json far.json ".apis | length" 0
'

test_expect_success 'inf, nan, negative and hex times are usage errors' '
	test_times_refused analyze known.ing.zst
'

test_expect_success '--top cuts every list in the JSON, whose totals stay' '
	ingero analyze --json --top 0 known.ing.zst >top0.json &&
	test_json top0.json "[.chains, .interference, .open_calls, .memory.unfreed] | map(length) | join(\",\")" 0,0,0,0 &&
	test_json top0.json "[.chains_total, .interference_total, .open_calls_total, .memory.unfreed_total] | join(\",\")" 2,1,1,2 &&
	ingero analyze --json --top 1 known.ing.zst >top1.json &&
	test_json top1.json "[.memory.unfreed[].ptr] | join(\",\")" 0x7f0001000000 &&
	test_json top1.json ".memory.unfreed_total" 2 &&
	test_json r.json "[.chains, .interference, .open_calls, .memory.unfreed] | map(length) | join(\",\")" 2,1,1,2
'

test_expect_success 'the times count from the start of recording, whatever the options, as dump'"'"'s do' '
	ingero info --json odd.ing.zst >info.json &&
	test_json info.json .first_ns 999999500 &&
	test_json info.json .header.start_ns 1000000000 &&
	ingero analyze --json odd.ing.zst >odd.json &&
	ingero analyze --json --from 0 odd.ing.zst >from0.json &&
	for f in odd.json from0.json; do
		test_json $f ".session.start_ns" 1000000000 &&
		test_json $f ".session.duration_ns" 58391000 || exit 1
	done &&
	ingero dump --json odd.ing.zst | head -n 1 >first.json &&
	test_json first.json .time -0.000000500 &&
	ingero analyze odd.ing.zst | grep "^lost " >lost.txt &&
	ingero analyze --from 0 odd.ing.zst | grep "^lost " >lost0.txt &&
	test_cmp lost.txt lost0.txt
'

test_expect_success 'a thread'"'"'s calls count those probed at their entry alone, of no time' '
	test_json odd.json ".apis[] | select(.name==\"cudaLaunchKernel\") | \"\(.entry_only) \(.calls)\"" "true 20" &&
	test_json r.json ".threads[0] | \"\(.tid) \(.calls) \(.call_ns)\"" "1001 137 47155600" &&
	test_json odd.json ".threads[0] | \"\(.tid) \(.calls) \(.call_ns)\"" "1001 137 47055600"
'

test_expect_success '--api and --tid leave the memory view whole: frees still match their allocations' '
	jq -c .memory r.json >mem.json &&
	test_json mem.json .untracked_frees 100 &&
	for o in "--api cudaFree" "--api cudaMalloc" "--tid 1002"; do
		ingero analyze --json $o known.ing.zst | jq -c .memory >mem-o.json &&
		test_cmp mem.json mem-o.json || exit 1
	done
'

test_expect_success 'an error code reads as dump prints the return, 32 or 64 bits of ones' '
	test_json odd.json "[.errors[] | \"\(.api):\(.code):\(.count)\"] | join(\",\")" \
		cudaMalloc:-1:1,cudaFree:4294967295:1 &&
	ingero dump --stream call odd.ing.zst >calls.txt &&
	grep -q "api=cudaMalloc .* ret=-1 " calls.txt &&
	grep -q "api=cudaFree .* ret=4294967295 " calls.txt &&
	ingero analyze odd.ing.zst | sed -n "/^== Errors/,\$ p" >errors.txt &&
	grep -q "^cudaMalloc  *-1  *1$" errors.txt &&
	grep -q "^cudaFree  *4294967295  *1$" errors.txt
'

test_expect_success 'a call of an API beyond the table is counted, as info counts it' '
	ingero info --json odd.ing.zst >info.json &&
	test_json info.json ".apis[] | select(.name==\"unknown\") | .calls" 1 &&
	test_json odd.json .session.unknown_api_calls 1 &&
	test_json odd.json "([.apis[].calls] | add) + .session.unknown_api_calls == .session.events_by_stream.call" true &&
	test_json r.json .session.unknown_api_calls 0 &&
	ingero analyze odd.ing.zst >odd.txt &&
	grep -q "^unknown    1 call of an API beyond the trace.s table, left out of the report$" odd.txt
'

test_expect_success 'the JSON is valid UTF-8: control bytes and DEL escaped, a byte of no character U+FFFD' '
	"$MKTRACE" --odd oddstr.ing.zst &&
	ingero analyze --json oddstr.ing.zst >oddstr.json &&
	python3 -c "import json, sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))" oddstr.json &&
	grep -F "\"command\":\"python3 a\\\"b\\\\c d\u000a\u0009e\u0001\u007f\ufffd=café\"" oddstr.json &&
	grep -F "\"path\":\"/opt/a\\\"b\\\\c d\u000a\u0009e\u0001\u007f\ufffd=café/libcudart.so\"" oddstr.json
'

test_expect_success 'the text report escapes the strings of the trace as dump does: one line each, no ESC' '
	"$GEN" --hostile hostile.ing.zst &&
	ingero analyze hostile.ing.zst >hostile.txt &&
	test_printable hostile.txt &&
	test_line_count = $(wc -l <out.txt) hostile.txt &&
	cat >expect <<-\EOF &&
	command    python3 train.py --name \x1b[2J\x0afake line
	host       gpu\x1b]0;pwned\x07box, kernel 6.18.0-test\x0dpwned, clock mono, 2 CPUs
	library    /opt/\x1b[31mcuda\x0a/libcudart.so.13 (build-id 0123\x1b[8m4567) 5 probes
	           cudaSync\x1b[5m\xff tid 1001 since +0.058351 s, 40.0 us so far
	cudaSync\x1b[5m\xff slept 86% of its time, woken mostly by ünïcode (pid 1000, tid 1002, traced): 900 us of it
	1. [high] cudaFree p99 = 1.60 ms (4.0x p50 400 us): 5 of the 5 calls >= 426 us were preempted on CPU 0 by evil\x1b[2J (pid 612), 1.20 ms each
	   culprit evil\x1b[2J (pid 612, tid 612): took 6.00 ms from these calls, 6.00 ms in 5 slow ones, CPUs 0
	2. [info] cudaSync\x1b[5m\xff p99 = 150 us (1.5x p50 100 us): the 1 call >= 106 us waited for the GPU, blocked 90% and on the CPU 8% of its time, woken by ünïcode (pid 1000); waiting, not interference
	cudaSync\x1b[5m\xff
	EOF
	grep -Fx -f expect hostile.txt >actual &&
	test_cmp expect actual
'

test_expect_success 'the columns of the tables count the characters printed, not the bytes' '
	cat >expect <<-\EOF &&
	API                             calls   err     total  share       avg       p50       p90       p99       max p99/p50  oncpu preemp  block   wait
	cudaSync\x1b[5m\xff                10     0   1.05 ms   2.2%    105 us    100 us    100 us    150 us    150 us    1.5x  11.4%   0.0%  85.7%   2.9%
	comm                  pid      tid CPUs           taken  in calls preempt delays   longest  APIs hit
	evil\x1b[2J           612      612 0            6.00 ms   6.00 ms       5      0   1.20 ms  cudaFree 6.00 ms
	     tid comm                   run     vol   invol avg delay max delay at                 migr    calls  in calls
	    1001 tr\x0aainer        51.5 ms      10       5    402 us   1.20 ms +0.003601 s           0      137   47.2 ms
	    1002 ünïcode             110 us      11       0      0 ns      0 ns -                     0        0      0 ns
	EOF
	grep -Fx -f expect hostile.txt >actual &&
	test_cmp expect actual
'

test_expect_success 'a C1 control is escaped in the text report as dump escapes it, and quoted in the JSON' '
	ingero analyze oddstr.ing.zst >oddstr.txt &&
	test_printable oddstr.txt &&
	grep -F "(build-id 0badc0de\\x1b[8m\\xc2\\x9b2J) 2 probes" oddstr.txt &&
	grep -F "\"build_id\":\"0badc0de\\u001b[8m\\u009b2J\"" oddstr.json
'

test_expect_success 'usage errors exit 129, a missing or damaged file 1' '
	test_expect_code 129 ingero analyze &&
	test_expect_code 129 ingero analyze --bogus known.ing.zst &&
	test_expect_code 129 ingero analyze --api cudaNothing known.ing.zst &&
	test_expect_code 129 ingero analyze --from 2s --to 1s known.ing.zst &&
	test_expect_code 129 ingero analyze --from soon known.ing.zst &&
	test_expect_code 1 ingero analyze nothing-here.ing.zst 2>err &&
	grep -q "nothing-here.ing.zst" err &&
	head -c 100 known.ing.zst >short.ing.zst &&
	test_expect_code 1 ingero analyze short.ing.zst &&
	mkdir dir.ing.zst &&
	test_expect_code 1 ingero analyze dir.ing.zst 2>err &&
	test_line_count = 1 err &&
	grep -q "dir.ing.zst. is a directory" err
'

test_expect_success 'a footer cut short reads as no footer: the same report' '
	size=$(stat -c %s known.ing.zst) &&
	footer=$(od -An -tu8 -j $((size - 16)) -N 8 known.ing.zst) &&
	head -c $((size - footer + 1)) known.ing.zst >footer-cut.ing.zst &&
	ingero analyze --no-color footer-cut.ing.zst >footer-cut.txt &&
	test_cmp out.txt footer-cut.txt
'

test_expect_success 'a damaged trace: the hint names dump, which prints the events before the damage' '
	size=$(stat -c %s known.ing.zst) &&
	footer=$(od -An -tu8 -j $((size - 16)) -N 8 known.ing.zst) &&
	cut=$((size - footer - 1)) &&
	head -c $cut known.ing.zst >damaged.ing.zst &&
	test_expect_code 1 ingero analyze damaged.ing.zst 2>err &&
	grep -E "^ingero: .damaged.ing.zst. is damaged: block [0-9]+ at offset [0-9]+: truncated at offset $cut \(ingero dump prints the events before the damage\)$" err &&
	test_expect_code 1 ingero dump damaged.ing.zst >events 2>/dev/null &&
	test $(wc -l <events) -gt 100
'

test_expect_success 'a FIFO without a writer is refused at once, not waited on' '
	mkfifo fifo.ing.zst &&
	test_expect_code 1 timeout 10 ingero analyze fifo.ing.zst 2>err &&
	echo "ingero: '"'"'fifo.ing.zst'"'"' is not a file: a trace is read out of order; save it to a file, or pipe it in as -" >expect &&
	test_cmp expect err
'

test_expect_success '--help lists the options that the man page documents' '
	ingero analyze --help >help.txt &&
	sed "s/\\\\-/-/g" "$SRC_DIR/Documentation/ingero-analyze.1" >man.txt &&
	for o in $(grep -oE -- "--[a-z-]+" help.txt | sort -u); do
		grep -qF -- "$o" man.txt || { echo "$o is not in ingero-analyze.1"; exit 1; }
	done
'

test_done
