// SPDX-License-Identifier: GPL-2.0
/*
 * liblargepage: every function, against the kernel it wraps. Results
 * are checked against /proc/meminfo and the sysctl read here directly
 * (util.h's readers, not the library's), errors must come back as -1
 * (NULL for pointers) with the kernel's errno.
 *
 * This file includes util.h, not lp.h: the library's lp_free() and
 * friends are the functions under test, not lpsys.h's raw calls.
 */
#include "util.h"
#include "largepage.h"

#define KEY_BASE 0x4c500000	/* "LP": far from the other suites' keys */

/*
 * A call returning a pointer that must fail with NULL and errno e. A
 * mapping made by mistake goes when the test's child exits.
 */
#define EXPECT_NULL_ERRNO(call, e) do {					\
	void *__p;							\
	errno = 0;							\
	__p = (call);							\
	if (__p || errno != (e)) {					\
		TH_LOG("expected %s to fail with %s, got %p errno %d (%s)", \
		       #call, #e, __p, errno, strerror(errno));		\
		HARNESS_FAIL(0);					\
	}								\
} while (0)

/* ------------------------------------------------------------ lp_page_size */

TEST(page_size_matches_meminfo)
{
	long ps = lp_page_size();

	ASSERT_GT(ps, 0);
	EXPECT_EQ(ps, meminfo("LargePageSize:") * 1024);
	EXPECT_TRUE(ps == 2 << 20 || ps == 4 << 20);
}

/* ----------------------------------------------------------------- lp_pool */

TEST(pool_matches_meminfo_and_sysctl)
{
	long total = -2, nfree = -2;

	ASSERT_EQ(lp_pool(&total, &nfree), 0);
	EXPECT_GE(total, 4);
	EXPECT_EQ(total, lp_total());
	EXPECT_EQ(nfree, lp_nfree());
	EXPECT_EQ(total, read_long(LP_SYSCTL_PATH));
}

TEST(pool_takes_null_pointers)
{
	long total = -2, nfree = -2;

	EXPECT_EQ(lp_pool(NULL, NULL), 0);
	EXPECT_EQ(lp_pool(&total, NULL), 0);
	EXPECT_EQ(total, lp_total());
	EXPECT_EQ(lp_pool(NULL, &nfree), 0);
	EXPECT_EQ(nfree, lp_nfree());
}

TEST(pool_counts_pages_in_use)
{
	unsigned long len = 2 * lp_size();
	long total, nfree;
	void *p = lp_alloc(len, RW, MAP_PRIVATE);

	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(lp_pool(&total, &nfree), 0);
	EXPECT_EQ(total, lp_total());
	EXPECT_EQ(nfree, total - 2);
	EXPECT_EQ(nfree, lp_nfree());
	EXPECT_EQ(lp_free(p), 0);
	ASSERT_EQ(lp_pool(&total, &nfree), 0);
	EXPECT_EQ(nfree, total);
}

/* ------------------------------------------------------ lp_alloc, lp_free */

TEST(alloc_private_maps_aligned_zeroed_pages)
{
	unsigned long len = 2 * lp_size(), off;
	long before = lp_nfree();
	char *p = lp_alloc(len, RW, MAP_PRIVATE);

	ASSERT_TRUE(p != NULL);
	EXPECT_TRUE(p != MAP_FAILED);
	EXPECT_EQ((uintptr_t)p % lp_size(), 0);
	EXPECT_EQ(lp_nfree(), before - 2);
	for (off = 0; off < len; off += 4096)
		if (p[off]) {
			TH_LOG("byte at +%#lx is %d", off, p[off]);
			HARNESS_FAIL(0);
			break;
		}
	memset(p, 0x5a, len);
	EXPECT_EQ(p[len - 1], 0x5a);
	EXPECT_EQ(lp_free(p), 0);
	EXPECT_EQ(lp_nfree(), before);
}

