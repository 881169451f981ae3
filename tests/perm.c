// SPDX-License-Identifier: GPL-2.0
/*
 * Who may attach a keyed segment, as SPEC.md and SysV IPC say: the
 * owner, group and other classes are chosen by the caller's fsuid and
 * fsgid (not its euid or egid), and CAP_IPC_OWNER alone, without root's
 * other capabilities, overrides the mode.
 */
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include "lp.h"

#define KEY0 9500
#define OWNER 1000
#define OTHER 2000

static int capset_raw(__u32 effective, __u32 permitted)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = {
		{ .effective = effective, .permitted = permitted },
	};

	return syscall(SYS_capset, &h, d);
}

/* Become uid/gid ids (real, effective, saved), no groups; 0 or -1. */
static int become(uid_t ru, uid_t eu, uid_t su, gid_t rg, gid_t eg, gid_t sg)
{
	if (setgroups(0, NULL) || setresgid(rg, eg, sg) ||
	    setresuid(ru, eu, su))
		return -1;
	return 0;
}

/* As OWNER:OWNER, create key with mode (it must not exist); then hold it. */
static pid_t make_segment(int key, int mode, struct lp_peer *p)
{
	if (lp_peer_fork(p) == 0) {
		long r;

		lp_set_memlock(RLIM_INFINITY);
		if (become(OWNER, OWNER, OWNER, OWNER, OWNER, OWNER))
			_exit(1);
		r = lpsys_share(key, 0, lp_size(), RW, IPC_CREAT | IPC_EXCL | mode);
		if (!LP_OK(r))
			_exit(2);
		lp_fill(LP_PTR(r), lp_size(), key);
		lp_peer_send(p, 0);
		lp_peer_recv(p);
		_exit(lpsys_unshare(r) ? 3 : 0);
	}
	return p->pid;
}

/* Attach key read-write: 0 if it attached (and saw the data), else errno. */
static int try_attach(int key)
{
	long r = lpsys_share(key, 0, lp_size(), RW, 0);
	int ok;

	if (!LP_OK(r))
		return errno;
	ok = lp_check(LP_PTR(r), lp_size(), key);
	lpsys_unshare(r);
	return ok ? 0 : -1;
}

/* euid is the owner's but fsuid another's: "other" class, EACCES. */
static void fsuid_body(void *arg)
{
	int key = (int)(long)arg;

	ASSERT_EQ(become(OTHER, OWNER, OTHER, OTHER, OTHER, OTHER), 0);
	setfsuid(OTHER);
	ASSERT_EQ(setfsuid(-1), OTHER);
	EXPECT_EQ(try_attach(key), EACCES);
	/* fsuid the owner's (allowed: it is the euid), euid unchanged. */
	setfsuid(OWNER);
	ASSERT_EQ(setfsuid(-1), OWNER);
	EXPECT_EQ(try_attach(key), 0);
	/* euid another's, fsuid the owner's (the saved uid): owner class. */
	ASSERT_EQ(setresuid(OTHER, OTHER, OWNER), 0);
	setfsuid(OWNER);
	ASSERT_EQ(setfsuid(-1), OWNER);
	EXPECT_EQ(geteuid(), OTHER);
	EXPECT_EQ(try_attach(key), 0);
	CHILD_DONE();
}

TEST(perm_fsuid_not_euid_picks_the_owner_class)
{
	struct lp_peer p;
	int st;

	ASSERT_GT(make_segment(KEY0, 0600, &p), 0);
	lp_peer_recv(&p);
	st = run_child(fsuid_body, (void *)(long)KEY0);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
}

/* Group read-write only (0060): the fsgid decides, not the egid. */
static void fsgid_body(void *arg)
{
	int key = (int)(long)arg;

	ASSERT_EQ(become(OTHER, OTHER, OTHER, OTHER, OWNER, OTHER), 0);
	setfsgid(OTHER);
	ASSERT_EQ(setfsgid(-1), OTHER);
	EXPECT_EQ(getegid(), OWNER);
	EXPECT_EQ(try_attach(key), EACCES);
	setfsgid(OWNER);
	ASSERT_EQ(setfsgid(-1), OWNER);
	EXPECT_EQ(try_attach(key), 0);
	CHILD_DONE();
}

TEST(perm_fsgid_not_egid_picks_the_group_class)
{
	struct lp_peer p;
	int st;

	ASSERT_GT(make_segment(KEY0 + 1, 0060, &p), 0);
	lp_peer_recv(&p);
	st = run_child(fsgid_body, (void *)(long)(KEY0 + 1));
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
}

/* nobody with CAP_IPC_OWNER and nothing else. */
static void ipc_owner_body(void *arg)
{
	int key = (int)(long)arg, ret;
	__u32 cap = 1u << CAP_IPC_OWNER;

	ASSERT_EQ(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), 0);
	ASSERT_EQ(become(NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY), 0);
	ASSERT_EQ(capset_raw(cap, cap), 0);
	EXPECT_EQ(try_attach(key), 0);
	/* Nothing of root's but that: the pool stays root's to resize. */
	ret = sysctl_resize(1);
	EXPECT_TRUE(ret == -EPERM || ret == -EACCES);
	/* Without it, nobody is "other" on a 0600 segment. */
	ASSERT_EQ(capset_raw(0, cap), 0);
	EXPECT_EQ(try_attach(key), EACCES);
	CHILD_DONE();
}

TEST(perm_cap_ipc_owner_alone_overrides_the_mode)
{
	struct lp_peer p;
	long total = lp_total();
	int st;

	ASSERT_GT(make_segment(KEY0 + 2, 0600, &p), 0);
	lp_peer_recv(&p);
	st = run_child(ipc_owner_body, (void *)(long)(KEY0 + 2));
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_total(), total);
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
}
