// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded, time-bounded fuzzer of the four large-page system calls.
 *
 * Four workers (two root, two nobody with RLIMIT_MEMLOCK of three large
 * pages), each with a helper thread, run random operations until the
 * deadline: get/share with good and hostile arguments (lengths, prot,
 * flags, keys, flag bits, hints near TASK_SIZE or inside mappings; heaps,
 * MAP_PRIVATE | LP_COPY_ON_FORK, and that flag where SPEC refuses it),
 * free/unshare of starts, middles and random addresses, munmap, mprotect,
 * mremap, madvise, mlock, mincore, msync and mmap(MAP_FIXED) over live
 * mappings, fork (the child checks and uses what it inherited; a heap's
 * pages shared copy-on-write or copied into normal pages: the parent's
 * writes after fork() are never seen by the child, nor the child's by
 * the parent; or the child exits or execs at once) and, in worker 0,
 * pool resizes, also while other workers' children hold reservations.
 * Every result is checked against what SPEC.md allows for the arguments
 * and for what the worker knows of the state, and the data of every
 * mapping against a model (the tags the worker wrote, zero elsewhere),
 * also by the helper thread through process_vm_readv() and
 * /proc/self/mem while the worker runs.
 *
 * Where the kernel has the misc cgroup controller, each worker runs in a
 * cgroup of its own, two of them with small largepage limits (ENOMEM is
 * allowed for every get and share anyway); after the run every cgroup's
 * charge must be back to 0.
 *
 * Kernel command line: lpfuzz_secs=N (default 40), lpfuzz_seed=S (default
 * from time and pid). To replay a run, boot with the seed it printed:
 * make test LP_FUZZ_SEED=S. Each worker makes the same choices again as
 * far as the results let it; the interleaving is not replayed.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include "lp.h"
#include "misccg.h"
#include "rng.h"

#define COPY		(MAP_PRIVATE | LP_COPY_ON_FORK)

#define PROT_ALL	(PROT_READ | PROT_WRITE | PROT_EXEC)
#define USER_TOP	0xc0000000UL	/* TASK_SIZE, i386 3G/1G */
#define WORKERS		4
#define ROOT_WORKERS	2
#define NKEYS		8		/* keys 1..8, shared by all workers */
#define MAXMAPS		10		/* mappings a worker holds at once */
#define NOBODY_PAGES	3		/* the nobody workers' RLIMIT_MEMLOCK */
#define MAX_SEG_PAGES	5		/* the longest keyed segment made */
#define MAX_GROWTH	3		/* worker 0 keeps the pool within +-3 */
#define SLOT_OFF	64		/* worker w's word: page w + 1, +64 */
#define SCRATCH		(4 * 4096)	/* a normal mapping */
#define SCRATCH_SEED	0x5c5c0001u
#define MAX_REPORTS	40
#define EB(e)		(1ULL << (e))
#define MFMT		"the %s mapping at %#lx+%#lx (prot %#x, key %d)"
#define MARGS(m)	kind_name[(m)->kind], (m)->addr, (m)->len, (m)->prot, (m)->key

enum { K_PRIV, K_SHARED, K_KEY, K_HEAP };
static const char *const kind_name[] = { "private", "shared", "keyed", "heap" };

struct map {
	unsigned long addr, len;
	int kind, key, prot, filled;
	uint32_t seed;			/* lp_fill() tag, when filled */
};

/* While a worker holds a key, all its attaches map one segment. */
struct keystate {
	int held, hdr_seen, slot_known;
	uint32_t slot;			/* what this worker's slot holds */
};

struct stats {
	unsigned long ops[WORKERS], fails[WORKERS], reads[WORKERS];
	unsigned long made[WORKERS], enomem[WORKERS];
};

static unsigned long long fz_seed;
static unsigned int fz_secs = 40;
static unsigned long lpsz;
static long pool_orig;
static struct stats *stats;
/* Each worker's cgroup (with misc) and its largepage limit. */
static char cgroups[WORKERS][128];
static const char *const cg_max[WORKERS] = { "max", "8", "2", "max" };

/* This worker's state: each worker is a process of its own. */
static struct {
	int id, root, child, memlock0, tainted, stop, memfd;
	uint64_t rng, hrng;		/* main thread's, helper's */
	unsigned long op, nfail, made, enomem, reads, last_freed;
	const char *opname;
	struct map maps[MAXMAPS];
	int nmaps;
	struct keystate ks[NKEYS + 1];
	char *scratch;
	long delta;			/* worker 0: pages added to the pool */
	pthread_mutex_t lock;		/* maps, ks and the data in them */
} W;

/* ------------------------------------------------------------ helpers */

static uint32_t r32(void)
{
	return xs(&W.rng) >> 32;
}

static uint32_t rnd(uint32_t n)
{
	return xs_below(&W.rng, n);
}

/* A fork child has no helper thread, and may inherit the lock held. */
static void lk(void)
{
	if (!W.child)
		pthread_mutex_lock(&W.lock);
}

static void ulk(void)
{
	if (!W.child)
		pthread_mutex_unlock(&W.lock);
}

static void failf(const char *fmt, ...)
{
	unsigned long n = __atomic_add_fetch(&W.nfail, 1, __ATOMIC_SEQ_CST);
	char msg[768];
	va_list ap;

	if (n > MAX_REPORTS) {
		if (n == MAX_REPORTS + 1)
			printf("# fuzz: worker %d: more failures, not shown\n",
			       W.id);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# fuzz: FAIL worker %d%s (%s), op %lu (%s), seed %llu: %s\n",
	       W.id, W.child ? " fork child" : "", W.root ? "root" : "nobody",
	       __atomic_load_n(&W.op, __ATOMIC_RELAXED),
	       __atomic_load_n(&W.opname, __ATOMIC_RELAXED), fz_seed, msg);
}

/*
 * Is the outcome (success, or failure with errno err) one SPEC allows:
 * success if allow_ok, a failure if err is in allow? If not, log the
 * call, its result and what was allowed, and return 0.
 */
static int judge(int ok, int err, long r, int allow_ok, uint64_t allow,
		 const char *fmt, ...)
{
	char call[400], want[160], got[80];
	size_t n = 0;
	va_list ap;
	int e;

	if (ok ? allow_ok : (err > 0 && err < 64 && (allow & EB(err))))
		return 1;
	va_start(ap, fmt);
	vsnprintf(call, sizeof(call), fmt, ap);
	va_end(ap);
	want[0] = '\0';
	if (allow_ok)
		n = snprintf(want, sizeof(want), "success");
	for (e = 1; e < 64 && n < sizeof(want) - 16; e++)
		if (allow & EB(e))
			n += snprintf(want + n, sizeof(want) - n, "%s%s",
				      n ? "|" : "", ename(e));
	if (ok)
		snprintf(got, sizeof(got), "success (%#lx)", r);
	else
		snprintf(got, sizeof(got), "%ld, errno %d %s", r, err, ename(err));
	failf("%s = %s; allowed: %s", call, got, want);
	return 0;
}

/* ------------------------------------------------------- data model */

static uint32_t hdr(int key)
{
	return 0x4c500000u ^ (uint32_t)key * 0x9e3779b1u;
}

static unsigned long slot_off(int w)
{
	return (unsigned long)(w + 1) * 4096 + SLOT_OFF;
}

/*
 * May the word at off hold v? Get mappings: lp_fill()'s tags if this
 * worker filled it, zero elsewhere (+8 of a shared one: a fork child's
 * mark). Keyed segments: word 0 is 0 or hdr(key) (whoever attaches one
 * writable writes hdr(key) there), worker w's slot is 0 or tagged w + 1
 * (exact for this worker once it wrote it), all else stays zero.
 */
