// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): symbols of JIT-compiled and interpreted code from
 * /tmp/perf-PID.map, the convention perf and bcc read (written by
 * `node --perf-basic-prof`, JVM agents, LuaJIT and others): one line per
 * symbol, "START SIZE NAME" with START and SIZE in hex.  The files are read
 * when a report resolves a frame that no ELF file covers, on the machine
 * where the report runs (they stay in /tmp after the process exits).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

struct perfmap_sym {
	__u64 start, size;
	char *name;
};

struct perfmap {
	__u32 pid;
	struct perfmap_sym *syms;	/* sorted by start */
	size_t n;
};

static struct perfmap *perfmaps;
static size_t nperfmaps;
static const char *perfmap_dir = "/tmp";

static int sym_cmp(const void *a, const void *b)
{
	const struct perfmap_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/**
 * perfmap_parse() - read a perf map file into @pm
 * @path: the file
 * @pm: filled (syms sorted by start); left empty if the file is missing
 *
 * Return: 0 or -errno.  Malformed lines are skipped.
 */
static int perfmap_parse(const char *path, struct perfmap *pm)
{
	char *line = NULL, *end, *name;
	struct perfmap_sym *s;
	unsigned long long start, size;
	size_t cap = 0, len = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (getline(&line, &len, f) > 0) {
		errno = 0;
		start = strtoull(line, &end, 16);
		if (errno || end == line || *end != ' ')
			continue;
		size = strtoull(end + 1, &name, 16);
		if (errno || name == end + 1 || *name != ' ' || !size)
			continue;
		name++;
		name[strcspn(name, "\n")] = '\0';
		if (pm->n == cap) {
			cap = cap ? 2 * cap : 256;
			s = realloc(pm->syms, cap * sizeof(*s));
			if (!s)
				break;
			pm->syms = s;
		}
		s = &pm->syms[pm->n];
		s->name = strdup(name);
		if (!s->name)
			break;
		s->start = start;
		s->size = size;
		pm->n++;
	}
	free(line);
	fclose(f);
	qsort(pm->syms, pm->n, sizeof(*pm->syms), sym_cmp);
	return 0;
}

static struct perfmap *perfmap_get(__u32 pid)
{
	char path[256];
	struct perfmap *pm;
	size_t i;

	for (i = 0; i < nperfmaps; i++)
		if (perfmaps[i].pid == pid)
			return &perfmaps[i];
	pm = realloc(perfmaps, (nperfmaps + 1) * sizeof(*pm));
	if (!pm)
		return NULL;
	perfmaps = pm;
	pm = &perfmaps[nperfmaps++];
	memset(pm, 0, sizeof(*pm));
	pm->pid = pid;
	snprintf(path, sizeof(path), "%s/perf-%u.map", perfmap_dir, pid);
	perfmap_parse(path, pm);
	return pm;
}

/**
 * perfmap_lookup() - the JIT symbol of @addr in process @pid, or NULL
 * @pid: the process
 * @addr: the address
 * @off: set to @addr's offset in the symbol
 *
 * Later entries win over earlier overlapping ones (code is re-JITted at
 * reused addresses; the map only grows).
 */
const char *perfmap_lookup(__u32 pid, __u64 addr, __u64 *off)
{
	const struct perfmap *pm = perfmap_get(pid);
	size_t lo = 0, hi;

	if (!pm || !pm->n)
		return NULL;
	hi = pm->n;
	while (lo < hi) {	/* first symbol starting after addr */
		size_t mid = lo + (hi - lo) / 2;

		if (pm->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct perfmap_sym *s = &pm->syms[lo];

		if (addr - s->start < s->size) {
			*off = addr - s->start;
			return s->name;
		}
		if (addr - s->start > (1ULL << 24))
			break;	/* far below: no symbol covers addr */
	}
	return NULL;
}

/** perfmap_set_dir() - read perf-PID.map files from @dir (tests). */
void perfmap_set_dir(const char *dir)
{
	perfmap_dir = dir;
}

/** perfmap_free_all() - forget every map read. */
void perfmap_free_all(void)
{
	size_t i, j;

	for (i = 0; i < nperfmaps; i++) {
		for (j = 0; j < perfmaps[i].n; j++)
			free(perfmaps[i].syms[j].name);
		free(perfmaps[i].syms);
	}
	free(perfmaps);
	perfmaps = NULL;
	nperfmaps = 0;
}
