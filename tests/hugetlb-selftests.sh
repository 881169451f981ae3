#!/bin/sh
# shellcheck disable=SC2016 # check ... eval '...': expanded when it runs
# SPDX-License-Identifier: GPL-2.0
# hugetlb-selftests.sh: mainline's hugetlb selftests
# (tools/testing/selftests/vm of linux-source-6.1, built unmodified,
# dynamic, i386: tests/Makefile's HUGETLB_TESTS, installed in hugetlb/
# beside this script) run under liblargepage.so.1 with no hugetlbfs pages
# (vm.nr_hugepages 0), as TAP on stdout. Each run must pass as mainline
# means it (exit status and what it prints), take its pages from the
# pool (lpwatch: the pool's free count and the program's LargePages:
# at the moments it surely holds them), and leave the pool whole. The
# selftests that need what only hugetlbfs has are declared skips, each
# with the hugetlbfs-only thing it reads or does (tests/skips has the
# same lines). Run as root in the guest; leaves the pool, nr_hugepages
# and nr_overcommit_hugepages as it found them.
D=$(dirname "$0")
BIN=${HUGETLB_BIN:-$D/hugetlb}
LPWATCH=${LPWATCH:-$D/lpwatch}
LIB=${LP_PRELOAD_LIB:-/usr/lib/i386-linux-gnu/liblargepage.so.1}
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
LPSYS=/sys/kernel/mm/largepage
NR_HUGE=/proc/sys/vm/nr_hugepages
NR_OVER=/proc/sys/vm/nr_overcommit_hugepages

# The declared skips (tests/skips has the same lines): NAME|REASON.
SKIPS='vm/thuge-gen|reads /sys/kernel/mm/hugepages/hugepages-*/free_hugepages (exits 0 untested below 2 free) and munmap()s one huge page of a larger mapping (a partial munmap)
vm/hugepage-mmap|maps a file on a hugetlbfs mount (huge/hugepagefile)
vm/hugepage-mremap|maps a file on a hugetlbfs mount and mremap()s it (large-page mappings never move)
vm/hugetlb-madvise|reads HugePages_Free (exits below 20), maps a hugetlbfs file, MADV_DONTNEED and MADV_REMOVE (refused on large pages)
vm/hugepage-vmemmap|reads the hugetlb head and tail bits (KPF_HUGE) of /proc/kpageflags
vm/userfaultfd_hugetlb|UFFDIO_REGISTER over large pages is EINVAL (they never fault), and it releases them with MADV_DONTNEED
vm/userfaultfd_hugetlb_shared|maps a file on a hugetlbfs mount, minor faults, MADV_REMOVE
vm/write_to_hugetlbfs_hugetlbfs|-m 0 maps a file on a hugetlbfs mount
vm/charge_reserved_hugetlb.sh|reads the hugetlb cgroup'\''s charges on a hugetlbfs mount (large pages are charged to the misc controller)
vm/hugetlb_reparenting_test.sh|reads the hugetlb cgroup'\''s charges on a hugetlbfs mount (large pages are charged to the misc controller)
vm/protection_keys_32|no memory protection keys on i386 (X86_INTEL_MEMORY_PROTECTION_KEYS is x86-64 only): no hugetlb path runs, and that path writes nr_hugepages
vm/gup_test_hugetlb|gup_test -H needs /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)
memfd/memfd_test_hugetlbfs|calls memfd_create(MFD_HUGETLB) through syscall(2), which no preload sees, and run_hugetlbfs_test.sh reads HugePages_Free and raises nr_hugepages to 8 free; served, its first refused call is a MAP_PRIVATE mmap() of the memfd (EINVAL: large pages are never copied on write), then a second size once the size is set (EBUSY), mprotect() (EINVAL) and fallocate(PUNCH_HOLE) (EOPNOTSUPP)
mincore/check_huge_pages|large pages are mapped whole by mmap(): mincore() finds the page before first use, where hugetlbfs faults it in'

