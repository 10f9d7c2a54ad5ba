#!/usr/bin/env bash
test_description='the trace reader survives 15 s of libFuzzer, from seeds that are real traces'
. ./test-lib.sh

FUZZER=$BUILD_DIR/build/t/fuzz/reader-fuzz
MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace
[ -x "$FUZZER" ] && [ -x "$MKTRACE" ] && test_set_prereq FUZZER

test_expect_success FUZZER 'the seeds open' '
	mkdir corpus &&
	"$MKTRACE" corpus/small.ing.zst &&
	"$MKTRACE" --no-footer corpus/nofooter.ing.zst &&
	"$MKTRACE" --scale 3 corpus/scale3.ing.zst &&
	ingero info corpus/nofooter.ing.zst >/dev/null
'

test_expect_success FUZZER '15 seconds of fuzzing find no crash, leak, hang or runaway allocation' '
	"$FUZZER" -max_total_time=${FUZZ_TEST_SECONDS:-15} -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
		-print_final_stats=1 corpus >log 2>&1 &&
	grep "^stat::number_of_executed_units" log &&
	! ls crash-* leak-* timeout-* oom-* 2>/dev/null
'

test_done