static int word_ok(const struct map *m, unsigned long off, uint32_t v)
{
	const struct keystate *k = &W.ks[m->key];
	int w;

	if (m->kind == K_KEY) {
		if (off == 0)
			return v == hdr(m->key) || (!v && !k->hdr_seen);
		for (w = 0; w < WORKERS; w++) {
			if (off != slot_off(w))
				continue;
			if (w == W.id && k->slot_known)
				return v == k->slot;
			return !v || v >> 24 == (uint32_t)w + 1;
		}
		return !v;
	}
	if (m->kind == K_SHARED && off == 8)
		return 1;
	if (!m->filled)
		return !v;
	if (off % 4096 == 0)
		return v == (m->seed ^ (uint32_t)off);
	return v == (off == m->len - 4 ? ~m->seed : 0);
}

/* Read the mapping (if readable) and compare it with the model. */
static int check_map(const struct map *m, const char *why)
{
	static const unsigned long offs[] = { 0, 4, SLOT_OFF, 4092 };
	const char *p = LP_PTR(m->addr);
	unsigned long off, page;
	unsigned int i;
	uint32_t v;

	if (!(m->prot & PROT_READ))
		return 1;
	/* lp_check() logs the bad word; the loop below checks it too. */
	if (m->filled && W.nfail < MAX_REPORTS && !lp_check(p, m->len, m->seed)) {
		failf("%s: the tags of " MFMT " changed", why, MARGS(m));
		return 0;
	}
	/* The last page's +4092 is the mapping's last word. */
	for (page = 0; page < m->len; page += 4096) {
		for (i = 0; i < 4; i++) {
			off = page + offs[i];
			v = *(const volatile uint32_t *)(p + off);
			if (word_ok(m, off, v))
				continue;
			failf("%s: word at +%#lx of " MFMT " is %#x", why, off,
			      MARGS(m), v);
			return 0;
		}
	}
	return 1;
}

/* ----------------------------------------------------- bookkeeping */

static int overlaps(unsigned long a, unsigned long len, unsigned long b,
		    unsigned long blen)
{
	return a < b + blen && b < a + len;
}

/* A new mapping: aligned, below TASK_SIZE, over nothing this worker has. */
static int placement_ok(unsigned long a, unsigned long len, const char *what)
{
	int i;

	if (!a || a % lpsz || a + len > USER_TOP || a + len < a) {
		failf("%s gave %#lx+%#lx: not an aligned range below TASK_SIZE",
		      what, a, len);
		return 0;
	}
	for (i = 0; i < W.nmaps; i++) {
		if (overlaps(a, len, W.maps[i].addr, W.maps[i].len)) {
			failf("%s gave %#lx+%#lx, over " MFMT, what, a, len,
			      MARGS(&W.maps[i]));
			return 0;
		}
	}
	if (overlaps(a, len, (unsigned long)W.scratch, SCRATCH)) {
		failf("%s gave %#lx+%#lx, over the normal mapping at %p",
		      what, a, len, W.scratch);
		return 0;
	}
	return 1;
}

/* Check a new mapping against the model, write its tags, track it. */
static void track(long r, unsigned long len, int kind, int key, int prot,
		  int fresh)
{
	volatile uint32_t *p = (volatile uint32_t *)LP_PTR(r);
	struct keystate *k = &W.ks[key];
	struct map *m;

	if (W.nmaps == MAXMAPS) {	/* a hostile call that worked */
		lpsys_free(r);
		return;
	}
	m = &W.maps[W.nmaps];
	*m = (struct map){ r, len, kind, key, prot, 0, r32() | 1 };
	lk();
	W.nmaps++;
	if (kind == K_KEY && !k->held++ && fresh) {
		k->slot_known = 1;	/* a new segment: my slot is 0 */
		k->slot = 0;
	}
	check_map(m, fresh ? "new, not zero" : "attached");
	if (kind != K_KEY && (prot & RW) == RW) {
		lp_fill((char *)p, len, m->seed);
		m->filled = 1;
	} else if (kind == K_KEY && (prot & RW) == RW) {
		if (!p[0])
			p[0] = hdr(key);	/* all writers write the same */
		k->hdr_seen = 1;
		if (!W.child) {		/* a child leaves its parent's slot */
			k->slot = ((uint32_t)W.id + 1) << 24 | (W.op & 0xffffff);
			p[slot_off(W.id) / 4] = k->slot;
			k->slot_known = 1;
		}
	} else if (kind == K_KEY && (prot & PROT_READ) && p[0] == hdr(key)) {
		k->hdr_seen = 1;
	}
	ulk();
}

/* Forget mapping i (with the lock). */
static void untrack(int i)
{
	struct keystate *k = &W.ks[W.maps[i].key];

	if (W.maps[i].kind == K_KEY && --k->held == 0)
		k->hdr_seen = k->slot_known = 0;
	W.maps[i] = W.maps[--W.nmaps];
}

/* free or unshare the start of held mapping i: 0. */
static void release(int i, int unshare)
{
	struct map m = W.maps[i];
	long r;
	int e;

	if (!W.tainted)
		check_map(&m, "before free");
	lk();
	CALL(r, e, unshare ? lpsys_unshare(m.addr) : lpsys_free(m.addr));
	if (!W.tainted)
		judge(r == 0, e, r, 1, 0, "%s(%#lx), the start of " MFMT,
		      unshare ? "unshare_large_pages" : "free_large_pages",
		      m.addr, MARGS(&m));
	if (r == 0 || W.tainted) {
		untrack(i);
		W.last_freed = m.addr;
	}
	ulk();
}

static unsigned long held_len(int key)
{
	int i;

	for (i = 0; i < W.nmaps; i++)
		if (W.maps[i].kind == K_KEY && W.maps[i].key == key)
			return W.maps[i].len;
	return 0;
}

/* A page-aligned range in m: all of it, part, a large page, a page. */
static void sub_range(const struct map *m, unsigned long *s, unsigned long *l)
{
	unsigned long pages = m->len / 4096, a = 0, n = pages;

	switch (rnd(4)) {
	case 1:
		a = rnd(pages);
		n = 1 + rnd(pages - a);
		break;
	case 2:
		a = rnd(m->len / lpsz) * (lpsz / 4096);
		n = lpsz / 4096;
		break;
	case 3:
		a = rnd(pages);
		n = 1;
		break;
	}
	*s = m->addr + a * 4096;
	*l = n * 4096;
}

/* ------------------------------------------------- argument choices */

static unsigned long pool_max(void)
{
	return (unsigned long)(pool_orig + MAX_GROWTH) * lpsz;
}

static unsigned long hostile_len(void)
{
	switch (rnd(9)) {
	case 0: return 0;
	case 1: return 4096;
	case 2: return lpsz / 2;
	case 3: return lpsz * (1 + rnd(4)) + 4096 * (1 + rnd(16));
	case 4: return pool_max() + lpsz * (1 + rnd(64));
	case 5: return USER_TOP;
	case 6: return -(lpsz * (1 + rnd(4)));		/* wraps */
	case 7: return USER_TOP + lpsz * (1 + rnd(4));
	default: return r32() | 1;
	}
}

/* What the length alone makes of a call. */
static uint64_t len_errs(unsigned long len)
{
	if (!len || len % lpsz)
		return EB(EINVAL);
	return len > USER_TOP ? EB(ENOMEM) : 0;
}

enum { H_NONE, H_RANDOM, H_INSIDE, H_TOP, H_UNALIGNED, H_FREE };
static const char *const hint_name[] = {
	"none", "random", "inside a mapping", "near TASK_SIZE", "unaligned",
	"a free range",
};

static unsigned long pick_hint(int h)
{
	const struct map *m = W.nmaps ? &W.maps[rnd(W.nmaps)] : NULL;

	switch (h) {
	case H_RANDOM:
		return r32();
	case H_INSIDE:
		return m ? m->addr + rnd(m->len) :
			   (unsigned long)W.scratch + rnd(SCRATCH);
	case H_TOP:
		switch (rnd(4)) {
		case 0: return USER_TOP - lpsz * (1 + rnd(8));
		case 1: return USER_TOP - 1 - rnd(lpsz);
		case 2: return USER_TOP + lpsz * rnd(2);
		default: return USER_TOP - lpsz * (1 + rnd(4)) + 1 + rnd(4095);
		}
	case H_UNALIGNED:
		return rnd(USER_TOP / lpsz) * lpsz + 1 + rnd(lpsz - 1);
	default:
		return 0;
	}
}

