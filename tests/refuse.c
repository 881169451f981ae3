// SPDX-License-Identifier: GPL-2.0
/*
 * The normal VM calls leave large-page mappings alone: munmap, mprotect,
 * mremap, madvise and mmap(MAP_FIXED) over any part of one are refused
 * and the mapping (and its neighbours) stay as they were.
 */
#include <sys/prctl.h>
#include "lp.h"

#define NB (4 * 4096UL)		/* size of a normal neighbour mapping */

static long map_filled(unsigned long len, int flags, uint32_t seed)
{
	long r = lpsys_get(0, len, RW, flags);

	if (LP_OK(r))
		lp_fill(LP_PTR(r), len, seed);
	return r;
}

struct hood {
	long r;			/* the large-page mapping */
	unsigned long len;
	char *below, *above;	/* normal mappings right next to it */
};

/* A filled large-page mapping with normal filled mappings on each side. */
static void map_hood(struct hood *h, unsigned long len, uint32_t seed)
{
	unsigned long lp = lp_size(), a;

	/* One large page of room below the mapping, two above. */
	a = lp_unmapped_range(len + 3 * lp, lp);
	ASSERT_TRUE(a != 0);
	a += lp;

	h->len = len;
	h->below = mmap((void *)(a - NB), NB, RW,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	h->above = mmap((void *)(a + len), NB, RW,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_TRUE(h->below == (char *)(a - NB));
	ASSERT_TRUE(h->above == (char *)(a + len));
	h->r = lpsys_get(a, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(h->r));
	ASSERT_EQ((unsigned long)h->r, a);
	lp_fill(LP_PTR(h->r), len, seed);
	lp_fill(h->below, NB, ~seed);
	lp_fill(h->above, NB, seed + 1);
}

static int hood_intact(struct hood *h, uint32_t seed)
{
	return lp_check(h->below, NB, ~seed) &&
	       lp_check(h->above, NB, seed + 1) && lp_intact(h->r, h->len, seed);
}

static void unmap_hood(struct hood *h)
{
	ASSERT_EQ(lpsys_free(h->r), 0);
	munmap(h->below, NB);
	munmap(h->above, NB);
}

/*
 * Fields 26-28 and 45-51 of /proc/self/stat: what PR_SET_MM_MAP must be
 * given back unchanged besides the heap.
 */
static int self_mm_map(struct prctl_mm_map *m)
{
	static char buf[2048];
	unsigned long long v[52] = { 0 };
	char *p;
	int i;

	if (read_text("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return -1;
	/* Field 3 (the state) starts after the command's parenthesis. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p = strtok(p + 1, " ");
	for (i = 3; i <= 51 && p; i++, p = strtok(NULL, " "))
		v[i] = strtoull(p, NULL, 10);
	if (i <= 51)
		return -1;
	memset(m, 0, sizeof(*m));
	m->start_code = v[26];
	m->end_code = v[27];
	m->start_stack = v[28];
	m->start_data = v[45];
	m->end_data = v[46];
	m->start_brk = v[47];
	m->brk = (unsigned long)sbrk(0);
	m->arg_start = v[48];
	m->arg_end = v[49];
	m->env_start = v[50];
	m->env_end = v[51];
	m->exe_fd = -1;
	return 0;
}

/* How many /proc/self/maps lines are large-page mappings. */
static int named_largepage_lines(void)
{
	return file_lines("/proc/self/maps", "[largepage]");
}

/*
 * brk() never unmaps large pages. PR_SET_MM_MAP (no capability needed
 * when the exe link is left alone) can put the heap over a large-page
 * mapping; shrinking the heap below it must fail and leave it mapped.
 */
TEST(refuse_brk_shrinking_over_mapping)
{
	unsigned long len = lp_size();
	struct prctl_mm_map m;
	long nfree = lp_nfree(), r, ret;
	unsigned long top;

	r = map_filled(len, MAP_PRIVATE, 4041);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(self_mm_map(&m), 0);
	top = (unsigned long)r + len + 4096;
	m.start_brk = (unsigned long)r;
	m.brk = top;
	ASSERT_EQ(prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof(m), 0), 0);
	/* brk() returns the new break, or the old one when it fails. */
	ret = syscall(SYS_brk, (unsigned long)r);
	TH_LOG("brk(%#lx) = %#lx (heap top %#lx)", (unsigned long)r,
	       (unsigned long)ret, top);
	EXPECT_EQ((unsigned long)ret, top);
	EXPECT_EQ(named_largepage_lines(), 1);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(named_largepage_lines(), 1);
	EXPECT_TRUE(lp_intact(r, len, 4041));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(refuse_munmap_whole_mapping)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r = map_filled(len, MAP_PRIVATE, 6000);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(munmap(LP_PTR(r), len), EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6000));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(refuse_munmap_part_of_mapping)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long r = map_filled(len, MAP_SHARED, 6001);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(munmap(LP_PTR(r) + 4096, 4096), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(r), lp), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(r) + lp, lp), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(r) + len - 4096, 4096), EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6001));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_munmap_from_normal_mapping_into_it)
{
	struct hood h;

	map_hood(&h, 2 * lp_size(), 6002);
	EXPECT_ERRNO(munmap(h.below, NB + 4096), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(h.r) + h.len - 4096, 4096 + NB), EINVAL);
	EXPECT_TRUE(hood_intact(&h, 6002));
	unmap_hood(&h);
}

