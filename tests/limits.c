// SPDX-License-Identifier: GPL-2.0
/*
 * Large pages are locked memory: RLIMIT_MEMLOCK for unprivileged callers,
 * keyed segments charged to their creator, and pool exhaustion.
 *
 * The unprivileged side is played by agents (agent.h).
 */
#include "agent.h"

#define LPGROUP "/proc/sys/kernel/largepage_group"
#define MEMBERS 4243	/* the group the tests put in largepage_group */

TEST(limits_memlock_one_page_second_get_enomem)
{
	long nfree = lp_nfree(), r, r2;
	struct lp_peer a;

	agent_start(&a, NOBODY, lp_size());
	r = a_get(&a, 1, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(a_get(&a, 1, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(a_get(&a, 1, MAP_SHARED), -ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(a_free(&a, r), 0);
	/* The charge went with the free. */
	r2 = a_get(&a, 1, MAP_SHARED);
	EXPECT_TRUE(LP_OK(r2));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	if (LP_OK(r2))
		EXPECT_EQ(a_free(&a, r2), 0);
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(limits_memlock_single_request_over_limit_enomem)
{
	long nfree = lp_nfree(), r;
	struct lp_peer a;

	agent_start(&a, NOBODY, 2 * lp_size());
	EXPECT_EQ(a_get(&a, 3, MAP_PRIVATE), -ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	r = a_get(&a, 2, MAP_PRIVATE);
	EXPECT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	if (LP_OK(r))
		EXPECT_EQ(a_free(&a, r), 0);
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(limits_memlock_zero_eperm)
{
	long nfree = lp_nfree();
	struct lp_peer a;

	agent_start(&a, NOBODY, 0);
	EXPECT_EQ(a_get(&a, 1, MAP_PRIVATE), -EPERM);
	EXPECT_EQ(a_get(&a, 1, MAP_SHARED), -EPERM);
	EXPECT_EQ(a_share(&a, 5000, 1, RW, IPC_CREAT | 0600), -EPERM);
	EXPECT_EQ(lp_nfree(), nfree);
	agent_stop(&a);
	EXPECT_TRUE(lp_key_absent(5000, lp_size()));
}

TEST(limits_root_not_limited_by_memlock)
{
	long nfree = lp_nfree(), r, k;
	struct lp_peer a;

	/* CAP_IPC_LOCK: root with RLIMIT_MEMLOCK 0. */
	agent_start(&a, AGENT_ROOT, 0);
	r = a_get(&a, 2, MAP_PRIVATE);
	EXPECT_TRUE(LP_OK(r));
	k = a_share(&a, 5001, 2, RW, IPC_CREAT | 0600);
	EXPECT_TRUE(LP_OK(k));
	EXPECT_EQ(lp_nfree(), nfree - 4);
	if (LP_OK(r))
		EXPECT_EQ(a_free(&a, r), 0);
	if (LP_OK(k))
		EXPECT_EQ(a_unshare(&a, k), 0);
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(limits_keyed_segment_over_limit_enomem)
{
	long nfree = lp_nfree(), k;
	struct lp_peer a;

	agent_start(&a, NOBODY, lp_size());
	EXPECT_EQ(a_share(&a, 5002, 2, RW, IPC_CREAT | 0600), -ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	k = a_share(&a, 5003, 1, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(k));
	/* The first segment used up the creator's allowance. */
	EXPECT_EQ(a_share(&a, 5004, 1, RW, IPC_CREAT | 0600), -ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(a_unshare(&a, k), 0);
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(5002, lp_size()));
	EXPECT_TRUE(lp_key_absent(5004, lp_size()));
}

TEST(limits_attach_charges_nothing)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), r, k;
	struct lp_peer a;

	r = lpsys_share(5005, 0, len, RW, IPC_CREAT | 0666);
	ASSERT_TRUE(LP_OK(r));
	*(volatile uint32_t *)(LP_PTR(r) + 16) = 0x5005;
	agent_start(&a, NOBODY, 0);
	k = a_share(&a, 5005, 1, RW, 0);
	ASSERT_TRUE(LP_OK(k));
	EXPECT_EQ(a_peek(&a, k + 16), 0x5005);
	EXPECT_EQ(a_poke(&a, k + 20, 0xa5a5), 0);
	EXPECT_EQ(*(volatile uint32_t *)(LP_PTR(r) + 20), 0xa5a5);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	/* Still limited for memory of its own. */
	EXPECT_EQ(a_get(&a, 1, MAP_PRIVATE), -EPERM);
	EXPECT_EQ(a_unshare(&a, k), 0);
	agent_stop(&a);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(limits_keyed_charge_lasts_until_segment_destroyed)
{
	long nfree = lp_nfree(), k, ka, k2;
	struct lp_peer c, a;

	agent_start(&c, NOBODY, lp_size());
	agent_start(&a, NOBODY, 0);
	k = a_share(&c, 5006, 1, RW, IPC_CREAT | 0666);
	ASSERT_TRUE(LP_OK(k));
	ka = a_share(&a, 5006, 1, RW, 0);
	ASSERT_TRUE(LP_OK(ka));

	/* The creator detaches, the segment lives on, still charged to it. */
	ASSERT_EQ(a_unshare(&c, k), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(a_share(&c, 5007, 1, RW, IPC_CREAT | 0600), -ENOMEM);

	/* Destroyed: the charge is gone. */
	ASSERT_EQ(a_unshare(&a, ka), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	k2 = a_share(&c, 5007, 1, RW, IPC_CREAT | 0600);
	EXPECT_TRUE(LP_OK(k2));
	if (LP_OK(k2))
		EXPECT_EQ(a_unshare(&c, k2), 0);
	agent_stop(&a);
	agent_stop(&c);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(5006, lp_size()));
	EXPECT_TRUE(lp_key_absent(5007, lp_size()));
}

TEST(limits_charge_released_at_exit)
{
	long nfree = lp_nfree(), r, k;
	struct lp_peer a;

	/* An agent that exits holding a page and a segment... */
	agent_start(&a, NOBODY, 2 * lp_size());
	ASSERT_TRUE(LP_OK(a_get(&a, 1, MAP_SHARED)));
	ASSERT_TRUE(LP_OK(a_share(&a, 5008, 1, RW, IPC_CREAT | 0600)));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);

	/* ...leaves nothing charged to nobody. */
	agent_start(&a, NOBODY, 2 * lp_size());
	r = a_get(&a, 1, MAP_PRIVATE);
	EXPECT_TRUE(LP_OK(r));
	k = a_share(&a, 5009, 1, RW, IPC_CREAT | 0600);
	EXPECT_TRUE(LP_OK(k));
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(5008, lp_size()));
	EXPECT_TRUE(lp_key_absent(5009, lp_size()));
}

TEST(limits_pool_exhaustion_keyed_segment_enomem)
{
	long nfree = lp_nfree();
	int lines = lp_maps_lines();

	ASSERT_GE(nfree, 1);
	EXPECT_ERRNO(lpsys_share(5010, 0, (nfree + 1) * lp_size(), RW,
				 IPC_CREAT | 0600), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(lp_maps_lines(), lines);
	EXPECT_TRUE(lp_key_absent(5010, lp_size()));
}

TEST(limits_pool_exhaustion_by_another_process)
{
	long nfree = lp_nfree(), held, r;
	int lines;
	struct lp_peer a;

	ASSERT_GE(nfree, 2);
	agent_start(&a, AGENT_ROOT, 0);
	held = a_get(&a, nfree - 1, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(held));
	EXPECT_EQ(lp_nfree(), 1);

	lines = lp_maps_lines();
	EXPECT_ERRNO(lpsys_get(0, 2 * lp_size(), RW, MAP_SHARED), ENOMEM);
	EXPECT_ERRNO(lpsys_share(5011, 0, 2 * lp_size(), RW, IPC_CREAT), ENOMEM);
	EXPECT_EQ(lp_nfree(), 1);
	EXPECT_EQ(lp_maps_lines(), lines);
	EXPECT_TRUE(lp_key_absent(5011, lp_size()));

	r = lpsys_get(0, lp_size(), RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_ERRNO(lpsys_get(0, lp_size(), RW, MAP_PRIVATE), ENOMEM);
	ASSERT_EQ(lpsys_free(r), 0);

	/* The holder's exit gives the rest back. */
	agent_stop(&a);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * mlockall(MCL_FUTURE) and large pages: they are locked memory already,
 * charged once to RLIMIT_MEMLOCK when made, so a later get or share is
 * accepted (not EAGAIN for counting them twice against the limit), and
 * the limit itself still holds.
 */
static void mlockall_then_get(void *arg)
{
	unsigned long lp = lp_size();
	static char locked[65536];
	long r;

	(void)arg;
	lp_set_memlock(2 * lp);
	become_nobody();
	/* Some mlock()ed memory: mm->locked_vm is not zero. */
	ASSERT_EQ(mlock(locked, sizeof(locked)), 0);
	ASSERT_EQ(mlockall(MCL_FUTURE), 0);
	/* The whole limit: counted twice, it would be over (EAGAIN). */
	r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	if (!LP_OK(r))
		TH_LOG("get after mlockall(MCL_FUTURE): %s", strerror(errno));
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), 2 * lp));
	lp_fill(LP_PTR(r), 2 * lp, 5020);
	/* The limit itself still holds. */
	EXPECT_ERRNO(lpsys_get(0, lp, RW, MAP_SHARED), ENOMEM);
	EXPECT_ERRNO(lpsys_share(5020, 0, lp, RW, IPC_CREAT | 0600), ENOMEM);
	EXPECT_TRUE(lp_check(LP_PTR(r), 2 * lp, 5020));
	ASSERT_EQ(lpsys_free(r), 0);
	ASSERT_EQ(munlockall(), 0);
	_exit(harness_failed);
}

TEST(limits_mlockall_future_then_get_accepted)
{
	int st = run_child(mlockall_then_get, NULL);

	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

/* VmSize of this process in bytes, from /proc/self/status. */
static unsigned long vm_size(void)
{
	char line[128];
	unsigned long kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lu", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * A get or share that fails at the last step (the address space cannot
 * take the mapping) must undo everything: pool, key, memlock charge and
 * maps as before. The charge is proved by taking the whole limit after.
 */
static void expect_rolled_back(long nfree, int maps, int key)
{
	unsigned long lp = lp_size();

	EXPECT_ERRNO(lpsys_get(0, lp, RW, MAP_PRIVATE), ENOMEM);
	EXPECT_ERRNO(lpsys_get(0, 2 * lp, RW, MAP_SHARED), ENOMEM);
	EXPECT_ERRNO(lpsys_share(key, 0, lp, RW, IPC_CREAT | 0600), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(lp_maps_lines(), maps);
	EXPECT_TRUE(lp_key_absent(key, lp));
}

static void rollback_rlimit_as(void *arg)
{
	unsigned long lp = lp_size();
	struct rlimit as = { RLIM_INFINITY, RLIM_INFINITY };
	long nfree = lp_nfree(), r;
	int maps;

	(void)arg;
	lp_set_memlock(2 * lp);
	become_nobody();
	maps = lp_maps_lines();		/* warms up stdio's buffers too */
	as.rlim_cur = vm_size();
	ASSERT_EQ(setrlimit(RLIMIT_AS, &as), 0);
	expect_rolled_back(nfree, maps, 5030);
	as.rlim_cur = RLIM_INFINITY;
	ASSERT_EQ(setrlimit(RLIMIT_AS, &as), 0);
	r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	if (!LP_OK(r))
		TH_LOG("the whole memlock limit after the failures: %s",
		       strerror(errno));
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(lpsys_free(r), 0);
	_exit(harness_failed);
}

TEST(limits_rlimit_as_failure_rolls_back)
{
	int st = run_child(rollback_rlimit_as, NULL);

	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

#define MAX_MAP_COUNT "/proc/sys/vm/max_map_count"

TEST(limits_max_map_count_failure_rolls_back)
{
	unsigned long lp = lp_size();
	long old = read_long(MAX_MAP_COUNT), nfree = lp_nfree(), n;
	char buf[32];
	struct lp_peer p;
	int st;

	ASSERT_GT(old, 0);
	if (lp_peer_fork(&p) == 0) {
		long r;
		int maps;

		lp_set_memlock(2 * lp);
		become_nobody();
		maps = lp_maps_lines();
		lp_peer_send(&p, maps);
		lp_peer_recv(&p);	/* the limit is now reached */
		expect_rolled_back(nfree, maps, 5031);
		lp_peer_send(&p, harness_failed);
		lp_peer_recv(&p);	/* the limit is back */
		r = lpsys_get(0, 2 * lp, RW, MAP_SHARED);
		ASSERT_TRUE(LP_OK(r));
		ASSERT_EQ(lpsys_free(r), 0);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	n = lp_peer_recv(&p);
	/* One more vma than max_map_count allows is refused. */
	snprintf(buf, sizeof(buf), "%ld\n", n - 1);
	ASSERT_EQ(write_text(MAX_MAP_COUNT, buf), 0);
	lp_peer_send(&p, 0);
	EXPECT_EQ(lp_peer_recv(&p), 0);
	snprintf(buf, sizeof(buf), "%ld\n", old);
	ASSERT_EQ(write_text(MAX_MAP_COUNT, buf), 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

/*
 * When the pool cannot meet a request, the memlock charge taken before
 * the pages are looked for is given back: after failing, an
 * unprivileged caller still gets its whole limit.
 */
TEST(limits_pool_exhaustion_keeps_no_charge)
{
	long nfree = lp_nfree(), held, r;
	struct lp_peer root, user;
	int i;

	ASSERT_GE(nfree, 3);
	agent_start(&root, AGENT_ROOT, 0);
	agent_start(&user, NOBODY, 2 * lp_size());
	held = a_get(&root, nfree - 1, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(held));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(a_get(&user, 2, MAP_PRIVATE), -ENOMEM);
		EXPECT_EQ(a_share(&user, 5040, 2, RW, IPC_CREAT | 0600),
			  -ENOMEM);
	}
	EXPECT_EQ(a_free(&root, held), 0);
	r = a_get(&user, 2, MAP_SHARED);
	if (!LP_OK(r))
		TH_LOG("the whole limit after the failures: %s", strerror(-r));
	EXPECT_TRUE(LP_OK(r));
	/* The user agent holds copies of the root agent's pipes: first. */
	agent_stop(&user);
	agent_stop(&root);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * kernel.largepage_group: its members hold large pages beyond
 * RLIMIT_MEMLOCK, charged to no one (nobody's own allowance stays
 * whole), and get no EPERM at a limit of 0; the others of the same uid
 * are held to the limit; segment modes still apply; and clearing the
 * group takes effect at the next call.
 */
TEST(limits_group_member_beyond_memlock)
{
	long nfree = lp_nfree(), r, k, o1, z;
	struct lp_peer m, m0, o, r0;

	ASSERT_GE(nfree, 6);
	ASSERT_EQ(write_text(LPGROUP, "4243"), 0);
	EXPECT_EQ(read_long(LPGROUP), MEMBERS);
	k = lpsys_share(7702, 0, lp_size(), RW, IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(k));
	agent_start_in(&m, MEMBERS, 64 * 1024);
	agent_start_in(&m0, MEMBERS, 0);
	agent_start_in(&o, MEMBERS + 1, lp_size());

	r = a_get(&m, 2, MAP_PRIVATE);
	EXPECT_TRUE(LP_OK(r));
	z = a_share(&m0, 7701, 2, RW, IPC_CREAT | IPC_EXCL | 0600);
	EXPECT_TRUE(LP_OK(z));
	EXPECT_EQ(lp_nfree(), nfree - 5);
	/* The members' 4 pages are charged to no one: nobody's page is there. */
	o1 = a_get(&o, 1, MAP_PRIVATE);
	EXPECT_TRUE(LP_OK(o1));
	EXPECT_EQ(a_get(&o, 1, MAP_PRIVATE), -ENOMEM);
	/* The group lifts the limit, not the segment's mode. */
	EXPECT_EQ(a_share(&m, 7702, 1, PROT_READ, 0), -EACCES);

	/* Nobody again: the next call is held to the limit. */
	ASSERT_EQ(write_text(LPGROUP, "0"), 0);
	EXPECT_EQ(a_get(&m0, 1, MAP_PRIVATE), -EPERM);
	/* 0 is nobody, not the root group. */
	agent_start_in(&r0, 0, 0);
	EXPECT_EQ(a_get(&r0, 1, MAP_PRIVATE), -EPERM);
	agent_stop(&r0);
	EXPECT_EQ(a_get(&m, 1, MAP_PRIVATE), -ENOMEM);
	/* What a member made stays uncharged: freeing it uncharges nothing. */
	if (LP_OK(r))
		EXPECT_EQ(a_free(&m, r), 0);
	if (LP_OK(z))
		EXPECT_EQ(a_unshare(&m0, z), 0);
	EXPECT_EQ(a_get(&o, 1, MAP_PRIVATE), -ENOMEM);
	if (LP_OK(o1))
		EXPECT_EQ(a_free(&o, o1), 0);
	/*
	 * Newest first: an agent forked later holds the pipes of those
	 * before it, which see their end only once it is gone.
	 */
	agent_stop(&o);
	agent_stop(&m0);
	agent_stop(&m);
	EXPECT_EQ(lpsys_unshare(k), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(7701, 2 * lp_size()));
	EXPECT_TRUE(lp_key_absent(7702, lp_size()));
}

static void group_nocap_body(void *arg)
{
	(void)arg;
	if (lp_drop_cap(CAP_SYS_ADMIN))
		_exit(2);
	_exit(write_text(LPGROUP, "4243") == -EPERM ? 0 : 1);
}

/*
 * Writing it: a gid, 0 for nobody (the default); anything else is
 * EINVAL and changes nothing; only CAP_SYS_ADMIN writes, not uid 0 alone.
 */
TEST(limits_group_sysctl_writes)
{
	static const char *const junk[] = {
		"-1", "abc", "1x", "1 2", "0x10", "4294967295", "4294967296",
		"99999999999999999999",
	};
	unsigned int i;
	int ret;

	EXPECT_EQ(read_long(LPGROUP), 0);
	ASSERT_EQ(write_text(LPGROUP, "4243\n"), 0);
	EXPECT_EQ(read_long(LPGROUP), MEMBERS);
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		ret = write_text(LPGROUP, junk[i]);
		if (ret != -EINVAL)
			TH_LOG("writing '%s': %d", junk[i], ret);
		EXPECT_EQ(ret, -EINVAL);
		EXPECT_EQ(read_long(LPGROUP), MEMBERS);
	}
	/* Nothing says what an empty write returns: only that it changes nothing. */
	write_text(LPGROUP, "");
	EXPECT_EQ(read_long(LPGROUP), MEMBERS);
	EXPECT_TRUE(CHILD_EXITED(run_child(group_nocap_body, NULL), 0));
	EXPECT_EQ(read_long(LPGROUP), MEMBERS);
	ASSERT_EQ(write_text(LPGROUP, "0"), 0);
	EXPECT_EQ(read_long(LPGROUP), 0);
}
