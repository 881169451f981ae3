// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl: look at and resize the large-page pool, and try out the
 * large-page system calls (map, touch, hold, release).
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <asm/unistd_32.h>
#include <errno.h>
#include <grp.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "largepage.h"

#ifndef LPCTL_VERSION
#define LPCTL_VERSION "1.0"
#endif

#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_NOEXEC	126	/* run: PROGRAM cannot be executed (as env) */
#define EXIT_NOTFOUND	127	/* run: PROGRAM not found */

#ifndef LPCTL_PRELOAD
#define LPCTL_PRELOAD	"/usr/lib/i386-linux-gnu/liblargepage.so.1"
#endif
#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"
#ifndef LPCTL_CONFIG
#define LPCTL_CONFIG	"/etc/largepage.conf"
#endif
#define NR_PAGES_PATH	"/sys/kernel/mm/largepage/nr_pages"

#define HOLD_FOREVER	ULONG_MAX
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

static const char usage_text[] =
"Usage: lpctl COMMAND [ARGUMENTS]\n"
"Look at and resize the large-page pool; map large pages to try them out.\n"
"\n"
"Commands:\n"
"  status [--json]      page size, pool counters and keyed segments\n"
"  ps [--json]          the processes that map large pages, and how many\n"
"  resize +N|-N|=N      grow the pool by N pages, shrink it by N free pages,\n"
"                       or set it to N pages (root only)\n"
"  apply [FILE]         set the pool to the size in FILE (default\n"
"                       " LPCTL_CONFIG "), as the boot service does\n"
"  alloc SIZE [--shared] [--hold SECS]\n"
"                       map SIZE of large pages (private unless --shared),\n"
"                       touch them, print the address, hold, free them\n"
"  share KEY SIZE [--mode MODE] [--create|--attach] [--excl] [--read-only]\n"
"        [--hold SECS]  attach the keyed segment KEY, creating it when it\n"
"                       does not exist (unless --attach); touch, hold, detach\n"
"  explain [--json] [KEY]\n"
"                       say why you can or cannot get large pages (and\n"
"                       attach segment KEY), and how the pool size is set\n"
"  run [--fallback] -- PROGRAM [ARGS]\n"
"                       run PROGRAM with liblargepage.so.1 preloaded: its\n"
"                       hugetlbfs requests get large pages (--fallback:\n"
"                       normal pages when the pool is short)\n"
"\n"
"SIZE is a number of bytes, or a number with K, M or G (binary: 4M is\n"
"4 MiB), or a number of large pages with p (3p); it must be a multiple of\n"
"the large page size. SECS is a number of seconds or 'forever'; SIGINT or\n"
"SIGTERM ends the hold early. MODE is octal (default 0600).\n"
"\n"
"Options:\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n"
"\n"
"Exit status: 0 success, 1 the operation failed, 2 usage error; run exits\n"
"with PROGRAM's status, or 126 (cannot execute) or 127 (not found).\n"
"See lpctl(8), liblargepage(7) and get_large_pages(2).\n";

