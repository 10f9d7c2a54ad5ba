# The test library, in git's shape: sourced by every t/tNNNN-*.sh.
#
#   test_description='...'
#   . ./test-lib.sh
#   test_expect_success [PREREQ,...] 'what holds' 'commands'
#   test_done
#
# Options: -v (show the commands' output), -i (stop at the first failure),
# -x (trace the commands). Output is TAP.

TEST_DIRECTORY=$(cd "$(dirname "$0")" && pwd)
TEST_NAME=$(basename "$0" .sh)
SRC_DIR=$(cd "$TEST_DIRECTORY/.." && pwd)
BUILD_DIR=${INGERO_BUILD_DIR:-$SRC_DIR}
WORKLOADS=$BUILD_DIR/t/workloads/bin
PATH=$BUILD_DIR:$PATH
export PATH WORKLOADS SRC_DIR BUILD_DIR

verbose= immediate= trace=
for arg; do
	case "$arg" in
	-v|--verbose) verbose=t ;;
	-i|--immediate) immediate=t ;;
	-x) trace=t ;;
	esac
done

test_count=0 test_failures=0 test_skipped=0
TRASH_DIRECTORY="$TEST_DIRECTORY/trash directory.$TEST_NAME"
rm -rf "$TRASH_DIRECTORY"
mkdir -p "$TRASH_DIRECTORY" || exit 1
cd "$TRASH_DIRECTORY" || exit 1

exec 5>&1 6>&2
if [ -z "$verbose" ]; then
	exec 3>/dev/null 4>/dev/null
else
	exec 3>&1 4>&2
fi

say() { echo "$*" >&5; }

# Prerequisites: a test names those it needs; under CI=true a missing one
# that the machine is meant to have is a failure, not a skip.
TRACING_DIR=
find_tracing_dir() {
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -e "$d/uprobe_events" ] && { TRACING_DIR=$d; return 0; }
	done
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null &&
		[ -e /sys/kernel/tracing/uprobe_events ] && TRACING_DIR=/sys/kernel/tracing
}

test_have_prereq() {
	local p
	for p in $(echo "$1" | tr , ' '); do
		case "$p" in
		ROOT) [ "$(id -u)" = 0 ] || return 1 ;;
		TRACEFS) [ "$(id -u)" = 0 ] && { [ -n "$TRACING_DIR" ] || find_tracing_dir; } || return 1 ;;
		CUDA) python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || return 1 ;;
		*) eval "[ -n \"\$prereq_$p\" ]" || return 1 ;;
		esac
	done
}

# Prerequisites that CI's machine always has: missing there means broken.
CI_PREREQS="ROOT TRACEFS"

test_set_prereq() { eval "prereq_$1=t"; }

cleanup_cmds=
test_when_finished() { cleanup_cmds="$1 ; $cleanup_cmds"; }

run_body() {
	cleanup_cmds=
	if [ -n "$trace" ]; then
		(set -x; eval "$1") >&3 2>&4
	else
		(eval "$1") >&3 2>&4
	fi
}

test_ok() { test_count=$((test_count + 1)); say "ok $test_count - $1"; }
test_not_ok() {
	test_count=$((test_count + 1)); test_failures=$((test_failures + 1))
	say "not ok $test_count - $1"
	[ -n "$immediate" ] && { test_done; }
}

test_expect_success() {
	local prereq=
	[ $# = 3 ] && { prereq=$1; shift; }
	if [ -n "$prereq" ] && ! test_have_prereq "$prereq"; then
		local p needed=
		for p in $(echo "$prereq" | tr , ' '); do
			test_have_prereq "$p" && continue
			case " $CI_PREREQS " in *" $p "*) needed=t ;; esac
		done
		if [ "${CI:-}" = true ] && [ -n "$needed" ]; then
			test_not_ok "$1 (missing prerequisite $prereq under CI)"
		else
			test_count=$((test_count + 1)); test_skipped=$((test_skipped + 1))
			say "ok $test_count # skip $1 (missing $prereq)"
		fi
		return
	fi
	# Cleanups registered by the body run in this shell even if it fails.
	local body="$2"$'\n''__status=$? ; eval "$cleanup_cmds" ; exit $__status'
	if run_body "$body"; then
		test_ok "$1"
	else
		test_not_ok "$1"
		[ -z "$verbose" ] && printf '%s\n' "$2" | sed 's/^/#	/' >&5
	fi
}

test_done() {
	say "1..$test_count"
	say "# $TEST_NAME: $((test_count - test_failures - test_skipped)) passed, $test_failures failed, $test_skipped skipped"
	cd "$TEST_DIRECTORY" || exit 1
	[ $test_failures = 0 ] && [ -z "$verbose" ] && rm -rf "$TRASH_DIRECTORY"
	[ $test_failures = 0 ]
	exit $?
}

# Helpers, git's where git has them.
test_must_fail() {
	"$@"
	local s=$?
	if [ $s = 0 ]; then echo "test_must_fail: '$*' succeeded" >&2; return 1; fi
	if [ $s -gt 128 ] && [ $s -lt 160 ]; then echo "test_must_fail: '$*' died of signal $((s - 128))" >&2; return 1; fi
	return 0
}

