// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap report -f html: one self-contained page (no script, style or
 * font fetched from anywhere) with
 *  - a flame graph of stalled time: an inline SVG (id "flamegraph"), root
 *    at the bottom, thread name, then user frames, then kernel frames
 *    (suffixed _[k]); a frame's width is the stalled time its samples stand
 *    for (the weights of summary.c); hovering shows name, time and share;
 *  - a timeline of stalls per thread: an inline SVG (id "timeline"), one
 *    row per thread, one bar per stall from its deadline to its end (the
 *    first HTML_MAX_STALLS stalls; the flame graph has them all).
 * The flame graph's tree grows with the distinct stacks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "htab.h"
#include "output.h"

#define HTML_MAX_STALLS	20000
#define FG_WIDTH	1200.0
#define FG_ROW		16

struct fnode {
	struct fnode *child, *sibling, *parent;
	struct hnode hn;	/* in html.kids, by parent and name */
	__u64 ns;
	char name[];
};

struct tl_stall {
	__u32 tid;
	__u64 start, end;	/* CLOCK_MONOTONIC */
	char comm[17];
};

struct html {
	struct fnode *root;
	struct htab kids;	/* every node but the root: a wide level is no list walk */
	struct tl_stall *tl;
	size_t ntl, captl, dropped;
	unsigned int depth;
};

static struct fnode *fnode_new(const char *name, size_t len)
{
	struct fnode *n = calloc(1, sizeof(*n) + len + 1);

	if (n)
		memcpy(n->name, name, len);
	return n;
}

struct html *html_new(void)
{
	struct html *h = calloc(1, sizeof(*h));

	if (h && !(h->root = fnode_new("all", 3))) {
		free(h);
		return NULL;
	}
	if (h)
		htab_init(&h->kids);
	return h;
}

static struct fnode *child(struct html *h, struct fnode *p, const char *name, size_t len)
{
	__u64 hash = hash_bytes(name, len, hash_u64((__u64)(uintptr_t)p));
	struct hnode *pos;
	struct fnode *c;

	htab_for_each_possible(&h->kids, pos, hash) {
		c = container_of(pos, struct fnode, hn);
		if (c->parent == p && !strncmp(c->name, name, len) && !c->name[len])
			return c;
	}
	c = fnode_new(name, len);
	if (!c)
		return NULL;
	if (htab_add(&h->kids, &c->hn, hash)) {
		free(c);
		return NULL;
	}
	c->parent = p;
	c->sibling = p->child;
	p->child = c;
	return c;
}

/* add @ns along the ';'-separated path @line */
static void add_path(struct html *h, const char *line, __u64 ns)
{
	struct fnode *n = h->root;
	const char *p = line, *semi;
	unsigned int depth = 0;

	n->ns += ns;
	while (n && *p) {
		semi = strchr(p, ';');
		if (!semi)
			semi = p + strlen(p);
		n = child(h, n, p, (size_t)(semi - p));
		if (n)
			n->ns += ns;
		depth++;
		p = *semi ? semi + 1 : semi;
	}
	if (depth > h->depth)
		h->depth = depth;
}

static void add_timeline(struct html *h, const struct sc_rstall *rs)
{
	const struct sc_stall *st = rs->st;
	struct tl_stall *v, *t;

	if (!rs->first)
		return;
	if (h->ntl >= HTML_MAX_STALLS) {
		h->dropped++;
		return;
	}
	if (h->ntl == h->captl) {
		v = realloc(h->tl, (h->captl ? 2 * h->captl : 256) * sizeof(*v));
		if (!v)
			return;
		h->tl = v;
		h->captl = h->captl ? 2 * h->captl : 256;
	}
	t = &h->tl[h->ntl++];
	t->tid = st->tid;
	t->start = rs->first->deadline_ns;
	t->end = t->start + sc_stall_duration_ns(st);
	snprintf(t->comm, sizeof(t->comm), "%.16s", rs->first->comm);
}

void html_add_stall(struct html *h, struct sc_rstall *rs)
{
	struct sc_weights sw;
	char *buf = NULL, comm[17];
	size_t len;
	FILE *m;
	__u64 w;

	add_timeline(h, rs);
	resolve_stall_rewind(rs);
	sc_weights_start(&sw, rs->st);
	while (resolve_stall_next(rs) > 0) {
		w = sc_weights_next(&sw, rs->cur.smp);
		if (!w)
			continue;
		m = open_memstream(&buf, &len);
		if (!m)
			return;
		snprintf(comm, sizeof(comm), "%.16s", rs->cur.smp->v.s.comm);
		folded_str(m, comm[0] ? comm : "?");
		if (rs->cur.nu + rs->cur.nk) {
			fputc(';', m);
			sc_stack_key(m, &rs->cur, true, true);
		}
		if (!fclose(m))
			add_path(h, buf, w);
		free(buf);
		buf = NULL;
	}
}

