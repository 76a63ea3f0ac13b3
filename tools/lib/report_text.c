// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: the text of in-process reporting, line by line (the format is
 * documented in stallcap.h).  Stateless: report.c decides which lines a
 * record gives (a block's header, a sample in full or "same stack as", the
 * end), this file writes them.
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

void scl_put(struct scl_out *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->at < o->len ? o->len - o->at : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->at : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= room && o->grow && !o->failed) {
		size_t len = o->len * 2 > o->at + n + 1 ? o->len * 2 : o->at + n + 1;
		char *b = realloc(o->buf, len);

		if (!b) {
			o->failed = true;	/* what fits is written */
		} else {
			o->buf = b;
			o->len = len;
			va_start(ap, fmt);
			vsnprintf(o->buf + o->at, o->len - o->at, fmt, ap);
			va_end(ap);
		}
	}
	o->at += (size_t)n;
	if (o->grow && o->at >= o->len)
		o->at = o->len ? o->len - 1 : 0;	/* cut, still terminated */
}

static double ms(__u64 ns)
{
	return ns / 1e6;
}

/* how far past its deadline @s was captured, in ms */
static double past(const struct stallcap_sample *s)
{
	return s->capture_ns > s->deadline_ns ? ms(s->capture_ns - s->deadline_ns) : 0.0;
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

static const char *wait_name(__u32 kind)
{
	static const char *const names[] = {
		"nothing", "a futex", "a PI futex", "a mutex", "an rw-semaphore",
		"a semaphore", "something else",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "something";
}

/* a comm as printable text (the ring is writable by the watched program) */
static void put_comm(struct scl_out *o, const char comm[16])
{
	char c[17];
	int i;

	for (i = 0; i < 16 && comm[i]; i++)
		c[i] = comm[i] >= 0x20 && comm[i] < 0x7f ? comm[i] : '?';
	c[i] = '\0';
	scl_put(o, "%s", c);
}

static void put_task(struct scl_out *o, const struct stallcap_sec_task *t)
{
	scl_put(o, "tid %u (", t->ns_tid ? t->ns_tid : t->tid);
	put_comm(o, t->comm);
	scl_put(o, ")");
}

static const struct stallcap_sec_task *task_of(const struct stallcap_sample_view *v,
					       __u16 role, __u16 hop)
{
	unsigned int i;

	for (i = 0; i < v->nr_tasks; i++)
		if (v->tasks[i].t.role == role && v->tasks[i].t.hop == hop)
			return &v->tasks[i].t;
	return NULL;
}

#define TIME(t, f)	((t)->valid & (1ULL << STALLCAP_TIME_##f))

/* where most of @span went: waiting for a CPU, blocked, or on its CPU */
static void put_time_verdict(struct scl_out *o, const struct stallcap_sec_times *t,
			     __u64 span)
{
	__u64 cpu = TIME(t, ON_CPU) ? t->on_cpu_ns : 0;
	__u64 runq = TIME(t, RUN_DELAY) ? t->run_delay_ns : 0;
	__u64 sleep = TIME(t, SLEEP) ? t->sleep_ns : 0;

	if (runq > cpu && runq >= sleep)
		scl_put(o, ": runnable %.2f of %.2f ms", ms(runq), ms(span));
	else if (sleep > cpu && sleep > runq)
		scl_put(o, ": blocked %.2f of %.2f ms", ms(sleep), ms(span));
	else if (cpu >= span / 2)	/* the module clamps it to the interval */
		scl_put(o, ": on cpu %.2f of %.2f ms", ms(cpu), ms(span));
}

/* what the record itself says about why: what it waits on, who ran instead */
static void put_verdict(struct scl_out *o, const struct stallcap_sample_view *v)
{
	const struct stallcap_sec_wait *w = stallcap_sample_wait(v);
	const struct stallcap_sec_times *t = stallcap_sample_times(v);
	const struct stallcap_sec_task *owner = task_of(v, STALLCAP_ROLE_OWNER, 1);
	const struct stallcap_sec_task *runner = task_of(v, STALLCAP_ROLE_RUNNER, 0);

	if (w && w->kind != STALLCAP_WAIT_NONE) {
		scl_put(o, ": waits on %s", wait_name(w->kind));
		if (w->object)
			scl_put(o, " 0x%llx", (unsigned long long)w->object);
		if (owner) {
			scl_put(o, w->flags & STALLCAP_WAIT_F_JOIN ? " joining " : " held by ");
			put_task(o, owner);
		} else if (w->flags & STALLCAP_WAIT_F_OWNER_UNKNOWN) {
			scl_put(o, ", owner unknown");
		}
		if (w->flags & STALLCAP_WAIT_F_OWNER_GONE)
			scl_put(o, ", owner exited");
		if (w->flags & STALLCAP_WAIT_F_CYCLE)
			scl_put(o, ", deadlock");
	} else if (runner) {
		scl_put(o, ": preempted by ");
		put_task(o, runner);
		scl_put(o, " on cpu %u", runner->cpu);
	} else if (t && v->s.capture_ns > t->since_ns) {
		put_time_verdict(o, t, v->s.capture_ns - t->since_ns);
	}
}

void scl_put_header(struct scl_out *o, const struct stallcap_sample_view *v)
{
	const struct stallcap_sample *s = &v->s;

	scl_put(o, PREFIX "stall %llu of tid %u (", (unsigned long long)s->stall_id, s->ns_tid);
	put_comm(o, s->comm);
	scl_put(o, "), tag 0x%llx: %.2f ms past its %.2f ms deadline so far, %s",
		(unsigned long long)s->user_tag, past(s), ms(s->timeout_ns),
		state_name(s->state));
	put_verdict(o, v);
	scl_put(o, "\n");
}

void scl_put_continued(struct scl_out *o, __u64 stall_id, __u32 ns_tid, const char comm[16])
{
	scl_put(o, PREFIX "stall %llu of tid %u (", (unsigned long long)stall_id, ns_tid);
	put_comm(o, comm);
	scl_put(o, "), continued\n");
}

/* "#1  0x00005555deadbeef  fn+0x1c (/path/lib.so)", named by dladdr() */
static void put_user_frame(struct scl_out *o, int i, __u64 ip)
{
	/* a caller's frame holds a return address: name the call instruction */
	const void *at = (const void *)(unsigned long)(i ? ip - 1 : ip);
	Dl_info di;

	scl_put(o, PREFIX "    user   #%-2d 0x%016llx", i, (unsigned long long)ip);
	if (dladdr(at, &di) && di.dli_fname) {
		if (di.dli_sname && di.dli_saddr)
			scl_put(o, "  %s+0x%llx", di.dli_sname,
				(unsigned long long)(ip - (unsigned long)di.dli_saddr));
		else
			scl_put(o, "  +0x%llx",
				(unsigned long long)(ip - (unsigned long)di.dli_fbase));
		scl_put(o, " (%s)", di.dli_fname);
	}
	scl_put(o, "\n");
}

/* the user ip standing for the stack when no frame was walked, or 0 */
static __u64 lone_user_ip(const struct stallcap_sample_view *v,
			  const struct stallcap_sample_view *user)
{
	const struct stallcap_regs_x86_64 *regs = stallcap_sample_regs_x86_64(user);

	if (!user->nr_user && regs && (v->s.flags & STALLCAP_SAMPLE_USER_MODE))
		return regs->ip;
	return 0;
}

/* a deferred user stack asked for and never merged */
static bool defer_missing(const struct stallcap_sample_view *v,
			  const struct stallcap_sample_view *user)
{
	return (v->s.flags & STALLCAP_SAMPLE_DEFER_PENDING) && user == v;
}

void scl_put_sample(struct scl_out *o, const struct stallcap_sample_view *v,
		    const struct stallcap_sample_view *user)
{
	const struct stallcap_sample *s = &v->s;
	unsigned int i;
	__u64 ip;

	if (!user)
		user = v;
	scl_put(o, PREFIX "  %s %u at +%.2f ms, %s, cpu %u\n",
		s->hdr.type == STALLCAP_REC_USER_STACK ? "user stack of sample" : "sample",
		s->sample_index, past(s), state_name(s->state), s->cpu);
	for (i = 0; i < v->nr_kernel; i++)
		scl_put(o, PREFIX "    kernel #%-2u 0x%016llx\n", i,
			(unsigned long long)v->kernel_ips[i]);
	if (user != v)
		scl_put(o, PREFIX "    user stack completed on return to user space (deferred)\n");
	for (i = 0; i < user->nr_user; i++)
		put_user_frame(o, (int)i, user->user_ips[i]);
	ip = lone_user_ip(v, user);
	if (ip)
		put_user_frame(o, 0, ip);
	if (defer_missing(v, user))
		scl_put(o, PREFIX "    user stack deferred, not received\n");
}

static __u64 fnv(__u64 h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 0x100000001b3ULL;
	return h;
}

__u64 scl_stack_hash(const struct stallcap_sample_view *v,
		     const struct stallcap_sample_view *user)
{
	__u64 h = 0xcbf29ce484222325ULL, ip;
	bool missing;

	if (!user)
		user = v;
	ip = lone_user_ip(v, user);
	missing = defer_missing(v, user);
	h = fnv(h, &v->s.state, sizeof(v->s.state));
	h = fnv(h, &v->nr_kernel, sizeof(v->nr_kernel));
	h = fnv(h, v->kernel_ips, v->nr_kernel * sizeof(__u64));
	h = fnv(h, &user->nr_user, sizeof(user->nr_user));
	h = fnv(h, user->user_ips, user->nr_user * sizeof(__u64));
	h = fnv(h, &ip, sizeof(ip));
	return fnv(h, &missing, sizeof(missing));
}

void scl_put_same(struct scl_out *o, const struct scl_run *run)
{
	if (run->n == 1) {
		scl_put(o, PREFIX "  sample %u at +%.2f ms, %s, cpu %u: same stack as sample %u\n",
			run->first, run->first_ms, state_name(run->state), run->cpu, run->of);
		return;
	}
	scl_put(o, PREFIX "  samples %u-%u at +%.2f to +%.2f ms, %s: same stack as sample %u (x%u)\n",
		run->first, run->last, run->first_ms, run->last_ms, state_name(run->state),
		run->of, run->n);
}

void scl_run_add(struct scl_run *run, const struct stallcap_sample_view *v, __u32 of)
{
	if (!run->n++) {
		run->first = v->s.sample_index;
		run->first_ms = past(&v->s);
		run->state = v->s.state;
		run->cpu = v->s.cpu;
		run->of = of;
	}
	run->last = v->s.sample_index;
	run->last_ms = past(&v->s);
}

void scl_put_end(struct scl_out *o, const struct stallcap_stall_end *e, long seen)
{
	scl_put(o, PREFIX "stall %llu of tid %u ended: %.2f ms over its deadline, %u sample%s",
		(unsigned long long)e->stall_id, e->ns_tid,
		e->end_ns > e->deadline_ns ? ms(e->end_ns - e->deadline_ns) : 0.0,
		e->nr_samples, e->nr_samples == 1 ? "" : "s");
	if (seen >= 0)
		scl_put(o, ", %u lost", e->nr_samples > seen ? e->nr_samples - (__u32)seen : 0);
	scl_put(o, "\n");
}

int scl_format(struct scl_out *o, const struct stallcap_rec_header *rec)
{
	struct stallcap_sample_view v;
	struct stallcap_stall_end e;
	struct stallcap_watch_event ev;

	switch (rec->type) {
	case STALLCAP_REC_SAMPLE:
	case STALLCAP_REC_USER_STACK:
		if (stallcap_sample_parse(rec, rec->size, &v))
			return -EBADMSG;
		scl_put_header(o, &v);
		scl_put_sample(o, &v, NULL);
		break;
	case STALLCAP_REC_STALL_END:
		if (stallcap_stall_end_parse(rec, rec->size, &e))
			return -EBADMSG;
		scl_put_end(o, &e, -1);
		break;
	case STALLCAP_REC_WATCH:
		if (stallcap_watch_event_parse(rec, rec->size, &ev))
			return -EBADMSG;
		scl_put(o, PREFIX "watch of tid %u %s\n", ev.ns_tid,
			ev.event == STALLCAP_WATCH_STARTED ? "started" :
			ev.event == STALLCAP_WATCH_ENDED ? "ended" :
			ev.event == STALLCAP_WATCH_BUSY ? "busy" :
			ev.event == STALLCAP_WATCH_MISSED ? "missed" : "event");
		break;
	default:
		break;	/* a record type this library does not know: nothing */
	}
	return 0;
}

int stallcap_format_record(const struct stallcap_rec_header *rec, char *buf, size_t len)
{
	struct scl_out o = { .buf = buf, .len = len };
	int ret;

	if (!rec || (!buf && len))
		return -EINVAL;
	if (len)
		buf[0] = '\0';
	ret = scl_format(&o, rec);
	if (ret)
		return ret;
	return o.at > 0x7fffffff ? -EOVERFLOW : (int)o.at;
}
