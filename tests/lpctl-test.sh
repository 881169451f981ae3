#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lpctl-test.sh: lpctl's output and exit codes, as TAP on stdout. Run as
# root in the guest; leaves the pool as it found it (same size, every
# page free), which the last test checks. -l lists the results (tap.sh).
if [ "${1:-}" = -l ]; then
	. "$(dirname "$0")/tap.sh"
	tap_list "$0" expect
	exit
fi
LPCTL=${LPCTL:-$(command -v lpctl || echo /usr/sbin/lpctl)}
SEGMENTS=/proc/largepage_segments
LPSYS=/sys/kernel/mm/largepage
# A strict JSON parser (tests/jsonget.c): --json output is parsed, not grepped.
JSONGET=${JSONGET:-$(dirname "$0")/jsonget}
HEAPFORK=${HEAPFORK:-$(dirname "$0")/heapfork}
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# The bash completion and the man page, from the build or a package.
COMPLETION=${COMPLETION:-/usr/share/bash-completion/completions/lpctl}
MAN8=${MAN8:-/usr/share/man/man8/lpctl.8}
[ -e "$MAN8" ] || MAN8=$MAN8.gz

tmp=$(mktemp -d) || exit 1
holders=
cleanup() {
	for p in $holders; do kill -TERM "$p" 2>/dev/null; done
	wait
	rm -rf "$tmp"
}
trap cleanup EXIT

. "$(dirname "$0")/tap.sh"

# run ARGS...: lpctl ARGS, stdout in $tmp/out, stderr in $tmp/err, $rc.
run() {
	"$LPCTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# expect DESC STATUS REGEX ARGS...: lpctl ARGS exits with STATUS and its
# output (stdout or stderr) matches the extended REGEX (none if empty).
expect() {
	desc=$1 want=$2 re=$3
	shift 3
	run "$@"
	if [ "$rc" = "$want" ] &&
	   { [ -z "$re" ] || grep -qE -- "$re" "$tmp/out" "$tmp/err"; }; then
		ok "$desc"
	else
		not_ok "$desc"
		echo "# lpctl $*: exit $rc, expected $want and /$re/; output:"
		diag "$tmp/out" "$tmp/err"
	fi
}

# wait_for FILE REGEX: until FILE matches (30 s at most).
wait_for() {
	i=0
	while ! grep -qE -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 300 ] || return 1
		sleep 0.1
	done
}

# stop_holder PID: SIGTERM ends its hold; it must release and exit 0.
stop_holder() {
	kill -TERM "$1" 2>/dev/null
	wait "$1"
	hrc=$?
	holders=$(echo " $holders " | sed "s/ $1 / /")
	return $hrc
}

# json PATH...: the values at PATH in the JSON of $tmp/out (one a line);
# fails if $tmp/out is not JSON or a PATH is missing.
json() { "$JSONGET" "$@" <"$tmp/out"; }

