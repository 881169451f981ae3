// SPDX-License-Identifier: GPL-2.0
/*
 * Booted with largepages=N (tests/runs): exactly N pages when memory
 * allows, all usable; none and ENOMEM for 0; for more than memory
 * allows, the boot still succeeds, the pool holds what the kernel could
 * take while leaving an eighth of RAM and a quarter of lowmem free, and
 * the boot log says so. The pool's lowmem pages are counted right, a
 * reused page is zero and shared right in either zone, and a pool grown
 * later leaves a quarter of lowmem free too.
 * A value that is not a page count (the run adds lpbad=1) reserves
 * nothing and says so. Either way init never sees the parameter.
 */
#include <sys/uio.h>
#include "lp.h"

/* The kernel command line, read once. */
static const char *cmdline(void)
{
	static char buf[1024];
	int fd;

	if (buf[0])
		return buf;
	fd = open("/proc/cmdline", O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_GT(read(fd, buf, sizeof(buf) - 1), 0);
	close(fd);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* The text of largepages=TEXT, up to the next blank. */
static const char *boot_text(void)
{
	static char text[64];
	const char *p = strstr(cmdline(), "largepages=");

	ASSERT_TRUE(p != NULL);
	p += strlen("largepages=");
	snprintf(text, sizeof(text), "%.*s", (int)strcspn(p, " "), p);
	return text;
}

/* A run whose largepages= is no page count says so with lpbad=1. */
static int boot_bad(void)
{
	return strstr(cmdline(), "lpbad=1") != NULL;
}

/* N of largepages=N: a page count up to ULONG_MAX. */
static unsigned long long boot_pages(void)
{
	return boot_bad() ? 0 : strtoull(boot_text(), NULL, 0);
}

/* Pages that fit in 7/8 of RAM: a request above this cannot be met. */
static long most_pages(void)
{
	return meminfo("MemTotal:") / 8 * 7 / (long)(lp_size() / 1024);
}

TEST(largepages_param_sets_pool_size)
{
	unsigned long long n = boot_pages();
	long total = lp_total();

	if (n <= (unsigned long long)most_pages() / 2) {
		EXPECT_EQ(total, n);
	} else {
		/* What it could take, leaving an eighth of RAM free. */
		EXPECT_TRUE((unsigned long long)total < n);
		EXPECT_LE(total, most_pages());
		EXPECT_GT(total, most_pages() / 2);
	}
	EXPECT_EQ(lp_nfree(), total);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
}

TEST(all_boot_pages_usable)
{
	long total = lp_total(), r;

	if (total == 0) {
		EXPECT_ERRNO(lpsys_get(0, lp_size(), PROT_READ, MAP_PRIVATE),
			     ENOMEM);
		EXPECT_ERRNO(lpsys_share(9001, 0, lp_size(), PROT_READ,
					 IPC_CREAT | 0600), ENOMEM);
		return;
	}
	r = lpsys_get(0, total * lp_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), total * lp_size()));
	memset(LP_PTR(r), 3, total * lp_size());
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_ERRNO(lpsys_get(0, lp_size(), PROT_READ, MAP_PRIVATE), ENOMEM);
	ASSERT_EQ(lpsys_free(r), 0);
}

/* Does the kernel log have a line containing want? */
static int dmesg_has(const char *want)
{
	char line[512];
	int found = 0;
	FILE *f = popen("dmesg", "r");

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	pclose(f);
	if (!found)
		TH_LOG("no '%s' in dmesg", want);
	return found;
}

TEST(boot_log_names_count_and_size)
{
	unsigned long long n = boot_pages();
	long total = lp_total();
	char want[160];

	if (boot_bad()) {
		snprintf(want, sizeof(want),
			 "largepage: largepages=%s is not a page count, none reserved",
			 boot_text());
		EXPECT_TRUE(dmesg_has(want));
	}
	snprintf(want, sizeof(want), "largepage: reserved %ld of %llu %lu KiB pages%s",
		 total, n, lp_size() / 1024,
		 (unsigned long long)total < n ? " (the rest is left to the system)" : "");
	EXPECT_TRUE(dmesg_has(want));
}

/*
 * The kernel takes largepages= whatever its value: nothing of it reaches
 * init, neither as an argument nor in its environment.
 */
TEST(largepages_param_not_passed_to_init)
{
	static char buf[8192];
	const char *files[] = { "/proc/1/cmdline", "/proc/1/environ" };
	unsigned int i;
	ssize_t n, j;

	for (i = 0; i < 2; i++) {
		int fd = open(files[i], O_RDONLY);

		ASSERT_GE(fd, 0);
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		ASSERT_GE(n, 0);
		for (j = 0; j < n; j++)
			if (!buf[j])
				buf[j] = ' ';
		buf[n] = 0;
		if (strstr(buf, "largepages="))
			TH_LOG("%s: %s", files[i], buf);
		EXPECT_TRUE(strstr(buf, "largepages=") == NULL);
	}
}

