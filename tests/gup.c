// SPDX-License-Identifier: GPL-2.0
/*
 * get_user_pages() and the user-copy paths on large-page memory: O_DIRECT,
 * process_vm_readv/writev, /proc/PID/mem, ptrace, futexes, pipes and
 * vmsplice.
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <time.h>
#include "lp.h"

#define KIB(n) ((n) * 1024UL)

/* The word at byte offset o of a pattern. */
static uint32_t pat(unsigned long o, uint32_t seed)
{
	return (uint32_t)((o / 4) * 2654435761u) ^ seed;
}

/* Put the pattern's bytes [from, from + len) in buf. */
static void fillw(char *buf, unsigned long from, unsigned long len,
		  uint32_t seed)
{
	unsigned long k;

	for (k = 0; k < len; k += 4)
		*(uint32_t *)(buf + k) = pat(from + k, seed);
}

/* Does buf hold the pattern's bytes [from, from + len)? */
static int checkw(const char *buf, unsigned long from, unsigned long len,
		  uint32_t seed)
{
	unsigned long k;
	uint32_t v;

	for (k = 0; k < len; k += 4) {
		v = *(const volatile uint32_t *)(buf + k);
		if (v != pat(from + k, seed)) {
			TH_LOG("pattern offset %#lx: %#x, expected %#x",
			       from + k, v, pat(from + k, seed));
			return 0;
		}
	}
	return 1;
}

/* An unlinked file for O_DIRECT on the root (ext4) file system. */
static int direct_file(void)
{
	static const char *const dirs[] = { "/var/tmp", "/root" };
	char path[64];
	unsigned int i;
	int fd;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/lp-gup-%d", dirs[i], getpid());
		unlink(path);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
		if (fd >= 0) {
			unlink(path);
			return fd;
		}
		TH_LOG("open(%s, O_DIRECT): %s", path, strerror(errno));
	}
	return -1;
}

TEST(gup_odirect_roundtrip_across_large_page_boundary)
{
	unsigned long lp = lp_size(), len = KIB(1024);
	unsigned long from = lp - KIB(512), to = lp - KIB(256);
	long src, dst;
	int fd;

	src = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(src));
	dst = lpsys_get(0, 2 * lp, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(dst));
	fd = direct_file();
	ASSERT_GE(fd, 0);

	fillw(LP_PTR(src) + from, from, len, 0x3000);
	ASSERT_EQ(pwrite(fd, LP_PTR(src) + from, len, 0), len);
	ASSERT_EQ(pread(fd, LP_PTR(dst) + to, len, 0), len);
	EXPECT_TRUE(checkw(LP_PTR(dst) + to, from, len, 0x3000));
	/* Nothing around the target was touched. */
	EXPECT_EQ(*(uint32_t *)(LP_PTR(dst) + to - 4), 0);
	EXPECT_EQ(*(uint32_t *)(LP_PTR(dst) + to + len), 0);

	close(fd);
	ASSERT_EQ(lpsys_free(src), 0);
	ASSERT_EQ(lpsys_free(dst), 0);
}

TEST(gup_odirect_whole_large_pages)
{
	unsigned long len = 2 * lp_size();
	long src, dst;
	int fd;

	src = lpsys_get(0, len, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(src));
	dst = lpsys_share(3000, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(dst));
	fd = direct_file();
	ASSERT_GE(fd, 0);

	fillw(LP_PTR(src), 0, len, 0x3001);
	ASSERT_EQ(pwrite(fd, LP_PTR(src), len, 0), len);
	ASSERT_EQ(pread(fd, LP_PTR(dst), len, 0), len);
	EXPECT_TRUE(checkw(LP_PTR(dst), 0, len, 0x3001));
	/* And back out of the keyed segment into the private one. */
	memset(LP_PTR(src), 0, len);
	ASSERT_EQ(pwrite(fd, LP_PTR(dst), len, len), len);
	ASSERT_EQ(pread(fd, LP_PTR(src), len, len), len);
	EXPECT_TRUE(checkw(LP_PTR(src), 0, len, 0x3001));

	close(fd);
	ASSERT_EQ(lpsys_free(src), 0);
	ASSERT_EQ(lpsys_unshare(dst), 0);
}