TEST(refuse_munmap_range_containing_whole_mapping)
{
	struct hood h;

	map_hood(&h, lp_size(), 6003);
	EXPECT_ERRNO(munmap(h.below, NB + h.len + NB), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(h.r), h.len + NB), EINVAL);
	EXPECT_TRUE(hood_intact(&h, 6003));
	unmap_hood(&h);
}

TEST(refuse_munmap_keyed_segment)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r;

	r = lpsys_share(6000, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 6004);
	EXPECT_ERRNO(munmap(LP_PTR(r), len), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(r) + lp_size(), 4096), EINVAL);
	EXPECT_ERRNO(mprotect(LP_PTR(r), len, PROT_READ), EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6004));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(refuse_mprotect_whole_mapping)
{
	unsigned long len = 2 * lp_size();
	long r = map_filled(len, MAP_PRIVATE, 6005);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(mprotect(LP_PTR(r), len, PROT_READ), EINVAL);
	EXPECT_ERRNO(mprotect(LP_PTR(r), len, PROT_NONE), EINVAL);
	EXPECT_ERRNO(mprotect(LP_PTR(r), len, RW | PROT_EXEC), EINVAL);
	/* Even a no-op change over it is refused. */
	EXPECT_ERRNO(mprotect(LP_PTR(r), len, RW), EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6005));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_mprotect_part_of_mapping)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long r = map_filled(len, MAP_SHARED, 6006);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(mprotect(LP_PTR(r) + 4096, 4096, PROT_READ), EINVAL);
	EXPECT_ERRNO(mprotect(LP_PTR(r) + lp, lp, PROT_NONE), EINVAL);
	EXPECT_ERRNO(mprotect(LP_PTR(r), lp, PROT_READ), EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6006));
	EXPECT_TRUE(!touch_faults(LP_PTR(r) + lp + 4096, 1));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_mprotect_from_normal_mapping_into_it)
{
	struct hood h;

	map_hood(&h, lp_size(), 6007);
	EXPECT_ERRNO(mprotect(h.below, NB + 4096, PROT_READ), EINVAL);
	EXPECT_ERRNO(mprotect(h.below, NB + h.len + NB, PROT_READ), EINVAL);
	/* The neighbours may or may not have changed; the mapping did not. */
	EXPECT_TRUE(lp_intact(h.r, h.len, 6007));
	mprotect(h.below, NB, RW);
	mprotect(h.above, NB, RW);
	unmap_hood(&h);
}

