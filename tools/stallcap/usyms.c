// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): user symbols through elfutils' libdwfl.
 *
 * Each process is described by its maps snapshots; its Dwfl is built on first
 * use by reporting every executable file mapping with dwfl_report_elf() at the
 * load bias the mapping implies.  A file whose build-id differs from the one
 * recorded is replaced by /usr/lib/debug/.build-id/xx/yyyy.debug when that
 * exists, else left out (its frames stay unresolved rather than wrong).
 *
 * With --symfs DIR, as perf's, a file is looked for as DIR/path first, and
 * debug files under DIR/usr/lib/debug first: elfutils' standard
 * find_debuginfo, with that directory in its debuginfo_path, finds them by
 * build-id (.build-id/xx/yyyy.debug) and by .gnu_debuglink (DIR/usr/lib/
 * debug/usr/bin/x.debug: it tries the file's directory without the leading
 * DIR components too).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tool.h"
#include "usyms.h"

/* Snapshots kept per process: a lookup costs log(maps) per snapshot. */
#define UPROC_MAX_SNAPSHOTS	64

struct uproc {
	struct hnode node;		/* in usyms.procs_by_pid */
	__u32 pid;
	unsigned int nr_snaps;
	struct sc_proc *proc;		/* newest snapshot, older ones chained */
	struct unwind_state uw;
	bool dirty;			/* snapshot added since uw.dwfl was built */
	struct addrinfo_cache *ac;	/* addresses looked up in uw.dwfl */
	struct uproc *next;
};

struct usyms {
	struct uproc *procs;
	struct htab by_pid;
	struct sc_names *names;		/* display names */
	void *vdso;
	size_t vdso_len;
	char *debuginfo_path;		/* NULL: elfutils' default */
	char *symfs;			/* --symfs, or NULL */
	bool no_inline;
	Dwfl_Callbacks cb;
};

struct usyms *usyms_new(void)
{
	struct usyms *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->cb.find_elf = dwfl_build_id_find_elf;
	u->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	u->cb.debuginfo_path = &u->debuginfo_path;
	u->names = sc_names_new();
	if (!u->names) {
		free(u);
		return NULL;
	}
	htab_init(&u->by_pid);
	return u;
}

static void mark_dirty(struct usyms *u)
{
	struct uproc *p;

	for (p = u->procs; p; p = p->next)
		p->dirty = true;
}

/* C++ names demangled (default) or shown as the ELF file has them */
void usyms_set_demangle(struct usyms *u, bool on)
{
	sc_names_set_demangle(u->names, on);
}

/* functions inlined at an address shown as frames of their own (default) */
void usyms_set_inline(struct usyms *u, bool on)
{
	u->no_inline = !on;
}

/**
 * usyms_set_symfs() - look for files under @dir first (as perf --symfs):
 * DIR/path for a mapped file, DIR/usr/lib/debug for debug files.  0 or -ENOMEM.
 */
int usyms_set_symfs(struct usyms *u, const char *dir)
{
	char *s = strdup(dir), *path = NULL;

	if (!s || asprintf(&path, ":.debug:%s/usr/lib/debug:/usr/lib/debug", dir) < 0) {
		free(s);
		return -ENOMEM;
	}
	free(u->symfs);
	free(u->debuginfo_path);
	u->symfs = s;
	u->debuginfo_path = path;
	mark_dirty(u);
	return 0;
}

static void uproc_free(struct uproc *p)
{
	if (p->uw.dwfl)
		dwfl_end(p->uw.dwfl);
	addrinfo_free(p->ac);
	sc_proc_free(p->proc);
	free(p);
}

void usyms_free(struct usyms *u)
{
	struct uproc *p, *n;

	if (!u)
		return;
	for (p = u->procs; p; p = n) {
		n = p->next;
		uproc_free(p);
	}
	sc_names_free(u->names);
	free(u->symfs);
	free(u->debuginfo_path);
	free(u->vdso);
	htab_free(&u->by_pid);
	free(u);
}

void usyms_set_vdso(struct usyms *u, const void *img, size_t len)
{
	mark_dirty(u);
	free(u->vdso);
	u->vdso = len ? malloc(len) : NULL;
	if (u->vdso)
		memcpy(u->vdso, img, len);
	u->vdso_len = u->vdso ? len : 0;
}

static struct uproc *uproc_find(struct usyms *u, __u32 pid)
{
	struct hnode *n;

