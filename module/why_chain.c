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
 * The work runs on a high-priority unbound workqueue, so a SCHED_FIFO hog
 * on one CPU does not hold it (an idle CPU pulls it).  The thread may wake
 * between the chain walk and the capture: the sample is then flagged
 * STALLCAP_SAMPLE_RACED.  The watch outlives its work: watch_destroy()
 * cancels it (cancel_work_sync) before freeing.  One item runs at a time
 * (ordered queue), so one scratch buffer serves them all.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <asm/unistd.h>

#include "stallcap.h"
#include "why.h"

#define CHAIN_BYTES	(sizeof(struct stallcap_sec_wait) + \
			 2 * STALLCAP_MAX_OWNER_HOPS * STALLCAP_WHY_TASK_MAX)

static struct workqueue_struct *chain_wq;
static void *chain_buf;

/**
 * stallcap_why_wants_chain() - is @task blocked in a futex wait?
 * @task: the watched thread, off CPU (its stack held by the watch lock)
 *
 * Context: the watch's timer.  Reads only its saved user registers.
 */
bool stallcap_why_wants_chain(struct task_struct *task)
{
	struct pt_regs *regs;

	if (!chain_wq || READ_ONCE(task->on_cpu) ||
	    READ_ONCE(task->__state) == TASK_RUNNING ||
	    (task->flags & (PF_KTHREAD | PF_EXITING)) || !task->mm)
		return false;
	regs = task_pt_regs(task);
	return user_64bit_mode(regs) && regs->orig_ax == __NR_futex;
}

/** stallcap_why_queue_chain() - hand @w's sample to the chain work */
void stallcap_why_queue_chain(struct stallcap_watch *w)
{
	queue_work(chain_wq, &w->chain_work);
}

static unsigned long switches(struct task_struct *task)
{
	return READ_ONCE(task->nvcsw) + READ_ONCE(task->nivcsw);
}

static void chain_work_fn(struct work_struct *work)
{
	struct stallcap_watch *w = container_of(work, struct stallcap_watch,
						chain_work);
	struct stallcap_why_ctx ctx;
	unsigned long flags, sw;
	u32 len;

	stallcap_why_ctx_of(w, &ctx);
	sw = switches(w->task);
	len = stallcap_why_chain(&ctx, w->task, chain_buf, CHAIN_BYTES);
	raw_spin_lock_irqsave(&w->lock, flags);
	stallcap_watch_chain_done(w, chain_buf, len,
				  switches(w->task) != sw);
	raw_spin_unlock_irqrestore(&w->lock, flags);
}

/** stallcap_why_init_watch() - prepare @w's chain work */
void stallcap_why_init_watch(struct stallcap_watch *w)
{
	INIT_WORK(&w->chain_work, chain_work_fn);
}

/** stallcap_why_cancel() - wait for @w's chain work.  Process context. */
void stallcap_why_cancel(struct stallcap_watch *w)
{
	cancel_work_sync(&w->chain_work);
}

int stallcap_why_init(void)
{
	chain_buf = vmalloc(CHAIN_BYTES);
	if (!chain_buf)
		return -ENOMEM;
	chain_wq = alloc_ordered_workqueue("stallcap_why", WQ_HIGHPRI);
	if (!chain_wq) {
		vfree(chain_buf);
		chain_buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

void stallcap_why_exit(void)
{
	if (chain_wq)
		destroy_workqueue(chain_wq);
	vfree(chain_buf);
	chain_wq = NULL;
	chain_buf = NULL;
}
