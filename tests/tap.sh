# SPDX-License-Identifier: GPL-2.0
# tap.sh: the TAP helpers of the shell suites (lpctl-test.sh,
# heap-test.sh), sourced by them: results as TAP 13 on stdout.

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

# The pool, from /proc/meminfo.
mi() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
total() { mi LargePages_Total; }
nfree() { mi LargePages_Free; }
