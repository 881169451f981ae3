/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the large-page tests: the four system calls (lpsys.h,
 * numbers from the patched kernel's uapi <asm/unistd_32.h>) and the
 * helpers that make them or take their results; the rest, which make
 * none, are in util.h.
 */
#ifndef LP_TEST_LP_H
#define LP_TEST_LP_H

#include <asm/unistd_32.h>
#include <sys/ipc.h>
#if __has_include(<linux/largepage.h>)
#include <linux/largepage.h>
#endif

/* A heap (SPEC): from the patched kernel's uapi, else its value. */
#ifndef LP_COPY_ON_FORK
#define LP_COPY_ON_FORK 0x200000
#endif

/* memfd_create() of a segment from the pool: the same way. */
#ifndef MFD_LARGEPAGE
#define MFD_LARGEPAGE 0x00100000U
#endif

#include "lpsys.h"
#include "util.h"

/* madvise() advice newer than this glibc knows. */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* 6.1, newer than this glibc */
#endif
#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif

/* Is the key gone? Probed by an attach without IPC_CREAT. */
static inline int lp_key_absent(int key, unsigned long len)
{
	long r = lpsys_share(key, 0, len, PROT_READ, 0);

	if (LP_OK(r)) {
		lpsys_unshare(r);
		return 0;
	}
	if (errno != ENOENT)
		TH_LOG("probe of key %d: %s", key, strerror(errno));
	return errno == ENOENT;
}

/*
 * The mapping r (a call's result) still intact: the pattern is there and
 * every page is still writable (a write that faults kills the test,
 * which fails it).
 */
static inline int lp_intact(long r, unsigned long len, uint32_t seed)
{
	unsigned long off;

	if (!lp_check(LP_PTR(r), len, seed))
		return 0;
	for (off = 0; off < len; off += 4096)
		*(volatile uint32_t *)(LP_PTR(r) + off) ^= 0;
	return 1;
}

/*
 * Map 2 private pages, 1 shared and a 1-page keyed segment, 4 pages in
 * all, filled with seeds 1, 2 and 3; -1 if one fails.
 */
static inline int lp_map_four(int key)
{
	unsigned long lp = lp_size();
	long a = lpsys_get(0, 2 * lp, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	long b = lpsys_get(0, lp, PROT_READ | PROT_WRITE, MAP_SHARED);
	long c = lpsys_share(key, 0, lp, PROT_READ | PROT_WRITE, IPC_CREAT | 0600);

	if (!LP_OK(a) || !LP_OK(b) || !LP_OK(c)) {
		printf("# map_four: %s\n", strerror(errno));
		return -1;
	}
	lp_fill(LP_PTR(a), 2 * lp, 1);
	lp_fill(LP_PTR(b), lp, 2);
	lp_fill(LP_PTR(c), lp, 3);
	return 0;
}

#endif /* LP_TEST_LP_H */
