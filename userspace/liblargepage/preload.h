/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * liblargepage.so's interposers (the preload, liblargepage(7)): its
 * rooms and what they share, hidden from the dynamic symbol table as
 * lp-internal.h's are. A file for what a reader looks for:
 *
 *   preload.c		the constructor: libc's functions looked up, the
 *			fork hooks set, the heap taken
 *   mmap.c		mmap(), mmap64(), munmap()
 *   shm.c		shmget(), shmat(), shmdt(), shmctl(), __shmctl64()
 *   memfd.c		memfd_create(), and MAP_HUGETLB on a memfd's mmap()
 *   heap.c		lpctl run --heap: mimalloc's arena on large pages
 *   tables.c		the tables of mappings and segments, their lock,
 *			clear_range(), the fork hooks
 *   fallback.c		LARGEPAGE_FALLBACK: its errors and its one warning
 *   sys.c		what they stand on: libc's functions (REAL()), the
 *			large-page system calls, the large page size
 *   preload-time64.c	struct shmid_ds as _TIME_BITS=64 has it
 *   largepage.c	<largepage.h>'s wrappers, lp_scan_lines()
 *
 * Calls go one way, down that list, never up it nor in a circle:
 *
 *   preload.c -> heap.c, tables.c, sys.c
 *   mmap.c    -> memfd.c, heap.c, tables.c, fallback.c, sys.c
 *   shm.c     -> tables.c, fallback.c, sys.c, preload-time64.c,
 *                largepage.c
 *   memfd.c   -> fallback.c, sys.c
 *   heap.c    -> sys.c, largepage.c
 *   tables.c  -> sys.c
 *   sys.c     -> largepage.c
 *
 * fallback.c, preload-time64.c and largepage.c call none of the others.
 * heap.c maps with libc's mmap() and munmap() (REAL()), not through
 * mmap.c, which tells it of mimalloc's.
 */
#ifndef _LP_PRELOAD_H
#define _LP_PRELOAD_H

#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/types.h>

#include "lp-internal.h"

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

/* ------------------------------------------------------------- sys.c */

typedef void *mmap_fn(void *, size_t, int, int, int, off_t);
typedef void *mmap64_fn(void *, size_t, int, int, int, off64_t);
typedef int munmap_fn(void *, size_t);
typedef int shmget_fn(key_t, size_t, int);
typedef void *shmat_fn(int, const void *, int);
typedef int shmdt_fn(const void *);
typedef int shmctl_fn(int, int, void *);
typedef shmctl_fn shmctl64_fn;
typedef int memfd_create_fn(const char *, unsigned int);

struct lp_real_fns {
	mmap_fn *mmap;
	mmap64_fn *mmap64;
	munmap_fn *munmap;
	shmget_fn *shmget;
	shmat_fn *shmat;
	shmdt_fn *shmdt;
	shmctl_fn *shmctl;
	shmctl_fn *shmctl64;
	memfd_create_fn *memfd_create;
};

extern LP_HIDDEN struct lp_real_fns lp_real;

LP_HIDDEN void *next_sym(void **slot, const char *name);
#define REAL(name, sym)	((name##_fn *)next_sym((void **)&lp_real.name, sym))

LP_HIDDEN long get_large_pages(unsigned long addr, unsigned long len,
			       int prot, int flags);
LP_HIDDEN long share_large_pages(int key, unsigned long addr,
				 unsigned long len, int prot, int flag);
LP_HIDDEN int release(unsigned long addr);
LP_HIDDEN long page_size(void);
LP_HIDDEN unsigned long round_up(unsigned long len, unsigned long ps);
LP_HIDDEN int pool_size(int flags, long ps);

/* ----------------------------------------------------------- memfd.c */

/* flags without MAP_HUGETLB and its size bits when fd is a large-page file. */
LP_HIDDEN int memfd_hugetlb_flags(int flags, int fd);

/* -------------------------------------------------------- fallback.c */

LP_HIDDEN int fallback_enabled(void);
LP_HIDDEN void warn_fallback(const char *what, unsigned long len, int err);
LP_HIDDEN int pool_error(int err);
LP_HIDDEN int hugetlb_errno(int err);

/* ---------------------------------------------------------- tables.c */

/* What lp_lock protects: tables.c. */
extern LP_HIDDEN pthread_mutex_t lp_lock;
extern LP_HIDDEN int lp_nr_tracked;

LP_HIDDEN struct lp_map *map_add(unsigned long start, unsigned long len,
				 enum map_kind kind);
LP_HIDDEN int map_room(void);
LP_HIDDEN void map_del(struct lp_map *m);
LP_HIDDEN struct lp_map *map_at(unsigned long start, enum map_kind kind);
LP_HIDDEN struct lp_seg *seg_find(int shmid);
LP_HIDDEN struct lp_seg *seg_add(int shmid, unsigned long pin,
				 unsigned long len);
LP_HIDDEN int seg_room(void);
LP_HIDDEN void seg_del(struct lp_seg *s);
LP_HIDDEN int clear_range(unsigned long addr, unsigned long end);
LP_HIDDEN void atfork_prepare(void);
LP_HIDDEN void atfork_parent(void);
LP_HIDDEN void atfork_child(void);

/* ------------------------------------------------------------ heap.c */

/*
 * lpctl run --heap (heap.c): take the region at start, and count
 * mimalloc's own mappings (the spill) from the interposed mmap() and
 * munmap(), given their caller's address.
 */
LP_HIDDEN void lp_heap_init(void);
LP_HIDDEN void lp_heap_note_mmap(const void *caller, void *p, size_t len);
LP_HIDDEN void lp_heap_note_munmap(const void *caller, void *addr,
				   size_t len);

/* -------------------------------------------------- preload-time64.c */

/* struct shmid_ds's shm_nattch, in the _TIME_BITS=64 layout. */
LP_HIDDEN void lp_set_nattch64(void *buf, unsigned long n);

#endif /* _LP_PRELOAD_H */
