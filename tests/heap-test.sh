#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# heap-test.sh: lpctl run --heap (a program's malloc heap on large pages,
# mimalloc's, from liblargepage), as TAP on stdout. Run as root in the
# guest, with libmimalloc2.0, python3 and strace installed (the test
# image has them). Leaves the pool as it found it. -l lists the results
# (tap.sh).
if [ "${1:-}" = -l ]; then
	. "$(dirname "$0")/tap.sh"
	tap_list "$0"
	exit
fi
LPCTL=${LPCTL:-$(command -v lpctl || echo /usr/sbin/lpctl)}
HEAPFORK=${HEAPFORK:-$(dirname "$0")/heapfork}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap.sh"
# field KEY FILE: KEY=VALUE of the first report line in FILE.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2" | head -1; }

echo "TAP version 13"
ps=$(($(mi LargePageSize) * 1024))
start_free=$(nfree)
echo "# pool: $start_free pages of $((ps >> 20)) MiB free"

# An 80 MB text file: random bytes as base64, 77-byte lines.
head -c 62914560 /dev/urandom | base64 -w 76 >"$tmp/in"
echo "# input: $(wc -c <"$tmp/in") bytes, $(wc -l <"$tmp/in") lines"
export LC_ALL=C
sort -S 48M --parallel=2 -o "$tmp/plain" "$tmp/in"

# ------------------------------------------------ sort on a 128 MiB heap
want=$(((128 << 20) / ps))
before=$(nfree)
LARGEPAGE_HEAP_REPORT=$tmp/report128 "$LPCTL" run --heap=128M -- \
	sort -S 48M --parallel=2 -o "$tmp/heap" "$tmp/in" 2>"$tmp/err" &
pid=$!
low=$before
while kill -0 $pid 2>/dev/null; do
	f=$(nfree)
	[ "$f" -lt "$low" ] && low=$f
	sleep 0.1
done
wait $pid
rc=$?
check "sort --heap=128M: exits 0" is rc "$rc" 0
diag "$tmp/err"
check "sort --heap=128M: output byte-identical to plain sort" \
	cmp -s "$tmp/plain" "$tmp/heap"
check "sort --heap=128M: held the $want pool pages it asked for while it ran" \
	is "lowest free count" "$low" "$((before - want))"
diag "$tmp/report128"
check "sort --heap=128M: the report says the region was 128 MiB" \
	is region "$(field region "$tmp/report128")" $((128 << 20))
check "sort --heap=128M: the heap used the region" \
	test "$(field used "$tmp/report128")" -gt $((48 << 20))
check "sort --heap=128M: nothing spilled" \
	is spilled "$(field spilled "$tmp/report128")" 0
check "sort --heap=128M: every page back at exit" \
	is free "$(settle "$before")" "$before"

# ------------------------------------------------- a heap that is small
before=$(nfree)
"$LPCTL" run --heap=8M -- sort -S 48M --parallel=2 -o "$tmp/small" \
	"$tmp/in" 2>"$tmp/err"
rc=$?
check "sort --heap=8M: exits 0" is rc "$rc" 0
diag "$tmp/err"
check "sort --heap=8M: output byte-identical to plain sort" \
	cmp -s "$tmp/plain" "$tmp/small"
check "sort --heap=8M: the exit path reports the spill" \
	test "$(field spilled "$tmp/err")" -gt $((32 << 20))
check "sort --heap=8M: every page back at exit" \
	is free "$(settle "$before")" "$before"
rm -f "$tmp/heap" "$tmp/small" "$tmp/plain"

# ------------------------------------------- nothing touches the region
head -c 8000000 "$tmp/in" >"$tmp/in8"
LARGEPAGE_HEAP_REPORT=$tmp/report32 strace -f -qq -o "$tmp/strace" \
	"$LPCTL" run --heap=32M -- sort -S 8M --parallel=2 -o "$tmp/out8" \
	"$tmp/in8" 2>"$tmp/err"