test_expect_code() {
	local want=$1; shift
	"$@"
	local s=$?
	[ $s = "$want" ] || { echo "test_expect_code: '$*' exited $s, not $want" >&2; return 1; }
}

test_cmp() { diff -u "$1" "$2"; }

test_line_count() {
	local n
	n=$(wc -l <"$3")
	[ "$n" "$1" "$2" ] || { echo "test_line_count: $3 has $n lines, not $1 $2" >&2; return 1; }
}

# test_json FILE JQ-EXPRESSION EXPECTED: the expression's value, as jq -r prints it.
test_json() {
	local got
	got=$(jq -r "$2" "$1") || { echo "test_json: jq failed on $1" >&2; return 1; }
	[ "$got" = "$3" ] || { echo "test_json: $2 is '$got', not '$3'" >&2; return 1; }
}

# test_within A B PERCENT: A is within PERCENT% of B.
test_within() {
	awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != 0 && d * 100 <= p * b) }' ||
		{ echo "test_within: $1 is not within $3% of $2" >&2; return 1; }
}

# test_printable FILE: FILE is valid UTF-8 with no control character but the newline:
# no ESC, carriage return, tab, DEL or C1 control that a terminal would obey.
test_printable() {
	python3 -c '
import sys
try:
    text = open(sys.argv[1], "rb").read().decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("test_printable: %s is not UTF-8: %s" % (sys.argv[1], e))
for i, c in enumerate(text):
    if (c < " " and c != "\n") or "\x7f" <= c <= "\x9f":
        sys.exit("test_printable: %s holds %r at character %d" % (sys.argv[1], c, i))
' "$1"
}

# The keepers of SIGKILLed ingeros: each ingero-cleanup whose ingero is gone
# is still removing its session from the kernel (grace periods, tens of ms a
# uprobe event). Prints their parents' pids.
keepers_at_work() {
	ps -eo ppid=,stat=,comm= | awk '$3 == "ingero-cleanup" && $2 !~ /^Z/ { print $1 }' |
		while read -r ppid; do
			[ "$(cat /proc/$ppid/comm 2>/dev/null)" = ingero ] || echo "$ppid"
		done
}

# Waits until they are done, 30 s at most; 1 if some are not.
wait_keepers() {
	local i
	for ((i = 0; i < 3000; i++)); do
		[ -z "$(keepers_at_work)" ] && return 0
		sleep 0.01
	done
	return 1
}

# Whether pid is a process that has not ended (a zombie has).
process_running() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) && case "$state" in Z*) return 1 ;; esac
}

# Whether a process lives in the PID namespace of this inode.
pid_ns_alive() {
	ls -l /proc/[0-9]*/ns/pid 2>/dev/null | grep -q "pid:\[$1\]"
}

# What ingero left in the kernel, once the keepers of ended sessions are done:
# uprobe events and instances of ours whose keeper is gone (a live one
# belongs to a session still running). A container's session, named
# ingero-PID_NS, is left over once its namespace is gone; -a's second
# instance, ingero-PID.sched, is its session's.
ingero_kernel_leftovers() {
	[ -n "$TRACING_DIR" ] || find_tracing_dir || return 0
	wait_keepers
	{
		sed -n 's/^[pr][0-9]*:\(ingero[^/]*\)\/.*/\1/p' "$TRACING_DIR/uprobe_events" 2>/dev/null
		ls "$TRACING_DIR/instances" 2>/dev/null | grep '^ingero'
	} | while read -r name; do
		owner=${name#ingero[_-]}
		owner=${owner%.sched}
		case "$owner" in
		*[!0-9_]*|'') echo "$name" ;;
		*_*) pid_ns_alive "${owner#*_}" || echo "$name" ;;
		*) process_running "$owner" || echo "$name" ;;
		esac
	done
}

# test_times_refused COMMAND TRACE: inf, nan, negative and hex times are usage errors of --from and --to.
test_times_refused() {
	local t
	for t in inf nan -1 -inf 0x10 1e; do
		test_expect_code 129 ingero "$1" --from $t "$2" 2>err &&
		grep -q "^ingero: option .--from. wants a time: " err &&
		test_expect_code 129 ingero "$1" --to $t "$2" 2>err &&
		grep -q "^ingero: option .--to. wants a time" err || return 1
	done
}

# api_calls TRACE API: how many calls of API the trace holds, from the analyzer's JSON.
api_calls() {
	ingero analyze --json "$1" >"$1.json" &&
	jq -r --arg api "$2" '[.apis[] | select(.name == $api) | .calls] | add // 0' "$1.json"
}

# test_api_calls TRACE API N: the trace holds exactly N calls of API.
test_api_calls() {
	local got
	got=$(api_calls "$1" "$2") || return 1
	[ "$got" = "$3" ] || { echo "test_api_calls: $1 has $got calls of $2, not $3" >&2; return 1; }
}
