/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap report: what the report engine (report.c) and its command line
 * (report_cmd.c) share.
 */
#ifndef STALLCAP_REPORT_H
#define STALLCAP_REPORT_H

#include "tool.h"
#include "output.h"

/* --format */
enum report_format { FMT_TEXT, FMT_JSON, FMT_FOLDED, FMT_TOP, FMT_PPROF, FMT_HTML };

struct report {
	struct sc_sink sink;	/* first: callbacks find the report */
	struct stalls st;
	struct resolver r;
	enum report_format fmt;
	bool live;
	struct folded *fo;
	struct summary *sm;
	struct pprof *pp;
	struct html *html;
	unsigned int top;		/* --top N: groups shown (0: all) */
	enum sc_group_by group_by;
	struct sc_filter filt;
	FILE *out;
	__u64 lost, suppressed, samples;
	bool same_boot;
	const char *kallsyms;		/* --kallsyms, or NULL */
	struct sc_host_info host;	/* as the input gave it (host_flags 0: not) */
	unsigned int printed;
	unsigned int max_stalls;	/* --max-stalls: stalls held at once */
	__u64 evicted;			/* stalls let go of over max_stalls */
	__u64 yielding;			/* stalls shown in sched_yield() throughout */
};

/** report_init() - a report to stdout, its sink's callbacks set */
void report_init(struct report *rp);
/** report_setup() - allocate what the options chose; 0 or -ENOMEM. */
int report_setup(struct report *rp);
/** report_finish() - print what is left and the summary (@failed: the input was cut). */
void report_finish(struct report *rp, bool failed);
void report_teardown(struct report *rp);

#endif /* STALLCAP_REPORT_H */
