// SPDX-License-Identifier: LGPL-2.1
/*
 * lpctl run --heap: the program's malloc() heap on large pages.
 *
 * glibc's malloc cannot be handed memory from a preload (it calls its own
 * internal mmap), so the heap is mimalloc's, preloaded before this
 * library (LD_PRELOAD=libmimalloc.so.2:liblargepage.so.1). At start the
 * constructor takes LARGEPAGE_HEAP bytes of large pages, 4 MiB-aligned
 * (mimalloc's segment size on 32-bit) and gives them to mimalloc as an
 * arena, committed and zeroed: mi_manage_os_memory(), looked up at run
 * time, so liblargepage needs no mimalloc to load. When the arena is
 * full mimalloc maps normal pages itself: that is the spill, counted
 * here from its mmap() and munmap() calls, which go through this
 * library's interposers.
 *
 * The region is get_large_pages(MAP_PRIVATE | LP_COPY_ON_FORK): fork(),
 * _Fork() and clone() give the child its own copy, made by the kernel,
 * atomically (from the pool, or normal pages when the pool is short). A
 * kernel without that flag gets no heap region: a child's heap must be
 * neither a hole nor shared with its parent.
 *
 * LARGEPAGE_HEAP is removed from the environment once read, and mimalloc
 * from LD_PRELOAD, so programs this one executes take no region of their
 * own and load no mimalloc, unless LARGEPAGE_HEAP_EXEC=1.
 * LARGEPAGE_HEAP_REPORT=1 (stderr) or =/PATH (appended) reports at exit
 * what the pool served and what spilled; a heap that spilled says so at
 * exit anyway.
 */
#include <asm/unistd_32.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "largepage.h"
#include "preload.h"

#if __has_include(<linux/largepage.h>)
#include <linux/largepage.h>
#endif
#ifndef LP_COPY_ON_FORK
#define LP_COPY_ON_FORK	0x200000
#endif

#define HEAP_ENV	"LARGEPAGE_HEAP"
#define HEAP_EXEC_ENV	"LARGEPAGE_HEAP_EXEC"
#define HEAP_REPORT_ENV	"LARGEPAGE_HEAP_REPORT"
#define MIMALLOC_SO	"libmimalloc.so.2"
#define HEAP_ALIGN	(4UL << 20)	/* mimalloc's segment on 32-bit */
#define SPILL_MIN	(64UL << 10)	/* smaller: mimalloc's metadata */
#define MAX_SPILLS	256

typedef _Bool mi_manage_fn(void *, size_t, _Bool, _Bool, _Bool, int);

static unsigned long region, region_len;	/* 0: no heap */
static unsigned long mi_lo, mi_hi;		/* mimalloc's code */
static int heap_on;				/* counting spills */
static pthread_mutex_t spill_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { unsigned long start, end; } spills[MAX_SPILLS];
static unsigned long spill_now, spill_peak, spill_maps;
/* stderr, kept: programs (coreutils) close fd 2 in an atexit handler. */
static int report_fd = -1;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(msg))
		n = sizeof(msg) - 1;
	while (write(STDERR_FILENO, msg, n) < 0 && errno == EINTR)
		;
}

/* "128M", "1G", "4096", "64k": bytes; 0 when malformed. */
static unsigned long parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v > 0xffffffffULL)
		return 0;
	return v;
}

/* The address range of the object that defines mi_manage_os_memory. */
static int find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long addr = (unsigned long)arg, lo = -1UL, hi = 0;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (addr < lo || addr >= hi)
		return 0;
	mi_lo = lo;
	mi_hi = hi;
	return 1;
}

static int from_mimalloc(const void *caller)
{
	unsigned long a = (unsigned long)caller;

	return a >= mi_lo && a < mi_hi;
}

/* mimalloc mapped [p, p + len) for itself: outside the region, a spill. */
LP_HIDDEN void lp_heap_note_mmap(const void *caller, void *p, size_t len)
{
	int i;

	if (!__atomic_load_n(&heap_on, __ATOMIC_RELAXED) || p == MAP_FAILED ||
	    len < SPILL_MIN || !from_mimalloc(caller))
		return;
	pthread_mutex_lock(&spill_lock);
	spill_maps++;
	spill_now += len;
	if (spill_now > spill_peak)
		spill_peak = spill_now;
	for (i = 0; i < MAX_SPILLS; i++) {
		if (!spills[i].end) {
			spills[i].start = (unsigned long)p;
			spills[i].end = (unsigned long)p + len;
			break;
		}
	}
	pthread_mutex_unlock(&spill_lock);
}

