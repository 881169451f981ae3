// SPDX-License-Identifier: GPL-2.0
/*
 * Setup cost of 256 MiB: allocate, touch every byte once (memset), free;
 * reported per GiB. Also the allocating call alone: get_large_pages maps
 * pages that largepage_zerod zeroed in the background (warm: the run
 * waits for it first) or zeroes them itself (cold: right after every
 * free page was taken and freed, before the thread could get to them);
 * mmap(MAP_HUGETLB) only reserves and zeroes at first touch, like 4 KiB
 * anonymous memory. The floor is a memset of a buffer already mapped and
 * touched (4 KiB pages, THP off); under emulation a memset over a
 * large-page mapping can come out near or even below it.
 */
#include "bench.h"

enum { K_OURS, K_OURS_COLD, K_HUGETLB, K_4K, K_FLOOR, NKINDS };

static const char *const kind_name[] = {
	[K_OURS] = "get_large_pages",
	[K_OURS_COLD] = "get_large_pages_cold",
	[K_HUGETLB] = "mmap_hugetlb",
	[K_4K] = "mmap_4k_nohugepage",
	[K_FLOOR] = "memset_premapped",
};

static char *alloc(int kind)
{
	if (kind == K_OURS || kind == K_OURS_COLD)
		return bench_map_ours();
	if (kind == K_HUGETLB)
		return bench_map_hugetlb();
	return bench_map_4k();
}

static void release(int kind, char *p)
{
	if (kind == K_OURS || kind == K_OURS_COLD ?
	    lpsys_free((unsigned long)p) : munmap(p, SEG_LEN))
		bench_die("free %s", kind_name[kind]);
}

int main(int argc, char **argv)
{
	const double per_gib = 1024.0 * MiB / SEG_LEN;
	double t0, t1, t2, t3;
	struct faults f;
	int rep, kind;
	char *p;

	bench_init("setup", argc, argv);
	for (rep = 0; rep < bench_reps; rep++) {
		for (kind = 0; kind < NKINDS; kind++) {
			const char *name = kind_name[kind];

			if (kind == K_FLOOR) {
				p = bench_map_4k();
				memset(p, 0, SEG_LEN);
				f = faults_now(RUSAGE_SELF);
				t0 = now_ms();
				memset(p, rep + 1, SEG_LEN);
				asm volatile("" : : "r"(p) : "memory");
				t1 = now_ms();
				f = faults_since(f, RUSAGE_SELF);
				munmap(p, SEG_LEN);
				emit(name, 0, "setup_ms_per_GiB", "ms", rep,
				     (t1 - t0) * per_gib);
				emit(name, 0, "minflt", "count", rep, f.minflt);
				emit(name, 0, "majflt", "count", rep, f.majflt);
				continue;
			}
			if (kind == K_OURS)
				zeroing_settle_ms();
			if (kind == K_OURS_COLD)
				lp_dirty_pool();
			f = faults_now(RUSAGE_SELF);
			t0 = now_ms();
			p = alloc(kind);
			t1 = now_ms();
			memset(p, rep + 1, SEG_LEN);
			asm volatile("" : : "r"(p) : "memory");
			t2 = now_ms();
			release(kind, p);
			t3 = now_ms();
			f = faults_since(f, RUSAGE_SELF);
			emit(name, 0, "setup_ms_per_GiB", "ms", rep,
			     (t3 - t0) * per_gib);
			emit(name, 0, "alloc_call_ms", "ms", rep, t1 - t0);
			emit(name, 0, "touch_ms_per_GiB", "ms", rep,
			     (t2 - t1) * per_gib);
			emit(name, 0, "free_call_ms", "ms", rep, t3 - t2);
			emit(name, 0, "minflt", "count", rep, f.minflt);
			emit(name, 0, "majflt", "count", rep, f.majflt);
		}
	}
	return 0;
}
