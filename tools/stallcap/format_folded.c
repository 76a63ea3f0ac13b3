// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): folded stacks, one line per distinct stack with the
 * stalled time it stands for in microseconds, root first, as flamegraph.pl,
 * inferno and speedscope read them:
 *
 *   reactor-0;main;run_loop;handle_event;entry_SYSCALL_64_[k];do_sys_poll_[k] 12000
 *
 * The thread name comes first, then user frames (outermost first), then
 * kernel frames with the "_[k]" suffix (flamegraph.pl --color=java and
 * inferno colour them as kernel code).  A frame without a symbol is "[dso]"
 * or "[unknown]".  Samples are spaced T, 2T, 4T...: each weighs the
 * stalled time it stands for (sc_weights_next(), summary.c), not 1, so
 * a flame graph's widths are stalled time.  Names are escaped (escape.c): a line never holds a newline
 * or a control character, and ';' inside a name is shown as ':', so every
 * line keeps the form "a;b;c N".  Lines are counted in a hash table: memory
 * grows with the distinct stacks, not the samples.
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "output.h"

/* One distinct line, counted. */
struct fline {
	struct hnode node;
	struct fline *all_next;
	__u64 ns;
	size_t len;
	char line[];
};

struct folded {
	struct htab h;
	struct fline *all;
	size_t n;
};

struct folded *folded_new(void)
{
	struct folded *fo = calloc(1, sizeof(struct folded));

	if (fo)
		htab_init(&fo->h);
	return fo;
}

void folded_free(struct folded *fo)
{
	struct fline *l, *n;

	if (!fo)
		return;
	for (l = fo->all; l; l = n) {
		n = l->all_next;
		free(l);
	}
	htab_free(&fo->h);
	free(fo);
}

/* Add @ns of stalled time to the stack @line (@len bytes). */
static void add_line(struct folded *fo, const char *line, size_t len, __u64 ns)
{
	__u64 h = hash_bytes(line, len, 0);
	struct fline *l;
	struct hnode *n;

	htab_for_each_possible(&fo->h, n, h) {
		l = container_of(n, struct fline, node);
		if (l->len == len && !memcmp(l->line, line, len)) {
			l->ns += ns;
			return;
		}
	}
	l = malloc(sizeof(*l) + len + 1);
	if (!l)
		return;
	l->ns = ns;
	l->len = len;
	memcpy(l->line, line, len);
	l->line[len] = 0;
	if (htab_add(&fo->h, &l->node, h)) {
		free(l);
		return;
	}
	l->all_next = fo->all;
	fo->all = l;
	fo->n++;
}

static void add_sample(struct folded *fo, const struct sc_rsample *r, __u64 ns)
{
	char comm[17], *buf = NULL;
	size_t len;
	FILE *m;

	m = open_memstream(&buf, &len);
	if (!m)
		return;
	snprintf(comm, sizeof(comm), "%.16s", r->smp->v.s.comm);
	folded_str(m, comm[0] ? comm : "?");
	if (r->nu + r->nk) {
		fputc(';', m);
		sc_stack_key(m, r, true, true);
	}
	if (!fclose(m))
		add_line(fo, buf, len, ns);
	free(buf);
}

void folded_add_stall(struct folded *fo, struct sc_rstall *rs)
{
	struct sc_weights sw;
	__u64 w;

	resolve_stall_rewind(rs);
	sc_weights_start(&sw, rs->st);
	while (resolve_stall_next(rs) > 0) {
		w = sc_weights_next(&sw, rs->cur.smp);
		if (w)
			add_sample(fo, &rs->cur, w);
	}
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp((*(struct fline *const *)a)->line, (*(struct fline *const *)b)->line);
}

/* The lines sorted (as `sort` would), each with its microseconds (>= 1). */
void folded_print(struct folded *fo, FILE *out)
{
	struct fline **v, *l;
	size_t i = 0;

	if (!fo->n)
		return;
	v = malloc(fo->n * sizeof(*v));
	if (!v)
		return;
	for (l = fo->all; l; l = l->all_next)
		v[i++] = l;
	qsort(v, fo->n, sizeof(*v), cmp_line);
	for (i = 0; i < fo->n; i++)
		if (v[i]->ns >= 500)
			fprintf(out, "%s %llu\n", v[i]->line,
				(unsigned long long)((v[i]->ns + 500) / 1000));
	free(v);
}
