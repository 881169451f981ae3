// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl ps [--json]: the processes that map large pages, and how many,
 * private, shared (a memfd's among them), keyed and heap (its own pages,
 * and those it shares with a process it forked or was forked from, until
 * one writes them), from /proc/PID/status and smaps.
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
	unsigned long memfd_pages;		/* of shared_pages */
	unsigned long heap_pages, cow_pages;	/* a heap's own, and shared */
	int unreadable;		/* its smaps is not ours to read */
	long status_kb;		/* its LargePages: line */
};

/* Pages [first, end) of a segment, by their index in it. */
struct lp_range {
	unsigned long first, end;
};

/*
 * The segments seen so far, by inode, with the pages of each that some
 * mapping maps (disjoint ranges): a shared one counts once, and a memfd
 * mapped in parts (each mapping a range at its offset) counts each page
 * once.
 */
struct lp_inode {
	unsigned long long ino;
	struct lp_range *ranges;
	size_t nranges;
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

/*
 * Count a mapping of pages [first, first + pages) of segment ino (first
 * is the mapping's offset in large pages: 0 but for a memfd's) once
 * across all processes: mapped grows by the pages no mapping seen so far
 * covers.
 */
static void count_inode(struct ps_state *ps, unsigned long long ino,
			unsigned long first, unsigned long pages)
{
	struct lp_range r = { first, first + pages }, *more_r;
	struct lp_inode *in = NULL, *more;
	unsigned long fresh = pages, lo, hi;
	size_t i;

	if (!pages)
		return;
	for (i = 0; i < ps->ninodes && !in; i++)
		if (ps->inodes[i].ino == ino)
			in = &ps->inodes[i];
	if (!in) {
		more = realloc(ps->inodes, (ps->ninodes + 1) * sizeof(*more));
		if (!more)
			return;
		ps->inodes = more;
		in = &ps->inodes[ps->ninodes++];
		in->ino = ino;
		in->ranges = NULL;
		in->nranges = 0;
	}
	/* The ranges are disjoint: what r shares with each is not new. */
	for (i = 0; i < in->nranges; i++) {
		lo = r.first > in->ranges[i].first ? r.first : in->ranges[i].first;
		hi = r.end < in->ranges[i].end ? r.end : in->ranges[i].end;
		if (lo < hi)
			fresh -= hi - lo;
	}
	if (!fresh)
		return;
	/* Merge r with the ranges it overlaps or touches, then add it. */
	for (i = 0; i < in->nranges;) {
		if (in->ranges[i].end < r.first || in->ranges[i].first > r.end) {
			i++;
			continue;
		}
		if (in->ranges[i].first < r.first)
			r.first = in->ranges[i].first;
		if (in->ranges[i].end > r.end)
			r.end = in->ranges[i].end;
		in->ranges[i] = in->ranges[--in->nranges];
	}
	more_r = realloc(in->ranges, (in->nranges + 1) * sizeof(*more_r));
	if (!more_r)
		return;
	in->ranges = more_r;
	in->ranges[in->nranges++] = r;
	ps->mapped += fresh;
}

static void free_inodes(struct ps_state *ps)
{
	size_t i;

	for (i = 0; i < ps->ninodes; i++)
		free(ps->inodes[i].ranges);
	free(ps->inodes);
}

/* One vma of /proc/PID/smaps, its fields gathered up to its VmFlags. */
struct smaps_vma {
	unsigned long start, end;
	unsigned long long off, ino, pss, priv, shr, anon;
	char name[256];
};

/* Does a VmFlags line have the two-letter flag fl (" dc", " lp")? */
static int has_vmflag(const char *line, const char *fl)
{
	const char *f = line;

	while ((f = strstr(f, fl))) {
		f += strlen(fl);
		if (!*f || *f == ' ' || *f == '\n')
			return 1;
	}
	return 0;
}

/*
 * Sort one vma once its VmFlags line (vmflags) is read. It is a large
 * page mapping when VmFlags has lp (VM_LARGEPAGE) or, from a kernel
 * without that mnemonic, when it is named [largepage]: a memfd of the
 * pool's is named /memfd:NAME (deleted), as shmem's. Then it is private
 * (VmFlags dc: get_large_pages(MAP_PRIVATE), not inherited), a heap
 * (LP_COPY_ON_FORK: no dc, but its pages are Anonymous, as a private
 * mapping's are), keyed (its inode is a listed segment's), or shared:
 * get_large_pages(MAP_SHARED), and a memfd's mapping (MFD_LARGEPAGE, or
 * MFD_HUGETLB under the preload), whatever else it looks like. A heap's
 * Private_Dirty pages are its own, its Shared_Dirty ones are shared
 * since fork() with the processes that hold them too, each counted in
 * mapped by its share of Pss, so that a page counts once.
 */
static void count_vma(struct ps_state *ps, struct lp_proc *p,
		      const struct smaps_vma *v, const char *vmflags)
{
	unsigned long long psize_kb = ps->psize / 1024;
	unsigned long pages, first;
	int memfd = !strncmp(v->name, "/memfd:", 7);

	if (ps->psize <= 0 ||
	    (!has_vmflag(vmflags, " lp") && strcmp(v->name, "[largepage]")))
		return;
	pages = (v->end - v->start) / ps->psize;
	first = v->off / ps->psize;
	if (has_vmflag(vmflags, " dc")) {
		p->private_pages += pages;
	} else if (memfd) {
		p->shared_pages += pages;
		p->memfd_pages += pages;
	} else if (v->anon && psize_kb) {
		p->heap_pages += v->priv / psize_kb;
		p->cow_pages += v->shr / psize_kb;
		ps->mapped += v->priv / psize_kb;
		ps->cow_pss_kb += v->pss > v->priv ? v->pss - v->priv : 0;
		return;
	} else if (keyed_ino(ps, v->ino)) {
		p->keyed_pages += pages;
	} else {
		p->shared_pages += pages;
	}
	count_inode(ps, v->ino, first, pages);
}

/*
 * pid's large-page vmas from /proc/PID/smaps: every vma's fields are
 * gathered, and count_vma() decides at its VmFlags line, the last of a
 * vma, whether it is one and which kind. -1 if unreadable.
 */
static int proc_mappings(struct ps_state *ps, struct lp_proc *p)
{
	char path[64], line[512];
	struct smaps_vma v = { 0 }, h;
	unsigned long long kb;
	int fields, in_vma = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/smaps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* A vma's first line: start-end perms offset dev inode [path]. */
		memset(&h, 0, sizeof(h));
		fields = sscanf(line, "%lx-%lx %*s %llx %*s %llu %255[^\n]",
				&h.start, &h.end, &h.off, &h.ino, h.name);
		if (fields >= 4) {
			v = h;
			in_vma = 1;
			continue;
		}
		if (!in_vma)
			continue;
		if (sscanf(line, "Pss: %llu kB", &kb) == 1)
			v.pss = kb;
		else if (sscanf(line, "Private_Dirty: %llu kB", &kb) == 1)
			v.priv = kb;
		else if (sscanf(line, "Shared_Dirty: %llu kB", &kb) == 1)
			v.shr = kb;
		else if (sscanf(line, "Anonymous: %llu kB", &kb) == 1)
			v.anon = kb;
		else if (!strncmp(line, "VmFlags:", 8)) {
			count_vma(ps, p, &v, line + 8);
			in_vma = 0;
		}
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
		out_long("memfd", NULL, p->memfd_pages);
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
		out_text("Not mapped:      %ld pages (of memfd segments not mapped whole, pinned by I/O in flight, or being freed)\n",
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
	free_inodes(&ps);
	return EXIT_OK;
}
