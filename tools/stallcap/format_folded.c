// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): folded stacks, one line per distinct stack with its sample
 * count, root first, as flamegraph.pl, inferno and speedscope read them:
 *
 *   reactor-0;main;run_loop;handle_event;[k] entry_SYSCALL_64;[k] do_sys_poll 3
 *
 * The thread name comes first, then user frames (outermost first), then
 * kernel frames marked "[k] ".  A frame without a symbol is "[dso]" or
 * "[unknown]".
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

struct folded {
	char **lines;
	size_t n, cap;
};

struct folded *folded_new(void)
{
	return calloc(1, sizeof(struct folded));
}

void folded_free(struct folded *fo)
{
	size_t i;

	if (!fo)
		return;
	for (i = 0; i < fo->n; i++)
		free(fo->lines[i]);
	free(fo->lines);
	free(fo);
}

/* Append s to the line, with ';' and line breaks (the separators) replaced. */
static void put(FILE *m, const char *prefix, const char *s)
{
	fputs(prefix, m);
	for (; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, m);
}

static void put_frame(FILE *m, const char *prefix, const struct sc_frame *f)
{
	const char *b;

	fputc(';', m);
	if (f->sym) {
		put(m, prefix, f->sym);
		return;
	}
	b = f->dso ? strrchr(f->dso, '/') : NULL;
	fprintf(m, "%s[%s]", prefix, b ? b + 1 : f->dso ? f->dso : "unknown");
}

static void add_line(struct folded *fo, char *line)
{
	char **l;

	if (fo->n == fo->cap) {
		size_t cap = fo->cap ? 2 * fo->cap : 64;

		l = realloc(fo->lines, cap * sizeof(*l));
		if (!l) {
			free(line);
			return;
		}
		fo->lines = l;
		fo->cap = cap;
	}
	fo->lines[fo->n++] = line;
}

void folded_add_stall(struct folded *fo, const struct sc_rstall *rs)
{
	const struct sc_rsample *r;
	char comm[17], *buf;
	unsigned int k;
	size_t len;
	FILE *m;
	int i;

	for (k = 0; k < rs->nr; k++) {
		r = &rs->samples[k];
		buf = NULL;
		m = open_memstream(&buf, &len);
		if (!m)
			return;
		snprintf(comm, sizeof(comm), "%.16s", r->smp->v.s.comm);
		put(m, "", comm[0] ? comm : "?");
		for (i = r->nu - 1; i >= 0; i--)
			put_frame(m, "", &r->uf[i]);
		for (i = r->nk - 1; i >= 0; i--)
			put_frame(m, "[k] ", &r->kf[i]);
		fclose(m);
		add_line(fo, buf);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void folded_print(struct folded *fo, FILE *out)
{
	size_t i, j;

	qsort(fo->lines, fo->n, sizeof(*fo->lines), cmp_str);
	for (i = 0; i < fo->n; i = j) {
		for (j = i + 1; j < fo->n && !strcmp(fo->lines[i], fo->lines[j]); j++)
			;
		fprintf(out, "%s %zu\n", fo->lines[i], j - i);
	}
}
