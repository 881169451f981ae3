// SPDX-License-Identifier: GPL-2.0
/*
 * Zeroing off the caller's path: freed pages are zeroed in the pool by
 * largepage_zerod, the calls take zeroed pages first, and a page is zero
 * whenever a process first sees it, under every interleaving we can make:
 * free then immediate get, the one page the thread holds being the one a
 * request needs, a shrink racing the thread, many CPUs at once, and a
 * page still referenced by a pipe when its mapping goes.
 */
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <sys/uio.h>
#include <time.h>
#include "lp.h"

#define ZSYS "/sys/kernel/mm/largepage/"
#define CHURN_SECS 6
#define CHURNERS 4
#define KEY0 9100

static long zeroed_free(void)
{
	return read_long(ZSYS "free_zeroed_pages");
}
static long unzeroed_free(void)
{
	return read_long(ZSYS "free_unzeroed_pages");
}

/*
 * Wait (up to 60 s: TCG is slow) until largepage_zerod has zeroed every
 * free page; return the number of zeroed free pages, or -1.
 */
static long wait_every_free_page_zeroed(void)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (unzeroed_free() == 0)
			return zeroed_free();
		usleep(20000);
	}
	TH_LOG("free pages still unzeroed after 60 s: %ld (zeroed %ld)",
	       unzeroed_free(), zeroed_free());
	return -1;
}

/* /sys/kernel/mm/largepage/stat: the pool's counts from one snapshot. */
struct pool_stat {
	long total, free, free_zeroed, free_unzeroed, lowmem, poisoned;
	int names;	/* how many of the six it gave, in order */
};

static int read_stat(struct pool_stat *st)
{
	static const char *const want[] = { "total", "free", "free_zeroed",
		"free_unzeroed", "lowmem", "poisoned" };
	long *v[] = { &st->total, &st->free, &st->free_zeroed,
		      &st->free_unzeroed, &st->lowmem, &st->poisoned };
	char name[32];
	long val;
	FILE *f = fopen(ZSYS "stat", "r");

	st->names = 0;
	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", name, &val) == 2 && st->names < 6) {
		if (strcmp(name, want[st->names]))
			break;
		*v[st->names++] = val;
	}
	fclose(f);
	return st->names == 6 ? 0 : -1;
}

/* Get len bytes, check that they are zero, fill them with seed. */
static long get_check_fill(unsigned long len, int flags, uint32_t seed)
{
	long r = lpsys_get(0, len, RW, flags);

	if (!LP_OK(r))
		return r;
	if (!lp_zeroed(LP_PTR(r), len)) {
		TH_LOG("a new mapping of %lu bytes is not zero", len);
		lpsys_free(r);
		return -1;
	}
	lp_fill(LP_PTR(r), len, seed);
	return r;
}

