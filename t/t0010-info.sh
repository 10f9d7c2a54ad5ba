#!/usr/bin/env bash
test_description='ingero info: header, counts per stream and API, libraries, losses; damage exits 1 and says where'
. ./test-lib.sh

MKTRACE=$BUILD_DIR/build/t/fuzz/mktrace
[ -x "$MKTRACE" ] && test_set_prereq MKTRACE

test_expect_success MKTRACE 'a known trace is written' '
	"$MKTRACE" known.ing.zst &&
	"$MKTRACE" --no-footer crashed.ing.zst
'

test_expect_success MKTRACE 'info --json has the header and exact counts' '
	ingero info --json known.ing.zst >info.json &&
	test_json info.json .header.host testhost &&
	test_json info.json .header.command "python3 train.py --epochs 1" &&
	test_json info.json .header.ncpus 4 &&
	test_json info.json .events 1808 &&
	test_json info.json .streams.call 1000 &&
	test_json info.json .streams.switch 500 &&
	test_json info.json .streams.wakeup 300 &&
	test_json info.json .streams.open 1 &&
	test_json info.json .span_ns 2999999500 &&
	test_json info.json .index footer
'

test_expect_success MKTRACE 'info counts the calls per API, most first' '
	test_json info.json "[.apis[] | \"\(.name)=\(.calls)\"] | join(\" \")" \
		"cudaLaunchKernel=600 cudaMemcpy=200 cudaMalloc=100 cudaFree=100" &&
	test_json info.json ".apis[] | select(.name==\"cudaMemcpy\") | .open" 1
'

test_expect_success MKTRACE 'info lists the libraries and the losses per CPU' '
	test_json info.json "[.libraries[].path] | join(\" \")" \
		"/usr/lib/x86_64-linux-gnu/libcudart.so.13 /usr/lib/x86_64-linux-gnu/libcuda.so.1" &&
	test_json info.json ".libraries[1].missing" 2 &&
	test_json info.json "[.lost[] | \"\(.cpu):\(.count):\(.unknown):\(.span_ns)\"] | join(\" \")" \
		"1:17:0:4000 3:0:1:1000"
'

test_expect_success MKTRACE 'bytes per event is the size over the events' '
	size=$(stat -c %s known.ing.zst) &&
	test_json info.json .bytes "$size" &&
	test_within "$(jq .bytes_per_event info.json)" "$(echo "$size / 1808" | bc -l)" 1
'

test_expect_success MKTRACE 'the text form says the same' '
	ingero info known.ing.zst >info.txt &&
	grep -E "^  call +1000$" info.txt &&
	grep -E "^  cudaLaunchKernel +cudart +600$" info.txt &&
	grep -E "^  cpu 1 +17 events in 1 stretches" info.txt &&
	grep "^events:    1808 " info.txt
'

test_expect_success MKTRACE 'without its footer the index is rebuilt and the counts hold' '
	ingero info --json crashed.ing.zst >crashed.json &&
	test_json crashed.json .index rebuilt &&
	test_json crashed.json .events 1808
'

test_expect_success MKTRACE 'a footer cut short at any place reads as no footer: every event, exit 0' '
	data=$(stat -c %s crashed.ing.zst) &&
	size=$(stat -c %s known.ing.zst) &&
	test $data -lt $size &&
	# every byte of the frame header and the trailer, and every 11th of the entries between
	{ seq $((data + 1)) $((data + 24)); seq $((data + 25)) 11 $((size - 25)); seq $((size - 24)) $((size - 1)); } >at &&
	for cut in $(cat at)
	do
		head -c $cut known.ing.zst >footer-cut.ing.zst &&
		ingero info --json footer-cut.ing.zst >footer-cut.json &&
		echo "$cut $(jq -r "\"\(.index) \(.events)\"" footer-cut.json)" || echo "$cut failed"
	done >cuts &&
	sed "s/$/ rebuilt 1808/" at >expect &&
	test_cmp expect cuts &&
	ingero info footer-cut.ing.zst >out &&
	grep "index rebuilt by scanning: the footer is missing or damaged)$" out
'

test_expect_success MKTRACE 'info --json is valid UTF-8: control bytes escaped, a byte of no character U+FFFD' '
	"$MKTRACE" --odd odd.ing.zst &&
	ingero info --json odd.ing.zst >odd.json &&
	python3 -c "import json, sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))" odd.json &&
	grep -F "\"host\":\"höst a\\\"b\\\\c d\u000a\u0009e\u0001\u007f\ufffd=café\"" odd.json &&
	grep -F "\"api_table\":[\"cudaMalloc\",\"cudaa\\\"b\\\\c d\u000a\u0009e\u0001\u007f\ufffd=café\"]" odd.json
'

