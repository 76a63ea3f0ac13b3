// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap top: drawing one frame in the terminal (the header, the threads
 * stalled now and by stalled time per second, the worst stalls with their
 * frames); top.c keeps the data it draws.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "top.h"

/* "a < b < c < ..." of up to LINE_FRAMES symbols */
static void frames_str(char *buf, size_t len, const struct sc_frame *f, int n)
{
	size_t at = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && i < LINE_FRAMES && at < len; i++)
		at += snprintf(buf + at, len - at, "%s%s", i ? " < " : "",
			       f[i].sym ? f[i].sym : "?");
	if (n > LINE_FRAMES && at < len)
		snprintf(buf + at, len - at, " < ...");
}

static const char *state_words(__u8 state)
{
	switch (state) {
	case STALLCAP_STATE_RUNNING:
		return "running";
	case STALLCAP_STATE_RUNNABLE:
		return "runnable (preempted)";
	case STALLCAP_STATE_SLEEPING:
		return "blocked (sleeping)";
	case STALLCAP_STATE_UNINTERRUPTIBLE:
		return "blocked (uninterruptible)";
	default:
		return sc_state_name(state);
	}
}

/*
 * The stall as the worst list shows it: the frames of its last sample, the
 * only one resolved (resolve_stall_next() starts after the one before it).
 */
void top_make_line(struct top *tp, const struct sc_stall *s, __u64 now, struct top_line *l)
{
	const struct sc_sample *m, *last = NULL, *before = NULL, *prev = NULL;
	struct sc_rstall rs;

	memset(l, 0, sizeof(*l));
	l->ongoing = !s->ended;
	l->over_ns = top_over_ns(s, now);
	l->stall_id = s->stall_id;
	l->tid = s->tid;
	l->at_ns = now;
	for (m = s->samples; m; prev = m, m = m->next) {
		if (m->merged)
			continue;
		l->nr++;
		last = m;
		before = prev;
	}
	if (!last || resolve_stall(&tp->r, s, &rs)) {
		if (last)
			resolve_stall_free(&rs);
		return;
	}
	if (before) {
		rs.started = true;
		rs.next = before;
	}
	if (resolve_stall_next(&rs) > 0) {
		const struct stallcap_sample *smp = &rs.cur.smp->v.s;

		l->timeout_ns = smp->timeout_ns;
		memcpy(l->comm, smp->comm, sizeof(l->comm));
		l->comm[sizeof(l->comm) - 1] = '\0';
		snprintf(l->what, sizeof(l->what), "%s", state_words(smp->state));
		frames_str(l->kern, sizeof(l->kern), rs.cur.kf, rs.cur.nk);
		frames_str(l->user, sizeof(l->user), rs.cur.uf, rs.cur.nu);
	}
	resolve_stall_free(&rs);
}


static int cmp_line(const void *a, const void *b)
{
	const struct top_line *x = a, *y = b;

	if (x->ongoing != y->ongoing)
		return x->ongoing ? -1 : 1;
	return x->over_ns < y->over_ns ? 1 : x->over_ns > y->over_ns ? -1 : 0;
}

/* Each thread's worst stall in progress, in one pass over the stalls held. */
static void threads_now(struct top *tp, struct top_thread **v, __u64 now)
{
	const struct sc_stall *s;
	struct top_thread *t;
	unsigned int i;
	__u64 o;

	for (i = 0; i < tp->nthreads; i++)
		v[i]->now_over_ns = 0;
	for (s = tp->st.head; s; s = s->next) {
		if (s->ended || !(t = top_thread_find(tp, s->tid)))
			continue;
		o = top_over_ns(s, now);
		if (!o)
			o = 1;
		if (o > t->now_over_ns)
			t->now_over_ns = o;
	}
}