/* text for HTML/SVG: &, <, >, " escaped (names are already terminal-safe) */
static void xml_str(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

/* a raw name (a thread's comm): made terminal-safe (escape.c), then XML-escaped */
static void xml_safe(FILE *out, const char *s)
{
	char *buf = NULL;
	size_t len;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	text_str(m, s);
	if (!fclose(m))
		xml_str(out, buf);
	free(buf);
}

/* a warm colour from the name (kernel frames bluish), as flamegraph.pl */
static void colour(const char *name, char *buf, size_t len)
{
	__u64 hsh = 5381;
	const char *p;
	size_t n = strlen(name);

	for (p = name; *p; p++)
		hsh = hsh * 33 + (unsigned char)*p;
	if (n > 4 && !strcmp(name + n - 4, "_[k]"))
		snprintf(buf, len, "rgb(%u,%u,230)", 80 + (unsigned int)(hsh % 60),
			 140 + (unsigned int)(hsh / 60 % 60));
	else
		snprintf(buf, len, "rgb(230,%u,%u)", 90 + (unsigned int)(hsh % 110),
			 (unsigned int)(hsh / 110 % 55));
}

static void fg_node(FILE *out, const struct fnode *n, double x, unsigned int depth,
		    unsigned int height, __u64 total)
{
	double w = (double)n->ns / (double)total * FG_WIDTH;
	double y = (double)(height - depth - 1) * FG_ROW;
	const struct fnode *c;
	char col[32];
	size_t chars;

	if (w < 0.1)
		return;
	colour(n->name, col, sizeof(col));
	fputs("<g class=\"frame\"><title>", out);
	xml_str(out, n->name);
	fprintf(out, " (%.3f ms, %.2f%%)</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
		"height=\"%d\" fill=\"%s\" rx=\"2\"/>", (double)n->ns / NSEC_PER_MSEC,
		100.0 * (double)n->ns / (double)total, x, y, w, FG_ROW - 1, col);
	chars = (size_t)(w / 7);
	if (chars >= 3) {
		char label[256];

		snprintf(label, sizeof(label), "%.*s%s", (int)(strlen(n->name) > chars ?
			 chars - 2 : chars), n->name, strlen(n->name) > chars ? ".." : "");
		fprintf(out, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + FG_ROW - 4);
		xml_str(out, label);
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
	for (c = n->child; c; c = c->sibling) {
		fg_node(out, c, x, depth + 1, height, total);
		x += (double)c->ns / (double)total * FG_WIDTH;
	}
}

static int cmp_tl(const void *a, const void *b)
{
	const struct tl_stall *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void timeline(FILE *out, struct html *h)
{
	__u64 t0 = ~0ULL, t1 = 0;
	unsigned int rows = 0;
	double span, x, w;
	size_t i;

	for (i = 0; i < h->ntl; i++) {
		if (h->tl[i].start < t0)
			t0 = h->tl[i].start;
		if (h->tl[i].end > t1)
			t1 = h->tl[i].end;
	}
	qsort(h->tl, h->ntl, sizeof(*h->tl), cmp_tl);
	for (i = 0; i < h->ntl; i++)
		rows += !i || h->tl[i].tid != h->tl[i - 1].tid;
	span = t1 > t0 ? (double)(t1 - t0) : 1;
	fprintf(out, "<h2>Stalls per thread</h2>\n<p>%zu stalls over %.3f s%s</p>\n"
		"<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%u\">\n", h->ntl, span / NSEC_PER_SEC,
		h->dropped ? " (the first ones only)" : "", FG_WIDTH + 200, rows * FG_ROW + 2);
	for (i = 0, rows = 0; i < h->ntl; i++) {
		const struct tl_stall *t = &h->tl[i];

		if (i && t->tid != h->tl[i - 1].tid)
			rows++;
		if (!i || t->tid != h->tl[i - 1].tid) {
			fprintf(out, "<text class=\"thread\" x=\"0\" y=\"%u\">%u ", rows * FG_ROW + 12,
				t->tid);
			xml_safe(out, t->comm);
			fputs("</text>\n", out);
		}
		x = 200 + (double)(t->start - t0) / span * FG_WIDTH;
		w = (double)(t->end - t->start) / span * FG_WIDTH;
		fprintf(out, "<rect class=\"stall\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" "
			"fill=\"rgb(200,60,40)\"><title>tid %u: %.3f ms at +%.3f s</title></rect>\n",
			x, rows * FG_ROW, w < 1 ? 1 : w, FG_ROW - 2, t->tid,
			(double)(t->end - t->start) / NSEC_PER_MSEC,
			(double)(t->start - t0) / NSEC_PER_SEC);
	}
	fputs("</svg>\n", out);
}

void html_write(struct html *h, FILE *out)
{
	unsigned int height = h->depth + 1;

	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
	      "<title>stallcap report</title>\n<style>\n"
	      "body { font: 13px sans-serif; margin: 1em; }\n"
	      "svg text { font: 11px monospace; pointer-events: none; }\n"
	      "svg .frame:hover rect { stroke: black; }\n</style></head><body>\n"
	      "<h1>stallcap report</h1>\n", out);
	fprintf(out, "<h2>Flame graph of stalled time</h2>\n<p>%.3f ms stalled in all; a "
		"frame's width is the stalled time spent in it (hover for figures)</p>\n"
		"<svg id=\"flamegraph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%u\">\n", (double)h->root->ns / NSEC_PER_MSEC, FG_WIDTH,
		height * FG_ROW);
	if (h->root->ns)
		fg_node(out, h->root, 0, 0, height, h->root->ns);
	fputs("</svg>\n", out);
	timeline(out, h);
	fputs("</body></html>\n", out);
}

static void fnode_free(struct fnode *n)
{
	struct fnode *c, *next;

	for (c = n->child; c; c = next) {
		next = c->sibling;
		fnode_free(c);
	}
	free(n);
}

void html_free(struct html *h)
{
	if (!h)
		return;
	fnode_free(h->root);
	htab_free(&h->kids);
	free(h->tl);
	free(h);
}
