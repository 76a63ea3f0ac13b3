// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): names from records and files (thread names, symbols, paths)
 * are untrusted bytes.  In text and folded output they are shown as they are
 * only if they are printable ASCII or valid UTF-8 that is neither a C1
 * control nor a bidirectional override; any other byte is shown as \xNN (and
 * a backslash as \\), so that nothing a name holds can move the cursor,
 * change the terminal, start a line or, in folded output, a frame.  JSON
 * strings (format_json.c) escape the same characters as \uXXXX and replace
 * invalid UTF-8 by U+FFFD.
 */
#include <string.h>

#include "tool.h"

/* The code point of the valid UTF-8 sequence at p, and its length; 0 if invalid. */
size_t utf8_decode(const unsigned char *p, size_t left, __u32 *cpp)
{
	unsigned int c = p[0];
	size_t n, i;
	__u32 cp;

	if (c < 0x80) {
		*cpp = c;
		return 1;
	}
	if (c < 0xc2)
		return 0;	/* a continuation byte, or an overlong 2-byte form */
	if (c < 0xe0) {
		n = 2;
		cp = c & 0x1f;
	} else if (c < 0xf0) {
		n = 3;
		cp = c & 0x0f;
	} else if (c < 0xf5) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;	/* overlong, out of range, or a surrogate */
	*cpp = cp;
	return n;
}

size_t utf8_len(const unsigned char *p, size_t left)
{
	__u32 cp;

	return utf8_decode(p, left, &cp);
}

/* Characters that act on a terminal or reorder the text around them. */
bool unsafe_char(__u32 cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ||
	       cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static void escaped(FILE *out, const char *s, size_t n, bool folded)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i, len;
	__u32 cp;

	n = strnlen(s, n);
	for (i = 0; i < n; i += len) {
		len = utf8_decode(p + i, n - i, &cp);
		if (!len || unsafe_char(cp)) {
			fprintf(out, "\\x%02x", p[i]);
			len = 1;
		} else if (cp == '\\') {
			fputs("\\\\", out);
		} else if (cp == ';' && folded) {
			fputc(':', out);
		} else {
			fwrite(p + i, 1, len, out);
		}
	}
}

void text_str(FILE *out, const char *s)
{
	escaped(out, s, (size_t)-1, false);
}

void text_strn(FILE *out, const char *s, size_t n)
{
	escaped(out, s, n, false);
}

void folded_str(FILE *out, const char *s)
{
	escaped(out, s, (size_t)-1, true);
}
