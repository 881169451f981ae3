// SPDX-License-Identifier: GPL-2.0
/*
 * SMP races: many processes creating, attaching and detaching keys,
 * getting and freeing pages, forking, and resizing the pool, all at once.
 * Afterwards every page is back, every key gone, the pool its old size.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include "lp.h"
#include "misccg.h"

#define MIXED_SECS 10
#define WORKERS 6
#define KEY0 7000
#define NKEYS 3

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static int need_smp(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		TH_LOG("races need SMP: only %ld CPU online", n);
	return n >= 2;
}

#define WFAIL(id, fmt, ...) do {					\
	printf("# worker %d: " fmt ": %s\n", id, ##__VA_ARGS__,		\
	       strerror(errno));					\
	return 1;							\
} while (0)

struct stats {
	int keyed, attached, got, forked, enomem, enoent;
};

/*
 * Attach (mostly creating) one of the shared keys, check that the
 * segment is that key's (word 0 is 0 or the key), and that nobody else
 * writes this worker's slot while it holds the segment.
 */
static int op_keyed(int id, unsigned int *seed, uint32_t magic,
		    struct stats *s)
{
	int key = KEY0 + rnd(seed) % NKEYS, creat = rnd(seed) % 4 != 0;
	volatile uint32_t *seg, *slot;
	uint32_t v;
	long r;

	r = lpsys_share(key, 0, lp_size(), RW, creat ? IPC_CREAT | 0600 : 0);
	if (!LP_OK(r)) {
		if (errno == ENOMEM) {
			s->enomem++;
			return 0;
		}
		if (errno == ENOENT && !creat) {
			s->enoent++;
			return 0;
		}
		WFAIL(id, "share_large_pages(%d, %s)", key,
		      creat ? "IPC_CREAT" : "0");
	}
	s->keyed++;
	seg = (volatile uint32_t *)LP_PTR(r);
	v = seg[0];
	if (v != 0 && v != (uint32_t)key) {
		errno = 0;
		WFAIL(id, "segment of key %d is tagged %u", key, v);
	}
	seg[0] = key;
	slot = seg + 1024 * (id + 1);
	v = slot[0];
	if (v != 0 && v >> 24 != (uint32_t)id + 1) {
		errno = 0;
		WFAIL(id, "key %d: my slot holds %#x", key, v);
	}
	slot[0] = magic;
	for (v = rnd(seed) % 4; v; v--)
		sched_yield();
	if (slot[0] != magic) {
		errno = 0;
		WFAIL(id, "key %d: my slot changed under me", key);
	}
	if (lpsys_unshare(r))
		WFAIL(id, "unshare_large_pages(key %d)", key);
	return 0;
}

/* Get 1-2 pages, check they are zeroed, use them, free them. */
static int op_get(int id, unsigned int *seed, uint32_t magic, struct stats *s,
		  long pages)
{
	unsigned long len = pages * lp_size(), off;
	int flags = rnd(seed) & 1 ? MAP_SHARED : MAP_PRIVATE;
	char *p;
	long r;

	r = lpsys_get(0, len, RW, flags);
	if (!LP_OK(r)) {
		if (errno == ENOMEM) {
			s->enomem++;
			return 0;
		}
		WFAIL(id, "get_large_pages(%ld pages)", pages);
	}
	s->got++;
	p = LP_PTR(r);
	for (off = 0; off < len; off += 4096) {
		if (*(volatile uint32_t *)(p + off)) {
			errno = 0;
			WFAIL(id, "fresh page not zeroed at +%#lx", off);
		}
		*(volatile uint32_t *)(p + off) = magic ^ off;
	}
	sched_yield();
	for (off = 0; off < len; off += 4096)
		if (*(volatile uint32_t *)(p + off) != (magic ^ off)) {
			errno = 0;
			WFAIL(id, "page changed under me at +%#lx", off);
		}
	if (lpsys_free(r))
		WFAIL(id, "free_large_pages");
	return 0;
}

