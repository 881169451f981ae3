// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: the tables of a process's large-page mappings and
 * SHM_HUGETLB segments, under one lock; taking a range away as munmap()
 * would (clear_range()); the fork hooks that keep the tables true in a
 * child.
 */
#include <errno.h>
#include <pthread.h>

#include "preload.h"

#define MAX_MAPS	128	/* large-page mappings of one process */
#define MAX_SEGS	64	/* SHM_HUGETLB ids one process knows */

/*
 * lp_lock protects maps[], segs[] and lp_nr_tracked (the number of
 * entries in use in both). It is held across the system calls of one
 * interposed call, so that no other thread sees a half-done MAP_FIXED.
 * lp_nr_tracked is also read without the lock, as the fast path's
 * "nothing to do".
 */
pthread_mutex_t lp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lp_map maps[MAX_MAPS];
static struct lp_seg segs[MAX_SEGS] = { [0 ... MAX_SEGS - 1] = { -1, 0, 0 } };
int lp_nr_tracked;

struct lp_map *map_add(unsigned long start, unsigned long len,
		       enum map_kind kind)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++) {
		if (maps[i].kind == MAP_KIND_FREE) {
			maps[i].start = start;
			maps[i].len = len;
			maps[i].kind = kind;
			__atomic_add_fetch(&lp_nr_tracked, 1, __ATOMIC_RELAXED);
			return &maps[i];
		}
	}
	return NULL;
}

int map_room(void)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].kind == MAP_KIND_FREE)
			return 1;
	return 0;
}

void map_del(struct lp_map *m)
{
	m->kind = MAP_KIND_FREE;
	__atomic_sub_fetch(&lp_nr_tracked, 1, __ATOMIC_RELAXED);
}

struct lp_map *map_at(unsigned long start, enum map_kind kind)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].kind == kind && maps[i].start == start)
			return &maps[i];
	return NULL;
}

struct lp_seg *seg_find(int shmid)
{
	int i;

	for (i = 0; shmid >= 0 && i < MAX_SEGS; i++)
		if (segs[i].shmid == shmid)
			return &segs[i];
	return NULL;
}

struct lp_seg *seg_add(int shmid, unsigned long pin, unsigned long len)
{
	int i;

	for (i = 0; i < MAX_SEGS; i++) {
		if (segs[i].shmid < 0) {
			segs[i].shmid = shmid;
			segs[i].pin = pin;
			segs[i].len = len;
			__atomic_add_fetch(&lp_nr_tracked, 1, __ATOMIC_RELAXED);
			return &segs[i];
		}
	}
	return NULL;
}

int seg_room(void)
{
	int i;

	for (i = 0; i < MAX_SEGS; i++)
		if (segs[i].shmid < 0)
			return 1;
	return 0;
}

void seg_del(struct lp_seg *s)
{
	if (s->pin)
		release(s->pin);
	s->shmid = -1;
	s->pin = 0;
	__atomic_sub_fetch(&lp_nr_tracked, 1, __ATOMIC_RELAXED);
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
int clear_range(unsigned long addr, unsigned long end)
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
void atfork_prepare(void)
{
	pthread_mutex_lock(&lp_lock);
}

void atfork_parent(void)
{
	pthread_mutex_unlock(&lp_lock);
}

void atfork_child(void)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].kind == MAP_KIND_PRIVATE)
			map_del(&maps[i]);
	pthread_mutex_unlock(&lp_lock);
}
