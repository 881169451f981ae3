// SPDX-License-Identifier: GPL-2.0
/*
 * Leak churn: many thousands of calls, good and bad, and a hundred
 * shrink-to-zero/regrow cycles of the pool, then the kernel's own
 * counters must be back where they were. A leaked segment, file, inode
 * or page, or a lock left held, shows here even when every call returned
 * what SPEC.md says.
 *
 * Baselines are taken after a warm-up round of the same calls (so the
 * slab caches they use already have their slabs) and after dropping the
 * page cache, dentries and inodes both times. Tolerances, stated:
 *   file-nr (allocated files)    at most 64 more: the kernel reads its
 *                                 per-CPU counter without summing it
 *   inode-nr (inodes in use)     at most 8 more
 *   dentry-state (dentries)      at most 8 more
 *   Slab                         at most 96 KiB more (measured noise:
 *                                 12 kB); a leak of one 32-byte object
 *                                 per call is 625 KiB, of the segment
 *                                 one get_large_pages() allocates
 *                                 (2000 of them, 64+ bytes) 125+ KiB
 *   MemFree                      at most 4 MiB less; one leaked 4 KiB
 *                                 page per get is 8 MiB
 *   LargePages_Total and _Free   exactly as before
 */
#include <sys/resource.h>
#include "lp.h"

#define CHURN_CALLS 20000
#define CHURN_KEY 0x43480000
#define REGROW_CYCLES 100

struct counters {
	long files, inodes, dentries, slab_kb, memfree_kb, total, nfree;
};

static void settle(void)
{
	/* Let RCU-deferred frees (files, inodes) run before and after. */
	sleep(1);
	sync();
	write_text("/proc/sys/vm/drop_caches", "3\n");
	sleep(1);
}

static void sample(struct counters *c)
{
	settle();
	c->files = read_long("/proc/sys/fs/file-nr");
	c->inodes = read_long("/proc/sys/fs/inode-nr");
	c->dentries = read_long("/proc/sys/fs/dentry-state");
	c->slab_kb = meminfo("Slab:");
	c->memfree_kb = meminfo("MemFree:");
	c->total = lp_total();
	c->nfree = lp_nfree();
}

static int compare(const struct counters *b, const struct counters *a)
{
	int bad = 0;

	TH_LOG("before: files %ld inodes %ld dentries %ld Slab %ld kB MemFree %ld kB pool %ld/%ld",
	       b->files, b->inodes, b->dentries, b->slab_kb, b->memfree_kb,
	       b->nfree, b->total);
	TH_LOG("after:  files %ld inodes %ld dentries %ld Slab %ld kB MemFree %ld kB pool %ld/%ld",
	       a->files, a->inodes, a->dentries, a->slab_kb, a->memfree_kb,
	       a->nfree, a->total);
	bad |= a->files > b->files + 64;
	bad |= a->inodes > b->inodes + 8;
	bad |= a->dentries > b->dentries + 8;
	bad |= a->slab_kb > b->slab_kb + 96;
	bad |= a->memfree_kb < b->memfree_kb - 4096;
	bad |= a->total != b->total || a->nfree != b->nfree;
	return bad;
}

/*
 * lockdep's own word that it is still running: no report silenced it.
 * A kernel without lockdep (Debian's, in make test-deb) has nothing to
 * say; the test kernels always have it (scripts/configure-kernel).
 */
static int lockdep_alive(void)
{
	char line[128];
	int alive = -1;
	FILE *f = fopen("/proc/lockdep_stats", "r");

	if (!f && errno == ENOENT) {
		TH_LOG("no /proc/lockdep_stats: this kernel has no lockdep");
		return 1;
	}
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " debug_locks: %d", &alive) == 1)
			break;
	fclose(f);
	return alive;
}

/*
 * One round of n calls, each with the result SPEC.md gives it. A keeper
 * mapping of the key keeps its segment alive, so attaching it zeroes
 * nothing; one call in ten takes and zeroes a fresh page.
 */
