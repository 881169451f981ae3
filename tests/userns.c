// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed segments and namespaces. Keys live in the caller's IPC namespace,
 * as SysV shm keys do, and CAP_IPC_OWNER overrides a segment's mode only
 * when held over the user namespace that owns that IPC namespace: root
 * of a user namespace one made oneself (unprivileged, Debian's default)
 * is nobody to the segments outside it. The memlock limit holds there too.
 */
#include <sched.h>
#include <sys/prctl.h>
#include "lp.h"

/*
 * Become nobody, then root of a new user namespace (plus extra unshare
 * flags) with nobody mapped to 0 inside: every capability in there,
 * none outside.
 */
static void nobody_in_own_userns(int extra)
{
	char map[32];

	become_nobody();
	/* setresuid() made us undumpable: the id maps would be root's. */
	prctl(PR_SET_DUMPABLE, 1);
	if (unshare(CLONE_NEWUSER | extra)) {
		printf("# unshare(CLONE_NEWUSER): %s\n", strerror(errno));
		_exit(1);
	}
	snprintf(map, sizeof(map), "0 %d 1\n", NOBODY);
	if (write_text("/proc/self/setgroups", "deny") ||
	    write_text("/proc/self/uid_map", map) ||
	    write_text("/proc/self/gid_map", map)) {
		printf("# cannot write the id maps: %s\n", strerror(errno));
		_exit(1);
	}
	ASSERT_EQ(geteuid(), 0);
}

static long create_filled(int key, unsigned long len, int mode, uint32_t seed)
{
	long r = lpsys_share(key, 0, len, RW, IPC_CREAT | IPC_EXCL | mode);

	if (LP_OK(r))
		lp_fill(LP_PTR(r), len, seed);
	return r;
}

/*
 * A one-page segment of ours under key, filled with seed, and fn run in
 * a child beside it: the child exits 0 and leaves our data as it was.
 * The segment, for the test to release.
 */
static long run_beside_segment(int key, int mode, uint32_t seed,
			       void (*fn)(void *))
{
	unsigned long lp = lp_size();
	long r = create_filled(key, lp, mode, seed);
	int st;

	ASSERT_TRUE(LP_OK(r));
	st = run_child(fn, NULL);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), lp, seed));
	return r;
}

static void userns_root_probes(void *arg)
{
	unsigned long lp = lp_size();

	(void)arg;
	nobody_in_own_userns(0);
	EXPECT_ERRNO(lpsys_share(8001, 0, lp, PROT_READ, 0), EACCES);
	EXPECT_ERRNO(lpsys_share(8001, 0, lp, RW, 0), EACCES);
	EXPECT_ERRNO(lpsys_share(8001, 0, lp, RW, IPC_CREAT | 0600), EACCES);
	/* Permission first: a wrong length tells nothing either. */
	EXPECT_ERRNO(lpsys_share(8001, 0, 2 * lp, PROT_READ, 0), EACCES);
	_exit(harness_failed);
}

TEST(userns_root_cannot_attach_foreign_0600_segment)
{
	long nfree = lp_nfree(), r;

	r = run_beside_segment(8001, 0600, 8001, userns_root_probes);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_unshare(r), 0);
}

/* A 0644 segment: the user namespace's root reads it as other, no more. */
static void userns_root_reads_0644(void *arg)
{
	unsigned long lp = lp_size();
	long r;

	(void)arg;
	nobody_in_own_userns(0);
	EXPECT_ERRNO(lpsys_share(8002, 0, lp, RW, 0), EACCES);
	r = lpsys_share(8002, 0, lp, PROT_READ, 0);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_check(LP_PTR(r), lp, 8002));
	EXPECT_TRUE(touch_faults(LP_PTR(r), 1));
	ASSERT_EQ(lpsys_unshare(r), 0);
	_exit(harness_failed);
}

TEST(userns_root_gets_other_bits_of_0644_segment)
{
	long r = run_beside_segment(8002, 0644, 8002, userns_root_reads_0644);

	ASSERT_EQ(lpsys_unshare(r), 0);
}

