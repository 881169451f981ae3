// SPDX-License-Identifier: GPL-2.0
/*
 * A single-worker fuzzer with an exact oracle: the pool and the
 * RLIMIT_MEMLOCK charge are checked after every call.
 *
 * tests/fuzz races four workers, so its oracle must allow ENOMEM for
 * every get and share, never checks a memlock charge, and prints its
 * successes without asserting them: a kernel that refused everything
 * would pass it. Here one worker is alone with a small pool (POOL pages,
 * resized at random between calls) and an RLIMIT_MEMLOCK of LIMIT pages,
 * so it knows everything its calls touch: its mappings, the keyed
 * segments it made and how often it attached each, the pool's size, and
 * its user's charge (the pages of its get mappings and of its live
 * segments: attaching charges nothing, a segment stays charged until its
 * last detach). Every call then has one right result. A get or create of
 * n pages succeeds iff charge + n <= LIMIT and n <= free - reserved, else
 * ENOMEM, which changes nothing; bad arguments give SPEC's errno
 * (LP_COPY_ON_FORK with MAP_SHARED, alone or with a prot that cannot
 * write: EINVAL); and after every call LargePages_Total,
 * LargePages_Free, reserved_pages and this process's LargePages: line
 * must be the model's. The charge itself is probed
 * every PROBE_EVERY operations: a get of one page more than the limit
 * leaves must fail, one of all it leaves must work. At the end a minimum
 * of each kind of success and refusal is asserted, so a kernel that
 * refuses everything, or nothing, fails.
 *
 * The worker is uid WORKER_UID, which no other test uses, not root
 * without CAP_IPC_LOCK: user_shm_lock() charges per user (uid 0 is the
 * harness's too, nobody is tests/fuzz's and limits'), so its charge
 * starts at 0 whatever the earlier tests left, and no capability set is
 * to be reasoned about. Only root may resize the pool, so the worker
 * asks the test process, which writes while the worker waits: the calls
 * stay serialised and the model exact. Since free_large_pages() and
 * unshare_large_pages() both take the start of any large-page mapping
 * (SPEC 2), "the wrong kind of mapping" is no error: either call is
 * used on either kind, and both must work.
 *
 * Where the kernel has the misc cgroup controller, the worker runs in a
 * cgroup of its own, and its misc.current must be the model's charge
 * after every call too: the pages of its get mappings and of the
 * segments it made, charged once, until the last detach. Its limit is
 * lifted ("max"), so misc.events must stay 0 (misccg.c tests the limit).
 *
 * Heaps (get_large_pages(MAP_PRIVATE | LP_COPY_ON_FORK)) are among the
 * gets, and the worker forks. The child does nothing but what the worker
 * asks over a pipe, a step at a time (check or write a page of a heap,
 * exec), so that the worker still knows everything: fork() reserves a
 * free page for each page of each heap, in address order, charged to
 * RLIMIT_MEMLOCK and misc as a get (Free unchanged, reserved_pages up),
 * if the limit and the unreserved free pages allow the whole heap; else
 * that heap is copied into normal pages (nothing taken or charged; the
 * child's LargePages: leaves it out). The first write by either side to
 * a page still shared copies it (a page in use more, a reservation less);
 * a page left to one side alone is written in place; the parent freeing
 * a shared heap, and the child's exit or exec, give each side's units
 * back; a shrink never takes a reserved page. Between the steps the
 * worker writes its own pages, probes the charge and resizes the pool;
 * the child must keep seeing what it had at fork() and wrote since, the
 * parent what it wrote. The minima include heaps shared at fork, copies
 * on first write and fallbacks to normal pages, so a kernel that never
 * shares, or always does, fails.
 *
 * Kernel command line: lporacle_seed=S replays a run (default from time
 * and pid; the seed is printed).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <time.h>
#include "lp.h"
#include "misccg.h"
#include "rng.h"

#define COPY		(MAP_PRIVATE | LP_COPY_ON_FORK)

#define USER_TOP	0xc0000000UL	/* TASK_SIZE, i386 3G/1G */
#define WORKER_UID	4242		/* no other test's user */
#define KEY0		7701		/* keys KEY0 .. KEY0 + NKEYS - 1 */
#define NKEYS		4
#define PROBE_KEY	7705
#define LIMIT		4		/* RLIMIT_MEMLOCK, in large pages */
#define POOL		6		/* the pool at the start */
#define POOL_LEAST	4		/* if it cannot grow to POOL */
#define POOL_MAX	8		/* resizes aim at 0..POOL_MAX */
#define NOPS		1500
#define PROBE_EVERY	8
#define MAXMAPS		12
#define MAX_MISMATCHES	3		/* then stop: the model is off */
#define MAX_REPORTS	10
#define SOFT_SECS	150		/* a very slow guest stops early */
#define WATCHDOG_SECS	240
#define NR_PAGES	"/sys/kernel/mm/largepage/nr_pages"
#define RESV_PAGES	"/sys/kernel/mm/largepage/reserved_pages"

struct map {
	unsigned long addr;
	long pages;
	int key;		/* 0: a get mapping; else the segment, 1..NKEYS */
	int prot;
	uint32_t seed;		/* a get mapping's lp_fill() tag; 0: zero */
	int shared;		/* a MAP_SHARED get: a fork child maps it too */
	int heap;		/* MAP_PRIVATE | LP_COPY_ON_FORK */
	uint32_t ps[LIMIT];	/* a heap's tag of each page; 0: zero */
};

/* A heap mapping as the fork child has it (op_fork()). */
struct cheap {
	unsigned long addr;
	long pages;
	int prot;
	int large;		/* its own segment: fork reserved its pages */
	int parent;		/* the parent's mapping shares pages with it */
	unsigned int shared;	/* bit j: its page j is still the parent's */
	uint32_t ps[LIMIT];	/* what its page j holds; 0: zero */
};

struct seg {
	int live, nattach, mode;
	long pages;
	uint32_t seed;		/* the segment's lp_fill() tag; 0: zero */
};

/* What happened, and the least of each a run must see. */
enum {
	N_GET, N_CREATE, N_ATTACH, N_ATTACH_TAG, N_SEEN, N_FREE,
	N_UNSHARE_KEYED, N_CROSS, N_DESTROYED, N_HINT, N_LIMIT, N_POOL,
	N_BOTH, N_HUGE, N_EINVAL_ARGS, N_EINVAL_LEN, N_EINVAL_ADDR, N_EEXIST,
	N_ENOENT, N_EACCES, N_EPERM, N_ATTACH_AT_0, N_GROW, N_GROW_SHORT,
	N_SHRINK, N_SHRINK_IN_USE, N_RESIZE_SAME, N_RESIZE_JUNK,
	N_RESIZE_DENIED, N_EMPTIED, N_PROBE_OVER, N_PROBE_ALL, N_HEAP,
	N_EINVAL_HEAP, N_FORK, N_FORK_RESV, N_FALLBACK, N_FALLBACK_POOL,
	N_COW_CHILD, N_COW_PARENT, N_COW_ALONE, N_CHILD_SAW, N_FORK_EXEC,
	N_HEAP_LEFT, N_SHRINK_RESV, N_NR
};

static const struct {
	const char *what;
	long least;
} ntab[N_NR] = {
	[N_GET] = { "get_large_pages() mappings made", 20 },
	[N_CREATE] = { "keyed segments created", 10 },
	[N_ATTACH] = { "attaches of a live segment", 10 },
	[N_ATTACH_TAG] = { "attaches that saw the segment's tag", 3 },
	[N_SEEN] = { "writes seen through another attach", 2 },
	[N_FREE] = { "mappings freed or unshared", 20 },
	[N_UNSHARE_KEYED] = { "keyed mappings unshared", 10 },
	[N_CROSS] = { "free of a keyed, unshare of a get mapping", 3 },
	[N_DESTROYED] = { "segments gone with their last detach", 5 },
	[N_HINT] = { "hints of a free range used", 3 },
	[N_LIMIT] = { "ENOMEM: over RLIMIT_MEMLOCK, pool enough", 5 },
	[N_POOL] = { "ENOMEM: pool exhausted, limit enough", 5 },
	[N_BOTH] = { "ENOMEM: over both", 0 },
	[N_HUGE] = { "ENOMEM: a length nothing can hold", 3 },
	[N_EINVAL_ARGS] = { "EINVAL: bad length, prot, flags or key", 20 },
	[N_EINVAL_LEN] = { "EINVAL: attach with another length", 3 },
	[N_EINVAL_ADDR] = { "EINVAL: free/unshare not of a start", 10 },
	[N_EEXIST] = { "EEXIST: IPC_CREAT|IPC_EXCL of a live key", 3 },
	[N_ENOENT] = { "ENOENT: attach of an absent key", 3 },
	[N_EACCES] = { "EACCES: PROT_EXEC attach, no x in mode", 1 },
	[N_EPERM] = { "EPERM: get or create at RLIMIT_MEMLOCK 0", 2 },
	[N_ATTACH_AT_0] = { "attaches at RLIMIT_MEMLOCK 0", 0 },
	[N_GROW] = { "pool grown", 3 },
	[N_GROW_SHORT] = { "pool grown by less than asked", 0 },
	[N_SHRINK] = { "pool shrunk", 3 },
	[N_SHRINK_IN_USE] = { "shrinks cut short by pages in use", 1 },
	[N_RESIZE_SAME] = { "resizes to the same size", 0 },
	[N_RESIZE_JUNK] = { "EINVAL: resize text not a number", 1 },
	[N_RESIZE_DENIED] = { "resizes by the worker refused", 0 },
	[N_EMPTIED] = { "shrinks that emptied the pool", 0 },
	[N_PROBE_OVER] = { "probes: one page over the limit refused", 10 },
	[N_PROBE_ALL] = { "probes: all the limit leaves had", 10 },
	[N_HEAP] = { "heap mappings made (LP_COPY_ON_FORK)", 20 },
	[N_EINVAL_HEAP] = { "EINVAL: LP_COPY_ON_FORK shared or read-only", 3 },
	[N_FORK] = { "forks, the child driven step by step", 30 },
	[N_FORK_RESV] = { "heaps a fork shared, its pages reserved", 10 },
	[N_FALLBACK] = { "heaps a fork copied into normal pages", 5 },
	[N_FALLBACK_POOL] = { "  of them: the pool short, limit enough", 0 },
	[N_COW_CHILD] = { "first writes by the child: one page copied", 8 },
	[N_COW_PARENT] = { "first writes by the parent: one page copied", 2 },
	[N_COW_ALONE] = { "writes to a page left alone: no copy", 3 },
	[N_CHILD_SAW] = { "child pages that held what the model said", 5 },
	[N_FORK_EXEC] = { "children checked after their exec", 5 },
	[N_HEAP_LEFT] = { "heaps freed by the parent while shared", 0 },
	[N_SHRINK_RESV] = { "shrinks cut short by reserved pages", 0 },
};

