// SPDX-License-Identifier: GPL-2.0
/*
 * The get_large_pages() call alone, for 256 MiB and 1 GiB (when the pool
 * holds it): warm, every free page zeroed by largepage_zerod beforehand,
 * and cold, right after every free page was taken and freed, when the
 * call zeroes what the thread has not reached. Nothing is hidden: the
 * CPU time the thread spends zeroing a freed GiB (its utime + stime
 * from /proc) and the wall time until it is done are reported too.
 * Timings of mmap(MAP_HUGETLB) are in setup: it zeroes at first touch
 * instead.
 */
#include <dirent.h>
#include "bench.h"

/* The pid of largepage_zerod, or 0. */
static pid_t zerod_pid(void)
{
	char path[300], comm[32];
	struct dirent *d;
	pid_t pid = 0;
	DIR *dir = opendir("/proc");
	FILE *f;

	if (!dir)
		bench_die("opendir /proc");
	while (!pid && (d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strcmp(comm, "largepage_zerod\n"))
			pid = atoi(d->d_name);
		fclose(f);
	}
	closedir(dir);
	return pid;
}

/* utime + stime of pid, in ms. */
static double cpu_ms(pid_t pid)
{
	unsigned long ut, st;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f))
		bench_die("read %s", path);
	fclose(f);
	/* After "pid (comm) ", utime and stime are fields 14 and 15. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		bench_die("parse %s", path);
	return (ut + st) * 1000.0 / sysconf(_SC_CLK_TCK);
}

static long get_or_die(unsigned long len)
{
	long r = lpsys_get(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	if (!LP_OK(r))
		bench_die("get_large_pages(%lu MiB)", len / MiB);
	return r;
}

static void free_or_die(long r)
{
	if (lpsys_free(r))
		bench_die("free_large_pages");
}

/* One timed get_large_pages(len), reported as WHEN_<len>MiB, and a free. */
static void time_get(const char *when, unsigned long len, int rep)
{
	char kind[32];
	double t0;
	long r;

	snprintf(kind, sizeof(kind), "%s_%luMiB", when, len / MiB);
	t0 = now_ms();
	r = get_or_die(len);
	emit(kind, 0, "get_call_ms", "ms", rep, now_ms() - t0);
	free_or_die(r);
}

int main(int argc, char **argv)
{
	static const unsigned long sizes[] = { 256 * MiB, 1024 * MiB };
	unsigned long lp, pool_bytes;
	double c0, wall;
	unsigned int i;
	pid_t zerod;
	long r;
	int rep;

	bench_init("getcall", argc, argv);
	lp = (unsigned long)meminfo("LargePageSize:") * 1024;
	pool_bytes = (unsigned long)meminfo("LargePages_Total:") * lp;
	zerod = zerod_pid();
	if (!zerod || zeroing_count("free_zeroed_pages") < 0)
		bench_die("no largepage_zerod or /sys/kernel/mm/largepage: a kernel without background zeroing");

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		unsigned long len = sizes[i];
		const double per_gib = 1024.0 * MiB / len;
		char kind[32];

		if (len > pool_bytes) {
			printf("lp-bench: getcall: the pool (%lu MiB) cannot hold %lu MiB: skipped\n",
			       pool_bytes / MiB, len / MiB);
			continue;
		}
		for (rep = 0; rep < bench_reps; rep++) {
			/* Warm: every free page zeroed. */
			zeroing_settle_ms();
			time_get("warm", len, rep);
			/* Cold: every free page just freed, unzeroed. */
			lp_dirty_pool();
			time_get("cold", len, rep);

			/* What zeroing those pages costs the thread. */
			snprintf(kind, sizeof(kind), "zerod_%luMiB", len / MiB);
			zeroing_settle_ms();
			r = get_or_die(len);
			free_or_die(r);
			c0 = cpu_ms(zerod);
			wall = zeroing_settle_ms();
			emit(kind, 0, "zerod_cpu_ms_per_GiB", "ms", rep,
			     (cpu_ms(zerod) - c0) * per_gib);
			emit(kind, 0, "zerod_wall_ms_per_GiB", "ms", rep,
			     wall * per_gib);
		}
	}
	return 0;
}
