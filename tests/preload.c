// SPDX-License-Identifier: GPL-2.0
/*
 * liblargepage.so.1, the LD_PRELOAD library (liblargepage(7)): the
 * hugetlbfs requests of a dynamically linked program served from the
 * large-page pool, everything else left alone.
 *
 * This test is dynamic (LD_PRELOAD only works there) and runs itself
 * under the library: without liblargepage.so in LD_PRELOAD it adds it
 * ($LP_PRELOAD_LIB, default /usr/lib/i386-linux-gnu/liblargepage.so.1)
 * and re-executes.
 * It calls mmap(), shmget(), memfd_create() and friends as an unmodified
 * program would; the pool's LargePages_Free shows where the memory came
 * from.
 *
 * "preload --attach KEY" is the helper of shm_key_attached_by_other_process:
 * an unrelated process (a fresh exec, nothing inherited) that attaches
 * the segment by its key. "preload --check-env PRELOAD FALLBACK" is
 * lpctl_run_preloads_library_once's: the program lpctl run starts.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#if __has_include(<linux/magic.h>)
#include <linux/magic.h>
#endif

#include "lp.h"

#define HUGE_ANON	(MAP_ANONYMOUS | MAP_HUGETLB)
#define KEY_BASE	0x4c507000	/* far from the other suites' keys */
/* What lpctl run preloads: userspace/Makefile's LIBDIR and SONAME. */
#define PRELOAD_LIB	"/usr/lib/i386-linux-gnu/liblargepage.so.1"
#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"
#define MSG_PARENT	"written by the creator"
#define MSG_CHILD	"written by the other process"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT	26
#endif
/* The kernel's own flag (lp.h has it too, from the patched uapi). */
#ifndef MFD_LARGEPAGE
#define MFD_LARGEPAGE	0x00100000U
#endif
/* <linux/memfd.h>'s encoding, the same as MAP_HUGE_*'s. */
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT	26
#endif
/* fstatfs()'s f_type of a memfd of the pool, and of shmem's. */
#ifndef LARGEPAGE_MAGIC
#define LARGEPAGE_MAGIC	0x4c504147
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC	0x01021994
#endif

static unsigned long ps;	/* the large page size */

/* ------------------------------------------------------------ helpers */

/* The /proc/self/maps line of the mapping that holds addr: 1, or 0. */
static int maps_line(const void *addr, char *line, size_t size)
{
	unsigned long a = (unsigned long)addr;

	return lp_maps_find(0, a, a + 1, line, size) == 1;
}

static int is_mapped(const void *addr)
{
	char line[512];

	return maps_line(addr, line, sizeof(line));
}

/* Is addr in a large-page mapping (the kernel names them [largepage])? */
static int is_largepage(const void *addr)
{
	char line[512];

	return maps_line(addr, line, sizeof(line)) &&
	       strstr(line, "[largepage]");
}

/* Is addr in a mapping of the memfd name (/memfd:NAME (deleted))? */
static int is_memfd_map(const void *addr, const char *name)
{
	char line[512], want[64];

	snprintf(want, sizeof(want), "/memfd:%s (deleted)", name);
	return maps_line(addr, line, sizeof(line)) && strstr(line, want);
}

/* fstatfs()'s f_type of fd: which file system's memfd it is; 0 if none. */
static unsigned long fs_type(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) ? 0 : (unsigned long)sfs.f_type;
}

/* fstat()'s st_size of fd, or -1. */
static long long fd_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_size;
}

#define ASSERT_MAPPED(p) do {						\
	if ((void *)(p) == MAP_FAILED || (void *)(p) == (void *)-1) {	\
		TH_LOG("%s failed: %s", #p, strerror(errno));		\
		HARNESS_FAIL(1);					\
	}								\
} while (0)

/* A pointer-returning call that must fail with errno e. */
#define EXPECT_FAILED(call, fail, e) do {				\
	void *__p;							\
	errno = 0;							\
	__p = (void *)(call);						\
	if (__p != (void *)(fail) || errno != (e)) {			\
		TH_LOG("expected %s to fail with %s, got %p errno %d (%s)", \
		       #call, #e, __p, errno, strerror(errno));		\
		HARNESS_FAIL(0);					\
	}								\
} while (0)

static unsigned long align_up(unsigned long a, unsigned long to)
{
	return (a + to - 1) & ~(to - 1);
}

/* A PROT_NONE reservation of len bytes, as OpenJDK makes for its heap. */
static char *reserve(unsigned long len)
{
	return mmap(NULL, len, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

/* The SysV segments in the system (lines of /proc/sysvipc/shm). */
static int sysv_segments(void)
{
	int n = file_lines("/proc/sysvipc/shm", NULL);

	return n < 0 ? -1 : n - 1;	/* less the header */
}

/* Send stderr to a new temporary file; its fd, for count_lines(). */
static int capture_stderr(void)
{
	char path[] = "/tmp/preload-stderr-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		return -1;
	unlink(path);
	return fd;
}

/* The lines in the file fd, all of them logged. */
static int count_lines(int fd, const char *prefix)
{
	char buf[1024], *line, *save;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	int lines = 0;

	if (n < 0)
		return -1;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		TH_LOG("stderr: %s", line);
		if (!prefix || !strncmp(line, prefix, strlen(prefix)))
			lines++;
		else
			lines += 1000;	/* a line that is not the warning */
	}
	return lines;
}

/* Which object defines the symbol name as the program sees it. */
static const char *defined_in(const char *name)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, name);

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "(none)";
	return info.dli_fname;
}

/* ----------------------------------------------------------- preload */

TEST(preload_library_interposes_the_calls)
{
	static const char *const calls[] = {
		"mmap", "mmap64", "munmap", "shmget", "shmat", "shmdt",
		"shmctl", "memfd_create",
	};
	const char *env = getenv("LD_PRELOAD");
	size_t i;

	ASSERT_TRUE(env && strstr(env, "liblargepage.so"));
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		const char *obj = defined_in(calls[i]);

		if (!strstr(obj, "liblargepage.so")) {
			TH_LOG("%s comes from %s", calls[i], obj);
			HARNESS_FAIL(0);
		}
	}
}

/* --------------------------------------------------------------- mmap */

TEST(mmap_shared_hugetlb_from_pool_shared_with_child)
{
	unsigned long len = 2 * ps;
	long nfree = lp_nfree();
	char *p = mmap(NULL, len, RW, MAP_SHARED | HUGE_ANON, -1, 0);
	pid_t pid;

	ASSERT_MAPPED(p);
	EXPECT_EQ((unsigned long)p % ps, 0);
	EXPECT_TRUE(is_largepage(p) && is_largepage(p + len - 1));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_zeroed(p, len));
	lp_fill(p, len, 0x7001);
	pid = fork();
	if (pid == 0) {
		/* Inherited: same pages, none taken by fork(). */
		EXPECT_TRUE(lp_check(p, len, 0x7001));
		lp_fill(p, len, 0x7101);
		EXPECT_EQ(lp_nfree(), nfree - 2);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_TRUE(lp_check(p, len, 0x7101));
	EXPECT_EQ(munmap(p, len), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(p));
}