static unsigned long long seed;
static unsigned long lpsz;
static volatile pid_t worker_pid;
static char cgroup[128];		/* the worker's, with misc; or "" */

/* The worker's model and state. */
static struct {
	uint64_t rng;
	unsigned long op;
	const char *opname;
	long total, charge;		/* pages; charge: RLIMIT_MEMLOCK's */
	long used, resv;		/* pool pages in use, and reserved */
	long extra;			/* pages a probe maps for a moment */
	int memlock0, has_nr_pages, reports, mismatches, short_logged;
	struct map maps[MAXMAPS];
	int nmaps;
	struct seg segs[NKEYS + 1];
	unsigned long last_freed;
	char *normal;			/* a normal mapping */
	int rfd, wfd;			/* from and to the test process */
	long n[N_NR];
} W;

/* The live fork child, driven by the worker (op_fork()); pid 0: none. */
static struct {
	pid_t pid;
	int cmd, rep;			/* to and from it */
	long kb;			/* its LargePages: */
	struct cheap h[MAXMAPS];
	int nh;
} C;

/* A request to the test process: write text to numlargepages or nr_pages. */
struct req {
	int nr_pages;
	char text[28];
};

/* ------------------------------------------------------------ helpers */

static uint32_t r32(void)
{
	return xs(&W.rng) >> 32;
}

static uint32_t rnd(uint32_t n)
{
	return xs_below(&W.rng, n);
}

static int key_of(int k)
{
	return KEY0 + k - 1;
}

/* Free pages: all pages in use are this worker's (or its child's). */
static long mfree(void)
{
	return W.total - W.used;
}

/* Free pages a get may take: those not reserved for a heap's copies. */
static long mavail(void)
{
	return mfree() - W.resv;
}

/* A get, a new segment or a probe of n pages (n < 0: given back). */
static void take(long n)
{
	W.charge += n;
	W.used += n;
}

static long mapped_pages(void)
{
	long n = W.extra;
	int i;

	for (i = 0; i < W.nmaps; i++)
		n += W.maps[i].pages;
	return n;
}

static const char *flagstr(int flag)
{
	static char buf[64];
	int rest = flag & ~(IPC_CREAT | IPC_EXCL | 0777);

	snprintf(buf, sizeof(buf), "%s%s%#o", flag & IPC_CREAT ? "IPC_CREAT|" : "",
		 flag & IPC_EXCL ? "IPC_EXCL|" : "", flag & 0777);
	if (rest)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "|%#x",
			 (unsigned int)rest);
	return buf;
}

static const char *model_str(void)
{
	static char buf[1200];
	size_t n;
	int i;

	n = snprintf(buf, sizeof(buf),
		     "pool %ld, free %ld, reserved %ld, charge %ld of %d pages%s, %ld pages mapped; mappings:",
		     W.total, mfree(), W.resv, W.charge, LIMIT,
		     W.memlock0 ? " (RLIMIT_MEMLOCK 0 now)" : "", mapped_pages());
	for (i = 0; i < W.nmaps && n < sizeof(buf); i++)
		n += snprintf(buf + n, sizeof(buf) - n, " %#lx+%ldp(%s%d,prot %#x)",
			      W.maps[i].addr, W.maps[i].pages,
			      W.maps[i].key ? "key " : W.maps[i].heap ? "heap" :
			      "get", W.maps[i].key ?
			      key_of(W.maps[i].key) : 0, W.maps[i].prot);
	for (i = 0; i < C.nh && C.pid && n < sizeof(buf); i++)
		n += snprintf(buf + n, sizeof(buf) - n,
			      "; child's heap %#lx+%ldp: %s, shared %#x",
			      C.h[i].addr, C.h[i].pages, C.h[i].large ?
			      "large" : "normal pages", C.h[i].shared);
	for (i = 1; i <= NKEYS && n < sizeof(buf); i++)
		if (W.segs[i].live)
			n += snprintf(buf + n, sizeof(buf) - n,
				      "; key %d: %ld pages, mode %#o, %d attaches",
				      key_of(i), W.segs[i].pages, W.segs[i].mode,
				      W.segs[i].nattach);
	return buf;
}

/* Report what the model did not expect: the first few, with the model. */
static void mismatch(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	harness_failed = 1;
	W.mismatches++;
	if (++W.reports > MAX_REPORTS) {
		if (W.reports == MAX_REPORTS + 1)
			TH_LOG("more mismatches, not shown");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	TH_LOG("MISMATCH at operation %lu (%s), seed %llu: %s", W.op,
	       W.opname, seed, msg);
	TH_LOG("  model: %s", model_str());
}

/*
 * Did the call do what the model says: succeed if want is 0, else fail
 * with errno want? If not, report the call, the result and the model (as
 * it was before the call).
 */
static int judge(int ok, long r, int e, int want, const char *fmt, ...)
{
	char call[256], got[64];
	va_list ap;

	if (want ? !ok && e == want : ok)
		return 1;
	va_start(ap, fmt);
	vsnprintf(call, sizeof(call), fmt, ap);
	va_end(ap);
	if (ok)
		snprintf(got, sizeof(got), "success (%#lx)", (unsigned long)r);
	else
		snprintf(got, sizeof(got), "%ld, errno %d %s", r, e, ename(e));
	mismatch("%s = %s, expected %s", call, got, want ? ename(want) : "success");
	return 0;
}

/* LargePages_Total and LargePages_Free in one read of /proc/meminfo. */
static void read_pool(long *total, long *nfree)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];

	*total = *nfree = -1;
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "LargePages_Total: %ld", total);
		sscanf(line, "LargePages_Free: %ld", nfree);
	}
	if (f)
		fclose(f);
}

/*
 * After every call: the pool (reserved pages counted free), this
 * process's LargePages: and the live fork child's are the model's; the
 * misc cgroup is charged for the pages in use and reserved.
 */
static void check_state(const char *after)
{
	long t, f, kb, want_kb = mapped_pages() * (long)(lpsz / 1024), resv;

	read_pool(&t, &f);
	kb = status_kb(0, "LargePages:");
	resv = read_long(RESV_PAGES);
	if (t != W.total || f != mfree() || kb != want_kb || resv != W.resv)
		mismatch("after %s: LargePages_Total %ld, LargePages_Free %ld, LargePages: %ld kB, reserved_pages %ld; the model has %ld, %ld, %ld kB, %ld",
			 after, t, f, kb, resv, W.total, mfree(), want_kb,
			 W.resv);
	if (C.pid && (kb = status_kb(C.pid, "LargePages:")) != C.kb)
		mismatch("after %s: the fork child's LargePages: is %ld kB; the model has %ld kB",
			 after, kb, C.kb);
	if (cgroup[0] && cg_current(cgroup) != W.used + W.resv)
		mismatch("after %s: misc.current of %s is %ld; the model's charge %ld (%ld in use, %ld reserved)",
			 after, cgroup, cg_current(cgroup), W.used + W.resv,
			 W.used, W.resv);
}

/* ------------------------------------------------------- the mappings */

/* Does [p, p + len) hold tag s (0: zeroes)? */
static int holds(const char *p, unsigned long len, uint32_t s)
{
	return s ? lp_check(p, len, s) : lp_zeroed(p, len);
}

