// SPDX-License-Identifier: GPL-2.0
/*
 * The misc cgroup controller's "largepage" resource: the pages of a new
 * segment are charged to the cgroup of the process that takes them (a
 * keyed segment's to its creator's, once), all or nothing; over misc.max
 * the call fails with ENOMEM, takes and charges nothing, and misc.events
 * counts the refusal; a page is uncharged when it returns to the pool,
 * not before. misc.capacity is the pool's total.
 *
 * Each test makes its own cgroups under CG_ROOT (cgroup2, which lp-init
 * mounts) and moves agents (agent.h) into them. The nopae kernel is built
 * without CONFIG_CGROUP_MISC: there the controller must be absent, and
 * the tests that need it skip (declared in tests/skips).
 */
#include <dirent.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include "agent.h"
#include "misccg.h"

/* Remove what an earlier test left (a failed one): children first. */
static void remove_stale(void)
{
	char path[300];
	struct dirent *d;
	DIR *dir = opendir(CG_ROOT);

	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, CG_PREFIX, strlen(CG_PREFIX))) {
			snprintf(path, sizeof(path), CG_ROOT "/%s/a", d->d_name);
			rmdir(path);
			snprintf(path, sizeof(path), CG_ROOT "/%s/b", d->d_name);
			rmdir(path);
			snprintf(path, sizeof(path), CG_ROOT "/%s", d->d_name);
			rmdir(path);
		}
	closedir(dir);
}

/*
 * cgroup2 is mounted on CG_ROOT and the misc controller is enabled for
 * its children; skip (declared for the kernel built without it) if the
 * kernel has no misc controller.
 */
static void misc_ready(void)
{
	struct statfs sf;
	int e;

	ASSERT_EQ(statfs(CG_ROOT, &sf), 0);
	ASSERT_EQ(sf.f_type, CGROUP2_SUPER_MAGIC);
	if (!misc_built())
		SKIP("kernel without CONFIG_CGROUP_MISC: no misc controller");
	remove_stale();
	e = write_text(CG_ROOT "/cgroup.subtree_control", "+misc");
	if (e)
		TH_LOG("+misc in %s/cgroup.subtree_control: %s", CG_ROOT,
		       strerror(-e));
	ASSERT_EQ(e, 0);
}

/*
 * The cgroup @parent/@name (parent NULL: a new CG_PREFIX-PID cgroup under
 * the root) with "largepage @max" in misc.max ("max": no limit).
 */
static void cg_make(char *cg, size_t size, const char *parent,
		    const char *name, const char *max)
{
	char path[320], text[64];
	int e;

	if (parent)
		snprintf(cg, size, "%s/%s", parent, name);
	else
		snprintf(cg, size, CG_ROOT "/" CG_PREFIX "%d-%s", getpid(), name);
	ASSERT_EQ(mkdir(cg, 0755), 0);
	snprintf(path, sizeof(path), "%.200s/misc.max", cg);
	snprintf(text, sizeof(text), "largepage %s", max);
	e = write_text(path, text);
	if (e)
		TH_LOG("'%s' > %s: %s", text, path, strerror(-e));
	ASSERT_EQ(e, 0);
}

/* Enable misc for the children of @cg. */
static void cg_delegate(const char *cg)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", cg);
	ASSERT_EQ(write_text(path, "+misc"), 0);
}

static void cg_move(const char *cg, pid_t pid)
{
	ASSERT_EQ(cg_enter(cg, pid), 0);
}

static void cg_remove(const char *cg)
{
	EXPECT_EQ(cg_rmdir(cg), 0);
}

/* An agent (root, or nobody with @memlock bytes) in the cgroup @cg. */
static void agent_in(struct lp_peer *a, const char *cg, uid_t uid,
		     rlim_t memlock)
{
	agent_start(a, uid, memlock);
	cg_move(cg, a->pid);
}

/*
 * The nopae kernel is built without CONFIG_CGROUP_MISC: no controller
 * and no misc files, and the pool serves as ever. Every other kernel of
 * the runs (pae, Debian's) has it, with the pool's total as capacity.
 */
