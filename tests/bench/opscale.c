// SPDX-License-Identifier: GPL-2.0
/*
 * Does the pool scale with CPUs? W workers (1, 2, 4, as many as there
 * are CPUs), each pinned to its own CPU, get one large page, write a
 * byte in it and free it, in a loop for a few seconds; operations per
 * second, summed. The same with mmap(MAP_HUGETLB) of one huge page,
 * touched (hugetlb allocates and zeroes at that fault) and unmapped.
 * Each of our calls maps a zeroed page: largepage_zerod's if it kept up,
 * else the caller zeroes it; hugetlb always zeroes at the fault.
 */
#include "bench.h"

#define SECS 5

enum { K_OURS, K_HUGETLB, NKINDS };

static const char *const kind_name[] = {
	[K_OURS] = "get_free_large_page",
	[K_HUGETLB] = "mmap_hugetlb_page",
};

static long one_op(int kind, unsigned long len)
{
	char *p;
	long r;

	if (kind == K_OURS) {
		r = lpsys_get(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		if (!LP_OK(r))
			return -1;
		p = LP_PTR(r);
		((volatile char *)p)[len / 2] = 1;
		return lpsys_free(r) ? -1 : 0;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	((volatile char *)p)[len / 2] = 1;
	return munmap(p, len) ? -1 : 0;
}

/* A worker on CPU cpu: wait for the start, loop, report its count. */
static void worker(int kind, unsigned long len, int cpu, int go, int out)
{
	cpu_set_t set;
	double end;
	long n = 0;
	char c;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(1);
	if (read(go, &c, 1) != 1)
		_exit(1);
	end = now_ms() + SECS * 1000.0;
	while (now_ms() < end) {
		if (one_op(kind, len))
			_exit(2);
		n++;
	}
	if (write(out, &n, sizeof(n)) != sizeof(n))
		_exit(1);
	_exit(0);
}

static double run(int kind, unsigned long len, int w)
{
	int go[2], out[2], i;
	pid_t pids[64];
	long n, total = 0;

	if (pipe(go) || pipe(out))
		bench_die("pipe");
	fflush(stdout);
	for (i = 0; i < w; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			bench_die("fork");
		if (pids[i] == 0) {
			close(go[1]);
			close(out[0]);
			worker(kind, len, i, go[0], out[1]);
		}
	}
	close(go[0]);
	close(out[1]);
	for (i = 0; i < w; i++)
		if (write(go[1], "g", 1) != 1)
			bench_die("start");
	for (i = 0; i < w; i++) {
		if (read(out[0], &n, sizeof(n)) != sizeof(n))
			bench_die("a %s worker died (pool or hugetlb pool empty?)",
				  kind_name[kind]);
		total += n;
	}
	close(go[1]);
	close(out[0]);
	for (i = 0; i < w; i++)
		wait_ok(pids[i], "a worker");
	return total / (double)SECS;
}

int main(int argc, char **argv)
{
	unsigned long lp = (unsigned long)meminfo("LargePageSize:") * 1024;
	unsigned long hp = (unsigned long)meminfo("Hugepagesize:") * 1024;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rep, kind, w;

	bench_init("opscale", argc, argv);
	if (cpus > 64)
		cpus = 64;
	for (rep = 0; rep < bench_reps; rep++) {
		for (w = 1; w <= cpus; w *= 2) {
			for (kind = 0; kind < NKINDS; kind++) {
				double ops = run(kind, kind == K_OURS ? lp : hp, w);

				emit(kind_name[kind], w, "ops_per_s", "ops/s",
				     rep, ops);
				emit(kind_name[kind], w, "ops_per_s_per_cpu",
				     "ops/s", rep, ops / w);
			}
		}
	}
	return 0;
}
