// SPDX-License-Identifier: GPL-2.0
/* CONFIG_LARGE_PAGE=n: the syscalls exist in the table and say ENOSYS. */
#define LP_NO_CONSERVATION
#include "lp.h"

TEST(get_large_pages_enosys)
{
	EXPECT_ERRNO(lpsys_get(0, 4 << 20, PROT_READ, MAP_PRIVATE), ENOSYS);
}

TEST(free_large_pages_enosys)
{
	EXPECT_ERRNO(lpsys_free(0x40000000), ENOSYS);
}

TEST(share_large_pages_enosys)
{
	EXPECT_ERRNO(lpsys_share(1, 0, 4 << 20, PROT_READ, IPC_CREAT), ENOSYS);
}

TEST(unshare_large_pages_enosys)
{
	EXPECT_ERRNO(lpsys_unshare(0x40000000), ENOSYS);
}

TEST(memfd_largepage_unknown_flag_einval)
{
	int fd = memfd_create("shmem", 0);

	/* MFD_LARGEPAGE is an unknown flag; the rest of memfd works. */
	EXPECT_ERRNO(memfd_create("lp", MFD_LARGEPAGE), EINVAL);
	EXPECT_TRUE(fd >= 0);
	close(fd);
}

TEST(no_pool_in_meminfo_or_sysctl)
{
	EXPECT_EQ(meminfo("LargePages_Total:"), -1);
	EXPECT_ERRNO(open(NUMLARGEPAGES, O_RDONLY), ENOENT);
}

TEST(next_upstream_syscall_numbers_enosys)
{
	/* 451..454 are cachestat, fchmodat2, ... upstream: not ours. */
	EXPECT_ERRNO(syscall(451, 0, 0, 0, 0), ENOSYS);
	EXPECT_ERRNO(syscall(452, 0, 0, 0, 0), ENOSYS);
}