TEST(refuse_mremap_shrink)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long r = map_filled(len, MAP_PRIVATE, 6008);

	ASSERT_TRUE(LP_OK(r));
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, lp, 0) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, 4096, MREMAP_MAYMOVE) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6008));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_mremap_grow)
{
	unsigned long lp = lp_size(), len = lp;
	long r = map_filled(len, MAP_SHARED, 6009);

	ASSERT_TRUE(LP_OK(r));
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, 2 * lp, 0) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, 2 * lp, MREMAP_MAYMOVE) ==
		    MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, len + 4096, MREMAP_MAYMOVE) ==
		    MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6009));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_mremap_move)
{
	unsigned long lp = lp_size(), len = 2 * lp, to;
	long r = map_filled(len, MAP_PRIVATE, 6010);

	ASSERT_TRUE(LP_OK(r));
	to = lp_unmapped_range(len, lp);
	ASSERT_TRUE(to != 0);

	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   (void *)to) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r) + lp, lp, lp,
			   MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to) ==
		    MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_TRUE(mremap(LP_PTR(r), len, len,
			   MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL) ==
		    MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6010));
	/* Nothing was left at the target either. */
	EXPECT_TRUE(touch_faults((char *)to, 0));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_mremap_normal_mapping_onto_it)
{
	unsigned long len = 2 * lp_size();
	long r = map_filled(len, MAP_SHARED, 6011);
	char *n;

	ASSERT_TRUE(LP_OK(r));
	n = mmap(NULL, 4096, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(n != MAP_FAILED);
	n[0] = 0x11;
	errno = 0;
	EXPECT_TRUE(mremap(n, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
			   LP_PTR(r) + 8192) == MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(lp_intact(r, len, 6011));
	EXPECT_EQ(n[0], 0x11);
	munmap(n, 4096);
	ASSERT_EQ(lpsys_free(r), 0);
}

static void madvise_refused(int advice, int flags, uint32_t seed)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long nfree = lp_nfree(), r = map_filled(len, flags, seed);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(madvise(LP_PTR(r), len, advice), EINVAL);
	EXPECT_ERRNO(madvise(LP_PTR(r) + lp, 4096, advice), EINVAL);
	EXPECT_TRUE(lp_intact(r, len, seed));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
}

/*
 * A test per row: madvise_refused() for each of its advice (one or two)
 * over a mapping of the row's kind, seeded seed, then over one of the
 * other kind, seed + 100; a second advice goes on from seed + 200.
 */
struct madvise_row {
	const char *name;
	int advice[2];		/* the second 0: none */
	int flags;		/* MAP_PRIVATE or MAP_SHARED first */
	uint32_t seed;
};

static void madvise_row_refused(const void *arg)
{
	const struct madvise_row *row = arg;
	int other = row->flags == MAP_PRIVATE ? MAP_SHARED : MAP_PRIVATE;
	uint32_t seed = row->seed;
	int i;

	for (i = 0; i < 2 && row->advice[i]; i++, seed += 200) {
		madvise_refused(row->advice[i], row->flags, seed);
		madvise_refused(row->advice[i], other, seed + 100);
	}
}

/* Advice that would drop the pages or punch them out. */
static const struct madvise_row discard_rows[] = {
	{ "refuse_madvise_dontneed", { MADV_DONTNEED }, MAP_PRIVATE, 6012 },
	{ "refuse_madvise_free", { MADV_FREE }, MAP_PRIVATE, 6013 },
	{ "refuse_madvise_remove", { MADV_REMOVE }, MAP_SHARED, 6014 },
};

TEST_TABLE(madvise_discard, discard_rows, madvise_row_refused)

TEST(refuse_madvise_dofork_private_stays_uninherited)
{
	unsigned long len = lp_size();
	long r = map_filled(len, MAP_PRIVATE, 6015);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(madvise(LP_PTR(r), len, MADV_DOFORK), EINVAL);
	EXPECT_TRUE(touch_faults(LP_PTR(r), 0));
	EXPECT_TRUE(lp_intact(r, len, 6015));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_madvise_dontfork_shared_stays_inherited)
{
	unsigned long len = lp_size();
	long r = map_filled(len, MAP_SHARED, 6016);
	int st;
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(madvise(LP_PTR(r), len, MADV_DONTFORK), EINVAL);
	pid = fork();
	if (pid == 0)
		_exit(lp_check(LP_PTR(r), len, 6016) ? 0 : 2);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_intact(r, len, 6016));
	ASSERT_EQ(lpsys_free(r), 0);
}

/*
 * Reclaim hints would page out what can never be paged out; KSM would
 * merge, THP would collapse or split: never large pages.
 */
static const struct madvise_row hint_rows[] = {
	{ "refuse_madvise_pageout_and_cold", { MADV_COLD, MADV_PAGEOUT },
	  MAP_PRIVATE, 6017 },
	{ "refuse_madvise_mergeable", { MADV_MERGEABLE }, MAP_PRIVATE, 6030 },
	{ "refuse_madvise_hugepage", { MADV_HUGEPAGE }, MAP_PRIVATE, 6031 },
	{ "refuse_madvise_collapse", { MADV_COLLAPSE }, MAP_PRIVATE, 6032 },
	{ "refuse_madvise_wipeonfork", { MADV_WIPEONFORK }, MAP_PRIVATE, 6033 },
};

TEST_TABLE(madvise_hint, hint_rows, madvise_row_refused)

/*
 * The memory-error injectors (root only) would poison or migrate a pool
 * page through its mapping: a pool page leaves the pool on its own path.
 */
static const struct madvise_row injector_rows[] = {
	{ "refuse_madvise_hwpoison", { MADV_HWPOISON }, MAP_PRIVATE, 6034 },
	{ "refuse_madvise_soft_offline", { MADV_SOFT_OFFLINE }, MAP_PRIVATE,
	  6035 },
};

TEST_TABLE(madvise_injector, injector_rows, madvise_row_refused)