# row PID: the index of PID in processes of ps --json, or nothing.
row() {
	i=0
	while [ "$i" -lt "$(json processes.#)" ]; do
		[ "$(json processes.$i.pid)" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
}

# The SYNOPSIS of lpctl(8) as plain lines, "COMMAND ARGUMENTS" (the
# fonts' macros and escapes taken off, .RB's pieces joined).
man_synopsis() {
	gzip -dcf "$MAN8" | awk '
	/^\.SH/ { on = $2 == "SYNOPSIS"; next }
	!on { next }
	/^\.SY/ { line = ""; next }
	/^\.YS/ { sub(/^ /, "", line); print line; next }
	/^\.[BI] / { $1 = ""; sub(/^ /, ""); line = line " " $0; next }
	/^\.[BIR][BIR] / { $1 = ""; gsub(/ /, ""); line = line " " $0 }' |
	sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g'
}

# A row of the status segment table for KEY: its fields, or nothing.
segment_row() { awk -v k="$1" '$1 == k && NF >= 9' "$tmp/out"; }

echo "TAP version 13"
start_total=$(total)
start_free=$(nfree)
kb=$(mi LargePageSize)
ps=$((kb * 1024))
ps_h="$((kb / 1024)) MiB"
echo "# lpctl: $LPCTL; pool $start_total pages, $start_free free, of $ps_h"
if [ -z "$start_total" ] || [ "$start_total" -lt 4 ]; then
	echo "# no usable pool: every test below fails"
fi

# ---------------------------------------------------------------- basics
expect "version: exit 0, prints it" 0 '^lpctl [0-9]+\.[0-9]+' --version
expect "help: exit 0, prints usage" 0 '^Usage: lpctl COMMAND' --help
expect "no command: exit 2 with usage" 2 'Usage: lpctl'
expect "unknown command: exit 2" 2 "unknown command 'frob'" frob

# The table of commands: every command's --help and -h print its usage
# from it; the completion and lpctl(8) name the same commands.
"$LPCTL" --list-commands >"$tmp/commands"
commands=$(cut -d' ' -f1 "$tmp/commands" | tr '\n' ' ')
# usage: the usage line of $tmp/out, its wrapped lines joined.
usage() {
	awk 'NR == 1 { u = $0; next }
	/^ / { sub(/^ +/, ""); u = u " " $0; next }
	{ exit }
	END { print u }' "$tmp/out"
}
wrong=
while read -r cmd args; do
	for h in --help -h; do
		"$LPCTL" "$cmd" $h >"$tmp/out" 2>&1 &&
			[ "$(usage)" = "Usage: lpctl $cmd $args" ] ||
			wrong="$wrong $cmd $h"
	done
done <"$tmp/commands"
check "every command answers --help, -h with its usage ($commands)" \
	is "commands whose help is wrong" "$wrong" ""
check "the bash completion offers the table's commands" \
	is "completion" "$(sed -n "s/^[[:space:]]*local commands='\(.*\)'$/\1/p" "$COMPLETION")" \
	"${commands% }"
man_synopsis | awk -v c=" $commands" 'index(c, " " $1 " ")' |
	tr '[:upper:]' '[:lower:]' >"$tmp/man"
tr '[:upper:]' '[:lower:]' <"$tmp/commands" >"$tmp/table"
if cmp -s "$tmp/man" "$tmp/table" && [ -s "$tmp/table" ]; then
	ok "lpctl(8)'s SYNOPSIS is the table's"
else
	not_ok "lpctl(8)'s SYNOPSIS is the table's"
	diff "$tmp/table" "$tmp/man" | diag
fi

# ---------------------------------------------------------------- status
# Let largepage_zerod finish what earlier tests freed, so that the split
# below is stable while status reads it.
for _ in $(seq 3000); do
	[ "$(cat /sys/kernel/mm/largepage/free_unzeroed_pages)" = 0 ] && break
	sleep 0.02
done
expect "status: exit 0" 0 '^Pool total:' status
field() { sed -n "s/^$1: *\([0-9][0-9]*\) .*/\1/p" "$tmp/out"; }
check "status: page size is meminfo's" \
	is "page size (kB)" "$(field 'Large page size')" "$kb"
check "status: total is meminfo's" \
	is "total" "$(field 'Pool total')" "$(total)"
check "status: free is meminfo's" is "free" "$(field 'Pool free')" "$(nfree)"
check "status: in use is total - free" \
	is "in use" "$(field 'Pool in use')" "$(($(total) - $(nfree)))"
check "status: every free page zeroed, as sysfs says" \
	is "zeroed" "$(field 'Free, zeroed')" "$(nfree)"
check "status: none left to zero" is "to zero" "$(field 'Free, to zero')" 0
check "status: lowmem pages are sysfs's" \
	is "lowmem" "$(field 'Pool in lowmem')" "$(cat /sys/kernel/mm/largepage/lowmem_pages)"
if [ -e $SEGMENTS ]; then
	check "status: lists the keyed segments" \
		grep -qE '^Keyed segments: +(none|[0-9]+)$' "$tmp/out"
else
	# tap_list: unlisted (as many results as the branch above)
	check "status: says the segment list is missing" \
		grep -q "not listed (this kernel has no $SEGMENTS)" "$tmp/out"
	# tap_list: listed
fi

expect "status --json: exit 0" 0 "" status --json
check "status --json: parses, total is meminfo's" \
	is "json total" "$(json total)" "$(total)"
check "status --json: free is meminfo's" is "json free" "$(json free)" "$(nfree)"
check "status --json: page size in bytes" is "json page_size" "$(json page_size)" "$ps"
check "status --json: zeroed + unzeroed = free" is "json zeroed + unzeroed" \
	"$(($(json free_zeroed) + $(json free_unzeroed)))" "$(json free)"
check "status --json: lowmem is sysfs's" \
	is "json lowmem" "$(json lowmem)" "$(cat $LPSYS/lowmem_pages)"
check "status --json: no segments" is "json segments" "$(json segments.#)" 0
expect "status with an argument: exit 2" 2 "no arguments but --json" status 5
expect "status with an unknown option: exit 2" 2 \
	"^lpctl status: unrecognized option '--frob'" status --frob

# ---------------------------------------------------------------- resize
s=$start_total
expect "resize =N: exit 0, says old and new size" 0 \
	"^pool: $s -> $((s + 2)) pages \($ps_h each\)$" resize "=$((s + 2))"
check "resize =N: the pool has N pages" is total "$(total)" $((s + 2))
expect "resize +1: exit 0" 0 "^pool: $((s + 2)) -> $((s + 3)) pages" \
	resize +1
check "resize +1: one page more" is total "$(total)" $((s + 3))
expect "resize -1: exit 0" 0 "^pool: $((s + 3)) -> $((s + 2)) pages" \
	resize -1
check "resize -1: one page less" is total "$(total)" $((s + 2))
expect "resize =N back: exit 0" 0 "^pool: $((s + 2)) -> $s pages" resize "=$s"
check "resize =N back: the pool has its first size" is total "$(total)" "$s"
expect "resize without a sign: exit 2" 2 'bad count' resize 5
expect "resize +abc: exit 2" 2 'bad count' resize +abc
expect "resize with no count: exit 2" 2 'one argument' resize

if command -v setpriv >/dev/null; then
	$NOBODY "$LPCTL" resize +1 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 1 ] && grep -qx 'lpctl: only root can resize the pool' "$tmp/err" &&
	   [ "$(total)" = "$s" ]; then
		ok "resize as nobody: exit 1, only root can"
	else
		not_ok "resize as nobody: exit 1, only root can"
		echo "# exit $rc, pool $(total) (was $s)"
		diag "$tmp/out" "$tmp/err"
	fi
