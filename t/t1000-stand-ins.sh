#!/usr/bin/env bash
test_description='the stand-in CUDA libraries and the workloads do what they print

The workloads are the ground truth the recorder tests compare against: their
summary lines must be exact, the fake GPU must take the time asked of it and
the stand-ins must load from where the tests say.'
. ./test-lib.sh

test_expect_success 'alloc-free prints its calls, sizes and what it leaves allocated' '
	"$WORKLOADS/alloc-free" -k 3 10 >out &&
	echo "alloc-free cudaMalloc=10 cudaFree=7 bytes=52480 leaked=3 leaked_bytes=18432" >expect &&
	test_cmp expect out
'

test_expect_success 'device pointers are aligned, distinct while allocated, reused after a free' '
	"$WORKLOADS/alloc-free" -p -k 2 4 >out &&
	grep "^alloc " out >allocs &&
	test_line_count = 4 allocs &&
	awk "{ print \$2 }" allocs | sort -u >addrs &&
	test_line_count = 2 addrs &&
	cat >expect <<-\EOT &&
	alloc 0x700000000000 4096
	free 0x700000000000
	alloc 0x700000000000 4352
	free 0x700000000000
	alloc 0x700000000000 4608
	alloc 0x700000001200 4864
	EOT
	grep -v "^alloc-free" out >got &&
	test_cmp expect got
'

test_expect_success 'mix makes every kind of call and one that fails with 2' '
	"$WORKLOADS/mix" -u 0 >out &&
	grep "^mix cudaMalloc=3 cudaHostAlloc=1 cudaStreamCreate=1 cudaMemcpy=3 cudaMemcpyAsync=3 cudaMemcpyAsync_ptsz=1 cudaMemset=1 cudaMemsetAsync=1 cudaLaunchKernel=5 " out &&
	grep " cudaGraphLaunch=1 " out &&
	grep " cuMemAddressReserve=1 cuMemCreate=1 cuMemMap=1 cuMemSetAccess=1 cuMemUnmap=1 cuMemRelease=1 cuMemAddressFree=1 " out &&
	grep " cudaGetLastError=1 .* cudaFree=2 cudaFreeHost=1 kernel_us=0 failed=cudaMalloc:2\$" out
'

test_expect_success 'a synchronize waits for the kernels queued before it (gridDim.x microseconds each)' '
	start=$(date +%s%N) &&
	"$WORKLOADS/launch" -u 100000 -S 3 >out &&
	end=$(date +%s%N) &&
	echo "launch cudaLaunchKernel=3 cudaStreamSynchronize=3 kernel_us=100000" >expect &&
	test_cmp expect out &&
	test $(( (end - start) / 1000000 )) -ge 300
'

test_expect_success 'a waiting thread sleeps (state S) while the stub-gpu thread runs the kernel' '
	"$WORKLOADS/launch" -u 1500000 -S 1 >out &
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null; wait $pid" &&
	sleep 0.5 &&
	grep -l "^stub-gpu\$" /proc/$pid/task/*/comm >gpu &&
	test_line_count = 1 gpu &&
	awk "{ print \$3 }" /proc/$pid/stat >state &&
	echo S >expect &&
	test_cmp expect state
'

test_expect_success 'threads and fork count every thread and process' '
	"$WORKLOADS/threads" 3 50 >out &&
	echo "threads cudaMalloc=150 cudaLaunchKernel=150 cudaFree=150 cudaStreamSynchronize=3 threads=3" >expect &&
	test_cmp expect out &&
	"$WORKLOADS/fork" 4 >out &&
	sed "s/pid=[0-9]*/pid=X/" out >got &&
	cat >expect <<-\EOT &&
	fork role=child pid=X cudaMalloc=4 cudaLaunchKernel=4 cudaFree=4 cudaDeviceSynchronize=1
	fork role=parent pid=X cudaMalloc=4 cudaLaunchKernel=4 cudaFree=4 cudaDeviceSynchronize=1 child_status=0
	EOT
	test_cmp expect got
'

test_expect_success 'late-dlopen finds the runtime only through its library'"'"'s RUNPATH' '
	mkdir -p lay/late &&
	cp "$WORKLOADS/late-dlopen" "$WORKLOADS/liblate.so" lay/ &&
	cp "$WORKLOADS/libcudart.so.13" "$WORKLOADS/libcuda.so.1" lay/late/ &&
	! readelf -d lay/late-dlopen | grep -q "NEEDED.*libcud" &&
	lay/late-dlopen -d 0 5 >out &&
	echo "late-dlopen cudaMalloc=5 cudaFree=5 delay_ms=0 runtime=$PWD/lay/late/libcudart.so.13" >expect &&
	test_cmp expect out &&
	rm lay/late/libcudart.so.13 &&
	test_must_fail lay/late-dlopen -d 0 1
'

test_expect_success 'static-rt has the runtime in .symtab only and still calls the driver' '
	"$WORKLOADS/static-rt" 7 >out &&
	echo "static-rt cudaMalloc=7 cudaLaunchKernel=7 cudaFree=7 cudaDeviceSynchronize=1" >expect &&
	test_cmp expect out &&
	! nm -D "$WORKLOADS/static-rt" | grep -q " cudaMalloc\$" &&
	nm "$WORKLOADS/static-rt" | grep -q " T cudaMalloc\$" &&
	readelf -d "$WORKLOADS/static-rt" | grep -q "NEEDED.*\[libcuda.so.1\]"
'

test_expect_success 'exit-status exits with its code or dies of its signal; nocuda loads no CUDA' '
	test_expect_code 7 "$WORKLOADS/exit-status" 7 >out &&
	echo "exit-status cudaMalloc=1 cudaLaunchKernel=1 code=7" >expect &&
	test_cmp expect out &&
	test_expect_code 143 "$WORKLOADS/exit-status" -s 15 0 &&
	"$WORKLOADS/nocuda" 1 >out &&
	echo "nocuda slept_ms=1" >expect &&
	test_cmp expect out &&
	! readelf -d "$WORKLOADS/nocuda" | grep -q "NEEDED.*libcud"
'

test_done
