// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl explain [--json] [KEY]: why the caller can or cannot get large
 * pages (the kernel, the CPU, locked memory, the group, the cgroup's
 * limit, a probe), and how the pool got its size. The facts are
 * gathered first into a struct, then printed.
 */
#include <asm/unistd_32.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "out.h"

struct explain {
	int kernel;		/* the system calls exist */
	int pse;		/* the CPU has large pages */
	long psize, total, nfree;
	long long boot;		/* largepages=N on the command line, or -1 */
	char boot_text[128];
	long conf_pages;	/* -1: no size in LPCTL_CONFIG, -2: unreadable */
	int unlimited;		/* no locked-memory limit, lock_how says why */
	const char *lock_how;
	char group_how[64];
	long long lock_bytes;	/* RLIMIT_MEMLOCK, or -1 */
	gid_t group;		/* kernel.largepage_group, 0: none */
	int group_member;
	int misc, misc_empty;	/* the misc controller, its pool empty */
	long room;		/* cgroup_room(): pages, -1 no limit, -2 unknown */
	char cg_who[PATH_MAX + 8];
	int probe_ok, probe_err;
	long key;		/* the segment asked about, 0: none */
	int seg_found;		/* in /proc/largepage_segments */
	struct segment seg;
	uid_t euid;
	unsigned int seg_acc;	/* seg_access(): 04 read, 02 write */
};

/* Who may lock how much: root, CAP_IPC_LOCK, the group, the rlimit. */
static void gather_memlock(struct explain *e)
{
	struct rlimit rl;

	e->lock_bytes = -1;
	e->group = large_page_group();
	e->group_member = e->group && in_group(e->group);
	if (!geteuid() || has_cap_ipc_lock()) {
		e->unlimited = 1;
		e->lock_how = geteuid() ? "CAP_IPC_LOCK" : "root";
	} else if (e->group_member) {
		e->unlimited = 1;
		snprintf(e->group_how, sizeof(e->group_how),
			 "a member of group %lu, kernel.largepage_group",
			 (unsigned long)e->group);
		e->lock_how = e->group_how;
	} else if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		e->lock_how = "unknown";
	} else if (rl.rlim_cur == RLIM_INFINITY) {
		e->unlimited = 1;
		e->lock_how = "RLIMIT_MEMLOCK unlimited";
	} else {
		e->lock_bytes = rl.rlim_cur;
		e->lock_how = "RLIMIT_MEMLOCK";
	}
}

/*
 * What the segment's mode lets uid do, by the owner/group/other rules
 * share_large_pages() applies (CAP_IPC_OWNER not probed: root is
 * reported as allowed).
 */
static unsigned int seg_access(const struct segment *seg, uid_t uid)
{
	if (!uid)
		return 06;
	if (uid == seg->uid || uid == seg->cuid)
		return (seg->mode >> 6) & 07;
	if (in_group(seg->gid) || in_group(seg->cgid))
		return (seg->mode >> 3) & 07;
	return seg->mode & 07;
}

/* Segment key, if asked about: is it there, and may the caller attach it. */
static void gather_segment(struct explain *e, long key)
{
	e->key = key;
	e->euid = geteuid();
	if (!key)
		return;
	e->seg_found = find_segment(key, &e->seg);
	if (e->seg_found)
		e->seg_acc = seg_access(&e->seg, e->euid);
}

/* May the caller attach the segment asked about (read-only at least)? */
static int seg_attachable(const struct explain *e)
{
	return e->seg_found && (e->seg_acc & 04);
}

/*
 * Every fact, the probe last: 0, or -1 if the kernel or the CPU has no
 * large pages (e->kernel, e->pse say which) or the pool cannot be read.
 * key: the segment to look up too, or 0.
 */
