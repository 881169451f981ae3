// SPDX-License-Identifier: GPL-2.0
/* A CPU without PSE: every call EINVAL, the pool empty, the rest fine. */
#include "lp.h"

TEST(cpu_has_no_pse)
{
	char line[1024];
	int flags = 0, pse = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		flags = 1;
		pse |= strstr(line, " pse ") != NULL;
	}
	fclose(f);
	ASSERT_TRUE(flags);
	EXPECT_EQ(pse, 0);
}

TEST(pool_is_empty)
{
	EXPECT_EQ(lp_total(), 0);
	EXPECT_EQ(lp_nfree(), 0);
	EXPECT_EQ(read_long(NUMLARGEPAGES), 0);
}

TEST(get_large_pages_einval)
{
	EXPECT_ERRNO(lpsys_get(0, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE),
		     EINVAL);
}

TEST(free_large_pages_einval)
{
	EXPECT_ERRNO(lpsys_free(0x40000000), EINVAL);
}

TEST(share_large_pages_einval)
{
	EXPECT_ERRNO(lpsys_share(1, 0, 4 << 20, PROT_READ, IPC_CREAT), EINVAL);
}

TEST(unshare_large_pages_einval)
{
	EXPECT_ERRNO(lpsys_unshare(0x40000000), EINVAL);
}

TEST(memfd_largepage_einval)
{
	int fd = open("/dev/null", O_RDONLY);

	ASSERT_TRUE(fd >= 0);
	close(fd);
	EXPECT_ERRNO(memfd_create("lp", MFD_LARGEPAGE), EINVAL);
	/* No descriptor is left behind by the refusal. */
	EXPECT_EQ(open("/dev/null", O_RDONLY), fd);
	close(fd);
	/* A memfd on normal pages still works. */
	fd = memfd_create("shmem", 0);
	EXPECT_TRUE(fd >= 0);
	close(fd);
}

TEST(pool_cannot_grow)
{
	EXPECT_EQ(sysctl_resize(4), -EINVAL);
	EXPECT_EQ(lp_total(), 0);
}

TEST(normal_memory_still_works)
{
	size_t len = 8 << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(p != MAP_FAILED);
	memset(p, 1, len);
	EXPECT_EQ(p[len - 1], 1);
	EXPECT_EQ(munmap(p, len), 0);
}
