// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl ps [--json]: the processes that map large pages, and how many,
 * private, shared, keyed and heap (its own pages, and those it shares
 * with a process it forked or was forked from, until one writes them),
 * from /proc/PID/status and smaps.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"

/* One process's large-page mappings, in pages. */
struct lp_proc {
	long pid;
	unsigned int uid;
	char comm[64];
	unsigned long private_pages, shared_pages, keyed_pages;
	unsigned long heap_pages, cow_pages;	/* a heap's own, and shared */
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
	unsigned long long cow_pss_kb;	/* heaps' shared pages, by Pss */
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
 * Sort pid's [largepage] vmas from /proc/PID/smaps: private (VmFlags dc:
 * get_large_pages(MAP_PRIVATE), not inherited), a heap (LP_COPY_ON_FORK:
 * no dc, but its pages are Anonymous, as a private mapping's are), or
 * else keyed (its inode is a listed segment's) or shared
 * (get_large_pages(MAP_SHARED)). A heap's Private_Dirty pages are its own,
 * its Shared_Dirty ones are shared since fork() with the processes that
 * hold them too, each counted in mapped by its share of Pss, so that a
 * page counts once. -1 if unreadable.
 */
static int proc_mappings(struct ps_state *ps, struct lp_proc *p)
{
	char path[64], line[512], name[256];
	unsigned long start, end, pages = 0, kb;
	unsigned long long ino = 0, pss = 0, priv = 0, shr = 0, anon = 0;
	unsigned long long psize_kb = ps->psize / 1024;
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
			pss = priv = shr = anon = 0;
			continue;
		}
		if (!ours)
			continue;
		if (sscanf(line, "Pss: %lu kB", &kb) == 1)
			pss = kb;
		else if (sscanf(line, "Private_Dirty: %lu kB", &kb) == 1)
			priv = kb;
		else if (sscanf(line, "Shared_Dirty: %lu kB", &kb) == 1)
			shr = kb;
		else if (sscanf(line, "Anonymous: %lu kB", &kb) == 1)
			anon = kb;
		if (strncmp(line, "VmFlags:", 8))
			continue;
		ours = 0;
		if (strstr(line, " dc")) {
			p->private_pages += pages;
		} else if (anon && psize_kb) {
			p->heap_pages += priv / psize_kb;
			p->cow_pages += shr / psize_kb;
			ps->mapped += priv / psize_kb;
			ps->cow_pss_kb += pss > priv ? pss - priv : 0;
			continue;
		} else if (keyed_ino(ps, ino)) {
			p->keyed_pages += pages;
		} else {
			p->shared_pages += pages;
		}
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

static void print_proc(const struct lp_proc *p, long psize)
{
	long long pages = p->status_kb * 1024LL / psize;
	char ubuf[64];

	out_object(NULL);
	out_long("pid", "%7lld", p->pid);
	out_long("uid", NULL, p->uid);
	out_str("user", " %-10s", user_name(p->uid, ubuf, sizeof(ubuf)));
	/* JSON has the command and pages here, text at the end. */
	out_str("command", NULL, p->comm);
	out_long("pages", NULL, pages);
	if (p->unreadable) {
		out_text(" %8s %8s %8s %8s %8s %s (%lld pages)\n", "?", "?",
			 "?", "?", "?", p->comm, pages);
	} else {
		out_long("private", " %8lld", p->private_pages);
		out_long("shared", " %8lld", p->shared_pages);
		out_long("keyed", " %8lld", p->keyed_pages);
		out_long("heap", " %8lld", p->heap_pages);
		out_long("heap_shared", " %8lld", p->cow_pages);
		out_text(" %s\n", p->comm);
	}
	out_end();
}

static void print_procs(const struct ps_state *ps, const struct lp_proc *procs,
			int n, long in_use)
{
	int i, unreadable = 0;

	for (i = 0; i < n; i++)
		unreadable += procs[i].unreadable;
	out_long("page_size", NULL, ps->psize);
	out_text("%7s %-10s %8s %8s %8s %8s %8s %s\n", "PID", "USER",
		 "PRIVATE", "SHARED", "KEYED", "HEAP", "HEAP-COW", "COMMAND");
	out_array("processes");
	for (i = 0; i < n; i++)
		print_proc(&procs[i], ps->psize);
	out_end();
	out_long("mapped", "Mapped:          %lld pages (each counted once, however many map it)\n",
		 ps->mapped);
	out_long("in_use", "Pool in use:     %lld pages\n", in_use);
	out_bool("complete", NULL, !unreadable);
	if (unreadable)
		out_text("Note: %d processes not ours to look into: run as root to see every mapping.\n",
			 unreadable);
	else if (in_use != (long)ps->mapped)
		out_text("Not mapped:      %ld pages (pinned by I/O in flight, or being freed)\n",
			 in_use - (long)ps->mapped);
}

int cmd_ps(int argc, char **argv)
{
	struct ps_state ps = { 0 };
	struct lp_proc *procs;
	long total, nfree;
	int rc, n, json;

	rc = json_only(argc, argv, &json);
	if (rc >= 0)
		return rc;
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
	/* Each holder's share of a page, summed: the page, to rounding. */
	ps.mapped += (ps.cow_pss_kb + ps.psize / 2048) / (ps.psize / 1024);
	out_start(json);
	out_object(NULL);
	print_procs(&ps, procs, n, total - nfree);
	out_end();
	free(procs);
	free(ps.segs);
	free(ps.inodes);
	return EXIT_OK;
}
