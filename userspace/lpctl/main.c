// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl: look at and resize the large-page pool, and try out the
 * large-page system calls (map, touch, hold, release). Each command is
 * a file of its own; this one holds the table of commands, from which
 * lpctl --help and every lpctl COMMAND --help are printed.
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "lpctl.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis;	/* the arguments after "lpctl NAME" */
	const char *help;	/* one line: what it does */
};

static const struct command commands[] = {
	{ "status", cmd_status, "[--json]",
	  "page size, pool counts, keyed segments, and the cgroups that hold or limit large pages" },
	{ "ps", cmd_ps, "[--json]",
	  "the processes that map large pages, and how many" },
	{ "resize", cmd_resize, "{+N|-N|=N}",
	  "grow the pool by N pages, shrink it by N free pages, or set it to N pages (root only)" },
	{ "apply", cmd_apply, "[FILE]",
	  "set the pool to the size in FILE (default " LPCTL_CONFIG "), as the boot service does" },
	{ "alloc", cmd_alloc, "SIZE [--shared] [--hold SECS]",
	  "map SIZE of large pages (private unless --shared), touch them, print the address, hold, free them" },
	{ "share", cmd_share,
	  "KEY SIZE [--mode MODE] [--create|--attach] [--excl] [--read-only] [--hold SECS]",
	  "attach the keyed segment KEY, creating it when it does not exist (unless --attach); touch, hold, detach" },
	{ "explain", cmd_explain, "[--json] [KEY]",
	  "say why you can or cannot get large pages (and attach segment KEY), and how the pool size is set" },
	{ "run", cmd_run, "[--fallback] [--heap[=SIZE]] -- PROGRAM [ARG...]",
	  "run PROGRAM with liblargepage.so.1 preloaded: its hugetlbfs requests get large pages (--fallback: normal pages when the pool is short; --heap: its malloc heap, SIZE (64M) of large pages given to mimalloc)" },
};

#define WIDTH		76	/* of the help's lines */
#define HELP_COL	23	/* where a command's help starts in lpctl --help */

static const struct command *current;	/* the command that runs */

/*
 * Print text's words to f from column col, each after a space but the
 * first unless space, wrapped at WIDTH to lines indented by indent; a
 * space inside brackets does not break. The column it ends at.
 */
static int wrap(FILE *f, const char *text, int col, int indent, int space)
{
	int len, depth, start = !space;

	while (*text) {
		for (len = 0, depth = 0; text[len] && (text[len] != ' ' || depth);
		     len++)
			depth += (text[len] == '[') - (text[len] == ']');
		if (!start && col + 1 + len > WIDTH) {
			col = fprintf(f, "\n%*s", indent, "") - 1;
			start = 1;
		}
		if (!start)
			col += fprintf(f, " ");
		col += fprintf(f, "%.*s", len, text);
		start = 0;
		text += len;
		text += strspn(text, " ");
	}
	return col;
}

/* lpctl --help (to stdout) or the usage of a bad call (to stderr). */
static void usage(FILE *f)
{
	size_t i;
	int col;

	fputs("Usage: lpctl COMMAND [ARGUMENTS]\n"
	      "Look at and resize the large-page pool; map large pages to try them out.\n"
	      "\n"
	      "Commands:\n", f);
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		col = fprintf(f, "  %s", commands[i].name);
		col = wrap(f, commands[i].synopsis, col, 8, 1);
		if (col <= HELP_COL - 2)
			fprintf(f, "%*s", HELP_COL - col, "");
		else
			fprintf(f, "\n%*s", HELP_COL, "");
		wrap(f, commands[i].help, HELP_COL, HELP_COL, 0);
		fputc('\n', f);
	}
	fputs("\n"
	      "SIZE is a number of bytes, or a number with K, M or G (binary: 4M is\n"
	      "4 MiB), or a number of large pages with p (3p); it must be a multiple of\n"
	      "the large page size. SECS is a number of seconds or 'forever'; SIGINT or\n"
	      "SIGTERM ends the hold early. MODE is octal (default 0600).\n"
	      "\n"
	      "Options:\n"
	      "  -h, --help           show this help (lpctl COMMAND --help: the command's)\n"
	      "  -V, --version        show the version\n"
	      "\n"
	      "Exit status: 0 success, 1 the operation failed, 2 usage error; run exits\n"
	      "with PROGRAM's status, or 126 (cannot execute) or 127 (not found).\n"
	      "See lpctl(8), liblargepage(7) and get_large_pages(2).\n", f);
}

/* lpctl COMMAND --help: its usage line, then what it does. */
static void command_help(const struct command *cmd)
{
	char line[256];
	int col;

	col = printf("Usage: lpctl %s", cmd->name);
	wrap(stdout, cmd->synopsis, col, col + 1, 1);
	snprintf(line, sizeof(line), "%s.", cmd->help);
	line[0] = toupper((unsigned char)line[0]);
	putchar('\n');
	wrap(stdout, line, 0, 0, 0);
	putchar('\n');
}

int cmd_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *opts, int *status)
{
	struct option all[16];
	char optstring[16];
	size_t n;
	int c;

	for (n = 0; opts[n].name && n < ARRAY_SIZE(all) - 2; n++)
		all[n] = opts[n];
	all[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	all[n] = (struct option){ };
	snprintf(optstring, sizeof(optstring), "%sh", shortopts);
	c = getopt_long(argc, argv, optstring, all, NULL);
	if (c == 'h') {
		command_help(current);
		*status = EXIT_OK;
		return 0;
	}
	if (c == '?' || c == ':') {
		*status = bad_option();
		return 0;
	}
	return c;
}

int json_option(int argc, char **argv, int *json)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ }
	};
	int c, status;

	*json = 0;
	while ((c = cmd_getopt(argc, argv, "", opts, &status)) > 0)
		*json = 1;
	return c ? -1 : status;
}

int json_only(int argc, char **argv, int *json)
{
	int status = json_option(argc, argv, json);

	if (status < 0 && optind < argc)
		status = usage_error("%s takes no arguments but --json",
				     current->name);
	return status;
}

int main(int argc, char **argv)
{
	char name[32];
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("lpctl %s\n", LPCTL_VERSION);
		return EXIT_OK;
	}
	/*
	 * Not in the help: the table, for lpctl-test.sh, which checks the
	 * bash completion and lpctl(8)'s SYNOPSIS against it.
	 */
	if (!strcmp(argv[1], "--list-commands")) {
		for (i = 0; i < ARRAY_SIZE(commands); i++)
			printf("%s %s\n", commands[i].name, commands[i].synopsis);
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		current = &commands[i];
		/* getopt_long()'s messages name the command. */
		snprintf(name, sizeof(name), "lpctl %s", current->name);
		argv[1] = name;
		optind = 1;
		return current->fn(argc - 1, argv + 1);
	}
	return usage_error("unknown command '%s'", argv[1]);
}