else
	not_ok "resize as nobody: exit 1, only root can"
	echo "# no setpriv in this guest"
fi

# A page in use: the pool cannot shrink to 0, and says so.
"$LPCTL" alloc 1p --hold 60 >"$tmp/hold1" 2>&1 &
h=$!
holders="$holders $h"
if wait_for "$tmp/hold1" '^holding'; then
	expect "resize below the pages in use: exit 1, says how far" 1 \
		"could only shrink to 1 pages, not 0: 1 pages are in use" \
		resize =0
	check "resize below the pages in use: one page left" \
		is total "$(total)" 1
else
	not_ok "resize below the pages in use: exit 1, says how far"
	not_ok "resize below the pages in use: one page left"
	diag "$tmp/hold1"
fi
check "alloc --hold: SIGTERM ends the hold, exit 0" stop_holder $h
check "alloc --hold: says it freed the pages" grep -q '^freed 0x' "$tmp/hold1"
expect "resize =N after the shrink: back to the first size" 0 \
	" -> $s pages" resize "=$s"
expect "resize -N beyond the pool: exit 1, says so" 1 \
	"the pool had only $s pages, not $((s + 5)) to take" resize "-$((s + 5))"
check "resize -N beyond the pool: every free page taken" is total "$(total)" 0
expect "resize +N after that: back to the first size" 0 \
	"^pool: 0 -> $s pages" resize "+$s"

