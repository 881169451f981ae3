// SPDX-License-Identifier: GPL-2.0
/*
 * Attach cost of an existing 256 MiB segment (LP_BENCH_SEG_MIB): a
 * holder creates it and touches every page, then a second process
 * attaches it and touches every 4 KiB page once. Ours maps the whole
 * segment at attach; SysV shm maps at fault time, one fault per huge
 * page or per 4 KiB page (SysV shm has no fault-around). Each
 * repetition is the mean of ATTACHES rounds of attach, touch, detach.
 */
#include "bench.h"

#define ATTACHES 4

static void second_process(struct seg *s, int rep)
{
	const char *name = seg_name[s->kind];
	struct faults f = faults_now(RUSAGE_SELF);
	double call = 0, touch = 0, detach = 0, t0, t1, t2, t3;
	char *p;
	int i;

	for (i = 0; i < ATTACHES; i++) {
		t0 = now_ms();
		p = seg_attach(s, 0);
		t1 = now_ms();
		touch_pages(p, seg_len);
		t2 = now_ms();
		seg_detach(s, p);
		t3 = now_ms();
		call += t1 - t0;
		touch += t2 - t0;
		detach += t3 - t2;
	}
	f = faults_since(f, RUSAGE_SELF);
	emit(name, 0, "attach_call_ms", "ms", rep, call / ATTACHES);
	emit(name, 0, "attach_touch_ms", "ms", rep, touch / ATTACHES);
	emit(name, 0, "detach_call_ms", "ms", rep, detach / ATTACHES);
	emit(name, 0, "minflt", "count", rep, (double)f.minflt / ATTACHES);
	emit(name, 0, "majflt", "count", rep, (double)f.majflt / ATTACHES);
}

int main(int argc, char **argv)
{
	static const enum seg_kind kinds[] = { SEG_OURS, SEG_HUGETLB, SEG_SHM4K };
	struct holder h;
	struct seg s;
	unsigned int i;
	pid_t pid;
	int rep;

	bench_init("attach", argc, argv);
	for (rep = 0; rep < bench_reps; rep++) {
		for (i = 0; i < ARRAY_SIZE(kinds); i++) {
			if (!bench_kind_wanted(kinds[i]))
				continue;
			seg_create(&s, kinds[i], next_key());
			holder_start(&h, &s);
			fflush(stdout);
			pid = fork();
			if (pid < 0)
				bench_die("fork");
			if (pid == 0) {
				second_process(&s, rep);
				fflush(stdout);
				_exit(0);
			}
			wait_ok(pid, "the attaching process");
			holder_stop(&h);
			seg_destroy(&s);
		}
	}
	return 0;
}
