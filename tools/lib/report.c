// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: in-process reporting.  An application that reads its own
 * ring writes its stalls into its own log, one block per stall, as Seastar
 * does (the format is in stallcap.h; report_text.c writes the lines):
 *
 *   stallcap: stall 7 of tid 1234 (reactor-0), tag 0x0: 5.00 ms past its 20.00 ms deadline so far, running
 *   stallcap:   sample 0 at +5.00 ms, running, cpu 1
 *   stallcap:     user   #0  0x000055d4c2a1b2c3  handle_tick+0x1c (/usr/bin/server)
 *   stallcap:   samples 1-2 at +25.00 to +65.00 ms, running: same stack as sample 0 (x2)
 *   stallcap: stall 7 of tid 1234 ended: 71.20 ms over its deadline, 3 samples, 0 lost
 *
 * The reporter follows at most MAX_STALLS stalls at once and keeps, per
 * stall, a few counters and the hash of the last stack written: a stall's
 * memory does not grow with its samples.  Samples waiting for their
 * deferred user stack are held (at most MAX_HELD, then the oldest goes out
 * without it), and so are the later samples and the end of their stall, so
 * that the block stays in order.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_HELD	16	/* samples waiting for their deferred user stack */
#define MAX_STALLS	32	/* stalls followed at once */
#define MAX_GONE	256	/* stalls let go, remembered for their end's count */

/**
 * struct stall - what the reporter keeps of a stall between its records
 * @stall_id: the stall's id
 * @tid: its thread
 * @ns_tid: its thread in the opener's pid namespace
 * @comm: its thread's name
 * @in_use: the entry is taken
 * @header: its header is written
 * @ended: its end came while samples of it were held: written after them
 * @has_hash: a sample of it was written in full, its stack hashed in @hash
 * @hash: that stack's hash
 * @hash_of: that sample's index
 * @seen: samples of it written (in full or in a run)
 * @held: samples of it held
 * @used: when it was last touched (least recently used goes first)
 * @run: samples with the stack of @hash_of, not written yet
 * @end: its end, when @ended
 */
struct stall {
	__u64 stall_id;
	__u32 tid, ns_tid;
	char comm[16];
	bool in_use, header, ended, has_hash;
	__u64 hash;
	__u32 hash_of;
	unsigned int seen, held;
	unsigned long used;
	struct scl_run run;
	struct stallcap_stall_end end;
};

struct gone {
	__u64 stall_id;
	__u32 tid;
	unsigned int seen;
};

struct held {
	__u64 *rec;		/* a private copy; NULL: free entry */
	struct stallcap_sample_view v;
	unsigned long seq;
};

struct stallcap_reporter {
	FILE *out;
	struct held held[MAX_HELD];
	struct stall stalls[MAX_STALLS];
	struct gone gone[MAX_GONE];
	unsigned int next_gone;
	unsigned long seq;
	struct stall *cur;	/* the stall whose lines were written last */
	struct scl_out text;	/* one chunk of lines, written with one fputs() */
};

int stallcap_reporter_new(struct stallcap_reporter **rp, FILE *out)
{
	if (!rp || !out)
		return -EINVAL;
	*rp = calloc(1, sizeof(**rp));
	if (!*rp)
		return -ENOMEM;
	(*rp)->out = out;
	(*rp)->text.grow = true;
	return 0;
}

static struct scl_out *chunk(struct stallcap_reporter *r)
{
	r->text.at = 0;
	r->text.failed = false;
	if (r->text.len)
		r->text.buf[0] = '\0';
	return &r->text;
}

static void chunk_write(struct stallcap_reporter *r)
{
	if (r->text.at)
		fputs(r->text.buf, r->out);
}

static struct stall *find(struct stallcap_reporter *r, __u32 tid, __u64 stall_id)
{
	unsigned int i;

	for (i = 0; i < MAX_STALLS; i++)
		if (r->stalls[i].in_use && r->stalls[i].tid == tid &&
		    r->stalls[i].stall_id == stall_id)
			return &r->stalls[i];
	return NULL;
}

static void stall_free(struct stallcap_reporter *r, struct stall *st)
{
	if (r->cur == st)
		r->cur = NULL;
	memset(st, 0, sizeof(*st));
}

/* the samples of @st written before, if it was followed and let go */
static unsigned int gone_take(struct stallcap_reporter *r, __u32 tid, __u64 stall_id,
			      bool *found)
{
	unsigned int i, seen;

	for (i = 0; i < MAX_GONE; i++) {
		struct gone *g = &r->gone[i];

		if (g->tid == tid && g->stall_id == stall_id && (g->tid || g->stall_id)) {
			seen = g->seen;
			memset(g, 0, sizeof(*g));
			*found = true;
			return seen;
		}
	}
	*found = false;
	return 0;
}

/* the header, or "continued" when other lines came between */
static void block_head(struct stallcap_reporter *r, struct stall *st, struct scl_out *o,
		       const struct stallcap_sample_view *v)
{
	if (!st->header && v)
		scl_put_header(o, v);
	else if (r->cur != st)
		scl_put_continued(o, st->stall_id, st->ns_tid, st->comm);
	st->header = true;
	r->cur = st;
}

