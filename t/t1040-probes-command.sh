#!/usr/bin/env bash
test_description='ingero probes: the listing, its options, its man page'
. ./test-lib.sh

test_expect_success 'the listing has every set once, marked default or opt-in' '
	ingero probes | grep -v "^    " | sed "s/:.*//" >sets &&
	cat >expect <<-\EOT &&
	alloc (default)
	vmm (default)
	copy (default)
	memset (default)
	launch (default)
	rt-launch (opt-in)
	graph (default)
	sync (default)
	getters (opt-in)
	EOT
	test_cmp expect sets
'

test_expect_success '-e default: the launch set in the driver only, no getters' '
	ingero probes -e default >out &&
	grep -A2 "^launch (default)" out >launch &&
	grep "^    cuda:   cuLaunchKernel cuLaunchKernel_ptsz cuLaunchKernelEx cuLaunchKernelEx_ptsz\$" launch &&
	! grep -q "cudaLaunchKernel\|cudaGetDevice\|getters" out
'

test_expect_success '--prototypes shows the prototype with its library and role' '
	ingero probes -e alloc --prototypes >out &&
	grep -x "    cudart alloc  cudaError_t cudaMalloc(void \*\*devPtr, size_t size)" out &&
	grep -x "    cuda   free   CUresult cuMemFree_v2(CUdeviceptr dptr)" out
'

test_expect_success 'usage errors exit 129 with one line saying what is wrong' '
	test_expect_code 129 ingero probes -e nosuch 2>err &&
	grep -x "ingero: unknown probe set '"'"'nosuch'"'"' ('"'"'ingero probes'"'"' lists them)" err &&
	test_expect_code 129 ingero probes --uprobe-events g 2>err &&
	grep "need --lib or -p" err &&
	test_expect_code 129 ingero probes -p abc 2>err &&
	grep "process id" err &&
	test_expect_code 1 ingero probes --lib /nonexistent 2>err &&
	grep "cannot open '"'"'/nonexistent'"'"'" err
'

test_expect_success 'a group the kernel would refuse, and options that do not go together: 129' '
	lib="$WORKLOADS/libcuda.so.1" &&
	for group in "bad group!" "" 1st "$(printf "g%.0s" $(seq 64))"; do
		test_expect_code 129 ingero probes --lib "$lib" --uprobe-events "$group" >out 2>err &&
		test_line_count = 0 out &&
		grep -x "ingero: '"'"'$group'"'"' is not an event group the kernel takes (a letter or .*, 63 at most)" err ||
		return 1
	done &&
	ingero probes --lib "$lib" -e alloc --uprobe-events _g1 >out &&
	grep -q "^p:_g1/cuMemAlloc_v2 " out &&
	test_expect_code 129 ingero probes --lib "$lib" --no-arrays 2>err &&
	grep -x "ingero: --no-arrays goes with --uprobe-events" err &&
	test_expect_code 129 ingero probes --lib "$lib" --prototypes 2>err &&
	grep -x "ingero: --prototypes lists the sets'"'"' APIs: not with --lib or -p" err
'

test_expect_success 'a library given twice, by any name, is listed once' '
	lib="$WORKLOADS/libcuda.so.1" &&
	ln -s "$lib" again.so &&
	ingero probes -e alloc --lib "$lib" --lib "$lib" --lib again.so >out &&
	grep -c "build-id" out >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	ingero probes -e alloc --lib "$lib" --lib again.so --uprobe-events g >events &&
	ingero probes -e alloc --lib "$lib" --uprobe-events g >expect &&
	test_cmp expect events
'

test_expect_success 'a --lib that is not a regular file is refused unopened: one line, exit 1' '
	mkfifo fifo &&
	test_expect_code 1 timeout 10 ingero probes --lib fifo 2>err &&
	test_line_count = 1 err &&
	grep -x "ingero: '"'"'fifo'"'"' is not a regular file" err &&
	test_expect_code 1 ingero probes --lib . 2>err &&
	grep -x "ingero: '"'"'.'"'"' is not a regular file" err
'

test_expect_success '--help lists every option of the man page'"'"'s OPTIONS' '
	ingero probes --help >help &&
	sed -n "/^\.SH OPTIONS/,/^\.SH /p" "$SRC_DIR/Documentation/ingero-probes.1" |
	sed "s/\\\\-/-/g; s/\\\\f[BRI]//g" | awk "prev == \".TP\" { print } { prev = \$0 }" |
	grep -o -- "--[a-z-]*" | sort -u >man &&
	grep -o "\-\-[a-z-]*" help | sort -u >opts &&
	test_cmp man opts &&
	grep -q "^usage: ingero probes \[-e SET\[,SET...\]\] \[--prototypes\]" help
'

test_expect_success 'the man page examples run' '
	ingero probes -e default >out &&
	test_line_count = 19 out
'

test_expect_success 'the second example: a running program'"'"'s launch and sync symbols' '
	"$WORKLOADS/launch" -u 500000 -S 1 >/dev/null &
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null; wait $pid" &&
	sleep 0.2 &&
	ingero probes -e launch,sync -p $pid >out &&
	grep -c "^  have " out >n &&
	echo 13 >expect &&
	test_cmp expect n
'

test_done