/* get_check_fill() that must succeed, then free it again. */
static void get_check_free(unsigned long len, int flags, uint32_t seed)
{
	long r = get_check_fill(len, flags, seed);

	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(zeroing_sysfs_files_sum_to_free)
{
	long z, u;

	ASSERT_GE(wait_every_free_page_zeroed(), 0);
	z = zeroed_free();
	u = unzeroed_free();
	EXPECT_EQ(u, 0);
	EXPECT_EQ(z, lp_nfree());
	EXPECT_EQ(z + u, lp_total());
	/* Read-only, as documented. */
	EXPECT_EQ(write_text(ZSYS "free_zeroed_pages", "0\n"), -EACCES);
	EXPECT_EQ(zeroed_free(), z);
}

/*
 * "stat" gives every count at one instant: while largepage_zerod moves
 * pages from one list to the other, zeroed + unzeroed is always free,
 * and free and total are meminfo's (nothing else changes them here).
 */
TEST(zeroing_stat_counts_add_up_while_the_thread_works)
{
	long total = lp_total(), n = lp_nfree(), lowmem, reads = 0, busy = 0;
	struct pool_stat st;
	int i;

	ASSERT_GE(n, 2);
	lowmem = read_long(ZSYS "lowmem_pages");
	ASSERT_GE(lowmem, 0);
	ASSERT_EQ(lp_dirty_free_pages(), 0);
	for (i = 0; i < 5000; i++) {
		ASSERT_EQ(read_stat(&st), 0);
		reads++;
		if (st.free_zeroed + st.free_unzeroed != st.free ||
		    st.free != n || st.total != total || st.lowmem != lowmem ||
		    st.poisoned < 0) {
			TH_LOG("read %ld: total %ld free %ld = %ld zeroed + %ld unzeroed, lowmem %ld",
			       reads, st.total, st.free, st.free_zeroed,
			       st.free_unzeroed, st.lowmem);
			break;
		}
		if (!st.free_unzeroed)
			break;
		busy++;
	}
	EXPECT_EQ(st.free_zeroed + st.free_unzeroed, st.free);
	EXPECT_EQ(st.free, n);
	EXPECT_EQ(st.total, total);
	EXPECT_EQ(st.lowmem, lowmem);
	EXPECT_LE(lowmem, total);
	/* It was read while the thread had work. */
	EXPECT_GT(busy, 0);
	/* Read-only, as documented. */
	EXPECT_EQ(write_text(ZSYS "stat", "0\n"), -EACCES);
	EXPECT_EQ(write_text(ZSYS "lowmem_pages", "0\n"), -EACCES);
	EXPECT_EQ(wait_every_free_page_zeroed(), n);
}

TEST(zeroing_freed_pages_are_zeroed_in_the_background)
{
	unsigned long lp = lp_size();
	long n = lp_nfree(), r;

	ASSERT_GE(n, 2);
	ASSERT_GE(wait_every_free_page_zeroed(), 0);
	r = get_check_fill(n * lp, MAP_PRIVATE, 0x5a01);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(zeroed_free(), 0);
	EXPECT_EQ(unzeroed_free(), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	/* Free at once, whether zeroed yet or not. */
	EXPECT_EQ(lp_nfree(), n);
	EXPECT_EQ(wait_every_free_page_zeroed(), n);
	EXPECT_EQ(lp_nfree(), n);
}

TEST(zeroing_warm_get_maps_zeroed_pages)
{
	unsigned long lp = lp_size();
	long n = lp_nfree(), r;
	int i;

	ASSERT_GE(n, 2);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(wait_every_free_page_zeroed(), n);
		r = get_check_fill(n * lp, i & 1 ? MAP_SHARED : MAP_PRIVATE,
				   0x5a10 + i);
		ASSERT_TRUE(LP_OK(r));
		EXPECT_TRUE(lp_check(LP_PTR(r), n * lp, 0x5a10 + i));
		ASSERT_EQ(lpsys_free(r), 0);
	}
}

/* Dirty pages back in the pool and taken again before the thread can. */
TEST(zeroing_free_then_immediate_get_is_zero)
{
	unsigned long lp = lp_size();
	long n = lp_nfree();
	int i;

	ASSERT_GE(n, 2);
	for (i = 0; i < 40; i++)
		get_check_free((1 + i % n) * lp,
			       i & 1 ? MAP_SHARED : MAP_PRIVATE, 0x5b00 + i);
	/* The whole pool, right after it was all dirtied. */
	get_check_free(n * lp, MAP_PRIVATE, 0x5b80);
	get_check_free(n * lp, MAP_SHARED, 0x5b81);
}

/*
 * One free page, dirty, and a request for exactly one: if the thread
 * holds it, the request must wait for it, not fail with ENOMEM.
 */
TEST(zeroing_last_free_page_waits_for_the_thread)
{
	unsigned long lp = lp_size();
	long n = lp_nfree(), hold;
	int i;

	ASSERT_GE(n, 2);
	hold = lpsys_get(0, (n - 1) * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(hold));
	for (i = 0; i < 60; i++) {
		get_check_free(lp, MAP_PRIVATE, 0x5c00 + i);
		if (i % 3 == 2)
			usleep(i * 50);	/* let the thread pick it up */
	}
	ASSERT_EQ(lpsys_free(hold), 0);
}

/* A keyed segment's pages, destroyed with their data and created again. */
TEST(zeroing_keyed_segment_recreated_is_zero)
{
	unsigned long lp = lp_size();
	long n = lp_nfree(), r;
	int i;

	ASSERT_GE(n, 2);
	for (i = 0; i < 20; i++) {
		r = lpsys_share(KEY0, 0, n * lp, RW, IPC_CREAT | IPC_EXCL | 0600);
		ASSERT_TRUE(LP_OK(r));
		EXPECT_TRUE(lp_zeroed(LP_PTR(r), n * lp));
		lp_fill(LP_PTR(r), n * lp, 0x5d00 + i);
		ASSERT_EQ(lpsys_unshare(r), 0);
		if (i % 4 == 3)
			ASSERT_GE(wait_every_free_page_zeroed(), 0);
	}
}

/*
 * Shrinking by exactly the free pages right after they were dirtied:
 * the page the thread is zeroing is free, and must go too.
 */
TEST(zeroing_shrink_racing_the_thread_takes_every_free_page)
{
	unsigned long lp = lp_size();
	long n = lp_nfree(), total = lp_total(), hold;
	int i;

	ASSERT_GE(n, 3);
	hold = lpsys_get(0, (n - 2) * lp, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(hold));
	for (i = 0; i < 20; i++) {
		get_check_free(2 * lp, MAP_PRIVATE, 0x5e00 + i);
		ASSERT_EQ(sysctl_resize(-2), 0);
		EXPECT_EQ(lp_total(), total - 2);
		EXPECT_EQ(lp_nfree(), 0);
		ASSERT_EQ(sysctl_resize(2), 0);
		ASSERT_EQ(lp_total(), total);
		/* Fresh pages from the buddy allocator: zeroed before use. */
		get_check_free(2 * lp, MAP_SHARED, 0x5e80 + i);
	}
	ASSERT_EQ(lpsys_free(hold), 0);
}

static void churn(void *arg)
{
	unsigned long lp = lp_size(), n = lp_total();
	unsigned int s = (unsigned int)(long)arg * 2654435761u;
	time_t end = time(NULL) + CHURN_SECS;
	unsigned long len;
	long r;

	while (time(NULL) < end) {
		s = s * 1103515245u + 12345u;
		len = (1 + (s >> 16) % 2) * lp;
		r = get_check_fill(len, s & 0x10000 ? MAP_SHARED : MAP_PRIVATE,
				   s);
		if (r == -1 && errno == ENOMEM)
			continue;	/* the others hold the pool */
		if (!LP_OK(r))
			_exit(1);
		if (!lp_check(LP_PTR(r), len, s))
			_exit(2);
		if (lpsys_free(r))
			_exit(3);
		if ((s >> 20) % n == 0)
			usleep(500);
	}
	_exit(0);
}

static void resizer(void *arg)
{
	time_t end = time(NULL) + CHURN_SECS;

	(void)arg;
	while (time(NULL) < end) {
		if (sysctl_resize(-1) || sysctl_resize(1))
			_exit(1);
		usleep(2000);
	}
	_exit(0);
}

/* Many CPUs getting, checking, dirtying and freeing, with resizes. */
TEST(zeroing_smp_churn_never_sees_dirty_pages)
{
	long total = lp_total(), grow;
	pid_t pids[CHURNERS + 1];
	int i, st;

	ASSERT_GE(lp_nfree(), 4);
	for (i = 0; i <= CHURNERS; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (pids[i] == 0) {
			if (i == CHURNERS)
				resizer(NULL);
			churn((void *)(long)(i + 1));
		}
	}
	for (i = 0; i <= CHURNERS; i++) {
		ASSERT_EQ(waitpid(pids[i], &st, 0), pids[i]);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
		if (!CHILD_EXITED(st, 0))
			TH_LOG("%s %d: status %#x", i == CHURNERS ? "resizer" :
			       "churner", i, st);
	}
	/*
	 * A shrink that found every page busy gave nothing back, and the
	 * grow after it added one: put the pool back to its size.
	 */
	grow = total - lp_total();
	if (grow)
		ASSERT_EQ(sysctl_resize(grow), 0);
	EXPECT_EQ(lp_total(), total);
	EXPECT_GE(wait_every_free_page_zeroed(), 0);
}

/*
 * A pipe keeps references to a page past free_large_pages(): the page is
 * not free, nobody else gets it, the pipe reads the old data; once the
 * pipe lets go the page comes back, and is zero for its next user.
 */
TEST(zeroing_page_referenced_past_free_is_zeroed_after)
{
	unsigned long lp = lp_size(), len = 65536, off;
	long n = lp_nfree(), r, rest;
	static char buf[65536];
	struct iovec iov;
	int fds[2];

	ASSERT_GE(n, 2);
	r = lpsys_get(0, lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), lp, 0x5f01);
	ASSERT_EQ(pipe(fds), 0);
	iov.iov_base = LP_PTR(r);
	iov.iov_len = len;
	ASSERT_EQ(vmsplice(fds[1], &iov, 1, 0), len);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), n - 1);

	rest = get_check_fill((n - 1) * lp, MAP_PRIVATE, 0x5f02);
	ASSERT_TRUE(LP_OK(rest));
	ASSERT_EQ(read(fds[0], buf, len), len);
	for (off = 0; off < len; off += 4096)
		if (*(uint32_t *)(buf + off) != (0x5f01u ^ off))
			break;
	EXPECT_EQ(off, len);
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(lp_settle_nfree(1), 1);
	r = get_check_fill(lp, MAP_PRIVATE, 0x5f03);
	EXPECT_TRUE(LP_OK(r));
	if (LP_OK(r))
		ASSERT_EQ(lpsys_free(r), 0);
	ASSERT_EQ(lpsys_free(rest), 0);
}