/* mimalloc unmapped a range: what of a spill it covers is given back. */
LP_HIDDEN void lp_heap_note_munmap(const void *caller, void *addr_p,
				   size_t len)
{
	unsigned long addr = (unsigned long)addr_p, end = addr + len;
	int i;

	if (!__atomic_load_n(&heap_on, __ATOMIC_RELAXED) ||
	    !from_mimalloc(caller))
		return;
	pthread_mutex_lock(&spill_lock);
	for (i = 0; i < MAX_SPILLS; i++) {
		unsigned long s = spills[i].start, e = spills[i].end;

		if (!e || e <= addr || s >= end)
			continue;
		/* Trimmed at the head or the tail, or gone. */
		if (addr <= s && end >= e) {
			spills[i].end = 0;
		} else if (addr <= s) {
			spills[i].start = end;
		} else if (end >= e) {
			spills[i].end = addr;
		} else {
			continue;	/* a hole in the middle: counted below */
		}
		spill_now -= (e < end ? e : end) - (s > addr ? s : addr);
	}
	pthread_mutex_unlock(&spill_lock);
}

/* Bytes of the region mimalloc has ever written: 4 MiB blocks not zero. */
static unsigned long region_used(void)
{
	unsigned long b, used = 0;

	for (b = region; b < region + region_len; b += HEAP_ALIGN) {
		const unsigned long *w = (const unsigned long *)b;
		size_t i, n = HEAP_ALIGN / sizeof(*w);

		for (i = 0; i < n && !w[i]; i++)
			;
		if (i < n)
			used += HEAP_ALIGN;
	}
	return used;
}

static int status_line(const char *line, void *arg)
{
	if (strncmp(line, "LargePages:", 11))
		return 0;
	*(long *)arg = strtol(line + 11, NULL, 10);
	return 1;
}

__attribute__((destructor)) static void heap_report(void)
{
	const char *to = getenv(HEAP_REPORT_ENV);
	unsigned long peak, maps;
	long large_kb = -1;
	char line[320];
	int n, fd;

	if (!region)
		return;
	pthread_mutex_lock(&spill_lock);
	peak = spill_peak;
	maps = spill_maps;
	pthread_mutex_unlock(&spill_lock);
	if (!(to && *to && strcmp(to, "0")) && !peak)
		return;
	lp_scan_lines("/proc/self/status", status_line, &large_kb);
	n = snprintf(line, sizeof(line),
		     "liblargepage: heap pid=%d start=%#lx region=%lu used=%lu large_kb=%ld spilled=%lu spill_maps=%lu\n",
		     (int)getpid(), region, region_len, region_used(),
		     large_kb, peak, maps);
	if (n <= 0 || n >= (int)sizeof(line))
		return;
	if (to && to[0] == '/') {
		fd = open(to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			if (write(fd, line, n) < 0)
				n = -1;
			close(fd);
			return;
		}
	}
	fd = report_fd >= 0 ? report_fd : STDERR_FILENO;
	while (write(fd, line, n) < 0 && errno == EINTR)
		;
}

/*
 * Take NAME out of environ, in place, as glibc's unsetenv() does. Not
 * unsetenv() itself: a program may define its own, which the call would
 * reach, and bash's acts on its shell variables, made in main(), not on
 * environ: under bash every program it ran took a heap of its own.
 */
static void env_drop(const char *name)
{
	size_t len = strlen(name);
	char **ep = environ, **dp;

	while (ep && *ep) {
		if (strncmp(*ep, name, len) || (*ep)[len] != '=') {
			ep++;
			continue;
		}
		dp = ep;
		do
			dp[0] = dp[1];
		while (*dp++);
	}
}

/*
 * mimalloc is preloaded first for the heap alone (lpctl run --heap puts
 * it there). The programs this one runs get no heap, so it leaves their
 * LD_PRELOAD: each would load and start it for nothing, at every exec.
 * liblargepage stays, and still serves their hugetlbfs requests. A mimalloc the user preloaded after it stays
 * too. In place, before main(), as env_drop().
 */
