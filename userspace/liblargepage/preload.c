// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: serve the hugetlbfs requests of unmodified programs
 * from the large-page pool, loaded with LD_PRELOAD (see liblargepage(7)).
 *
 * Interposed: mmap()/mmap64() with MAP_ANONYMOUS|MAP_HUGETLB become
 * get_large_pages(); shmget() with SHM_HUGETLB creates a keyed segment
 * (share_large_pages()) behind an ordinary SysV id, and shmat(), shmdt()
 * and shmctl() on that id attach, detach, report and remove it; munmap()
 * and MAP_FIXED over a large-page mapping release it. Every other call
 * goes to libc unchanged: a program that never asks for huge pages only
 * pays one flag test per mmap() and, once it has nothing tracked, one
 * load per munmap(), shmat(), shmdt() and shmctl().
 *
 * The interposed paths never allocate: the mappings and segments are
 * kept in fixed tables under one mutex, /proc files are read with
 * read(2) into stack buffers, the warning is written with write(2).
 */
#include <asm/unistd_32.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "largepage.h"
#include "lp-internal.h"

#ifndef __NR_get_large_pages
#error "build against the uapi headers of the large-page kernel (KHDR)"
#endif

/* Older headers than the ones this was written against. */
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT	26
#define MAP_HUGE_MASK	0x3f
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef SHM_HUGE_SHIFT
#define SHM_HUGE_SHIFT	26
#define SHM_HUGE_MASK	0x3f
#endif
#ifndef SHM_NORESERVE
#define SHM_NORESERVE	010000
#endif
/* pool_size() reads the size bits of both. */
_Static_assert(SHM_HUGE_SHIFT == MAP_HUGE_SHIFT &&
	       SHM_HUGE_MASK == MAP_HUGE_MASK, "SHM_HUGE_* are not MAP_HUGE_*");

#define LP_EXPORT	__attribute__((visibility("default")))

#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"
#define SMALL_PAGE	4096UL
#define MAX_MAPS	128	/* large-page mappings of one process */
#define MAX_SEGS	64	/* SHM_HUGETLB ids one process knows */

/* The SysV id of a segment -> the key of its large-page segment. */
#define SEG_KEY_SALT	0x4c505348	/* "LPSH"; bit 31 clear */

enum map_kind {
	MAP_KIND_FREE = 0,
	MAP_KIND_PRIVATE,	/* get_large_pages(MAP_PRIVATE): not in a child */
	MAP_KIND_SHARED,	/* get_large_pages(MAP_SHARED) */
	MAP_KIND_SHM,		/* share_large_pages() for shmat() */
};

struct lp_map {
	unsigned long start, len;
	enum map_kind kind;
};

/*
 * A SHM_HUGETLB id this process (or an ancestor before fork()) got from
 * shmget(). The SysV segment behind the id (the "placeholder") is an
 * ordinary one of the size asked for, made with SHM_NORESERVE and never
 * attached, so it costs no memory: it gives the id, the key, the mode
 * and the size their SysV meaning, checked by the kernel. The memory is
 * the keyed large-page segment seg_key(shmid). pin is the creator's
 * mapping of it from shmget() until its first shmat() takes it over:
 * it keeps the segment (and its pages, taken at shmget() as hugetlbfs
 * takes them) alive until then.
 */
struct lp_seg {
	int shmid;		/* -1: slot free */
	unsigned long pin;	/* 0: none */
	unsigned long len;	/* rounded to the large page */
};

/*
 * lock protects maps[], segs[] and nr_tracked (the number of entries in
 * use in both). It is held across the system calls of one interposed
 * call, so that no other thread sees a half-done MAP_FIXED. nr_tracked
 * is also read without the lock, as the fast path's "nothing to do".
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct lp_map maps[MAX_MAPS];
static struct lp_seg segs[MAX_SEGS] = { [0 ... MAX_SEGS - 1] = { -1, 0, 0 } };
static int nr_tracked;
static long page_size_cache;	/* 0: not read yet */
static int warned;		/* the fallback warning was written */