static __printf(1, 2) void say(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("lpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A usage error: the message, a hint, exit status 2. */
static __printf(1, 2) int usage_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("lpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'lpctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* After getopt_long() has said what was wrong with an option. */
static int bad_option(void)
{
	fputs("Try 'lpctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* "4 MiB", "1 GiB", "512 KiB" or "N bytes", whichever is exact. */
static const char *fmt_size(char *buf, size_t size, unsigned long long bytes)
{
	static const char *const units[] = { "GiB", "MiB", "KiB" };
	int i;

	for (i = 0; i < 3; i++) {
		unsigned long long unit = 1ULL << (10 * (3 - i));

		if (bytes >= unit && !(bytes % unit)) {
			snprintf(buf, size, "%llu %s", bytes / unit, units[i]);
			return buf;
		}
	}
	snprintf(buf, size, "%llu bytes", bytes);
	return buf;
}

/* Does /proc/cpuinfo list PSE? Assume so when it cannot be read. */
static int cpu_has_pse(void)
{
	char line[4096];
	int seen = 0, pse = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 1;
	while (!seen && fgets(line, sizeof(line), f)) {
		char *tok, *save;

		if (strncmp(line, "flags", 5))
			continue;
		seen = 1;
		tok = strchr(line, ':');
		for (tok = tok ? strtok_r(tok + 1, " \t\n", &save) : NULL; tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			pse |= !strcmp(tok, "pse");
	}
	fclose(f);
	return !seen || pse;
}

/* Report an errno that means "no large pages here"; 1 if it was one. */
static int explain_unsupported(int err)
{
	if (err == ENOSYS) {
		say("this kernel has no large pages (ENOSYS)");
		return 1;
	}
	if (err == EINVAL && !cpu_has_pse()) {
		say("this CPU has no large pages (no PSE)");
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ segments */

struct segment {
	int key;
	unsigned long size;
	unsigned int mode, uid, gid, cuid, cgid;
	unsigned long nattch;
	/* Kernels that list them (-1 otherwise): who and when, the inode. */
	long cpid, lpid;
	long long atime, dtime, ctime;
	long long ino;
};

/*
 * Read /proc/largepage_segments (a header line, then one line a keyed
 * segment). The number of segments, or -1 with errno (ENOENT: this
 * kernel does not list its segments).
 */
static int read_segments(struct segment **list)
{
	char line[512];
	struct segment *segs = NULL, s;
	int n = 0, lineno = 0;
	FILE *f = fopen(LP_SEGMENTS_PATH, "re");

	*list = NULL;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct segment *more;

		if (!lineno++)
			continue;	/* the header */
		s.cpid = s.lpid = -1;
		s.atime = s.dtime = s.ctime = s.ino = -1;
		if (sscanf(line, "%d %lu %o %u %u %u %u %lu %ld %ld %lld %lld %lld %lld",
			   &s.key, &s.size, &s.mode, &s.uid, &s.gid, &s.cuid,
			   &s.cgid, &s.nattch, &s.cpid, &s.lpid, &s.atime,
			   &s.dtime, &s.ctime, &s.ino) < 8) {
			line[strcspn(line, "\n")] = '\0';
			say("%s: cannot parse line %d: %s", LP_SEGMENTS_PATH,
			    lineno, line);
			continue;
		}
		more = realloc(segs, (n + 1) * sizeof(*segs));
		if (!more) {
			free(segs);
			fclose(f);
			errno = ENOMEM;
			return -1;
		}
		segs = more;
		segs[n++] = s;
	}
	fclose(f);
	*list = segs;
	return n;
}

/* Look up key in the segment list: 1 and *out filled, or 0. */
static int find_segment(int key, struct segment *out)
{
	struct segment *segs;
	int i, n = read_segments(&segs), found = 0;

	for (i = 0; i < n && !found; i++) {
		if (segs[i].key == key) {
			*out = segs[i];
			found = 1;
		}
	}
	free(segs);
	return found;
}

static void print_segments(long psize)
{
	struct segment *segs;
	char sz[32];
	int i, n = read_segments(&segs);

	if (n < 0 && errno == ENOENT) {
		printf("Keyed segments:  not listed (this kernel has no %s)\n",
		       LP_SEGMENTS_PATH);
		return;
	}
	if (n < 0) {
		printf("Keyed segments:  cannot read %s: %s\n",
		       LP_SEGMENTS_PATH, strerror(errno));
		return;
	}
	if (!n) {
		printf("Keyed segments:  none\n");
		return;
	}
	printf("Keyed segments:  %d\n", n);
	printf("%10s %10s %6s %5s %6s %6s %6s %6s %7s\n", "KEY", "SIZE",
	       "PAGES", "MODE", "UID", "GID", "CUID", "CGID", "NATTCH");
	for (i = 0; i < n; i++)
		printf("%10d %10s %6lu  %04o %6u %6u %6u %6u %7lu\n",
		       segs[i].key, fmt_size(sz, sizeof(sz), segs[i].size),
		       psize > 0 ? segs[i].size / psize : 0, segs[i].mode,
		       segs[i].uid, segs[i].gid, segs[i].cuid, segs[i].cgid,
		       segs[i].nattch);
	free(segs);
}

/* ----------------------------------------------------------------- json */

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(const char *str)
{
	const unsigned char *c;

	putchar('"');
	for (c = (const unsigned char *)str; *c; c++) {
		if (*c == '"' || *c == '\\')
			printf("\\%c", *c);
		else if (*c < 0x20)
			printf("\\u%04x", *c);
		else
			putchar(*c);
	}
	putchar('"');
}

/* A "name": pair of a JSON object; sep goes first ("{" or ","). */
static void json_key(const char *sep, const char *name)
{
	fputs(sep, stdout);
	json_str(name);
	putchar(':');
}

static void json_long(const char *sep, const char *name, long long v)
{
	json_key(sep, name);
	printf("%lld", v);
}

static void json_segment(const struct segment *g, long psize)
{
	json_long("{", "key", g->key);
	json_long(",", "size", g->size);
	json_long(",", "pages", psize > 0 ? (long long)(g->size / psize) : 0);
	json_long(",", "mode", g->mode);
	json_long(",", "uid", g->uid);
	json_long(",", "gid", g->gid);
	json_long(",", "cuid", g->cuid);
	json_long(",", "cgid", g->cgid);
	json_long(",", "nattch", g->nattch);
	if (g->cpid >= 0) {
		json_long(",", "cpid", g->cpid);
		json_long(",", "lpid", g->lpid);
		json_long(",", "atime", g->atime);
		json_long(",", "dtime", g->dtime);
		json_long(",", "ctime", g->ctime);
	}
	if (g->ino >= 0)
		json_long(",", "ino", g->ino);
	putchar('}');
}

/* -------------------------------------------------------------- parsing */

/* A decimal (or 0x hexadecimal) number in [min, max]; 0 or -1. */
static int parse_long(const char *s, long min, long max, long *val)
{
	char *end;
	long v;

	if (!*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
		return -1;
	errno = 0;
	v = strtol(s, &end, !strncasecmp(s, "0x", 2) ? 16 : 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*val = v;
	return 0;
}

/*
 * A SIZE argument: digits then an optional unit, K/KiB, M/MiB, G/GiB
 * (binary, any case), or p/page/pages for large pages. In bytes, checked
 * against the large page size psize; 0, or -1 after saying why.
 */
static int parse_size(const char *s, long psize, unsigned long *len)
{
	static const struct {
		const char *name;
		unsigned long long mult;	/* 0: large pages */
	} units[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1ULL << 10 }, { "kib", 1ULL << 10 },
		{ "m", 1ULL << 20 }, { "mib", 1ULL << 20 },
		{ "g", 1ULL << 30 }, { "gib", 1ULL << 30 },
		{ "p", 0 }, { "page", 0 }, { "pages", 0 },
	};
	unsigned long long n, mult;
	char *end, sz[32];
	size_t i;

	if (*s < '0' || *s > '9')
		goto bad;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		goto big;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcasecmp(end, units[i].name))
			break;
	if (i == ARRAY_SIZE(units))
		goto bad;
	mult = units[i].mult ? units[i].mult : (unsigned long long)psize;
	if (n && mult > ULONG_MAX / n)
		goto big;
	n *= mult;
	if (!n) {
		usage_error("size '%s' is 0", s);
		return -1;
	}
	if (n % psize) {
		usage_error("%s is not a multiple of the large page size (%s)",
			    s, fmt_size(sz, sizeof(sz), psize));
		return -1;
	}
	*len = n;
	return 0;
bad:
	usage_error("bad size '%s' (bytes, or a number with K, M, G, or p for large pages: 4M, 3p)",
		    s);
	return -1;
big:
	usage_error("size '%s' is too large", s);
	return -1;
}

/* SECS: a number of seconds, or "forever". 0, or -1. */
static int parse_hold(const char *s, unsigned long *secs)
{
	long v;

	if (!strcmp(s, "forever")) {
		*secs = HOLD_FOREVER;
		return 0;
	}
	if (parse_long(s, 0, LONG_MAX, &v) || *s == '+' || *s == '-')
		return -1;
	*secs = v;
	return 0;
}

/* --------------------------------------------------------------- status */

/* The page size, or -1 after explaining why there is none. */
static long page_size_or_explain(void)
{
	long psize = lp_page_size();

	if (psize < 0 && !explain_unsupported(errno))
		say("cannot read the large page size: %s", strerror(errno));
	return psize;
}

static int pool_or_explain(long *total, long *nfree)
{
	if (!lp_pool(total, nfree))
		return 0;
	if (!explain_unsupported(errno))
		say("cannot read the pool: %s", strerror(errno));
	return -1;
}

/*
 * The pool's counts from /sys/kernel/mm/largepage/stat, all read by the
 * kernel at one instant so that they add up; -1 for a count the kernel
 * does not give. Returns 0, or -1 if there is no such file (then the
 * totals come from /proc/meminfo and there is no split).
 */
struct pool_stat {
	long total, free, free_zeroed, free_unzeroed, lowmem;
};

static int pool_stat(struct pool_stat *st)
{
	char name[32];
	long v;
	FILE *f;

	st->total = st->free = st->free_zeroed = st->free_unzeroed = -1;
	st->lowmem = -1;
	f = fopen("/sys/kernel/mm/largepage/stat", "re");
	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", name, &v) == 2) {
		if (!strcmp(name, "total"))
			st->total = v;
		else if (!strcmp(name, "free"))
			st->free = v;
		else if (!strcmp(name, "free_zeroed"))
			st->free_zeroed = v;
		else if (!strcmp(name, "free_unzeroed"))
			st->free_unzeroed = v;
		else if (!strcmp(name, "lowmem"))
			st->lowmem = v;
	}
	fclose(f);
	return st->total >= 0 && st->free >= 0 ? 0 : -1;
}

/* ------------------------------------------------------------- cgroups */

/*
 * The misc cgroup controller's "largepage" resource: each cgroup's pages
 * (misc.current), limit (misc.max) and refusals (misc.events), where
 * cgroup2 is mounted and the kernel has the controller (the root has
 * misc.capacity).
 */
struct lp_cgroup {
	char path[PATH_MAX];	/* from the cgroup2 root: "/db" */
	long current;
	long max;		/* -1: "max", no limit */
	long refused;		/* largepage.max of misc.events */
};

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
static int cgroup_misc(void)
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
static int misc_pool_empty(void)
{
	char cap[PATH_MAX + 32];

	snprintf(cap, sizeof(cap), "%s/misc.capacity", cg_mount);
	return cg_mount[0] && flat_value(cap, "largepage") < 0;
}

#define MISC_EMPTY_TEXT "the pool is empty: the misc files show no largepage line, and misc.max refuses a limit (EINVAL) until the pool has pages"

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
static long read_cgroups(struct lp_cgroup **list)
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

static void print_cgroups(long psize)
{
	struct lp_cgroup *cgs;
	long i, n = read_cgroups(&cgs);
	char sz[32], max[32];

	if (n < 0) {
		printf("Cgroups:         no limits (no cgroup2 with the misc controller)\n");
		return;
	}
	if (misc_pool_empty()) {
		printf("Cgroups:         %s\n", MISC_EMPTY_TEXT);
		return;
	}
	if (!n) {
		printf("Cgroups:         none holds or limits large pages (misc controller)\n");
		return;
	}
	printf("Cgroups:         %ld (misc controller, resource largepage)\n", n);
	printf("%-40s %8s %10s %8s %8s\n", "CGROUP", "PAGES", "SIZE", "MAX",
	       "REFUSED");
	for (i = 0; i < n; i++) {
		if (cgs[i].max < 0)
			snprintf(max, sizeof(max), "max");
		else
			snprintf(max, sizeof(max), "%ld", cgs[i].max);
		printf("%-40s %8ld %10s %8s %8ld\n", cgs[i].path,
		       cgs[i].current,
		       fmt_size(sz, sizeof(sz),
				(unsigned long long)cgs[i].current * psize),
		       max, cgs[i].refused);
	}
}

/*
 * How many more pages the caller's cgroup and its ancestors let it take
 * (the tightest misc.max less misc.current), and the cgroup that sets
 * it, in *@who: -1 with no limit or no controller, -2 unknown.
 */
static long cgroup_room(char *who, size_t size)
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

static void json_cgroups(const char *sep)
{
	struct lp_cgroup *cgs;
	long i, n = read_cgroups(&cgs);

	json_key(sep, "cgroups");
	if (n < 0) {
		fputs("null", stdout);
		return;
	}
	putchar('[');
	for (i = 0; i < n; i++) {
		json_key(i ? ",{" : "{", "path");
		json_str(cgs[i].path);
		json_long(",", "pages", cgs[i].current);
		json_key(",", "max");
		if (cgs[i].max < 0)
			fputs("null", stdout);
		else
			printf("%ld", cgs[i].max);
		json_long(",", "refused", cgs[i].refused);
		putchar('}');
	}
	putchar(']');
}

/* --json as the only argument: 1; none: 0; anything else: -1. */
static int json_flag(int argc, char **argv)
{
	if (argc == 1)
		return 0;
	if (argc == 2 && !strcmp(argv[1], "--json"))
		return 1;
	return -1;
}

/* status --json: the counts and the segments, one JSON object. */
static int status_json(long psize, long total, long nfree,
		       const struct pool_stat *st, int have_stat)
{
	struct segment *segs;
	int i, n = read_segments(&segs);

	json_long("{", "page_size", psize);
	json_long(",", "total", total);
	json_long(",", "free", nfree);
	json_long(",", "in_use", total - nfree);
	if (have_stat && st->free_zeroed >= 0) {
		json_long(",", "free_zeroed", st->free_zeroed);
		json_long(",", "free_unzeroed", st->free_unzeroed);
	}
	if (have_stat && st->lowmem >= 0)
		json_long(",", "lowmem", st->lowmem);
	json_key(",", "pse");
	fputs(cpu_has_pse() ? "true" : "false", stdout);
	json_key(",", "segments");
	if (n < 0) {
		fputs("null", stdout);
	} else {
		putchar('[');
		for (i = 0; i < n; i++) {
			if (i)
				putchar(',');
			json_segment(&segs[i], psize);
		}
		putchar(']');
	}
	json_cgroups(",");
	fputs("}\n", stdout);
	free(segs);
	return EXIT_OK;
}

static int cmd_status(int argc, char **argv)
{
	char a[32], b[32], c[32], d[32];
	struct pool_stat st;
	long psize, total, nfree;
	int have_stat, json;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl status [--json]\n", stdout);
		return EXIT_OK;
	}
	json = json_flag(argc, argv);
	if (json < 0)
		return usage_error("status takes no arguments but --json");
	psize = page_size_or_explain();
	if (psize < 0 || pool_or_explain(&total, &nfree))
		return EXIT_FAIL;
	/* One snapshot, when the kernel gives one: the lines add up. */
	have_stat = !pool_stat(&st);
	if (have_stat) {
		total = st.total;
		nfree = st.free;
	}
	if (json)
		return status_json(psize, total, nfree, &st, have_stat);

	printf("Large page size: %ld kB (%s)\n", psize / 1024,
	       fmt_size(a, sizeof(a), psize));
	printf("Pool total:      %ld pages (%s)\n", total,
	       fmt_size(b, sizeof(b), (unsigned long long)total * psize));
	printf("Pool free:       %ld pages (%s)\n", nfree,
	       fmt_size(c, sizeof(c), (unsigned long long)nfree * psize));
	if (have_stat && st.free_zeroed >= 0 && st.free_unzeroed >= 0) {
		printf("Free, zeroed:    %ld pages\n", st.free_zeroed);
		printf("Free, to zero:   %ld pages%s\n", st.free_unzeroed,
		       st.free_unzeroed ? " (largepage_zerod is on them)" : "");
	}
	printf("Pool in use:     %ld pages (%s)\n", total - nfree,
	       fmt_size(d, sizeof(d),
			(unsigned long long)(total - nfree) * psize));
	if (have_stat && st.lowmem >= 0)
		printf("Pool in lowmem:  %ld pages\n", st.lowmem);
	if (!cpu_has_pse())
		printf("Note: this CPU has no large pages (no PSE): the pool stays empty.\n");
	print_segments(psize);
	print_cgroups(psize);
	return EXIT_OK;
}

/* ------------------------------------------------------------------- ps */

/* One process's large-page mappings, in pages. */
struct lp_proc {
	long pid;
	unsigned int uid;
	char comm[64];
	unsigned long private_pages, shared_pages, keyed_pages;
	int unreadable;		/* its smaps is not ours to read */
	long status_kb;		/* its LargePages: line */
};

/* The segments seen so far, by inode: a shared one counts once. */
struct lp_inode {
	unsigned long long ino;
	unsigned long pages;
};

struct ps_state {
	long psize;
	struct segment *segs;
	int nsegs;
	struct lp_inode *inodes;
	size_t ninodes;
	unsigned long mapped;	/* pages, each segment once */
};

/* The LargePages: kB of /proc/PID/status and its real uid; -1 if none. */
static long proc_status(long pid, unsigned int *uid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4))
			sscanf(line + 4, "%u", uid);
		else if (sscanf(line, "LargePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

static int keyed_ino(const struct ps_state *ps, unsigned long long ino)
{
	int i;

	for (i = 0; i < ps->nsegs; i++)
		if (ps->segs[i].ino >= 0 &&
		    (unsigned long long)ps->segs[i].ino == ino)
			return 1;
	return 0;
}

/* Count a mapping of segment ino (pages) once across all processes. */
static void count_inode(struct ps_state *ps, unsigned long long ino,
			unsigned long pages)
{
	struct lp_inode *more;
	size_t i;

	for (i = 0; i < ps->ninodes; i++)
		if (ps->inodes[i].ino == ino)
			return;
	more = realloc(ps->inodes, (ps->ninodes + 1) * sizeof(*more));
	if (!more)
		return;
	ps->inodes = more;
	ps->inodes[ps->ninodes].ino = ino;
	ps->inodes[ps->ninodes++].pages = pages;
	ps->mapped += pages;
}

/*
 * Sort pid's [largepage] vmas from /proc/PID/smaps: private (VmFlags
 * dc: get_large_pages(MAP_PRIVATE)), keyed (its inode is a listed
 * segment's) or shared (get_large_pages(MAP_SHARED)). -1 if unreadable.
 */
static int proc_mappings(struct ps_state *ps, struct lp_proc *p)
{
	char path[64], line[512], name[256];
	unsigned long start, end, pages = 0;
	unsigned long long ino = 0;
	int ours = 0, fields;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/smaps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		name[0] = '\0';
		/* A vma's first line: start-end perms offset dev inode [path]. */
		fields = sscanf(line, "%lx-%lx %*s %*s %*s %llu %255s", &start,
				&end, &ino, name);
		if (fields >= 3) {
			ours = !strcmp(name, "[largepage]");
			pages = ps->psize > 0 ? (end - start) / ps->psize : 0;
			continue;
		}
		if (!ours || strncmp(line, "VmFlags:", 8))
			continue;
		ours = 0;
		if (strstr(line, " dc"))
			p->private_pages += pages;
		else if (keyed_ino(ps, ino))
			p->keyed_pages += pages;
		else
			p->shared_pages += pages;
		count_inode(ps, ino, pages);
	}
	fclose(f);
	return 0;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct lp_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every process with a non-zero LargePages: line, sorted by PID. */
static int read_procs(struct ps_state *ps, struct lp_proc **out)
{
	struct lp_proc *procs = NULL, p, *more;
	struct dirent *e;
	int n = 0;
	DIR *d = opendir("/proc");

	*out = NULL;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300];
		FILE *f;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		memset(&p, 0, sizeof(p));
		p.pid = atol(e->d_name);
		p.status_kb = proc_status(p.pid, &p.uid);
		if (p.status_kb <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", p.pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(p.comm, sizeof(p.comm), f))
				p.comm[strcspn(p.comm, "\n")] = '\0';
			fclose(f);
		}
		p.unreadable = proc_mappings(ps, &p) != 0;
		more = realloc(procs, (n + 1) * sizeof(*procs));
		if (!more)
			break;
		procs = more;
		procs[n++] = p;
	}
	closedir(d);
	if (n)
		qsort(procs, n, sizeof(*procs), proc_cmp);
	*out = procs;
	return n;
}

/*
 * The name of uid from /etc/passwd, else the number. lpctl is static:
 * getpwuid() would need the NSS modules of the glibc it was built with.
 */
static const char *user_name(unsigned int uid, char *buf, size_t size)
{
	char line[512], *pw, *id, *end;
	FILE *f = fopen("/etc/passwd", "re");

	snprintf(buf, size, "%u", uid);
	/* name:password:uid:... (the password field may be empty) */
	while (f && fgets(line, sizeof(line), f)) {
		pw = strchr(line, ':');
		id = pw ? strchr(pw + 1, ':') : NULL;
		if (!id)
			continue;
		*pw = '\0';
		if (strtoul(id + 1, &end, 10) == uid && end > id + 1 &&
		    *end == ':') {
			snprintf(buf, size, "%.*s", (int)size - 1, line);
			break;
		}
	}
	if (f)
		fclose(f);
	return buf;
}

static int cmd_ps(int argc, char **argv)
{
	struct ps_state ps = { 0 };
	struct lp_proc *procs;
	long total, nfree, in_use;
	int i, n, json, unreadable = 0;
	char ubuf[64];

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl ps [--json]\n"
		      "List the processes that map large pages, private, shared and keyed.\n",
		      stdout);
		return EXIT_OK;
	}
	json = json_flag(argc, argv);
	if (json < 0)
		return usage_error("ps takes no arguments but --json");
	ps.psize = page_size_or_explain();
	if (ps.psize < 0 || pool_or_explain(&total, &nfree))
		return EXIT_FAIL;
	ps.nsegs = read_segments(&ps.segs);
	if (ps.nsegs < 0)
		ps.nsegs = 0;
	n = read_procs(&ps, &procs);
	if (n < 0) {
		say("cannot read /proc: %s", strerror(errno));
		return EXIT_FAIL;
	}
	in_use = total - nfree;
	for (i = 0; i < n; i++)
		unreadable += procs[i].unreadable;

	if (json) {
		json_long("{", "page_size", ps.psize);
		json_key(",", "processes");
		putchar('[');
		for (i = 0; i < n; i++) {
			json_long(i ? ",{" : "{", "pid", procs[i].pid);
			json_long(",", "uid", procs[i].uid);
			json_key(",", "user");
			json_str(user_name(procs[i].uid, ubuf, sizeof(ubuf)));
			json_key(",", "command");
			json_str(procs[i].comm);
			json_long(",", "pages",
				  procs[i].status_kb * 1024LL / ps.psize);
			if (!procs[i].unreadable) {
				json_long(",", "private", procs[i].private_pages);
				json_long(",", "shared", procs[i].shared_pages);
				json_long(",", "keyed", procs[i].keyed_pages);
			}
			putchar('}');
		}
		putchar(']');
		json_long(",", "mapped", ps.mapped);
		json_long(",", "in_use", in_use);
		json_key(",", "complete");
		fputs(unreadable ? "false" : "true", stdout);
		fputs("}\n", stdout);
	} else {
		printf("%7s %-10s %8s %8s %8s %s\n", "PID", "USER", "PRIVATE",
		       "SHARED", "KEYED", "COMMAND");
		for (i = 0; i < n; i++) {
			if (procs[i].unreadable)
				printf("%7ld %-10s %8s %8s %8s %s (%lld pages)\n",
				       procs[i].pid,
				       user_name(procs[i].uid, ubuf, sizeof(ubuf)),
				       "?", "?", "?", procs[i].comm,
				       procs[i].status_kb * 1024LL / ps.psize);
			else
				printf("%7ld %-10s %8lu %8lu %8lu %s\n",
				       procs[i].pid,
				       user_name(procs[i].uid, ubuf, sizeof(ubuf)),
				       procs[i].private_pages,
				       procs[i].shared_pages,
				       procs[i].keyed_pages, procs[i].comm);
		}
		printf("Mapped:          %lu pages (a shared segment counted once)\n",
		       ps.mapped);
		printf("Pool in use:     %ld pages\n", in_use);
		if (unreadable)
			printf("Note: %d processes not ours to look into: run as root to see every mapping.\n",
			       unreadable);
		else if (in_use != (long)ps.mapped)
			printf("Not mapped:      %ld pages (pinned by I/O in flight, or being freed)\n",
			       in_use - (long)ps.mapped);
	}
	free(procs);
	free(ps.segs);
	free(ps.inodes);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- apply */

/* s without leading and trailing blanks, in place. */
static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

/*
 * The pool size in a configuration file: "pool = N" (pages) or
 * "pool = SIZE" (3G, 512M, ...: a multiple of the large page size).
 * Comments (#) and blank lines are ignored; the last pool line counts.
 * 0 and *pages (-1 if the file sets no size), or -1 after saying why.
 */
static int read_config(const char *file, long psize, long *pages)
{
	char line[256], *key, *val;
	int lineno = 0, found = 0;
	unsigned long len;
	FILE *f = fopen(file, "re");

	if (!f) {
		say("cannot read %s: %s", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		line[strcspn(line, "#\n")] = '\0';
		key = trim(line);
		if (!*key)
			continue;
		val = strchr(key, '=');
		if (!val)
			goto bad;
		*val++ = '\0';
		key = trim(key);
		val = trim(val);
		if (strcmp(key, "pool"))
			goto bad;
		if (*val && strspn(val, "0123456789") == strlen(val)) {
			if (parse_long(val, 0, INT_MAX, pages))
				goto bad_size;
		} else if (!parse_size(val, psize, &len)) {
			*pages = len / psize;
		} else {
			goto bad_size;
		}
		found = 1;
	}
	fclose(f);
	if (!found)
		*pages = -1;
	return 0;
bad_size:
	fclose(f);
	say("%s:%d: bad pool size '%s' (pages, or a size such as 3G)", file,
	    lineno, val);
	return -1;
bad:
	fclose(f);
	say("%s:%d: expected 'pool = PAGES' or 'pool = SIZE' (such as 3G)",
	    file, lineno);
	return -1;
}

/* Why a resize the kernel refused failed; EXIT_FAIL. */
static int resize_failed(int err)
{
	if (err == EPERM || err == EACCES)
		say("only root can resize the pool");
	else if (!explain_unsupported(err))
		say("cannot resize the pool: %s", strerror(err));
	return EXIT_FAIL;
}

/* Make the pool pages big: through nr_pages where the kernel has it. */
static int set_pool(long pages, long before)
{
	char buf[32];
	FILE *f = fopen(NR_PAGES_PATH, "we");

	if (!f)
		return errno == ENOENT ? lp_resize(pages - before) : -1;
	snprintf(buf, sizeof(buf), "%ld\n", pages);
	if (fputs(buf, f) == EOF) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static int cmd_apply(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : LPCTL_CONFIG;
	long psize, want, before, after, nfree;
	char sz[32];

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl apply [FILE]\n"
		      "Set the pool to the size in FILE (default " LPCTL_CONFIG ").\n",
		      stdout);
		return EXIT_OK;
	}
	if (argc > 2)
		return usage_error("apply takes at most a FILE");
	psize = page_size_or_explain();
	if (psize < 0 || read_config(file, psize, &want) ||
	    pool_or_explain(&before, NULL))
		return EXIT_FAIL;
	if (want < 0) {
		printf("%s sets no pool size ('pool = N'): the pool stays at %ld pages\n",
		       file, before);
		return EXIT_OK;
	}
	if (want != before && set_pool(want, before)) {
		return resize_failed(errno);
	}
	if (pool_or_explain(&after, &nfree))
		return EXIT_FAIL;
	printf("pool: %ld -> %ld pages (%s each), %s asks for %ld\n", before,
	       after, fmt_size(sz, sizeof(sz), psize), file, want);
	if (after == want)
		return EXIT_OK;
	if (after < want)
		say("the pool could only grow to %ld pages: the kernel found no more free memory for large pages",
		    after);
	else
		say("the pool could only shrink to %ld pages: %ld pages are in use",
		    after, after - nfree);
	return EXIT_FAIL;
}

/* --------------------------------------------------------------- resize */

static int cmd_resize(int argc, char **argv)
{
	long psize, before, after, nfree, n, delta, target;
	const char *arg;
	char sz[32];

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl resize +N|-N|=N\n"
		      "Grow the pool by N pages, shrink it by N free pages, or set it to N pages.\n",
		      stdout);
		return EXIT_OK;
	}
	if (argc != 2)
		return usage_error("resize takes one argument: +N, -N or =N");
	arg = argv[1];
	if ((*arg != '+' && *arg != '-' && *arg != '=') ||
	    arg[1] < '0' || arg[1] > '9' || parse_long(arg + 1, 0, INT_MAX, &n))
		return usage_error("resize: bad count '%s' (+N grows by N pages, -N shrinks by N, =N sets the size)",
				   arg);

	psize = page_size_or_explain();
	if (psize < 0 || pool_or_explain(&before, NULL))
		return EXIT_FAIL;
	if (*arg == '=')
		delta = n - before;
	else
		delta = *arg == '-' ? -n : n;
	target = before + delta;	/* < 0: more than the pool has */

	/* =N through nr_pages: one step, no window for another resize. */
	if (delta && (*arg == '=' ? set_pool(n, before) : lp_resize(delta))) {
		return resize_failed(errno);
	}
	if (pool_or_explain(&after, &nfree))
		return EXIT_FAIL;
	printf("pool: %ld -> %ld pages (%s each)\n", before, after,
	       fmt_size(sz, sizeof(sz), psize));
	if (after == target)
		return EXIT_OK;
	if (delta > 0)
		say("the pool could only grow to %ld pages, not %ld: the kernel found no more free memory for large pages",
		    after, target);
	else if (target < 0 && !after)
		say("the pool had only %ld pages, not %ld to take", before, -delta);
	else
		say("the pool could only shrink to %ld pages, not %ld: %ld pages are in use",
		    after, target < 0 ? 0 : target, after - nfree);
	return EXIT_FAIL;
}

/* ------------------------------------------------------- alloc, share */

/* Why mapping len bytes failed with err; for share, key > 0. */
static void explain_map_error(int err, int key, unsigned long len, long psize)
{
	const char *call = key ? "share_large_pages" : "get_large_pages";
	struct segment seg;
	struct rlimit rl;
	long nfree;
	char a[32], b[32];

	if (explain_unsupported(err))
		return;
	switch (err) {
	case ENOMEM:
		if (!lp_pool(NULL, &nfree) &&
		    (unsigned long)nfree < len / psize) {
			say("not enough free large pages (asked %lu, %ld free)",
			    len / psize, nfree);
			return;
		}
		if (geteuid() && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
		    rl.rlim_cur != RLIM_INFINITY && len > rl.rlim_cur) {
			say("%s is over the locked-memory limit (RLIMIT_MEMLOCK %s, see ulimit -l): large pages are locked memory",
			    fmt_size(a, sizeof(a), len),
			    fmt_size(b, sizeof(b), rl.rlim_cur));
			return;
		}
		say("%s: out of memory (no room for %s, or over RLIMIT_MEMLOCK)",
		    call, fmt_size(a, sizeof(a), len));
		return;
	case EPERM:
		say("%s: not allowed to lock memory (RLIMIT_MEMLOCK is 0, no CAP_IPC_LOCK, not in kernel.largepage_group)",
		    call);
		return;
	case EACCES:
		if (find_segment(key, &seg))
			say("permission denied on segment %d (mode %04o, owner %u:%u)",
			    key, seg.mode, seg.uid, seg.gid);
		else
			say("permission denied on segment %d", key);
		return;
	case EEXIST:
		say("segment %d already exists (--excl)", key);
		return;
	case ENOENT:
		say("no segment with key %d (--attach does not create one)",
		    key);
		return;
	case EINVAL:
		if (key && find_segment(key, &seg) && seg.size != len) {
			say("segment %d exists with size %s, not %s", key,
			    fmt_size(a, sizeof(a), seg.size),
			    fmt_size(b, sizeof(b), len));
			return;
		}
		break;
	}
	say("%s: %s", call, strerror(err));
}

/*
 * Touch every small page: write when writable, else read (volatile, so
 * the compiler keeps the accesses). Large pages never fault: this only
 * shows that the whole range is there.
 */
static void touch(char *p, unsigned long len, int writable)
{
	long small = sysconf(_SC_PAGESIZE);
	unsigned long off;

	if (small <= 0)
		small = 4096;
	for (off = 0; off < len; off += small) {
		if (writable)
			*(volatile char *)(p + off) = 0;
		else
			(void)*(volatile char *)(p + off);
	}
}

/*
 * Hold for secs seconds, or until SIGINT, SIGTERM or SIGHUP; the pages
 * are released normally afterwards.
 */
static void hold(unsigned long secs)
{
	struct timespec now, end, left;
	sigset_t set;
	int sig = -1;

	if (!secs)
		return;
	if (secs == HOLD_FOREVER)
		printf("holding until SIGINT or SIGTERM\n");
	else
		printf("holding for %lu s\n", secs);
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs == HOLD_FOREVER || secs > INT_MAX ? INT_MAX : secs;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_nsec += 1000000000L;
			left.tv_sec--;
		}
		if (left.tv_sec < 0)
			break;
		sig = sigtimedwait(&set, NULL, &left);
		if (sig >= 0 || errno != EINTR)
			break;
	}
	if (sig > 0)
		printf("%s: releasing early\n", strsignal(sig));
}

