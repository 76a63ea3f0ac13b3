// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap report -f pprof: a gzipped profile.proto (proto/profile.proto,
 * packed by protobuf-c, compressed by zlib) that go tool pprof, Pyroscope
 * and Grafana read.
 *
 * One value per sample, "stalled/nanoseconds": the stalled time a captured
 * sample stands for (sc_weights_next(), summary.c), so a profile's totals
 * are stalled time.  Labels: pid, tid, tag (numbers), comm and state
 * (strings).  A function is a symbol (or "[dso]") and its file (the ELF
 * path, or "kernel" / the module); a location is one function (address 0,
 * no mapping: frames are symbolized here).  Samples with the same frames
 * and labels are merged: memory follows the distinct stacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "gen/profile.pb-c.h"
#include "tool.h"
#include "output.h"

struct pstr {
	struct hnode node;
	size_t idx;
	char s[];
};

struct pfunc {
	struct hnode node;
	__u64 id;
	__s64 name, file;
	size_t len;
	char key[];
};

struct psample {
	struct hnode node;
	struct psample *next;
	__u64 *locs;
	size_t nlocs;
	__s64 ns;
	__u32 pid, tid;
	__u64 tag;
	__s64 comm, state;
	__s64 syscall;		/* the system call's name (string id), 0 if none */
	size_t len;
	char key[];
};

struct pprof {
	struct htab strs, funcs, samples;
	char **strv;
	size_t nstr, capstr;
	struct pfunc **funcv;
	size_t nfunc, capfunc;
	struct psample *all;
	size_t nsample;
};

