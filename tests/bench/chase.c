// SPDX-License-Identifier: GPL-2.0
/*
 * Random dependent loads over 256 MiB: one node in every 4 KiB page, at
 * a random cache line, linked in one random cycle (the same for every
 * kind); the time per load of p = *p.
 *
 * Under QEMU TCG this measures QEMU's software TLB and page walker, not
 * a hardware TLB: the numbers are emulated, not hardware results.
 */
#include "bench.h"

#define NPAGES (SEG_LEN / PAGE_4K)
#define LOADS (1U << 21)

enum { K_OURS, K_HUGETLB, K_4K, NKINDS };

static const char *const kind_name[] = {
	[K_OURS] = "get_large_pages",
	[K_HUGETLB] = "mmap_hugetlb",
	[K_4K] = "mmap_4k_nohugepage",
};

static uint32_t next_of[NPAGES];
static uint16_t line_of[NPAGES];

static uint32_t xorshift(void)
{
	static uint32_t x = 2463534242U;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* Sattolo's algorithm: a single cycle through every page. */
static void make_cycle(void)
{
	uint32_t i, j, t;

	for (i = 0; i < NPAGES; i++) {
		next_of[i] = i;
		line_of[i] = (xorshift() % (PAGE_4K / 64)) * 64;
	}
	for (i = NPAGES - 1; i > 0; i--) {
		j = xorshift() % i;
		t = next_of[i];
		next_of[i] = next_of[j];
		next_of[j] = t;
	}
}

static char *alloc(int kind)
{
	if (kind == K_OURS)
		return bench_map_ours();
	if (kind == K_HUGETLB)
		return bench_map_hugetlb();
	return bench_map_4k();
}

static void release(int kind, char *p)
{
	if (kind == K_OURS ? lpsys_free((unsigned long)p) : munmap(p, SEG_LEN))
		bench_die("free %s", kind_name[kind]);
}

static void *const *chase(void *const *p, unsigned int n)
{
	while (n--)
		p = *p;
	return p;
}

int main(int argc, char **argv)
{
	void *const *p;
	double t0, t1;
	int rep, kind;
	uint32_t i;
	char *base;

	bench_init("chase", argc, argv);
	make_cycle();
	for (rep = 0; rep < bench_reps; rep++) {
		for (kind = 0; kind < NKINDS; kind++) {
			base = alloc(kind);
			for (i = 0; i < NPAGES; i++)
				*(void **)(base + i * PAGE_4K + line_of[i]) =
					base + next_of[i] * PAGE_4K +
					line_of[next_of[i]];
			p = (void *const *)(base + line_of[0]);
			p = chase(p, NPAGES);	/* warm up */
			t0 = now_ms();
			p = chase(p, LOADS);
			t1 = now_ms();
			asm volatile("" : : "r"(p) : "memory");
			emit(kind_name[kind], 0, "ns_per_load", "ns", rep,
			     (t1 - t0) * 1e6 / LOADS);
			release(kind, base);
		}
	}
	return 0;
}
