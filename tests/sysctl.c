// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/sys/kernel/numlargepages: reads the pool's total, writes change
 * it by a delta. Every test that resizes the pool runs its body in a
 * child and puts the pool back to its original size afterwards, whatever
 * the body did: later tests depend on it.
 */
#include <sched.h>
#include <sys/stat.h>
#include "lp.h"

/* Bring the pool back to 'total' pages (every page must be free). */
static int restore_pool(long total)
{
	long now = pool_restore(total);

	if (now != total)
		TH_LOG("pool not restored: %ld pages, was %ld", now, total);
	return now == total ? 0 : -1;
}

/* Run body in a child, then restore the pool; the child's exit status. */
static int resize_test(void (*body)(void *), void *arg)
{
	long total = lp_total();
	int st = run_child(body, arg);

	ASSERT_EQ(restore_pool(total), 0);
	if (!CHILD_EXITED(st, 0))
		TH_LOG("body status %#x", st);
	return st;
}

TEST(sysctl_reads_pool_total)
{
	long total = lp_total();

	ASSERT_GE(total, 1);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
	EXPECT_EQ(lp_nfree(), total);
}

TEST(sysctl_file_mode_0644_root)
{
	struct stat sb;

	ASSERT_EQ(stat(NUMLARGEPAGES, &sb), 0);
	EXPECT_TRUE(S_ISREG(sb.st_mode));
	EXPECT_EQ(sb.st_mode & 07777, 0644);
	EXPECT_EQ(sb.st_uid, 0);
}

static void grow_body(void *arg)
{
	long total = lp_total(), nfree = lp_nfree();

	(void)arg;
	ASSERT_EQ(sysctl_resize(2), 0);
	EXPECT_EQ(lp_total(), total + 2);
	EXPECT_EQ(lp_nfree(), nfree + 2);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total + 2);
	CHILD_DONE();
}

TEST(sysctl_write_positive_grows_pool)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(grow_body, NULL), 0));
}

static void shrink_body(void *arg)
{
	long total = lp_total(), nfree = lp_nfree();

	(void)arg;
	ASSERT_GE(total, 3);
	ASSERT_EQ(sysctl_resize(-2), 0);
	EXPECT_EQ(lp_total(), total - 2);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total - 2);
	/* Nothing more than the pool holds can be had now. */
	EXPECT_ERRNO(lpsys_get(0, (nfree - 1) * lp_size(), RW, MAP_PRIVATE),
		     ENOMEM);
	CHILD_DONE();
}

TEST(sysctl_write_negative_shrinks_pool)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(shrink_body, NULL), 0));
}

TEST(sysctl_write_zero_changes_nothing)
{
	long total = lp_total(), nfree = lp_nfree();

	EXPECT_EQ(sysctl_resize(0), 0);
	EXPECT_EQ(write_text(NUMLARGEPAGES, "0"), 0);
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
}

static void delta_body(void *arg)
{
	long total = lp_total();

	(void)arg;
	/* Unlike nr_hugepages, "1" means one more, not one in all. */
	ASSERT_EQ(sysctl_resize(1), 0);
	ASSERT_EQ(sysctl_resize(1), 0);
	EXPECT_EQ(lp_total(), total + 2);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total + 2);
	ASSERT_EQ(sysctl_resize(-1), 0);
	EXPECT_EQ(lp_total(), total + 1);
	ASSERT_EQ(sysctl_resize(-1), 0);
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(lp_nfree(), total);
	CHILD_DONE();
}

TEST(sysctl_write_is_a_delta)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(delta_body, NULL), 0));
}

static void junk_body(void *arg)
{
	static const char *const junk[] = {
		"abc", "abc\n", "1x", "x1", "1.5", "-", "0x", "two\n",
	};
	long total = lp_total(), nfree = lp_nfree();
	unsigned int i;
	int ret;

	(void)arg;
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		ret = write_text(NUMLARGEPAGES, junk[i]);
		if (ret != -EINVAL)
			TH_LOG("writing '%s': %d (%s)", junk[i], ret,
			       strerror(-ret));
		EXPECT_EQ(ret, -EINVAL);
		EXPECT_EQ(lp_total(), total);
		EXPECT_EQ(lp_nfree(), nfree);
	}
	/* SPEC says nothing of an empty write's result: only that nothing changes. */
	write_text(NUMLARGEPAGES, "");
	EXPECT_EQ(lp_total(), total);
	CHILD_DONE();
}

TEST(sysctl_write_junk_einval)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(junk_body, NULL), 0));
}