/* ---------------------------------------------------- the operations */

/*
 * A heap's arguments: MAP_PRIVATE | LP_COPY_ON_FORK and a writable prot;
 * bad: the flag with MAP_SHARED, alone, or with a prot that cannot write.
 */
static void heap_args(int bad, int *prot, int *flags)
{
	static const int prots[] = { RW, RW, RW | PROT_EXEC, PROT_WRITE };
	static const int bad_heap_flags[] = {
		MAP_SHARED | LP_COPY_ON_FORK, LP_COPY_ON_FORK,
		COPY | MAP_SHARED,
	};

	*flags = COPY;
	*prot = PICK(prots);
	if (bad && rnd(2))
		*flags = PICK(bad_heap_flags);
	else if (bad)
		*prot &= ~PROT_WRITE;
}

/* SPEC's flags: MAP_PRIVATE or MAP_SHARED; LP_COPY_ON_FORK if writable. */
static int flags_ok(int flags, int prot)
{
	return flags == MAP_PRIVATE || flags == MAP_SHARED ||
	       (flags == COPY && (prot & PROT_WRITE));
}

/*
 * get_large_pages(). Bad len, prot or flags (LP_COPY_ON_FORK without
 * MAP_PRIVATE, or with a prot that cannot write, included): EINVAL
 * (ENOMEM for an aligned len above TASK_SIZE; any of these when several
 * are bad). Then
 * nobody with a zero limit: EPERM. More than the pool can ever hold, or
 * for nobody more than RLIMIT_MEMLOCK: ENOMEM. Else success or ENOMEM
 * (others may have emptied the pool or used nobody's limit). A hint
 * whose large page starts a range known to be free must be used.
 */
static void op_get(int hostile, unsigned long pages)
{
	int prot = PICK(good_prots), flags = rnd(2) ? MAP_SHARED : MAP_PRIVATE;
	int h = rnd(3) ? H_NONE : 1 + rnd(5), allow_ok = 0, ok, e, what;
	int kind;
	unsigned long len, hint = 0, want_at = 0;
	uint64_t allow;
	long r;

	if (!pages)
		pages = W.root || !rnd(4) ? 1 + rnd(4) : 1 + rnd(NOBODY_PAGES);
	len = pages * lpsz;
	if (!rnd(3))
		heap_args(0, &prot, &flags);
	if (hostile) {
		what = 1 + rnd(7);
		if (what & 1)
			len = hostile_len();
		if (what & 2)
			prot = PICK(bad_prots);
		if ((what & 4) && rnd(3))
			flags = PICK(bad_flags);
		else if (what & 4)
			heap_args(1, &prot, &flags);
	}
	allow = len_errs(len);
	if ((prot & ~PROT_ALL) || !flags_ok(flags, prot))
		allow |= EB(EINVAL);
	if (!allow) {
		allow = EB(ENOMEM);
		if (!W.root && W.memlock0)
			allow = EB(EPERM);
		else
			allow_ok = len <= pool_max() &&
				   (W.root || len <= NOBODY_PAGES * lpsz);
	}

	if (h == H_FREE && len && !(len % lpsz) && len <= 4 * lpsz) {
		/* With the lock the helper thread maps nothing meanwhile. */
		lk();
		want_at = lp_unmapped_range(len, lpsz);
		if (!want_at) {
			ulk();
			h = H_NONE;
		} else if (rnd(2)) {	/* an address in (want_at - lpsz, want_at] */
			hint = want_at - 4096 * rnd(lpsz / 4096) - rnd(4096);
		} else {
			hint = want_at;
		}
	} else {
		if (h == H_FREE)
			h = H_NONE;
		hint = pick_hint(h);
	}
	CALL(r, e, lpsys_get(hint, len, prot, flags));
	if (want_at)
		ulk();
	ok = LP_OK(r);
	W.enomem += !ok && e == ENOMEM;
	if (!judge(ok, e, r, allow_ok, allow,
		   "get_large_pages(%#lx [hint: %s], %#lx, %#x, %#x)",
		   hint, hint_name[h], len, prot, flags)) {
		if (ok)
			lpsys_free(r);
		return;
	}
	if (!ok)
		return;
	if (want_at && (unsigned long)r != want_at)
		failf("get_large_pages(%#lx, %#lx) = %#lx, but the range at %#lx was free",
		      hint, len, (unsigned long)r, want_at);
	if (!placement_ok(r, len, "get_large_pages")) {
		lpsys_free(r);
		return;
	}
	W.made++;
	kind = flags == MAP_SHARED ? K_SHARED : flags == COPY ? K_HEAP : K_PRIV;
	track(r, len, kind, 0, prot, 1);
}

static const int share_prots[] = {
	RW, RW, RW, PROT_READ, PROT_READ, PROT_NONE, PROT_READ | PROT_EXEC,
	PROT_WRITE,
};
static const int modes[] = { 0600, 0644, 0666, 0, 0640, 0444, 0660 };
static const int bad_flag_bits[] = { 04000, 010000, 0100000, 0x10000, INT_MIN };
static const int bad_keys[] = { 0, -1, INT_MIN, -7 };

/*
 * share_large_pages(). Bad key, len, prot or flag bits: EINVAL (ENOMEM
 * as for get). A key this worker holds exists: EEXIST with
 * IPC_CREAT|IPC_EXCL, else success if the length matches, EINVAL if not,
 * and for nobody EACCES too (it may not know the mode). Any other key may
 * be anyone's, of any length and mode: EINVAL, EACCES (nobody), EEXIST
 * (IPC_EXCL), ENOENT (no IPC_CREAT), ENOMEM or, with a zero limit, EPERM
 * (creating), or success if the length can be a segment's.
 */
static void op_share(int hostile)
{
	int key = 1 + rnd(NKEYS), prot = PICK(share_prots), c = rnd(8);
	int h = rnd(4) ? H_NONE : 1 + rnd(4), allow_ok = 0, ok, e, what;
	unsigned long len = (1 + (key - 1) % 4) * lpsz, hint, held;
	int flag, creat, excl;
	uint64_t allow;
	long r;

	flag = (c < 2 ? 0 : c < 5 ? IPC_CREAT : c < 7 ? IPC_CREAT | IPC_EXCL :
		IPC_EXCL) | PICK(modes);
	if (!rnd(6))		/* not the key's usual length */
		len = rnd(2) || len == lpsz ? len + lpsz : len - lpsz;
	if (hostile) {
		what = 1 + rnd(15);
		if (what & 1)
			key = PICK(bad_keys);
		if (what & 2)
			len = hostile_len();
		if (what & 4)
			prot = PICK(bad_prots);
		if (what & 8)
			flag |= PICK(bad_flag_bits);
	}
	hint = pick_hint(h);
	creat = flag & IPC_CREAT;
	excl = creat && (flag & IPC_EXCL);

	allow = len_errs(len);
	if (key <= 0 || (prot & ~PROT_ALL) ||
	    (flag & ~(IPC_CREAT | IPC_EXCL | 0777)))
		allow |= EB(EINVAL);
	held = allow ? 0 : held_len(key);
	if (held && excl) {
		allow = EB(EEXIST);
	} else if (held) {
		allow_ok = len == held;
		allow = (allow_ok ? 0 : EB(EINVAL)) | (W.root ? 0 : EB(EACCES));
	} else if (!allow) {
		allow_ok = len <= MAX_SEG_PAGES * lpsz;
		allow = EB(EINVAL) | (W.root ? 0 : EB(EACCES)) |
			(excl ? EB(EEXIST) : 0) | (creat ? 0 : EB(ENOENT));
		if (creat)
			allow |= !W.root && W.memlock0 ? EB(EPERM) : EB(ENOMEM);
	}

	CALL(r, e, lpsys_share(key, hint, len, prot, flag));
	ok = LP_OK(r);
	W.enomem += !ok && e == ENOMEM;
	if (!judge(ok, e, r, allow_ok, allow,
		   "share_large_pages(%d, %#lx [hint: %s], %#lx, %#x, %#o)%s",
		   key, hint, hint_name[h], len, prot, (unsigned int)flag,
		   held ? ", holding the key" : "")) {
		if (ok)
			lpsys_unshare(r);
		return;
	}
	if (!ok)
		return;
	if (!placement_ok(r, len, "share_large_pages")) {
		lpsys_unshare(r);
		return;
	}
	W.made++;
	track(r, len, K_KEY, key, prot, excl);
}

