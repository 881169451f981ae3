// SPDX-License-Identifier: GPL-2.0
/*
 * Core dumps of a process holding large-page mappings: the dump completes,
 * and /proc/PID/coredump_filter decides whether their contents are in it
 * exactly as for hugetlb mappings: bit 5 (0x20) for private mappings
 * (get_large_pages(MAP_PRIVATE)), bit 6 (0x40) for shared ones
 * (get_large_pages(MAP_SHARED) and keyed segments). MADV_DONTDUMP leaves
 * a range out whatever the filter; MADV_DODUMP puts it back.
 *
 * Each test forks a dumper that maps one page of each kind, fills them,
 * sets its filter and RLIMIT_CORE, sends the addresses up a pipe and
 * kills itself with SIGABRT; the test reads the ELF core it left in /tmp.
 */
#include <elf.h>
#include <linux/largepage.h>
#include <sys/prctl.h>
#include "lp.h"

#define CORE_PATTERN "/proc/sys/kernel/core_pattern"
#define CORE_DIR "/tmp/lpcore"

#define FILTER_LP_PRIVATE 0x20	/* MMF_DUMP_HUGETLB_PRIVATE */
#define FILTER_LP_SHARED 0x40	/* MMF_DUMP_HUGETLB_SHARED */

enum { M_PRIVATE, M_SHARED, M_KEYED, NMAP };

static const char *const map_name[NMAP] = { "private", "shared", "keyed" };
static const uint32_t map_seed[NMAP] = { 0x7101aa01, 0x7102bb02, 0x7103cc03 };

/*
 * What the dumper does to its private mapping before dumping; with
 * ADV_HEAP_FORKED it is a heap (LP_COPY_ON_FORK) whose pages a child
 * the dumper forked holds too while it dumps.
 */
enum { ADV_NONE, ADV_DONTDUMP, ADV_DONTDUMP_DODUMP, ADV_HEAP_FORKED };

/* A test per row (TEST_TABLE), named by it. */
struct dump_case {
	const char *name;
	unsigned int filter;	/* written to /proc/self/coredump_filter */
	int key;		/* of the keyed segment, 7101..7199 */
	int advice;		/* ADV_* on the private mapping */
};

/* ------------------------------------------------ core_pattern, saved */

static char saved_pattern[256];
static int pattern_changed;

static void restore_pattern(void)
{
	int fd;

	if (!pattern_changed)
		return;
	fd = open(CORE_PATTERN, O_WRONLY);
	if (fd >= 0) {
		if (write(fd, saved_pattern, strlen(saved_pattern)) >= 0)
			pattern_changed = 0;
		close(fd);
	}
}

