#!/usr/bin/env bash
test_description='the kernel accepts the entry and return event of every API of every set

The fetch arguments come from the prototypes and the ABI table; here each
event is written to uprobe_events on the stand-ins, in a group of this test
alone, with the stack and heap windows as arrays and without them.'
. ./test-lib.sh

group=ingero_t1030_$$

# Removes the events named in events, the file written: uprobe_events is read
# whole only when nothing else changes it, and other tests may be adding theirs.
remove_group() {
	local ev
	for ev in $(awk "{ print \$1 }" events); do
		echo "-:${ev#*:}" >>"$TRACING_DIR/uprobe_events"
	done 2>/dev/null
	! grep -q ":$group/" "$TRACING_DIR/uprobe_events"
}

# Writes every line of FILE to uprobe_events, one write each; prints the lines refused.
add_events() {
	while read -r line; do
		echo "$line" >>"$TRACING_DIR/uprobe_events" 2>/dev/null || echo "refused: $line"
	done <"$1"
}

for mode in arrays no-arrays; do
	test_expect_success TRACEFS "every event accepted ($mode)" '
		test_when_finished remove_group &&
		opt= &&
		if [ '$mode' = no-arrays ]; then opt=--no-arrays; fi &&
		ingero probes --lib "$WORKLOADS/libcudart.so.13" --lib "$WORKLOADS/libcuda.so.1" \
			--uprobe-events $group $opt >events &&
		test_line_count = $((2 * (29 + 56))) events &&
		add_events events >refused &&
		test_line_count = 0 refused &&
		for ev in $(awk "{ print \$1 }" events); do
			test -d "$TRACING_DIR/events/${ev#*:}" || echo "missing: $ev"
		done >missing &&
		test_line_count = 0 missing
	'
done

test_expect_success TRACEFS 'the return event of cudaMalloc has the return value, sp and the stack window' '
	test_when_finished remove_group &&
	ingero probes --lib "$WORKLOADS/libcudart.so.13" -e alloc --uprobe-events $group >events &&
	add_events events >refused &&
	test_line_count = 0 refused &&
	fmt="$TRACING_DIR/events/$group/cudaMalloc_ret/format" &&
	sed -n "s/^	field:\([^;]*\);	offset:[0-9]*;	size:\([0-9]*\);.*/\1 \2/p" "$fmt" |
	sed -n "/ ret /,\$p" >fields &&
	cat >expect <<-\EOT &&
	u32 ret 4
	u64 sp 8
	u64 w0[] 512
	u64 w1[] 512
	u64 w2[] 512
	u64 w3[] 512
	u64 c0 8
	u64 h0[] 64
	u64 c1 8
	u64 h1[] 64
	u64 c2 8
	u64 h2[] 64
	u64 c3 8
	u64 h3[] 64
	u64 c4 8
	u64 h4[] 64
	u64 c5 8
	u64 h5[] 64
	EOT
	test_cmp expect fields
'

test_done
