/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The four large-page system calls, raw (numbers from the patched
 * kernel's uapi <asm/unistd_32.h>), for the tests and the benchmarks.
 */
#ifndef LP_TEST_LPSYS_H
#define LP_TEST_LPSYS_H

#include <asm/unistd_32.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_get_large_pages
#error "the uapi headers are not those of the patched kernel"
#endif

static inline long lp_get(unsigned long addr, unsigned long len, int prot,
			  int flags)
{
	return syscall(__NR_get_large_pages, addr, len, prot, flags);
}

static inline long lp_free(unsigned long addr)
{
	return syscall(__NR_free_large_pages, addr);
}

static inline long lp_share(int key, unsigned long addr, unsigned long len,
			    int prot, int flag)
{
	return syscall(__NR_share_large_pages, key, addr, len, prot, flag);
}

static inline long lp_unshare(unsigned long addr)
{
	return syscall(__NR_unshare_large_pages, addr);
}

/* A mapping address from a syscall() return value. */
#define LP_PTR(r) ((char *)(uintptr_t)(unsigned long)(r))

#endif /* LP_TEST_LPSYS_H */