static int cmp_thread(const void *a, const void *b)
{
	const struct top_thread *x = *(struct top_thread * const *)a;
	const struct top_thread *y = *(struct top_thread * const *)b;

	if (x->over_rate != y->over_rate)
		return x->over_rate < y->over_rate ? 1 : -1;
	if (x->rate != y->rate)
		return x->rate < y->rate ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void print_threads(struct top *tp, FILE *out, __u64 now, unsigned int max)
{
	struct top_thread **v = top_thread_list(tp);
	unsigned int i, j, shown = 0;

	if (!v)
		return;
	threads_now(tp, v, now);
	qsort(v, tp->nthreads, sizeof(*v), cmp_thread);
	fprintf(out, "\n    TID     PID COMM             STALLS/s OVER ms/s  TOTAL    MAX ms  NOW\n");
	/* threads stalled right now first, then by over-deadline time per second */
	for (j = 0; j < 2; j++) {
		for (i = 0; i < tp->nthreads && shown < max; i++) {
			__u64 cur = v[i]->now_over_ns;

			if ((j == 0) != (cur != 0))
				continue;
			fprintf(out, "%7u %7u %-16.16s %8.1f %9.1f %6llu %9.1f  ", v[i]->tid,
				v[i]->pid, v[i]->comm[0] ? v[i]->comm : "?", v[i]->rate,
				v[i]->over_rate, (unsigned long long)v[i]->total,
				(double)v[i]->max_over_ns / NSEC_PER_MSEC);
			if (cur)
				fprintf(out, "ongoing %.1f ms\n", (double)cur / NSEC_PER_MSEC);
			else
				fprintf(out, "-\n");
			shown++;
		}
	}
	if (tp->nthreads > shown)
		fprintf(out, "  (%u more threads)\n", tp->nthreads - shown);
	free(v);
}

static void print_worst(struct top *tp, FILE *out, __u64 now, unsigned int max)
{
	struct top_line *v;
	const struct sc_stall *s;
	unsigned int n = 0, i;

	v = calloc(tp->st.live + tp->nrecent + 1, sizeof(*v));
	if (!v)
		return;
	for (s = tp->st.head; s; s = s->next)
		if (!s->ended) {
			/* cheap first: resolved below only if shown */
			v[n].ongoing = true;
			v[n].over_ns = top_over_ns(s, now);
			v[n].src = s;
			n++;
		}
	for (i = 0; i < tp->nrecent; i++)
		if (now - tp->recent[i].at_ns <= RECENT_NS)
			v[n++] = tp->recent[i];
	qsort(v, n, sizeof(*v), cmp_line);
	fprintf(out, "\nworst stalls (ongoing, and ended in the last %llu s):\n",
		(unsigned long long)(RECENT_NS / NSEC_PER_SEC));
	if (!n)
		fprintf(out, "  none\n");
	for (i = 0; i < n && i < max; i++) {
		struct top_line *l = &v[i];

		if (l->src)
			top_make_line(tp, l->src, now, l);
		fprintf(out, "  %-7s %9.1f ms over %.1f ms  tid %u (%s) stall %llu: %u sample%s, %s\n",
			l->ongoing ? "ongoing" : "ended", (double)l->over_ns / NSEC_PER_MSEC,
			(double)l->timeout_ns / NSEC_PER_MSEC, l->tid, l->comm,
			(unsigned long long)l->stall_id, l->nr, l->nr == 1 ? "" : "s", l->what);
		if (l->kern[0])
			fprintf(out, "    kernel: %s\n", l->kern);
		if (l->user[0])
			fprintf(out, "    user:   %s\n", l->user);
	}
	free(v);
}


/**
 * top_render() - draw one frame as at CLOCK_MONOTONIC @now (tests pass
 * their own), over an interval of @secs seconds
 */
void top_render(struct top *tp, __u64 now, double secs)
{
	FILE *out = tp->out;
	unsigned int ongoing = 0;
	const struct sc_stall *s;
	char clock[16];
	time_t t = time(NULL);
	struct tm tm;

	top_close_interval(tp, now, secs);
	for (s = tp->st.head; s; s = s->next)
		ongoing += !s->ended;
	tp->frames++;
	if (!tp->batch)
		fputs("\033[H\033[2J", out);
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&t, &tm));
	fprintf(out, "stallcap top - %s, frame %u", clock, tp->frames);
	if (tp->max_frames)
		fprintf(out, " of %u", tp->max_frames);
	fprintf(out, ", every %.1f s\n", tp->delay);
	fprintf(out, "threads watched %llu, stalls %u (%u ongoing), records lost %llu, "
		"suppressed %llu, held %u (cap %u, %llu let go)\n",
		(unsigned long long)tp->watched, tp->st.nr, ongoing,
		(unsigned long long)tp->lost, (unsigned long long)tp->suppressed, tp->st.live,
		tp->max_stalls, (unsigned long long)tp->evicted);
	print_threads(tp, out, now, tp->batch ? 50 : 15);
	print_worst(tp, out, now, tp->batch ? 10 : 5);
	if (tp->batch)
		fputc('\n', out);
	fflush(out);
}
