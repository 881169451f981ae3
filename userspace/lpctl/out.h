/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lpctl's output: one call per fact prints it as text or as JSON, as
 * out_start() chose (in the manner of iproute2's print_*() calls).
 *
 * A value call takes the fact's JSON key and its text format: a NULL key
 * prints it in text only, a NULL format in JSON only. The text format
 * gets the value as its one argument (a long long for out_long(), a
 * string for the others: out_size() gives fmt_size()'s text, out_bool()
 * "true" or "false", out_null() the text it is given); a format with no
 * conversion prints as it is. A NULL string is JSON's null (and no
 * text), as out_long_or_null()'s value is when null.
 *
 * In JSON the pair goes into the object being printed (an array holds
 * objects: out_object(NULL)); commas come by themselves, and strings are
 * escaped into valid UTF-8 JSON whatever their bytes. Text goes out as
 * the formats say: no separator is added.
 */
#ifndef LPCTL_OUT_H
#define LPCTL_OUT_H

#include "lpctl.h"

void out_start(int json);
int out_json(void);

/* Text only, printf()'s way. */
__printf(1, 2) void out_text(const char *fmt, ...);

void out_long(const char *key, const char *fmt, long long v);
void out_long_or_null(const char *key, const char *fmt, long long v,
		      int null);
void out_str(const char *key, const char *fmt, const char *s);
void out_bool(const char *key, const char *fmt, int v);
void out_size(const char *key, const char *fmt, unsigned long long bytes);
void out_null(const char *key, const char *fmt, const char *text);

/* Open an object or an array (JSON only); out_end() closes the last. */
void out_object(const char *key);
void out_array(const char *key);
void out_end(void);

#endif
