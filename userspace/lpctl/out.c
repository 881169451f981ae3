// SPDX-License-Identifier: GPL-2.0
/*
 * lpctl's output module: text or JSON from the same calls (out.h). JSON
 * goes to stdout as one line: a stack of the objects and arrays open
 * says where a comma goes, and strings are escaped so that the result is
 * valid JSON for any bytes (RFC 8259: UTF-8, control characters
 * escaped; an invalid UTF-8 byte becomes U+FFFD).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "out.h"

#define MAX_DEPTH 8

static int json;
static int depth;
/* Per open object or array: has it a member yet, and its closing bracket. */
static unsigned char has_member[MAX_DEPTH];
static char closer[MAX_DEPTH];

void out_start(int as_json)
{
	json = as_json;
	depth = 0;
}

int out_json(void)
{
	return json;
}

void out_text(const char *fmt, ...)
{
	va_list ap;

	if (json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/*
 * The length of the valid UTF-8 sequence at s, or 0 if its first byte
 * starts none (overlong forms, surrogates and code points over U+10FFFF
 * are invalid).
 */
static int utf8_len(const unsigned char *s)
{
	int len, i;
	unsigned int cp;

	if (*s < 0x80)
		return 1;
	if (*s >= 0xc2 && *s <= 0xdf)
		len = 2, cp = *s & 0x1f;
	else if (*s >= 0xe0 && *s <= 0xef)
		len = 3, cp = *s & 0x0f;
	else if (*s >= 0xf0 && *s <= 0xf4)
		len = 4, cp = *s & 0x07;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* A JSON string of the bytes of str, valid UTF-8 whatever they are. */
static void json_string(const char *str)
{
	const unsigned char *c = (const unsigned char *)str;
	int len;

	putchar('"');
	while (*c) {
		len = utf8_len(c);
		if (!len) {
			fputs("\\ufffd", stdout);	/* REPLACEMENT CHARACTER */
			c++;
		} else if (*c == '"' || *c == '\\') {
			printf("\\%c", *c++);
		} else if (*c < 0x20) {
			printf("\\u%04x", *c++);
		} else {
			fwrite(c, 1, len, stdout);
			c += len;
		}
	}
	putchar('"');
}

/* Start a JSON value: the comma before it, and its key in an object. */
static void json_lead(const char *key)
{
	if (depth && has_member[depth - 1])
		putchar(',');
	if (depth)
		has_member[depth - 1] = 1;
	if (key) {
		json_string(key);
		putchar(':');
	}
}

/* Does the value go out as JSON? Then its lead is printed. */
static int json_value(const char *key)
{
	if (!json || !key)
		return 0;
	json_lead(key);
	return 1;
}

/* Does the value go out as text? */
static int text_value(const char *fmt)
{
	return !json && fmt;
}

void out_long(const char *key, const char *fmt, long long v)
{
	if (json_value(key))
		printf("%lld", v);
	else if (text_value(fmt))
		printf(fmt, v);
}

void out_long_or_null(const char *key, const char *fmt, long long v,
		      int null)
{
	if (null)
		out_null(key, NULL, NULL);
	else
		out_long(key, fmt, v);
}

void out_str(const char *key, const char *fmt, const char *s)
{
	if (json_value(key)) {
		if (s)
			json_string(s);
		else
			fputs("null", stdout);
	} else if (text_value(fmt) && s) {
		printf(fmt, s);
	}
}

void out_bool(const char *key, const char *fmt, int v)
{
	const char *word = v ? "true" : "false";

	if (json_value(key))
		fputs(word, stdout);
	else if (text_value(fmt))
		printf(fmt, word);
}

void out_size(const char *key, const char *fmt, unsigned long long bytes)
{
	char sz[32];

	if (json_value(key))
		printf("%llu", bytes);
	else if (text_value(fmt))
		printf(fmt, fmt_size(sz, sizeof(sz), bytes));
}

void out_null(const char *key, const char *fmt, const char *text)
{
	if (json_value(key))
		fputs("null", stdout);
	else if (text_value(fmt))
		printf(fmt, text);
}

static void out_open(const char *key, char bracket, char close)
{
	if (!json)
		return;
	if (depth == MAX_DEPTH) {
		say("output nested deeper than %d", MAX_DEPTH);
		abort();
	}
	json_lead(key);
	putchar(bracket);
	has_member[depth] = 0;
	closer[depth++] = close;
}

void out_object(const char *key)
{
	out_open(key, '{', '}');
}

void out_array(const char *key)
{
	out_open(key, '[', ']');
}

/* Closing the outermost one ends the document's line. */
void out_end(void)
{
	if (!json || !depth)
		return;
	putchar(closer[--depth]);
	if (!depth)
		putchar('\n');
}
