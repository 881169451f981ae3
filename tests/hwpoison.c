// SPDX-License-Identifier: GPL-2.0
/*
 * Memory failure on the pool: a poisoned pool page is taken out of the
 * pool for good, never handed to a process and never given back to the
 * page allocator.
 *
 * memory_failure() on a free pool page only marks the 4 KiB subpage
 * (PG_hwpoison); the pool notices when it next takes the page (it takes
 * another free page instead if there is one, else the call fails with
 * ENOMEM) or when it shrinks. LargePages_Total and LargePages_Free then
 * drop by one and the log says "largepage: memory error in pfn ...".
 *
 * Poison is injected through debugfs (hwpoison/corrupt-pfn) at a pool
 * page found in /proc/kpageflags. This program takes pages out of the
 * pool for good: it runs last in its suite.
 */
#include <linux/kernel-page-flags.h>
#include <linux/largepage.h>
#include <sys/mount.h>
#include "lp.h"

#define KPAGEFLAGS "/proc/kpageflags"
#define KPAGECOUNT "/proc/kpagecount"
#define CORRUPT_PFN DEBUGFS "/hwpoison/corrupt-pfn"
#define MEMERR "largepage: memory error in pfn"

#define KPF(b) (1ULL << (b))

/* --------------------------------------------- finding pool pages */

/* A whole /proc/kpage* file (a u64 per pfn), read in big chunks. */
static uint64_t *read_kpage_file(const char *path, unsigned long *count)
{
	size_t cap = 4 << 20, len = 0, chunk = 1 << 20;
	char *buf = malloc(cap), *nbuf;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !buf) {
		TH_LOG("open %s: %s", path, strerror(errno));
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (cap - len < chunk) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf)
				break;
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				TH_LOG("read %s: %s", path, strerror(errno));
			break;
		}
		len += n;
	}
	close(fd);
	*count = len / sizeof(uint64_t);
	return (uint64_t *)buf;
}

/* One pfn's flags, or KPF_NOPAGE if they cannot be read. */
static uint64_t pfn_flags(unsigned long pfn)
{
	uint64_t v = KPF(KPF_NOPAGE);
	int fd = open(KPAGEFLAGS, O_RDONLY);

	if (fd >= 0) {
		if (pread(fd, &v, sizeof(v), (off_t)pfn * sizeof(v)) !=
		    sizeof(v))
			v = KPF(KPF_NOPAGE);
		close(fd);
	}
	return v;
}

/* pfns per large page */
static unsigned long lp_nr(void)
{
	return lp_size() / 4096;
}

struct pool_scan {
	unsigned long *heads;	/* pool-looking pages with no poison */
	long nheads;
	long npoisoned;		/* pool-looking pages with a poisoned subpage */
	unsigned long maxpfn;	/* pfns in /proc/kpageflags */
};

/*
 * Every page that looks like a free pool page: aligned to the large
 * page, a compound head that is not hugetlb, THP, slab or buddy, mapped
 * nowhere, whose next and last subpages are tails and whose compound
 * page ends there. A mapped pool page looks the same, so this counts the
 * free pool only when nothing is mapped.
 */
static void scan_pool(struct pool_scan *s)
{
	const uint64_t not_pool = KPF(KPF_COMPOUND_TAIL) | KPF(KPF_HUGE) |
				  KPF(KPF_THP) | KPF(KPF_SLAB) |
				  KPF(KPF_BUDDY) | KPF(KPF_NOPAGE);
	unsigned long nr = lp_nr(), nfl = 0, ncnt = 0, pfn, j, cap = 0;
	uint64_t *fl, *cnt;
	int poisoned;

	memset(s, 0, sizeof(*s));
	fl = read_kpage_file(KPAGEFLAGS, &nfl);
	cnt = read_kpage_file(KPAGECOUNT, &ncnt);
	ASSERT_TRUE(fl != NULL && cnt != NULL);
	ASSERT_GT(nfl, nr);
	ASSERT_GE(nr, 2);
	s->maxpfn = nfl;

	for (pfn = 0; pfn + nr <= nfl; pfn += nr) {
		if (!(fl[pfn] & KPF(KPF_COMPOUND_HEAD)) || (fl[pfn] & not_pool))
			continue;
		if (pfn >= ncnt || cnt[pfn])
			continue;
		if (!(fl[pfn + 1] & KPF(KPF_COMPOUND_TAIL)) ||
		    !(fl[pfn + nr - 1] & KPF(KPF_COMPOUND_TAIL)))
			continue;
		if (pfn + nr < nfl && (fl[pfn + nr] & KPF(KPF_COMPOUND_TAIL)))
			continue;	/* a bigger compound page */
		poisoned = 0;
		for (j = 0; j < nr; j++)
			poisoned |= !!(fl[pfn + j] & KPF(KPF_HWPOISON));
		if (poisoned) {
			s->npoisoned++;
			continue;
		}
		if (s->nheads == (long)cap) {
			cap = cap ? 2 * cap : 256;
			s->heads = realloc(s->heads, cap * sizeof(*s->heads));
			ASSERT_TRUE(s->heads != NULL);
		}
		s->heads[s->nheads++] = pfn;
	}
	free(fl);
	free(cnt);
}

