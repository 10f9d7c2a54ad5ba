#!/usr/bin/env bash
test_description='ingero built for aarch64, run under qemu-user: with no aarch64 kernel
there are no uprobes to place, so what is checked is the rest: the unit tests (the aarch64
argument table among them), the symbols found in aarch64 libraries, and traces read alike
on both architectures. Run by make check-aarch64, with AARCH64_DIR its build.'
. ./test-lib.sh

A=${AARCH64_DIR:?the aarch64 build directory}
MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace
export QEMU_LD_PREFIX=/
on_aarch64() { qemu-aarch64-static "$@"; }

test_expect_success 'the aarch64 ingero is a static aarch64 executable' '
	file "$A/ingero" >out &&
	grep -q "ARM aarch64.*statically linked" out
'

for u in "$A"/t/unit/*; do
	[ -f "$u" ] && [ -x "$u" ] || continue
	test_expect_success "unit test $(basename "$u"): every check passes on aarch64" "
		on_aarch64 '$u' >out 2>&1 &&
		grep -q '^1\.\.[1-9]' out &&
		! grep -q '^not ok' out
	"
done

# The names of the symbols 'ingero probes --lib' finds in a library.
found() { awk '$1 == "have" { print $3 }' | sort; }

test_expect_success 'the same symbols are found in the aarch64 stand-ins as in the x86-64 ones' '
	for lib in libcudart.so.13 libcuda.so.1 static-rt; do
		ingero probes --lib "$WORKLOADS/$lib" | found >x86 &&
		on_aarch64 "$A/ingero" probes --lib "$A/t/workloads/bin/$lib" | found >aarch64 &&
		test_line_count -gt 20 x86 &&
		test_cmp x86 aarch64 || return 1
	done
'

test_expect_success 'a trace written on x86-64 reads the same on aarch64, and one written there the same here' '
	"$MKTRACE" --scale 3 x86.ing.zst &&
	on_aarch64 "$A/build/t/fuzz/mktrace" --scale 3 aarch64.ing.zst &&
	cmp x86.ing.zst aarch64.ing.zst &&
	for how in info analyze "analyze --json" dump "dump --json"; do
		ingero $how x86.ing.zst >here &&
		on_aarch64 "$A/ingero" $how x86.ing.zst >there &&
		test -s here &&
		test_cmp here there || return 1
	done
'

test_done
