/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The four large-page system calls, raw (numbers from the patched
 * kernel's uapi <asm/unistd_32.h>), for the tests and the benchmarks.
 */
#ifndef LP_TEST_LPSYS_H
#define LP_TEST_LPSYS_H

#include <asm/unistd_32.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "meminfo.h"

#ifndef __NR_get_large_pages
#error "the uapi headers are not those of the patched kernel"
#endif

static inline long lpsys_get(unsigned long addr, unsigned long len, int prot,
			     int flags)
{
	return syscall(__NR_get_large_pages, addr, len, prot, flags);
}

static inline long lpsys_free(unsigned long addr)
{
	return syscall(__NR_free_large_pages, addr);
}

static inline long lpsys_share(int key, unsigned long addr, unsigned long len,
			       int prot, int flag)
{
	return syscall(__NR_share_large_pages, key, addr, len, prot, flag);
}

static inline long lpsys_unshare(unsigned long addr)
{
	return syscall(__NR_unshare_large_pages, addr);
}

/*
 * A syscall() return value that is an address, not -1 (errno set). The
 * check takes the whole error range, as the kernel's IS_ERR_VALUE does.
 */
#define LP_OK(r) ((unsigned long)(r) < (unsigned long)-4095)

/* A mapping address from a syscall() return value. */
#define LP_PTR(r) ((char *)(uintptr_t)(unsigned long)(r))

/*
 * Leave every free large page unzeroed: take them all and free them. A
 * request right after finds (almost) no page largepage_zerod has zeroed,
 * and zeroes its pages itself (the cold case, as before background
 * zeroing). 0, or -1 with errno set.
 */
static inline int lp_dirty_free_pages(void)
{
	unsigned long size = (unsigned long)meminfo("LargePageSize:") * 1024;
	long n = meminfo("LargePages_Free:"), r;

	if (n <= 0)
		return 0;
	r = lpsys_get(0, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	if (!LP_OK(r))
		return -1;
	return lpsys_free(r) ? -1 : 0;
}

#endif /* LP_TEST_LPSYS_H */