static int scan_has(const struct pool_scan *s, unsigned long pfn)
{
	long i;

	for (i = 0; i < s->nheads; i++)
		if (s->heads[i] == pfn)
			return 1;
	return 0;
}

/*
 * With nothing mapped the finder must find exactly the free pool: the
 * proof that the page about to be poisoned is a pool page. A poisoned
 * page still on the free list (poisoned, never taken since) counts in
 * LargePages_Free but looks like one taken out: allow those.
 */
static void scan_free_pool(struct pool_scan *s)
{
	long nfree = lp_nfree();

	ASSERT_EQ(nfree, lp_total());
	scan_pool(s);
	if (s->nheads != nfree)
		TH_LOG("%ld free-pool-looking pages (and %ld poisoned) in %lu pfns, LargePages_Free %ld",
		       s->nheads, s->npoisoned, s->maxpfn, nfree);
	ASSERT_LE(s->nheads, nfree);
	ASSERT_LE(nfree, s->nheads + s->npoisoned);
}

/* ---------------------------------------------------------- poison */

static void poison(unsigned long pfn)
{
	char buf[32];
	uint64_t f;
	int r;

	if (access(CORRUPT_PFN, F_OK)) {
		r = lp_debugfs();
		if (r)
			TH_LOG("mount debugfs on %s: %s", DEBUGFS, strerror(-r));
		if (access(CORRUPT_PFN, F_OK))
			TH_LOG("%s: %s (the kernel has CONFIG_HWPOISON_INJECT=y)",
			       CORRUPT_PFN, strerror(errno));
		ASSERT_EQ(access(CORRUPT_PFN, F_OK), 0);
	}
	snprintf(buf, sizeof(buf), "%lu\n", pfn);
	/* memory_failure() may well call an ignored page an error. */
	r = write_text(CORRUPT_PFN, buf);
	f = pfn_flags(pfn);
	TH_LOG("poisoned pfn %#lx (write: %s), flags now %#llx", pfn,
	       r ? strerror(-r) : "ok", (unsigned long long)f);
	ASSERT_TRUE(f & KPF(KPF_HWPOISON));
}

/* ------------------------------------------------------ kernel log */

/* /dev/kmsg positioned at its end: what follows is this test's. */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		TH_LOG("open /dev/kmsg: %s (log not checked)", strerror(errno));
	else
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * Read the log records since the last call: return how many say MEMERR,
 * log those and memory-failure lines, and fail on a bad page or a kernel
 * BUG or WARNING. -1 if the log cannot be read.
 */
static int kmsg_memerr(int fd)
{
	char rec[4096], *msg, *nl;
	int memerr = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && (errno == EPIPE || errno == EINTR))
			continue;	/* records overwritten: go on */
		if (n <= 0)
			break;		/* EAGAIN: no more */
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(msg, MEMERR)) {
			memerr++;
			TH_LOG("kernel: %s", msg);
		} else if (strstr(msg, "Bad page") || strstr(msg, "BUG:") ||
			   strstr(msg, "WARNING:")) {
			TH_LOG("kernel: %s", msg);
			EXPECT_TRUE(0);
		} else if (strstr(msg, "emory failure") ||
			   strstr(msg, "largepage")) {
			TH_LOG("kernel: %s", msg);
		}
	}
	return memerr;
}

/* The log said MEMERR once since the last look (when it can be read). */
static void expect_one_memerr(int fd)
{
	int n = kmsg_memerr(fd);

	if (n >= 0)
		EXPECT_EQ(n, 1);
}

static void expect_counts(long total, long nfree)
{
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
}

__attribute__((constructor)) static void hwpoison_timeout(void)
{
	harness_timeout = 120;	/* zeroing the whole pool under TCG */
}