/* free/unshare of any address: 0 at the start of a held mapping, else EINVAL. */
static void op_free_bad(void)
{
	const struct map *m = W.nmaps ? &W.maps[rnd(W.nmaps)] : NULL;
	int i, hit = -1, unshare = rnd(2), v = rnd(7), e, heap;
	const char *what;
	unsigned long a;
	long r;

	if (v == 0 && m) {
		what = "in a mapping";
		a = m->addr + 4096 * (1 + rnd(m->len / 4096 - 1));
	} else if (v == 1 && m && m->len > lpsz) {
		what = "a large-page boundary in a mapping";
		a = m->addr + lpsz * (1 + rnd(m->len / lpsz - 1));
	} else if (v == 2 && m) {
		what = "unaligned, in a mapping";
		a = m->addr + 1 + rnd(4095);
	} else if (v <= 3) {
		what = "random";
		a = r32();
	} else if (v == 4) {
		what = "random, aligned";
		a = rnd(USER_TOP / lpsz) * lpsz;
	} else if (v == 5) {
		unsigned long normal[] = {
			(unsigned long)W.scratch, (unsigned long)W.scratch + 4096,
			(unsigned long)&W, (unsigned long)&a & ~4095UL,
			(unsigned long)stats,
		};

		what = "a normal mapping";
		a = PICK(normal);
	} else {
		unsigned long special[] = {
			0, 4096, USER_TOP, USER_TOP - lpsz, 0xffffffffUL,
			0xfffff000UL, W.last_freed, W.last_freed + lpsz,
		};

		what = "special";
		a = PICK(special);
	}
	for (i = 0; i < W.nmaps; i++)
		if (W.maps[i].addr == a)
			hit = i;
	/* A fork child's heap may be normal pages: not a large-page start. */
	heap = hit >= 0 && W.child && W.maps[hit].kind == K_HEAP;
	lk();
	CALL(r, e, unshare ? lpsys_unshare(a) : lpsys_free(a));
	judge(r == 0, e, r, hit >= 0, hit >= 0 && !heap ? 0 : EB(EINVAL), "%s(%#lx), %s%s",
	      unshare ? "unshare_large_pages" : "free_large_pages", a, what,
	      hit >= 0 ? ": the start of a live mapping" : "");
	if (r == 0 && hit >= 0) {
		untrack(hit);
		W.last_freed = a;
	}
	ulk();
}

/*
 * What SPEC refuses over any part of a large-page mapping: munmap,
 * mprotect, mremap (of it, or of a normal page onto it) and
 * mmap(MAP_FIXED) are EINVAL (MAP_FIXED_NOREPLACE: EEXIST; mprotect
 * asking PROT_WRITE of a mapping made without it may be EACCES), and
 * nothing changes. If one works, the worker's picture of its mappings is
 * wrong: it stops.
 */
/*
 * op_refused()'s mremap() of [s, s + l) of a mapping, in one of six ways
 * (w): grown in place, shrunk or moved, moved to a free range, with
 * MREMAP_DONTUNMAP, the "duplicate" l = 0, or a normal page onto it.
 * Described in desc; its result, errno in *e.
 */
static long refused_mremap(unsigned long s, unsigned long l, int w,
			   char *desc, size_t size, int *e)
{
	unsigned long nl = l, to = 0;
	int fl = 0;
	long r;

	if (w == 0) {
		nl = l + 4096 * (1 + rnd(16));
	} else if (w == 1) {
		nl = 4096 * (1 + rnd(l / 4096));
		fl = MREMAP_MAYMOVE;
	} else if (w == 2) {
		to = lp_unmapped_range(l, 4096);
		fl = MREMAP_MAYMOVE | MREMAP_FIXED;
	} else if (w == 3) {
		fl = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
	} else if (w == 4) {
		l = 0;		/* the "duplicate" special case */
		fl = MREMAP_MAYMOVE;
	} else {		/* a normal page onto it */
		to = s;
		s = (unsigned long)W.scratch;
		l = nl = 4096;
		fl = MREMAP_MAYMOVE | MREMAP_FIXED;
	}
	snprintf(desc, size, "mremap(%#lx, %#lx, %#lx, %#x, %#lx)", s, l, nl,
		 fl, to);
	CALL(r, *e, mremap((void *)s, l, nl, fl, (void *)to));
	return r;
}

static void op_refused(void)
{
	static const int mprots[] = {
		PROT_NONE, PROT_READ, RW, RW | PROT_EXEC, PROT_READ | PROT_EXEC,
		PROT_WRITE, PROT_READ | 0x10000, PROT_READ | PROT_GROWSDOWN,
	};
	static const int mflags[] = {
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
	};
	struct map *m = &W.maps[rnd(W.nmaps)];
	int v = rnd(4), w = rnd(6), np, fl = 0, e;
	unsigned long s, l, below = 4096 * (1 + rnd(16));
	uint64_t allow = EB(EINVAL);
	char desc[96];
	long r;

	sub_range(m, &s, &l);
	lk();
	if (v == 0) {			/* munmap */
		if (w == 0) {		/* from a neighbour below into it */
			s = m->addr - below;
			l = below + 4096 * (1 + rnd(m->len / 4096));
		} else if (w == 1) {	/* all of it and around it */
			s = m->addr - below;
			l = below + m->len + 4096 * rnd(16);
		} else if (w == 2) {
			s += 1 + rnd(4095);
		}
		snprintf(desc, sizeof(desc), "munmap(%#lx, %#lx)", s, l);
		CALL(r, e, munmap((void *)s, l));
	} else if (v == 1) {		/* mprotect, in it */
		np = w ? PICK(mprots) : m->prot;
		if (!rnd(8))
			s += 1 + rnd(4095);
		if ((np & PROT_WRITE) && !(m->prot & PROT_WRITE))
			allow |= EB(EACCES);
		snprintf(desc, sizeof(desc), "mprotect(%#lx, %#lx, %#x)", s, l, np);
		CALL(r, e, mprotect((void *)s, l, np));
	} else if (v == 2) {		/* mremap */
		r = refused_mremap(s, l, w, desc, sizeof(desc), &e);
	} else {			/* mmap over it */
		fl = PICK(mflags);
		if (fl & MAP_FIXED_NOREPLACE)
			allow = EB(EEXIST);
		if (w == 0) {		/* from a neighbour below into it */
			s = m->addr - below;
			l = below + 4096 * (1 + rnd(m->len / 4096));
		} else if (w == 1 && s + l == m->addr + m->len &&
			   s + l + below <= USER_TOP) {
			l += below;	/* past its end */
		}
		snprintf(desc, sizeof(desc), "mmap(%#lx, %#lx, RW, %#x)", s, l, fl);
		CALL(r, e, mmap((void *)s, l, RW, fl, -1, 0));
	}
	ulk();
	if (!judge(r != -1, e, r, 0, allow, "%s over " MFMT, desc, MARGS(m))) {
		if (r != -1)
			W.tainted = 1;
		return;
	}
	if (v == 2 && w == 5 && !lp_check(W.scratch, SCRATCH, SCRATCH_SEED))
		failf("%s changed the normal page", desc);
	if (!rnd(4))
		check_map(m, desc);
}

