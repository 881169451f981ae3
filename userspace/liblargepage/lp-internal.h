/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * liblargepage internals shared by largepage.c and the preload
 * (preload.h); not installed, hidden from liblargepage.so's dynamic
 * symbol table.
 */
#ifndef _LP_INTERNAL_H
#define _LP_INTERNAL_H

#define LP_HIDDEN	__attribute__((visibility("hidden")))

/* Lines longer than this are cut; the files read here have short ones. */
#define LP_LINE_MAX	256

/*
 * Call fn for each line of path (without its newline) until fn returns
 * non-zero. No stdio, no allocation: safe inside the interposed mmap()
 * and shmget(). Returns fn's last result (0 at the end of the file), or
 * -1 with errno when path cannot be opened or read.
 */
LP_HIDDEN int lp_scan_lines(const char *path,
			    int (*fn)(const char *line, void *arg), void *arg);

#endif /* _LP_INTERNAL_H */
