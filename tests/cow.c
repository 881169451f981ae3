// SPDX-License-Identifier: GPL-2.0
/*
 * A heap's fork (get_large_pages(MAP_PRIVATE | LP_COPY_ON_FORK)): parent
 * and child share the pages, write-protected, and the one that writes a
 * page the other still holds gets a copy, from a page the fork reserved
 * in the pool (/sys/kernel/mm/largepage/reserved_pages). The one left alone with a page writes it
 * without a copy. Each test counts the pool's pages (LargePages_Free and
 * reserved_pages) at every step and checks the data both sides see.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sys/uio.h>
#include "misccg.h"

#define COPY (MAP_PRIVATE | LP_COPY_ON_FORK)

/* Free pages reserved for copies: counted in LargePages_Free. */
static long lp_nresv(void)
{
	return read_long("/sys/kernel/mm/largepage/reserved_pages");
}

/*
 * stat's count of what heaps' forks did since boot, by name: fork_shared,
 * fork_copied, fork_copied_normal, cow_copied, cow_reused; -1 if absent.
 */
static long lp_event(const char *name)
{
	FILE *f = fopen("/sys/kernel/mm/largepage/stat", "r");
	char key[32];
	long v, got = -1;

	while (f && fscanf(f, "%31s %ld", key, &v) == 2)
		if (!strcmp(key, name))
			got = v;
	if (f)
		fclose(f);
	return got;
}

/* Page i of the heap at r (the large page's base). */
static char *heap_page(long r, int i)
{
	return (char *)LP_PTR(r) + i * lp_size();
}

/* A COW heap of n pages, each filled from seed + its index. */
static long heap_get(int n, uint32_t seed)
{
	long r = lpsys_get(0, n * lp_size(), RW, COPY);
	int i;

	if (LP_OK(r)) {
		for (i = 0; i < n; i++)
			lp_fill(heap_page(r, i), lp_size(), seed + i);
	}
	return r;
}

/* 1 if each of the n pages holds seed + its index. */
static int heap_check(long r, int n, uint32_t seed)
{
	int i, ok = 1;

	for (i = 0; i < n; i++) {
		if (!lp_check(heap_page(r, i), lp_size(), seed + i)) {
			TH_LOG("page %d does not hold seed %#x", i, seed + i);
			ok = 0;
		}
	}
	return ok;
}

/* This process's pagemap entry for addr. */
static uint64_t pagemap(const void *addr)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd >= 0) {
		if (pread(fd, &e, sizeof(e),
			  (unsigned long)addr / 4096 * sizeof(e)) != sizeof(e))
			e = 0;
		close(fd);
	}
	return e;
}

/*
 * Let the peer child go and reap it (it must have passed), free the heap
 * at r, and see the pool back at nfree free pages.
 */