static const char *describe(char *buf, size_t size, unsigned long len,
			    long psize)
{
	char a[32], b[32];

	snprintf(buf, size, "%s (%lu large page%s of %s)",
		 fmt_size(a, sizeof(a), len), len / psize,
		 len / psize == 1 ? "" : "s", fmt_size(b, sizeof(b), psize));
	return buf;
}

static int cmd_alloc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shared", no_argument, NULL, 's' },
		{ "hold", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	unsigned long len, secs = 0;
	int c, shared = 0;
	long psize;
	char desc[96];
	void *p;

	argv[0] = "lpctl alloc";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			shared = 1;
			break;
		case 'H':
			if (parse_hold(optarg, &secs))
				return usage_error("bad --hold '%s' (seconds, or 'forever')",
						   optarg);
			break;
		case 'h':
			fputs("Usage: lpctl alloc SIZE [--shared] [--hold SECS]\n",
			      stdout);
			return EXIT_OK;
		default:
			return bad_option();
		}
	}
	if (argc - optind != 1)
		return usage_error("alloc takes one SIZE");
	psize = page_size_or_explain();
	if (psize < 0)
		return EXIT_FAIL;
	if (parse_size(argv[optind], psize, &len))
		return EXIT_USAGE;

	p = lp_alloc(len, PROT_READ | PROT_WRITE,
		     shared ? MAP_SHARED : MAP_PRIVATE);
	if (!p) {
		explain_map_error(errno, 0, len, psize);
		return EXIT_FAIL;
	}
	touch(p, len, 1);
	printf("mapped %s, %s, at %p\n", describe(desc, sizeof(desc), len, psize),
	       shared ? "shared" : "private", p);
	hold(secs);
	if (lp_free(p)) {
		say("free_large_pages(%p): %s", p, strerror(errno));
		return EXIT_FAIL;
	}
	printf("freed %p\n", p);
	return EXIT_OK;
}

