// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl resize +N|-N|=N and lpctl apply [FILE]: set the pool's size, by
 * a change or to the size a configuration file asks for.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "lpctl.h"

#define NR_PAGES_PATH	"/sys/kernel/mm/largepage/nr_pages"

/* s without leading and trailing blanks, in place. */
static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

/*
 * The pool size in a configuration file: "pool = N" (pages) or
 * "pool = SIZE" (3G, 512M, ...: a multiple of the large page size).
 * Comments (#) and blank lines are ignored; the last pool line counts.
 * 0 and *pages (-1 if the file sets no size), or -1 after saying why.
 */
int read_config(const char *file, long psize, long *pages)
{
	char line[256], *key, *val;
	int lineno = 0, found = 0;
	unsigned long len;
	FILE *f = fopen(file, "re");

	if (!f) {
		say("cannot read %s: %s", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		line[strcspn(line, "#\n")] = '\0';
		key = trim(line);
		if (!*key)
			continue;
		val = strchr(key, '=');
		if (!val)
			goto bad;
		*val++ = '\0';
		key = trim(key);
		val = trim(val);
		if (strcmp(key, "pool"))
			goto bad;
		if (*val && strspn(val, "0123456789") == strlen(val)) {
			if (parse_long(val, 0, INT_MAX, pages))
				goto bad_size;
		} else if (!parse_size(val, psize, &len)) {
			*pages = len / psize;
		} else {
			goto bad_size;
		}
		found = 1;
	}
	fclose(f);
	if (!found)
		*pages = -1;
	return 0;
bad_size:
	fclose(f);
	say("%s:%d: bad pool size '%s' (pages, or a size such as 3G)", file,
	    lineno, val);
	return -1;
bad:
	fclose(f);
	say("%s:%d: expected 'pool = PAGES' or 'pool = SIZE' (such as 3G)",
	    file, lineno);
	return -1;
}

/* Why a resize the kernel refused failed; EXIT_FAIL. */
static int resize_failed(int err)
{
	if (err == EPERM || err == EACCES)
		say("only root can resize the pool");
	else if (!explain_unsupported(err))
		say("cannot resize the pool: %s", strerror(err));
	return EXIT_FAIL;
}

/*
 * Set the pool to @pages pages: through nr_pages where the kernel has it,
 * else by the difference through numlargepages.
 */
static int set_pool(long pages, long before)
{
	char buf[32];
	FILE *f = fopen(NR_PAGES_PATH, "we");

	if (!f)
		return errno == ENOENT ? lp_resize(pages - before) : -1;
	snprintf(buf, sizeof(buf), "%ld\n", pages);
	if (fputs(buf, f) == EOF) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

/* Say why a grow or a shrink stopped at after pages; EXIT_FAIL. */
static int short_of(int grow, long after, long nfree, const char *how)
{
	if (grow)
		say("the pool could only grow to %ld pages%s: the kernel found no more free memory for large pages",
		    after, how);
	else
		say("the pool could only shrink to %ld pages%s: %ld pages are in use",
		    after, how, after - nfree);
	return EXIT_FAIL;
}

int cmd_apply(int argc, char **argv)
{
	static const struct option opts[] = { { } };
	long psize, want, before, after, nfree;
	const char *file;
	char sz[32];
	int rc;

	if (!cmd_getopt(argc, argv, "", opts, &rc))
		return rc;
	if (argc - optind > 1)
		return usage_error("apply takes at most a FILE");
	file = optind < argc ? argv[optind] : LPCTL_CONFIG;
	psize = page_size_or_explain();
	if (psize < 0 || read_config(file, psize, &want) ||
	    pool_or_explain(&before, NULL))
		return EXIT_FAIL;
	if (want < 0) {
		printf("%s sets no pool size ('pool = N'): the pool stays at %ld pages\n",
		       file, before);
		return EXIT_OK;
	}
	if (want != before && set_pool(want, before))
		return resize_failed(errno);
	if (pool_or_explain(&after, &nfree))
		return EXIT_FAIL;
	printf("pool: %ld -> %ld pages (%s each), %s asks for %ld\n", before,
	       after, fmt_size(sz, sizeof(sz), psize), file, want);
	return after == want ? EXIT_OK : short_of(after < want, after, nfree, "");
}

/*
 * The count of resize: +N, -N or =N; *op its sign. 0, or -1 after
 * saying why not.
 */
static int resize_count(int argc, char **argv, char *op, long *n)
{
	const char *arg;

	if (argc - optind != 1) {
		usage_error("resize takes one argument: +N, -N or =N");
		return -1;
	}
	arg = argv[optind];
	if ((*arg != '+' && *arg != '-' && *arg != '=') ||
	    arg[1] < '0' || arg[1] > '9' || parse_long(arg + 1, 0, INT_MAX, n)) {
		usage_error("resize: bad count '%s' (+N grows by N pages, -N shrinks by N, =N sets the size)",
			    arg);
		return -1;
	}
	*op = *arg;
	return 0;
}

int cmd_resize(int argc, char **argv)
{
	static const struct option opts[] = { { } };
	long psize, before, after, nfree, n, delta, target;
	char sz[32], how[48], op;
	int rc, end;

	/* -N is the count, not an option: getopt sees what comes before. */
	for (end = 1; end < argc; end++)
		if (argv[end][0] == '-' && isdigit((unsigned char)argv[end][1]))
			break;
	if (!cmd_getopt(end, argv, "", opts, &rc))
		return rc;
	if (resize_count(argc, argv, &op, &n))
		return EXIT_USAGE;
	psize = page_size_or_explain();
	if (psize < 0 || pool_or_explain(&before, NULL))
		return EXIT_FAIL;
	delta = op == '=' ? n - before : op == '-' ? -n : n;
	target = before + delta;	/* < 0: more than the pool has */

	/* =N through nr_pages: one step, no window for another resize. */
	if (delta && (op == '=' ? set_pool(n, before) : lp_resize(delta)))
		return resize_failed(errno);
	if (pool_or_explain(&after, &nfree))
		return EXIT_FAIL;
	printf("pool: %ld -> %ld pages (%s each)\n", before, after,
	       fmt_size(sz, sizeof(sz), psize));
	if (after == target)
		return EXIT_OK;
	if (target < 0 && !after && delta < 0) {
		say("the pool had only %ld pages, not %ld to take", before, -delta);
		return EXIT_FAIL;
	}
	snprintf(how, sizeof(how), ", not %ld", target < 0 ? 0 : target);
	return short_of(delta > 0, after, nfree, how);
}
