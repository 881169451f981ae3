// SPDX-License-Identifier: GPL-2.0
/*
 * memfd_create(MFD_LARGEPAGE): a segment from the large-page pool behind
 * a file descriptor (issue 47 item 1). The descriptor is made with size
 * 0 and takes nothing; ftruncate() sets the size once, taking that many
 * zeroed pages, all or nothing, charged as get_large_pages() charges
 * (RLIMIT_MEMLOCK, kernel.largepage_group, the misc cgroup) to the
 * caller, the charge staying with the segment; mmap(MAP_SHARED) of whole
 * large pages maps them; the pages go back when the last descriptor and
 * the last mapping are gone. read() is served, write() is not; seals are
 * shmem's. Every refusal is checked to take nothing from the pool.
 *
 * The SCM_RIGHTS test hands the descriptor to a process that is this
 * program exec'd again (--scm-receiver FD): it has nothing of the
 * segment but what it receives.
 */
#define _FILE_OFFSET_BITS 64	/* sizes past 2 GiB, for the ENOMEM checks */
#include <pthread.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include "misccg.h"

/* From the patched kernel's uapi, else their values (ABI.md). */
#ifndef LARGEPAGE_MAGIC
#define LARGEPAGE_MAGIC 0x4c504147	/* "LPAG", fstatfs()'s f_type */
#endif
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define LPGROUP "/proc/sys/kernel/largepage_group"
#define MEMBERS 4243	/* the group limits.c puts in largepage_group too */

/* The seeds of lp_fill() the SCM_RIGHTS sender and receiver write. */
#define SCM_SEED_SENDER 0x5c01
#define SCM_SEED_RECEIVER 0x5c02

static int mfd(const char *name, unsigned int flags)
{
	return syscall(__NR_memfd_create, name, flags);
}

/* A memfd of @pages large pages (0: size not set), or the test fails. */
static int mfd_new(const char *name, unsigned int flags, long pages)
{
	int fd = mfd(name, MFD_LARGEPAGE | flags);

	ASSERT_GE(fd, 0);
	if (pages)
		ASSERT_EQ(ftruncate(fd, (off_t)pages * lp_size()), 0);
	return fd;
}

/* mmap(MAP_SHARED) of @fd, or the test fails. */
static char *map_at(void *hint, int fd, unsigned long len, off_t off, int prot)
{
	void *p = mmap(hint, len, prot, MAP_SHARED, fd, off);

	if (p == MAP_FAILED)
		TH_LOG("mmap(%p, %#lx, %d, MAP_SHARED, %d, %#llx): %s", hint,
		       len, prot, fd, (long long)off, strerror(errno));
	ASSERT_TRUE(p != MAP_FAILED);
	return p;
}

static char *map(int fd, unsigned long len, off_t off)
{
	return map_at(NULL, fd, len, off, RW);
}

/* fstat()'s st_size, or -1. */
static long long fsize(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_size;
}

/* The number the next open() gets. */
static int next_fd(void)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* Is every byte of [p, p + len) zero? Logs the first that is not. */
static int all_zero(const char *p, unsigned long len)
{
	unsigned long off;

	for (off = 0; off < len; off += 4)
		if (*(const volatile uint32_t *)(p + off)) {
			TH_LOG("word at +%#lx is %#x", off,
			       *(const volatile uint32_t *)(p + off));
			return 0;
		}
	return 1;
}

/* Is there a mapping that meets [p, p + len)? */
static int mapped(const char *p, unsigned long len)
{
	return lp_maps_find(0, (unsigned long)p, (unsigned long)p + len, NULL, 0) == 1;
}

/* Take every free page, write the pattern over it, free it: dirty pages. */
static void dirty_pool(void)
{
	long n = lp_nfree(), r;

	ASSERT_GE(n, 1);
	r = lpsys_get(0, n * lp_size(), RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), n * lp_size(), 0xd1d1);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), n);
}

/* SCM_RIGHTS: send @fd over the socket @sock with one byte; 0 or -1. */
static int send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte = 'F';
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;

	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/* The descriptor sent with send_fd(), or -1. */
static int recv_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * The receiver of memfd_scm_rights_to_an_unrelated_process, exec'd as
 * "memfd --scm-receiver SOCK": it receives the descriptor, maps it whole,
 * must see the sender's pattern (SCM_SEED_SENDER, in each large page),
 * writes its own
 * (SCM_SEED_RECEIVER) over the second half, says so ('W'), and exits
 * holding the mapping and the descriptor when told to (any byte, or
 * EOF). Exit status: 0, or the step that failed.
 */
static int scm_receiver(int sock)
{
	unsigned long lp = lp_size();
	long long size;
	char byte = 'W';
	char *p;
	int fd = recv_fd(sock);

	if (fd < 0)
		return 10;
	size = fsize(fd);
	if (size != (long long)(2 * lp))
		return 11;
	p = mmap(NULL, size, RW, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 12;
	if (!lp_check(p, lp, SCM_SEED_SENDER) ||
	    !lp_check(p + lp, lp, SCM_SEED_SENDER))
		return 13;
	lp_fill(p + lp, lp, SCM_SEED_RECEIVER);
	if (write(sock, &byte, 1) != 1)
		return 14;
	if (read(sock, &byte, 1) < 0)
		return 15;
	return 0;
}

__attribute__((constructor)) static void memfd_helpers(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--scm-receiver")) {
		fflush(stdout);
		_exit(scm_receiver(atoi(argv[2])));
	}
}

/* ------------------------------------------------- create, size, map */

/*
 * memfd_create(MFD_LARGEPAGE) makes a regular file of size 0 on the
 * large-page filesystem, named /memfd:NAME, and takes no page; setting
 * the size it has (0) is no change. MFD_CLOEXEC and MFD_ALLOW_SEALING
 * combine with it.
 */
