// SPDX-License-Identifier: GPL-2.0
/*
 * What an administrator sets and reads: the absolute pool size in
 * /sys/kernel/mm/largepage/nr_pages (idempotent, never takes pages in
 * use, bad input changes nothing, serialised with numlargepages), the
 * LargePages: line of /proc/PID/status, and who created and last
 * attached or detached each keyed segment in /proc/largepage_segments.
 * Every test that resizes the pool puts it back to its size.
 */
#include <sys/stat.h>
#include <time.h>
#include "lp.h"

#define NR_PAGES "/sys/kernel/mm/largepage/nr_pages"
#define KEY0 9300

static int set_nr_pages(long n)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", n);
	return write_text(NR_PAGES, buf);
}

/* Write n to nr_pages: the pool is n pages. */
static void resize_to(long n)
{
	ASSERT_EQ(set_nr_pages(n), 0);
	EXPECT_EQ(lp_total(), n);
}

/* Two pages of a pool of total (3 at least) in use: the mapping. */
static long hold_two_pages(long total, int flags)
{
	long r;

	ASSERT_GE(total, 3);
	r = lpsys_get(0, 2 * lp_size(), RW, flags);
	ASSERT_TRUE(LP_OK(r));
	return r;
}

/* Put the pool back to total pages through numlargepages. */
static void restore(long total)
{
	ASSERT_EQ(pool_restore(total), total);
}

TEST(nr_pages_reads_the_pool_size)
{
	struct stat sb;

	ASSERT_EQ(stat(NR_PAGES, &sb), 0);
	EXPECT_EQ(sb.st_mode & 07777, 0644);
	EXPECT_EQ(read_long(NR_PAGES), lp_total());
	EXPECT_EQ(read_long(NR_PAGES), read_long(NUMLARGEPAGES));
}

/* Writing N makes the pool N pages; writing N again changes nothing. */
TEST(nr_pages_sets_the_size_absolutely_and_twice_is_once)
{
	long total = lp_total();

	ASSERT_GE(total, 2);
	resize_to(total + 2);
	EXPECT_EQ(lp_nfree(), total + 2);
	resize_to(total + 2);
	EXPECT_EQ(read_long(NR_PAGES), total + 2);
	resize_to(total - 1);
	resize_to(total - 1);
	resize_to(total);
	restore(total);
}

/* A shrink to 0 gives back the free pages only; the mapping keeps its data. */
TEST(nr_pages_never_takes_pages_in_use)
{
	unsigned long lp = lp_size();
	long total = lp_total(), r = hold_two_pages(total, MAP_SHARED);

	lp_fill(LP_PTR(r), 2 * lp, 0x9301);
	ASSERT_EQ(set_nr_pages(0), 0);
	EXPECT_EQ(lp_total(), 2);
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_EQ(read_long(NR_PAGES), 2);
	EXPECT_TRUE(lp_check(LP_PTR(r), 2 * lp, 0x9301));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(2), 2);
	resize_to(total);
	restore(total);
}

/* With pages in use, N is still the pool's total, not its free count. */
TEST(nr_pages_counts_pages_in_use)
{
	long total = lp_total(), r = hold_two_pages(total, MAP_PRIVATE);

	resize_to(total + 1);
	EXPECT_EQ(lp_nfree(), total - 1);
	resize_to(total);
	EXPECT_EQ(lp_nfree(), total - 2);
	ASSERT_EQ(lpsys_free(r), 0);
	restore(total);
}

TEST(nr_pages_refuses_bad_input_and_changes_nothing)
{
	static const char *const bad[] = { "\n", "abc", "-1", "1x", "+",
		" 5", "5 6", "0x10", "1.5", "99999999999999999999999",
		"18446744073709551616" };
	long total = lp_total();
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = write_text(NR_PAGES, bad[i]);

		if (ret != -EINVAL)
			TH_LOG("'%s': %s", bad[i], strerror(-ret));
		EXPECT_EQ(ret, -EINVAL);
		EXPECT_EQ(lp_total(), total);
	}
}

/*
 * A writer without the right: nobody (the file's mode refuses it), or
 * uid 0 without CAP_SYS_ADMIN (the mode lets it open, the store
 * refuses). Its write fails with err and the pool stays as it was.
 */
struct writer {
	void (*become)(void);
	int err;
};

static void drop_cap_sys_admin(void)
{
	ASSERT_EQ(lp_drop_cap(CAP_SYS_ADMIN), 0);
}

static const struct writer as_nobody = { become_nobody, EACCES };
static const struct writer as_root_without_admin = { drop_cap_sys_admin,
						      EPERM };

static void refused_writer_body(void *arg)
{
	const struct writer *w = arg;
	long total = lp_total();

	w->become();
	EXPECT_EQ(set_nr_pages(total + 1), -w->err);
	EXPECT_EQ(lp_total(), total);
	CHILD_DONE();
}

TEST(nr_pages_only_root_writes)
{
	EXPECT_TRUE(CHILD_EXITED(run_child(refused_writer_body,
					   (void *)&as_nobody), 0));
}

TEST(nr_pages_needs_cap_sys_admin_not_uid_0)
{
	EXPECT_TRUE(CHILD_EXITED(run_child(refused_writer_body,
					   (void *)&as_root_without_admin), 0));
}

