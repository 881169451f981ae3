// SPDX-License-Identifier: GPL-2.0
/*
 * The mechanism itself, as SPEC.md fixes it: the system call numbers
 * (1000-1003, called by number), the large page size of each flavour
 * (2 MiB with PAE, 4 MiB without), and that a mapping is made of large
 * entries: mapping and touching 32 large pages adds no page tables
 * (VmPTE), where the same amount of normal memory adds one 4 KiB page
 * table per large page's worth, measured the same way in the same run.
 * The kernel's page-table dump shows each mapping as large entries.
 */
#include <sys/utsname.h>
#include "lp.h"

#define NPAGES 32

TEST(syscall_numbers_are_1000_to_1003)
{
	unsigned long lp = lp_size();
	long r;

	/* The uapi header agrees with SPEC.md... */
	EXPECT_EQ(__NR_get_large_pages, 1000);
	EXPECT_EQ(__NR_free_large_pages, 1001);
	EXPECT_EQ(__NR_share_large_pages, 1002);
	EXPECT_EQ(__NR_unshare_large_pages, 1003);
	/* ...and so does the kernel, called by number. */
	r = syscall(1000, 0UL, lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), lp_total() - 1);
	EXPECT_EQ(syscall(1001, (unsigned long)r), 0);
	r = syscall(1002, 9401, 0UL, lp, RW, IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_key_absent(9402, lp));
	EXPECT_EQ(syscall(1003, (unsigned long)r), 0);
	EXPECT_TRUE(lp_key_absent(9401, lp));
	/* Neighbours are not ours. */
	EXPECT_ERRNO(syscall(999, 0UL, 0UL, 0UL, 0UL), ENOSYS);
	EXPECT_ERRNO(syscall(1004, 0UL, 0UL, 0UL, 0UL), ENOSYS);
}

TEST(large_page_size_is_the_flavours)
{
	const char *f = lp_flavour();
	long kb = meminfo("LargePageSize:");

	TH_LOG("flavour '%s', LargePageSize %ld kB", f, kb);
	ASSERT_TRUE(*f != 0);
	if (!strcmp(f, "pae") || !strncmp(f, "deb-686-pae", 11))
		EXPECT_EQ(kb, 2048);
	else if (!strcmp(f, "nopae") || !strcmp(f, "deb-686"))
		EXPECT_EQ(kb, 4096);
	else
		HARNESS_FAIL(0);
	EXPECT_EQ(lp_size(), (unsigned long)kb * 1024);
}

/*
 * This process's page tables, in kB: VmPTE of /proc/self/status, exact
 * for one mm (meminfo's PageTables lags by the per-CPU counter batches).
 */
static long page_tables(void)
{
	return status_kb(0, "VmPTE:");
}

/* Write a byte into every 4 KiB page of [p, p + len). */
static void touch(char *p, unsigned long len)
{
	unsigned long off;

	for (off = 0; off < len; off += 4096)
		p[off] = 1;
}

/*
 * In a child, so that nothing else of this process changes its page
 * tables meanwhile; it reports the two growths in kB through a pipe.
 */