/* ----------------------------------------------------------- tests */

/*
 * The pool holds exactly F free pages, one of them poisoned: a request
 * for all F cannot be met (no page can stand in for the poisoned one),
 * and the poisoned page leaves the pool; F - 1 pages are then fine.
 */
TEST(hwpoison_free_page_never_handed_out)
{
	unsigned long lp = lp_size(), pfn, len;
	struct pool_scan s;
	long T, F, r;
	int km = kmsg_open();

	scan_free_pool(&s);
	ASSERT_GE(s.nheads, 2);
	pfn = s.heads[s.nheads / 2];	/* the head subpage */
	poison(pfn);

	T = lp_total();
	F = lp_nfree();
	EXPECT_EQ(F, T);	/* noticed only when taken */
	ASSERT_ERRNO(lpsys_get(0, F * lp, RW, MAP_PRIVATE), ENOMEM);
	expect_counts(T - 1, T - 1);
	expect_one_memerr(km);

	len = (F - 1) * lp;
	r = lpsys_get(0, len, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), len));
	lp_fill(LP_PTR(r), len, 0x9a00);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x9a00));
	ASSERT_EQ(lpsys_free(r), 0);
	expect_counts(T - 1, T - 1);

	/* The poisoned page is not a free pool page any more. */
	scan_free_pool(&s);
	EXPECT_TRUE(!scan_has(&s, pfn));
	EXPECT_TRUE(pfn_flags(pfn) & KPF(KPF_HWPOISON));
	EXPECT_TRUE(!(pfn_flags(pfn) & KPF(KPF_BUDDY)));
	kmsg_memerr(km);
}

/*
 * One page at a time, private, shared and keyed in turn, until the pool
 * is empty: every get succeeds but the pool ends one page short.
 */
TEST(hwpoison_one_page_at_a_time_ends_one_short)
{
	unsigned long lp = lp_size(), pfn;
	struct pool_scan s;
	long T, F, n, r, *got;
	int km = kmsg_open(), err = 0, nonzero = 0, bad = 0, i;

	scan_free_pool(&s);
	ASSERT_GE(s.nheads, 2);
	pfn = s.heads[0] + lp_nr() / 2;	/* a subpage in the middle */
	poison(pfn);

	T = lp_total();
	F = lp_nfree();
	EXPECT_EQ(F, T);
	got = calloc(F + 1, sizeof(*got));
	ASSERT_TRUE(got != NULL);
	for (n = 0; n <= F; n++) {
		switch (n % 3) {
		case 0:
			r = lpsys_get(0, lp, RW, MAP_PRIVATE);
			break;
		case 1:
			r = lpsys_get(0, lp, RW, MAP_SHARED);
			break;
		default:
			r = lpsys_share(7301 + n, 0, lp, RW, IPC_CREAT | 0600);
			break;
		}
		if (!LP_OK(r)) {
			err = errno;
			break;
		}
		got[n] = r;
		nonzero += !lp_zeroed(LP_PTR(r), lp);
		lp_fill(LP_PTR(r), lp, 0x9b00 + n);
	}
	TH_LOG("%ld one-page gets succeeded of %ld free pages", n, F);
	if (n % 3 == 2)		/* a failed create leaves no key behind */
		EXPECT_TRUE(lp_key_absent(7301 + n, lp));
	EXPECT_EQ(n, F - 1);
	EXPECT_EQ(err, ENOMEM);
	EXPECT_EQ(nonzero, 0);
	EXPECT_EQ(lp_total(), T - 1);
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_EQ(read_long(NUMLARGEPAGES), T - 1);

	/* No two mappings share a page. */
	for (i = 0; i < n; i++)
		bad += !lp_check(LP_PTR(got[i]), lp, 0x9b00 + i);
	EXPECT_EQ(bad, 0);
	for (i = 0; i < n; i++) {
		if (i % 3 == 2)
			ASSERT_EQ(lpsys_unshare(got[i]), 0);
		else
			ASSERT_EQ(lpsys_free(got[i]), 0);
	}
	free(got);
	expect_counts(T - 1, T - 1);
	expect_one_memerr(km);

	scan_free_pool(&s);
	EXPECT_TRUE(!scan_has(&s, pfn - lp_nr() / 2));
	EXPECT_TRUE(pfn_flags(pfn) & KPF(KPF_HWPOISON));
	EXPECT_TRUE(!(pfn_flags(pfn) & KPF(KPF_BUDDY)));
	kmsg_memerr(km);
}

