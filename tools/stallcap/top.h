/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap top: what its data model (top.c: threads, stalls held, recent
 * ones, rates) and its terminal drawing (top_draw.c) share.
 */
#ifndef STALLCAP_TOP_H
#define STALLCAP_TOP_H

#include "tool.h"

#define MAX_THREADS	4096
#define MAX_RECENT	64
#define RECENT_NS	(10 * NSEC_PER_SEC)
#define LINE_FRAMES	6

/** struct top_thread - one thread that stalled */
struct top_thread {
	struct hnode node;
	__u32 tid, pid;
	char comm[16];
	__u64 total;		/* stalls seen */
	__u64 win_stalls;	/* stalls begun in the current interval */
	__u64 win_over_ns;	/* over-deadline time of stalls ended in it */
	double rate, over_rate;	/* of the last interval, per second */
	__u64 now_over_ns;	/* its worst stall in progress (1: just begun), 0: none */
	__u64 max_over_ns;
	__u64 last_ns;		/* last record, CLOCK_MONOTONIC of the tool */
};

/** struct top_line - a stall as the worst list shows it */
struct top_line {
	bool ongoing;
	__u64 over_ns, timeout_ns, stall_id, at_ns;
	__u32 tid, nr;
	char comm[16];
	char what[48];
	char kern[160], user[160];
	const struct sc_stall *src;	/* ongoing: resolved only if shown */
};

struct top {
	struct sc_sink sink;	/* first */
	struct stalls st;
	struct resolver r;
	FILE *out;
	bool batch;
	unsigned int frames, max_frames;
	double delay;
	unsigned int max_stalls;
	__u64 last_frame_ns;
	__u64 evicted, lost, suppressed, watched, threads_dropped;
	struct htab threads;
	unsigned int nthreads;
	struct top_line recent[MAX_RECENT];
	unsigned int nrecent;
	bool done;
};

struct top_thread *top_thread_find(struct top *tp, __u32 tid);
/** top_thread_list() - the threads in an array (malloc'd), NULL if out of memory */
struct top_thread **top_thread_list(struct top *tp);
/** top_over_ns() - how far past its deadline @s is at @now (ongoing) or was (ended) */
__u64 top_over_ns(const struct sc_stall *s, __u64 now);
/** top_make_line() - the stall as the worst list shows it */
void top_make_line(struct top *tp, const struct sc_stall *s, __u64 now, struct top_line *l);
/** top_close_interval() - prune what is too old, make the interval's rates the shown ones */
void top_close_interval(struct top *tp, __u64 now, double secs);

#endif /* STALLCAP_TOP_H */