typedef void *mmap_fn(void *, size_t, int, int, int, off_t);
typedef void *mmap64_fn(void *, size_t, int, int, int, off64_t);
typedef int munmap_fn(void *, size_t);
typedef int shmget_fn(key_t, size_t, int);
typedef void *shmat_fn(int, const void *, int);
typedef int shmdt_fn(const void *);
typedef int shmctl_fn(int, int, void *);
typedef shmctl_fn shmctl64_fn;

static struct {
	mmap_fn *mmap;
	mmap64_fn *mmap64;
	munmap_fn *munmap;
	shmget_fn *shmget;
	shmat_fn *shmat;
	shmdt_fn *shmdt;
	shmctl_fn *shmctl;
	shmctl_fn *shmctl64;
} real;

/*
 * The next definition of name (libc's). dlsym() does not allocate when
 * it succeeds; it cannot fail for these, which libc has always had
 * (__shmctl64 since 2.34; without it the interposer is never called).
 */
static void *next_sym(void **slot, const char *name)
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

#define REAL(name, sym)	((name##_fn *)next_sym((void **)&real.name, sym))

/* The raw calls, with an address hint (liblargepage.a passes none). */
static long get_large_pages(unsigned long addr, unsigned long len, int prot,
			    int flags)
{
	return syscall(__NR_get_large_pages, addr, len, prot, flags);
}

static long share_large_pages(int key, unsigned long addr, unsigned long len,
			      int prot, int flag)
{
	return syscall(__NR_share_large_pages, key, addr, len, prot, flag);
}

/* free_large_pages() and unshare_large_pages() do the same. */
static int release(unsigned long addr)
{
	return syscall(__NR_unshare_large_pages, addr) ? -1 : 0;
}

/*
 * The large page size, read once from /proc/meminfo (LargePageSize:, as
 * programs read Hugepagesize: to round their sizes). -1 with errno
 * ENOSYS when the kernel has no large pages; not cached then.
 */
static long page_size(void)
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
static unsigned long round_up(unsigned long len, unsigned long ps)
{
	if (len > ULONG_MAX - (ps - 1))
		return 0;
	return (len + ps - 1) & ~(ps - 1);
}

/* ---------------------------------------------------------- fallback */

static int fallback_enabled(void)
{
	const char *v = getenv(FALLBACK_ENV);

	return v && *v && strcmp(v, "0");
}

static const char *errno_name(int err)
{
	switch (err) {
	case ENOMEM: return "ENOMEM";
	case EPERM: return "EPERM";
	case ENOSYS: return "ENOSYS";
	case ENOSPC: return "ENOSPC";
	default: return "error";
	}
}

/* The one warning of a process (and its children) that falls back. */
static void warn_fallback(const char *what, unsigned long len, int err)
{
	char msg[160], num[24];
	const char *parts[6];
	size_t n = 0, i, l;
	int j = sizeof(num);

	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	num[--j] = '\0';
	do {
		num[--j] = '0' + len % 10;
		len /= 10;
	} while (len && j > 0);
	parts[0] = "liblargepage: no large pages for ";
	parts[1] = what;
	parts[2] = " of ";
	parts[3] = num + j;
	parts[4] = " bytes (";
	parts[5] = errno_name(err);
	for (i = 0; i < 6; i++) {
		l = strlen(parts[i]);
		if (n + l >= sizeof(msg) - 64)
			break;
		memcpy(msg + n, parts[i], l);
		n += l;
	}
	l = strlen("), using normal pages (" FALLBACK_ENV ")\n");
	memcpy(msg + n, "), using normal pages (" FALLBACK_ENV ")\n", l);
	n += l;
	while (write(STDERR_FILENO, msg, n) < 0 && errno == EINTR)
		;
}

/*
 * Errors that mean "the pool cannot serve this": the caller falls back
 * to normal pages when asked to. Anything else (EINVAL for a bad
 * argument, EACCES, EEXIST) is the program's to see.
 */
static int pool_error(int err)
{
	return err == ENOMEM || err == EPERM || err == ENOSYS || err == ENOSPC;
}