#define NOTE_MAGIC "lpctl segment, created by pid "

/* Create-if-absent as two steps, to tell creating from attaching. */
static void *share_create_or_attach(int key, unsigned long len, int prot,
				    int mode, int *created)
{
	void *p = NULL;
	int i;

	for (i = 0; i < 5 && !p; i++) {
		p = lp_share(key, len, prot, 0);
		if (p || errno != ENOENT)
			break;
		p = lp_share(key, len, prot, IPC_CREAT | IPC_EXCL | mode);
		*created = !!p;
		if (!p && errno != EEXIST)
			break;
	}
	return p;
}

static int cmd_share(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "create", no_argument, NULL, 'c' },
		{ "attach", no_argument, NULL, 'a' },
		{ "excl", no_argument, NULL, 'x' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "hold", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c, create = 0, attach = 0, excl = 0, created = 0;
	int prot = PROT_READ | PROT_WRITE;
	unsigned long len, secs = 0;
	long key, mode = 0600, psize;
	char desc[96], *end;
	void *p;

	argv[0] = "lpctl share";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			errno = 0;
			mode = strtol(optarg, &end, 8);
			if (errno || !*optarg || *end || mode < 0 || mode > 0777)
				return usage_error("bad --mode '%s' (octal, at most 0777)",
						   optarg);
			break;
		case 'c':
			create = 1;
			break;
		case 'a':
			attach = 1;
			break;
		case 'x':
			excl = 1;
			break;
		case 'r':
			prot = PROT_READ;
			break;
		case 'H':
			if (parse_hold(optarg, &secs))
				return usage_error("bad --hold '%s' (seconds, or 'forever')",
						   optarg);
			break;
		case 'h':
			fputs("Usage: lpctl share KEY SIZE [--mode MODE] [--create|--attach]\n"
			      "                  [--excl] [--read-only] [--hold SECS]\n",
			      stdout);
			return EXIT_OK;
		default:
			return bad_option();
		}
	}
	if (attach && (create || excl))
		return usage_error("--attach goes with neither --create nor --excl");
	if (argc - optind != 2)
		return usage_error("share takes a KEY and a SIZE");
	if (parse_long(argv[optind], 1, INT_MAX, &key))
		return usage_error("bad key '%s' (a positive integer)",
				   argv[optind]);
	psize = page_size_or_explain();
	if (psize < 0)
		return EXIT_FAIL;
	if (parse_size(argv[optind + 1], psize, &len))
		return EXIT_USAGE;

	if (attach)
		p = lp_share(key, len, prot, 0);
	else if (excl)
		p = lp_share(key, len, prot, IPC_CREAT | IPC_EXCL | mode);
	else
		p = share_create_or_attach(key, len, prot, mode, &created);
	created |= p && excl;
	if (!p) {
		explain_map_error(errno, key, len, psize);
		return EXIT_FAIL;
	}

	/*
	 * Write only to a segment made here: an existing one may be in use
	 * by an application, whose data stays as it is.
	 */
	touch(p, len, created && (prot & PROT_WRITE));
	if (created && (prot & PROT_WRITE))
		snprintf(p, 64, NOTE_MAGIC "%d", (int)getpid());
	if (created)
		printf("created segment %ld (mode %04lo): ", key, mode);
	else
		printf("attached segment %ld: ", key);
	printf("%s, %s, at %p\n", describe(desc, sizeof(desc), len, psize),
	       prot & PROT_WRITE ? "read-write" : "read-only", p);
	if (!created && !strncmp(p, NOTE_MAGIC, strlen(NOTE_MAGIC)))
		printf("it says: %.64s\n", (char *)p);
	hold(secs);
	if (lp_unshare(p)) {
		say("unshare_large_pages(%p): %s", p, strerror(errno));
		return EXIT_FAIL;
	}
	printf("detached from segment %ld\n", key);
	return EXIT_OK;
}

