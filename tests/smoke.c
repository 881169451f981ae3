// SPDX-License-Identifier: GPL-2.0
/* The guest itself: enough CPUs for the race tests, the expected kernel. */
#include <sys/utsname.h>
#include "harness.h"

TEST(guest_has_two_cpus)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		TH_LOG("races need SMP: only %ld CPU online", n);
	ASSERT_GE(n, 2);
}

TEST(guest_runs_32bit_kernel)
{
	struct utsname u;

	ASSERT_EQ(uname(&u), 0);
	TH_LOG("%s %s %s", u.sysname, u.release, u.machine);
	ASSERT_EQ(strcmp(u.machine, "i686"), 0);
}
