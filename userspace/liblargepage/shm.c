// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: shmget(), shmat(), shmdt(), shmctl() and __shmctl64().
 * A SHM_HUGETLB id is an ordinary SysV id (the placeholder) over a keyed
 * large-page segment (share_large_pages()); every other id goes to
 * libc's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "largepage.h"
#include "preload.h"

/* The SysV id of a segment -> the key of its large-page segment. */
#define SEG_KEY_SALT	0x4c505348	/* "LPSH"; bit 31 clear */

static int seg_key(int shmid)
{
	return (shmid ^ SEG_KEY_SALT) & 0x7fffffff;
}

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
	pthread_mutex_lock(&lp_lock);
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
	pthread_mutex_unlock(&lp_lock);
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

	if (!__atomic_load_n(&lp_nr_tracked, __ATOMIC_RELAXED))
		return REAL(shmat, "shmat")(shmid, addr, flg);
	pthread_mutex_lock(&lp_lock);
	s = seg_find(shmid);
	if (!s) {
		pthread_mutex_unlock(&lp_lock);
		return REAL(shmat, "shmat")(shmid, addr, flg);
	}
	p = huge_shmat(s, (unsigned long)addr, flg);
	pthread_mutex_unlock(&lp_lock);
	return p;
}

LP_EXPORT int shmdt(const void *addr)
{
	struct lp_map *m;
	int ret;

	if (!__atomic_load_n(&lp_nr_tracked, __ATOMIC_RELAXED))
		return REAL(shmdt, "shmdt")(addr);
	pthread_mutex_lock(&lp_lock);
	m = map_at((unsigned long)addr, MAP_KIND_SHM);
	if (!m) {
		pthread_mutex_unlock(&lp_lock);
		return REAL(shmdt, "shmdt")(addr);
	}
	ret = release(m->start);
	if (!ret)
		map_del(m);
	pthread_mutex_unlock(&lp_lock);
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

	if (!__atomic_load_n(&lp_nr_tracked, __ATOMIC_RELAXED) ||
	    (cmd != IPC_STAT && cmd != IPC_RMID))
		return fn(shmid, cmd, buf);
	pthread_mutex_lock(&lp_lock);
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
	pthread_mutex_unlock(&lp_lock);
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
LP_EXPORT int __shmctl64(int shmid, int cmd, void *buf)
{
	return huge_shmctl(REAL(shmctl64, "__shmctl64"), shmid, cmd, buf,
			   lp_set_nattch64);
}
