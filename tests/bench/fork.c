// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process that holds a 256 MiB shared segment (the scale
 * run: LP_BENCH_SEG_MIB), attached and every page touched. fork_call_ms
 * is fork() as the parent sees it; fork_exit_wait_ms adds the child's
 * _exit and the parent's waitpid. Each repetition is the mean of FORKS
 * forks after one warm-up fork. Faults: the parent's (copy-on-write of
 * its own data afterwards) and the child's. exit_ms is the exit of a
 * child that uses the segment (it touched every page, so hugetlbfs has
 * its entries too), from the parent's word to its waitpid(): the unmap
 * a database backend's exit costs. "none" holds no segment.
 */
#include "bench.h"

#define FORKS 8

/* One child that touches every page of @p, then exits when told: ms. */
static double exit_once(char *p)
{
	int ready[2], go[2];
	double t0;
	pid_t pid;
	char c;

	if (pipe(ready) || pipe(go))
		bench_die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0) {
		if (p)
			touch_pages(p, seg_len);
		close(go[1]);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) != 1)
		bench_die("the exiting child died");
	close(ready[0]);
	t0 = now_ms();
	close(go[1]);
	wait_ok(pid, "the exiting child");
	return now_ms() - t0;
}

static void holder_forks(struct seg *s, int rep)
{
	const char *name = seg_name[s->kind];
	struct faults f, fc;
	double call = 0, total = 0, t0, t1, t2;
	char *p = NULL;
	pid_t pid;
	int i;

	if (s->kind != SEG_NONE) {
		p = seg_attach(s, 1);
		touch_pages(p, seg_len);
	}
	f = faults_now(RUSAGE_SELF);
	fc = faults_now(RUSAGE_CHILDREN);
	for (i = -1; i < FORKS; i++) {
		if (i == 0) {
			f = faults_now(RUSAGE_SELF);
			fc = faults_now(RUSAGE_CHILDREN);
		}
		t0 = now_ms();
		pid = fork();
		if (pid < 0)
			bench_die("fork");
		if (pid == 0)
			_exit(0);
		t1 = now_ms();
		wait_ok(pid, "the forked child");
		t2 = now_ms();
		if (i >= 0) {
			call += t1 - t0;
			total += t2 - t0;
		}
	}
	f = faults_since(f, RUSAGE_SELF);
	fc = faults_since(fc, RUSAGE_CHILDREN);
	emit(name, 0, "fork_call_ms", "ms", rep, call / FORKS);
	emit(name, 0, "fork_exit_wait_ms", "ms", rep, total / FORKS);
	emit(name, 0, "minflt", "count", rep,
	     (double)(f.minflt + fc.minflt) / FORKS);
	emit(name, 0, "majflt", "count", rep,
	     (double)(f.majflt + fc.majflt) / FORKS);
	total = 0;
	for (i = 0; i < FORKS; i++)
		total += exit_once(p);
	emit(name, 0, "exit_ms", "ms", rep, total / FORKS);
	if (p)
		seg_detach(s, p);
}

int main(int argc, char **argv)
{
	static const enum seg_kind kinds[] = {
		SEG_NONE, SEG_OURS, SEG_HUGETLB, SEG_SHM4K
	};
	struct seg s;
	unsigned int i;
	pid_t pid;
	int rep;

	bench_init("fork", argc, argv);
	for (rep = 0; rep < bench_reps; rep++) {
		for (i = 0; i < ARRAY_SIZE(kinds); i++) {
			if (!bench_kind_wanted(kinds[i]))
				continue;
			seg_create(&s, kinds[i], next_key());
			fflush(stdout);
			/* A fresh process, so every kind starts alike. */
			pid = fork();
			if (pid < 0)
				bench_die("fork");
			if (pid == 0) {
				holder_forks(&s, rep);
				fflush(stdout);
				_exit(0);
			}
			wait_ok(pid, "the holding process");
			seg_destroy(&s);
		}
	}
	return 0;
}
