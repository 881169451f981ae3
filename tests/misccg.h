/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The misc cgroup controller's "largepage" resource, as the tests see it:
 * cgroups under CG_ROOT (cgroup2, which lp-init mounts), their
 * misc.current (pages charged), misc.max and misc.events (refusals).
 * Nothing here asserts: misccg.c, oracle.c and fuzz.c decide.
 */
#ifndef LP_TEST_MISCCG_H
#define LP_TEST_MISCCG_H

#include "lp.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CG_PREFIX "lpmisc-"

/* The words of cgroup.controllers include misc. */
static inline int misc_built(void)
{
	char buf[512], *w, *save = NULL;
	int found = 0;

	read_text(CG_ROOT "/cgroup.controllers", buf, sizeof(buf));
	for (w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		found |= !strcmp(w, "misc");
	return found;
}

/* misc.capacity's largepage line: the pool's total; -1 while it is 0. */
static inline long misc_capacity(void)
{
	return flat_read(CG_ROOT "/misc.capacity", "largepage");
}

/*
 * A line of one of @cg's misc files. 6.1's misc controller prints a
 * resource's line only while its capacity, or that count itself, is not
 * 0: an empty pool (capacity 0) leaves no line where the count is 0. So
 * a line that is missing while misc.capacity has none either is 0; while
 * the capacity has one, or where the file is missing, it is -1.
 */
static inline long cg_line(const char *cg, const char *file, const char *key)
{
	char path[320];
	long v = cg_value(cg, file, key);

	snprintf(path, sizeof(path), "%.200s/%s", cg, file);
	if (v < 0 && !access(path, R_OK) && misc_capacity() < 0)
		return 0;
	return v;
}

static inline long cg_current(const char *cg)
{
	return cg_line(cg, "misc.current", "largepage");
}

static inline long cg_events(const char *cg)
{
	return cg_line(cg, "misc.events", "largepage.max");
}

/*
 * A cgroup CG_ROOT/CG_PREFIX<pid>-<name> (misc enabled for the root's
 * children first) with "largepage @max" in misc.max, its path in @cg:
 * 0, or -errno.
 */
static inline int cg_new(char *cg, size_t size, const char *name,
			 const char *max)
{
	char path[320], text[64];
	int e = write_text(CG_ROOT "/cgroup.subtree_control", "+misc");

	if (e)
		return e;
	snprintf(cg, size, CG_ROOT "/" CG_PREFIX "%d-%s", getpid(), name);
	if (mkdir(cg, 0755))
		return -errno;
	snprintf(path, sizeof(path), "%.200s/misc.max", cg);
	snprintf(text, sizeof(text), "largepage %s", max);
	return write_text(path, text);
}

/* Move @pid into @cg: 0, or -errno. */
static inline int cg_enter(const char *cg, pid_t pid)
{
	char path[320], text[32];

	snprintf(path, sizeof(path), "%.200s/cgroup.procs", cg);
	snprintf(text, sizeof(text), "%d\n", pid);
	return write_text(path, text);
}

/* rmdir, once the exits have released what they held: 0, or -1. */
static inline int cg_rmdir(const char *cg)
{
	int i;

	for (i = 0; i < 100 && rmdir(cg) && errno == EBUSY; i++)
		usleep(20000);
	return access(cg, F_OK) ? 0 : -1;
}

/* misc.current of @cg once it reaches @want, or its value after a second. */
static inline long settle_current(const char *cg, long want)
{
	return SETTLE(cg_current(cg), want, 50);
}

#endif /* LP_TEST_MISCCG_H */