# -l: the results, in the order a run reports them (the numbers in their
# descriptions are the guest's page size's), without running anything.
if [ "${1:-}" = -l ]; then
	for args in MB "MB SHIFT"; do
		echo "map_hugetlb $args: exits 0, read back what it wrote"
		echo "map_hugetlb $args: took its pages from the pool"
		echo "map_hugetlb $args: the pool whole after"
	done | sed '1i no hugetlbfs pages (nr_hugepages 0, HugePages_Total 0), the pool whole'
	cat <<-'EOF'
	map_hugetlb MB OTHER: no pages of that size, mmap EINVAL and exit 1, as on hugetlbfs
	map_hugetlb MB OTHER: the pool never moved
	hugepage-shm: exits 0, read back what it wrote
	hugepage-shm: took its pages from the pool
	hugepage-shm: the pool whole after, the SysV segment removed
	write_to_hugetlbfs -s BYTES -p /nonexistent -m 1 -r -w -l as root: holds its pages
	write_to_hugetlbfs -m 1 -r -w -l: SIGINT exits 2; it held its pages to its exit
	write_to_hugetlbfs -m 1 -r -w -l: the pool whole after
	write_to_hugetlbfs -s BYTES -p /nonexistent -m 2 -w -l as root: holds its pages
	write_to_hugetlbfs -m 2 -w -l: SIGINT detaches and removes, exits 2; it held its pages
	write_to_hugetlbfs -m 2 -w -l: the pool whole after, the SysV segment removed
	write_to_hugetlbfs -m 1 -r -o -n -w (MAP_POPULATE, MAP_NORESERVE): exits 0
	write_to_hugetlbfs -m 1 -r -o -n -w: took its pages from the pool
	write_to_hugetlbfs -m 1 -r -o -n -w: the pool whole after
	map_hugetlb MB SHIFT as nobody: exits 0, read back what it wrote
	map_hugetlb as nobody: took its pages from the pool
	map_hugetlb as nobody: the pool whole after
	write_to_hugetlbfs -s BYTES -p /nonexistent -m 2 -w -l as nobody: holds its pages
	write_to_hugetlbfs -m 2 -w -l as nobody: SIGINT detaches and removes, exits 2; it held its pages
	write_to_hugetlbfs -m 2 -w -l as nobody: the pool whole after, the SysV segment removed
	EOF
	echo "$SKIPS" | cut -d'|' -f1
	echo "no hugetlbfs page used (HugePages_Total, HugePages_Free, HugePages_Surp 0), the pool whole"
	exit 0
fi

. "$D/tap.sh"

tmp=$(mktemp -d) || exit 1
chmod 755 "$tmp"		# lpwatch writes there as nobody too
holders=
saved_huge=$(cat $NR_HUGE)
saved_over=$(cat $NR_OVER)
saved_pool=$(cat $LPSYS/nr_pages)
cleanup() {
	for p in $holders; do kill -TERM "$p" 2>/dev/null; done
	wait
	echo "$saved_huge" >$NR_HUGE
	echo "$saved_over" >$NR_OVER
	[ "$(cat $LPSYS/nr_pages)" = "$saved_pool" ] || echo "$saved_pool" >$LPSYS/nr_pages
	rm -rf "$tmp"
}
trap cleanup EXIT

# field KEY FILE: KEY=VALUE of lpwatch's line in FILE.
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" "$2" | head -1; }
segs() { grep -vc '^ *key' /proc/sysvipc/shm; }

