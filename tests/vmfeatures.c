// SPDX-License-Identifier: GPL-2.0
/*
 * The rest of the VM next to large pages: userfaultfd, KSM, compaction,
 * memory cgroups, io_uring and swap. Each either refuses a large-page
 * range cleanly or works around it, and none of them ever touches a
 * pool page: the data stays, LargePages_Free does not move.
 *
 * Memory cgroup policy (decided here, documented in largepages.rst):
 * pool pages are NOT charged to the memcg of the process that maps them.
 * They were taken from the page allocator when the pool was filled, not
 * by the mapper; charging them again would count memory twice that the
 * system gave up at boot, and reclaim in the memcg could never free them
 * anyway. RLIMIT_MEMLOCK is what limits them. An OOM kill in a memcg
 * unmaps them from the victim like any exit.
 *
 * Tests that change the whole system (a cgroup, KSM, a swap file) run
 * their body in a child (run_body()) and undo the change afterwards in
 * the test process, also when an ASSERT ends the body early or the
 * harness's alarm fires: one failing test must not leave the guest with
 * swap on or KSM running for the tests after it.
 *
 * Keys 7001..7099 are this file's.
 */
#include <linux/io_uring.h>
#include <linux/largepage.h>
#include <linux/magic.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/swap.h>
#include <sys/uio.h>
#include "lp.h"

#define KIB(n) ((n) * 1024UL)
#define MIB(n) ((n) * 1024UL * 1024UL)
#define NB (4 * 4096UL)		/* a small normal mapping */

#define CG_ROOT "/sys/fs/cgroup"
#define KSM "/sys/kernel/mm/ksm/"

/* Compaction, KSM scans and swapping under TCG: two minutes a test. */
__attribute__((constructor)) static void vmf_set_timeout(void)
{
	harness_timeout = 120;
}

/* The three kinds of large-page mapping. */
enum { PRIV, SHRD, KEYED, NKINDS };
static const char *const kind_name[NKINDS] = {
	"MAP_PRIVATE", "MAP_SHARED", "keyed"
};

/* A filled large-page mapping of a kind (key only for KEYED). */
static long map_kind(int kind, unsigned long len, int key, uint32_t seed)
{
	long r;

	if (kind == KEYED)
		r = lpsys_share(key, 0, len, RW, IPC_CREAT | 0600);
	else
		r = lpsys_get(0, len, RW, kind == PRIV ? MAP_PRIVATE : MAP_SHARED);
	if (LP_OK(r))
		lp_fill(LP_PTR(r), len, seed);
	else
		TH_LOG("%s mapping of %lu bytes: %s", kind_name[kind], len,
		       strerror(errno));
	return r;
}

static long unmap_kind(int kind, long r)
{
	return kind == KEYED ? lpsys_unshare(r) : lpsys_free(r);
}

/* A mapping of every kind: r[k], len[k] bytes filled with seed + k. */
struct every_kind {
	long r[NKINDS];
	unsigned long len[NKINDS];
	uint32_t seed;
};

/* Map every kind (keyed under key): all of them, or the test stops. */
static void map_every_kind(struct every_kind *e, int key, uint32_t seed)
{
	int k;

	e->seed = seed;
	for (k = 0; k < NKINDS; k++) {
		e->r[k] = map_kind(k, e->len[k], key, seed + k);
		ASSERT_TRUE(LP_OK(e->r[k]));
	}
}

static void expect_every_kind_intact(const struct every_kind *e)
{
	int k;

	for (k = 0; k < NKINDS; k++)
		EXPECT_TRUE(lp_intact(e->r[k], e->len[k], e->seed + k));
}

static void unmap_every_kind(const struct every_kind *e)
{
	int k;

	for (k = 0; k < NKINDS; k++)
		ASSERT_EQ(unmap_kind(k, e->r[k]), 0);
}

/*
 * lp_check() of a mapping whose bytes [at, at + n) were overwritten on
 * purpose: every pattern word outside them is still there.
 */
static int lp_check_around(const char *p, unsigned long len, uint32_t seed,
			   unsigned long at, unsigned long n)
{
	unsigned long off;
	uint32_t v;

	for (off = 0; off < len; off += 4096) {
		if (off >= at && off < at + n)
			continue;
		v = *(const volatile uint32_t *)(p + off);
		if (v != (seed ^ (uint32_t)off)) {
			TH_LOG("word at +%#lx is %#x, expected %#x", off, v,
			       seed ^ (uint32_t)off);
			return 0;
		}
	}
	if (len - 4 < at || len - 4 >= at + n) {
		v = *(const volatile uint32_t *)(p + len - 4);
		if (v != ~seed) {
			TH_LOG("last word is %#x, expected %#x", v, ~seed);
			return 0;
		}
	}
	return 1;
}

/* A dense I/O pattern: every word differs (as gup.c's). */
static uint32_t pat(unsigned long o, uint32_t seed)
{
	return (uint32_t)((o / 4) * 2654435761u) ^ seed;
}

static void fillw(char *buf, unsigned long len, uint32_t seed)
{
	unsigned long k;

	for (k = 0; k < len; k += 4)
		*(uint32_t *)(buf + k) = pat(k, seed);
}

static int checkw(const char *buf, unsigned long len, uint32_t seed)
{
	unsigned long k;
	uint32_t v;

	for (k = 0; k < len; k += 4) {
		v = *(const volatile uint32_t *)(buf + k);
		if (v != pat(k, seed)) {
			TH_LOG("I/O pattern at +%#lx: %#x, expected %#x", k, v,
			       pat(k, seed));
			return 0;
		}
	}
	return 1;
}

/*
 * What a test changed in the whole system, for undo_all(): in the test
 * process, not in the body, which may die anywhere.
 */
static struct {
	pid_t body;		/* run_body()'s child, while it runs */
	int cg_mounted;		/* this test mounted cgroup2 on CG_ROOT */
	char cg[64];		/* the test's cgroup, while it exists */
	char swapfile[64];	/* the swap file, while it exists */
	int swap_on;		/* ... and while it is swapped on */
	int ksm;		/* KSM was started; its settings before: */
	long ksm_pages, ksm_sleep;
} undo;

