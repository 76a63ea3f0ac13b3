// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): kernel symbols, from /proc/kallsyms (modules included) or
 * from the symbols a record file carries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

#define KSYM_MAX_SIZE	(1U << 20)	/* a gap larger than this is not one symbol */
#define KSYM_MAX_LAST	(1U << 16)	/* the last symbol of a module */

struct ksyms {
	struct ksym *syms;
	size_t n, cap;
	bool sorted;
	char **strs;		/* interned names, owned */
	size_t nstrs, capstrs;
	char **texts;		/* whole kallsyms texts, names point into them */
	size_t ntexts;
};

struct ksyms *ksyms_new(void)
{
	return calloc(1, sizeof(struct ksyms));
}

void ksyms_free(struct ksyms *ks)
{
	size_t i;

	if (!ks)
		return;
	for (i = 0; i < ks->nstrs; i++)
		free(ks->strs[i]);
	free(ks->strs);
	for (i = 0; i < ks->ntexts; i++)
		free(ks->texts[i]);
	free(ks->texts);
	free(ks->syms);
	free(ks);
}

size_t ksyms_count(const struct ksyms *ks)
{
	return ks ? ks->n : 0;
}

static const char *intern(struct ksyms *ks, const char *s)
{
	char **strs;

	/* module names repeat: reuse the previous one */
	if (ks->nstrs && !strcmp(ks->strs[ks->nstrs - 1], s))
		return ks->strs[ks->nstrs - 1];
	if (ks->nstrs == ks->capstrs) {
		size_t cap = ks->capstrs ? 2 * ks->capstrs : 1024;

		strs = realloc(ks->strs, cap * sizeof(*strs));
		if (!strs)
			return NULL;
		ks->strs = strs;
		ks->capstrs = cap;
	}
	ks->strs[ks->nstrs] = strdup(s);
	return ks->strs[ks->nstrs] ? ks->strs[ks->nstrs++] : NULL;
}

/* Room for one more symbol. */
static struct ksym *ksym_slot(struct ksyms *ks)
{
	struct ksym *k;

	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 4096;

		k = realloc(ks->syms, cap * sizeof(*k));
		if (!k)
			return NULL;
		ks->syms = k;
		ks->cap = cap;
	}
	return &ks->syms[ks->n];
}

