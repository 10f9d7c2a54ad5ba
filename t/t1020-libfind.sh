#!/usr/bin/env bash
test_description='symbols, file offsets and build-ids of the CUDA libraries, and where they are found

The offsets are what uprobe_events wants after PATH:, computed here
independently from nm (the symbol value) and readelf (the PT_LOAD that holds it).'
. ./test-lib.sh

# API OFFSET for every cu*/cuda* function of FILE's TABLE (-D: .dynsym, else .symtab), from nm and readelf.
expected_offsets() {
	readelf -lW "$1" | awk '$1 == "LOAD" { print $2, $3, $5 }' >loads &&
	nm $2 --defined-only "$1" | awk '$2 ~ /^[TtiW]$/ && $3 ~ /^cu/ { print $3, $1 }' |
	while read -r name value; do
		while read -r off vaddr filesz; do
			if [ $((0x$value)) -ge $((vaddr)) ] && [ $((0x$value - vaddr)) -lt $((filesz)) ]; then
				printf "%s 0x%x\n" "$name" $((0x$value - vaddr + off))
			fi
		done <loads
	done | sort
}

have_offsets() {
	ingero probes --lib "$1" | awk '$1 == "have" { print $3, $4 }' | sort
}

test_expect_success 'every API found in the runtime stand-in at the offset nm and readelf give' '
	expected_offsets "$WORKLOADS/libcudart.so.13" -D >all &&
	have_offsets "$WORKLOADS/libcudart.so.13" >got &&
	test_line_count = 29 got &&
	comm -23 got all >wrong &&
	test_line_count = 0 wrong
'

test_expect_success 'the same for the driver stand-in' '
	expected_offsets "$WORKLOADS/libcuda.so.1" -D >all &&
	have_offsets "$WORKLOADS/libcuda.so.1" >got &&
	test_line_count = 56 got &&
	comm -23 got all >wrong &&
	test_line_count = 0 wrong
'

test_expect_success 'the stand-ins define every API of every set' '
	ingero probes --lib "$WORKLOADS/libcudart.so.13" --lib "$WORKLOADS/libcuda.so.1" >out &&
	! grep "^  lacks" out &&
	ingero probes | grep -c "^    cud" >sets &&
	echo 15 >expect &&
	test_cmp expect sets
'

test_expect_success 'a runtime linked in statically is found in .symtab alone' '
	! nm -D "$WORKLOADS/static-rt" | grep -q " cudaMalloc\$" &&
	expected_offsets "$WORKLOADS/static-rt" "" >all &&
	have_offsets "$WORKLOADS/static-rt" >got &&
	grep "^cudaMalloc 0x" got &&
	comm -23 got all >wrong &&
	test_line_count = 0 wrong &&
	test_line_count = 29 got
'

test_expect_success 'the build-id is the one readelf -n shows' '
	for f in libcudart.so.13 libcuda.so.1 static-rt; do
		readelf -n "$WORKLOADS/$f" | awk "/Build ID:/ { print \$3 }" >expect &&
		ingero probes --lib "$WORKLOADS/$f" | sed -n "1s/.* build-id //p" >got &&
		test_cmp expect got || return 1
	done
'

test_expect_success 'a file with no CUDA API and one that is not ELF' '
	ingero probes --lib "$WORKLOADS/nocuda" >out &&
	grep "0 symbols of the sets found, 0 lacking (no CUDA API at all)" out &&
	echo "not elf" >text &&
	test_expect_code 1 ingero probes --lib text 2>err &&
	grep "not an ELF file" err
'

test_expect_success 'candidates: LD_LIBRARY_PATH folders are searched, each file once, by its real path' '
	mkdir -p d1 d2 &&
	cp "$WORKLOADS/libcudart.so.13" "$WORKLOADS/libcuda.so.1" d1/ &&
	ln -s libcudart.so.13 d1/libcudart.so &&
	ln -s ../d1/libcuda.so.1 d2/libcuda.so &&
	cp "$WORKLOADS/nocuda" d2/libcudart.so.99 &&
	LD_LIBRARY_PATH="$PWD/d1:$PWD/d2:$PWD/d1" "$BUILD_DIR/t/unit/probes-libfind" candidates >got &&
	grep "^$PWD/" got | sort >mine &&
	printf "%s\n" "$PWD/d1/libcuda.so.1" "$PWD/d1/libcudart.so.13" >expect &&
	test_cmp expect mine
'

test_expect_success 'candidates: Python wheels under $VIRTUAL_ENV' '
	mkdir -p venv/lib/python3.12/site-packages/nvidia/cu13/lib &&
	cp "$WORKLOADS/libcudart.so.13" venv/lib/python3.12/site-packages/nvidia/cu13/lib/ &&
	VIRTUAL_ENV="$PWD/venv" "$BUILD_DIR/t/unit/probes-libfind" candidates >got &&
	grep -x "$PWD/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13" got
'

test_expect_success 'mapped: a running workload'"'"'s stand-ins, and nothing of a program without CUDA' '
	"$WORKLOADS/launch" -u 1000000 -S 1 >/dev/null &
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null; wait $pid" &&
	sleep 0.3 &&
	"$BUILD_DIR/t/unit/probes-libfind" mapped $pid | sort >got &&
	printf "%s\n" "$(cd "$WORKLOADS" && pwd -P)/libcuda.so.1" "$(cd "$WORKLOADS" && pwd -P)/libcudart.so.13" >expect &&
	test_cmp expect got &&
	ingero probes -p $pid -e launch >out &&
	grep -c "^  have  launch" out >n &&
	echo 4 >expect &&
	test_cmp expect n &&
	"$WORKLOADS/nocuda" 1000 >/dev/null &
	pid2=$! &&
	test_when_finished "kill $pid2 2>/dev/null; wait $pid2" &&
	sleep 0.1 &&
	ingero probes -p $pid2 >out &&
	grep "process $pid2 has no CUDA library mapped" out
'

test_done
