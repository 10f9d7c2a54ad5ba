#!/usr/bin/env bash
# Runs every test script and unit test, then prints "N passed, N failed".
cd "$(dirname "$0")" || exit 1
BUILD_DIR=${INGERO_BUILD_DIR:-$(cd .. && pwd)}
passed=0 failed=0 skipped=0
failed_scripts=

count() {
	local out=$1 name=$2
	local p f s
	p=$(grep -cE '^ok [0-9]+( -|$)' "$out" | head -1)
	s=$(grep -cE '^ok [0-9]+ # skip' "$out")
	f=$(grep -cE '^not ok' "$out")
	passed=$((passed + p)) skipped=$((skipped + s)) failed=$((failed + f))
	[ "$f" -gt 0 ] && failed_scripts="$failed_scripts $name"
}

run() {
	local name=$1; shift
	local out
	out=$(mktemp)
	"$@" >"$out" 2>&1
	local status=$?
	cat "$out"
	count "$out" "$name"
	# A script that died without a plan, or exited non-zero with no failure counted.
	if [ $status != 0 ] && ! grep -q '^not ok' "$out"; then
		echo "not ok - $name exited $status"
		failed=$((failed + 1)) failed_scripts="$failed_scripts $name"
	fi
	rm -f "$out"
}

for u in "$BUILD_DIR"/t/unit/*; do
	[ -x "$u" ] && [ -f "$u" ] && run "unit/$(basename "$u")" "$u"
done
for t in t[0-9][0-9][0-9][0-9]-*.sh; do
	run "$t" bash "$t"
done

[ -n "$failed_scripts" ] && echo "# failed:$failed_scripts"
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" = 0 ]
