// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): snapshots of /proc/PID/maps with the build-ids of the mapped
 * ELF files, taken while the process lives so that a report can resolve its
 * frames after it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* Build-ids by (device, inode): a library mapped by many processes is read once. */
struct bid_entry {
	unsigned long dev, ino;
	__u32 len;
	__u8 id[SC_BUILD_ID_MAX];
};

struct buildid_cache {
	struct bid_entry *e;
	size_t n, cap;
	bool keep_deleted;	/* copy files deleted while mapped (kept_elf.c) */
};

/** buildid_cache_keep_deleted() - snapshots with @bc keep deleted files */
void buildid_cache_keep_deleted(struct buildid_cache *bc)
{
	bc->keep_deleted = true;
}

struct buildid_cache *buildid_cache_new(void)
{
	return calloc(1, sizeof(struct buildid_cache));
}

void buildid_cache_free(struct buildid_cache *bc)
{
	if (bc)
		free(bc->e);
	free(bc);
}

static int elf_fd_build_id(int fd, __u8 *id, __u32 *len)
{
	const void *p;
	ssize_t n;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	n = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &p) : -1;
	if (n > 0) {
		*len = n > SC_BUILD_ID_MAX ? SC_BUILD_ID_MAX : (__u32)n;
		memcpy(id, p, *len);
	}
	elf_end(elf);
	return n > 0 ? 0 : -ENODATA;
}

int elf_file_build_id(const char *path, __u8 *id, __u32 *len)
{
	int fd = open_regular(path), ret;

	if (fd < 0)
		return -errno;
	ret = elf_fd_build_id(fd, id, len);
	close(fd);
	return ret;
}

/* Prefer map_files/, the very file mapped, over a path that may be replaced. */
static void map_build_id(__u32 pid, struct sc_map *m, unsigned long dev,
			 unsigned long ino, struct buildid_cache *bc)
{
	char mf[96];
	size_t i;
	int fd;

	for (i = 0; bc && i < bc->n; i++) {
		if (bc->e[i].dev == dev && bc->e[i].ino == ino) {
			m->build_id_len = bc->e[i].len;
			memcpy(m->build_id, bc->e[i].id, bc->e[i].len);
			return;
		}
	}
	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open_regular(mf);
	if (fd < 0)
		fd = open_regular(m->path);
	if (fd < 0)
		return;
	if (elf_fd_build_id(fd, m->build_id, &m->build_id_len))
		m->build_id_len = 0;
	else if (bc && bc->keep_deleted && kept_elf_deleted(m->path) && kept_elf_save(fd, m))
		warnx_("%s: cannot keep a copy (%s): its frames will not resolve once it exits",
		       m->path, strerror(errno));
	close(fd);
	if (!bc)
		return;
	if (bc->n == bc->cap) {
		size_t cap = bc->cap ? 2 * bc->cap : 64;
		struct bid_entry *e = realloc(bc->e, cap * sizeof(*e));

		if (!e)
			return;
		bc->e = e;
		bc->cap = cap;
	}
	bc->e[bc->n].dev = dev;
	bc->e[bc->n].ino = ino;
	bc->e[bc->n].len = m->build_id_len;
	memcpy(bc->e[bc->n].id, m->build_id, m->build_id_len);
	bc->n++;
}

static int parse_line(char *line, struct sc_map *m, unsigned long *dev,
		      unsigned long *ino)
{
	unsigned long long start, end, off;
	unsigned int maj, min;
	char perms[8], *path;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %lu %n", &start, &end, perms,
		   &off, &maj, &min, ino, &pos) < 7 || !pos)
		return -EINVAL;
	path = line + pos;
	path[strcspn(path, "\n")] = 0;
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->pgoff = off;
	m->prot = (perms[0] == 'r' ? SC_PROT_R : 0) | (perms[1] == 'w' ? SC_PROT_W : 0) |
		  (perms[2] == 'x' ? SC_PROT_X : 0);
	*dev = (unsigned long)maj << 20 | min;
	m->path = strdup(path);
	return m->path ? 0 : -ENOMEM;
}

static void read_comm(__u32 pid, char *comm)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, 16, f))
		comm[strcspn(comm, "\n")] = 0;
	fclose(f);
}