/* -------------------------------------------------------------- explain */

/* Does the caller have CAP_IPC_LOCK (effective)? */
static int has_cap_ipc_lock(void)
{
	struct {
		unsigned int version;
		int pid;
	} hdr = { 0x20080522, 0 };	/* _LINUX_CAPABILITY_VERSION_3 */
	struct {
		unsigned int effective, permitted, inheritable;
	} data[2];

	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return !!(data[0].effective & (1U << 14));	/* CAP_IPC_LOCK */
}

/* Is gid the caller's effective group or a supplementary one? */
static int in_group(gid_t gid)
{
	gid_t groups[NGROUPS_MAX];
	int i, n;

	if (gid == getegid())
		return 1;
	n = getgroups(ARRAY_SIZE(groups), groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/*
 * kernel.largepage_group: the group whose members hold large pages
 * beyond RLIMIT_MEMLOCK; 0 (nobody) when unset or not there.
 */
#define LPCTL_GROUP "/proc/sys/kernel/largepage_group"

static gid_t large_page_group(void)
{
	unsigned long gid = 0;
	FILE *f = fopen(LPCTL_GROUP, "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu", &gid) != 1)
		gid = 0;
	fclose(f);
	return gid;
}

/*
 * What the segment's mode lets the caller do, by the owner/group/other
 * rules share_large_pages() applies (CAP_IPC_OWNER not probed: root is
 * reported as allowed).
 */
static unsigned int seg_access(const struct segment *seg)
{
	uid_t uid = geteuid();

	if (!uid)
		return 06;
	if (uid == seg->uid || uid == seg->cuid)
		return (seg->mode >> 6) & 07;
	if (in_group(seg->gid) || in_group(seg->cgid))
		return (seg->mode >> 3) & 07;
	return seg->mode & 07;
}

static int explain_segment(long key, long psize)
{
	struct segment seg;
	unsigned int acc;
	char sz[32];

	if (!find_segment(key, &seg)) {
		printf("Segment %ld:     none; share_large_pages() without IPC_CREAT gives ENOENT\n",
		       key);
		return -1;
	}
	acc = seg_access(&seg);
	printf("Segment %ld:     %s (%lu pages), mode %04o, owner %u:%u, creator %u:%u, %lu attached\n",
	       key, fmt_size(sz, sizeof(sz), seg.size),
	       psize > 0 ? seg.size / psize : 0, seg.mode, seg.uid, seg.gid,
	       seg.cuid, seg.cgid, seg.nattch);
	if ((acc & 06) == 06) {
		printf("  you may attach it read-write\n");
		return 0;
	}
	if (acc & 04) {
		printf("  you may attach it read-only (--read-only); read-write gives EACCES\n");
		return 0;
	}
	printf("  you may not attach it: EACCES (uid %u, mode %04o)\n",
	       (unsigned int)geteuid(), seg.mode);
	return -1;
}

/* The N of largepages=N on the kernel command line, or -1. */
static long long cmdline_pages(char *text, size_t size)
{
	char line[4096], *q;
	long long n = -1;
	FILE *f = fopen("/proc/cmdline", "re");

	text[0] = '\0';
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		for (q = strstr(line, "largepages="); q; q = strstr(q + 1, "largepages="))
			if (q == line || q[-1] == ' ')
				break;
		if (q) {
			q[strcspn(q, " \n")] = '\0';
			snprintf(text, size, "%.*s", (int)size - 1, q);
			n = strtoll(q + strlen("largepages="), NULL, 0);
		}
	}
	fclose(f);
	return n;
}