/*
 * The errno hugetlbfs gives where the pool failed with err: ENOMEM when
 * there are no pages (also no large pages in this kernel, or a CPU
 * without PSE, where hugetlbfs would have no pool), EPERM over the
 * locked-memory limit, as SHM_HUGETLB does.
 */
static int hugetlb_errno(int err)
{
	return err == ENOSYS || err == EINVAL ? ENOMEM : err;
}

/* ------------------------------------------------------------ tables */

static struct lp_map *map_add(unsigned long start, unsigned long len,
			      enum map_kind kind)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++) {
		if (maps[i].kind == MAP_KIND_FREE) {
			maps[i].start = start;
			maps[i].len = len;
			maps[i].kind = kind;
			__atomic_add_fetch(&nr_tracked, 1, __ATOMIC_RELAXED);
			return &maps[i];
		}
	}
	return NULL;
}

static int map_room(void)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].kind == MAP_KIND_FREE)
			return 1;
	return 0;
}

static void map_del(struct lp_map *m)
{
	m->kind = MAP_KIND_FREE;
	__atomic_sub_fetch(&nr_tracked, 1, __ATOMIC_RELAXED);
}

static struct lp_map *map_at(unsigned long start, enum map_kind kind)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].kind == kind && maps[i].start == start)
			return &maps[i];
	return NULL;
}

static struct lp_seg *seg_find(int shmid)
{
	int i;

	for (i = 0; shmid >= 0 && i < MAX_SEGS; i++)
		if (segs[i].shmid == shmid)
			return &segs[i];
	return NULL;
}

static struct lp_seg *seg_add(int shmid, unsigned long pin, unsigned long len)
{
	int i;

	for (i = 0; i < MAX_SEGS; i++) {
		if (segs[i].shmid < 0) {
			segs[i].shmid = shmid;
			segs[i].pin = pin;
			segs[i].len = len;
			__atomic_add_fetch(&nr_tracked, 1, __ATOMIC_RELAXED);
			return &segs[i];
		}
	}
	return NULL;
}

static int seg_room(void)
{
	int i;

	for (i = 0; i < MAX_SEGS; i++)
		if (segs[i].shmid < 0)
			return 1;
	return 0;
}

static void seg_del(struct lp_seg *s)
{
	if (s->pin)
		release(s->pin);
	s->shmid = -1;
	s->pin = 0;
	__atomic_sub_fetch(&nr_tracked, 1, __ATOMIC_RELAXED);
}

static int seg_key(int shmid)
{
	return (shmid ^ SEG_KEY_SALT) & 0x7fffffff;
}

struct range {
	unsigned long start, end;
};

/* Add [start, start + len) to held[] (*n entries), sorted by start. */
static void hold_range(struct range *held, int *n, unsigned long start,
		       unsigned long len)
{
	int i = (*n)++;

	while (i > 0 && held[i - 1].start > start) {
		held[i] = held[i - 1];
		i--;
	}
	held[i].start = start;
	held[i].end = start + len;
}

/*
 * Take [addr, end) away as munmap() would, when large-page mappings (or
 * pins) are in it: munmap() the parts between them, then release them.
 * The released ranges themselves never reach munmap(): once released,
 * another thread may have a new mapping there. end is addr plus the
 * length rounded up to the small page, as the kernel rounds it; never
 * to the large page: hugetlbfs does not round a munmap() length either.
 * A large-page mapping the range cuts (it starts before addr or ends
 * after end) cannot be split: EINVAL, and nothing changes. hugetlbfs
 * refuses the same cut when it is not at a huge page boundary (its
 * may_split, hugetlb_vm_op_split(): EINVAL), and splits the mapping
 * when it is; the library never splits one. Returns 0, 1 when there was
 * something to release (the range is all unmapped now), or -1 with errno.
 */
