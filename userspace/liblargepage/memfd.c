// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: memfd_create(). MFD_HUGETLB of the large page's size
 * becomes the kernel's MFD_LARGEPAGE, a memfd whose pages come from the
 * pool; every other call goes to libc's. The fd is the kernel's from
 * then on: ftruncate() takes the pages, mmap() and munmap() of it go to
 * the kernel unchanged (mmap.c only takes MAP_HUGETLB off a mapping of
 * it, memfd_hugetlb_flags()), and nothing of it is tracked here.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#if __has_include(<linux/largepage.h>)
#include <linux/largepage.h>
#endif
#if __has_include(<linux/magic.h>)
#include <linux/magic.h>
#endif

#include "preload.h"

/* The patched kernel's uapi (<linux/largepage.h>, <linux/magic.h>). */
#ifndef MFD_LARGEPAGE
#define MFD_LARGEPAGE	0x00100000U
#endif
#ifndef LARGEPAGE_MAGIC
#define LARGEPAGE_MAGIC	0x4c504147	/* "LPAG" */
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB	4U
#endif
/* <linux/memfd.h>'s, which glibc's <sys/mman.h> does not define. */
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT	26
#define MFD_HUGE_MASK	0x3fU
#endif
/* pool_size() reads MFD_HUGE_* as MAP_HUGE_*: one encoding, log2 << 26. */
_Static_assert(MFD_HUGE_SHIFT == MAP_HUGE_SHIFT &&
	       MFD_HUGE_MASK == MAP_HUGE_MASK, "MFD_HUGE_* are not MAP_HUGE_*");

#define MFD_HUGE_BITS	(MFD_HUGETLB | (MFD_HUGE_MASK << MFD_HUGE_SHIFT))

/*
 * memfd_create(MFD_HUGETLB [| MFD_HUGE_2MB or _4MB, the large page's]):
 * a memfd of the pool, MFD_LARGEPAGE with the other flags kept
 * (MFD_CLOEXEC, MFD_ALLOW_SEALING). It takes no page: ftruncate() takes
 * them, all or nothing (ENOMEM, EPERM as get_large_pages()), once.
 *
 * Size bits that name another size are not the library's: the call goes
 * to the kernel unchanged, which has no hugetlbfs pages of that size on
 * i386 and refuses it as 6.1's hugetlb_file_setup() does: ENODEV (no
 * hstate; also for a log of 32 or more, compared here, never shifted),
 * whatever LARGEPAGE_FALLBACK says.
 *
 * The kernel refuses MFD_LARGEPAGE with EINVAL when it cannot serve it
 * (no large pages in it, no PSE, or a kernel without the flag): the pool
 * cannot, and, as for mmap(), LARGEPAGE_FALLBACK decides. Set, the memfd
 * is an ordinary one (normal pages, shmem) with the one warning. Unset,
 * the call goes to the kernel unchanged: hugetlbfs's memfd, as without
 * the library (its ftruncate() succeeds, and its mmap() gives ENOMEM
 * when hugetlbfs has no pages). Any other error (EFAULT, EMFILE, ...)
 * is the kernel's answer to the call itself, and returned as it is; an
 * EINVAL for a too long name comes back from the retry too.
 */
LP_EXPORT int memfd_create(const char *name, unsigned int flags)
{
	long ps;
	int fd;

	/* MFD_LARGEPAGE with MFD_HUGETLB is the kernel's EINVAL to give. */
	if (!(flags & MFD_HUGETLB) || (flags & MFD_LARGEPAGE))
		return REAL(memfd_create, "memfd_create")(name, flags);
	ps = page_size();
	if (!pool_size((int)flags, ps))
		return REAL(memfd_create, "memfd_create")(name, flags);
	if (ps > 0) {
		fd = REAL(memfd_create, "memfd_create")(name,
				(flags & ~MFD_HUGE_BITS) | MFD_LARGEPAGE);
		if (fd >= 0 || errno != EINVAL)
			return fd;
	}
	if (!fallback_enabled())
		return REAL(memfd_create, "memfd_create")(name, flags);
	fd = REAL(memfd_create, "memfd_create")(name, flags & ~MFD_HUGE_BITS);
	/* Said only when normal pages did serve it (not for a bad name). */
	if (fd >= 0)
		warn_fallback("memfd_create", 0, ps > 0 ? EINVAL : ENOSYS);
	return fd;
}

/*
 * mmap() of a file with MAP_HUGETLB: hugetlbfs takes it (and ignores the
 * size bits) on its own files, a memfd of MFD_HUGETLB among them; the
 * kernel refuses it with EINVAL on every other file, ours included. On a
 * large-page file (fstatfs(): LARGEPAGE_MAGIC) the flag and the size bits
 * are taken off; on any other the flags are returned as they are. One
 * fstatfs() for such a call, none for any other: anonymous ones are
 * mmap.c's, and a file mapping without MAP_HUGETLB never comes here.
 */
int memfd_hugetlb_flags(int flags, int fd)
{
	struct statfs sfs;
	int err = errno, ret;

	if ((flags & (MAP_HUGETLB | MAP_ANONYMOUS)) != MAP_HUGETLB || fd < 0)
		return flags;
	ret = fstatfs(fd, &sfs);
	errno = err;
	if (ret || sfs.f_type != LARGEPAGE_MAGIC)
		return flags;
	return flags & ~(MAP_HUGETLB | (MAP_HUGE_MASK << MAP_HUGE_SHIFT));
}
