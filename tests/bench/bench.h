/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the large-page benchmarks: the system calls, the three
 * kinds of shared segment (ours, SHM_HUGETLB, 4 KiB SysV shm), timing
 * with CLOCK_MONOTONIC, fault counts from getrusage(), and the output.
 *
 * Every measurement is one line on stdout, which the host greps from the
 * serial console:
 *	LP-BENCH,test,kind,k,metric,unit,rep,value
 * k is the process count of the page-table test and empty elsewhere.
 * Errors are "LP-BENCH-ERROR,test,text" and make the program exit 1.
 */
#ifndef LP_BENCH_H
#define LP_BENCH_H

#include <asm/unistd_32.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lpsys.h"
#include "../meminfo.h"

#ifndef __NR_get_large_pages
#error "the uapi headers are not those of the patched kernel"
#endif

#ifndef SHM_HUGETLB
#define SHM_HUGETLB 04000
#endif
#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MiB (1024UL * 1024)
#define SEG_LEN (256 * MiB)	/* every benchmark works on 256 MiB */
#define PAGE_4K 4096UL
#define BENCH_KEY 0x4c500000	/* share_large_pages keys start here */

static const char *bench_test = "?";
static int bench_reps = 3;
/*
 * The shared segment of pagetables, attach and fork: SEG_LEN, or
 * LP_BENCH_SEG_MIB (the scale run's 2 GiB). LP_BENCH_KINDS, a comma list
 * of seg_name[]s, limits the kinds they measure.
 */
static unsigned long seg_len = SEG_LEN;
static const char *bench_kinds;

static void __attribute__((noreturn, format(printf, 1, 2)))
bench_die(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("LP-BENCH-ERROR,%s,%s (errno %d: %s)\n", bench_test, buf,
	       errno, strerror(errno));
	fflush(stdout);
	exit(1);
}

/*
 * 4 KiB pages only: no transparent huge page in a baseline row. A kernel
 * without THP (the nopae test kernel) has none to refuse and says
 * EINVAL, which is what we asked for.
 */
static inline void bench_no_thp(void *p, size_t len)
{
	if (madvise(p, len, MADV_NOHUGEPAGE) && errno != EINVAL)
		bench_die("madvise MADV_NOHUGEPAGE");
}

/*
 * A private SEG_LEN mapping of large pages, of hugetlbfs pages, or of 4
 * KiB pages (THP off): the benchmark dies if it cannot have it.
 */
static inline char *bench_map_ours(void)
{
	long r = lpsys_get(0, SEG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	if (!LP_OK(r))
		bench_die("get_large_pages");
	return LP_PTR(r);
}

static inline char *bench_map_hugetlb(void)
{
	char *p = mmap(NULL, SEG_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

	if (p == MAP_FAILED)
		bench_die("mmap MAP_HUGETLB");
	return p;
}

static inline char *bench_map_4k(void)
{
	char *p = mmap(NULL, SEG_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bench_die("mmap 4k");
	bench_no_thp(p, SEG_LEN);
	return p;
}

/* Common start of every main(): line-buffered stdout, the repetitions. */
static inline void bench_init(const char *test, int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_test = test;
	if (getenv("LP_BENCH_SEG_MIB"))
		seg_len = strtoul(getenv("LP_BENCH_SEG_MIB"), NULL, 10) * MiB;
	if (!seg_len)
		bench_die("bad LP_BENCH_SEG_MIB");
	bench_kinds = getenv("LP_BENCH_KINDS");
	if (argc > 1)
		bench_reps = atoi(argv[1]);
	if (bench_reps < 1)
		bench_reps = 1;
}

static inline void emit(const char *kind, int k, const char *metric,
			const char *unit, int rep, double value)
{
	char kbuf[16] = "";

	if (k > 0)
		snprintf(kbuf, sizeof(kbuf), "%d", k);
	printf("LP-BENCH,%s,%s,%s,%s,%s,%d,%.4f\n", bench_test, kind, kbuf,
	       metric, unit, rep, value);
}

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct faults {
	long minflt, majflt;
};

static inline struct faults faults_now(int who)
{
	struct rusage ru;
	struct faults f;

	getrusage(who, &ru);
	f.minflt = ru.ru_minflt;
	f.majflt = ru.ru_majflt;
	return f;
}

static inline struct faults faults_since(struct faults a, int who)
{
	struct faults b = faults_now(who);

	b.minflt -= a.minflt;
	b.majflt -= a.majflt;
	return b;
}

/*
 * PageTables: in kB, exact. The counter is a vmstat with per-CPU deltas
 * folded only every second or past a threshold (tens of pages a CPU):
 * reading /proc/sys/vm/stat_refresh folds them all first.
 */
static inline long pagetables_kib(void)
{
	char buf[16];
	int fd = open("/proc/sys/vm/stat_refresh", O_RDONLY);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf)) < 0)
			bench_die("read /proc/sys/vm/stat_refresh");
		close(fd);
	}
	return meminfo("PageTables:");
}