static const int advices[] = {
	MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
	MADV_DONTNEED, 5, 6, 7, MADV_FREE, MADV_REMOVE, MADV_DONTFORK,
	MADV_DOFORK, MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_HUGEPAGE,
	MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK,
	MADV_KEEPONFORK, MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ,
	MADV_POPULATE_WRITE, MADV_DONTNEED_LOCKED, MADV_COLLAPSE, 26, 99,
	MADV_HWPOISON, MADV_SOFT_OFFLINE, -1, INT_MAX,
};

/*
 * madvise in a mapping. NORMAL, RANDOM, SEQUENTIAL, DONTDUMP, DODUMP: 0
 * over the whole mapping; over part of it the vma would have to split,
 * which may be refused (EINVAL). WILLNEED: 0. POPULATE_READ/WRITE: 0, or
 * EINVAL where the mapping is not readable/writable. HWPOISON and
 * SOFT_OFFLINE: EINVAL (nobody: EPERM). Any other advice: EINVAL.
 */
static void op_madvise(void)
{
	struct map *m = &W.maps[rnd(W.nmaps)];
	int a = PICK(advices), allow_ok = 0, e;
	uint64_t allow = EB(EINVAL);
	unsigned long s, l;
	long r;

	sub_range(m, &s, &l);
	switch (a) {
	case MADV_NORMAL:
	case MADV_RANDOM:
	case MADV_SEQUENTIAL:
	case MADV_DONTDUMP:
	case MADV_DODUMP:
		allow_ok = 1;
		if (s == m->addr && l == m->len)
			allow = 0;
		break;
	case MADV_WILLNEED:
		allow_ok = 1;
		allow = 0;
		break;
	case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE:
		allow_ok = !!(m->prot & (a == MADV_POPULATE_READ ?
					 PROT_READ : PROT_WRITE));
		allow = allow_ok ? 0 : EB(EINVAL);
		break;
	case MADV_HWPOISON:
	case MADV_SOFT_OFFLINE:
		allow |= W.root ? 0 : EB(EPERM);
		break;
	}
	lk();
	CALL(r, e, madvise((void *)s, l, a));
	ulk();
	if (!judge(!r, e, r, allow_ok, allow, "madvise(%#lx, %#lx, %d) in " MFMT,
		   s, l, a, MARGS(m))) {
		if (!r && !allow_ok)
			W.tainted = 1;
		return;
	}
	if (!rnd(4))
		check_map(m, "after madvise");
}

/*
 * What SPEC accepts on a mapping. mlock: 0 (nobody: EPERM with a zero
 * limit, ENOMEM over it; PROT_NONE may not populate: ENOMEM), munlock:
 * 0. mincore: 0, all resident. msync: 0 (MS_ASYNC|MS_SYNC: EINVAL). A
 * normal mmap with a hint inside it: placed elsewhere.
 */
static void op_accepted(int v)
{
	static const int msf[] = {
		MS_ASYNC, MS_SYNC, MS_INVALIDATE, MS_ASYNC | MS_INVALIDATE,
		MS_SYNC | MS_INVALIDATE, MS_ASYNC | MS_SYNC,
	};
	static unsigned char vec[MAX_SEG_PAGES * 1024];
	struct map *m = &W.maps[rnd(W.nmaps)];
	int allow_ok = 1, f, e, i;
	unsigned long s, l, a;
	uint64_t allow = 0;
	long r;

	sub_range(m, &s, &l);
	if (v < 0)
		v = rnd(4);
	if (v == 0) {
		if (!W.root && W.memlock0) {
			allow_ok = 0;
			allow = EB(EPERM);
		} else if (!W.root && l > NOBODY_PAGES * lpsz) {
			allow_ok = 0;
			allow = EB(ENOMEM);
		} else if (!(m->prot & PROT_ALL)) {
			allow = EB(ENOMEM);
		}
		CALL(r, e, mlock((void *)s, l));
		judge(!r, e, r, allow_ok, allow, "mlock(%#lx, %#lx) in " MFMT "%s",
		      s, l, MARGS(m), W.memlock0 ? ", RLIMIT_MEMLOCK 0" : "");
		CALL(r, e, munlock((void *)s, l));
		judge(!r, e, r, 1, 0, "munlock(%#lx, %#lx) in " MFMT, s, l, MARGS(m));
	} else if (v == 1) {
		if (l / 4096 > sizeof(vec))
			l = sizeof(vec) * 4096;
		memset(vec, 0, sizeof(vec));
		CALL(r, e, mincore((void *)s, l, vec));
		if (judge(!r, e, r, 1, 0, "mincore(%#lx, %#lx) in " MFMT, s, l, MARGS(m)))
			for (a = 0; !r && a < l / 4096; a++)
				if (!(vec[a] & 1)) {
					failf("mincore(%#lx, %#lx): page %lu not resident",
					      s, l, a);
					break;
				}
	} else if (v == 2) {
		f = PICK(msf);
		allow_ok = !((f & MS_ASYNC) && (f & MS_SYNC));
		CALL(r, e, msync((void *)s, l, f));
		judge(!r, e, r, allow_ok, allow_ok ? 0 : EB(EINVAL),
		      "msync(%#lx, %#lx, %#x) in " MFMT, s, l, f, MARGS(m));
	} else {
		l = 4096 * (1 + rnd(4));
		lk();
		CALL(r, e, mmap((void *)s, l, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		ulk();
		if (!judge(r != -1, e, r, 1, 0, "mmap(%#lx, %#lx, RW, MAP_PRIVATE|MAP_ANONYMOUS), hint in " MFMT,
			   s, l, MARGS(m)))
			return;
		for (i = 0; i < W.nmaps; i++)
			if (overlaps(r, l, W.maps[i].addr, W.maps[i].len))
				failf("mmap(%#lx, %#lx) = %#lx, over " MFMT, s, l,
				      (unsigned long)r, MARGS(&W.maps[i]));
		CALL(a, e, munmap((void *)r, l));
		judge(!a, e, a, 1, 0, "munmap(%#lx, %#lx) of a normal mapping", r, l);
	}
}

/* Rewrite the heaps with new tags (both sides write only their own). */
static void heaps_rewrite(void)
{
	struct map *m;
	int i;

	lk();
	for (i = 0; i < W.nmaps; i++) {
		m = &W.maps[i];
		if (m->kind != K_HEAP || !m->filled)
			continue;
		m->seed = r32() | 1;
		lp_fill(LP_PTR(m->addr), m->len, m->seed);
	}
	ulk();
}

static int heap_count(void)
{
	int i, n = 0;

	for (i = 0; i < W.nmaps; i++)
		n += W.maps[i].kind == K_HEAP;
	return n;
}

/*
 * A fork child with heaps: it tells its parent (sync[1]) that it has
 * checked what it inherited, and waits (sync[0]) until the parent has
 * rewritten its heaps; then its own heaps still hold what they held at
 * fork(). It rewrites them in turn, which the parent must not see.
 */
static void child_heaps(int sync[2])
{
	char c = 'c';
	int i;

	if (sync[0] < 0)
		return;
	if (write(sync[1], &c, 1) != 1 || read(sync[0], &c, 1) != 1) {
		failf("the fork child's parent does not answer: %s",
		      strerror(errno));
		return;
	}
	for (i = 0; i < W.nmaps; i++)
		if (W.maps[i].kind == K_HEAP)
			check_map(&W.maps[i], "the parent's write after fork() seen by the child");
	if (rnd(3))
		heaps_rewrite();
}

/* Free or unshare a mapping the child holds, not a heap: maybe normal pages. */
static void child_release(void)
{
	int i, n = 0, idx[MAXMAPS];

	for (i = 0; i < W.nmaps; i++)
		if (W.maps[i].kind != K_HEAP)
			idx[n++] = i;
	if (n)
		release(idx[rnd(n)], rnd(2));
}

/*
 * fork: private mappings are not in the child (mincore ENOMEM, free
 * EINVAL); shared and keyed ones hold the parent's data, and a write to
 * a shared one is seen by the parent; heaps hold the parent's data at
 * fork() and nothing either side writes later (child_heaps()). The
 * child attaches a key and frees something, then exits with its number
 * of failures; or it exits, or execs true, at once.
 */
static void child_main(uint32_t mark, int sync[2])
{
	unsigned long base = W.nfail;	/* the parent's: one report cap */
	unsigned char vec[1];
	int i, e;
	long r;

	W.child = 1;
	W.opname = "fork child";
	if (heap_count() && !rnd(4)) {
		if (rnd(2))
			execl("/bin/true", "true", (char *)NULL);
		_exit(0);
	}
	for (i = W.nmaps - 1; i >= 0; i--) {
		if (W.maps[i].kind != K_PRIV)
			continue;
		CALL(r, e, mincore((void *)W.maps[i].addr, 4096, vec));
		judge(!r, e, r, 0, EB(ENOMEM), "mincore(%#lx), in the parent's private mapping",
		      W.maps[i].addr);
		if (!rnd(4)) {
			CALL(r, e, lpsys_free(W.maps[i].addr));
			judge(!r, e, r, 0, EB(EINVAL), "free_large_pages(%#lx), the parent's private mapping",
			      W.maps[i].addr);
		}
		untrack(i);
	}
	for (i = 0; i < W.nmaps; i++) {
		check_map(&W.maps[i], "inherited");
		if (W.maps[i].kind == K_SHARED && W.maps[i].filled)
			*(volatile uint32_t *)(LP_PTR(W.maps[i].addr) + 8) = mark;
	}
	child_heaps(sync);
	op_share(!rnd(4));
	if (W.nmaps && rnd(2))
		child_release();
	else if (rnd(2))
		op_free_bad();
	fflush(stdout);
	_exit(W.nfail - base > 255 ? 255 : (int)(W.nfail - base));
}

/*
 * The parent's side of child_heaps(): once the child has checked what
 * it inherited, rewrite the heaps (a copy of each page the child still
 * shares, or a write in place where the fork copied into normal pages).
 * The child may have exited or exec'd at once instead (EOF): 0.
 */
static int parent_heaps(int sync[2])
{
	int full = 1;
	char c;

	if (sync[0] < 0)
		return 1;
	if (read(sync[0], &c, 1) == 1) {
		heaps_rewrite();
		if (write(sync[1], &c, 1) != 1)
			failf("the fork child does not take its answer: %s",
			      strerror(errno));
	} else {
		full = 0;
	}
	close(sync[0]);
	close(sync[1]);
	return full;
}

/* Two pipes for child_heaps(), the child's and the parent's ends. */
static void heap_pipes(int child[2], int parent[2])
{
	int up[2], down[2];

	child[0] = child[1] = parent[0] = parent[1] = -1;
	if (!heap_count())
		return;
	if (pipe2(up, O_CLOEXEC) || pipe2(down, O_CLOEXEC)) {
		failf("pipe2: %s", strerror(errno));
		return;
	}
	child[0] = down[0];
	child[1] = up[1];
	parent[0] = up[0];
	parent[1] = down[1];
}

static void op_fork(void)
{
	uint32_t mark = 0xc4000000u | (W.op & 0xffffff), v;
	int i, st, e, child[2], parent[2], full = 0;
	pid_t pid;

	heap_pipes(child, parent);
	fflush(stdout);
	CALL(pid, e, fork());
	if (pid == 0) {
		if (parent[0] >= 0) {
			close(parent[0]);
			close(parent[1]);
		}
		child_main(mark, child);
	}
	if (child[0] >= 0) {
		close(child[0]);
		close(child[1]);
	}
	if (pid < 0 && parent[0] >= 0) {
		close(parent[0]);
		close(parent[1]);
		/* SPEC: ENOMEM where neither the pool nor normal pages can copy. */
		if (e == ENOMEM)
			return;
	}
	if (pid > 0)
		full = parent_heaps(parent);
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		failf("fork or waitpid: %s", strerror(errno));
		return;
	}
	if (WIFSIGNALED(st)) {
		failf("the fork child was killed by signal %d (%s)",
		      WTERMSIG(st), strsignal(WTERMSIG(st)));
		return;
	}
	if (WEXITSTATUS(st)) {
		__atomic_add_fetch(&W.nfail, WEXITSTATUS(st), __ATOMIC_SEQ_CST);
		return;
	}
	for (i = 0; i < W.nmaps; i++) {
		if (W.maps[i].kind == K_HEAP)
			check_map(&W.maps[i], "a fork child's write seen by the parent");
		/* A child that exited at once marked nothing. */
		if (W.maps[i].kind != K_SHARED || !W.maps[i].filled || !full)
			continue;
		v = *(volatile uint32_t *)(LP_PTR(W.maps[i].addr) + 8);
		if (v != mark)
			failf("a fork child's write to " MFMT " is not seen: %#x, not %#x",
			      MARGS(&W.maps[i]), v, mark);
	}
}

/* One read of /proc/meminfo: the counters are consistent. */
static void op_meminfo(void)
{
	long total = -1, nfree = -1, kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];

	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "LargePages_Total: %ld", &total);
		sscanf(line, "LargePages_Free: %ld", &nfree);
		sscanf(line, "LargePageSize: %ld", &kb);
	}
	if (f)
		fclose(f);
	if (kb * 1024 != (long)lpsz || total < pool_orig - MAX_GROWTH ||
	    total > pool_orig + MAX_GROWTH || nfree < 0 || nfree > total)
		failf("/proc/meminfo: LargePages_Total %ld, LargePages_Free %ld, LargePageSize %ld kB (the pool had %ld)",
		      total, nfree, kb, pool_orig);
}

