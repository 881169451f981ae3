/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the two fuzzers (fuzz.c, the many-worker one, and oracle.c, the
 * exact one) share: seeded generators and the seed, a call's result and
 * errno, errno names, the weighted pick of an operation and the tables of
 * arguments (now(), the monotonic clock, is util.h's). Each defines its own
 * rnd(n), a number below n from its generator, which PICK() uses.
 */
#ifndef LP_RNG_H
#define LP_RNG_H

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "util.h"	/* RW, now() */

/* One of an array's elements, at random. */
#define PICK(a)		((a)[rnd(sizeof(a) / sizeof((a)[0]))])
/* An index below n into tab, each entry as likely as its .weight. */
#define PICK_WEIGHTED(tab, n) ({					\
	int __i, __x, __total = 0;					\
									\
	for (__i = 0; __i < (n); __i++)					\
		__total += (tab)[__i].weight;				\
	__x = rnd(__total);						\
	for (__i = 0; __x >= (tab)[__i].weight; __i++)			\
		__x -= (tab)[__i].weight;				\
	__i;								\
})
/* Run a call: r its result, e the errno it left. */
#define CALL(r, e, call) do {						\
	errno = 0;							\
	(r) = (long)(call);						\
	(e) = errno;							\
} while (0)

/* splitmix64: seeds the generators from one seed. */
static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* xorshift64*: *s must not be 0. */
static inline uint64_t xs(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* A number below n (0 when n is 0) from the high half of xs(s). */
static inline uint32_t xs_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(xs(s) >> 32) % n : 0;
}

/*
 * A fresh seed, below 10^12 so that it reads back from the command line:
 * the time and the pid.
 */
static inline unsigned long long time_seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((unsigned long long)ts.tv_sec << 20 ^ ts.tv_nsec ^
		(unsigned long long)getpid() << 40) % 1000000000000ULL;
}

/* The get and share arguments: prots that work, prots and flags that do not. */
static const int good_prots[] = {
	RW, RW, RW, RW, PROT_READ, PROT_READ, PROT_NONE,
	PROT_READ | PROT_EXEC, RW | PROT_EXEC, PROT_WRITE,
};
static const int bad_prots[] = {
	RW | 0x8, PROT_READ | PROT_GROWSDOWN, -1, 0x10, RW | 0x100000,
	PROT_GROWSUP,
};
static const int bad_flags[] = {
	0, MAP_PRIVATE | MAP_SHARED, MAP_PRIVATE | MAP_FIXED,
	MAP_SHARED | MAP_ANONYMOUS, MAP_PRIVATE | MAP_POPULATE, -1,
	MAP_SHARED | MAP_LOCKED, MAP_ANONYMOUS,
};

static inline const char *ename(int e)
{
	static const char *const names[] = {
		[EPERM] = "EPERM", [ENOENT] = "ENOENT", [EINTR] = "EINTR",
		[EIO] = "EIO", [EAGAIN] = "EAGAIN", [ENOMEM] = "ENOMEM",
		[EACCES] = "EACCES", [EFAULT] = "EFAULT", [EBUSY] = "EBUSY",
		[EEXIST] = "EEXIST", [EINVAL] = "EINVAL", [ENOSYS] = "ENOSYS",
	};

	return e > 0 && e < (int)(sizeof(names) / sizeof(names[0])) &&
	       names[e] ? names[e] : "E?";
}

#endif
