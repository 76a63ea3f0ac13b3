// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): grouping records into stalls, the index of the report.
 *
 * A stall is identified by (tid, stall_id): stall ids are unique within a
 * session, and a system-wide reader sees several sessions.  Stalls are kept
 * in arrival order and indexed by that key in a hash table; samples are kept
 * in arrival order.  A deferred USER_STACK record completes the samples of
 * its stall that carry the same cookie: a second table indexes
 * (tid, stall_id, cookie).  Every record is filed in constant time.
 *
 * A report that is done with a stall (aggregated or printed once it ended)
 * releases it: memory then follows the stalls in progress, not the input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "tool.h"

/**
 * struct cookie_ent - the samples of one stall sharing a deferred cookie
 * @user: the first USER_STACK record with the cookie, or NULL
 * @pending: samples that came before it (chained by cookie_next)
 */
struct cookie_ent {
	struct hnode node;
	const struct sc_stall *stall;
	__u64 cookie;
	struct sc_sample *user;
	struct sc_sample *pending;
	struct cookie_ent *stall_next;	/* the stall's entries */
};

void stalls_init(struct stalls *st)
{
	memset(st, 0, sizeof(*st));
	htab_init(&st->by_id);
	htab_init(&st->by_cookie);
}

static void stall_free(struct stalls *st, struct sc_stall *s, bool unindex)
{
	struct sc_sample *m, *mn;
	struct cookie_ent *c, *cn;

	for (m = s->samples; m; m = mn) {
		mn = m->next;
		free(m->fd_name);
		free(m);
	}
	for (c = s->cookies; c; c = cn) {
		cn = c->stall_next;
		if (unindex)
			htab_del(&st->by_cookie, &c->node);
		free(c);
	}
	free(s);
}

void stalls_free(struct stalls *st)
{
	struct sc_stall *s, *sn;

	for (s = st->head; s; s = sn) {
		sn = s->next;
		stall_free(st, s, false);
	}
	htab_free(&st->by_id);
	htab_free(&st->by_cookie);
	free(st->pending_fd.name);
	stalls_init(st);
}

void stalls_note_fd(struct stalls *st, const struct sc_fdname *f)
{
	char *name = strdup(f->name);

	if (!name)
		return;
	free(st->pending_fd.name);
	st->pending_fd = *f;
	st->pending_fd.name = name;
}

/* The sample the pending file name is for takes it. */
static void take_fd_name(struct stalls *st, struct sc_sample *m)
{
	struct sc_fdname *f = &st->pending_fd;

	if (!f->name || !m->has_syscall || m->v.s.hdr.type != STALLCAP_REC_SAMPLE ||
	    f->pid != m->v.s.pid || f->tid != m->v.s.tid || f->stall_id != m->v.s.stall_id ||
	    f->sample_index != m->v.s.sample_index || f->fd != sc_syscall_fd(&m->sys))
		return;
	m->fd_name = f->name;
	f->name = NULL;
}

static __u64 stall_hash(__u32 tid, __u64 stall_id)
{
	return hash_u64(stall_id ^ hash_u64(tid));
}

struct sc_stall *stalls_find(const struct stalls *st, __u32 tid, __u64 stall_id)
{
	__u64 h = stall_hash(tid, stall_id);
	struct hnode *n;
	struct sc_stall *s;

	htab_for_each_possible(&st->by_id, n, h) {
		s = container_of(n, struct sc_stall, node);
		if (s->tid == tid && s->stall_id == stall_id)
			return s;
	}
	return NULL;
}

static struct sc_stall *stall_get(struct stalls *st, __u32 pid, __u32 tid, __u64 stall_id)
{
	struct sc_stall *s = stalls_find(st, tid, stall_id);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = pid;
	s->tid = tid;
	s->stall_id = stall_id;
	if (htab_add(&st->by_id, &s->node, stall_hash(tid, stall_id))) {
		free(s);
		return NULL;
	}
	s->prev = st->tail;
	if (st->tail)
		st->tail->next = s;
	else
		st->head = s;
	st->tail = s;
	st->nr++;
	st->live++;
	return s;
}

/*
 * Forget a stall the report is done with: its samples, its index entries.
 * A record of it that comes later starts a new stall (with no end).
 */
void stalls_release(struct stalls *st, struct sc_stall *s)
{
	htab_del(&st->by_id, &s->node);
	if (s->prev)
		s->prev->next = s->next;
	else
		st->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		st->tail = s->prev;
	st->live--;
	stall_free(st, s, true);
}

