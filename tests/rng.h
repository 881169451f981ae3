/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the two fuzzers (fuzz.c, the many-worker one, and oracle.c, the
 * exact one) share: seeded generators, a call's result and errno, errno
 * names (now(), the monotonic clock, is util.h's). Each defines its own
 * rnd(n), a number below n from its generator, which PICK() uses.
 */
#ifndef LP_RNG_H
#define LP_RNG_H

#include <errno.h>
#include <stdint.h>

/* One of an array's elements, at random. */
#define PICK(a)		((a)[rnd(sizeof(a) / sizeof((a)[0]))])
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