static void measure(void *arg)
{
	int *fds = arg;
	unsigned long lp = lp_size(), len = NPAGES * lp;
	long before, large, normal, r;
	char *anon;

	before = page_tables();
	r = lpsys_get(0, len, RW, MAP_PRIVATE);
	if (!LP_OK(r))
		_exit(1);
	touch(LP_PTR(r), len);
	large = page_tables() - before;
	if (lpsys_free(r))
		_exit(2);

	anon = mmap(NULL, len, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		_exit(3);
	madvise(anon, len, MADV_NOHUGEPAGE);
	before = page_tables();
	touch(anon, len);
	normal = page_tables() - before;
	munmap(anon, len);
	if (write(fds[1], &large, sizeof(large)) != sizeof(large) ||
	    write(fds[1], &normal, sizeof(normal)) != sizeof(normal))
		_exit(4);
	_exit(0);
}

TEST(large_mappings_add_no_page_tables)
{
	long large = -1, normal = -1;
	int fds[2], st;

	ASSERT_GE(lp_nfree(), NPAGES);
	ASSERT_EQ(pipe(fds), 0);
	st = run_child(measure, fds);
	ASSERT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(read(fds[0], &large, sizeof(large)), sizeof(large));
	ASSERT_EQ(read(fds[0], &normal, sizeof(normal)), sizeof(normal));
	close(fds[0]);
	close(fds[1]);
	TH_LOG("%d large pages touched: PageTables +%ld kB; the same in normal pages: +%ld kB",
	       NPAGES, large, normal);
	/* 4 KiB entries for the same range: one page table a large page. */
	EXPECT_GE(normal, NPAGES * 4);
	/* Large entries: no page table at all (PAE's pmds are preallocated). */
	EXPECT_EQ(large, 0);
}

#define GIB (1UL << 30)

/*
 * A child maps one large page alone in its second GiB, frees it and
 * maps it again, and reports VmPTE after each step through a pipe. With
 * PAE the GiB's PMD page came with the mm; freeing the GiB's only
 * mapping must not free it, or the next attach allocates it again and
 * reloads CR3 for it (pud_populate()). Without PAE there is no PMD page.
 */
static void remap_alone(void *arg)
{
	unsigned long lp = lp_size();
	long pt[3], r;
	int *fds = arg;

	if (lp_maps_find(0, GIB, 2 * GIB, NULL, 0))
		_exit(5);
	pt[0] = page_tables();
	r = lpsys_get(GIB, lp, RW, MAP_PRIVATE);
	if (!LP_OK(r) || r != (long)GIB)
		_exit(1);
	if (lpsys_free(r))
		_exit(2);
	pt[1] = page_tables();
	r = lpsys_get(GIB, lp, RW, MAP_PRIVATE);
	if (!LP_OK(r) || r != (long)GIB)
		_exit(3);
	pt[2] = page_tables();
	lpsys_free(r);
	if (write(fds[1], pt, sizeof(pt)) != sizeof(pt))
		_exit(4);
	_exit(0);
}

TEST(freeing_a_gibs_only_mapping_keeps_its_page_table)
{
	long pt[3] = { -1, -1, -1 };
	int fds[2], st;

	ASSERT_GE(lp_nfree(), 1);
	ASSERT_EQ(pipe(fds), 0);
	st = run_child(remap_alone, fds);
	/* 5: the test's own process had a mapping in that GiB. */
	ASSERT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(read(fds[0], pt, sizeof(pt)), sizeof(pt));
	close(fds[0]);
	close(fds[1]);
	TH_LOG("VmPTE %ld kB, after the free %ld kB, after the second get %ld kB",
	       pt[0], pt[1], pt[2]);
	EXPECT_GT(pt[0], 0);
	EXPECT_EQ(pt[1], pt[0]);
	EXPECT_EQ(pt[2], pt[0]);
}

/*
 * mremap() of a GiB-aligned GiB onto another whole GiB. With PAE the
 * destination's PMD page is kept (the test above), so mremap() must not
 * move the source's over it (move_normal_pud(), whose WARN_ON_ONCE()
 * any user could reach, a panic under panic_on_warn), but move the
 * entries below it. A child maps its second GiB (touched at both ends:
 * page tables to move) and moves it onto its third, where its stack
 * and vDSO are: the system call and the checks after it are one asm
 * block that touches no stack, and exits 0 when the GiB moved with its
 * two words, 1 when a word is wrong, 2 when the call failed.
 */
#define MOVE_WORD 0x4c504d56

static void move_a_gib(void *arg)
{
	unsigned int *p;

	(void)arg;
	if (lp_maps_find(0, GIB, 2 * GIB, NULL, 0))
		_exit(5);
	p = mmap((void *)GIB, GIB, RW, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)GIB)
		_exit(6);
	p[0] = MOVE_WORD;
	p[GIB / sizeof(*p) - 1] = MOVE_WORD + 1;
	asm volatile("int $0x80\n\t"
		     "movl $2, %%ebx\n\t"
		     "cmpl $0x80000000, %%eax\n\t"
		     "jne 1f\n\t"
		     "movl $1, %%ebx\n\t"
		     "cmpl %[w0], 0x80000000\n\t"
		     "jne 1f\n\t"
		     "cmpl %[w1], 0xbffffffc\n\t"
		     "jne 1f\n\t"
		     "xorl %%ebx, %%ebx\n"
		     "1:\tmovl %[exit], %%eax\n\t"
		     "int $0x80\n\t"
		     "ud2"
		     : : "a" (__NR_mremap), "b" (GIB), "c" (GIB), "d" (GIB),
		       "S" (MREMAP_MAYMOVE | MREMAP_FIXED), "D" (2 * GIB),
		       [w0] "i" (MOVE_WORD), [w1] "i" (MOVE_WORD + 1),
		       [exit] "i" (__NR_exit_group)
		     : "memory");
	__builtin_unreachable();
}

TEST(mremap_of_a_whole_gib_onto_another_does_not_warn)
{
	long t0 = read_long("/proc/sys/kernel/tainted"), t1;
	int st;

	ASSERT_GE(t0, 0);
	st = run_child(move_a_gib, NULL);
	t1 = read_long("/proc/sys/kernel/tainted");
	/* 5: the test's own process had a mapping in that GiB. */
	if (!CHILD_EXITED(st, 0))
		TH_LOG("the child's status: %#x", st);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	TH_LOG("tainted: %ld before, %ld after", t0, t1);
	if (t0 & 512)
		TH_LOG("the kernel was tainted W before the move: the check below sees nothing");
	EXPECT_EQ(t1 & 512, t0 & 512);
}

