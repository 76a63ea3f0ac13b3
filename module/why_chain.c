// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap owner chains in the samples: a sample of a thread blocked in a
 * futex wait is taken by a work item, not by the hard-IRQ timer, because
 * naming the futex's owner reads user memory (why_owner.c), which sleeps.
 *
 *   timer: thread off CPU, in futex wait --> WATCH_CHAINING, queue work
 *   work:  walk the chain (process context, no lock), then under the
 *          watch's lock: still CHAINING?  capture the thread as blocked
 *          (kernel stack, registers, times), append WAIT + TASK sections,
 *          publish, and hand the watch back to its timer
 *          (stallcap_watch_chain_done()); else the sample is lost (counted)
 *
 * The work runs on a high-priority workqueue bound to the CPU of the timer
 * that queued it: the blocked thread's CPU, which its thread leaves idle
 * for it, while the owner's CPU may be held by a SCHED_FIFO hog (an unbound
 * worker placed there waited out the hog on PREEMPT_RT).  The thread may
 * wake between the chain walk and the capture: the sample is then flagged
 * STALLCAP_SAMPLE_RACED.  The watch outlives its work: the session's
 * doomed work (watch.c) waits for it, without the session lock, before
 * freeing a destroyed watch.  Each run allocates its
 * scratch buffer (kvmalloc); without memory the sample has no chain.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <asm/unistd.h>

#include "compat.h"
#include "stallcap.h"
#include "why.h"

#define CHAIN_BYTES	(sizeof(struct stallcap_sec_wait) + \
			 2 * STALLCAP_MAX_OWNER_HOPS * STALLCAP_WHY_TASK_MAX)

static struct workqueue_struct *chain_wq;

/**
 * stallcap_why_wants_chain() - is @task blocked in a futex wait, or on a
 * kernel lock the kernel tracks (compat.h)?
 * @task: the watched thread, off CPU (its stack held by the watch lock)
 *
 * Context: the watch's timer.  Reads only its saved user registers.
 */
bool stallcap_why_wants_chain(struct task_struct *task)
{
	struct pt_regs regs;

	if (!chain_wq || READ_ONCE(task->on_cpu) ||
	    stallcap_task_state(task) == TASK_RUNNING ||
	    (task->flags & (PF_KTHREAD | PF_EXITING)) || !task->mm)
		return false;
	if (stallcap_task_blocker(task))
		return true;
	return stallcap_task_user_regs(task, &regs) && regs.orig_ax == __NR_futex;
}

/** stallcap_why_queue_chain() - hand @w's sample to the chain work */
void stallcap_why_queue_chain(struct stallcap_watch *w)
{
	queue_work_on(smp_processor_id(), chain_wq, &w->chain_work);
}

static unsigned long switches(struct task_struct *task)
{
	return READ_ONCE(task->nvcsw) + READ_ONCE(task->nivcsw);
}

static void chain_work_fn(struct work_struct *work)
{
	struct stallcap_watch *w = container_of(work, struct stallcap_watch,
						chain_work);
	void *buf = kvmalloc(CHAIN_BYTES, GFP_KERNEL);
	struct stallcap_why_ctx ctx;
	unsigned long flags, sw;
	u32 len = 0;

	stallcap_why_ctx_of(w, &ctx);
	sw = switches(w->task);
	if (buf)
		len = stallcap_why_chain(&ctx, w->task, buf, CHAIN_BYTES);
	raw_spin_lock_irqsave(&w->lock, flags);
	stallcap_watch_chain_done(w, buf, len, switches(w->task) != sw);
	raw_spin_unlock_irqrestore(&w->lock, flags);
	kvfree(buf);
}

/** stallcap_why_init_watch() - prepare @w's chain work */
void stallcap_why_init_watch(struct stallcap_watch *w)
{
	INIT_WORK(&w->chain_work, chain_work_fn);
}

/**
 * stallcap_why_cancel() - wait for @w's chain work
 * @w: a destroyed watch (its timer cancelled: nothing queues the work again)
 *
 * Context: process, no stallcap lock held (the work takes mmap_lock).
 */
void stallcap_why_cancel(struct stallcap_watch *w)
{
	cancel_work_sync(&w->chain_work);
}

int stallcap_why_init(void)
{
	chain_wq = alloc_workqueue("stallcap_why", WQ_HIGHPRI | STALLCAP_WQ_PERCPU, 0);
	return chain_wq ? 0 : -ENOMEM;
}

void stallcap_why_exit(void)
{
	if (chain_wq)
		destroy_workqueue(chain_wq);
	chain_wq = NULL;
}
