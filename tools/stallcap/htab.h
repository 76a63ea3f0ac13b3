/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): an intrusive chained hash table (as the kernel's hlist
 * tables): users embed a struct hnode, hash their key themselves and
 * compare keys while walking the nodes of one hash.  The table grows to keep
 * about one node per bucket; it owns only its bucket array.
 *
 * Hashes are keyed with a per-process random seed (from AT_RANDOM), so an
 * input crafted to collide on one run does not on another.
 */
#ifndef STALLCAP_HTAB_H
#define STALLCAP_HTAB_H

#include <stddef.h>
#include <linux/types.h>

struct hnode {
	struct hnode *next;
	__u64 hash;
};

struct htab {
	struct hnode **b;
	size_t nb;		/* buckets, a power of two (0 before the first add) */
	size_t n;		/* nodes */
};

void htab_init(struct htab *h);
void htab_free(struct htab *h);
/** htab_add() - insert @n under @hash; 0 or -ENOMEM (then nothing changed). */
int htab_add(struct htab *h, struct hnode *n, __u64 hash);
/** htab_del() - remove @n (added before); the table does not shrink. */
void htab_del(struct htab *h, struct hnode *n);
/** htab_first() - the first node with @hash, or NULL. */
struct hnode *htab_first(const struct htab *h, __u64 hash);
/** htab_next() - the next node with the same hash as @n, or NULL. */
struct hnode *htab_next(const struct hnode *n);

#define htab_for_each_possible(h, pos, hash) \
	for ((pos) = htab_first((h), (hash)); (pos); (pos) = htab_next(pos))

__u64 hash_u64(__u64 x);
__u64 hash_bytes(const void *p, size_t len, __u64 h);

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif /* STALLCAP_HTAB_H */