/* Does heap m hold each page's tag? */
static int heap_ok(const struct map *m, const char *why)
{
	long j;

	for (j = 0; j < m->pages; j++) {
		if (holds(LP_PTR(m->addr) + j * lpsz, lpsz, m->ps[j]))
			continue;
		mismatch("%s: page %ld of the heap at %#lx+%ld pages does not hold %s %#x",
			 why, j, m->addr, m->pages, m->ps[j] ? "its tag" :
			 "zeroes", m->ps[j]);
		return 0;
	}
	return 1;
}

/* Does m hold what the model says (its tag, else zeroes)? */
static int data_ok(const struct map *m, const char *why)
{
	uint32_t s = m->key ? W.segs[m->key].seed : m->seed;
	unsigned long len = m->pages * lpsz;
	int good;

	if (!(m->prot & PROT_READ))
		return 1;
	if (m->heap)
		return heap_ok(m, why);
	good = holds(LP_PTR(m->addr), len, s);
	if (!good)
		mismatch("%s: the %s mapping at %#lx+%ld pages does not hold %s %#x",
			 why, m->key ? "keyed" : "get", m->addr, m->pages,
			 s ? "its tag" : "zeroes", s);
	return good;
}

/* The worker's /proc/self/maps, as diagnostics. */
static void dump_maps(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		printf("#   maps: %s", line);
	if (f)
		fclose(f);
}

/* A new mapping: aligned, below TASK_SIZE, over nothing the worker has. */
static void placed_ok(long r, long pages, unsigned long want_at,
		      const char *what)
{
	unsigned long a = r, len = pages * lpsz, n = (unsigned long)W.normal;
	int i;

	if (a % lpsz || a + len > USER_TOP || a + len < a)
		mismatch("%s gave %#lx+%#lx: not an aligned range below TASK_SIZE",
			 what, a, len);
	for (i = 0; i < W.nmaps; i++)
		if (a < W.maps[i].addr + W.maps[i].pages * lpsz &&
		    W.maps[i].addr < a + len)
			mismatch("%s gave %#lx+%#lx, over the mapping at %#lx",
				 what, a, len, W.maps[i].addr);
	if (a < n + 4 * 4096 && n < a + len)
		mismatch("%s gave %#lx+%#lx, over a normal mapping", what, a, len);
	if (want_at && a != want_at) {
		mismatch("%s gave %#lx, but the hinted range at %#lx was free",
			 what, a, want_at);
		dump_maps();
	}
}

static struct map *add_map(long r, long pages, int key, int prot)
{
	struct map *m = &W.maps[W.nmaps++];

	*m = (struct map){ .addr = (unsigned long)r, .pages = pages,
			   .key = key, .prot = prot };
	return m;
}

static unsigned int popcount(unsigned int x)
{
	return __builtin_popcount(x);
}

/*
 * The parent frees heap m while the child shares pages of it: each page
 * shared stays, the child's alone now, and its reservation goes back.
 */
static void heap_left(const struct map *m)
{
	struct cheap *c;
	int i;

	for (i = 0; i < C.nh && C.pid; i++) {
		c = &C.h[i];
		if (!c->parent || c->addr != m->addr)
			continue;
		W.used += popcount(c->shared);
		W.resv -= popcount(c->shared);
		W.n[N_HEAP_LEFT] += !!c->shared;
		c->shared = 0;
		c->parent = 0;
	}
}

/* Mapping i is gone: its get pages, or its segment's last attach, uncharged. */
static void forget(int i)
{
	struct map *m = &W.maps[i];
	struct seg *s = &W.segs[m->key];

	if (!m->key) {
		take(-m->pages);
		if (m->heap)
			heap_left(m);
	} else if (--s->nattach == 0) {
		s->live = 0;
		take(-s->pages);
		W.n[N_DESTROYED]++;
	}
	W.maps[i] = W.maps[--W.nmaps];
}

/* A new get mapping: zeroed; tag it (a heap page by page) if writable. */
static void made_get(long r, long pages, int prot, int flags,
		     unsigned long want_at)
{
	struct map *m;
	long j;

	placed_ok(r, pages, want_at, "get_large_pages");
	W.n[N_GET]++;
	W.n[N_HEAP] += flags == COPY;
	W.n[N_HINT] += want_at && (unsigned long)r == want_at;
	m = add_map(r, pages, 0, prot);
	m->shared = flags == MAP_SHARED;
	m->heap = flags == COPY;
	take(pages);
	data_ok(m, "a new get mapping");
	if (m->heap && (prot & RW) == RW) {
		for (j = 0; j < pages; j++) {
			m->ps[j] = r32() | 1;
			lp_fill(LP_PTR(r) + j * lpsz, lpsz, m->ps[j]);
		}
	} else if ((prot & RW) == RW) {
		m->seed = r32() | 1;
		lp_fill(LP_PTR(r), pages * lpsz, m->seed);
	}
}

/* A new segment, charged to this user: zeroed; tag it if writable. */
static void made_seg(int k, long r, long pages, int prot, int flag)
{
	struct seg *s = &W.segs[k];
	struct map *m;

	placed_ok(r, pages, 0, "share_large_pages");
	W.n[N_CREATE]++;
	*s = (struct seg){ 1, 1, (flag & 0777) ? (flag & 0777) : 0600, pages, 0 };
	take(pages);
	m = add_map(r, pages, k, prot);
	data_ok(m, "a new segment");
	if ((prot & RW) == RW) {
		s->seed = r32() | 1;
		lp_fill(LP_PTR(r), pages * lpsz, s->seed);
	}
}

/*
 * An attach: no charge, no page. It sees the segment's tag; a new tag
 * written through it is seen through another attach.
 */
static void attached(int k, long r, int prot)
{
	struct seg *s = &W.segs[k];
	struct map *m;
	int i;

	placed_ok(r, s->pages, 0, "share_large_pages");
	W.n[N_ATTACH]++;
	s->nattach++;
	m = add_map(r, s->pages, k, prot);
	if (data_ok(m, "an attach") && s->seed && (prot & PROT_READ))
		W.n[N_ATTACH_TAG]++;
	if ((prot & RW) != RW || rnd(2))
		return;
	s->seed = r32() | 1;
	lp_fill(LP_PTR(r), s->pages * lpsz, s->seed);
	for (i = 0; i < W.nmaps - 1; i++) {
		if (W.maps[i].key != k || !(W.maps[i].prot & PROT_READ))
			continue;
		W.n[N_SEEN] += data_ok(&W.maps[i], "a write through another attach");
		break;
	}
}

/* ---------------------------------------------------- the operations */

/* Pages for a get or a new segment: small, every get zeroes them. */
static long pick_pages(void)
{
	static const long p[] = {
		1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 5,
	};

	return PICK(p);
}

/*
 * Taking n pages (a get, a new segment): EPERM at a zero limit, ENOMEM
 * over the limit or the free pages not reserved, else 0. *why: 1 the
 * limit, 2 the pool.
 */
static int take_errno(long n, int *why)
{
	*why = (W.charge + n > LIMIT) | (n > mavail()) << 1;
	if (W.memlock0)
		return EPERM;
	return *why ? ENOMEM : 0;
}

static void count_enomem(int why)
{
	W.n[why == 1 ? N_LIMIT : why == 2 ? N_POOL : N_BOTH]++;
}

/* The writable prots a heap takes. */
static const int heap_prots[] = { RW, RW, RW, RW | PROT_EXEC, PROT_WRITE };

static const char *flags_name(int flags)
{
	return flags == MAP_SHARED ? "MAP_SHARED" : flags == COPY ?
	       "MAP_PRIVATE|LP_COPY_ON_FORK" : "MAP_PRIVATE";
}

/*
 * get_large_pages(), good arguments, a heap (LP_COPY_ON_FORK) a third
 * of the time or if heap; a hint inside a mapping or free.
 */
static void op_get(int heap)
{
	int v = heap ? 2 : rnd(3), prot = PICK(good_prots), flags = MAP_PRIVATE;
	long n = pick_pages(), r;
	unsigned long len = n * lpsz, hint = 0, want_at = 0;
	const char *hname = "none";
	int h = rnd(4), why, want, e, ok;

	if (v == 1) {
		flags = MAP_SHARED;
	} else if (v == 2) {
		flags = COPY;
		prot = PICK(heap_prots);
	}
	if (h == 1 && W.nmaps) {
		const struct map *m = &W.maps[rnd(W.nmaps)];

		hint = m->addr + rnd(m->pages * lpsz);
		hname = "inside a mapping";
	} else if (h == 2) {
		/* Rounded up to a large page, it is the free range. */
		want_at = lp_unmapped_range(len, lpsz);
		hint = want_at ? want_at - rnd(lpsz) : 0;
		hname = "a free range";
	}
	want = take_errno(n, &why);
	CALL(r, e, lpsys_get(hint, len, prot, flags));
	ok = LP_OK(r);
	if (!judge(ok, r, e, want, "get_large_pages(%#lx [hint: %s], %ld pages, %#x, %s)",
		   hint, hname, n, prot, flags_name(flags))) {
		if (ok)
			lpsys_free(r);
	} else if (ok) {
		made_get(r, n, prot, flags, want_at);
	} else {
		count_enomem(why);
	}
	check_state("get_large_pages");
}

