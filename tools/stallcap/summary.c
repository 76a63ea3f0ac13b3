// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap report --top: culprit stacks ranked by stalled time, and
 * histograms of stall durations per process, thread and tag.
 *
 * The rules (README "Reading and sharing reports"):
 *  - a stall lasts end - deadline once it ended, last sample - deadline
 *    while it goes on (or when its end was lost);
 *  - its samples are spaced T, 2T, 4T...: sample k stands for the time
 *    since sample k-1 (the first one for the time since the deadline), and
 *    the last one also for the time until the end.  The weights of a
 *    stall's samples add up to its duration, so a stack's "stalled time"
 *    is the time stalls spent in it, and the stacks' times add up to the
 *    total.  The same weights make the folded output (format_folded.c);
 *  - a stall counts once for each stack it was seen in; p50/p99/max are of
 *    the durations of those stalls (nearest rank).
 *
 * Stalls are added once and may be released after: memory follows the
 * distinct stacks (and (stack, thread) pairs), plus 8 bytes per stall and
 * stack for the percentiles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "output.h"
#include "why.h"

#define HIST_BUCKETS	12	/* <1ms, <2, <4 ... <1024ms, >= 1024 ms */

struct sgroup {
	struct hnode node;
	struct sgroup *all_next;
	__u64 total_ns;
	__u64 *dur;		/* durations of the stalls seen in it */
	size_t nr, cap;
	const struct sc_stall *last_stall;	/* counted once per stall */
	__u64 last_stall_id;
	__u32 last_tid;
	unsigned int nr_tids, nr_tags;
	__u32 tids[8];
	__u64 tags[4];
	size_t len;
	char key[];
};

/* a (group, thread) or (group, tag) pair seen: distinct counts */
struct spair {
	struct hnode node;
	const struct sgroup *g;
	__u64 v;
	int kind;
};

/* a histogram of durations for one process, thread or tag */
struct shist {
	struct hnode node;
	struct shist *all_next;
	int kind;	/* 0 process, 1 thread, 2 tag */
	__u64 id;
	char comm[17];
	__u64 count, total_ns;
	__u64 b[HIST_BUCKETS];
};

struct summary {
	enum sc_group_by by;
	struct htab groups, pairs, hists;
	struct sgroup *all;
	struct shist *hall;
	size_t nr_groups, nr_hists;
	__u64 stalls, total_ns;
};

struct summary *summary_new(enum sc_group_by by)
{
	struct summary *sm = calloc(1, sizeof(*sm));

	if (!sm)
		return NULL;
	sm->by = by;
	htab_init(&sm->groups);
	htab_init(&sm->pairs);
	htab_init(&sm->hists);
	return sm;
}

__u64 sc_stall_duration_ns(const struct sc_stall *st)
{
	return sc_stall_over_ns(st);
}

static bool is_sample(const struct sc_sample *m)
{
	return m->v.s.hdr.type == STALLCAP_REC_SAMPLE;
}

void sc_weights_start(struct sc_weights *w, const struct sc_stall *st)
{
	const struct sc_sample *m;

	w->st = st;
	w->last = NULL;
	w->from = 0;
	w->started = false;
	for (m = st->samples; m; m = m->next)
		if (is_sample(m))
			w->last = m;
}

/*
 * The stalled time sample @m stands for (see the rules above); called for
 * the stall's samples in order, each once.
 */
__u64 sc_weights_next(struct sc_weights *w, const struct sc_sample *m)
{
	const struct sc_stall *st = w->st;
	__u64 c = m->v.s.capture_ns, to = c, from;

	if (!is_sample(m))
		return 0;
	if (!w->started) {
		w->started = true;
		w->from = st->ended && st->end.deadline_ns ? st->end.deadline_ns :
			  m->v.s.deadline_ns;
	}
	from = w->from;
	if (c > w->from)
		w->from = c;
	if (m == w->last && st->ended && st->end.end_ns > c)
		to = st->end.end_ns;
	return to > from ? to - from : 0;
}

static void put_name(FILE *m, const struct sc_frame *f, const char *suffix)
{
	const char *b;

	if (f->sym) {
		folded_str(m, f->sym);
	} else {
		b = f->dso ? strrchr(f->dso, '/') : NULL;
		fputc('[', m);
		folded_str(m, b ? b + 1 : f->dso ? f->dso : "unknown");
		fputc(']', m);
	}
	fputs(suffix, m);
}

