// SPDX-License-Identifier: LGPL-2.1
/*
 * liblargepage.so: LARGEPAGE_FALLBACK. Which errors of the pool let a
 * caller serve the request from normal pages instead, the errno
 * hugetlbfs gives for them, and the one warning of a process that
 * falls back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

#define FALLBACK_ENV	"LARGEPAGE_FALLBACK"

static int warned;		/* the fallback warning was written */

int fallback_enabled(void)
{
	const char *v = getenv(FALLBACK_ENV);

	return v && *v && strcmp(v, "0");
}

static const char *errno_name(int err)
{
	switch (err) {
	case ENOMEM: return "ENOMEM";
	case EPERM: return "EPERM";
	case ENOSYS: return "ENOSYS";
	case ENOSPC: return "ENOSPC";
	case EINVAL: return "EINVAL";
	default: return "error";
	}
}

/*
 * The one warning of a process (and its children) that falls back. A len
 * of 0 (memfd_create(), which takes no page) is not said.
 */
void warn_fallback(const char *what, unsigned long len, int err)
{
	char msg[160], num[24];
	const char *parts[6];
	size_t n = 0, i, l;
	int j = sizeof(num);

	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	num[--j] = '\0';
	do {
		num[--j] = '0' + len % 10;
		len /= 10;
	} while (len && j > 0);
	parts[0] = "liblargepage: no large pages for ";
	parts[1] = what;
	parts[2] = num[j] == '0' ? "" : " of ";
	parts[3] = num[j] == '0' ? "" : num + j;
	parts[4] = num[j] == '0' ? " (" : " bytes (";
	parts[5] = errno_name(err);
	for (i = 0; i < 6; i++) {
		l = strlen(parts[i]);
		if (n + l >= sizeof(msg) - 64)
			break;
		memcpy(msg + n, parts[i], l);
		n += l;
	}
	l = strlen("), using normal pages (" FALLBACK_ENV ")\n");
	memcpy(msg + n, "), using normal pages (" FALLBACK_ENV ")\n", l);
	n += l;
	while (write(STDERR_FILENO, msg, n) < 0 && errno == EINTR)
		;
}

/*
 * Errors that mean "the pool cannot serve this": the caller falls back
 * to normal pages when asked to. Anything else (EINVAL for a bad
 * argument, EACCES, EEXIST) is the program's to see.
 */
int pool_error(int err)
{
	return err == ENOMEM || err == EPERM || err == ENOSYS || err == ENOSPC;
}

/*
 * The errno hugetlbfs gives where the pool failed with err: ENOMEM when
 * there are no pages (also no large pages in this kernel, or a CPU
 * without PSE, where hugetlbfs would have no pool), EPERM over the
 * locked-memory limit, as SHM_HUGETLB does.
 */
int hugetlb_errno(int err)
{
	return err == ENOSYS || err == EINVAL ? ENOMEM : err;
}