/* A length that is no positive multiple of the large page: EINVAL. */
static unsigned long bad_len(void)
{
	switch (rnd(5)) {
	case 0: return 0;
	case 1: return 4096;
	case 2: return lpsz / 2;
	case 3: return lpsz * (1 + rnd(3)) + 4096 * (1 + rnd(16));
	default: return r32() | 1;
	}
}

/*
 * An aligned length nothing can hold: above TASK_SIZE, or more than the
 * pool and the limit ever allow. ENOMEM (SPEC 2: "a length the pool or
 * the address space cannot hold").
 */
static unsigned long huge_len(void)
{
	switch (rnd(4)) {
	case 0: return -(lpsz * (1 + rnd(4)));
	case 1: return USER_TOP + lpsz * (1 + rnd(4));
	case 2: return USER_TOP;
	default: return lpsz * (POOL_MAX + LIMIT + 1 + rnd(64));
	}
}

/*
 * A heap's flag where SPEC refuses it (EINVAL): with MAP_SHARED, alone,
 * with both, or with a prot that cannot write.
 */
static void bad_heap(int *prot, int *flags)
{
	static const int bad[] = {
		MAP_SHARED | LP_COPY_ON_FORK, LP_COPY_ON_FORK,
		MAP_PRIVATE | MAP_SHARED | LP_COPY_ON_FORK,
	};
	static const int ro[] = {
		PROT_READ, PROT_NONE, PROT_READ | PROT_EXEC, PROT_EXEC,
	};

	if (rnd(2)) {
		*flags = PICK(bad);
		*prot = PICK(heap_prots);
	} else {
		*flags = COPY;
		*prot = PICK(ro);
	}
}

/* get_large_pages() with one bad argument: exactly SPEC's errno. */
static void op_get_bad(void)
{
	unsigned long len = lpsz * (1 + rnd(2));
	int prot = RW, flags = MAP_PRIVATE, want = EINVAL, e, ok, v = rnd(5);
	long r;

	switch (v) {
	case 0: len = bad_len(); break;
	case 1: len = huge_len(); want = ENOMEM; break;
	case 2: prot = PICK(bad_prots); break;
	case 3: flags = PICK(bad_flags); break;
	default: bad_heap(&prot, &flags); break;
	}
	CALL(r, e, lpsys_get(0, len, prot, flags));
	ok = LP_OK(r);
	if (judge(ok, r, e, want, "get_large_pages(0, %#lx, %#x, %#x)", len,
		  prot, flags))
		W.n[v == 4 ? N_EINVAL_HEAP : want == EINVAL ? N_EINVAL_ARGS :
		    N_HUGE]++;
	else if (ok)
		lpsys_free(r);
	check_state("a refused get_large_pages");
}

/* A key: a live one half the time (attaches need one), else any. */
static int pick_key(void)
{
	int live[NKEYS], n = 0, k;

	for (k = 1; k <= NKEYS; k++)
		if (W.segs[k].live)
			live[n++] = k;
	return n && rnd(2) ? live[rnd(n)] : 1 + (int)rnd(NKEYS);
}

static int absent_key(void)
{
	int k, start = rnd(NKEYS);

	for (k = 0; k < NKEYS; k++)
		if (!W.segs[1 + (start + k) % NKEYS].live)
			return 1 + (start + k) % NKEYS;
	return 0;
}

enum { S_CREATE, S_ATTACH, S_EEXIST, S_LEN, S_EXEC, S_ENOENT };

/*
 * share_large_pages(), good arguments, one thing at a time wrong. A live
 * key: IPC_CREAT|IPC_EXCL is EEXIST; PROT_EXEC needs x in the mode
 * (EACCES); another length is EINVAL; else an attach (IPC_CREAT,
 * IPC_EXCL alone or no flag), charging nothing. An absent key: no
 * IPC_CREAT is ENOENT; else a create, as a get of its pages.
 */
static void op_share(void)
{
	static const int attach_prots[] = { RW, RW, RW, PROT_READ, PROT_READ, PROT_NONE };
	static const int attach_flags[] = { 0, 0, IPC_CREAT | 0600, IPC_CREAT, IPC_EXCL };
	static const int modes[] = { 0600, 0600, 0, 0640, 0700 };
	int k = pick_key(), prot = RW, flag, want = 0, why = 0, e, ok, kind;
	struct seg *s = &W.segs[k];
	long n = s->live ? s->pages : pick_pages(), r;
	unsigned long hint = 0;
	int v = rnd(100);

	if (W.nmaps && !rnd(5)) {
		const struct map *m = &W.maps[rnd(W.nmaps)];

		hint = m->addr + rnd(m->pages * lpsz);
	}
	/* A segment attached many times lives long and pins the charge. */
	if (s->live && s->nattach >= 4)
		v = rnd(36);
	if (s->live && v < 10) {
		kind = S_EEXIST;
		flag = IPC_CREAT | IPC_EXCL | 0600;
		want = EEXIST;
	} else if (s->live && v < 20) {
		kind = S_LEN;
		n = n > 1 && rnd(2) ? n - 1 : n + 1;
		flag = rnd(2) ? IPC_CREAT | 0600 : 0;
		prot = rnd(2) ? RW : PROT_READ;
		want = EINVAL;
	} else if (s->live && v < 36) {
		kind = S_EXEC;
		prot = rnd(2) ? PROT_READ | PROT_EXEC : RW | PROT_EXEC;
		flag = rnd(2) ? IPC_CREAT | 0600 : 0;
		want = s->mode & 0100 ? 0 : EACCES;
	} else if (s->live) {
		kind = S_ATTACH;
		prot = PICK(attach_prots);
		flag = PICK(attach_flags);
	} else if (v < 20) {
		kind = S_ENOENT;
		flag = rnd(2) ? 0 : IPC_EXCL;
		want = ENOENT;
	} else {
		/* The creator maps it RW or R: modes all let the owner do both. */
		kind = S_CREATE;
		flag = IPC_CREAT | (rnd(3) ? 0 : IPC_EXCL) | PICK(modes);
		prot = rnd(6) ? RW : PROT_READ;
		want = take_errno(n, &why);
	}
	CALL(r, e, lpsys_share(key_of(k), hint, n * lpsz, prot, flag));
	ok = LP_OK(r);
	if (!judge(ok, r, e, want, "share_large_pages(%d, %#lx, %ld pages, %#x, %s), %s",
		   key_of(k), hint, n, prot, flagstr(flag),
		   s->live ? "a live key" : "an absent key")) {
		if (ok)
			lpsys_unshare(r);
	} else if (ok && kind == S_CREATE) {
		made_seg(k, r, n, prot, flag);
	} else if (ok) {
		attached(k, r, prot);
	} else {
		switch (kind) {
		case S_CREATE: count_enomem(why); break;
		case S_EEXIST: W.n[N_EEXIST]++; break;
		case S_LEN: W.n[N_EINVAL_LEN]++; break;
		case S_EXEC: W.n[N_EACCES]++; break;
		case S_ENOENT: W.n[N_ENOENT]++; break;
		}
	}
	check_state("share_large_pages");
}

/*
 * share_large_pages() with one bad argument: key <= 0, a bad length,
 * prot or flag bit is EINVAL; an aligned length nothing can hold, for a
 * key that does not exist (an attach's length must be the segment's),
 * is ENOMEM.
 */
static void op_share_bad(void)
{
	static const int bad_keys[] = { 0, -1, INT_MIN, -KEY0 };
	static const int bad_bits[] = { 04000, 010000, 0100000, 0x10000, INT_MIN };
	int k = pick_key(), key = key_of(k), prot = RW, flag = IPC_CREAT | 0600;
	int want = EINVAL, what = rnd(5), e, ok;
	unsigned long len = (W.segs[k].live ? W.segs[k].pages : 1) * lpsz;
	long r;

	if (what == 4 && (k = absent_key())) {
		key = key_of(k);
		len = huge_len();
		want = ENOMEM;
	} else if (what == 4) {
		what = 1;
	}
	switch (what) {
	case 0: key = PICK(bad_keys); break;
	case 1: len = bad_len(); break;
	case 2: prot = PICK(bad_prots); break;
	case 3: flag |= PICK(bad_bits); break;
	}
	CALL(r, e, lpsys_share(key, 0, len, prot, flag));
	ok = LP_OK(r);
	if (judge(ok, r, e, want, "share_large_pages(%d, 0, %#lx, %#x, %s)",
		  key, len, prot, flagstr(flag)))
		W.n[want == EINVAL ? N_EINVAL_ARGS : N_HUGE]++;
	else if (ok)
		lpsys_unshare(r);
	check_state("a refused share_large_pages");
}

