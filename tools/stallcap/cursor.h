/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): a bounds-checked cursor over a private copy of untrusted
 * bytes (a ring record, a chunk of a record file).  Every field is taken
 * through it: a take that does not fit fails and the cursor stays put.
 */
#ifndef STALLCAP_CURSOR_H
#define STALLCAP_CURSOR_H

#include <stddef.h>
#include <linux/types.h>

struct cursor {
	const __u8 *p;
	size_t len, off;
};

static inline void cursor_init(struct cursor *c, const void *p, size_t len)
{
	c->p = p;
	c->len = len;
	c->off = 0;
}

static inline size_t cursor_left(const struct cursor *c)
{
	return c->len - c->off;
}

/* @n bytes at the cursor, or NULL if fewer are left; advances past them. */
static inline const void *cursor_take(struct cursor *c, size_t n)
{
	const void *q;

	if (n > cursor_left(c))
		return NULL;
	q = c->p + c->off;
	c->off += n;
	return q;
}

/* As cursor_take(), then skip the zero padding to 8 bytes (cut at the end). */
static inline const void *cursor_take_pad8(struct cursor *c, size_t n)
{
	const void *q = cursor_take(c, n);
	size_t pad = (8 - c->off % 8) % 8;

	if (q)
		c->off += pad < cursor_left(c) ? pad : cursor_left(c);
	return q;
}

#endif /* STALLCAP_CURSOR_H */
