/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): what the live collector (collect.c) and the metadata it
 * sends the sink before the records that need it (collect_meta.c: the
 * processes' maps, the kernel symbols) share.
 */
#ifndef STALLCAP_COLLECT_H
#define STALLCAP_COLLECT_H

#include "tool.h"

struct pid_entry {
	struct hnode node;
	struct pid_entry *all_next;
	__u32 pid;
	__u32 proc_pid;		/* its pid in /proc, 0: not known yet */
	__u64 snap_ns;
	__u64 seen_ns;		/* its last record */
	struct sc_proc *proc;	/* latest snapshot, NULL if it failed */
};

/* A set of thread or process ids (collect_unwatched.c). */
struct id_set {
	struct htab h;
	struct id_entry *all;
};

/* A kernel symbol address already sent to the sink. */
struct ksym_sent {
	struct hnode node;
	struct ksym_sent *all_next;
	__u64 addr;
};

struct collector {
	const struct collect_opts *o;
	struct sc_sink *sk;
	struct stallcap_session *s;
	struct ksyms *ks;
	int ks_err;			/* 1: not loaded yet */
	char *modules;			/* /proc/modules' names and addresses then */
	__u64 modules_checked_ns;
	bool ks_warned;			/* the error was said */
	struct htab ksym_done;		/* struct ksym_sent by address */
	struct ksym_sent *ksyms_sent;
	struct htab pids;		/* struct pid_entry by pid */
	struct pid_entry *all_pids;
	__u64 pruned_ns;		/* last look for exited processes */
	struct buildid_cache *bc;
	__u64 lost, suppressed, records;
	__u64 attached_stalls;		/* first samples of attached watches */
	__u64 futex_stalls;		/* of those, waiting on a futex */
	__u64 receive_stalls;		/* or in a receive (without --recv) */
	pid_t cmd_pid;			/* the command run, 0 if none */
	struct id_set watched;		/* threads with a watch (/proc tids) */
	struct id_set scanned;		/* their processes, listed */
	struct htab unwatched;		/* threads seen without one */
	struct unwatched *unwatched_all;
	__u64 unwatched_scanned_ns;
	__u64 unwatched_scans;
	unsigned int unwatched_kept;	/* gone, kept to be named */
	unsigned int unwatched_dropped;	/* gone, used CPU, not kept */
	__u64 started_ticks;		/* clock ticks since boot at the start */
	bool same_pid_ns;		/* the records' ns ids are this tool's */
	bool watch_busy_told;		/* STALLCAP_FEAT_WATCH_BUSY */
	/* the sample being read: its system call, what its fd is open on */
	bool has_syscall;
	struct stallcap_sec_syscall sys;
	char fd_link[4096];		/* "" when none or not readable */
	int err;
};

/* ---- threads never watched (collect_unwatched.c) ---- */
void unwatched_saw_watch(struct collector *c, __u32 pid, __u32 tid, bool busy);
void unwatched_scan(struct collector *c, __u64 now, bool force);
void unwatched_hint(struct collector *c);
void unwatched_free(struct collector *c);

/* ---- processes' maps and kernel symbols for the sink (collect_meta.c) ---- */
struct pid_entry *pid_get(struct collector *c, __u32 pid);
void see_process(struct collector *c, const struct stallcap_sample_view *v);
void pid_free(struct collector *c, struct pid_entry **pp);
void prune(struct collector *c, __u64 now);
void load_ksyms(struct collector *c);
void see_kernel(struct collector *c, const struct stallcap_sample_view *v);

#endif /* STALLCAP_COLLECT_H */