/* MADV_DONTDUMP and MADV_DODUMP are on SPEC's allowed list: both work. */
TEST(madvise_dontdump_and_dodump_work)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r = map_filled(len, MAP_SHARED, 6036);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(madvise(LP_PTR(r), len, MADV_DONTDUMP), 0);
	EXPECT_EQ(madvise(LP_PTR(r), len, MADV_DODUMP), 0);
	EXPECT_EQ(madvise(LP_PTR(r) + 4096, 4096, MADV_DODUMP), 0);
	EXPECT_TRUE(lp_intact(r, len, 6036));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
}

/* mmap(MAP_FIXED) over it: EINVAL (SPEC), and nothing replaced. */
static int mmap_refused(void *addr, size_t len, int flags, int fd)
{
	void *p;

	errno = 0;
	p = mmap(addr, len, RW, flags | MAP_FIXED, fd, 0);
	if (p != MAP_FAILED) {
		TH_LOG("mmap(MAP_FIXED) at %p replaced the mapping", addr);
		return 0;
	}
	if (errno != EINVAL)
		TH_LOG("mmap(MAP_FIXED) at %p: %s", addr, strerror(errno));
	return errno == EINVAL;
}

TEST(refuse_mmap_fixed_over_mapping)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long nfree = lp_nfree(), r = map_filled(len, MAP_SHARED, 6018);
	int zero;

	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(mmap_refused(LP_PTR(r), len, MAP_PRIVATE | MAP_ANONYMOUS, -1));
	EXPECT_TRUE(mmap_refused(LP_PTR(r) + 4096, 4096,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1));
	EXPECT_TRUE(mmap_refused(LP_PTR(r) + lp, lp,
				 MAP_SHARED | MAP_ANONYMOUS, -1));
	zero = open("/dev/zero", O_RDWR);
	ASSERT_GE(zero, 0);
	EXPECT_TRUE(mmap_refused(LP_PTR(r), 8192, MAP_SHARED, zero));
	close(zero);
	EXPECT_TRUE(lp_intact(r, len, 6018));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(refuse_mmap_fixed_from_neighbour_over_mapping)
{
	struct hood h;

	map_hood(&h, lp_size(), 6019);
	EXPECT_TRUE(mmap_refused(h.below, NB + 4096,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1));
	EXPECT_TRUE(mmap_refused(h.below, NB + h.len + NB,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1));
	EXPECT_TRUE(lp_intact(h.r, h.len, 6019));
	unmap_hood(&h);
}

TEST(refuse_mmap_fixed_noreplace_over_mapping_eexist)
{
	unsigned long len = lp_size();
	long r = map_filled(len, MAP_PRIVATE, 6020);

	ASSERT_TRUE(LP_OK(r));
	errno = 0;
	EXPECT_TRUE(mmap(LP_PTR(r) + 4096, 4096, RW,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0) == MAP_FAILED);
	EXPECT_EQ(errno, EEXIST);
	EXPECT_TRUE(lp_intact(r, len, 6020));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_mmap_hint_inside_mapping_goes_elsewhere)
{
	unsigned long len = 2 * lp_size(), s, e, q;
	long r = map_filled(len, MAP_SHARED, 6021);
	char *p;

	ASSERT_TRUE(LP_OK(r));
	s = r;
	e = r + len;
	p = mmap(LP_PTR(r) + 4096, 8192, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(p != MAP_FAILED);
	q = (unsigned long)p;
	EXPECT_TRUE(q + 8192 <= s || q >= e);
	memset(p, 0x33, 8192);
	EXPECT_TRUE(lp_intact(r, len, 6021));
	munmap(p, 8192);
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(refuse_normal_mmaps_work_around_mappings)
{
	unsigned long len = lp_size(), q;
	long r[4];
	char *p[64];
	int i, j;

	for (i = 0; i < 4; i++) {
		r[i] = map_filled(len, i & 1 ? MAP_SHARED : MAP_PRIVATE,
				  6022 + i);
		ASSERT_TRUE(LP_OK(r[i]));
	}
	for (j = 0; j < 64; j++) {
		p[j] = mmap(NULL, 64 * 1024, RW, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		ASSERT_TRUE(p[j] != MAP_FAILED);
		q = (unsigned long)p[j];
		for (i = 0; i < 4; i++)
			EXPECT_TRUE(q + 64 * 1024 <= (unsigned long)r[i] ||
				    q >= (unsigned long)r[i] + len);
		memset(p[j], j, 64 * 1024);
	}
	for (i = 0; i < 4; i++)
		EXPECT_TRUE(lp_intact(r[i], len, 6022 + i));
	for (j = 0; j < 64; j++) {
		EXPECT_EQ(p[j][64 * 1024 - 1], j);
		munmap(p[j], 64 * 1024);
	}
	for (i = 0; i < 4; i++)
		ASSERT_EQ(lpsys_free(r[i]), 0);
}
