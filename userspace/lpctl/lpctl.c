// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl: look at and resize the large-page pool, and try out the
 * large-page system calls (map, touch, hold, release).
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <asm/unistd_32.h>
#include <errno.h>
#include <grp.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "largepage.h"

#ifndef LPCTL_VERSION
#define LPCTL_VERSION "1.0"
#endif

#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_NOEXEC	126	/* run: PROGRAM cannot be executed (as env) */
#define EXIT_NOTFOUND	127	/* run: PROGRAM not found */

#ifndef LPCTL_PRELOAD
#define LPCTL_PRELOAD	"/usr/lib/liblargepage.so"
#endif
#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"

#define HOLD_FOREVER	ULONG_MAX
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

static const char usage_text[] =
"Usage: lpctl COMMAND [ARGUMENTS]\n"
"Look at and resize the large-page pool; map large pages to try them out.\n"
"\n"
"Commands:\n"
"  status               page size, pool counters and keyed segments\n"
"  resize +N|-N|=N      grow the pool by N pages, shrink it by N free pages,\n"
"                       or set it to N pages (root only)\n"
"  alloc SIZE [--shared] [--hold SECS]\n"
"                       map SIZE of large pages (private unless --shared),\n"
"                       touch them, print the address, hold, free them\n"
"  share KEY SIZE [--mode MODE] [--create|--attach] [--excl] [--read-only]\n"
"        [--hold SECS]  attach the keyed segment KEY, creating it when it\n"
"                       does not exist (unless --attach); touch, hold, detach\n"
"  explain [KEY]        say why you can or cannot get large pages (and\n"
"                       attach segment KEY)\n"
"  run [--fallback] -- PROGRAM [ARGS]\n"
"                       run PROGRAM with liblargepage.so preloaded: its\n"
"                       hugetlbfs requests get large pages (--fallback:\n"
"                       normal pages when the pool is short)\n"
"\n"
"SIZE is a number of bytes, or a number with K, M or G (binary: 4M is\n"
"4 MiB), or a number of large pages with p (3p); it must be a multiple of\n"
"the large page size. SECS is a number of seconds or 'forever'; SIGINT or\n"
"SIGTERM ends the hold early. MODE is octal (default 0600).\n"
"\n"
"Options:\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n"
"\n"
"Exit status: 0 success, 1 the operation failed, 2 usage error; run exits\n"
"with PROGRAM's status, or 126 (cannot execute) or 127 (not found).\n"
"See lpctl(8), liblargepage(7) and get_large_pages(2).\n";