/*
 * free or unshare the start of mapping i: 0, whichever call and kind.
 * Its pages go back with a get mapping or a segment's last attach. Now
 * and then the same call again: that start is gone, EINVAL.
 */
static int release(int i, int unshare)
{
	const char *call = unshare ? "unshare_large_pages" : "free_large_pages";
	struct map m = W.maps[i];
	long r;
	int e;

	data_ok(&m, "before it is released");
	CALL(r, e, unshare ? lpsys_unshare(m.addr) : lpsys_free(m.addr));
	if (!judge(r == 0, r, e, 0, "%s(%#lx), the start of a %s mapping of %ld pages",
		   call, m.addr, m.key ? "keyed" : "get", m.pages)) {
		check_state(call);
		return 0;
	}
	forget(i);
	W.last_freed = m.addr;
	W.n[N_FREE]++;
	W.n[N_UNSHARE_KEYED] += m.key && unshare;
	W.n[N_CROSS] += (m.key != 0) != unshare;
	check_state(call);
	if (rnd(4))
		return 1;
	CALL(r, e, unshare ? lpsys_unshare(m.addr) : lpsys_free(m.addr));
	if (judge(r == 0, r, e, EINVAL, "%s(%#lx) again", call, m.addr))
		W.n[N_EINVAL_ADDR]++;
	check_state(call);
	return 1;
}

static void op_release(void)
{
	release(rnd(W.nmaps), rnd(2));
}

/* free or unshare of an address that starts no large-page mapping: EINVAL. */
static void op_release_bad(void)
{
	static const unsigned long special[] = {
		0, 4096, USER_TOP, USER_TOP - (4UL << 20), 0xfffff000UL,
	};
	const struct map *m = W.nmaps ? &W.maps[rnd(W.nmaps)] : NULL;
	int v = rnd(8), unshare = rnd(2), i, e;
	const char *what;
	unsigned long a;
	long r;

	if (v == 0 && m) {
		what = "inside a mapping";
		a = m->addr + 4096 * (1 + rnd(m->pages * lpsz / 4096 - 1));
	} else if (v == 1 && m && m->pages > 1) {
		what = "a large-page boundary inside a mapping";
		a = m->addr + lpsz * (1 + rnd(m->pages - 1));
	} else if (v == 2 && m) {
		what = "unaligned, in a mapping";
		a = m->addr + 1 + rnd(4095);
	} else if (v == 3) {
		what = "a normal mapping";
		a = (unsigned long)W.normal + 4096 * rnd(4);
	} else if (v == 4) {
		what = "a mapping freed before";
		a = W.last_freed;
	} else if (v == 5) {
		what = "random, aligned";
		a = rnd(USER_TOP / lpsz) * lpsz;
	} else if (v == 6) {
		what = "special";
		a = PICK(special);
	} else {
		what = "random";
		a = r32();
	}
	for (i = 0; i < W.nmaps; i++) {
		if (W.maps[i].addr == a) {
			what = "null (the address picked starts a mapping)";
			a = 0;
		}
	}
	CALL(r, e, unshare ? lpsys_unshare(a) : lpsys_free(a));
	if (judge(r == 0, r, e, EINVAL, "%s(%#lx), %s",
		  unshare ? "unshare_large_pages" : "free_large_pages", a, what))
		W.n[N_EINVAL_ADDR]++;
	check_state("a refused free/unshare");
}

/* Ask the test process (root) to write text to numlargepages or nr_pages. */
static int ask_root(int nr_pages, const char *text)
{
	struct req q = { .nr_pages = nr_pages };
	int ret;

	snprintf(q.text, sizeof(q.text), "%s", text);
	if (write(W.wfd, &q, sizeof(q)) != sizeof(q) ||
	    read(W.rfd, &ret, sizeof(ret)) != sizeof(ret)) {
		TH_LOG("the test process does not answer: %s", strerror(errno));
		_exit(1);
	}
	return ret;
}

/*
 * The pool, resized by root between calls, through numlargepages (a
 * delta) or nr_pages (absolute), towards 0..POOL_MAX pages, and a
 * third of the time below LIMIT, where a get within the limit can find
 * too few free pages. Growing by n adds 0..n pages, as many as the buddy
 * allocator gives, all free: take the kernel's number (check_state()
 * checks that Free moved with Total). Shrinking by n gives back exactly
 * min(n, free - reserved) pages: pages in use, and the free pages a
 * heap's fork reserved for its copies, are never taken. Text that is no
 * number: EINVAL, nothing changes.
 */
static void op_resize(void)
{
	static const char *const junk[] = { "abc", "1x", "1.5", "x1" };
	int nrp = W.has_nr_pages && rnd(2), ret;
	const char *file = nrp ? NR_PAGES : NUMLARGEPAGES, *j;
	long target = rnd(3) ? rnd(POOL_MAX + 1) : rnd(LIMIT), n = target - W.total;
	long t, f, m;
	char text[28];

	if (!rnd(8)) {
		j = PICK(junk);
		ret = ask_root(nrp, j);
		if (ret != -EINVAL)
			mismatch("writing \"%s\" to %s: %d (%s), expected EINVAL",
				 j, file, ret, strerror(-ret));
		else
			W.n[N_RESIZE_JUNK]++;
		check_state("a refused resize");
		return;
	}
	snprintf(text, sizeof(text), "%ld\n", nrp ? target : n);
	ret = ask_root(nrp, text);
	if (ret) {
		mismatch("writing %ld to %s: %d (%s), expected 0",
			 nrp ? target : n, file, ret, strerror(-ret));
		read_pool(&W.total, &f);	/* follow the kernel */
		return;
	}
	if (n > 0) {
		read_pool(&t, &f);
		if (t < W.total || t > W.total + n)
			mismatch("growing the pool from %ld by %ld pages (%s) made it %ld",
				 W.total, n, file, t);
		if (t < W.total + n) {
			W.n[N_GROW_SHORT]++;
			if (!W.short_logged++)
				TH_LOG("note: growing the pool from %ld by %ld pages gave %ld (the buddy allocator's choice)",
				       W.total, n, t - W.total);
		}
		W.n[N_GROW]++;
		W.total = t;
	} else if (n < 0) {
		m = -n < mavail() ? -n : mavail();
		W.n[N_SHRINK]++;
		W.n[N_SHRINK_RESV] += m < -n && m < mfree();
		W.n[N_SHRINK_IN_USE] += m < -n;
		W.total -= m;
		W.n[N_EMPTIED] += !W.total;
	} else {
		W.n[N_RESIZE_SAME]++;
	}
	check_state(nrp ? "a write to nr_pages" : "a write to numlargepages");
	t = read_long(NUMLARGEPAGES);
	f = W.has_nr_pages ? read_long(NR_PAGES) : W.total;
	if (t != W.total || f != W.total)
		mismatch("numlargepages reads %ld, nr_pages %ld: the pool has %ld pages",
			 t, f, W.total);
}

/* The worker itself may not resize the pool (SPEC 3: only root). */
static void op_resize_denied(void)
{
	int nrp = W.has_nr_pages && rnd(2);
	const char *file = nrp ? NR_PAGES : NUMLARGEPAGES;
	int ret = write_text(file, "1\n");

	if (ret != -EACCES && ret != -EPERM)
		mismatch("uid %d writing 1 to %s: %d (%s), expected EACCES or EPERM",
			 WORKER_UID, file, ret, strerror(-ret));
	else
		W.n[N_RESIZE_DENIED]++;
	check_state("a refused resize");
}

/*
 * RLIMIT_MEMLOCK 0 for a moment: a get and a create are EPERM (SPEC 2,
 * as mlock), bad arguments still EINVAL, an attach of a live segment
 * works: it charges nothing.
 */
static void op_memlock0(void)
{
	struct rlimit rl = { 0, LIMIT * lpsz };
	int k, e, prot, why;
	long n = 1 + rnd(2), r;

	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		mismatch("setrlimit(RLIMIT_MEMLOCK, 0): %s", strerror(errno));
		return;
	}
	W.memlock0 = 1;
	CALL(r, e, lpsys_get(0, n * lpsz, RW, MAP_SHARED));
	if (judge(LP_OK(r), r, e, take_errno(n, &why),
		  "get_large_pages(0, %ld pages, RW, MAP_SHARED) at RLIMIT_MEMLOCK 0", n))
		W.n[N_EPERM]++;
	else if (LP_OK(r))
		lpsys_free(r);
	check_state("a get at RLIMIT_MEMLOCK 0");

	CALL(r, e, lpsys_get(0, 0, RW, MAP_PRIVATE));
	if (judge(LP_OK(r), r, e, EINVAL,
		  "get_large_pages(0, 0, RW, MAP_PRIVATE) at RLIMIT_MEMLOCK 0"))
		W.n[N_EINVAL_ARGS]++;
	else if (LP_OK(r))
		lpsys_free(r);
	check_state("a bad get at RLIMIT_MEMLOCK 0");

	if ((k = absent_key())) {
		CALL(r, e, lpsys_share(key_of(k), 0, n * lpsz, RW, IPC_CREAT | 0600));
		if (judge(LP_OK(r), r, e, EPERM,
			  "share_large_pages(%d, 0, %ld pages, RW, IPC_CREAT|0600) at RLIMIT_MEMLOCK 0",
			  key_of(k), n))
			W.n[N_EPERM]++;
		else if (LP_OK(r))
			lpsys_unshare(r);
		check_state("a create at RLIMIT_MEMLOCK 0");
	}

	k = pick_key();
	if (W.segs[k].live && W.nmaps < MAXMAPS) {
		prot = rnd(2) ? RW : PROT_READ;
		CALL(r, e, lpsys_share(key_of(k), 0, W.segs[k].pages * lpsz, prot, 0));
		if (!judge(LP_OK(r), r, e, 0,
			   "share_large_pages(%d, 0, %ld pages, %#x, 0), a live key, at RLIMIT_MEMLOCK 0",
			   key_of(k), W.segs[k].pages, prot)) {
			if (LP_OK(r))
				lpsys_unshare(r);
		} else {
			W.n[N_ATTACH_AT_0]++;
			attached(k, r, prot);
		}
		check_state("an attach at RLIMIT_MEMLOCK 0");
	}

	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		mismatch("setrlimit(RLIMIT_MEMLOCK) back: %s", strerror(errno));
	W.memlock0 = 0;
}

