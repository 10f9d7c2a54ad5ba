#!/usr/bin/env bash
test_description='bench-quick: the benchmark harness runs, every contender records every call, nothing is left behind'
. ./test-lib.sh

# The harness's probes (group ingero_bench_<pid>) and its floor's instances
# (ingero_bench_bare_<pid>) whose process is gone: what a run left behind.
bench_leftovers() {
	{
		sed -n 's/^[pr][0-9]*:\(ingero_bench_[^/]*\)\/.*/\1/p' "$TRACING_DIR/uprobe_events" | sort -u
		ls "$TRACING_DIR/instances" | grep "^ingero_bench_"
	} | while read -r name; do
		kill -0 "${name##*_}" 2>/dev/null || echo "$name"
	done
}

remove_bench_leftovers() {
	bench_leftovers | while read -r name; do
		if [ -d "$TRACING_DIR/instances/$name" ]; then
			rmdir "$TRACING_DIR/instances/$name"
		else
			sed -n "s/^[pr][0-9]*:\($name\/[^ ]*\) .*/-:\1/p" "$TRACING_DIR/uprobe_events" |
				while read -r ev; do echo "$ev" >>"$TRACING_DIR/uprobe_events"; done
		fi
	done
	true
}

test_expect_success TRACEFS 'the harness builds' '
	make -s -C "$SRC_DIR" ${INGERO_BUILD_DIR:+O="$BUILD_DIR"} bench-tools >build.log 2>&1 ||
		{ cat build.log; false; }
'

test_expect_success TRACEFS 'bench.sh --quick passes its sanity checks' '
	test_when_finished remove_bench_leftovers &&
	"$SRC_DIR/t/perf/bench.sh" --quick --out out --bin "$BUILD_DIR/t/perf/bin" --ingero "$BUILD_DIR/ingero" >bench.log 2>&1 ||
		{ cat bench.log; false; }
'

test_expect_success TRACEFS 'the floor and ingero each recorded all 20000 launches' '
	test_json out/bench.json "select(.figure == \"cost\" and .contender == \"bare\") | \"\(.status) \(.calls)\"" "ok 20000" &&
	test_json out/bench.json "select(.figure == \"cost\" and .contender == \"ingero\") | \"\(.status) \(.calls)\"" "ok 20000" &&
	test_json out/bench.json "select(.figure == \"cost\" and .contender == \"none\") | .ratio_to_kernel" null
'

test_expect_success TRACEFS 'attached to a running loop, the floor and ingero recorded every call of their windows' '
	test_json out/bench.json "select(.figure == \"attached\" and .contender == \"bare\") | \"\(.status) \(.windows)\"" "ok 1" &&
	test_json out/bench.json "select(.figure == \"attached\" and .contender == \"ingero-ret\") | \"\(.status) \(.windows)\"" "ok 1"
'

test_expect_success TRACEFS 'ingero loses nothing back to back: 40000 launches, 80000 events' '
	test_json out/bench.json "select(.figure == \"rate\" and .contender == \"ingero-ret\") | \"\(.expected) \(.recorded)\"" "80000 80000"
'

test_expect_success TRACEFS 'each peer has a row: measured, skipped with its reason, or its miscount' '
	for peer in perf trace-cmd bpftrace-hist; do
		jq -r "select(.figure == \"cost\" and .contender == \"$peer\") | .status" out/bench.json >st &&
		case $(cat st) in ok|skipped|miscount:*) ;; *) cat st; false ;; esac || return 1
	done &&
	grep -q "^7\. real workload" out/bench.txt &&
	test_json out/bench.json "select(.figure == \"real-workload\") | .status" slot
'

test_expect_success TRACEFS 'the harness removed every probe and instance it made' '
	bench_leftovers >left &&
	test_line_count = 0 left
'

test_done