# ---------------------------------------------------------------- apply
conf=$tmp/largepage.conf
printf '# the pool\npool = %s\n' $((s + 1)) >"$conf"
expect "apply: exit 0, says old and new size" 0 \
	"^pool: $s -> $((s + 1)) pages \($ps_h each\), $conf asks for $((s + 1))$" apply "$conf"
check "apply: the pool has the configured size" is total "$(total)" $((s + 1))
check "apply: nr_pages agrees" is nr_pages "$(cat $LPSYS/nr_pages)" $((s + 1))
expect "apply twice: exit 0, nothing changes" 0 \
	"^pool: $((s + 1)) -> $((s + 1)) pages" apply "$conf"
check "apply twice: the same pool" is total "$(total)" $((s + 1))
printf 'pool=%sK\n' $((s * kb)) >"$conf"
expect "apply a size in K: exit 0, back to the first size" 0 \
	"^pool: $((s + 1)) -> $s pages" apply "$conf"
check "apply a size: the pool has its first size" is total "$(total)" "$s"
printf 'pool = 3Q\n' >"$conf"
expect "apply a bad size: exit 1, names the line" 1 \
	"largepage.conf:1: bad pool size '3Q'" apply "$conf"
printf 'pages = 3\n' >"$conf"
expect "apply an unknown setting: exit 1" 1 "expected 'pool = PAGES'" apply "$conf"
printf '# nothing\n' >"$conf"
expect "apply without a pool line: exit 0, nothing to do" 0 \
	"sets no pool size \('pool = N'\): the pool stays at $s pages" apply "$conf"
expect "apply a missing file: exit 1" 1 "cannot read $tmp/none" apply "$tmp/none"
check "apply errors: the pool is unchanged" is total "$(total)" "$s"

# ---------------------------------------------------------------- sizes
expect "size not a multiple of the page size: exit 2, names it" 2 \
	"not a multiple of the large page size \($ps_h\)" alloc 3M
expect "size 0: exit 2" 2 "is 0" alloc 0
expect "size with an unknown unit: exit 2" 2 "bad size '12Q'" alloc 12Q
expect "size that overflows: exit 2" 2 "too large" alloc 99999999999G
expect "alloc without a size: exit 2" 2 "one SIZE" alloc
expect "bad --hold: exit 2" 2 "bad --hold" alloc 1p --hold soon
expect "unknown option: exit 2" 2 "" alloc 1p --frob
expect "share key 0: exit 2" 2 "bad key '0'" share 0 1p
expect "share bad --mode: exit 2" 2 "bad --mode" share 7 1p --mode 0999

# ---------------------------------------------------------------- alloc
expect "alloc 2p: exit 0, prints the address" 0 \
	"^mapped $((2 * kb / 1024)) MiB \(2 large pages of $ps_h\), private, at 0x" \
	alloc 2p
check "alloc 2p: the pages are free again" is free "$(nfree)" "$(total)"
expect "alloc in bytes, shared: exit 0" 0 ", shared, at 0x" alloc "$ps" --shared
expect "alloc in K: exit 0" 0 "\(1 large page of" alloc "${kb}K"
f=$(nfree)
expect "alloc more than free: exit 1, says how many" 1 \
	"^lpctl: not enough free large pages \(asked $((f + 1)), $f free\)$" \
	alloc "$((f + 1))p"

# ---------------------------------------------------------------- share
"$LPCTL" share 7 2p --hold 60 >"$tmp/hold7" 2>&1 &
h7=$!
holders="$holders $h7"
if wait_for "$tmp/hold7" '^holding'; then
	ok "share 7 2p --hold: creates segment 7"
	held=1
else
	not_ok "share 7 2p --hold: creates segment 7"
	diag "$tmp/hold7"
	held=
