// SPDX-License-Identifier: GPL-2.0
/*
 * Page-table memory of a shared segment, the Oracle SGA case: K processes
 * each attach the same existing 256 MiB segment (LP_BENCH_SEG_MIB in the
 * scale run) and touch every 4 KiB page; while all K hold it, PageTables
 * in /proc/meminfo has grown by some amount, from which the growth for K
 * processes that attach nothing is subtracted.
 *
 * The processes are added a batch at a time (1, then 1 more, 2 more, ...)
 * and PageTables is read at each K: a state with K processes attached is
 * the same however they got there, and it halves the page faults.
 *
 * Ours maps with PSE entries in the page directory (nopae) or 2 MiB PMD
 * entries (pae, whose PMD pages exist from fork on): ~0 per process.
 * 4 KiB shm needs one PTE page per 4 MiB (nopae) or 2 MiB (pae) mapped:
 * 256 or 512 KiB per process for 256 MiB.
 */
#include "bench.h"

/* K up to 32, or up to LP_BENCH_MAX_K (the scale run's 64). */
static const int ks[] = { 1, 2, 4, 8, 16, 32, 64 };
#define MAX_NK (ARRAY_SIZE(ks))
#define MAX_K 64
static unsigned int nk = MAX_NK - 1;	/* ks[] measured */

struct result {
	long growth[MAX_NK];		/* PageTables growth at ks[i], kB */
	struct faults faults[MAX_NK];	/* summed over the ks[i] processes */
};

static void attacher(struct seg *s, int ready, int rel)
{
	struct faults f = faults_now(RUSAGE_SELF);
	char c;

	if (s->kind != SEG_NONE)
		touch_pages(seg_attach(s, 0), seg_len);
	f = faults_since(f, RUSAGE_SELF);
	if (write(ready, &f, sizeof(f)) != sizeof(f))
		_exit(1);
	while (read(rel, &c, 1) > 0)
		;
	_exit(0);
}

static void run_kind(enum seg_kind kind, struct result *r)
{
	struct faults sum = { 0, 0 };
	int ready[2], rel[2], n = 0;
	pid_t pids[MAX_K];
	struct holder h;
	struct seg s;
	unsigned int i;
	long pt0;

	seg_create(&s, kind, next_key());
	holder_start(&h, &s);
	if (pipe(ready) || pipe(rel))
		bench_die("pipe");
	fflush(stdout);
	pt0 = pagetables_settled_kib();
	for (i = 0; i < nk; i++) {
		int first = n;

		for (; n < ks[i]; n++) {
			pids[n] = fork();
			if (pids[n] < 0)
				bench_die("fork");
			if (pids[n] == 0) {
				close(ready[0]);
				close(rel[1]);
				attacher(&s, ready[1], rel[0]);
			}
		}
		for (; first < n; first++) {
			struct faults f;

			if (read(ready[0], &f, sizeof(f)) != sizeof(f))
				bench_die("a process attaching %s died",
					  seg_name[kind]);
			sum.minflt += f.minflt;
			sum.majflt += f.majflt;
		}
		r->growth[i] = pagetables_kib() - pt0;
		r->faults[i] = sum;
	}
	close(ready[0]);
	close(ready[1]);
	close(rel[0]);
	close(rel[1]);
	for (i = 0; i < (unsigned int)n; i++)
		wait_ok(pids[i], "an attaching process");
	holder_stop(&h);
	seg_destroy(&s);
}

int main(int argc, char **argv)
{
	static const enum seg_kind kinds[] = { SEG_OURS, SEG_HUGETLB, SEG_SHM4K };
	struct result idle, r;
	unsigned int i, j;
	int rep;

	bench_init("pagetables", argc, argv);
	if (getenv("LP_BENCH_MAX_K")) {
		int max_k = atoi(getenv("LP_BENCH_MAX_K"));

		for (nk = 0; nk < MAX_NK && ks[nk] <= max_k; nk++)
			;
		if (!nk)
			bench_die("bad LP_BENCH_MAX_K");
	}
	for (rep = 0; rep < bench_reps; rep++) {
		run_kind(SEG_NONE, &idle);
		for (i = 0; i < nk; i++)
			emit("idle", ks[i], "pagetables_growth", "KiB", rep,
			     idle.growth[i]);
		for (j = 0; j < ARRAY_SIZE(kinds); j++) {
			const char *name = seg_name[kinds[j]];

			if (!bench_kind_wanted(kinds[j]))
				continue;
			run_kind(kinds[j], &r);
			for (i = 0; i < nk; i++) {
				int k = ks[i];
				long over = r.growth[i] - idle.growth[i];

				emit(name, k, "pagetables_growth", "KiB", rep,
				     r.growth[i]);
				emit(name, k, "pagetables_over_idle", "KiB", rep,
				     over);
				emit(name, k, "over_idle_per_process", "KiB",
				     rep, (double)over / k);
				emit(name, k, "minflt_per_process", "count", rep,
				     (double)r.faults[i].minflt / k);
				emit(name, k, "majflt_per_process", "count", rep,
				     (double)r.faults[i].majflt / k);
			}
		}
	}
	return 0;
}
