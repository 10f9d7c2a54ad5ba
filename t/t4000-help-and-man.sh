#!/usr/bin/env bash
test_description='every option of every command is in its --help and in its man page'
. ./test-lib.sh

# Every long option a command's --help lists is in its man page (roff escapes the dashes).
options_in_man() {
	local opt
	ingero "$1" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u >options
	[ -s options ] || { echo "no options in 'ingero $1 --help'" >&2; return 1; }
	tr -d '\\' <"$SRC_DIR/Documentation/ingero-$1.1" >man.txt
	while read -r opt; do
		grep -qF -- "$opt" man.txt || { echo "$opt is not in ingero-$1.1" >&2; return 1; }
	done <options
}

for cmd in record analyze info dump probes; do
	test_expect_success "$cmd: --help exits 0 and shows its usage" "
		ingero $cmd --help >help &&
		grep -q '^usage: ingero $cmd' help
	"
	test_expect_success "$cmd: each option of --help is in ingero-$cmd.1" "
		options_in_man $cmd
	"
done

test_expect_success 'ingero help <command> is the command'"'"'s --help, for every command of ingero.1' '
	ingero help >general &&
	sed -n "s/^    \([a-z]*\) .*/\1/p" general >commands &&
	test_line_count = 5 commands &&
	tr -d "\\\\" <"$SRC_DIR/Documentation/ingero.1" >man.txt &&
	while read -r cmd; do
		ingero help $cmd >help &&
		ingero $cmd --help >expect &&
		test_cmp expect help &&
		grep -q "^.B $cmd$" man.txt || { echo "$cmd is not in ingero.1"; return 1; }
	done <commands
'

test_expect_success 'ingero help of what is not a command is a usage error' '
	test_expect_code 129 ingero help nosuch >out 2>err &&
	test_line_count = 0 out &&
	echo "ingero: '"'"'nosuch'"'"' is not a command; see '"'"'ingero --help'"'"'" >expect &&
	test_cmp expect err &&
	test_expect_code 129 ingero help dump info 2>err &&
	grep -q "^usage: ingero" err
'

test_expect_success 'an unknown option is a usage error naming it' '
	test_expect_code 129 ingero dump --no-such-option x 2>err &&
	grep -q "no-such-option" err
'

test_expect_success 'a bad value given with = names the option, not the option and its value' '
	test_expect_code 129 ingero analyze --top=abc x 2>err &&
	head -1 err >first &&
	echo "ingero: option '"'"'--top'"'"' wants a decimal number, not '"'"'abc'"'"'" >expect &&
	test_cmp expect first &&
	test_expect_code 129 ingero analyze --top= x 2>err &&
	head -1 err >first &&
	echo "ingero: option '"'"'--top'"'"' wants a decimal number, not '"'"''"'"'" >expect &&
	test_cmp expect first &&
	test_expect_code 129 ingero dump --from=soon x 2>err &&
	grep -q "^ingero: option .--from. wants a time" err
'

test_done
