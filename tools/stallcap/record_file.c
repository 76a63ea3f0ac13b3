// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): writing and reading record files (format in record_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cursor.h"
#include "record_file.h"
#include "tool.h"

struct scfile {
	struct sc_sink sink;	/* first: the sink callbacks find the file */
	FILE *f;
	int err;
};

#define ALIGN8(x)	(((x) + 7) & ~(size_t)7)

static int chunk_write(struct scfile *sf, __u32 type, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	static const char zero[8];
	struct scf_chunk c;
	size_t len = sizeof(c) + alen + blen;

	if (sf->err)
		return sf->err;
	if (len > SCF_MAX_CHUNK)	/* what no reader takes: not written */
		return -EFBIG;
	c.type = type;
	c.size = (__u32)ALIGN8(len);
	errno = 0;
	if (fwrite(&c, sizeof(c), 1, sf->f) != 1 ||
	    (alen && fwrite(a, alen, 1, sf->f) != 1) ||
	    (blen && fwrite(b, blen, 1, sf->f) != 1) ||
	    (c.size != len && fwrite(zero, c.size - len, 1, sf->f) != 1))
		sf->err = errno ? -errno : -EIO;	/* ENOSPC told as such */
	return sf->err;
}

static int sink_record(struct sc_sink *sk, const struct stallcap_rec_header *rec)
{
	return chunk_write((struct scfile *)sk, SCF_RECORD, rec, rec->size, NULL, 0);
}

static int sink_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	struct scf_proc hp = { .pid = p->pid, .nr_maps = p->nr_maps, .snap_ns = p->snap_ns };
	size_t len = sizeof(hp), off, n;
	struct scf_map *hm;
	unsigned int i;
	char *buf;
	int ret;

	memcpy(hp.comm, p->comm, sizeof(hp.comm));
	for (i = 0; i < p->nr_maps; i++)
		len += ALIGN8(sizeof(*hm) + strnlen(p->maps[i].path, 4096));
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &hp, sizeof(hp));
	off = sizeof(hp);
	for (i = 0; i < p->nr_maps; i++) {
		hm = (struct scf_map *)(buf + off);
		n = strnlen(p->maps[i].path, 4096);
		hm->start = p->maps[i].start;
		hm->end = p->maps[i].end;
		hm->pgoff = p->maps[i].pgoff;
		hm->prot = p->maps[i].prot;
		hm->path_len = (__u16)n;
		hm->build_id_len = (__u8)p->maps[i].build_id_len;
		memcpy(hm->build_id, p->maps[i].build_id, p->maps[i].build_id_len);
		memcpy(hm + 1, p->maps[i].path, n);
		off += ALIGN8(sizeof(*hm) + n);
	}
	ret = chunk_write((struct scfile *)sk, SCF_PROC, buf, len, NULL, 0);
	free(buf);
	return ret;
}

static int sink_ksym(struct sc_sink *sk, const struct ksym *k)
{
	size_t nl = strlen(k->name), ml = k->mod ? strlen(k->mod) : 0;
	struct scf_ksym h = { .addr = k->addr, .size = k->size,
			      .name_len = (__u16)nl, .mod_len = (__u16)ml };
	char buf[2 * SCF_KSYM_NAME_MAX];

	/* longer than the kernel's KSYM_NAME_LEN: not from kallsyms */
	if (nl >= SCF_KSYM_NAME_MAX || ml >= SCF_KSYM_NAME_MAX)
		return 0;
	memcpy(buf, k->name, nl);
	if (ml)
		memcpy(buf + nl, k->mod, ml);
	return chunk_write((struct scfile *)sk, SCF_KSYM, &h, sizeof(h), buf, nl + ml);
}

static int sink_lost(struct sc_sink *sk, __u64 lost, __u64 suppressed)
{
	struct scf_lost l = { .lost = lost, .suppressed = suppressed };

	return chunk_write((struct scfile *)sk, SCF_LOST, &l, sizeof(l), NULL, 0);
}

static int sink_vdso(struct sc_sink *sk, const void *img, size_t len)
{
	return chunk_write((struct scfile *)sk, SCF_VDSO, img, len, NULL, 0);
}