# launch TAG USER PROGRAM ARGS...: PROGRAM from $BIN under the preload
# and lpwatch, as USER (root, or nobody with an RLIMIT_MEMLOCK of
# $memlock_kb), output (stdout and stderr) in $tmp/TAG.out, lpwatch's
# line in $tmp/TAG.w; in the background when $bg is set (then $! is
# lpwatch). Free pages before in $before.
launch() {
	tag=$1 user=$2 prog=$3
	shift 3
	: >"$tmp/$tag.w" && chmod 666 "$tmp/$tag.w"
	before=$(nfree)
	# shellcheck disable=SC3045 # dash and bash have ulimit -l
	if [ "$user" = nobody ] && [ -n "$bg" ]; then
		(ulimit -l "$memlock_kb" && LD_PRELOAD=$LIB exec $NOBODY \
			"$LPWATCH" "$tmp/$tag.w" "$BIN/$prog" "$@") >"$tmp/$tag.out" 2>&1 &
	elif [ "$user" = nobody ]; then
		# shellcheck disable=SC3045
		(ulimit -l "$memlock_kb" && LD_PRELOAD=$LIB exec $NOBODY \
			"$LPWATCH" "$tmp/$tag.w" "$BIN/$prog" "$@") >"$tmp/$tag.out" 2>&1
	elif [ -n "$bg" ]; then
		LD_PRELOAD=$LIB "$LPWATCH" "$tmp/$tag.w" "$BIN/$prog" "$@" \
			>"$tmp/$tag.out" 2>&1 &
	else
		LD_PRELOAD=$LIB "$LPWATCH" "$tmp/$tag.w" "$BIN/$prog" "$@" \
			>"$tmp/$tag.out" 2>&1
	fi
}

# watch TAG USER PROGRAM ARGS...: launch, and wait: exit status in $rc.
watch() {
	bg=
	launch "$@"
	rc=$?
	diag "$tmp/$1.out"
	diag "$tmp/$1.w"
}

# took TAG PAGES: lpwatch saw the program's get calls succeed, and PAGES
# pages out of the pool and in its LargePages: when it released them.
took() {
	g=$(field gets "$tmp/$1.w")
	[ "${g:-0}" -ge 1 ] || { echo "# $1: no get call succeeded (gets=$g)"; return 1; }
	is "$1 lowest free count" "$(field min_free "$tmp/$1.w")" $((before - $2)) &&
		is "$1 LargePages: kB" "$(field max_kb "$tmp/$1.w")" $(($2 * ps_kb))
}

# output TAG REGEX...: the output matches each extended REGEX.
output() {
	tag=$1
	shift
	for re; do
		grep -qE "$re" "$tmp/$tag.out" || {
			echo "# $tag: no line matches '$re'"
			return 1
		}
	done
}

# held TAG USER ARGS...: write_to_hugetlbfs ARGS -l, which prints DONE
# and holds its memory until SIGINT. Checks that it holds $pages pages,
# then sends SIGINT (lpwatch passes it on; the program's handler detaches
# SysV memory and exits 2): exit status in $rc.
held() {
	tag=$1 user=$2
	shift 2
	bg=1
	launch "$tag" "$user" write_to_hugetlbfs "$@" -l
	wpid=$!
	holders="$holders $wpid"
	for _ in $(seq 600); do
		grep -q '^DONE$' "$tmp/$tag.out" && break
		kill -0 $wpid 2>/dev/null || break
		sleep 0.1
	done
	check "write_to_hugetlbfs $* -l as $user: holds $pages large pages (DONE, LargePages_Free $before -> $((before - pages)))" \
		is "DONE, free count while held" \
		"$(grep -c '^DONE$' "$tmp/$tag.out"), $(nfree)" "1, $((before - pages))"
	kill -INT $wpid
	wait $wpid
	# shellcheck disable=SC2034 # the caller's checks read it
	rc=$?
	holders=
	diag "$tmp/$tag.out"
	diag "$tmp/$tag.w"
}

