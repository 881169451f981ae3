// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl's reader of the misc cgroup controller's "largepage" resource:
 * each cgroup's pages (misc.current), limit (misc.max) and refusals
 * (misc.events), where cgroup2 is mounted and the kernel has the
 * controller (the root has misc.capacity).
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lpctl.h"

static char cg_mount[PATH_MAX];	/* where cgroup2 is mounted, or "" */

/* The value of "key N" in a flat-keyed file; -1 if none ("max": -2). */
static long flat_value(const char *file, const char *key)
{
	char name[64], val[32];
	long v = -1;
	FILE *f = fopen(file, "re");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %31s", name, val) == 2) {
		if (strcmp(name, key))
			continue;
		v = !strcmp(val, "max") ? -2 : strtol(val, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

/* Find cgroup2 in /proc/self/mountinfo; 1 if it has the misc controller. */
int cgroup_misc(void)
{
	char line[1024], mnt[PATH_MAX], fs[64], cap[PATH_MAX + 32];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	const char *sep;

	cg_mount[0] = '\0';
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE ... */
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep + 3, "%63s", fs) != 1 ||
		    strcmp(fs, "cgroup2") ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		snprintf(cg_mount, sizeof(cg_mount), "%s", mnt);
		break;
	}
	fclose(f);
	if (!cg_mount[0])
		return 0;
	snprintf(cap, sizeof(cap), "%s/misc.capacity", cg_mount);
	return !access(cap, R_OK);
}

/*
 * Has the misc controller no largepage capacity, the pool being empty?
 * Then 6.1 shows no largepage line in any misc file (a missing line is
 * 0) and refuses a limit in misc.max with EINVAL until the pool has
 * pages. Call after cgroup_misc().
 */
int misc_pool_empty(void)
{
	char cap[PATH_MAX + 32];

	snprintf(cap, sizeof(cap), "%s/misc.capacity", cg_mount);
	return cg_mount[0] && flat_value(cap, "largepage") < 0;
}

/* One cgroup's counts, by its directory; 0, or -1 without misc files. */
static int cgroup_read(const char *dir, struct lp_cgroup *cg)
{
	char file[PATH_MAX + 32];

	snprintf(file, sizeof(file), "%s/misc.current", dir);
	cg->current = flat_value(file, "largepage");
	if (cg->current < 0)
		return -1;
	snprintf(file, sizeof(file), "%s/misc.max", dir);
	cg->max = flat_value(file, "largepage");
	if (cg->max == -2)
		cg->max = -1;
	snprintf(file, sizeof(file), "%s/misc.events", dir);
	cg->refused = flat_value(file, "largepage.max");
	if (cg->refused < 0)
		cg->refused = 0;
	snprintf(cg->path, sizeof(cg->path), "%s",
		 dir[strlen(cg_mount)] ? dir + strlen(cg_mount) : "/");
	return 0;
}

static struct lp_cgroup *cg_list;
static size_t cg_count;

static int cgroup_visit(const char *dir, const struct stat *st, int type,
			struct FTW *ftw)
{
	struct lp_cgroup cg, *more;

	(void)st;
	(void)ftw;
	if (type != FTW_D || cgroup_read(dir, &cg))
		return 0;
	/* Those that hold, limit or refused large pages. */
	if (!cg.current && cg.max < 0 && !cg.refused)
		return 0;
	more = realloc(cg_list, (cg_count + 1) * sizeof(*cg_list));
	if (!more)
		return -1;
	cg_list = more;
	cg_list[cg_count++] = cg;
	return 0;
}

/*
 * The cgroups that hold, limit or refused large pages, in tree order:
 * their number, or -1 when there is no misc controller to ask.
 */
long read_cgroups(struct lp_cgroup **list)
{
	free(cg_list);
	cg_list = NULL;
	cg_count = 0;
	*list = NULL;
	if (!cgroup_misc())
		return -1;
	if (nftw(cg_mount, cgroup_visit, 32, FTW_PHYS) < 0)
		return -1;
	*list = cg_list;
	return cg_count;
}

/*
 * How many more pages the caller's cgroup and its ancestors let it take
 * (the tightest misc.max less misc.current), and the cgroup that sets
 * it, in *@who: -1 with no limit or no controller, -2 unknown.
 */
long cgroup_room(char *who, size_t size)
{
	char line[PATH_MAX + 8], dir[2 * PATH_MAX + 8], *p;
	struct lp_cgroup cg;
	long room = -1;
	FILE *f;

	who[0] = '\0';
	if (!cgroup_misc())
		return -1;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -2;
	p = NULL;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			p = line + 3;
			break;
		}
	fclose(f);
	if (!p)
		return -2;
	/* From the caller's cgroup up to the root's first child. */
	while (strcmp(p, "/") && *p) {
		snprintf(dir, sizeof(dir), "%s%s", cg_mount, p);
		if (!cgroup_read(dir, &cg) && cg.max >= 0 &&
		    (room < 0 || cg.max - cg.current < room)) {
			room = cg.max > cg.current ? cg.max - cg.current : 0;
			snprintf(who, size, "%s", p);
		}
		*strrchr(p, '/') = '\0';
		if (!*p)
			break;
	}
	return room;
}

