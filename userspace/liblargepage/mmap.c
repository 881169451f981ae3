// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: mmap(), mmap64() and munmap(). MAP_ANONYMOUS |
 * MAP_HUGETLB is served from the pool (get_large_pages()); MAP_FIXED
 * and munmap() over large-page mappings release them; everything else
 * goes to libc's, and mimalloc's own calls are counted for the heap.
 * A memfd of the pool (memfd.c) is mapped and unmapped by the kernel:
 * its mappings are not tracked here, and reach libc's calls unchanged
 * (but for MAP_HUGETLB, which hugetlbfs takes on its files).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "preload.h"

#define SMALL_PAGE	4096UL

/*
 * Put a PROT_NONE reservation back over [addr, addr + len) after a
 * failed MAP_FIXED, so that a program (OpenJDK) committing into its own
 * reservation keeps it. Best effort: another thread may have taken the
 * range meanwhile.
 */
static void restore_reservation(unsigned long addr, unsigned long len)
{
	REAL(mmap, "mmap")((void *)addr, len, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			   MAP_FIXED_NOREPLACE, -1, 0);
}

/*
 * A MAP_HUGETLB request from the pool. Returns the address, or
 * MAP_FAILED with errno; *fallback set when the caller may serve it from
 * normal pages instead (the pool could not).
 */
static void *huge_mmap(void *addr_p, size_t len, int prot, int flags,
		       int *fallback, unsigned long *rlen)
{
	unsigned long addr = (unsigned long)addr_p, got;
	int type = flags & MAP_TYPE, fixed = flags & MAP_FIXED;
	int noreplace = !fixed && (flags & MAP_FIXED_NOREPLACE), err, ret;
	long ps = page_size(), r;

	*fallback = 0;
	*rlen = len;
	if (ps < 0) {
		*fallback = 1;
		errno = ENOMEM;
		return MAP_FAILED;
	}
	if (!len || (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) ||
	    (type != MAP_PRIVATE && type != MAP_SHARED &&
	     type != MAP_SHARED_VALIDATE) ||
	    ((fixed || noreplace) && (addr & (ps - 1)))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	*rlen = round_up(len, ps);
	if (!*rlen) {
		errno = ENOMEM;
		return MAP_FAILED;
	}

	pthread_mutex_lock(&lp_lock);
	if (!map_room()) {
		err = ENOMEM;
		goto fail_fallback;
	}
	if (fixed) {
		/*
		 * MAP_FIXED replaces what is there, large pages included.
		 * A range it cannot empty (it cuts a large-page mapping) is
		 * ENOMEM, as the kernel's mmap_region() fails when its
		 * unmap of the range does; nothing has changed then.
		 */
		ret = clear_range(addr, addr + *rlen);
		if (ret < 0 || (!ret &&
				REAL(munmap, "munmap")((void *)addr, *rlen))) {
			err = ENOMEM;
			goto fail;
		}
	}
	r = get_large_pages(addr, *rlen, prot,
			    type == MAP_PRIVATE ? MAP_PRIVATE : MAP_SHARED);
	if (r == -1) {
		err = hugetlb_errno(errno);
		goto fail_restore;
	}
	got = (unsigned long)r;
	if ((fixed || noreplace) && got != addr) {
		/*
		 * The hint was not taken: with MAP_FIXED another thread
		 * took the range after the munmap(), with
		 * MAP_FIXED_NOREPLACE it was in use.
		 */
		release(got);
		err = fixed ? ENOMEM : EEXIST;
		goto fail_restore;
	}
	map_add(got, *rlen, type == MAP_PRIVATE ? MAP_KIND_PRIVATE :
						MAP_KIND_SHARED);
	pthread_mutex_unlock(&lp_lock);
	return (void *)got;

fail_restore:
	if (fixed)
		restore_reservation(addr, *rlen);
fail_fallback:
	*fallback = pool_error(err);
fail:
	pthread_mutex_unlock(&lp_lock);
	errno = err;
	return MAP_FAILED;
}

static int wants_huge(int flags)
{
	return (flags & (MAP_ANONYMOUS | MAP_HUGETLB)) ==
		(MAP_ANONYMOUS | MAP_HUGETLB);
}

/*
 * A mapping of normal pages with MAP_FIXED over large-page mappings:
 * they are released (as the kernel replaces hugetlb ones), and the
 * range, empty now, mapped with MAP_FIXED_NOREPLACE, so that a mapping
 * another thread made in it meanwhile is not replaced: ENOMEM then.
 * A range that cuts one is ENOMEM, and changes nothing: hugetlbfs's
 * errno where the cut is not at a huge page boundary. *done is 0 when
 * there was nothing of ours in the range (the caller maps as usual, and
 * atomically).
 */
static void *fixed_over_large(void *addr, size_t len, int prot, int flags,
			      int fd, off64_t off, int *done)
{
	unsigned long a = (unsigned long)addr;
	void *p = MAP_FAILED;
	int ret;

	*done = 0;
	if (!(flags & MAP_FIXED) || !len || (a & (SMALL_PAGE - 1)) ||
	    !__atomic_load_n(&lp_nr_tracked, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&lp_lock);
	ret = clear_range(a, a + round_up(len, SMALL_PAGE));
	if (ret < 0) {
		/* Not emptied (a cut): ENOMEM, as in huge_mmap(). */
		*done = 1;
		errno = ENOMEM;
	} else if (ret > 0) {
		*done = 1;
		flags = (flags & ~MAP_FIXED) | MAP_FIXED_NOREPLACE;
		p = REAL(mmap64, "mmap64")(addr, len, prot, flags, fd, off);
		if (p == MAP_FAILED && errno == EEXIST)
			errno = ENOMEM;
	}
	pthread_mutex_unlock(&lp_lock);
	return p;
}

LP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		       off64_t off)
{
	unsigned long rlen;
	int fallback, err, done;
	void *p;

	if ((flags & (MAP_ANONYMOUS | MAP_HUGETLB)) == MAP_HUGETLB)
		flags = memfd_hugetlb_flags(flags, fd);
	if (wants_huge(flags) && !pool_size(flags, page_size()))
		return REAL(mmap64, "mmap64")(addr, len, prot, flags, fd, off);
	if (!wants_huge(flags)) {
		p = fixed_over_large(addr, len, prot, flags, fd, off, &done);
		if (done)
			return p;
		p = REAL(mmap64, "mmap64")(addr, len, prot, flags, fd, off);
		lp_heap_note_mmap(__builtin_return_address(0), p, len);
		return p;
	}
	p = huge_mmap(addr, len, prot, flags, &fallback, &rlen);
	if (p != MAP_FAILED || !fallback || !fallback_enabled())
		return p;
	err = errno;
	warn_fallback("mmap", rlen, err);
	flags &= ~(MAP_HUGETLB | (MAP_HUGE_MASK << MAP_HUGE_SHIFT));
	return REAL(mmap64, "mmap64")(addr, rlen, prot, flags, fd, off);
}

/*
 * libc's mmap() reads a 32-bit off_t as unsigned, mmap64() refuses a
 * negative one: keep the difference for the calls passed through.
 */
LP_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	int done;
	void *p;

	if ((flags & (MAP_ANONYMOUS | MAP_HUGETLB)) == MAP_HUGETLB)
		flags = memfd_hugetlb_flags(flags, fd);
	if (wants_huge(flags) && !pool_size(flags, page_size()))
		return REAL(mmap, "mmap")(addr, len, prot, flags, fd, off);
	if (!wants_huge(flags)) {
		p = fixed_over_large(addr, len, prot, flags, fd,
				     (off64_t)(uint32_t)off, &done);
		if (done)
			return p;
		p = REAL(mmap, "mmap")(addr, len, prot, flags, fd, off);
		lp_heap_note_mmap(__builtin_return_address(0), p, len);
		return p;
	}
	return mmap64(addr, len, prot, flags, fd, off);
}