static int cmd_explain(int argc, char **argv)
{
	long psize, total = 0, nfree = 0, key = 0, conf_pages = -1, room;
	int bad = 0, err = 0, json = 0, i, unlimited = 0, misc;
	char cg_who[PATH_MAX + 8];
	long long boot;
	struct rlimit rl;
	char a[32], b[32], boot_text[128], group_how[64];
	const char *lock_how = NULL;
	gid_t group;
	long long lock_bytes = -1;
	void *p;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs("Usage: lpctl explain [--json] [KEY]\n"
			      "Say why you can or cannot get large pages, and attach segment KEY,\n"
			      "and how the pool's size is set.\n",
			      stdout);
			return EXIT_OK;
		}
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (key || parse_long(argv[i], 1, INT_MAX, &key))
			return usage_error("bad key '%s' (a positive integer)", argv[i]);
	}

	/* The kernel: ENOSYS without the patch or CONFIG_LARGE_PAGE. */
	if (syscall(__NR_free_large_pages, 0UL) == -1 && errno == ENOSYS) {
		if (json)
			fputs("{\"kernel\":false}\n", stdout);
		else
			printf("Kernel:          no large pages (ENOSYS): not built with CONFIG_LARGE_PAGE\n");
		return EXIT_FAIL;
	}
	if (!cpu_has_pse()) {
		if (json)
			fputs("{\"kernel\":true,\"pse\":false}\n", stdout);
		else
			printf("Kernel:          has large pages (CONFIG_LARGE_PAGE)\n"
			       "Processor:       no PSE: every large-page call gives EINVAL, the pool stays empty\n");
		return EXIT_FAIL;
	}
	psize = lp_page_size();
	if (psize < 0 || lp_pool(&total, &nfree)) {
		say("cannot read the pool from /proc/meminfo: %s", strerror(errno));
		return EXIT_FAIL;
	}
	boot = cmdline_pages(boot_text, sizeof(boot_text));
	if (!access(LPCTL_CONFIG, R_OK) && read_config(LPCTL_CONFIG, psize, &conf_pages))
		conf_pages = -2;	/* there, but wrong: read_config said why */

	group = large_page_group();
	if (!geteuid() || has_cap_ipc_lock()) {
		unlimited = 1;
		lock_how = geteuid() ? "CAP_IPC_LOCK" : "root";
	} else if (group && in_group(group)) {
		unlimited = 1;
		snprintf(group_how, sizeof(group_how),
			 "a member of group %lu, kernel.largepage_group",
			 (unsigned long)group);
		lock_how = group_how;
	} else if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		lock_how = "unknown";
	} else if (rl.rlim_cur == RLIM_INFINITY) {
		unlimited = 1;
		lock_how = "RLIMIT_MEMLOCK unlimited";
	} else {
		lock_bytes = rl.rlim_cur;
		lock_how = "RLIMIT_MEMLOCK";
	}

	/* The tightest misc.max of the caller's cgroup and its ancestors. */
	room = cgroup_room(cg_who, sizeof(cg_who));
	misc = cgroup_misc();

	/* The proof: map one page and give it back. */
	p = lp_alloc(psize, PROT_READ, MAP_PRIVATE);
	if (p)
		lp_free(p);
	else
		err = errno;
	bad = !p;

	if (json) {
		json_key("{", "kernel");
		fputs("true", stdout);
		json_key(",", "pse");
		fputs("true", stdout);
		json_long(",", "page_size", psize);
		json_long(",", "total", total);
		json_long(",", "free", nfree);
		json_key(",", "boot_parameter");
		if (boot >= 0)
			printf("%lld", boot);
		else
			fputs("null", stdout);
		json_key(",", "config");
		json_str(LPCTL_CONFIG);
		json_key(",", "config_pages");
		if (conf_pages >= 0)
			printf("%ld", conf_pages);
		else
			fputs("null", stdout);
		json_key(",", "memlock_unlimited");
		fputs(unlimited ? "true" : "false", stdout);
		json_long(",", "memlock_bytes", lock_bytes);
		json_key(",", "large_page_group");
		if (group)
			printf("%lu", (unsigned long)group);
		else
			fputs("null", stdout);
		json_key(",", "group_member");
		fputs(group && in_group(group) ? "true" : "false", stdout);
		json_key(",", "cgroup_misc");
		fputs(misc ? "true" : "false", stdout);
		json_key(",", "cgroup_misc_pool_empty");
		fputs(misc && misc_pool_empty() ? "true" : "false", stdout);
		json_key(",", "cgroup_limited_by");
		if (room >= 0)
			json_str(cg_who);
		else
			fputs("null", stdout);
		json_key(",", "cgroup_room");
		if (room >= 0)
			printf("%ld", room);
		else
			fputs("null", stdout);
		json_key(",", "probe_ok");
		fputs(p ? "true" : "false", stdout);
		json_key(",", "probe_error");
		if (p)
			fputs("null", stdout);
		else
			json_str(strerror(err));
		fputs("}\n", stdout);
		return bad ? EXIT_FAIL : EXIT_OK;
	}

	printf("Kernel:          has large pages (CONFIG_LARGE_PAGE)\n");
	printf("Processor:       has PSE\n");
	printf("Large page size: %s\n", fmt_size(a, sizeof(a), psize));
	printf("Pool:            %ld pages, %ld free%s\n", total, nfree,
	       !total ? " (empty: boot with largepages=N, or lpctl resize +N)" :
	       !nfree ? " (all in use)" : "");
	if (boot >= 0)
		printf("Set at boot by:  %s on the kernel command line\n", boot_text);
	else
		printf("Set at boot by:  the default, a quarter of RAM (no largepages= on the command line)\n");
	if (conf_pages >= 0)
		printf("Kept by:         %s asks for %ld pages (lpctl apply, run at boot by largepage.service)%s\n",
		       LPCTL_CONFIG, conf_pages,
		       conf_pages == total ? "" : "; the pool differs now");
	else if (conf_pages == -2)
		printf("Kept by:         %s, which lpctl cannot read (see above)\n",
		       LPCTL_CONFIG);
	else
		printf("Kept by:         nothing: to keep a size across reboots, put 'pool = N' (pages) or 'pool = 3G' in %s\n",
		       LPCTL_CONFIG);

	if (unlimited)
		printf("Locked memory:   no limit (%s)\n", lock_how);
	else if (lock_bytes < 0)
		printf("Locked memory:   cannot read RLIMIT_MEMLOCK\n");
	else
		printf("Locked memory:   RLIMIT_MEMLOCK %s: %s\n",
		       fmt_size(a, sizeof(a), lock_bytes),
		       !lock_bytes ? "none allowed, calls give EPERM (raise ulimit -l)" :
		       lock_bytes < psize ?
		       "less than one large page, calls give ENOMEM (raise ulimit -l)" :
		       "enough for a large page");
	if (!unlimited && group)
		printf("Group:           members of group %lu (kernel.largepage_group) have no limit\n",
		       (unsigned long)group);
	if (misc && misc_pool_empty())
		printf("Cgroup:          %s\n", MISC_EMPTY_TEXT);
	else if (room >= 0)
		printf("Cgroup:          %s allows %ld more large pages (misc.max, largepage)%s\n",
		       cg_who, room,
		       room ? "" : ": calls give ENOMEM (raise its misc.max)");
	else if (room == -2)
		printf("Cgroup:          cannot read /proc/self/cgroup\n");
	else if (misc)
		printf("Cgroup:          no large-page limit (misc.max) on this cgroup or above\n");
	else
		printf("Cgroup:          no misc controller: no per-cgroup limit\n");
	if (p)
		printf("Probe:           mapped and freed one large page: you can get large pages\n");
	else
		printf("Probe:           get_large_pages() of %s: %s%s\n",
		       fmt_size(b, sizeof(b), psize), strerror(err),
		       err == ENOMEM && !room ? " (the cgroup's limit)" : "");
	if (key && explain_segment(key, psize))
		bad = 1;
	return bad ? EXIT_FAIL : EXIT_OK;
}

