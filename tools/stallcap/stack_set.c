// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the distinct stacks of a stall, so that a sample whose stack
 * was shown already is printed as "same stacks as sample N" after one hash
 * lookup.  Each distinct stack keeps its frame addresses (as many as it has)
 * to compare exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

struct stack_ent {
	struct hnode node;
	struct stack_ent *all_next;
	__u32 sample_index;
	__u8 state;
	__u16 nk, nu;
	__u64 addr[];		/* nk kernel, then nu user */
};

struct stack_set {
	struct htab h;
	struct stack_ent *all;
};

struct stack_set *stack_set_new(void)
{
	struct stack_set *ss = calloc(1, sizeof(*ss));

	if (ss)
		htab_init(&ss->h);
	return ss;
}

void stack_set_free(struct stack_set *ss)
{
	struct stack_ent *e, *n;

	if (!ss)
		return;
	for (e = ss->all; e; e = n) {
		n = e->all_next;
		free(e);
	}
	htab_free(&ss->h);
	free(ss);
}

static __u64 frames_hash(const struct sc_frame *f, int n, __u64 h)
{
	int i;

	for (i = 0; i < n; i++)
		h = hash_u64(h ^ f[i].addr);
	return h;
}

static bool ent_equal(const struct stack_ent *e, const struct sc_rsample *r)
{
	int i;

	if (e->state != r->smp->v.s.state || e->nk != r->nk || e->nu != r->nu)
		return false;
	for (i = 0; i < r->nk; i++)
		if (e->addr[i] != r->kf[i].addr)
			return false;
	for (i = 0; i < r->nu; i++)
		if (e->addr[r->nk + i] != r->uf[i].addr)
			return false;
	return true;
}

bool stack_set_seen(struct stack_set *ss, const struct sc_rsample *r, __u32 *first)
{
	__u64 h = hash_u64(((__u64)r->smp->v.s.state << 32) | (__u64)r->nk << 16 | (__u64)r->nu);
	struct stack_ent *e;
	struct hnode *n;
	int i;

	h = frames_hash(r->uf, r->nu, frames_hash(r->kf, r->nk, h));
	htab_for_each_possible(&ss->h, n, h) {
		e = container_of(n, struct stack_ent, node);
		if (ent_equal(e, r)) {
			*first = e->sample_index;
			return true;
		}
	}
	e = malloc(sizeof(*e) + sizeof(e->addr[0]) * (size_t)(r->nk + r->nu));
	if (!e)
		return false;
	e->sample_index = r->smp->v.s.sample_index;
	e->state = r->smp->v.s.state;
	e->nk = (__u16)r->nk;
	e->nu = (__u16)r->nu;
	for (i = 0; i < r->nk; i++)
		e->addr[i] = r->kf[i].addr;
	for (i = 0; i < r->nu; i++)
		e->addr[r->nk + i] = r->uf[i].addr;
	if (htab_add(&ss->h, &e->node, h)) {
		free(e);
		return false;
	}
	e->all_next = ss->all;
	ss->all = e;
	return false;
}
