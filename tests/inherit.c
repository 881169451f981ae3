// SPDX-License-Identifier: GPL-2.0
/* Large-page mappings across fork, exit, kill and execve. */
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include "lp.h"

TEST(inherit_private_mapping_absent_in_child)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree();
	long r = lpsys_get(0, len, RW, MAP_PRIVATE);

	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2000);
	EXPECT_TRUE(touch_faults(LP_PTR(r), 0));
	EXPECT_TRUE(touch_faults(LP_PTR(r) + len - 1, 1));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2000));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

static void get_at(void *arg)
{
	unsigned long addr = *(unsigned long *)arg;
	long r = lpsys_get(addr, lp_size(), RW, MAP_PRIVATE);

	/* The parent's private range is free here: the hint is taken. */
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ((unsigned long)r, addr);
	ASSERT_TRUE(lp_zeroed(LP_PTR(r), lp_size()));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(inherit_private_range_is_free_in_child)
{
	unsigned long len = lp_size(), addr;
	long r = lpsys_get(0, len, RW, MAP_PRIVATE);
	int st;

	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2001);
	addr = r;
	st = run_child(get_at, &addr);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2001));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(inherit_shared_child_write_seen_by_parent)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	int st;

	r = lpsys_get(0, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2002);
	if (lp_peer_fork(&p) == 0) {
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 0x2002));
		lp_fill(LP_PTR(r), len, 0x2102);
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	/* The child shares the pages: fork took none from the pool. */
	EXPECT_EQ(lp_peer_recv(&p), nfree - 2);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2102));
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2102));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(inherit_shared_parent_write_after_fork_seen_by_child)
{
	unsigned long len = lp_size();
	struct lp_peer p;
	long r;
	int st;

	r = lpsys_get(0, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 0x2003));
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	lp_fill(LP_PTR(r), len, 0x2003);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(inherit_grandchild_shares_mapping)
{
	unsigned long len = lp_size();
	long r = lpsys_get(0, len, RW, MAP_SHARED);
	int st;
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2004);
	pid = fork();
	if (pid == 0) {
		pid_t gc = fork();

		if (gc == 0) {
			if (!lp_check(LP_PTR(r), len, 0x2004))
				_exit(2);
			lp_fill(LP_PTR(r), len, 0x2104);
			_exit(0);
		}
		if (gc < 0 || waitpid(gc, &st, 0) != gc)
			_exit(3);
		_exit(CHILD_EXITED(st, 0) ? 0 : 4);
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2104));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(inherit_keyed_segment_shared_with_child)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), r;
	int st;
	pid_t pid;

	r = lpsys_share(2000, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2005);
	pid = fork();
	if (pid == 0) {
		if (!lp_check(LP_PTR(r), len, 0x2005))
			_exit(2);
		lp_fill(LP_PTR(r), len, 0x2105);
		_exit(0);		/* exit detaches the inherited copy */
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2105));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(2000, len));
}

static void unshare_inherited(void *arg)
{
	unsigned long addr = *(unsigned long *)arg;

	ASSERT_EQ(lpsys_unshare(addr), 0);
	ASSERT_TRUE(touch_faults((char *)addr, 0));
	/* Detaching the child's copy leaves the segment to the parent. */
	ASSERT_TRUE(LP_OK(lpsys_share(2001, 0, lp_size(), PROT_READ, 0)));
}

TEST(inherit_child_unshare_keeps_parent_segment)
{
	unsigned long len = lp_size(), addr;
	long nfree = lp_nfree(), r;
	int st;

	r = lpsys_share(2001, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2006);
	addr = r;
	st = run_child(unshare_inherited, &addr);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2006));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(2001, len));
}

