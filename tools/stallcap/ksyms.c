// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): kernel symbols, from /proc/kallsyms (modules included) or
 * from the symbols a record file carries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

#define KSYM_MAX_SIZE	(1U << 20)	/* a gap larger than this is not one symbol */

struct ksyms {
	struct ksym *syms;
	size_t n, cap;
	bool sorted;
	char **strs;		/* interned names, owned */
	size_t nstrs, capstrs;
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

int ksyms_add(struct ksyms *ks, __u64 addr, __u32 size, const char *name,
	      const char *mod)
{
	struct ksym *k;

	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 4096;

		k = realloc(ks->syms, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		ks->syms = k;
		ks->cap = cap;
	}
	k = &ks->syms[ks->n];
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

/* Sort; a symbol without a size extends to the next one (at most KSYM_MAX_SIZE). */
static void ksyms_sort(struct ksyms *ks)
{
	size_t i;
	__u64 gap;

	qsort(ks->syms, ks->n, sizeof(*ks->syms), ksym_cmp);
	for (i = 0; i < ks->n; i++) {
		if (ks->syms[i].size)
			continue;
		gap = i + 1 < ks->n ? ks->syms[i + 1].addr - ks->syms[i].addr : 4096;
		ks->syms[i].size = gap > KSYM_MAX_SIZE ? KSYM_MAX_SIZE : (__u32)gap;
	}
	ks->sorted = true;
}

/*
 * Text symbols only.  Returns -EPERM if every address reads as zero
 * (kptr_restrict: the reader lacks the privilege to see them).
 */
int ksyms_load(struct ksyms *ks, const char *path)
{
	char line[512], name[256], mod[128], type;
	unsigned long long addr;
	size_t before = ks->n;
	bool nonzero = false;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		mod[0] = 0;
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod) < 3)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!addr)
			continue;
		nonzero = true;
		ret = ksyms_add(ks, addr, 0, name, mod);
		if (ret)
			break;
	}
	fclose(f);
	if (!ret && !nonzero && ks->n == before)
		ret = -EPERM;
	if (!ret)
		ksyms_sort(ks);
	return ret;
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