fi
check "share: says it created the segment, mode 0600" \
	grep -q '^created segment 7 (mode 0600): ' "$tmp/hold7"
check "share: the segment's pages are taken from the pool" \
	is free "$(nfree)" $(($(total) - 2))
run status
if [ ! -e $SEGMENTS ]; then
	not_ok "status: segment 7 listed with nattch 1"
	echo "# no $SEGMENTS"
elif row=$(segment_row 7) && [ -n "$row" ] &&
     [ "$(echo "$row" | awk '{ print $NF }')" = 1 ]; then
	ok "status: segment 7 listed with nattch 1"
else
	not_ok "status: segment 7 listed with nattch 1"
	diag "$tmp/out"
fi

# ps: a private, a shared and a keyed holder besides segment 7's.
"$LPCTL" alloc 2p --hold 60 >"$tmp/holdp" 2>&1 &
hp=$!
"$LPCTL" alloc 1p --shared --hold 60 >"$tmp/holds" 2>&1 &
hs=$!
holders="$holders $hp $hs"
if wait_for "$tmp/holdp" '^holding' && wait_for "$tmp/holds" '^holding'; then
	expect "ps --json: exit 0" 0 "" ps --json
	ip=$(row $hp) is=$(row $hs) ik=$(row $h7)
	check "ps --json: lists the private holder, 2 private pages" \
		is "private" "$(json processes.$ip.private processes.$ip.shared processes.$ip.keyed | tr '\n' ' ')" "2 0 0 "
	check "ps --json: lists the shared holder, 1 shared page" \
		is "shared" "$(json processes.$is.private processes.$is.shared processes.$is.keyed | tr '\n' ' ')" "0 1 0 "
	check "ps --json: lists segment 7's holder, 2 keyed pages" \
		is "keyed" "$(json processes.$ik.private processes.$ik.shared processes.$ik.keyed | tr '\n' ' ')" "0 0 2 "
	check "ps --json: command and user" \
		is "command user" "$(json processes.$ip.command processes.$ip.user | tr '\n' ' ')" "lpctl root "
	check "ps --json: mapped = Total - Free, nothing unaccounted" \
		is "mapped" "$(json mapped)" "$(($(total) - $(nfree)))"
	check "ps --json: in_use is meminfo's, complete as root" \
		is "in_use complete" "$(json in_use complete | tr '\n' ' ')" "$(($(total) - $(nfree))) true "
	expect "ps: exit 0, a row for the private holder" 0 \
		"^ *$hp +root +2 +0 +0 +0 +0 lpctl$" ps
	check "ps: a shared segment counted once" \
		grep -qx "Mapped: *$(($(total) - $(nfree))) pages (each counted once, however many map it)" "$tmp/out"
else
	for t in "ps --json: exit 0" "ps --json: lists the private holder, 2 private pages" \
		 "ps --json: lists the shared holder, 1 shared page" \
		 "ps --json: lists segment 7's holder, 2 keyed pages" \
		 "ps --json: command and user" \
		 "ps --json: mapped = Total - Free, nothing unaccounted" \
		 "ps --json: in_use is meminfo's, complete as root" \
		 "ps: exit 0, a row for the private holder" "ps: a shared segment counted once"; do
		not_ok "$t"
	done
	diag "$tmp/holdp" "$tmp/holds"
fi
stop_holder $hp
stop_holder $hs

