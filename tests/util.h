/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the tests that make no large-page system call: /proc and
 * sysctl files, the pool's counters read from meminfo, the conservation
 * check run after every test, children and peers, the data pattern.
 * lp.h adds the raw calls (lpsys.h) and the helpers built on them;
 * liblp.c, which tests liblargepage's functions of the same purpose,
 * includes this one alone.
 */
#ifndef LP_TEST_UTIL_H
#define LP_TEST_UTIL_H

#include <linux/capability.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "maps.h"
#include "meminfo.h"

/* The protection of nearly every mapping the tests make. */
#define RW (PROT_READ | PROT_WRITE)
/* nobody's uid and gid, what become_nobody() drops to. */
#define NOBODY 65534

/* The monotonic clock, in seconds. */
static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * write() (wr) or read() all of buf, in as many calls as it takes: len,
 * or -1.
 */
static inline ssize_t rw_all(int fd, char *buf, size_t len, int wr)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = wr ? write(fd, buf + done, len - done) :
			 read(fd, buf + done, len - done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return done;
}

static inline ssize_t write_all(int fd, const char *buf, size_t len)
{
	return rw_all(fd, (char *)buf, len, 1);
}

static inline ssize_t read_all(int fd, char *buf, size_t len)
{
	return rw_all(fd, buf, len, 0);
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

/*
 * A small file (/proc, /sys) in one read(2), no stdio buffer, into buf,
 * NUL-terminated ("" if it cannot be read): its length, or -1.
 */
static inline ssize_t read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY);

	buf[0] = '\0';
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* An integer from a file such as /proc/sys/kernel/numlargepages, or -1. */
static inline long read_long(const char *path)
{
	char buf[64];

	return read_text(path, buf, sizeof(buf)) > 0 ? strtol(buf, NULL, 10) : -1;
}

/* The lines of a text file that hold needle (NULL: all of them), or -1. */
static inline int file_lines(const char *path, const char *needle)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !needle || strstr(line, needle);
	fclose(f);
	return n;
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

/* Drop capability cap from the effective and permitted sets; 0 or -1. */
static inline int lp_drop_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[cap / 32].effective &= ~(1U << (cap % 32));
	d[cap / 32].permitted &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &h, d);
}

/* debugfs at its usual place, mounted if it is not (0, or -errno). */
#define DEBUGFS "/sys/kernel/debug"
static inline int lp_debugfs(void)
{
	struct stat st, up;

	if (stat(DEBUGFS, &st) || stat("/sys/kernel", &up))
		return -errno;
	if (st.st_dev != up.st_dev)
		return 0;
	if (mount("debugfs", DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	return 0;
}

#define NUMLARGEPAGES "/proc/sys/kernel/numlargepages"

/* Grow (n > 0) or shrink the pool; 0 or -errno. */
static inline int sysctl_resize(long n)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", n);
	return write_text(NUMLARGEPAGES, buf);
}

/*
 * Bring the pool back to total pages through numlargepages, in up to
 * five writes; its size then.
 */
static inline long pool_restore(long total)
{
	long t = lp_total();
	int i;

	for (i = 0; i < 5 && t != total; i++) {
		sysctl_resize(total - t);
		t = lp_total();
	}
	return t;
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

/*
 * The value of name (with its '=') on the kernel command line, up to the
 * next blank, copied to val; NULL if the line has no such word.
 */
static inline const char *cmdline_value(const char *name, char *val,
					size_t size)
{
	char buf[4096], *w, *save = NULL;
	const char *ret = NULL;

	read_text("/proc/cmdline", buf, sizeof(buf));
	for (w = strtok_r(buf, " \t\n", &save); w;
	     w = strtok_r(NULL, " \t\n", &save)) {
		if (!strncmp(w, name, strlen(name))) {
			snprintf(val, size, "%s", w + strlen(name));
			ret = val;
		}
	}
	return ret;
}

/* lpflavour= on the kernel command line (scripts/boot sets it), or "". */
static inline const char *lp_flavour(void)
{
	static char name[32];

	return cmdline_value("lpflavour=", name, sizeof(name)) ? name : "";
}

/*
 * The pfn of the page mapped at p, from /proc/self/pagemap (root sees
 * pfns), or 0.
 */
static inline unsigned long lp_pfn_of(const char *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096) * 8) != 8)
		e = 0;
	close(fd);
	return e >> 63 ? (unsigned long)(e & ((1ULL << 55) - 1)) : 0;
}