static int sink_info(struct sc_sink *sk, const struct sc_host_info *hi)
{
	struct scf_info in;

	memset(&in, 0, sizeof(in));
	snprintf(in.release, sizeof(in.release), "%s", hi->release);
	snprintf(in.boot_id, sizeof(in.boot_id), "%s", hi->boot_id);
	in.realtime_offset_ns = hi->realtime_offset_ns;
	in.pid_ns_inum = hi->pid_ns_inum;
	in.reader_pid_ns_inum = hi->reader_pid_ns_inum;
	in.module_features = hi->module_features;
	in.host_flags = hi->host_flags;
	return chunk_write((struct scfile *)sk, SCF_INFO, &in, sizeof(in), NULL, 0);
}

static int sink_fdname(struct sc_sink *sk, const struct sc_fdname *f)
{
	size_t nl = strnlen(f->name, 4096);
	struct scf_fdname h = { .pid = f->pid, .tid = f->tid, .stall_id = f->stall_id,
				.sample_index = f->sample_index, .fd = f->fd,
				.name_len = (__u16)nl };

	return chunk_write((struct scfile *)sk, SCF_FDNAME, &h, sizeof(h), f->name, nl);
}

static int sink_flush(struct sc_sink *sk)
{
	return scfile_flush((struct scfile *)sk);
}

struct scfile *scfile_create(const char *path)
{
	struct scf_header h;
	struct scfile *sf = calloc(1, sizeof(*sf));
	struct timespec ts;

	if (!sf)
		return NULL;
	sf->f = strcmp(path, "-") ? fopen(path, "we") : stdout;
	if (!sf->f) {
		free(sf);
		return NULL;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SCF_MAGIC, sizeof(h.magic));
	h.version = SCF_VERSION;
	h.header_size = sizeof(h);
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
	if (fwrite(&h, sizeof(h), 1, sf->f) != 1)
		sf->err = -EIO;
	sf->sink.record = sink_record;
	sf->sink.proc = sink_proc;
	sf->sink.ksym = sink_ksym;
	sf->sink.lost = sink_lost;
	sf->sink.vdso = sink_vdso;
	sf->sink.info = sink_info;
	sf->sink.flush = sink_flush;
	sf->sink.fdname = sink_fdname;
	return sf;
}

struct sc_sink *scfile_sink(struct scfile *sf)
{
	return &sf->sink;
}

/* Flush what was written so far: a reader may follow the file. */
int scfile_flush(struct scfile *sf)
{
	if (!sf->err && fflush(sf->f))
		sf->err = -errno;
	return sf->err;
}

int scfile_close(struct scfile *sf)
{
	int ret = sf->err;

	if (sf->f != stdout) {
		if (fclose(sf->f) && !ret)
			ret = -errno;
	} else if (fflush(sf->f) && !ret) {
		ret = -errno;
	}
	free(sf);
	return ret;
}

/* ---- reading ---- */

/* One map of a SCF_PROC chunk; -EBADMSG if it does not fit. */
static int read_map(struct cursor *c, struct sc_map *m)
{
	const struct scf_map *hm = cursor_take(c, sizeof(*hm));
	const char *path;

	if (!hm || hm->build_id_len > SC_BUILD_ID_MAX)
		return -EBADMSG;
	path = cursor_take_pad8(c, hm->path_len);
	if (!path)
		return -EBADMSG;
	m->start = hm->start;
	m->end = hm->end;
	m->pgoff = hm->pgoff;
	m->prot = hm->prot;
	m->build_id_len = hm->build_id_len;
	memcpy(m->build_id, hm->build_id, hm->build_id_len);
	m->path = strndup(path, hm->path_len);
	return m->path ? 0 : -ENOMEM;
}

static int read_proc(const __u8 *p, size_t len, struct sc_sink *sk)
{
	const struct scf_proc *hp;
	struct sc_proc proc;
	struct cursor c;
	unsigned int i;
	int ret = 0;

	cursor_init(&c, p, len);
	hp = cursor_take(&c, sizeof(*hp));
	if (!hp || hp->nr_maps > cursor_left(&c) / sizeof(struct scf_map))
		return -EBADMSG;
	memset(&proc, 0, sizeof(proc));
	proc.pid = hp->pid;
	proc.snap_ns = hp->snap_ns;
	memcpy(proc.comm, hp->comm, sizeof(proc.comm));
	proc.comm[15] = 0;
	proc.maps = calloc((size_t)hp->nr_maps + 1, sizeof(*proc.maps));
	if (!proc.maps)
		return -ENOMEM;
	for (i = 0; i < hp->nr_maps && !ret; i++) {
		ret = read_map(&c, &proc.maps[i]);
		if (!ret)
			proc.nr_maps++;
	}
	if (!ret)
		ret = sk->proc ? sk->proc(sk, &proc) : 0;
	for (i = 0; i < proc.nr_maps; i++)
		free(proc.maps[i].path);
	free(proc.maps);
	return ret;
}