TEST(inherit_child_exit_keeps_parent_pages)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), s, q;
	int st;
	pid_t pid;

	s = lpsys_get(0, 2 * len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(s));
	q = lpsys_get(0, len, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(q));
	lp_fill(LP_PTR(s), 2 * len, 0x2007);
	lp_fill(LP_PTR(q), len, 0x2107);
	pid = fork();
	if (pid == 0) {
		*(volatile uint32_t *)(LP_PTR(s) + len + 64) = 1;
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_nfree(), nfree - 3);
	EXPECT_TRUE(lp_check(LP_PTR(s), 2 * len, 0x2007));
	EXPECT_EQ(*(volatile uint32_t *)(LP_PTR(s) + len + 64), 1);
	EXPECT_TRUE(lp_check(LP_PTR(q), len, 0x2107));
	ASSERT_EQ(lpsys_free(s), 0);
	ASSERT_EQ(lpsys_free(q), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(inherit_shared_pages_live_until_last_process_frees)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	int st;

	r = lpsys_get(0, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2008);
	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);	/* the parent has freed its mapping */
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 0x2008));
		lp_fill(LP_PTR(r), len, 0x2108);
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 0x2108));
		ASSERT_EQ(lpsys_free(r), 0);
		lp_peer_send(&p, lp_nfree());
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	lp_peer_send(&p, 0);
	EXPECT_EQ(lp_peer_recv(&p), nfree);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(inherit_exit_without_free_releases_everything)
{
	long nfree = lp_nfree();
	struct lp_peer p;
	int st;

	if (lp_peer_fork(&p) == 0) {
		if (lp_map_four(2002))
			_exit(2);
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), nfree - 4);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(2002, lp_size()));
}

TEST(inherit_kill9_releases_everything)
{
	long nfree = lp_nfree();
	struct lp_peer p;
	int st;

	if (lp_peer_fork(&p) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (lp_map_four(2003))
			_exit(2);
		lp_peer_send(&p, 0);
		for (;;)
			pause();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nfree(), nfree - 4);
	ASSERT_EQ(kill(p.pid, SIGKILL), 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_SIGNALED(st, SIGKILL));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(2003, lp_size()));
}

TEST(inherit_execve_releases_before_new_image_runs)
{
	long nfree = lp_nfree(), err;
	int in[2], ex[2], st;
	struct lp_peer p;
	ssize_t n;

	if (access("/bin/cat", X_OK))
		SKIP("no /bin/cat to exec");
	ASSERT_EQ(pipe(in), 0);
	/* ex: closed by a successful exec, carries errno if it fails. */
	ASSERT_EQ(pipe2(ex, O_CLOEXEC), 0);
	if (lp_peer_fork(&p) == 0) {
		int null = open("/dev/null", O_WRONLY);

		close(ex[0]);
		close(in[1]);
		if (null < 0 || dup2(in[0], 0) < 0 || dup2(null, 1) < 0)
			_exit(2);
		fcntl(p.rfd, F_SETFD, FD_CLOEXEC);
		fcntl(p.wfd, F_SETFD, FD_CLOEXEC);
		if (lp_map_four(2004))
			_exit(3);
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		execl("/bin/cat", "cat", (char *)NULL);
		err = errno;
		n = write(ex[1], &err, sizeof(err));
		_exit(n == sizeof(err) ? 127 : 126);
	}
	ASSERT_GT(p.pid, 0);
	close(ex[1]);
	close(in[0]);
	EXPECT_EQ(lp_peer_recv(&p), nfree - 4);
	lp_peer_send(&p, 0);
	n = read(ex[0], &err, sizeof(err));
	if (n > 0)
		TH_LOG("execl(/bin/cat): %s", strerror(err));
	ASSERT_EQ(n, 0);

	/* cat runs, blocked on its stdin; the old image's pages are back. */
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(2004, lp_size()));
	EXPECT_EQ(waitpid(p.pid, &st, WNOHANG), 0);

	close(in[1]);
	close(ex[0]);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(inherit_key_survives_creator_exit_while_child_holds_it)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	pid_t b;
	int st;

	/* The creator's child is re-parented to us when the creator exits. */
	ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	if (lp_peer_fork(&p) == 0) {
		r = lpsys_share(2005, 0, len, RW, IPC_CREAT | 0600);
		if (!LP_OK(r))
			_exit(2);
		lp_fill(LP_PTR(r), len, 0x2009);
		b = fork();
		if (b == 0) {
			/* Hold the inherited segment until told to go. */
			lp_peer_recv(&p);
			_exit(lp_check(LP_PTR(r), len, 0x2109) ? 0 : 4);
		}
		if (b < 0)
			_exit(5);
		lp_peer_send(&p, b);
		_exit(0);		/* the creator exits still attached */
	}
	ASSERT_GT(p.pid, 0);
	ASSERT_EQ(waitpid(p.pid, &st, 0), p.pid);
	ASSERT_TRUE(CHILD_EXITED(st, 0));
	b = lp_peer_recv(&p);

	EXPECT_EQ(lp_nfree(), nfree - 1);
	r = lpsys_share(2005, 0, len, RW, 0);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2009));
	lp_fill(LP_PTR(r), len, 0x2109);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);

	lp_peer_send(&p, 1);
	ASSERT_EQ(waitpid(b, &st, 0), b);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(2005, len));
}