static void op_check(void)
{
	int i;

	for (i = 0; i < W.nmaps; i++)
		data_ok(&W.maps[i], "a periodic check");
	check_state("a periodic check");
}

/* Take n pages for a probe: a get, or a new segment of PROBE_KEY. */
static long probe_take(long n, int viakey, int *e)
{
	long r;

	if (viakey)
		CALL(r, *e, lpsys_share(PROBE_KEY, 0, n * lpsz, RW,
					IPC_CREAT | IPC_EXCL | 0600));
	else
		CALL(r, *e, lpsys_get(0, n * lpsz, RW, MAP_PRIVATE));
	return r;
}

/*
 * The charge, proved from both sides. Where the pool is no limit, one
 * page more than RLIMIT_MEMLOCK leaves must be refused (the charge is no
 * less than the model's), and all it leaves must be had (no more).
 */
static void probe(void)
{
	long avail = LIMIT - W.charge, r;
	int viakey = rnd(2), e;
	const char *how = viakey ? "a new segment" : "a get";

	W.opname = "memlock probe";
	if (mavail() >= avail + 1) {
		r = probe_take(avail + 1, viakey, &e);
		if (judge(LP_OK(r), r, e, ENOMEM, "%s of %ld pages, one more than the limit leaves",
			  how, avail + 1))
			W.n[N_PROBE_OVER]++;
		else if (LP_OK(r))
			lpsys_free(r);
		check_state("a probe over the limit");
	}
	if (avail <= 0 || mavail() < avail)
		return;
	r = probe_take(avail, viakey, &e);
	if (!judge(LP_OK(r), r, e, 0, "%s of %ld pages, all the limit leaves", how,
		   avail))
		return;
	take(avail);
	W.extra = avail;
	check_state("a probe of all the limit leaves");
	if (!lp_zeroed(LP_PTR(r), avail * lpsz))
		mismatch("%s of %ld pages at %#lx is not zero", how, avail,
			 (unsigned long)r);
	CALL(r, e, lpsys_free(r));
	if (!judge(r == 0, r, e, 0, "free_large_pages() of the probe's %s", how))
		_exit(1);	/* the model cannot go on */
	take(-avail);
	W.extra = 0;
	W.n[N_PROBE_ALL]++;
	check_state("the probe's free");
	if (viakey) {
		CALL(r, e, lpsys_share(PROBE_KEY, 0, avail * lpsz, RW, 0));
		judge(LP_OK(r), r, e, ENOENT,
		      "share_large_pages(%d), the probe's key after its only detach",
		      PROBE_KEY);
		if (LP_OK(r))
			lpsys_unshare(r);
	}
}

/* ------------------------------------------------------- the fork */

/* What the worker asks its fork child: a page checked or written; exec. */
struct cmd {
	int op;
	unsigned long addr;
	uint32_t seed;
};

enum { C_CHECK, C_WRITE, C_EXEC };

/*
 * The fork child: does what it is asked, a step at a time, and answers
 * 1 (the page holds the tag, or is written) or 0; exits at the end of
 * its requests. C_EXEC: cat (which answers a byte with that byte) or
 * true, on the same pipes.
 */
static void child_serve(int cmd, int rep)
{
	struct cmd c;
	int ok;

	while (read(cmd, &c, sizeof(c)) == sizeof(c)) {
		if (c.op == C_EXEC) {
			fflush(stdout);
			if (dup2(cmd, 0) == 0 && dup2(rep, 1) == 1)
				execl(c.seed ? "/bin/true" : "/bin/cat",
				      c.seed ? "true" : "cat", (char *)NULL);
			_exit(127);
		}
		ok = 1;
		if (c.op == C_WRITE)
			lp_fill(LP_PTR(c.addr), lpsz, c.seed);
		else
			ok = holds(LP_PTR(c.addr), lpsz, c.seed);
		if (write(rep, &ok, sizeof(ok)) != sizeof(ok))
			break;
	}
	fflush(stdout);
	_exit(0);
}

/* Ask the child; its answer, or -1 if it does not answer. */
static int child_call(int op, unsigned long addr, uint32_t seed)
{
	struct cmd c = { op, addr, seed };
	int ok;

	if (write(C.cmd, &c, sizeof(c)) != sizeof(c) ||
	    read(C.rep, &ok, sizeof(ok)) != sizeof(ok)) {
		mismatch("the fork child does not answer: %s", strerror(errno));
		return -1;
	}
	return ok;
}

/* A heap of the child's that can be read, mostly one still shared. */
static struct cheap *pick_cheap(void)
{
	int all[MAXMAPS], sh[MAXMAPS], n = 0, nsh = 0, i;

	for (i = 0; i < C.nh; i++) {
		if (!(C.h[i].prot & PROT_READ))
			continue;
		all[n++] = i;
		if (C.h[i].shared)
			sh[nsh++] = i;
	}
	if (nsh && rnd(4))
		return &C.h[sh[rnd(nsh)]];
	return n ? &C.h[all[rnd(n)]] : NULL;
}

/*
 * The child inherits its parent's MAP_SHARED and keyed mappings (the
 * parent frees none of them while it lives) and its heaps, which fork()
 * handles in the order of their addresses (dup_mmap()'s): a heap of n
 * pages shares the parent's pages and reserves n free pages, charged to
 * RLIMIT_MEMLOCK and the misc cgroup as a get of n pages is, if the
 * limit and the free pages not yet reserved allow all n; else it is
 * copied into normal pages, taking and charging nothing. All or
 * nothing, a heap at a time.
 */
static void fork_plan(void)
{
	int i, best, done[MAXMAPS] = { 0 };
	struct cheap *c;
	struct map *m;

	C.nh = 0;
	C.kb = 0;
	for (i = 0; i < W.nmaps; i++) {
		m = &W.maps[i];
		C.kb += m->key || m->shared ? m->pages : 0;
	}
	for (;;) {
		for (best = -1, i = 0; i < W.nmaps; i++)
			if (W.maps[i].heap && !done[i] && (best < 0 ||
			    W.maps[i].addr < W.maps[best].addr))
				best = i;
		if (best < 0)
			break;
		done[best] = 1;
		m = &W.maps[best];
		c = &C.h[C.nh++];
		*c = (struct cheap){ .addr = m->addr, .pages = m->pages,
				     .prot = m->prot };
		memcpy(c->ps, m->ps, sizeof(c->ps));
		if (W.charge + m->pages > LIMIT || m->pages > mavail()) {
			W.n[N_FALLBACK]++;
			W.n[N_FALLBACK_POOL] += W.charge + m->pages <= LIMIT;
			continue;
		}
		c->large = c->parent = 1;
		c->shared = (1u << m->pages) - 1;
		W.charge += m->pages;
		W.resv += m->pages;
		C.kb += m->pages;
		W.n[N_FORK_RESV]++;
	}
	C.kb *= lpsz / 1024;
}

/*
 * The child goes (exit or exec): each heap's charge back; a page it
 * still shares gives its reservation back, a page of its own goes back
 * to the pool.
 */
static void child_gone(void)
{
	struct cheap *c;
	int i;

	for (i = 0; i < C.nh; i++) {
		c = &C.h[i];
		if (!c->large)
			continue;
		W.charge -= c->pages;
		W.resv -= popcount(c->shared);
		W.used -= c->pages - popcount(c->shared);
	}
	C.nh = 0;
	C.kb = 0;
}

/*
 * A write to page j of a heap that the parent and child may share: the
 * first copies the page for the writer, from a reserved page (a page in
 * use more, a reservation less); a page left to one side alone is
 * written in place.
 */
static void cow_write(struct cheap *c, long j, int by_child)
{
	if (c && c->large && (c->shared & 1u << j)) {
		c->shared &= ~(1u << j);
		W.used++;
		W.resv--;
		W.n[by_child ? N_COW_CHILD : N_COW_PARENT]++;
	} else if (c && c->large) {
		W.n[N_COW_ALONE]++;
	}
}