static int clear_range(unsigned long addr, unsigned long end)
{
	struct range held[MAX_MAPS + MAX_SEGS];
	unsigned long cur = end;
	int i, n = 0;

	for (i = 0; i < MAX_MAPS; i++) {
		struct lp_map *m = &maps[i];

		if (m->kind == MAP_KIND_FREE ||
		    m->start + m->len <= addr || m->start >= end)
			continue;
		if (m->start < addr || m->start + m->len > end)
			goto cut;
		hold_range(held, &n, m->start, m->len);
	}
	for (i = 0; i < MAX_SEGS; i++) {
		struct lp_seg *s = &segs[i];

		if (s->shmid < 0 || !s->pin || s->pin + s->len <= addr ||
		    s->pin >= end)
			continue;
		if (s->pin < addr || s->pin + s->len > end)
			goto cut;
		hold_range(held, &n, s->pin, s->len);
	}
	if (!n)
		return 0;

	/*
	 * The parts between, the last first: only the last can reach past
	 * TASK_SIZE, which the kernel refuses (EINVAL) before it unmaps
	 * anything, and then nothing has changed here either.
	 */
	for (i = n - 1; i >= 0; i--) {
		if (held[i].end < cur &&
		    REAL(munmap, "munmap")((void *)held[i].end,
					   cur - held[i].end))
			return -1;
		cur = held[i].start;
	}
	if (cur > addr && REAL(munmap, "munmap")((void *)addr, cur - addr))
		return -1;

	for (i = 0; i < MAX_MAPS; i++) {
		struct lp_map *m = &maps[i];

		if (m->kind != MAP_KIND_FREE && m->start >= addr &&
		    m->start < end) {
			release(m->start);
			map_del(m);
		}
	}
	/* A pin: the program unmapped an address it was never given. */
	for (i = 0; i < MAX_SEGS; i++) {
		struct lp_seg *s = &segs[i];

		if (s->shmid >= 0 && s->pin && s->pin >= addr && s->pin < end) {
			release(s->pin);
			s->pin = 0;
		}
	}
	return 1;
cut:
	errno = EINVAL;
	return -1;
}

/* In a child after fork(): its parent's private mappings are not there. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void atfork_child(void)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].kind == MAP_KIND_PRIVATE)
			map_del(&maps[i]);
	pthread_mutex_unlock(&lock);
}

/*
 * Look libc's functions up now, before the program has threads: later,
 * dlsym() under lock could deadlock against a dlopen() whose
 * constructors call munmap(). Calls made before this constructor runs
 * (by other libraries' constructors) look them up themselves.
 */
__attribute__((constructor)) static void preload_init(void)
{
	REAL(mmap, "mmap");
	REAL(mmap64, "mmap64");
	REAL(munmap, "munmap");
	REAL(shmget, "shmget");
	REAL(shmat, "shmat");
	REAL(shmdt, "shmdt");
	REAL(shmctl, "shmctl");
	REAL(shmctl64, "__shmctl64");
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	lp_heap_init();
}

/* --------------------------------------------------------------- mmap */

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

	pthread_mutex_lock(&lock);
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
	pthread_mutex_unlock(&lock);
	return (void *)got;

fail_restore:
	if (fixed)
		restore_reservation(addr, *rlen);
fail_fallback:
	*fallback = pool_error(err);
fail:
	pthread_mutex_unlock(&lock);
	errno = err;
	return MAP_FAILED;
}