int ksyms_add(struct ksyms *ks, __u64 addr, __u32 size, const char *name,
	      const char *mod)
{
	struct ksym *k = ksym_slot(ks);

	if (!k)
		return -ENOMEM;
	k->addr = addr;
	k->size = size;
	k->name = intern(ks, name);
	k->mod = mod && *mod ? intern(ks, mod) : NULL;
	if (!k->name)
		return -ENOMEM;
	ks->n++;
	ks->sorted = false;
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool same_module(const struct ksym *a, const struct ksym *b)
{
	return a->mod == b->mod || (a->mod && b->mod && !strcmp(a->mod, b->mod));
}

/*
 * A name that marks where a section begins or ends (__softirqentry_text_end,
 * __start_..., _etext), not a function.
 */
static bool section_marker(const char *name)
{
	return name[0] == '_' &&
	       (str_ends_with(name, "_start") || str_ends_with(name, "_end") ||
		!strncmp(name, "__start_", 8) || !strncmp(name, "__stop_", 7) ||
		!strcmp(name, "_stext") || !strcmp(name, "_etext") ||
		!strcmp(name, "_sinittext") || !strcmp(name, "_einittext"));
}

/*
 * Symbols at one address (kallsyms lists the retpoline thunk
 * __x86_indirect_thunk_rax after __x86_indirect_thunk_array and, on 6.12,
 * before __softirqentry_text_end, the end of the section before it): the
 * last that is not a section's marker is put last, where ksyms_find()
 * looks, with the size of the run's last.
 */
static void prefer_function_names(struct ksym *syms, size_t n)
{
	size_t first = 0, last, best;
	struct ksym k;

	for (last = 0; last < n; last++) {
		if (last + 1 < n && syms[last + 1].addr == syms[last].addr)
			continue;
		for (best = last; best > first && section_marker(syms[best].name); best--)
			;
		if (best != last && !section_marker(syms[best].name)) {
			k = syms[best];
			syms[best] = syms[last];
			syms[last] = k;
			if (!syms[last].size)
				syms[last].size = syms[best].size;
		}
		first = last + 1;
	}
}

/*
 * Sort (unless already in order: /proc/kallsyms lists the kernel's text in
 * address order, and each module's); a symbol without a size extends to the
 * next one (at most KSYM_MAX_SIZE), the last of a module (or of the kernel)
 * at most KSYM_MAX_LAST: what follows it may be another module's text, one
 * loaded after the symbols were read.
 */
static void ksyms_sort(struct ksyms *ks)
{
	__u64 gap, max;
	size_t i;

	for (i = 1; i < ks->n && ks->syms[i - 1].addr <= ks->syms[i].addr; i++)
		;
	if (i < ks->n)
		qsort(ks->syms, ks->n, sizeof(*ks->syms), ksym_cmp);
	for (i = 0; i < ks->n; i++) {
		if (ks->syms[i].size)
			continue;
		gap = i + 1 < ks->n ? ks->syms[i + 1].addr - ks->syms[i].addr : 4096;
		max = i + 1 < ks->n && same_module(&ks->syms[i], &ks->syms[i + 1]) ?
		      KSYM_MAX_SIZE : KSYM_MAX_LAST;
		ks->syms[i].size = gap > max ? max : (__u32)gap;
	}
	prefer_function_names(ks->syms, ks->n);
	ks->sorted = true;
}

/* The whole of @path (a /proc file: its size is not known), NUL-terminated. */
static char *read_whole(const char *path, size_t *len, int *err)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = NULL, *p;
	ssize_t got = 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*err = fd < 0 ? -errno : 0;
	while (!*err && got) {
		if (!buf || cap - n < 65536) {
			cap = buf ? 2 * cap : cap;
			p = realloc(buf, cap);
			if (!p) {
				*err = -ENOMEM;
				break;
			}
			buf = p;
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno != EINTR)
			*err = -errno;
		else if (got > 0)
			n += got;
	}
	if (fd >= 0)
		close(fd);
	if (*err) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* Keep @text: the symbols' names point into it. */
static int keep_text(struct ksyms *ks, char *text)
{
	char **t = realloc(ks->texts, (ks->ntexts + 1) * sizeof(*t));

	if (!t)
		return -ENOMEM;
	ks->texts = t;
	t[ks->ntexts++] = text;
	return 0;
}

/*
 * A kernel linked by clang's ThinLTO renames static functions it imports
 * into other units: "pipe_write.llvm.3174482935419761955".  The function's
 * own name is kept (reports, the why hints and filters name functions as
 * the sources do; the digits change with every build).
 */
static void drop_lto_suffix(char *name)
{
	char *p = strstr(name, ".llvm.");

	if (p && p[6] && strspn(p + 6, "0123456789") == strlen(p + 6))
		*p = 0;
}

/*
 * One line of kallsyms, "ADDR TYPE NAME[\t[MODULE]]", cut in place into
 * NUL-terminated name (without a ThinLTO suffix) and module.  Returns the
 * next line.
 */
static char *parse_line(char *line, __u64 *addr, char *type, char **name, char **mod)
{
	char *end = strchr(line, '\n'), *p;

	if (end)
		*end++ = 0;
	else
		end = line + strlen(line);
	*type = 0;
	*mod = NULL;
	*addr = strtoull(line, &p, 16);
	if (p == line || *p != ' ' || !p[1] || p[2] != ' ')
		return end;
	*type = p[1];
	*name = p + 3;
	p = strchr(*name, '\t');
	if (p) {
		*p++ = 0;
		if (*p == '[') {
			*mod = p + 1;
			p = strchr(*mod, ']');
			if (p)
				*p = 0;
		}
	}
	drop_lto_suffix(*name);
	return end;
}

/*
 * Text symbols only.  Returns -EPERM if every address reads as zero
 * (kptr_restrict: the reader lacks the privilege to see them).  Read in one
 * piece and cut in place, no allocation per symbol: a guest under TCG spent
 * seconds of a busy CPU here with sscanf and one string per symbol.
 */
int ksyms_load(struct ksyms *ks, const char *path)
{
	char *text, *line, *name = NULL, *mod, type;
	size_t before = ks->n, len;
	bool nonzero = false;
	struct ksym *k;
	__u64 addr;
	int ret;

	text = read_whole(path, &len, &ret);
	if (!text)
		return ret;
	ret = keep_text(ks, text);
	if (ret) {
		free(text);
		return ret;
	}
	for (line = text; !ret && line < text + len && *line; ) {
		line = parse_line(line, &addr, &type, &name, &mod);
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!addr)
			continue;
		nonzero = true;
		k = ksym_slot(ks);
		if (!k) {
			ret = -ENOMEM;
			break;
		}
		*k = (struct ksym){ .addr = addr, .name = name, .mod = mod };
		ks->n++;
		ks->sorted = false;
	}
	if (!ret && !nonzero && ks->n == before)
		ret = -EPERM;
	if (!ret)
		ksyms_sort(ks);
	return ret;
}

/*
 * Interrupt and exception entries (x86-64 since 5.8): the frame an unwind
 * finds under one is the register frame's ip, the instruction interrupted.
 */
static bool interrupt_entry(const char *name)
{
	static const char *const prefix[] = {
		"asm_sysvec_", "asm_exc_", "asm_common_interrupt",
		"asm_spurious_interrupt", "asm_fred_entrypoint_kernel",
	};
	size_t i;

	for (i = 0; name && i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

/*
 * Is frame @i of a kernel stack, whose frame @i - 1 is in @inner (NULL when
 * unknown), a return address, to be looked up one byte back (inside its
 * call, which may be a function's last instruction)?  Every frame but the
 * first is, except the one under an interrupt's or exception's entry: that
 * is the instruction the interrupt found, looked up exactly (7.3: a softirq
 * over a retpoline thunk's first instruction, looked up one byte back, was
 * named after the section ending before it).
 */
bool ksym_frame_is_return(unsigned int i, const struct ksym *inner)
{
	return i > 0 && !(inner && interrupt_entry(inner->name));
}

const struct ksym *ksyms_find(struct ksyms *ks, __u64 addr)
{
	size_t lo = 0, hi, mid;
	const struct ksym *k;

	if (!ks || !ks->n)
		return NULL;
	if (!ks->sorted)
		ksyms_sort(ks);
	hi = ks->n;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (ks->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	k = &ks->syms[lo];
	if (addr < k->addr || addr - k->addr >= k->size)
		return NULL;
	return k;
}
