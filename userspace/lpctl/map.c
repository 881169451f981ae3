// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl alloc and lpctl share: map large pages (private, shared, or a
 * keyed segment), touch them, print the address, hold, release them.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lpctl.h"

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
		say("%s: not allowed to lock memory (RLIMIT_MEMLOCK is 0, no CAP_IPC_LOCK, not in kernel.largepage_group)",
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

/* --hold SECS; 0, or -1 after saying why not. */
static int hold_option(const char *arg, unsigned long *secs)
{
	if (!parse_hold(arg, secs))
		return 0;
	usage_error("bad --hold '%s' (seconds, or 'forever')", arg);
	return -1;
}

int cmd_alloc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shared", no_argument, NULL, 's' },
		{ "hold", required_argument, NULL, 'H' },
		{ }
	};
	unsigned long len, secs = 0;
	int c, rc, shared = 0;
	long psize;
	char desc[96];
	void *p;

	while ((c = cmd_getopt(argc, argv, "", opts, &rc)) > 0) {
		if (c == 's')
			shared = 1;
		else if (hold_option(optarg, &secs))
			return EXIT_USAGE;
	}
	if (!c)
		return rc;
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

/* What lpctl share was asked. */
struct share_args {
	long key, mode;
	int create, attach, excl, prot;
	unsigned long len, secs;
};

/* share's options into *a: -1 to go on, else the exit status. */
static int share_options(int argc, char **argv, struct share_args *a)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "create", no_argument, NULL, 'c' },
		{ "attach", no_argument, NULL, 'a' },
		{ "excl", no_argument, NULL, 'x' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "hold", required_argument, NULL, 'H' },
		{ }
	};
	char *end;
	int c, rc;

	while ((c = cmd_getopt(argc, argv, "", opts, &rc)) > 0) {
		switch (c) {
		case 'm':
			errno = 0;
			a->mode = strtol(optarg, &end, 8);
			if (errno || !*optarg || *end || a->mode < 0 ||
			    a->mode > 0777)
				return usage_error("bad --mode '%s' (octal, at most 0777)",
						   optarg);
			break;
		case 'c':
			a->create = 1;
			break;
		case 'a':
			a->attach = 1;
			break;
		case 'x':
			a->excl = 1;
			break;
		case 'r':
			a->prot = PROT_READ;
			break;
		case 'H':
			if (hold_option(optarg, &a->secs))
				return EXIT_USAGE;
			break;
		}
	}
	return c ? -1 : rc;
}

/* share's KEY and SIZE into *a: -1 to go on, else the exit status. */
static int share_operands(int argc, char **argv, struct share_args *a,
			  long *psize)
{
	if (a->attach && (a->create || a->excl))
		return usage_error("--attach goes with neither --create nor --excl");
	if (argc - optind != 2)
		return usage_error("share takes a KEY and a SIZE");
	if (parse_long(argv[optind], 1, INT_MAX, &a->key))
		return usage_error("bad key '%s' (a positive integer)",
				   argv[optind]);
	*psize = page_size_or_explain();
	if (*psize < 0)
		return EXIT_FAIL;
	if (parse_size(argv[optind + 1], *psize, &a->len))
		return EXIT_USAGE;
	return -1;
}

int cmd_share(int argc, char **argv)
{
	struct share_args a = { .mode = 0600, .prot = PROT_READ | PROT_WRITE };
	int rc, created = 0, rw;
	char desc[96];
	long psize = 0;
	void *p;

	rc = share_options(argc, argv, &a);
	if (rc < 0)
		rc = share_operands(argc, argv, &a, &psize);
	if (rc >= 0)
		return rc;
	if (a.attach)
		p = lp_share(a.key, a.len, a.prot, 0);
	else if (a.excl)
		p = lp_share(a.key, a.len, a.prot, IPC_CREAT | IPC_EXCL | a.mode);
	else
		p = share_create_or_attach(a.key, a.len, a.prot, a.mode, &created);
	created |= p && a.excl;
	if (!p) {
		explain_map_error(errno, a.key, a.len, psize);
		return EXIT_FAIL;
	}

	/*
	 * Write only to a segment made here: an existing one may be in use
	 * by an application, whose data stays as it is.
	 */
	rw = created && (a.prot & PROT_WRITE);
	touch(p, a.len, rw);
	if (rw)
		snprintf(p, 64, NOTE_MAGIC "%d", (int)getpid());
	if (created)
		printf("created segment %ld (mode %04lo): ", a.key, a.mode);
	else
		printf("attached segment %ld: ", a.key);
	printf("%s, %s, at %p\n", describe(desc, sizeof(desc), a.len, psize),
	       a.prot & PROT_WRITE ? "read-write" : "read-only", p);
	if (!created && !strncmp(p, NOTE_MAGIC, strlen(NOTE_MAGIC)))
		printf("it says: %.64s\n", (char *)p);
	hold(a.secs);
	if (lp_unshare(p)) {
		say("unshare_large_pages(%p): %s", p, strerror(errno));
		return EXIT_FAIL;
	}
	printf("detached from segment %ld\n", a.key);
	return EXIT_OK;
}