static void churn(int n, unsigned long sz, unsigned long keeper)
{
	unsigned long normal = (unsigned long)mmap(NULL, sz, RW,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r;
	int i;

	ASSERT_NE(normal, (unsigned long)MAP_FAILED);
	for (i = 0; i < n && !harness_failed; i++) {
		switch (i % 10) {
		case 0:
			r = lpsys_get(0, sz, RW, i & 16 ? MAP_SHARED : MAP_PRIVATE);
			ASSERT_TRUE(LP_OK(r));
			((volatile char *)r)[i % sz] = 1;
			ASSERT_EQ(lpsys_free(r), 0);
			break;
		case 1:
			r = lpsys_share(CHURN_KEY, 0, sz, i & 32 ? PROT_READ : RW, 0);
			ASSERT_TRUE(LP_OK(r));
			ASSERT_EQ(((volatile char *)r)[0], 'K');
			ASSERT_EQ(lpsys_unshare(r), 0);
			break;
		case 2:
			EXPECT_ERRNO(lpsys_get(0, 0, RW, MAP_PRIVATE), EINVAL);
			break;
		case 3:
			EXPECT_ERRNO(lpsys_get(0, sz + 4096, RW, MAP_PRIVATE), EINVAL);
			break;
		case 4:	/* more than the pool: the roll-back paths */
			if (i & 16)
				EXPECT_ERRNO(lpsys_get(0, sz * (lp_total() + 1), RW,
						       MAP_PRIVATE), ENOMEM);
			else
				EXPECT_ERRNO(lpsys_share(CHURN_KEY + 2, 0,
							 sz * (lp_total() + 1), RW,
							 IPC_CREAT | 0600), ENOMEM);
			break;
		case 5:
			EXPECT_ERRNO(lpsys_free(normal), EINVAL);
			break;
		case 6:
			EXPECT_ERRNO(lpsys_share(CHURN_KEY + 1, 0, sz, RW, 0), ENOENT);
			break;
		case 7:
			EXPECT_ERRNO(lpsys_share(CHURN_KEY, 0, 2 * sz, RW, 0), EINVAL);
			break;
		case 8:
			EXPECT_ERRNO(lpsys_unshare(keeper + sz / 2), EINVAL);
			break;
		case 9:
			EXPECT_ERRNO(lpsys_share(CHURN_KEY, 0, sz, RW,
						 IPC_CREAT | IPC_EXCL | 0600), EEXIST);
			break;
		}
	}
	munmap((void *)normal, sz);
}

TEST(churn_20000_calls_leave_no_trace)
{
	unsigned long sz = lp_size();
	struct counters before, after;
	long keeper;

	keeper = lpsys_share(CHURN_KEY, 0, sz, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(keeper));
	*(char *)keeper = 'K';
	churn(2000, sz, keeper);		/* warm-up */
	ASSERT_EQ(lpsys_unshare(keeper), 0);
	sample(&before);

	keeper = lpsys_share(CHURN_KEY, 0, sz, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(keeper));
	*(char *)keeper = 'K';
	churn(CHURN_CALLS, sz, keeper);
	ASSERT_EQ(lpsys_unshare(keeper), 0);
	EXPECT_EQ(lp_key_absent(CHURN_KEY, sz), 1);
	EXPECT_EQ(lp_key_absent(CHURN_KEY + 2, sz), 1);
	sample(&after);
	EXPECT_EQ(compare(&before, &after), 0);
	EXPECT_EQ(lockdep_alive(), 1);
}

/* Give the pool back to 'total' pages, compacting memory if the buddy
 * allocator needs it; the number of pages it has afterwards. */
static long regrow(long total)
{
	int i;

	for (i = 0; i < 5 && lp_total() < total; i++) {
		if (i)
			write_text("/proc/sys/vm/compact_memory", "1\n");
		sysctl_resize(total - lp_total());
	}
	return lp_total();
}

TEST(churn_100_shrink_to_zero_and_regrow)
{
	struct counters before, after;
	unsigned long sz = lp_size();
	long total = lp_total(), r;
	int i;

	ASSERT_GE(total, 2);
	/* Warm-up: the first shrink and regrow settle the buddy lists. */
	ASSERT_EQ(sysctl_resize(-total), 0);
	ASSERT_EQ(regrow(total), total);
	sample(&before);
	for (i = 0; i < REGROW_CYCLES && !harness_failed; i++) {
		ASSERT_EQ(sysctl_resize(-total), 0);
		ASSERT_EQ(lp_total(), 0);
		ASSERT_EQ(lp_nfree(), 0);
		EXPECT_ERRNO(lpsys_get(0, sz, RW, MAP_PRIVATE), ENOMEM);
		ASSERT_EQ(regrow(total), total);
		ASSERT_EQ(lp_nfree(), total);
		/* Every regrown page is usable and handed out zeroed. */
		if (i % 25 == 0) {
			r = lpsys_get(0, sz * total, RW, MAP_PRIVATE);
			ASSERT_TRUE(LP_OK(r));
			EXPECT_EQ(lp_zeroed((char *)r, sz * total), 1);
			ASSERT_EQ(lpsys_free(r), 0);
		}
	}
	sample(&after);
	EXPECT_EQ(compare(&before, &after), 0);
	EXPECT_EQ(lockdep_alive(), 1);
}

__attribute__((constructor)) static void churn_timeout(void)
{
	harness_timeout = 600;
}
