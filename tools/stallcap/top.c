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
 * Memory is bounded: stalls are held until they end (at most --max-stalls,
 * the oldest let go beyond, counted), threads at most MAX_THREADS (the
 * longest quiet forgotten), ended stalls kept for RECENT_NS, at most
 * MAX_RECENT of them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

#define MAX_THREADS	4096
#define MAX_RECENT	64
#define RECENT_NS	(10 * NSEC_PER_SEC)
#define LINE_FRAMES	6

/** struct top_thread - one thread that stalled */
struct top_thread {
	struct hnode node;
	__u32 tid, pid;
	char comm[16];
	__u64 total;		/* stalls seen */
	__u64 win_stalls;	/* stalls begun in the current interval */
	__u64 win_over_ns;	/* over-deadline time of stalls ended in it */
	double rate, over_rate;	/* of the last interval, per second */
	__u64 now_over_ns;	/* its worst stall in progress (1: just begun), 0: none */
	__u64 max_over_ns;
	__u64 last_ns;		/* last record, CLOCK_MONOTONIC of the tool */
};

/** struct top_line - a stall as the worst list shows it */
struct top_line {
	bool ongoing;
	__u64 over_ns, timeout_ns, stall_id, at_ns;
	__u32 tid, nr;
	char comm[16];
	char what[48];
	char kern[160], user[160];
	const struct sc_stall *src;	/* ongoing: resolved only if shown */
};

struct top {
	struct sc_sink sink;	/* first */
	struct stalls st;
	struct resolver r;
	FILE *out;
	bool batch;
	unsigned int frames, max_frames;
	double delay;
	unsigned int max_stalls;
	__u64 last_frame_ns;
	__u64 evicted, lost, suppressed, watched, threads_dropped;
	struct htab threads;
	unsigned int nthreads;
	struct top_line recent[MAX_RECENT];
	unsigned int nrecent;
	bool done;
};

static struct top_thread *thread_find(struct top *tp, __u32 tid)
{
	struct hnode *n;

	htab_for_each_possible(&tp->threads, n, hash_u64(tid)) {
		struct top_thread *t = container_of(n, struct top_thread, node);

		if (t->tid == tid)
			return t;
	}
	return NULL;
}

static struct top_thread **thread_list(struct top *tp)
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
	struct top_thread **v = thread_list(tp), *old = NULL;
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
	struct top_thread *t = thread_find(tp, tid);

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

/* How far past its deadline @s is at @now (ongoing) or was (ended). */
static __u64 over_ns(const struct sc_stall *s, __u64 now)
{
	__u64 over = sc_stall_over_ns(s);
	const struct sc_sample *m = s->samples;

	/* a wall-clock deadline keeps running between samples; CPU time does not */
	if (!s->ended && m && m->v.s.clock != STALLCAP_CLOCK_CPUTIME &&
	    now > m->v.s.deadline_ns && now - m->v.s.deadline_ns > over)
		over = now - m->v.s.deadline_ns;
	return over;
}

/*
 * The stall as the worst list shows it: the frames of its last sample, the
 * only one resolved (resolve_stall_next() starts after the one before it).
 */
static void make_line(struct top *tp, const struct sc_stall *s, __u64 now, struct top_line *l)
{
	const struct sc_sample *m, *last = NULL, *before = NULL, *prev = NULL;
	struct sc_rstall rs;

	memset(l, 0, sizeof(*l));
	l->ongoing = !s->ended;
	l->over_ns = over_ns(s, now);
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

	make_line(tp, s, now, &l);
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
		if (s->ended || !(t = thread_find(tp, s->tid)))
			continue;
		o = over_ns(s, now);
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
	struct top_thread **v = thread_list(tp);
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
			v[n].over_ns = over_ns(s, now);
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
			make_line(tp, l->src, now, l);
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

/* Prune what is too old, make the interval's rates the shown ones. */
static void close_interval(struct top *tp, __u64 now, double secs)
{
	struct top_thread **v = thread_list(tp);
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

	close_interval(tp, now, secs);
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
	const struct sc_stall *s;

	for (s = tp->st.head; s; s = s->next)
		if (s->pid == pid)
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
				     on_flush, on_proc_gone };
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
	v = thread_list(tp);
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
