/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the large-page tests: the four system calls (numbers from
 * the patched kernel's uapi <asm/unistd_32.h>), the pool counters, and
 * the conservation check run after every test.
 */
#ifndef LP_TEST_LP_H
#define LP_TEST_LP_H

#include <asm/unistd_32.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "harness.h"

#ifndef __NR_get_large_pages
#error "the uapi headers are not those of the patched kernel"
#endif

static inline long lp_get(unsigned long addr, unsigned long len, int prot,
			  int flags)
{
	return syscall(__NR_get_large_pages, addr, len, prot, flags);
}

static inline long lp_free(unsigned long addr)
{
	return syscall(__NR_free_large_pages, addr);
}

static inline long lp_share(int key, unsigned long addr, unsigned long len,
			    int prot, int flag)
{
	return syscall(__NR_share_large_pages, key, addr, len, prot, flag);
}

static inline long lp_unshare(unsigned long addr)
{
	return syscall(__NR_unshare_large_pages, addr);
}

/* A mapping address from a syscall() return value. */
#define LP_PTR(r) ((char *)(uintptr_t)(unsigned long)(r))
#define LP_OK(r) ((unsigned long)(r) < (unsigned long)-4095)

/* A /proc/meminfo value ("Key:" with the colon), or -1. */
static inline long meminfo(const char *key)
{
	char line[256];
	long val = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n)) {
			val = strtol(line + n, NULL, 10);
			break;
		}
	}
	fclose(f);
	return val;
}

static inline long lp_total(void) { return meminfo("LargePages_Total:"); }
static inline long lp_nfree(void) { return meminfo("LargePages_Free:"); }

/* The large page size in bytes, from meminfo. */
static inline unsigned long lp_size(void)
{
	static unsigned long size;

	if (!size)
		size = (unsigned long)meminfo("LargePageSize:") * 1024;
	return size;
}

/* An integer from a file such as /proc/sys/kernel/numlargepages, or -1. */
static inline long read_long(const char *path)
{
	char buf[64] = "";
	long v = -1;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) > 0)
		v = strtol(buf, NULL, 10);
	close(fd);
	return v;
}

/* Write text to a file; 0 or -errno. */
static inline int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

#define NUMLARGEPAGES "/proc/sys/kernel/numlargepages"

/* Grow (n > 0) or shrink the pool; 0 or -errno. */
static inline int lp_resize(long n)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", n);
	return write_text(NUMLARGEPAGES, buf);
}

/*
 * Conservation: with every test process gone, every page is free and the
 * sysctl agrees with meminfo. Exits may release in the background for a
 * moment (a GUP pin dropped late), so allow a short settle.
 */
static inline int lp_conservation(const char *when)
{
	long total = -1, nfree = -1, sysctl = -1;
	int i;

	for (i = 0; i < 50; i++) {
		total = lp_total();
		nfree = lp_nfree();
		sysctl = read_long(NUMLARGEPAGES);
		if (total >= 0 && total == nfree && sysctl == total)
			return 0;
		usleep(20000);
	}
	printf("# conservation broken after %s: LargePages_Total %ld, LargePages_Free %ld, numlargepages %ld\n",
	       when, total, nfree, sysctl);
	return -1;
}

#ifndef LP_NO_CONSERVATION
__attribute__((constructor)) static void lp_register_conservation(void)
{
	harness_after_each = lp_conservation;
}
#endif

/* Run fn in a child; return its wait status. */
static inline int run_child(void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

#define CHILD_SIGNALED(st, sig) (WIFSIGNALED(st) && WTERMSIG(st) == (sig))
#define CHILD_EXITED(st, code) (WIFEXITED(st) && WEXITSTATUS(st) == (code))

/* Become an unprivileged user (nobody) for the rest of the process. */
static inline void become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534)) {
		printf("# cannot become nobody: %s\n", strerror(errno));
		_exit(1);
	}
}

/* Does touching addr (read, or write) fault? Tested in a child. */
static inline int touch_faults(volatile char *addr, int write)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (write)
			*addr = 1;
		else
			(void)*addr;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return CHILD_SIGNALED(status, SIGSEGV) || CHILD_SIGNALED(status, SIGBUS);
}

#endif /* LP_TEST_LP_H */
