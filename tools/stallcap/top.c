// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap top: live per-thread stall rates and the worst stalls, in
 * progress or recent, redrawn every second (plain ANSI; -b writes one frame
 * after another, as top -b).
 *
 *   stallcap top - 21:10:11, frame 2 of 3, every 1.0 s
 *   threads watched 3, stalls 5 (1 ongoing), records lost 0, held 1 (cap 4096, 0 let go)
 *
 *     TID     PID COMM            STALLS/s OVER ms/s  TOTAL    MAX ms  NOW
 *     1235   1234 locker-ab            0.0       0.0      1    1520.0  ongoing 1520.0 ms
 *
 *   worst stalls (ongoing, and ended in the last 10 s):
 *     ongoing  1520.0 ms over 20 ms  tid 1235 (locker-ab) stall 1: 5 samples, blocked (sleeping)
 *       kernel: __schedule < schedule < futex_wait_queue < futex_wait < ...
 *       user:   __lll_lock_wait < pthread_mutex_lock < lock_pair < locker < ...
 *
 * This file is the data model (what a record changes, what is kept, the
 * rates) and the command; top_draw.c draws a frame.
 *
 * Memory is bounded: stalls are held until they end (at most --max-stalls,
 * the oldest let go beyond, counted), threads at most MAX_THREADS (the
 * longest quiet forgotten), ended stalls kept for RECENT_NS, at most
 * MAX_RECENT of them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "top.h"
#include "usyms.h"

struct top_thread *top_thread_find(struct top *tp, __u32 tid)
{
	struct hnode *n;

	htab_for_each_possible(&tp->threads, n, hash_u64(tid)) {
		struct top_thread *t = container_of(n, struct top_thread, node);

		if (t->tid == tid)
			return t;
	}
	return NULL;
}

struct top_thread **top_thread_list(struct top *tp)
{
	struct top_thread **v = calloc(tp->nthreads + 1, sizeof(*v));
	unsigned int i = 0;
	size_t b;

	if (!v)
		return NULL;
	for (b = 0; b < tp->threads.nb; b++) {
		struct hnode *n;

		for (n = tp->threads.b[b]; n; n = n->next)
			v[i++] = container_of(n, struct top_thread, node);
	}
	return v;
}

/* The thread quiet for longest makes room (a linear scan, only when full). */
static void thread_evict(struct top *tp)
{
	struct top_thread **v = top_thread_list(tp), *old = NULL;
	unsigned int i;

	if (!v)
		return;
	for (i = 0; i < tp->nthreads; i++)
		if (!old || v[i]->last_ns < old->last_ns)
			old = v[i];
	free(v);
	if (!old)
		return;
	htab_del(&tp->threads, &old->node);
	free(old);
	tp->nthreads--;
	tp->threads_dropped++;
}

static struct top_thread *thread_get(struct top *tp, __u32 pid, __u32 tid, const char *comm)
{
	struct top_thread *t = top_thread_find(tp, tid);

	if (!t) {
		if (tp->nthreads >= MAX_THREADS)
			thread_evict(tp);
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->tid = tid;
		if (htab_add(&tp->threads, &t->node, hash_u64(tid))) {
			free(t);
			return NULL;
		}
		tp->nthreads++;
	}
	t->pid = pid;
	if (comm)
		memcpy(t->comm, comm, sizeof(t->comm));
	t->last_ns = now_ns(CLOCK_MONOTONIC);
	return t;
}


/* How far past its deadline @s is at @now (ongoing) or was (ended). */
__u64 top_over_ns(const struct sc_stall *s, __u64 now)
{
	__u64 over = sc_stall_over_ns(s);
	const struct sc_sample *m = s->samples;

	/* a wall-clock deadline keeps running between samples; CPU time does not */
	if (!s->ended && m && m->v.s.clock != STALLCAP_CLOCK_CPUTIME &&
	    now > m->v.s.deadline_ns && now - m->v.s.deadline_ns > over)
		over = now - m->v.s.deadline_ns;
	return over;
}
/* Keep an ended stall for RECENT_NS; when full, the smallest makes room. */
static void add_recent(struct top *tp, const struct top_line *l)
{
	unsigned int i, min = 0;

	if (tp->nrecent < MAX_RECENT) {
		tp->recent[tp->nrecent++] = *l;
		return;
	}
	for (i = 1; i < MAX_RECENT; i++)
		if (tp->recent[i].over_ns < tp->recent[min].over_ns)
			min = i;
	if (tp->recent[min].over_ns < l->over_ns)
		tp->recent[min] = *l;
}

static void stall_ended(struct top *tp, struct sc_stall *s, __u64 now)
{
	struct top_thread *t = thread_get(tp, s->pid, s->tid, NULL);
	struct top_line l;

	top_make_line(tp, s, now, &l);
	if (t) {
		t->win_over_ns += l.over_ns;
		if (l.over_ns > t->max_over_ns)
			t->max_over_ns = l.over_ns;
	}
	add_recent(tp, &l);
	stalls_release(&tp->st, s);
}