/* A child that uses an inherited MAP_SHARED mapping and exits. */
static int op_fork(int id, uint32_t magic, struct stats *s)
{
	volatile uint32_t *p;
	int st = 0;
	pid_t pid;
	long r;

	r = lpsys_get(0, lp_size(), RW, MAP_SHARED);
	if (!LP_OK(r)) {
		if (errno == ENOMEM) {
			s->enomem++;
			return 0;
		}
		WFAIL(id, "get_large_pages(MAP_SHARED)");
	}
	p = (volatile uint32_t *)LP_PTR(r);
	p[0] = magic;
	pid = fork();
	if (pid < 0)
		WFAIL(id, "fork");
	if (pid == 0) {
		if (p[0] != magic)
			_exit(2);
		p[1024] = magic + 1;
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !CHILD_EXITED(st, 0)) {
		errno = 0;
		WFAIL(id, "child status %#x", st);
	}
	if (p[1024] != magic + 1) {
		errno = 0;
		WFAIL(id, "child's write not seen");
	}
	s->forked++;
	if (lpsys_free(r))
		WFAIL(id, "free_large_pages(MAP_SHARED)");
	return 0;
}

static int worker(int id, double deadline)
{
	unsigned int seed = getpid() * 2654435761u;
	struct stats s = { 0 };
	uint32_t magic, i;
	int op, ret = 0;

	for (i = 0; !ret && now() < deadline; i++) {
		magic = ((uint32_t)id + 1) << 24 | (i & 0xffffff);
		op = rnd(&seed) % 10;
		if (id == 0 && i % 50 == 49) {
			/* Now and then a big one, to run the pool dry. */
			long n = lp_nfree() / 4;

			ret = op_get(id, &seed, magic, &s, n > 0 ? n : 1);
		} else if (op < 4) {
			ret = op_keyed(id, &seed, magic, &s);
		} else if (op < 7) {
			ret = op_get(id, &seed, magic, &s, 1 + rnd(&seed) % 2);
		} else {
			ret = op_fork(id, magic, &s);
		}
	}
	printf("# worker %d: %u rounds, %d keyed, %d got, %d forked, %d ENOMEM, %d ENOENT\n",
	       id, i, s.keyed, s.got, s.forked, s.enomem, s.enoent);
	return ret;
}

/*
 * Grow the pool by one and shrink it back, over and over. Only this
 * process changes the total, so every change can be checked exactly. A
 * shrink takes only free pages and may fall short: what is owed is taken
 * on a later round, and at the end the pool is brought back to 'total'.
 */
static int resizer(long total, double deadline)
{
	unsigned int seed = getpid();
	int rounds = 0, ret;
	long t, t2;

	while (now() < deadline) {
		t = lp_total();
		ret = sysctl_resize(1);
		if (ret) {
			errno = -ret;
			WFAIL(-1, "grow by 1");
		}
		t2 = lp_total();
		if (t2 != t + 1 || read_long(NUMLARGEPAGES) != t2) {
			errno = 0;
			WFAIL(-1, "grow by 1: %ld -> %ld", t, t2);
		}
		usleep(rnd(&seed) % 2000);
		ret = sysctl_resize(-(t2 - total));
		if (ret) {
			errno = -ret;
			WFAIL(-1, "shrink by %ld", t2 - total);
		}
		t = lp_total();
		if (t < total || t > t2) {
			errno = 0;
			WFAIL(-1, "shrink by %ld: %ld -> %ld", t2 - total, t2, t);
		}
		rounds++;
	}
	/* The others stop now too and give their pages back. */
	for (deadline = now() + 10; lp_total() != total && now() < deadline;) {
		sysctl_resize(total - lp_total());
		usleep(10000);
	}
	printf("# resizer: %d rounds, pool %ld (was %ld)\n", rounds,
	       lp_total(), total);
	return lp_total() == total ? 0 : 1;
}

TEST(races_mixed_workers_conserve_the_pool)
{
	long total = lp_total();
	double deadline;
	pid_t pid[WORKERS + 1];
	int i, st;

	ASSERT_TRUE(need_smp());
	ASSERT_EQ(lp_nfree(), total);
	deadline = now() + MIXED_SECS;
	fflush(stdout);
	for (i = 0; i <= WORKERS; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(i < WORKERS ? worker(i, deadline) :
					    resizer(total, deadline));
		ASSERT_GT(pid[i], 0);
	}
	for (i = 0; i <= WORKERS; i++) {
		ASSERT_EQ(waitpid(pid[i], &st, 0), pid[i]);
		if (!CHILD_EXITED(st, 0))
			TH_LOG("%s %d: status %#x", i < WORKERS ? "worker" :
			       "resizer", i, st);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
	}
	for (i = 0; i < NKEYS; i++)
		EXPECT_ERRNO(lpsys_share(KEY0 + i, 0, lp_size(), PROT_READ, 0),
			     ENOENT);
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
}