/*
 * PageTables with nothing left to free. A process that exited keeps its
 * page directory (with PAE, its PMD pages) while a CPU that ran it still
 * borrows its mm as the lazy TLB context, which can last until that CPU
 * next runs a user task: maybe one forked inside the measurement. Run on
 * every CPU in turn first so that each drops such a borrowed mm.
 */
static inline long pagetables_settled_kib(void)
{
	cpu_set_t all, one;
	int cpu;

	if (sched_getaffinity(0, sizeof(all), &all))
		bench_die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			bench_die("sched_setaffinity %d", cpu);
		usleep(1000);
	}
	if (sched_setaffinity(0, sizeof(all), &all))
		bench_die("sched_setaffinity");
	return pagetables_kib();
}

/* A count from /sys/kernel/mm/largepage, or -1 (a kernel without it). */
static inline long zeroing_count(const char *name)
{
	char path[96], buf[32] = "";
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/mm/largepage/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		buf[0] = '\0';
	close(fd);
	return buf[0] ? atol(buf) : -1;
}

/*
 * Wait until largepage_zerod has zeroed every free large page (the warm
 * case: a request then maps zeroed pages). Returns the ms it took.
 */
static inline double zeroing_settle_ms(void)
{
	double t0 = now_ms();
	int i;

	for (i = 0; zeroing_count("free_unzeroed_pages") != 0; i++) {
		if (i == 120000)
			bench_die("free large pages still unzeroed after 2 min");
		usleep(1000);
	}
	return now_ms() - t0;
}

/* The cold case: no free page zeroed (lp_dirty_free_pages()), or die. */
static inline void lp_dirty_pool(void)
{
	if (lp_dirty_free_pages())
		bench_die("get and free of every free large page");
}

/* Write one byte in every 4 KiB page: the first touch of each page. */
static inline void touch_pages(char *p, unsigned long len)
{
	unsigned long off;

	for (off = 0; off < len; off += PAGE_4K)
		((volatile char *)p)[off] = 1;
}

/* The kinds of shared segment. */
enum seg_kind { SEG_OURS, SEG_HUGETLB, SEG_SHM4K, SEG_NONE };

static const char *const seg_name[] = {
	[SEG_OURS] = "share_large_pages",
	[SEG_HUGETLB] = "shm_hugetlb",
	[SEG_SHM4K] = "shm_4k",
	[SEG_NONE] = "none",
};