/*
 * fork() failing half-way, with fault injection: each fork of a process
 * holding a shared segment fails the first allocation past a budget the
 * forking task may use (failslab: bytes of slab objects; then
 * fail_page_alloc: pages, page tables among them), the budget growing
 * until a fork gets through untouched. Many of the children torn down part-built
 * had the segment's entries copied already, and exit_mmap() clears them:
 * nothing may be left behind. The parent's mapping keeps its data, its
 * LargePages: line and the pool's counts stay as they were, no splat
 * (a leaked entry is "Bad rss-counter state"), and once the segment is
 * freed the whole pool is back.
 */
#define FAULT_DIR DEBUGFS "/"

static int fault_set(const char *attr, const char *file, long v)
{
	char path[128], text[32];

	snprintf(path, sizeof(path), FAULT_DIR "%s/%s", attr, file);
	snprintf(text, sizeof(text), "%ld", v);
	return write_text(path, text);
}

static int fault_yn(const char *attr, const char *file, int yes)
{
	char path[128];

	snprintf(path, sizeof(path), FAULT_DIR "%s/%s", attr, file);
	return write_text(path, yes ? "Y" : "N");
}

static long fault_get(const char *attr, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), FAULT_DIR "%s/%s", attr, file);
	return read_long(path);
}

/* Every allocation of a make-it-fail task may fail, once. */
static int fault_arm(const char *attr, long space)
{
	int ret = fault_yn(attr, "task-filter", 1) ?:
		fault_yn(attr, "ignore-gfp-wait", 0) ?:
		fault_set(attr, "probability", 100) ?:
		fault_set(attr, "interval", 1) ?:
		fault_set(attr, "verbose", 0) ?:
		fault_set(attr, "space", space) ?:
		fault_set(attr, "times", 1);

	if (!ret && !strcmp(attr, "fail_page_alloc"))
		ret = fault_yn(attr, "ignore-gfp-highmem", 0) ?:
			fault_set(attr, "min-order", 0);
	return ret;
}

static void fault_disarm(const char *attr)
{
	fault_set(attr, "probability", 0);
	fault_set(attr, "times", 0);
	fault_set(attr, "space", 0);
}

struct sweep {
	int forks, failed, done;
};

/* Fork with the fault armed after space bytes; 1 when one got through. */
static int fork_once(const char *attr, long space, int mif, struct sweep *sw)
{
	pid_t pid;
	int st;

	if (fault_arm(attr, space))
		return -1;
	if (pwrite(mif, "1", 1, 0) != 1)
		return -1;
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pwrite(mif, "0", 1, 0) != 1)
		return -1;
	sw->forks++;
	if (pid < 0) {
		sw->failed++;
		fault_disarm(attr);
		return 0;
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	/* The fault still armed: the fork made every allocation. */
	st = fault_get(attr, "times") == 1;
	fault_disarm(attr);
	return st;
}

/*
 * No rseq area for the sweeping thread: between a fork that got through
 * and the disarm, the fault is still armed, and the kernel's rseq update
 * on the way back to user space writes this thread's TLS page, which the
 * fork made copy-on-write. An injected failure there is a SIGSEGV (a
 * kernel-mode fault rseq cannot fix up), not the fork's: the longer the
 * fork (a copied segment), the likelier a migration asks for that update.
 */