TEST(misccg_controller_matches_the_config)
{
	struct statfs sf;
	long r, total = lp_total();

	ASSERT_EQ(statfs(CG_ROOT, &sf), 0);
	ASSERT_EQ(sf.f_type, CGROUP2_SUPER_MAGIC);
	if (!strcmp(lp_flavour(), "nopae")) {
		EXPECT_TRUE(!misc_built());
		EXPECT_NE(access(CG_ROOT "/misc.capacity", F_OK), 0);
		r = lpsys_get(0, lp_size(), RW, MAP_PRIVATE);
		ASSERT_TRUE(LP_OK(r));
		ASSERT_EQ(lpsys_free(r), 0);
		return;
	}
	ASSERT_TRUE(misc_built());
	EXPECT_EQ(misc_capacity(), total > 0 ? total : -1);
}

/* misc.capacity follows the pool down and up. */
TEST(misccg_capacity_follows_the_pool)
{
	long T;

	misc_ready();
	T = lp_total();
	ASSERT_GE(T, 2);
	EXPECT_EQ(misc_capacity(), T);
	ASSERT_EQ(sysctl_resize(-1), 0);
	EXPECT_EQ(lp_total(), T - 1);
	EXPECT_EQ(misc_capacity(), T - 1);
	ASSERT_EQ(sysctl_resize(1), 0);
	TH_LOG("pool %ld pages, %ld after giving one back and growing by one",
	       T, lp_total());
	EXPECT_EQ(misc_capacity(), lp_total());
}

/*
 * misc.max = 2: two one-page segments are taken, the third page is
 * refused with ENOMEM whether private, shared, keyed or part of a
 * two-page call, and nothing is taken or charged for it: the pool and
 * misc.current stay where they were. Every refusal is counted in
 * misc.events. The agent is nobody with an RLIMIT_MEMLOCK of 3 pages:
 * once the limit is lifted it takes its third page, so no refused call
 * left a memlock charge behind, and a fourth is refused by
 * RLIMIT_MEMLOCK, which misc.events does not count. The exit uncharges
 * everything.
 */