echo "TAP version 13"
ps_kb=$(mi LargePageSize)
case $ps_kb in
2048) shift=21 other=22 ;;
4096) shift=22 other=21 ;;
*) shift=0 other=0 ;;
esac
ps_mb=$((ps_kb >> 10))
pages=4				# each run's size, in large pages
memlock_kb=$((pages * ps_kb))	# nobody's RLIMIT_MEMLOCK: exactly that
echo 0 >$NR_HUGE
echo 0 >$NR_OVER
free0=$(nfree)
segs0=$(segs)
echo "# pool: $free0 of $(total) pages of $ps_mb MiB free; nr_hugepages was $saved_huge"
check "no hugetlbfs pages (nr_hugepages 0, HugePages_Total 0), the pool whole, $ps_mb MiB pages" \
	is "nr_hugepages HugePages_Total free LargePageSize" \
	"$(cat $NR_HUGE) $(mi HugePages_Total) $free0 $ps_kb" "0 0 $(total) $((shift ? ps_kb : -1))"

# ----------------------------------------------------------- map_hugetlb
# map_hugetlb [MB [SHIFT]]: maps MB MiB with MAP_HUGETLB (and the size
# bits of 1 << SHIFT), writes and reads back every byte, unmaps; 0 when
# all read back, 1 when a call fails.
for args in "$((pages * ps_mb))" "$((pages * ps_mb)) $shift"; do
	tag=map$(echo "$args" | tr ' ' _)
	# shellcheck disable=SC2086 # args are two words
	watch "$tag" root map_hugetlb $args
	check "map_hugetlb $args: exits 0, read back what it wrote" \
		eval 'is rc "$rc" 0 && output "$tag" "^Mapping $((pages * ps_mb)) Mbytes" "^Returned address is 0x" "^First hex is 0$" "^First hex is 3020100$" && ! grep -q Mismatch "$tmp/$tag.out"'
	check "map_hugetlb $args: took its $pages pages from the pool" took "$tag" $pages
	check "map_hugetlb $args: the pool whole after" is free "$(settle "$free0")" "$free0"
done
# The other of 2 MiB and 4 MiB: hugetlbfs has no pages of that size on
# i386, and the preload leaves it to the kernel: EINVAL, as without it.
watch mapother root map_hugetlb "$((pages * ps_mb))" "$other"
check "map_hugetlb $((pages * ps_mb)) $other: no pages of that size, mmap EINVAL and exit 1, as on hugetlbfs" \
	eval 'is rc "$rc" 1 && output mapother "^mmap: Invalid argument"'
check "map_hugetlb $((pages * ps_mb)) $other: the pool never moved" \
	is "gets free" "$(field gets "$tmp/mapother.w") $(nfree)" "0 $free0"

# ---------------------------------------------------------- hugepage-shm
# hugepage-shm: a 256 MiB SysV segment (key 2) with SHM_HUGETLB, written
# and read back byte by byte, detached and removed. Its size is fixed:
# the pool grows for it when it is short, and is put back.
want=$((256 * 1024 / ps_kb))
grown=
if [ "$free0" -lt "$want" ]; then
	echo $(($(total) + want - free0)) >$LPSYS/nr_pages
	grown=1
	echo "# pool grown to $(total) pages for hugepage-shm's 256 MiB"
fi
shmfree=$(nfree)
watch shm root hugepage-shm
check "hugepage-shm: exits 0, read back what it wrote" \
	eval 'is rc "$rc" 0 && output shm "^shmid: 0x" "^shmaddr: 0x" "^Starting the writes:" "Starting the Check\.\.\.Done\.$" && ! grep -q mismatched "$tmp/shm.out"'
check "hugepage-shm: took its $want pages from the pool" took shm $want
check "hugepage-shm: the pool whole after, the SysV segment removed" \
	is "free segments" "$(settle "$shmfree") $(segs)" "$shmfree $segs0"
if [ -n "$grown" ]; then
	echo "$saved_pool" >$LPSYS/nr_pages
	echo "# pool back to $(total) pages"
fi