static void rseq_off(void)
{
	static int done;

	if (done++)
		return;
	if (__rseq_size && syscall(__NR_rseq,
				   (char *)__builtin_thread_pointer() + __rseq_offset,
				   32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG))
		TH_LOG("rseq unregister: %s", strerror(errno));
}

static void fork_sweep(const char *attr, long step, char *p,
		       unsigned long len, struct sweep *sw)
{
	long kb = status_kb(0, "LargePages:"), nfree = lp_nfree(), space;
	int mif = open("/proc/self/make-it-fail", O_WRONLY), r = 0;

	ASSERT_GE(mif, 0);
	rseq_off();
	for (space = 0; space < 4096 * step && r == 0; space += step) {
		r = fork_once(attr, space, mif, sw);
		ASSERT_GE(r, 0);
		if (sw->forks % 64 == 0)
			EXPECT_TRUE(lp_check(p, len, 0x2f00));
		EXPECT_EQ(status_kb(0, "LargePages:"), kb);
		EXPECT_EQ(lp_nfree(), nfree);
	}
	close(mif);
	sw->done = r == 1;
	TH_LOG("%s: %d forks, %d failed, space up to %ld", attr, sw->forks,
	       sw->failed, space - step);
}

TEST(inherit_fork_failing_half_way_leaves_nothing)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r;
	struct sweep slab = { 0 }, page = { 0 };

	ASSERT_EQ(lp_debugfs(), 0);
	if (access(FAULT_DIR "failslab", F_OK) ||
	    access(FAULT_DIR "fail_page_alloc", F_OK))
		SKIP("no failslab or fail_page_alloc (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	r = lpsys_get(0, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2f00);

	fork_sweep("failslab", 32, LP_PTR(r), len, &slab);
	fork_sweep("fail_page_alloc", 1, LP_PTR(r), len, &page);
	/* Each sweep failed forks, and ended with one that got through. */
	EXPECT_GT(slab.failed, 0);
	EXPECT_TRUE(slab.done);
	EXPECT_GT(page.failed, 0);
	EXPECT_TRUE(page.done);

	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2f00));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_EQ(status_kb(0, "LargePages:"), 0);
}

/*
 * get_large_pages(MAP_PRIVATE | LP_COPY_ON_FORK), a heap's segment: fork
 * gives the child its own copy, from the pool when it has room, else in
 * normal pages; never a hole, never the parent's pages.
 */
#define COPY (MAP_PRIVATE | LP_COPY_ON_FORK)

TEST(inherit_copy_flag_is_private_and_writable_only)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree();

	errno = 0;
	EXPECT_EQ(lpsys_get(0, len, RW, MAP_SHARED | LP_COPY_ON_FORK), -1);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_EQ(lpsys_get(0, len, PROT_READ, COPY), -1);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_EQ(lpsys_get(0, len, RW, LP_COPY_ON_FORK), -1);
	EXPECT_EQ(errno, EINVAL);
	/* Not MAP_FIXED_NOREPLACE's bit: that stays an error. */
	errno = 0;
	EXPECT_EQ(lpsys_get(0, len, RW, MAP_PRIVATE | MAP_FIXED_NOREPLACE), -1);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(inherit_copy_child_gets_its_own_copy_from_the_pool)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	int st;

	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2200);
	if (lp_peer_fork(&p) == 0) {
		/* The parent's data, in the child's own large pages. */
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2200));
		EXPECT_EQ(status_kb(0, "LargePages:"), (long)(len >> 10));
		lp_fill(LP_PTR(r), len, 0x2300);
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		/* The parent wrote meanwhile: not here. */
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2300));
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), nfree - 4);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2200));
	lp_fill(LP_PTR(r), len, 0x2400);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2400));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * Map every free page of the pool into *rest (0: none was free); 0, or
 * -1 if the call failed.
 */
static int take_rest(long *rest)
{
	long n = lp_nfree(), r;

	*rest = 0;
	if (n <= 0)
		return 0;
	r = lpsys_get(0, n * lp_size(), RW, MAP_PRIVATE);
	if (!LP_OK(r))
		return -1;
	*rest = r;
	return 0;
}

