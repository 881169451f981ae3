// SPDX-License-Identifier: GPL-2.0
/*
 * What /proc and the VM's reporting calls say about large-page mappings:
 * maps, smaps, statm, meminfo, mincore, msync, mlock, core dumps, faults.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include "lp.h"

/*
 * pid's /proc/PID/maps line of the mapping that starts at addr: its end
 * and name. Returns 0 if found.
 */
static int maps_entry(pid_t pid, unsigned long addr, unsigned long *end,
		      char *name, size_t namelen)
{
	char line[512];
	unsigned long s, e;
	int n = 0;

	if (lp_maps_find(pid, addr, addr + 1, line, sizeof(line)) != 1 ||
	    sscanf(line, "%lx-%lx %*s %*x %*x:%*x %*u %n", &s, &e, &n) < 2 ||
	    s != addr)
		return -1;
	*end = e;
	snprintf(name, namelen, "%s", n ? line + n : "");
	name[strcspn(name, "\n")] = 0;
	return 0;
}

struct smaps {
	long size, rss, pss, kps;	/* kB */
};

/* The smaps fields of pid's mapping at addr; 0 if found. */
static int smaps_entry_pid(pid_t pid, unsigned long addr, struct smaps *sm)
{
	char line[512], path[64];
	unsigned long s, e;
	int in = 0, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	sm->size = sm->rss = sm->pss = sm->kps = -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = s == addr;
			found = in ? 0 : found;
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, "Size:", 5))
			sm->size = strtol(line + 5, NULL, 10);
		else if (!strncmp(line, "Rss:", 4))
			sm->rss = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "Pss:", 4))
			sm->pss = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "KernelPageSize:", 15))
			sm->kps = strtol(line + 15, NULL, 10);
	}
	fclose(f);
	return found;
}

static int smaps_entry(unsigned long addr, struct smaps *sm)
{
	return smaps_entry_pid(getpid(), addr, sm);
}

struct statm {
	long size, resident, shared;	/* 4 KiB pages */
};

