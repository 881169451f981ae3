// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process with a 128 MiB heap region of which it wrote
 * 16 MiB: "heap" is get_large_pages(MAP_PRIVATE | LP_COPY_ON_FORK), as
 * lpctl run --heap gives mimalloc; "normal" is the same region in
 * private anonymous memory. The two kinds alternate within each
 * repetition, so that they share the machine's state.
 *   fork_exit_wait_ms  fork(), the child's _exit(), the parent's waitpid()
 *   first_write_ms     after fork(), with the child waiting: the parent's
 *                      first write of one large page's bytes (a copy of
 *                      one large page, or the copy-on-write of its 4 KiB
 *                      pages); the child then exits
 * Each value is the mean of FORKS forks.
 */
#include <linux/largepage.h>
#include "bench.h"

#define FORKS 8
#define REGION (128 * MiB)
#define WRITTEN (16 * MiB)

enum { K_NORMAL, K_HEAP };
static const char *const kind_name[] = { "normal", "heap" };

static char *region(int kind)
{
	char *p;
	long r;

	if (kind == K_NORMAL) {
		p = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			bench_die("mmap %lu bytes", REGION);
		bench_no_thp(p, REGION);
	} else {
		r = lpsys_get(0, REGION, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | LP_COPY_ON_FORK);
		if (!LP_OK(r))
			bench_die("get_large_pages COPY_ON_FORK %lu bytes", REGION);
		p = LP_PTR(r);
	}
	memset(p, 0x5a, WRITTEN);
	return p;
}

static void region_free(int kind, char *p)
{
	if (kind == K_NORMAL ? munmap(p, REGION) : lpsys_free((long)p))
		bench_die("freeing the %s region", kind_name[kind]);
}

/* fork() + _exit() + waitpid(): ms, the mean of FORKS. */
static double fork_exit_wait(void)
{
	double t0 = now_ms();
	pid_t pid;
	int i;

	for (i = 0; i < FORKS; i++) {
		pid = fork();
		if (pid < 0)
			bench_die("fork");
		if (pid == 0)
			_exit(0);
		wait_ok(pid, "the child");
	}
	return (now_ms() - t0) / FORKS;
}

/* The parent's first write of lp bytes after fork(): ms, mean of FORKS. */
static double first_write(char *p, unsigned long lp)
{
	double sum = 0, t0;
	int go[2], i;
	pid_t pid;
	char c;

	for (i = 0; i < FORKS; i++) {
		if (pipe(go))
			bench_die("pipe");
		pid = fork();
		if (pid < 0)
			bench_die("fork");
		if (pid == 0) {
			close(go[1]);
			while (read(go[0], &c, 1) > 0)
				;
			_exit(0);
		}
		close(go[0]);
		t0 = now_ms();
		memset(p + (i % (WRITTEN / lp)) * lp, i, lp);
		sum += now_ms() - t0;
		close(go[1]);
		wait_ok(pid, "the waiting child");
	}
	return sum / FORKS;
}

int main(int argc, char **argv)
{
	unsigned long lp = meminfo("LargePageSize:") * 1024;
	int rep, k, kind;
	char *p;

	bench_init("heapfork", argc, argv);
	for (rep = 1; rep <= bench_reps; rep++) {
		for (k = 0; k < 2; k++) {
			/* Alternate which kind goes first. */
			kind = (rep + k) % 2;
			p = region(kind);
			fork_exit_wait();	/* warm-up */
			emit(kind_name[kind], 0, "fork_exit_wait_ms", "ms", rep,
			     fork_exit_wait());
			emit(kind_name[kind], 0, "first_write_ms", "ms", rep,
			     first_write(p, lp));
			region_free(kind, p);
		}
	}
	return 0;
}