static void run_put(struct stallcap_reporter *r, struct stall *st, struct scl_out *o)
{
	if (!st->run.n)
		return;
	block_head(r, st, o, NULL);
	scl_put_same(o, &st->run);
	memset(&st->run, 0, sizeof(st->run));
}

static void run_flush(struct stallcap_reporter *r, struct stall *st)
{
	if (!st->run.n)
		return;
	run_put(r, st, chunk(r));
	chunk_write(r);
}

/* @st's end (NULL: a stall not followed now): "lost" only if it is known */
static void end_write(struct stallcap_reporter *r, struct stall *st,
		      const struct stallcap_stall_end *end)
{
	struct stallcap_stall_end e = *end;	/* @end may be @st's */
	struct scl_out *o = chunk(r);
	bool found = true;
	long seen;

	if (st) {
		run_put(r, st, o);
		seen = st->seen;
		stall_free(r, st);
	} else {
		seen = gone_take(r, e.tid, e.stall_id, &found);
	}
	scl_put_end(o, &e, found ? seen : -1);
	chunk_write(r);
}

static void stall_release(struct stallcap_reporter *r, struct stall *st);

/* let go of @st: write what it holds, remember how many samples it had */
static void stall_evict(struct stallcap_reporter *r, struct stall *st)
{
	struct gone *g;

	stall_release(r, st);
	if (!st->in_use)
		return;		/* its end was waiting: written */
	run_flush(r, st);
	g = &r->gone[r->next_gone++ % MAX_GONE];
	g->tid = st->tid;
	g->stall_id = st->stall_id;
	g->seen = st->seen;
	stall_free(r, st);
}

/* the entry of @v's stall, made (the least recently used let go) if new */
static struct stall *stall_get(struct stallcap_reporter *r, const struct stallcap_sample_view *v)
{
	struct stall *st = find(r, v->s.tid, v->s.stall_id), *old = NULL;
	unsigned int i;
	bool found;

	if (st) {
		st->used = ++r->seq;
		return st;
	}
	for (i = 0; i < MAX_STALLS && !st; i++) {
		if (!r->stalls[i].in_use)
			st = &r->stalls[i];
		else if (!old || r->stalls[i].used < old->used)
			old = &r->stalls[i];
	}
	if (!st) {
		stall_evict(r, old);
		st = old;
	}
	st->in_use = true;
	st->tid = v->s.tid;
	st->stall_id = v->s.stall_id;
	st->ns_tid = v->s.ns_tid;
	memcpy(st->comm, v->s.comm, sizeof(st->comm));
	st->seen = gone_take(r, st->tid, st->stall_id, &found);
	st->header = found;
	st->used = ++r->seq;
	return st;
}

/* a sample in full, or one more of a run when its stack is the last one's */
static void sample_write(struct stallcap_reporter *r, struct stall *st,
			 const struct stallcap_sample_view *v,
			 const struct stallcap_sample_view *user)
{
	__u64 h = scl_stack_hash(v, user);
	struct scl_out *o;

	st->seen++;
	if (st->has_hash && h == st->hash) {
		scl_run_add(&st->run, v, st->hash_of);
		return;
	}
	o = chunk(r);
	run_put(r, st, o);
	block_head(r, st, o, v);
	scl_put_sample(o, v, user);
	chunk_write(r);
	st->has_hash = true;
	st->hash = h;
	st->hash_of = v->s.sample_index;
}

/* write held sample @h (completed by @user) and free it */
static void held_write(struct stallcap_reporter *r, struct held *h,
		       const struct stallcap_sample_view *user)
{
	struct stall *st = find(r, h->v.s.tid, h->v.s.stall_id);

	if (st) {
		sample_write(r, st, &h->v, user);
		st->held--;
	}
	free(h->rec);
	h->rec = NULL;
	if (st && !st->held && st->ended)
		end_write(r, st, &st->end);
}

/* the oldest held sample, of stall @st only if not NULL */
static struct held *held_oldest(struct stallcap_reporter *r, const struct stall *st)
{
	struct held *first = NULL;
	unsigned int i;

	for (i = 0; i < MAX_HELD; i++) {
		struct held *h = &r->held[i];

		if (h->rec && (!st || (h->v.s.tid == st->tid && h->v.s.stall_id == st->stall_id)) &&
		    (!first || h->seq < first->seq))
			first = h;
	}
	return first;
}

/* write everything @st holds as it is (its end too, if it came) */
static void stall_release(struct stallcap_reporter *r, struct stall *st)
{
	struct held *h;

	while (st->in_use && st->held && (h = held_oldest(r, st)))
		held_write(r, h, NULL);
}

static struct held *held_free_entry(struct stallcap_reporter *r)
{
	unsigned int i;

	for (i = 0; i < MAX_HELD; i++)
		if (!r->held[i].rec)
			return &r->held[i];
	return NULL;
}

