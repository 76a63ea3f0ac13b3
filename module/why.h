/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap "why it stalled": where the time went (why_times.c) and the
 * other tasks that explain a stall (why_task.c): what ran on the thread's
 * CPU instead, and who holds what it waits on.
 */
#ifndef STALLCAP_WHY_H
#define STALLCAP_WHY_H

#include <linux/types.h>
#include <linux/stallcap.h>

struct task_struct;
struct stallcap_watch;
struct stallcap_capture_req;
struct stallcap_rec_writer;
struct stallcap_sample;
struct pt_regs;
struct mm_struct;
struct pid_namespace;

/**
 * struct stallcap_times_snap - a thread's counters at one instant
 * @at_ns: CLOCK_MONOTONIC time of the snapshot
 * @valid: STALLCAP_TIME_* bits of the fields read
 * @cpu: the thread's CPU (per-CPU counters are that CPU's)
 * @running: TASK_RUNNING (on a CPU or queued)
 * @on_cpu: CPU time (ns)
 * @utime: user time as accounted (ns)
 * @stime: system time as accounted (ns)
 * @run_delay: run-queue wait (ns), the wait in progress included
 * @nvcsw: voluntary context switches
 * @nivcsw: involuntary context switches
 * @min_flt: minor faults
 * @maj_flt: major faults
 * @blkio: delay accounting: block I/O (ns)
 * @swapin: delay accounting: swap-in (ns)
 * @reclaim: delay accounting: direct reclaim (ns)
 * @compact: delay accounting: compaction (ns)
 * @thrashing: delay accounting: thrashing (ns)
 * @cpu_irqs: hard interrupts taken on @cpu
 * @cpu_softirqs: softirqs run on @cpu
 * @cpu_irq_ns: hard-interrupt time of @cpu
 * @cpu_softirq_ns: softirq time of @cpu
 * @steal_ns: steal time of @cpu
 */
struct stallcap_times_snap {
	u64 at_ns;
	u64 valid;
	int cpu;
	bool running;
	u64 on_cpu, utime, stime, run_delay;
	u64 nvcsw, nivcsw, min_flt, maj_flt;
	u64 blkio, swapin, reclaim, compact, thrashing;
	u64 cpu_irqs, cpu_softirqs, cpu_irq_ns, cpu_softirq_ns, steal_ns;
};

void stallcap_times_refresh(void);
void stallcap_times_snap(struct task_struct *task,
			 struct stallcap_times_snap *sn, u64 now);
u32 stallcap_times_fill(const struct stallcap_times_snap *a,
			struct stallcap_times_snap *b,
			struct stallcap_sec_times *t);

/**
 * struct stallcap_why_ctx - what a task section may show to this reader
 * @kaddr_visible: the session may see kernel addresses
 * @may_trace_all: the opener had CAP_SYS_PTRACE: any task's user stack
 * @mm: the watched thread's address space: user stacks of tasks that share
 *	it are shown to every reader of the session (it captures that
 *	process already)
 * @ns: the opener's pid namespace (for ns_pid/ns_tid), or NULL
 */
struct stallcap_why_ctx {
	bool kaddr_visible;
	bool may_trace_all;
	const struct mm_struct *mm;
	struct pid_namespace *ns;
};

/* Largest STALLCAP_SEC_TASK section (both frame lists full). */
#define STALLCAP_WHY_TASK_MAX	STALLCAP_SECTION_TASK_MAX

u32 stallcap_why_runner(const struct stallcap_why_ctx *ctx,
			struct pt_regs *regs, void *dst);
u32 stallcap_why_task(const struct stallcap_why_ctx *ctx,
		      struct task_struct *task, u16 role, u16 hop, void *dst);
u8 stallcap_why_state(struct task_struct *task);
bool stallcap_task_user_regs(struct task_struct *task, struct pt_regs *regs);
bool stallcap_why_user_visible(const struct stallcap_why_ctx *ctx,
			       struct task_struct *task);
u32 stallcap_why_chain(const struct stallcap_why_ctx *ctx,
		       struct task_struct *task, void *dst, u32 room);

/* in the sample records (why_record.c) */
void stallcap_why_ctx_of(const struct stallcap_watch *w,
			 struct stallcap_why_ctx *ctx);
void stallcap_why_rebase(struct stallcap_watch *w, u64 now);
bool stallcap_why_runnable(struct task_struct *task);
void stallcap_why_put_times(struct stallcap_rec_writer *wr,
			    struct stallcap_watch *w, struct task_struct *task,
			    u64 now);
void stallcap_why_published(struct stallcap_watch *w);
void stallcap_why_note_runner(struct stallcap_capture_req *req,
			      struct pt_regs *regs);
void stallcap_why_put_blocked(struct stallcap_rec_writer *wr,
			      struct stallcap_watch *w,
			      struct task_struct *task,
			      const struct stallcap_sample *s);

/* owner chains in the samples (why_chain.c) */
bool stallcap_why_wants_chain(struct task_struct *task);
void stallcap_why_queue_chain(struct stallcap_watch *w);
void stallcap_why_init_watch(struct stallcap_watch *w);
void stallcap_why_cancel(struct stallcap_watch *w);
int stallcap_why_init(void);
void stallcap_why_exit(void);

#endif /* STALLCAP_WHY_H */
