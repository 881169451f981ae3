// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl status [--json]: the page size, the pool's counts, the keyed
 * segments and the cgroups that hold or limit large pages.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"

static void print_segment(const struct segment *g, long psize)
{
	out_object(NULL);
	out_long("key", "%10lld", g->key);
	out_size("size", " %10s", g->size);
	out_long("pages", " %6lld", psize > 0 ? (long long)(g->size / psize) : 0);
	out_long("mode", "  %04llo", g->mode);
	out_long("uid", " %6lld", g->uid);
	out_long("gid", " %6lld", g->gid);
	out_long("cuid", " %6lld", g->cuid);
	out_long("cgid", " %6lld", g->cgid);
	out_long("nattch", " %7lld\n", g->nattch);
	if (g->cpid >= 0) {
		out_long("cpid", NULL, g->cpid);
		out_long("lpid", NULL, g->lpid);
		out_long("atime", NULL, g->atime);
		out_long("dtime", NULL, g->dtime);
		out_long("ctime", NULL, g->ctime);
	}
	if (g->ino >= 0)
		out_long("ino", NULL, g->ino);
	out_end();
}

static void print_segments(long psize)
{
	struct segment *segs;
	char why[128];
	int i, n = read_segments(&segs);

	if (n < 0) {
		if (errno == ENOENT)
			snprintf(why, sizeof(why), "not listed (this kernel has no %s)",
				 LP_SEGMENTS_PATH);
		else
			snprintf(why, sizeof(why), "cannot read %s: %s",
				 LP_SEGMENTS_PATH, strerror(errno));
		out_null("segments", "Keyed segments:  %s\n", why);
		return;
	}
	if (!n) {
		out_text("Keyed segments:  none\n");
	} else {
		out_text("Keyed segments:  %d\n", n);
		out_text("%10s %10s %6s %5s %6s %6s %6s %6s %7s\n", "KEY",
			 "SIZE", "PAGES", "MODE", "UID", "GID", "CUID", "CGID",
			 "NATTCH");
	}
	out_array("segments");
	for (i = 0; i < n; i++)
		print_segment(&segs[i], psize);
	out_end();
	free(segs);
}

static void print_cgroup(const struct lp_cgroup *cg, long psize)
{
	out_object(NULL);
	out_str("path", "%-40s", cg->path);
	out_long("pages", " %8lld", cg->current);
	out_size(NULL, " %10s", (unsigned long long)cg->current * psize);
	if (cg->max < 0)
		out_null("max", " %8s", "max");
	else
		out_long("max", " %8lld", cg->max);
	out_long("refused", " %8lld\n", cg->refused);
	out_end();
}

static void print_cgroups(long psize)
{
	struct lp_cgroup *cgs;
	long i, n = read_cgroups(&cgs);
	int empty;

	if (n < 0) {
		out_null("cgroups", "Cgroups:         %s\n",
			 "no limits (no cgroup2 with the misc controller)");
		return;
	}
	empty = misc_pool_empty();
	if (empty) {
		out_text("Cgroups:         %s\n", MISC_EMPTY_TEXT);
	} else if (!n) {
		out_text("Cgroups:         none holds or limits large pages (misc controller)\n");
	} else {
		out_text("Cgroups:         %ld (misc controller, resource largepage)\n", n);
		out_text("%-40s %8s %10s %8s %8s\n", "CGROUP", "PAGES", "SIZE",
			 "MAX", "REFUSED");
	}
	out_array("cgroups");
	/* The pool empty, the text has said so instead of a table. */
	for (i = 0; i < n && (!empty || out_json()); i++)
		print_cgroup(&cgs[i], psize);
	out_end();
}

/* The pool's counts; st from one snapshot when have_stat. */
static void print_pool(long psize, long total, long nfree,
		       const struct pool_stat *st, int have_stat)
{
	unsigned long long bytes = psize;
	int pse = cpu_has_pse();

	out_long("page_size", NULL, psize);
	out_long(NULL, "Large page size: %lld kB", psize / 1024);
	out_size(NULL, " (%s)\n", bytes);
	out_long("total", "Pool total:      %lld pages", total);
	out_size(NULL, " (%s)\n", total * bytes);
	out_long("free", "Pool free:       %lld pages", nfree);
	out_size(NULL, " (%s)\n", nfree * bytes);
	/* JSON has in_use here, text after the split of the free pages. */
	out_long("in_use", NULL, total - nfree);
	if (have_stat && st->free_zeroed >= 0 && st->free_unzeroed >= 0) {
		out_long("free_zeroed", "Free, zeroed:    %lld pages\n",
			 st->free_zeroed);
		out_long("free_unzeroed", st->free_unzeroed ?
			 "Free, to zero:   %lld pages (largepage_zerod is on them)\n" :
			 "Free, to zero:   %lld pages\n", st->free_unzeroed);
	}
	/* A kernel with copy-on-write heaps: free pages no get may take. */
	if (have_stat && st->reserved >= 0)
		out_long("reserved", "Free, reserved:  %lld pages (for the copies a heap's fork may need)\n",
			 st->reserved);
	out_long(NULL, "Pool in use:     %lld pages", total - nfree);
	out_size(NULL, " (%s)\n", (total - nfree) * bytes);
	if (have_stat && st->lowmem >= 0)
		out_long("lowmem", "Pool in lowmem:  %lld pages\n", st->lowmem);
	out_bool("pse", pse ? NULL :
		 "Note: this CPU has no large pages (no PSE): the pool stays empty.\n",
		 pse);
}

int cmd_status(int argc, char **argv)
{
	struct pool_stat st;
	long psize, total, nfree;
	int rc, have_stat, json;

	rc = json_only(argc, argv, &json);
	if (rc >= 0)
		return rc;
	psize = page_size_or_explain();
	if (psize < 0 || pool_or_explain(&total, &nfree))
		return EXIT_FAIL;
	/* One snapshot, when the kernel gives one: the lines add up. */
	have_stat = !pool_stat(&st);
	if (have_stat) {
		total = st.total;
		nfree = st.free;
	}
	out_start(json);
	out_object(NULL);
	print_pool(psize, total, nfree, &st, have_stat);
	print_segments(psize);
	print_cgroups(psize);
	out_end();
	return EXIT_OK;
}
