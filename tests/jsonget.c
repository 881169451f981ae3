// SPDX-License-Identifier: GPL-2.0
/*
 * jsonget PATH...: parse standard input as one JSON document (RFC 8259,
 * strictly: no trailing commas, no comments, nothing after it) and print
 * the value at each PATH on a line of its own. A PATH is dot-separated
 * object keys and array indexes ("processes.0.pid"); "#" as the last
 * component gives an array's length or an object's number of members.
 * Strings print unquoted (escapes decoded for ASCII, '?' for the others;
 * bytes that are not UTF-8 make it not JSON), numbers as written,
 * true, false and null as words. Exit 0; 1 if a PATH is not there; 2 if
 * the input is not JSON. lpctl-test.sh reads lpctl's --json with it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum kind kind;
	char *text;		/* J_NUM, J_STR, J_BOOL: as printed */
	char *key;		/* member of an object */
	struct jv *kids;	/* J_ARR, J_OBJ: first child */
	struct jv *next;
	int n;			/* children */
};

static const char *p;

static void fail(const char *why)
{
	fprintf(stderr, "jsonget: not JSON: %s at '%.20s'\n", why, p);
	exit(2);
}

static void ws(void)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
}

static struct jv *node(enum kind k)
{
	struct jv *v = calloc(1, sizeof(*v));

	if (!v)
		exit(2);
	v->kind = k;
	return v;
}

/*
 * The bytes after a lead byte c (>= 0x80) of a UTF-8 sequence at p, which
 * must be valid (RFC 8259 8.1, RFC 3629: no overlong forms, surrogates or
 * code points over U+10FFFF); fails otherwise.
 */
static int utf8_tail(int c)
{
	const unsigned char *u = (const unsigned char *)p;
	unsigned int cp;
	int n, i;

	if (c >= 0xc2 && c <= 0xdf)
		n = 1, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 2, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 3, cp = c & 0x07;
	else
		fail("invalid UTF-8");
	for (i = 0; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			fail("invalid UTF-8");
		cp = cp << 6 | (u[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		fail("invalid UTF-8");
	return n;
}

static char *string(void)
{
	size_t cap = 64, len = 0;
	char *s = malloc(cap);

	if (*p++ != '"' || !s)
		fail("expected a string");
	while (*p != '"') {
		int c = (unsigned char)*p++;

		if (!c || c < 0x20)
			fail("control character or end in a string");
		if (c >= 0x80) {
			/* Valid UTF-8 passes through as it is. */
			int i, n = utf8_tail(c);

			if (len + n + 2 > cap && !(s = realloc(s, cap *= 2)))
				exit(2);
			s[len++] = (char)c;
			for (i = 0; i < n; i++)
				s[len++] = *p++;
			continue;
		}
		if (c == '\\') {
			c = *p++;
			switch (c) {
			case '"': case '\\': case '/': break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				unsigned int u;
				int i;

				for (i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						fail("bad \\u escape");
				sscanf(p, "%4x", &u);
				p += 4;
				c = u < 0x80 ? (int)u : '?';
				break;
			}
			default:
				fail("bad escape");
			}
		}
		if (len + 2 > cap && !(s = realloc(s, cap *= 2)))
			exit(2);
		s[len++] = (char)c;
	}
	p++;
	s[len] = '\0';
	return s;
}

static struct jv *value(void);

static struct jv *number(void)
{
	const char *start = p;
	struct jv *v = node(J_NUM);

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (isdigit((unsigned char)*p))
		while (isdigit((unsigned char)*p))
			p++;
	else
		fail("bad number");
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			fail("bad fraction");
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			fail("bad exponent");
		while (isdigit((unsigned char)*p))
			p++;
	}
	v->text = strndup(start, p - start);
	return v;
}

/* The children of an array or object, up to the closing bracket. */
static struct jv *members(enum kind k, char close)
{
	struct jv *v = node(k), **tail = &v->kids;

	p++;
	ws();
	if (*p == close) {
		p++;
		return v;
	}
	for (;;) {
		struct jv *kid;
		char *key = NULL;

		ws();
		if (k == J_OBJ) {
			key = string();
			ws();
			if (*p++ != ':')
				fail("expected ':'");
		}
		kid = value();
		kid->key = key;
		*tail = kid;
		tail = &kid->next;
		v->n++;
		ws();
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p++ != close)
			fail("expected ',' or a closing bracket");
		return v;
	}
}

static struct jv *word(const char *w, enum kind k)
{
	struct jv *v;

	if (strncmp(p, w, strlen(w)))
		fail("unknown word");
	p += strlen(w);
	v = node(k);
	v->text = (char *)w;
	return v;
}

static struct jv *value(void)
{
	struct jv *v;

	ws();
	switch (*p) {
	case '{':
		return members(J_OBJ, '}');
	case '[':
		return members(J_ARR, ']');
	case '"':
		v = node(J_STR);
		v->text = string();
		return v;
	case 't':
		return word("true", J_BOOL);
	case 'f':
		return word("false", J_BOOL);
	case 'n':
		return word("null", J_NULL);
	default:
		return number();
	}
}

/* The value at a dot-separated path, or NULL. */
static struct jv *lookup(struct jv *v, char *path)
{
	char *comp, *save = NULL;

	for (comp = strtok_r(path, ".", &save); comp && v;
	     comp = strtok_r(NULL, ".", &save)) {
		struct jv *kid;
		char *end;
		long i;

		if (!strcmp(comp, "#")) {
			static char buf[16];
			struct jv *len;

			if (v->kind != J_ARR && v->kind != J_OBJ)
				return NULL;
			snprintf(buf, sizeof(buf), "%d", v->n);
			len = node(J_NUM);
			len->text = buf;
			return len;
		}
		if (v->kind == J_OBJ) {
			for (kid = v->kids; kid && strcmp(kid->key, comp);
			     kid = kid->next)
				;
		} else if (v->kind == J_ARR) {
			i = strtol(comp, &end, 10);
			if (*end || i < 0)
				return NULL;
			for (kid = v->kids; kid && i--; kid = kid->next)
				;
		} else {
			return NULL;
		}
		v = kid;
	}
	return v;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf) - 1, stdin);
	struct jv *doc;
	int i, missing = 0;

	if (len == sizeof(buf) - 1)
		fail("input too long");
	buf[len] = '\0';
	p = buf;
	doc = value();
	ws();
	if (*p)
		fail("text after the document");
	for (i = 1; i < argc; i++) {
		struct jv *v = lookup(doc, argv[i]);

		if (!v) {
			fprintf(stderr, "jsonget: no %s\n", argv[i]);
			missing = 1;
		} else if (v->kind == J_ARR || v->kind == J_OBJ) {
			printf("%s\n", v->kind == J_ARR ? "[array]" : "{object}");
		} else {
			printf("%s\n", v->text);
		}
	}
	return missing;
}
