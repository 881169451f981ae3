// SPDX-License-Identifier: GPL-2.0
/*
 * heapfork: the helper of heap-test.sh (dynamic: it runs under lpctl run
 * --heap, whose LD_PRELOAD a static program would ignore).
 *
 *   heapfork threads   threads allocate and free while a second thread
 *                      forks; parent and child each allocate and write
 *                      after the fork and see only their own writes.
 *                      Exit 0 when all held, and says whether the
 *                      blocks were in the large-page heap.
 *   heapfork cost MiB  fork() of a process holding a MiB heap segment
 *                      (LP_COPY_ON_FORK): shared until written, with the
 *                      pool's pages reserved, and (the pool taken) copied
 *                      into normal pages, against one holding as much
 *                      normal memory: milliseconds, median of 9.
 *   heapfork first     the program's first malloc(): exit 0 if the
 *                      block is in the large-page heap (mimalloc's first
 *                      segment is the region, not normal pages).
 *   heapfork hold N W    a heap segment of N large pages, written, then
 *                      fork(): the child writes (copies) the first W,
 *                      both print "holding PID" and hold until SIGTERM
 *                      (lpctl-test.sh's lpctl ps of a forked heap).
 */
#include <asm/unistd_32.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<linux/largepage.h>)
#include <linux/largepage.h>
#endif
#include "maps.h"
#ifndef LP_COPY_ON_FORK
#define LP_COPY_ON_FORK 0x200000
#endif

#define BLOCK	(4 << 20)

/* Is p inside a large-page mapping (/proc/self/maps names it)? */
static int in_large(const void *p)
{
	unsigned long a = (unsigned long)p;
	char line[512];

	return lp_maps_find(0, a, a + 1, line, sizeof(line)) == 1 &&
	       strstr(line, "largepage");
}

static int filled(const unsigned char *p, size_t n, unsigned char c)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

static volatile int stop;

static void *churn(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!stop) {
		size_t sz = 16 + (n * 7919) % 65536;
		unsigned char *p = malloc(sz);

		if (!p)
			abort();
		memset(p, (int)n, sz);
		if (!filled(p, sz, (unsigned char)n))
			abort();
		free(p);
		n++;
	}
	return NULL;
}

struct forker {
	unsigned char *a;
	int child_ok, parent_ok, large;
};

static void *fork_thread(void *arg)
{
	struct forker *f = arg;
	int up[2], down[2], st;
	unsigned char *b;
	char c;
	pid_t pid;

	if (pipe(up) || pipe(down))
		return NULL;
	pid = fork();
	if (pid == 0) {
		/* The child: the parent's data as at the fork, its own after. */
		int ok = filled(f->a, BLOCK, 'P');

		b = malloc(BLOCK);
		ok = ok && b;
		if (b)
			memset(b, 'C', BLOCK);
		memset(f->a, 'c', BLOCK);
		ok = ok && write(up[1], "1", 1) == 1 && read(down[0], &c, 1) == 1;
		ok = ok && filled(f->a, BLOCK, 'c') && filled(b, BLOCK, 'C');
		_exit(ok ? 0 : 1);
	}
	if (pid < 0 || read(up[0], &c, 1) != 1)
		return NULL;
	f->parent_ok = filled(f->a, BLOCK, 'P');
	b = malloc(BLOCK);
	if (b)
		memset(b, 'Q', BLOCK);
	memset(f->a, 'p', BLOCK);
	if (write(down[1], "1", 1) != 1 || waitpid(pid, &st, 0) != pid)
		return NULL;
	f->child_ok = WIFEXITED(st) && !WEXITSTATUS(st);
	f->parent_ok = f->parent_ok && b && filled(b, BLOCK, 'Q') &&
		       filled(f->a, BLOCK, 'p');
	f->large = in_large(f->a) && b && in_large(b);
	free(b);
	return NULL;
}

