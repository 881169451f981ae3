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

# checkpatch TREE PATCH: checkpatch.pl --strict from the kernel TREE, one
# line per finding (FILE:LINE: TYPE:NAME: message) on stdout; count them
# with count_findings. Two warnings are allowed: 6.1's checkpatch does
# not know Originally-by:, the tag the x86 tree asks for to credit an
# original author (Documentation/process/maintainer-tip.rst), and it
# cannot find an upstream commit that a backport names in a tree made
# from a tarball, which has no git history (UNKNOWN_COMMIT_ID).
checkpatch() {
	(cd "$1" && scripts/checkpatch.pl --strict --no-tree --terse --show-types "$2" 2>&1 || true) |
		grep -v -e 'WARNING:BAD_SIGN_OFF: Non-standard signature: Originally-by:$' \
			-e "WARNING:UNKNOWN_COMMIT_ID: Unknown commit id '[0-9a-f]*', maybe rebased or not pulled?$" \
			-e '^total: ' || true
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
