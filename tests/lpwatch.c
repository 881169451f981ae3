// SPDX-License-Identifier: GPL-2.0
/*
 * lpwatch: run a program under ptrace and report the large pages it
 * took, for hugetlb-selftests.sh, whose programs (mainline's selftests,
 * unmodified) map, use and release their memory faster than a shell can
 * sample /proc/meminfo.
 *
 *	lpwatch OUT PROGRAM [ARGS...]
 *
 * It follows the program and every task it makes (threads, fork, vfork)
 * through their system calls and looks at the pool at the moments its
 * pages are surely still held: at the entry of every free_large_pages()
 * and unshare_large_pages() call (the preload releases that way) and at
 * every task's exit stop (before its memory is torn down). It writes one
 * line to OUT:
 *
 *	gets=G frees=F min_free=M max_kb=K
 *
 * G: get_large_pages() and share_large_pages() calls that succeeded;
 * F: free and unshare calls entered; M: the lowest LargePages_Free seen
 * at those moments (-1 when none came); K: the largest LargePages: of
 * /proc/TID/status seen then (kB). An execve() is an event stop
 * (PTRACE_O_TRACEEXEC), not a SIGTRAP sent to the program. SIGINT and SIGTERM sent to lpwatch
 * are passed on to the program. The exit status is the program's, or
 * 128 + the signal that killed it.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __NR_get_large_pages
#define __NR_get_large_pages		1000
#define __NR_free_large_pages		1001
#define __NR_share_large_pages		1002
#define __NR_unshare_large_pages	1003
#endif

#define MAX_TASKS 4096

static pid_t child;
static pid_t seen[MAX_TASKS];
static int nseen;
static long gets, frees, min_free = -1, max_kb;

static void pass_on(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* A "Key: N" line of a /proc file, or -1. */
static long proc_value(const char *path, const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen)) {
			v = strtol(line + klen, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The pool and this task's large pages, at a moment they are held. */
static void sample(pid_t tid)
{
	char path[64];
	long f = proc_value("/proc/meminfo", "LargePages_Free:");
	long kb;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	kb = proc_value(path, "LargePages:");
	if (f >= 0 && (min_free < 0 || f < min_free))
		min_free = f;
	if (kb > max_kb)
		max_kb = kb;
}

/* Is tid new? Remember it. */
static int first_stop(pid_t tid)
{
	int i;

	for (i = 0; i < nseen; i++)
		if (seen[i] == tid)
			return 0;
	if (nseen < MAX_TASKS)
		seen[nseen++] = tid;
	return 1;
}

static void syscall_stop(pid_t tid)
{
	long nr, ret;

	errno = 0;
	nr = ptrace(PTRACE_PEEKUSER, tid,
		    (void *)offsetof(struct user_regs_struct, orig_eax), NULL);
	ret = ptrace(PTRACE_PEEKUSER, tid,
		     (void *)offsetof(struct user_regs_struct, eax), NULL);
	if (errno)
		return;
	/* eax is -ENOSYS at the entry stop, the result at the exit stop. */
	switch (nr) {
	case __NR_get_large_pages:
	case __NR_share_large_pages:
		if (ret != -ENOSYS && (ret >= 0 || ret < -4095))
			gets++;
		break;
	case __NR_free_large_pages:
	case __NR_unshare_large_pages:
		if (ret == -ENOSYS) {
			frees++;
			sample(tid);
		}
		break;
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = pass_on };
	int status, code = 1;
	FILE *out;
	pid_t tid;

	if (argc < 3) {
		fprintf(stderr, "usage: lpwatch OUT PROGRAM [ARGS...]\n");
		return 2;
	}
	child = fork();
	if (child < 0) {
		perror("lpwatch: fork");
		return 2;
	}
	if (!child) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			perror("lpwatch: PTRACE_TRACEME");
			_exit(127);
		}
		raise(SIGSTOP);
		execvp(argv[2], argv + 2);
		perror("lpwatch: exec");
		_exit(127);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status)) {
		fprintf(stderr, "lpwatch: the child did not stop\n");
		return 2;
	}
	first_stop(child);
	if (ptrace(PTRACE_SETOPTIONS, child, NULL,
		   (void *)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK |
			    PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
			    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT |
			    PTRACE_O_EXITKILL))) {
		perror("lpwatch: PTRACE_SETOPTIONS");
		kill(child, SIGKILL);
		return 2;
	}
	ptrace(PTRACE_SYSCALL, child, NULL, NULL);
	for (;;) {
		int sig = 0;

		tid = waitpid(-1, &status, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break;		/* ECHILD: every task is gone */
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == child)
				code = WIFEXITED(status) ? WEXITSTATUS(status)
							 : 128 + WTERMSIG(status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			syscall_stop(tid);
		} else if (status >> 16) {
			/* An event stop: a new task, or one about to exit. */
			if (status >> 16 == PTRACE_EVENT_EXIT)
				sample(tid);
		} else if (WSTOPSIG(status) == SIGSTOP && first_stop(tid)) {
			/* A new task's first stop: not the program's signal. */
		} else {
			sig = WSTOPSIG(status);
		}
		ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)sig);
	}
	out = fopen(argv[1], "we");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	fprintf(out, "gets=%ld frees=%ld min_free=%ld max_kb=%ld\n",
		gets, frees, min_free, max_kb);
	fclose(out);
	return code;
}