static int explain_gather(struct explain *e, long key)
{
	void *p;

	memset(e, 0, sizeof(*e));
	/* The kernel: ENOSYS without the patch or CONFIG_LARGE_PAGE. */
	e->kernel = !(syscall(__NR_free_large_pages, 0UL) == -1 &&
		      errno == ENOSYS);
	e->pse = e->kernel && cpu_has_pse();
	if (!e->pse)
		return -1;
	e->psize = lp_page_size();
	if (e->psize < 0 || lp_pool(&e->total, &e->nfree)) {
		say("cannot read the pool from /proc/meminfo: %s", strerror(errno));
		return -1;
	}
	e->boot = cmdline_pages(e->boot_text, sizeof(e->boot_text));
	e->conf_pages = -1;
	if (!access(LPCTL_CONFIG, R_OK) &&
	    read_config(LPCTL_CONFIG, e->psize, &e->conf_pages))
		e->conf_pages = -2;	/* there, but wrong: read_config said why */
	gather_memlock(e);
	/* The tightest misc.max of the caller's cgroup and its ancestors. */
	e->room = cgroup_room(e->cg_who, sizeof(e->cg_who));
	e->misc = cgroup_misc();
	e->misc_empty = e->misc && misc_pool_empty();
	gather_segment(e, key);
	/* The proof: map one page and give it back. */
	p = lp_alloc(e->psize, PROT_READ, MAP_PRIVATE);
	e->probe_ok = !!p;
	if (p)
		lp_free(p);
	else
		e->probe_err = errno;
	return 0;
}

/* The kernel, the CPU, the pool and where its size comes from. */
static void print_pool(const struct explain *e)
{
	out_long("page_size", NULL, e->psize);
	out_size(NULL, "Large page size: %s\n", e->psize);
	out_long("total", NULL, e->total);
	out_long("free", NULL, e->nfree);
	out_text("Pool:            %ld pages, %ld free%s\n", e->total, e->nfree,
		 !e->total ? " (empty: boot with largepages=N, or lpctl resize +N)" :
		 !e->nfree ? " (all in use)" : "");
	out_long_or_null("boot_parameter", NULL, e->boot, e->boot < 0);
	if (e->boot >= 0)
		out_text("Set at boot by:  %s on the kernel command line\n",
			 e->boot_text);
	else
		out_text("Set at boot by:  the default, a quarter of RAM (no largepages= on the command line)\n");
	out_str("config", NULL, LPCTL_CONFIG);
	out_long_or_null("config_pages", NULL, e->conf_pages, e->conf_pages < 0);
	if (e->conf_pages >= 0)
		out_text("Kept by:         %s asks for %ld pages (lpctl apply, run at boot by largepage.service)%s\n",
			 LPCTL_CONFIG, e->conf_pages,
			 e->conf_pages == e->total ? "" : "; the pool differs now");
	else if (e->conf_pages == -2)
		out_text("Kept by:         %s, which lpctl cannot read (see above)\n",
			 LPCTL_CONFIG);
	else
		out_text("Kept by:         nothing: to keep a size across reboots, put 'pool = N' (pages) or 'pool = 3G' in %s\n",
			 LPCTL_CONFIG);
}

/* Locked memory and the group that lifts its limit. */
static void print_memlock(const struct explain *e)
{
	char a[32];

	out_bool("memlock_unlimited", NULL, e->unlimited);
	out_long("memlock_bytes", NULL, e->lock_bytes);
	if (e->unlimited)
		out_text("Locked memory:   no limit (%s)\n", e->lock_how);
	else if (e->lock_bytes < 0)
		out_text("Locked memory:   cannot read RLIMIT_MEMLOCK\n");
	else
		out_text("Locked memory:   RLIMIT_MEMLOCK %s: %s\n",
			 fmt_size(a, sizeof(a), e->lock_bytes),
			 !e->lock_bytes ? "none allowed, calls give EPERM (raise ulimit -l)" :
			 e->lock_bytes < e->psize ?
			 "less than one large page, calls give ENOMEM (raise ulimit -l)" :
			 "enough for a large page");
	out_long_or_null("large_page_group", NULL, e->group, !e->group);
	out_bool("group_member", NULL, e->group_member);
	if (!e->unlimited && e->group)
		out_text("Group:           members of group %lu (kernel.largepage_group) have no limit\n",
			 (unsigned long)e->group);
}

/* The misc cgroup's limit on the caller. */
static void print_cgroup(const struct explain *e)
{
	out_bool("cgroup_misc", NULL, e->misc);
	out_bool("cgroup_misc_pool_empty", NULL, e->misc_empty);
	out_str("cgroup_limited_by", NULL, e->room >= 0 ? e->cg_who : NULL);
	out_long_or_null("cgroup_room", NULL, e->room, e->room < 0);
	if (e->misc_empty)
		out_text("Cgroup:          %s\n", MISC_EMPTY_TEXT);
	else if (e->room >= 0)
		out_text("Cgroup:          %s allows %ld more large pages (misc.max, largepage)%s\n",
			 e->cg_who, e->room,
			 e->room ? "" : ": calls give ENOMEM (raise its misc.max)");
	else if (e->room == -2)
		out_text("Cgroup:          cannot read /proc/self/cgroup\n");
	else if (e->misc)
		out_text("Cgroup:          no large-page limit (misc.max) on this cgroup or above\n");
	else
		out_text("Cgroup:          no misc controller: no per-cgroup limit\n");
}

