// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): what a user address is, looked up once per process and
 * address: its ELF symbol, its source line and the functions inlined there
 * (inline.c).  A report meets the same few thousand addresses in every
 * stall; the DWARF walks behind them cost tens of microseconds each, a
 * table lookup far less.  Entries hold pointers into the Dwfl they were
 * found in: the table is emptied whenever that Dwfl is rebuilt.
 */
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "usyms.h"

/* inline frames kept per address (deeper chains are cut, innermost kept) */
#define ADDR_MAX_INLINE	16

struct addr_ent {
	struct hnode node;
	struct addr_ent *next;
	struct sc_addrinfo info;
};

struct addrinfo_cache {
	struct htab h;
	struct addr_ent *all;
};

struct addrinfo_cache *addrinfo_new(void)
{
	struct addrinfo_cache *c = calloc(1, sizeof(*c));

	if (c)
		htab_init(&c->h);
	return c;
}

void addrinfo_clear(struct addrinfo_cache *c)
{
	struct addr_ent *e, *n;

	if (!c)
		return;
	for (e = c->all; e; e = n) {
		n = e->next;
		free(e);
	}
	c->all = NULL;
	htab_free(&c->h);
	htab_init(&c->h);
}

void addrinfo_free(struct addrinfo_cache *c)
{
	addrinfo_clear(c);
	free(c);
}

/* look @a up in @mod: symbol, line, then (@inlines) the inline chain */
static struct addr_ent *lookup(Dwfl_Module *mod, __u64 a, struct sc_names *names,
			       bool inlines)
{
	struct sc_frame f = { .addr = a }, inl[ADDR_MAX_INLINE];
	struct addr_ent *e;
	const char *name;
	Dwfl_Line *line;
	GElf_Off off;
	GElf_Sym sym;
	int n = 0, i;

	name = dwfl_module_addrinfo(mod, a, &off, &sym, NULL, NULL, NULL);
	line = dwfl_module_getsrc(mod, a);
	if (line)
		f.file = dwfl_lineinfo(line, NULL, &f.line, NULL, NULL, NULL);
	f.sym = name;
	if (name && inlines)
		n = dw_inline_frames(mod, a, names, &f, inl, ADDR_MAX_INLINE);
	e = calloc(1, sizeof(*e) + n * sizeof(e->info.inl[0]));
	if (!e)
		return NULL;
	e->info.addr = a;
	e->info.sym = sc_names_get(names, name, true);
	e->info.sym_start = a - off;
	e->info.file = f.file;
	e->info.line = f.line;
	e->info.ninl = n;
	for (i = 0; i < n; i++) {
		e->info.inl[i].sym = inl[i].sym;
		e->info.inl[i].file = inl[i].file;
		e->info.inl[i].line = inl[i].line;
	}
	return e;
}

/**
 * addrinfo_get() - what @a is in @d (NULL if no module holds it, or out of
 * memory); valid until addrinfo_clear()
 */
const struct sc_addrinfo *addrinfo_get(struct addrinfo_cache *c, Dwfl *d, __u64 a,
				       struct sc_names *names, bool inlines)
{
	__u64 h = hash_u64(a);
	Dwfl_Module *mod;
	struct addr_ent *e;
	struct hnode *n;

	htab_for_each_possible(&c->h, n, h) {
		e = container_of(n, struct addr_ent, node);
		if (e->info.addr == a)
			return &e->info;
	}
	mod = dwfl_addrmodule(d, a);
	if (!mod)
		return NULL;
	e = lookup(mod, a, names, inlines);
	if (!e)
		return NULL;
	if (htab_add(&c->h, &e->node, h)) {
		free(e);
		return NULL;
	}
	e->next = c->all;
	c->all = e;
	return &e->info;
}
