// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: in-process reporting.  An application that reads its own
 * ring writes its stalls into its own log, as Seastar does:
 *
 *   stallcap: stall 7 of tid 1234 (reactor-0): sample 0 at +5.00 ms over a 20.00 ms deadline, blocked (sleeping), cpu 1
 *   stallcap:   kernel #0  0xffffffff81234567
 *   stallcap:   user   #0  0x000055d4c2a1b2c3  handle_tick+0x1c (/usr/bin/server)
 *   stallcap: stall 7 of tid 1234 (reactor-0) ended: 31.20 ms over its deadline, 2 samples
 *
 * Only libc: user frames are named with dladdr() (dynamic symbols: link the
 * program with -rdynamic to name its own functions), kernel frames are the
 * record's addresses.  `stallcap report` names everything (DWARF, inline
 * frames, kernel symbols).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PREFIX		"stallcap: "
#define MAX_HELD	16	/* samples waiting for their deferred user stack */

/* snprintf into @buf at *@at, counting what would be needed past the end */
struct out {
	char *buf;
	size_t len, at;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->at < o->len ? o->buf + o->at : NULL,
		      o->at < o->len ? o->len - o->at : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->at += (size_t)n;
}

static const char *state_name(__u8 state)
{
	switch (state) {
	case STALLCAP_STATE_RUNNING: return "running";
	case STALLCAP_STATE_RUNNABLE: return "runnable (preempted)";
	case STALLCAP_STATE_SLEEPING: return "blocked (sleeping)";
	case STALLCAP_STATE_UNINTERRUPTIBLE: return "blocked (uninterruptible)";
	case STALLCAP_STATE_STOPPED: return "stopped";
	case STALLCAP_STATE_EXITING: return "exiting";
	default: return "unknown state";
	}
}

static void put_comm(struct out *o, const char comm[16])
{
	char c[17];
	int i;

	for (i = 0; i < 16 && comm[i]; i++)
		c[i] = comm[i] >= 0x20 && comm[i] < 0x7f ? comm[i] : '?';
	c[i] = '\0';
	put(o, "%s", c);
}

/* "#1  0x00005555deadbeef  fn+0x1c (/path/lib.so)", named by dladdr() */
static void put_user_frame(struct out *o, int i, __u64 ip)
{
	/* a caller's frame holds a return address: name the call instruction */
	const void *at = (const void *)(unsigned long)(i ? ip - 1 : ip);
	Dl_info di;

	put(o, PREFIX "  user   #%-2d 0x%016llx", i, (unsigned long long)ip);
	if (dladdr(at, &di) && di.dli_fname) {
		if (di.dli_sname && di.dli_saddr)
			put(o, "  %s+0x%llx", di.dli_sname,
			    (unsigned long long)(ip - (unsigned long)di.dli_saddr));
		else
			put(o, "  +0x%llx", (unsigned long long)(ip - (unsigned long)di.dli_fbase));
		put(o, " (%s)", di.dli_fname);
	}
	put(o, "\n");
}

/* a sample; its user frames from @user (a deferred USER_STACK) or itself */
static void put_sample(struct out *o, const struct stallcap_sample_view *v,
		       const struct stallcap_sample_view *user)
{
	const struct stallcap_sample *s = &v->s;
	const struct stallcap_regs_x86_64 *regs;
	unsigned int i;

	put(o, PREFIX "stall %llu of tid %u (", (unsigned long long)s->stall_id, s->ns_tid);
	put_comm(o, s->comm);
	put(o, "): %s %u at +%.2f ms over a %.2f ms deadline, %s, cpu %u\n",
	    s->hdr.type == STALLCAP_REC_USER_STACK ? "user stack of sample" : "sample",
	    s->sample_index,
	    s->capture_ns > s->deadline_ns ? (s->capture_ns - s->deadline_ns) / 1e6 : 0.0,
	    s->timeout_ns / 1e6, state_name(s->state), s->cpu);
	for (i = 0; i < v->nr_kernel; i++)
		put(o, PREFIX "  kernel #%-2u 0x%016llx\n", i,
		    (unsigned long long)v->kernel_ips[i]);
	if (!user)
		user = v;
	else if (user != v)
		put(o, PREFIX "  user stack completed on return to user space (deferred)\n");
	for (i = 0; i < user->nr_user; i++)
		put_user_frame(o, (int)i, user->user_ips[i]);
	regs = stallcap_sample_regs_x86_64(user);
	if (!user->nr_user && regs && regs->ip && (s->flags & STALLCAP_SAMPLE_USER_MODE))
		put_user_frame(o, 0, regs->ip);
	if (s->flags & STALLCAP_SAMPLE_DEFER_PENDING && user == v)
		put(o, PREFIX "  user stack deferred, not received\n");
}

static void put_end(struct out *o, const struct stallcap_stall_end *e)
{
	put(o, PREFIX "stall %llu of tid %u ended: %.2f ms over its deadline, %u sample%s\n",
	    (unsigned long long)e->stall_id, e->ns_tid,
	    e->end_ns > e->deadline_ns ? (e->end_ns - e->deadline_ns) / 1e6 : 0.0,
	    e->nr_samples, e->nr_samples == 1 ? "" : "s");
}