TEST(alloc_shared_is_shared_with_child)
{
	unsigned long len = lp_size();
	volatile char *p = lp_alloc(len, RW, MAP_SHARED);
	pid_t pid;

	ASSERT_TRUE(p != NULL);
	pid = fork();
	if (pid == 0) {
		p[len - 1] = 42;
		_exit(0);
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(p[len - 1], 42);
	EXPECT_EQ(lp_free((void *)p), 0);
}

TEST(alloc_bad_len_einval)
{
	unsigned long ps = lp_size();

	EXPECT_NULL_ERRNO(lp_alloc(ps + 4096, RW, MAP_PRIVATE), EINVAL);
	EXPECT_NULL_ERRNO(lp_alloc(ps / 2, RW, MAP_PRIVATE), EINVAL);
	EXPECT_NULL_ERRNO(lp_alloc(0, RW, MAP_PRIVATE), EINVAL);
	EXPECT_EQ(lp_nfree(), lp_total());
}

TEST(alloc_bad_prot_or_flags_einval)
{
	unsigned long ps = lp_size();

	EXPECT_NULL_ERRNO(lp_alloc(ps, RW | 0x100, MAP_PRIVATE), EINVAL);
	EXPECT_NULL_ERRNO(lp_alloc(ps, RW, MAP_PRIVATE | MAP_SHARED), EINVAL);
	EXPECT_NULL_ERRNO(lp_alloc(ps, RW, 0), EINVAL);
	EXPECT_NULL_ERRNO(lp_alloc(ps, RW, MAP_PRIVATE | MAP_ANONYMOUS),
			  EINVAL);
}

TEST(alloc_more_than_free_enomem)
{
	long nfree = lp_nfree();

	ASSERT_GE(nfree, 1);
	/* All or nothing: nothing is taken. */
	EXPECT_NULL_ERRNO(lp_alloc((nfree + 1) * lp_size(), RW, MAP_PRIVATE),
			  ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(alloc_without_memlock_eperm)
{
	struct rlimit rl = { 0, 0 };
	pid_t pid = fork();

	if (pid == 0) {
		ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
		become_nobody();
		EXPECT_NULL_ERRNO(lp_alloc(lp_size(), RW, MAP_PRIVATE), EPERM);
		EXPECT_NULL_ERRNO(lp_share(KEY_BASE + 1, lp_size(), RW,
					   IPC_CREAT), EPERM);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
}

TEST(free_null_einval)
{
	ASSERT_ERRNO(lp_free(NULL), EINVAL);
}

TEST(free_not_a_large_page_mapping_einval)
{
	char *normal = mmap(NULL, 1 << 20, RW, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	char *p = lp_alloc(lp_size(), RW, MAP_PRIVATE);
	long nfree = lp_nfree();

	ASSERT_TRUE(normal != MAP_FAILED);
	ASSERT_TRUE(p != NULL);
	EXPECT_ERRNO(lp_free(normal), EINVAL);
	EXPECT_ERRNO(lp_free(p + 4096), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	p[0] = 1;	/* still mapped */
	EXPECT_EQ(lp_free(p), 0);
	EXPECT_ERRNO(lp_free(p), EINVAL);
	munmap(normal, 1 << 20);
}

/* ----------------------------------------------------- lp_share, lp_unshare */

TEST(share_bad_key_einval)
{
	EXPECT_NULL_ERRNO(lp_share(0, lp_size(), RW, IPC_CREAT), EINVAL);
	EXPECT_NULL_ERRNO(lp_share(-1, lp_size(), RW, IPC_CREAT), EINVAL);
	EXPECT_EQ(lp_nfree(), lp_total());
}

TEST(share_bad_len_or_flag_einval)
{
	unsigned long ps = lp_size();

	EXPECT_NULL_ERRNO(lp_share(KEY_BASE + 2, ps + 4096, RW, IPC_CREAT),
			  EINVAL);
	/* IPC_NOWAIT: not one of IPC_CREAT, IPC_EXCL, the mode bits. */
	EXPECT_NULL_ERRNO(lp_share(KEY_BASE + 2, ps, RW,
				   IPC_CREAT | IPC_NOWAIT), EINVAL);
	EXPECT_NULL_ERRNO(lp_share(KEY_BASE + 2, ps, RW, IPC_CREAT | 010000),
			  EINVAL);
}

TEST(share_creates_then_attaches_same_pages)
{
	unsigned long len = 2 * lp_size();
	int key = KEY_BASE + 3;
	long before = lp_nfree();
	char *p = lp_share(key, len, RW, IPC_CREAT | 0600);
	pid_t pid;

	ASSERT_TRUE(p != NULL);
	EXPECT_EQ((uintptr_t)p % lp_size(), 0);
	EXPECT_EQ(lp_nfree(), before - 2);
	strcpy(p + len - 64, "from the creator");
	pid = fork();
	if (pid == 0) {
		char *q = lp_share(key, len, RW, 0);

		ASSERT_TRUE(q != NULL);
		EXPECT_EQ(strcmp(q + len - 64, "from the creator"), 0);
		strcpy(q, "from the child");
		/* Attaching takes no more pages. */
		EXPECT_EQ(lp_nfree(), before - 2);
		EXPECT_EQ(lp_unshare(q), 0);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(strcmp(p, "from the child"), 0);
	EXPECT_EQ(lp_unshare(p), 0);
	EXPECT_EQ(lp_nfree(), before);
	/* The last detach destroyed the segment. */
	EXPECT_NULL_ERRNO(lp_share(key, len, RW, 0), ENOENT);
}

TEST(share_absent_key_enoent)
{
	EXPECT_NULL_ERRNO(lp_share(KEY_BASE + 4, lp_size(), RW, 0), ENOENT);
}

TEST(share_excl_existing_key_eexist)
{
	int key = KEY_BASE + 5;
	void *p = lp_share(key, lp_size(), RW, IPC_CREAT | IPC_EXCL);

	ASSERT_TRUE(p != NULL);
	EXPECT_NULL_ERRNO(lp_share(key, lp_size(), RW, IPC_CREAT | IPC_EXCL),
			  EEXIST);
	EXPECT_EQ(lp_unshare(p), 0);
}

TEST(share_other_len_einval)
{
	int key = KEY_BASE + 6;
	void *p = lp_share(key, lp_size(), RW, IPC_CREAT);

	ASSERT_TRUE(p != NULL);
	EXPECT_NULL_ERRNO(lp_share(key, 2 * lp_size(), RW, 0), EINVAL);
	EXPECT_EQ(lp_unshare(p), 0);
}

TEST(share_mode_refuses_other_user_eacces)
{
	int key = KEY_BASE + 7;
	void *p = lp_share(key, lp_size(), RW, IPC_CREAT | 0644);
	pid_t pid;

	ASSERT_TRUE(p != NULL);
	pid = fork();
	if (pid == 0) {
		void *q;

		become_nobody();
		EXPECT_NULL_ERRNO(lp_share(key, lp_size(), RW, 0), EACCES);
		/* 0644 lets others read. */
		q = lp_share(key, lp_size(), PROT_READ, 0);
		EXPECT_TRUE(q != NULL);
		if (q)
			EXPECT_EQ(lp_unshare(q), 0);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(lp_unshare(p), 0);
}

TEST(unshare_bad_address_einval)
{
	void *p = lp_share(KEY_BASE + 8, lp_size(), RW, IPC_CREAT);

	EXPECT_ERRNO(lp_unshare(NULL), EINVAL);
	ASSERT_TRUE(p != NULL);
	EXPECT_ERRNO(lp_unshare((char *)p + 4096), EINVAL);
	EXPECT_EQ(lp_unshare(p), 0);
	EXPECT_ERRNO(lp_unshare(p), EINVAL);
}

/* --------------------------------------------------------------- lp_resize */

TEST(resize_grows_and_shrinks_by_delta)
{
	long total = lp_total(), now;

	ASSERT_EQ(lp_resize(1), 0);
	now = lp_total();
	EXPECT_EQ(now, total + 1);
	EXPECT_EQ(read_long(LP_SYSCTL_PATH), now);
	EXPECT_EQ(lp_resize(0), 0);
	EXPECT_EQ(lp_total(), now);
	EXPECT_EQ(lp_resize(-1), 0);
	EXPECT_EQ(lp_total(), now - 1);
	/* Put it back whatever happened. */
	if (lp_total() != total)
		lp_resize(total - lp_total());
	ASSERT_EQ(lp_total(), total);
}

TEST(resize_by_nobody_refused)
{
	long total = lp_total();
	pid_t pid = fork();

	if (pid == 0) {
		int ret;

		become_nobody();
		errno = 0;
		ret = lp_resize(1);
		EXPECT_EQ(ret, -1);
		/* The open (EACCES, mode 0644) or the write (EPERM). */
		if (errno != EACCES && errno != EPERM)
			TH_LOG("errno %d (%s)", errno, strerror(errno));
		EXPECT_TRUE(errno == EACCES || errno == EPERM);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(lp_total(), total);
}

TEST(resize_without_cap_sys_admin_eperm)
{
	/* The sysctl's own EPERM reaches lp_resize's caller unchanged. */
	long total = lp_total();
	pid_t pid = fork();

	if (pid == 0) {
		/* Keep uid 0 but drop CAP_SYS_ADMIN: only the write fails. */
		struct {
			unsigned int version;
			int pid;
		} hdr = { 0x20080522, 0 };	/* _LINUX_CAPABILITY_VERSION_3 */
		struct {
			unsigned int effective, permitted, inheritable;
		} data[2];

		ASSERT_EQ(syscall(SYS_capget, &hdr, data), 0);
		data[0].effective &= ~(1U << 21);	/* CAP_SYS_ADMIN */
		data[0].permitted &= ~(1U << 21);
		ASSERT_EQ(syscall(SYS_capset, &hdr, data), 0);
		ASSERT_ERRNO(lp_resize(1), EPERM);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(lp_total(), total);
}