/*
 * The kernel's own page-table dump (CONFIG_PTDUMP_DEBUGFS): every line
 * of current_kernel that meets [addr, addr + len) must be a present
 * user entry at pmd level with PSE set (a 2 MiB PMD with PAE, a 4 MiB
 * PDE without: the folded pmd is the pgd entry), writable as asked, and
 * the lines must cover the whole range (@rw: 1 writable, 0 read-only).
 * Entries are made when the range is mapped: it is checked before
 * anything touches it. With @rw PT_GONE, no user entry may meet the
 * range any more. Returns the number of defects, each logged.
 */
#define PTDUMP DEBUGFS "/page_tables/current_kernel"
#define PT_GONE (-1)

static int ptdump_check(unsigned long addr, unsigned long len, int rw)
{
	unsigned long start, end, covered = addr;
	char line[256];
	int bad = 0;
	FILE *f = fopen(PTDUMP, "r");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "0x%lx-0x%lx", &start, &end) != 2)
			continue;
		if (!end)	/* the last line ends at the top, 2^32 */
			end = ~0UL;
		if (end <= addr || start >= addr + len)
			continue;
		line[strcspn(line, "\n")] = 0;
		if (rw == PT_GONE) {
			if (strstr(line, " USR ")) {
				TH_LOG("still mapped after the free: '%s'", line);
				bad++;
			}
			continue;
		}
		if (start > covered) {
			TH_LOG("0x%lx-0x%lx: not in the dump", covered, start);
			bad++;
		}
		if (end > covered)
			covered = end;
		if (!strstr(line, " USR ") || !strstr(line, rw ? " RW " : " ro ") ||
		    !strstr(line, " PSE ") ||
		    strcmp(line + strlen(line) - 4, " pmd")) {
			TH_LOG("not a %s large entry: '%s'", rw ? "writable" : "read-only",
			       line);
			bad++;
		}
	}
	fclose(f);
	if (rw != PT_GONE && covered < addr + len) {
		TH_LOG("0x%lx-0x%lx: not in the dump", covered, addr + len);
		bad++;
	}
	return bad;
}

static unsigned long child_priv;

static void ptdump_child(void *arg)
{
	unsigned long lp = lp_size();

	_exit(ptdump_check((unsigned long)arg, 2 * lp, 1) ||
	      ptdump_check(child_priv, 3 * lp, PT_GONE));
}

TEST(large_entries_in_the_kernels_page_table_dump)
{
	unsigned long lp = lp_size();
	long priv, ro, shared;

	if (lp_debugfs() || access(PTDUMP, R_OK))
		SKIP("no %s: the kernel lacks CONFIG_PTDUMP_DEBUGFS", PTDUMP);
	ASSERT_GE(lp_nfree(), 6);
	priv = lpsys_get(0, 3 * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(priv));
	child_priv = priv;
	ro = lpsys_get(0, lp, PROT_READ, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(ro));
	shared = lpsys_share(9411, 0, 2 * lp, RW, IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(shared));

	EXPECT_EQ(ptdump_check(priv, 3 * lp, 1), 0);
	EXPECT_EQ(ptdump_check(ro, lp, 0), 0);
	EXPECT_EQ(ptdump_check(shared, 2 * lp, 1), 0);
	/*
	 * A child gets the shared mapping's entries at fork, before it
	 * touches anything, and none of the private ones (not inherited).
	 */
	ASSERT_TRUE(CHILD_EXITED(run_child(ptdump_child, (void *)shared), 0));
	/* Touching changes nothing: no fault splits or refills an entry. */
	touch(LP_PTR(priv), 3 * lp);
	touch(LP_PTR(shared), 2 * lp);
	EXPECT_EQ(ptdump_check(priv, 3 * lp, 1), 0);
	EXPECT_EQ(ptdump_check(shared, 2 * lp, 1), 0);

	EXPECT_EQ(lpsys_free(priv), 0);
	EXPECT_EQ(lpsys_free(ro), 0);
	EXPECT_EQ(lpsys_unshare(shared), 0);
	EXPECT_EQ(ptdump_check(priv, 3 * lp, PT_GONE), 0);
	EXPECT_EQ(ptdump_check(ro, lp, PT_GONE), 0);
	EXPECT_EQ(ptdump_check(shared, 2 * lp, PT_GONE), 0);
	EXPECT_TRUE(lp_key_absent(9411, lp));
}