/*
 * munmap() over large-page mappings: as hugetlbfs, the length is
 * rounded up to the small page only, and a range whose start or end
 * falls inside a large-page mapping is EINVAL, nothing unmapped (at a
 * large-page boundary too, where hugetlbfs would split the mapping).
 * A range with none of the library's mappings in it (a memfd's
 * mappings are the kernel's, never tracked) is the kernel's munmap().
 */
LP_EXPORT int munmap(void *addr_p, size_t len)
{
	unsigned long addr = (unsigned long)addr_p, end;
	int ret;

	lp_heap_note_munmap(__builtin_return_address(0), addr_p, len);
	if (!__atomic_load_n(&lp_nr_tracked, __ATOMIC_RELAXED))
		return REAL(munmap, "munmap")(addr_p, len);
	end = addr + round_up(len, SMALL_PAGE);
	/* What the kernel refuses, it refuses before anything is released. */
	if (!len || (addr & (SMALL_PAGE - 1)) || end <= addr)
		return REAL(munmap, "munmap")(addr_p, len);
	pthread_mutex_lock(&lp_lock);
	ret = clear_range(addr, end);
	pthread_mutex_unlock(&lp_lock);
	if (ret)
		return ret < 0 ? -1 : 0;
	/* Nothing of ours there: the kernel's munmap(), atomic. */
	return REAL(munmap, "munmap")(addr_p, len);
}
