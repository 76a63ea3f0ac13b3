// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap stats --prometheus: the Prometheus text exposition format
 * (version 0.0.4), for a node exporter's textfile collector or a scrape
 * through any HTTP wrapper.
 *
 *  - the module's counters (STALLCAP_IOC_GET_STATS), when it is reachable:
 *    stallcap_<counter>_total, and stallcap_watches / _armed / _attached
 *    as gauges;
 *  - with -i FILE, per process of a record file: stalls counted
 *    (stallcap_process_stalls_total) and their durations as a histogram
 *    (stallcap_process_stall_duration_seconds, the duration rule of
 *    summary.c), plus the records the ring lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "output.h"

static const double prom_le[] = {
	0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
};

struct pproc {
	struct hnode node;
	struct pproc *next;
	__u32 pid;
	char comm[17];
	__u64 count, sum_ns;
	__u64 b[ARRAY_SIZE(prom_le)];	/* not cumulative; +Inf is count */
};

struct prom {
	struct sc_sink sink;	/* first */
	struct stalls st;
	struct htab procs;
	struct pproc *all;
	__u64 lost, suppressed;
};

static struct pproc *pproc_get(struct prom *pm, __u32 pid)
{
	__u64 h = hash_u64(pid);
	struct pproc *p;
	struct hnode *n;

	htab_for_each_possible(&pm->procs, n, h) {
		p = container_of(n, struct pproc, node);
		if (p->pid == pid)
			return p;
	}
	p = calloc(1, sizeof(*p));
	if (!p || htab_add(&pm->procs, &p->node, h)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->next = pm->all;
	pm->all = p;
	return p;
}

static void account(struct prom *pm, struct sc_stall *s)
{
	__u64 d = sc_stall_duration_ns(s);
	struct pproc *p = pproc_get(pm, s->pid);
	size_t i;

	if (!p)
		return;
	if (!p->comm[0] && s->samples)
		snprintf(p->comm, sizeof(p->comm), "%.16s", s->samples->v.s.comm);
	p->count++;
	p->sum_ns += d;
	for (i = 0; i < ARRAY_SIZE(prom_le); i++)
		if ((double)d / NSEC_PER_SEC <= prom_le[i]) {
			p->b[i]++;
			break;
		}
}

static int on_record(struct sc_sink *sk, const struct stallcap_rec_header *rec)
{
	struct prom *pm = (struct prom *)sk;
	struct sc_stall *s;

	if (rec->type == STALLCAP_REC_WATCH)
		return 0;
	s = stalls_add(&pm->st, rec);
	if (s && s->ended && !stall_defer_pending(s)) {
		account(pm, s);
		stalls_release(&pm->st, s);
	}
	return 0;
}

static int on_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	struct pproc *pp = pproc_get((struct prom *)sk, p->pid);

	if (pp)
		snprintf(pp->comm, sizeof(pp->comm), "%.16s", p->comm);
	return 0;
}

static int on_ksym(struct sc_sink *sk, const struct ksym *k)
{
	return 0;
}

static int on_lost(struct sc_sink *sk, __u64 lost, __u64 suppressed)
{
	((struct prom *)sk)->lost = lost;
	((struct prom *)sk)->suppressed = suppressed;
	return 0;
}

static int on_vdso(struct sc_sink *sk, const void *img, size_t len)
{
	return 0;
}

static int on_info(struct sc_sink *sk, const struct sc_host_info *hi)
{
	return 0;
}

/*
 * A label value: \, " and newline escaped, other control bytes '?', UTF-8
 * as it is, and each byte of anything else U+FFFD (a name the kernel cut
 * inside a character: Prometheus refuses a whole file for one such byte).
 */
static void label(FILE *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, len, end = strnlen(s, n);

	for (i = 0; i < end; i += len) {
		len = 1;
		if (s[i] == '\\' || s[i] == '"')
			fprintf(out, "\\%c", s[i]);
		else if (s[i] == '\n')
			fputs("\\n", out);
		else if (u[i] < 0x20 || u[i] == 0x7f)
			fputc('?', out);
		else if (u[i] < 0x80)
			fputc(s[i], out);
		else if ((len = utf8_len(u + i, end - i)))
			fwrite(s + i, 1, len, out);
		else
			fputs("\xef\xbf\xbd", out), len = 1;
	}
}