/* Lock-step rounds between processes, on a shared normal page. */
#define PROCS 4
#define MAX_ROUNDS 200
#define ROUND_SECS 3

struct board {
	int arrived, gen, stop, rounds;
	int winners[MAX_ROUNDS];
};

static struct board *new_board(void)
{
	void *p = mmap(NULL, sizeof(struct board), RW,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Wait for all PROCS processes; -1 if one does not come within 10 s. */
static int barrier(struct board *b)
{
	int gen = __atomic_load_n(&b->gen, __ATOMIC_SEQ_CST);
	double deadline = now() + 10;

	if (__atomic_add_fetch(&b->arrived, 1, __ATOMIC_SEQ_CST) == PROCS) {
		__atomic_store_n(&b->arrived, 0, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&b->gen, 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	while (__atomic_load_n(&b->gen, __ATOMIC_SEQ_CST) == gen) {
		if (now() > deadline) {
			printf("# barrier: a peer did not arrive\n");
			return -1;
		}
		sched_yield();
	}
	return 0;
}

/* Process 0 ends the run after ROUND_SECS; all see it after a barrier. */
static void maybe_stop(struct board *b, int id, int round, double end)
{
	if (id == 0 && (now() > end || round + 1 == MAX_ROUNDS))
		__atomic_store_n(&b->stop, 1, __ATOMIC_SEQ_CST);
	if (id == 0)
		b->rounds = round + 1;
}

static int run_procs(struct board *b, int (*fn)(struct board *, int))
{
	pid_t pid[PROCS];
	int i, st = 0, bad = 0;

	fflush(stdout);
	for (i = 0; i < PROCS; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(fn(b, i));
		if (pid[i] < 0)
			return -1;
	}
	for (i = 0; i < PROCS; i++) {
		if (waitpid(pid[i], &st, 0) != pid[i] || !CHILD_EXITED(st, 0)) {
			printf("# process %d: status %#x\n", i, st);
			bad = -1;
		}
	}
	return bad;
}

#define EXCL_KEY 7100

/*
 * Every round all processes race to create one key with IPC_EXCL:
 * exactly one may win; the others get EEXIST and attach the winner's
 * segment (seeing its mark) while the winner still holds it.
 */
static int excl_proc(struct board *b, int id)
{
	double end = now() + ROUND_SECS, t;
	volatile uint32_t *seg;
	uint32_t mark;
	int round;
	long r, mine;

	for (round = 0; ; round++) {
		mark = 0x7100000 + round;
		mine = 0;
		if (barrier(b))
			return 2;
		r = lpsys_share(EXCL_KEY, 0, lp_size(), RW,
				IPC_CREAT | IPC_EXCL | 0600);
		if (LP_OK(r)) {
			mine = r;
			((volatile uint32_t *)LP_PTR(r))[0] = mark;
			__atomic_add_fetch(&b->winners[round], 1,
					   __ATOMIC_SEQ_CST);
		} else if (errno == EEXIST) {
			r = lpsys_share(EXCL_KEY, 0, lp_size(), RW, 0);
			if (!LP_OK(r))
				WFAIL(id, "round %d: attach after EEXIST", round);
			seg = (volatile uint32_t *)LP_PTR(r);
			for (t = now() + 5; seg[0] != mark && now() < t;)
				sched_yield();
			if (seg[0] != mark) {
				errno = 0;
				WFAIL(id, "round %d: attached %#x, not the winner's segment",
				      round, seg[0]);
			}
			if (lpsys_unshare(r))
				WFAIL(id, "round %d: unshare", round);
		} else {
			WFAIL(id, "round %d: create", round);
		}
		if (barrier(b))
			return 2;
		if (mine && lpsys_unshare(mine))
			WFAIL(id, "round %d: winner's unshare", round);
		maybe_stop(b, id, round, end);
		if (barrier(b))
			return 2;
		if (id == 0 && !lp_key_absent(EXCL_KEY, lp_size()))
			WFAIL(id, "round %d: key outlived its last user", round);
		if (__atomic_load_n(&b->stop, __ATOMIC_SEQ_CST))
			return 0;
	}
}

TEST(races_create_excl_has_exactly_one_winner)
{
	struct board *b = new_board();
	int i, bad = 0;

	ASSERT_TRUE(need_smp());
	ASSERT_TRUE(b != NULL);
	EXPECT_EQ(run_procs(b, excl_proc), 0);
	ASSERT_GE(b->rounds, 1);
	TH_LOG("%d rounds", b->rounds);
	for (i = 0; i < b->rounds; i++)
		if (b->winners[i] != 1 && !bad++)
			TH_LOG("round %d had %d winners", i, b->winners[i]);
	EXPECT_EQ(bad, 0);
	EXPECT_ERRNO(lpsys_share(EXCL_KEY, 0, lp_size(), PROT_READ, 0), ENOENT);
}

#define CREAT_KEY 7200

/*
 * Every round all processes IPC_CREAT one key at once: all must map the
 * same, freshly zeroed segment, and see each other's writes.
 */
static int creat_proc(struct board *b, int id)
{
	double end = now() + ROUND_SECS;
	volatile uint32_t *seg;
	int round, j;
	long r;

	for (round = 0; ; round++) {
		if (barrier(b))
			return 2;
		r = lpsys_share(CREAT_KEY, 0, lp_size(), RW, IPC_CREAT | 0600);
		if (!LP_OK(r))
			WFAIL(id, "round %d: IPC_CREAT", round);
		seg = (volatile uint32_t *)LP_PTR(r);
		if (seg[1024 * (id + 1)]) {
			errno = 0;
			WFAIL(id, "round %d: stale %#x in a new segment", round,
			      seg[1024 * (id + 1)]);
		}
		seg[1024 * (id + 1)] = round << 8 | (id + 1);
		if (barrier(b))
			return 2;
		for (j = 0; j < PROCS; j++)
			if (seg[1024 * (j + 1)] != (uint32_t)(round << 8 | (j + 1))) {
				errno = 0;
				WFAIL(id, "round %d: process %d's mark missing (%#x): two segments for one key",
				      round, j, seg[1024 * (j + 1)]);
			}
		if (barrier(b))
			return 2;
		if (lpsys_unshare(r))
			WFAIL(id, "round %d: unshare", round);
		maybe_stop(b, id, round, end);
		if (barrier(b))
			return 2;
		if (id == 0 && !lp_key_absent(CREAT_KEY, lp_size()))
			WFAIL(id, "round %d: key outlived its last user", round);
		if (__atomic_load_n(&b->stop, __ATOMIC_SEQ_CST))
			return 0;
	}
}

TEST(races_concurrent_creat_maps_one_segment)
{
	struct board *b = new_board();
	long nfree = lp_nfree();

	ASSERT_TRUE(need_smp());
	ASSERT_TRUE(b != NULL);
	EXPECT_EQ(run_procs(b, creat_proc), 0);
	TH_LOG("%d rounds", b->rounds);
	ASSERT_GE(b->rounds, 1);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_ERRNO(lpsys_share(CREAT_KEY, 0, lp_size(), PROT_READ, 0), ENOENT);
}

#define SERIAL_KEY 7300
#define SERIAL_PROCS 8
#define SERIAL_ROUNDS 16
#define SERIAL_POOL 16		/* pages, for the rounds */

/* One round of SERIAL_PROCS callers of one key, released at once. */
struct serial_board {
	int ready, go, returned;
	int err[SERIAL_PROCS];
};

/*
 * A caller of the round: share the key (with IPC_EXCL if @excl), mark its
 * slot of the segment, and once every caller has returned check that
 * every other caller that got the key maps the same pages.
 */
static int serial_caller(struct serial_board *b, int id, int round,
			 unsigned long len, int excl)
{
	volatile uint32_t *seg;
	double t;
	long r;
	int j;

	__atomic_add_fetch(&b->ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&b->go, __ATOMIC_SEQ_CST))
		;
	r = lpsys_share(SERIAL_KEY, 0, len, RW,
			IPC_CREAT | (excl ? IPC_EXCL : 0) | 0600);
	b->err[id] = LP_OK(r) ? 0 : errno;
	seg = (volatile uint32_t *)LP_PTR(r);
	if (LP_OK(r))
		seg[1024 * (id + 1)] = round << 8 | (id + 1);
	__atomic_add_fetch(&b->returned, 1, __ATOMIC_SEQ_CST);
	for (t = now() + 30; __atomic_load_n(&b->returned, __ATOMIC_SEQ_CST) <
	     SERIAL_PROCS; sched_yield())
		if (now() > t)
			WFAIL(id, "round %d: a caller did not return", round);
	if (!LP_OK(r))
		return 0;
	for (j = 0; j < SERIAL_PROCS; j++)
		if (!b->err[j] && seg[1024 * (j + 1)] !=
		    (uint32_t)(round << 8 | (j + 1))) {
			errno = 0;
			WFAIL(id, "round %d: caller %d's mark missing (%#x): two segments for one key",
			      round, j, seg[1024 * (j + 1)]);
		}
	if (lpsys_unshare(r))
		WFAIL(id, "round %d: unshare", round);
	return 0;
}

/*
 * A round's outcome is a serial one: at least one caller created or
 * attached, every IPC_EXCL caller but the creator (if it was one) got
 * EEXIST, and no call failed otherwise.
 */
static int serial_outcome_ok(const struct serial_board *b, int round,
			     int excl)
{
	int i, ok = 0, eexist = 0, other = 0;

	for (i = 0; i < SERIAL_PROCS; i++) {
		if (!b->err[i])
			ok++;
		else if (b->err[i] == EEXIST && (i + round) % 3 == 0)
			eexist++;
		else
			other++;
		if (b->err[i] && b->err[i] != EEXIST)
			TH_LOG("round %d: caller %d%s: %s", round, i,
			       (i + round) % 3 ? "" : " (IPC_EXCL)",
			       strerror(b->err[i]));
	}
	if (other || ok < 1 || eexist < excl - 1 || eexist > excl) {
		TH_LOG("round %d: %d attached or created, %d EEXIST of %d IPC_EXCL callers, %d other",
		       round, ok, eexist, excl, other);
		return 0;
	}
	return 1;
}

/*
 * SPEC 2: racing callers of one key end as if they had run one after
 * another, whatever room the pool or a cgroup limit leaves. Each round
 * (in a pool of SERIAL_POOL pages) releases SERIAL_PROCS callers at once
 * on a segment of more than half the free pool, in a misc cgroup whose
 * limit is that one segment (where the kernel has the controller): room
 * for one copy only. Some callers use IPC_EXCL. Every caller must end created or attached
 * (the same pages), EEXIST exactly where IPC_EXCL lost (all IPC_EXCL
 * callers but the creator, if it was one), never ENOMEM, and misc.events
 * must count no refusal. A kernel whose losers make segments of their
 * own and give them back fails them with ENOMEM.
 */
static void serial_rounds(void *unused)
{
	struct serial_board *b = mmap(NULL, sizeof(*b), RW,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long F = lp_nfree(), n = F / 2 + 1;
	unsigned long len = n * lp_size();
	int round, i, st, excl, bad = 0;
	char cg[128] = "";
	char max[32];
	pid_t pid[SERIAL_PROCS];

	(void)unused;
	ASSERT_TRUE(b != MAP_FAILED);
	ASSERT_GE(F, 2);
	ASSERT_EQ(lp_total(), F);
	if (misc_built()) {
		snprintf(max, sizeof(max), "%ld", n);
		ASSERT_EQ(cg_new(cg, sizeof(cg), "serial", max), 0);
	}
	TH_LOG("%d rounds of %d callers, %ld of %ld free pages a copy%s",
	       SERIAL_ROUNDS, SERIAL_PROCS, n, F,
	       cg[0] ? ", misc.max that one copy" : "");
	for (round = 0; round < SERIAL_ROUNDS; round++) {
		memset(b, 0, sizeof(*b));
		excl = 0;
		fflush(stdout);
		for (i = 0; i < SERIAL_PROCS; i++) {
			int x = (i + round) % 3 == 0;

			excl += x;
			pid[i] = fork();
			ASSERT_GE(pid[i], 0);
			if (pid[i] == 0) {
				if (cg[0] && cg_enter(cg, getpid()))
					_exit(3);
				_exit(serial_caller(b, i, round, len, x));
			}
		}
		while (__atomic_load_n(&b->ready, __ATOMIC_SEQ_CST) < SERIAL_PROCS)
			usleep(1000);
		__atomic_store_n(&b->go, 1, __ATOMIC_SEQ_CST);
		for (i = 0; i < SERIAL_PROCS; i++) {
			ASSERT_EQ(waitpid(pid[i], &st, 0), pid[i]);
			if (!CHILD_EXITED(st, 0)) {
				TH_LOG("round %d: caller %d: status %#x", round, i, st);
				bad++;
			}
		}
		bad += !serial_outcome_ok(b, round, excl);
		if (!lp_key_absent(SERIAL_KEY, len)) {
			TH_LOG("round %d: the key outlived its callers", round);
			bad++;
		}
		if (lp_settle_nfree(F) != F) {
			TH_LOG("round %d: %ld pages free, not %ld", round,
			       lp_nfree(), F);
			bad++;
		}
	}
	EXPECT_EQ(bad, 0);
	if (cg[0]) {
		TH_LOG("misc.events of the callers' cgroup: %ld refusals",
		       cg_events(cg));
		EXPECT_EQ(cg_events(cg), 0);
		EXPECT_EQ(settle_current(cg, 0), 0);
		EXPECT_EQ(cg_rmdir(cg), 0);
	}
	_exit(harness_failed);
}

TEST(races_creators_of_one_key_end_as_if_serialised)
{
	long total = lp_total();
	int st;

	ASSERT_TRUE(need_smp());
	ASSERT_EQ(lp_nfree(), total);
	/* A small pool: the rounds are quick, the room as scarce. */
	if (total > SERIAL_POOL)
		ASSERT_EQ(sysctl_resize(SERIAL_POOL - total), 0);
	st = run_child(serial_rounds, NULL);
	ASSERT_EQ(sysctl_resize(total - lp_total()), 0);
	EXPECT_EQ(lp_total(), total);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

/*
 * TLB shootdown. A thread pinned to one CPU writes a large page in a
 * loop while a thread on the other CPU frees (or unshares) it. The free
 * must flush the writer's TLB before the page goes back to the pool: the
 * writer dies with SIGSEGV, and whoever takes the page next (the pool
 * hands out the last page freed first) sees only zeroes while it
 * watches: no write through a stale translation lands in it.
 */
static volatile uint32_t *shoot_page;

static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *shoot_writer(void *arg)
{
	(void)arg;
	pin_to_cpu(1);
	/*
	 * One word: touching many 4 KiB pages would evict the translation
	 * (QEMU's TLB holds 4 KiB entries) and re-walk the cleared entry.
	 */
	for (;;)
		shoot_page[1] = 0xa5a5a5a5;
	return NULL;
}

static void shoot_victim(int key, struct lp_peer *p)
{
	unsigned long lp = lp_size();
	pthread_t t;
	long r;

	pin_to_cpu(0);
	r = key ? lpsys_share(key, 0, lp, RW, IPC_CREAT | IPC_EXCL | 0600) :
		  lpsys_get(0, lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	shoot_page = (uint32_t *)LP_PTR(r);
	ASSERT_EQ(pthread_create(&t, NULL, shoot_writer, NULL), 0);
	usleep(100000);		/* the writer's TLB holds the entry */
	lp_peer_send(p, 0);
	if (key)
		lpsys_unshare(r);
	else
		lpsys_free(r);
	/* Only a write through a stale TLB entry lets us live on. */
	for (;;)
		pause();
}

static void tlb_shootdown(int key)
{
	unsigned long lp = lp_size(), n = lp / 4, i, bad = 0;
	long nfree = lp_nfree(), r;
	volatile uint32_t *w;
	struct lp_peer p;
	double end;
	int st;

	/*
	 * Watch from CPU 0 only: a context switch on the writer's CPU would
	 * load another CR3 and flush its TLB for us.
	 */
	pin_to_cpu(0);
	if (lp_peer_fork(&p) == 0)
		shoot_victim(key, &p);
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	/* The page is back in the pool once its last reference is gone. */
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	r = lpsys_get(0, lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	w = (uint32_t *)LP_PTR(r);
	for (end = now() + 0.3; now() < end;) {
		bad += w[1] != 0;
		for (i = 0; i < n; i += 1024)
			bad += w[i] != 0;
	}
	if (bad)
		TH_LOG("%lu writes through a stale TLB entry seen", bad);
	EXPECT_EQ(bad, 0);
	kill(p.pid, SIGKILL);	/* if it still lives, it is a failure */
	st = lp_peer_wait(&p);
	if (!CHILD_SIGNALED(st, SIGSEGV))
		TH_LOG("victim status %#x, expected death by SIGSEGV", st);
	EXPECT_TRUE(CHILD_SIGNALED(st, SIGSEGV));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(races_free_flushes_other_cpus_tlb)
{
	tlb_shootdown(0);
}

TEST(races_unshare_flushes_other_cpus_tlb)
{
	tlb_shootdown(7100);
}
