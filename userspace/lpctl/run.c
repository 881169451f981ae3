// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl run [--fallback] -- PROGRAM [ARGS]: run PROGRAM with
 * liblargepage.so.1 preloaded, so that its hugetlbfs requests get large
 * pages.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lpctl.h"

#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fallback", no_argument, NULL, 'f' },
		{ }
	};
	const char *old = getenv("LD_PRELOAD");
	int c, rc, fallback = 0, err;
	char *preload;

	/* '+': options end at PROGRAM even without "--". */
	while ((c = cmd_getopt(argc, argv, "+", opts, &rc)) > 0)
		fallback = 1;
	if (!c)
		return rc;
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