static int write_long(const char *path, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", v);
	return write_text(path, buf);
}

/*
 * Undo in reverse order of setup; 0 when everything was undone. Nothing
 * but system calls and snprintf() unless verbose, so that the alarm
 * handler can use it (the test process is then waiting in waitpid()).
 */
static int undo_all(int verbose)
{
	char path[96];
	int bad = 0, i;

	if (undo.body > 0) {
		kill(undo.body, SIGKILL);
		waitpid(undo.body, NULL, 0);
		undo.body = 0;
	}
	if (undo.cg[0]) {
		/* Nothing should be left in it; anything that is, is ours. */
		snprintf(path, sizeof(path), "%s/cgroup.kill", undo.cg);
		write_text(path, "1");
		for (i = 0; i < 100 && rmdir(undo.cg) && errno == EBUSY; i++)
			usleep(20000);
		if (!access(undo.cg, F_OK)) {
			if (verbose)
				TH_LOG("rmdir(%s): %s", undo.cg, strerror(errno));
			bad = 1;
		}
		undo.cg[0] = 0;
	}
	if (undo.cg_mounted) {
		if (umount2(CG_ROOT, 0) && verbose)
			TH_LOG("umount(%s): %s", CG_ROOT, strerror(errno));
		undo.cg_mounted = 0;
	}
	if (undo.swap_on) {
		if (swapoff(undo.swapfile)) {
			if (verbose)
				TH_LOG("swapoff(%s): %s", undo.swapfile,
				       strerror(errno));
			bad = 1;
		}
		undo.swap_on = 0;
	}
	if (undo.swapfile[0]) {
		unlink(undo.swapfile);
		undo.swapfile[0] = 0;
	}
	if (undo.ksm) {
		/* Unmerge whatever was merged, then stop ksmd. */
		if (write_text(KSM "run", "2") || write_text(KSM "run", "0")) {
			if (verbose)
				TH_LOG("cannot stop KSM");
			bad = 1;
		}
		write_long(KSM "pages_to_scan", undo.ksm_pages);
		write_long(KSM "sleep_millisecs", undo.ksm_sleep);
		undo.ksm = 0;
	}
	return bad;
}

static void undo_on_alarm(int sig)
{
	static const char msg[] = "# timed out; undoing the test's system changes\n";
	ssize_t n;

	(void)sig;
	n = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	undo_all(0);
	_exit(1);
}

/* Before the first system change: let the harness's alarm undo it. */
static void undo_arm(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = undo_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
}

/*
 * Run a test's body in a child; its ASSERTs end only the body. A body
 * that fails (or dies) fails the test.
 */
static void run_body(void (*body)(void))
{
	int st = -1;

	fflush(stdout);
	undo.body = fork();
	if (undo.body == 0) {
		signal(SIGALRM, SIG_DFL);
		body();
		fflush(stdout);
		CHILD_DONE();
	}
	if (undo.body < 0) {
		TH_LOG("fork: %s", strerror(errno));
		undo.body = 0;
		HARNESS_FAIL(0);
		return;
	}
	while (waitpid(undo.body, &st, 0) < 0 && errno == EINTR)
		;
	undo.body = 0;
	if (WIFSIGNALED(st))
		TH_LOG("the test body was killed by signal %d (%s)",
		       WTERMSIG(st), strsignal(WTERMSIG(st)));
	if (!CHILD_EXITED(st, 0))
		HARNESS_FAIL(0);
}

/* ---- memory cgroups ---- */

static int cg_write(const char *file, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", undo.cg, file);
	return write_text(path, text);
}

static long cg_read(const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", undo.cg, file);
	return read_long(path);
}

/* Move the calling process into the test's cgroup; 0 or -errno. */
static int cg_enter(void)
{
	char pid[16];
	int ret;

	snprintf(pid, sizeof(pid), "%d\n", getpid());
	ret = cg_write("cgroup.procs", pid);
	if (ret)
		TH_LOG("cannot enter %s: %s", undo.cg, strerror(-ret));
	return ret;
}

/*
 * A cgroup CG_ROOT/lptest-PID with the memory controller and these
 * limits; cgroup2 is mounted first if it is not. A memory controller
 * that cannot be enabled is a failure, not a reason to skip: Debian's
 * kernel has MEMCG. 0, or -1 with the reason logged.
 */
static int cg_create(const char *max, const char *swap_max)
{
	struct statfs sf;
	int e;

	if (statfs(CG_ROOT, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC) {
		if (mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL)) {
			TH_LOG("mount -t cgroup2 %s: %s", CG_ROOT,
			       strerror(errno));
			return -1;
		}
		undo.cg_mounted = 1;
	}
	e = write_text(CG_ROOT "/cgroup.subtree_control", "+memory");
	if (e) {
		TH_LOG("cannot enable the memory controller: %s", strerror(-e));
		return -1;
	}
	snprintf(undo.cg, sizeof(undo.cg), CG_ROOT "/lptest-%d", getpid());
	if (mkdir(undo.cg, 0755)) {
		TH_LOG("mkdir(%s): %s", undo.cg, strerror(errno));
		undo.cg[0] = 0;
		return -1;
	}
	e = cg_write("memory.max", max);
	if (!e)
		e = cg_write("memory.swap.max", swap_max);
	if (e) {
		TH_LOG("setting the limits of %s: %s", undo.cg, strerror(-e));
		return -1;
	}
	return 0;
}

/*
 * lp_peer_recv(), sampling LargePages_Free every 50 ms while it waits;
 * the lowest and highest values seen widen [*lo, *hi].
 */
static long recv_sampling(struct lp_peer *p, long *lo, long *hi)
{
	struct pollfd pfd = { .fd = p->rfd, .events = POLLIN };
	long n;

	do {
		n = lp_nfree();
		if (n < *lo)
			*lo = n;
		if (n > *hi)
			*hi = n;
	} while (poll(&pfd, 1, 50) == 0);
	return lp_peer_recv(p);
}

/* ---- userfaultfd ---- */

