// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: what the interposers stand on. libc's own definitions
 * of the calls interposed (REAL()), the large-page system calls with an
 * address hint, the large page size, and whether the size bits of a
 * request name it.
 */
#include <asm/unistd_32.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "largepage.h"
#include "preload.h"

#ifndef __NR_get_large_pages
#error "build against the uapi headers of the large-page kernel (KHDR)"
#endif

static long page_size_cache;	/* 0: not read yet */

struct lp_real_fns lp_real;

/*
 * The next definition of name (libc's). dlsym() does not allocate when
 * it succeeds; it cannot fail for these, which libc has always had
 * (__shmctl64 since 2.34; without it the interposer is never called).
 */
void *next_sym(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!fn) {
		int err = errno;

		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
		errno = err;
	}
	return fn;
}

/* The raw calls, with an address hint (liblargepage.a passes none). */
long get_large_pages(unsigned long addr, unsigned long len, int prot,
		     int flags)
{
	return syscall(__NR_get_large_pages, addr, len, prot, flags);
}

long share_large_pages(int key, unsigned long addr, unsigned long len,
		       int prot, int flag)
{
	return syscall(__NR_share_large_pages, key, addr, len, prot, flag);
}

/* free_large_pages() and unshare_large_pages() do the same. */
int release(unsigned long addr)
{
	return syscall(__NR_unshare_large_pages, addr) ? -1 : 0;
}

/*
 * The large page size, read once from /proc/meminfo (LargePageSize:, as
 * programs read Hugepagesize: to round their sizes). -1 with errno
 * ENOSYS when the kernel has no large pages; not cached then.
 */
long page_size(void)
{
	long ps = __atomic_load_n(&page_size_cache, __ATOMIC_RELAXED);

	if (!ps) {
		ps = lp_page_size();
		if (ps <= 0 || (ps & (ps - 1))) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&page_size_cache, ps, __ATOMIC_RELAXED);
	}
	return ps;
}

/* Round len up to a multiple of ps (a power of 2); 0 on overflow. */
unsigned long round_up(unsigned long len, unsigned long ps)
{
	if (len > ULONG_MAX - (ps - 1))
		return 0;
	return (len + ps - 1) & ~(ps - 1);
}

/*
 * Is the page size that the size bits of a MAP_HUGETLB or SHM_HUGETLB
 * request name (flags >> 26 & 0x3f, MAP_HUGE_* and SHM_HUGE_*: log2 of
 * the size, 0 for the default) the large page? A size the pool does not
 * have is not the library's to serve: the caller passes the request to
 * the kernel, which gives what it gives without the library. Here that
 * is EINVAL: hugetlbfs has no other page size on i386 (hstate_sizelog()
 * finds no hstate, also for a log of 32 or more, which no 32-bit size
 * is). The log is compared, never shifted: 1UL << 53 is not a size.
 * Without large pages (ps < 0) every request is the pool's, to fail
 * with ENOMEM as an empty pool does.
 */
int pool_size(int flags, long ps)
{
	unsigned int log = ((unsigned int)flags >> MAP_HUGE_SHIFT) &
			   MAP_HUGE_MASK;

	return !log || ps < 0 || log == (unsigned int)__builtin_ctzl(ps);
}