static int wants_huge(int flags)
{
	return (flags & (MAP_ANONYMOUS | MAP_HUGETLB)) ==
		(MAP_ANONYMOUS | MAP_HUGETLB);
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
static int pool_size(int flags, long ps)
{
	unsigned int log = ((unsigned int)flags >> MAP_HUGE_SHIFT) &
			   MAP_HUGE_MASK;

	return !log || ps < 0 || log == (unsigned int)__builtin_ctzl(ps);
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
	    !__atomic_load_n(&nr_tracked, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&lock);
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
	pthread_mutex_unlock(&lock);
	return p;
}

LP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		       off64_t off)
{
	unsigned long rlen;
	int fallback, err, done;
	void *p;

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
 */
LP_EXPORT int munmap(void *addr_p, size_t len)
{
	unsigned long addr = (unsigned long)addr_p, end;
	int ret;

	lp_heap_note_munmap(__builtin_return_address(0), addr_p, len);
	if (!__atomic_load_n(&nr_tracked, __ATOMIC_RELAXED))
		return REAL(munmap, "munmap")(addr_p, len);
	end = addr + round_up(len, SMALL_PAGE);
	/* What the kernel refuses, it refuses before anything is released. */
	if (!len || (addr & (SMALL_PAGE - 1)) || end <= addr)
		return REAL(munmap, "munmap")(addr_p, len);
	pthread_mutex_lock(&lock);
	ret = clear_range(addr, end);
	pthread_mutex_unlock(&lock);
	if (ret)
		return ret < 0 ? -1 : 0;
	/* Nothing of ours there: the kernel's munmap(), atomic. */
	return REAL(munmap, "munmap")(addr_p, len);
}

/* ---------------------------------------------------------- SysV shm */

/* The nattch of the keyed segment key in /proc/largepage_segments. */
struct seg_lookup {
	int key;
	long nattch;
};

static int seg_line(const char *line, void *arg)
{
	struct seg_lookup *sl = arg;
	char *end;
	long key = strtol(line, &end, 10);
	int i;

	if (end == line || key != sl->key)
		return 0;
	/* key, then size perms uid gid cuid cgid, then nattch */
	for (i = 0; i < 6; i++) {
		while (*end == ' ' || *end == '\t')
			end++;
		while (*end && *end != ' ' && *end != '\t')
			end++;
	}
	sl->nattch = strtol(end, NULL, 10);
	return 1;
}

/* 1 and *nattch when the keyed segment exists, 0 if not, -1. */
static int lp_segment(int key, long *nattch)
{
	struct seg_lookup sl = { key, 0 };
	int ret = lp_scan_lines(LP_SEGMENTS_PATH, seg_line, &sl);

	if (ret > 0 && nattch)
		*nattch = sl.nattch;
	return ret;
}

/*
 * Create the segment behind a new SHM_HUGETLB id: the placeholder
 * (creating with key, IPC_CREAT|IPC_EXCL unless IPC_PRIVATE), then the
 * keyed large-page segment, mapped as the pin. -1 with errno, and
 * *fallback when the pool could not (the placeholder is gone then).
 */
static int seg_create(key_t key, size_t size, int flg, long ps, int *fallback)
{
	unsigned long len = round_up(size, ps);
	int shmid, lkey, err;
	long r;

	if (!seg_room() || !map_room()) {
		*fallback = 1;
		errno = ENOMEM;
		return -1;
	}
	if (!len) {
		errno = size ? ENOMEM : EINVAL;
		return -1;
	}
	shmid = REAL(shmget, "shmget")(key, size,
				       flg | IPC_CREAT | SHM_NORESERVE);
	if (shmid < 0)
		return -1;
	lkey = seg_key(shmid);
	r = lkey ? share_large_pages(lkey, 0, len, PROT_READ | PROT_WRITE,
				     IPC_CREAT | IPC_EXCL | (flg & 0777)) : -1;
	if (r == -1) {
		/* EEXIST: a removed id's segment still attached somewhere. */
		err = !lkey || errno == EEXIST ? ENOSPC : hugetlb_errno(errno);
		REAL(shmctl, "shmctl")(shmid, IPC_RMID, NULL);
		*fallback = pool_error(err);
		errno = err;
		return -1;
	}
	seg_add(shmid, (unsigned long)r, len);
	return shmid;
}

/*
 * A new id for huge_shmget(): flg without SHM_HUGETLB and the size bits,
 * huge those. The kernel looks at the size bits only when it creates a
 * segment (newseg()), after its checks of the key and the size: a size
 * the pool does not have goes to it here, as asked, to be refused
 * (EINVAL: no hstate) or served by hugetlbfs as without the library.
 */
static int seg_new(key_t key, size_t size, int flg, int huge, long ps,
		   int *fallback)
{
	if (!pool_size(huge, ps))
		return REAL(shmget, "shmget")(key, size, flg | huge);
	return seg_create(key, size, flg, ps, fallback);
}

/*
 * shmget(SHM_HUGETLB): an existing id is looked up, a new one created;
 * the kernel decides ENOENT, EEXIST, EACCES and EINVAL on the
 * placeholder as it would on the real segment. The size bits matter
 * only for a new one (seg_new()): the kernel finds an existing segment
 * whatever they say.
 */
static int huge_shmget(key_t key, size_t size, int flg, int *fallback)
{
	int shmid = -1, tries;
	int huge = flg & (SHM_HUGETLB | (SHM_HUGE_MASK << SHM_HUGE_SHIFT));
	long ps = page_size();
	struct shmid_ds ds;

	*fallback = 0;
	if (ps < 0) {
		*fallback = 1;
		errno = ENOMEM;
		return -1;
	}
	flg &= ~huge;
	pthread_mutex_lock(&lock);
	if (key == IPC_PRIVATE) {
		shmid = seg_new(key, size, flg, huge, ps, fallback);
		goto out;
	}
	for (tries = 0; tries < 5; tries++) {
		if ((flg & IPC_CREAT) && (flg & IPC_EXCL)) {
			shmid = seg_new(key, size, flg, huge, ps, fallback);
			goto out;
		}
		shmid = REAL(shmget, "shmget")(key, size, flg & ~IPC_CREAT);
		if (shmid >= 0 || errno != ENOENT || !(flg & IPC_CREAT))
			break;
		shmid = seg_new(key, size, flg | IPC_EXCL, huge, ps,
				fallback);
		if (shmid >= 0 || errno != EEXIST)
			goto out;
	}
	if (shmid < 0 || seg_find(shmid))
		goto out;
	/*
	 * An existing id: a large-page one if its keyed segment exists,
	 * else an ordinary segment (made without SHM_HUGETLB, or served
	 * from normal pages by the fallback), which stays untracked.
	 */
	if (lp_segment(seg_key(shmid), NULL) > 0 &&
	    !REAL(shmctl, "shmctl")(shmid, IPC_STAT, &ds)) {
		if (!seg_add(shmid, 0, round_up(ds.shm_segsz, ps))) {
			*fallback = 1;
			errno = ENOMEM;
			shmid = -1;
		}
	}
out:
	pthread_mutex_unlock(&lock);
	return shmid;
}

LP_EXPORT int shmget(key_t key, size_t size, int flg)
{
	int fallback, shmid, err;

	if (!(flg & SHM_HUGETLB))
		return REAL(shmget, "shmget")(key, size, flg);
	shmid = huge_shmget(key, size, flg, &fallback);
	if (shmid >= 0 || !fallback || !fallback_enabled())
		return shmid;
	err = errno;
	warn_fallback("shmget", size, err);
	flg &= ~(SHM_HUGETLB | (SHM_HUGE_MASK << SHM_HUGE_SHIFT));
	return REAL(shmget, "shmget")(key, size, flg);
}

static void *huge_shmat(struct lp_seg *s, unsigned long addr, int flg)
{
	int prot = flg & SHM_RDONLY ? PROT_READ : PROT_READ | PROT_WRITE;
	long ps = page_size(), r;
	struct shmid_ds ds;
	int err, ret;

	if (flg & SHM_EXEC)
		prot |= PROT_EXEC;
	if (addr && (flg & SHM_RND))
		addr &= ~(SHMLBA - 1UL);
	/* The id must still be there: IPC_RMID ends it at once here. */
	if (REAL(shmctl, "shmctl")(s->shmid, IPC_STAT, &ds))
		return (void *)-1;
	if (ps < 0 || (addr & (ps - 1)) || !map_room()) {
		errno = ps < 0 || addr & (ps - 1) ? EINVAL : ENOMEM;
		return (void *)-1;
	}
	if (s->pin && !addr && prot == (PROT_READ | PROT_WRITE)) {
		/* The creator's first attach: the mapping made at shmget(). */
		map_add(s->pin, s->len, MAP_KIND_SHM);
		r = s->pin;
		s->pin = 0;
		return (void *)r;
	}
	if (addr && (flg & SHM_REMAP)) {
		/*
		 * Empty the range; what clear_range() released stays so.
		 * One it cannot empty: ENOMEM, as huge_mmap()'s MAP_FIXED
		 * (the kernel's shmat() maps with do_mmap()).
		 */
		ret = clear_range(addr, addr + s->len);
		if (ret < 0 || (!ret &&
				REAL(munmap, "munmap")((void *)addr, s->len))) {
			errno = ENOMEM;
			return (void *)-1;
		}
	}
	r = share_large_pages(seg_key(s->shmid), addr, s->len, prot, 0);
	if (r == -1) {
		/* ENOENT: every user detached, the memory is gone. */
		err = errno == ENOENT ? EIDRM : errno;
		errno = err;
		return (void *)-1;
	}
	if (addr && (unsigned long)r != addr) {
		/* The range is in use, and SHM_REMAP was not given. */
		release(r);
		errno = EINVAL;
		return (void *)-1;
	}
	if (s->pin) {
		/* The new attachment keeps the segment alive now. */
		release(s->pin);
		s->pin = 0;
	}
	map_add(r, s->len, MAP_KIND_SHM);
	return (void *)r;
}

LP_EXPORT void *shmat(int shmid, const void *addr, int flg)
{
	struct lp_seg *s;
	void *p;

	if (!__atomic_load_n(&nr_tracked, __ATOMIC_RELAXED))
		return REAL(shmat, "shmat")(shmid, addr, flg);
	pthread_mutex_lock(&lock);
	s = seg_find(shmid);
	if (!s) {
		pthread_mutex_unlock(&lock);
		return REAL(shmat, "shmat")(shmid, addr, flg);
	}
	p = huge_shmat(s, (unsigned long)addr, flg);
	pthread_mutex_unlock(&lock);
	return p;
}

LP_EXPORT int shmdt(const void *addr)
{
	struct lp_map *m;
	int ret;

	if (!__atomic_load_n(&nr_tracked, __ATOMIC_RELAXED))
		return REAL(shmdt, "shmdt")(addr);
	pthread_mutex_lock(&lock);
	m = map_at((unsigned long)addr, MAP_KIND_SHM);
	if (!m) {
		pthread_mutex_unlock(&lock);
		return REAL(shmdt, "shmdt")(addr);
	}
	ret = release(m->start);
	if (!ret)
		map_del(m);
	pthread_mutex_unlock(&lock);
	return ret;
}

/*
 * shmctl() and __shmctl64() on a large-page id: IPC_STAT reports the
 * attachments of the large-page segment (not counting the creator's pin),
 * IPC_RMID also drops the pin and forgets the id. set_nattch writes
 * shm_nattch into the caller's structure, whose layout differs between
 * the two.
 */
static int huge_shmctl(shmctl_fn *fn, int shmid, int cmd, void *buf,
		       void (*set_nattch)(void *buf, unsigned long n))
{
	struct lp_seg *s;
	long nattch = 0;
	int ret;

	if (!__atomic_load_n(&nr_tracked, __ATOMIC_RELAXED) ||
	    (cmd != IPC_STAT && cmd != IPC_RMID))
		return fn(shmid, cmd, buf);
	pthread_mutex_lock(&lock);
	s = seg_find(shmid);
	ret = fn(shmid, cmd, buf);
	if (!s || ret)
		goto out;
	if (cmd == IPC_RMID) {
		seg_del(s);
		goto out;
	}
	if (lp_segment(seg_key(shmid), &nattch) <= 0)
		nattch = 0;
	if (s->pin && nattch > 0)
		nattch--;
	set_nattch(buf, nattch);
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

static void set_nattch(void *buf, unsigned long n)
{
	((struct shmid_ds *)buf)->shm_nattch = n;
}

LP_EXPORT int shmctl(int shmid, int cmd, struct shmid_ds *buf)
{
	return huge_shmctl(REAL(shmctl, "shmctl"), shmid, cmd, buf,
			   set_nattch);
}

/* The time64 shmctl (_TIME_BITS=64), in preload-time64.c's layout. */
LP_HIDDEN void lp_set_nattch64(void *buf, unsigned long n);

LP_EXPORT int __shmctl64(int shmid, int cmd, void *buf)
{
	return huge_shmctl(REAL(shmctl64, "__shmctl64"), shmid, cmd, buf,
			   lp_set_nattch64);
}