static void peer_done(struct lp_peer *p, long r, long nfree)
{
	int st;

	lp_peer_send(p, 0);
	st = lp_peer_wait(p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

#define PM_EXCLUSIVE(e) (((e) >> 56) & 1)
#define PM_PFN(e) ((e) & ((1ULL << 55) - 1))

/*
 * fork() takes no page: it reserves one for each page shared. The child
 * sees the parent's data; its exit gives the reservation back, and the
 * parent, alone again, writes without a copy.
 */
TEST(cow_fork_takes_no_page_and_reserves_one_a_page)
{
	long nfree = lp_nfree(), r, shared, reused;
	struct lp_peer p;
	int st;

	r = heap_get(4, 0x4100);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(lp_nresv(), 0);
	shared = lp_event("fork_shared");
	reused = lp_event("cow_reused");
	ASSERT_GE(shared, 0);
	if (lp_peer_fork(&p) == 0) {
		EXPECT_TRUE(heap_check(r, 4, 0x4100));
		EXPECT_EQ(status_kb(0, "LargePages:"), (long)(4 * lp_size() >> 10));
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nfree(), nfree - 4);
	EXPECT_EQ(lp_nresv(), 4);
	EXPECT_EQ(lp_event("fork_shared"), shared + 4);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(SETTLE(lp_nresv(), 0, 50), 0);
	EXPECT_EQ(lp_nfree(), nfree - 4);
	lp_fill(LP_PTR(r), 4 * lp_size(), 0x4200);
	EXPECT_EQ(lp_nfree(), nfree - 4);
	EXPECT_EQ(lp_event("cow_reused"), reused + 4);
	EXPECT_TRUE(lp_check(LP_PTR(r), 4 * lp_size(), 0x4200));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * The first write to a shared page copies that page alone, for the side
 * that writes; the other keeps its data, and its own next write to that
 * page copies nothing. Every step is counted.
 */
TEST(cow_first_write_copies_one_page_for_the_writer)
{
	long nfree = lp_nfree(), base, r, copied, reused;
	struct lp_peer p;
	int st;

	r = heap_get(4, 0x4300);
	ASSERT_TRUE(LP_OK(r));
	base = nfree - 4;
	copied = lp_event("cow_copied");
	reused = lp_event("cow_reused");
	ASSERT_GE(copied, 0);
	if (lp_peer_fork(&p) == 0) {
		lp_fill(heap_page(r, 0), lp_size(), 0x4400);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		/* The parent wrote pages 0 and 1 meanwhile: not here. */
		EXPECT_TRUE(lp_check(heap_page(r, 0), lp_size(), 0x4400));
		EXPECT_TRUE(lp_check(heap_page(r, 1), lp_size(), 0x4301));
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nfree(), base - 1);
	EXPECT_EQ(lp_nresv(), 3);
	EXPECT_EQ(lp_event("cow_copied"), copied + 1);
	EXPECT_TRUE(heap_check(r, 4, 0x4300));
	/* Page 0 is the parent's alone now: no copy. */
	lp_fill(heap_page(r, 0), lp_size(), 0x4500);
	EXPECT_EQ(lp_nfree(), base - 1);
	EXPECT_EQ(lp_nresv(), 3);
	EXPECT_EQ(lp_event("cow_reused"), reused + 1);
	/* Page 1 is still shared: a copy, from the reservation. */
	lp_fill(heap_page(r, 1), lp_size(), 0x4501);
	EXPECT_EQ(lp_nfree(), base - 2);
	EXPECT_EQ(lp_nresv(), 2);
	EXPECT_EQ(lp_event("cow_copied"), copied + 2);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	/* The child's copy and its page 1 go back; so do pages 2 and 3's units. */
	EXPECT_EQ(SETTLE(lp_nresv(), 0, 50), 0);
	EXPECT_EQ(lp_settle_nfree(base), base);
	EXPECT_TRUE(lp_check(heap_page(r, 0), lp_size(), 0x4500));
	EXPECT_TRUE(lp_check(heap_page(r, 1), lp_size(), 0x4501));
	EXPECT_TRUE(lp_check(heap_page(r, 2), lp_size(), 0x4302));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* A child that execs at once gives its reservation back, and copies nothing. */
TEST(cow_exec_gives_the_reservation_back)
{
	long nfree = lp_nfree(), r, copied;
	pid_t pid;
	int st;

	r = heap_get(2, 0x4600);
	ASSERT_TRUE(LP_OK(r));
	copied = lp_event("cow_copied");
	pid = fork();
	if (pid == 0) {
		execl("/bin/sleep", "sleep", "1", (char *)NULL);
		_exit(127);
	}
	ASSERT_GT(pid, 0);
	EXPECT_EQ(SETTLE(lp_nresv(), 0, 40), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	lp_fill(LP_PTR(r), 2 * lp_size(), 0x4700);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(lp_event("cow_copied"), copied);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* vfork() shares the mm: nothing is reserved, nothing copied. */
TEST(cow_vfork_exec_reserves_nothing)
{
	long nfree = lp_nfree(), r;

	r = heap_get(2, 0x4800);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(true_in_child(1));
	EXPECT_EQ(lp_nresv(), 0);
	lp_fill(LP_PTR(r), 2 * lp_size(), 0x4900);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * Three holders of each page: parent, child, grandchild. A page with
 * three holders has two reserved; each leaving holder gives one back.
 */
TEST(cow_grandchild_holds_a_third_share)
{
	long nfree = lp_nfree(), base, r;
	struct lp_peer p;
	int st;

	r = heap_get(2, 0x4a00);
	ASSERT_TRUE(LP_OK(r));
	base = nfree - 2;
	if (lp_peer_fork(&p) == 0) {
		struct lp_peer g;

		if (lp_peer_fork(&g) == 0) {
			EXPECT_TRUE(heap_check(r, 2, 0x4a00));
			lp_fill(heap_page(r, 0), lp_size(), 0x4b00);
			lp_peer_send(&g, lp_nfree());
			lp_peer_send(&g, lp_nresv());
			lp_peer_recv(&g);
			EXPECT_TRUE(lp_check(heap_page(r, 0), lp_size(), 0x4b00));
			CHILD_DONE();
		}
		if (g.pid < 0)
			_exit(3);
		lp_peer_send(&p, lp_peer_recv(&g));
		lp_peer_send(&p, lp_peer_recv(&g));
		/* The grandchild's write is not here. */
		EXPECT_TRUE(heap_check(r, 2, 0x4a00));
		lp_peer_send(&g, 0);
		st = lp_peer_wait(&g);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
		lp_peer_send(&p, SETTLE(lp_nresv(), 2, 50));
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		EXPECT_TRUE(heap_check(r, 2, 0x4a00));
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	/* Grandchild wrote page 0: one copy, one reservation used. */
	EXPECT_EQ(lp_peer_recv(&p), base - 1);
	EXPECT_EQ(lp_peer_recv(&p), 3);
	/* Grandchild gone: its copy back, page 1's extra unit back. */
	EXPECT_EQ(lp_peer_recv(&p), 2);
	EXPECT_EQ(lp_peer_recv(&p), base);
	EXPECT_TRUE(heap_check(r, 2, 0x4a00));
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(SETTLE(lp_nresv(), 0, 50), 0);
	EXPECT_EQ(lp_nfree(), base);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

struct writer {
	volatile uint32_t *word;
	volatile int stop;
	unsigned long writes;
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;

	while (!w->stop) {
		(*w->word)++;
		w->writes++;
	}
	return NULL;
}

/*
 * A thread keeps writing a heap word while the main thread forks: each
 * child's copy of the word is frozen at its fork (the parent's writes
 * after it are not seen), and the parent's writes go on.
 */
TEST(cow_child_never_sees_the_parents_later_writes)
{
	long nfree = lp_nfree(), r;
	struct writer w = { 0 };
	pthread_t t;
	int i, st;

	r = heap_get(1, 0x4c00);
	ASSERT_TRUE(LP_OK(r));
	w.word = (volatile uint32_t *)heap_page(r, 0);
	ASSERT_EQ(pthread_create(&t, NULL, writer_run, &w), 0);
	for (i = 0; i < 20; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			uint32_t v = *w.word;
			int j;

			for (j = 0; j < 200; j++) {
				usleep(100);
				if (*w.word != v)
					_exit(2);
			}
			_exit(0);
		}
		ASSERT_GT(pid, 0);
		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
	}
	w.stop = 1;
	pthread_join(t, NULL);
	EXPECT_GT(w.writes, 0);
	EXPECT_EQ(SETTLE(lp_nresv(), 0, 50), 0);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * smaps: a page shared with the child counts half in the parent's Pss
 * and as Shared_Dirty; pagemap calls it exclusive only when it is.
 */
TEST(cow_smaps_and_pagemap_count_shared_pages)
{
	unsigned long lp = lp_size(), kb = lp >> 10;
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	int st;

	r = heap_get(2, 0x4d00);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(smaps_kb(r, "Pss:"), (long)(2 * kb));
	EXPECT_EQ(smaps_kb(r, "Private_Dirty:"), (long)(2 * kb));
	EXPECT_EQ(PM_EXCLUSIVE(pagemap(heap_page(r, 0))), 1);
	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);
		lp_fill(heap_page(r, 0), lp, 0x4e00);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(smaps_kb(r, "Pss:"), (long)kb);
	EXPECT_EQ(smaps_kb(r, "Shared_Dirty:"), (long)(2 * kb));
	EXPECT_EQ(smaps_kb(r, "Private_Dirty:"), 0);
	EXPECT_EQ(smaps_kb(r, "Rss:"), (long)(2 * kb));
	EXPECT_EQ(PM_EXCLUSIVE(pagemap(heap_page(r, 0))), 0);
	/* The child copies page 0: the parent's page 0 is its own again. */
	lp_peer_send(&p, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(smaps_kb(r, "Pss:"), (long)(kb + kb / 2));
	EXPECT_EQ(smaps_kb(r, "Shared_Dirty:"), (long)kb);
	EXPECT_EQ(smaps_kb(r, "Private_Dirty:"), (long)kb);
	EXPECT_EQ(PM_EXCLUSIVE(pagemap(heap_page(r, 0))), 1);
	EXPECT_EQ(PM_EXCLUSIVE(pagemap(heap_page(r, 1))), 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(SETTLE(smaps_kb(r, "Pss:"), (long)(2 * kb), 50),
		  (long)(2 * kb));
	EXPECT_EQ(PM_EXCLUSIVE(pagemap(heap_page(r, 1))), 1);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * The pages reserved for copies are not free for anyone else: shrinking
 * the pool keeps them, a get that only they could serve fails with
 * ENOMEM, and the copies they are for still succeed.
 */
TEST(cow_reserved_pages_serve_only_the_copies)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), total = lp_total(), r;
	struct lp_peer p;
	int st;

	r = heap_get(2, 0x4f00);
	ASSERT_TRUE(LP_OK(r));
	if (lp_peer_fork(&p) == 0) {
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		lp_fill(LP_PTR(r), 2 * lp, 0x5000);
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		EXPECT_TRUE(lp_check(LP_PTR(r), 2 * lp, 0x5000));
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nresv(), 2);
	/* Shrink to nothing: the two reserved pages stay in the pool. */
	EXPECT_EQ(sysctl_resize(-total), 0);
	EXPECT_EQ(lp_total(), total - nfree + 4);
	EXPECT_EQ(lp_nfree(), 2);
	EXPECT_EQ(lpsys_get(0, lp, RW, MAP_PRIVATE), -1);
	EXPECT_EQ(errno, ENOMEM);
	lp_peer_send(&p, 0);
	EXPECT_EQ(lp_peer_recv(&p), 0);
	EXPECT_EQ(lp_nresv(), 0);
	EXPECT_TRUE(heap_check(r, 2, 0x4f00));
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(pool_restore(total), total);
}

/* An unlinked O_DIRECT file in /var/tmp, holding len bytes from seed. */
static int direct_file_with(unsigned long len, uint32_t seed)
{
	char path[64], *buf;
	int fd;

	snprintf(path, sizeof(path), "/var/tmp/lp-cow-%d", getpid());
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	unlink(path);
	buf = malloc(len);
	lp_fill(buf, len, seed);
	if (write_all(fd, buf, len) != (ssize_t)len || fsync(fd)) {
		free(buf);
		close(fd);
		return -1;
	}
	free(buf);
	if (fcntl(fd, F_SETFL, O_DIRECT)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * O_DIRECT into the parent's heap after fork(): GUP asks for write, so
 * the parent gets its copy first and the data lands in it, not in the
 * page the child still holds.
 */
TEST(cow_odirect_read_after_fork_lands_in_the_parents_copy)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	int fd, st;

	fd = direct_file_with(lp, 0x5100);
	ASSERT_GE(fd, 0);
	r = heap_get(1, 0x5200);
	ASSERT_TRUE(LP_OK(r));
	if (lp_peer_fork(&p) == 0) {
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		EXPECT_TRUE(lp_check(LP_PTR(r), lp, 0x5200));
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	ASSERT_EQ(pread(fd, LP_PTR(r), lp, 0), (ssize_t)lp);
	EXPECT_TRUE(lp_check(LP_PTR(r), lp, 0x5100));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(lp_nresv(), 0);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	close(fd);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * A page with a reference beyond its holders' (here spliced into a
 * pipe, as an O_DIRECT in flight would hold it) is copied for the child
 * at fork(): the parent keeps its page, writable, with no copy later.
 */
TEST(cow_referenced_page_is_copied_for_the_child_at_fork)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), r;
	struct lp_peer p;
	struct iovec iov;
	uint64_t pfn;
	int fds[2], st;
	long copied;

	r = heap_get(2, 0x5300);
	ASSERT_TRUE(LP_OK(r));
	copied = lp_event("fork_copied");
	pfn = PM_PFN(pagemap(heap_page(r, 0)));
	ASSERT_NE(pfn, 0);
	ASSERT_EQ(pipe(fds), 0);
	iov.iov_base = heap_page(r, 0);
	iov.iov_len = 4096;
	ASSERT_EQ(vmsplice(fds[1], &iov, 1, 0), 4096);
	if (lp_peer_fork(&p) == 0) {
		EXPECT_TRUE(heap_check(r, 2, 0x5300));
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	/* Page 0 copied for the child now; page 1 shared, one reserved. */
	EXPECT_EQ(lp_nfree(), nfree - 3);
	EXPECT_EQ(lp_nresv(), 1);
	EXPECT_EQ(lp_event("fork_copied"), copied + 1);
	/* The parent's page 0 stayed its own, writable: no copy. */
	lp_fill(heap_page(r, 0), lp, 0x5400);
	EXPECT_EQ(PM_PFN(pagemap(heap_page(r, 0))), pfn);
	EXPECT_EQ(lp_nfree(), nfree - 3);
	lp_peer_send(&p, 0);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(SETTLE(lp_nresv(), 0, 50), 0);
	EXPECT_EQ(lp_settle_nfree(nfree - 2), nfree - 2);
	close(fds[0]);
	close(fds[1]);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * A read-only pin (process_vm_readv() pins with FOLL_PIN) of a page the
 * target shares since fork() gives the target its own copy first, as
 * for anonymous memory: the pin stays with what the target keeps.
 */
TEST(cow_readonly_pin_of_a_shared_page_unshares_it)
{
	long nfree = lp_nfree(), r;
	struct lp_peer p;

	r = heap_get(1, 0x5500);
	ASSERT_TRUE(LP_OK(r));
	if (lp_peer_fork(&p) == 0) {
		char buf[4096];
		struct iovec local = { buf, sizeof(buf) };
		struct iovec remote = { LP_PTR(r), sizeof(buf) };

		/* Read the parent's page, which this child shares. */
		EXPECT_EQ(process_vm_readv(getppid(), &local, 1, &remote, 1, 0),
			  (ssize_t)sizeof(buf));
		EXPECT_EQ(memcmp(buf, LP_PTR(r), sizeof(buf)), 0);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(lp_nresv(), 0);
	EXPECT_EQ(PM_EXCLUSIVE(pagemap(LP_PTR(r))), 1);
	peer_done(&p, r, nfree);
}

/* A thread that waits on *word (0), shared (no FUTEX_PRIVATE_FLAG). */
struct waiter {
	long ret;		/* futex()'s: 0 when woken */
	volatile pid_t tid;	/* its thread id, once it runs */
	uint32_t *word;
};

static void *waiter_run(void *arg)
{
	struct timespec ts = { 5, 0 };
	struct waiter *w = arg;

	w->tid = syscall(SYS_gettid);
	w->ret = syscall(SYS_futex, w->word, FUTEX_WAIT, 0, &ts, NULL, 0);
	return NULL;
}

/* 1 once thread tid sleeps in futex(): /proc's syscall file says so. */
static int in_futex(pid_t tid)
{
	char path[64], buf[64];
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	for (i = 0; i < 250; i++) {
		if (read_text(path, buf, sizeof(buf)) > 0 &&
		    atoi(buf) == SYS_futex)
			return 1;
		usleep(20000);
	}
	return 0;
}

/*
 * A process-shared futex (no FUTEX_PRIVATE_FLAG) in a heap page the
 * child shares with its parent: the child's waiter keys on the page
 * before the child's write copies it, and the wake after the copy must
 * still find it. (A key on the page's file would follow the page.)
 */
TEST(cow_futex_wait_survives_the_copy_of_its_page)
{
	long nfree = lp_nfree(), r;
	struct lp_peer p;

	r = lpsys_get(0, lp_size(), RW, COPY);
	ASSERT_TRUE(LP_OK(r));
	*(uint32_t *)LP_PTR(r) = 0;
	if (lp_peer_fork(&p) == 0) {
		struct waiter w = { -2, 0, (uint32_t *)LP_PTR(r) };
		pthread_t t;
		long n = 0;
		int i;

		ASSERT_EQ(pthread_create(&t, NULL, waiter_run, &w), 0);
		while (!w.tid)
			usleep(1000);
		EXPECT_TRUE(in_futex(w.tid));
		*w.word = 1;	/* copies the page */
		for (i = 0; i < 100 && n == 0; i++) {
			n = syscall(SYS_futex, w.word, FUTEX_WAKE, 1, NULL,
				    NULL, 0);
			if (!n)
				usleep(10000);
		}
		pthread_join(t, NULL);
		EXPECT_EQ(n, 1);
		EXPECT_EQ(w.ret, 0);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(*(uint32_t *)LP_PTR(r), 0);
	peer_done(&p, r, nfree);
}

/*
 * The child's reservation is charged to RLIMIT_MEMLOCK as a copy would
 * be: with the limit used up by the parent's heap, the child's heap is
 * copied into normal pages instead, as when the pool is short.
 */
TEST(cow_memlock_full_at_fork_gives_normal_pages)
{
	long nfree = lp_nfree(), normal = lp_event("fork_copied_normal");
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		long r;
		pid_t g;

		lp_set_memlock(lp_size());
		become_nobody();
		r = heap_get(1, 0x5700);
		ASSERT_TRUE(LP_OK(r));
		g = fork();
		if (g == 0) {
			int ok = status_kb(0, "LargePages:") == 0 &&
				 lp_nresv() == 0 && heap_check(r, 1, 0x5700);

			lp_fill(LP_PTR(r), lp_size(), 0x5800);
			_exit(ok && lp_nfree() == nfree - 1 ? 0 : 2);
		}
		ASSERT_GT(g, 0);
		ASSERT_EQ(waitpid(g, &st, 0), g);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
		EXPECT_TRUE(heap_check(r, 1, 0x5700));
		ASSERT_EQ(lpsys_free(r), 0);
		CHILD_DONE();
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_event("fork_copied_normal"), normal + 1);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* A child that waits for its parent's word, then exits. */
static pid_t fork_waiter(int *go)
{
	pid_t pid;
	char c;

	if (pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(go[0]);
	return pid;
}

/*
 * The reservation of each fork is charged to the misc cgroup of the
 * process that forks, one page a page shared, and given back when the
 * child goes; past misc.max the child's heap goes to normal pages.
 */
TEST(cow_fork_reservation_is_charged_to_the_forkers_misc_cgroup)
{
	long nfree = lp_nfree();
	char cg[128];
	pid_t pid;
	int st;

	if (!misc_built())
		SKIP("kernel without CONFIG_CGROUP_MISC: no misc controller");
	ASSERT_EQ(cg_new(cg, sizeof(cg), "cow", "3"), 0);
	pid = fork();
	if (pid == 0) {
		int go[3][2], i;
		pid_t w[3];
		long r;

		if (cg_enter(cg, getpid()))
			_exit(3);
		r = heap_get(1, 0x5900);
		ASSERT_TRUE(LP_OK(r));
		EXPECT_EQ(cg_current(cg), 1);
		for (i = 0; i < 2; i++) {
			w[i] = fork_waiter(go[i]);
			ASSERT_GT(w[i], 0);
			EXPECT_EQ(cg_current(cg), 2 + i);
			EXPECT_EQ(lp_nresv(), 1 + i);
		}
		/* misc.max 3 reached: this child's heap is normal pages. */
		w[2] = fork();
		if (w[2] == 0)
			_exit(status_kb(0, "LargePages:") == 0 &&
			      heap_check(r, 1, 0x5900) ? 0 : 2);
		ASSERT_GT(w[2], 0);
		ASSERT_EQ(waitpid(w[2], &st, 0), w[2]);
		EXPECT_TRUE(CHILD_EXITED(st, 0));
		EXPECT_EQ(cg_current(cg), 3);
		EXPECT_EQ(lp_nresv(), 2);
		/* Both at once: the second child holds the first's pipe too. */
		close(go[0][1]);
		close(go[1][1]);
		for (i = 0; i < 2; i++)
			ASSERT_EQ(waitpid(w[i], &st, 0), w[i]);
		EXPECT_EQ(settle_current(cg, 1), 1);
		EXPECT_EQ(SETTLE(lp_nresv(), 0, 50), 0);
		ASSERT_EQ(lpsys_free(r), 0);
		EXPECT_EQ(settle_current(cg, 0), 0);
		CHILD_DONE();
	}
	ASSERT_GT(pid, 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(cg_rmdir(cg), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}
