/* SPDX-License-Identifier: GPL-2.0 */
/* One /proc/meminfo value, for the tests, liblp's tests and the benchmarks. */
#ifndef LP_TEST_MEMINFO_H
#define LP_TEST_MEMINFO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A /proc/meminfo value ("Key:" with the colon; kB where it has a unit), or -1. */
static inline long meminfo(const char *key)
{
	char line[256];
	long val = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n)) {
			val = strtol(line + n, NULL, 10);
			break;
		}
	}
	fclose(f);
	return val;
}

#endif /* LP_TEST_MEMINFO_H */