/* Does the kernel log, from its last "PM: suspend entry" on, name task? */
static int freeze_refused_by(const char *task)
{
	char line[512], want[64];
	int found = 0;
	FILE *f = popen("dmesg", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "task:%s ", task);
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "PM: suspend entry"))
			found = 0;
		else if (strstr(line, want))
			found = 1;
	}
	pclose(f);
	return found;
}

/*
 * Suspend and hibernation freeze every freezable task first, and give up
 * after /sys/power/pm_freeze_timeout. largepage_zerod with a backlog
 * never sleeps, so it must freeze between pages: with the whole pool
 * freshly dirtied (half a second of zeroing here), a freeze with a
 * 200 ms timeout succeeds (pm_test=freezer: freeze, wait, thaw; no real
 * suspend), and once thawed the thread zeroes the rest. A freeze that
 * some other task was too slow for under TCG is tried again; one that
 * largepage_zerod refused fails the test.
 */
TEST(zeroing_thread_freezes_with_a_backlog)
{
	long timeout = read_long("/sys/power/pm_freeze_timeout");
	char buf[24];
	int i, ret = -1;

	ASSERT_GT(timeout, 0);
	ASSERT_EQ(write_text("/sys/power/pm_test", "freezer"), 0);
	ASSERT_EQ(write_text("/sys/power/pm_freeze_timeout", "200"), 0);
	for (i = 0; i < 3 && ret; i++) {
		ASSERT_EQ(lp_dirty_free_pages(), 0);
		TH_LOG("try %d: %ld of %ld free pages to zero", i + 1,
		       unzeroed_free(), lp_nfree());
		EXPECT_GT(unzeroed_free(), 0);
		ret = write_text("/sys/power/state", "freeze");
		if (ret)
			TH_LOG("freeze: %s", strerror(-ret));
		if (ret && freeze_refused_by("largepage_zerod") != 0)
			break;
	}
	EXPECT_EQ(ret, 0);
	EXPECT_EQ(freeze_refused_by("largepage_zerod"), 0);
	write_text("/sys/power/pm_test", "none");
	snprintf(buf, sizeof(buf), "%ld", timeout);
	write_text("/sys/power/pm_freeze_timeout", buf);
	EXPECT_EQ(wait_every_free_page_zeroed(), lp_nfree());
}