static void proc_labels(FILE *out, const struct pproc *p)
{
	fprintf(out, "pid=\"%u\",comm=\"", p->pid);
	label(out, p->comm, sizeof(p->comm));
	fputc('"', out);
}

static void print_file(FILE *out, struct prom *pm)
{
	const char *h = "stallcap_process_stall_duration_seconds";
	struct pproc *p;
	__u64 cum;
	size_t i;

	fputs("# HELP stallcap_process_stalls_total Stalls of the process in the record file.\n"
	      "# TYPE stallcap_process_stalls_total counter\n", out);
	for (p = pm->all; p; p = p->next) {
		fputs("stallcap_process_stalls_total{", out);
		proc_labels(out, p);
		fprintf(out, "} %llu\n", (unsigned long long)p->count);
	}
	fprintf(out, "# HELP %s How long the process's stalls lasted (end or last sample minus "
		"deadline).\n# TYPE %s histogram\n", h, h);
	for (p = pm->all; p; p = p->next) {
		for (i = 0, cum = 0; i < ARRAY_SIZE(prom_le); i++) {
			cum += p->b[i];
			fprintf(out, "%s_bucket{", h);
			proc_labels(out, p);
			fprintf(out, ",le=\"%g\"} %llu\n", prom_le[i], (unsigned long long)cum);
		}
		fprintf(out, "%s_bucket{", h);
		proc_labels(out, p);
		fprintf(out, ",le=\"+Inf\"} %llu\n%s_sum{", (unsigned long long)p->count, h);
		proc_labels(out, p);
		fprintf(out, "} %.9f\n%s_count{", (double)p->sum_ns / NSEC_PER_SEC, h);
		proc_labels(out, p);
		fprintf(out, "} %llu\n", (unsigned long long)p->count);
	}
	fprintf(out, "# HELP stallcap_file_records_lost_total Records the ring lost while "
		"recording.\n# TYPE stallcap_file_records_lost_total counter\n"
		"stallcap_file_records_lost_total %llu\n"
		"# HELP stallcap_file_stalls_suppressed_total Stalls the rate limit suppressed "
		"while recording.\n# TYPE stallcap_file_stalls_suppressed_total counter\n"
		"stallcap_file_stalls_suppressed_total %llu\n",
		(unsigned long long)pm->lost, (unsigned long long)pm->suppressed);
}

/** prom_file() - per-process metrics of the record file @path; 0 or -errno. */
int prom_file(FILE *out, const char *path)
{
	struct prom pm = {
		.sink = { on_record, on_proc, on_ksym, on_lost, on_vdso, on_info, NULL, NULL,
			  NULL, NULL },
	};
	struct pproc *p, *n;
	struct sc_stall *s;
	int ret;

	stalls_init(&pm.st);
	htab_init(&pm.procs);
	ret = scfile_read(path, &pm.sink);
	if (ret)
		warnx_("%s: %s", path, ret == -EPROTO ? "not a stallcap record file" :
		       strerror(-ret));
	else {
		for (s = pm.st.head; s; s = s->next)
			account(&pm, s);	/* ongoing, or waiting for a user stack */
		print_file(out, &pm);
	}
	stalls_free(&pm.st);
	for (p = pm.all; p; p = n) {
		n = p->next;
		free(p);
	}
	htab_free(&pm.procs);
	return ret;
}

static bool is_gauge(const char *name)
{
	return !strcmp(name, "watches") || !strcmp(name, "armed") || !strcmp(name, "attached") ||
	       !strcmp(name, "locked_bytes") || !strcmp(name, "locked_rlimit_bytes");
}

/* one module counter, named stallcap_NAME[_total] */
void prom_counter(FILE *out, const char *name, __u64 v, bool global)
{
	const char *t = is_gauge(name) ? "gauge" : "counter";

	fprintf(out, "# HELP stallcap_%s%s The module's %s counter (%s).\n"
		"# TYPE stallcap_%s%s %s\nstallcap_%s%s{scope=\"%s\"} %llu\n",
		name, is_gauge(name) ? "" : "_total", name, global ? "module-wide" : "session",
		name, is_gauge(name) ? "" : "_total", t,
		name, is_gauge(name) ? "" : "_total", global ? "module" : "session",
		(unsigned long long)v);
}