static int on_record(struct sc_sink *sk, const struct stallcap_rec_header *rec)
{
	struct top *tp = (struct top *)sk;
	struct stallcap_watch_event ev;
	struct stallcap_sample_view v;
	struct top_thread *t;
	struct sc_stall *s;
	unsigned int had;

	if (rec->type == STALLCAP_REC_WATCH) {
		if (!stallcap_watch_event_parse(rec, rec->size, &ev)) {
			if (ev.event == STALLCAP_WATCH_STARTED)
				tp->watched++;
			else if (ev.event == STALLCAP_WATCH_ENDED && tp->watched)
				tp->watched--;
		}
		return 0;
	}
	/*
	 * top does not wait for deferred user stacks: one that comes after its
	 * stall ended (and was let go) would start a stall that never ends.
	 */
	if (rec->type == STALLCAP_REC_USER_STACK &&
	    (stallcap_sample_parse(rec, rec->size, &v) ||
	     !stalls_find(&tp->st, v.s.tid, v.s.stall_id)))
		return 0;
	had = tp->st.nr;
	s = stalls_add(&tp->st, rec);
	if (!s)
		return 0;
	if (tp->st.nr != had) {		/* a stall begins */
		const struct sc_sample *m = s->samples;

		t = thread_get(tp, s->pid, s->tid, m ? m->v.s.comm : NULL);
		if (t) {
			t->total++;
			t->win_stalls++;
		}
		if (tp->st.live > tp->max_stalls) {
			struct sc_stall *old = tp->st.head == s ? s->next : tp->st.head;

			if (old) {
				stalls_release(&tp->st, old);
				tp->evicted++;
			}
		}
	} else if (s->samples) {
		thread_get(tp, s->pid, s->tid, s->samples->v.s.comm);
	}
	if (s->ended)
		stall_ended(tp, s, now_ns(CLOCK_MONOTONIC));
	return 0;
}
/* Prune what is too old, make the interval's rates the shown ones. */
void top_close_interval(struct top *tp, __u64 now, double secs)
{
	struct top_thread **v = top_thread_list(tp);
	unsigned int i, j = 0;

	for (i = 0; v && i < tp->nthreads; i++) {
		v[i]->rate = secs > 0 ? v[i]->win_stalls / secs : 0;
		v[i]->over_rate = secs > 0 ? (double)v[i]->win_over_ns / NSEC_PER_MSEC / secs : 0;
		v[i]->win_stalls = 0;
		v[i]->win_over_ns = 0;
	}
	free(v);
	for (i = 0; i < tp->nrecent; i++)
		if (now - tp->recent[i].at_ns <= RECENT_NS)
			tp->recent[j++] = tp->recent[i];
	tp->nrecent = j;
}

static int on_flush(struct sc_sink *sk)
{
	struct top *tp = (struct top *)sk;
	__u64 now = now_ns(CLOCK_MONOTONIC);

	if (tp->done || (tp->frames && now - tp->last_frame_ns < tp->delay * NSEC_PER_SEC))
		return 0;
	/* the first frame at once (as top), the interval's rates from the second */
	top_render(tp, now, tp->frames ? (double)(now - tp->last_frame_ns) / NSEC_PER_SEC : 0);
	tp->last_frame_ns = now;
	if (tp->max_frames && tp->frames >= tp->max_frames) {
		tp->done = true;
		collect_stop();
	}
	return 0;
}

static int on_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	return usyms_add_proc(((struct top *)sk)->r.us, p);
}

/* the process exited: its symbols go, unless a stall of it is still held */
static int on_proc_gone(struct sc_sink *sk, __u32 pid)
{
	struct top *tp = (struct top *)sk;

	if (stalls_of_pid(&tp->st, pid))
		return -EBUSY;
	usyms_forget_proc(tp->r.us, pid);
	return 0;
}

static int on_ksym(struct sc_sink *sk, const struct ksym *k)
{
	return ksyms_add(((struct top *)sk)->r.ks, k->addr, k->size, k->name, k->mod);
}

static int on_lost(struct sc_sink *sk, __u64 lost, __u64 suppressed)
{
	struct top *tp = (struct top *)sk;

	tp->lost = lost;
	tp->suppressed = suppressed;
	return 0;
}

static int on_vdso(struct sc_sink *sk, const void *img, size_t len)
{
	usyms_set_vdso(((struct top *)sk)->r.us, img, len);
	return 0;
}

/** top_new() - a top drawing to @out (@batch: frames one after another). */
struct top *top_new(FILE *out, bool batch, unsigned int max_stalls)
{
	struct top *tp = calloc(1, sizeof(*tp));