	htab_for_each_possible(&u->by_pid, n, hash_u64(pid))
		if (container_of(n, struct uproc, node)->pid == pid)
			return container_of(n, struct uproc, node);
	return NULL;
}

/* Keep the newest UPROC_MAX_SNAPSHOTS snapshots of a process. */
static void trim_snapshots(struct uproc *p)
{
	struct sc_proc *s = p->proc;
	unsigned int i;

	if (p->nr_snaps <= UPROC_MAX_SNAPSHOTS)
		return;
	for (i = 1; i < UPROC_MAX_SNAPSHOTS; i++)
		s = s->older;
	sc_proc_free(s->older);
	s->older = NULL;
	p->nr_snaps = UPROC_MAX_SNAPSHOTS;
}

int usyms_add_proc(struct usyms *u, const struct sc_proc *snap)
{
	struct uproc *p = uproc_find(u, snap->pid);
	struct sc_proc *c = sc_proc_dup(snap);

	if (!c)
		return -ENOMEM;
	sc_proc_normalize(c);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || htab_add(&u->by_pid, &p->node, hash_u64(snap->pid))) {
			free(p);
			sc_proc_free(c);
			return -ENOMEM;
		}
		p->pid = snap->pid;
		p->next = u->procs;
		u->procs = p;
	}
	c->older = p->proc;
	p->proc = c;
	p->nr_snaps++;
	trim_snapshots(p);
	p->dirty = true;
	return 0;
}

void usyms_forget_proc(struct usyms *u, __u32 pid)
{
	struct uproc *p = uproc_find(u, pid), **pp;

	if (!p)
		return;
	htab_del(&u->by_pid, &p->node);
	for (pp = &u->procs; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	uproc_free(p);
}

const struct sc_proc *usyms_proc(struct usyms *u, __u32 pid)
{
	struct uproc *p = uproc_find(u, pid);

	return p ? p->proc : NULL;
}

/*
 * Load bias of an ELF file mapped at m: where its PT_LOAD at m->pgoff, of
 * m's kind (executable or not), landed.  Two segments may start in one
 * file page: lld puts the read-only one and the code in the first page
 * when the read-only part is under a page, mapped twice at pgoff 0.
 */
static int elf_bias(int fd, const struct sc_map *m, GElf_Addr *bias)
{
	GElf_Addr page = (GElf_Addr)sysconf(_SC_PAGESIZE);
	GElf_Phdr ph;
	GElf_Ehdr eh;
	size_t i, n;
	Elf *elf;
	int ret = -ENOEXEC;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n))
		goto out;
	*bias = 0;
	ret = 0;
	if (eh.e_type == ET_EXEC)
		goto out;
	*bias = m->start - m->pgoff;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) != !(m->prot & SC_PROT_X))
			continue;
		if ((ph.p_offset & ~(page - 1)) == m->pgoff) {
			*bias = m->start - (ph.p_vaddr & ~(page - 1));
			break;
		}
	}
out:
	elf_end(elf);
	return ret;
}

/* whether @path is the file @m mapped (same build-id, or none recorded) */
static bool same_file(const char *path, const struct sc_map *m)
{
	__u8 id[SC_BUILD_ID_MAX];
	__u32 len = 0;

	if (!m->build_id_len)
		return !access(path, R_OK);
	return !elf_file_build_id(path, id, &len) && len == m->build_id_len &&
	       !memcmp(id, m->build_id, len);
}

/* @root/usr/lib/debug/.build-id/xx/yyyy.debug of @m's build-id */
static int open_build_id(const char *root, const struct sc_map *m, char *used, size_t usedlen)
{
	__u32 i;
	int n;

	if (!m->build_id_len)
		return -1;
	n = snprintf(used, usedlen, "%s/usr/lib/debug/.build-id/%02x/", root, m->build_id[0]);
	for (i = 1; i < m->build_id_len && n > 0 && n + 3 < (int)usedlen; i++)
		n += snprintf(used + n, usedlen - n, "%02x", m->build_id[i]);
	if (n <= 0 || n + 7 > (int)usedlen)
		return -1;
	snprintf(used + n, usedlen - n, ".debug");
	return open_regular(used);
}

/*
 * The file @m mapped: under --symfs, then at its path, then (a build-id
 * recorded) the copy kept when it had been deleted while mapped
 * (kept_elf.c), then the debug file of that build-id; its path in @used.
 */