/* The pid of the kernel thread called comm, or -1. */
static pid_t kthread_pid(const char *comm)
{
	char path[300], name[32];
	struct dirent *e;
	pid_t pid = -1;
	DIR *d = opendir("/proc");

	while (d && (e = readdir(d)) && pid < 0) {
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = 0;
			if (!strcmp(name, comm))
				pid = atoi(e->d_name);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return pid;
}

/* The state letter of pid in /proc/PID/stat (R, S, D, Z, ...), or 0. */
static char task_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static int pin_to(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set);
}

/* A SCHED_FIFO busy loop on cpu for at most secs seconds. */
static void fifo_spinner(int cpu, int secs)
{
	struct sched_param sp = { .sched_priority = 1 };
	time_t end = time(NULL) + secs;

	if (pin_to(0, cpu) || sched_setscheduler(0, SCHED_FIFO, &sp))
		_exit(1);
	while (time(NULL) < end)
		;
	_exit(0);
}

/* Create key for len bytes (it must not exist), check it is zero, leave. */
static void creator(int key, unsigned long len)
{
	long r = lpsys_share(key, 0, len, RW, IPC_CREAT | IPC_EXCL | 0600);

	if (!LP_OK(r))
		_exit(1);
	if (!lp_zeroed(LP_PTR(r), len))
		_exit(2);
	_exit(lpsys_unshare(r) ? 3 : 0);
}

#define SPIN_SECS 8

/*
 * The peer that creates a one-page keyed segment, says so, and on the
 * word detaches it: how many ms the detach took.
 */
