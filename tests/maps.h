/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/PID files (opening, and maps lookups), for the harness's suites
 * (through util.h) and for the helpers that run without the harness
 * (heapfork).
 */
#ifndef LP_MAPS_H
#define LP_MAPS_H

#include <stdio.h>
#include <sys/types.h>

/* Open /proc/PID/name for reading (pid 0: this process); NULL on error. */
static inline FILE *lp_proc_fopen(pid_t pid, const char *name)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/%s", name);
	return fopen(path, "r");
}

/*
 * The first line of pid's /proc/PID/maps (pid 0: this process) whose
 * mapping meets [start, end), copied into line when line is not NULL:
 * 1 if there is one, 0 if none, -1 if the file cannot be read.
 */
static inline int lp_maps_find(pid_t pid, unsigned long start,
			       unsigned long end, char *line, size_t size)
{
	FILE *f = lp_proc_fopen(pid, "maps");
	unsigned long s, e;
	int found = 0;
	char buf[512];

	if (!f)
		return -1;
	while (!found && fgets(buf, sizeof(buf), f))
		found = sscanf(buf, "%lx-%lx", &s, &e) == 2 && s < end && e > start;
	fclose(f);
	if (found && line)
		snprintf(line, size, "%s", buf);
	return found;
}

#endif