TEST(inherit_copy_pool_short_gives_normal_pages)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r, rest;
	struct lp_peer p;
	int st;

	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2201);
	ASSERT_EQ(take_rest(&rest), 0);
	ASSERT_EQ(lp_nfree(), 0);
	if (lp_peer_fork(&p) == 0) {
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2201));
		/* Normal pages: none of the pool's, and all of them there. */
		EXPECT_EQ(status_kb(0, "LargePages:"), 0);
		EXPECT_GE(status_kb(0, "RssAnon:"), (long)(len >> 10));
		lp_fill(LP_PTR(r), len, 0x2301);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2301));
		/* Ordinary memory from now on: munmap() works on it. */
		EXPECT_EQ(munmap(LP_PTR(r), len), 0);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2201));
	lp_fill(LP_PTR(r), len, 0x2401);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2401));
	EXPECT_EQ(lp_nfree(), 0);
	if (rest)
		ASSERT_EQ(lpsys_free(rest), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

#define OVERCOMMIT "/proc/sys/vm/overcommit_"

struct overcommit {
	long mode, kbytes, ratio;
};

static int overcommit_save(struct overcommit *o)
{
	o->mode = read_long(OVERCOMMIT "memory");
	o->kbytes = read_long(OVERCOMMIT "kbytes");
	o->ratio = read_long(OVERCOMMIT "ratio");
	return o->mode < 0 || o->kbytes < 0 || o->ratio < 0 ? -1 : 0;
}

/* Set the policy and the limit (kbytes; 0: the saved ratio); 0 or -errno. */
static int overcommit_set(const struct overcommit *saved, long mode,
			  long kbytes)
{
	char buf[32];
	int ret;

	if (kbytes) {
		snprintf(buf, sizeof(buf), "%ld", kbytes);
		ret = write_text(OVERCOMMIT "kbytes", buf);
	} else {
		snprintf(buf, sizeof(buf), "%ld", saved->ratio);
		ret = write_text(OVERCOMMIT "ratio", buf);
	}
	snprintf(buf, sizeof(buf), "%ld", mode);
	return ret ? ret : write_text(OVERCOMMIT "memory", buf);
}

/*
 * A copy into normal pages is charged to the commit limit, as a private
 * writable mmap() is: Committed_AS holds it while the child lives, and
 * with vm.overcommit_memory=2 and less room than the copy, fork() fails
 * with ENOMEM and changes nothing.
 */
TEST(inherit_copy_into_normal_pages_is_charged_to_the_commit_limit)
{
	unsigned long len = 64UL << 20;	/* 32 or 16 large pages */
	long nfree = lp_nfree(), r, rest, c0, c1, c2;
	struct overcommit saved;
	struct lp_peer p;
	pid_t pid;
	int st, err;

	ASSERT_EQ(overcommit_save(&saved), 0);
	if (nfree < (long)(len / lp_size()))
		SKIP("the pool has fewer than %lu pages free", len / lp_size());
	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2501);
	ASSERT_EQ(take_rest(&rest), 0);
	ASSERT_EQ(lp_nfree(), 0);

	c0 = meminfo("Committed_AS:");
	if (lp_peer_fork(&p) == 0) {
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2501));
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	c1 = meminfo("Committed_AS:");
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	c2 = meminfo("Committed_AS:");
	TH_LOG("Committed_AS: %ld kB, %ld with the child, %ld after it",
	       c0, c1, c2);
	EXPECT_GE(c1 - c0, (long)(len >> 10));
	EXPECT_LT(labs(c2 - c0), (long)(len >> 12));

	/*
	 * Strict, with room for three quarters of the copy. The rest of the
	 * fork fits in that: a static test's few writable mappings, the
	 * counter's per-CPU slack (8 MiB at most here) and the user reserve
	 * (total_vm / 32: 16 MiB for a pool of 512 MiB taken).
	 */
	ASSERT_EQ(overcommit_set(&saved, 2, c0 + (long)(len >> 10) * 3 / 4), 0);
	pid = fork();
	err = errno;
	if (pid == 0)
		_exit(0);
	EXPECT_EQ(overcommit_set(&saved, saved.mode, saved.kbytes), 0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	EXPECT_EQ(pid, -1);
	EXPECT_EQ(err, ENOMEM);
	EXPECT_LT(labs(meminfo("Committed_AS:") - c0), (long)(len >> 12));

	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2501));
	EXPECT_EQ(lp_nfree(), 0);
	if (rest)
		ASSERT_EQ(lpsys_free(rest), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * RLIMIT_DATA: a copy into normal pages is private anonymous memory, so
 * the child's VmData counts it (the parent's shared-file mapping of the
 * segment is not data), where a copy from the pool leaves VmData as the
 * parent's. fork() checks no limit for it, as dup_mmap() checks none
 * for what the parent already mapped: a child over RLIMIT_DATA forks
 * fine and has its next data mapping refused (ENOMEM), as a process
 * whose limit was lowered below its use does, while the parent's
 * succeeds.
 */