/* The child writes a page of a heap: the parent never sees it. */
static void child_write(void)
{
	struct cheap *c = pick_cheap();
	uint32_t seed = r32() | 1;
	long j;

	W.opname = "a write by the fork child";
	if (!c)
		return;
	j = rnd(c->pages);
	if (child_call(C_WRITE, c->addr + j * lpsz, seed) != 1)
		return;
	c->ps[j] = seed;
	cow_write(c, j, 1);
	check_state("a write by the fork child");
}

/* The child's heap that shares pages with the parent's m, or NULL. */
static struct cheap *sharer_of(const struct map *m)
{
	int i;

	for (i = 0; i < C.nh && C.pid; i++)
		if (C.h[i].parent && C.h[i].addr == m->addr)
			return &C.h[i];
	return NULL;
}

/* A readable heap of the parent's, mostly one still shared: or -1. */
static int pick_heap(void)
{
	int all[MAXMAPS], sh[MAXMAPS], n = 0, nsh = 0, i;
	struct cheap *c;

	for (i = 0; i < W.nmaps; i++) {
		if (!W.maps[i].heap || !(W.maps[i].prot & PROT_READ))
			continue;
		all[n++] = i;
		c = sharer_of(&W.maps[i]);
		if (c && c->shared)
			sh[nsh++] = i;
	}
	if (nsh && rnd(4))
		return sh[rnd(nsh)];
	return n ? all[rnd(n)] : -1;
}

/* The parent writes a page of a heap: the child never sees it. */
static void parent_write(void)
{
	int i = pick_heap();
	struct map *m;
	long j;

	W.opname = "a write by the parent";
	if (i < 0)
		return;
	m = &W.maps[i];
	j = rnd(m->pages);
	m->ps[j] = r32() | 1;
	lp_fill(LP_PTR(m->addr) + j * lpsz, lpsz, m->ps[j]);
	cow_write(sharer_of(m), j, 0);
	check_state("a write by the parent");
}

/*
 * The child's page holds what it held at fork() or wrote since: no
 * write of the parent's after fork() shows.
 */
static void child_check(void)
{
	struct cheap *c = pick_cheap();
	long j;
	int ok;

	W.opname = "a check by the fork child";
	if (!c)
		return;
	j = rnd(c->pages);
	ok = child_call(C_CHECK, c->addr + j * lpsz, c->ps[j]);
	if (ok == 1)
		W.n[N_CHILD_SAW]++;
	else if (!ok)
		mismatch("the fork child's page %ld of its heap at %#lx does not hold %s %#x",
			 j, c->addr, c->ps[j] ? "its tag" : "zeroes", c->ps[j]);
	check_state("a check by the fork child");
}

/*
 * One step while the child lives: either side writes or checks a heap's
 * page, the pool is resized, the charge probed, or the parent frees a
 * heap (whose shared pages the child keeps).
 */
static void fork_step(void)
{
	int i;

	switch (rnd(11)) {
	case 0:
	case 1:
	case 2: child_write(); break;
	case 3:
	case 4: parent_write(); break;
	case 5:
	case 6: child_check(); break;
	case 7: W.opname = "a check by the parent"; op_check(); break;
	case 8: W.opname = "pool resize, the child alive"; op_resize(); break;
	case 9: probe(); break;
	default:
		W.opname = "the parent frees a heap, the child alive";
		i = pick_heap();
		if (i >= 0)
			release(i, rnd(2));
		break;
	}
}

/* Everything the child held is back once exit or exec is done. */
static void settle_state(const char *after)
{
	SETTLE(read_long(RESV_PAGES), W.resv, 50);
	SETTLE(lp_nfree(), mfree(), 50);
	check_state(after);
}

/*
 * The child ends: exit at once, or exec (cat, which answers; or true,
 * which exits). After exec, and after the exit, nothing was copied and
 * every reservation is back.
 */
static void fork_end(void)
{
	struct cmd c = { C_EXEC, 0, 0 };
	int how = rnd(4), st, gone = 0;
	char x = 'x';

	W.opname = how < 2 ? "the fork child's exit" : "the fork child's exec";
	if (how >= 2) {
		c.seed = how == 3;
		if (write(C.cmd, &c, sizeof(c)) != sizeof(c))
			mismatch("the fork child does not take exec");
	}
	if (how == 2 && (write(C.cmd, &x, 1) != 1 || read(C.rep, &x, 1) != 1)) {
		mismatch("the fork child's exec of cat does not answer");
	} else if (how == 2) {
		child_gone();
		gone = 1;
		settle_state("the fork child's exec");
		W.n[N_FORK_EXEC]++;
	}
	close(C.cmd);
	while (waitpid(C.pid, &st, 0) < 0 && errno == EINTR)
		;
	close(C.rep);
	C.pid = 0;
	if (!gone)
		child_gone();
	settle_state("the fork child's end");
	if (!CHILD_EXITED(st, 0))
		mismatch("the fork child ended with status %#x", st);
}

/*
 * fork(), the child driven step by step over two pipes, so that the
 * model stays exact: after fork(), after each step and after the
 * child's exit or exec, the pool, the reservations, both sides'
 * LargePages:, the charges and the data are the model's.
 */
/* The pages of the parent's heaps. */
static long heap_pages(void)
{
	long n = 0;
	int i;

	for (i = 0; i < W.nmaps; i++)
		n += W.maps[i].heap ? W.maps[i].pages : 0;
	return n;
}

/*
 * Before a fork, mostly: room under the limit (other mappings freed,
 * then heaps but one, or all but heaps if there is none) and a heap (a
 * get), so that most forks share and some fall back.
 */
static void fork_prepare(void)
{
	int i, idx[MAXMAPS], n, heaps = rnd(2);
	long need;

	while (rnd(4)) {
		need = heap_pages() ? heap_pages() : LIMIT;
		if (W.charge + need <= LIMIT)
			break;
		for (i = 0, n = 0; i < W.nmaps; i++)
			if (!W.maps[i].heap || (heaps && W.charge > LIMIT / 2))
				idx[n++] = i;
		if (!n || !release(idx[rnd(n)], rnd(2)))
			break;
	}
	if (!heap_pages() && W.nmaps < MAXMAPS && rnd(8))
		op_get(1);
}