/* /proc/self/statm with plain read(): no stdio buffer to fault in. */
static int read_statm(struct statm *st)
{
	static char buf[128];

	if (read_text("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return -1;
	return sscanf(buf, "%ld %ld %ld", &st->size, &st->resident,
		      &st->shared) == 3 ? 0 : -1;
}

static void expect_named_mapping(long r, unsigned long len)
{
	unsigned long end = 0;
	char name[256];

	ASSERT_EQ(maps_entry(getpid(), r, &end, name, sizeof(name)), 0);
	EXPECT_EQ(end, (unsigned long)r + len);
	if (strcmp(name, "[largepage]"))
		TH_LOG("mapping at %#lx is named '%s'", (unsigned long)r, name);
	EXPECT_EQ(strcmp(name, "[largepage]"), 0);
}

TEST(procfs_maps_names_private_mapping)
{
	unsigned long len = 2 * lp_size(), end;
	long r = lpsys_get(0, len, RW, MAP_PRIVATE);
	char name[256];

	ASSERT_TRUE(LP_OK(r));
	expect_named_mapping(r, len);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(maps_entry(getpid(), r, &end, name, sizeof(name)), -1);
}

TEST(procfs_maps_names_shared_mapping_and_keyed_segment)
{
	unsigned long len = lp_size();
	long s = lpsys_get(0, len, RW, MAP_SHARED);
	long k = lpsys_share(4000, 0, 3 * len, RW, IPC_CREAT | 0600);

	ASSERT_TRUE(LP_OK(s));
	ASSERT_TRUE(LP_OK(k));
	expect_named_mapping(s, len);
	expect_named_mapping(k, 3 * len);
	ASSERT_EQ(lpsys_free(s), 0);
	ASSERT_EQ(lpsys_unshare(k), 0);
}

TEST(procfs_child_maps_show_shared_not_private)
{
	unsigned long len = lp_size(), end;
	long s = lpsys_get(0, len, RW, MAP_SHARED);
	long q = lpsys_get(0, len, RW, MAP_PRIVATE);
	char name[256];
	int st;
	pid_t pid;

	ASSERT_TRUE(LP_OK(s));
	ASSERT_TRUE(LP_OK(q));
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	ASSERT_GT(pid, 0);
	EXPECT_EQ(maps_entry(pid, s, &end, name, sizeof(name)), 0);
	EXPECT_EQ(end, (unsigned long)s + len);
	EXPECT_EQ(strcmp(name, "[largepage]"), 0);
	EXPECT_EQ(maps_entry(pid, q, &end, name, sizeof(name)), -1);
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_EQ(lpsys_free(s), 0);
	ASSERT_EQ(lpsys_free(q), 0);
}

/* A mapping of len bytes: a keyed segment if key, else one of flags. */
static long map_flags_or_key(int flags, int key, unsigned long len)
{
	return key ? lpsys_share(key, 0, len, RW, IPC_CREAT | 0600) :
		     lpsys_get(0, len, RW, flags);
}

static long unmap_flags_or_key(long r, int key)
{
	return key ? lpsys_unshare(r) : lpsys_free(r);
}

/* smaps shows a mapping of that many large pages whole and resident. */
static void smaps_whole(int flags, int key, unsigned long pages)
{
	unsigned long len = pages * lp_size();
	long r = map_flags_or_key(flags, key, len);
	struct smaps sm;

	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(smaps_entry(r, &sm), 0);
	EXPECT_EQ(sm.size, len / 1024);
	/* Resident from the start, before any touch. */
	EXPECT_EQ(sm.rss, len / 1024);
	EXPECT_EQ(sm.kps, lp_size() / 1024);
	ASSERT_EQ(unmap_flags_or_key(r, key), 0);
}

TEST(procfs_smaps_size_rss_and_page_size)
{
	smaps_whole(MAP_PRIVATE, 0, 3);
}

TEST(procfs_smaps_keyed_segment)
{
	smaps_whole(0, 4001, 2);
}

/*
 * Pss divides a segment among the vmas that map it, as for shared
 * memory: with a forked child mapping it too, each has half, and the
 * two add up to the size; once the child is gone the parent has it all.
 */
static void pss_shared_by_two(long r, unsigned long len)
{
	struct smaps mine, its;
	int to[2], from[2];
	pid_t pid;
	char c;

	ASSERT_EQ(pipe(to), 0);
	ASSERT_EQ(pipe(from), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		/* Mapped through fork: tell the parent, wait to be told. */
		if (write(from[1], "m", 1) != 1 || read(to[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(read(from[0], &c, 1), 1);
	ASSERT_EQ(smaps_entry(r, &mine), 0);
	ASSERT_EQ(smaps_entry_pid(pid, r, &its), 0);
	TH_LOG("Pss %ld kB + %ld kB of %lu kB", mine.pss, its.pss, len / 1024);
	EXPECT_EQ(mine.rss, len / 1024);
	EXPECT_EQ(mine.pss, len / 1024 / 2);
	EXPECT_EQ(its.pss, len / 1024 / 2);
	EXPECT_EQ(mine.pss + its.pss, len / 1024);
	ASSERT_EQ(write(to[1], "x", 1), 1);
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	ASSERT_EQ(smaps_entry(r, &mine), 0);
	EXPECT_EQ(mine.pss, len / 1024);
	close(to[0]);
	close(to[1]);
	close(from[0]);
	close(from[1]);
}

TEST(procfs_smaps_pss_divided_among_mappers_shared)
{
	unsigned long len = 2 * lp_size();
	long r = lpsys_get(0, len, RW, MAP_SHARED);

	ASSERT_TRUE(LP_OK(r));
	pss_shared_by_two(r, len);
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(procfs_smaps_pss_divided_among_mappers_keyed)
{
	unsigned long len = lp_size();
	long r = lpsys_share(4021, 0, len, RW, IPC_CREAT | 0600), r2;
	struct smaps a, b;

	ASSERT_TRUE(LP_OK(r));
	pss_shared_by_two(r, len);
	/* One process attached twice holds it all, half through each. */
	r2 = lpsys_share(4021, 0, len, RW, 0);
	ASSERT_TRUE(LP_OK(r2));
	ASSERT_EQ(smaps_entry(r, &a), 0);
	ASSERT_EQ(smaps_entry(r2, &b), 0);
	EXPECT_EQ(a.pss, len / 1024 / 2);
	EXPECT_EQ(a.pss + b.pss, len / 1024);
	ASSERT_EQ(lpsys_unshare(r2), 0);
	ASSERT_EQ(lpsys_unshare(r), 0);
}

TEST(procfs_smaps_pss_private_mapping_is_whole)
{
	unsigned long len = lp_size();
	long r = lpsys_get(0, len, RW, MAP_PRIVATE);
	struct smaps sm;

	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(smaps_entry(r, &sm), 0);
	EXPECT_EQ(sm.pss, len / 1024);
	ASSERT_EQ(lpsys_free(r), 0);
}

/*
 * statm deltas around a mapping. A stray page of stack or text may be
 * faulted in between the reads (warmed up below), so allow two pages.
 */
#define STATM_SLACK 2

static void statm_roundtrip(int flags, int key)
{
	unsigned long len = 2 * lp_size(), n = len / 4096;
	struct statm a, b, c;
	long r;

	/* Warm up the code and stack the measured calls use. */
	lpsys_get(0, 0, RW, MAP_PRIVATE);
	lpsys_share(-1, 0, 0, RW, 0);
	lpsys_free(0);
	ASSERT_EQ(read_statm(&a), 0);
	ASSERT_EQ(read_statm(&a), 0);
	r = key ? lpsys_share(key, 0, len, RW, IPC_CREAT | 0600) :
		  lpsys_get(0, len, RW, flags);
	ASSERT_EQ(read_statm(&b), 0);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(key ? lpsys_unshare(r) : lpsys_free(r), 0);
	ASSERT_EQ(read_statm(&c), 0);
	TH_LOG("resident %ld -> %ld -> %ld, shared %ld -> %ld -> %ld (+%lu expected)",
	       a.resident, b.resident, c.resident, a.shared, b.shared,
	       c.shared, n);
	EXPECT_EQ(b.size - a.size, n);
	EXPECT_GE(b.resident - a.resident, n);
	EXPECT_LE(b.resident - a.resident, n + STATM_SLACK);
	EXPECT_GE(c.resident, a.resident);
	EXPECT_LE(c.resident, a.resident + STATM_SLACK);
	if (key || flags == MAP_SHARED) {
		EXPECT_GE(b.shared - a.shared, n);
		EXPECT_LE(b.shared - a.shared, n + STATM_SLACK);
		EXPECT_LE(c.shared, a.shared + STATM_SLACK);
	} else {
		/* The process's own memory: anonymous, not shared. */
		EXPECT_LE(b.shared, a.shared + STATM_SLACK);
	}
}

TEST(procfs_statm_counts_private_mapping_resident)
{
	statm_roundtrip(MAP_PRIVATE, 0);
}

/* A heap's segment, which fork() copies, is as private as MAP_PRIVATE. */
TEST(procfs_statm_counts_copied_on_fork_mapping_as_private)
{
	statm_roundtrip(MAP_PRIVATE | LP_COPY_ON_FORK, 0);
}

TEST(procfs_statm_counts_shared_mapping_resident_and_shared)
{
	statm_roundtrip(MAP_SHARED, 0);
}

TEST(procfs_statm_counts_keyed_segment_resident_and_shared)
{
	statm_roundtrip(0, 4002);
}

TEST(procfs_meminfo_has_exactly_three_tagged_lines)
{
	char line[256], rest[64];
	int n = 0, total = -1, nfree = -1, size = -1, i = 0;
	long v;
	FILE *f = fopen("/proc/meminfo", "r");

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		i++;
		EXPECT_TRUE(!strstr(line, "Total # of LargePages"));
		if (strncmp(line, "LargePage", 9))
			continue;
		n++;
		rest[0] = 0;
		if (sscanf(line, "LargePages_Total: %ld%63[^\n]", &v, rest) >= 1) {
			EXPECT_EQ(total, -1);
			EXPECT_EQ(rest[0], 0);
			EXPECT_EQ(v, read_long(NUMLARGEPAGES));
			total = i;
		} else if (sscanf(line, "LargePages_Free: %ld%63[^\n]", &v,
				  rest) >= 1) {
			EXPECT_EQ(nfree, -1);
			EXPECT_EQ(rest[0], 0);
			nfree = i;
		} else if (sscanf(line, "LargePageSize: %ld%63[^\n]", &v,
				  rest) >= 1) {
			EXPECT_EQ(size, -1);
			EXPECT_EQ(strcmp(rest, " kB"), 0);
			EXPECT_TRUE(v == 2048 || v == 4096);
			size = i;
		} else {
			TH_LOG("unexpected line: %s", line);
		}
	}
	fclose(f);
	EXPECT_EQ(n, 3);
	/* In the order SPEC shows them. */
	EXPECT_GE(total, 1);
	EXPECT_EQ(nfree, total + 1);
	EXPECT_EQ(size, total + 2);
}

TEST(procfs_meminfo_free_tracks_get_and_free)
{
	long nfree = lp_nfree(), total = lp_total(), a, b;

	ASSERT_GE(nfree, 3);
	a = lpsys_get(0, 2 * lp_size(), RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(a));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	b = lpsys_get(0, lp_size(), RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(b));
	EXPECT_EQ(lp_nfree(), nfree - 3);
	EXPECT_EQ(lp_total(), total);
	ASSERT_EQ(lpsys_free(a), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_free(b), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_EQ(lp_total(), total);
}

static int all_resident(long r, unsigned long len)
{
	static unsigned char vec[8 << 20 >> 12];
	unsigned long i;

	if (len / 4096 > sizeof(vec))
		return -1;
	memset(vec, 0, sizeof(vec));
	if (mincore(LP_PTR(r), len, vec)) {
		TH_LOG("mincore: %s", strerror(errno));
		return 0;
	}
	for (i = 0; i < len / 4096; i++)
		if (!(vec[i] & 1)) {
			TH_LOG("page +%#lx reported not resident", i * 4096);
			return 0;
		}
	return 1;
}

TEST(procfs_mincore_reports_resident)
{
	unsigned long len = 2 * lp_size();
	long q = lpsys_get(0, len, RW, MAP_PRIVATE);
	long s = lpsys_get(0, len, PROT_READ, MAP_SHARED);

	ASSERT_TRUE(LP_OK(q));
	ASSERT_TRUE(LP_OK(s));
	/* Never touched: resident all the same. */
	EXPECT_EQ(all_resident(q, len), 1);
	EXPECT_EQ(all_resident(s, len), 1);
	ASSERT_EQ(lpsys_free(q), 0);
	ASSERT_EQ(lpsys_free(s), 0);
}

/*
 * A MAP_SHARED mapping, filled with the seed key, and a keyed segment
 * under key, len bytes each: both, or the test stops.
 */
static void map_shared_and_keyed(long *r, long *k, unsigned long len,
				 int key)
{
	*r = lpsys_get(0, len, RW, MAP_SHARED);
	*k = lpsys_share(key, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(*r));
	ASSERT_TRUE(LP_OK(*k));
	lp_fill(LP_PTR(*r), len, key);
}

static void unmap_shared_and_keyed(long r, long k)
{
	ASSERT_EQ(lpsys_free(r), 0);
	ASSERT_EQ(lpsys_unshare(k), 0);
}

TEST(procfs_msync_returns_zero)
{
	unsigned long len = 2 * lp_size();
	long r, k;

	map_shared_and_keyed(&r, &k, len, 4003);
	EXPECT_EQ(msync(LP_PTR(r), len, MS_SYNC), 0);
	EXPECT_EQ(msync(LP_PTR(r), len, MS_ASYNC), 0);
	EXPECT_EQ(msync(LP_PTR(r) + lp_size(), 4096, MS_SYNC), 0);
	EXPECT_EQ(msync(LP_PTR(k), len, MS_SYNC), 0);
	EXPECT_EQ(msync(LP_PTR(k), len, MS_ASYNC), 0);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 4003));
	unmap_shared_and_keyed(r, k);
}

TEST(procfs_mlock_accepted)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree();
	long r = lpsys_get(0, len, RW, MAP_PRIVATE);

	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 4004);
	EXPECT_EQ(mlock(LP_PTR(r), len), 0);
	EXPECT_EQ(mlock(LP_PTR(r) + 4096, 4096), 0);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 4004));
	/* Locked or not, free gives every page back. */
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(procfs_core_dump_completes)
{
	static const char pattern[] = "/var/tmp/lp-core.%p";
	char old[256] = "", path[64];
	struct stat sb;
	int fd, st = 0, have;
	ssize_t n;
	pid_t pid;

	fd = open("/proc/sys/kernel/core_pattern", O_RDONLY);
	if (fd < 0 && errno == ENOENT)
		SKIP("no core_pattern: kernel without CONFIG_COREDUMP");
	ASSERT_GE(fd, 0);
	n = read(fd, old, sizeof(old) - 1);
	close(fd);
	ASSERT_GT(n, 0);
	ASSERT_EQ(write_text("/proc/sys/kernel/core_pattern", pattern), 0);

	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		if (setrlimit(RLIMIT_CORE, &rl) || lp_map_four(4005))
			_exit(2);
		abort();
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	/* Restore before anything can fail. */
	EXPECT_EQ(write_text("/proc/sys/kernel/core_pattern", old), 0);
	ASSERT_GT(pid, 0);

	snprintf(path, sizeof(path), "/var/tmp/lp-core.%d", pid);
	have = stat(path, &sb) == 0;
	unlink(path);
	if (!CHILD_SIGNALED(st, SIGABRT))
		TH_LOG("child status %#x", st);
	EXPECT_TRUE(CHILD_SIGNALED(st, SIGABRT));
	EXPECT_TRUE(WIFSIGNALED(st) && WCOREDUMP(st));
	EXPECT_TRUE(have);
	EXPECT_GE(have ? sb.st_size : 0, 1);
	EXPECT_TRUE(lp_key_absent(4005, lp_size()));
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static long faults_touching(long r, unsigned long len)
{
	volatile char *p = LP_PTR(r);
	unsigned long i;
	long before;

	minflt();
	before = minflt();
	for (i = 0; i < len; i += 4096)
		p[i] = 1;
	return minflt() - before;
}

/* The first touch of every base page of two large pages takes no fault. */
static void first_touch_no_fault(int flags, int key)
{
	unsigned long len = 2 * lp_size();
	long r = map_flags_or_key(flags, key, len), n;

	ASSERT_TRUE(LP_OK(r));
	n = faults_touching(r, len);
	TH_LOG("%lu pages touched, %ld minor faults", len / 4096, n);
	EXPECT_LE(n, 3);
	ASSERT_EQ(unmap_flags_or_key(r, key), 0);
}

TEST(procfs_first_touch_no_fault_shared_mapping)
{
	first_touch_no_fault(MAP_SHARED, 0);
}

TEST(procfs_first_touch_no_fault_keyed_segment)
{
	first_touch_no_fault(0, 4006);
}

TEST(procfs_pagemap_and_clear_refs_leave_mapping_intact)
{
	unsigned long len = 2 * lp_size();
	static uint64_t pm[8 << 20 >> 12];
	long nfree = lp_nfree(), r, n;
	struct smaps sm;
	int fd;

	r = lpsys_get(0, len, RW, MAP_SHARED);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_LE(len / 4096, sizeof(pm) / sizeof(pm[0]));
	lp_fill(LP_PTR(r), len, 4007);

	fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_GE(fd, 0);
	n = pread(fd, pm, len / 4096 * 8, (unsigned long long)(unsigned long)r / 4096 * 8);
	close(fd);
	EXPECT_EQ(n, len / 4096 * 8);
	/* Page walkers leave the mapping alone (1: all, 3: file-backed). */
	EXPECT_EQ(write_text("/proc/self/clear_refs", "1"), 0);
	EXPECT_EQ(write_text("/proc/self/clear_refs", "3"), 0);

	EXPECT_TRUE(lp_check(LP_PTR(r), len, 4007));
	EXPECT_EQ(faults_touching(r, len) < 4, 1);
	ASSERT_EQ(smaps_entry(r, &sm), 0);
	EXPECT_EQ(sm.rss, len / 1024);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

#define PM_PFN(e)	((e) & ((1ULL << 55) - 1))
#define PM_EXCLUSIVE	(1ULL << 56)
#define PM_FILE		(1ULL << 61)
#define PM_PRESENT	(1ULL << 63)

/* The pagemap entries of [r, r + len); 0 if all were read. */
static int read_pagemap(long r, unsigned long len, uint64_t *pm)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	long n;

	if (fd < 0)
		return -1;
	n = pread(fd, pm, len / 4096 * 8,
		  (unsigned long long)(unsigned long)r / 4096 * 8);
	close(fd);
	return n == (long)(len / 4096 * 8) ? 0 : -1;
}

/*
 * Every base page of a mapped large page is present. Root (CAP_SYS_ADMIN)
 * sees the frame: the first of each large page aligned to its size, the
 * others following it. Private pages are exclusive, shared ones are file
 * pages (the segment's), as shmem is.
 */
static void pagemap_present(long r, unsigned long len, int shared)
{
	static uint64_t pm[8 << 20 >> 12];
	unsigned long i, n = len / 4096, per = lp_size() / 4096;
	unsigned long bad = 0;

	ASSERT_LE(n, sizeof(pm) / sizeof(pm[0]));
	ASSERT_EQ(read_pagemap(r, len, pm), 0);
	for (i = 0; i < n; i++) {
		uint64_t e = pm[i], first = pm[i - i % per];

		if (!(e & PM_PRESENT) || PM_PFN(e) != PM_PFN(first) + i % per ||
		    !PM_PFN(first) || PM_PFN(first) % per ||
		    !!(e & PM_FILE) != shared || !!(e & PM_EXCLUSIVE) == shared) {
			if (!bad++)
				TH_LOG("entry %lu: %#llx (first of its page %#llx)",
				       i, (unsigned long long)e,
				       (unsigned long long)first);
		}
	}
	EXPECT_EQ(bad, 0);
}

TEST(procfs_pagemap_reports_private_pages_present)
{
	unsigned long len = 2 * lp_size();
	long r = lpsys_get(0, len, RW, MAP_PRIVATE);

	ASSERT_TRUE(LP_OK(r));
	/* Present before any touch too: mapped whole when made. */
	pagemap_present(r, len, 0);
	lp_fill(LP_PTR(r), len, 4031);
	pagemap_present(r, len, 0);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 4031));
	ASSERT_EQ(lpsys_free(r), 0);
}

TEST(procfs_pagemap_reports_shared_and_keyed_pages_present)
{
	unsigned long len = 2 * lp_size();
	long r, k;

	map_shared_and_keyed(&r, &k, len, 4033);
	pagemap_present(r, len, 1);
	pagemap_present(k, len, 1);
	unmap_shared_and_keyed(r, k);
}

/*
 * A read that starts inside a large page (a tool that reads one address's
 * entry does) gives that base page's frame, not its large page's first.
 */
TEST(procfs_pagemap_read_from_inside_a_page)
{
	unsigned long lp = lp_size(), per = lp / 4096, i;
	unsigned long at[] = { 1, 7, per / 2 + 3, per - 1, per, per + 5 };
	uint64_t first, e;
	long r = lpsys_get(0, 2 * lp, RW, MAP_PRIVATE);

	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(read_pagemap(r, 4096, &first), 0);
	ASSERT_TRUE(first & PM_PRESENT);
	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint64_t want = PM_PFN(first) + at[i];

		/* The second large page is anywhere: its own first frame. */
		if (at[i] >= per) {
			ASSERT_EQ(read_pagemap(r + lp, 4096, &e), 0);
			want = PM_PFN(e) + at[i] - per;
		}
		ASSERT_EQ(read_pagemap(r + at[i] * 4096, 4096, &e), 0);
		if (PM_PFN(e) != want)
			TH_LOG("base page %lu: frame %#llx, want %#llx", at[i],
			       (unsigned long long)PM_PFN(e),
			       (unsigned long long)want);
		EXPECT_EQ(PM_PFN(e), want);
	}
	ASSERT_EQ(lpsys_free(r), 0);
}