TEST(gup_process_vm_readv_of_parent)
{
	unsigned long lp = lp_size(), len = KIB(256), from = lp - KIB(128);
	long r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	int st;
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	fillw(LP_PTR(r) + from, from, len, 0x3002);
	pid = fork();
	if (pid == 0) {
		/* Not inherited (MAP_PRIVATE): read it from the parent. */
		static char buf[KIB(256)];
		struct iovec local = { buf, len };
		struct iovec remote = { LP_PTR(r) + from, len };

		ASSERT_EQ(process_vm_readv(getppid(), &local, 1, &remote, 1, 0),
			  len);
		ASSERT_TRUE(checkw(buf, from, len, 0x3002));
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(gup_process_vm_writev_into_parent)
{
	unsigned long lp = lp_size(), len = KIB(256), from = lp - KIB(64);
	long r = lpsys_share(3003, 0, 2 * lp, RW, IPC_CREAT | 0600);
	int st;
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	pid = fork();
	if (pid == 0) {
		static char buf[KIB(256)];
		struct iovec local = { buf, len };
		struct iovec remote = { LP_PTR(r) + from, len };

		/* Write via the parent's pid, not the inherited mapping. */
		fillw(buf, from, len, 0x3003);
		ASSERT_EQ(process_vm_writev(getppid(), &local, 1, &remote, 1, 0),
			  len);
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(checkw(LP_PTR(r) + from, from, len, 0x3003));
	EXPECT_EQ(*(uint32_t *)(LP_PTR(r) + from - 4), 0);
	ASSERT_EQ(lpsys_unshare(r), 0);
}

TEST(gup_proc_pid_mem_read_and_write)
{
	unsigned long lp = lp_size(), from = lp - 4096;
	uint32_t val = 0xdeadbeef;
	static char buf[8192];
	struct lp_peer p;
	char path[64];
	long addr;
	int fd, st;

	if (lp_peer_fork(&p) == 0) {
		long r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);

		ASSERT_TRUE(LP_OK(r));
		fillw(LP_PTR(r), 0, 2 * lp, 0x3004);
		lp_peer_send(&p, r);
		lp_peer_recv(&p);
		ASSERT_EQ(*(volatile uint32_t *)(LP_PTR(r) + lp + 100),
			  0xdeadbeef);
		ASSERT_TRUE(checkw(LP_PTR(r) + lp + 104, lp + 104, 4096, 0x3004));
		ASSERT_EQ(lpsys_free(r), 0);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	addr = lp_peer_recv(&p);
	snprintf(path, sizeof(path), "/proc/%d/mem", p.pid);
	fd = open(path, O_RDWR | O_LARGEFILE);
	ASSERT_GE(fd, 0);
	/* User addresses above 2 GiB: a 32-bit off_t would be negative. */
	ASSERT_EQ(pread64(fd, buf, sizeof(buf),
			  (off64_t)(unsigned long)(addr + from)), sizeof(buf));
	EXPECT_TRUE(checkw(buf, from, sizeof(buf), 0x3004));
	ASSERT_EQ(pwrite64(fd, &val, sizeof(val),
			   (off64_t)(unsigned long)(addr + lp + 100)),
		  sizeof(val));
	close(fd);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

TEST(gup_ptrace_peek_and_poke)
{
	unsigned long lp = lp_size();
	struct lp_peer p;
	long addr, w;
	int st;

	if (lp_peer_fork(&p) == 0) {
		long r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);

		ASSERT_TRUE(LP_OK(r));
		fillw(LP_PTR(r), 0, 2 * lp, 0x3005);
		ASSERT_EQ(ptrace(PTRACE_TRACEME, 0, NULL, NULL), 0);
		lp_peer_send(&p, r);
		raise(SIGSTOP);
		ASSERT_EQ(*(volatile uint32_t *)(LP_PTR(r) + lp + 8), 0x600dcafe);
		ASSERT_EQ(lpsys_free(r), 0);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	addr = lp_peer_recv(&p);
	ASSERT_EQ(waitpid(p.pid, &st, 0), p.pid);
	ASSERT_TRUE(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);

	errno = 0;
	w = ptrace(PTRACE_PEEKDATA, p.pid, (void *)(addr + 4), NULL);
	EXPECT_EQ(errno, 0);
	EXPECT_EQ((uint32_t)w, pat(4, 0x3005));
	errno = 0;
	w = ptrace(PTRACE_PEEKDATA, p.pid, (void *)(addr + lp + 8), NULL);
	EXPECT_EQ(errno, 0);
	EXPECT_EQ((uint32_t)w, pat(lp + 8, 0x3005));
	EXPECT_EQ(ptrace(PTRACE_POKEDATA, p.pid, (void *)(addr + lp + 8),
			 (void *)0x600dcafeUL), 0);
	errno = 0;
	w = ptrace(PTRACE_PEEKDATA, p.pid, (void *)(addr + lp + 8), NULL);
	EXPECT_EQ((uint32_t)w, 0x600dcafe);

	ASSERT_EQ(ptrace(PTRACE_CONT, p.pid, NULL, NULL), 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
}

static long futex(volatile uint32_t *uaddr, int op, uint32_t val,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/*
 * Wait for *word to leave 0; 0 if it became 1 through a wakeup, 2 if a
 * wait timed out (a wakeup lost: the two sides disagree on the key).
 */
static int futex_waiter(volatile uint32_t *word, volatile uint32_t *ready,
			int op)
{
	struct timespec ts = { 5, 0 };

	__atomic_store_n(ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == 0)
		if (futex(word, op, 0, &ts) && errno == ETIMEDOUT)
			return 2;
	return *word == 1 ? 0 : 3;
}

/*
 * Wake the waiter. Returns 1 if a FUTEX_WAKE found it queued on word
 * (the waiter then re-checks, still sees 0 and waits again), then sets
 * the word and wakes for good.
 */
static int futex_waker(volatile uint32_t *word, volatile uint32_t *ready,
		       int op)
{
	int found = 0, i;

	for (i = 0; i < 5000 && !__atomic_load_n(ready, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	for (i = 0; i < 5000 && !found; i++) {
		if (futex(word, op, 1, NULL) == 1)
			found = 1;
		else
			usleep(1000);
	}
	__atomic_store_n(word, 1, __ATOMIC_SEQ_CST);
	futex(word, op, INT_MAX, NULL);
	return found;
}

TEST(gup_futex_between_processes_in_keyed_segment)
{
	unsigned long lp = lp_size();
	struct lp_peer p;
	int st, found;
	long r;

	/* Fork first: both sides attach the key themselves. */
	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);
		r = lpsys_share(3006, 0, 2 * lp, RW, 0);
		ASSERT_TRUE(LP_OK(r));
		st = futex_waiter((uint32_t *)(LP_PTR(r) + lp + 128),
				  (uint32_t *)(LP_PTR(r) + 64), FUTEX_WAIT);
		ASSERT_EQ(lpsys_unshare(r), 0);
		_exit(st);
	}
	ASSERT_GT(p.pid, 0);
	r = lpsys_share(3006, 0, 2 * lp, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_peer_send(&p, 0);
	found = futex_waker((uint32_t *)(LP_PTR(r) + lp + 128),
			    (uint32_t *)(LP_PTR(r) + 64), FUTEX_WAKE);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(found);
	if (!CHILD_EXITED(st, 0))
		TH_LOG("waiter status %#x (exit 2: its wait timed out)", st);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_unshare(r), 0);
}

TEST(gup_futex_between_processes_in_inherited_shared_mapping)
{
	unsigned long lp = lp_size();
	long r = lpsys_get(0, 2 * lp, RW, MAP_SHARED);
	int st, found;
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	pid = fork();
	if (pid == 0)
		_exit(futex_waiter((uint32_t *)(LP_PTR(r) + lp + 4092),
				   (uint32_t *)LP_PTR(r), FUTEX_WAIT));
	ASSERT_GT(pid, 0);
	found = futex_waker((uint32_t *)(LP_PTR(r) + lp + 4092),
			    (uint32_t *)LP_PTR(r), FUTEX_WAKE);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(found);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
}

static volatile uint32_t *thread_word, *thread_ready;

static void *waiter_thread(void *arg)
{
	(void)arg;
	return (void *)(long)futex_waiter(thread_word, thread_ready,
					  FUTEX_WAIT);
}

TEST(gup_futex_between_threads_in_private_mapping)
{
	unsigned long lp = lp_size();
	long r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	pthread_t t;
	void *ret;
	int found;

	ASSERT_TRUE(LP_OK(r));
	/* Not FUTEX_PRIVATE_FLAG: the key comes from the page itself. */
	thread_word = (uint32_t *)(LP_PTR(r) + lp + 256);
	thread_ready = (uint32_t *)(LP_PTR(r) + 256);
	ASSERT_EQ(pthread_create(&t, NULL, waiter_thread, NULL), 0);
	found = futex_waker(thread_word, thread_ready, FUTEX_WAKE);
	ASSERT_EQ(pthread_join(t, &ret), 0);
	EXPECT_TRUE(found);
	EXPECT_EQ((long)ret, 0);
	ASSERT_EQ(lpsys_free(r), 0);
}

/*
 * Process-shared futexes key on the page's file and offset: each 4 KiB
 * subpage of a large page must key by its own offset. Two waiters sit
 * on the same in-page offset of subpages 1 and 2; a wake at subpage 3
 * must find nobody, and each wake finds exactly its own waiter.
 */
static void subpage_waiter(int key, unsigned long off, struct lp_peer *p)
{
	unsigned long lp = lp_size();
	volatile uint32_t *w;
	struct timespec ts = { 10, 0 };
	long r;

	r = lpsys_share(key, 0, lp, RW, 0);
	ASSERT_TRUE(LP_OK(r));
	w = (uint32_t *)(LP_PTR(r) + off);
	lp_peer_send(p, 0);
	while (__atomic_load_n(w, __ATOMIC_SEQ_CST) == 0)
		if (futex(w, FUTEX_WAIT, 0, &ts) && errno == ETIMEDOUT)
			_exit(2);
	_exit(lpsys_unshare(r) ? 3 : 0);
}

TEST(gup_futex_keys_distinct_per_subpage)
{
	unsigned long lp = lp_size(), off[3] = { 4096 + 64, 8192 + 64,
						 12288 + 64 };
	volatile uint32_t *w[3];
	struct lp_peer p[2];
	int i, st;
	long r;

	r = lpsys_share(3010, 0, lp, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	for (i = 0; i < 3; i++)
		w[i] = (uint32_t *)(LP_PTR(r) + off[i]);
	for (i = 0; i < 2; i++) {
		if (lp_peer_fork(&p[i]) == 0)
			subpage_waiter(3010, off[i], &p[i]);
		ASSERT_GT(p[i].pid, 0);
		lp_peer_recv(&p[i]);
	}
	usleep(200000);		/* both are in FUTEX_WAIT by now */
	EXPECT_EQ(futex(w[2], FUTEX_WAKE, INT_MAX, NULL), 0);
	for (i = 1; i >= 0; i--) {
		__atomic_store_n(w[i], 1, __ATOMIC_SEQ_CST);
		EXPECT_EQ(futex(w[i], FUTEX_WAKE, INT_MAX, NULL), 1);
		st = lp_peer_wait(&p[i]);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
	}
	ASSERT_EQ(lpsys_unshare(r), 0);
}

/*
 * The same across large pages: the key of large page 1's first subpage
 * is not that of large page 0's second one (each page's offset counts
 * in 4 KiB units, the large page's index scaled to them).
 */
TEST(gup_futex_keys_distinct_across_large_pages)
{
	unsigned long lp = lp_size();
	volatile uint32_t *mine, *other;
	struct lp_peer p;
	int st;
	long r;

	r = lpsys_share(3011, 0, 2 * lp, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	mine = (uint32_t *)(LP_PTR(r) + lp + 64);
	other = (uint32_t *)(LP_PTR(r) + 4096 + 64);
	if (lp_peer_fork(&p) == 0) {
		volatile uint32_t *w;
		struct timespec ts = { 10, 0 };
		long q = lpsys_share(3011, 0, 2 * lp, RW, 0);

		ASSERT_TRUE(LP_OK(q));
		w = (uint32_t *)(LP_PTR(q) + lp + 64);
		lp_peer_send(&p, 0);
		while (__atomic_load_n(w, __ATOMIC_SEQ_CST) == 0)
			if (futex(w, FUTEX_WAIT, 0, &ts) && errno == ETIMEDOUT)
				_exit(2);
		_exit(lpsys_unshare(q) ? 3 : 0);
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	usleep(200000);		/* in FUTEX_WAIT by now */
	EXPECT_EQ(futex(other, FUTEX_WAKE, INT_MAX, NULL), 0);
	__atomic_store_n(mine, 1, __ATOMIC_SEQ_CST);
	EXPECT_EQ(futex(mine, FUTEX_WAKE, INT_MAX, NULL), 1);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_unshare(r), 0);
}

/*
 * A GUP pin that outlives the segment's file: process_vm_writev() into a
 * child that frees its mapping and exits meanwhile. The writes land or
 * fail; unpinning must not follow the pages' ->mapping into the freed
 * inode (the full suite boots with slub_debug=P,inode_cache, so such a
 * use would read poison and oops), and every page comes back.
 */
TEST(gup_process_vm_writev_racing_free)
{
	unsigned long lp = lp_size(), len = 4 * lp;
	long nfree = lp_nfree(), r;
	char *buf = malloc(len);
	struct iovec local, remote;
	struct lp_peer p;
	int i, j, st;

	ASSERT_TRUE(buf != NULL);
	memset(buf, 0x5a, len);
	for (i = 0; i < 12; i++) {
		if (lp_peer_fork(&p) == 0) {
			r = lpsys_get(0, len, RW, MAP_PRIVATE);
			ASSERT_TRUE(LP_OK(r));
			lp_peer_send(&p, r);
			lp_peer_recv(&p);
			usleep(1000 * i);
			_exit(lpsys_free(r) ? 2 : 0);
		}
		ASSERT_GT(p.pid, 0);
		r = lp_peer_recv(&p);
		local.iov_base = buf;
		local.iov_len = len;
		remote.iov_base = LP_PTR(r);
		remote.iov_len = len;
		lp_peer_send(&p, 0);
		for (j = 0; j < 40; j++)
			if (process_vm_writev(p.pid, &local, 1, &remote, 1, 0) < 0)
				break;
		st = lp_peer_wait(&p);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
	}
	free(buf);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

static volatile long racing_addr;

static void *free_soon(void *arg)
{
	usleep((long)arg);
	lpsys_free(racing_addr);
	return NULL;
}

/*
 * An O_DIRECT read into a mapping freed by another thread while the
 * read is in flight: the bio's pages are dirtied at completion, after
 * the segment's inode may be gone (see above). The read returns what it
 * returns; nothing oopses and every page comes back.
 */
TEST(gup_odirect_read_racing_free)
{
	unsigned long lp = lp_size(), len = 2 * lp;
	long nfree = lp_nfree();
	pthread_t t;
	char *src;
	int fd, i;

	fd = direct_file();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(posix_memalign((void **)&src, 4096, len), 0);
	memset(src, 0x3c, len);
	ASSERT_EQ(write_all(fd, src, len), (ssize_t)len);
	free(src);
	for (i = 0; i < 12; i++) {
		racing_addr = lpsys_get(0, len, RW, MAP_PRIVATE);
		ASSERT_TRUE(LP_OK(racing_addr));
		ASSERT_EQ(pthread_create(&t, NULL, free_soon,
					 (void *)(long)(500 * i)), 0);
		(void)!pread(fd, LP_PTR(racing_addr), len, 0);
		ASSERT_EQ(pthread_join(t, NULL), 0);
	}
	close(fd);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * Read-only stays read-only: a 0644 segment attached PROT_READ by
 * another user cannot be written through any GUP path, not even those
 * that force (/proc/PID/mem, ptrace): the mapping is shared, so a forced
 * write would land in the owner's pages.
 */
static void readonly_attacher(void *arg)
{
	unsigned long lp = lp_size();
	uint32_t val = 0xbadc0de;
	struct iovec local, remote;
	int fd, st;
	long r;
	pid_t t;

	(void)arg;
	become_nobody();
	prctl(PR_SET_DUMPABLE, 1);	/* our own /proc/self/mem, as nobody */
	r = lpsys_share(3020, 0, lp, PROT_READ, 0);
	ASSERT_TRUE(LP_OK(r));

	fd = open("/proc/self/mem", O_RDWR | O_LARGEFILE);
	ASSERT_GE(fd, 0);
	errno = 0;
	EXPECT_EQ(pwrite64(fd, &val, sizeof(val),
			   (off64_t)(unsigned long)(r + 64)), -1);
	EXPECT_EQ(errno, EIO);
	close(fd);

	local.iov_base = &val;
	local.iov_len = sizeof(val);
	remote.iov_base = LP_PTR(r) + 128;
	remote.iov_len = sizeof(val);
	EXPECT_ERRNO(process_vm_writev(getpid(), &local, 1, &remote, 1, 0),
		     EFAULT);

	fd = direct_file();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write_all(fd, LP_PTR(r), 65536), 65536);
	EXPECT_ERRNO(pread(fd, LP_PTR(r), 65536, 0), EFAULT);
	close(fd);

	/* A tracer (same user) pokes a tracee that attached read-only. */
	t = fork();
	if (t == 0) {
		long c = lpsys_share(3020, 0, lp, PROT_READ, 0);

		if (!LP_OK(c) || ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(2);
		raise(SIGSTOP);
		_exit(lp_check(LP_PTR(c), lp, 3020) ? 0 : 3);
	}
	ASSERT_GT(t, 0);
	ASSERT_EQ(waitpid(t, &st, 0), t);
	ASSERT_TRUE(WIFSTOPPED(st));
	errno = 0;
	EXPECT_EQ(ptrace(PTRACE_POKEDATA, t, LP_PTR(r) + 256,
			 (void *)0x600dcafeUL), -1);
	EXPECT_EQ(errno, EIO);
	ASSERT_EQ(ptrace(PTRACE_CONT, t, NULL, NULL), 0);
	ASSERT_EQ(waitpid(t, &st, 0), t);
	EXPECT_TRUE(CHILD_EXITED(st, 0));

	EXPECT_TRUE(lp_check(LP_PTR(r), lp, 3020));
	ASSERT_EQ(lpsys_unshare(r), 0);
	_exit(harness_failed);
}

TEST(gup_read_only_attach_cannot_be_written)
{
	unsigned long lp = lp_size();
	long r = lpsys_share(3020, 0, lp, RW, IPC_CREAT | IPC_EXCL | 0644);
	int st;

	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), lp, 3020);
	st = run_child(readonly_attacher, NULL);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_TRUE(lp_check(LP_PTR(r), lp, 3020));
	ASSERT_EQ(lpsys_unshare(r), 0);
}

struct sga {
	pthread_mutex_t lock;
	volatile unsigned long counter;
	volatile int inside;
	volatile int overlaps;
};

#define HAMMER 20000

/* Increment the counter under the lock, yielding inside now and then. */
static int hammer(struct sga *s)
{
	struct timespec dl;
	unsigned long v;
	int i, e;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	for (i = 0; i < HAMMER; i++) {
		e = pthread_mutex_timedlock(&s->lock, &dl);
		if (e) {
			printf("# pthread_mutex_timedlock: %s\n", strerror(e));
			return -1;
		}
		if (s->inside++)
			s->overlaps++;
		v = s->counter;
		if (!(i & 63))
			sched_yield();
		s->counter = v + 1;
		s->inside--;
		pthread_mutex_unlock(&s->lock);
	}
	return 0;
}

TEST(gup_process_shared_mutex_in_keyed_segment)
{
	unsigned long len = lp_size();
	pthread_mutexattr_t attr;
	struct lp_peer p[2];
	struct sga *s;
	int i, st;
	long r;

	for (i = 0; i < 2; i++) {
		if (lp_peer_fork(&p[i]) == 0) {
			lp_peer_recv(&p[i]);
			r = lpsys_share(3007, 0, len, RW, 0);
			ASSERT_TRUE(LP_OK(r));
			st = hammer((struct sga *)LP_PTR(r));
			ASSERT_EQ(lpsys_unshare(r), 0);
			_exit(st ? 2 : 0);
		}
		ASSERT_GT(p[i].pid, 0);
	}
	r = lpsys_share(3007, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	s = (struct sga *)LP_PTR(r);
	ASSERT_EQ(pthread_mutexattr_init(&attr), 0);
	ASSERT_EQ(pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
	ASSERT_EQ(pthread_mutex_init(&s->lock, &attr), 0);
	for (i = 0; i < 2; i++)
		lp_peer_send(&p[i], 0);
	EXPECT_EQ(hammer(s), 0);
	for (i = 0; i < 2; i++) {
		st = lp_peer_wait(&p[i]);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
	}
	EXPECT_EQ(s->counter, 3 * HAMMER);
	EXPECT_EQ(s->overlaps, 0);
	pthread_mutex_destroy(&s->lock);
	ASSERT_EQ(lpsys_unshare(r), 0);
}

TEST(gup_pipe_copies_between_large_page_buffers)
{
	unsigned long lp = lp_size(), len = KIB(1024), from = lp - KIB(512);
	long r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);
	int fds[2], st;
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	fillw(LP_PTR(r) + from, from, len, 0x3008);
	ASSERT_EQ(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		long d = lpsys_get(0, 2 * lp, RW, MAP_SHARED);

		close(fds[1]);
		ASSERT_TRUE(LP_OK(d));
		ASSERT_EQ(read_all(fds[0], LP_PTR(d) + lp - KIB(300), len), len);
		ASSERT_TRUE(checkw(LP_PTR(d) + lp - KIB(300), from, len, 0x3008));
		ASSERT_EQ(lpsys_free(d), 0);
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	close(fds[0]);
	EXPECT_EQ(write_all(fds[1], LP_PTR(r) + from, len), len);
	close(fds[1]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(gup_vmsplice_from_large_page_buffer)
{
	unsigned long lp = lp_size(), len = KIB(64), from = lp - KIB(32);
	long r = lpsys_get(0, 2 * lp, RW, MAP_SHARED);
	static char buf[KIB(64)];
	struct iovec iov;
	int fds[2];

	ASSERT_TRUE(LP_OK(r));
	fillw(LP_PTR(r) + from, from, len, 0x3009);
	ASSERT_EQ(pipe(fds), 0);
	iov.iov_base = LP_PTR(r) + from;
	iov.iov_len = len;
	ASSERT_EQ(vmsplice(fds[1], &iov, 1, 0), len);
	ASSERT_EQ(read_all(fds[0], buf, len), len);
	EXPECT_TRUE(checkw(buf, from, len, 0x3009));
	close(fds[0]);
	close(fds[1]);
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(gup_vmsplice_reference_outlives_free)
{
	unsigned long lp = lp_size(), len = KIB(64);
	long nfree = lp_nfree(), r, got[16];
	static char buf[KIB(64)];
	struct iovec iov;
	int fds[2], i, n;

	r = lpsys_get(0, lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	fillw(LP_PTR(r), 0, len, 0x300a);
	ASSERT_EQ(pipe(fds), 0);
	iov.iov_base = LP_PTR(r);
	iov.iov_len = len;
	ASSERT_EQ(vmsplice(fds[1], &iov, 1, 0), len);

	/*
	 * The pipe holds references to the page: free the mapping, then
	 * take and scribble on pages from the pool. If the referenced page
	 * were recycled (and zeroed, and scribbled on), the pipe would say so.
	 */
	ASSERT_EQ(lpsys_free(r), 0);
	n = nfree - 1 < 16 ? nfree - 1 : 16;
	for (i = 0; i < n; i++) {
		got[i] = lpsys_get(0, lp, RW, MAP_PRIVATE);
		if (!LP_OK(got[i]))
			break;
		memset(LP_PTR(got[i]), 0xee, len);
	}
	n = i;
	ASSERT_EQ(read_all(fds[0], buf, len), len);
	EXPECT_TRUE(checkw(buf, 0, len, 0x300a));
	for (i = 0; i < n; i++)
		ASSERT_EQ(lpsys_free(got[i]), 0);
	close(fds[0]);
	close(fds[1]);
	/* With the last reference gone, the page is back in the pool. */
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}