static int open_matching(struct usyms *u, const struct sc_map *m, char *used, size_t usedlen)
{
	bool deleted = kept_elf_deleted(m->path);
	int fd;

	if (u->symfs) {
		snprintf(used, usedlen, "%s%s", u->symfs, m->path);
		if (same_file(used, m))
			return open_regular(used);
	}
	snprintf(used, usedlen, "%s", m->path);
	if (!deleted && (same_file(used, m) || !m->build_id_len))
		return open_regular(used);
	if (!kept_elf_path(m, used, usedlen) && same_file(used, m))
		return open_regular(used);
	fd = u->symfs ? open_build_id(u->symfs, m, used, usedlen) : -1;
	if (fd < 0)
		fd = open_build_id("", m, used, usedlen);
	if (fd >= 0)
		return fd;
	if (deleted)
		warnx_("%s: no copy kept (see STALLCAP_KEEP_DIR in stallcap(1)), frames left unresolved",
		       m->path);
	else
		warnx_("%s: build-id differs from the recorded one, frames left unresolved",
		       m->path);
	errno = ESTALE;
	return fd;
}

static int vdso_fd(struct usyms *u)
{
	int fd;

	if (!u->vdso)
		return -1;
	fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, u->vdso, u->vdso_len) != (ssize_t)u->vdso_len) {
		close(fd);
		return -1;
	}
	return fd;
}

static void report_map(struct usyms *u, Dwfl *d, const struct sc_map *m)
{
	char used[4200];
	GElf_Addr bias;
	int fd;

	if (!strcmp(m->path, "[vdso]")) {
		fd = vdso_fd(u);
		snprintf(used, sizeof(used), "[vdso]");
	} else if (m->path[0] == '/') {
		fd = open_matching(u, m, used, sizeof(used));
	} else {
		return;
	}
	if (fd < 0)
		return;
	if (elf_bias(fd, m, &bias) ||
	    !dwfl_report_elf(d, m->path, used, fd, bias, true))
		close(fd);
}

/*
 * The mappings reported to a Dwfl: their paths in a hash table, their
 * ranges (disjoint: a range overlapping one reported is never reported) in a
 * search tree ordered by address, where "overlaps" compares equal.
 */
struct path_ent {
	struct hnode node;
	const char *path;
};

struct reported {
	struct htab paths;
	void *ranges;		/* tsearch() tree of const struct sc_map * */
	struct path_ent *ents;
	size_t n, cap;
};

static int range_cmp(const void *a, const void *b)
{
	const struct sc_map *x = a, *y = b;

	if (x->end <= y->start)
		return -1;
	return y->end <= x->start ? 1 : 0;
}

/* A file reported already, or a range a newer snapshot's mapping covers. */
static bool seen(const struct reported *rep, const struct sc_map *m)
{
	__u64 h = hash_bytes(m->path, strlen(m->path), 0);
	struct hnode *n;

	htab_for_each_possible(&rep->paths, n, h)
		if (!strcmp(container_of(n, struct path_ent, node)->path, m->path))
			return true;
	return tfind(m, &rep->ranges, range_cmp) != NULL;
}

static int mark_reported(struct reported *rep, const struct sc_map *m)
{
	struct path_ent *e;

	if (rep->n == rep->cap)
		return -ENOMEM;	/* sized for every map up front */
	if (!tsearch(m, &rep->ranges, range_cmp))
		return -ENOMEM;
	e = &rep->ents[rep->n++];
	e->path = m->path;
	return htab_add(&rep->paths, &e->node, hash_bytes(m->path, strlen(m->path), 0));
}

static void tree_nop(void *p)
{
}

static Dwfl *build_dwfl(struct usyms *u, struct uproc *up)
{
	struct reported rep = { .ranges = NULL };
	const struct sc_proc *p;
	unsigned int i;
	Dwfl *d = dwfl_begin(&u->cb);

	if (!d)
		return NULL;
	htab_init(&rep.paths);
	for (p = up->proc; p; p = p->older)
		rep.cap += p->nr_maps;
	rep.ents = rep.cap ? calloc(rep.cap, sizeof(*rep.ents)) : NULL;
	dwfl_report_begin(d);
	for (p = up->proc; p && rep.ents; p = p->older) {
		for (i = 0; i < p->nr_maps; i++) {
			const struct sc_map *m = &p->maps[i];

			/* an empty or inverted range holds no address */
			if (!(m->prot & SC_PROT_X) || m->start >= m->end || seen(&rep, m))
				continue;
			if (mark_reported(&rep, m))
				break;
			report_map(u, d, m);
		}
	}
	tdestroy(rep.ranges, tree_nop);
	htab_free(&rep.paths);
	free(rep.ents);
	dwfl_report_end(d, NULL, NULL);
	return d;
}