static void env_drop_mimalloc(void)
{
	static const char var[] = "LD_PRELOAD=";
	static char buf[1024];
	char **ep, *v, *end, *base;

	for (ep = environ; ep && *ep; ep++)
		if (!strncmp(*ep, var, sizeof(var) - 1))
			break;
	if (!ep || !*ep)
		return;
	v = *ep + sizeof(var) - 1;
	end = v + strcspn(v, ": ");
	for (base = end; base > v && base[-1] != '/'; base--)
		;
	if ((size_t)(end - base) != strlen(MIMALLOC_SO) ||
	    strncmp(base, MIMALLOC_SO, end - base))
		return;
	end += strspn(end, ": ");
	if (!*end)
		env_drop("LD_PRELOAD");
	else if (snprintf(buf, sizeof(buf), "%s%s", var, end) < (int)sizeof(buf))
		*ep = buf;
}

/*
 * Called by the preload's constructor, before the program has threads.
 * Every failure leaves the program running on mimalloc's normal pages,
 * with one warning.
 */
LP_HIDDEN void lp_heap_init(void)
{
	const char *v = getenv(HEAP_ENV), *ex = getenv(HEAP_EXEC_ENV);
	unsigned long len, rsv_len, addr;
	mi_manage_fn *manage;
	void *rsv;
	long r, ps;

	if (!v || !*v)
		return;
	len = parse_size(v);
	if (!(ex && *ex && strcmp(ex, "0"))) {
		env_drop(HEAP_ENV);
		env_drop_mimalloc();
	}
	if (!len) {
		say("liblargepage: " HEAP_ENV "=%s: not a size, no heap\n", v);
		return;
	}
	/*
	 * Nothing here may call malloc() before manage(): mimalloc's first
	 * malloc() takes its first segment, and the program's first 4 MiB
	 * of heap would be normal pages for good. dlopen() allocates;
	 * dlsym() of a symbol it finds does not.
	 */
	manage = (mi_manage_fn *)dlsym(RTLD_DEFAULT, "mi_manage_os_memory");
	if (!manage) {
		say("liblargepage: no heap: " MIMALLOC_SO " is not preloaded before liblargepage.so.1 (lpctl run --heap does that)\n");
		return;
	}
	dl_iterate_phdr(find_code, (void *)manage);
	ps = lp_page_size();
	if (ps <= 0) {
		say("liblargepage: no heap: this kernel has no large pages\n");
		return;
	}
	len = (len + HEAP_ALIGN - 1) & ~(HEAP_ALIGN - 1);
	/*
	 * A 4 MiB-aligned hole for the hint; the kernel keeps the hint.
	 * libc's mmap() and munmap(): mmap.c's interposers call this file,
	 * never the other way round (and would pass these two to libc).
	 */
	rsv_len = len + HEAP_ALIGN;
	rsv = REAL(mmap, "mmap")(NULL, rsv_len, PROT_NONE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);
	if (rsv == MAP_FAILED) {
		say("liblargepage: no heap: no room for %lu bytes\n", len);
		return;
	}
	addr = ((unsigned long)rsv + HEAP_ALIGN - 1) & ~(HEAP_ALIGN - 1);
	REAL(munmap, "munmap")(rsv, rsv_len);
	r = syscall(__NR_get_large_pages, addr, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | LP_COPY_ON_FORK);
	if (r == -1) {
		int err = errno;

		say("liblargepage: no heap of %lu bytes on large pages: %s\n",
		    len, err == EINVAL ?
		    "this kernel cannot copy a heap at fork (no LP_COPY_ON_FORK)" :
		    strerror(err));
		return;
	}
	if (r & (HEAP_ALIGN - 1)) {
		syscall(__NR_free_large_pages, r);
		say("liblargepage: no heap: the region was not 4 MiB-aligned\n");
		return;
	}
	region = r;
	region_len = len;
	report_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 64);
	__atomic_store_n(&heap_on, 1, __ATOMIC_RELAXED);
	/* Committed and zeroed; not "large": mimalloc skips those for new threads. */
	if (!manage((void *)region, len, 1, 0, 1, -1)) {
		__atomic_store_n(&heap_on, 0, __ATOMIC_RELAXED);
		syscall(__NR_free_large_pages, region);
		region = 0;
		say("liblargepage: no heap: mimalloc refused the region\n");
	}
}