static void print_probe(const struct explain *e)
{
	char b[32];

	out_bool("probe_ok", e->probe_ok ?
		 "Probe:           mapped and freed one large page: you can get large pages\n" :
		 NULL, e->probe_ok);
	out_str("probe_error", NULL, e->probe_ok ? NULL : strerror(e->probe_err));
	if (!e->probe_ok)
		out_text("Probe:           get_large_pages() of %s: %s%s\n",
			 fmt_size(b, sizeof(b), e->psize),
			 strerror(e->probe_err),
			 e->probe_err == ENOMEM && !e->room ?
			 " (the cgroup's limit)" : "");
}

/*
 * The segment asked about: its line of /proc/largepage_segments and what
 * its mode lets the caller do (JSON: an object, or null if none).
 */
static void print_segment(const struct explain *e)
{
	const struct segment *g = &e->seg;
	long long pages;

	if (!e->seg_found) {
		out_null("segment", NULL, NULL);
		out_text("Segment %ld:     none; share_large_pages() without IPC_CREAT gives ENOENT\n",
			 e->key);
		return;
	}
	pages = e->psize > 0 ? (long long)(g->size / e->psize) : 0;
	out_object("segment");
	out_long("key", "Segment %lld:     ", g->key);
	out_size("size", "%s", g->size);
	out_long("pages", " (%lld pages)", pages);
	out_long("mode", ", mode %04llo", g->mode);
	out_long("uid", ", owner %lld", g->uid);
	out_long("gid", ":%lld", g->gid);
	out_long("cuid", ", creator %lld", g->cuid);
	out_long("cgid", ":%lld", g->cgid);
	out_long("nattch", ", %lld attached\n", g->nattch);
	out_long("caller_uid", NULL, e->euid);
	if ((e->seg_acc & 06) == 06) {
		out_str("attach", "  you may attach it %s\n", "read-write");
	} else if (e->seg_acc & 04) {
		out_str("attach", "  you may attach it %s (--read-only); read-write gives EACCES\n",
			"read-only");
	} else {
		out_str("attach", NULL, NULL);
		out_text("  you may not attach it: EACCES (uid %u, mode %04o)\n",
			 (unsigned int)e->euid, g->mode);
	}
	out_end();
}

/* The facts, as text or JSON; the kernel's and the CPU's alone if no. */
static void explain_print(const struct explain *e)
{
	out_object(NULL);
	out_bool("kernel", e->kernel ?
		 "Kernel:          has large pages (CONFIG_LARGE_PAGE)\n" :
		 "Kernel:          no large pages (ENOSYS): not built with CONFIG_LARGE_PAGE\n",
		 e->kernel);
	if (e->kernel)
		out_bool("pse", e->pse ? "Processor:       has PSE\n" :
			 "Processor:       no PSE: every large-page call gives EINVAL, the pool stays empty\n",
			 e->pse);
	if (e->pse) {
		print_pool(e);
		print_memlock(e);
		print_cgroup(e);
		print_probe(e);
		if (e->key)
			print_segment(e);
	}
	out_end();
}

int cmd_explain(int argc, char **argv)
{
	struct explain e;
	long key = 0;
	int json, bad;

	bad = json_option(argc, argv, &json);
	if (bad >= 0)
		return bad;	/* its --help, or a bad option */
	if (argc - optind > 1)
		return usage_error("bad key '%s' (a positive integer)",
				   argv[optind + 1]);
	if (optind < argc && parse_long(argv[optind], 1, INT_MAX, &key))
		return usage_error("bad key '%s' (a positive integer)",
				   argv[optind]);
	bad = explain_gather(&e, key);
	if (bad && e.pse)
		return EXIT_FAIL;	/* the pool unreadable: said why */
	out_start(json);
	explain_print(&e);
	if (key && !seg_attachable(&e))
		bad = 1;
	return bad || !e.probe_ok ? EXIT_FAIL : EXIT_OK;
}
