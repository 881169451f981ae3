// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: struct shmid_ds as a program built with _TIME_BITS=64
 * sees it (glibc's __shmctl64). Built with -D_TIME_BITS=64
 * -D_FILE_OFFSET_BITS=64, apart from shm.c, which has the classic
 * layout of shmctl().
 */
#include <sys/shm.h>

#include "lp-internal.h"

#if !defined(__USE_TIME_BITS64) && __TIMESIZE != 64
#error "build this file with -D_TIME_BITS=64 -D_FILE_OFFSET_BITS=64"
#endif

LP_HIDDEN void lp_set_nattch64(void *buf, unsigned long n);

void lp_set_nattch64(void *buf, unsigned long n)
{
	((struct shmid_ds *)buf)->shm_nattch = n;
}