/* Without CAP_SYS_ADMIN: present, frame numbers hidden (zero). */
TEST(procfs_pagemap_hides_frames_from_unprivileged)
{
	static uint64_t pm[8 << 20 >> 12];
	unsigned long len = lp_size(), i, bad = 0;
	long r;

	lp_set_memlock(len);
	become_nobody();
	/* Back to dumpable, so that /proc/self is ours to read. */
	ASSERT_EQ(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	r = lpsys_get(0, len, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(read_pagemap(r, len, pm), 0);
	for (i = 0; i < len / 4096; i++)
		bad += !(pm[i] & PM_PRESENT) || PM_PFN(pm[i]);
	if (bad)
		TH_LOG("entry 0: %#llx", (unsigned long long)pm[0]);
	EXPECT_EQ(bad, 0);
	ASSERT_EQ(lpsys_free(r), 0);
}

/* A row of /proc/largepage_segments. */
struct seg_row {
	unsigned long size;
	unsigned int mode, uid, gid, cuid, cgid;
	int nattch;
};

/*
 * The row of key: 1 if listed, 0 if not, -1 if the file is missing or
 * its header is not the one documented.
 */
static int seg_row(int key, struct seg_row *row)
{
	char line[256];
	int k, found = 0;
	FILE *f = fopen("/proc/largepage_segments", "r");

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) ||
	    strcmp(line, "       key       size perms   uid   gid  cuid  cgid nattch    cpid    lpid      atime      dtime      ctime        ino\n")) {
		TH_LOG("unexpected header: %s", line);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%d %lu %o %u %u %u %u %d", &k, &row->size,
			   &row->mode, &row->uid, &row->gid, &row->cuid,
			   &row->cgid, &row->nattch) != 8) {
			TH_LOG("bad line: %s", line);
			found = -1;
			break;
		}
		if (k == key)
			found = 1;
		if (found)
			break;
	}
	fclose(f);
	return found;
}

