#!/usr/bin/env bash
test_description='a real PyTorch run on a GPU: counts against the kernel, memory against PyTorch (skipped without CUDA)'
. ./test-lib.sh

TORCH=$SRC_DIR/t/workloads/torch
T=/sys/kernel/tracing

if ! test_have_prereq CUDA; then
	say "# skipping the PyTorch tests: no python3 with a CUDA-capable torch on this machine"
fi

test_expect_success TRACEFS,CUDA 'every call the kernel counted, ingero recorded' '
	(cd "$TORCH" && ingero record -q -o "$TRASH_DIRECTORY/e.ing.zst" -- sh -c \
		"python3 empty_cache.py >\"\$0/out\" && pgrep -P \$PPID -x ingero-cleanup >\"\$0/pid\" &&
		 cat $T/uprobe_events >\"\$0/events\" && cat $T/uprobe_profile >\"\$0/profile\"" "$TRASH_DIRECTORY") &&
	ingero info --json e.ing.zst >info.json &&
	python3 "$TORCH/crosscheck.py" ingero_$(cat pid) events profile info.json >check &&
	grep -q "^cuLaunchKernel kernel=[1-9]" check
'

test_expect_success TRACEFS,CUDA 'live cudaMalloc bytes at the end are what PyTorch still reserves' '
	ingero analyze --json e.ing.zst >report.json &&
	reserved=$(sed -n "s/^memory model-gone .*reserved=\([0-9]*\).*/\1/p" out) &&
	jq "[.memory.apis[] | select(.name == \"cudaMalloc\") | .alloc_bytes] | add" report.json >alloc &&
	jq "[.memory.apis[] | select(.name == \"cudaFree\") | .free_bytes] | add" report.json >freed &&
	test $(( $(cat alloc) - $(cat freed) )) = "$reserved"
'

test_done