static int read_ksym(const __u8 *p, size_t len, struct sc_sink *sk)
{
	const struct scf_ksym *h;
	const char *n, *m;
	char name[SCF_KSYM_NAME_MAX], mod[SCF_KSYM_NAME_MAX];
	struct cursor c;
	struct ksym k;

	cursor_init(&c, p, len);
	h = cursor_take(&c, sizeof(*h));
	if (!h || !h->name_len || h->name_len >= sizeof(name) || h->mod_len >= sizeof(mod))
		return -EBADMSG;
	n = cursor_take(&c, h->name_len);
	m = cursor_take(&c, h->mod_len);
	if (!n || !m)
		return -EBADMSG;
	memcpy(name, n, h->name_len);
	name[h->name_len] = 0;
	if (h->mod_len)
		memcpy(mod, m, h->mod_len);
	mod[h->mod_len] = 0;
	k.addr = h->addr;
	k.size = h->size;
	k.name = name;
	k.mod = h->mod_len ? mod : NULL;
	return sk->ksym ? sk->ksym(sk, &k) : 0;
}

static int read_info(const __u8 *p, size_t len, struct sc_sink *sk)
{
	struct sc_host_info hi;
	struct scf_info in;

	if (len < offsetof(struct scf_info, realtime_offset_ns))
		return -EBADMSG;
	memset(&in, 0, sizeof(in));
	memcpy(&in, p, len < sizeof(in) ? len : sizeof(in));
	memset(&hi, 0, sizeof(hi));
	snprintf(hi.release, sizeof(hi.release), "%.*s", (int)sizeof(in.release) - 1,
		 in.release);
	snprintf(hi.boot_id, sizeof(hi.boot_id), "%.*s", (int)sizeof(in.boot_id) - 1,
		 in.boot_id);
	hi.realtime_offset_ns = in.realtime_offset_ns;
	hi.pid_ns_inum = in.pid_ns_inum;
	hi.reader_pid_ns_inum = in.reader_pid_ns_inum;
	hi.module_features = in.module_features;
	hi.host_flags = in.host_flags;
	return sk->info ? sk->info(sk, &hi) : 0;
}

static int read_fdname(const __u8 *p, size_t len, struct sc_sink *sk)
{
	const struct scf_fdname *h;
	struct sc_fdname f;
	const char *name;
	struct cursor c;
	int ret;

	cursor_init(&c, p, len);
	h = cursor_take(&c, sizeof(*h));
	if (!h || !h->name_len)
		return -EBADMSG;
	name = cursor_take(&c, h->name_len);
	if (!name)
		return -EBADMSG;
	f = (struct sc_fdname){ .pid = h->pid, .tid = h->tid, .stall_id = h->stall_id,
				.sample_index = h->sample_index, .fd = h->fd };
	f.name = strndup(name, h->name_len);
	if (!f.name)
		return -ENOMEM;
	ret = sk->fdname ? sk->fdname(sk, &f) : 0;
	free(f.name);
	return ret;
}

static int read_chunk(__u32 type, const __u8 *p, size_t len, struct sc_sink *sk)
{
	const struct stallcap_rec_header *rec = (const void *)p;
	const struct scf_lost *l = (const void *)p;

	switch (type) {
	case SCF_RECORD:
		/* the sink may read rec->size bytes: they are all in the chunk */
		if (len < sizeof(*rec) || rec->size > len || rec->size < sizeof(*rec))
			return -EBADMSG;
		return sk->record ? sk->record(sk, rec) : 0;
	case SCF_PROC:
		return read_proc(p, len, sk);
	case SCF_KSYM:
		return read_ksym(p, len, sk);
	case SCF_LOST:
		if (len < sizeof(*l))
			return -EBADMSG;
		return sk->lost ? sk->lost(sk, l->lost, l->suppressed) : 0;
	case SCF_VDSO:
		return sk->vdso ? sk->vdso(sk, p, len) : 0;
	case SCF_INFO:
		return read_info(p, len, sk);
	case SCF_FDNAME:
		return read_fdname(p, len, sk);
	default:
		return 0;
	}
}

