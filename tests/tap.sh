# SPDX-License-Identifier: GPL-2.0
# tap.sh: the TAP helpers of the shell suites (lpctl-test.sh,
# heap-test.sh), sourced by them: results as TAP 13 on stdout. Each
# suite answers -l with tap_list, which lists its results without running
# it (tests/Makefile counts them so at build time).

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
diag() { sed 's/^/# /' "$@"; }

# check DESC COMMAND...: a test that passes when COMMAND succeeds.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# is WHAT GOT WANT: compare two values, explaining a difference.
is() {
	[ "$2" = "$3" ] && return 0
	echo "# $1: got '$2', expected '$3'"
	return 1
}

# tap_end: the plan and the count; exit status 0 when all passed.
tap_end() {
	echo "1..$n"
	echo "# $((n - failed)) passed, $failed failed"
	[ $failed = 0 ]
}

# tap_list SCRIPT [REPORTER...]: SCRIPT's results, one description a line
# in order, read from its text: the double-quoted first argument of each
# call of check, ok, not_ok (and of the REPORTERs, the script's own
# functions that report one result each), a description listed once (a
# failure branch repeats its success branch's). A description that is a
# lone variable ("$desc") passes another's on. Where a script reports one
# set of results or another (by what the kernel has), the second set is
# framed by "# tap_list: unlisted" and "# tap_list: listed" lines: it
# must report as many results as the first.
tap_list() {
	tap_script=$1
	shift
	awk -v reporters="check ok not_ok $*" '
	BEGIN { for (i = split(reporters, r, " "); i > 0; i--) rep[r[i]] = 1 }
	/^[ \t]*# tap_list: unlisted/ { off = 1; next }
	/^[ \t]*# tap_list: listed/ { off = 0; next }
	off { next }
	match($0, /^[ \t]*[a-z_]+ "[^"]*"/) {
		call = substr($0, RSTART, RLENGTH)
		sub(/^[ \t]*/, "", call)
		w = substr(call, 1, index(call, " ") - 1)
		d = substr(call, length(w) + 3, length(call) - length(w) - 3)
		if (!(w in rep) || d ~ /^\$[{]?[A-Za-z_][A-Za-z0-9_]*[}]?$/ || d in seen)
			next
		seen[d] = 1
		print d
	}' "$tap_script"
}

# The pool, from /proc/meminfo.
mi() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
total() { mi LargePages_Total; }
nfree() { mi LargePages_Free; }
# settle N: wait (5 s at most) until N pages are free; prints the count.
settle() {
	for _ in $(seq 250); do
		[ "$(nfree)" = "$1" ] && break
		sleep 0.02
	done
	nfree
}
