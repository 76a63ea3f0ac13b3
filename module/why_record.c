// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap "why it stalled" in the sample records: the time breakdown of
 * every sample (STALLCAP_SEC_TIMES over [arm, progress or previous sample;
 * capture]) and, for a thread that is runnable but not running, what runs
 * on its CPU instead (a STALLCAP_SEC_TASK of role RUNNER):
 *  - the watch's timer expiring on the thread's own CPU interrupted that
 *    task: it is `current`, with the interrupted registers;
 *  - on another CPU the timer sends the NMI/IPI capture as for a running
 *    thread (for_runner); the handler, finding another task, describes it
 *    into that CPU's capture buffer, and the timer's blocked capture
 *    appends it.
 * Context: what the capture paths run in (hard-IRQ timer, NMI/IPI); the
 * watch's lock or the request's ownership serialises the watch's fields.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <asm/irq_regs.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"
#include "why.h"

/**
 * stallcap_why_ctx_of() - what @w's reader may see in task sections
 * @w: the watch
 * @ctx: output
 */
void stallcap_why_ctx_of(const struct stallcap_watch *w,
			 struct stallcap_why_ctx *ctx)
{
	ctx->kaddr_visible = w->sess->kaddr_visible;
	ctx->may_trace_all = w->sess->may_trace_all;
	ctx->mm = w->mm;
	ctx->ns = w->sess->pid_ns;
}

/**
 * stallcap_why_rebase() - the next sample's interval starts now
 * @w: the watch (lock held, no capture in flight)
 * @now: CLOCK_MONOTONIC now
 */
void stallcap_why_rebase(struct stallcap_watch *w, u64 now)
{
	stallcap_times_snap(w->task, &w->times_base, now);
	w->req.times_taken = false;
}

/**
 * stallcap_why_runnable() - @task waits on a run queue (preempted)
 * @task: the thread
 */
bool stallcap_why_runnable(struct task_struct *task)
{
	return stallcap_task_state(task) == TASK_RUNNING &&
	       !READ_ONCE(task->on_cpu) && !task->exit_state;
}

/**
 * stallcap_why_put_times() - the sample's STALLCAP_SEC_TIMES section
 * @wr: the record being built
 * @w: the watch
 * @task: its thread
 * @now: the capture's CLOCK_MONOTONIC time
 */
void stallcap_why_put_times(struct stallcap_rec_writer *wr,
			    struct stallcap_watch *w, struct task_struct *task,
			    u64 now)
{
	struct stallcap_times_snap *cur = &w->req.times_now;
	u32 len;

	stallcap_times_snap(task, cur, now);
	len = stallcap_times_fill(&w->times_base, cur, stallcap_sec_start(wr));
	stallcap_sec_end(wr, STALLCAP_SEC_TIMES, len);
	w->req.times_taken = true;
}

/**
 * stallcap_why_published() - a sample was published: its capture's
 * counters start the next interval
 * @w: the watch
 */
void stallcap_why_published(struct stallcap_watch *w)
{
	if (!w->req.times_taken)
		return;
	w->times_base = w->req.times_now;
	w->req.times_taken = false;
}

/**
 * stallcap_why_note_runner() - NMI/IPI handler: describe the task found on
 * the CPU instead of the runnable thread
 * @req: the request (its for_runner set)
 * @regs: the interrupted registers
 *
 * The section goes into this CPU's NMI/IPI capture buffer, held for @req
 * until its timer has read it (stallcap_why_put_blocked(), or the timer
 * releases it unread).  A buffer held for another capture leaves the
 * sample without its runner.
 */
void stallcap_why_note_runner(struct stallcap_capture_req *req,
			      struct pt_regs *regs)
{
	void *dst = stallcap_capture_buf_remote();
	struct stallcap_why_ctx ctx;

	if (!dst)
		return;
	stallcap_capture_buf_hold(req);
	stallcap_why_ctx_of(req->watch, &ctx);
	req->runner_len = stallcap_why_runner(&ctx, regs, dst);
}

static void put_runner_here(struct stallcap_rec_writer *wr,
			    struct stallcap_watch *w, struct task_struct *task)
{
	struct stallcap_why_ctx ctx;
	struct pt_regs *regs;
	u32 len;

	if (!in_hardirq() || in_nmi() || current == task ||
	    task_cpu(task) != smp_processor_id())
		return;
	regs = get_irq_regs();
	if (!regs)
		return;
	stallcap_why_ctx_of(w, &ctx);
	len = stallcap_why_runner(&ctx, regs, stallcap_sec_start(wr));
	stallcap_sec_end(wr, STALLCAP_SEC_TASK, len);
}

/**
 * stallcap_why_put_blocked() - sections of a thread captured off CPU
 * @wr: the record being built
 * @w: the watch
 * @task: its thread
 * @s: the fixed part (capture time and state set)
 *
 * Context: the watch's timer (hard-IRQ), lock held.
 */
void stallcap_why_put_blocked(struct stallcap_rec_writer *wr,
			      struct stallcap_watch *w,
			      struct task_struct *task,
			      const struct stallcap_sample *s)
{
	struct stallcap_capture_req *req = &w->req;
	const struct stallcap_sec_task *runner = NULL;

	stallcap_why_put_times(wr, w, task, s->capture_ns);
	if (s->state != STALLCAP_STATE_RUNNABLE)
		return;
	if (req->for_runner && req->runner_len && req->cpu >= 0)
		runner = stallcap_capture_buf_held(req);
	/* the runner the NMI/IPI handler found, if the thread is still there */
	if (runner && runner->cpu == task_cpu(task)) {
		memcpy(stallcap_sec_start(wr), runner, req->runner_len);
		stallcap_sec_end(wr, STALLCAP_SEC_TASK, req->runner_len);
		return;
	}
	put_runner_here(wr, w, task);
}