/* The harness's timeout must not leave the pattern pointing at /tmp. */
static void on_alarm(int sig)
{
	static const char msg[] = "# timed out: core_pattern restored\n";

	(void)sig;
	restore_pattern();
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static int set_pattern(void)
{
	int fd = open(CORE_PATTERN, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, saved_pattern, sizeof(saved_pattern) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	saved_pattern[n] = '\0';
	signal(SIGALRM, on_alarm);
	pattern_changed = 1;
	return write_text(CORE_PATTERN, CORE_DIR ".%p\n");
}

/* ------------------------------------------------------- the dumper */

/* In the dumper: report why it cannot go on, and leave without a core. */
#define DUMPER_FAIL(code, what) do {					\
	printf("# dumper: %s: %s\n", what, strerror(errno));		\
	fflush(stdout);							\
	_exit(code);							\
} while (0)

static void dumper(const struct dump_case *c, int wfd)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	unsigned long lp = lp_size();
	long addr[NMAP];
	char buf[64];
	int i;

	addr[M_PRIVATE] = lpsys_get(0, lp, RW, c->advice == ADV_HEAP_FORKED ?
				    MAP_PRIVATE | LP_COPY_ON_FORK : MAP_PRIVATE);
	if (!LP_OK(addr[M_PRIVATE]))
		DUMPER_FAIL(10, "get_large_pages(MAP_PRIVATE)");
	addr[M_SHARED] = lpsys_get(0, lp, RW, MAP_SHARED);
	if (!LP_OK(addr[M_SHARED]))
		DUMPER_FAIL(11, "get_large_pages(MAP_SHARED)");
	addr[M_KEYED] = lpsys_share(c->key, 0, lp, RW, IPC_CREAT | 0600);
	if (!LP_OK(addr[M_KEYED]))
		DUMPER_FAIL(12, "share_large_pages(IPC_CREAT)");
	for (i = 0; i < NMAP; i++)
		lp_fill(LP_PTR(addr[i]), lp, map_seed[i]);
	if (c->advice == ADV_HEAP_FORKED) {
		pid_t holder = fork();

		if (holder < 0)
			DUMPER_FAIL(21, "fork");
		if (holder == 0) {
			/* Holds the heap's page until the dumper is gone. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			pause();
			_exit(0);
		}
	}

	if ((c->advice == ADV_DONTDUMP || c->advice == ADV_DONTDUMP_DODUMP) &&
	    madvise(LP_PTR(addr[M_PRIVATE]), lp, MADV_DONTDUMP))
		DUMPER_FAIL(13, "madvise(MADV_DONTDUMP)");
	if (c->advice == ADV_DONTDUMP_DODUMP &&
	    madvise(LP_PTR(addr[M_PRIVATE]), lp, MADV_DODUMP))
		DUMPER_FAIL(14, "madvise(MADV_DODUMP)");

	snprintf(buf, sizeof(buf), "%#x\n", c->filter);
	errno = -write_text("/proc/self/coredump_filter", buf);
	if (errno)
		DUMPER_FAIL(15, "write /proc/self/coredump_filter");
	/* It reads back as 8 hex digits. */
	buf[0] = '\0';
	i = open("/proc/self/coredump_filter", O_RDONLY);
	if (i < 0 || read(i, buf, sizeof(buf) - 1) <= 0)
		DUMPER_FAIL(16, "read /proc/self/coredump_filter");
	close(i);
	if (strtoul(buf, NULL, 16) != c->filter) {
		printf("# dumper: coredump_filter reads %s", buf);
		_exit(17);
	}
	if (setrlimit(RLIMIT_CORE, &rl))
		DUMPER_FAIL(18, "setrlimit(RLIMIT_CORE)");
	snprintf(buf, sizeof(buf), CORE_DIR ".%d", getpid());
	unlink(buf);	/* the kernel does not replace a stale core */

	if (write(wfd, addr, sizeof(addr)) != sizeof(addr))
		DUMPER_FAIL(19, "write addresses");
	close(wfd);
	fflush(stdout);
	signal(SIGABRT, SIG_DFL);
	kill(getpid(), SIGABRT);
	DUMPER_FAIL(20, "still alive after SIGABRT");
}

/* ------------------------------------------------------ the ELF core */

static int read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, off + done);
		if (n <= 0) {
			TH_LOG("core: read %zu bytes at %#lx: %s", len,
			       (unsigned long)off,
			       n ? strerror(errno) : "end of file");
			return -1;
		}
		done += n;
	}
	return 0;
}

/* Read the core's program headers; their number, or -1. */
static int read_phdrs(int fd, Elf32_Phdr **phdrs)
{
	Elf32_Ehdr eh;
	Elf32_Shdr sh;
	unsigned int phnum;

	if (read_at(fd, &eh, sizeof(eh), 0))
		return -1;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS32 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB) {
		TH_LOG("core: not a little-endian ELF32 file");
		return -1;
	}
	if (eh.e_type != ET_CORE || eh.e_machine != EM_386 ||
	    eh.e_phentsize != sizeof(Elf32_Phdr)) {
		TH_LOG("core: e_type %u, e_machine %u, e_phentsize %u",
		       eh.e_type, eh.e_machine, eh.e_phentsize);
		return -1;
	}
	phnum = eh.e_phnum;
	if (phnum == PN_XNUM) {
		/* More than 65534: the count is in section header 0. */
		if (!eh.e_shoff || read_at(fd, &sh, sizeof(sh), eh.e_shoff))
			return -1;
		phnum = sh.sh_info;
	}
	if (!phnum || phnum > 100000) {
		TH_LOG("core: %u program headers", phnum);
		return -1;
	}
	*phdrs = calloc(phnum, sizeof(Elf32_Phdr));
	if (!*phdrs ||
	    read_at(fd, *phdrs, phnum * sizeof(Elf32_Phdr), eh.e_phoff))
		return -1;
	return phnum;
}

/* Is mapping i dumped, by the filter and the advice? */
static int want_dumped(const struct dump_case *c, int i)
{
	if (i == M_PRIVATE)
		return c->advice != ADV_DONTDUMP &&
		       (c->filter & FILTER_LP_PRIVATE);
	return !!(c->filter & FILTER_LP_SHARED);
}

