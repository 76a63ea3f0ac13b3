/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): user-space symbols and unwinding: display names (names.c),
 * what an address is (addrinfo.c, inline.c), the processes' files and their
 * symbols (usyms.c) and the DWARF or frame-pointer walk of a sample's user
 * stack copy (unwind.c).
 */
#ifndef STALLCAP_USYMS_H
#define STALLCAP_USYMS_H

#include "tool.h"

/* ---- display names: unversioned, demangled (names.c) ---- */

struct sc_names;
struct sc_names *sc_names_new(void);
void sc_names_free(struct sc_names *n);
void sc_names_set_demangle(struct sc_names *n, bool on);
const char *sc_names_get(struct sc_names *n, const char *raw, bool versioned);

/* ---- what a user address is, cached (addrinfo.c) ---- */

/**
 * struct sc_addrinfo - a user address looked up
 * @sym: its ELF symbol (display name), or NULL; @sym_start: where it starts
 * @file, @line: the address's source line, in the function @sym (the
 *	outermost call site when code is inlined there), or NULL
 * @inl: the functions inlined at the address, innermost first, each at its
 *	source line (the innermost at the address's own line)
 */
struct sc_addrinfo {
	__u64 addr;
	const char *sym;
	__u64 sym_start;
	const char *file;
	int line;
	int ninl;
	struct {
		const char *sym, *file;
		int line;
	} inl[];
};

struct addrinfo_cache;
struct Dwfl;
struct addrinfo_cache *addrinfo_new(void);
void addrinfo_clear(struct addrinfo_cache *c);
void addrinfo_free(struct addrinfo_cache *c);
const struct sc_addrinfo *addrinfo_get(struct addrinfo_cache *c, struct Dwfl *d, __u64 a,
				       struct sc_names *names, bool inlines);

/* ---- inline frames (inline.c) ---- */

struct Dwfl_Module;
int dw_inline_frames(struct Dwfl_Module *mod, __u64 a, struct sc_names *names,
		     struct sc_frame *f, struct sc_frame *out, int max);

/* ---- user symbols and unwinding (usyms.c, unwind.c) ---- */

struct usyms;
struct usyms *usyms_new(void);
void usyms_free(struct usyms *u);
int usyms_add_proc(struct usyms *u, const struct sc_proc *p);
void usyms_set_vdso(struct usyms *u, const void *img, size_t len);
void usyms_resolve(struct usyms *u, __u32 pid, struct sc_frame *f);
int usyms_inlines(struct usyms *u, __u32 pid, struct sc_frame *f, struct sc_frame *out,
		  int max);
void usyms_set_demangle(struct usyms *u, bool on);
void usyms_set_inline(struct usyms *u, bool on);
int usyms_set_symfs(struct usyms *u, const char *dir);
const struct sc_proc *usyms_proc(struct usyms *u, __u32 pid);
/** usyms_forget_proc() - free all that is kept of process @pid (it exited). */
void usyms_forget_proc(struct usyms *u, __u32 pid);
struct sc_proc *sc_proc_dup(const struct sc_proc *p);

/** struct unwind_state - per-process state of the DWARF unwinder (unwind.c) */
struct unwind_state {
	struct Dwfl *dwfl;
	const struct stallcap_sample_view *cur;	/* the sample being unwound */
	const struct sc_copies *cur_copies;	/* and its other copies */
	bool attached;
	bool read_failed;	/* a read the copies could not serve, the last: */
	__u64 fail_addr;	/* the address it wanted */
	bool fail_past;		/* past the copy's end, within what a copy holds */
	__u64 entry_ret;	/* the walk starts at this caller (jit_entry_return()) */
};

/** usyms_unwind_state() - the process's unwinder state, NULL if no maps. */
struct unwind_state *usyms_unwind_state(struct usyms *u, __u32 pid);

#define UNWIND_NO_DWARF	(1U << 0)

__u32 sc_copies_bytes(const struct sc_copies *x);
int unwind_dwarf(struct usyms *u, const struct stallcap_sample_view *v,
		 const struct sc_copies *x, __u64 *pcs, bool *is_return, int max,
		 struct unwind_stop *stop);
int unwind_user(struct usyms *u, const struct stallcap_sample_view *v,
		const struct sc_copies *x, unsigned int flags, struct sc_frame *out,
		int max, struct unwind_stop *stop);

#endif /* STALLCAP_USYMS_H */