static int uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		TH_LOG("userfaultfd: %s", strerror(errno));
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api)) {
		TH_LOG("UFFDIO_API: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int uffd_register(int fd, const void *addr, unsigned long len,
			 uint64_t mode)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (unsigned long)addr;
	reg.range.len = len;
	reg.mode = mode;
	return ioctl(fd, UFFDIO_REGISTER, &reg);
}

static int uffd_unregister(int fd, const void *addr, unsigned long len)
{
	struct uffdio_range range = { (unsigned long)addr, len };

	return ioctl(fd, UFFDIO_UNREGISTER, &range);
}

/*
 * A normal anonymous mapping registers, and UFFDIO_COPY fills a page of
 * it: userfaultfd itself works, so the EINVALs over large pages are the
 * large-page check and not a kernel without userfaultfd.
 */
static void uffd_works_on_normal_memory(int fd)
{
	static uint32_t src[1024] __attribute__((aligned(4096))) = { 0x7001 };
	struct uffdio_register reg;
	struct uffdio_copy copy;
	char *anon;

	anon = mmap(NULL, NB, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(anon != MAP_FAILED);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (unsigned long)anon;
	reg.range.len = NB;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(ioctl(fd, UFFDIO_REGISTER, &reg), 0);
	EXPECT_TRUE(reg.ioctls & (1ULL << _UFFDIO_COPY));
	EXPECT_EQ(vma_flag(anon, "um"), 1);

	memset(&copy, 0, sizeof(copy));
	copy.dst = (unsigned long)anon;
	copy.src = (unsigned long)src;
	copy.len = 4096;
	EXPECT_EQ(ioctl(fd, UFFDIO_COPY, &copy), 0);
	EXPECT_EQ(copy.copy, 4096);
	/* Only touch the page if it is there: a missing one would block. */
	if (copy.copy == 4096)
		EXPECT_EQ(*(volatile uint32_t *)anon, 0x7001);
	EXPECT_EQ(uffd_unregister(fd, anon, NB), 0);
	munmap(anon, NB);
}

/*
 * Two large pages of every kind (keyed under key, filled with seed + k);
 * refused() tries its calls on each, and they change nothing: the data
 * stays, no page leaves the pool. With a userfaultfd fd (>= 0), it still
 * works on normal memory before the mappings go.
 */
static void refused_over_every_kind(int key, uint32_t seed,
				    void (*refused)(int fd, char *p,
						    unsigned long lp),
				    int fd)
{
	unsigned long lp = lp_size();
	struct every_kind e = { .len = { 2 * lp, 2 * lp, 2 * lp } };
	long nfree = lp_nfree();
	int k;

	map_every_kind(&e, key, seed);
	for (k = 0; k < NKINDS; k++)
		refused(fd, LP_PTR(e.r[k]), lp);
	expect_every_kind_intact(&e);
	EXPECT_EQ(lp_nfree(), nfree - 3 * 2);
	if (fd >= 0)
		uffd_works_on_normal_memory(fd);
	unmap_every_kind(&e);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * userfaultfd hands page faults to user space, and only for memory whose
 * faults it knows how to resolve (anonymous, shmem, hugetlbfs). A
 * large-page mapping never faults (it is mapped whole when it is made)
 * and UFFDIO_COPY/ZEROPAGE into it would put 4 KiB pages where a PSE
 * entry must be: registration must fail with EINVAL before any vma is
 * changed, for the whole mapping and for any part of it.
 */
static void uffd_missing_refused(int fd, char *p, unsigned long lp)
{
	EXPECT_ERRNO(uffd_register(fd, p, 2 * lp,
				   UFFDIO_REGISTER_MODE_MISSING), EINVAL);
	EXPECT_ERRNO(uffd_register(fd, p + lp, 4096,
				   UFFDIO_REGISTER_MODE_MISSING), EINVAL);
	EXPECT_ERRNO(uffd_register(fd, p + lp - 4096, 8192,
				   UFFDIO_REGISTER_MODE_MISSING), EINVAL);
	EXPECT_EQ(vma_flag(p, "um"), 0);
}

TEST(uffd_register_missing_over_large_pages_einval)
{
	int fd = uffd_open();

	ASSERT_GE(fd, 0);
	refused_over_every_kind(7001, 0x7001, uffd_missing_refused, fd);
	close(fd);
}

/*
 * Write-protect tracking needs per-PTE uffd-wp bits that a PSE entry does
 * not have: MODE_WP (alone or with MISSING) must fail with EINVAL too.
 * (i386 has no uffd-wp at all, HAVE_ARCH_USERFAULTFD_WP being x86-64
 * only, so here this holds for any memory; the test guards the large-page
 * range should that change.)
 */
static void uffd_wp_refused(int fd, char *p, unsigned long lp)
{
	EXPECT_ERRNO(uffd_register(fd, p, 2 * lp, UFFDIO_REGISTER_MODE_WP),
		     EINVAL);
	EXPECT_ERRNO(uffd_register(fd, p, 2 * lp,
				   UFFDIO_REGISTER_MODE_MISSING |
				   UFFDIO_REGISTER_MODE_WP), EINVAL);
	EXPECT_ERRNO(uffd_register(fd, p + 4096, 4096,
				   UFFDIO_REGISTER_MODE_WP), EINVAL);
}

TEST(uffd_register_wp_over_large_pages_einval)
{
	int fd = uffd_open();

	ASSERT_GE(fd, 0);
	refused_over_every_kind(7002, 0x7002, uffd_wp_refused, fd);
	close(fd);
}

/*
 * A range that starts in a normal mapping and runs into a large-page one
 * is refused as a whole: the check covers every vma before any is
 * registered, so the normal part is not left half-registered either.
 */
TEST(uffd_register_from_normal_mapping_into_large_pages_einval)
{
	unsigned long lp = lp_size(), len = lp, a;
	long nfree = lp_nfree(), r;
	char *below;
	int fd;

	fd = uffd_open();
	ASSERT_GE(fd, 0);
	a = lp_unmapped_range(len + 2 * lp, lp);
	ASSERT_TRUE(a != 0);
	a += lp;
	below = mmap((void *)(a - NB), NB, RW,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_TRUE(below == (char *)(a - NB));
	memset(below, 0x5a, NB);
	r = lpsys_get(a, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ((unsigned long)r, a);
	lp_fill(LP_PTR(r), len, 0x7003);

	EXPECT_ERRNO(uffd_register(fd, below, NB + len,
				   UFFDIO_REGISTER_MODE_MISSING), EINVAL);
	EXPECT_ERRNO(uffd_register(fd, below + NB - 4096, 8192,
				   UFFDIO_REGISTER_MODE_MISSING), EINVAL);
	EXPECT_EQ(vma_flag(below, "um"), 0);
	EXPECT_EQ(vma_flag(LP_PTR(r), "um"), 0);
	/* The normal part alone registers. */
	EXPECT_EQ(uffd_register(fd, below, NB, UFFDIO_REGISTER_MODE_MISSING), 0);
	EXPECT_EQ(vma_flag(below, "um"), 1);
	EXPECT_EQ(uffd_unregister(fd, below, NB), 0);

	EXPECT_EQ(below[NB - 1], 0x5a);
	EXPECT_TRUE(lp_intact(r, len, 0x7003));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	munmap(below, NB);
	close(fd);
}

/* ---- KSM and compaction ---- */

/*
 * KSM merges identical pages by replacing PTEs with a shared read-only
 * page; a pool page has no PTE and must never be shared with, or freed
 * to, anything else. MADV_MERGEABLE over it must fail with EINVAL (not be
 * silently ignored, as it is for other VM_SPECIAL mappings), whole or in
 * part.
 */
static void mergeable_refused(int fd, char *p, unsigned long lp)
{
	(void)fd;
	EXPECT_ERRNO(madvise(p, 2 * lp, MADV_MERGEABLE), EINVAL);
	EXPECT_ERRNO(madvise(p + lp, 4096, MADV_MERGEABLE), EINVAL);
	EXPECT_EQ(vma_flag(p, "mg"), 0);
}

TEST(ksm_madvise_mergeable_on_large_pages_einval)
{
	refused_over_every_kind(7004, 0x7004, mergeable_refused, -1);
}

#define KSM_PAGES 64

static void ksm_compaction_body(void)
{
	unsigned long lp = lp_size(), i;
	struct every_kind e = { .len = { 2 * lp, 2 * lp, 2 * lp } };
	long nfree = lp_nfree(), scans0, scans = -1;
	char *anon;
	int k;

	/* Work for ksmd: identical anonymous pages it can merge. */
	anon = mmap(NULL, KSM_PAGES * 4096, RW, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_TRUE(anon != MAP_FAILED);
	memset(anon, 0x5a, KSM_PAGES * 4096);
	ASSERT_EQ(madvise(anon, KSM_PAGES * 4096, MADV_MERGEABLE), 0);

	map_every_kind(&e, 7005, 0x7005);
	EXPECT_EQ(lp_nfree(), nfree - 3 * 2);

	scans0 = read_long(KSM "full_scans");
	ASSERT_GE(scans0, 0);
	for (k = 0; k < 3; k++)
		EXPECT_EQ(write_text("/proc/sys/vm/compact_memory", "1"), 0);
	/* Two whole passes of ksmd over every mergeable mm, ours included. */
	for (i = 0; i < 200; i++) {
		scans = read_long(KSM "full_scans");
		if (scans >= scans0 + 2)
			break;
		usleep(100000);
	}
	if (scans < scans0 + 2)
		TH_LOG("ksmd did %ld full scans in 20 s (pages_sharing %ld)",
		       scans - scans0, read_long(KSM "pages_sharing"));
	EXPECT_GE(scans, scans0 + 2);

	expect_every_kind_intact(&e);
	EXPECT_EQ(lp_nfree(), nfree - 3 * 2);
	for (i = 0; i < KSM_PAGES * 4096; i += 4096)
		EXPECT_EQ(anon[i + 100], 0x5a);

	/* Unmerging walks the same mm: still nothing to do with large pages. */
	EXPECT_EQ(write_text(KSM "run", "2"), 0);
	expect_every_kind_intact(&e);
	EXPECT_EQ(lp_nfree(), nfree - 3 * 2);

	unmap_every_kind(&e);
	EXPECT_EQ(lp_nfree(), nfree);
	munmap(anon, KSM_PAGES * 4096);
}

/*
 * ksmd scans the mms of mergeable processes and compaction scans every
 * physical page looking for movable ones. Pool pages are neither on the
 * LRU nor movable: with ksmd running hard and three full compactions of
 * memory, the private, shared and keyed mappings keep their data and
 * the pool its count.
 */
TEST(ksm_and_compaction_leave_large_pages_intact)
{
	int ok = 1;

	undo_arm();
	undo.ksm_pages = read_long(KSM "pages_to_scan");
	undo.ksm_sleep = read_long(KSM "sleep_millisecs");
	ASSERT_GE(undo.ksm_pages, 0);
	ASSERT_GE(undo.ksm_sleep, 0);
	undo.ksm = 1;
	if (write_text(KSM "pages_to_scan", "1000") ||
	    write_text(KSM "sleep_millisecs", "20") ||
	    write_text(KSM "run", "1")) {
		TH_LOG("cannot start KSM: %s", strerror(errno));
		ok = 0;
	}
	if (ok)
		run_body(ksm_compaction_body);
	EXPECT_EQ(undo_all(1), 0);
	EXPECT_TRUE(ok);
}

/* ---- memory cgroups ---- */

/*
 * body in a child (run_body()) in a new cgroup with memory.max and
 * memory.swap.max as given; the cgroup goes (undo_all()) whatever the
 * body did, and a cgroup that cannot be made fails the test.
 */
static void run_in_cgroup(const char *max, const char *swap_max,
			  void (*body)(void))
{
	int ok;

	undo_arm();
	ok = !cg_create(max, swap_max);
	if (ok)
		run_body(body);
	EXPECT_EQ(undo_all(1), 0);
	EXPECT_TRUE(ok);
}

static void memcg_nocharge_body(void)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), c0, c1;
	struct lp_peer p;
	int st;

	if (lp_peer_fork(&p) == 0) {
		struct every_kind e = { .len = { 4 * lp, lp, lp } };
		int k;

		ASSERT_EQ(cg_enter(), 0);
		lp_peer_send(&p, cg_read("memory.current"));
		map_every_kind(&e, 7010, 0x7010);
		lp_peer_send(&p, cg_read("memory.current"));
		lp_peer_recv(&p);
		for (k = 0; k < NKINDS; k++) {
			EXPECT_TRUE(lp_intact(e.r[k], e.len[k], 0x7010 + k));
			EXPECT_EQ(unmap_kind(k, e.r[k]), 0);
		}
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	c0 = lp_peer_recv(&p);
	c1 = lp_peer_recv(&p);
	ASSERT_GE(c0, 0);
	/* 6 pages (12 or 24 MiB) mapped under memory.max = 8M. */
	if (c1 - c0 >= (long)MIB(1))
		TH_LOG("memory.current went from %ld to %ld", c0, c1);
	EXPECT_TRUE(c1 - c0 < (long)MIB(1));
	EXPECT_EQ(lp_nfree(), nfree - 6);
	EXPECT_EQ(cg_value(undo.cg, "memory.events", "oom_kill"), 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(7010, lp));
}

/*
 * Pool pages are not charged to the mapper's memcg (see the top of this
 * file): a process in a cgroup with memory.max = 8M maps and fills more
 * than 8 MiB of large pages (private, shared and keyed), and its
 * memory.current grows by the vmas and page tables only, under 1 MiB.
 */
TEST(memcg_large_pages_not_charged_to_mapper)
{
	run_in_cgroup("8M", "0", memcg_nocharge_body);
}

/*
 * get_large_pages(MAP_PRIVATE | LP_COPY_ON_FORK) with the pool empty:
 * fork() copies the segment into normal pages, which are ordinary
 * memory of the forker's cgroup. They must be charged to it, not to
 * the root (the child is not in its cgroup until fork() returns), or a
 * tenant at its misc or memlock limit escapes memory.max by a heap at
 * every fork.
 */
#define FORK_COPY MIB(8)

static void memcg_fork_copy_body(void)
{
	unsigned long len = FORK_COPY;
	long nfree = lp_nfree(), r, rest = 0, c0, c1, c2, a0, a1, a2;
	struct lp_peer p;
	int st;

	ASSERT_EQ(cg_enter(), 0);
	r = lpsys_get(0, len, RW, MAP_PRIVATE | LP_COPY_ON_FORK);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x7030);
	if (lp_nfree() > 0) {
		rest = lpsys_get(0, lp_nfree() * lp_size(), RW, MAP_PRIVATE);
		ASSERT_TRUE(LP_OK(rest));
	}
	ASSERT_EQ(lp_nfree(), 0);
	c0 = cg_read("memory.current");
	a0 = cg_value(undo.cg, "memory.stat", "anon");
	if (lp_peer_fork(&p) == 0) {
		/* Normal pages, with the parent's data. */
		EXPECT_EQ(status_kb(0, "LargePages:"), 0);
		EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x7030));
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	c1 = cg_read("memory.current");
	a1 = cg_value(undo.cg, "memory.stat", "anon");
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	c2 = cg_read("memory.current");
	a2 = cg_value(undo.cg, "memory.stat", "anon");
	TH_LOG("memory.current %ld, %ld with the child, %ld after it; anon %ld, %ld, %ld",
	       c0, c1, c2, a0, a1, a2);
	EXPECT_GE(c1 - c0, (long)len);
	EXPECT_GE(a1 - a0, (long)len);
	/* The child's exit gives it back. */
	EXPECT_LT(a2 - a0, (long)len / 2);
	EXPECT_EQ(cg_value(undo.cg, "memory.events", "oom_kill"), 0);
	if (rest)
		ASSERT_EQ(lpsys_free(rest), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

TEST(memcg_fork_copy_into_normal_pages_is_charged_to_the_forker)
{
	run_in_cgroup("max", "max", memcg_fork_copy_body);
}

#define OOM_ANON MIB(64)

static void memcg_oom_body(void)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long nfree = lp_nfree(), seg;
	struct lp_peer p;
	int st;

	/* The test process, outside the cgroup, creates the segment. */
	seg = lpsys_share(7011, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(seg));
	lp_fill(LP_PTR(seg), len, 0x7011);

	if (lp_peer_fork(&p) == 0) {
		unsigned long off;
		long s, r;
		char *anon;

		/* Be the victim whatever the runner's own setting is. */
		write_text("/proc/self/oom_score_adj", "0");
		ASSERT_EQ(cg_enter(), 0);
		s = lpsys_share(7011, 0, len, RW, 0);
		ASSERT_TRUE(LP_OK(s));
		ASSERT_TRUE(lp_check(LP_PTR(s), len, 0x7011));
		lp_fill(LP_PTR(s), len, 0x7111);
		r = lpsys_get(0, lp, RW, MAP_PRIVATE);
		ASSERT_TRUE(LP_OK(r));
		lp_fill(LP_PTR(r), lp, 0x7211);
		lp_peer_send(&p, 1);
		lp_peer_recv(&p);

		anon = mmap(NULL, OOM_ANON, RW, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		ASSERT_TRUE(anon != MAP_FAILED);
		madvise(anon, OOM_ANON, MADV_NOHUGEPAGE);
		for (off = 0; off < OOM_ANON; off += 4096)
			*(volatile char *)(anon + off) = 1;
		_exit(3);	/* still alive: memory.max did not hold */
	}
	ASSERT_GT(p.pid, 0);
	ASSERT_EQ(lp_peer_recv(&p), 1);
	EXPECT_EQ(lp_nfree(), nfree - 3);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	if (!CHILD_SIGNALED(st, SIGKILL))
		TH_LOG("child status %#x (exit 3: it was not killed)", st);
	EXPECT_TRUE(CHILD_SIGNALED(st, SIGKILL));
	EXPECT_GE(cg_value(undo.cg, "memory.events", "oom_kill"), 1);

	/* What the victim wrote stays; its private page came back. */
	EXPECT_TRUE(lp_intact(seg, len, 0x7111));
	EXPECT_EQ(lp_settle_nfree(nfree - 2), nfree - 2);
	ASSERT_EQ(lpsys_unshare(seg), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(7011, len));
}

/*
 * The memcg OOM killer picks a process that maps large pages (a private
 * page, an attached keyed segment) and kills it. Its exit, with the OOM
 * reaper running beside it, must release them exactly like any exit: the
 * private page goes back to the pool, the segment (still held by a
 * process outside the cgroup) keeps the data the victim wrote.
 */
TEST(memcg_oom_kill_of_mapper_keeps_segment_data)
{
	run_in_cgroup("8M", "0", memcg_oom_body);
}

/* ---- io_uring ---- */

struct ring {
	int fd;
	struct io_uring_params p;
	void *sq, *cq;
	size_t sq_len, cq_len, sqes_len;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

/* io_uring_setup() and the three (or two) ring mappings. */
static void ring_setup(struct ring *r, unsigned int entries)
{
	memset(r, 0, sizeof(*r));
	r->fd = syscall(__NR_io_uring_setup, entries, &r->p);
	ASSERT_GE(r->fd, 0);
	r->sq_len = r->p.sq_off.array + r->p.sq_entries * sizeof(unsigned int);
	r->cq_len = r->p.cq_off.cqes +
		    r->p.cq_entries * sizeof(struct io_uring_cqe);
	if (r->p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_len > r->sq_len)
			r->sq_len = r->cq_len;
		r->cq_len = r->sq_len;
	}
	r->sq = mmap(NULL, r->sq_len, RW, MAP_SHARED | MAP_POPULATE, r->fd,
		     (off_t)IORING_OFF_SQ_RING);
	ASSERT_TRUE(r->sq != MAP_FAILED);
	if (r->p.features & IORING_FEAT_SINGLE_MMAP) {
		r->cq = r->sq;
	} else {
		r->cq = mmap(NULL, r->cq_len, RW, MAP_SHARED | MAP_POPULATE,
			     r->fd, (off_t)IORING_OFF_CQ_RING);
		ASSERT_TRUE(r->cq != MAP_FAILED);
	}
	r->sqes_len = r->p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, RW, MAP_SHARED | MAP_POPULATE, r->fd,
		       (off_t)IORING_OFF_SQES);
	ASSERT_TRUE(r->sqes != MAP_FAILED);

	r->sq_head = (unsigned int *)((char *)r->sq + r->p.sq_off.head);
	r->sq_tail = (unsigned int *)((char *)r->sq + r->p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq + r->p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq + r->p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq + r->p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq + r->p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq + r->p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq + r->p.cq_off.cqes);
}

static void ring_close(struct ring *r)
{
	munmap(r->sqes, r->sqes_len);
	if (r->cq != r->sq)
		munmap(r->cq, r->cq_len);
	munmap(r->sq, r->sq_len);
	close(r->fd);
}

/*
 * Submit one request and wait for its completion; 0 with the CQE's res
 * in *res, or -1 if io_uring_enter() failed.
 */
static int ring_do(struct ring *r, int op, int fd, void *buf,
		   unsigned int len, uint64_t off, int *res)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	struct io_uring_cqe *cqe;
	long ret;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->fd = fd;
	sqe->addr = (unsigned long)buf;
	sqe->len = len;
	sqe->off = off;
	sqe->user_data = 0x7020;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);

	do
		ret = syscall(__NR_io_uring_enter, r->fd, 1, 1,
			      IORING_ENTER_GETEVENTS, NULL, 0);
	while (ret < 0 && errno == EINTR);
	if (ret != 1) {
		TH_LOG("io_uring_enter: %ld (%s)", ret, strerror(errno));
		return -1;
	}
	head = *r->cq_head;
	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
		ret = syscall(__NR_io_uring_enter, r->fd, 0, 1,
			      IORING_ENTER_GETEVENTS, NULL, 0);
		if (ret < 0 && errno != EINTR) {
			TH_LOG("io_uring_enter (wait): %s", strerror(errno));
			return -1;
		}
	}
	cqe = &r->cqes[head & *r->cq_mask];
	if (cqe->user_data != 0x7020)
		TH_LOG("CQE for %#llx", (unsigned long long)cqe->user_data);
	*res = cqe->res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 0;
}

