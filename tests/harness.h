/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small test harness in the kselftest style: TEST() registers a
 * behaviour, each test runs in its own forked child (a crash fails one
 * test, not the run), results are TAP 13 on stdout.
 *
 * ASSERT_*() stops the test, EXPECT_*() records a failure and goes on,
 * SKIP() ends the test as skipped, TH_LOG() adds a diagnostic line.
 * TEST_TABLE() registers a test per row of a table, each named by its
 * row, where a run of tests differs only in data.
 * A suite may set harness_after_each: it runs in the parent after every
 * test's child has been reaped (the large-page suites check the pool's
 * conservation there), and once more at the end of the run.
 *
 * As kselftest_harness.h's: PROG -l lists the results a run reports, one
 * name a line, in run order (a TEST_TABLE's rows by their names, the end
 * of run check as conservation_at_end_of_run), and runs no test;
 * PROG -t NAME (repeatable; a bare NAME too) runs only those tests, and
 * still the end of run check. A NAME that is no test is an error.
 */
#ifndef LP_HARNESS_H
#define LP_HARNESS_H

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct harness_test {
	const char *name;
	void (*fn)(void);
	struct harness_test *next;
	void (*row_fn)(const void *row);	/* TEST_TABLE: fn is NULL */
	const void *row;
};

static struct harness_test *harness_head, **harness_tail = &harness_head;
static int harness_failed;		/* in the child: an EXPECT failed */
static unsigned int harness_timeout = 60;	/* seconds per test */
/* Returns 0 when all is well, else prints '# ...' lines and returns -1. */
static int (*harness_after_each)(const char *when);

#define HARNESS_SKIP_CODE 4

#define TEST(name)							\
	static void name(void);						\
	static struct harness_test harness_t_##name = { #name, name, NULL, NULL, NULL }; \
	__attribute__((constructor)) static void harness_reg_##name(void) \
	{								\
		*harness_tail = &harness_t_##name;			\
		harness_tail = &harness_t_##name.next;			\
	}								\
	static void name(void)

/*
 * A test per element of the array rows, in its order and at this point
 * of the run: named by the row's .name, it runs fn(&rows[i]).
 */
#define TEST_TABLE(id, rows, fn)					\
	static struct harness_test harness_tt_##id[sizeof(rows) / sizeof((rows)[0])]; \
	__attribute__((constructor)) static void harness_reg_##id(void) \
	{								\
		size_t __i;						\
									\
		for (__i = 0; __i < sizeof(rows) / sizeof((rows)[0]); __i++) { \
			harness_tt_##id[__i].name = (rows)[__i].name;	\
			harness_tt_##id[__i].row_fn = (fn);		\
			harness_tt_##id[__i].row = &(rows)[__i];	\
			*harness_tail = &harness_tt_##id[__i];		\
			harness_tail = &harness_tt_##id[__i].next;	\
		}							\
	}

#define TH_LOG(fmt, ...)						\
	fprintf(stdout, "# %s:%d: " fmt "\n", __FILE__, __LINE__, ##__VA_ARGS__)

/* A skip after a failed EXPECT is that failure, not a skip. */
#define SKIP(fmt, ...) do {						\
	fflush(stdout);							\
	printf("# SKIP " fmt "%s\n", ##__VA_ARGS__,			\
	       harness_failed ? " (after a failed check: a failure)" : ""); \
	fflush(stdout);							\
	_exit(harness_failed ? 1 : HARNESS_SKIP_CODE);			\
} while (0)

#define HARNESS_FAIL(fatal) do {					\
	harness_failed = 1;						\
	if (fatal) {							\
		fflush(stdout);						\
		_exit(1);						\
	}								\
} while (0)

#define HARNESS_CMP(fatal, a, op, b) do {				\
	long long __a = (long long)(a), __b = (long long)(b);		\
	if (!(__a op __b)) {						\
		TH_LOG("expected %s %s %s (%lld vs %lld, errno %d %s)", \
		       #a, #op, #b, __a, __b, errno, strerror(errno));	\
		HARNESS_FAIL(fatal);					\
	}								\
} while (0)