# ps of a forked heap (LP_COPY_ON_FORK): 4 pages, of which the child
# wrote (copied) 1. Each has 1 page of its own and 3 shared, which
# count once: the pool holds 5 pages for both, and 3 are reserved.
"$HEAPFORK" hold 4 1 >"$tmp/holdh" 2>&1 &
hh=$!
holders="$holders $hh"
if wait_for "$tmp/holdh" "^holding $hh\$"; then
	hc=$(grep '^holding' "$tmp/holdh" | head -1 | cut -d' ' -f2)
	expect "ps --json of a forked heap: exit 0" 0 "" ps --json
	ip=$(row $hh) ic=$(row $hc)
	check "ps --json: a forked heap's parent, 1 page its own and 3 shared" \
		is "private shared keyed heap heap_shared" \
		"$(json processes.$ip.private processes.$ip.shared processes.$ip.keyed processes.$ip.heap processes.$ip.heap_shared | tr '\n' ' ')" "0 0 0 1 3 "
	check "ps --json: its child, 1 page its own (the copy) and 3 shared" \
		is "private shared keyed heap heap_shared" \
		"$(json processes.$ic.private processes.$ic.shared processes.$ic.keyed processes.$ic.heap processes.$ic.heap_shared | tr '\n' ' ')" "0 0 0 1 3 "
	check "ps --json: a forked heap's shared pages counted once" \
		is "mapped in_use" "$(json mapped in_use | tr '\n' ' ')" \
		"$(($(total) - $(nfree))) $(($(total) - $(nfree))) "
	expect "status: the 3 pages reserved for the heap's copies" 0 \
		"^Free, reserved: +3 pages " status
	expect "ps: a row for the forked heap's child" 0 \
		"^ *$hc +root +0 +0 +0 +1 +3 heapfork$" ps
else
	for t in "ps --json of a forked heap: exit 0" \
		 "ps --json: a forked heap's parent, 1 page its own and 3 shared" \
		 "ps --json: its child, 1 page its own (the copy) and 3 shared" \
		 "ps --json: a forked heap's shared pages counted once" \
		 "status: the 3 pages reserved for the heap's copies" \
		 "ps: a row for the forked heap's child"; do
		not_ok "$t"
	done
	diag "$tmp/holdh"
fi
stop_holder $hh
expect "ps with an argument: exit 2" 2 "no arguments but --json" ps 5

# A command name that is not UTF-8 (an exec through a symlink named
# \377\376lp): ps --json is still JSON, each bad byte a U+FFFD.
badname=$(printf '\377\376lp')
ln -s "$LPCTL" "$tmp/$badname"
"$tmp/$badname" alloc 1p --hold 60 >"$tmp/holdu" 2>&1 &
hu=$!
holders="$holders $hu"
if wait_for "$tmp/holdu" '^holding'; then
	run ps --json
	check "ps --json, a command not UTF-8: exit 0, valid JSON" \
		eval '[ $rc = 0 ] && json processes.# >/dev/null || { diag "$tmp/out"; false; }'
	iu=$(row $hu)
	if is command "$(json "processes.$iu.command")" "??lp" &&
	   grep -qF '"command":"\ufffd\ufffdlp"' "$tmp/out"; then
		ok "ps --json, a command not UTF-8: its bytes as U+FFFD"
	else
		not_ok "ps --json, a command not UTF-8: its bytes as U+FFFD"
		diag "$tmp/out"
	fi
else
	not_ok "ps --json, a command not UTF-8: exit 0, valid JSON"
	not_ok "ps --json, a command not UTF-8: its bytes as U+FFFD"
	diag "$tmp/holdu"
fi
stop_holder $hu

expect "share --attach: attaches the existing segment, reads its note" 0 \
	"^it says: lpctl segment, created by pid $h7$" share 7 2p --attach
check "share --attach: says attached" \
	grep -q '^attached segment 7: ' "$tmp/out"
expect "share --excl on an existing key: exit 1" 1 \
	"segment 7 already exists" share 7 2p --excl
expect "share with another size: exit 1" 1 \
	"segment 7 exists with size|Invalid argument" share 7 1p
expect "share --attach of an absent key: exit 1" 1 \
	"no segment with key 8" share 8 1p --attach
$NOBODY "$LPCTL" share 7 2p >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q 'permission denied on segment 7' "$tmp/err"; then
	ok "share by nobody of a 0600 segment: exit 1, permission denied"
else
	not_ok "share by nobody of a 0600 segment: exit 1, permission denied"
	echo "# exit $rc"
	diag "$tmp/out" "$tmp/err"
