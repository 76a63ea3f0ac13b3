/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small strict JSON checker for the tests and the fuzz targets: the whole
 * line must be one valid JSON value, strings valid UTF-8 without raw control
 * characters (what Python's json module accepts from a UTF-8 file).
 */
#ifndef STALLCAP_TESTS_JSON_CHECK_H
#define STALLCAP_TESTS_JSON_CHECK_H

#include <stdbool.h>
#include <string.h>

static const char *json_value(const char *p);

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/*
 * Well-formed UTF-8 after the Unicode standard's table 3-7 (written apart
 * from the tool's own decoder on purpose): the bytes after a lead byte, or
 * 0 if the sequence at p is ill-formed.
 */
static int json_utf8_tail(const unsigned char *p)
{
	static const struct { unsigned char lo, hi, lo2, hi2; int n; } t[] = {
		{ 0xc2, 0xdf, 0x80, 0xbf, 1 }, { 0xe0, 0xe0, 0xa0, 0xbf, 2 },
		{ 0xe1, 0xec, 0x80, 0xbf, 2 }, { 0xed, 0xed, 0x80, 0x9f, 2 },
		{ 0xee, 0xef, 0x80, 0xbf, 2 }, { 0xf0, 0xf0, 0x90, 0xbf, 3 },
		{ 0xf1, 0xf3, 0x80, 0xbf, 3 }, { 0xf4, 0xf4, 0x80, 0x8f, 3 },
	};
	unsigned int i;
	int k;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (p[0] < t[i].lo || p[0] > t[i].hi)
			continue;
		if (p[1] < t[i].lo2 || p[1] > t[i].hi2)
			return 0;
		for (k = 2; k <= t[i].n; k++)
			if (p[k] < 0x80 || p[k] > 0xbf)
				return 0;
		return t[i].n;
	}
	return 0;
}

static const char *json_string(const char *p)
{
	int n;

	if (*p++ != '"')
		return NULL;
	for (; *p && *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if ((unsigned char)*p >= 0x80) {
			n = json_utf8_tail((const unsigned char *)p);
			if (!n)
				return NULL;
			p += n;
			continue;
		}
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_seq(const char *p, char close, bool keys)
{
	p = ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			p = json_string(ws(p));
			if (!p || *(p = ws(p)) != ':')
				return NULL;
			p++;
		}
		p = json_value(p);
		if (!p)
			return NULL;
		p = ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p)
{
	p = ws(p);
	if (*p == '{')
		return json_seq(p, '}', true);
	if (*p == '[')
		return json_seq(p, ']', false);
	if (*p == '"')
		return json_string(p);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return NULL;
	while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
	       *p == '-')
		p++;
	return p;
}

static bool json_line_ok(const char *line)
{
	const char *end = json_value(line);

	return end && *ws(end) == 0;
}

#endif /* STALLCAP_TESTS_JSON_CHECK_H */