static void userns_root_memlock(void *arg)
{
	unsigned long lp = lp_size();
	struct rlimit rl = { 4 * lp, 4 * lp };
	long r;

	(void)arg;
	lp_set_memlock(lp);
	nobody_in_own_userns(0);
	EXPECT_ERRNO(lpsys_get(0, 2 * lp, RW, MAP_PRIVATE), ENOMEM);
	EXPECT_ERRNO(lpsys_share(8003, 0, 2 * lp, RW, IPC_CREAT | 0600), ENOMEM);
	r = lpsys_get(0, lp, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_ERRNO(lpsys_get(0, lp, RW, MAP_PRIVATE), ENOMEM);
	/* Nor can it raise the limit from in there. */
	EXPECT_ERRNO(setrlimit(RLIMIT_MEMLOCK, &rl), EPERM);
	ASSERT_EQ(lpsys_free(r), 0);
	_exit(harness_failed);
}

TEST(userns_root_still_held_to_memlock)
{
	int st = run_child(userns_root_memlock, NULL);

	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

/*
 * After unshare(CLONE_NEWIPC) the parent's key is absent, the same key
 * can be created independently (here with another size), and that
 * segment dies with its last user in its namespace; the parent's stays.
 */
static void ipcns_own_key(void *arg)
{
	unsigned long lp = lp_size();
	struct lp_peer p;
	long r;
	int st;

	(void)arg;
	ASSERT_EQ(unshare(CLONE_NEWIPC), 0);
	EXPECT_ERRNO(lpsys_share(8004, 0, lp, RW, 0), ENOENT);
	EXPECT_ERRNO(lpsys_share(8004, 0, lp, PROT_READ, 0), ENOENT);
	r = create_filled(8004, 2 * lp, 0600, 0x8004b);
	ASSERT_TRUE(LP_OK(r));

	/* A second user in this namespace: a child attaches by key. */
	if (lp_peer_fork(&p) == 0) {
		long c = lpsys_share(8004, 0, 2 * lp, RW, 0);

		ASSERT_TRUE(LP_OK(c));
		lp_peer_send(&p, lp_check(LP_PTR(c), 2 * lp, 0x8004b));
		lp_peer_recv(&p);
		lp_peer_send(&p, lp_check(LP_PTR(c), 2 * lp, 0x8004b));
		ASSERT_EQ(lpsys_unshare(c), 0);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), 1);
	ASSERT_EQ(lpsys_unshare(r), 0);
	/* The creator is gone; the segment lives on in its other user. */
	lp_peer_send(&p, 0);
	EXPECT_EQ(lp_peer_recv(&p), 1);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	/* The last user left: the key is free in this namespace. */
	EXPECT_TRUE(lp_key_absent(8004, 2 * lp));
	_exit(harness_failed);
}

TEST(ipcns_keys_are_per_namespace)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), r = create_filled(8004, lp, 0600, 0x8004a), c;
	int st;

	ASSERT_TRUE(LP_OK(r));
	st = run_child(ipcns_own_key, NULL);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	/*
	 * Ours is untouched, one page, still attachable by key: the other
	 * namespace's segment of the same key, linked before ours in the
	 * key's chain, went without taking ours out of the table.
	 */
	EXPECT_TRUE(lp_check(LP_PTR(r), lp, 0x8004a));
	EXPECT_EQ(lp_settle_nfree(nfree - 1), nfree - 1);
	c = lpsys_share(8004, 0, lp, PROT_READ, 0);
	ASSERT_TRUE(LP_OK(c));
	EXPECT_TRUE(lp_check(LP_PTR(c), lp, 0x8004a));
	ASSERT_EQ(lpsys_unshare(c), 0);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_TRUE(lp_key_absent(8004, lp));
	EXPECT_EQ(lp_nfree(), nfree);
}

/* Which keys /proc/largepage_segments shows this reader. */
static int listed(int key)
{
	char line[256];
	int k, found = 0;
	FILE *f = fopen("/proc/largepage_segments", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d", &k) == 1 && k == key)
			found = 1;
	fclose(f);
	return found;
}

TEST(ipcns_proc_lists_the_readers_namespace_only)
{
	unsigned long lp = lp_size();
	long r = create_filled(8006, lp, 0600, 8006), c;
	struct lp_peer p;
	int st;

	ASSERT_TRUE(LP_OK(r));
	if (lp_peer_fork(&p) == 0) {
		ASSERT_EQ(unshare(CLONE_NEWIPC), 0);
		c = create_filled(8007, lp, 0600, 8007);
		ASSERT_TRUE(LP_OK(c));
		lp_peer_send(&p, listed(8007) * 2 + listed(8006));
		lp_peer_recv(&p);
		_exit(lpsys_unshare(c) ? 2 : 0);
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), 2);		/* 8007 listed, 8006 not */
	EXPECT_EQ(listed(8006), 1);
	EXPECT_EQ(listed(8007), 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_unshare(r), 0);
}

/*
 * A process in a user and IPC namespace of its own owns its keys: it
 * creates and attaches them like anyone, and its namespace's keys are
 * not the parent's.
 */
static void own_namespaces_create(void *arg)
{
	unsigned long lp = lp_size();
	long r, c;

	(void)arg;
	lp_set_memlock(2 * lp);
	nobody_in_own_userns(CLONE_NEWIPC);
	EXPECT_ERRNO(lpsys_share(8008, 0, lp, PROT_READ, 0), ENOENT);
	r = create_filled(8008, lp, 0600, 0x8008b);
	ASSERT_TRUE(LP_OK(r));
	c = lpsys_share(8008, 0, lp, RW, 0);
	ASSERT_TRUE(LP_OK(c));
	EXPECT_TRUE(lp_check(LP_PTR(c), lp, 0x8008b));
	ASSERT_EQ(lpsys_unshare(c), 0);
	ASSERT_EQ(lpsys_unshare(r), 0);
	_exit(harness_failed);
}

TEST(userns_with_own_ipcns_uses_its_own_keys)
{
	long r = run_beside_segment(8008, 0600, 0x8008a,
				    own_namespaces_create);

	ASSERT_EQ(lpsys_unshare(r), 0);
}