static void spare_body(void *arg)
{
	long total = lp_total(), r, k;
	char buf[32];

	(void)arg;
	ASSERT_GE(total, 6);
	r = lpsys_get(0, 3 * lp_size(), RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	k = lpsys_share(8000, 0, 2 * lp_size(), RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(k));
	memset(LP_PTR(r), 0x5a, 3 * lp_size());
	memset(LP_PTR(k), 0xa5, 2 * lp_size());

	/* Shrink by everything: only the 5 pages in use remain. */
	snprintf(buf, sizeof(buf), "-%ld", total);
	ASSERT_EQ(write_text(NUMLARGEPAGES, buf), 0);
	EXPECT_EQ(lp_total(), 5);
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_EQ(read_long(NUMLARGEPAGES), 5);
	EXPECT_EQ(LP_PTR(r)[3 * lp_size() - 1], 0x5a);
	EXPECT_EQ((unsigned char)LP_PTR(k)[2 * lp_size() - 1], 0xa5);

	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_total(), 5);
	EXPECT_EQ(lp_nfree(), 3);
	ASSERT_EQ(lpsys_unshare(k), 0);
	EXPECT_EQ(lp_nfree(), 5);

	snprintf(buf, sizeof(buf), "%ld", total - 5);
	ASSERT_EQ(write_text(NUMLARGEPAGES, buf), 0);
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(lp_nfree(), total);
	CHILD_DONE();
}

TEST(sysctl_shrink_never_takes_pages_in_use)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(spare_body, NULL), 0));
}

static void empty_body(void *arg)
{
	long total = lp_total();

	(void)arg;
	ASSERT_EQ(sysctl_resize(-(total + 10)), 0);
	EXPECT_EQ(lp_total(), 0);
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_ERRNO(lpsys_get(0, lp_size(), RW, MAP_PRIVATE), ENOMEM);
	EXPECT_ERRNO(lpsys_share(8001, 0, lp_size(), RW, IPC_CREAT), ENOMEM);
	ASSERT_EQ(sysctl_resize(total), 0);
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(lp_nfree(), total);
	CHILD_DONE();
}

TEST(sysctl_shrink_past_zero_empties_pool)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(empty_body, NULL), 0));
}

static void usable_body(void *arg)
{
	long total = lp_total(), r;
	unsigned long off;

	(void)arg;
	/* Empty the pool, so that every page mapped below is a grown one. */
	ASSERT_EQ(sysctl_resize(-total), 0);
	ASSERT_EQ(lp_total(), 0);
	ASSERT_EQ(sysctl_resize(2), 0);
	ASSERT_EQ(lp_total(), 2);
	EXPECT_EQ(lp_nfree(), 2);
	r = lpsys_get(0, 2 * lp_size(), RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	for (off = 0; off < 2 * lp_size(); off += 4096) {
		if (*(volatile uint32_t *)(LP_PTR(r) + off))
			break;
		*(volatile uint32_t *)(LP_PTR(r) + off) = off;
	}
	EXPECT_EQ(off, 2 * lp_size());
	EXPECT_EQ(lp_nfree(), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), 2);
	CHILD_DONE();
}

TEST(sysctl_grown_pages_are_usable_and_zeroed)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(usable_body, NULL), 0));
}

static void grow_in_use_body(void *arg)
{
	long total = lp_total(), r;

	(void)arg;
	r = lpsys_get(0, 2 * lp_size(), RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(sysctl_resize(3), 0);
	EXPECT_EQ(lp_total(), total + 3);
	EXPECT_EQ(lp_nfree(), total + 1);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), total + 3);
	CHILD_DONE();
}

TEST(sysctl_grow_while_pages_in_use)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(grow_in_use_body, NULL), 0));
}

static void nobody_open_body(void *arg)
{
	long total = lp_total();
	int ret;

	(void)arg;
	become_nobody();
	ret = write_text(NUMLARGEPAGES, "1");
	if (ret != -EACCES && ret != -EPERM)
		TH_LOG("nobody's write: %d", ret);
	EXPECT_TRUE(ret == -EACCES || ret == -EPERM);
	EXPECT_EQ(lp_total(), total);
	/* Reading is for everyone. */
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
	CHILD_DONE();
}

TEST(sysctl_unprivileged_write_refused)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(nobody_open_body, NULL), 0));
}

static void nobody_fd_body(void *arg)
{
	long total = lp_total();
	int fd = open(NUMLARGEPAGES, O_WRONLY);

	(void)arg;
	ASSERT_GE(fd, 0);
	become_nobody();
	errno = 0;
	EXPECT_EQ(write(fd, "1", 1), -1);
	EXPECT_TRUE(errno == EACCES || errno == EPERM);
	close(fd);
	EXPECT_EQ(lp_total(), total);
	CHILD_DONE();
}

TEST(sysctl_write_refused_through_fd_opened_by_root)
{
	EXPECT_TRUE(CHILD_EXITED(resize_test(nobody_fd_body, NULL), 0));
}

#define NR_PAGES "/sys/kernel/mm/largepage/nr_pages"
#define HELD_GROW 512		/* pages the held grow asks for */

static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(4);
}

/* The state letter of /proc/PID/stat ('D', 'S', ...), or 0 if gone. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	read_text(path, buf, sizeof(buf));	/* "": gone */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* waitpid() @pid for up to @secs seconds: 1 if reaped. */
static int reaped_within(pid_t pid, double secs)
{
	int i, st;

	for (i = 0; i < secs * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return 1;
		usleep(10000);
	}
	return 0;
}

#define RT_RUNTIME "/proc/sys/kernel/sched_rt_runtime_us"

