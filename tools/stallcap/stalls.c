// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): grouping records into stalls.
 *
 * A stall is identified by (tid, stall_id): stall ids are unique within a
 * session, and a system-wide reader sees several sessions.  Samples are kept
 * in arrival order; a deferred USER_STACK record completes the sample that
 * carries the same cookie.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

void stalls_init(struct stalls *st)
{
	memset(st, 0, sizeof(*st));
}

void stalls_free(struct stalls *st)
{
	struct sc_stall *s, *sn;
	struct sc_sample *m, *mn;

	for (s = st->head; s; s = sn) {
		sn = s->next;
		for (m = s->samples; m; m = mn) {
			mn = m->next;
			free(m);
		}
		free(s);
	}
	stalls_init(st);
}

static struct sc_stall *stall_get(struct stalls *st, __u32 pid, __u32 tid,
				  __u64 stall_id, bool create)
{
	struct sc_stall *s;

	/* recent stalls are at the tail; lists stay short in practice */
	for (s = st->head; s; s = s->next)
		if (s->tid == tid && s->stall_id == stall_id)
			return s;
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = pid;
	s->tid = tid;
	s->stall_id = stall_id;
	if (st->tail)
		st->tail->next = s;
	else
		st->head = s;
	st->tail = s;
	st->nr++;
	return s;
}

static struct sc_sample *sample_copy(const struct stallcap_rec_header *rec)
{
	struct sc_sample *m = malloc(sizeof(*m) + rec->size);

	if (!m)
		return NULL;
	memset(m, 0, sizeof(*m));
	memcpy(m->buf, rec, rec->size);
	if (stallcap_sample_parse(m->buf, rec->size, &m->v)) {
		free(m);
		return NULL;
	}
	m->user = m->v;
	return m;
}

/*
 * All samples of one kernel entry share the cookie of the one USER_STACK
 * record that completes them; it comes after them, but either order works.
 */
static void link_deferred(struct sc_stall *s, struct sc_sample *n)
{
	bool is_user = n->v.s.hdr.type == STALLCAP_REC_USER_STACK;
	struct sc_sample *m;

	if (!n->v.s.cookie)
		return;
	for (m = s->samples; m; m = m->next) {
		struct sc_sample *smp = is_user ? m : n, *us = is_user ? n : m;

		if (m->v.s.cookie != n->v.s.cookie ||
		    smp->v.s.hdr.type != STALLCAP_REC_SAMPLE ||
		    us->v.s.hdr.type != STALLCAP_REC_USER_STACK || smp->has_deferred)
			continue;
		smp->user = us->v;
		smp->has_deferred = true;
		us->merged = true;	/* shown through its samples */
	}
}

static struct sc_stall *add_sample(struct stalls *st, const struct stallcap_rec_header *rec)
{
	struct sc_sample *m = sample_copy(rec);
	struct sc_stall *s;

	if (!m)
		return NULL;
	s = stall_get(st, m->v.s.pid, m->v.s.tid, m->v.s.stall_id, true);
	if (!s) {
		free(m);
		return NULL;
	}
	if (rec->type != STALLCAP_REC_USER_STACK)
		s->nr_samples++;
	link_deferred(s, m);
	if (s->last)
		s->last->next = m;
	else
		s->samples = m;
	s->last = m;
	return s;
}

struct sc_stall *stalls_add(struct stalls *st, const struct stallcap_rec_header *rec)
{
	struct stallcap_stall_end e;
	struct sc_stall *s = NULL;

	st->records++;
	switch (rec->type) {
	case STALLCAP_REC_SAMPLE:
	case STALLCAP_REC_USER_STACK:
		s = add_sample(st, rec);
		break;
	case STALLCAP_REC_STALL_END:
		if (stallcap_stall_end_parse(rec, rec->size, &e))
			break;
		s = stall_get(st, e.pid, e.tid, e.stall_id, true);
		if (s) {
			s->end = e;
			s->ended = true;
		}
		break;
	default:
		return NULL;	/* a record type this tool does not know */
	}
	if (!s)
		st->bad_records++;
	return s;
}

/* A sample still waits for its deferred user stack. */
bool stall_defer_pending(const struct sc_stall *s)
{
	const struct sc_sample *m;

	for (m = s->samples; m; m = m->next)
		if ((m->v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING) && !m->has_deferred &&
		    m->v.s.hdr.type == STALLCAP_REC_SAMPLE)
			return true;
	return false;
}
