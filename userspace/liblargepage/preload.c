// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: serve the hugetlbfs requests of unmodified programs
 * from the large-page pool, loaded with LD_PRELOAD (see liblargepage(7)).
 *
 * Interposed: mmap()/mmap64() with MAP_ANONYMOUS|MAP_HUGETLB become
 * get_large_pages(); shmget() with SHM_HUGETLB creates a keyed segment
 * (share_large_pages()) behind an ordinary SysV id, and shmat(), shmdt()
 * and shmctl() on that id attach, detach, report and remove it; munmap()
 * and MAP_FIXED over a large-page mapping release it; memfd_create()
 * with MFD_HUGETLB makes a memfd of the pool (MFD_LARGEPAGE), which the
 * kernel serves from then on. Every other call goes to libc unchanged:
 * a program that never asks for huge pages only pays one flag test per
 * mmap() and memfd_create() and, once it has nothing tracked, one load
 * per munmap(), shmat(), shmdt() and shmctl().
 *
 * The interposed paths never allocate: the mappings and segments are
 * kept in fixed tables under one mutex, /proc files are read with
 * read(2) into stack buffers, the warning is written with write(2).
 *
 * This file is the constructor. The rooms, and the one direction of
 * their calls, are in preload.h: mmap.c, shm.c, memfd.c, the tables
 * (tables.c), the fallback (fallback.c), what they stand on (sys.c) and
 * the heap (heap.c).
 */
#include <pthread.h>

#include "preload.h"

/*
 * Look libc's functions up now, before the program has threads: later,
 * dlsym() under lock could deadlock against a dlopen() whose
 * constructors call munmap(). Calls made before this constructor runs
 * (by other libraries' constructors) look them up themselves.
 */
__attribute__((constructor)) static void preload_init(void)
{
	REAL(mmap, "mmap");
	REAL(mmap64, "mmap64");
	REAL(munmap, "munmap");
	REAL(shmget, "shmget");
	REAL(shmat, "shmat");
	REAL(shmdt, "shmdt");
	REAL(shmctl, "shmctl");
	REAL(shmctl64, "__shmctl64");
	REAL(memfd_create, "memfd_create");
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	lp_heap_init();
}
