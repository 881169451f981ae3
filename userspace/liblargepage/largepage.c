// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage: thin wrappers around the large-page system calls and the
 * pool's files. The syscall numbers come from the patched kernel's uapi
 * <asm/unistd_32.h>; nothing here is hardcoded.
 */
#include <asm/unistd_32.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "largepage.h"
#include "lp-internal.h"

#ifndef __NR_get_large_pages
#error "build against the uapi headers of the large-page kernel (KHDR)"
#endif

#define MEMINFO_PATH "/proc/meminfo"

int lp_scan_lines(const char *path, int (*fn)(const char *line, void *arg),
		  void *arg)
{
	char buf[1024], line[LP_LINE_MAX];
	size_t used = 0;
	int fd, ret = 0, err;
	ssize_t n, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (!ret && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -1;
			break;
		}
		for (i = 0; i < n && !ret; i++) {
			if (buf[i] != '\n') {
				/* Keep the start of an overlong line only. */
				if (used < sizeof(line) - 1)
					line[used++] = buf[i];
				continue;
			}
			line[used] = '\0';
			used = 0;
			ret = fn(line, arg);
		}
	}
	if (!ret && used) {
		line[used] = '\0';
		ret = fn(line, arg);
	}
	err = errno;
	close(fd);
	errno = err;
	return ret < 0 ? -1 : ret;
}

struct meminfo_keys {
	const char *const *keys;
	long *vals;
	int nkeys, found;
};

static int meminfo_line(const char *line, void *arg)
{
	struct meminfo_keys *mk = arg;
	int i;

	for (i = 0; i < mk->nkeys; i++) {
		size_t n = strlen(mk->keys[i]);

		if (mk->vals[i] < 0 && !strncmp(line, mk->keys[i], n)) {
			mk->vals[i] = strtol(line + n, NULL, 10);
			mk->found++;
			break;
		}
	}
	return mk->found == mk->nkeys;
}

/*
 * Read the meminfo values for the keys given (NULL-terminated, "Key:"
 * with the colon) into vals. 0 when all were found, else -1 with ENOSYS
 * (a line is missing: no large pages in this kernel) or the errno of the
 * open. No stdio and no allocation: liblargepage.so calls this from
 * inside mmap() and shmget().
 */
static int meminfo_read(const char *const *keys, long *vals)
{
	struct meminfo_keys mk = { keys, vals, 0, 0 };

	for (mk.nkeys = 0; keys[mk.nkeys]; mk.nkeys++)
		vals[mk.nkeys] = -1;
	if (lp_scan_lines(MEMINFO_PATH, meminfo_line, &mk) < 0)
		return -1;
	if (mk.found < mk.nkeys) {
		errno = ENOSYS;
		return -1;
	}
	return 0;
}

long lp_page_size(void)
{
	static const char *const keys[] = { "LargePageSize:", NULL };
	long kb;

	if (meminfo_read(keys, &kb))
		return -1;
	return kb * 1024;
}

int lp_pool(long *total, long *free)
{
	static const char *const keys[] = {
		"LargePages_Total:", "LargePages_Free:", NULL
	};
	long vals[2];

	if (meminfo_read(keys, vals))
		return -1;
	if (total)
		*total = vals[0];
	if (free)
		*free = vals[1];
	return 0;
}

/* A syscall() result as an address: NULL for -1 (errno is set). */
static void *lp_addr(long ret)
{
	return ret == -1 ? NULL : (void *)(uintptr_t)(unsigned long)ret;
}

void *lp_alloc(size_t len, int prot, int flags)
{
	return lp_addr(syscall(__NR_get_large_pages, 0UL, (unsigned long)len,
			       prot, flags));
}

int lp_free(void *addr)
{
	return syscall(__NR_free_large_pages, (unsigned long)(uintptr_t)addr)
		? -1 : 0;
}

void *lp_share(int key, size_t len, int prot, int flags)
{
	return lp_addr(syscall(__NR_share_large_pages, key, 0UL,
			       (unsigned long)len, prot, flags));
}

int lp_unshare(void *addr)
{
	return syscall(__NR_unshare_large_pages,
		       (unsigned long)(uintptr_t)addr) ? -1 : 0;
}

int lp_resize(long delta)
{
	char buf[32];
	int fd, len, err = 0;

	fd = open(LP_SYSCTL_PATH, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		/* No sysctl: the kernel has no large-page pool at all. */
		if (errno == ENOENT)
			errno = ENOSYS;
		return -1;
	}
	len = snprintf(buf, sizeof(buf), "%ld\n", delta);
	errno = 0;
	if (write(fd, buf, len) != len)
		err = errno ? errno : EIO;
	close(fd);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