/* ------------------------------------------------------------------ run */

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fallback", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	const char *old = getenv("LD_PRELOAD");
	int c, fallback = 0, err;
	char *preload;

	argv[0] = "lpctl run";
	optind = 1;
	/* '+': options end at PROGRAM even without "--". */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			fallback = 1;
			break;
		case 'h':
			fputs("Usage: lpctl run [--fallback] -- PROGRAM [ARGS]\n",
			      stdout);
			return EXIT_OK;
		default:
			return bad_option();
		}
	}
	if (optind == argc)
		return usage_error("run needs a PROGRAM");
	if (access(LPCTL_PRELOAD, R_OK)) {
		say("cannot use %s: %s", LPCTL_PRELOAD, strerror(errno));
		return EXIT_FAIL;
	}
	/* Append: a preload already there keeps its place before ours. */
	if (old && *old && !strstr(old, LPCTL_PRELOAD)) {
		if (asprintf(&preload, "%s:%s", old, LPCTL_PRELOAD) < 0)
			preload = NULL;
	} else {
		preload = strdup(old && *old ? old : LPCTL_PRELOAD);
	}
	if (!preload || setenv("LD_PRELOAD", preload, 1) ||
	    (fallback && setenv(FALLBACK_ENV, "1", 1))) {
		say("cannot set the environment: %s", strerror(errno));
		return EXIT_FAIL;
	}
	free(preload);
	fflush(stdout);
	execvp(argv[optind], argv + optind);
	err = errno;
	say("cannot run %s: %s", argv[optind], strerror(err));
	return err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "status", cmd_status },
		{ "ps", cmd_ps },
		{ "resize", cmd_resize },
		{ "apply", cmd_apply },
		{ "alloc", cmd_alloc },
		{ "share", cmd_share },
		{ "explain", cmd_explain },
		{ "run", cmd_run },
	};
	size_t i;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("lpctl %s\n", LPCTL_VERSION);
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	return usage_error("unknown command '%s'", argv[1]);
}
