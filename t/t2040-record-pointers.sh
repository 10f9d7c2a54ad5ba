#!/usr/bin/env bash
test_description='record: the pointer an allocation hands out, wherever its out-pointer lives'
. ./test-lib.sh

test_expect_success TRACEFS 'out-pointers on the stack: read from the window at the return' '
	ingero record -q -o s.ing.zst -- "$WORKLOADS/alloc-free" -k 4 -p 20 >out &&
	grep "^alloc " out | tail -4 | awk "{ print \$2 }" | sort >want &&
	ingero analyze --json s.ing.zst >s.json &&
	jq -r ".memory.unfreed[].ptr" s.json | sort >got &&
	test_cmp want got
'

test_expect_success TRACEFS 'out-pointers in heap memory: read at the return through callee-saved registers' '
	ingero record -q -o h.ing.zst -- "$WORKLOADS/heap-outptr" 5 >out &&
	grep "^alloc " out | awk "{ print \$2 }" | sort >want &&
	ingero analyze --json h.ing.zst >h.json &&
	jq -r ".memory.unfreed[].ptr" h.json | sort >got &&
	test_cmp want got &&
	test_json h.json .memory.live_bytes_end 5242880
'

test_expect_success TRACEFS 'the same without array fetch arguments or grouped probes (the 4.x way)' '
	INGERO_NO_GROUPED_PROBES=1 ingero record -q -o g.ing.zst -- "$WORKLOADS/alloc-free" -k 2 -p 12 >out &&
	grep "^alloc " out | tail -2 | awk "{ print \$2 }" | sort >want &&
	ingero analyze --json g.ing.zst >g.json &&
	jq -r ".memory.unfreed[].ptr" g.json | sort >got &&
	test_cmp want got &&
	test_api_calls g.ing.zst cudaMalloc 12
'

test_done
