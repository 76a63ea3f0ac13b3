// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the intrusive hash table of htab.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "htab.h"

void htab_init(struct htab *h)
{
	memset(h, 0, sizeof(*h));
}

void htab_free(struct htab *h)
{
	free(h->b);
	htab_init(h);
}

static int htab_grow(struct htab *h)
{
	size_t nb = h->nb ? 2 * h->nb : 64, i;
	struct hnode **b, *n, *next;

	if (nb > (size_t)-1 / sizeof(*b))
		return -ENOMEM;
	b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < h->nb; i++) {
		for (n = h->b[i]; n; n = next) {
			next = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
		}
	}
	free(h->b);
	h->b = b;
	h->nb = nb;
	return 0;
}

int htab_add(struct htab *h, struct hnode *n, __u64 hash)
{
	struct hnode **slot;

	if (h->n >= h->nb && htab_grow(h) && !h->nb)
		return -ENOMEM;	/* a failed grow of a used table only slows it */
	n->hash = hash;
	slot = &h->b[hash & (h->nb - 1)];
	n->next = *slot;
	*slot = n;
	h->n++;
	return 0;
}

void htab_del(struct htab *h, struct hnode *n)
{
	struct hnode **pp;

	if (!h->nb)
		return;
	for (pp = &h->b[n->hash & (h->nb - 1)]; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			h->n--;
			return;
		}
	}
}

static struct hnode *same_hash(struct hnode *n, __u64 hash)
{
	while (n && n->hash != hash)
		n = n->next;
	return n;
}

struct hnode *htab_first(const struct htab *h, __u64 hash)
{
	return h->nb ? same_hash(h->b[hash & (h->nb - 1)], hash) : NULL;
}

struct hnode *htab_next(const struct hnode *n)
{
	return same_hash(n->next, n->hash);
}

static __u64 seed(void)
{
	static __u64 s;
	const void *r;

	if (!s) {
		r = (const void *)getauxval(AT_RANDOM);	/* 16 bytes, any alignment */
		if (r)
			memcpy(&s, r, sizeof(s));
		s |= 1;
	}
	return s;
}

/* splitmix64's finalizer over the seeded value */
__u64 hash_u64(__u64 x)
{
	x ^= seed();
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* FNV-1a over the bytes, continuing from @h, then mixed. */
__u64 hash_bytes(const void *p, size_t len, __u64 h)
{
	const unsigned char *c = p;
	size_t i;

	h ^= 0xcbf29ce484222325ULL ^ seed();
	for (i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return hash_u64(h);
}