static void detacher(struct lp_peer *d, int key, unsigned long len)
{
	struct timespec t0, t1;
	long r = lpsys_share(key, 0, len, RW, IPC_CREAT | IPC_EXCL | 0600);

	if (!LP_OK(r))
		_exit(1);
	lp_peer_send(d, 0);
	lp_peer_recv(d);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (lpsys_unshare(r))
		_exit(2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	lp_peer_send(d, (t1.tv_sec - t0.tv_sec) * 1000 +
		     (t1.tv_nsec - t0.tv_nsec) / 1000000);
	_exit(0);
}

/* Have the detacher detach: its ms, or -1 if it has not within 4 s. */
static long timed_detach(struct lp_peer *d)
{
	struct pollfd pfd = { .fd = d->rfd, .events = POLLIN };

	lp_peer_send(d, 1);
	return poll(&pfd, 1, 4000) == 1 ? lp_peer_recv(d) : -1;
}

/*
 * Nothing that waits for largepage_zerod may hold lp_key_mutex, which
 * the last detach of every keyed segment takes. Starve the thread while
 * it holds a page (pinned to CPU 1 beside a SCHED_FIFO spinner, with RT
 * throttling off), create a keyed segment of exactly LargePages_Free
 * pages, so that its creator has to wait for that page, and meanwhile
 * let an unrelated process detach another key: the detach must finish
 * at once, not when the spinner stops. (Before the fix, the creator
 * waited holding the mutex and the detach sat in D state.)
 */
TEST(zeroing_detach_does_not_wait_behind_a_creator_waiting_for_the_thread)
{
	unsigned long lp = lp_size();
	long rt = read_long("/proc/sys/kernel/sched_rt_runtime_us"), ms = -1;
	pid_t zerod = kthread_pid("largepage_zerod"), spinner, maker = -1;
	int st, i, try, caught = 0, maker_st = -1;
	struct lp_peer d;
	cpu_set_t was;
	char buf[24];

	ASSERT_GE(sysconf(_SC_NPROCESSORS_ONLN), 2);
	ASSERT_GT(zerod, 0);
	ASSERT_GE(lp_nfree(), 3);
	ASSERT_GT(rt, 0);
	ASSERT_EQ(sched_getaffinity(zerod, sizeof(was), &was), 0);
	/* This process and its children keep to CPU 0. */
	ASSERT_EQ(pin_to(0, 0), 0);

	if (lp_peer_fork(&d) == 0)
		detacher(&d, KEY0 + 10, lp);
	ASSERT_GT(d.pid, 0);
	lp_peer_recv(&d);

	/* From here on, undo everything before any ASSERT. */
	EXPECT_EQ(pin_to(zerod, 1), 0);
	EXPECT_EQ(write_text("/proc/sys/kernel/sched_rt_runtime_us", "-1"), 0);
	for (try = 0; try < 5 && !caught; try++) {
		EXPECT_EQ(lp_dirty_free_pages(), 0);
		spinner = fork();
		if (spinner == 0)
			fifo_spinner(1, SPIN_SECS);
		usleep(300000);
		/* Preempted with a page in hand: runnable, pages to zero. */
		if (task_state(zerod) == 'R' && unzeroed_free() > 0) {
			maker = fork();
			if (maker == 0)
				creator(KEY0 + 11, lp_nfree() * lp);
			/* It must be waiting for the thread's page. */
			for (i = 0; i < 200 && task_state(maker) != 'D'; i++)
				usleep(10000);
			caught = task_state(maker) == 'D';
		}
		if (caught)
			ms = timed_detach(&d);
		kill(spinner, SIGKILL);
		waitpid(spinner, &st, 0);
		if (maker > 0) {
			waitpid(maker, &maker_st, 0);
			maker = -1;
		}
		if (!caught)
			TH_LOG("try %d: largepage_zerod not caught with a page (state %c)",
			       try + 1, task_state(zerod));
		wait_every_free_page_zeroed();
	}
	snprintf(buf, sizeof(buf), "%ld", rt);
	EXPECT_EQ(write_text("/proc/sys/kernel/sched_rt_runtime_us", buf), 0);
	EXPECT_EQ(sched_setaffinity(zerod, sizeof(was), &was), 0);

	EXPECT_TRUE(caught);
	if (caught && ms < 0)
		TH_LOG("the detach was still blocked after 4 s");
	EXPECT_GE(ms, 0);
	EXPECT_LT(ms, 2000);
	EXPECT_TRUE(CHILD_EXITED(maker_st, 0));
	if (caught && ms < 0)
		ms = lp_peer_recv(&d);
	if (!caught)
		lp_peer_send(&d, 1);
	st = lp_peer_wait(&d);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
}
