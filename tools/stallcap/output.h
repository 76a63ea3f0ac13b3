/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): the report side's output: the text, JSON and folded formats
 * of a resolved stall, aggregation (summary.c) and filters (filter.c), and
 * the exports (pprof, HTML, Prometheus).
 */
#ifndef STALLCAP_OUTPUT_H
#define STALLCAP_OUTPUT_H

#include "tool.h"

/* ---- formats ---- */

void fmt_text_stall(FILE *out, struct sc_rstall *rs);
void fmt_json_stall(FILE *out, struct sc_rstall *rs);
void fmt_text_stall_part(FILE *out, struct sc_rstall *rs, unsigned int from, unsigned int to,
			 bool live);
void fmt_json_stall_part(FILE *out, struct sc_rstall *rs, unsigned int from, unsigned int to,
			 bool live);
void fmt_json_lost(FILE *out, __u64 lost, __u64 suppressed);
void fmt_text_watch(FILE *out, const struct stallcap_watch_event *ev);
void fmt_json_watch(FILE *out, const struct stallcap_watch_event *ev);
const char *sc_origin_name(__u32 origin);
const char *sc_arch_name(__u32 arch);
bool sc_realtime(const struct sc_rstall *rs, const struct stallcap_sample *s, __u64 mono,
		 __u64 *rt);
/* what a sample says about why it stalled (format_why.c, issue 13) */
void fmt_text_why(FILE *out, const struct sc_rsample *r);
void sc_frame_line(FILE *out, const struct sc_frame *f, int i);
void fmt_json_why(FILE *out, const struct sc_rsample *r);
struct folded;
struct folded *folded_new(void);
void folded_add_stall(struct folded *fo, struct sc_rstall *rs);
void folded_print(struct folded *fo, FILE *out);
void folded_free(struct folded *fo);
void json_str(FILE *out, const char *s);
void json_strn(FILE *out, const char *s, size_t n);

/* ---- aggregation (summary.c) and filters (filter.c) ---- */

enum sc_group_by { SC_GROUP_BOTH, SC_GROUP_KERNEL, SC_GROUP_USER, SC_GROUP_STATE,
		   SC_GROUP_VERDICT, SC_GROUP_SYSCALL };
struct summary;
struct summary *summary_new(enum sc_group_by by);
void summary_add_stall(struct summary *sm, struct sc_rstall *rs);
void summary_print(struct summary *sm, FILE *out, unsigned int top);
void summary_free(struct summary *sm);
int parse_group_by(const char *arg, enum sc_group_by *by);
/* how long a stall lasted, and the part of it one sample stands for */
__u64 sc_stall_duration_ns(const struct sc_stall *st);
struct sc_weights {
	const struct sc_stall *st;
	const struct sc_sample *last;	/* the last sample of the stall */
	__u64 from;
	bool started;
};
void sc_weights_start(struct sc_weights *w, const struct sc_stall *st);
__u64 sc_weights_next(struct sc_weights *w, const struct sc_sample *m);
void sc_stack_key(FILE *m, const struct sc_rsample *r, bool user, bool kernel);

/**
 * struct sc_filter - which stalls a report shows (every field: 0 / NULL /
 * false matches everything)
 * @since_ns, @until_ns: CLOCK_REALTIME bounds of the first sample's capture
 * @states: bit (1 << STALLCAP_STATE_*): a stall matches if one sample has it
 */
struct sc_filter {
	__u32 pid, tid;
	const char *comm;
	__u64 tag;
	bool has_tag;
	__u64 min_ns;
	__u64 since_ns, until_ns;
	const char *since, *until;	/* as given: read by filter_finish() */
	unsigned int states;
	bool active;
};

int filter_parse_opt(struct sc_filter *f, int opt, const char *arg);
/** filter_finish() - after all options (-u changes --since/--until); 0 or -EINVAL. */
int filter_finish(struct sc_filter *f);
bool filter_match(const struct sc_filter *f, const struct sc_rstall *rs);
int parse_duration_ns(const char *arg, __u64 *ns);

#define FILTER_LONG_OPTIONS \
	{ "pid", required_argument, NULL, 'p' }, \
	{ "tid", required_argument, NULL, 't' }, \
	{ "comm", required_argument, NULL, 0x180 }, \
	{ "tag", required_argument, NULL, 0x181 }, \
	{ "min-duration", required_argument, NULL, 0x182 }, \
	{ "since", required_argument, NULL, 0x183 }, \
	{ "until", required_argument, NULL, 0x184 }, \
	{ "state", required_argument, NULL, 0x185 }
#define FILTER_SHORT_OPTIONS "p:t:"
#define FILTER_OPT_FIRST 0x180
#define FILTER_HELP \
"filters (a stall is shown if it matches all of them):\n" \
"  -p, --pid PID        stalls of process PID\n" \
"  -t, --tid TID        stalls of thread TID\n" \
"      --comm NAME      stalls of threads named NAME\n" \
"      --tag N          stalls of watches with user_tag N\n" \
"      --min-duration D stalls that lasted at least D (e.g. 50ms, 2s, 300us)\n" \
"      --since T, --until T   stalls that began from / up to T: a wall-clock\n" \
"                       time (2026-11-22T17:05:00, 17:05, UTC with -u), or\n" \
"                       relative to now (-10m, -2h, -30s)\n" \
"      --state S[,S]    stalls with a sample in state running, runnable, blocked\n"

/* ---- pprof (export_pprof.c) ---- */

struct pprof;
struct pprof *pprof_new(void);
void pprof_add_stall(struct pprof *pp, struct sc_rstall *rs);
int pprof_write(struct pprof *pp, FILE *out);
void pprof_free(struct pprof *pp);

/* ---- a self-contained HTML report (export_html.c) ---- */

struct html;
struct html *html_new(void);
void html_add_stall(struct html *h, struct sc_rstall *rs);
void html_write(struct html *h, FILE *out);
void html_free(struct html *h);

/* ---- Prometheus text format (prometheus.c) ---- */

int prom_file(FILE *out, const char *path);
void prom_counter(FILE *out, const char *name, __u64 v, bool global);

#endif /* STALLCAP_OUTPUT_H */