static void copy_data_child(struct lp_peer *p)
{
	void *m;

	lp_peer_send(p, status_kb(0, "VmData:"));
	m = mmap(NULL, 4096, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	lp_peer_send(p, m == MAP_FAILED ? -errno : 0);
	lp_peer_recv(p);
	CHILD_DONE();
}

TEST(inherit_copy_into_normal_pages_counts_as_the_childs_data)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r, rest, d0, d1, d2, e1, e2;
	struct rlimit old, lim;
	struct lp_peer p;
	void *m;
	int st;

	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2601);

	/* From the pool: the child's VmData is the parent's. */
	d0 = status_kb(0, "VmData:");
	if (lp_peer_fork(&p) == 0)
		copy_data_child(&p);
	ASSERT_GT(p.pid, 0);
	d1 = lp_peer_recv(&p);
	e1 = lp_peer_recv(&p);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(d1, d0);
	EXPECT_EQ(e1, 0);

	/* Into normal pages, under a limit with room for half the copy. */
	ASSERT_EQ(take_rest(&rest), 0);
	ASSERT_EQ(lp_nfree(), 0);
	ASSERT_EQ(status_kb(0, "VmData:"), d0);
	ASSERT_EQ(getrlimit(RLIMIT_DATA, &old), 0);
	lim = old;
	lim.rlim_cur = (d0 << 10) + len / 2;
	ASSERT_EQ(setrlimit(RLIMIT_DATA, &lim), 0);
	if (lp_peer_fork(&p) == 0)
		copy_data_child(&p);
	ASSERT_GT(p.pid, 0);
	d2 = lp_peer_recv(&p);
	e2 = lp_peer_recv(&p);
	m = mmap(NULL, 4096, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_TRUE(m != MAP_FAILED);
	if (m != MAP_FAILED)
		munmap(m, 4096);
	EXPECT_EQ(setrlimit(RLIMIT_DATA, &old), 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	TH_LOG("VmData %ld kB; the child's %ld from the pool, %ld in normal pages (mmap: %ld)",
	       d0, d1, d2, e2);
	EXPECT_EQ(d2, d0 + (long)(len >> 10));
	EXPECT_EQ(e2, -ENOMEM);

	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2601));
	if (rest)
		ASSERT_EQ(lpsys_free(rest), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

TEST(inherit_copy_child_execs_at_once)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r;

	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2202);
	EXPECT_TRUE(true_in_child(0));
	/* The child's copy went back at exec. */
	EXPECT_EQ(lp_settle_nfree(nfree - 2), nfree - 2);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2202));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* _Fork() and clone() without CLONE_VM, raw: the kernel copies too. */
TEST(inherit_copy_raw_fork_and_clone_copy_too)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), r, pid;
	int i, st;

	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	for (i = 0; i < 2; i++) {
		lp_fill(LP_PTR(r), len, 0x2203 + i);
		pid = i ? syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) :
			  syscall(SYS_fork);
		if (pid == 0) {
			if (!lp_check(LP_PTR(r), len, 0x2203 + i))
				syscall(SYS_exit_group, 2);
			lp_fill(LP_PTR(r), len, 0x2303);
			syscall(SYS_exit_group, 0);
		}
		ASSERT_GT(pid, 0);
		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2203 + i));
	}
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * Atomic for the parent's other threads: a writer stores n in the first
 * large page, then n in the last one, over and over. Any snapshot fork
 * took at one instant has first == last or first == last + 1; a copy
 * made while the writer ran on would find the last page ahead.
 */