#define ASSERT_EQ(a, b) HARNESS_CMP(1, a, ==, b)
#define ASSERT_NE(a, b) HARNESS_CMP(1, a, !=, b)
#define ASSERT_GE(a, b) HARNESS_CMP(1, a, >=, b)
#define ASSERT_GT(a, b) HARNESS_CMP(1, a, >, b)
#define ASSERT_LE(a, b) HARNESS_CMP(1, a, <=, b)
#define ASSERT_LT(a, b) HARNESS_CMP(1, a, <, b)
#define EXPECT_EQ(a, b) HARNESS_CMP(0, a, ==, b)
#define EXPECT_NE(a, b) HARNESS_CMP(0, a, !=, b)
#define EXPECT_GE(a, b) HARNESS_CMP(0, a, >=, b)
#define EXPECT_LE(a, b) HARNESS_CMP(0, a, <=, b)
#define EXPECT_LT(a, b) HARNESS_CMP(0, a, <, b)
#define EXPECT_GT(a, b) HARNESS_CMP(0, a, >, b)
#define ASSERT_TRUE(c) HARNESS_CMP(1, !!(c), ==, 1)
#define EXPECT_TRUE(c) HARNESS_CMP(0, !!(c), ==, 1)

/* A call that must fail with -1 and errno e. */
#define HARNESS_ERR(fatal, call, e) do {				\
	long __r;							\
	errno = 0;							\
	__r = (long)(call);						\
	if (__r != -1 || errno != (e)) {				\
		TH_LOG("expected %s to fail with %s, got %ld errno %d (%s)", \
		       #call, #e, __r, errno, strerror(errno));		\
		HARNESS_FAIL(fatal);					\
	}								\
} while (0)
#define ASSERT_ERRNO(call, e) HARNESS_ERR(1, call, e)
#define EXPECT_ERRNO(call, e) HARNESS_ERR(0, call, e)

static int harness_report(int n, const char *name, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("ok %d %s\n", n, name);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == HARNESS_SKIP_CODE) {
		printf("ok %d %s # SKIP\n", n, name);
		return 0;
	}
	if (WIFSIGNALED(status))
		printf("# %s: killed by signal %d (%s)\n", name,
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
	printf("not ok %d %s\n", n, name);
	return 1;
}

/* -t NAME and bare NAMEs: the tests to run (all when none is named). */
static char **harness_only;
static int harness_nonly;

static int harness_selected(const struct harness_test *t)
{
	int i;

	for (i = 0; i < harness_nonly; i++)
		if (!strcmp(harness_only[i], t->name))
			return 1;
	return !harness_nonly;
}

static void harness_usage(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [-l] [-t NAME]... [NAME]...\n"
		"  -l       list the results a run reports, one name a line\n"
		"  -t NAME  run only the test NAME (repeatable)\n", prog);
}

int main(int argc, char **argv)
{
	struct harness_test *t;
	int n = 0, total = 0, failed = 0, status, list = 0, opt, i;

	harness_only = calloc(argc, sizeof(*harness_only));
	if (!harness_only) {
		perror("calloc");
		exit(1);
	}
	while ((opt = getopt(argc, argv, "lt:h")) != -1) {
		switch (opt) {
		case 'l':
			list = 1;
			break;
		case 't':
			harness_only[harness_nonly++] = optarg;
			break;
		case 'h':
			harness_usage(stdout, argv[0]);
			return 0;
		default:
			harness_usage(stderr, argv[0]);
			return 2;
		}
	}
	while (optind < argc)
		harness_only[harness_nonly++] = argv[optind++];
	if (list) {
		for (t = harness_head; t; t = t->next)
			printf("%s\n", t->name);
		if (harness_after_each)
			printf("conservation_at_end_of_run\n");
		return 0;
	}
	for (i = 0; i < harness_nonly; i++) {
		for (t = harness_head; t; t = t->next)
			if (!strcmp(harness_only[i], t->name))
				break;
		if (!t && !(harness_after_each &&
			    !strcmp(harness_only[i], "conservation_at_end_of_run"))) {
			fprintf(stderr, "%s: no test '%s' (-l lists them)\n",
				argv[0], harness_only[i]);
			return 2;
		}
	}

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (t = harness_head; t; t = t->next)
		total += harness_selected(t);
	printf("TAP version 13\n1..%d\n", total + (harness_after_each ? 1 : 0));
	for (t = harness_head; t; t = t->next) {
		pid_t pid;

		if (!harness_selected(t))
			continue;
		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			exit(1);
		}
		if (pid == 0) {
			alarm(harness_timeout);
			if (t->fn)
				t->fn();
			else
				t->row_fn(t->row);
			fflush(stdout);
			_exit(harness_failed ? 1 : 0);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (harness_after_each && harness_after_each(t->name) &&
		    WIFEXITED(status) && WEXITSTATUS(status) != 1)
			status = 1 << 8;	/* the test left the pool dirty */
		failed += harness_report(++n, t->name, status);
	}
	if (harness_after_each) {
		int bad = harness_after_each("end of run");

		failed += harness_report(++n, "conservation_at_end_of_run",
					 bad ? 1 << 8 : 0);
	}
	printf("# %d passed, %d failed\n", n - failed, failed);
	return failed ? 1 : 0;
}

#endif /* LP_HARNESS_H */