/* Is this kind of segment measured in this run (LP_BENCH_KINDS)? */
static inline int bench_kind_wanted(enum seg_kind kind)
{
	const char *name = seg_name[kind], *p = bench_kinds;
	size_t n = strlen(name);

	if (!p || kind == SEG_NONE)
		return 1;
	while ((p = strstr(p, name))) {
		if ((p == bench_kinds || p[-1] == ',') &&
		    (p[n] == ',' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

/*
 * A segment: ours by key (created by the first share_large_pages with
 * IPC_CREAT, gone when its last user detaches), SysV by shmid (created
 * here, removed by seg_destroy).
 */
struct seg {
	enum seg_kind kind;
	int key;
	int shmid;
};

/* Create the segment. Ours needs a process that holds it: seg_create_ours. */
static inline void seg_create(struct seg *s, enum seg_kind kind, int key)
{
	s->kind = kind;
	s->key = key;
	s->shmid = -1;
	if (kind == SEG_HUGETLB || kind == SEG_SHM4K) {
		s->shmid = shmget(IPC_PRIVATE, seg_len, IPC_CREAT | 0600 |
				  (kind == SEG_HUGETLB ? SHM_HUGETLB : 0));
		if (s->shmid < 0)
			bench_die("shmget %s", seg_name[kind]);
	}
}

static inline void seg_destroy(struct seg *s)
{
	if (s->shmid >= 0 && shmctl(s->shmid, IPC_RMID, NULL))
		bench_die("shmctl IPC_RMID");
	s->shmid = -1;
}

/* Attach (creating ours when create is set); the address. */
static inline char *seg_attach(struct seg *s, int create)
{
	long r;
	void *p;

	switch (s->kind) {
	case SEG_OURS:
		r = lpsys_share(s->key, 0, seg_len, PROT_READ | PROT_WRITE,
				create ? IPC_CREAT | IPC_EXCL | 0600 : 0);
		if (!LP_OK(r))
			bench_die("share_large_pages key %#x", s->key);
		return LP_PTR(r);
	case SEG_HUGETLB:
	case SEG_SHM4K:
		p = shmat(s->shmid, NULL, 0);
		if (p == (void *)-1)
			bench_die("shmat %s", seg_name[s->kind]);
		return p;
	default:
		return NULL;
	}
}

static inline void seg_detach(struct seg *s, char *p)
{
	switch (s->kind) {
	case SEG_OURS:
		if (lpsys_unshare((unsigned long)p))
			bench_die("unshare_large_pages");
		break;
	case SEG_HUGETLB:
	case SEG_SHM4K:
		if (shmdt(p))
			bench_die("shmdt");
		break;
	default:
		break;
	}
}

/*
 * A holder: a child that creates (ours) or attaches the segment, touches
 * every page so that the pages exist, and keeps it until released. The
 * caller, which never attaches, forks the processes it measures, so they
 * inherit no mapping. For SEG_NONE there is nothing to hold.
 */
struct holder {
	pid_t pid;
	int release;	/* write end: closing it lets the holder go */
};

static inline void holder_start(struct holder *h, struct seg *s)
{
	int ready[2], rel[2];
	char c;

	h->pid = -1;
	h->release = -1;
	if (s->kind == SEG_NONE)
		return;
	if (pipe(ready) || pipe(rel))
		bench_die("pipe");
	fflush(stdout);
	h->pid = fork();
	if (h->pid < 0)
		bench_die("fork");
	if (h->pid == 0) {
		char *p = seg_attach(s, 1);

		touch_pages(p, seg_len);
		close(ready[0]);
		close(rel[1]);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(rel[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(rel[0]);
	if (read(ready[0], &c, 1) != 1)
		bench_die("the holder of %s died", seg_name[s->kind]);
	close(ready[0]);
	h->release = rel[1];
}

static inline void holder_stop(struct holder *h)
{
	int status;

	if (h->pid < 0)
		return;
	close(h->release);
	if (waitpid(h->pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_die("the holder failed (status %#x)", status);
}

static inline void wait_ok(pid_t pid, const char *what)
{
	int status;

	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_die("%s failed (status %#x)", what, status);
}

/* A fresh key for each segment of ours. */
static inline int next_key(void)
{
	static int n;

	return BENCH_KEY + (getpid() << 8) + (n++ & 0xff);
}

#endif /* LP_BENCH_H */
