#!/usr/bin/env bash
test_description='every CUDA entry point of the stand-ins starts as NVIDIA'"'"'s do: push %rbp; mov %rsp,%rbp

The kernel emulates that first instruction under a uprobe; any other is
single-stepped out of line, which costs about ten times as much per hit and
would make the stand-ins a false model of the real libraries.'
. ./test-lib.sh

if [ "$(uname -m)" = x86_64 ] && command -v objdump >/dev/null; then
	test_set_prereq X86_OBJDUMP
fi

# NAME FIRST-INSN | SECOND-INSN, one line per cu*/cuda* function of the file.
prologues() {
	objdump -d --no-show-raw-insn "$1" |
	awk '/^[0-9a-f]+ <cu[A-Za-z0-9_]*>:$/ { name = $2; getline a; getline b; sub(/^[^\t]*\t/, "", a); sub(/^[^\t]*\t/, "", b); print name, a, "|", b }'
}

for lib in libcudart.so.13 libcuda.so.1; do
	test_expect_success X86_OBJDUMP "every exported cu*/cuda* symbol of $lib is a function with a frame prologue" '
		nm -D --defined-only "$WORKLOADS/'$lib'" | awk "\$3 ~ /^cu/ { print \$3 }" | sort >exported &&
		test_line_count -gt 20 exported &&
		prologues "$WORKLOADS/'$lib'" >prologues &&
		sed "s/^<\([^>]*\)>:.*/\1/" prologues | sort >disassembled &&
		test_cmp exported disassembled &&
		! grep -v "^<[^>]*>: push   %rbp | mov    %rsp,%rbp\$" prologues
	'
done

test_expect_success X86_OBJDUMP 'the runtime linked into static-rt keeps the prologue too' '
	prologues "$WORKLOADS/static-rt" >prologues &&
	grep "^<cudaMalloc>:" prologues &&
	! grep -v "^<[^>]*>: push   %rbp | mov    %rsp,%rbp\$" prologues
'

test_done