int procmaps_snapshot(__u32 pid, struct buildid_cache *bc, struct sc_proc **out)
{
	char path[64], line[4352];
	unsigned long dev, ino;
	struct sc_proc *p;
	struct sc_map *m;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	p = calloc(1, sizeof(*p));
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	p->pid = pid;
	p->snap_ns = now_ns(CLOCK_MONOTONIC);
	read_comm(pid, p->comm);
	while (fgets(line, sizeof(line), f)) {
		if (!(p->nr_maps & (p->nr_maps + 1))) {
			m = realloc(p->maps, (2 * p->nr_maps + 2) * sizeof(*m));
			if (!m) {
				ret = -ENOMEM;
				break;
			}
			p->maps = m;
		}
		m = &p->maps[p->nr_maps];
		if (parse_line(line, m, &dev, &ino))
			continue;
		p->nr_maps++;
		if (m->path[0] == '/' && ino)
			map_build_id(pid, m, dev, ino, bc);
	}
	fclose(f);
	if (ret || !p->nr_maps) {
		sc_proc_free(p);
		return ret ? ret : -ESRCH;
	}
	sc_proc_normalize(p);	/* sorted already: a check */
	*out = p;
	return 0;
}

static const struct sc_map *snap_find(const struct sc_proc *p, __u64 addr)
{
	size_t lo = 0, hi = p->nr_maps, mid;
	unsigned int i;

	if (!p->sorted) {
		for (i = 0; i < p->nr_maps; i++)
			if (addr >= p->maps[i].start && addr < p->maps[i].end)
				return &p->maps[i];
		return NULL;
	}
	while (lo < hi) {	/* the first map ending above addr */
		mid = lo + (hi - lo) / 2;
		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nr_maps && addr >= p->maps[lo].start ? &p->maps[lo] : NULL;
}

/* The map holding addr in the newest snapshot that has one. */
const struct sc_map *sc_proc_find(const struct sc_proc *p, __u64 addr)
{
	const struct sc_map *m;

	for (; p; p = p->older) {
		m = snap_find(p, addr);
		if (m)
			return m;
	}
	return NULL;
}

bool sc_proc_is_text(const struct sc_proc *p, __u64 addr)
{
	const struct sc_map *m = sc_proc_find(p, addr);

	return m && (m->prot & SC_PROT_X);
}

/*
 * Is @addr in code no file describes: an anonymous executable mapping, a
 * JIT's (named from a perf map, or not at all)?
 */
bool sc_proc_is_jit(const struct sc_proc *p, __u64 addr)
{
	const struct sc_map *m = sc_proc_find(p, addr);

	return m && (m->prot & SC_PROT_X) && (!m->path[0] || !strncmp(m->path, "[anon", 5));
}

static int map_cmp(const void *a, const void *b)
{
	const struct sc_map *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * Make a snapshot from an untrusted source searchable in log time: maps
 * sorted by address; an empty map, or one overlapping the map before it
 * (never seen in /proc/PID/maps), is dropped.
 */
void sc_proc_normalize(struct sc_proc *p)
{
	unsigned int i, n = 0;

	if (p->nr_maps)
		qsort(p->maps, p->nr_maps, sizeof(*p->maps), map_cmp);
	for (i = 0; i < p->nr_maps; i++) {
		if (p->maps[i].start >= p->maps[i].end ||
		    (n && p->maps[i].start < p->maps[n - 1].end)) {
			free(p->maps[i].path);
			continue;
		}
		p->maps[n++] = p->maps[i];
	}
	p->nr_maps = n;
	p->sorted = true;
}

void sc_proc_free(struct sc_proc *p)
{
	struct sc_proc *older;
	unsigned int i;

	for (; p; p = older) {
		older = p->older;
		for (i = 0; i < p->nr_maps; i++)
			free(p->maps[i].path);
		free(p->maps);
		free(p);
	}
}

/* The vDSO is the same image in every process of a kernel: copy our own. */
int vdso_image(void **img, size_t *len)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	unsigned long long start, end;
	char line[512];
	size_t size = 0;
	FILE *f;

	if (!base)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%llx-%llx", &start, &end) == 2 && start == base)
			size = end - start;
	}
	fclose(f);
	if (!size)
		return -ENOENT;
	*img = malloc(size);
	if (!*img)
		return -ENOMEM;
	memcpy(*img, (void *)base, size);
	*len = size;
	return 0;
}

struct sc_proc *sc_proc_dup(const struct sc_proc *p)
{
	struct sc_proc *c = calloc(1, sizeof(*c));
	unsigned int i;

	if (!c)
		return NULL;
	*c = *p;
	c->older = NULL;
	c->nr_maps = 0;
	c->maps = calloc(p->nr_maps + 1, sizeof(*c->maps));
	if (!c->maps) {
		free(c);
		return NULL;
	}
	for (i = 0; i < p->nr_maps; i++) {
		c->maps[i] = p->maps[i];
		c->maps[i].path = strdup(p->maps[i].path);
		if (!c->maps[i].path) {
			sc_proc_free(c);
			return NULL;
		}
		c->nr_maps++;
	}
	return c;
}