/* The record's stack copies besides the view's (it parsed). */
static void sample_copies(struct sc_sample *m, __u32 size)
{
	struct sc_copies *x = &m->copies;
	struct sc_run *r;

	if (stallcap_sample_interrupted_stack(m->buf, size, &x->istack.bytes,
					      &x->istack.start, &x->istack.size) != 1)
		memset(&x->istack, 0, sizeof(x->istack));
	for (x->nr_more = 0; x->nr_more < SC_MAX_MORE; x->nr_more++) {
		r = &x->more[x->nr_more];
		if (stallcap_sample_stack_more(m->buf, size, x->nr_more, &r->bytes, &r->start,
					       &r->size) != 1)
			break;
	}
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
	m->has_syscall = stallcap_sample_syscall(m->buf, rec->size, &m->sys) == 1;
	sample_copies(m, rec->size);
	m->user_copies = m->copies;
	return m;
}

static struct cookie_ent *cookie_get(struct stalls *st, struct sc_stall *s,
				     __u64 cookie)
{
	__u64 h = hash_u64(cookie ^ stall_hash(s->tid, s->stall_id));
	struct cookie_ent *c;
	struct hnode *n;

	htab_for_each_possible(&st->by_cookie, n, h) {
		c = container_of(n, struct cookie_ent, node);
		if (c->stall == s && c->cookie == cookie)
			return c;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->stall = s;
	c->cookie = cookie;
	if (htab_add(&st->by_cookie, &c->node, h)) {
		free(c);
		return NULL;
	}
	c->stall_next = s->cookies;
	s->cookies = c;
	return c;
}

static void link_one(struct sc_stall *s, struct sc_sample *smp, struct sc_sample *us)
{
	smp->user = us->v;
	smp->user_copies = us->copies;
	smp->has_deferred = true;
	us->merged = true;	/* shown through its samples */
	if (smp->v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING)
		s->nr_defer_pending--;
}

/*
 * All samples of one kernel entry share the cookie of the one USER_STACK
 * record that completes them; it comes after them, but either order works.
 * A sample is completed by the first USER_STACK record of its cookie.
 */
static int link_deferred(struct stalls *st, struct sc_stall *s, struct sc_sample *n)
{
	struct cookie_ent *c;
	struct sc_sample *m;

	if (!n->v.s.cookie)
		return 0;
	c = cookie_get(st, s, n->v.s.cookie);
	if (!c)
		return -ENOMEM;
	if (n->v.s.hdr.type == STALLCAP_REC_SAMPLE) {
		if (c->user) {
			link_one(s, n, c->user);
		} else {
			n->cookie_next = c->pending;
			c->pending = n;
		}
		return 0;
	}
	if (c->user)
		return 0;	/* a second one for the cookie: shown on its own */
	c->user = n;
	for (m = c->pending; m; m = m->cookie_next)
		link_one(s, m, n);
	c->pending = NULL;
	return 0;
}

static struct sc_stall *add_sample(struct stalls *st, const struct stallcap_rec_header *rec)
{
	struct sc_sample *m = sample_copy(rec);
	struct sc_stall *s;

	if (!m)
		return NULL;
	s = stall_get(st, m->v.s.pid, m->v.s.tid, m->v.s.stall_id);
	if (!s) {
		free(m);
		return NULL;
	}
	take_fd_name(st, m);
	if (rec->type != STALLCAP_REC_USER_STACK) {
		s->nr_samples++;
		if (m->v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING)
			s->nr_defer_pending++;
	}
	if (s->last)
		s->last->next = m;
	else
		s->samples = m;
	s->last = m;
	link_deferred(st, s, m);	/* without memory: shown unlinked */
	return s;
}

/*
 * File a record.  The caller guarantees rec->size readable bytes at rec (a
 * private copy: the ring reader's, or a record file's chunk).
 */
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
		s = stall_get(st, e.pid, e.tid, e.stall_id);
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
	return s->nr_defer_pending > 0;
}

/** stalls_of_pid() - whether a stall of process @pid is held */
bool stalls_of_pid(const struct stalls *st, __u32 pid)
{
	const struct sc_stall *s;

	for (s = st->head; s; s = s->next)
		if (s->pid == pid)
			return true;
	return false;
}