static long ring_register(struct ring *r, unsigned int op, void *arg,
			  unsigned int n)
{
	return syscall(__NR_io_uring_register, r->fd, op, arg, n);
}

#define IOLEN KIB(256)

/*
 * A file of len bytes holding the I/O pattern for seed, on / (ext4),
 * opened O_DIRECT. It is unlinked at once, so that nothing is left on
 * the disk whatever becomes of the test. -1 on failure.
 */
static int uring_file(unsigned long len, uint32_t seed)
{
	char path[64];
	char *buf;
	int fd, ok;

	snprintf(path, sizeof(path), "/lp-uring-%d", getpid());
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		TH_LOG("open(%s): %s", path, strerror(errno));
		return -1;
	}
	buf = mmap(NULL, len, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok = buf != MAP_FAILED;
	if (ok) {
		fillw(buf, len, seed);
		ok = write_all(fd, buf, len) == (ssize_t)len && !fsync(fd);
		munmap(buf, len);
	}
	close(fd);
	fd = ok ? open(path, O_RDWR | O_DIRECT) : -1;
	if (fd < 0)
		TH_LOG("writing %s or opening it O_DIRECT: %s", path,
		       strerror(errno));
	unlink(path);
	return fd;
}

/*
 * Does another process see the I/O pattern at offset at of the mapping?
 * A MAP_SHARED mapping through fork, a keyed segment by attaching its key
 * afresh.
 */
