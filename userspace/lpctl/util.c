// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl's messages, sizes and the parsing of its arguments.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lpctl.h"

/* "lpctl: " and the message on stderr, after what stdout holds. */
static __attribute__((format(printf, 1, 0))) void vsay(const char *fmt,
							  va_list ap)
{
	fflush(stdout);
	fputs("lpctl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

__printf(1, 2) void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

/* A usage error: the message, a hint, exit status 2. */
__printf(1, 2) int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	fputs("Try 'lpctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* After getopt_long() has said what was wrong with an option. */
int bad_option(void)
{
	fputs("Try 'lpctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* "4 MiB", "1 GiB", "512 KiB" or "N bytes", whichever is exact. */
const char *fmt_size(char *buf, size_t size, unsigned long long bytes)
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
int cpu_has_pse(void)
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
int explain_unsupported(int err)
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

/* A decimal (or 0x hexadecimal) number in [min, max]; 0 or -1. */
int parse_long(const char *s, long min, long max, long *val)
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
int parse_size(const char *s, long psize, unsigned long *len)
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
int parse_hold(const char *s, unsigned long *secs)
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

/* The page size, or -1 after explaining why there is none. */
long page_size_or_explain(void)
{
	long psize = lp_page_size();

	if (psize < 0 && !explain_unsupported(errno))
		say("cannot read the large page size: %s", strerror(errno));
	return psize;
}

int pool_or_explain(long *total, long *nfree)
{
	if (!lp_pool(total, nfree))
		return 0;
	if (!explain_unsupported(errno))
		say("cannot read the pool: %s", strerror(errno));
	return -1;
}