/* Field @field of /proc/PID/stat (39: the CPU it last ran on), or -1. */
static int proc_field(pid_t pid, int field)
{
	char path[64], buf[512], *p;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	read_text(path, buf, sizeof(buf));	/* "": gone */
	p = strrchr(buf, ')');
	for (i = 2; p && i < field; i++)
		p = strchr(p + 1, ' ');
	return p ? atoi(p + 1) : -1;
}

/*
 * A child that spins SCHED_FIFO on CPU 0 once it reads a byte from fd
 * (exit 5 or 6 if it cannot): its pid, or -1.
 */
static pid_t start_busy_loop(int fd)
{
	struct sched_param sp = { .sched_priority = 1 };
	pid_t pid = fork();
	char c;

	if (pid)
		return pid;
	pin_to_cpu(0);
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		_exit(5);
	if (read(fd, &c, 1) != 1)
		_exit(6);
	for (;;)
		;
}

/*
 * A numlargepages writer queued behind a resize that holds the resize
 * mutex a long time (a grow under reclaim; here a grow through nr_pages
 * on a CPU that a SCHED_FIFO busy loop takes as soon as the grow has
 * begun, RT throttling leaving the grow a thousandth of it) sleeps
 * killably: SIGKILL ends it at once, while the grow still holds the
 * mutex, instead of leaving it in D state until the grow ends. The test
 * and the writer run on CPU 1.
 */
TEST(sysctl_writer_behind_a_held_grow_is_killable)
{
	long total = lp_total(), grown = total, rt = read_long(RT_RUNTIME);
	pid_t hog, holder, writer = -1;
	int i, dead, held, go[2];
	char text[32], c = 0;

	ASSERT_GE(sysconf(_SC_NPROCESSORS_ONLN), 2);
	ASSERT_EQ(access(NR_PAGES, W_OK), 0);
	ASSERT_GT(rt, 0);
	ASSERT_EQ(pipe(go), 0);
	pin_to_cpu(1);
	ASSERT_EQ(write_text(RT_RUNTIME, "999000\n"), 0);
	/* The busy loop, SCHED_FIFO on CPU 0, waits for the word. */
	hog = start_busy_loop(go[0]);
	ASSERT_GE(hog, 0);
	for (i = 0; i < 1000 && (proc_field(hog, 41) != SCHED_FIFO ||
				 proc_state(hog) != 'S'); i++)
		usleep(10000);
	ASSERT_EQ(proc_field(hog, 41), SCHED_FIFO);
	/*
	 * The busy loop first, then the holder on its CPU: the holder gets
	 * a thousandth of CPU 0 from its first instruction, so its grow is
	 * slow however the host schedules the vCPUs (starting the loop once
	 * the grow was seen to begin lost that race on a loaded host: the
	 * grow was all but done before the loop ran).
	 */
	EXPECT_EQ(write(go[1], &c, 1), 1);
	for (i = 0; i < 1000 && proc_state(hog) != 'R'; i++)
		usleep(10000);
	holder = fork();
	ASSERT_GE(holder, 0);
	if (holder == 0) {
		pin_to_cpu(0);
		snprintf(text, sizeof(text), "%ld\n", total + HELD_GROW);
		_exit(write_text(NR_PAGES, text) ? 6 : 0);
	}
	/* The first page added: the holder is in its grow, with the mutex. */
	for (i = 0; i < 6000 && grown == total; i++) {
		usleep(10000);
		grown = lp_total();
	}
	TH_LOG("the grow holds the resize mutex: %ld pages, was %ld; holder on CPU %d, busy loop on CPU %d (%c, policy %d)",
	       grown, total, proc_field(holder, 39), proc_field(hog, 39),
	       proc_state(hog) ?: '-', proc_field(hog, 41));
	if (grown > total) {
		writer = fork();
		ASSERT_GE(writer, 0);
		if (writer == 0)
			_exit(write_text(NUMLARGEPAGES, "1\n") ? 7 : 0);
		for (i = 0; i < 500 && proc_state(writer) != 'D'; i++)
			usleep(10000);
		TH_LOG("writer %d: state %c after %d ms", writer,
		       proc_state(writer) ?: '-', i * 10);
		EXPECT_EQ(proc_state(writer), 'D');
		usleep(200000);
		kill(writer, SIGKILL);
		dead = reaped_within(writer, 5);
		held = waitpid(holder, NULL, WNOHANG) == 0 &&
		       lp_total() < total + HELD_GROW;
		TH_LOG("SIGKILL: the writer %s; the grow %s at %ld pages",
		       dead ? "died at once" : "still there after 5 s",
		       held ? "still holds the mutex" : "has ended", lp_total());
		EXPECT_TRUE(held);
		EXPECT_TRUE(dead);
	}
	EXPECT_GT(grown, total);
	kill(holder, SIGKILL);
	kill(hog, SIGKILL);
	EXPECT_TRUE(reaped_within(hog, 30));
	snprintf(text, sizeof(text), "%ld\n", rt);
	EXPECT_EQ(write_text(RT_RUNTIME, text), 0);
	reaped_within(holder, 30);
	if (writer > 0)
		reaped_within(writer, 30);
	EXPECT_EQ(restore_pool(total), 0);
}