/* Check the core's segment for each mapping. */
static void check_core(const struct dump_case *c, const char *path,
		       const long *addr)
{
	unsigned long lp = lp_size();
	Elf32_Phdr *ph = NULL;
	char *buf;
	int fd, n, i, k, want;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		TH_LOG("open %s: %s", path, strerror(errno));
	ASSERT_GE(fd, 0);
	n = read_phdrs(fd, &ph);
	ASSERT_GT(n, 0);
	buf = malloc(lp);
	ASSERT_TRUE(buf != NULL);

	for (i = 0; i < NMAP; i++) {
		want = want_dumped(c, i);
		for (k = 0; k < n; k++)
			if (ph[k].p_type == PT_LOAD &&
			    ph[k].p_vaddr == (Elf32_Addr)addr[i])
				break;
		if (k == n) {
			TH_LOG("%s mapping at %#lx: no PT_LOAD in the core",
			       map_name[i], (unsigned long)addr[i]);
			EXPECT_TRUE(0);
			continue;
		}
		TH_LOG("%s mapping at %#lx: p_filesz %#x p_memsz %#x (filter %#x, %s)",
		       map_name[i], (unsigned long)addr[i], ph[k].p_filesz,
		       ph[k].p_memsz, c->filter, want ? "dumped" : "left out");
		EXPECT_EQ(ph[k].p_memsz, lp);
		EXPECT_EQ(ph[k].p_flags & (PF_R | PF_W), PF_R | PF_W);
		if (!want) {
			EXPECT_EQ(ph[k].p_filesz, 0);
			continue;
		}
		EXPECT_EQ(ph[k].p_filesz, lp);
		if (ph[k].p_filesz != lp)
			continue;
		memset(buf, 0, lp);
		if (read_at(fd, buf, lp, ph[k].p_offset)) {
			EXPECT_TRUE(0);
			continue;
		}
		if (!lp_check(buf, lp, map_seed[i])) {
			TH_LOG("the %s mapping's contents in the core are wrong",
			       map_name[i]);
			EXPECT_TRUE(0);
		}
	}
	free(buf);
	free(ph);
	close(fd);
}

/* ------------------------------------------------------------ a run */

static void dump_and_check(const struct dump_case *c)
{
	long nfree = lp_nfree(), addr[NMAP];
	int fds[2], st = -1, err;
	char path[64];
	ssize_t got = 0, n;
	pid_t pid;

	ASSERT_GE(nfree, NMAP);
	ASSERT_EQ(pipe(fds), 0);
	err = set_pattern();
	if (err) {
		restore_pattern();
		TH_LOG("cannot set core_pattern: %s", strerror(-err));
		ASSERT_EQ(err, 0);
	}

	/* No ASSERT until the pattern is back. */
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		dumper(c, fds[1]);
	}
	close(fds[1]);
	if (pid > 0) {
		while ((size_t)got < sizeof(addr)) {
			n = read(fds[0], (char *)addr + got,
				 sizeof(addr) - got);
			if (n <= 0)
				break;
			got += n;
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	close(fds[0]);
	restore_pattern();

	ASSERT_GT(pid, 0);
	snprintf(path, sizeof(path), CORE_DIR ".%d", pid);
	if (!CHILD_SIGNALED(st, SIGABRT) || !WCOREDUMP(st)) {
		TH_LOG("dumper status %#x: %s", st,
		       WIFEXITED(st) ? "exited (see its message)" :
		       WIFSIGNALED(st) ? "killed, no core dumped" : "?");
		unlink(path);
	}
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(WTERMSIG(st), SIGABRT);
	ASSERT_TRUE(WCOREDUMP(st));
	ASSERT_EQ(got, sizeof(addr));

	check_core(c, path, addr);
	EXPECT_EQ(unlink(path), 0);

	/* The dumper is gone: its pages and its segment with it. */
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(c->key, lp_size()));
}

__attribute__((constructor)) static void coredump_timeout(void)
{
	harness_timeout = 120;	/* dumping megabytes under TCG */
}

static const struct dump_case dump_cases[] = {
	{ "coredump_filter_default_0x33_private_in_shared_out", 0x33, 7101,
	  ADV_NONE },
	{ "coredump_filter_0x53_shared_in_private_out", 0x53, 7102, ADV_NONE },
	{ "coredump_filter_0x73_both_in", 0x73, 7103, ADV_NONE },
	{ "coredump_filter_0x13_neither_in", 0x13, 7104, ADV_NONE },
	{ "coredump_madv_dontdump_leaves_private_out", 0x73, 7105,
	  ADV_DONTDUMP },
	{ "coredump_madv_dodump_puts_private_back", 0x73, 7106,
	  ADV_DONTDUMP_DODUMP },
	{ "coredump_forked_heap_is_private_and_dumped_whole", 0x33, 7107,
	  ADV_HEAP_FORKED },
};

static void dump_case_row(const void *row)
{
	dump_and_check(row);
}

TEST_TABLE(coredump, dump_cases, dump_case_row)
