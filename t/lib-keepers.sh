# The keepers of ended ingero sessions: each ingero-cleanup whose ingero is
# gone is still removing its session from the kernel (grace periods, tens of
# ms per uprobe event). Sourced by the test library and the benchmark scripts.

# The parent pids of the keepers still at work.
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
