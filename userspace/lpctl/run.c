// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl run [--fallback] [--heap[=SIZE]] -- PROGRAM [ARGS]: run PROGRAM
 * with liblargepage.so.1 preloaded, so that its hugetlbfs requests get
 * large pages; with --heap, mimalloc preloaded before it and SIZE of
 * large pages given to it as the malloc heap (liblargepage(7)).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lpctl.h"

#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"
#define HEAP_ENV	"LARGEPAGE_HEAP"
#define HEAP_DEFAULT	"64M"
#ifndef LPCTL_MIMALLOC
#define LPCTL_MIMALLOC	"/usr/lib/i386-linux-gnu/libmimalloc.so.2"
#endif

/* mimalloc first: its malloc() is the one the program calls. */
static char *heap_preload(const char *old)
{
	char *preload;

	if (access(LPCTL_MIMALLOC, R_OK)) {
		say("--heap needs %s (Debian: libmimalloc2.0): %s",
		    LPCTL_MIMALLOC, strerror(errno));
		return NULL;
	}
	if (asprintf(&preload, "%s:%s%s%s", LPCTL_MIMALLOC,
		     old && *old ? old : "", old && *old ? ":" : "",
		     LPCTL_PRELOAD) < 0)
		return NULL;
	return preload;
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fallback", no_argument, NULL, 'f' },
		{ "heap", optional_argument, NULL, 'H' },
		{ }
	};
	const char *old = getenv("LD_PRELOAD"), *heap = NULL;
	int c, rc, fallback = 0, err;
	unsigned long heap_len;
	char *preload, num[24];
	long psize;

	/* '+': options end at PROGRAM even without "--". */
	while ((c = cmd_getopt(argc, argv, "+", opts, &rc)) > 0) {
		if (c == 'f')
			fallback = 1;
		else
			heap = optarg ? optarg : HEAP_DEFAULT;
	}
	if (!c)
		return rc;
	if (heap) {
		psize = lp_page_size();
		if (psize <= 0) {
			say("--heap: this kernel has no large pages");
			return EXIT_FAIL;
		}
		if (parse_size(heap, psize, &heap_len))
			return EXIT_USAGE;
	}
	if (optind == argc)
		return usage_error("run needs a PROGRAM");
	if (access(LPCTL_PRELOAD, R_OK)) {
		say("cannot use %s: %s", LPCTL_PRELOAD, strerror(errno));
		return EXIT_FAIL;
	}
	/* Append: a preload already there keeps its place before ours. */
	if (heap) {
		preload = heap_preload(old);
		if (!preload)
			return EXIT_FAIL;
		snprintf(num, sizeof(num), "%lu", heap_len);
		if (setenv(HEAP_ENV, num, 1)) {
			say("cannot set the environment: %s", strerror(errno));
			return EXIT_FAIL;
		}
	} else if (old && *old && !strstr(old, LPCTL_PRELOAD)) {
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