static __printf(1, 2) void say(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("lpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A usage error: the message, a hint, exit status 2. */
static __printf(1, 2) int usage_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("lpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'lpctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* After getopt_long() has said what was wrong with an option. */
static int bad_option(void)
{
	fputs("Try 'lpctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* "4 MiB", "1 GiB", "512 KiB" or "N bytes", whichever is exact. */
static const char *fmt_size(char *buf, size_t size, unsigned long long bytes)
{
	static const char *const units[] = { "GiB", "MiB", "KiB" };
	int i;

	for (i = 0; i < 3; i++) {
		unsigned long long unit = 1ULL << (10 * (3 - i));

		if (bytes >= unit && !(bytes % unit)) {
			snprintf(buf, size, "%llu %s", bytes / unit, units[i]);
			return buf;
		}
	}
	snprintf(buf, size, "%llu bytes", bytes);
	return buf;
}

/* Does /proc/cpuinfo list PSE? Assume so when it cannot be read. */
static int cpu_has_pse(void)
{
	char line[4096];
	int seen = 0, pse = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 1;
	while (!seen && fgets(line, sizeof(line), f)) {
		char *tok, *save;

		if (strncmp(line, "flags", 5))
			continue;
		seen = 1;
		tok = strchr(line, ':');
		for (tok = tok ? strtok_r(tok + 1, " \t\n", &save) : NULL; tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			pse |= !strcmp(tok, "pse");
	}
	fclose(f);
	return !seen || pse;
}

/* Report an errno that means "no large pages here"; 1 if it was one. */
static int explain_unsupported(int err)
{
	if (err == ENOSYS) {
		say("this kernel has no large pages (ENOSYS)");
		return 1;
	}
	if (err == EINVAL && !cpu_has_pse()) {
		say("this CPU has no large pages (no PSE)");
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ segments */

struct segment {
	int key;
	unsigned long size;
	unsigned int mode, uid, gid, cuid, cgid;
	unsigned long nattch;
};

/*
 * Read /proc/largepage_segments (a header line, then one line a keyed
 * segment). The number of segments, or -1 with errno (ENOENT: this
 * kernel does not list its segments).
 */
static int read_segments(struct segment **list)
{
	char line[512];
	struct segment *segs = NULL, s;
	int n = 0, lineno = 0;
	FILE *f = fopen(LP_SEGMENTS_PATH, "re");

	*list = NULL;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct segment *more;

		if (!lineno++)
			continue;	/* the header */
		if (sscanf(line, "%d %lu %o %u %u %u %u %lu", &s.key, &s.size,
			   &s.mode, &s.uid, &s.gid, &s.cuid, &s.cgid,
			   &s.nattch) != 8) {
			line[strcspn(line, "\n")] = '\0';
			say("%s: cannot parse line %d: %s", LP_SEGMENTS_PATH,
			    lineno, line);
			continue;
		}
		more = realloc(segs, (n + 1) * sizeof(*segs));
		if (!more) {
			free(segs);
			fclose(f);
			errno = ENOMEM;
			return -1;
		}
		segs = more;
		segs[n++] = s;
	}
	fclose(f);
	*list = segs;
	return n;
}

/* Look up key in the segment list: 1 and *out filled, or 0. */
static int find_segment(int key, struct segment *out)
{
	struct segment *segs;
	int i, n = read_segments(&segs), found = 0;

	for (i = 0; i < n && !found; i++) {
		if (segs[i].key == key) {
			*out = segs[i];
			found = 1;
		}
	}
	free(segs);
	return found;
}

static void print_segments(long psize)
{
	struct segment *segs;
	char sz[32];
	int i, n = read_segments(&segs);

	if (n < 0 && errno == ENOENT) {
		printf("Keyed segments:  not listed (this kernel has no %s)\n",
		       LP_SEGMENTS_PATH);
		return;
	}
	if (n < 0) {
		printf("Keyed segments:  cannot read %s: %s\n",
		       LP_SEGMENTS_PATH, strerror(errno));
		return;
	}
	if (!n) {
		printf("Keyed segments:  none\n");
		return;
	}
	printf("Keyed segments:  %d\n", n);
	printf("%10s %10s %6s %5s %6s %6s %6s %6s %7s\n", "KEY", "SIZE",
	       "PAGES", "MODE", "UID", "GID", "CUID", "CGID", "NATTCH");
	for (i = 0; i < n; i++)
		printf("%10d %10s %6lu  %04o %6u %6u %6u %6u %7lu\n",
		       segs[i].key, fmt_size(sz, sizeof(sz), segs[i].size),
		       psize > 0 ? segs[i].size / psize : 0, segs[i].mode,
		       segs[i].uid, segs[i].gid, segs[i].cuid, segs[i].cgid,
		       segs[i].nattch);
	free(segs);
}

/* -------------------------------------------------------------- parsing */

/* A decimal (or 0x hexadecimal) number in [min, max]; 0 or -1. */
static int parse_long(const char *s, long min, long max, long *val)
{
	char *end;
	long v;

	if (!*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
		return -1;
	errno = 0;
	v = strtol(s, &end, !strncasecmp(s, "0x", 2) ? 16 : 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*val = v;
	return 0;
}

/*
 * A SIZE argument: digits then an optional unit, K/KiB, M/MiB, G/GiB
 * (binary, any case), or p/page/pages for large pages. In bytes, checked
 * against the large page size psize; 0, or -1 after saying why.
 */
static int parse_size(const char *s, long psize, unsigned long *len)
{
	static const struct {
		const char *name;
		unsigned long long mult;	/* 0: large pages */
	} units[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1ULL << 10 }, { "kib", 1ULL << 10 },
		{ "m", 1ULL << 20 }, { "mib", 1ULL << 20 },
		{ "g", 1ULL << 30 }, { "gib", 1ULL << 30 },
		{ "p", 0 }, { "page", 0 }, { "pages", 0 },
	};
	unsigned long long n, mult;
	char *end, sz[32];
	size_t i;

	if (*s < '0' || *s > '9')
		goto bad;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		goto big;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcasecmp(end, units[i].name))
			break;
	if (i == ARRAY_SIZE(units))
		goto bad;
	mult = units[i].mult ? units[i].mult : (unsigned long long)psize;
	if (n && mult > ULONG_MAX / n)
		goto big;
	n *= mult;
	if (!n) {
		usage_error("size '%s' is 0", s);
		return -1;
	}
	if (n % psize) {
		usage_error("%s is not a multiple of the large page size (%s)",
			    s, fmt_size(sz, sizeof(sz), psize));
		return -1;
	}
	*len = n;
	return 0;
bad:
	usage_error("bad size '%s' (bytes, or a number with K, M, G, or p for large pages: 4M, 3p)",
		    s);
	return -1;
big:
	usage_error("size '%s' is too large", s);
	return -1;
}

/* SECS: a number of seconds, or "forever". 0, or -1. */
static int parse_hold(const char *s, unsigned long *secs)
{
	long v;

	if (!strcmp(s, "forever")) {
		*secs = HOLD_FOREVER;
		return 0;
	}
	if (parse_long(s, 0, LONG_MAX, &v) || *s == '+' || *s == '-')
		return -1;
	*secs = v;
	return 0;
}

/* --------------------------------------------------------------- status */

/* The page size, or -1 after explaining why there is none. */
static long page_size_or_explain(void)
{
	long psize = lp_page_size();

	if (psize < 0 && !explain_unsupported(errno))
		say("cannot read the large page size: %s", strerror(errno));
	return psize;
}

static int pool_or_explain(long *total, long *nfree)
{
	if (!lp_pool(total, nfree))
		return 0;
	if (!explain_unsupported(errno))
		say("cannot read the pool: %s", strerror(errno));
	return -1;
}

/*
 * A count from /sys/kernel/mm/largepage (kernels that zero free pages in
 * the background), or -1.
 */
static long zeroing_count(const char *name)
{
	char path[96];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/mm/largepage/%s", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int cmd_status(int argc, char **argv)
{
	long psize, total, nfree, zeroed, unzeroed;
	char a[32], b[32], c[32], d[32];

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl status\n", stdout);
		return EXIT_OK;
	}
	if (argc > 1)
		return usage_error("status takes no arguments");
	psize = page_size_or_explain();
	if (psize < 0 || pool_or_explain(&total, &nfree))
		return EXIT_FAIL;

	printf("Large page size: %ld kB (%s)\n", psize / 1024,
	       fmt_size(a, sizeof(a), psize));
	printf("Pool total:      %ld pages (%s)\n", total,
	       fmt_size(b, sizeof(b), (unsigned long long)total * psize));
	printf("Pool free:       %ld pages (%s)\n", nfree,
	       fmt_size(c, sizeof(c), (unsigned long long)nfree * psize));
	zeroed = zeroing_count("free_zeroed_pages");
	unzeroed = zeroing_count("free_unzeroed_pages");
	if (zeroed >= 0 && unzeroed >= 0) {
		printf("Free, zeroed:    %ld pages\n", zeroed);
		printf("Free, to zero:   %ld pages%s\n", unzeroed,
		       unzeroed ? " (largepage_zerod is on them)" : "");
	}
	printf("Pool in use:     %ld pages (%s)\n", total - nfree,
	       fmt_size(d, sizeof(d),
			(unsigned long long)(total - nfree) * psize));
	if (!cpu_has_pse())
		printf("Note: this CPU has no large pages (no PSE): the pool stays empty.\n");
	print_segments(psize);
	return EXIT_OK;
}

/* --------------------------------------------------------------- resize */

static int cmd_resize(int argc, char **argv)
{
	long psize, before, after, nfree, n, delta, target;
	const char *arg;
	char sz[32];

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl resize +N|-N|=N\n"
		      "Grow the pool by N pages, shrink it by N free pages, or set it to N pages.\n",
		      stdout);
		return EXIT_OK;
	}
	if (argc != 2)
		return usage_error("resize takes one argument: +N, -N or =N");
	arg = argv[1];
	if ((*arg != '+' && *arg != '-' && *arg != '=') ||
	    arg[1] < '0' || arg[1] > '9' || parse_long(arg + 1, 0, INT_MAX, &n))
		return usage_error("resize: bad count '%s' (+N grows by N pages, -N shrinks by N, =N sets the size)",
				   arg);

	psize = page_size_or_explain();
	if (psize < 0 || pool_or_explain(&before, NULL))
		return EXIT_FAIL;
	if (*arg == '=')
		delta = n - before;
	else
		delta = *arg == '-' ? -n : n;
	target = before + delta;	/* < 0: more than the pool has */

	if (delta && lp_resize(delta)) {
		int err = errno;

		if (err == EPERM || err == EACCES)
			say("only root can resize the pool");
		else if (!explain_unsupported(err))
			say("cannot resize the pool: %s", strerror(err));
		return EXIT_FAIL;
	}
	if (pool_or_explain(&after, &nfree))
		return EXIT_FAIL;
	printf("pool: %ld -> %ld pages (%s each)\n", before, after,
	       fmt_size(sz, sizeof(sz), psize));
	if (after == target)
		return EXIT_OK;
	if (delta > 0)
		say("the pool could only grow to %ld pages, not %ld: the kernel found no more free memory for large pages",
		    after, target);
	else if (target < 0 && !after)
		say("the pool had only %ld pages, not %ld to take", before, -delta);
	else
		say("the pool could only shrink to %ld pages, not %ld: %ld pages are in use",
		    after, target < 0 ? 0 : target, after - nfree);
	return EXIT_FAIL;
}

/* ------------------------------------------------------- alloc, share */

/* Why mapping len bytes failed with err; for share, key > 0. */
static void explain_map_error(int err, int key, unsigned long len, long psize)
{
	const char *call = key ? "share_large_pages" : "get_large_pages";
	struct segment seg;
	struct rlimit rl;
	long nfree;
	char a[32], b[32];

	if (explain_unsupported(err))
		return;
	switch (err) {
	case ENOMEM:
		if (!lp_pool(NULL, &nfree) &&
		    (unsigned long)nfree < len / psize) {
			say("not enough free large pages (asked %lu, %ld free)",
			    len / psize, nfree);
			return;
		}
		if (geteuid() && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
		    rl.rlim_cur != RLIM_INFINITY && len > rl.rlim_cur) {
			say("%s is over the locked-memory limit (RLIMIT_MEMLOCK %s, see ulimit -l): large pages are locked memory",
			    fmt_size(a, sizeof(a), len),
			    fmt_size(b, sizeof(b), rl.rlim_cur));
			return;
		}
		say("%s: out of memory (no room for %s, or over RLIMIT_MEMLOCK)",
		    call, fmt_size(a, sizeof(a), len));
		return;
	case EPERM:
		say("%s: not allowed to lock memory (RLIMIT_MEMLOCK is 0 and no CAP_IPC_LOCK)",
		    call);
		return;
	case EACCES:
		if (find_segment(key, &seg))
			say("permission denied on segment %d (mode %04o, owner %u:%u)",
			    key, seg.mode, seg.uid, seg.gid);
		else
			say("permission denied on segment %d", key);
		return;
	case EEXIST:
		say("segment %d already exists (--excl)", key);
		return;
	case ENOENT:
		say("no segment with key %d (--attach does not create one)",
		    key);
		return;
	case EINVAL:
		if (key && find_segment(key, &seg) && seg.size != len) {
			say("segment %d exists with size %s, not %s", key,
			    fmt_size(a, sizeof(a), seg.size),
			    fmt_size(b, sizeof(b), len));
			return;
		}
		break;
	}
	say("%s: %s", call, strerror(err));
}

/*
 * Touch every small page: write when writable, else read (volatile, so
 * the compiler keeps the accesses). Large pages never fault: this only
 * shows that the whole range is there.
 */
static void touch(char *p, unsigned long len, int writable)
{
	long small = sysconf(_SC_PAGESIZE);
	unsigned long off;

	if (small <= 0)
		small = 4096;
	for (off = 0; off < len; off += small) {
		if (writable)
			*(volatile char *)(p + off) = 0;
		else
			(void)*(volatile char *)(p + off);
	}
}

/*
 * Hold for secs seconds, or until SIGINT, SIGTERM or SIGHUP; the pages
 * are released normally afterwards.
 */
static void hold(unsigned long secs)
{
	struct timespec now, end, left;
	sigset_t set;
	int sig = -1;

	if (!secs)
		return;
	if (secs == HOLD_FOREVER)
		printf("holding until SIGINT or SIGTERM\n");
	else
		printf("holding for %lu s\n", secs);
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs == HOLD_FOREVER || secs > INT_MAX ? INT_MAX : secs;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_nsec += 1000000000L;
			left.tv_sec--;
		}
		if (left.tv_sec < 0)
			break;
		sig = sigtimedwait(&set, NULL, &left);
		if (sig >= 0 || errno != EINTR)
			break;
	}
	if (sig > 0)
		printf("%s: releasing early\n", strsignal(sig));
}

static const char *describe(char *buf, size_t size, unsigned long len,
			    long psize)
{
	char a[32], b[32];

	snprintf(buf, size, "%s (%lu large page%s of %s)",
		 fmt_size(a, sizeof(a), len), len / psize,
		 len / psize == 1 ? "" : "s", fmt_size(b, sizeof(b), psize));
	return buf;
}

static int cmd_alloc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shared", no_argument, NULL, 's' },
		{ "hold", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	unsigned long len, secs = 0;
	int c, shared = 0;
	long psize;
	char desc[96];
	void *p;

	argv[0] = "lpctl alloc";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			shared = 1;
			break;
		case 'H':
			if (parse_hold(optarg, &secs))
				return usage_error("bad --hold '%s' (seconds, or 'forever')",
						   optarg);
			break;
		case 'h':
			fputs("Usage: lpctl alloc SIZE [--shared] [--hold SECS]\n",
			      stdout);
			return EXIT_OK;
		default:
			return bad_option();
		}
	}
	if (argc - optind != 1)
		return usage_error("alloc takes one SIZE");
	psize = page_size_or_explain();
	if (psize < 0)
		return EXIT_FAIL;
	if (parse_size(argv[optind], psize, &len))
		return EXIT_USAGE;

	p = lp_alloc(len, PROT_READ | PROT_WRITE,
		     shared ? MAP_SHARED : MAP_PRIVATE);
	if (!p) {
		explain_map_error(errno, 0, len, psize);
		return EXIT_FAIL;
	}
	touch(p, len, 1);
	printf("mapped %s, %s, at %p\n", describe(desc, sizeof(desc), len, psize),
	       shared ? "shared" : "private", p);
	hold(secs);
	if (lp_free(p)) {
		say("free_large_pages(%p): %s", p, strerror(errno));
		return EXIT_FAIL;
	}
	printf("freed %p\n", p);
	return EXIT_OK;
}

#define NOTE_MAGIC "lpctl segment, created by pid "

/* Create-if-absent as two steps, to tell creating from attaching. */
static void *share_create_or_attach(int key, unsigned long len, int prot,
				    int mode, int *created)
{
	void *p = NULL;
	int i;

	for (i = 0; i < 5 && !p; i++) {
		p = lp_share(key, len, prot, 0);
		if (p || errno != ENOENT)
			break;
		p = lp_share(key, len, prot, IPC_CREAT | IPC_EXCL | mode);
		*created = !!p;
		if (!p && errno != EEXIST)
			break;
	}
	return p;
}

static int cmd_share(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "create", no_argument, NULL, 'c' },
		{ "attach", no_argument, NULL, 'a' },
		{ "excl", no_argument, NULL, 'x' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "hold", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c, create = 0, attach = 0, excl = 0, created = 0;
	int prot = PROT_READ | PROT_WRITE;
	unsigned long len, secs = 0;
	long key, mode = 0600, psize;
	char desc[96], *end;
	void *p;

	argv[0] = "lpctl share";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			errno = 0;
			mode = strtol(optarg, &end, 8);
			if (errno || !*optarg || *end || mode < 0 || mode > 0777)
				return usage_error("bad --mode '%s' (octal, at most 0777)",
						   optarg);
			break;
		case 'c':
			create = 1;
			break;
		case 'a':
			attach = 1;
			break;
		case 'x':
			excl = 1;
			break;
		case 'r':
			prot = PROT_READ;
			break;
		case 'H':
			if (parse_hold(optarg, &secs))
				return usage_error("bad --hold '%s' (seconds, or 'forever')",
						   optarg);
			break;
		case 'h':
			fputs("Usage: lpctl share KEY SIZE [--mode MODE] [--create|--attach]\n"
			      "                  [--excl] [--read-only] [--hold SECS]\n",
			      stdout);
			return EXIT_OK;
		default:
			return bad_option();
		}
	}
	if (attach && (create || excl))
		return usage_error("--attach goes with neither --create nor --excl");
	if (argc - optind != 2)
		return usage_error("share takes a KEY and a SIZE");
	if (parse_long(argv[optind], 1, INT_MAX, &key))
		return usage_error("bad key '%s' (a positive integer)",
				   argv[optind]);
	psize = page_size_or_explain();
	if (psize < 0)
		return EXIT_FAIL;
	if (parse_size(argv[optind + 1], psize, &len))
		return EXIT_USAGE;

	if (attach)
		p = lp_share(key, len, prot, 0);
	else if (excl)
		p = lp_share(key, len, prot, IPC_CREAT | IPC_EXCL | mode);
	else
		p = share_create_or_attach(key, len, prot, mode, &created);
	created |= p && excl;
	if (!p) {
		explain_map_error(errno, key, len, psize);
		return EXIT_FAIL;
	}

	/*
	 * Write only to a segment made here: an existing one may be in use
	 * by an application, whose data stays as it is.
	 */
	touch(p, len, created && (prot & PROT_WRITE));
	if (created && (prot & PROT_WRITE))
		snprintf(p, 64, NOTE_MAGIC "%d", (int)getpid());
	if (created)
		printf("created segment %ld (mode %04lo): ", key, mode);
	else
		printf("attached segment %ld: ", key);
	printf("%s, %s, at %p\n", describe(desc, sizeof(desc), len, psize),
	       prot & PROT_WRITE ? "read-write" : "read-only", p);
	if (!created && !strncmp(p, NOTE_MAGIC, strlen(NOTE_MAGIC)))
		printf("it says: %.64s\n", (char *)p);
	hold(secs);
	if (lp_unshare(p)) {
		say("unshare_large_pages(%p): %s", p, strerror(errno));
		return EXIT_FAIL;
	}
	printf("detached from segment %ld\n", key);
	return EXIT_OK;
}