test_expect_success MKTRACE 'the text form escapes the strings of the trace as dump does: one line each, no ESC' '
	ingero info odd.ing.zst >odd.txt &&
	test_printable odd.txt &&
	cat >expect <<-\EOF &&
	host:      höst a"b\\c d\x0a\x09e\x01\x7f\xff=café
	kernel:    6.1.0-test\x1b[2J
	clock:     mono\x1b]0;pwned\x07
	boot id:   \x0d8c6a1d5e-0b7f-4c2e-9a51-3f0d2b7e6c14
	command:   python3 a"b\\c d\x0a\x09e\x01\x7f\xff=café
	  cudaMalloc                       cudart             1
	  cudaa"b\\c d\x0a\x09e\x01\x7f\xff=café cudart\x1b[8m            1
	  1 /opt/a"b\\c d\x0a\x09e\x01\x7f\xff=café/libcudart.so pid 100, 2 probes, 0 missing, build-id 0badc0de\x1b[8m\xc2\x9b2J
	EOF
	grep -Fx -f expect odd.txt >actual &&
	test_cmp expect actual
'

test_expect_success MKTRACE 'the name of the file is escaped too' '
	cp odd.ing.zst "$(printf "odd\033[2J\nx.ing.zst")" &&
	ingero info "$(printf "odd\033[2J\nx.ing.zst")" >name.txt &&
	test_printable name.txt &&
	sed -n "1s/ (.*//p" name.txt >actual &&
	printf "%s\n" "file:      odd\\x1b[2J\\x0ax.ing.zst" >expect &&
	test_cmp expect actual
'

test_expect_success MKTRACE 'a cut trace exits 1 and names the block and offset' '
	size=$(stat -c %s known.ing.zst) &&
	head -c $((size / 2)) known.ing.zst >cut.ing.zst &&
	test_expect_code 1 ingero info cut.ing.zst 2>err &&
	grep -E "^ingero: .cut.ing.zst. is damaged: block [0-9]+ at offset [0-9]+: truncated at offset $((size / 2))$" err
'

test_expect_success MKTRACE 'a trace cut inside its header is damaged, not foreign' '
	head -c 20 known.ing.zst >cut-head.ing.zst &&
	test_expect_code 1 ingero info cut-head.ing.zst 2>err &&
	echo "ingero: '"'"'cut-head.ing.zst'"'"' is damaged: block 0 at offset 0: truncated at offset 20" >expect &&
	test_cmp expect err
'

test_expect_success 'a file that is not a trace exits 1' '
	echo hello >not.ing.zst &&
	test_expect_code 1 ingero info not.ing.zst 2>err &&
	grep "not an ingero trace" err &&
	test_expect_code 1 ingero info missing.ing.zst 2>err &&
	grep "cannot open .missing.ing.zst." err
'

test_expect_success 'a FIFO without a writer is refused at once, not waited on' '
	mkfifo fifo.ing.zst &&
	test_expect_code 1 timeout 10 ingero info fifo.ing.zst 2>err &&
	echo "ingero: '"'"'fifo.ing.zst'"'"' is not a file: a trace is read out of order; save it to a file, or pipe it in as -" >expect &&
	test_cmp expect err
'

test_expect_success MKTRACE 'a trace piped in or redirected to - reads as the file does' '
	ingero info --json known.ing.zst | jq -S "del(.file)" >expect &&
	cat known.ing.zst | ingero info --json - | jq -S "del(.file)" >piped &&
	ingero info --json - <known.ing.zst | jq -S "del(.file)" >redirected &&
	test_json piped .events 1808 &&
	test_cmp expect piped &&
	test_cmp expect redirected
'

test_expect_success MKTRACE 'a cut trace piped in exits 1 and names - and the cut' '
	size=$(stat -c %s known.ing.zst) &&
	head -c $((size / 2)) known.ing.zst | test_expect_code 1 ingero info - 2>err &&
	grep -E "^ingero: .-. is damaged: block [0-9]+ at offset [0-9]+: truncated at offset $((size / 2))$" err
'

test_expect_success MKTRACE 'standard input on a terminal, or no folder for its copy: one line, exit 1' '
	script -qec "ingero info -; echo status=\$?" /dev/null >tty &&
	grep -q "^ingero: standard input is a terminal: name a trace file, or pipe one in" tty &&
	grep -q "^status=1" tty &&
	cat known.ing.zst | TMPDIR=$PWD/missing test_expect_code 1 ingero info - 2>err &&
	echo "ingero: cannot keep standard input in a temporary file: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'info --help prints the usage and exits 0; no file is a usage error' '
	ingero info --help >out &&
	grep "^usage: ingero info \[--json\] <file>" out &&
	test_expect_code 129 ingero info 2>/dev/null
'

test_done
