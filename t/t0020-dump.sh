#!/usr/bin/env bash
test_description='ingero dump: one line per event in time order, filters, JSON lines'
. ./test-lib.sh

MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace
[ -x "$MKTRACE" ] && test_set_prereq MKTRACE

test_expect_success MKTRACE 'a known trace is written' '
	"$MKTRACE" known.ing.zst
'

test_expect_success MKTRACE 'every event on one line, in time order' '
	ingero dump known.ing.zst >all.txt &&
	test_line_count = 1808 all.txt &&
	awk "{ print \$1 }" all.txt >times &&
	sort -n -s times | cmp - times
'

test_expect_success MKTRACE 'the lines have a stable form' '
	sed -n 8p all.txt >line &&
	echo "     0.000030000 [000]     100 call   api=cudaMalloc devPtr=0x7f0000000000 size=1048576 ret=0 out=0x7f0000000000 dur_ns=20000 id=1 parent=0 pid=100" >expect &&
	test_cmp expect line &&
	grep -c " switch prev_comm=" all.txt >n && echo 500 >expect && test_cmp expect n &&
	grep -F "     1.500000000 [001]       - lost   count=17 span_ns=4000" all.txt
'

test_expect_success MKTRACE '--stream keeps those streams' '
	ingero dump --stream lost,lib known.ing.zst >ll &&
	test_line_count = 4 ll &&
	ingero dump --stream wakeup known.ing.zst >wk &&
	test_line_count = 300 wk &&
	test_expect_code 129 ingero dump --stream nosuch known.ing.zst 2>err &&
	grep "not a stream" err
'

test_expect_success MKTRACE '--tid keeps one thread: its calls, and the switches and wakeups it is in' '
	ingero dump --stream call --tid 101 known.ing.zst >t101 &&
	test_line_count = 500 t101 &&
	ingero dump --stream switch --tid 100 known.ing.zst >s100 &&
	test_line_count = 250 s100
'

test_expect_success MKTRACE '--tid is decimal, as analyze takes it, and 0 (the idle task) is refused' '
	ingero dump --stream call --tid 0101 known.ing.zst >t0101 &&
	test_cmp t101 t0101 &&
	test_expect_code 129 ingero dump --tid 0x65 known.ing.zst 2>err &&
	grep "^ingero: option .--tid. wants a decimal number, not .0x65.$" err &&
	test_expect_code 129 ingero dump --tid 0 known.ing.zst 2>err &&
	grep "^ingero: option .--tid.: 0 is the idle task, not a thread$" err
'

test_expect_success MKTRACE '--from and --to take seconds or a unit, relative to the start' '
	ingero dump --stream call --from 1.5 --to 2 known.ing.zst >half &&
	test_line_count = 167 half &&
	ingero dump --stream call --from 1500ms --to 2000000000ns known.ing.zst >half2 &&
	test_cmp half half2 &&
	head -1 half | grep "^     1.500030000 " &&
	test_expect_code 129 ingero dump --from soon known.ing.zst 2>/dev/null
'

test_expect_success MKTRACE 'a time past the end: --from keeps no event, --to every one' '
	for t in 1e30 18446744073 99999999999999999999ns; do
		ingero dump --from $t known.ing.zst >far &&
		test_line_count = 0 far || return 1
	done &&
	ingero dump --to 1e30 known.ing.zst >every &&
	test_cmp all.txt every &&
	ingero dump --stream call --from 1e3ns --to 1500000000ns known.ing.zst >first &&
	test_line_count = 500 first
'

test_expect_success MKTRACE 'inf, nan, negative and hex times are usage errors' '
	test_times_refused dump known.ing.zst
'

test_expect_success MKTRACE '--stream of no name is a usage error' '
	for list in "" ,; do
		test_expect_code 129 ingero dump --stream "$list" known.ing.zst >out 2>err &&
		test_line_count = 0 out &&
		grep -q "^ingero: option .--stream. wants at least one stream" err || return 1
	done
'

test_expect_success MKTRACE 'a window that ends before it begins is a usage error, as in analyze' '
	test_expect_code 129 ingero dump --from 2 --to 1 known.ing.zst 2>err &&
	grep "^ingero: --to must come after --from" err &&
	test_expect_code 129 ingero dump --from 1s --to 1000ms known.ing.zst &&
	test_expect_code 129 ingero analyze --from 2 --to 1 known.ing.zst 2>err2 &&
	head -1 err >first && head -1 err2 >first2 &&
	test_cmp first first2
'

