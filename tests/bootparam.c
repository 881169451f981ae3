// SPDX-License-Identifier: GPL-2.0
/*
 * Booted with largepages=N (tests/runs): exactly N pages when memory
 * allows, all usable; none and ENOMEM for 0; for more than memory
 * allows, the boot still succeeds, the pool holds what the kernel could
 * take while leaving an eighth of RAM free, and the boot log says so.
 * A value that is not a page count (the run adds lpbad=1) reserves
 * nothing and says so. Either way init never sees the parameter.
 */
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
		EXPECT_ERRNO(lp_get(0, lp_size(), PROT_READ, MAP_PRIVATE),
			     ENOMEM);
		EXPECT_ERRNO(lp_share(9001, 0, lp_size(), PROT_READ,
				      IPC_CREAT | 0600), ENOMEM);
		return;
	}
	r = lp_get(0, total * lp_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), total * lp_size()));
	memset(LP_PTR(r), 3, total * lp_size());
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_ERRNO(lp_get(0, lp_size(), PROT_READ, MAP_PRIVATE), ENOMEM);
	ASSERT_EQ(lp_free(r), 0);
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