#define ZSYS "/sys/kernel/mm/largepage/"

/* The pool's count of pages taken out for memory errors, or -1. */
static long stat_poisoned(void)
{
	return flat_read(ZSYS "stat", "poisoned");
}

/*
 * The zeroing thread meets a poisoned page: the whole pool is freed
 * dirty, in order, and the last page freed is poisoned at once, before
 * largepage_zerod (which zeroes the free list from its head) reaches
 * it. The thread takes it out of the pool without touching it: Total
 * and Free both drop by one, poisoned counts it, and every other page
 * ends zeroed. If the thread won the race (it had zeroed all the pages
 * before the last), the attempt proves nothing and is made again.
 */
TEST(hwpoison_zerod_withdraws_poisoned_free_page)
{
	unsigned long lp = lp_size(), pfn = 0, bad = 0;
	long T, F, r, zeroed = 0, poisoned0;
	int km = kmsg_open(), attempt;

	for (attempt = 0; attempt < 3; attempt++) {
		T = lp_total();
		F = lp_settle_nfree(T);
		ASSERT_EQ(F, T);
		ASSERT_GE(F, 8);
		/* Nothing left for the thread: it is idle. */
		for (r = 0; r < 50 && read_long(ZSYS "free_unzeroed_pages"); r++)
			usleep(100000);
		ASSERT_EQ(read_long(ZSYS "free_unzeroed_pages"), 0);
		poisoned0 = stat_poisoned();
		ASSERT_GE(poisoned0, 0);

		r = lpsys_get(0, F * lp, RW, MAP_PRIVATE);
		ASSERT_TRUE(LP_OK(r));
		lp_fill(LP_PTR(r), F * lp, 0x9c00);
		pfn = lp_pfn_of(LP_PTR(r) + (F - 1) * lp);
		ASSERT_NE(pfn, 0);
		ASSERT_EQ(lpsys_free(r), 0);
		bad = pfn + lp_nr() / 2;
		poison(bad);
		zeroed = read_long(ZSYS "free_zeroed_pages");
		TH_LOG("attempt %d: %ld of %ld pages zeroed when pfn %#lx was poisoned",
		       attempt, zeroed, F, pfn);
		/* It is still to come if the thread is not done with F - 1. */
		if (zeroed < F - 1)
			break;
		/* Lost: a call for the whole pool withdraws it. */
		EXPECT_ERRNO(lpsys_get(0, F * lp, RW, MAP_PRIVATE), ENOMEM);
		expect_counts(T - 1, T - 1);
		kmsg_memerr(km);
	}
	ASSERT_LT(zeroed, F - 1);

	/*
	 * Nothing takes a page: only the thread can withdraw it, once it
	 * has zeroed every page before it (seconds under TCG, more on a
	 * busy host): wait for it to be done, up to a minute.
	 */
	for (r = 0; r < 600 && read_long(ZSYS "free_unzeroed_pages"); r++)
		usleep(100000);
	EXPECT_EQ(read_long(ZSYS "free_unzeroed_pages"), 0);
	expect_counts(T - 1, T - 1);
	EXPECT_EQ(stat_poisoned(), poisoned0 + 1);
	EXPECT_EQ(read_long(ZSYS "free_zeroed_pages"), T - 1);
	expect_one_memerr(km);
	EXPECT_TRUE(pfn_flags(bad) & KPF(KPF_HWPOISON));
	EXPECT_TRUE(!(pfn_flags(bad) & KPF(KPF_BUDDY)));

	/* The rest of the pool serves, zeroed. */
	r = lpsys_get(0, (T - 1) * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), (T - 1) * lp));
	ASSERT_EQ(lpsys_free(r), 0);
	expect_counts(T - 1, T - 1);
	kmsg_memerr(km);
}

/*
 * A heap's first write after fork() copies into a page the fork reserved.
 * A free page found poisoned then is passed over and leaves the pool:
 * the copy lands on a good page, and the write succeeds. Two pages are
 * free, one reserved, one poisoned; whichever the copy meets first, it
 * ends on the good one.
 */
