#!/usr/bin/env bash
test_description='a trace is plain zstd frames: zstd -d gives the sections, zstd -t checks it'
. ./test-lib.sh

MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace
[ -x "$MKTRACE" ] && command -v zstd >/dev/null && test_set_prereq MKTRACE

test_expect_success MKTRACE 'zstd -t accepts the trace' '
	"$MKTRACE" known.ing.zst &&
	zstd -q -t known.ing.zst
'

test_expect_success MKTRACE 'zstd -d gives the plain stream: the header section first, its magic' '
	zstd -q -d -c known.ing.zst >plain &&
	head -c 4 plain >tag && printf INGH >expect && test_cmp expect tag &&
	dd if=plain bs=1 skip=16 count=8 2>/dev/null | od -An -c | tr -s " " >magic &&
	echo " I N G E R O 032 \n" >expect && test_cmp expect magic
'

test_expect_success MKTRACE 'the footer is skipped by zstd and ends with the trailer magic' '
	tail -c 8 known.ing.zst >trailer && printf INGIDX01 >expect && test_cmp expect trailer &&
	! grep -q INGX plain
'

test_done
