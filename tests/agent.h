/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Agents: lp_peer children that drop to nobody (or stay root) with a
 * given RLIMIT_MEMLOCK and then run the calls the test sends them,
 * replying with the result (-errno on failure). A test moves an agent
 * into a cgroup by writing its pid to cgroup.procs.
 */
#ifndef LP_TEST_AGENT_H
#define LP_TEST_AGENT_H

#include "lp.h"

#define AGENT_ROOT 0

enum { A_GET, A_FREE, A_SHARE, A_UNSHARE, A_PEEK, A_POKE };

struct agent_cmd {
	int op, key, prot, flag;
	unsigned long addr, len;
	uint32_t val;
};

static inline void agent_loop(int rfd, int wfd)
{
	struct agent_cmd c;
	long r;

	while (read(rfd, &c, sizeof(c)) == sizeof(c)) {
		switch (c.op) {
		case A_GET:
			r = lpsys_get(c.addr, c.len, c.prot, c.flag);
			break;
		case A_FREE:
			r = lpsys_free(c.addr);
			break;
		case A_SHARE:
			r = lpsys_share(c.key, c.addr, c.len, c.prot, c.flag);
			break;
		case A_UNSHARE:
			r = lpsys_unshare(c.addr);
			break;
		case A_PEEK:
			r = *(volatile uint32_t *)c.addr;
			break;
		case A_POKE:
			*(volatile uint32_t *)c.addr = c.val;
			r = 0;
			break;
		default:
			_exit(2);
		}
		if (r == -1 && c.op != A_PEEK)
			r = -errno;
		if (write(wfd, &r, sizeof(r)) != sizeof(r))
			_exit(3);
	}
	_exit(0);	/* the test closed the pipe: leave, holding whatever */
}

/* Start an agent as uid (AGENT_ROOT or NOBODY) with RLIMIT_MEMLOCK memlock. */
static inline void agent_start(struct lp_peer *a, uid_t uid, rlim_t memlock)
{
	ASSERT_GE(lp_peer_fork(a), 0);
	if (a->pid == 0) {
		lp_set_memlock(memlock);
		if (uid != AGENT_ROOT)
			become_nobody();
		agent_loop(a->rfd, a->wfd);
	}
}

/* Start an agent as nobody, in no group but @gid, with @memlock. */
static inline void agent_start_in(struct lp_peer *a, gid_t gid, rlim_t memlock)
{
	ASSERT_GE(lp_peer_fork(a), 0);
	if (a->pid == 0) {
		lp_set_memlock(memlock);
		become_nobody_in(gid);
		agent_loop(a->rfd, a->wfd);
	}
}

static inline long agent_do(struct lp_peer *a, struct agent_cmd c)
{
	long r;

	if (write(a->wfd, &c, sizeof(c)) != sizeof(c) ||
	    read(a->rfd, &r, sizeof(r)) != sizeof(r)) {
		TH_LOG("agent %d is gone", a->pid);
		_exit(1);
	}
	return r;
}

static inline long a_get(struct lp_peer *a, long pages, int flags)
{
	struct agent_cmd c = { .op = A_GET, .len = pages * lp_size(),
			       .prot = RW, .flag = flags };

	return agent_do(a, c);
}

static inline long a_free(struct lp_peer *a, long addr)
{
	struct agent_cmd c = { .op = A_FREE, .addr = addr };

	return agent_do(a, c);
}

static inline long a_share(struct lp_peer *a, int key, long pages, int prot, int flag)
{
	struct agent_cmd c = { .op = A_SHARE, .key = key,
			       .len = pages * lp_size(), .prot = prot,
			       .flag = flag };

	return agent_do(a, c);
}

static inline long a_unshare(struct lp_peer *a, long addr)
{
	struct agent_cmd c = { .op = A_UNSHARE, .addr = addr };

	return agent_do(a, c);
}

static inline long a_peek(struct lp_peer *a, long addr)
{
	struct agent_cmd c = { .op = A_PEEK, .addr = addr };

	return agent_do(a, c);
}

static inline long a_poke(struct lp_peer *a, long addr, uint32_t val)
{
	struct agent_cmd c = { .op = A_POKE, .addr = addr, .val = val };

	return agent_do(a, c);
}

/* Close the agent's pipe (it exits, releasing anything it holds), reap it. */
static inline void agent_stop(struct lp_peer *a)
{
	int st = lp_peer_wait(a);

	ASSERT_TRUE(CHILD_EXITED(st, 0));
}

#endif /* LP_TEST_AGENT_H */
