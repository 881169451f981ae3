// SPDX-License-Identifier: GPL-2.0
/* Booted with largepages=7: exactly seven pages, all usable. */
#include "lp.h"

#define BOOT_PAGES 7

TEST(largepages_param_sets_pool_size)
{
	EXPECT_EQ(lp_total(), BOOT_PAGES);
	EXPECT_EQ(lp_nfree(), BOOT_PAGES);
	EXPECT_EQ(read_long(NUMLARGEPAGES), BOOT_PAGES);
}

TEST(all_boot_pages_usable)
{
	long r = lp_get(0, BOOT_PAGES * lp_size(), PROT_READ | PROT_WRITE,
			MAP_PRIVATE);

	ASSERT_TRUE(LP_OK(r));
	memset(LP_PTR(r), 3, BOOT_PAGES * lp_size());
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_ERRNO(lp_get(0, lp_size(), PROT_READ, MAP_PRIVATE), ENOMEM);
	ASSERT_EQ(lp_free(r), 0);
}

TEST(boot_log_names_count_and_size)
{
	char line[512], want[128];
	int found = 0;
	FILE *f = popen("dmesg", "r");

	ASSERT_TRUE(f != NULL);
	snprintf(want, sizeof(want), "largepage: reserved %d of %d %lu KiB pages",
		 BOOT_PAGES, BOOT_PAGES, lp_size() / 1024);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	pclose(f);
	if (!found)
		TH_LOG("no '%s' in dmesg", want);
	EXPECT_TRUE(found);
}