/*
 * The pool. Worker 0, the only one to change it, grows or shrinks it by
 * 1..3 within MAX_GROWTH of its size (0, and the total moves as asked,
 * by up to that much), or writes text that is no integer (EINVAL,
 * nothing changes). Worker 1 writes 0: 0. Nobody may not write: EACCES
 * (or EPERM).
 */
static void op_pool(void)
{
	static const char *const bad[] = {
		"abc", "1x", " ", "--1", "0x1", "+-2", "1 2",
		"111111111111111111111111111111",
	};
	int n = 1 + rnd(3), grow = rnd(2), ret;
	const char *txt = PICK(bad);
	long t0, t1;

	if (W.id != 0) {
		ret = sysctl_resize(W.root ? 0 : 1);
		judge(!ret, -ret, ret, W.root, W.root ? 0 : EB(EACCES) | EB(EPERM),
		      "write %d to %s", !W.root, NUMLARGEPAGES);
		return;
	}
	t0 = lp_total();
	if (!rnd(4)) {
		ret = write_text(NUMLARGEPAGES, txt);
		judge(!ret, -ret, ret, 0, EB(EINVAL), "write \"%s\" to %s",
		      txt, NUMLARGEPAGES);
		if ((t1 = lp_total()) != t0)
			failf("writing \"%s\" to %s took the pool from %ld to %ld",
			      txt, NUMLARGEPAGES, t0, t1);
		return;
	}
	if (grow && W.delta + n > MAX_GROWTH)
		grow = 0;
	else if (!grow && W.delta - n < -MAX_GROWTH)
		grow = 1;
	if (grow && W.delta + n > MAX_GROWTH)
		n = MAX_GROWTH - W.delta;
	if (!grow && W.delta - n < -MAX_GROWTH)
		n = MAX_GROWTH + W.delta;
	if (n <= 0)
		return;
	n = grow ? n : -n;
	ret = sysctl_resize(n);
	judge(!ret, -ret, ret, 1, 0, "write %d to %s", n, NUMLARGEPAGES);
	t1 = lp_total();
	if (n > 0 ? (t1 < t0 || t1 > t0 + n) : (t1 > t0 || t1 < t0 + n))
		failf("writing %d to %s took the pool from %ld to %ld pages",
		      n, NUMLARGEPAGES, t0, t1);
	else if (read_long(NUMLARGEPAGES) != t1)
		failf("%s reads %ld, meminfo %ld", NUMLARGEPAGES,
		      read_long(NUMLARGEPAGES), t1);
	if (t1 >= 0 && t0 >= 0)
		W.delta += t1 - t0;
}

