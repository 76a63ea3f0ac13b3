// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): folded stacks, one line per distinct stack with its sample
 * count, root first, as flamegraph.pl, inferno and speedscope read them:
 *
 *   reactor-0;main;run_loop;handle_event;[k] entry_SYSCALL_64;[k] do_sys_poll 3
 *
 * The thread name comes first, then user frames (outermost first), then
 * kernel frames marked "[k] ".  A frame without a symbol is "[dso]" or
 * "[unknown]".  Names are escaped (escape.c): a line never holds a newline
 * or a control character, and ';' inside a name is shown as ':', so every
 * line keeps the form "a;b;c N".  Lines are counted in a hash table: memory
 * grows with the distinct stacks, not the samples.
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* One distinct line, counted. */
struct fline {
	struct hnode node;
	struct fline *all_next;
	size_t count, len;
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

static void put_frame(FILE *m, const char *prefix, const struct sc_frame *f)
{
	const char *b;

	fputc(';', m);
	fputs(prefix, m);
	if (f->sym) {
		folded_str(m, f->sym);
		return;
	}
	b = f->dso ? strrchr(f->dso, '/') : NULL;
	fputc('[', m);
	folded_str(m, b ? b + 1 : f->dso ? f->dso : "unknown");
	fputc(']', m);
}

/* Count one more sample of the stack @line (@len bytes). */
static void add_line(struct folded *fo, const char *line, size_t len)
{
	__u64 h = hash_bytes(line, len, 0);
	struct fline *l;
	struct hnode *n;

	htab_for_each_possible(&fo->h, n, h) {
		l = container_of(n, struct fline, node);
		if (l->len == len && !memcmp(l->line, line, len)) {
			l->count++;
			return;
		}
	}
	l = malloc(sizeof(*l) + len + 1);
	if (!l)
		return;
	l->count = 1;
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

static void add_sample(struct folded *fo, const struct sc_rsample *r)
{
	char comm[17], *buf = NULL;
	size_t len;
	FILE *m;
	int i;

	m = open_memstream(&buf, &len);
	if (!m)
		return;
	snprintf(comm, sizeof(comm), "%.16s", r->smp->v.s.comm);
	folded_str(m, comm[0] ? comm : "?");
	for (i = r->nu - 1; i >= 0; i--)
		put_frame(m, "", &r->uf[i]);
	for (i = r->nk - 1; i >= 0; i--)
		put_frame(m, "[k] ", &r->kf[i]);
	if (!fclose(m))
		add_line(fo, buf, len);
	free(buf);
}

void folded_add_stall(struct folded *fo, struct sc_rstall *rs)
{
	resolve_stall_rewind(rs);
	while (resolve_stall_next(rs) > 0)
		add_sample(fo, &rs->cur);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp((*(struct fline *const *)a)->line, (*(struct fline *const *)b)->line);
}

/* The lines sorted (as `sort` would), each with its count. */
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
		fprintf(out, "%s %zu\n", v[i]->line, v[i]->count);
	free(v);
}