TEST(mmap_private_hugetlb_not_inherited)
{
	unsigned long len = ps;
	long nfree = lp_nfree();
	char *p = mmap(NULL, len, RW, MAP_PRIVATE | HUGE_ANON, -1, 0);
	pid_t pid;

	ASSERT_MAPPED(p);
	EXPECT_TRUE(is_largepage(p));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	lp_fill(p, len, 0x7002);
	pid = fork();
	if (pid == 0) {
		/* get_large_pages(MAP_PRIVATE): no mapping in the child. */
		EXPECT_TRUE(!is_mapped(p));
		/* Not tracked here: munmap() of the hole is the kernel's 0. */
		EXPECT_EQ(munmap(p, len), 0);
		EXPECT_EQ(lp_nfree(), nfree - 1);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_TRUE(lp_check(p, len, 0x7002));
	EXPECT_EQ(munmap(p, len), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(mmap_unaligned_length_rounded_to_large_page)
{
	long nfree = lp_nfree();
	char *p = mmap(NULL, ps + 4096, RW, MAP_PRIVATE | HUGE_ANON, -1, 0);
	char *q;

	ASSERT_MAPPED(p);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	/* The whole rounded length is there, as with hugetlbfs. */
	EXPECT_TRUE(is_largepage(p + 2 * ps - 1));
	p[2 * ps - 1] = 1;
	q = mmap(NULL, 100, RW, MAP_SHARED | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(q);
	EXPECT_EQ(lp_nfree(), nfree - 3);
	/*
	 * munmap() does not round to the large page, as hugetlbfs does
	 * not: the length given to mmap() ends inside the last large page
	 * (EINVAL, all kept), the rounded one releases all of it.
	 */
	EXPECT_ERRNO(munmap(p, ps + 4096), EINVAL);
	EXPECT_ERRNO(munmap(q, 100), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 3);
	EXPECT_EQ(munmap(p, 2 * ps), 0);
	EXPECT_EQ(munmap(q, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(p + ps));
}

TEST(mmap_huge_size_bits_must_match)
{
	int shift = ps == 2UL << 20 ? 21 : 22;
	int other = shift == 21 ? 22 : 21;
	long nfree = lp_nfree();
	char *p = mmap(NULL, ps, RW,
		       MAP_PRIVATE | HUGE_ANON | shift << MAP_HUGE_SHIFT, -1, 0);

	ASSERT_MAPPED(p);
	EXPECT_TRUE(is_largepage(p));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(munmap(p, ps), 0);
	/* hugetlbfs has no pages of the other size: EINVAL. */
	EXPECT_FAILED(mmap(NULL, ps, RW,
			   MAP_PRIVATE | HUGE_ANON | other << MAP_HUGE_SHIFT,
			   -1, 0), MAP_FAILED, EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(mmap_fixed_commits_into_reservation)
{
	char *res = reserve(4 * ps), *a, *p;
	long nfree = lp_nfree();

	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps) + ps;
	p = mmap(a, ps, RW, MAP_PRIVATE | MAP_FIXED | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(p);
	EXPECT_EQ((unsigned long)p, (unsigned long)a);
	EXPECT_TRUE(is_largepage(a) && is_largepage(a + ps - 1));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	/* The rest of the reservation is still reserved. */
	EXPECT_TRUE(is_mapped(a - 4096) && !is_largepage(a - 4096));
	EXPECT_TRUE(is_mapped(a + ps) && !is_largepage(a + ps));
	EXPECT_TRUE(lp_zeroed(a, ps));
	lp_fill(a, ps, 0x7005);
	EXPECT_TRUE(lp_check(a, ps, 0x7005));
	EXPECT_EQ(munmap(a, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(a));
	EXPECT_EQ(munmap(res, 4 * ps), 0);
}

TEST(mmap_fixed_unaligned_einval_keeps_reservation)
{
	char *res = reserve(3 * ps), *a;
	long nfree = lp_nfree();

	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps) + 4096;
	EXPECT_FAILED(mmap(a, ps, RW, MAP_PRIVATE | MAP_FIXED | HUGE_ANON,
			   -1, 0), MAP_FAILED, EINVAL);
	EXPECT_TRUE(is_mapped(a) && !is_largepage(a));
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(munmap(res, 3 * ps), 0);
}

TEST(mmap_fixed_pool_short_enomem_keeps_reservation)
{
	long nfree = lp_nfree();
	unsigned long len = (nfree + 1) * ps;
	char *res, *a;

	unsetenv(FALLBACK_ENV);
	res = reserve(len + ps);
	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps);
	EXPECT_FAILED(mmap(a, len, RW, MAP_PRIVATE | MAP_FIXED | HUGE_ANON,
			   -1, 0), MAP_FAILED, ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	/* The reservation is put back, not left as a hole. */
	EXPECT_TRUE(is_mapped(a) && !is_largepage(a));
	EXPECT_TRUE(is_mapped(a + len - 1) && !is_largepage(a + len - 1));
	EXPECT_EQ(munmap(res, len + ps), 0);
}

TEST(munmap_of_reservation_releases_large_pages_in_it)
{
	char *res = reserve(4 * ps), *a, *p;
	long nfree = lp_nfree();

	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps);
	p = mmap(a, 2 * ps, RW, MAP_SHARED | MAP_FIXED | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(p);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	/* The reservation around it goes too, as one munmap() of it all. */
	EXPECT_EQ(munmap(res, 4 * ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(a) && !is_mapped(res));
	EXPECT_TRUE(!is_mapped(a + 2 * ps) && !is_mapped(res + 4 * ps - 1));
}

TEST(munmap_of_part_of_large_mapping_einval)
{
	long nfree = lp_nfree();
	char *p = mmap(NULL, 2 * ps, RW, MAP_PRIVATE | HUGE_ANON, -1, 0);

	ASSERT_MAPPED(p);
	EXPECT_ERRNO(munmap(p + ps, ps), EINVAL);
	EXPECT_ERRNO(munmap(p, ps), EINVAL);
	EXPECT_ERRNO(munmap(p + 4096, 2 * ps), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	p[2 * ps - 1] = 1;	/* all still there */
	EXPECT_TRUE(is_largepage(p) && is_largepage(p + 2 * ps - 1));
	EXPECT_EQ(munmap(p, 2 * ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * hugetlbfs rounds a munmap() length up to the small page only, and
 * does not split a huge page: a start or end inside one is EINVAL and
 * unmaps nothing (stress-ng's mmaphuge unmaps 2 MiB of a 4 MiB page and
 * keeps it). The library does the same, for a segment attached with
 * shmat() too.
 */
TEST(munmap_inside_a_large_page_einval_keeps_it)
{
	unsigned long len = 2 * ps;
	long nfree = lp_nfree();
	char *p = mmap(NULL, len, RW, MAP_SHARED | HUGE_ANON, -1, 0);
	char *s;
	int id;

	ASSERT_MAPPED(p);
	lp_fill(p, len, 0x7021);
	/* The end inside a large page. */
	EXPECT_ERRNO(munmap(p, ps / 2), EINVAL);
	EXPECT_ERRNO(munmap(p, ps + 1), EINVAL);
	EXPECT_ERRNO(munmap(p, len - 4096), EINVAL);
	/* The start inside one. */
	EXPECT_ERRNO(munmap(p + ps / 2, ps), EINVAL);
	EXPECT_ERRNO(munmap(p + ps + 4096, ps - 4096), EINVAL);
	/* The kernel's own: no length, a start off the small page. */
	EXPECT_ERRNO(munmap(p, 0), EINVAL);
	EXPECT_ERRNO(munmap(p + 1, len), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(is_largepage(p) && is_largepage(p + len - 1));
	EXPECT_TRUE(lp_check(p, len, 0x7021));
	/* Short of the end by less than a small page: all of it. */
	EXPECT_EQ(munmap(p, len - 100), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(p) && !is_mapped(p + len - 1));

	id = shmget(IPC_PRIVATE, ps, SHM_HUGETLB | 0600);
	ASSERT_GE(id, 0);
	s = shmat(id, NULL, 0);
	ASSERT_MAPPED(s);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	EXPECT_ERRNO(munmap(s, ps / 2), EINVAL);
	EXPECT_ERRNO(munmap(s + 4096, ps - 4096), EINVAL);
	EXPECT_TRUE(is_largepage(s) && is_largepage(s + ps - 1));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(shmdt(s), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * A range over normal memory and a large-page mapping is all or
 * nothing: the large-page mapping whole inside it, or nothing at all is
 * unmapped (hugetlbfs splits the normal mapping, fails on the huge page
 * and unmaps nothing). Past TASK_SIZE the kernel refuses it before it
 * unmaps anything, and so nothing changes either.
 */
TEST(munmap_over_normal_and_large_memory_all_or_nothing)
{
	char *res = reserve(5 * ps), *a, *p;
	long nfree = lp_nfree();

	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps) + ps;
	p = mmap(a, 2 * ps, RW, MAP_PRIVATE | MAP_FIXED | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(p);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	/* From the reservation, ending inside a large page. */
	EXPECT_ERRNO(munmap(res, a + ps / 2 - res), EINVAL);
	EXPECT_ERRNO(munmap(res, a + 2 * ps - 4096 - res), EINVAL);
	/* From inside one out into the reservation. */
	EXPECT_ERRNO(munmap(a + ps + 4096, 2 * ps), EINVAL);
	/* All of it and on to the top of the address space. */
	EXPECT_ERRNO(munmap(res, 0xfffff000UL - (unsigned long)res), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(is_mapped(res) && is_mapped(a - 4096));
	EXPECT_TRUE(is_largepage(a) && is_largepage(a + 2 * ps - 1));
	EXPECT_TRUE(is_mapped(a + 2 * ps) && !is_largepage(a + 2 * ps));
	/* Whole, with the length rounded to the small page: a page past it. */
	EXPECT_EQ(munmap(res, a + 2 * ps + 1 - res), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(res) && !is_mapped(a) && !is_mapped(a + 2 * ps));
	EXPECT_TRUE(is_mapped(a + 2 * ps + 4096));
	EXPECT_EQ(munmap(res, 5 * ps), 0);
}

TEST(mmap_fixed_normal_pages_over_large_mapping_replace_it)
{
	long nfree = lp_nfree();
	char *p = mmap(NULL, 2 * ps, RW, MAP_SHARED | HUGE_ANON, -1, 0);
	char *q;

	ASSERT_MAPPED(p);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	/* Cutting it: ENOMEM, as hugetlbfs's, nothing changes. */
	EXPECT_FAILED(mmap(p + ps, 4096, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
		      MAP_FAILED, ENOMEM);
	EXPECT_TRUE(is_largepage(p + ps));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	/* Covering it (OpenJDK's uncommit): released and replaced. */
	q = mmap(p, 2 * ps, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	EXPECT_EQ((unsigned long)q, (unsigned long)p);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(is_mapped(p) && !is_largepage(p));
	EXPECT_TRUE(is_mapped(p + 2 * ps - 1) && !is_largepage(p + 2 * ps - 1));
	EXPECT_EQ(munmap(p, 2 * ps), 0);
}

/*
 * MAP_FIXED (and shmat()'s SHM_REMAP) over part of a large-page
 * mapping: hugetlbfs's mmap() fails with ENOMEM when it cannot unmap
 * the range, as where it ends inside a huge page; the library, which
 * never splits a large-page mapping, for every such range. Nothing
 * changes.
 */
TEST(mmap_fixed_over_part_of_large_mapping_enomem)
{
	long nfree = lp_nfree();
	char *p = mmap(NULL, 2 * ps, RW, MAP_SHARED | HUGE_ANON, -1, 0);
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, id;

	ASSERT_MAPPED(p);
	lp_fill(p, 2 * ps, 0x7022);
	/* Normal pages from its start, ending inside a large page. */
	EXPECT_FAILED(mmap(p, ps + 4096, PROT_NONE, flags, -1, 0),
		      MAP_FAILED, ENOMEM);
	EXPECT_FAILED(mmap(p, 2 * ps - 4096, RW, flags, -1, 0),
		      MAP_FAILED, ENOMEM);
	/* Whole large pages, not the whole mapping. */
	EXPECT_FAILED(mmap(p, ps, PROT_NONE, flags, -1, 0), MAP_FAILED,
		      ENOMEM);
	EXPECT_FAILED(mmap(p + ps, ps, RW, MAP_PRIVATE | MAP_FIXED | HUGE_ANON,
			   -1, 0), MAP_FAILED, ENOMEM);
	id = shmget(IPC_PRIVATE, ps, SHM_HUGETLB | 0600);
	ASSERT_GE(id, 0);
	EXPECT_FAILED(shmat(id, p + ps, SHM_REMAP), -1, ENOMEM);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(is_largepage(p) && is_largepage(p + 2 * ps - 1));
	EXPECT_TRUE(lp_check(p, 2 * ps, 0x7022));
	EXPECT_EQ(munmap(p, 2 * ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(mmap_fixed_noreplace_takes_free_range_only)
{
	char *res = reserve(3 * ps), *a, *p;
	long nfree = lp_nfree();

	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps);
	/* In use (the reservation): EEXIST, nothing taken or changed. */
	EXPECT_FAILED(mmap(a, ps, RW,
			   MAP_PRIVATE | MAP_FIXED_NOREPLACE | HUGE_ANON, -1, 0),
		      MAP_FAILED, EEXIST);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(is_mapped(a) && !is_largepage(a));
	/* Free: mapped there. */
	EXPECT_EQ(munmap(res, 3 * ps), 0);
	p = mmap(a, ps, RW, MAP_PRIVATE | MAP_FIXED_NOREPLACE | HUGE_ANON,
		 -1, 0);
	ASSERT_MAPPED(p);
	EXPECT_EQ((unsigned long)p, (unsigned long)a);
	EXPECT_TRUE(is_largepage(a));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(munmap(p, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

#define NTHREADS	4
#define ROUNDS		40

/* A thread's failure, reported by the test. */
static void churn_fail(long seed, int round, const char *what, void *p)
{
	printf("# thread %ld round %d: %s %p: %s\n", seed, round, what, p,
	       strerror(errno));
}

/* One thread's share of mmap_from_threads_conserves_pool. */
static void *thread_churn(void *arg)
{
	long seed = (long)arg, bad = 0;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		int flags = (i + seed) & 1 ? MAP_SHARED : MAP_PRIVATE;
		char *p = mmap(NULL, ps, RW, flags | HUGE_ANON, -1, 0);
		char *n = mmap(NULL, 8192, RW, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED || n == MAP_FAILED) {
			churn_fail(seed, i, "mmap", p == MAP_FAILED ? p : n);
			bad++;
			continue;
		}
		lp_fill(p, ps, seed * 1000 + i);
		n[0] = 1;
		if (!lp_check(p, ps, seed * 1000 + i))
			bad++;
		if (munmap(p, ps)) {
			churn_fail(seed, i, "munmap large", p);
			bad++;
		}
		if (munmap(n, 8192)) {
			churn_fail(seed, i, "munmap normal", n);
			bad++;
		}
	}
	return (void *)bad;
}

TEST(mmap_from_threads_conserves_pool)
{
	pthread_t t[NTHREADS];
	long nfree = lp_nfree(), i;
	void *bad;

	ASSERT_GE(nfree, NTHREADS);
	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, thread_churn,
					 (void *)(i + 1)), 0);
	for (i = 0; i < NTHREADS; i++) {
		ASSERT_EQ(pthread_join(t[i], &bad), 0);
		EXPECT_EQ((long)bad, 0);
	}
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ---------------------------------------------------------- SysV shm */

TEST(shm_private_attached_by_parent_and_child)
{
	unsigned long size = 2 * ps - 4096;
	long nfree = lp_nfree();
	struct shmid_ds ds;
	char *p;
	pid_t pid;
	int id;

	id = shmget(IPC_PRIVATE, size, IPC_CREAT | SHM_HUGETLB | 0600);
	ASSERT_GE(id, 0);
	/* The pages are taken by shmget(), as hugetlbfs takes them. */
	EXPECT_EQ(lp_nfree(), nfree - 2);
	p = shmat(id, NULL, 0);
	ASSERT_MAPPED(p);
	EXPECT_EQ((unsigned long)p % ps, 0);
	EXPECT_TRUE(is_largepage(p) && is_largepage(p + 2 * ps - 1));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_zeroed(p, 2 * ps));
	lp_fill(p, size, 0x7011);
	pid = fork();
	if (pid == 0) {
		char *q = shmat(id, NULL, 0);

		ASSERT_MAPPED(q);
		EXPECT_TRUE(q != p && is_largepage(q));
		EXPECT_TRUE(lp_check(q, size, 0x7011));
		lp_fill(q, size, 0x7111);
		/* One set of pages behind both of the child's mappings. */
		EXPECT_TRUE(lp_check(p, size, 0x7111));
		EXPECT_EQ(lp_nfree(), nfree - 2);
		EXPECT_EQ(shmdt(q), 0);
		EXPECT_TRUE(!is_mapped(q));
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_TRUE(lp_check(p, size, 0x7111));
	ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
	EXPECT_EQ(ds.shm_segsz, size);
	EXPECT_EQ(ds.shm_nattch, 1);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	/* Removed while attached: the memory stays until the detach. */
	EXPECT_TRUE(lp_check(p, size, 0x7111));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(shmdt(p), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(!is_mapped(p));
	EXPECT_FAILED(shmat(id, NULL, 0), -1, EINVAL);
}

/* The helper process of shm_key_attached_by_other_process. */
static int attach_helper(int key)
{
	struct shmid_ds ds;
	char *q;
	int id = shmget(key, 0, SHM_HUGETLB);

	if (id < 0) {
		printf("# helper: shmget: %s\n", strerror(errno));
		return 1;
	}
	q = shmat(id, NULL, 0);
	if (q == (void *)-1 || !is_largepage(q) || strcmp(q, MSG_PARENT) ||
	    shmctl(id, IPC_STAT, &ds) || ds.shm_segsz != ps ||
	    ds.shm_nattch != 2) {
		printf("# helper: shmat %p (%s), large %d, nattch %lu\n", q,
		       strerror(errno), q != (void *)-1 && is_largepage(q),
		       (unsigned long)ds.shm_nattch);
		return 1;
	}
	strcpy(q + ps - 64, MSG_CHILD);
	return shmdt(q) ? 1 : 0;
}

TEST(shm_key_attached_by_other_process)
{
	int key = KEY_BASE + 1, id;
	long nfree = lp_nfree();
	char arg[16];
	char *p;
	pid_t pid;

	id = shmget(key, ps, IPC_CREAT | IPC_EXCL | SHM_HUGETLB | 0600);
	ASSERT_GE(id, 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	/* The key's SysV rules, from the kernel. */
	EXPECT_ERRNO(shmget(key, ps, IPC_CREAT | IPC_EXCL | SHM_HUGETLB),
		     EEXIST);
	EXPECT_ERRNO(shmget(key, 2 * ps, SHM_HUGETLB), EINVAL);
	EXPECT_EQ(shmget(key, 0, SHM_HUGETLB), id);
	EXPECT_EQ(shmget(key, ps, IPC_CREAT | SHM_HUGETLB | 0600), id);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	p = shmat(id, NULL, 0);
	ASSERT_MAPPED(p);
	strcpy(p, MSG_PARENT);

	/* A process that inherits nothing: exec'd, attaching by key. */
	snprintf(arg, sizeof(arg), "%d", key);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "preload", "--attach", arg, NULL);
		printf("# exec: %s\n", strerror(errno));
		_exit(1);
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(strcmp(p + ps - 64, MSG_CHILD), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	/* The key is free at once; the memory goes with the detach. */
	EXPECT_ERRNO(shmget(key, ps, SHM_HUGETLB), ENOENT);
	EXPECT_EQ(strcmp(p, MSG_PARENT), 0);
	EXPECT_EQ(shmdt(p), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(shm_stat_reports_size_mode_and_attachments)
{
	unsigned long size = ps + 100;
	long nfree = lp_nfree();
	struct shmid_ds ds;
	char *p, *q;
	int id;

	id = shmget(IPC_PRIVATE, size, SHM_HUGETLB | 0640);
	ASSERT_GE(id, 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
	EXPECT_EQ(ds.shm_segsz, size);
	EXPECT_EQ(ds.shm_perm.mode & 0777, 0640);
	EXPECT_EQ(ds.shm_cpid, getpid());
	EXPECT_EQ(ds.shm_nattch, 0);
	p = shmat(id, NULL, 0);
	ASSERT_MAPPED(p);
	q = shmat(id, NULL, SHM_RDONLY);
	ASSERT_MAPPED(q);
	EXPECT_TRUE(p != q && is_largepage(q));
	ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
	EXPECT_EQ(ds.shm_nattch, 2);
	p[size - 1] = 42;
	EXPECT_EQ(q[size - 1], 42);
	EXPECT_TRUE(touch_faults(q, 1));	/* SHM_RDONLY */
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(shmdt(q), 0);
	ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
	EXPECT_EQ(ds.shm_nattch, 1);
	/*
	 * The documented difference: the memory dies with the last detach,
	 * IPC_RMID or not; the id stays, attaching it is EIDRM.
	 */
	EXPECT_EQ(shmdt(p), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
	EXPECT_EQ(ds.shm_nattch, 0);
	EXPECT_FAILED(shmat(id, NULL, 0), -1, EIDRM);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
}

TEST(shm_attach_at_address)
{
	char *res = reserve(3 * ps), *a, *p;
	long nfree = lp_nfree();
	int id = shmget(IPC_PRIVATE, ps, SHM_HUGETLB | 0600);

	ASSERT_GE(id, 0);
	ASSERT_MAPPED(res);
	a = (char *)align_up((unsigned long)res, ps);
	EXPECT_EQ(munmap(res, 3 * ps), 0);
	/* Not large-page aligned: EINVAL, as for hugetlbfs. */
	EXPECT_FAILED(shmat(id, a + 4096, 0), -1, EINVAL);
	/* SHM_RND rounds down to SHMLBA only, still unaligned. */
	EXPECT_FAILED(shmat(id, a + 4097, SHM_RND), -1, EINVAL);
	p = shmat(id, a, 0);
	ASSERT_MAPPED(p);
	EXPECT_EQ((unsigned long)p, (unsigned long)a);
	EXPECT_TRUE(is_largepage(a));
	/* The range is in use now: no SHM_REMAP, EINVAL. */
	EXPECT_FAILED(shmat(id, a, 0), -1, EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	EXPECT_EQ(shmdt(p), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* The time64 shmctl, as a program built with _TIME_BITS=64 calls it. */
extern int __shmctl64(int shmid, int cmd, void *buf);

TEST(shm_rmid_through_time64_shmctl)
{
	long nfree = lp_nfree();
	int id = shmget(IPC_PRIVATE, ps, SHM_HUGETLB | 0600);

	ASSERT_GE(id, 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(__shmctl64(id, IPC_RMID, NULL), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_FAILED(shmat(id, NULL, 0), -1, EINVAL);
}

TEST(shm_rmid_before_attach_returns_pages)
{
	long nfree = lp_nfree();
	int segs = sysv_segments();
	int id = shmget(IPC_PRIVATE, ps, SHM_HUGETLB | 0600);

	ASSERT_GE(id, 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(sysv_segments(), segs + 1);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(sysv_segments(), segs);
	EXPECT_FAILED(shmat(id, NULL, 0), -1, EINVAL);
}

/* ------------------------------------------------------- memfd_create */

/*
 * memfd_create(MFD_HUGETLB): a memfd of the pool (the kernel's
 * MFD_LARGEPAGE). It takes no page until ftruncate() sets its size, then
 * all of them; its mappings (any of them, in any process) map the same
 * pages, and the pages go back when the last descriptor and the last
 * mapping are gone. munmap() is the kernel's: a whole mapping, never a
 * part, also with the library's own mappings tracked beside it.
 */
TEST(memfd_hugetlb_from_pool_mapped_twice_and_by_child)
{
	unsigned long len = 2 * ps;
	long nfree = lp_nfree();
	char *h, *p, *q, *half, *m;
	int fd;
	pid_t pid;

	/* A mapping the library tracks: munmap() goes through its tables. */
	h = mmap(NULL, ps, RW, MAP_PRIVATE | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(h);
	nfree--;
	fd = memfd_create("lpx", MFD_HUGETLB);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(fs_type(fd), LARGEPAGE_MAGIC);
	EXPECT_EQ(fd_size(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_FAILED(mmap(NULL, len, RW, MAP_SHARED, fd, 0), MAP_FAILED,
		      EINVAL);
	ASSERT_EQ(ftruncate(fd, len), 0);
	EXPECT_EQ(fd_size(fd), (long long)len);
	EXPECT_EQ(lp_nfree(), nfree - 2);

	p = mmap(NULL, len, RW, MAP_SHARED, fd, 0);
	ASSERT_MAPPED(p);
	q = mmap(NULL, len, RW, MAP_SHARED, fd, 0);
	ASSERT_MAPPED(q);
	EXPECT_TRUE(p != q);
	EXPECT_EQ((unsigned long)p % ps, 0);
	EXPECT_TRUE(is_memfd_map(p, "lpx") && is_memfd_map(p + len - 1, "lpx"));
	EXPECT_TRUE(is_memfd_map(q, "lpx"));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_zeroed(p, len));
	lp_fill(p, len, 0x7031);
	EXPECT_TRUE(lp_check(q, len, 0x7031));
	/* The second page alone, at its offset. */
	half = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, ps);
	ASSERT_MAPPED(half);
	EXPECT_EQ(memcmp(half, p + ps, ps), 0);
	/* MAP_HUGETLB on the fd, as hugetlbfs takes it on its own files. */
	m = mmap(NULL, len, RW, MAP_SHARED | MAP_HUGETLB, fd, 0);
	ASSERT_MAPPED(m);
	EXPECT_TRUE(lp_check(m, len, 0x7031));
	EXPECT_EQ(munmap(m, len), 0);
	/* No copy-on-write of large pages: MAP_PRIVATE is EINVAL. */
	EXPECT_FAILED(mmap(NULL, len, RW, MAP_PRIVATE, fd, 0), MAP_FAILED,
		      EINVAL);

	pid = fork();
	if (pid == 0) {
		char path[64], *r, *o;
		int fd2;

		/* The inherited fd, mapped anew: the parent's writes. */
		r = mmap(NULL, len, RW, MAP_SHARED, fd, 0);
		ASSERT_MAPPED(r);
		EXPECT_TRUE(lp_check(r, len, 0x7031));
		/* A new open of the same memfd, through /proc. */
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getppid(),
			 fd);
		fd2 = open(path, O_RDWR);
		ASSERT_GE(fd2, 0);
		o = mmap(NULL, len, RW, MAP_SHARED, fd2, 0);
		ASSERT_MAPPED(o);
		EXPECT_TRUE(lp_check(o, len, 0x7031));
		lp_fill(r, len, 0x7131);
		EXPECT_TRUE(lp_check(o, len, 0x7131));
		EXPECT_EQ(lp_nfree(), nfree - 2);
		EXPECT_EQ(munmap(o, len), 0);
		EXPECT_EQ(munmap(r, len), 0);
		close(fd2);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_TRUE(lp_check(p, len, 0x7131) && lp_check(q, len, 0x7131));
	EXPECT_EQ(lp_nfree(), nfree - 2);

	/* Part of a mapping, at a large-page boundary or inside: EINVAL. */
	EXPECT_ERRNO(munmap(p + ps, ps), EINVAL);
	EXPECT_ERRNO(munmap(p, ps), EINVAL);
	EXPECT_ERRNO(munmap(p, len - 4096), EINVAL);
	EXPECT_TRUE(is_memfd_map(p, "lpx") && is_memfd_map(p + len - 1, "lpx"));
	/* The descriptor goes first: the mappings keep the pages. */
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_check(q, len, 0x7131));
	EXPECT_EQ(munmap(p, len), 0);
	EXPECT_EQ(munmap(half, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_EQ(munmap(q, len), 0);
	EXPECT_TRUE(!is_mapped(p) && !is_mapped(q) && !is_mapped(half));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	/* The library's own mapping is still there, and still its. */
	EXPECT_TRUE(is_largepage(h));
	EXPECT_EQ(munmap(h, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree + 1);
}

/*
 * MFD_HUGE_* of a size the pool does not have is the kernel's, which
 * has no hugetlbfs pages of it on i386: ENODEV, as 6.1's memfd_create()
 * gives for a size without an hstate. With LARGEPAGE_FALLBACK too: no
 * shortage of the pool. Nothing is taken.
 */
TEST(memfd_hugetlb_other_size_enodev_nothing_taken)
{
	unsigned int shift = ps == 2UL << 20 ? 21 : 22;
	unsigned int other = shift == 21 ? 22 : 21;
	static const unsigned int logs[] = { 0, 30, 34, 53, 63 };
	long nfree = lp_nfree();
	size_t i;

	ASSERT_TRUE(ps == 2UL << 20 || ps == 4UL << 20);
	unsetenv(FALLBACK_ENV);
	for (i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
		unsigned int log = logs[i] ? logs[i] : other;

		EXPECT_ERRNO(memfd_create("lpx", MFD_HUGETLB |
					  log << MFD_HUGE_SHIFT), ENODEV);
		setenv(FALLBACK_ENV, "1", 1);
		EXPECT_ERRNO(memfd_create("lpx", MFD_HUGETLB | MFD_CLOEXEC |
					  log << MFD_HUGE_SHIFT), ENODEV);
		unsetenv(FALLBACK_ENV);
	}
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * A size the pool cannot give (more pages than are free) is refused by
 * ftruncate(): ENOMEM, nothing taken, the size still 0 and settable.
 * hugetlbfs gives its ENOMEM at mmap(), the pages reserved there; here
 * they are taken when the size is set. LARGEPAGE_FALLBACK cannot help:
 * ftruncate() is the kernel's.
 */
TEST(memfd_hugetlb_pool_short_enomem_nothing_taken)
{
	long nfree = lp_nfree();
	off64_t len = (off64_t)(nfree + 1) * ps;
	int fd;

	unsetenv(FALLBACK_ENV);
	fd = memfd_create("lpx", MFD_HUGETLB | MFD_CLOEXEC);
	ASSERT_GE(fd, 0);
	EXPECT_ERRNO(ftruncate64(fd, len), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(fd_size(fd), 0);
	EXPECT_EQ(close(fd), 0);

	setenv(FALLBACK_ENV, "1", 1);
	fd = memfd_create("lpx", MFD_HUGETLB);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(fs_type(fd), LARGEPAGE_MAGIC);
	EXPECT_ERRNO(ftruncate64(fd, len), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	unsetenv(FALLBACK_ENV);
	/* Still settable, to what the pool has. */
	EXPECT_EQ(ftruncate(fd, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * A size that is not a multiple of the large page: EINVAL, as
 * hugetlbfs's ftruncate() gives, nothing taken. Once set, the size is
 * fixed: another is EBUSY (hugetlbfs would resize), the same is 0.
 */
TEST(memfd_hugetlb_bad_size_einval_nothing_taken)
{
	long nfree = lp_nfree();
	int fd = memfd_create("lpx", MFD_HUGETLB);

	ASSERT_GE(fd, 0);
	EXPECT_EQ(ftruncate(fd, 0), 0);
	EXPECT_ERRNO(ftruncate(fd, ps + 4096), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, ps / 2), EINVAL);
	EXPECT_ERRNO(ftruncate(fd, 4096), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(fd_size(fd), 0);
	EXPECT_EQ(ftruncate(fd, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(ftruncate(fd, ps), 0);
	EXPECT_ERRNO(ftruncate(fd, 2 * ps), EBUSY);
	EXPECT_ERRNO(ftruncate(fd, 0), EBUSY);
	EXPECT_EQ(fd_size(fd), (long long)ps);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * Large pages are locked memory: a user other than root sizes a memfd
 * up to RLIMIT_MEMLOCK (ENOMEM beyond it, nothing taken), where
 * hugetlbfs's memfd charges no limit.
 */
TEST(memfd_hugetlb_over_memlock_enomem_nothing_taken)
{
	long nfree = lp_nfree();
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit rl = { ps, ps };
		int fd;

		ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
		become_nobody();
		fd = memfd_create("lpx", MFD_HUGETLB);
		ASSERT_GE(fd, 0);
		EXPECT_ERRNO(ftruncate(fd, 2 * ps), ENOMEM);
		EXPECT_EQ(lp_nfree(), nfree);
		EXPECT_EQ(ftruncate(fd, ps), 0);
		EXPECT_EQ(lp_nfree(), nfree - 1);
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* Without MFD_HUGETLB, memfd_create() is libc's: shmem, no large page. */
TEST(memfd_without_hugetlb_untouched)
{
	long nfree = lp_nfree();
	int fd = memfd_create("lpy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char *p;

	ASSERT_GE(fd, 0);
	EXPECT_EQ(fs_type(fd), TMPFS_MAGIC);
	ASSERT_EQ(ftruncate(fd, ps + 4096), 0);
	p = mmap(NULL, ps + 4096, RW, MAP_PRIVATE, fd, 0);
	ASSERT_MAPPED(p);
	p[ps] = 1;
	EXPECT_TRUE(is_memfd_map(p, "lpy") && !is_largepage(p));
	EXPECT_EQ(munmap(p, 4096), 0);
	EXPECT_EQ(munmap(p + 4096, ps), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(close(fd), 0);
	/* MFD_HUGETLB with the kernel's own flag: its EINVAL. */
	EXPECT_ERRNO(memfd_create("lpy", MFD_HUGETLB | MFD_LARGEPAGE), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ------------------------------------------- MAP_HUGE_* and SHM_HUGE_* */

/*
 * The size bits of MAP_HUGETLB and SHM_HUGETLB (<< 26, for both): log2
 * of the page size, 0 for the default.
 */
struct size_row {
	const char *name;
	unsigned int log;
};

static const struct size_row size_rows[] = {
	{ "huge_size_bits_0_default", 0 },
	{ "huge_size_bits_1", 1 },
	{ "huge_size_bits_12", 12 },
	{ "huge_size_bits_21_2mb", 21 },
	{ "huge_size_bits_22_4mb", 22 },
	{ "huge_size_bits_30_1gb", 30 },
	{ "huge_size_bits_32", 32 },
	{ "huge_size_bits_34_16gb", 34 },
	{ "huge_size_bits_53", 53 },	/* 1UL << 53 is 2 MiB on i386 */
	{ "huge_size_bits_54", 54 },	/* and 1UL << 54 4 MiB */
	{ "huge_size_bits_63", 63 },
};

/*
 * mmap(MAP_HUGETLB), shmget(SHM_HUGETLB) and memfd_create(MFD_HUGETLB)
 * with row->log's size bits. 0 and the large page's are served from the
 * pool. Any other size is the kernel's, and hugetlbfs has no hstate for
 * it (its one size on i386 is the large page's): EINVAL (ENODEV from
 * memfd_create()), also with LARGEPAGE_FALLBACK set, as no shortage of
 * the pool. The bits matter to shmget() only for a new segment: an
 * existing key is found whatever they say.
 */
static void size_row(const void *arg)
{
	const struct size_row *row = arg;
	unsigned int shift = ps == 2UL << 20 ? 21 : 22;
	int served = !row->log || row->log == shift;
	int bits = (int)(row->log << MAP_HUGE_SHIFT);
	int key = KEY_BASE + 0x100 + row->log, segs = sysv_segments(), id;
	long nfree = lp_nfree();
	char *p, *q;
	int fd;

	ASSERT_TRUE(ps == 2UL << 20 || ps == 4UL << 20);
	unsetenv(FALLBACK_ENV);
	if (served) {
		p = mmap(NULL, ps, RW, MAP_PRIVATE | HUGE_ANON | bits, -1, 0);
		ASSERT_MAPPED(p);
		EXPECT_TRUE(is_largepage(p));
		EXPECT_EQ(lp_nfree(), nfree - 1);
		EXPECT_EQ(munmap(p, ps), 0);
		id = shmget(IPC_PRIVATE, ps, SHM_HUGETLB | bits | 0600);
		ASSERT_GE(id, 0);
		EXPECT_EQ(lp_nfree(), nfree - 1);
		p = shmat(id, NULL, 0);
		ASSERT_MAPPED(p);
		EXPECT_TRUE(is_largepage(p));
		EXPECT_EQ(shmdt(p), 0);
		EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
		fd = memfd_create("lpsize", MFD_HUGETLB | (unsigned int)bits);
		ASSERT_GE(fd, 0);
		EXPECT_EQ(fs_type(fd), LARGEPAGE_MAGIC);
		EXPECT_EQ(ftruncate(fd, ps), 0);
		EXPECT_EQ(lp_nfree(), nfree - 1);
		EXPECT_EQ(close(fd), 0);
		EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	} else {
		EXPECT_FAILED(mmap(NULL, ps, RW, MAP_PRIVATE | HUGE_ANON | bits,
				   -1, 0), MAP_FAILED, EINVAL);
		EXPECT_FAILED(mmap(NULL, ps, RW, MAP_SHARED | HUGE_ANON | bits,
				   -1, 0), MAP_FAILED, EINVAL);
		/* Over a large-page mapping: refused before it unmaps. */
		q = mmap(NULL, ps, RW, MAP_SHARED | HUGE_ANON, -1, 0);
		ASSERT_MAPPED(q);
		EXPECT_FAILED(mmap(q, ps, RW, MAP_SHARED | MAP_FIXED |
				   HUGE_ANON | bits, -1, 0),
			      MAP_FAILED, EINVAL);
		EXPECT_TRUE(is_largepage(q));
		EXPECT_EQ(munmap(q, ps), 0);
		EXPECT_ERRNO(shmget(IPC_PRIVATE, ps, SHM_HUGETLB | bits | 0600),
			     EINVAL);
		EXPECT_ERRNO(shmget(key, ps, IPC_CREAT | SHM_HUGETLB | bits |
				    0600), EINVAL);
		EXPECT_ERRNO(shmget(key, ps, IPC_CREAT | IPC_EXCL |
				    SHM_HUGETLB | bits | 0600), EINVAL);
		EXPECT_ERRNO(memfd_create("lpsize", MFD_HUGETLB |
					  (unsigned int)bits), ENODEV);
		setenv(FALLBACK_ENV, "1", 1);
		EXPECT_FAILED(mmap(NULL, ps, RW, MAP_SHARED | HUGE_ANON | bits,
				   -1, 0), MAP_FAILED, EINVAL);
		EXPECT_ERRNO(shmget(IPC_PRIVATE, ps, SHM_HUGETLB | bits | 0600),
			     EINVAL);
		EXPECT_ERRNO(memfd_create("lpsize", MFD_HUGETLB |
					  (unsigned int)bits), ENODEV);
		unsetenv(FALLBACK_ENV);
		/* No segment left behind. */
		EXPECT_ERRNO(shmget(key, 0, 0), ENOENT);
	}
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(sysv_segments(), segs);

	id = shmget(key, ps, IPC_CREAT | IPC_EXCL | SHM_HUGETLB | 0600);
	ASSERT_GE(id, 0);
	EXPECT_EQ(shmget(key, 0, SHM_HUGETLB | bits), id);
	EXPECT_EQ(shmget(key, ps, IPC_CREAT | SHM_HUGETLB | bits | 0600), id);
	EXPECT_ERRNO(shmget(key, ps, IPC_CREAT | IPC_EXCL | SHM_HUGETLB | bits),
		     EEXIST);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(sysv_segments(), segs);
}

TEST_TABLE(huge_size, size_rows, size_row)

/* ------------------------------------------------ everything else alone */

TEST(ordinary_mmap_and_shm_untouched)
{
	long nfree = lp_nfree();
	struct shmid_ds ds;
	char *a, *b, *s;
	int id, fd;

	a = mmap(NULL, 1 << 20, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b = mmap(NULL, ps, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_MAPPED(a);
	ASSERT_MAPPED(b);
	a[0] = 1;
	b[ps - 1] = 1;
	EXPECT_TRUE(!is_largepage(a) && !is_largepage(b));
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(munmap(a, 1 << 20), 0);
	EXPECT_EQ(munmap(b, ps), 0);
	EXPECT_TRUE(!is_mapped(a) && !is_mapped(b));

	id = shmget(IPC_PRIVATE, ps, IPC_CREAT | 0600);
	ASSERT_GE(id, 0);
	s = shmat(id, NULL, 0);
	ASSERT_MAPPED(s);
	EXPECT_TRUE(!is_largepage(s));
	s[ps - 1] = 1;
	ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
	EXPECT_EQ(ds.shm_segsz, ps);
	EXPECT_EQ(ds.shm_nattch, 1);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(shmdt(s), 0);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);

	/* MAP_HUGETLB on a file that is not hugetlbfs: the kernel's EINVAL. */
	fd = open("/dev/zero", O_RDWR);
	ASSERT_GE(fd, 0);
	EXPECT_FAILED(mmap(NULL, ps, RW, MAP_SHARED | MAP_HUGETLB, fd, 0),
		      MAP_FAILED, EINVAL);
	close(fd);
	EXPECT_EQ(lp_nfree(), nfree);
}

/* ----------------------------------------------------------- fallback */

TEST(fallback_unset_pool_short_gives_enomem)
{
	long nfree = lp_nfree();
	unsigned long len = (nfree + 1) * ps;
	int segs = sysv_segments(), fd;

	unsetenv(FALLBACK_ENV);
	fd = capture_stderr();
	ASSERT_GE(fd, 0);
	EXPECT_FAILED(mmap(NULL, len, RW, MAP_SHARED | HUGE_ANON, -1, 0),
		      MAP_FAILED, ENOMEM);
	EXPECT_FAILED(mmap(NULL, len, RW, MAP_PRIVATE | HUGE_ANON, -1, 0),
		      MAP_FAILED, ENOMEM);
	EXPECT_ERRNO(shmget(IPC_PRIVATE, len, SHM_HUGETLB | 0600), ENOMEM);
	EXPECT_EQ(lp_nfree(), nfree);
	/* No segment left behind, nothing said. */
	EXPECT_EQ(sysv_segments(), segs);
	EXPECT_EQ(count_lines(fd, NULL), 0);
}

TEST(fallback_set_serves_normal_pages_with_one_warning)
{
	long nfree = lp_nfree();
	unsigned long len = (nfree + 1) * ps;
	char *p, *s;
	int id, fd;

	setenv(FALLBACK_ENV, "1", 1);
	fd = capture_stderr();
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, RW, MAP_SHARED | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(p);
	EXPECT_TRUE(!is_largepage(p) && is_mapped(p + len - 1));
	p[0] = 1;
	p[len - 1] = 1;
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(munmap(p, len), 0);

	id = shmget(IPC_PRIVATE, len, SHM_HUGETLB | 0600);
	ASSERT_GE(id, 0);
	s = shmat(id, NULL, 0);
	ASSERT_MAPPED(s);
	EXPECT_TRUE(!is_largepage(s));
	s[len - 1] = 1;
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(shmdt(s), 0);
	EXPECT_EQ(shmctl(id, IPC_RMID, NULL), 0);

	/* The pool still serves what it can. */
	p = mmap(NULL, ps, RW, MAP_PRIVATE | HUGE_ANON, -1, 0);
	ASSERT_MAPPED(p);
	EXPECT_TRUE(is_largepage(p));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	EXPECT_EQ(munmap(p, ps), 0);
	/* Two requests fell back: one warning, from the library. */
	EXPECT_EQ(count_lines(fd, "liblargepage: "), 1);
}

/* -------------------------------------------------------------- lpctl */

#define LPCTL "/usr/sbin/lpctl"

/* Run argv (NULL-terminated) with env var name set to val (or unset). */
static int run_with(const char *name, const char *val, char *const argv[])
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* lpctl's expected complaints stay out of the TAP stream. */
		if (null < 0 || dup2(null, STDERR_FILENO) < 0)
			_exit(98);
		if (val)
			setenv(name, val, 1);
		else
			unsetenv(name);
		execv(argv[0], argv);
		_exit(99);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The --check-env helper: is the environment what lpctl run should set? */
static int check_env_helper(const char *want_preload, const char *want_fb)
{
	const char *preload = getenv("LD_PRELOAD");
	const char *fb = getenv(FALLBACK_ENV);
	const char *obj = defined_in("mmap");

	if (!preload || strcmp(preload, want_preload) ||
	    strcmp(fb ? fb : "", want_fb) || !strstr(obj, "liblargepage.so")) {
		printf("# helper: LD_PRELOAD '%s', %s '%s', mmap from %s\n",
		       preload ? preload : "(unset)", FALLBACK_ENV,
		       fb ? fb : "(unset)", obj);
		return 3;
	}
	return 0;
}

TEST(lpctl_run_preloads_library_once)
{
	char self[256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	ASSERT_GT(n, 0);
	self[n] = '\0';
	unsetenv(FALLBACK_ENV);
	{
		char *const argv[] = { LPCTL, "run", "--", self, "--check-env",
				       PRELOAD_LIB, "", NULL };

		EXPECT_EQ(run_with("LD_PRELOAD", NULL, argv), 0);
		/* Already there: not added twice. */
		EXPECT_EQ(run_with("LD_PRELOAD", PRELOAD_LIB, argv), 0);
	}
	{
		/* Appended after what is there; --fallback sets the variable. */
		char *const argv[] = { LPCTL, "run", "--fallback", "--", self,
				       "--check-env",
				       "libdl.so.2:" PRELOAD_LIB, "1", NULL };

		EXPECT_EQ(run_with("LD_PRELOAD", "libdl.so.2", argv), 0);
	}
	{
		char *const missing[] = { LPCTL, "run", "--",
					  "/nonexistent/program", NULL };
		char *const none[] = { LPCTL, "run", "--", NULL };
		char *const bad[] = { LPCTL, "run", "--bogus", "--", self, NULL };

		EXPECT_EQ(run_with("LD_PRELOAD", NULL, missing), 127);
		EXPECT_EQ(run_with("LD_PRELOAD", NULL, none), 2);
		EXPECT_EQ(run_with("LD_PRELOAD", NULL, bad), 2);
	}
}

/* lpctl ARGS's output in out; its exit status. */
static int lpctl_output(const char *args, char *out, size_t size)
{
	char cmd[64];
	size_t n = 0, r;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), LPCTL " %s 2>&1", args);
	fflush(stdout);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n < size - 1 && (r = fread(out + n, 1, size - 1 - n, f)) > 0)
		n += r;
	out[n] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* lpctl explain ARG's output in out; its exit status. */
static int explain(const char *arg, char *out, size_t size)
{
	char args[32];

	snprintf(args, sizeof(args), "explain %s", arg);
	return lpctl_output(args, out, size);
}

#define EXPECT_HAS(out, text) do {					\
	if (!strstr(out, text)) {					\
		TH_LOG("no '%s' in the output:\n%s", text, out);	\
		HARNESS_FAIL(0);					\
	}								\
} while (0)

TEST(lpctl_explain_reports_pool_memlock_and_segment)
{
	int key = KEY_BASE + 2;
	long r = lpsys_share(key, 0, ps, RW, IPC_CREAT | 0640);
	char out[4096], arg[16];
	pid_t pid;

	ASSERT_TRUE(LP_OK(r));
	snprintf(arg, sizeof(arg), "%d", key);
	EXPECT_EQ(explain("", out, sizeof(out)), 0);
	EXPECT_HAS(out, "Kernel:          has large pages");
	EXPECT_HAS(out, "Locked memory:   no limit (root)");
	EXPECT_HAS(out, "Probe:           mapped and freed one large page");
	EXPECT_EQ(explain(arg, out, sizeof(out)), 0);
	EXPECT_HAS(out, "mode 0640, owner 0:0");
	EXPECT_HAS(out, "you may attach it read-write");
	EXPECT_EQ(explain("1", out, sizeof(out)), 1);
	EXPECT_HAS(out, "Segment 1:     none");
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };

		ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
		become_nobody();
		EXPECT_EQ(explain(arg, out, sizeof(out)), 1);
		EXPECT_HAS(out, "RLIMIT_MEMLOCK 0 bytes: none allowed");
		EXPECT_HAS(out, "Probe:           get_large_pages() of");
		EXPECT_HAS(out, "Operation not permitted");
		EXPECT_HAS(out, "you may not attach it: EACCES");
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(lpsys_unshare(r), 0);
}

/*
 * lpctl ps: a memfd's mappings (/memfd:NAME (deleted) in smaps, VmFlags
 * lp) are shared pages, and its pages count once in Mapped however many
 * mappings (a whole one, one of its second page) and processes (a child
 * that inherited them) map them.
 */
TEST(lpctl_ps_counts_memfd_mappings_as_shared_once)
{
	long nfree = lp_nfree(), in_use = lp_total() - nfree + 2;
	char out[8192], want[160], *row;
	int fd, go[2];
	char *p, *half;
	pid_t pid;

	fd = memfd_create("lpps", MFD_HUGETLB);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(ftruncate(fd, 2 * ps), 0);
	p = mmap(NULL, 2 * ps, RW, MAP_SHARED, fd, 0);
	ASSERT_MAPPED(p);
	half = mmap(NULL, ps, RW, MAP_SHARED, fd, ps);
	ASSERT_MAPPED(half);
	ASSERT_EQ(pipe(go), 0);
	pid = fork();
	if (pid == 0) {
		char c;

		close(go[1]);
		/* Holds the inherited mappings until the parent is done. */
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	EXPECT_EQ(lpctl_output("ps --json", out, sizeof(out)), 0);
	close(go[1]);
	EXPECT_TRUE(child_ok(pid));
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)getpid());
	row = strstr(out, want);
	EXPECT_TRUE(row != NULL);
	if (row)
		EXPECT_HAS(row, "\"private\":0,\"shared\":3,\"memfd\":3,\"keyed\":0");
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)pid);
	row = strstr(out, want);
	EXPECT_TRUE(row != NULL);
	if (row)
		EXPECT_HAS(row, "\"shared\":3,\"memfd\":3,");
	snprintf(want, sizeof(want), "\"mapped\":%ld,\"in_use\":%ld,", in_use,
		 in_use);
	EXPECT_HAS(out, want);
	EXPECT_EQ(munmap(half, ps), 0);
	EXPECT_EQ(munmap(p, 2 * ps), 0);
	EXPECT_EQ(close(fd), 0);
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/* A child with RLIMIT_MEMLOCK 0, as nobody in no group but @gid. */
static void nobody_in(gid_t gid)
{
	struct rlimit rl = { 0, 0 };

	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		printf("# cannot set RLIMIT_MEMLOCK to 0: %s\n",
		       strerror(errno));
		_exit(1);
	}
	become_nobody_in(gid);
}

/*
 * With kernel.largepage_group set, explain says a member has no limit
 * (and the probe works at RLIMIT_MEMLOCK 0), and tells a non-member
 * which group would lift it.
 */
TEST(lpctl_explain_reports_the_group_allowance)
{
	char out[4096];
	pid_t pid;

	ASSERT_EQ(write_text("/proc/sys/kernel/largepage_group", "4243"), 0);
	pid = fork();
	if (pid == 0) {
		nobody_in(4243);
		EXPECT_EQ(explain("", out, sizeof(out)), 0);
		EXPECT_HAS(out, "Locked memory:   no limit (a member of group 4243, kernel.largepage_group)");
		EXPECT_HAS(out, "Probe:           mapped and freed one large page");
		EXPECT_EQ(explain("--json", out, sizeof(out)), 0);
		EXPECT_HAS(out, "\"large_page_group\":4243,\"group_member\":true");
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	pid = fork();
	if (pid == 0) {
		nobody_in(4244);
		EXPECT_EQ(explain("", out, sizeof(out)), 1);
		EXPECT_HAS(out, "RLIMIT_MEMLOCK 0 bytes: none allowed");
		EXPECT_HAS(out, "Group:           members of group 4243 (kernel.largepage_group) have no limit");
		EXPECT_HAS(out, "Operation not permitted");
		CHILD_DONE();
	}
	EXPECT_TRUE(child_ok(pid));
	EXPECT_EQ(write_text("/proc/sys/kernel/largepage_group", "0"), 0);
}

/* ------------------------------------------------------------- setup */

/*
 * Before main(): run under liblargepage.so (re-executing with it in
 * LD_PRELOAD), or be the --attach helper.
 */
__attribute__((constructor)) static void preload_setup(int argc, char **argv)
{
	const char *lib = getenv("LP_PRELOAD_LIB");
	const char *env = getenv("LD_PRELOAD");
	char buf[4096];

	ps = lp_size();
	if (argc == 3 && !strcmp(argv[1], "--attach"))
		_exit(attach_helper(atoi(argv[2])));
	if (argc == 4 && !strcmp(argv[1], "--check-env"))
		_exit(check_env_helper(argv[2], argv[3]));
	if (env && strstr(env, "liblargepage.so"))
		return;
	if (!lib)
		lib = PRELOAD_LIB;
	if (env && *env)
		snprintf(buf, sizeof(buf), "%s:%s", env, lib);
	else
		snprintf(buf, sizeof(buf), "%s", lib);
	setenv("LD_PRELOAD", buf, 1);
	execv("/proc/self/exe", argv);
	printf("Bail out! cannot re-execute under %s: %s\n", lib,
	       strerror(errno));
	exit(1);
}