test_expect_success MKTRACE '--json writes one valid JSON object per line' '
	ingero dump --json known.ing.zst >all.json &&
	test_line_count = 1808 all.json &&
	jq -s length all.json >n && echo 1808 >expect && test_cmp expect n &&
	jq -r "select(.stream==\"call\" and .api==\"cudaMalloc\") | .args.size" all.json | sort -u >sizes &&
	echo 1048576 >expect && test_cmp expect sizes &&
	jq -r "select(.stream==\"lost\") | .count" all.json | paste -sd, >lost &&
	echo 17,0 >expect && test_cmp expect lost
'

test_expect_success MKTRACE 'odd bytes are escaped: one line per event, each field one key=value' '
	"$MKTRACE" --odd odd.ing.zst &&
	ingero dump odd.ing.zst >odd.txt &&
	cat >expect <<-\EOF &&
	    -0.000000500 [---]     100 task   kind=comm pid=100 comm=trainer-日本\xe8
	     0.000000600 [---]       - lib    id=1 path=/opt/a"b\\c\x20d\x0a\x09e\x01\x7f\xff\x3dcafé/libcudart.so build_id=0badc0de\x1b[8m\xc2\x9b2J pid=100 probes=2 missing=0
	     0.000012000 [001]     100 call   api=cudaa"b\\c\x20d\x0a\x09e\x01\x7f\xff\x3dcafé n\x20a"b\\c\x20d\x0a\x09e\x01\x7f\xff\x3dcafé=7 ret=0 dur_ns=2000 id=1 parent=0 pid=100
	     0.000019000 [001]     100 call   api=cudaMalloc devPtr=0x7000 size=4096 ret=0 dur_ns=-1000 id=2 parent=0 pid=100
	     0.000033000 [001]     100 call   api=api#9 arg0=0x7000 arg1=0x1000 arg2=0x0 arg3=0x0 arg4=0x0 arg5=0x0 ret=0 dur_ns=3000 id=3 parent=0 pid=100
	     0.000040000 [000]     100 switch prev_comm=trainer-日本\xe8 prev_tid=100 prev_prio=120 prev_state=S next_comm=a"b\\c\x20d\x0a\x09e\x01\x7f\xff\x3dcafé next_tid=0 next_prio=120
	     0.000050000 [000]       0 wakeup wakee_comm=trainer-日本\xe8 wakee_tid=100 wakee_prio=120 target_cpu=1
	     0.000060000 [001]       - lost   count=3 span_ns=1000
	EOF
	test_cmp expect odd.txt
'

test_expect_success MKTRACE 'an event before the start: the sign with the seconds, padded as one' '
	head -1 odd.txt | cut -c1-22 >first &&
	echo "    -0.000000500 [---]" >expect &&
	test_cmp expect first &&
	awk "{ print \$1 }" odd.txt >times &&
	sort -g -s times | cmp - times
'

test_expect_success MKTRACE 'a return before its entry: a negative duration, in both forms' '
	grep -c " api=cudaMalloc .* dur_ns=-1000 id=2 " odd.txt >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	ingero dump --json odd.ing.zst | jq -c "select(.id == 2) | [.ts_ns, .dur_ns]" >dur &&
	echo "[1000020000,-1000]" >expect &&
	test_cmp expect dur
'

test_expect_success MKTRACE '--json is valid UTF-8: control bytes escaped, a byte of no character U+FFFD' '
	"$MKTRACE" --odd odd.ing.zst &&
	ingero dump --json odd.ing.zst >odd.json &&
	python3 -c "import json, sys; [json.loads(l) for l in open(sys.argv[1], encoding=\"utf-8\")]" odd.json &&
	cat >expect <<-\EOF &&
	{"time":"-0.000000500","ts_ns":999999500,"stream":"task","cpu":null,"tid":100,"kind":"comm","pid":100,"comm":"trainer-日本\ufffd"}
	{"time":"0.000000600","ts_ns":1000000600,"stream":"lib","cpu":null,"tid":null,"id":1,"path":"/opt/a\"b\\c d\u000a\u0009e\u0001\u007f\ufffd=café/libcudart.so","build_id":"0badc0de\u001b[8m\u009b2J","pid":100,"probes":2,"missing":0}
	{"time":"0.000012000","ts_ns":1000010000,"stream":"call","cpu":1,"tid":100,"api":"cudaa\"b\\c d\u000a\u0009e\u0001\u007f\ufffd=café","args":{"n a\"b\\c d\u000a\u0009e\u0001\u007f\ufffd=café":7},"ret":0,"dur_ns":2000,"id":1,"parent":0,"pid":100}
	{"time":"0.000019000","ts_ns":1000020000,"stream":"call","cpu":1,"tid":100,"api":"cudaMalloc","args":{"devPtr":"0x7000","size":4096},"ret":0,"dur_ns":-1000,"id":2,"parent":0,"pid":100}
	{"time":"0.000033000","ts_ns":1000030000,"stream":"call","cpu":1,"tid":100,"api":"api#9","args":{"arg0":"0x7000","arg1":"0x1000","arg2":"0x0","arg3":"0x0","arg4":"0x0","arg5":"0x0"},"ret":0,"dur_ns":3000,"id":3,"parent":0,"pid":100}
	{"time":"0.000040000","ts_ns":1000040000,"stream":"switch","cpu":0,"tid":100,"prev_comm":"trainer-日本\ufffd","prev_tid":100,"prev_prio":120,"prev_state":"S","next_comm":"a\"b\\c d\u000a\u0009e\u0001\u007f\ufffd=café","next_tid":0,"next_prio":120}
	{"time":"0.000050000","ts_ns":1000050000,"stream":"wakeup","cpu":0,"tid":0,"wakee_comm":"trainer-日本\ufffd","wakee_tid":100,"wakee_prio":120,"target_cpu":1}
	{"time":"0.000060000","ts_ns":1000060000,"stream":"lost","cpu":1,"tid":null,"count":3,"span_ns":1000}
	EOF
	test_cmp expect odd.json