# ---------------------------------------------------- write_to_hugetlbfs
# write_to_hugetlbfs -s BYTES -p PATH -m METHOD [-r] [-w] [-o] [-n] [-l]:
# -m 1 maps with MAP_HUGETLB (-r private: a shared one without a file is
# EBADF on hugetlbfs too), -m 2 with shmget(SHM_HUGETLB); -w writes it,
# -o populates, -n is MAP_NORESERVE; -l prints DONE and holds until
# SIGINT. -p is the hugetlbfs file of -m 0, unused by 1 and 2.
bytes=$((pages * ps_kb * 1024))
held wmap root -s $bytes -p /nonexistent -m 1 -r -w
check "write_to_hugetlbfs -m 1 -r -w -l: SIGINT exits 2; it held $pages pages to its exit" \
	eval 'is rc "$rc" 2 && output wmap "^Allocating using MAP_HUGETLB\.$" "^Writing to memory\.$" "^Received 2\.$" && took wmap $pages'
check "write_to_hugetlbfs -m 1 -r -w -l: the pool whole after" \
	is free "$(settle "$free0")" "$free0"

held wshm root -s $bytes -p /nonexistent -m 2 -w
check "write_to_hugetlbfs -m 2 -w -l: SIGINT detaches and removes, exits 2; it held $pages pages" \
	eval 'is rc "$rc" 2 && output wshm "^Allocating using SHM\.$" "^shmaddr: 0x" "^Received 2\.$" "^Done deleting the memory$" && took wshm $pages'
check "write_to_hugetlbfs -m 2 -w -l: the pool whole after, the SysV segment removed" \
	is "free segments" "$(settle "$free0") $(segs)" "$free0 $segs0"

watch wpop root write_to_hugetlbfs -s $bytes -p /nonexistent -m 1 -r -o -n -w
check "write_to_hugetlbfs -m 1 -r -o -n -w (MAP_POPULATE, MAP_NORESERVE): exits 0" \
	eval 'is rc "$rc" 0 && output wpop "^Populating\.$" "^NO_RESERVE mapping\.$" "^Returned address is 0x"'
check "write_to_hugetlbfs -m 1 -r -o -n -w: took its $pages pages from the pool" took wpop $pages
check "write_to_hugetlbfs -m 1 -r -o -n -w: the pool whole after" \
	is free "$(settle "$free0")" "$free0"

# ------------------------------------------------------------ as nobody
# With RLIMIT_MEMLOCK at the run's size (large pages are locked memory).
watch nmap nobody map_hugetlb "$((pages * ps_mb))" "$shift"
check "map_hugetlb $((pages * ps_mb)) $shift as nobody (memlock $memlock_kb kB): exits 0, read back what it wrote" \
	eval 'is rc "$rc" 0 && output nmap "^Returned address is 0x" "^First hex is 0$" "^First hex is 3020100$" && ! grep -q Mismatch "$tmp/nmap.out"'
check "map_hugetlb as nobody: took its $pages pages from the pool" took nmap $pages
check "map_hugetlb as nobody: the pool whole after" is free "$(settle "$free0")" "$free0"

held nshm nobody -s $bytes -p /nonexistent -m 2 -w
check "write_to_hugetlbfs -m 2 -w -l as nobody: SIGINT detaches and removes, exits 2; it held $pages pages" \
	eval 'is rc "$rc" 2 && output nshm "^shmaddr: 0x" "^Done deleting the memory$" && took nshm $pages'
check "write_to_hugetlbfs -m 2 -w -l as nobody: the pool whole after, the SysV segment removed" \
	is "free segments" "$(settle "$free0") $(segs)" "$free0 $segs0"

# ------------------------------------------------------- declared skips
# Each needs something only hugetlbfs has; tests/skips allows each on
# the runs of the full suite, with the same reason.
while IFS="|" read -r name reason; do
	ok "$name # SKIP $reason"
done <<EOF
$SKIPS
EOF

check "no hugetlbfs page used (HugePages_Total, HugePages_Free, HugePages_Surp 0), the pool whole" \
	is "HugePages_Total Free Surp, free" \
	"$(mi HugePages_Total) $(mi HugePages_Free) $(mi HugePages_Surp), $(nfree)" "0 0 0, $free0"
tap_end
