// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl's readers of /proc and /sys: the keyed segments, the pool's
 * snapshot, users and groups, the kernel command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lpctl.h"

/*
 * Read /proc/largepage_segments (a header line, then one line a keyed
 * segment). The number of segments, or -1 with errno (ENOENT: this
 * kernel does not list its segments).
 */
int read_segments(struct segment **list)
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
int find_segment(int key, struct segment *out)
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

/*
 * The pool's snapshot (struct pool_stat): 0, or -1 if there is no such
 * file (then the totals come from /proc/meminfo and there is no split).
 */
int pool_stat(struct pool_stat *st)
{
	char name[32];
	long v;
	FILE *f;

	st->total = st->free = st->free_zeroed = st->free_unzeroed = -1;
	st->lowmem = st->reserved = -1;
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
		else if (!strcmp(name, "reserved"))
			st->reserved = v;
	}
	fclose(f);
	return st->total >= 0 && st->free >= 0 ? 0 : -1;
}

/*
 * The name of uid from /etc/passwd, else the number. lpctl is static:
 * getpwuid() would need the NSS modules of the glibc it was built with.
 */
const char *user_name(unsigned int uid, char *buf, size_t size)
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

/* Does the caller have CAP_IPC_LOCK (effective)? */
int has_cap_ipc_lock(void)
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
int in_group(gid_t gid)
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

gid_t large_page_group(void)
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

/* The N of largepages=N on the kernel command line, or -1. */
long long cmdline_pages(char *text, size_t size)
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

