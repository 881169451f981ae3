/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lpctl's shared declarations: exit statuses, the commands' handlers
 * and their option parsing (the table of commands is main.c's),
 * messages, argument parsing, and the readers of /proc and /sys.
 */
#ifndef LPCTL_H
#define LPCTL_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "largepage.h"

#ifndef LPCTL_VERSION
#error "LPCTL_VERSION comes from debian/changelog (userspace/Makefile)"
#endif
#ifndef LPCTL_PRELOAD
#define LPCTL_PRELOAD	"/usr/lib/i386-linux-gnu/liblargepage.so.1"
#endif
#ifndef LPCTL_CONFIG
#define LPCTL_CONFIG	"/etc/largepage.conf"
#endif

#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_NOEXEC	126	/* run: PROGRAM cannot be executed (as env) */
#define EXIT_NOTFOUND	127	/* run: PROGRAM not found */

#define HOLD_FOREVER	ULONG_MAX
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

/* ------------------------------------------- the commands (main.c) */

struct option;

/*
 * getopt_long() over a command's arguments, with its --help (-h) added:
 * the option's character, -1 after the last, or 0 when the command is
 * done, *status its exit status (its help printed: EXIT_OK; a bad
 * option: EXIT_USAGE). opts ends with an empty entry.
 */
int cmd_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *opts, int *status);
/* For a command whose one option is --json: -1 to go on, or the status. */
int json_option(int argc, char **argv, int *json);
/* The same, and no operands (status, ps). */
int json_only(int argc, char **argv, int *json);

int cmd_status(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_resize(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_alloc(int argc, char **argv);
int cmd_share(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* ------------------------------------------- messages, parsing (util.c) */

__printf(1, 2) void say(const char *fmt, ...);
__printf(1, 2) int usage_error(const char *fmt, ...);
int bad_option(void);
const char *fmt_size(char *buf, size_t size, unsigned long long bytes);
int cpu_has_pse(void);
int explain_unsupported(int err);
long page_size_or_explain(void);
int pool_or_explain(long *total, long *nfree);
int parse_long(const char *s, long min, long max, long *val);
int parse_size(const char *s, long psize, unsigned long *len);
int parse_hold(const char *s, unsigned long *secs);

/* ----------------------------------- readers of /proc and /sys (proc.c) */

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

int read_segments(struct segment **list);
int find_segment(int key, struct segment *out);

/*
 * The pool's counts from /sys/kernel/mm/largepage/stat, all read by the
 * kernel at one instant so that they add up; -1 for a count the kernel
 * does not give.
 */
struct pool_stat {
	long total, free, free_zeroed, free_unzeroed, lowmem;
	long reserved;		/* of free: for the copies a heap's fork may need */
};

int pool_stat(struct pool_stat *st);
const char *user_name(unsigned int uid, char *buf, size_t size);
int has_cap_ipc_lock(void);
int in_group(gid_t gid);
gid_t large_page_group(void);
long long cmdline_pages(char *text, size_t size);

/* ------------------------------------ the misc cgroup (cgroup.c) */

struct lp_cgroup {
	char path[PATH_MAX];	/* from the cgroup2 root: "/db" */
	long current;
	long max;		/* -1: "max", no limit */
	long refused;		/* largepage.max of misc.events */
};

#define MISC_EMPTY_TEXT "the pool is empty: the misc files show no largepage line, and misc.max refuses a limit (EINVAL) until the pool has pages"

int cgroup_misc(void);
int misc_pool_empty(void);
long read_cgroups(struct lp_cgroup **list);
long cgroup_room(char *who, size_t size);

/* ------------------------------------------- the pool (pool.c) */

int read_config(const char *file, long psize, long *pages);

#endif