/* nobody with a zero soft RLIMIT_MEMLOCK: creating and mlock are EPERM. */
static void op_memlock0(void)
{
	struct rlimit rl = { 0, NOBODY_PAGES * lpsz };

	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		failf("setrlimit(RLIMIT_MEMLOCK, 0): %s", strerror(errno));
		return;
	}
	W.memlock0 = 1;
	op_get(0, 0);
	if (W.nmaps)
		op_accepted(0);
	if (W.nmaps < MAXMAPS)
		op_share(0);
	W.memlock0 = 0;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		failf("setrlimit(RLIMIT_MEMLOCK) back: %s", strerror(errno));
}

/* root: mlockall, a get with it in force, munlockall: all 0. */
static void op_mlockall(void)
{
	static const int fl[] = {
		MCL_CURRENT, MCL_FUTURE, MCL_CURRENT | MCL_FUTURE,
		MCL_FUTURE | MCL_ONFAULT, 0, MCL_ONFAULT,
	};
	int f = PICK(fl), valid = !!(f & (MCL_CURRENT | MCL_FUTURE)), e;
	long r;

	CALL(r, e, mlockall(f));
	judge(!r, e, r, valid, valid ? 0 : EB(EINVAL), "mlockall(%#x)", f);
	if (r)
		return;
	op_get(0, 1 + rnd(2));
	CALL(r, e, munlockall());
	judge(!r, e, r, 1, 0, "munlockall()");
}

static void op_check(void)
{
	if (W.nmaps)
		check_map(&W.maps[rnd(W.nmaps)], "a periodic check");
	if (!lp_check(W.scratch, SCRATCH, SCRATCH_SEED))
		failf("the normal mapping at %p changed", W.scratch);
	op_meminfo();
}

enum {
	O_GET, O_GET_BAD, O_SHARE, O_SHARE_BAD, O_FREE, O_FREE_BAD, O_CHECK,
	O_REFUSED, O_MADVISE, O_ACCEPTED, O_FORK, O_POOL, O_MEMLOCK0,
	O_MLOCKALL, O_NR
};

static const struct {
	const char *name;
	int weight, needs_map;
} optab[O_NR] = {
	[O_GET] = { "get", 15, 0 },
	[O_GET_BAD] = { "hostile get", 6, 0 },
	[O_SHARE] = { "share", 15, 0 },
	[O_SHARE_BAD] = { "hostile share", 5, 0 },
	[O_FREE] = { "free", 16, 1 },
	[O_FREE_BAD] = { "bad free", 6, 0 },
	[O_CHECK] = { "check", 4, 0 },
	[O_REFUSED] = { "munmap/mprotect/mremap/mmap", 12, 1 },
	[O_MADVISE] = { "madvise", 6, 1 },
	[O_ACCEPTED] = { "mlock/mincore/msync/mmap", 8, 1 },
	[O_FORK] = { "fork", 3, 0 },
	[O_POOL] = { "pool", 2, 0 },
	[O_MEMLOCK0] = { "RLIMIT_MEMLOCK 0", 1, 0 },
	[O_MLOCKALL] = { "mlockall", 1, 0 },
};

static void run_op(void)
{
	int o, n;

	o = PICK_WEIGHTED(optab, O_NR);
	if ((o == O_MEMLOCK0 && W.root) || (o == O_MLOCKALL && !W.root))
		o = O_CHECK;
	if (optab[o].needs_map && !W.nmaps)
		o = O_GET;
	if ((o == O_GET || o == O_SHARE || o == O_MEMLOCK0 ||
	     o == O_MLOCKALL || o == O_FORK) && W.nmaps >= MAXMAPS)
		o = O_FREE;
	__atomic_store_n(&W.opname, optab[o].name, __ATOMIC_RELAXED);
	switch (o) {
	case O_GET:
		n = W.nmaps;
		if (W.root && !rnd(40)) {	/* a quarter of the pool, given back */
			op_get(0, pool_orig / 4 > 0 ? pool_orig / 4 : 1);
			if (W.nmaps > n)
				release(W.nmaps - 1, rnd(2));
		} else {
			op_get(0, 0);
		}
		break;
	case O_GET_BAD: op_get(1, 0); break;
	case O_SHARE: op_share(0); break;
	case O_SHARE_BAD: op_share(1); break;
	case O_FREE: release(rnd(W.nmaps), rnd(2)); break;
	case O_FREE_BAD: op_free_bad(); break;
	case O_CHECK: op_check(); break;
	case O_REFUSED: op_refused(); break;
	case O_MADVISE: op_madvise(); break;
	case O_ACCEPTED: op_accepted(-1); break;
	case O_FORK: op_fork(); break;
	case O_POOL: op_pool(); break;
	case O_MEMLOCK0: op_memlock0(); break;
	case O_MLOCKALL: op_mlockall(); break;
	}
}

/* ------------------------------------------------ the helper thread */

static const char *const how[] = { "process_vm_readv", "pread(/proc/self/mem)" };

static ssize_t gup_read(unsigned long addr, void *buf, size_t n, int mem,
			int *err)
{
	struct iovec local = { buf, n }, remote = { (void *)addr, n };
	ssize_t got;

	errno = 0;
	if (mem)
		got = pread64(W.memfd, buf, n, (off64_t)addr);
	else
		got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	*err = errno;
	W.reads++;
	return got;
}

/* With the lock: the mapping is live, so both reads work and match. */
static void helper_read(const struct map *m, unsigned long off, size_t n)
{
	uint32_t buf[4];
	ssize_t got;
	size_t j;
	int mem, e;

	for (mem = 0; mem < 2; mem++) {
		got = gup_read(m->addr + off, buf, n, mem, &e);
		if (got != (ssize_t)n) {
			failf("%s of %zu bytes at +%#lx of " MFMT " = %zd, errno %d %s",
			      how[mem], n, off, MARGS(m), got, e, ename(e));
			continue;
		}
		for (j = 0; j < n / 4; j++)
			if (!word_ok(m, off + 4 * j, buf[j]))
				failf("%s read %#x at +%#lx of " MFMT, how[mem],
				      buf[j], off + 4 * j, MARGS(m));
	}
}

/*
 * Read a few of the worker's mappings through get_user_pages(): with the
 * lock (they are live: the reads work and match the model), then from a
 * snapshot without it (they may be gone: EFAULT or EIO is fine).
 */
static void *helper(void *arg)
{
	struct map snap[MAXMAPS];
	const struct map *m;
	unsigned long pages;
	int i, n, mem, e;
	ssize_t got;
	uint32_t v;

	(void)arg;
	while (!__atomic_load_n(&W.stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&W.lock);
		for (i = 0; i < 3 && W.nmaps; i++) {
			m = &W.maps[(xs(&W.hrng) >> 33) % W.nmaps];
			if (!(m->prot & PROT_READ))
				continue;
			pages = m->len / lpsz;
			helper_read(m, (xs(&W.hrng) >> 33) % (m->len / 4096) * 4096, 8);
			if (pages > 1)		/* across a large-page boundary */
				helper_read(m, (1 + (xs(&W.hrng) >> 33) % (pages - 1)) * lpsz - 8, 16);
			helper_read(m, m->len - 8, 8);
		}
		n = W.nmaps;
		memcpy(snap, W.maps, n * sizeof(snap[0]));
		pthread_mutex_unlock(&W.lock);

		for (i = 0; i < 3 && n; i++) {
			m = &snap[(xs(&W.hrng) >> 33) % n];
			if (!(m->prot & PROT_READ))
				continue;
			for (mem = 0; mem < 2; mem++) {
				got = gup_read(m->addr + (xs(&W.hrng) >> 33) % m->len / 4 * 4,
					       &v, 4, mem, &e);
				if (got != 4 && !(got < 0 && (e == EFAULT || e == EIO)))
					failf("%s racing a free in %#lx+%#lx = %zd, errno %d %s",
					      how[mem], m->addr, m->len, got, e,
					      ename(e));
			}
		}
		usleep(100 + (xs(&W.hrng) >> 40) % 1000);
	}
	return NULL;
}

