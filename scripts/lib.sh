# Shared by the scripts in this folder: paths and small helpers.
# shellcheck shell=bash
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
SRC=$BUILD/linux-source-6.1
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
KFLAVOURS="pae nopae off"
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/largepage-ccache}
# Paths relative to $BUILD: a fresh clone elsewhere still hits the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$BUILD}

die() { echo "${0##*/}: $*" >&2; exit 1; }
say() { echo "${0##*/}: $*" >&2; }

check_flavour() {
	case " $KFLAVOURS " in
	*" $1 "*) ;;
	*) die "unknown flavour '$1' (${KFLAVOURS// /, })" ;;
	esac
}

need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || die "missing tool '$t' (run 'make deps')"
	done
}

# Digest of the files named, by content and name, for stamps.
digest() { cat "$@" | sha256sum | cut -d' ' -f1; }

# The series as apply-series applied it: the digest in $SERIES_STAMP, and
# a copy of every file the series touches in $SERIES_TREE. A file of $SRC
# newer than the stamp that differs from its copy (or has none) is an edit
# not yet refreshed into patches/: tree_edits lists them.
SERIES_STAMP=$BUILD/.series-applied
SERIES_TREE=$BUILD/series-tree
series_patches() { grep -v '^\s*#' "$TOP/series" | sed '/^\s*$/d'; }
series_digest() {
	# shellcheck disable=SC2046
	(cd "$TOP" && digest series $(series_patches | sed 's|^|patches/|') "$TARBALL")
}
series_files() {
	series_patches | sed "s|^|$TOP/patches/|" | xargs -r sed -n 's|^+++ b/||p' | sort -u
}
tree_edits() {
	[ -d "$SRC" ] && [ -f "$SERIES_STAMP" ] || return 0
	(cd "$SRC" && find . -path ./.pc -prune -o -type f -newer "$SERIES_STAMP" -print) |
		sed 's|^\./||' | while IFS= read -r f; do
			[ -f "$SERIES_TREE/$f" ] && cmp -s "$SRC/$f" "$SERIES_TREE/$f" && continue
			echo "$f"
		done
}
# series_snapshot: the tree matches the series: copy its files, then stamp.
series_snapshot() {
	local f
	rm -rf "$SERIES_TREE"
	series_files | while IFS= read -r f; do
		[ -f "$SRC/$f" ] || continue
		mkdir -p "$SERIES_TREE/$(dirname "$f")"
		cp -p "$SRC/$f" "$SERIES_TREE/$f"
	done
	series_patches >"$SERIES_TREE/.series"
	series_digest >"$SERIES_STAMP"
}

# checkpatch TREE PATCH: checkpatch.pl --strict from the kernel TREE, one
# line per finding (FILE:LINE: TYPE:NAME: message) on stdout; count them
# with count_findings. Two warnings are allowed: 6.1's checkpatch does
# not know Originally-by:, the tag the x86 tree asks for to credit an
# original author (Documentation/process/maintainer-tip.rst), and it
# cannot find an upstream commit that a backport names in a tree made
# from a tarball, which has no git history (UNKNOWN_COMMIT_ID). A patch
# with a CamelCase name (__SetPageUptodate()) makes checkpatch leave its
# cache of them in the tree: removed, it is no edit of ours.
checkpatch() {
	(cd "$1" && scripts/checkpatch.pl --strict --no-tree --terse --show-types "$2" 2>&1 || true) |
		grep -v -e 'WARNING:BAD_SIGN_OFF: Non-standard signature: Originally-by:$' \
			-e "WARNING:UNKNOWN_COMMIT_ID: Unknown commit id '[0-9a-f]*', maybe rebased or not pulled?$" \
			-e '^total: ' || true
	rm -f "$1"/.checkpatch-camelcase.*
}

# count_findings KIND... < checkpatch output: how many of those kinds.
count_findings() {
	local re
	re=$(IFS='|'; echo "$*")
	grep -cE ": ($re):" || true
}

# Debian's i386 kernel flavours (make deb, make check-configs).
DEB_FLAVOURS="686-pae 686 rt-686-pae"
check_deb_flavour() {
	case " $DEB_FLAVOURS " in
	*" $1 "*) ;;
	*) die "unknown Debian flavour '$1' (${DEB_FLAVOURS// /, })" ;;
	esac
}

# deb_pkg_dir FLAVOUR: where make deb puts the kernel packages of
# FLAVOUR: build/deb-FLAVOUR, or build/deb-FLAVOUR-all for
# DEB_MODULES=all (scripts/deb-kernel).
deb_pkg_dir() {
	case "${DEB_MODULES:-guest}" in
	all) echo "$BUILD/deb-$1-all" ;;
	*) echo "$BUILD/deb-$1" ;;
	esac
}