fi
# explain KEY: the segment's facts and what its mode lets the caller do,
# in JSON as in text (preload.c checks the text), with one exit status.
run explain --json 7
jrc_root=$rc
check "explain --json 7: exit 0, segment 7's line (2 pages, 0600, root's, 1 attached)" \
	is "json segment" "$rc $(json segment.key segment.size segment.pages segment.mode \
	segment.uid segment.gid segment.cuid segment.cgid segment.nattch | tr '\n' ' ')" \
	"0 7 $((2 * ps)) 2 $((0600)) 0 0 0 0 1 "
check "explain --json 7: root may attach it read-write" \
	is "json attach" "$(json segment.caller_uid segment.attach | tr '\n' ' ')" \
	"0 read-write "
$NOBODY "$LPCTL" explain --json 7 >"$tmp/out" 2>"$tmp/err"
rc=$?
jrc_nobody=$rc
check "explain --json 7 by nobody: exit 1, may not attach the 0600 segment" \
	is "json nobody" "$rc $(json segment.key segment.mode segment.caller_uid segment.attach | tr '\n' ' ')" \
	"1 7 $((0600)) 65534 null "
run explain --json 8
jrc_none=$rc
check "explain --json 8, no such segment: exit 1, segment null" \
	is "json segment" "$rc $(json segment)" "1 null"
run explain 7
trc_root=$rc
$NOBODY "$LPCTL" explain 7 >"$tmp/out" 2>"$tmp/err"
trc_nobody=$?
run explain 8
check "explain KEY: the same exit status as explain --json KEY" \
	is "exit statuses" "$trc_root $trc_nobody $rc" \
	"$jrc_root $jrc_nobody $jrc_none"
if [ -n "$held" ]; then
	check "share --hold: SIGTERM ends the hold, exit 0" stop_holder $h7
else
	stop_holder $h7
	not_ok "share --hold: SIGTERM ends the hold, exit 0"
fi
check "share: says it detached" grep -q '^detached from segment 7$' "$tmp/hold7"
expect "share --attach after the last detach: the key is gone" 1 \
	"no segment with key 7" share 7 2p --attach