/* ------------------------------------------------------- the worker */

static void cleanup(void)
{
	double until = now() + 20;
	long t;

	__atomic_store_n(&W.opname, "cleanup", __ATOMIC_RELAXED);
	while (W.nmaps)
		release(W.nmaps - 1, rnd(2));
	if (!W.tainted && !lp_check(W.scratch, SCRATCH, SCRATCH_SEED))
		failf("the normal mapping at %p changed", W.scratch);
	munmap(W.scratch, SCRATCH);
	/* Worker 0: the pool back to its size (shrinking waits for frees). */
	while (W.id == 0 && (t = lp_total()) != pool_orig) {
		if (t < 0 || now() > until) {
			failf("cannot bring the pool back to %ld pages: it has %ld",
			      pool_orig, t);
			break;
		}
		sysctl_resize(pool_orig - t);
		usleep(20000);
	}
}

static int worker_main(int id, double deadline)
{
	uint64_t s = fz_seed + 0x632be59bd9b4e019ULL * (uint64_t)(id + 1);
	pthread_t th;
	int err;

	W.id = id;
	W.root = id < ROOT_WORKERS;
	W.rng = splitmix(&s) | 1;
	W.hrng = splitmix(&s) | 1;
	W.opname = "setup";
	pthread_mutex_init(&W.lock, NULL);
	if (cgroups[id][0] && cg_enter(cgroups[id], getpid()))
		failf("cannot enter %s: %s", cgroups[id], strerror(errno));
	if (!W.root) {
		lp_set_memlock(NOBODY_PAGES * lpsz);
		become_nobody();
		/* Keep /proc/self/mem ours after the uid change. */
		if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
			failf("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
	}
	W.scratch = mmap(NULL, SCRATCH, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	W.memfd = open("/proc/self/mem", O_RDONLY);
	if (W.scratch == MAP_FAILED || W.memfd < 0) {
		failf("mmap or open(/proc/self/mem): %s", strerror(errno));
		return 1;
	}
	lp_fill(W.scratch, SCRATCH, SCRATCH_SEED);
	err = pthread_create(&th, NULL, helper, NULL);
	if (err) {
		failf("pthread_create: %s", strerror(err));
		return 1;
	}
	while (!W.tainted && now() < deadline) {
		__atomic_store_n(&W.op, W.op + 1, __ATOMIC_RELAXED);
		run_op();
	}
	__atomic_store_n(&W.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (W.tainted)
		printf("# fuzz: worker %d stopped: a refused call worked\n", id);
	cleanup();
	stats->ops[id] = W.op;
	stats->fails[id] = W.nfail;
	stats->reads[id] = W.reads;
	stats->made[id] = W.made;
	stats->enomem[id] = W.enomem;
	fflush(stdout);
	return W.nfail > 255 ? 255 : (int)W.nfail;
}

/* lpfuzz_secs= and lpfuzz_seed= from the kernel command line. */
__attribute__((constructor)) static void fuzz_params(void)
{
	char val[32];
	unsigned long v;

	fz_seed = time_seed();
	if (cmdline_value("lpfuzz_secs=", val, sizeof(val))) {
		v = strtoul(val, NULL, 10);
		if (v > 0 && v < 100000)
			fz_secs = v;
	}
	if (cmdline_value("lpfuzz_seed=", val, sizeof(val)))
		fz_seed = strtoull(val, NULL, 10);
	harness_timeout = fz_secs + 120;
}

/* Is the key gone? An attach without IPC_CREAT must say ENOENT. */
static int key_gone(int key)
{
	long r = lpsys_share(key, 0, lpsz, PROT_READ, 0);

	if (LP_OK(r))
		lpsys_unshare(r);
	return !LP_OK(r) && errno == ENOENT;
}

static void print_replay(void)
{
	printf("# fuzz: seed %llu, %u s; replay with make test LP_FUZZ_SEED=%llu\n",
	       fz_seed, fz_secs, fz_seed);
}

/* A cgroup for each worker, with its largepage limit, where misc is built. */
static void make_worker_cgroups(void)
{
	int i, e;

	for (i = 0; i < WORKERS && misc_built(); i++) {
		char name[16];

		snprintf(name, sizeof(name), "fuzz%d", i);
		e = cg_new(cgroups[i], sizeof(cgroups[i]), name, cg_max[i]);
		if (e)
			TH_LOG("cannot make %s: %s", cgroups[i], strerror(-e));
		ASSERT_EQ(e, 0);
	}
}

/*
 * The workers, run until fz_secs from now and reaped, their counts
 * printed and added to *ops and *fails: how many did not exit 0.
 */
static int run_workers(unsigned long *ops, unsigned long *fails)
{
	double deadline = now() + fz_secs;
	pid_t pid[WORKERS];
	int i, st, bad = 0;

	fflush(stdout);
	for (i = 0; i < WORKERS; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(worker_main(i, deadline));
		ASSERT_GT(pid[i], 0);
	}
	for (i = 0; i < WORKERS; i++) {
		ASSERT_EQ(waitpid(pid[i], &st, 0), pid[i]);
		if (WIFSIGNALED(st))
			printf("# fuzz: worker %d killed by signal %d (%s)\n",
			       i, WTERMSIG(st), strsignal(WTERMSIG(st)));
		bad += !CHILD_EXITED(st, 0);
		printf("# fuzz: worker %d (%s): %lu operations, %lu mappings made, %lu ENOMEM, %lu helper reads, %lu failed\n",
		       i, i < ROOT_WORKERS ? "root" : "nobody", stats->ops[i],
		       stats->made[i], stats->enomem[i], stats->reads[i],
		       stats->fails[i]);
		*ops += stats->ops[i];
		*fails += stats->fails[i];
	}
	printf("# fuzz: %lu operations, %lu failed\n", *ops, *fails);
	return bad;
}

/*
 * With every worker gone: the pool its size, every key gone, every page
 * free, every cgroup uncharged and removed. How many of those are not.
 */
static int left_behind(void)
{
	long total = lp_total(), nfree;
	int i, st, bad = 0;

	if (total != pool_orig) {
		TH_LOG("the pool has %ld pages, not %ld: restoring", total,
		       pool_orig);
		sysctl_resize(pool_orig - total);
		bad++;
	}
	for (i = 1; i <= NKEYS; i++) {
		for (st = 0; st < 50 && !key_gone(i); st++)
			usleep(20000);
		if (st == 50) {
			TH_LOG("key %d outlived every worker", i);
			bad++;
		}
	}
	total = lp_total();
	nfree = lp_settle_nfree(total);
	if (nfree != total) {
		TH_LOG("LargePages_Free %ld, LargePages_Total %ld", nfree, total);
		bad++;
	}
	for (i = 0; i < WORKERS && cgroups[i][0]; i++) {
		long cur = settle_current(cgroups[i], 0);

		printf("# fuzz: worker %d's cgroup (largepage max %s): %ld refusals, %ld pages left charged\n",
		       i, cg_max[i], cg_events(cgroups[i]), cur);
		if (cur)
			bad++;
		if (cg_rmdir(cgroups[i])) {
			TH_LOG("rmdir(%s): %s", cgroups[i], strerror(errno));
			bad++;
		}
	}
	return bad;
}

TEST(fuzz_syscalls_against_spec)
{
	unsigned long ops = 0, fails = 0;
	int bad;

	print_replay();
	lpsz = lp_size();
	pool_orig = lp_total();
	ASSERT_TRUE(lpsz == 2UL << 20 || lpsz == 4UL << 20);
	ASSERT_GT(pool_orig, 0);
	ASSERT_EQ(lp_nfree(), pool_orig);
	ASSERT_EQ(read_long(NUMLARGEPAGES), pool_orig);
	stats = mmap(NULL, sizeof(*stats), RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(stats != MAP_FAILED);

	make_worker_cgroups();
	bad = run_workers(&ops, &fails);
	bad += left_behind();
	if (bad || fails)
		print_replay();
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(fails, 0);
}