/* -------------------------------------------------------------- explain */

/* Does the caller have CAP_IPC_LOCK (effective)? */
static int has_cap_ipc_lock(void)
{
	struct {
		unsigned int version;
		int pid;
	} hdr = { 0x20080522, 0 };	/* _LINUX_CAPABILITY_VERSION_3 */
	struct {
		unsigned int effective, permitted, inheritable;
	} data[2];

	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return !!(data[0].effective & (1U << 14));	/* CAP_IPC_LOCK */
}

/* Is gid the caller's effective group or a supplementary one? */
static int in_group(gid_t gid)
{
	gid_t groups[NGROUPS_MAX];
	int i, n;

	if (gid == getegid())
		return 1;
	n = getgroups(ARRAY_SIZE(groups), groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/*
 * What the segment's mode lets the caller do, by the owner/group/other
 * rules share_large_pages() applies (CAP_IPC_OWNER not probed: root is
 * reported as allowed).
 */
static unsigned int seg_access(const struct segment *seg)
{
	uid_t uid = geteuid();

	if (!uid)
		return 06;
	if (uid == seg->uid || uid == seg->cuid)
		return (seg->mode >> 6) & 07;
	if (in_group(seg->gid) || in_group(seg->cgid))
		return (seg->mode >> 3) & 07;
	return seg->mode & 07;
}

static int explain_segment(long key, long psize)
{
	struct segment seg;
	unsigned int acc;
	char sz[32];

	if (!find_segment(key, &seg)) {
		printf("Segment %ld:     none; share_large_pages() without IPC_CREAT gives ENOENT\n",
		       key);
		return -1;
	}
	acc = seg_access(&seg);
	printf("Segment %ld:     %s (%lu pages), mode %04o, owner %u:%u, creator %u:%u, %lu attached\n",
	       key, fmt_size(sz, sizeof(sz), seg.size),
	       psize > 0 ? seg.size / psize : 0, seg.mode, seg.uid, seg.gid,
	       seg.cuid, seg.cgid, seg.nattch);
	if ((acc & 06) == 06) {
		printf("  you may attach it read-write\n");
		return 0;
	}
	if (acc & 04) {
		printf("  you may attach it read-only (--read-only); read-write gives EACCES\n");
		return 0;
	}
	printf("  you may not attach it: EACCES (uid %u, mode %04o)\n",
	       (unsigned int)geteuid(), seg.mode);
	return -1;
}

static int cmd_explain(int argc, char **argv)
{
	long psize, total = 0, nfree = 0, key = 0;
	int bad = 0, err;
	struct rlimit rl;
	char a[32], b[32];
	void *p;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("Usage: lpctl explain [KEY]\n"
		      "Say why you can or cannot get large pages, and attach segment KEY.\n",
		      stdout);
		return EXIT_OK;
	}
	if (argc > 2)
		return usage_error("explain takes at most a KEY");
	if (argc == 2 && parse_long(argv[1], 1, INT_MAX, &key))
		return usage_error("bad key '%s' (a positive integer)", argv[1]);

	/* The kernel: ENOSYS without the patch or CONFIG_LARGE_PAGE. */
	if (syscall(__NR_free_large_pages, 0UL) == -1 && errno == ENOSYS) {
		printf("Kernel:          no large pages (ENOSYS): not built with CONFIG_LARGE_PAGE\n");
		return EXIT_FAIL;
	}
	printf("Kernel:          has large pages (CONFIG_LARGE_PAGE)\n");
	if (!cpu_has_pse()) {
		printf("Processor:       no PSE: every large-page call gives EINVAL, the pool stays empty\n");
		return EXIT_FAIL;
	}
	printf("Processor:       has PSE\n");
	psize = lp_page_size();
	if (psize < 0 || lp_pool(&total, &nfree)) {
		printf("Pool:            cannot read /proc/meminfo: %s\n",
		       strerror(errno));
		return EXIT_FAIL;
	}
	printf("Large page size: %s\n", fmt_size(a, sizeof(a), psize));
	printf("Pool:            %ld pages, %ld free%s\n", total, nfree,
	       !total ? " (empty: boot with largepages=N, or lpctl resize +N)" :
	       !nfree ? " (all in use)" : "");

	if (!geteuid() || has_cap_ipc_lock()) {
		printf("Locked memory:   no limit (%s)\n",
		       geteuid() ? "CAP_IPC_LOCK" : "root");
	} else if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		printf("Locked memory:   cannot read RLIMIT_MEMLOCK: %s\n",
		       strerror(errno));
	} else if (rl.rlim_cur == RLIM_INFINITY) {
		printf("Locked memory:   RLIMIT_MEMLOCK unlimited\n");
	} else {
		printf("Locked memory:   RLIMIT_MEMLOCK %s: %s\n",
		       fmt_size(a, sizeof(a), rl.rlim_cur),
		       !rl.rlim_cur ? "none allowed, calls give EPERM (raise ulimit -l)" :
		       rl.rlim_cur < (unsigned long)psize ?
		       "less than one large page, calls give ENOMEM (raise ulimit -l)" :
		       "enough for a large page");
	}

	/* The proof: map one page and give it back. */
	p = lp_alloc(psize, PROT_READ, MAP_PRIVATE);
	err = errno;
	if (p) {
		lp_free(p);
		printf("Probe:           mapped and freed one large page: you can get large pages\n");
	} else {
		printf("Probe:           get_large_pages() of %s: %s\n",
		       fmt_size(b, sizeof(b), psize), strerror(err));
		bad = 1;
	}
	if (key && explain_segment(key, psize))
		bad = 1;
	return bad ? EXIT_FAIL : EXIT_OK;
}

