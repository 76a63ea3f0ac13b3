// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the names frames are shown with.  A symbol as the ELF file,
 * the DWARF or a perf map spells it becomes its display name once: an ELF
 * symbol without its version ("memcpy@@GLIBC_2.14" is memcpy; a perf map's
 * "LazyCompile:~f /app/@scope/x.js" keeps its '@') and, for a C++ symbol,
 * demangled ("_ZN3app4RingIiEclEm" is app::Ring<int>::operator()(unsigned
 * long)) by the demangler of the C++ runtime, as perf and eu-stack show them,
 * and for a Rust symbol by libiberty's ("_RNvCs..._5hello4main" and
 * "_ZN5hello4main17h0123456789abcdefE" are hello::main).  Names are kept
 * in a table for the life of the resolver, so formatters may hold on to
 * them.
 */
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>
#undef ARRAY_SIZE		/* libiberty.h's, the same as tool.h's */

#include "tool.h"

/*
 * The Itanium C++ ABI's demangler interface (section 3.4), which libstdc++
 * (and libc++abi) export; declared here as <cxxabi.h> declares it for C++.
 */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct name_ent {
	struct hnode node;
	struct name_ent *all_next;
	char *shown;		/* the copy after raw[], or a demangled name */
	bool owned;		/* shown was malloc'ed by the demangler */
	bool versioned;		/* an ELF symbol: "@VERSION" dropped */
	char raw[];
};

struct sc_names {
	struct htab tab;
	struct name_ent *all;
	bool no_demangle;
};

struct sc_names *sc_names_new(void)
{
	struct sc_names *n = calloc(1, sizeof(*n));

	if (n)
		htab_init(&n->tab);
	return n;
}

void sc_names_set_demangle(struct sc_names *n, bool on)
{
	n->no_demangle = !on;
}

void sc_names_free(struct sc_names *n)
{
	struct name_ent *e, *next;

	if (!n)
		return;
	for (e = n->all; e; e = next) {
		next = e->all_next;
		if (e->owned)
			free(e->shown);
		free(e);
	}
	htab_free(&n->tab);
	free(n);
}

/*
 * @sym demangled (malloc'ed), or NULL if it is none of these: a Rust symbol,
 * legacy ("_ZN...17h<hash>E", C++-like with a hash, "$LT$" escapes, maybe
 * ".llvm.N" after it) or v0 ("_R..."), by libiberty's Rust demangler, as
 * binutils, gdb and perf show them; a C++ symbol ("_Z...") by the C++
 * runtime's.
 */
static char *demangle(const char *sym)
{
	int status = -1;
	char *d;

	if (!strncmp(sym, "_R", 2) || !strncmp(sym, "_ZN", 3)) {
		d = rust_demangle(sym, DMGL_PARAMS | DMGL_ANSI);
		if (d)
			return d;
	}
	if (strncmp(sym, "_Z", 2))
		return NULL;
	d = __cxa_demangle(sym, NULL, NULL, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}

/* @copy (a copy of the raw name) unversioned, or its demangled form */
static char *display(const struct sc_names *n, char *copy, bool versioned)
{
	size_t len = strcspn(copy, "@");
	char *d;

	if (versioned && copy[len] && len)
		copy[len] = 0;		/* symbol version dropped */
	if (n->no_demangle)
		return copy;
	d = demangle(copy);
	return d ? d : copy;
}

/**
 * sc_names_get() - the display name of @raw (NULL: NULL), valid until
 * sc_names_free(); @versioned: an ELF symbol, which may carry "@VERSION"
 */
const char *sc_names_get(struct sc_names *n, const char *raw, bool versioned)
{
	size_t len;
	struct name_ent *e;
	struct hnode *h;
	__u64 hash;

	if (!raw || !n)
		return raw;
	len = strlen(raw);
	hash = hash_bytes(raw, len, versioned);
	htab_for_each_possible(&n->tab, h, hash) {
		e = container_of(h, struct name_ent, node);
		if (e->versioned == versioned && !strcmp(e->raw, raw))
			return e->shown;
	}
	e = malloc(sizeof(*e) + 2 * (len + 1));
	if (!e)
		return raw;
	memcpy(e->raw, raw, len + 1);
	memcpy(e->raw + len + 1, raw, len + 1);
	e->versioned = versioned;
	e->shown = display(n, e->raw + len + 1, versioned);
	e->owned = e->shown != e->raw + len + 1;
	if (htab_add(&n->tab, &e->node, hash)) {
		if (e->owned)
			free(e->shown);
		free(e);
		return raw;
	}
	e->all_next = n->all;
	n->all = e;
	return e->shown;
}
