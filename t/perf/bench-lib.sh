# The helpers the benchmark scripts share; they set $table and $json first.
say() { printf '%s\n' "$*" | tee -a "$table"; }
emit() { printf '%s\n' "$1" >>"$json"; }
# The values of KEY=VALUE in FILE, one a line; field: the last alone.
fields() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$2"; }
field() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) v = substr($i, length(k) + 2) } END { print v }' "$2"; }
# Removes the uprobe events of group $1 from the tracefs at $T.
remove_uprobes() {
	grep -o "^[pr]:$1/[^ ]*" $T/uprobe_events 2>/dev/null | sed 's/^[pr]:/-:/' | sort -u |
		while read -r ev; do echo "$ev" >>$T/uprobe_events; done
}
# median, min and max of the numbers on stdin, one per line
stats() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit 1; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'; }