/* the frames of @r, root first, ';'-separated, kernel ones suffixed _[k] */
void sc_stack_key(FILE *m, const struct sc_rsample *r, bool user, bool kernel)
{
	bool first = true;
	int i;

	if (user)
		for (i = r->nu - 1; i >= 0; i--, first = false) {
			if (!first)
				fputc(';', m);
			put_name(m, &r->uf[i], "");
		}
	if (kernel)
		for (i = r->nk - 1; i >= 0; i--, first = false) {
			if (!first)
				fputc(';', m);
			put_name(m, &r->kf[i], "_[k]");
		}
	if (first)
		fputs(kernel && !user ? "[no kernel stack]" : "[no stack]", m);
}

/* the kind of verdict of the sample (why.c), e.g. "runnable: preempted by hog (SCHED_FIFO 50)" */
static void verdict_key(FILE *m, const struct sc_rsample *r)
{
	struct why_input in;
	char buf[512];

	why_from_view(&in, &r->smp->v);
	why_verdict_class(&in, buf, sizeof(buf));
	folded_str(m, buf);
}

/* the system call's name ("syscall N" unknown), "user mode" or "no system call" */
static void syscall_key(FILE *m, const struct sc_rsample *r)
{
	char buf[SC_SYSCALL_LABEL_MAX];

	if (!r->smp->has_syscall)
		fputs(r->smp->v.s.flags & STALLCAP_SAMPLE_USER_MODE ? "user mode" :
		      "no system call", m);
	else
		fputs(sc_syscall_label(r->smp->sys.nr, buf, sizeof(buf)), m);
}

static int key_of(const struct summary *sm, const struct sc_rsample *r, char **buf,
		  size_t *len)
{
	FILE *m = open_memstream(buf, len);

	if (!m)
		return -ENOMEM;
	if (sm->by == SC_GROUP_STATE)
		fputs(sc_state_name(r->smp->v.s.state), m);
	else if (sm->by == SC_GROUP_VERDICT)
		verdict_key(m, r);
	else if (sm->by == SC_GROUP_SYSCALL)
		syscall_key(m, r);
	else
		sc_stack_key(m, r, sm->by != SC_GROUP_KERNEL, sm->by != SC_GROUP_USER);
	return fclose(m) ? -ENOMEM : 0;
}

static struct sgroup *group_get(struct summary *sm, const char *key, size_t len)
{
	__u64 h = hash_bytes(key, len, 0);
	struct sgroup *g;
	struct hnode *n;

	htab_for_each_possible(&sm->groups, n, h) {
		g = container_of(n, struct sgroup, node);
		if (g->len == len && !memcmp(g->key, key, len))
			return g;
	}
	g = calloc(1, sizeof(*g) + len + 1);
	if (!g)
		return NULL;
	g->len = len;
	memcpy(g->key, key, len);
	if (htab_add(&sm->groups, &g->node, h)) {
		free(g);
		return NULL;
	}
	g->all_next = sm->all;
	sm->all = g;
	sm->nr_groups++;
	return g;
}

/* whether (g, kind, v) is new; then remembered */
static bool pair_new(struct summary *sm, const struct sgroup *g, int kind, __u64 v)
{
	__u64 h = hash_u64(v ^ hash_u64((__u64)(unsigned long)g + (__u64)kind));
	struct spair *p;
	struct hnode *n;

	htab_for_each_possible(&sm->pairs, n, h) {
		p = container_of(n, struct spair, node);
		if (p->g == g && p->kind == kind && p->v == v)
			return false;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return false;
	p->g = g;
	p->kind = kind;
	p->v = v;
	if (htab_add(&sm->pairs, &p->node, h)) {
		free(p);
		return false;
	}
	return true;
}

static void group_hit(struct summary *sm, struct sgroup *g, const struct sc_stall *st,
		      const struct stallcap_sample *s, __u64 weight, __u64 dur)
{
	__u64 *d;

	g->total_ns += weight;
	if (g->last_stall == st && g->last_stall_id == st->stall_id && g->last_tid == st->tid)
		return;
	g->last_stall = st;
	g->last_stall_id = st->stall_id;
	g->last_tid = st->tid;
	if (g->nr == g->cap) {
		d = realloc(g->dur, (g->cap ? 2 * g->cap : 4) * sizeof(*d));
		if (!d)
			return;
		g->dur = d;
		g->cap = g->cap ? 2 * g->cap : 4;
	}
	g->dur[g->nr++] = dur;
	if (pair_new(sm, g, 0, st->tid)) {
		if (g->nr_tids < ARRAY_SIZE(g->tids))
			g->tids[g->nr_tids] = st->tid;
		g->nr_tids++;
	}
	if (pair_new(sm, g, 1, s->user_tag)) {
		if (g->nr_tags < ARRAY_SIZE(g->tags))
			g->tags[g->nr_tags] = s->user_tag;
		g->nr_tags++;
	}
}

static int hist_bucket(__u64 ns)
{
	__u64 ms = ns / NSEC_PER_MSEC;
	int b = 0;

	while (ms && b < HIST_BUCKETS - 1) {
		ms >>= 1;
		b++;
	}
	return b;
}

static void hist_add(struct summary *sm, int kind, __u64 id, const char *comm, __u64 dur)
{
	__u64 h = hash_u64(id ^ ((__u64)kind << 56));
	struct shist *x = NULL;
	struct hnode *n;

	htab_for_each_possible(&sm->hists, n, h) {
		x = container_of(n, struct shist, node);
		if (x->kind == kind && x->id == id)
			break;
		x = NULL;
	}
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x || htab_add(&sm->hists, &x->node, h)) {
			free(x);
			return;
		}
		x->kind = kind;
		x->id = id;
		snprintf(x->comm, sizeof(x->comm), "%.16s", comm);
		x->all_next = sm->hall;
		sm->hall = x;
		sm->nr_hists++;
	}
	x->count++;
	x->total_ns += dur;
	x->b[hist_bucket(dur)]++;
}