struct unwind_state *usyms_unwind_state(struct usyms *u, __u32 pid)
{
	struct uproc *p = uproc_find(u, pid);

	if (!p)
		return NULL;
	if (p->dirty || !p->uw.dwfl) {
		addrinfo_clear(p->ac);	/* it points into the old Dwfl */
		if (p->uw.dwfl)
			dwfl_end(p->uw.dwfl);
		p->uw.dwfl = build_dwfl(u, p);
		p->uw.attached = false;
		p->dirty = false;
	}
	return p->uw.dwfl ? &p->uw : NULL;
}

static void usyms_resolve_elf(struct usyms *u, __u32 pid, struct sc_frame *f);

/*
 * A frame's symbol from the ELF files mapped at capture, else, for code no
 * file covers (JIT, interpreters), from the process's /tmp/perf-PID.map.
 */
void usyms_resolve(struct usyms *u, __u32 pid, struct sc_frame *f)
{
	__u64 a = f->is_return && f->addr ? f->addr - 1 : f->addr, off;
	const char *name;

	usyms_resolve_elf(u, pid, f);
	if (f->sym || (f->dso && f->dso[0] == '/'))
		return;
	/*
	 * A return address at a JIT function's first byte was pushed, not
	 * left by a call before it: BEAM starts each process's stack with
	 * the address of erts_beamasm:normal_exit/0 (the byte before it is
	 * the function's header, a call there never returns).
	 */
	name = f->is_return ? perfmap_lookup(pid, f->addr, &off) : NULL;
	if (name && !off)
		a = f->addr;
	else
		name = perfmap_lookup(pid, a, &off);
	if (name) {
		f->sym = sc_names_get(u->names, name, false);
		f->off = f->addr - (a - off);
		if (!f->dso)
			f->dso = "[perf-map]";
	}
}

/* what the address of @f is, looked up in its process's Dwfl, or NULL */
static const struct sc_addrinfo *addr_info(struct usyms *u, __u32 pid, const struct sc_frame *f)
{
	struct unwind_state *uw = usyms_unwind_state(u, pid);
	__u64 a = f->is_return && f->addr ? f->addr - 1 : f->addr;
	struct uproc *p;

	if (!uw)
		return NULL;
	p = container_of(uw, struct uproc, uw);
	if (!p->ac)
		p->ac = addrinfo_new();
	return p->ac ? addrinfo_get(p->ac, uw->dwfl, a, u->names, !u->no_inline) : NULL;
}

static void usyms_resolve_elf(struct usyms *u, __u32 pid, struct sc_frame *f)
{
	const struct sc_addrinfo *ai;
	const struct sc_map *m;

	m = sc_proc_find(usyms_proc(u, pid), f->addr);
	f->dso = m && m->path[0] ? m->path : NULL;
	if (m)
		f->dso_off = f->addr - m->start + m->pgoff;
	ai = addr_info(u, pid, f);
	if (!ai)
		return;
	if (ai->sym) {
		f->sym = ai->sym;
		f->off = f->addr - ai->sym_start;
	} else {
		f->unnamed = f->dso && f->dso[0] == '/';
	}
	f->file = ai->file;
	f->line = ai->line;
}

/**
 * usyms_inlines() - the functions inlined at @f's address (resolved by
 * usyms_resolve()), innermost first, into @out (at most @max, the innermost
 * kept).  Returns how many.
 */
int usyms_inlines(struct usyms *u, __u32 pid, struct sc_frame *f, struct sc_frame *out,
		  int max)
{
	const struct sc_addrinfo *ai;
	int i;

	if (u->no_inline || max <= 0 || !f->sym || !f->dso || f->dso[0] != '/')
		return 0;
	ai = addr_info(u, pid, f);
	if (!ai || ai->sym != f->sym)
		return 0;
	for (i = 0; i < ai->ninl && i < max; i++) {
		out[i] = *f;
		out[i].inlined = true;
		out[i].sym = ai->inl[i].sym;
		out[i].off = 0;
		out[i].file = ai->inl[i].file;
		out[i].line = ai->inl[i].line;
	}
	return i;
}
