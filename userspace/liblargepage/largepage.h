/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * liblargepage: the large-page system calls of the patched i386 kernel
 * (get_large_pages, free_large_pages, share_large_pages,
 * unshare_large_pages) and the pool behind them
 * (/proc/sys/kernel/numlargepages, the LargePages_* lines of /proc/meminfo).
 *
 * Every function sets errno on failure and leaves it as the kernel gave
 * it: functions returning int or long return -1, functions returning a
 * pointer return NULL (never MAP_FAILED). The man pages
 * get_large_pages(2) and share_large_pages(2) list the errors.
 */
#ifndef _LARGEPAGE_H
#define _LARGEPAGE_H

#include <stddef.h>
#include <sys/ipc.h>	/* IPC_CREAT, IPC_EXCL for lp_share() */
#include <sys/mman.h>	/* PROT_*, MAP_PRIVATE, MAP_SHARED */

#ifdef __cplusplus
extern "C" {
#endif

#define LP_SYSCTL_PATH	"/proc/sys/kernel/numlargepages"
#define LP_SEGMENTS_PATH "/proc/largepage_segments"

/*
 * The large page size in bytes (2 MiB with PAE, 4 MiB without), from
 * the LargePageSize line of /proc/meminfo. -1 with ENOSYS when the
 * kernel has no large pages, or the errno of opening /proc/meminfo.
 */
long lp_page_size(void);

/*
 * Map len bytes (a non-zero multiple of the page size) of large pages,
 * prot any of PROT_READ|PROT_WRITE|PROT_EXEC, flags MAP_PRIVATE (not
 * inherited across fork) or MAP_SHARED (shared with children). The kernel
 * picks the address. The memory is zeroed and never faults.
 * Returns the address, or NULL: EINVAL (bad len, prot or flags, or a CPU
 * without PSE), ENOMEM (the pool or the address space is short, or over
 * RLIMIT_MEMLOCK), EPERM (RLIMIT_MEMLOCK is 0), ENOSYS (no large pages).
 */
void *lp_alloc(size_t len, int prot, int flags);

/* Unmap a mapping made by lp_alloc(); 0, or -1 with EINVAL, ENOSYS. */
int lp_free(void *addr);

/*
 * Map the keyed segment key (> 0) of len bytes, creating it when flags
 * has IPC_CREAT; the low 9 bits of flags are its mode on creation
 * (0: 0600). Returns the address, or NULL: EINVAL (key <= 0, bad len,
 * prot or flags, a len that differs from the segment's), ENOENT (no such
 * key and no IPC_CREAT), EEXIST (IPC_CREAT|IPC_EXCL and the key exists),
 * EACCES (the mode refuses the caller), ENOMEM, EPERM, ENOSYS as
 * lp_alloc().
 */
void *lp_share(int key, size_t len, int prot, int flags);

/*
 * Detach a mapping made by lp_share() (or lp_alloc()); the segment goes
 * when its last user detaches. 0, or -1 with EINVAL, ENOSYS.
 */
int lp_unshare(void *addr);

/*
 * The pool's size and free pages, in pages, from /proc/meminfo; either
 * pointer may be NULL. 0, or -1 with ENOSYS (no large pages) or the
 * errno of opening /proc/meminfo.
 */
int lp_pool(long *total, long *free);

/*
 * Grow (delta > 0) or shrink (delta < 0) the pool by up to |delta| pages
 * through /proc/sys/kernel/numlargepages: growing takes what the page
 * allocator can give, shrinking takes free pages only, so check the new
 * size with lp_pool(). 0, or -1: EACCES or EPERM (not root), EINVAL
 * (delta != 0 on a CPU without PSE), ENOSYS (no large pages).
 */
int lp_resize(long delta);

#ifdef __cplusplus
}
#endif

#endif /* _LARGEPAGE_H */