static void nr_pages_setter(void *arg)
{
	long want = (long)arg;
	time_t end = time(NULL) + 3;

	while (time(NULL) < end)
		if (set_nr_pages(want))
			_exit(1);
	_exit(0);
}

static void numlargepages_shrinker(void *arg)
{
	time_t end = time(NULL) + 3;

	(void)arg;
	while (time(NULL) < end) {
		if (sysctl_resize(-1) || sysctl_resize(1))
			_exit(1);
	}
	_exit(0);
}

/*
 * nr_pages and numlargepages at once: each write is whole, and once the
 * relative writer stops, writing N leaves exactly N pages.
 */
TEST(nr_pages_racing_numlargepages_ends_exact)
{
	long total = lp_total();
	pid_t a, b;
	int sa, sb;

	ASSERT_GE(total, 2);
	a = fork();
	if (a == 0)
		nr_pages_setter((void *)(long)total);
	b = fork();
	if (b == 0)
		numlargepages_shrinker(NULL);
	ASSERT_EQ(waitpid(a, &sa, 0), a);
	ASSERT_EQ(waitpid(b, &sb, 0), b);
	EXPECT_TRUE(CHILD_EXITED(sa, 0));
	EXPECT_TRUE(CHILD_EXITED(sb, 0));
	resize_to(total);
	EXPECT_EQ(lp_nfree(), total);
	restore(total);
}

/* The LargePages: line (kB) of /proc/PID/status; -1 if there is none. */
static long status_largepages(pid_t pid)
{
	return status_kb(pid, "LargePages:");
}

TEST(status_largepages_counts_private_shared_and_keyed)
{
	unsigned long lp = lp_size(), kb = lp / 1024;
	long a, b, c;
	int st;
	pid_t pid;

	ASSERT_GE(lp_nfree(), 4);
	EXPECT_EQ(status_largepages(getpid()), 0);
	a = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(a));
	EXPECT_EQ(status_largepages(getpid()), 2 * kb);
	b = lpsys_get(0, lp, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(b));
	EXPECT_EQ(status_largepages(getpid()), 3 * kb);
	c = lpsys_share(KEY0, 0, lp, RW, IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(c));
	EXPECT_EQ(status_largepages(getpid()), 4 * kb);

	/* A child inherits the shared and the keyed mapping, not the private. */
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	EXPECT_EQ(status_largepages(pid), 2 * kb);
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);

	ASSERT_EQ(lpsys_free(a), 0);
	EXPECT_EQ(status_largepages(getpid()), 2 * kb);
	ASSERT_EQ(lpsys_unshare(c), 0);
	ASSERT_EQ(lpsys_free(b), 0);
	EXPECT_EQ(status_largepages(getpid()), 0);
}

/* The cpid, lpid, atime, dtime and ctime of key's row; 1 if listed. */
struct seg_hist {
	long cpid, lpid;
	long long atime, dtime, ctime;
};

static int seg_hist(int key, struct seg_hist *h)
{
	char line[512];
	int k, found = 0;
	FILE *f = fopen("/proc/largepage_segments", "r");

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || !strstr(line, " cpid    lpid")) {
		TH_LOG("header without the history columns: %s", line);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%d %*u %*o %*u %*u %*u %*u %*d %ld %ld %lld %lld %lld",
			   &k, &h->cpid, &h->lpid, &h->atime, &h->dtime,
			   &h->ctime) != 6) {
			TH_LOG("bad line: %s", line);
			found = -1;
			break;
		}
		if (k == key) {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

/*
 * The creator's PID stays; the last attach and detach are the other
 * process's; the times are now-ish and ordered.
 */
TEST(segments_list_creator_last_user_and_times)
{
	unsigned long lp = lp_size();
	struct seg_hist h;
	struct lp_peer p;
	long r, now = time(NULL);
	int st;

	r = lpsys_share(KEY0 + 1, 0, lp, RW, IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(seg_hist(KEY0 + 1, &h), 1);
	EXPECT_EQ(h.cpid, getpid());
	EXPECT_EQ(h.lpid, getpid());	/* the creator attached it */
	EXPECT_GE(h.ctime, now - 1);
	EXPECT_LE(h.ctime, time(NULL));
	EXPECT_GE(h.atime, h.ctime);
	EXPECT_EQ(h.dtime, 0);

	if (lp_peer_fork(&p) == 0) {
		long q = lpsys_share(KEY0 + 1, 0, lp, RW, 0);

		if (!LP_OK(q))
			_exit(1);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		_exit(lpsys_unshare(q) ? 2 : 0);
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	ASSERT_EQ(seg_hist(KEY0 + 1, &h), 1);
	EXPECT_EQ(h.cpid, getpid());
	EXPECT_EQ(h.lpid, p.pid);
	EXPECT_EQ(h.dtime, 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(seg_hist(KEY0 + 1, &h), 1);
	EXPECT_EQ(h.lpid, p.pid);	/* its detach */
	EXPECT_GE(h.dtime, h.atime);
	EXPECT_LE(h.dtime, time(NULL));
	ASSERT_EQ(lpsys_unshare(r), 0);
}