int stallcap_format_record(const struct stallcap_rec_header *rec, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };
	struct stallcap_sample_view v;
	struct stallcap_stall_end e;
	struct stallcap_watch_event ev;

	if (!rec || (!buf && len))
		return -EINVAL;
	if (len)
		buf[0] = '\0';
	switch (rec->type) {
	case STALLCAP_REC_SAMPLE:
	case STALLCAP_REC_USER_STACK:
		if (stallcap_sample_parse(rec, rec->size, &v))
			return -EBADMSG;
		put_sample(&o, &v, NULL);
		break;
	case STALLCAP_REC_STALL_END:
		if (stallcap_stall_end_parse(rec, rec->size, &e))
			return -EBADMSG;
		put_end(&o, &e);
		break;
	case STALLCAP_REC_WATCH:
		if (stallcap_watch_event_parse(rec, rec->size, &ev))
			return -EBADMSG;
		put(&o, PREFIX "watch of tid %u %s\n", ev.ns_tid,
		    ev.event == STALLCAP_WATCH_STARTED ? "started" : "ended");
		break;
	default:
		return 0;	/* a record type this library does not know: nothing */
	}
	return o.at > 0x7fffffff ? -EOVERFLOW : (int)o.at;
}

/* ---- the reporter: records to a FILE, deferred user stacks merged ---- */

struct held {
	__u64 *rec;		/* a private copy; NULL: free entry */
	struct stallcap_sample_view v;
	unsigned long seq;
};

struct stallcap_reporter {
	FILE *out;
	struct held held[MAX_HELD];
	unsigned long seq;
};

int stallcap_reporter_new(struct stallcap_reporter **rp, FILE *out)
{
	if (!rp || !out)
		return -EINVAL;
	*rp = calloc(1, sizeof(**rp));
	if (!*rp)
		return -ENOMEM;
	(*rp)->out = out;
	return 0;
}

static void emit(struct stallcap_reporter *r, const struct stallcap_sample_view *v,
		 const struct stallcap_sample_view *user)
{
	char small[2048];
	struct out o = { .buf = small, .len = sizeof(small) };
	char *big;

	put_sample(&o, v, user);
	if (o.at < sizeof(small)) {
		fputs(small, r->out);
		return;
	}
	big = malloc(o.at + 1);
	if (!big) {
		fputs(small, r->out);	/* truncated rather than nothing */
		return;
	}
	o = (struct out){ .buf = big, .len = o.at + 1 };
	put_sample(&o, v, user);
	fputs(big, r->out);
	free(big);
}

static void held_emit(struct stallcap_reporter *r, struct held *h,
		      const struct stallcap_sample_view *user)
{
	emit(r, &h->v, user);
	free(h->rec);
	h->rec = NULL;
}

/* Hold a sample until its USER_STACK record; the oldest goes out when full. */
static int hold(struct stallcap_reporter *r, const struct stallcap_rec_header *rec)
{
	struct held *h = NULL, *old = NULL;
	unsigned int i;

	for (i = 0; i < MAX_HELD; i++) {
		if (!r->held[i].rec) {
			h = &r->held[i];
			break;
		}
		if (!old || r->held[i].seq < old->seq)
			old = &r->held[i];
	}
	if (!h) {
		held_emit(r, old, NULL);
		h = old;
	}
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
	return 0;
}

/* The held samples of @u's stall and cookie, completed by @u, in order. */
static bool merge(struct stallcap_reporter *r, const struct stallcap_sample_view *u)
{
	bool any = false;

	for (;;) {
		struct held *first = NULL;
		unsigned int i;

		for (i = 0; i < MAX_HELD; i++) {
			struct held *h = &r->held[i];

			if (h->rec && h->v.s.tid == u->s.tid && h->v.s.stall_id == u->s.stall_id &&
			    h->v.s.cookie == u->s.cookie && (!first || h->seq < first->seq))
				first = h;
		}
		if (!first)
			return any;
		held_emit(r, first, u);
		any = true;
	}
}

int stallcap_report_record(const struct stallcap_rec_header *rec, void *reporter)
{
	struct stallcap_reporter *r = reporter;
	struct stallcap_sample_view v;
	char line[512];
	int n;

	if (!r || !rec)
		return -EINVAL;
	if (rec->type == STALLCAP_REC_SAMPLE || rec->type == STALLCAP_REC_USER_STACK) {
		if (stallcap_sample_parse(rec, rec->size, &v))
			return 0;	/* malformed: skipped, as the tool does */
		if (rec->type == STALLCAP_REC_SAMPLE && v.s.cookie &&
		    (v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING))
			return hold(r, rec) == -ENOMEM ? -ENOMEM : 0;
		if (rec->type == STALLCAP_REC_USER_STACK && v.s.cookie && merge(r, &v))
			return 0;
		emit(r, &v, NULL);
		return 0;
	}
	n = stallcap_format_record(rec, line, sizeof(line));
	if (n > 0)
		fputs(line, r->out);
	return 0;
}

void stallcap_reporter_flush(struct stallcap_reporter *r)
{
	struct held *first;
	unsigned int i;

	if (!r)
		return;
	do {
		first = NULL;
		for (i = 0; i < MAX_HELD; i++)
			if (r->held[i].rec && (!first || r->held[i].seq < first->seq))
				first = &r->held[i];
		if (first)
			held_emit(r, first, NULL);
	} while (first);
	fflush(r->out);
}

void stallcap_reporter_free(struct stallcap_reporter *r)
{
	if (!r)
		return;
	stallcap_reporter_flush(r);
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
	pthread_mutex_unlock(&s->ring_lock);
	fflush(out);
	return ret;
}