	if (!tp)
		return NULL;
	tp->sink = (struct sc_sink){ on_record, on_proc, on_ksym, on_lost, on_vdso, NULL,
				     on_flush, on_proc_gone, NULL, NULL };
	tp->out = out;
	tp->batch = batch;
	tp->delay = 1.0;
	tp->max_stalls = max_stalls;
	stalls_init(&tp->st);
	htab_init(&tp->threads);
	tp->r.ks = ksyms_new();
	tp->r.us = usyms_new();
	if (!tp->r.ks || !tp->r.us) {
		top_free(tp);
		return NULL;
	}
	return tp;
}

struct sc_sink *top_sink(struct top *tp)
{
	return &tp->sink;
}

void top_free(struct top *tp)
{
	struct top_thread **v;
	unsigned int i;

	if (!tp)
		return;
	v = top_thread_list(tp);
	for (i = 0; v && i < tp->nthreads; i++)
		free(v[i]);
	free(v);
	htab_free(&tp->threads);
	stalls_free(&tp->st);
	ksyms_free(tp->r.ks);
	ksyms_free(tp->r.live);
	usyms_free(tp->r.us);
	free(tp);
}

static const char top_help[] =
"usage: stallcap top [OPTIONS] [-- CMD [ARGS]]\n\n"
"Live per-thread stall rates and the worst stalls, in progress (a\n"
"deadlocked thread shows as ongoing) or ended in the last 10 s, redrawn\n"
"every second.  Reads a session as report does live (--deadline -p PID,\n"
"--fd, --global, -- CMD).\n\n"
"  -b, --batch          frames one after another, no screen control (as top -b)\n"
"  -n, --iterations N   stop after N frames (the watched command, if any, is\n"
"                       sent SIGTERM)\n"
"  -d, --delay SECS     time between frames (default 1)\n"
"      --max-stalls N   stalls held at once (default 10000; the oldest let go\n"
"                       beyond, counted)\n"
COLLECT_HELP
"  -h, --help           this text\n"
"(here -d is the delay; there is no --duration: use -n)\n";

enum { OPT_MAX_STALLS = 0x100 };

static const struct option top_options[] = {
	{ "batch", no_argument, NULL, 'b' },
	{ "iterations", required_argument, NULL, 'n' },
	{ "delay", required_argument, NULL, 'd' },
	{ "max-stalls", required_argument, NULL, OPT_MAX_STALLS },
	{ "help", no_argument, NULL, 'h' },
	COLLECT_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static int parse_uint(const char *arg, unsigned int *v)
{
	char *end;
	unsigned long n = strtoul(arg, &end, 10);

	if (end == arg || *end || !n || n > 1000000)
		return -EINVAL;
	*v = (unsigned int)n;
	return 0;
}

int cmd_top(int argc, char **argv)
{
	unsigned int frames = 0, max_stalls = 10000;
	bool batch = false;
	double delay = 1.0;
	struct collect_opts o;
	struct top *tp;
	int opt, ret, status, i, idx = -1;
	char *end;

	collect_opts_init(&o);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			if (i + 1 < argc)
				o.cmd = argv + i + 1;
			argc = i;
			break;
		}
	}
	while ((opt = getopt_long(argc, argv, "bn:h" COLLECT_SHORT_OPTIONS, top_options,
				  &idx)) != -1) {
		if (opt == 'd' && idx >= 0 && !strcmp(top_options[idx].name, "duration")) {
			warnx_("top has no --duration: -n N stops after N frames");
			return 2;
		}
		idx = -1;
		switch (opt) {
		case 'b':
			batch = true;
			break;
		case 'n':
			if (parse_uint(optarg, &frames)) {
				warnx_("-n: bad count '%s'", optarg);
				return 2;
			}
			break;
		case 'd':
			delay = strtod(optarg, &end);
			if (end == optarg || *end || delay < 0.1 || delay > 3600) {
				warnx_("-d: bad delay '%s' (seconds, 0.1 to 3600)", optarg);
				return 2;
			}
			break;
		case OPT_MAX_STALLS:
			if (parse_uint(optarg, &max_stalls)) {
				warnx_("--max-stalls: bad count '%s'", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(top_help, stdout);
			return 0;
		default:
			if (collect_parse_opt(&o, opt, optarg)) {
				fputs(top_help, stderr);
				return 2;
			}
		}
	}
	if (optind < argc) {
		warnx_("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!batch && !isatty(STDOUT_FILENO))
		batch = true;	/* no screen to redraw */
	if (collect_check(&o))
		return 2;
	tp = top_new(stdout, batch, max_stalls);
	if (!tp)
		return 1;
	tp->max_frames = frames;
	tp->delay = delay;
	tp->r.live_path = "/proc/kallsyms";
	ret = collect_run(&o, &tp->sink, &status);
	top_free(tp);
	if (ret == 0 && o.cmd && frames)
		return 0;	/* the command was stopped by us */
	return exit_code(ret, &o, status);
}