static int seen_by_other_process(int kind, long r, unsigned long len,
				 int key, unsigned long at, uint32_t seed)
{
	int st = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		const char *p = LP_PTR(r);
		long s = 0;
		int ok;

		if (kind == KEYED) {
			s = lpsys_share(key, 0, len, PROT_READ, 0);
			if (!LP_OK(s))
				_exit(3);
			p = LP_PTR(s);
		}
		ok = checkw(p + at, IOLEN, seed);
		if (kind == KEYED)
			lpsys_unshare(s);
		_exit(ok ? 0 : 2);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	if (!CHILD_EXITED(st, 0))
		TH_LOG("%s: the other process saw otherwise (status %#x)",
		       kind_name[kind], st);
	return CHILD_EXITED(st, 0);
}

/*
 * Registering a fixed buffer pins its pages for as long as the ring
 * lives. io_uring takes only anonymous, shmem and hugetlbfs memory; a
 * large-page mapping is backed by a pseudo file, so it must be refused
 * with EOPNOTSUPP, and the pins taken while checking must all be
 * dropped: the data stays, the ring stays usable, and every page goes
 * back to the pool when the mappings are freed.
 */
TEST(uring_register_buffers_large_pages_eopnotsupp)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	struct every_kind e = { .len = { len, len, len } };
	long nfree = lp_nfree();
	struct ring ring;
	struct iovec iov;
	char *anon;
	int k, res;

	ring_setup(&ring, 8);
	map_every_kind(&e, 7020, 0x7020);
	for (k = 0; k < NKINDS; k++) {
		iov.iov_base = LP_PTR(e.r[k]);
		iov.iov_len = len;
		EXPECT_ERRNO(ring_register(&ring, IORING_REGISTER_BUFFERS,
					   &iov, 1), EOPNOTSUPP);
		iov.iov_base = LP_PTR(e.r[k]) + lp - 4096;
		iov.iov_len = 8192;
		EXPECT_ERRNO(ring_register(&ring, IORING_REGISTER_BUFFERS,
					   &iov, 1), EOPNOTSUPP);
	}
	expect_every_kind_intact(&e);
	EXPECT_EQ(lp_nfree(), nfree - 3 * 2);

	/* The ring still works, and still takes an ordinary buffer. */
	ASSERT_EQ(ring_do(&ring, IORING_OP_NOP, -1, NULL, 0, 0, &res), 0);
	EXPECT_EQ(res, 0);
	anon = mmap(NULL, NB, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(anon != MAP_FAILED);
	iov.iov_base = anon;
	iov.iov_len = NB;
	EXPECT_EQ(ring_register(&ring, IORING_REGISTER_BUFFERS, &iov, 1), 0);
	EXPECT_EQ(ring_register(&ring, IORING_UNREGISTER_BUFFERS, NULL, 0), 0);
	munmap(anon, NB);
	ring_close(&ring);

	unmap_every_kind(&e);
	/* No pin was left behind: every page is back. */
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * An ordinary (not fixed) IORING_OP_READ pins the buffer's pages for the
 * I/O like O_DIRECT read() does, possibly from an io-wq worker thread
 * rather than the submitter. 256 KiB read from an ext4 file with
 * O_DIRECT into a buffer 4 KiB before a large-page boundary land exactly
 * there, in both pages, visible to every process that maps them.
 */
TEST(uring_read_odirect_into_large_pages_across_boundary)
{
	unsigned long lp = lp_size(), len = 2 * lp, at = lp - 4096;
	long nfree = lp_nfree(), r;
	struct ring ring;
	int fd, k, res;

	fd = uring_file(IOLEN, 0x7021);
	ASSERT_GE(fd, 0);
	ring_setup(&ring, 8);
	for (k = 0; k < NKINDS; k++) {
		r = map_kind(k, len, 7021, 0x7121 + k);
		ASSERT_TRUE(LP_OK(r));
		ASSERT_EQ(ring_do(&ring, IORING_OP_READ, fd, LP_PTR(r) + at,
				  IOLEN, 0, &res), 0);
		if (res != (int)IOLEN)
			TH_LOG("%s: read gave %d (%s)", kind_name[k], res,
			       res < 0 ? strerror(-res) : "short");
		EXPECT_EQ(res, (int)IOLEN);
		EXPECT_TRUE(checkw(LP_PTR(r) + at, IOLEN, 0x7021));
		/* Not a byte before or after it. */
		EXPECT_EQ(*(uint32_t *)(LP_PTR(r) + at - 4), 0);
		EXPECT_TRUE(lp_check_around(LP_PTR(r), len, 0x7121 + k, at,
					    IOLEN));
		if (k != PRIV)
			EXPECT_TRUE(seen_by_other_process(k, r, len, 7021, at,
							  0x7021));
		EXPECT_EQ(lp_nfree(), nfree - 2);
		ASSERT_EQ(unmap_kind(k, r), 0);
	}
	ring_close(&ring);
	close(fd);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * The other direction: IORING_OP_WRITE with O_DIRECT from a large-page
 * buffer across a boundary writes exactly its bytes to the file (read
 * back with pread()), and leaves the buffer as it was.
 */
TEST(uring_write_odirect_from_large_pages_across_boundary)
{
	unsigned long lp = lp_size(), len = 2 * lp, at = lp - 4096;
	long nfree = lp_nfree(), r;
	struct ring ring;
	char *buf;
	int fd, k, res;

	fd = uring_file(NKINDS * IOLEN, 0x5eed);
	ASSERT_GE(fd, 0);
	/* Page-aligned, for pread() on the O_DIRECT descriptor. */
	buf = mmap(NULL, IOLEN, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(buf != MAP_FAILED);
	ring_setup(&ring, 8);
	for (k = 0; k < NKINDS; k++) {
		r = map_kind(k, len, 7022, 0x7122 + k);
		ASSERT_TRUE(LP_OK(r));
		fillw(LP_PTR(r) + at, IOLEN, 0x7022 + k);
		ASSERT_EQ(ring_do(&ring, IORING_OP_WRITE, fd, LP_PTR(r) + at,
				  IOLEN, k * IOLEN, &res), 0);
		if (res != (int)IOLEN)
			TH_LOG("%s: write gave %d (%s)", kind_name[k], res,
			       res < 0 ? strerror(-res) : "short");
		EXPECT_EQ(res, (int)IOLEN);
		memset(buf, 0, IOLEN);
		EXPECT_EQ(pread(fd, buf, IOLEN, k * IOLEN), (ssize_t)IOLEN);
		EXPECT_TRUE(checkw(buf, IOLEN, 0x7022 + k));
		EXPECT_TRUE(checkw(LP_PTR(r) + at, IOLEN, 0x7022 + k));
		EXPECT_TRUE(lp_check_around(LP_PTR(r), len, 0x7122 + k, at,
					    IOLEN));
		EXPECT_EQ(lp_nfree(), nfree - 2);
		ASSERT_EQ(unmap_kind(k, r), 0);
	}
	ring_close(&ring);
	munmap(buf, IOLEN);
	close(fd);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* ---- swap ---- */

#define SWAP_SIZE MIB(64)
#define SWAP_ANON MIB(64)

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/*
 * What mkswap writes, for a file of size bytes: zeros, then in page 0
 * the version 1 header (version, last page, no bad pages) at byte 1024
 * and "SWAPSPACE2" in its last 10 bytes. Written with write(), so that
 * the file has no holes (swapon() refuses holes). 0, or -1 logged.
 */
static int make_swapfile(const char *path, unsigned long size)
{
	static unsigned char zeros[MIB(1)];
	static unsigned char head[4096];
	unsigned long done;
	int fd, ok = 1;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		TH_LOG("open(%s): %s", path, strerror(errno));
		return -1;
	}
	for (done = 0; ok && done < size; done += sizeof(zeros))
		ok = write_all(fd, (char *)zeros, sizeof(zeros)) ==
		     (ssize_t)sizeof(zeros);
	put_le32(head + 1024, 1);
	put_le32(head + 1028, size / 4096 - 1);
	put_le32(head + 1032, 0);
	memcpy(head + sizeof(head) - 10, "SWAPSPACE2", 10);
	ok = ok && pwrite(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
	     !fsync(fd) && !fchmod(fd, 0600);
	if (!ok)
		TH_LOG("writing %s: %s", path, strerror(errno));
	close(fd);
	return ok ? 0 : -1;
}

static void swap_body(void)
{
	unsigned long lp = lp_size();
	struct every_kind e = { .len = { 2 * lp, lp, lp } };
	long nfree = lp_nfree(), hold, swap_cur, swapfree0, swapfree1, lo, hi;
	struct lp_peer p;
	int st;

	map_every_kind(&e, 7030, 0x7030);
	hold = nfree - 4;
	EXPECT_EQ(lp_nfree(), hold);
	swapfree0 = meminfo("SwapFree:");

	if (lp_peer_fork(&p) == 0) {
		long mine, seg;
		char *anon;

		/*
		 * In the cgroup, with large pages of its own in the mm that
		 * reclaim walks: a private page, the keyed segment attached,
		 * the parent's MAP_SHARED mapping inherited.
		 */
		ASSERT_EQ(cg_enter(), 0);
		mine = map_kind(PRIV, lp, 0, 0x7330);
		ASSERT_TRUE(LP_OK(mine));
		seg = lpsys_share(7030, 0, lp, RW, 0);
		ASSERT_TRUE(LP_OK(seg));
		lp_peer_send(&p, 1);

		anon = mmap(NULL, SWAP_ANON, RW, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		ASSERT_TRUE(anon != MAP_FAILED);
		madvise(anon, SWAP_ANON, MADV_NOHUGEPAGE);
		lp_fill(anon, SWAP_ANON, 0x7333);
		lp_peer_send(&p, cg_read("memory.swap.current"));
		lp_peer_recv(&p);

		EXPECT_TRUE(lp_check(anon, SWAP_ANON, 0x7333));
		EXPECT_TRUE(lp_intact(mine, lp, 0x7330));
		EXPECT_TRUE(lp_intact(seg, lp, 0x7030 + KEYED));
		EXPECT_TRUE(lp_intact(e.r[SHRD], e.len[SHRD], 0x7030 + SHRD));
		lp_peer_send(&p, !harness_failed);
		EXPECT_EQ(lpsys_free(mine), 0);
		EXPECT_EQ(lpsys_unshare(seg), 0);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	ASSERT_EQ(lp_peer_recv(&p), 1);
	/* From here the child holds one page more; nothing else moves. */
	lo = hi = hold - 1;
	swap_cur = recv_sampling(&p, &lo, &hi);
	swapfree1 = meminfo("SwapFree:");
	if (swap_cur <= 0 && swapfree1 >= swapfree0)
		TH_LOG("no swap used: memory.swap.current %ld, SwapFree %ld -> %ld kB",
		       swap_cur, swapfree0, swapfree1);
	EXPECT_TRUE(swap_cur > 0 || swapfree1 < swapfree0);
	lp_peer_send(&p, 0);
	EXPECT_EQ(recv_sampling(&p, &lo, &hi), 1);
	if (lo != hold - 1 || hi != hold - 1)
		TH_LOG("LargePages_Free moved between %ld and %ld (expected %ld)",
		       lo, hi, hold - 1);
	EXPECT_EQ(lo, hold - 1);
	EXPECT_EQ(hi, hold - 1);

	st = lp_peer_wait(&p);
	if (WIFSIGNALED(st))
		TH_LOG("the child was killed by signal %d (oom_kill %ld)",
		       WTERMSIG(st), cg_value(undo.cg, "memory.events", "oom_kill"));
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_settle_nfree(hold), hold);
	expect_every_kind_intact(&e);
	unmap_every_kind(&e);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(7030, lp));
}

/*
 * Reclaim to swap scans a memcg's LRU lists and (MGLRU) walks the page
 * tables of its processes. Pool pages are on no LRU and must be skipped
 * by the walk: a process in a cgroup with memory.max = 16M that maps
 * large pages writes 64 MiB of anonymous memory, which goes to a swap
 * file and comes back intact (no OOM kill), while its large pages and
 * the test's own (private, shared, keyed) keep their data and
 * LargePages_Free does not move at any time.
 */
TEST(swap_reclaim_of_mapper_leaves_large_pages_intact)
{
	int ok;

	undo_arm();
	snprintf(undo.swapfile, sizeof(undo.swapfile), "/lp-swap-%d",
		 getpid());
	ok = !make_swapfile(undo.swapfile, SWAP_SIZE);
	if (ok && swapon(undo.swapfile, 0)) {
		TH_LOG("swapon(%s): %s", undo.swapfile, strerror(errno));
		ok = 0;
	}
	undo.swap_on = ok;
	ok = ok && !cg_create("16M", "max");
	if (ok)
		run_body(swap_body);
	EXPECT_EQ(undo_all(1), 0);
	EXPECT_TRUE(ok);
}