# The runs of 'make test', tests/runs: one a line, name, kernel, suite,
# QEMU -cpu and extra kernel command line ('-' for none; the rest of the
# line, blanks and all). The one reader of that table:
# run_names [KERNEL...]: the names of the runs of those kernels (of every
# run when none is named), in the table's order.
# run_get NAME: run_kernel, run_suite, run_cpu and run_append of run NAME
# ('-' read as empty); fails when there is no such run.
runs_table() {
	awk '$1 !~ /^#/ && NF >= 5 { r = $1 " " $2 " " $3 " " $4; $1 = $2 = $3 = $4 = "";
		sub(/^ +/, ""); print r, $0 }' "$TOP/tests/runs"
}
run_names() {
	local want=" $* "
	runs_table | while read -r name kernel _; do
		case "$want" in "  " | *" $kernel "*) echo "$name" ;; esac
	done
}
run_get() {
	local line
	line=$(runs_table | awk -v r="$1" '$1 == r') && [ -n "$line" ] || return 1
	read -r _ run_kernel run_suite run_cpu run_append <<<"$line"
	[ "$run_cpu" != - ] || run_cpu=
	[ "$run_append" != - ] || run_append=
}

# run_boot_args RUN LOG: scripts/boot's options, in the array boot_args,
# to boot RUN of tests/runs as make test does with its console in LOG:
# the run's CPU and command line, the fuzzers' knobs (make test
# LP_FUZZ_SEED=S LP_FUZZ_SECS=N LP_ORACLE_SEED=S) on it, and one retry of
# a stall (the stall rule, scripts/boot). Sets run_get's variables too.
run_boot_args() {
	local append
	run_get "$1" || return 1
	append=$run_append
	boot_args=(--log "$2" --retries 1
		--timeout "${LP_TIMEOUT:-$((900 + ${LP_FUZZ_SECS:-0}))}")
	[ -z "$run_cpu" ] || boot_args+=(--cpu "$run_cpu")
	[ -z "${LP_FUZZ_SEED:-}" ] || append+=" lpfuzz_seed=$LP_FUZZ_SEED"
	[ -z "${LP_FUZZ_SECS:-}" ] || append+=" lpfuzz_secs=$LP_FUZZ_SECS"
	[ -z "${LP_ORACLE_SEED:-}" ] || append+=" lporacle_seed=$LP_ORACLE_SEED"
	[ -z "$append" ] || boot_args+=(--append "${append# }")
}

# suite_results SUITE: how many TAP results a run of SUITE must report,
# from what the test build counted ($BUILD/tests, tests/Makefile): a suite
# of tests/suites, or one program as make check runs it, PROG (its list,
# PROG -l) or PROG:TEST[,TEST...] (those tests and its end of run check).
# Fails, saying why, when the build has no count for it.
suite_results() {
	local lists=$BUILD/tests prog tests=
	if [ "${1#*:}" = "$1" ] && awk -v s="$1" '$1 == s { f = 1 } END { exit !f }' \
		"$lists/suites" 2>/dev/null; then
		sed -n "s/^$1 \([0-9]*\):.*/\1/p" "$lists/suites"
		return
	fi
	prog=${1%%:*}
	[ "$prog" = "$1" ] || tests=${1#*:}
	[ -f "$lists/$prog.list" ] || {
		echo "no suite or test program '$prog' in $lists (run 'make tests')" >&2
		return 1
	}
	awk -v t=",$tests," 't == ",," || index(t, "," $0 ",") || $0 == "conservation_at_end_of_run"' \
		"$lists/$prog.list" | wc -l
}

# qemu_watched LOG MARKER SECS [--show] QEMU...: run QEMU (its serial
# console on stdout) with the console written to LOG (and, with --show,
# to stdout without CRs). A guest that has not printed MARKER after SECS
# seconds (0: never checked) has stalled in early boot and is killed;
# the status is then 75 if the series had not yet printed its first boot
# line ("largepage: ...", so the stall is none of its doing and a retry
# is fair) and 76 if it had (a hang in our code: never retried).
# Otherwise the status is QEMU's. With LP_STOP_ON (an ERE) set, the guest
# is also stopped as soon as its console shows a line matching it (the
# first failure, for scripts/mutants).
qemu_watched() {
	local log=$1 marker=$2 secs=$3 show= pidfile stalled watch= stop= rc w
	shift 3
	[ "${1:-}" = --show ] && { show=1; shift; }
	pidfile=$(mktemp) stalled=$log.stalled
	rm -f "$stalled"
	: >"$log"
	if [ "$secs" != 0 ]; then
		(
			for _ in $(seq "$secs"); do
				sleep 1
				grep -qa -- "$marker" "$log" 2>/dev/null && exit 0
			done
			touch "$stalled"
			kill "$(cat "$pidfile")" 2>/dev/null
		) &
		watch=$!
	fi
	if [ -n "${LP_STOP_ON:-}" ]; then
		(
			while sleep 2; do
				tr -d '\r' <"$log" | grep -qE -- "$LP_STOP_ON" || continue
				sleep 3	# the failure's diagnostics
				kill "$(cat "$pidfile")" 2>/dev/null
				exit 0
			done
		) &
		stop=$!
	fi
	set +e
	"$@" -pidfile "$pidfile" </dev/null | tee "$log" |
		if [ -n "$show" ]; then tr -d '\r'; else cat >/dev/null; fi
	rc=${PIPESTATUS[0]}
	set -e
	for w in $watch $stop; do
		kill "$w" 2>/dev/null || true
		wait "$w" 2>/dev/null || true
	done
	rm -f "$pidfile"
	if [ -f "$stalled" ]; then
		rm -f "$stalled"
		if grep -qa '^largepage: ' "$log"; then
			return 76
		fi
		return 75
	fi
	return "$rc"
}