TEST(hwpoison_copy_after_fork_passes_over_a_poisoned_page)
{
	unsigned long lp = lp_size(), bad = 0, child_pfn;
	long T = lp_total(), F = lp_nfree(), heap, fill, r, i, j;
	struct pool_scan s;
	struct lp_peer p;
	int km = kmsg_open(), st;

	ASSERT_GE(F, 4);
	scan_free_pool(&s);
	heap = lpsys_get(0, lp, RW, MAP_PRIVATE | LP_COPY_ON_FORK);
	ASSERT_TRUE(LP_OK(heap));
	lp_fill(LP_PTR(heap), lp, 0x9c00);
	fill = lpsys_get(0, (F - 3) * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(fill));
	ASSERT_EQ(lp_nfree(), 2);
	/* A head that neither mapping holds is free: poison the first. */
	for (i = 0; i < s.nheads && !bad; i++) {
		int held = lp_pfn_of(LP_PTR(heap)) == s.heads[i];

		for (j = 0; j < F - 3 && !held; j++)
			held = lp_pfn_of(LP_PTR(fill) + j * lp) == s.heads[i];
		if (!held)
			bad = s.heads[i];
	}
	ASSERT_NE(bad, 0);
	poison(bad);
	if (lp_peer_fork(&p) == 0) {
		lp_fill(LP_PTR(heap), lp, 0x9d00);
		lp_peer_send(&p, lp_pfn_of(LP_PTR(heap)));
		EXPECT_TRUE(lp_check(LP_PTR(heap), lp, 0x9d00));
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	child_pfn = lp_peer_recv(&p);
	EXPECT_NE(child_pfn, 0);
	EXPECT_NE(child_pfn, bad);
	EXPECT_TRUE(!(pfn_flags(child_pfn) & KPF(KPF_HWPOISON)));
	EXPECT_TRUE(lp_check(LP_PTR(heap), lp, 0x9c00));
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(fill), 0);
	ASSERT_EQ(lpsys_free(heap), 0);
	/* Still free if the copy never met it: a get of every page drops it. */
	r = lpsys_get(0, lp_settle_nfree(T) * lp, RW, MAP_PRIVATE);
	if (LP_OK(r))
		ASSERT_EQ(lpsys_free(r), 0);
	expect_counts(T - 1, T - 1);
	expect_one_memerr(km);
}

/* Grow the pool back towards want pages; its size then. */
static long regrow(long want)
{
	long before, now = lp_total();
	int i;

	for (i = 0; i < 20 && now < want; i++) {
		before = now;
		sysctl_resize(want - now);
		now = lp_total();
		if (now <= before)
			break;
	}
	return now;
}

/*
 * Shrinking the pool drops a poisoned free page instead of giving it
 * back to the page allocator. Last: it empties the pool and regrows it.
 */
TEST(hwpoison_shrink_drops_poisoned_page)
{
	unsigned long pfn, head;
	struct pool_scan s;
	long T0, T, F, now, r;
	int km = kmsg_open(), n;

	T0 = lp_total();
	scan_free_pool(&s);
	ASSERT_GE(s.nheads, 1);
	head = s.heads[s.nheads - 1];
	pfn = head + lp_nr() - 1;	/* the last subpage */
	poison(pfn);

	T = lp_total();
	F = lp_nfree();
	EXPECT_EQ(F, T);
	r = sysctl_resize(-F);
	EXPECT_EQ(r, 0);
	expect_counts(0, 0);
	/* Whether a shrink logs the error too is not said: at most once. */
	n = kmsg_memerr(km);
	EXPECT_LE(n, 1);

	/* Nothing left that looks like a pool page... */
	scan_pool(&s);
	EXPECT_EQ(s.nheads, 0);
	/* ...and the poisoned page did not go to the page allocator. */
	EXPECT_TRUE(pfn_flags(pfn) & KPF(KPF_HWPOISON));
	EXPECT_TRUE(!(pfn_flags(pfn) & KPF(KPF_BUDDY)));

	/* Put the pool back; the buddy allocator may give fewer pages. */
	now = regrow(T0);
	TH_LOG("pool regrown to %ld pages (%ld before the test, %ld before the shrink)",
	       now, T0, T);
	EXPECT_EQ(lp_settle_nfree(now), now);
	EXPECT_EQ(read_long(NUMLARGEPAGES), now);
	if (now < 1)
		return;
	scan_free_pool(&s);
	EXPECT_TRUE(!scan_has(&s, head));

	/* Every page of the new pool can be had, zeroed. */
	r = lpsys_get(0, now * lp_size(), RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), now * lp_size()));
	ASSERT_EQ(lpsys_free(r), 0);
	expect_counts(now, now);
	kmsg_memerr(km);
}