'

test_expect_success MKTRACE '--json: every object has time, ts_ns, stream, cpu and tid, null where the stream has none' '
	jq -r "select(has(\"time\") and has(\"ts_ns\") and has(\"stream\") and has(\"cpu\") and has(\"tid\")) | .stream" \
		all.json | sort | uniq -c | sed "s/^ *//" >keys &&
	printf "%s\n" "1000 call" "2 lib" "2 lost" "1 open" "500 switch" "3 task" "300 wakeup" >expect &&
	test_cmp expect keys &&
	jq -c "select(.cpu == null or .tid == null) | [.stream, .cpu, .tid]" all.json | sort -u >nulls &&
	printf "%s\n" "[\"lib\",null,null]" "[\"lost\",1,null]" "[\"lost\",3,null]" "[\"task\",null,100]" \
		"[\"task\",null,101]" >expect &&
	test_cmp expect nulls
'

test_expect_success MKTRACE '--json: the time of a call is its return, as on the line; ts_ns its entry' '
	jq -r "select(.stream == \"call\") | select(((.time | tonumber) * 1e9 | round) != .ts_ns + .dur_ns - 1000000000)" \
		all.json >wrong &&
	test ! -s wrong &&
	sed -n 8p all.json | jq -c "[.time, .ts_ns, .dur_ns]" >call &&
	echo "[\"0.000030000\",1000010000,20000]" >expect &&
	test_cmp expect call &&
	sed -n 8p all.txt | cut -c1-16 >line &&
	echo "     0.000030000" >expect &&
	test_cmp expect line
'

test_expect_success MKTRACE 'a damaged trace prints what it can, then exits 1 naming the block' '
	head -c 2000 known.ing.zst >cut.ing.zst &&
	test_expect_code 1 ingero dump cut.ing.zst >some 2>err &&
	grep -E "damaged: block [0-9]+ at offset [0-9]+: truncated at offset 2000" err &&
	test $(wc -l <some) -gt 100 &&
	test $(wc -l <some) -lt 1808
'

test_expect_success MKTRACE 'a footer cut short prints every event and exits 0' '
	size=$(stat -c %s known.ing.zst) &&
	footer=$(od -An -tu8 -j $((size - 16)) -N 8 known.ing.zst) &&
	for cut in $((size - footer + 1)) $((size - 1))
	do
		head -c $cut known.ing.zst >footer-cut.ing.zst &&
		ingero dump footer-cut.ing.zst >footer-cut.txt &&
		test_cmp all.txt footer-cut.txt || return 1
	done
'

test_expect_success MKTRACE 'a trace piped in to - prints what the file does' '
	cat known.ing.zst | ingero dump - >piped.txt &&
	test_cmp all.txt piped.txt
'

test_expect_success 'a FIFO without a writer is refused at once, not waited on' '
	mkfifo fifo.ing.zst &&
	test_expect_code 1 timeout 10 ingero dump fifo.ing.zst 2>err &&
	echo "ingero: '"'"'fifo.ing.zst'"'"' is not a file: a trace is read out of order; save it to a file, or pipe it in as -" >expect &&
	test_cmp expect err
'

test_expect_success 'dump --help prints the usage from the option table' '
	ingero dump --help >out &&
	grep "^usage: ingero dump" out &&
	grep -- "--stream <name\[,name\]>" out
'

test_done