/*
 * The value of "key N" in a flat-keyed file (a cgroup's memory.events,
 * misc.current), or -1 if it has no such line.
 */
static inline long flat_read(const char *path, const char *key)
{
	char name[64];
	long v, ret = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", name, &v) == 2)
		if (!strcmp(name, key))
			ret = v;
	fclose(f);
	return ret;
}

static inline long cg_value(const char *cg, const char *file, const char *key)
{
	char path[320];

	snprintf(path, sizeof(path), "%.200s/%s", cg, file);
	return flat_read(path, key);
}

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

/* Each evaluates st once: it may be a call (run_child(), lp_peer_wait()). */
#define CHILD_SIGNALED(st, sig) \
	({ int __st = (st); WIFSIGNALED(__st) && WTERMSIG(__st) == (sig); })
#define CHILD_EXITED(st, code) \
	({ int __st = (st); WIFEXITED(__st) && WEXITSTATUS(__st) == (code); })

/*
 * The kB of a "Key: N kB" line of /proc/PID/status (0: this process),
 * such as LargePages: or VmPTE:; -1 if there is no such line.
 */
static inline long status_kb(pid_t pid, const char *key)
{
	FILE *f = lp_proc_fopen(pid, "status");
	size_t len = strlen(key);
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) &&
		    sscanf(line + len, " %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Become an unprivileged user (nobody) for the rest of the process. */
static inline void become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		printf("# cannot become nobody: %s\n", strerror(errno));
		_exit(1);
	}
}

/* Become nobody in no group but gid, for the rest of the process. */
static inline void become_nobody_in(gid_t gid)
{
	if (setgroups(1, &gid) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		printf("# cannot become nobody in group %d: %s\n", (int)gid,
		       strerror(errno));
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

/*
 * The test pattern: a word at every 4 KiB and one at the end, distinct
 * per seed, so that a page lost, swapped or shifted shows.
 */
static inline void lp_fill(char *p, unsigned long len, uint32_t seed)
{
	unsigned long off;

	for (off = 0; off < len; off += 4096)
		*(volatile uint32_t *)(p + off) = seed ^ (uint32_t)off;
	*(volatile uint32_t *)(p + len - 4) = ~seed;
}

/* Does p hold lp_fill()'s pattern for seed? Logs the first bad word. */
static inline int lp_check(const char *p, unsigned long len, uint32_t seed)
{
	unsigned long off;
	uint32_t v;

	for (off = 0; off < len; off += 4096) {
		v = *(const volatile uint32_t *)(p + off);
		if (v != (seed ^ (uint32_t)off)) {
			TH_LOG("word at +%#lx is %#x, expected %#x", off, v,
			       seed ^ (uint32_t)off);
			return 0;
		}
	}
	v = *(const volatile uint32_t *)(p + len - 4);
	if (v != ~seed) {
		TH_LOG("last word is %#x, expected %#x", v, ~seed);
		return 0;
	}
	return 1;
}

/* Are the first and last word of every 4 KiB page zero? */
static inline int lp_zeroed(const char *p, unsigned long len)
{
	unsigned long off;

	for (off = 0; off < len; off += 4096)
		if (*(const volatile uint32_t *)(p + off) ||
		    *(const volatile uint32_t *)(p + off + 4092))
			return 0;
	return 1;
}
/*
 * The value of expr once it is want, read again every 20 ms up to tries
 * times, or its last value.
 */
#define SETTLE(expr, want, tries) ({					\
	long __v = (expr);						\
	int __i;							\
									\
	for (__i = 0; __i < (tries) && __v != (want); __i++) {		\
		usleep(20000);						\
		__v = (expr);						\
	}								\
	__v;								\
})

/* LargePages_Free once it reaches want, or its value after a second. */
static inline long lp_settle_nfree(long want)
{
	return SETTLE(lp_nfree(), want, 50);
}