void summary_add_stall(struct summary *sm, struct sc_rstall *rs)
{
	const struct sc_stall *st = rs->st;
	__u64 dur = sc_stall_duration_ns(st), w;
	const struct stallcap_sample *first = rs->first;
	struct sc_weights sw;
	char *key = NULL;
	size_t len;
	struct sgroup *g;

	sm->stalls++;
	sm->total_ns += dur;
	resolve_stall_rewind(rs);
	sc_weights_start(&sw, st);
	while (resolve_stall_next(rs) > 0) {
		w = sc_weights_next(&sw, rs->cur.smp);
		if (!is_sample(rs->cur.smp))
			continue;
		if (key_of(sm, &rs->cur, &key, &len) == 0) {
			g = group_get(sm, key, len);
			if (g)
				group_hit(sm, g, st, &rs->cur.smp->v.s, w, dur);
		}
		free(key);
		key = NULL;
	}
	if (!first)
		return;
	hist_add(sm, 0, st->pid, rs->proc_comm ? rs->proc_comm : first->comm, dur);
	hist_add(sm, 1, st->tid, first->comm, dur);
	hist_add(sm, 2, first->user_tag, "", dur);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int cmp_group(const void *a, const void *b)
{
	const struct sgroup *x = *(struct sgroup *const *)a, *y = *(struct sgroup *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* nearest rank: the smallest value with at least q of the values at or below it */
static __u64 pct(const __u64 *v, size_t n, unsigned int q)
{
	size_t rank = (n * q + 99) / 100;

	return n ? v[rank ? rank - 1 : 0] : 0;
}

static void put_ms(FILE *out, const char *label, __u64 ns)
{
	fprintf(out, "%s%.3f ms", label, (double)ns / NSEC_PER_MSEC);
}

static void print_group(FILE *out, const struct summary *sm, struct sgroup *g,
			unsigned int rank)
{
	const char *p, *semi;
	unsigned int i;

	qsort(g->dur, g->nr, sizeof(*g->dur), cmp_u64);
	fprintf(out, "#%u ", rank);
	put_ms(out, "", g->total_ns);
	fprintf(out, " (%.1f%%)  %zu stall%s  ", sm->total_ns ?
		100.0 * (double)g->total_ns / (double)sm->total_ns : 0.0,
		g->nr, g->nr == 1 ? "" : "s");
	put_ms(out, "p50 ", pct(g->dur, g->nr, 50));
	put_ms(out, "  p99 ", pct(g->dur, g->nr, 99));
	put_ms(out, "  max ", g->nr ? g->dur[g->nr - 1] : 0);
	fprintf(out, "\n    %u thread%s:", g->nr_tids, g->nr_tids == 1 ? "" : "s");
	for (i = 0; i < g->nr_tids && i < ARRAY_SIZE(g->tids); i++)
		fprintf(out, " %u", g->tids[i]);
	fprintf(out, "%s  %u tag%s:", g->nr_tids > ARRAY_SIZE(g->tids) ? " ..." : "",
		g->nr_tags, g->nr_tags == 1 ? "" : "s");
	for (i = 0; i < g->nr_tags && i < ARRAY_SIZE(g->tags); i++)
		fprintf(out, " %#llx", (unsigned long long)g->tags[i]);
	fprintf(out, "%s\n", g->nr_tags > ARRAY_SIZE(g->tags) ? " ..." : "");
	/* frames innermost first, as the stall blocks show them */
	for (p = g->key + g->len; p > g->key; p = semi) {
		for (semi = p; semi > g->key && semi[-1] != ';'; semi--)
			;
		fprintf(out, "    %.*s\n", (int)(p - semi), semi);
		if (semi > g->key)
			semi--;
	}
}

static const char *const hist_kind[] = { "process", "thread", "tag" };

static int cmp_hist(const void *a, const void *b)
{
	const struct shist *x = *(struct shist *const *)a, *y = *(struct shist *const *)b;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void print_hist(FILE *out, const struct shist *x)
{
	int i;

	if (x->kind == 2)
		fprintf(out, "tag %#llx", (unsigned long long)x->id);
	else
		fprintf(out, "%s %llu (", hist_kind[x->kind], (unsigned long long)x->id);
	if (x->kind != 2) {
		text_str(out, x->comm[0] ? x->comm : "?");
		fputc(')', out);
	}
	fprintf(out, ": %llu stall%s, ", (unsigned long long)x->count, x->count == 1 ? "" : "s");
	put_ms(out, "", x->total_ns);
	fputs("\n   ", out);
	for (i = 0; i < HIST_BUCKETS; i++) {
		if (!x->b[i])
			continue;
		if (i == 0)
			fprintf(out, " <1ms:%llu", (unsigned long long)x->b[i]);
		else if (i == HIST_BUCKETS - 1)
			fprintf(out, " >=%ums:%llu", 1U << (i - 1), (unsigned long long)x->b[i]);
		else
			fprintf(out, " %u-%ums:%llu", 1U << (i - 1), 1U << i,
				(unsigned long long)x->b[i]);
	}
	fputc('\n', out);
}

static const char *const group_name[] = {
	[SC_GROUP_BOTH] = "user and kernel stack",
	[SC_GROUP_KERNEL] = "kernel stack",
	[SC_GROUP_USER] = "user stack",
	[SC_GROUP_STATE] = "thread state",
	[SC_GROUP_VERDICT] = "verdict",
	[SC_GROUP_SYSCALL] = "system call",
};

/* Print the @top first groups (0: all) and the histograms. */
void summary_print(struct summary *sm, FILE *out, unsigned int top)
{
	struct sgroup **v, *g;
	struct shist **hv, *x;
	size_t i = 0, n;

	fprintf(out, "%llu stall%s, ", (unsigned long long)sm->stalls, sm->stalls == 1 ? "" : "s");
	put_ms(out, "", sm->total_ns);
	fprintf(out, " stalled; by %s, %zu group%s, ranked by stalled time\n",
		group_name[sm->by], sm->nr_groups, sm->nr_groups == 1 ? "" : "s");
	v = malloc((sm->nr_groups + 1) * sizeof(*v));
	hv = malloc((sm->nr_hists + 1) * sizeof(*hv));
	if (!v || !hv) {
		free(v);
		free(hv);
		return;
	}
	for (g = sm->all; g; g = g->all_next)
		v[i++] = g;
	qsort(v, sm->nr_groups, sizeof(*v), cmp_group);
	n = top && top < sm->nr_groups ? top : sm->nr_groups;
	for (i = 0; i < n; i++)
		print_group(out, sm, v[i], (unsigned int)i + 1);
	if (n < sm->nr_groups)
		fprintf(out, "(%zu more)\n", sm->nr_groups - n);
	i = 0;
	for (x = sm->hall; x; x = x->all_next)
		hv[i++] = x;
	qsort(hv, sm->nr_hists, sizeof(*hv), cmp_hist);
	fputs("\nstall durations\n", out);
	for (i = 0; i < sm->nr_hists; i++)
		print_hist(out, hv[i]);
	free(v);
	free(hv);
}

static void free_pairs(struct htab *h)
{
	struct hnode *n, *next;
	size_t i;

	for (i = 0; i < h->nb; i++)
		for (n = h->b[i]; n; n = next) {
			next = n->next;
			free(container_of(n, struct spair, node));
		}
	htab_free(h);
}

void summary_free(struct summary *sm)
{
	struct sgroup *g, *gn;
	struct shist *x, *xn;

	if (!sm)
		return;
	for (g = sm->all; g; g = gn) {
		gn = g->all_next;
		free(g->dur);
		free(g);
	}
	for (x = sm->hall; x; x = xn) {
		xn = x->all_next;
		free(x);
	}
	free_pairs(&sm->pairs);
	htab_free(&sm->groups);
	htab_free(&sm->hists);
	free(sm);
}

int parse_group_by(const char *arg, enum sc_group_by *by)
{
	if (!strcmp(arg, "both"))
		*by = SC_GROUP_BOTH;
	else if (!strcmp(arg, "kernel"))
		*by = SC_GROUP_KERNEL;
	else if (!strcmp(arg, "user"))
		*by = SC_GROUP_USER;
	else if (!strcmp(arg, "state"))
		*by = SC_GROUP_STATE;
	else if (!strcmp(arg, "verdict"))
		*by = SC_GROUP_VERDICT;
	else if (!strcmp(arg, "syscall"))
		*by = SC_GROUP_SYSCALL;
	else
		return -EINVAL;
	return 0;
}