struct writer {
	volatile unsigned long *first, *last;
	volatile int stop;
};

static void *write_loop(void *arg)
{
	struct writer *w = arg;
	unsigned long n = 0;

	while (!w->stop) {
		n++;
		*w->first = n;
		*w->last = n;
	}
	return NULL;
}

static int snapshot_ok(struct writer *w)
{
	unsigned long f = *w->first, l = *w->last;

	if (f == l || f == l + 1)
		return 1;
	printf("# torn copy: first %lu, last %lu\n", f, l);
	return 0;
}

TEST(inherit_copy_is_atomic_for_writing_threads)
{
	unsigned long len = 8 * lp_size();
	long nfree = lp_nfree(), r;
	struct writer w = { 0 };
	pthread_t t;
	int i, bad = 0, forks = 20;

	if (nfree < 16)
		SKIP("the pool has %ld free pages, the test needs 16", nfree);
	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	w.first = (unsigned long *)LP_PTR(r);
	w.last = (unsigned long *)(LP_PTR(r) + len - lp_size());
	ASSERT_EQ(pthread_create(&t, NULL, write_loop, &w), 0);
	for (i = 0; i < forks; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(snapshot_ok(&w) ? 0 : 1);
		ASSERT_GT(pid, 0);
		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		bad += !CHILD_EXITED(st, 0);
	}
	w.stop = 1;
	pthread_join(t, NULL);
	EXPECT_GT(*w.first, 0);
	EXPECT_EQ(bad, 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

struct thread_fork {
	char *p;
	unsigned long len;
	int status;
};

static void *fork_from_thread(void *arg)
{
	struct thread_fork *tf = arg;
	pid_t pid = fork();

	if (pid == 0) {
		if (!lp_check(tf->p, tf->len, 0x2205))
			_exit(2);
		lp_fill(tf->p, tf->len, 0x2305);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &tf->status, 0) != pid)
		tf->status = -1;
	return NULL;
}

TEST(inherit_copy_fork_from_a_second_thread)
{
	struct thread_fork tf = { .len = 2 * lp_size() };
	long nfree = lp_nfree(), r;
	pthread_t t;

	r = lpsys_get(0, tf.len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	tf.p = LP_PTR(r);
	lp_fill(tf.p, tf.len, 0x2205);
	ASSERT_EQ(pthread_create(&t, NULL, fork_from_thread, &tf), 0);
	pthread_join(t, NULL);
	EXPECT_TRUE(CHILD_EXITED(tf.status, 0));
	EXPECT_TRUE(lp_check(tf.p, tf.len, 0x2205));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * As inherit_fork_failing_half_way_leaves_nothing, for a copied segment:
 * with room in the pool (the copy's segment, file and pages), and with
 * none (the normal pages, page by page: fail_page_alloc steps 16 pages).
 */
TEST(inherit_copy_fork_failing_half_way_leaves_nothing)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), r, rest;
	struct sweep slab = { 0 }, page = { 0 }, normal = { 0 };

	ASSERT_EQ(lp_debugfs(), 0);
	if (access(FAULT_DIR "failslab", F_OK) ||
	    access(FAULT_DIR "fail_page_alloc", F_OK))
		SKIP("no failslab or fail_page_alloc (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	r = lpsys_get(0, len, RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x2f00);

	fork_sweep("failslab", 32, LP_PTR(r), len, &slab);
	fork_sweep("fail_page_alloc", 1, LP_PTR(r), len, &page);
	ASSERT_EQ(take_rest(&rest), 0);
	fork_sweep("fail_page_alloc", 16, LP_PTR(r), len, &normal);
	if (rest)
		ASSERT_EQ(lpsys_free(rest), 0);
	EXPECT_GT(slab.failed, 0);
	EXPECT_TRUE(slab.done);
	EXPECT_GT(page.failed, 0);
	EXPECT_TRUE(page.done);
	EXPECT_GT(normal.failed, 0);
	EXPECT_TRUE(normal.done);

	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2f00));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_EQ(status_kb(0, "LargePages:"), 0);
}