/* The number of lines (mappings) in /proc/self/maps, or -1. */
static inline int lp_maps_lines(void)
{
	return file_lines("/proc/self/maps", NULL);
}

/*
 * An address aligned to align with size bytes free above it: reserve
 * size + align bytes, note the aligned start, release them. 0 on failure.
 */
static inline unsigned long lp_unmapped_range(unsigned long size,
					      unsigned long align)
{
	void *p = mmap(NULL, size + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long a;

	if (p == MAP_FAILED)
		return 0;
	a = ((unsigned long)p + align - 1) & ~(align - 1);
	munmap(p, size + align);
	return a;
}

/* Set RLIMIT_MEMLOCK (soft and hard) to bytes, or exit. */
static inline void lp_set_memlock(rlim_t bytes)
{
	struct rlimit rl = { bytes, bytes };

	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		printf("# setrlimit(RLIMIT_MEMLOCK): %s\n", strerror(errno));
		_exit(1);
	}
}

/*
 * A peer: a child forked with a pipe each way, for the holder handshake
 * (the child maps or attaches, lp_peer_send()s that it is ready, then
 * waits in lp_peer_recv() until the test lets it go).
 */
struct lp_peer {
	pid_t pid;
	int rfd, wfd;
};

/* fork() with the pipes; returns the pid as fork() does (-1 on failure). */
static inline pid_t lp_peer_fork(struct lp_peer *p)
{
	int down[2], up[2];

	p->pid = -1;
	if (pipe(down) || pipe(up))
		return -1;
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		close(down[1]);
		close(up[0]);
		p->rfd = down[0];
		p->wfd = up[1];
	} else {
		close(down[0]);
		close(up[1]);
		p->rfd = up[0];
		p->wfd = down[1];
	}
	return p->pid;
}

/* Send a value to the other side; exit if it cannot be sent. */
static inline void lp_peer_send(struct lp_peer *p, long v)
{
	if (write(p->wfd, &v, sizeof(v)) != sizeof(v)) {
		printf("# peer_send: %s\n", strerror(errno));
		_exit(1);
	}
}

/* The other side's next value; if it is gone, this side fails too. */
static inline long lp_peer_recv(struct lp_peer *p)
{
	long v;

	if (read(p->rfd, &v, sizeof(v)) != sizeof(v)) {
		printf("# peer_recv: the other process is gone\n");
		_exit(1);
	}
	return v;
}

/* In the parent: close the pipes (the child sees EOF), reap the child. */
static inline int lp_peer_wait(struct lp_peer *p)
{
	int status = -1;

	close(p->rfd);
	close(p->wfd);
	waitpid(p->pid, &status, 0);
	return status;
}

/* Wait for a child; 1 if it exited with status 0. */
static inline int child_ok(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		TH_LOG("child status %#x", status);
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

/* /bin/true in a child made by fork() or vfork(): 1 if it exited 0. */
static inline int true_in_child(int use_vfork)
{
	pid_t pid = use_vfork ? vfork() : fork();
	int st;

	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       !WEXITSTATUS(st);
}

/* One field of the smaps entry that starts at addr, in kB, or -1. */
static inline long smaps_kb(unsigned long addr, const char *field)
{
	static char buf[1 << 16];
	FILE *f = fopen("/proc/self/smaps", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	unsigned long start, end;
	char *line, *save = NULL;
	long v = -1;
	int in = 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			if (in)
				break;
			in = start == addr;
		} else if (in && !strncmp(line, field, strlen(field))) {
			sscanf(line + strlen(field), "%ld", &v);
			break;
		}
	}
	return v;
}

/*
 * Does /proc/self/smaps give the mapping holding @addr the VmFlags
 * mnemonic @flag ("lp": a large page mapping, "um": registered for
 * missing faults)? -1 if no mapping holds it.
 */
static inline int vma_flag(const void *addr, const char *flag)
{
	unsigned long a = (unsigned long)addr, s, e;
	char line[512], want[8];
	int in = 0, ret = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " %s ", flag);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = a >= s && a < e;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			ret = strstr(line + 8, want) != NULL;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* A forked child's end: its EXPECT failures become its exit status. */
#define CHILD_DONE() _exit(harness_failed ? 1 : 0)

#endif /* LP_TEST_UTIL_H */