/* The attach count of key once it reaches want (a dying child unmaps late). */
static int seg_nattch_settle(int key, int want)
{
	struct seg_row row = { .nattch = -1 };
	int i;

	for (i = 0; i < 50; i++) {
		if (seg_row(key, &row) == 1 && row.nattch == want)
			break;
		usleep(20000);
	}
	return row.nattch;
}

TEST(procfs_segments_list_key_size_mode_ids_and_attaches)
{
	unsigned long len = 2 * lp_size();
	struct seg_row row;
	struct lp_peer peer;
	long r, r2;

	r = lpsys_share(4008, 0, len, RW, IPC_CREAT | 0640);
	ASSERT_TRUE(LP_OK(r));
	ASSERT_EQ(seg_row(4008, &row), 1);
	EXPECT_EQ(row.size, len);
	EXPECT_EQ(row.mode, 0640);
	EXPECT_EQ(row.uid, 0);
	EXPECT_EQ(row.gid, 0);
	EXPECT_EQ(row.cuid, 0);
	EXPECT_EQ(row.cgid, 0);
	EXPECT_EQ(row.nattch, 1);

	/* A second attach in this process, then a fork: one more each. */
	r2 = lpsys_share(4008, 0, len, PROT_READ, 0);
	ASSERT_TRUE(LP_OK(r2));
	EXPECT_EQ(seg_nattch_settle(4008, 2), 2);
	ASSERT_GE(lp_peer_fork(&peer), 0);
	if (peer.pid == 0) {
		lp_peer_send(&peer, 1);
		lp_peer_recv(&peer);
		_exit(0);
	}
	lp_peer_recv(&peer);
	EXPECT_EQ(seg_nattch_settle(4008, 4), 4);
	lp_peer_send(&peer, 0);
	EXPECT_EQ(lp_peer_wait(&peer), 0);
	EXPECT_EQ(seg_nattch_settle(4008, 2), 2);
	ASSERT_EQ(lpsys_unshare(r2), 0);
	EXPECT_EQ(seg_nattch_settle(4008, 1), 1);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(seg_row(4008, &row), 0);
}