/* Read exactly len bytes; returns the bytes read (short at end of file). */
static size_t read_full(FILE *f, void *buf, size_t len)
{
	return len ? fread(buf, 1, len, f) : 0;
}

/* Skip len bytes without seeking (the file may be a pipe). */
static int skip(FILE *f, size_t len)
{
	char tmp[512];
	size_t n;

	while (len) {
		n = len < sizeof(tmp) ? len : sizeof(tmp);
		if (fread(tmp, 1, n, f) != n)
			return -EPROTO;
		len -= n;
	}
	return 0;
}

static int read_header(FILE *f)
{
	struct scf_header h;

	if (read_full(f, &h, sizeof(h)) != sizeof(h) || memcmp(h.magic, SCF_MAGIC, 8) ||
	    h.header_size < sizeof(h) || h.header_size > SCF_MAX_HEADER)
		return -EPROTO;
	if (h.version != SCF_VERSION)
		return -EPROTONOSUPPORT;
	return skip(f, h.header_size - sizeof(h));
}

/*
 * Read a chunk's @len bytes into *@buf, grown as they come: a header that
 * claims more than the file holds costs no more memory than it holds.
 * Return: bytes read (fewer at the end of the file), or -ENOMEM.
 */
static ssize_t read_body(FILE *f, __u64 **buf, size_t *cap, size_t len)
{
	size_t have = 0, want, n;
	void *nb;

	while (have < len) {
		want = have < (1U << 20) ? 1U << 20 : 2 * have;
		if (want > len)
			want = len;
		if (want > *cap) {
			nb = realloc(*buf, want);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = want;
		}
		n = read_full(f, (__u8 *)*buf + have, want - have);
		have += n;
		if (have < want)
			break;
	}
	return (ssize_t)have;
}

/*
 * The chunks, until the end of the file.  A file that ends inside a chunk
 * (cut short, or still being written) reads up to the cut, with a warning
 * naming what was cut.
 */
static int read_chunks(FILE *f, const char *path, struct sc_sink *sk)
{
	struct scf_chunk c;
	__u64 *buf = NULL, off = 0;
	size_t cap = 0, n;
	ssize_t body;
	int ret = 0;

	while (!ret) {
		n = read_full(f, &c, sizeof(c));
		if (n != sizeof(c)) {
			if (n)
				warnx_("%s: cut %zu bytes into a chunk header at offset %llu: "
				       "the rest of the file is missing", path, n,
				       (unsigned long long)off);
			break;
		}
		if (c.size < sizeof(c) || c.size % 8 || c.size > SCF_MAX_CHUNK) {
			ret = -EBADMSG;
			break;
		}
		body = read_body(f, &buf, &cap, c.size - sizeof(c));
		if (body < 0) {
			ret = (int)body;
			break;
		}
		if ((size_t)body != c.size - sizeof(c)) {
			warnx_("%s: cut in a chunk of type %u at offset %llu (%zu of its %u bytes): "
			       "that chunk and anything after it are missing", path, c.type,
			       (unsigned long long)off, (size_t)body + sizeof(c), c.size);
			break;
		}
		ret = read_chunk(c.type, (const __u8 *)buf, c.size - sizeof(c), sk);
		off += c.size;
	}
	if (!ret && ferror(f))
		ret = -EIO;
	free(buf);
	return ret;
}

/*
 * Open a record file: a regular file or a pipe (`report <(...)`), nothing
 * that could block on open or act on open (a device node, a tty).
 */
static FILE *open_input(const char *path, int *err)
{
	struct stat st;
	FILE *f;
	int fd;

	if (!strcmp(path, "-"))
		return stdin;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (fstat(fd, &st))
		*err = -errno;
	else if (S_ISDIR(st.st_mode))
		*err = -EISDIR;
	else if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
		*err = -EPROTO;
	else if (fcntl(fd, F_SETFL, 0))	/* a pipe: blocking reads from here on */
		*err = -errno;
	if (*err) {
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		*err = -errno;
		close(fd);
	}
	return f;
}

int scfile_read(const char *path, struct sc_sink *sk)
{
	int ret = 0;
	FILE *f = open_input(path, &ret);

	if (!f)
		return ret;
	ret = read_header(f);
	if (!ret)
		ret = read_chunks(f, path, sk);
	if (f != stdin)
		fclose(f);
	return ret;
}
