// SPDX-License-Identifier: GPL-2.0
/*
 * Global memory pressure with large pages held: an anonymous hog eats
 * every free 4 KiB page until the global OOM killer kills it. The pool
 * is not reclaimable memory: it must come through untouched (not
 * shrunk, no page lost or handed out), the segments' data intact, and
 * the OOM killer must take the hogs (which inherit the keyed segment,
 * so their deaths detach it too), not the holder, which asks for that
 * with oom_score_adj as a database would. scripts/check-log allows the
 * global OOM kills of processes named lptest-hog only; any other OOM
 * kill fails the run.
 */
#include <sys/prctl.h>
#include "lp.h"

#define PRESSURE_KEY 0x50520000

/* Eat anonymous memory, a page at a time, until killed. */
static void hog(void)
{
	const unsigned long chunk = 16UL << 20;

	prctl(PR_SET_NAME, "lptest-hog");
	write_text("/proc/self/oom_score_adj", "1000\n");
	for (;;) {
		char *p = mmap(NULL, chunk, RW, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		unsigned long off;

		if (p == MAP_FAILED) {
			usleep(1000);	/* out of address space: wait for the killer */
			continue;
		}
		madvise(p, chunk, MADV_NOHUGEPAGE);
		for (off = 0; off < chunk; off += 4096)
			p[off] = 1;
	}
}

TEST(global_oom_kills_the_hog_and_leaves_the_pool_whole)
{
	unsigned long sz = lp_size();
	long total = lp_total(), priv, keyed, r;
	int st, i, hogs = 0;
	pid_t pid;

	ASSERT_GE(total, 4);
	/* The holder must not be the victim: say so, as a DBA would. */
	ASSERT_EQ(write_text("/proc/self/oom_score_adj", "-1000\n"), 0);
	priv = lpsys_get(0, 2 * sz, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(priv));
	keyed = lpsys_share(PRESSURE_KEY, 0, sz, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(keyed));
	lp_fill((char *)priv, 2 * sz, 0x1234);
	lp_fill((char *)keyed, sz, 0x5678);
	ASSERT_EQ(lp_nfree(), total - 3);

	/*
	 * A 32-bit process has 3 GiB of address space; the guest has 2 GiB
	 * of RAM of which the pool holds a quarter. Two hogs at once make
	 * sure the system, not one address space, runs out.
	 */
	for (i = 0; i < 2; i++) {
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0)
			hog();
	}
	for (i = 0; i < 2; i++) {
		pid = wait(&st);
		ASSERT_GT(pid, 0);
		if (CHILD_SIGNALED(st, SIGKILL))
			hogs++;
		else
			TH_LOG("hog %d ended with status %#x", pid, st);
	}
	EXPECT_EQ(hogs, 2);

	/* The pool neither shrank nor gave a page away under pressure. */
	EXPECT_EQ(lp_total(), total);
	EXPECT_EQ(lp_nfree(), total - 3);
	EXPECT_EQ(read_long(NUMLARGEPAGES), total);
	EXPECT_EQ(lp_check((char *)priv, 2 * sz, 0x1234), 1);
	EXPECT_EQ(lp_check((char *)keyed, sz, 0x5678), 1);

	/* And it still works: a page taken now comes zeroed. */
	r = lpsys_get(0, sz, RW, MAP_PRIVATE);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_zeroed((char *)r, sz), 1);
	EXPECT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lpsys_free(priv), 0);
	EXPECT_EQ(lpsys_unshare(keyed), 0);
	EXPECT_EQ(lp_key_absent(PRESSURE_KEY, sz), 1);
}

__attribute__((constructor)) static void pressure_timeout(void)
{
	harness_timeout = 300;
}