TEST(memfd_create_takes_nothing_size_zero)
{
	long nfree = lp_nfree();
	char link[64], target[256];
	struct statfs sf;
	struct stat st;
	ssize_t n;
	int fd, fd2;

	fd = mfd("lpt-create", MFD_LARGEPAGE);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(lp_nfree(), nfree);
	ASSERT_EQ(fstat(fd, &st), 0);
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(st.st_size, 0);
	ASSERT_EQ(fstatfs(fd, &sf), 0);
	EXPECT_EQ((unsigned long)sf.f_type, LARGEPAGE_MAGIC);
	EXPECT_EQ(fcntl(fd, F_GETFD), 0);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	ASSERT_GT(n, 0);
	target[n] = '\0';
	if (strcmp(target, "/memfd:lpt-create (deleted)"))
		TH_LOG("fd link: '%s'", target);
	EXPECT_EQ(strcmp(target, "/memfd:lpt-create (deleted)"), 0);
	EXPECT_EQ(ftruncate(fd, 0), 0);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(lseek(fd, 0, SEEK_END), 0);

	fd2 = mfd("lpt-create2", MFD_LARGEPAGE | MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ASSERT_GE(fd2, 0);
	EXPECT_EQ(fcntl(fd2, F_GETFD), FD_CLOEXEC);
	EXPECT_EQ(fcntl(fd2, F_GET_SEALS), 0);
	EXPECT_EQ(fsize(fd2), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(close(fd2), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * The longest name memfd_create() takes (249 bytes) is whole in the fd
 * link and in /proc/self/maps: "/memfd:NAME (deleted)", as shmem's.
 */
TEST(memfd_longest_name_in_fd_link_and_maps)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char name[250], want[300], link[64], target[300], line[512];
	ssize_t n;
	char *a;
	int fd;

	ASSERT_GE(nfree, 1);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(want, sizeof(want), "/memfd:%s (deleted)", name);
	fd = mfd(name, MFD_LARGEPAGE);
	ASSERT_GE(fd, 0);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	ASSERT_GT(n, 0);
	target[n] = '\0';
	if (strcmp(target, want))
		TH_LOG("fd link: '%s'", target);
	EXPECT_EQ(strcmp(target, want), 0);
	ASSERT_EQ(ftruncate(fd, lp), 0);
	a = map(fd, lp, 0);
	ASSERT_EQ(lp_maps_find(0, (unsigned long)a, (unsigned long)a + 1, line,
			       sizeof(line)), 1);
	if (!strstr(line, want))
		TH_LOG("maps: %s", line);
	EXPECT_TRUE(strstr(line, want) != NULL);
	EXPECT_EQ(munmap(a, lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * ftruncate() to 2 large pages takes 2 pages from the pool, zeroed even
 * when every free page was last left full of data; the mapping takes
 * none more; the last close gives them back.
 */
TEST(memfd_ftruncate_takes_zeroed_pages)
{
	unsigned long lp = lp_size();
	long nfree;
	char *p;
	int fd;

	dirty_pool();
	nfree = lp_nfree();
	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-zero", 0, 0);
	EXPECT_EQ(lp_nfree(), nfree);
	ASSERT_EQ(ftruncate(fd, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(fsize(fd), (long long)(2 * lp));
	EXPECT_EQ(lseek(fd, 0, SEEK_END), (off_t)(2 * lp));
	p = map(fd, 2 * lp, 0);
	EXPECT_EQ((unsigned long)p % lp, 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(all_zero(p, 2 * lp));
	EXPECT_EQ(munmap(p, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * Two MAP_SHARED mappings of the whole descriptor: a write through one
 * is seen through the other, both ways. Each is counted in LargePages:
 * of /proc/self/status, is named /memfd:NAME (deleted) in maps, has lp
 * in smaps' VmFlags; the pool does not move for them, and
 * /proc/largepage_segments (keyed segments) does not list the memfd.
 */
TEST(memfd_two_mappings_share_bytes_and_are_counted)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), kb = status_kb(0, "LargePages:");
	int segs = file_lines("/proc/largepage_segments", NULL);
	char line[512], *a, *b;
	int fd;

	ASSERT_GE(nfree, 2);
	ASSERT_GE(kb, 0);
	fd = mfd_new("lpt-twice", 0, 2);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	a = map(fd, 2 * lp, 0);
	b = map(fd, 2 * lp, 0);
	EXPECT_NE((unsigned long)a, (unsigned long)b);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(status_kb(0, "LargePages:"), kb + (long)(4 * lp >> 10));

	lp_fill(a, 2 * lp, 0x7a00);
	EXPECT_TRUE(lp_check(b, 2 * lp, 0x7a00));
	lp_fill(b, lp, 0x7a01);
	lp_fill(b + lp, lp, 0x7a02);
	EXPECT_TRUE(lp_check(a, lp, 0x7a01));
	EXPECT_TRUE(lp_check(a + lp, lp, 0x7a02));

	ASSERT_EQ(lp_maps_find(0, (unsigned long)a, (unsigned long)a + 1, line,
			       sizeof(line)), 1);
	if (!strstr(line, " /memfd:lpt-twice (deleted)\n"))
		TH_LOG("maps: %s", line);
	EXPECT_TRUE(strstr(line, " /memfd:lpt-twice (deleted)\n") != NULL);
	EXPECT_EQ(vma_flag(a, "lp"), 1);
	EXPECT_EQ(vma_flag(b, "lp"), 1);
	EXPECT_EQ(file_lines("/proc/largepage_segments", NULL), segs);

	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(status_kb(0, "LargePages:"), kb + (long)(2 * lp >> 10));
	EXPECT_TRUE(lp_check(b + lp, lp, 0x7a02));
	EXPECT_EQ(munmap(b, 2 * lp), 0);
	EXPECT_EQ(status_kb(0, "LargePages:"), kb);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ----------------------------------------------------------- offsets */

/*
 * A mapping of the second page alone (offset one large page) and one of
 * the first alone are views of the segment at those offsets: what each
 * writes, the whole mapping sees at that offset, and the reverse. smaps
 * divides each page's Pss among the mappings of that page: the three
 * add up to the segment's size.
 */
TEST(memfd_offset_mappings_see_their_pages)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *whole, *first, *second;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-offset", 0, 2);
	whole = map(fd, 2 * lp, 0);
	second = map(fd, lp, lp);
	first = map(fd, lp, 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);

	/* smaps: each page's Pss divided among the mappings of that page. */
	EXPECT_EQ(smaps_kb((unsigned long)whole, "Pss:"), (long)(lp >> 10));
	EXPECT_EQ(smaps_kb((unsigned long)second, "Pss:"), (long)(lp >> 11));
	EXPECT_EQ(smaps_kb((unsigned long)first, "Pss:"), (long)(lp >> 11));

	lp_fill(second, lp, 0x0ff2);
	lp_fill(first, lp, 0x0ff1);
	EXPECT_TRUE(lp_check(whole + lp, lp, 0x0ff2));
	EXPECT_TRUE(lp_check(whole, lp, 0x0ff1));
	lp_fill(whole + lp, lp, 0x0ff3);
	EXPECT_TRUE(lp_check(second, lp, 0x0ff3));
	EXPECT_TRUE(lp_check(first, lp, 0x0ff1));

	EXPECT_EQ(munmap(second, lp), 0);
	EXPECT_EQ(munmap(first, lp), 0);
	EXPECT_EQ(munmap(whole, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * mmap() refusals, each EINVAL, mapping nothing and taking nothing: size
 * not set; offset + length past the size; an offset, or a length, that
 * is not a whole number of large pages; MAP_PRIVATE; MAP_FIXED at an
 * address that is not a large-page boundary.
 */
TEST(memfd_mmap_refusals_einval)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	unsigned long a = lp_unmapped_range(2 * lp, lp);
	int fd0, fd, lines;

	ASSERT_GE(nfree, 2);
	ASSERT_NE(a, 0);
	fd0 = mfd_new("lpt-mmap0", 0, 0);
	fd = mfd_new("lpt-mmap", 0, 2);
	lines = lp_maps_lines();

	EXPECT_ERRNO(mmap(NULL, lp, RW, MAP_SHARED, fd0, 0), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp, PROT_READ, MAP_SHARED, fd0, 0), EINVAL);

	EXPECT_ERRNO(mmap(NULL, 3 * lp, RW, MAP_SHARED, fd, 0), EINVAL);
	EXPECT_ERRNO(mmap(NULL, 2 * lp, RW, MAP_SHARED, fd, lp), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp, RW, MAP_SHARED, fd, 2 * lp), EINVAL);

	EXPECT_ERRNO(mmap(NULL, lp, RW, MAP_SHARED, fd, 4096), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp, RW, MAP_SHARED, fd, lp / 2), EINVAL);

	EXPECT_ERRNO(mmap(NULL, 4096, RW, MAP_SHARED, fd, 0), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp / 2, RW, MAP_SHARED, fd, 0), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp + 4096, RW, MAP_SHARED, fd, 0), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp - 4096, RW, MAP_SHARED, fd, lp), EINVAL);

	EXPECT_ERRNO(mmap(NULL, 2 * lp, RW, MAP_PRIVATE, fd, 0), EINVAL);
	EXPECT_ERRNO(mmap(NULL, lp, PROT_READ, MAP_PRIVATE, fd, lp), EINVAL);

	EXPECT_ERRNO(mmap((void *)(a + 4096), lp, RW, MAP_SHARED | MAP_FIXED,
			  fd, 0), EINVAL);
	EXPECT_TRUE(!mapped((char *)a, 2 * lp));

	EXPECT_EQ(lp_maps_lines(), lines);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(fsize(fd0), 0);
	EXPECT_EQ(close(fd0), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * The hint is rounded up to a large page (a hint one base page past a
 * boundary maps at the next boundary), and MAP_FIXED at a boundary maps
 * there.
 */
TEST(memfd_mmap_hint_rounded_up_fixed_at_a_boundary)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	unsigned long a = lp_unmapped_range(3 * lp, lp);
	char *p, *q;
	int fd;

	ASSERT_GE(nfree, 1);
	ASSERT_NE(a, 0);
	fd = mfd_new("lpt-hint", 0, 1);
	p = map_at((void *)(a + 4096), fd, lp, 0, RW);
	EXPECT_EQ((unsigned long)p, a + lp);
	q = mmap((void *)a, lp, RW, MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_TRUE(q != MAP_FAILED);
	EXPECT_EQ((unsigned long)q, a);
	lp_fill(q, lp, 0x41a7);
	EXPECT_TRUE(lp_check(p, lp, 0x41a7));
	EXPECT_EQ(munmap(p, lp), 0);
	EXPECT_EQ(munmap(q, lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* --------------------------------------------------------- ftruncate */

/*
 * A length that is not a whole number of large pages is EINVAL, a
 * negative one too, and takes nothing: the size stays 0, and a good
 * length is still accepted after.
 */
TEST(memfd_ftruncate_not_a_multiple_einval)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	int fd;

	ASSERT_GE(nfree, 1);
	fd = mfd_new("lpt-unaligned", 0, 0);
	EXPECT_ERRNO(ftruncate(fd, 4096), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, 1), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, lp / 2), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, lp + 4096), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, 2 * lp - 1), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, -(off_t)lp), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(ftruncate(fd, lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(fsize(fd), (long long)lp);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * The size is set once: the same size again is 0 and changes nothing
 * (data kept, nothing taken), any other (bigger, smaller, 0) is EBUSY,
 * mapped or not.
 */
TEST(memfd_ftruncate_size_set_once_ebusy)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *p;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-once", 0, 2);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_ERRNO(ftruncate(fd, lp), EBUSY);
	EXPECT_ERRNO(ftruncate(fd, 3 * lp), EBUSY);
	EXPECT_ERRNO(ftruncate(fd, 0), EBUSY);
	p = map(fd, 2 * lp, 0);
	lp_fill(p, 2 * lp, 0x0e1);
	EXPECT_EQ(ftruncate(fd, 2 * lp), 0);
	EXPECT_ERRNO(ftruncate(fd, 4 * lp), EBUSY);
	EXPECT_ERRNO(ftruncate(fd, 0), EBUSY);
	EXPECT_EQ(fsize(fd), (long long)(2 * lp));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_intact((long)(uintptr_t)p, 2 * lp, 0x0e1));
	EXPECT_EQ(munmap(p, 2 * lp), 0);
	EXPECT_EQ(ftruncate(fd, 2 * lp), 0);
	EXPECT_ERRNO(ftruncate(fd, lp), EBUSY);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * A size past TASK_SIZE (3 GiB) is ENOMEM, whatever the pool; one above
 * 2 GiB that the pool cannot give is ENOMEM too (a 32-bit size limit
 * would say EFBIG or EINVAL). Nothing taken, the size stays 0.
 */
TEST(memfd_ftruncate_beyond_task_size_enomem)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	off_t big = ((off_t)2 << 30) + lp;
	int fd;

	ASSERT_GE(nfree, 1);
	fd = mfd_new("lpt-huge", 0, 0);
	EXPECT_ERRNO(ftruncate(fd, ((off_t)3 << 30) + lp), ENOMEM);
	EXPECT_ERRNO(ftruncate(fd, (off_t)1 << 32), ENOMEM);
	EXPECT_ERRNO(ftruncate(fd, ((off_t)1 << 32) + lp), ENOMEM);
	EXPECT_ERRNO(ftruncate(fd, (off_t)1 << 40), ENOMEM);
	if (big / (off_t)lp > nfree) {
		EXPECT_ERRNO(ftruncate(fd, big), ENOMEM);
		EXPECT_ERRNO(ftruncate(fd, (off_t)3 << 30), ENOMEM);
	} else {
		TH_LOG("pool of %ld free pages holds %lld bytes: not asked",
		       nfree, (long long)big);
	}
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(ftruncate(fd, lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * A pool too short for the size is ENOMEM, all or nothing: with one
 * page left, 2 pages are refused and none is taken (the size stays 0),
 * then 1 page is given. The whole pool plus one, asked of a full pool,
 * is refused the same way.
 */
TEST(memfd_ftruncate_short_pool_enomem_takes_nothing)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), held;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-short", 0, 0);
	if ((unsigned long long)(nfree + 1) * lp <= (3ULL << 30)) {
		EXPECT_ERRNO(ftruncate(fd, (off_t)(nfree + 1) * lp), ENOMEM);
		EXPECT_EQ(lp_nfree(), nfree);
		EXPECT_EQ(fsize(fd), 0);
	}
	held = lpsys_get(0, (nfree - 1) * lp, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(held));
	EXPECT_EQ(lp_nfree(), 1);
	EXPECT_ERRNO(ftruncate(fd, 2 * lp), ENOMEM);
	EXPECT_EQ(lp_nfree(), 1);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(ftruncate(fd, lp), 0);
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_EQ(fsize(fd), (long long)lp);
	ASSERT_EQ(lpsys_free(held), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ------------------------------------------------------------ limits */

/* In a child: RLIMIT_MEMLOCK @memlock, then nobody (setresuid). */
static void nobody_with_memlock(rlim_t memlock)
{
	lp_set_memlock(memlock);
	become_nobody();
	ASSERT_EQ(geteuid(), NOBODY);
}

static void memlock_zero_child(void *arg)
{
	long nfree = *(long *)arg;
	int fd;

	nobody_with_memlock(0);
	fd = mfd("lpt-nolock", MFD_LARGEPAGE);
	ASSERT_GE(fd, 0);
	EXPECT_ERRNO(ftruncate(fd, lp_size()), EPERM);
	EXPECT_ERRNO(ftruncate(fd, 2 * lp_size()), EPERM);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(ftruncate(fd, 0), 0);
	EXPECT_EQ(close(fd), 0);
	CHILD_DONE();
}

/* nobody at an RLIMIT_MEMLOCK of 0 (no CAP_IPC_LOCK): EPERM, nothing taken. */
TEST(memfd_limits_memlock_zero_eperm)
{
	long nfree = lp_nfree();

	ASSERT_GE(nfree, 2);
	EXPECT_TRUE(CHILD_EXITED(run_child(memlock_zero_child, &nfree), 0));
	EXPECT_EQ(lp_nfree(), nfree);
}

static void memlock_one_child(void *arg)
{
	long nfree = *(long *)arg;
	unsigned long lp = lp_size();
	int fd, fd2;

	nobody_with_memlock(lp);
	fd = mfd("lpt-lock1", MFD_LARGEPAGE);
	fd2 = mfd("lpt-lock1b", MFD_LARGEPAGE);
	ASSERT_GE(fd, 0);
	ASSERT_GE(fd2, 0);
	EXPECT_ERRNO(ftruncate(fd, 2 * lp), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(fsize(fd), 0);
	/* One page fits the limit, and uses it up. */
	EXPECT_EQ(ftruncate(fd, lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_ERRNO(ftruncate(fd2, lp), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(fsize(fd2), 0);
	/* Its pages back, its charge back. */
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(ftruncate(fd2, lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd2), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	CHILD_DONE();
}

/*
 * nobody at an RLIMIT_MEMLOCK of one page: 2 pages ENOMEM, nothing
 * taken; 1 page given, and then no other; the close gives the charge
 * back with the page.
 */
TEST(memfd_limits_memlock_one_page_two_enomem)
{
	long nfree = lp_nfree();

	ASSERT_GE(nfree, 2);
	EXPECT_TRUE(CHILD_EXITED(run_child(memlock_one_child, &nfree), 0));
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * The charge is the segment's: nobody (one page of RLIMIT_MEMLOCK) sets
 * the size of a descriptor the test also holds and closes its own; while
 * the test holds it, nobody can take no other page; when the test closes
 * it, nobody can.
 */
TEST(memfd_limits_charge_stays_with_the_segment)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	struct lp_peer p;
	char *m;
	int fd, fd2;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-charged", 0, 0);
	if (lp_peer_fork(&p) == 0) {
		nobody_with_memlock(lp);
		EXPECT_EQ(ftruncate(fd, lp), 0);
		EXPECT_EQ(close(fd), 0);
		fd2 = mfd("lpt-charged2", MFD_LARGEPAGE);
		ASSERT_GE(fd2, 0);
		EXPECT_ERRNO(ftruncate(fd2, lp), ENOMEM);
		EXPECT_EQ(fsize(fd2), 0);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		EXPECT_EQ(ftruncate(fd2, lp), 0);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		EXPECT_EQ(close(fd2), 0);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(fsize(fd), (long long)lp);
	m = map(fd, lp, 0);
	EXPECT_TRUE(all_zero(m, lp));
	EXPECT_EQ(munmap(m, lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	lp_peer_send(&p, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * Mapping is not charged: nobody at an RLIMIT_MEMLOCK of 0 maps the
 * root-sized segment it inherited, read-write, sees its data and writes
 * to it; setting the size it already has is 0.
 */
TEST(memfd_limits_mapping_charges_nothing)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	pid_t pid;
	char *p, *q;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-mapper", 0, 2);
	p = map(fd, 2 * lp, 0);
	lp_fill(p, 2 * lp, 0x3a9);
	pid = fork();
	if (pid == 0) {
		nobody_with_memlock(0);
		q = map(fd, 2 * lp, 0);
		EXPECT_TRUE(lp_check(q, 2 * lp, 0x3a9));
		lp_fill(q + lp, lp, 0x3aa);
		EXPECT_EQ(ftruncate(fd, 2 * lp), 0);
		EXPECT_EQ(lp_nfree(), nfree - 2);
		EXPECT_EQ(munmap(q, 2 * lp), 0);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_TRUE(lp_check(p + lp, lp, 0x3aa));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(p, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

static void group_member_child(void *arg)
{
	long nfree = *(long *)arg;
	int fd;

	lp_set_memlock(0);
	become_nobody_in(MEMBERS);
	fd = mfd("lpt-member", MFD_LARGEPAGE);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(ftruncate(fd, 2 * lp_size()), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	CHILD_DONE();
}

/*
 * A member of kernel.largepage_group sets the size beyond its
 * RLIMIT_MEMLOCK (0 here) as it gets pages beyond it.
 */
TEST(memfd_limits_group_member_beyond_memlock)
{
	long nfree = lp_nfree(), old = read_long(LPGROUP);
	char text[32];
	int st;

	ASSERT_GE(nfree, 2);
	ASSERT_GE(old, 0);
	ASSERT_EQ(write_text(LPGROUP, "4243"), 0);
	st = run_child(group_member_child, &nfree);
	snprintf(text, sizeof(text), "%ld", old);
	EXPECT_EQ(write_text(LPGROUP, text), 0);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * The misc cgroup: a root process in a cgroup at "largepage 1" asks for
 * 2 pages: ENOMEM, nothing taken or charged, the refusal counted in
 * misc.events; 1 page is given and charged there. The charge is the
 * segment's: it stays after that process exits, while the test (in
 * another cgroup) holds the descriptor, and goes with the last close.
 * The nopae kernel has no misc controller: a declared skip there.
 */
TEST(memfd_misccg_max_enomem_charge_stays_with_the_segment)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	struct lp_peer p;
	struct statfs sf;
	char cg[128];
	int fd;

	ASSERT_EQ(statfs(CG_ROOT, &sf), 0);
	if (!misc_built())
		SKIP("kernel without CONFIG_CGROUP_MISC: no misc controller");
	ASSERT_GE(nfree, 2);
	ASSERT_EQ(cg_new(cg, sizeof(cg), "memfd", "1"), 0);
	fd = mfd_new("lpt-misc", 0, 0);
	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);
		EXPECT_ERRNO(ftruncate(fd, 2 * lp), ENOMEM);
		EXPECT_EQ(fsize(fd), 0);
		EXPECT_EQ(lp_nfree(), nfree);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		EXPECT_EQ(ftruncate(fd, lp), 0);
		EXPECT_EQ(lp_nfree(), nfree - 1);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	ASSERT_EQ(cg_enter(cg, p.pid), 0);
	lp_peer_send(&p, 0);
	lp_peer_recv(&p);
	EXPECT_EQ(cg_current(cg), 0);
	EXPECT_EQ(cg_events(cg), 1);
	EXPECT_EQ(lp_nfree(), nfree);
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
	EXPECT_EQ(cg_current(cg), 1);
	EXPECT_EQ(cg_events(cg), 1);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(fsize(fd), (long long)lp);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(settle_current(cg, 0), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(cg_rmdir(cg), 0);
}

/* ---------------------------------------------------------- lifetime */

/*
 * Close first, then unmap: the mappings keep the segment (and its data)
 * after the descriptor is closed; the pages go back at the last munmap
 * and not before.
 */
TEST(memfd_close_then_munmap_returns_pages_at_the_last)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a, *b;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-closefirst", 0, 2);
	a = map(fd, 2 * lp, 0);
	b = map(fd, lp, lp);
	lp_fill(a, 2 * lp, 0xc105);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_intact((long)(uintptr_t)a, 2 * lp, 0xc105));
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(*(volatile uint32_t *)b, 0xc105 ^ (uint32_t)lp);
	EXPECT_EQ(munmap(b, lp), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* Unmap first, then close: the descriptor keeps the pages until closed. */
TEST(memfd_munmap_then_close_returns_pages_at_the_last)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a;
	int fd, fd2;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-unmapfirst", 0, 2);
	fd2 = dup(fd);
	ASSERT_GE(fd2, 0);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0x0c1);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd2), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* A process that exits holding the descriptor and two mappings gives all back. */
TEST(memfd_exit_holding_fd_and_mappings_returns_pages)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	struct lp_peer p;
	char *a, *b;
	int fd;

	ASSERT_GE(nfree, 2);
	if (lp_peer_fork(&p) == 0) {
		fd = mfd_new("lpt-exit", 0, 2);
		a = map(fd, 2 * lp, 0);
		b = map(fd, lp, 0);
		lp_fill(a, lp, 0xe1);
		EXPECT_TRUE(lp_check(b, lp, 0xe1));
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), nfree - 2);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* The pages stay with the segment: unmapped and mapped again, the data is there. */
TEST(memfd_data_kept_across_unmap_and_remap)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-remap", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0x4e4a);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	a = map(fd, lp, lp);
	EXPECT_EQ(*(volatile uint32_t *)a, 0x4e4a ^ (uint32_t)lp);
	EXPECT_EQ(munmap(a, lp), 0);
	a = map(fd, 2 * lp, 0);
	EXPECT_TRUE(lp_check(a, 2 * lp, 0x4e4a));
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ----------------------------------------------------------- sharing */

/*
 * fork(): the child inherits descriptor and mapping, the same pages (the
 * pool does not move): its writes through the inherited mapping are the
 * parent's, and a mapping it makes of the inherited descriptor sees the
 * parent's data. Its exit leaves the segment to the parent.
 */
TEST(memfd_fork_child_shares_the_segment)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), kb;
	struct lp_peer p;
	char *a, *q;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-fork", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, lp, 0xf01);
	lp_fill(a + lp, lp, 0xf00);
	kb = status_kb(0, "LargePages:");
	if (lp_peer_fork(&p) == 0) {
		EXPECT_EQ(status_kb(0, "LargePages:"), kb);
		EXPECT_TRUE(lp_check(a, lp, 0xf01));
		EXPECT_TRUE(lp_check(a + lp, lp, 0xf00));
		lp_fill(a + lp, lp, 0xf02);
		q = map(fd, lp, 0);
		EXPECT_TRUE(lp_check(q, lp, 0xf01));
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		EXPECT_TRUE(lp_check(q, lp, 0xf03));
		CHILD_DONE();
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), nfree - 2);
	EXPECT_TRUE(lp_check(a + lp, lp, 0xf02));
	lp_fill(a, lp, 0xf03);
	lp_peer_send(&p, 0);
	EXPECT_TRUE(CHILD_EXITED(lp_peer_wait(&p), 0));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_check(a, lp, 0xf03));
	EXPECT_TRUE(lp_check(a + lp, lp, 0xf02));
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * SCM_RIGHTS to an unrelated process (this program exec'd again, forked
 * before the memfd existed): it maps what it receives and sees the
 * sender's bytes, the sender sees its writes, the pool does not move; it
 * keeps the segment alone after the sender has closed and unmapped
 * everything, and its exit gives the pages back.
 */
TEST(memfd_scm_rights_to_an_unrelated_process)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char arg[16], byte;
	int sv[2], fd;
	pid_t pid;
	char *a;

	ASSERT_GE(nfree, 2);
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	if (pid == 0) {
		/* Only the receiver's end crosses the exec. */
		if (fcntl(sv[1], F_SETFD, 0))
			_exit(20);
		snprintf(arg, sizeof(arg), "%d", sv[1]);
		execl("/proc/self/exe", "memfd", "--scm-receiver", arg,
		      (char *)NULL);
		_exit(21);
	}
	ASSERT_GT(pid, 0);
	close(sv[1]);
	fd = mfd_new("lpt-scm", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, lp, SCM_SEED_SENDER);
	lp_fill(a + lp, lp, SCM_SEED_SENDER);
	ASSERT_EQ(send_fd(sv[0], fd), 0);
	ASSERT_EQ(read(sv[0], &byte, 1), 1);
	EXPECT_EQ(byte, 'W');
	EXPECT_TRUE(lp_check(a + lp, lp, SCM_SEED_RECEIVER));
	EXPECT_TRUE(lp_check(a, lp, SCM_SEED_SENDER));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(write(sv[0], "x", 1), 1);
	close(sv[0]);
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * open("/proc/self/fd/N", O_RDWR): a new open file (its own offset) of
 * the same segment: same inode, same size, its mapping sees the same
 * bytes, its size is as set (EBUSY to another), the pool does not move,
 * and either descriptor keeps the segment.
 */
TEST(memfd_proc_fd_reopen_is_the_same_segment)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	struct stat s1, s2;
	char path[64], *a, *b;
	int fd, fd2;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-reopen", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0x9e0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	fd2 = open(path, O_RDWR);
	ASSERT_GE(fd2, 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(fstat(fd, &s1), 0);
	ASSERT_EQ(fstat(fd2, &s2), 0);
	EXPECT_EQ(s1.st_ino, s2.st_ino);
	EXPECT_EQ(s1.st_dev, s2.st_dev);
	EXPECT_EQ(s2.st_size, (off_t)(2 * lp));
	EXPECT_EQ(lseek(fd, lp, SEEK_SET), (off_t)lp);
	EXPECT_EQ(lseek(fd2, 0, SEEK_CUR), 0);

	b = map(fd2, 2 * lp, 0);
	EXPECT_TRUE(lp_check(b, 2 * lp, 0x9e0));
	lp_fill(b + lp, lp, 0x9e1);
	EXPECT_TRUE(lp_check(a + lp, lp, 0x9e1));
	EXPECT_EQ(ftruncate(fd2, 2 * lp), 0);
	EXPECT_ERRNO(ftruncate(fd2, lp), EBUSY);
	EXPECT_EQ(lp_nfree(), nfree - 2);

	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_check(b + lp, lp, 0x9e1));
	EXPECT_EQ(munmap(b, 2 * lp), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd2), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ------------------------------------------------------------ munmap */

/*
 * munmap() of a whole memfd mapping is 0 and leaves nothing mapped; so
 * is one munmap() over two adjacent whole mappings (the two halves of
 * the segment, side by side).
 */
TEST(memfd_munmap_of_whole_mappings)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), kb = status_kb(0, "LargePages:");
	unsigned long r;
	char *a, *lo, *hi;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-munmap", 0, 2);
	a = map(fd, 2 * lp, 0);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_TRUE(!mapped(a, 2 * lp));

	/* The two halves side by side, the second first. */
	r = lp_unmapped_range(2 * lp, lp);
	ASSERT_NE(r, 0);
	lo = mmap((void *)r, lp, RW, MAP_SHARED | MAP_FIXED, fd, lp);
	ASSERT_TRUE(lo != MAP_FAILED);
	hi = mmap((void *)(r + lp), lp, RW, MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_TRUE(hi != MAP_FAILED);
	lp_fill(lo, lp, 0x10);
	lp_fill(hi, lp, 0x11);
	EXPECT_EQ(status_kb(0, "LargePages:"), kb + (long)(2 * lp >> 10));
	EXPECT_EQ(munmap(lo, 2 * lp), 0);
	EXPECT_TRUE(!mapped(lo, 2 * lp));
	EXPECT_EQ(status_kb(0, "LargePages:"), kb);
	EXPECT_EQ(lp_nfree(), nfree - 2);

	a = map(fd, 2 * lp, 0);
	EXPECT_TRUE(lp_check(a, lp, 0x11));
	EXPECT_TRUE(lp_check(a + lp, lp, 0x10));
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * munmap() of part of a memfd mapping (its second large page, its first,
 * one base page, its first half) is EINVAL, and the mapping stays,
 * readable and writable, its data intact.
 */
TEST(memfd_munmap_of_part_einval_mapping_stays)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-partial", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0x9a7);
	EXPECT_ERRNO(munmap(a + lp, lp), EINVAL);
	EXPECT_ERRNO(munmap(a, lp), EINVAL);
	EXPECT_ERRNO(munmap(a, 4096), EINVAL);
	EXPECT_ERRNO(munmap(a + lp + 4096, 4096), EINVAL);
	EXPECT_ERRNO(munmap(a + 2 * lp - 4096, 4096), EINVAL);
	EXPECT_ERRNO(munmap(a + 4096, 2 * lp - 4096), EINVAL);
	EXPECT_TRUE(mapped(a, 2 * lp));
	EXPECT_TRUE(lp_intact((long)(uintptr_t)a, 2 * lp, 0x9a7));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * A range that covers a whole memfd mapping and a get_large_pages()
 * mapping beside it is EINVAL: both stay, with their data. Each then
 * goes its own way.
 */
TEST(memfd_munmap_across_a_get_mapping_einval)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), g;
	unsigned long r = lp_unmapped_range(3 * lp, lp);
	char *m;
	int fd;

	ASSERT_GE(nfree, 3);
	ASSERT_NE(r, 0);
	fd = mfd_new("lpt-mixed", 0, 2);
	g = lpsys_get(r, lp, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(g));
	ASSERT_EQ((unsigned long)g, r);
	m = mmap((void *)(r + lp), 2 * lp, RW, MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_TRUE(m != MAP_FAILED);
	ASSERT_EQ((unsigned long)m, r + lp);
	lp_fill(LP_PTR(g), lp, 0x6e7);
	lp_fill(m, 2 * lp, 0x3fd);
	EXPECT_EQ(lp_nfree(), nfree - 3);

	EXPECT_ERRNO(munmap(LP_PTR(g), 3 * lp), EINVAL);
	EXPECT_ERRNO(munmap(LP_PTR(g), lp), EINVAL);
	EXPECT_ERRNO(munmap(m - 4096, 2 * lp + 4096), EINVAL);
	EXPECT_TRUE(lp_intact(g, lp, 0x6e7));
	EXPECT_TRUE(lp_intact((long)(uintptr_t)m, 2 * lp, 0x3fd));
	EXPECT_EQ(lp_nfree(), nfree - 3);

	EXPECT_EQ(lpsys_free(g), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_intact((long)(uintptr_t)m, 2 * lp, 0x3fd));
	EXPECT_EQ(munmap(m, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * free_large_pages() at a memfd mapping's start unmaps it (0); the
 * descriptor still holds the pages and their data.
 */
TEST(memfd_free_large_pages_unmaps_a_memfd_mapping)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), kb = status_kb(0, "LargePages:");
	char *a;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-free", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0xf4ee);
	EXPECT_EQ(lpsys_free((unsigned long)a), 0);
	EXPECT_TRUE(!mapped(a, 2 * lp));
	EXPECT_EQ(status_kb(0, "LargePages:"), kb);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	a = map(fd, 2 * lp, 0);
	EXPECT_TRUE(lp_check(a, 2 * lp, 0xf4ee));
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* mprotect(), mremap() and madvise(MADV_DONTNEED): EINVAL, the mapping intact. */
TEST(memfd_mprotect_mremap_madvise_einval)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-vmcalls", 0, 2);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0x77);
	EXPECT_ERRNO(mprotect(a, 2 * lp, PROT_READ), EINVAL);
	EXPECT_ERRNO(mprotect(a, lp, PROT_READ), EINVAL);
	EXPECT_ERRNO(mremap(a, 2 * lp, 4 * lp, MREMAP_MAYMOVE), EINVAL);
	EXPECT_ERRNO(mremap(a, 2 * lp, lp, 0), EINVAL);
	EXPECT_ERRNO(madvise(a, 2 * lp, MADV_DONTNEED), EINVAL);
	EXPECT_TRUE(lp_intact((long)(uintptr_t)a, 2 * lp, 0x77));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ------------------------------------------- read, write, fallocate */

/*
 * read() and pread() give the segment's bytes (a whole large page at
 * once, across the boundary between two, short at the end) and 0 at or
 * past the size; read() moves the offset; SEEK_SET and SEEK_END (from
 * the size) work. Before the size is set, a read is 0.
 */
TEST(memfd_read_pread_lseek)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char buf[8192], *big, *a;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-read", 0, 0);
	EXPECT_EQ(read(fd, buf, sizeof(buf)), 0);
	EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), 0);
	ASSERT_EQ(ftruncate(fd, 2 * lp), 0);
	a = map(fd, 2 * lp, 0);
	EXPECT_EQ(pread(fd, buf, 16, lp), 16);
	EXPECT_TRUE(all_zero(buf, 16));
	lp_fill(a, 2 * lp, 0x4ead);
	memcpy(a + lp - 8, "abcdefghijklmnop", 16);

	EXPECT_EQ(pread(fd, buf, 16, lp - 8), 16);
	EXPECT_EQ(memcmp(buf, "abcdefghijklmnop", 16), 0);
	EXPECT_EQ(pread(fd, buf, 8192, lp - 4096), 8192);
	EXPECT_EQ(memcmp(buf, a + lp - 4096, 8192), 0);
	EXPECT_EQ(pread(fd, buf, 16, 2 * lp - 8), 8);
	EXPECT_EQ(memcmp(buf, a + 2 * lp - 8, 8), 0);
	EXPECT_EQ(pread(fd, buf, 16, 2 * lp), 0);
	EXPECT_EQ(pread(fd, buf, 16, 3 * lp), 0);
	big = malloc(lp);
	ASSERT_TRUE(big != NULL);
	EXPECT_EQ(pread(fd, big, lp, lp), (ssize_t)lp);
	EXPECT_EQ(memcmp(big, a + lp, lp), 0);
	free(big);

	EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0);
	EXPECT_EQ(read(fd, buf, 16), 16);
	EXPECT_EQ(memcmp(buf, a, 16), 0);
	EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 16);
	EXPECT_EQ(lseek(fd, lp - 8, SEEK_SET), (off_t)(lp - 8));
	EXPECT_EQ(read(fd, buf, 16), 16);
	EXPECT_EQ(memcmp(buf, "abcdefghijklmnop", 16), 0);
	EXPECT_EQ(lseek(fd, 0, SEEK_END), (off_t)(2 * lp));
	EXPECT_EQ(read(fd, buf, 16), 0);
	EXPECT_EQ(lseek(fd, -(off_t)lp, SEEK_END), (off_t)lp);
	EXPECT_EQ(read(fd, buf, 4), 4);
	EXPECT_EQ(memcmp(buf, a + lp, 4), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * write() and pwrite() are EINVAL, sized or not: nothing written,
 * nothing taken, the size unchanged.
 */
TEST(memfd_write_pwrite_einval)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a;
	int fd0, fd;

	ASSERT_GE(nfree, 1);
	fd0 = mfd_new("lpt-write0", 0, 0);
	EXPECT_ERRNO(write(fd0, "x", 1), EINVAL);
	EXPECT_ERRNO(pwrite(fd0, "x", 1, 0), EINVAL);
	EXPECT_EQ(fsize(fd0), 0);
	EXPECT_EQ(lp_nfree(), nfree);

	fd = mfd_new("lpt-write", 0, 1);
	a = map(fd, lp, 0);
	lp_fill(a, lp, 0x3e17);
	EXPECT_ERRNO(write(fd, "xxxx", 4), EINVAL);
	EXPECT_ERRNO(pwrite(fd, "xxxx", 4, 0), EINVAL);
	EXPECT_ERRNO(pwrite(fd, "xxxx", 4, lp - 4), EINVAL);
	EXPECT_ERRNO(pwrite(fd, "xxxx", 4, lp), EINVAL);
	EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0);
	EXPECT_EQ(fsize(fd), (long long)lp);
	EXPECT_TRUE(lp_check(a, lp, 0x3e17));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(munmap(a, lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(close(fd0), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * fallocate(0) within the size is 0 and changes nothing; any other mode
 * (PUNCH_HOLE|KEEP_SIZE, KEEP_SIZE) or a range past the size (before it
 * is set too) is EOPNOTSUPP, taking nothing and changing nothing.
 */
TEST(memfd_fallocate)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	char *a;
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-falloc", 0, 0);
	EXPECT_ERRNO(fallocate(fd, 0, 0, lp), EOPNOTSUPP);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	ASSERT_EQ(ftruncate(fd, 2 * lp), 0);
	a = map(fd, 2 * lp, 0);
	lp_fill(a, 2 * lp, 0xfa11);

	EXPECT_EQ(fallocate(fd, 0, 0, 2 * lp), 0);
	EXPECT_EQ(fallocate(fd, 0, lp, lp), 0);
	EXPECT_EQ(fallocate(fd, 0, 4096, 4096), 0);
	EXPECT_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       0, lp), EOPNOTSUPP);
	EXPECT_ERRNO(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, lp), EOPNOTSUPP);
	EXPECT_ERRNO(fallocate(fd, 0, 0, 3 * lp), EOPNOTSUPP);
	EXPECT_ERRNO(fallocate(fd, 0, lp, lp + 4096), EOPNOTSUPP);
	EXPECT_ERRNO(fallocate(fd, 0, 2 * lp, lp), EOPNOTSUPP);
	EXPECT_EQ(fsize(fd), (long long)(2 * lp));
	EXPECT_TRUE(lp_intact((long)(uintptr_t)a, 2 * lp, 0xfa11));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(a, 2 * lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ------------------------------------------------------------- seals */

/* Without MFD_ALLOW_SEALING: F_SEAL_SEAL from the start, F_ADD_SEALS EPERM. */
TEST(memfd_seals_without_allow_sealing)
{
	long nfree = lp_nfree();
	int fd;

	ASSERT_GE(nfree, 1);
	fd = mfd_new("lpt-noseal", 0, 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), EPERM);
	EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	EXPECT_EQ(ftruncate(fd, lp_size()), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * MFD_ALLOW_SEALING: no seal at first; F_SEAL_GROW on a size of 0 makes
 * setting any size EPERM (nothing taken, size 0; 0 is still 0); seals
 * read back; after F_SEAL_SEAL, F_ADD_SEALS is EPERM.
 */
TEST(memfd_seal_grow_before_the_size)
{
	long nfree = lp_nfree();
	int fd;

	ASSERT_GE(nfree, 1);
	fd = mfd_new("lpt-grow", MFD_ALLOW_SEALING, 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), 0);
	EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_GROW);
	EXPECT_ERRNO(ftruncate(fd, lp_size()), EPERM);
	EXPECT_ERRNO(ftruncate(fd, 2 * lp_size()), EPERM);
	EXPECT_EQ(fsize(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(ftruncate(fd, 0), 0);
	EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL), 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_GROW | F_SEAL_SEAL);
	EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_GROW | F_SEAL_SEAL);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(close(fd), 0);
}

/*
 * On a sized segment the seals come first: with F_SEAL_SHRINK a smaller
 * size is EPERM (not EBUSY) while a bigger one is still EBUSY; with
 * F_SEAL_GROW too, bigger is EPERM. The same size is 0 throughout.
 */
TEST(memfd_seal_shrink_and_grow_on_a_sized_segment)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	int fd;

	ASSERT_GE(nfree, 2);
	fd = mfd_new("lpt-shrink", MFD_ALLOW_SEALING, 2);
	EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK);
	EXPECT_ERRNO(ftruncate(fd, lp), EPERM);
	EXPECT_ERRNO(ftruncate(fd, 0), EPERM);
	EXPECT_ERRNO(ftruncate(fd, 3 * lp), EBUSY);
	EXPECT_EQ(ftruncate(fd, 2 * lp), 0);
	EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW);
	EXPECT_ERRNO(ftruncate(fd, 3 * lp), EPERM);
	EXPECT_ERRNO(ftruncate(fd, lp), EPERM);
	EXPECT_EQ(ftruncate(fd, 2 * lp), 0);
	EXPECT_EQ(fsize(fd), (long long)(2 * lp));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * F_SEAL_WRITE while a read-write MAP_SHARED mapping exists: EBUSY, no
 * seal added. Once it is unmapped the seal is added, and a read-write
 * MAP_SHARED mmap() is EPERM; the data is still read by pread().
 */
TEST(memfd_seal_write_busy_while_mapped)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	int fd, lines;
	uint32_t w;
	char *a;

	ASSERT_GE(nfree, 1);
	fd = mfd_new("lpt-sealw", MFD_ALLOW_SEALING, 1);
	a = map(fd, lp, 0);
	lp_fill(a, lp, 0x5ea1);
	EXPECT_ERRNO(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), 0);
	EXPECT_EQ(munmap(a, lp), 0);
	EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_WRITE);
	lines = lp_maps_lines();
	EXPECT_ERRNO(mmap(NULL, lp, RW, MAP_SHARED, fd, 0), EPERM);
	EXPECT_EQ(lp_maps_lines(), lines);
	EXPECT_EQ(pread(fd, &w, 4, 4096), 4);
	EXPECT_EQ(w, 0x5ea1 ^ 4096);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * F_SEAL_FUTURE_WRITE: a PROT_WRITE MAP_SHARED mmap() is EPERM, a
 * PROT_READ one is given and sees the data; a write through it faults.
 */
TEST(memfd_seal_future_write)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree();
	int fd;
	char *a;

	ASSERT_GE(nfree, 1);
	fd = mfd_new("lpt-sealfw", MFD_ALLOW_SEALING, 1);
	a = map(fd, lp, 0);
	lp_fill(a, lp, 0xf5ea);
	EXPECT_EQ(munmap(a, lp), 0);
	EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
	EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_FUTURE_WRITE);
	EXPECT_ERRNO(mmap(NULL, lp, RW, MAP_SHARED, fd, 0), EPERM);
	EXPECT_ERRNO(mmap(NULL, lp, PROT_WRITE, MAP_SHARED, fd, 0), EPERM);
	a = map_at(NULL, fd, lp, 0, PROT_READ);
	EXPECT_TRUE(lp_check(a, lp, 0xf5ea));
	EXPECT_TRUE(touch_faults(a, 1));
	EXPECT_TRUE(lp_check(a, lp, 0xf5ea));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(munmap(a, lp), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ------------------------------------------------------------- flags */

/*
 * MFD_LARGEPAGE with MFD_HUGETLB, with a MFD_HUGE_* size (with or
 * without MFD_HUGETLB), or with an unknown bit: EINVAL, no descriptor
 * left behind (the next open gets the number it would have), nothing
 * taken.
 */
TEST(memfd_bad_flags_einval_no_fd_leaked)
{
	long nfree = lp_nfree();
	int next = next_fd();

	ASSERT_GE(next, 0);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | MFD_HUGETLB), EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | (21U << MFD_HUGE_SHIFT)),
		     EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | (22U << MFD_HUGE_SHIFT)),
		     EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | MFD_HUGETLB |
			 (21U << MFD_HUGE_SHIFT)), EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | MFD_HUGETLB | MFD_CLOEXEC),
		     EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | 0x8U), EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | 0x00200000U), EINVAL);
	EXPECT_ERRNO(mfd("lpt-bad", MFD_LARGEPAGE | 0x80000000U), EINVAL);
	EXPECT_EQ(next_fd(), next);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* -------------------------------------------------------------- race */

struct sizer {
	pthread_barrier_t *go;
	int fd;
	off_t len;
	int ret, err;
};

static void *sizer_run(void *arg)
{
	struct sizer *s = arg;

	pthread_barrier_wait(s->go);
	s->ret = ftruncate(s->fd, s->len);
	s->err = s->ret ? errno : 0;
	return NULL;
}

/*
 * Two threads set the size of one memfd at once, @p1 and @p2 pages, 20
 * times: both at the same size both return 0 and one set of pages is
 * taken; at different sizes one returns 0, the other EBUSY, and the size
 * and the pool are the winner's.
 */
static void race_sizes(long p1, long p2)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), want;
	pthread_barrier_t go;
	struct sizer s[2];
	pthread_t t[2];
	int i, k, fd;

	ASSERT_GE(nfree, p1 + p2);
	for (i = 0; i < 20; i++) {
		fd = mfd_new("lpt-race", 0, 0);
		ASSERT_EQ(pthread_barrier_init(&go, NULL, 2), 0);
		for (k = 0; k < 2; k++) {
			s[k] = (struct sizer){ &go, fd, (off_t)(k ? p2 : p1) * lp,
					       -2, 0 };
			ASSERT_EQ(pthread_create(&t[k], NULL, sizer_run, &s[k]), 0);
		}
		for (k = 0; k < 2; k++)
			ASSERT_EQ(pthread_join(t[k], NULL), 0);
		pthread_barrier_destroy(&go);
		if (p1 == p2) {
			EXPECT_EQ(s[0].ret, 0);
			EXPECT_EQ(s[1].ret, 0);
			want = p1;
		} else {
			EXPECT_EQ(!s[0].ret + !s[1].ret, 1);
			EXPECT_EQ(s[0].ret ? s[0].err : s[1].err, EBUSY);
			want = s[0].ret ? p2 : p1;
		}
		EXPECT_EQ(lp_nfree(), nfree - want);
		EXPECT_EQ(fsize(fd), (long long)(want * lp));
		EXPECT_EQ(close(fd), 0);
		EXPECT_EQ(lp_nfree(), nfree);
		if (harness_failed) {
			TH_LOG("round %d: %d (%s), %d (%s)", i, s[0].ret,
			       strerror(s[0].err), s[1].ret, strerror(s[1].err));
			return;
		}
	}
}

TEST(memfd_racing_ftruncate_same_size_takes_once)
{
	race_sizes(2, 2);
}

TEST(memfd_racing_ftruncate_different_sizes_one_wins)
{
	race_sizes(1, 2);
}