TEST(misccg_max_refuses_the_third_page)
{
	unsigned long lp = lp_size();
	long F = lp_nfree(), a1, a2;
	struct lp_peer a;
	char cg[128], path[256];

	misc_ready();
	ASSERT_GE(F, 4);
	cg_make(cg, sizeof(cg), NULL, "max2", "2");
	agent_in(&a, cg, NOBODY, 3 * lp);
	EXPECT_EQ(cg_current(cg), 0);
	EXPECT_EQ(cg_events(cg), 0);

	a1 = a_get(&a, 1, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(a1));
	a2 = a_get(&a, 1, MAP_SHARED);
	ASSERT_TRUE(LP_OK(a2));
	EXPECT_EQ(cg_current(cg), 2);
	EXPECT_EQ(lp_nfree(), F - 2);

	EXPECT_EQ(a_get(&a, 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(a_share(&a, 7401, 1, RW, IPC_CREAT | 0600), -ENOMEM);
	EXPECT_TRUE(lp_key_absent(7401, lp));
	EXPECT_EQ(cg_current(cg), 2);
	EXPECT_EQ(lp_nfree(), F - 2);
	EXPECT_EQ(cg_events(cg), 2);

	/* One freed: one page fits again, two do not, and charge nothing. */
	ASSERT_EQ(a_free(&a, a1), 0);
	EXPECT_EQ(cg_current(cg), 1);
	EXPECT_EQ(a_get(&a, 2, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(cg_current(cg), 1);
	EXPECT_EQ(cg_events(cg), 3);
	a1 = a_get(&a, 1, MAP_PRIVATE);
	EXPECT_TRUE(LP_OK(a1));
	EXPECT_EQ(cg_current(cg), 2);
	EXPECT_EQ(lp_nfree(), F - 2);

	/* No limit: RLIMIT_MEMLOCK (3 pages, 2 charged) is what is left. */
	snprintf(path, sizeof(path), "%s/misc.max", cg);
	ASSERT_EQ(write_text(path, "largepage max"), 0);
	EXPECT_TRUE(LP_OK(a_get(&a, 1, MAP_PRIVATE)));
	EXPECT_EQ(a_get(&a, 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(cg_current(cg), 3);
	EXPECT_EQ(cg_events(cg), 3);
	EXPECT_EQ(lp_nfree(), F - 3);

	agent_stop(&a);
	EXPECT_EQ(settle_current(cg, 0), 0);
	EXPECT_EQ(lp_settle_nfree(F), F);
	EXPECT_EQ(cg_events(cg), 3);
	cg_remove(cg);
}

/*
 * A keyed segment is charged once, to its creator's cgroup, until it is
 * destroyed: attaching from another cgroup charges nothing there (even
 * one whose misc.max is 0), and the creator's exit leaves the charge
 * where it was while the attacher still maps the segment.
 */
TEST(misccg_keyed_segment_charged_once_to_its_creator)
{
	long F = lp_nfree(), c, b;
	struct lp_peer creator, attacher;
	char cga[128], cgb[128];

	misc_ready();
	ASSERT_GE(F, 2);
	cg_make(cga, sizeof(cga), NULL, "creator", "max");
	cg_make(cgb, sizeof(cgb), NULL, "attacher", "0");
	/* The creator last: an agent holds the pipes of those before it. */
	agent_in(&attacher, cgb, AGENT_ROOT, RLIM_INFINITY);
	agent_in(&creator, cga, AGENT_ROOT, RLIM_INFINITY);

	c = a_share(&creator, 7402, 2, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(c));
	ASSERT_EQ(a_poke(&creator, c, 0x7402), 0);
	b = a_share(&attacher, 7402, 2, RW, 0);
	ASSERT_TRUE(LP_OK(b));
	EXPECT_EQ(a_peek(&attacher, b), 0x7402);
	EXPECT_EQ(cg_current(cga), 2);
	EXPECT_EQ(cg_current(cgb), 0);
	EXPECT_EQ(cg_events(cgb), 0);
	/* Its own segment would be refused: the limit is 0. */
	EXPECT_EQ(a_get(&attacher, 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(cg_events(cgb), 1);
	EXPECT_EQ(lp_nfree(), F - 2);

	agent_stop(&creator);
	usleep(100000);
	EXPECT_EQ(cg_current(cga), 2);
	EXPECT_EQ(cg_current(cgb), 0);
	EXPECT_EQ(lp_nfree(), F - 2);

	ASSERT_EQ(a_unshare(&attacher, b), 0);
	EXPECT_EQ(settle_current(cga, 0), 0);
	EXPECT_EQ(lp_settle_nfree(F), F);
	agent_stop(&attacher);
	cg_remove(cga);
	cg_remove(cgb);
}

/*
 * As for every misc resource, moving a process moves no charge: its
 * pages stay charged to the cgroup they were taken in until they return,
 * and what it takes after the move is charged to the new one.
 */
TEST(misccg_moving_a_process_moves_no_charge)
{
	long F = lp_nfree(), r1, r2;
	struct lp_peer a;
	char cga[128], cgb[128];

	misc_ready();
	ASSERT_GE(F, 3);
	cg_make(cga, sizeof(cga), NULL, "from", "max");
	cg_make(cgb, sizeof(cgb), NULL, "to", "max");
	agent_in(&a, cga, AGENT_ROOT, RLIM_INFINITY);
	r1 = a_get(&a, 2, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r1));
	cg_move(cgb, a.pid);
	EXPECT_EQ(cg_current(cga), 2);
	EXPECT_EQ(cg_current(cgb), 0);
	r2 = a_get(&a, 1, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r2));
	EXPECT_EQ(cg_current(cga), 2);
	EXPECT_EQ(cg_current(cgb), 1);
	ASSERT_EQ(a_free(&a, r1), 0);
	EXPECT_EQ(cg_current(cga), 0);
	EXPECT_EQ(cg_current(cgb), 1);
	agent_stop(&a);
	EXPECT_EQ(settle_current(cgb, 0), 0);
	EXPECT_EQ(lp_settle_nfree(F), F);
	cg_remove(cga);
	cg_remove(cgb);
}

/*
 * A parent's misc.max bounds its subtree: with 3 for the parent, a child
 * holding 2 leaves its sibling 1. The refusal is counted where the limit
 * was met (the parent), not in the child that asked; misc.current of the
 * parent is the sum of its children's. What one child gives back, the
 * other may take.
 */
TEST(misccg_parent_limit_bounds_the_subtree)
{
	long F = lp_nfree(), r;
	struct lp_peer a, b;
	char top[128], ca[160], cb[160];

	misc_ready();
	ASSERT_GE(F, 4);
	cg_make(top, sizeof(top), NULL, "top", "3");
	cg_delegate(top);
	cg_make(ca, sizeof(ca), top, "a", "max");
	cg_make(cb, sizeof(cb), top, "b", "max");
	agent_in(&a, ca, AGENT_ROOT, RLIM_INFINITY);
	agent_in(&b, cb, AGENT_ROOT, RLIM_INFINITY);

	ASSERT_TRUE(LP_OK(a_get(&a, 2, MAP_PRIVATE)));
	r = a_get(&b, 1, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(a_get(&b, 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(cg_current(top), 3);
	EXPECT_EQ(cg_current(ca), 2);
	EXPECT_EQ(cg_current(cb), 1);
	EXPECT_EQ(cg_events(top), 1);
	EXPECT_EQ(cg_events(ca), 0);
	EXPECT_EQ(cg_events(cb), 0);
	EXPECT_EQ(lp_nfree(), F - 3);

	/* b first: an agent holds the pipes of those before it. */
	agent_stop(&b);
	EXPECT_EQ(settle_current(top, 2), 2);
	EXPECT_EQ(cg_current(cb), 0);
	EXPECT_TRUE(LP_OK(a_get(&a, 1, MAP_PRIVATE)));
	EXPECT_EQ(cg_current(ca), 3);
	EXPECT_EQ(a_get(&a, 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(cg_events(top), 2);
	EXPECT_EQ(cg_events(ca), 0);
	agent_stop(&a);
	EXPECT_EQ(settle_current(top, 0), 0);
	EXPECT_EQ(lp_settle_nfree(F), F);
	cg_remove(ca);
	cg_remove(cb);
	cg_remove(top);
}

/*
 * A pool too short for a call is ENOMEM as ever, and no refusal of the
 * cgroup's: misc.events stays 0 under a limit above the pool.
 */
TEST(misccg_short_pool_is_no_refusal)
{
	long F = lp_nfree();
	struct lp_peer a;
	char cg[128], max[32];

	misc_ready();
	snprintf(max, sizeof(max), "%ld", F + 10);
	cg_make(cg, sizeof(cg), NULL, "short", max);
	agent_in(&a, cg, AGENT_ROOT, RLIM_INFINITY);
	EXPECT_EQ(a_get(&a, F + 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(cg_current(cg), 0);
	EXPECT_EQ(cg_events(cg), 0);
	EXPECT_EQ(lp_nfree(), F);
	agent_stop(&a);
	cg_remove(cg);
}

/*
 * A page is uncharged when it returns to the pool, not when its segment
 * goes: a pipe that holds a reference to it (vmsplice) after the mapping
 * is freed keeps it out of the pool and charged, until the pipe closes.
 */
TEST(misccg_page_stays_charged_until_it_returns)
{
	unsigned long lp = lp_size();
	long F = lp_nfree();
	struct lp_peer p;
	char cg[128];

	misc_ready();
	ASSERT_GE(F, 1);
	cg_make(cg, sizeof(cg), NULL, "pinned", "max");
	ASSERT_GE(lp_peer_fork(&p), 0);
	if (p.pid == 0) {
		struct iovec iov;
		int fds[2];
		long r;

		lp_peer_recv(&p);	/* moved */
		r = lpsys_get(0, lp, RW, MAP_PRIVATE);
		if (!LP_OK(r) || pipe(fds))
			_exit(1);
		memset(LP_PTR(r), 0x5a, 4096);
		iov.iov_base = LP_PTR(r);
		iov.iov_len = 4096;
		if (vmsplice(fds[1], &iov, 1, 0) != 4096 || lpsys_free(r))
			_exit(2);
		lp_peer_send(&p, 1);	/* freed, the pipe still holds it */
		lp_peer_recv(&p);
		close(fds[0]);
		close(fds[1]);
		lp_peer_send(&p, 2);	/* closed */
		_exit(0);
	}
	cg_move(cg, p.pid);
	lp_peer_send(&p, 0);
	EXPECT_EQ(lp_peer_recv(&p), 1);
	usleep(100000);
	EXPECT_EQ(lp_nfree(), F - 1);
	EXPECT_EQ(cg_current(cg), 1);
	lp_peer_send(&p, 0);
	EXPECT_EQ(lp_peer_recv(&p), 2);
	EXPECT_EQ(settle_current(cg, 0), 0);
	EXPECT_EQ(lp_settle_nfree(F), F);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
	cg_remove(cg);
}

/* ---------------------------------------------------- racing cgroups */

#define RACERS		4	/* two in each cgroup */
#define ROUNDS		12
#define OPS_PER_ROUND	25
#define RKEYS		4	/* keys per cgroup */
#define RMAPS		4	/* mappings a racer holds at most */

/* What a racer holds at a quiescent point. */
struct holding {
	long pages;		/* of its get mappings */
	long key_pages[RKEYS];	/* of each of its cgroup's keys it maps */
};

/* Key k (0..RKEYS - 1) of cgroup c: its number and its size in pages. */
static int rkey(int c, int k)
{
	return 7410 + c * RKEYS + k;
}

static long rkey_pages(int k)
{
	return k % 2 + 1;
}

static void racer(struct lp_peer *p, int c, unsigned int seed)
{
	unsigned long lp = lp_size();
	struct { long r, pages; int key; } m[RMAPS];
	struct holding h;
	int n = 0, round, op, i, k;
	long r, pages;

	lp_peer_recv(p);	/* in its cgroup */
	for (round = 0; round < ROUNDS; round++) {
		for (op = 0; op < OPS_PER_ROUND; op++) {
			if (n == RMAPS || (n && rand_r(&seed) % 3 == 0)) {
				i = rand_r(&seed) % n;
				if (lpsys_free(m[i].r))
					_exit(3);
				m[i] = m[--n];
				continue;
			}
			k = -1;
			if (rand_r(&seed) % 2) {
				pages = rand_r(&seed) % 2 + 1;
				r = lpsys_get(0, pages * lp, RW, rand_r(&seed) % 2 ?
					      MAP_PRIVATE : MAP_SHARED);
			} else {
				k = rand_r(&seed) % RKEYS;
				pages = rkey_pages(k);
				for (i = 0; i < n && m[i].key != rkey(c, k); i++)
					;
				if (i < n)
					continue;	/* one attach of a key each */
				r = lpsys_share(rkey(c, k), 0, pages * lp, RW,
						IPC_CREAT | 0600);
			}
			if (!LP_OK(r)) {
				if (errno != ENOMEM)
					_exit(4);
				continue;
			}
			m[n].r = r;
			m[n].pages = pages;
			m[n++].key = k < 0 ? 0 : rkey(c, k);
		}
		memset(&h, 0, sizeof(h));
		for (i = 0; i < n; i++)
			if (m[i].key)
				h.key_pages[m[i].key - rkey(c, 0)] = m[i].pages;
			else
				h.pages += m[i].pages;
		if (write(p->wfd, &h, sizeof(h)) != sizeof(h))
			_exit(5);
		lp_peer_recv(p);	/* the test has looked */
	}
	_exit(0);
}

/*
 * Four processes, two in each of two cgroups (one with misc.max 3), get,
 * share and free at once; each cgroup's processes share its own keys.
 * At every quiescent point (all stopped, holding what they hold) each
 * cgroup's misc.current is exactly the pages its processes' get mappings
 * hold plus the pages of its live keyed segments, the limited one never
 * above 3, and the pool's free pages are all the rest: a refusal that
 * raced another cgroup's charge took and charged nothing.
 */
TEST(misccg_racing_cgroups_charge_exactly)
{
	long F = lp_nfree(), want[2], held, cur;
	struct lp_peer p[RACERS];
	struct holding h;
	char cg[2][128];
	int i, c, k, round, bad = 0;
	long keys[2][RKEYS];

	misc_ready();
	ASSERT_GE(F, 8);
	cg_make(cg[0], sizeof(cg[0]), NULL, "race0", "3");
	cg_make(cg[1], sizeof(cg[1]), NULL, "race1", "max");
	for (i = 0; i < RACERS; i++) {
		ASSERT_GE(lp_peer_fork(&p[i]), 0);
		if (p[i].pid == 0)
			racer(&p[i], i % 2, 0x5eed + i);
		cg_move(cg[i % 2], p[i].pid);
	}
	for (i = 0; i < RACERS; i++)
		lp_peer_send(&p[i], 0);
	for (round = 0; round < ROUNDS; round++) {
		memset(keys, 0, sizeof(keys));
		want[0] = want[1] = 0;
		for (i = 0; i < RACERS; i++) {
			c = i % 2;
			ASSERT_EQ(read(p[i].rfd, &h, sizeof(h)), sizeof(h));
			want[c] += h.pages;
			for (k = 0; k < RKEYS; k++)
				if (h.key_pages[k])
					keys[c][k] = h.key_pages[k];
		}
		held = 0;
		for (c = 0; c < 2; c++) {
			for (k = 0; k < RKEYS; k++)
				want[c] += keys[c][k];
			held += want[c];
			cur = cg_current(cg[c]);
			if (cur != want[c]) {
				TH_LOG("round %d: misc.current of cgroup %d is %ld, its processes hold %ld",
				       round, c, cur, want[c]);
				bad++;
			}
		}
		EXPECT_LE(cg_current(cg[0]), 3);
		if (lp_nfree() != F - held) {
			TH_LOG("round %d: %ld pages free, %ld held of %ld",
			       round, lp_nfree(), held, F);
			bad++;
		}
		for (i = 0; i < RACERS; i++)
			lp_peer_send(&p[i], 0);
	}
	for (i = 0; i < RACERS; i++)
		EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p[i]), 0));
	EXPECT_EQ(bad, 0);
	TH_LOG("refusals: %ld in the limited cgroup, %ld in the other",
	       cg_events(cg[0]), cg_events(cg[1]));
	EXPECT_GT(cg_events(cg[0]), 0);
	for (c = 0; c < 2; c++) {
		EXPECT_EQ(settle_current(cg[c], 0), 0);
		cg_remove(cg[c]);
	}
	EXPECT_EQ(lp_settle_nfree(F), F);
}

/* ------------------------------------------- a refused tenant, alone */

#define ZEROED "/sys/kernel/mm/largepage/free_zeroed_pages"
#define HAMMER_SECS 2
#define VICTIM_CALLS 1500

struct tenants {
	int stop;
	long hammer_calls, hammer_other;	/* whole-pool gets; not ENOMEM */
	long nobody_calls, nobody_other;	/* the same, over memlock */
	long victim_calls, victim_failed;
};

/*
 * A tenant that is refused every time: get the whole pool over and over
 * until told to stop. Every call must fail with ENOMEM.
 */
static void hammer(struct tenants *t, long pages, long *calls, long *other)
{
	long r;

	while (!__atomic_load_n(&t->stop, __ATOMIC_SEQ_CST)) {
		r = lpsys_get(0, pages * lp_size(), RW, MAP_PRIVATE);
		__atomic_add_fetch(calls, 1, __ATOMIC_SEQ_CST);
		if (LP_OK(r) || errno != ENOMEM) {
			__atomic_add_fetch(other, 1, __ATOMIC_SEQ_CST);
			if (LP_OK(r))
				lpsys_free(r);
		}
	}
	_exit(0);
}

static pid_t start_hammer(struct tenants *t, const char *cg, long pages,
			  int nobody)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	if (cg && cg_enter(cg, getpid()))
		_exit(2);
	if (nobody) {
		lp_set_memlock(lp_size());	/* one page: never the pool */
		become_nobody();
		hammer(t, pages, &t->nobody_calls, &t->nobody_other);
	}
	hammer(t, pages, &t->hammer_calls, &t->hammer_other);
	return 0;
}

/* free_zeroed_pages once every free page is zeroed (lp_zerod idle). */
static long settle_free_zeroed(long want)
{
	return SETTLE(read_long(ZEROED), want, 6000);
}

/*
 * For HAMMER_SECS, the lowest LargePages_Free and free_zeroed_pages seen
 * (*fmin and *zmin, if below what they hold).
 */
static void pool_lows(long *fmin, long *zmin)
{
	long z, f;
	double end;

	for (end = now() + HAMMER_SECS; now() < end;) {
		z = read_long(ZEROED);
		f = lp_nfree();
		*zmin = z < *zmin ? z : *zmin;
		*fmin = f < *fmin ? f : *fmin;
	}
}

/*
 * The victim: in cg (NULL: where it is), VICTIM_CALLS one-page gets and
 * frees, each counted, and those that fail. Its pid (or -1).
 */
static pid_t start_victim(struct tenants *t, const char *cg)
{
	pid_t pid = fork();
	long i, r;

	if (pid)
		return pid;
	if (cg && cg_enter(cg, getpid()))
		_exit(2);
	for (i = 0; i < VICTIM_CALLS; i++) {
		r = lpsys_get(0, lp_size(), RW, MAP_PRIVATE);
		t->victim_calls++;
		if (!LP_OK(r)) {
			t->victim_failed++;
			continue;
		}
		*(volatile char *)LP_PTR(r) = 1;
		if (lpsys_free(r))
			t->victim_failed++;
	}
	_exit(0);
}

/*
 * SPEC 2: a refused call never disturbs the pool. A tenant whose cgroup
 * is at "largepage 0" asks for the whole pool in a loop, beside a nobody
 * whose RLIMIT_MEMLOCK is one page doing the same (the nobody alone on
 * a kernel without the misc controller): every call is refused,
 * and no page leaves the pool even for an instant. While they hammer
 * alone, LargePages_Free and free_zeroed_pages never move from the whole
 * pool (a kernel that took the pages before the charge failed gives them
 * back to be zeroed again); then a tenant of another cgroup makes
 * VICTIM_CALLS one-page get and free calls, and every one succeeds.
 * misc.events counts each of the limited tenant's refusals, exactly: it
 * asks for all but one page, so the pool itself never refuses it.
 */
TEST(misccg_refused_tenant_never_disturbs_the_pool)
{
	struct tenants *t = mmap(NULL, sizeof(*t), RW,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long F = lp_nfree(), z, zmin, fmin;
	int misc = misc_built(), st;
	char cg[2][128] = { "", "" };
	pid_t ham = -1, nob, vic;

	ASSERT_TRUE(t != MAP_FAILED);
	ASSERT_GE(F, 4);
	ASSERT_EQ(lp_total(), F);
	if (misc) {
		misc_ready();
		cg_make(cg[0], sizeof(cg[0]), NULL, "refused", "0");
		cg_make(cg[1], sizeof(cg[1]), NULL, "victim", "max");
	} else {
		TH_LOG("no misc controller: the RLIMIT_MEMLOCK tenant alone");
	}
	z = settle_free_zeroed(F);
	TH_LOG("pool %ld pages, %ld zeroed", F, z);
	ASSERT_EQ(z, F);

	/* F - 1: the victim holds at most one page, so it is never short. */
	if (misc) {
		ham = start_hammer(t, cg[0], F - 1, 0);
		ASSERT_GT(ham, 0);
	}
	nob = start_hammer(t, NULL, F, 1);
	ASSERT_GT(nob, 0);
	zmin = fmin = F;
	pool_lows(&fmin, &zmin);
	TH_LOG("hammering alone: %ld and %ld refused calls; free pages never below %ld, zeroed never below %ld",
	       __atomic_load_n(&t->hammer_calls, __ATOMIC_SEQ_CST),
	       __atomic_load_n(&t->nobody_calls, __ATOMIC_SEQ_CST), fmin, zmin);
	EXPECT_EQ(fmin, F);
	EXPECT_EQ(zmin, F);

	vic = start_victim(t, misc ? cg[1] : NULL);
	ASSERT_GE(vic, 0);
	ASSERT_EQ(waitpid(vic, &st, 0), vic);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	__atomic_store_n(&t->stop, 1, __ATOMIC_SEQ_CST);
	if (misc) {
		ASSERT_EQ(waitpid(ham, &st, 0), ham);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
	}
	ASSERT_EQ(waitpid(nob, &st, 0), nob);
	EXPECT_TRUE(CHILD_EXITED(st, 0));

	TH_LOG("beside them: %ld of %ld one-page calls failed; %ld and %ld refused calls in all",
	       t->victim_failed, t->victim_calls, t->hammer_calls,
	       t->nobody_calls);
	EXPECT_EQ(t->victim_calls, VICTIM_CALLS);
	EXPECT_EQ(t->victim_failed, 0);
	EXPECT_GT(t->nobody_calls, 0);
	EXPECT_EQ(t->nobody_other, 0);
	if (misc) {
		EXPECT_GT(t->hammer_calls, 0);
		EXPECT_EQ(t->hammer_other, 0);
		EXPECT_EQ(cg_events(cg[0]), t->hammer_calls);
		EXPECT_EQ(cg_current(cg[0]), 0);
		EXPECT_EQ(cg_events(cg[1]), 0);
		EXPECT_EQ(settle_current(cg[1], 0), 0);
		cg_remove(cg[0]);
		cg_remove(cg[1]);
	}
	EXPECT_EQ(lp_settle_nfree(F), F);
}