# ---------------------------------------------------------------- cgroups
# The misc controller's largepage resource. The nopae kernel is built
# without it: there lpctl must say so, in as many checks.
CG=/sys/fs/cgroup
# cgrow NAME: pages, max and refused of the status row for cgroup NAME.
cgrow() { awk -v c="$1" '$1 == c { print $2, $(NF - 1), $NF }' "$tmp/out"; }
# cgjson NAME: pages, max and refused of NAME in status --json's cgroups.
cgjson() {
	i=0
	while [ "$i" -lt "$(json cgroups.# 2>/dev/null || echo 0)" ]; do
		if [ "$(json cgroups.$i.path)" = "$1" ]; then
			echo $(json cgroups.$i.pages cgroups.$i.max cgroups.$i.refused)
			return
		fi
		i=$((i + 1))
	done
}
if [ -e $CG/misc.capacity ]; then
	name=/lpctl-test-$$
	cg=$CG$name
	echo +misc >$CG/cgroup.subtree_control
	mkdir $cg && echo "largepage 1" >$cg/misc.max
	# A holder in the cgroup, of one page: all its limit.
	sh -c "echo \$\$ >$cg/cgroup.procs && exec $LPCTL alloc 1p --hold 60" \
		>"$tmp/holdc" 2>&1 &
	hc=$!
	holders="$holders $hc"
	if wait_for "$tmp/holdc" '^holding'; then
		ok "cgroups: a holder of 1 page in a cgroup with misc.max 1"
	else
		not_ok "cgroups: a holder of 1 page in a cgroup with misc.max 1"
		diag "$tmp/holdc"
	fi
	run status
	check "status: the cgroup holds 1 page of 1, none refused" \
		is "$name" "$(cgrow $name)" "1 1 0"
	run status --json
	check "status --json: the cgroup's pages, max, refused" \
		is "json $name" "$(cgjson $name)" "1 1 0"
	# explain from inside the cgroup: its probe is refused.
	sh -c "echo \$\$ >$cg/cgroup.procs && exec $LPCTL explain" \
		>"$tmp/out" 2>&1
	rc=$?
	check "explain in the cgroup: exit 1, names the limit and why" \
		eval '[ $rc = 1 ] &&
		grep -q "^Cgroup: *$name allows 0 more large pages" "$tmp/out" &&
		grep -q "^Probe: .*(the cgroup.s limit)$" "$tmp/out" || { diag "$tmp/out"; false; }'
	sh -c "echo \$\$ >$cg/cgroup.procs && exec $LPCTL explain --json" \
		>"$tmp/out" 2>&1
	check "explain --json in the cgroup: room 0, limited by it" \
		is "json cgroup" "$(echo $(json cgroup_misc cgroup_room cgroup_limited_by))" \
		"true 0 $name"
	run status
	check "status: the two probes' refusals are counted" \
		is "$name" "$(cgrow $name)" "1 1 2"
	stop_holder $hc
	run status
	check "status: the holder gone, the cgroup holds 0" \
		is "$name" "$(cgrow $name)" "0 1 2"
	# An empty pool: 6.1 shows no largepage line and refuses a limit.
	echo 0 >$LPSYS/nr_pages
	run status
	check "status, empty pool: says the misc files show nothing" \
		grep -q "^Cgroups: *the pool is empty: the misc files show no largepage line" "$tmp/out"
	run explain
	check "explain, empty pool: says a limit is refused until it has pages" \
		grep -q "^Cgroup: *the pool is empty: .*misc.max refuses a limit (EINVAL)" "$tmp/out"
	run explain --json
	check "explain --json, empty pool: cgroup_misc_pool_empty" \
		is "json" "$(json cgroup_misc_pool_empty)" true
	check "empty pool: misc.max refuses a limit" \
		eval '! echo "largepage 2" 2>/dev/null >$cg/misc.max'
	echo "$s" >$LPSYS/nr_pages
	rmdir $cg
else
	# tap_list: unlisted (as many results as the branch above)
	echo "# no $CG/misc.capacity: a kernel without the misc controller"
	ok "cgroups: no misc controller (nothing to hold)"
	run status
	check "status: says there is no misc controller" \
		grep -q "^Cgroups: *no limits (no cgroup2 with the misc controller)" "$tmp/out"
	run status --json
	check "status --json: cgroups is null" is "json cgroups" "$(json cgroups)" null
	run explain
	check "explain: says there is no misc controller" \
		grep -q "^Cgroup: *no misc controller" "$tmp/out"
	run explain --json
	check "explain --json: no controller, room and limit null" \
		is "json cgroup" "$(echo $(json cgroup_misc cgroup_room cgroup_limited_by))" \
		"false null null"
	check "explain: the probe still maps a page" grep -q '"probe_ok":true' "$tmp/out"
	check "no misc.events anywhere" eval '! ls $CG/*/misc.events >/dev/null 2>&1'
	# An empty pool changes nothing of that.
	echo 0 >$LPSYS/nr_pages
	run status
	check "status, empty pool: still no misc controller" \
		grep -q "^Cgroups: *no limits (no cgroup2 with the misc controller)" "$tmp/out"
	run explain
	check "explain, empty pool: still no misc controller" \
		grep -q "^Cgroup: *no misc controller" "$tmp/out"
	run explain --json
	check "explain --json, empty pool: not cgroup_misc_pool_empty" \
		is "json" "$(json cgroup_misc_pool_empty)" false
	check "empty pool: the pool is empty" is total "$(total)" 0
	echo "$s" >$LPSYS/nr_pages
	# tap_list: listed
fi

# ---------------------------------------------------------------- the end
check "the pool has its first size" is total "$(total)" "$start_total"
check "every page is free" is free "$(nfree)" "$(total)"

tap_end