#define LPSYS "/sys/kernel/mm/largepage/"

/* The first pfn of the HighMem zone, from /proc/zoneinfo; 0 if none. */
static unsigned long highmem_start_pfn(void)
{
	char line[256];
	unsigned long pfn = 0, start;
	int in_high = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Node ", 5))
			in_high = strstr(line, "zone  HighMem") != NULL;
		else if (in_high && sscanf(line, " start_pfn: %lu", &start) == 1)
			pfn = start;
	}
	fclose(f);
	return pfn;
}

/*
 * lowmem_pages, the boot log's count and stat's agree with where the
 * pages really are: map the whole pool and read each page's pfn from
 * /proc/self/pagemap (root sees pfns).
 */
TEST(lowmem_pages_counts_the_pools_lowmem_pages)
{
	unsigned long lp = lp_size(), high = highmem_start_pfn(), i;
	long total = lp_total(), lowmem = read_long(LPSYS "lowmem_pages");
	long r, low = 0;
	char want[128];
	int fd;

	ASSERT_GE(lowmem, 0);
	EXPECT_LE(lowmem, total);
	snprintf(want, sizeof(want), "largepage: %ld of the pool's pages are lowmem",
		 lowmem);
	EXPECT_TRUE(dmesg_has(want));
	if (!total)
		return;
	r = lpsys_get(0, total * lp, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_GE(fd, 0);
	for (i = 0; i < (unsigned long)total; i++) {
		uint64_t e = 0;
		off_t off = (off_t)((uintptr_t)(LP_PTR(r) + i * lp) / 4096) * 8;

		ASSERT_EQ(pread(fd, &e, 8, off), 8);
		ASSERT_TRUE(e >> 63);	/* present */
		ASSERT_NE(e & ((1ULL << 55) - 1), 0);	/* the pfn, as root */
		if (!high || (e & ((1ULL << 55) - 1)) < high)
			low++;
	}
	close(fd);
	ASSERT_EQ(lpsys_free(r), 0);
	TH_LOG("%ld of %ld pool pages below pfn %#lx", low, total, high);
	EXPECT_EQ(low, lowmem);
}

/*
 * The whole pool again, after all_boot_pages_usable() left every page
 * dirty: as one keyed segment, every page of it zero, whichever zone it
 * is in (lowmem pages are cleared through the direct map, highmem ones
 * through temporary mappings); then the data one process writes is what
 * another attaching the key reads, and what process_vm_readv() (GUP)
 * reads of each page, lowmem and highmem. pae-lpbig's pool is mostly
 * lowmem, the others' all or mostly highmem.
 */
TEST(whole_pool_zeroed_and_shared_in_both_zones)
{
	unsigned long lp = lp_size(), high = highmem_start_pfn(), i;
	long total = lp_total(), r, low = 0, bad = 0;
	struct lp_peer p;
	int st;

	if (!total)
		return;
	ASSERT_EQ(lp_settle_nfree(total), total);
	r = lpsys_share(9003, 0, total * lp, PROT_READ | PROT_WRITE,
			IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(r));
	for (i = 0; i < (unsigned long)total; i++) {
		char *page = LP_PTR(r) + i * lp;
		unsigned long pfn = lp_pfn_of(page);

		ASSERT_NE(pfn, 0);
		low += !high || pfn < high;
		if (!lp_zeroed(page, lp) && !bad++)
			TH_LOG("page %lu (pfn %#lx, %s) not zero", i, pfn,
			       !high || pfn < high ? "lowmem" : "highmem");
	}
	EXPECT_EQ(bad, 0);
	TH_LOG("%ld pool pages zeroed: %ld lowmem, %ld highmem", total, low,
	       total - low);
	lp_fill(LP_PTR(r), total * lp, 9003);
	if (lp_peer_fork(&p) == 0) {
		char buf[4096];
		struct iovec local = { buf, sizeof(buf) }, remote;
		long c;
		int ok;

		/*
		 * The child inherited the parent's mapping: it lets go of it
		 * before it attaches the key, since a pool of more than half
		 * the user address space (nopae-lpvm's, 1756 MiB of 3 GiB)
		 * cannot be mapped twice.
		 */
		if (lpsys_unshare(r)) {
			lp_peer_send(&p, 0);
			_exit(2);
		}
		c = lpsys_share(9003, 0, total * lp, PROT_READ, 0);
		ok = LP_OK(c) && lp_check(LP_PTR(c), total * lp, 9003);

		/* GUP on the parent's mapping: one base page of each page. */
		for (i = 0; ok && i < (unsigned long)total; i++) {
			remote.iov_base = LP_PTR(r) + i * lp + (i % (lp / 4096)) * 4096;
			remote.iov_len = sizeof(buf);
			ok = process_vm_readv(getppid(), &local, 1, &remote, 1, 0) ==
				sizeof(buf) &&
			     !memcmp(buf, (char *)remote.iov_base - (char *)LP_PTR(r) +
				     LP_PTR(c), sizeof(buf));
		}
		lp_peer_send(&p, ok);
		_exit(LP_OK(c) && !lpsys_unshare(c) ? 0 : 1);
	}
	ASSERT_GT(p.pid, 0);
	EXPECT_EQ(lp_peer_recv(&p), 1);
	st = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_TRUE(lp_key_absent(9003, lp));
}

/* LowTotal and LowFree (kB) from /proc/meminfo; MemTotal without highmem. */
static long low_total(void)
{
	long v = meminfo("LowTotal:");

	return v > 0 ? v : meminfo("MemTotal:");
}

static long low_free(void)
{
	long v = meminfo("LowFree:");

	return v > 0 ? v : meminfo("MemFree:");
}

/*
 * What stops a boot-time request for more than memory first: the lowmem
 * floor (a quarter of lowmem), or the eighth of RAM that every boot-time
 * reservation leaves free. The pool takes highmem first, so by the time
 * it reaches the floor almost all free memory is lowmem: the eighth
 * comes first when it is larger than the floor, as on a box whose
 * lowmem is a small share of RAM (nopae-lpvm: vmalloc=512M). Within
 * 16 MiB of each other, either may: BOOT_STOP_EITHER.
 */
enum { BOOT_STOP_EITHER, BOOT_STOP_FLOOR, BOOT_STOP_EIGHTH };

static int boot_stop(void)
{
	long eighth = meminfo("MemTotal:") / 8, floor = low_total() / 4;

	if (floor >= eighth + 16384)
		return BOOT_STOP_FLOOR;
	if (eighth >= floor + 16384)
		return BOOT_STOP_EIGHTH;
	return BOOT_STOP_EITHER;
}

/*
 * The pool leaves a quarter of lowmem free, at boot and when it grows
 * later. A reservation the floor cut short says so in the boot log, with
 * the size it kept (a quarter of the lowmem the kernel had then: the
 * init sections it frees later add a MiB or so); one the eighth of RAM
 * stopped first does not, and took no more than 7/8 of RAM
 * (largepages_param_sets_pool_size).
 */
TEST(pool_leaves_a_quarter_of_lowmem_free)
{
	long before = lp_total(), kept = low_total() / 4 / 1024, got, grown, m;
	long low_before, low_after;
	char want[128];
	int logged = 0;

	for (m = kept - 2; m <= kept; m++) {
		snprintf(want, sizeof(want),
			 "largepage: stopped there to keep %ld MiB of lowmem free for the kernel",
			 m);
		logged |= dmesg_has(want);
	}
	/* A request for more than memory stopped at one of the two. */
	TH_LOG("LowTotal %ld kB, MemTotal %ld kB: %s; the floor %s logged",
	       low_total(), meminfo("MemTotal:"),
	       (const char *[]){ "either stops first", "the floor stops first",
				 "the eighth of RAM stops first" }[boot_stop()],
	       logged ? "is" : "is not");
	if (boot_pages() > (unsigned long long)most_pages()) {
		if (boot_stop() == BOOT_STOP_FLOOR)
			EXPECT_TRUE(logged);
		if (boot_stop() == BOOT_STOP_EIGHTH)
			EXPECT_EQ(logged, 0);
	}

	/*
	 * Grow by more than memory allows: once it has to take lowmem, it
	 * stops with a quarter of lowmem free. (A pool the boot already
	 * stopped at the floor cannot grow: the system has used some of
	 * that quarter since.)
	 */
	low_before = read_long(LPSYS "lowmem_pages");
	ASSERT_EQ(sysctl_resize(100000), 0);
	got = lp_total();
	grown = got - before;
	low_after = read_long(LPSYS "lowmem_pages");
	TH_LOG("grew by %ld pages, %ld of them lowmem: LowFree %ld kB of LowTotal %ld kB",
	       grown, low_after - low_before, low_free(), low_total());
	if (boot_pages() <= (unsigned long long)most_pages()) {
		/* It started well below memory: it reaches lowmem. */
		EXPECT_GT(grown, 0);
		EXPECT_GT(low_after, low_before);
	}
	/* Allow 2 MiB for what the system allocated meanwhile. */
	if (low_after > low_before)
		EXPECT_GE(low_free() + 2048, low_total() / 4);
	ASSERT_EQ(sysctl_resize(-grown), 0);
	EXPECT_EQ(lp_total(), before);
}