static int threads(void)
{
	struct forker f = { 0 };
	pthread_t t[2], ft;
	int i;

	f.a = malloc(BLOCK);
	if (!f.a)
		return 1;
	memset(f.a, 'P', BLOCK);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, churn, NULL))
			return 1;
	if (pthread_create(&ft, NULL, fork_thread, &f))
		return 1;
	pthread_join(ft, NULL);
	stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("child %s, parent %s, blocks %s\n",
	       f.child_ok ? "ok" : "BAD", f.parent_ok ? "ok" : "BAD",
	       f.large ? "in the large-page heap" : "in normal pages");
	return !(f.child_ok && f.parent_ok);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median fork() + exit + wait of 9, ms; -1 if a fork failed. */
static double fork_ms(void)
{
	double t[9];
	int i, st;

	for (i = 0; i < 9; i++) {
		double t0 = now_ms();
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return -1;
		t[i] = now_ms() - t0;
	}
	qsort(t, 9, sizeof(t[0]), cmp_double);
	return t[4];
}

static int cost(unsigned long mib)
{
	unsigned long len = mib << 20, free_pages = 0, ps;
	long r, rest = 0;
	char line[128];
	FILE *f;
	void *m;

	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "LargePages_Free: %lu", &free_pages);
		if (sscanf(line, "LargePageSize: %lu", &ps) == 1)
			ps <<= 10;
	}
	if (f)
		fclose(f);
	printf("baseline %.2f ms\n", fork_ms());
	m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	memset(m, 1, len);
	printf("%lu MiB of normal memory (copy-on-write) %.2f ms\n", mib,
	       fork_ms());
	munmap(m, len);
	r = syscall(__NR_get_large_pages, 0, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | LP_COPY_ON_FORK);
	if (r == -1) {
		perror("get_large_pages");
		return 1;
	}
	memset((void *)r, 1, len);
	printf("%lu MiB heap segment, shared until written %.2f ms\n", mib,
	       fork_ms());
	free_pages -= len / ps;
	if (free_pages)
		rest = syscall(__NR_get_large_pages, 0, free_pages * ps,
			       PROT_READ | PROT_WRITE, MAP_PRIVATE);
	if (rest == -1) {
		perror("get_large_pages (the rest of the pool)");
		return 1;
	}
	printf("%lu MiB heap segment, copied into normal pages %.2f ms\n", mib,
	       fork_ms());
	if (rest)
		syscall(__NR_free_large_pages, rest);
	syscall(__NR_free_large_pages, r);
	return 0;
}

static void on_term(int sig)
{
	(void)sig;
}

/* Hold a heap of n pages, its first w copied by a forked child. */
static int hold(unsigned long n, unsigned long w)
{
	long lp = 0, r;
	char line[128];
	int ready[2], st;
	FILE *f = fopen("/proc/meminfo", "r");
	pid_t pid;
	char c;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "LargePageSize: %ld", &lp) == 1)
			lp <<= 10;
	if (f)
		fclose(f);
	r = syscall(__NR_get_large_pages, 0, n * lp, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | LP_COPY_ON_FORK);
	if (!lp || w > n || r == -1 || pipe(ready)) {
		perror("hold: get_large_pages");
		return 1;
	}
	memset((void *)r, 1, n * lp);
	signal(SIGTERM, on_term);
	pid = fork();
	if (pid == 0) {
		memset((void *)r, 2, w * lp);
		printf("holding %d\n", getpid());
		fflush(stdout);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 0)
		return 1;
	printf("holding %d\n", getpid());
	fflush(stdout);
	pause();
	kill(pid, SIGTERM);
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "first")) {
		void *p = malloc(64);

		printf("first block %p in %s\n", p,
		       in_large(p) ? "the large-page heap" : "normal pages");
		return in_large(p) ? 0 : 1;
	}
	if (argc == 2 && !strcmp(argv[1], "threads"))
		return threads();
	if (argc == 3 && !strcmp(argv[1], "cost"))
		return cost(strtoul(argv[2], NULL, 10));
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return hold(strtoul(argv[2], NULL, 10),
			    strtoul(argv[3], NULL, 10));
	fprintf(stderr, "usage: heapfork threads | first | cost MIB | hold N W\n");
	return 2;
}