static __s64 intern(struct pprof *pp, const char *s)
{
	size_t len = strlen(s);
	__u64 h = hash_bytes(s, len, 0);
	struct pstr *e;
	struct hnode *n;
	char **v;

	htab_for_each_possible(&pp->strs, n, h) {
		e = container_of(n, struct pstr, node);
		if (!strcmp(e->s, s))
			return (__s64)e->idx;
	}
	if (pp->nstr == pp->capstr) {
		v = realloc(pp->strv, (pp->capstr ? 2 * pp->capstr : 64) * sizeof(*v));
		if (!v)
			return 0;
		pp->strv = v;
		pp->capstr = pp->capstr ? 2 * pp->capstr : 64;
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return 0;
	memcpy(e->s, s, len + 1);
	e->idx = pp->nstr;
	if (htab_add(&pp->strs, &e->node, h)) {
		free(e);
		return 0;
	}
	pp->strv[pp->nstr++] = e->s;
	return (__s64)e->idx;
}

struct pprof *pprof_new(void)
{
	struct pprof *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	htab_init(&pp->strs);
	htab_init(&pp->funcs);
	htab_init(&pp->samples);
	intern(pp, "");		/* string_table[0] is "" */
	return pp;
}

/* the function (and location) id of a frame */
static __u64 func_id(struct pprof *pp, const struct sc_frame *f, bool kernel)
{
	char name[512], *key = NULL;
	const char *file = f->dso ? f->dso : kernel ? "kernel" : "";
	const char *b = strrchr(file, '/');
	struct pfunc *fn, **v;
	struct hnode *n;
	size_t len;
	__u64 h;

	if (f->sym)
		snprintf(name, sizeof(name), "%s", f->sym);
	else
		snprintf(name, sizeof(name), "[%s]", b ? b + 1 : file[0] ? file : "unknown");
	len = strlen(name) + 1 + strlen(file);
	key = malloc(len + 1);
	if (!key)
		return 0;
	memcpy(key, name, strlen(name) + 1);
	memcpy(key + strlen(name) + 1, file, strlen(file) + 1);
	h = hash_bytes(key, len, 0);
	htab_for_each_possible(&pp->funcs, n, h) {
		fn = container_of(n, struct pfunc, node);
		if (fn->len == len && !memcmp(fn->key, key, len)) {
			free(key);
			return fn->id;
		}
	}
	if (pp->nfunc == pp->capfunc) {
		v = realloc(pp->funcv, (pp->capfunc ? 2 * pp->capfunc : 64) * sizeof(*v));
		if (!v) {
			free(key);
			return 0;
		}
		pp->funcv = v;
		pp->capfunc = pp->capfunc ? 2 * pp->capfunc : 64;
	}
	fn = calloc(1, sizeof(*fn) + len + 1);
	if (!fn) {
		free(key);
		return 0;
	}
	memcpy(fn->key, key, len);
	fn->len = len;
	fn->name = intern(pp, name);
	fn->file = intern(pp, file);
	free(key);
	if (htab_add(&pp->funcs, &fn->node, h)) {
		free(fn);
		return 0;
	}
	pp->funcv[pp->nfunc++] = fn;
	fn->id = pp->nfunc;	/* ids start at 1 */
	return fn->id;
}

static void add_sample(struct pprof *pp, const struct sc_rsample *r, __u64 ns)
{
	const struct stallcap_sample *s = &r->smp->v.s;
	size_t n = (size_t)(r->nk + r->nu), i, len;
	char comm[17] = "";	/* zeros past the name: 16 bytes of it are the key's */
	char sysbuf[SC_SYSCALL_LABEL_MAX];
	const char *sys = NULL;
	struct psample *p;
	struct hnode *hn;
	__u64 *locs, h;

	locs = calloc(n + 1, sizeof(*locs));
	if (!locs)
		return;
	for (i = 0; i < (size_t)r->nk; i++)	/* leaf first */
		locs[i] = func_id(pp, &r->kf[i], true);
	for (i = 0; i < (size_t)r->nu; i++)
		locs[r->nk + i] = func_id(pp, &r->uf[i], false);
	snprintf(comm, sizeof(comm), "%.16s", s->comm);
	if (r->smp->has_syscall)
		sys = sc_syscall_label(r->smp->sys.nr, sysbuf, sizeof(sysbuf));
	/* key: locations, then the labels */
	len = n * sizeof(*locs);
	p = calloc(1, sizeof(*p) + len + 40 + (sys ? strlen(sys) + 1 : 0));
	if (!p) {
		free(locs);
		return;
	}
	memcpy(p->key, locs, len);
	memcpy(p->key + len, &s->pid, 4);
	memcpy(p->key + len + 4, &s->tid, 4);
	memcpy(p->key + len + 8, &s->user_tag, 8);
	p->key[len + 16] = (char)s->state;
	memcpy(p->key + len + 17, comm, 16);
	len += 33;
	if (sys) {
		memcpy(p->key + len, sys, strlen(sys) + 1);
		len += strlen(sys) + 1;
	}
	h = hash_bytes(p->key, len, 0);
	htab_for_each_possible(&pp->samples, hn, h) {
		struct psample *q = container_of(hn, struct psample, node);

		if (q->len == len && !memcmp(q->key, p->key, len)) {
			q->ns += (__s64)ns;
			free(p);
			free(locs);
			return;
		}
	}
	p->len = len;
	p->locs = locs;
	p->nlocs = n;
	p->ns = (__s64)ns;
	p->pid = s->pid;
	p->tid = s->tid;
	p->tag = s->user_tag;
	p->comm = intern(pp, comm[0] ? comm : "?");
	p->state = intern(pp, sc_state_name(s->state));
	p->syscall = sys ? intern(pp, sys) : 0;
	if (htab_add(&pp->samples, &p->node, h)) {
		free(p);
		free(locs);
		return;
	}
	p->next = pp->all;
	pp->all = p;
	pp->nsample++;
}

void pprof_add_stall(struct pprof *pp, struct sc_rstall *rs)
{
	struct sc_weights sw;
	__u64 w;

	resolve_stall_rewind(rs);
	sc_weights_start(&sw, rs->st);
	while (resolve_stall_next(rs) > 0) {
		w = sc_weights_next(&sw, rs->cur.smp);
		if (w)
			add_sample(pp, &rs->cur, w);
	}
}

static void num_label(Perftools__Profiles__Label *l, __s64 key, __s64 v)
{
	perftools__profiles__label__init(l);
	l->key = key;
	l->num = v;
}

static void str_label(Perftools__Profiles__Label *l, __s64 key, __s64 v)
{
	perftools__profiles__label__init(l);
	l->key = key;
	l->str = v;
}

#define NLABELS	6	/* the last, "syscall", only inside a system call */

/* Pack the profile, gzip it into @out; 0 or -errno. */
int pprof_write(struct pprof *pp, FILE *out)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__ValueType pt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__Sample *sv = NULL, **svp = NULL;
	Perftools__Profiles__Label *lv = NULL, **lvp = NULL;
	Perftools__Profiles__Location *locv = NULL, **locp = NULL;
	Perftools__Profiles__Function *fv = NULL, **fvp = NULL;
	Perftools__Profiles__Line *linev = NULL, **linep = NULL;
	__s64 k_pid, k_tid, k_tag, k_comm, k_state, k_syscall, *vals = NULL;
	struct psample *p;
	size_t i = 0, len;
	uint8_t *buf = NULL;
	int ret = -ENOMEM, fd;
	gzFile gz;

	vt.type = intern(pp, "stalled");
	vt.unit = intern(pp, "nanoseconds");
	pt = vt;
	k_pid = intern(pp, "pid");
	k_tid = intern(pp, "tid");
	k_tag = intern(pp, "tag");
	k_comm = intern(pp, "comm");
	k_state = intern(pp, "state");
	k_syscall = intern(pp, "syscall");
	sv = calloc(pp->nsample + 1, sizeof(*sv));
	svp = calloc(pp->nsample + 1, sizeof(*svp));
	vals = calloc(pp->nsample + 1, sizeof(*vals));
	lv = calloc(NLABELS * pp->nsample + 1, sizeof(*lv));
	lvp = calloc(NLABELS * pp->nsample + 1, sizeof(*lvp));
	locv = calloc(pp->nfunc + 1, sizeof(*locv));
	locp = calloc(pp->nfunc + 1, sizeof(*locp));
	fv = calloc(pp->nfunc + 1, sizeof(*fv));
	fvp = calloc(pp->nfunc + 1, sizeof(*fvp));
	linev = calloc(pp->nfunc + 1, sizeof(*linev));
	linep = calloc(pp->nfunc + 1, sizeof(*linep));
	if (!sv || !svp || !vals || !lv || !lvp || !locv || !locp || !fv || !fvp || !linev ||
	    !linep)
		goto out;
	for (p = pp->all; p; p = p->next, i++) {
		Perftools__Profiles__Label *l = &lv[NLABELS * i];
		int j;

		perftools__profiles__sample__init(&sv[i]);
		svp[i] = &sv[i];
		vals[i] = p->ns;
		sv[i].n_value = 1;
		sv[i].value = (int64_t *)&vals[i];
		sv[i].n_location_id = p->nlocs;
		sv[i].location_id = (uint64_t *)p->locs;
		num_label(&l[0], k_pid, p->pid);
		num_label(&l[1], k_tid, p->tid);
		num_label(&l[2], k_tag, (__s64)p->tag);
		str_label(&l[3], k_comm, p->comm);
		str_label(&l[4], k_state, p->state);
		str_label(&l[5], k_syscall, p->syscall);
		for (j = 0; j < NLABELS; j++)
			lvp[NLABELS * i + j] = &l[j];
		sv[i].n_label = NLABELS - !p->syscall;
		sv[i].label = &lvp[NLABELS * i];
	}
	for (i = 0; i < pp->nfunc; i++) {
		perftools__profiles__function__init(&fv[i]);
		fv[i].id = pp->funcv[i]->id;
		fv[i].name = pp->funcv[i]->name;
		fv[i].system_name = pp->funcv[i]->name;
		fv[i].filename = pp->funcv[i]->file;
		fvp[i] = &fv[i];
		perftools__profiles__line__init(&linev[i]);
		linev[i].function_id = pp->funcv[i]->id;
		linep[i] = &linev[i];
		perftools__profiles__location__init(&locv[i]);
		locv[i].id = pp->funcv[i]->id;
		locv[i].n_line = 1;
		locv[i].line = &linep[i];
		locp[i] = &locv[i];
	}
	prof.n_sample_type = 1;
	prof.sample_type = &vtp;
	prof.n_sample = pp->nsample;
	prof.sample = svp;
	prof.n_location = pp->nfunc;
	prof.location = locp;
	prof.n_function = pp->nfunc;
	prof.function = fvp;
	prof.n_string_table = pp->nstr;
	prof.string_table = pp->strv;
	prof.period_type = &pt;
	prof.period = 1;
	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len + 1);
	if (!buf)
		goto out;
	perftools__profiles__profile__pack(&prof, buf);
	fflush(out);
	fd = dup(fileno(out));
	gz = fd >= 0 ? gzdopen(fd, "wb") : NULL;
	if (!gz) {
		if (fd >= 0)
			close(fd);
		ret = -EIO;
		goto out;
	}
	ret = len && gzwrite(gz, buf, (unsigned int)len) != (int)len ? -EIO : 0;
	if (gzclose(gz) != Z_OK)
		ret = -EIO;
out:
	free(buf);
	free(sv);
	free(svp);
	free(vals);
	free(lv);
	free(lvp);
	free(locv);
	free(locp);
	free(fv);
	free(fvp);
	free(linev);
	free(linep);
	return ret;
}

void pprof_free(struct pprof *pp)
{
	struct psample *p, *pn;
	struct hnode *n, *next;
	size_t i;

	if (!pp)
		return;
	for (p = pp->all; p; p = pn) {
		pn = p->next;
		free(p->locs);
		free(p);
	}
	for (i = 0; i < pp->nfunc; i++)
		free(pp->funcv[i]);
	for (i = 0; i < pp->strs.nb; i++)
		for (n = pp->strs.b[i]; n; n = next) {
			next = n->next;
			free(container_of(n, struct pstr, node));
		}
	htab_free(&pp->strs);
	htab_free(&pp->funcs);
	htab_free(&pp->samples);
	free(pp->strv);
	free(pp->funcv);
	free(pp);
}