/* ------------------------------------------------------------------ run */

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fallback", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	const char *old = getenv("LD_PRELOAD");
	int c, fallback = 0, err;
	char *preload;

	argv[0] = "lpctl run";
	optind = 1;
	/* '+': options end at PROGRAM even without "--". */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			fallback = 1;
			break;
		case 'h':
			fputs("Usage: lpctl run [--fallback] -- PROGRAM [ARGS]\n",
			      stdout);
			return EXIT_OK;
		default:
			return bad_option();
		}
	}
	if (optind == argc)
		return usage_error("run needs a PROGRAM");
	if (access(LPCTL_PRELOAD, R_OK)) {
		say("cannot use %s: %s", LPCTL_PRELOAD, strerror(errno));
		return EXIT_FAIL;
	}
	/* Append: a preload already there keeps its place before ours. */
	if (old && *old && !strstr(old, LPCTL_PRELOAD)) {
		if (asprintf(&preload, "%s:%s", old, LPCTL_PRELOAD) < 0)
			preload = NULL;
	} else {
		preload = strdup(old && *old ? old : LPCTL_PRELOAD);
	}
	if (!preload || setenv("LD_PRELOAD", preload, 1) ||
	    (fallback && setenv(FALLBACK_ENV, "1", 1))) {
		say("cannot set the environment: %s", strerror(errno));
		return EXIT_FAIL;
	}
	free(preload);
	fflush(stdout);
	execvp(argv[optind], argv + optind);
	err = errno;
	say("cannot run %s: %s", argv[optind], strerror(err));
	return err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "status", cmd_status },
		{ "resize", cmd_resize },
		{ "alloc", cmd_alloc },
		{ "share", cmd_share },
		{ "explain", cmd_explain },
		{ "run", cmd_run },
	};
	size_t i;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("lpctl %s\n", LPCTL_VERSION);
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	return usage_error("unknown command '%s'", argv[1]);
}