TEST(procfs_segments_show_owner_and_creator_of_other_user)
{
	unsigned long len = lp_size();
	struct seg_row row;
	struct lp_peer peer;

	ASSERT_GE(lp_peer_fork(&peer), 0);
	if (peer.pid == 0) {
		long r;

		lp_set_memlock(len);
		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		r = lpsys_share(4009, 0, len, RW, IPC_CREAT | 0604);
		lp_peer_send(&peer, LP_OK(r));
		lp_peer_recv(&peer);
		_exit(0);
	}
	ASSERT_EQ(lp_peer_recv(&peer), 1);
	EXPECT_EQ(seg_row(4009, &row), 1);
	EXPECT_EQ(row.size, len);
	EXPECT_EQ(row.mode, 0604);
	EXPECT_EQ(row.uid, NOBODY);
	EXPECT_EQ(row.gid, NOBODY);
	EXPECT_EQ(row.cuid, NOBODY);
	EXPECT_EQ(row.cgid, NOBODY);
	EXPECT_EQ(row.nattch, 1);
	lp_peer_send(&peer, 0);
	EXPECT_EQ(lp_peer_wait(&peer), 0);
	EXPECT_TRUE(lp_key_absent(4009, len));
	EXPECT_EQ(seg_row(4009, &row), 0);
}