/* Hold a sample until its USER_STACK record; the oldest goes out when full. */
static int hold(struct stallcap_reporter *r, const struct stallcap_rec_header *rec,
		const struct stallcap_sample_view *v)
{
	struct stall *st;
	struct held *h;

	if (!held_free_entry(r))
		held_write(r, held_oldest(r, NULL), NULL);
	st = stall_get(r, v);
	h = held_free_entry(r);	/* letting a stall go frees entries, never takes one */
	h->rec = malloc(rec->size);
	if (!h->rec)
		return -ENOMEM;
	memcpy(h->rec, rec, rec->size);
	if (stallcap_sample_parse(h->rec, rec->size, &h->v)) {
		free(h->rec);
		h->rec = NULL;
		return -EBADMSG;
	}
	h->seq = ++r->seq;
	st->held++;
	return 0;
}

static bool completes(const struct held *h, const struct stallcap_sample_view *u)
{
	return (h->v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING) && h->v.s.cookie == u->s.cookie;
}

/*
 * @u completes held samples of its stall (its cookie): write the stall's
 * held samples in order up to the last of them, and the ones behind that
 * wait for no stack.  false if it completes none.
 */
static bool merge(struct stallcap_reporter *r, const struct stallcap_sample_view *u)
{
	struct stall *st = find(r, u->s.tid, u->s.stall_id);
	unsigned long last = 0;
	struct held *h;
	unsigned int i;

	if (!st)
		return false;
	for (i = 0; i < MAX_HELD; i++) {
		h = &r->held[i];
		if (h->rec && h->v.s.tid == st->tid && h->v.s.stall_id == st->stall_id &&
		    completes(h, u) && h->seq > last)
			last = h->seq;
	}
	if (!last)
		return false;
	while (st->in_use && (h = held_oldest(r, st)) &&
	       (h->seq <= last || !(h->v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING)))
		held_write(r, h, completes(h, u) ? u : NULL);
	return true;
}

static int sample_record(struct stallcap_reporter *r, const struct stallcap_rec_header *rec)
{
	struct stallcap_sample_view v;
	struct stall *st;

	if (stallcap_sample_parse(rec, rec->size, &v))
		return 0;	/* malformed: skipped, as the tool does */
	if (rec->type == STALLCAP_REC_USER_STACK && v.s.cookie && merge(r, &v))
		return 0;
	st = find(r, v.s.tid, v.s.stall_id);
	if ((rec->type == STALLCAP_REC_SAMPLE && v.s.cookie &&
	     (v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING)) || (st && st->held))
		return hold(r, rec, &v) == -ENOMEM ? -ENOMEM : 0;
	sample_write(r, stall_get(r, &v), &v, NULL);
	return 0;
}

static void end_record(struct stallcap_reporter *r, const struct stallcap_stall_end *e)
{
	struct stall *st = find(r, e->tid, e->stall_id);

	if (st && st->held) {
		st->end = *e;
		st->ended = true;
		return;
	}
	end_write(r, st, e);
}

int stallcap_report_record(const struct stallcap_rec_header *rec, void *reporter)
{
	struct stallcap_reporter *r = reporter;
	struct stallcap_stall_end e;

	if (!r || !rec)
		return -EINVAL;
	switch (rec->type) {
	case STALLCAP_REC_SAMPLE:
	case STALLCAP_REC_USER_STACK:
		return sample_record(r, rec);
	case STALLCAP_REC_STALL_END:
		if (!stallcap_stall_end_parse(rec, rec->size, &e))
			end_record(r, &e);
		return 0;
	default:
		if (!scl_format(chunk(r), rec) && r->text.at) {
			r->cur = NULL;
			chunk_write(r);
		}
		return 0;
	}
}

/* write the runs not written yet: what a live log shows now */
static void runs_flush(struct stallcap_reporter *r)
{
	unsigned int i;

	for (i = 0; i < MAX_STALLS; i++)
		if (r->stalls[i].in_use)
			run_flush(r, &r->stalls[i]);
}

void stallcap_reporter_flush(struct stallcap_reporter *r)
{
	struct held *h;

	if (!r)
		return;
	while ((h = held_oldest(r, NULL)))
		held_write(r, h, NULL);
	runs_flush(r);
	fflush(r->out);
}

void stallcap_reporter_free(struct stallcap_reporter *r)
{
	if (!r)
		return;
	stallcap_reporter_flush(r);
	free(r->text.buf);
	free(r);
}

int stallcap_report(struct stallcap_session *s, FILE *out)
{
	int ret;

	if (!s || !out)
		return -EINVAL;
	if (s->noop)
		return 0;
	ret = stallcap_ring_map(s);
	if (ret)
		return ret;
	/* the reporter (its held samples) belongs to the ring's single consumer */
	pthread_mutex_lock(&s->ring_lock);
	if (s->reporter && s->reporter->out != out) {
		stallcap_reporter_free(s->reporter);
		s->reporter = NULL;
	}
	ret = s->reporter ? 0 : stallcap_reporter_new(&s->reporter, out);
	if (!ret)
		ret = scl_ring_read(&s->ring, stallcap_report_record, s->reporter, &s->ring_buf);
	if (s->reporter)
		runs_flush(s->reporter);
	pthread_mutex_unlock(&s->ring_lock);
	fflush(out);
	return ret;
}
