// SPDX-License-Identifier: GPL-2.0
/*
 * Booted with largepages=N (tests/runs): exactly N pages when memory
 * allows, all usable; none and ENOMEM for 0; for more than memory
 * allows, the boot still succeeds, the pool holds what the kernel could
 * take while leaving an eighth of RAM free, and the boot log says so.
 */
#include "lp.h"

/* N of largepages=N on the kernel command line. */
static long boot_pages(void)
{
	char buf[1024] = "", *p;
	int fd = open("/proc/cmdline", O_RDONLY);

	ASSERT_GE(fd, 0);
	ASSERT_GT(read(fd, buf, sizeof(buf) - 1), 0);
	close(fd);
	p = strstr(buf, "largepages=");
	ASSERT_TRUE(p != NULL);
	return strtol(p + strlen("largepages="), NULL, 10);
}

/* Pages that fit in 7/8 of RAM: a request above this cannot be met. */
static long most_pages(void)
{
	return meminfo("MemTotal:") / 8 * 7 / (long)(lp_size() / 1024);
}

TEST(largepages_param_sets_pool_size)
{
	long n = boot_pages(), total = lp_total();

	if (n <= most_pages() / 2) {
		EXPECT_EQ(total, n);
	} else {
		/* What it could take, leaving an eighth of RAM free. */
		EXPECT_LT(total, n);
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

TEST(boot_log_names_count_and_size)
{
	char line[512], want[160];
	long n = boot_pages(), total = lp_total();
	int found = 0;
	FILE *f = popen("dmesg", "r");

	ASSERT_TRUE(f != NULL);
	snprintf(want, sizeof(want), "largepage: reserved %ld of %ld %lu KiB pages%s",
		 total, n, lp_size() / 1024,
		 total < n ? " (the rest is left to the system)" : "");
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	pclose(f);
	if (!found)
		TH_LOG("no '%s' in dmesg", want);
	EXPECT_TRUE(found);
}