static void op_fork(void)
{
	int cmd[2], rep[2], i, n;

	fork_prepare();
	if (pipe2(cmd, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
		mismatch("pipe2: %s", strerror(errno));
		return;
	}
	W.opname = "fork";
	fork_plan();
	fflush(stdout);
	C.pid = fork();
	if (C.pid == 0) {
		close(cmd[1]);
		close(rep[0]);
		child_serve(cmd[0], rep[1]);
	}
	close(cmd[0]);
	close(rep[1]);
	C.cmd = cmd[1];
	C.rep = rep[0];
	if (C.pid < 0) {
		mismatch("fork: %s", strerror(errno));
		_exit(1);	/* the model cannot go on */
	}
	W.n[N_FORK]++;
	check_state("fork");
	/* The common case: one side writes first. */
	if (rnd(2))
		child_write();
	else if (rnd(2))
		parent_write();
	n = rnd(6);
	for (i = 0; i < n && W.mismatches < MAX_MISMATCHES; i++)
		fork_step();
	fork_end();
}

enum {
	O_GET, O_GET_BAD, O_SHARE, O_SHARE_BAD, O_FREE, O_FREE_BAD, O_RESIZE,
	O_RESIZE_DENIED, O_MEMLOCK0, O_CHECK, O_FORK, O_NR
};

static const struct {
	const char *name;
	int weight;
} optab[O_NR] = {
	[O_GET] = { "get", 20 },
	[O_GET_BAD] = { "hostile get", 8 },
	[O_SHARE] = { "share", 26 },
	[O_SHARE_BAD] = { "hostile share", 6 },
	[O_FREE] = { "free/unshare", 20 },
	[O_FREE_BAD] = { "bad free/unshare", 6 },
	[O_RESIZE] = { "pool resize", 6 },
	[O_RESIZE_DENIED] = { "resize by the worker", 1 },
	[O_MEMLOCK0] = { "RLIMIT_MEMLOCK 0", 2 },
	[O_CHECK] = { "data check", 3 },
	[O_FORK] = { "fork", 9 },
};

static void run_op(void)
{
	int o;

	o = PICK_WEIGHTED(optab, O_NR);
	if (o == O_FREE && !W.nmaps)
		o = O_GET;
	if ((o == O_GET || o == O_SHARE || o == O_MEMLOCK0) &&
	    W.nmaps >= MAXMAPS)
		o = O_FREE;
	W.opname = optab[o].name;
	switch (o) {
	case O_GET: op_get(0); break;
	case O_GET_BAD: op_get_bad(); break;
	case O_SHARE: op_share(); break;
	case O_SHARE_BAD: op_share_bad(); break;
	case O_FREE: op_release(); break;
	case O_FREE_BAD: op_release_bad(); break;
	case O_RESIZE: op_resize(); break;
	case O_RESIZE_DENIED: op_resize_denied(); break;
	case O_MEMLOCK0: op_memlock0(); break;
	case O_CHECK: op_check(); break;
	case O_FORK: op_fork(); break;
	}
}

/* ------------------------------------------------------- the worker */

/* Release everything: the charge back to 0, every key gone. */
static void cleanup(void)
{
	long r;
	int k, e;

	W.opname = "cleanup";
	while (W.nmaps)
		if (!release(W.nmaps - 1, rnd(2)))
			return;		/* reported; exit releases the rest */
	for (k = 1; k <= NKEYS + 1; k++) {
		int key = k <= NKEYS ? key_of(k) : PROBE_KEY;

		CALL(r, e, lpsys_share(key, 0, lpsz, PROT_READ, 0));
		judge(LP_OK(r), r, e, ENOENT,
		      "share_large_pages(%d, 0, 1 page, PROT_READ, 0) at the end", key);
		if (LP_OK(r))
			lpsys_unshare(r);
	}
	if (W.charge || W.used || W.resv || W.extra)
		mismatch("the model's charge is %ld at the end (%ld in use, %ld reserved)",
			 W.charge, W.used, W.resv);
	check_state("the cleanup");
	probe();		/* the whole limit is had again */
}

static void report(unsigned long ops)
{
	int i, few = 0;

	TH_LOG("%lu operations, seed %llu, pool %ld pages at the end, %d mismatches",
	       ops, seed, W.total, W.mismatches);
	for (i = 0; i < N_NR; i++) {
		TH_LOG("  %-44s %5ld (least %ld)%s", ntab[i].what, W.n[i],
		       ntab[i].least, W.n[i] < ntab[i].least ? "  TOO FEW" : "");
		few += W.n[i] < ntab[i].least;
	}
	if (few) {
		TH_LOG("%d kinds of result seen too seldom: a kernel that refuses (or allows) too much, or a run cut short",
		       few);
		harness_failed = 1;
	}
}

static void worker(int rfd, int wfd, long total)
{
	uint64_t s = seed;
	unsigned long ops;
	double soft;

	W.rng = splitmix(&s) | 1;
	W.rfd = rfd;
	W.wfd = wfd;
	W.total = total;
	W.opname = "setup";
	W.has_nr_pages = !access(NR_PAGES, F_OK);
	if (cgroup[0] && cg_enter(cgroup, getpid())) {
		TH_LOG("cannot enter %s: %s", cgroup, strerror(errno));
		_exit(1);
	}
	lp_set_memlock(LIMIT * lpsz);
	if (setgroups(0, NULL) || setresgid(WORKER_UID, WORKER_UID, WORKER_UID) ||
	    setresuid(WORKER_UID, WORKER_UID, WORKER_UID)) {
		TH_LOG("cannot become uid %d: %s", WORKER_UID, strerror(errno));
		_exit(1);
	}
	/* Not for a fork child's exec. */
	fcntl(rfd, F_SETFD, FD_CLOEXEC);
	fcntl(wfd, F_SETFD, FD_CLOEXEC);
	W.normal = mmap(NULL, 4 * 4096, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (W.normal == MAP_FAILED) {
		TH_LOG("mmap: %s", strerror(errno));
		_exit(1);
	}
	check_state("the start");
	probe();		/* a charge of 0: the whole limit is had */
	soft = now() + SOFT_SECS;
	for (W.op = 1; W.op <= NOPS && W.mismatches < MAX_MISMATCHES; W.op++) {
		if (now() > soft) {
			TH_LOG("stopping after %lu operations: %d s are up",
			       W.op - 1, SOFT_SECS);
			break;
		}
		run_op();
		if (W.op % PROBE_EVERY == 0)
			probe();
	}
	ops = W.op - 1;
	if (W.mismatches >= MAX_MISMATCHES)
		TH_LOG("stopped after %d mismatches", W.mismatches);
	cleanup();
	report(ops);
	fflush(stdout);
	CHILD_DONE();
}

/* ------------------------------------------------- the test process */

/* Write the worker's requests to the pool files; until it is gone. */
static void serve(int rfd, int wfd)
{
	struct req q;
	int ret;

	while (read(rfd, &q, sizeof(q)) == sizeof(q)) {
		q.text[sizeof(q.text) - 1] = '\0';
		ret = write_text(q.nr_pages ? NR_PAGES : NUMLARGEPAGES, q.text);
		if (write(wfd, &ret, sizeof(ret)) != sizeof(ret))
			break;
	}
}

/* A worker stuck in the kernel: kill it; if even that fails, give up. */
static void watchdog(int sig)
{
	static const char msg[] = "# oracle: the worker is stuck: killing it\n";
	static volatile sig_atomic_t fired;

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0 || fired++)
		_exit(1);
	kill(worker_pid, SIGKILL);
	alarm(30);
}

/*
 * Fork the worker on the pipes (requests req, replies rep) and serve it
 * under the watchdog until it is reaped (its status in *st); the pipes
 * closed. Its pid, or -1 if fork() failed.
 */
static pid_t run_worker(int req[2], int rep[2], long start, int *st)
{
	struct sigaction sa = { .sa_handler = watchdog, .sa_flags = SA_RESTART };
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(req[0]);
		close(rep[1]);
		worker(rep[0], req[1], start);
	}
	close(req[1]);
	close(rep[0]);
	if (pid > 0) {
		worker_pid = pid;
		sigaction(SIGALRM, &sa, NULL);
		alarm(WATCHDOG_SECS);
		serve(req[0], rep[1]);
		while (waitpid(pid, st, 0) < 0 && errno == EINTR)
			;
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		alarm(60);		/* for what is left */
	}
	close(req[0]);
	close(rep[1]);
	return pid;
}
/* lporacle_seed= from the kernel command line; room for a slow guest. */
__attribute__((constructor)) static void oracle_params(void)
{
	char val[32];

	seed = time_seed();
	if (cmdline_value("lporacle_seed=", val, sizeof(val)))
		seed = strtoull(val, NULL, 10);
	harness_timeout = WATCHDOG_SECS + 60;
}

TEST(fuzz_single_worker_knows_pool_and_charge_exactly)
{
	int req[2], rep[2], st = -1, k, ret;
	long total0, start, t;
	pid_t pid;

	lpsz = lp_size();
	ASSERT_TRUE(lpsz == 2UL << 20 || lpsz == 4UL << 20);
	total0 = lp_total();
	ASSERT_GT(total0, 0);
	/* The model counts every page in use: nobody else may hold one. */
	ASSERT_EQ(lp_settle_nfree(total0), total0);
	ASSERT_EQ(read_long(NUMLARGEPAGES), total0);
	for (k = KEY0; k <= PROBE_KEY; k++)
		ASSERT_TRUE(lp_key_absent(k, lpsz));
	TH_LOG("seed %llu (replay: lporacle_seed=%llu on the kernel command line); %d operations, uid %d, RLIMIT_MEMLOCK %d pages",
	       seed, seed, NOPS, WORKER_UID, LIMIT);

	/* A small pool, so that the worker can exhaust it. */
	ret = sysctl_resize(POOL - total0);
	start = lp_total();
	if (ret || start < POOL_LEAST || start > POOL ||
	    lp_nfree() != start) {
		TH_LOG("cannot make the pool %d pages (from %ld): %ld, %ld free, write: %s",
		       POOL, total0, start, lp_nfree(), strerror(-ret));
		EXPECT_EQ(pool_restore(total0), total0);
		ASSERT_TRUE(0);
	}
	if (pipe(req) || pipe(rep)) {
		TH_LOG("pipe: %s", strerror(errno));
		EXPECT_EQ(pool_restore(total0), total0);
		ASSERT_TRUE(0);
	}
	if (misc_built()) {
		ret = cg_new(cgroup, sizeof(cgroup), "oracle", "max");
		if (ret)
			TH_LOG("cannot make the worker's cgroup: %s", strerror(-ret));
		EXPECT_EQ(ret, 0);
	}
	pid = run_worker(req, rep, start, &st);

	/* The worker is gone: every page free, every key gone. */
	t = lp_total();
	EXPECT_EQ(lp_settle_nfree(t), t);
	for (k = KEY0; k <= PROBE_KEY; k++)
		EXPECT_TRUE(lp_key_absent(k, lpsz));
	EXPECT_EQ(pool_restore(total0), total0);
	EXPECT_EQ(lp_settle_nfree(total0), total0);
	if (cgroup[0]) {
		/* Every charge back; no limit, so no refusal counted. */
		EXPECT_EQ(settle_current(cgroup, 0), 0);
		EXPECT_EQ(cg_events(cgroup), 0);
		EXPECT_EQ(cg_rmdir(cgroup), 0);
	}
	ASSERT_GT(pid, 0);
	if (WIFSIGNALED(st))
		TH_LOG("the worker was killed by signal %d (%s)", WTERMSIG(st),
		       strsignal(WTERMSIG(st)));
	EXPECT_TRUE(CHILD_EXITED(st, 0));
}