rc=$?
check "strace -f sort --heap=32M: exits 0" is rc "$rc" 0
start=$(field start "$tmp/report32")
diag "$tmp/report32"
# Calls whose range meets the region, once get_large_pages() (1000, which
# strace does not know) has made it: munmap, mprotect, madvise and mremap
# by their first two arguments, mmap2 by a MAP_FIXED address. (Before,
# the preload unmaps its own reservation of the range, to pick a 4 MiB
# boundary.)
awk -v s="$start" -v len=$((32 << 20)) '
	function num(x,   v, i) {	# mawk has no strtonum()
		if (x !~ /^0x/)
			return x + 0
		v = 0
		for (i = 3; i <= length(x); i++)
			v = v * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1
		return v
	}
	BEGIN { s = num(s); e = s + len }
	/syscall_0x3e8\(/ { made = 1; next }
	made {
		if (!match($0, /(munmap|mprotect|madvise|mremap|mmap2)\(/))
			next
		call = substr($0, RSTART, RLENGTH - 1)
		args = substr($0, RSTART + RLENGTH)
		split(args, a, ", ")
		if (call == "mmap2" && args !~ /MAP_FIXED/)
			next
		a0 = num(a[1]); a1 = num(a[2])
		if (a0 < e && a0 + a1 > s)
			print
	}' "$tmp/strace" >"$tmp/inside" 2>"$tmp/awkerr"
check "strace -f: the report gave the region's start" test -n "$start"
check "strace -f: the trace shows get_large_pages() making the region" \
	grep -q "syscall_0x3e8(" "$tmp/strace"
check "strace -f: sort made its calls (the trace is not empty)" \
	test "$(grep -c 'mmap2(' "$tmp/strace")" -gt 0
check "strace -f: nothing unmaps, re-protects, advises or remaps inside the region" \
	is "calls inside" "$(wc -l <"$tmp/inside")" 0
diag "$tmp/inside" "$tmp/awkerr"

# ------------------------------------------------ fork: python, threads
cat >"$tmp/fork.py" <<'EOF'
import os
n = 8 << 20
a = bytearray(b'P' * n)
up_r, up_w = os.pipe()
down_r, down_w = os.pipe()
pid = os.fork()
if pid == 0:
    ok = a.count(b'P') == n
    b = bytearray(b'C' * n)
    a[:] = b'c' * n
    os.write(up_w, b'1')
    os.read(down_r, 1)
    ok = ok and a.count(b'c') == n and b.count(b'C') == n
    os._exit(0 if ok else 1)
os.read(up_r, 1)
ok = a.count(b'P') == n
b = bytearray(b'Q' * n)
a[:] = b'p' * n
os.write(down_w, b'1')
_, st = os.waitpid(pid, 0)
ok = ok and st == 0 and a.count(b'p') == n and b.count(b'Q') == n
print('parent and child each saw only their own writes' if ok else 'BAD')
EOF
before=$(nfree)
LARGEPAGE_HEAP_REPORT=$tmp/reportpy "$LPCTL" run --heap=32M -- \
	python3 "$tmp/fork.py" >"$tmp/out" 2>"$tmp/err"
rc=$?
diag "$tmp/out" "$tmp/err" "$tmp/reportpy"
check "python3 os.fork() on the heap: exits 0" is rc "$rc" 0
check "python3 os.fork() on the heap: neither sees the other's writes" \
	grep -q "each saw only their own" "$tmp/out"
check "python3 os.fork() on the heap: its buffers were in the region" \
	test "$(field used "$tmp/reportpy")" -ge $((16 << 20))
check "python3 os.fork() on the heap: every page back at exit" \
	is free "$(settle "$before")" "$before"

before=$(nfree)
"$LPCTL" run --heap=32M -- "$HEAPFORK" threads >"$tmp/out" 2>"$tmp/err"
rc=$?
diag "$tmp/out" "$tmp/err"
check "threads allocating, a second thread forks: parent and child correct" \
	is rc "$rc" 0
check "threads allocating, a second thread forks: blocks in the large-page heap" \
	grep -q "blocks in the large-page heap" "$tmp/out"
check "threads allocating, a second thread forks: every page back at exit" \
	is free "$(settle "$before")" "$before"

# ------------------------------------ the first allocation on the region
# mimalloc takes its first segment at its first malloc(): the region must
# be its arena by then, or a program's first 4 MiB of heap (all of a
# small program's) is normal pages, and no report says so.
before=$(nfree)
"$LPCTL" run --heap=8M -- "$HEAPFORK" first >"$tmp/out" 2>"$tmp/err"
rc=$?
diag "$tmp/out" "$tmp/err"
check "the first malloc() of a program is in the region" is rc "$rc" 0
LARGEPAGE_HEAP_REPORT=$tmp/reportsh "$LPCTL" run --heap=8M -- bash -c \
	'x=; i=0; while [ $i -lt 300 ]; do x="$x $i"; i=$((i + 1)); done' \
	2>"$tmp/err"
diag "$tmp/reportsh" "$tmp/err"
check "bash's allocations are in the region (the report's used > 0)" \
	test "$(field used "$tmp/reportsh")" -gt 0
check "the first allocations: every page back at exit" \
	is free "$(settle "$before")" "$before"

# ------------------------------------ exec'd children take no region
before=$(nfree)
"$LPCTL" run --heap=32M -- sh -c \
	'awk "\$1 == \"LargePages_Free:\" { print \$2 }" /proc/meminfo; env' \
	>"$tmp/out" 2>"$tmp/err"
check "an exec'd child takes no region of its own (pool: the shell's only)" \
	is free "$(head -1 "$tmp/out")" "$((before - (32 << 20) / ps))"
check "an exec'd child's environment has no LARGEPAGE_HEAP" \
	is count "$(grep -c '^LARGEPAGE_HEAP=' "$tmp/out")" 0
check "an exec'd child's LD_PRELOAD: liblargepage, no mimalloc" \
	is LD_PRELOAD "$(grep '^LD_PRELOAD=' "$tmp/out" | sed 's|.*/||')" liblargepage.so.1
check "exec'd children: every page back at exit" \
	is free "$(settle "$before")" "$before"

# bash has its own getenv() and unsetenv(), which the preload's calls
# reach: its children too must find no LARGEPAGE_HEAP.
before=$(nfree)
"$LPCTL" run --heap=32M -- bash -c \
	'awk "\$1 == \"LargePages_Free:\" { print \$2 }" /proc/meminfo; env' \
	>"$tmp/out" 2>"$tmp/err"
check "bash: an exec'd child takes no region of its own (pool: the shell's only)" \
	is free "$(head -1 "$tmp/out")" "$((before - (32 << 20) / ps))"
check "bash: an exec'd child's environment has no LARGEPAGE_HEAP" \
	is count "$(grep -c '^LARGEPAGE_HEAP=' "$tmp/out")" 0
check "bash: an exec'd child's LD_PRELOAD: liblargepage, no mimalloc" \
	is LD_PRELOAD "$(grep '^LD_PRELOAD=' "$tmp/out" | sed 's|.*/||')" liblargepage.so.1
check "bash's exec'd children: every page back at exit" \
	is free "$(settle "$before")" "$before"

# LARGEPAGE_HEAP_EXEC=1: the exec'd child keeps both, and its own heap.
before=$(nfree)
LARGEPAGE_HEAP_EXEC=1 "$LPCTL" run --heap=32M -- sh -c \
	'awk "\$1 == \"LargePages_Free:\" { print \$2 }" /proc/meminfo; env' \
	>"$tmp/out" 2>"$tmp/err"
check "LARGEPAGE_HEAP_EXEC=1: an exec'd child takes a region of its own" \
	is free "$(head -1 "$tmp/out")" "$((before - 2 * (32 << 20) / ps))"
check "LARGEPAGE_HEAP_EXEC=1: an exec'd child keeps mimalloc preloaded" \
	grep -q '^LD_PRELOAD=.*libmimalloc\.so\.2' "$tmp/out"
check "LARGEPAGE_HEAP_EXEC=1: every page back at exit" \
	is free "$(settle "$before")" "$before"

# ------------------------------------------------------------ refusals
"$LPCTL" run --heap=3X -- true >"$tmp/out" 2>"$tmp/err"
check "--heap=3X: usage error (exit 2)" is rc $? 2

# ------------------------------------------------------- the fork cost
for mib in 32 128; do
	"$HEAPFORK" cost $mib 2>&1 | sed "s/^/# fork cost, $mib MiB: /"
done

check "the pool is as it was" is free "$(settle "$start_free")" "$start_free"
tap_end
