// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: a thread that is inside a wait call at the attach goes
 * busy when that call returns.
 *
 * The call was entered before the probes could hook its return.  Where the
 * kernel exports task_work_add(), a task_work queued at the attach runs on
 * the thread's next return to user space and starts its busy period there,
 * unless a wait boundary was seen since.  Where it does not (upstream
 * Linux, compat.h), a poll of the attach's waiting threads every quarter of
 * its deadline (at least a jiffy) looks at each one's saved user registers,
 * as the attach did: once its call has returned, its busy period starts,
 * up to one poll period after the return, unless it already entered its
 * next wait (which its probes saw).  A call that returned to be resumed by
 * restart_syscall (a stop) is still the same wait.
 */
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"
#include "capture.h"

/* ---- with task_work_add(): on the thread's way back to user space ---- */

static void resumed_fn(struct callback_head *cb)
{
	struct stallcap_attach_twork *rt;
	struct stallcap_attach_ent *a;

	rt = container_of(cb, struct stallcap_attach_twork, twork);
	a = rt->a;
	kfree(rt);
	if (current->mm == a->mm && !READ_ONCE(a->dead) &&
	    !(current->flags & PF_EXITING) && !fatal_signal_pending(current) &&
	    stallcap_current_call_returned())
		stallcap_watch_attached_resumed(a,
					stallcap_current_call_restartable());
	stallcap_attach_put(a);
	module_put(THIS_MODULE);
}

/*
 * A task_work (allocated here, not from the pool: a thread may sit in its
 * wait for as long as it likes).  One that runs before the call returned
 * (io_uring_enter runs task_works inside its wait) leaves the thread idle
 * until its next wait: a task_work cannot queue itself again from there.
 */
static int resume_by_task_work(struct stallcap_attach_ent *a,
			       struct task_struct *task)
{
	struct stallcap_attach_twork *rt;

	rt = kmalloc(sizeof(*rt), GFP_KERNEL_ACCOUNT);
	if (!rt)
		return -ENOMEM;
	if (!refcount_inc_not_zero(&a->ref)) {
		kfree(rt);
		return 0;
	}
	__module_get(THIS_MODULE);
	rt->a = a;
	init_task_work(&rt->twork, resumed_fn);
	atomic_set(&stallcap_task_works_used, 1);	/* stallcap_defer_exit() */
	if (sc_task_work_add(task, &rt->twork, TWA_RESUME)) {
		kfree(rt);	/* exiting: its watch ends with it */
		stallcap_attach_put(a);
		module_put(THIS_MODULE);
	}
	return 0;
}

/* ---- without: a poll of the waiting threads ---- */

static unsigned long resume_poll_period(const struct stallcap_attach_ent *a)
{
	return max(1UL, nsecs_to_jiffies(a->timeout_ns / 4));
}

/*
 * @w's thread was inside a wait call at the attach: does it need another
 * look?  Not once it entered or left a wait call the probes saw, nor once
 * its call returned (it goes busy now).  RCU read side.
 */
static bool resume_poll_watch(struct stallcap_watch *w, struct task_struct *t)
{
	if (!READ_ONCE(w->wait_seen) &&
	    !stallcap_task_left_wait_call(t, w->attach->waits))
		return true;
	if (!READ_ONCE(w->wait_seen))
		stallcap_watch_busy_unless_waited(w, ktime_get_mono_fast_ns());
	WRITE_ONCE(w->resume_pending, false);
	return false;
}

static void resume_poll_fn(struct work_struct *work)
{
	struct stallcap_attach_ent *a = container_of(to_delayed_work(work),
						     struct stallcap_attach_ent,
						     resume_poll);
	unsigned int pending = 0;
	struct stallcap_watch *w;
	struct task_struct *t;

	rcu_read_lock();
	for_each_thread(a->leader, t)
		stallcap_for_each_watch_of_task(w, t)
			if (w->task == t && w->attach == a &&
			    READ_ONCE(w->resume_pending))
				pending += resume_poll_watch(w, t);
	rcu_read_unlock();
	if (pending && !READ_ONCE(a->dead))
		schedule_delayed_work(&a->resume_poll, resume_poll_period(a));
}

/* sess->lock held: @task's watch by @a exists (attach_present_threads()). */
static int resume_by_poll(struct stallcap_attach_ent *a,
			  struct task_struct *task)
{
	struct stallcap_watch *w = stallcap_watch_find_attached(a->sess, task, a);

	if (!w)
		return 0;
	WRITE_ONCE(w->resume_pending, true);
	schedule_delayed_work(&a->resume_poll, resume_poll_period(a));
	return 0;
}

/**
 * stallcap_attach_resume_late() - @task's watch was made by a worker
 * (compat.h), not on its way back from a wait call: a new thread's after its
 * first one, or a followed process's when it entered one before
 * @a: the attach
 * @task: the thread (compared only: it may have exited)
 *
 * Unless a wait boundary came since: out of its wait calls now, it is busy
 * from now; inside one, it goes busy when that call returns (its return
 * probe, or the poll when that call's return was not hooked).
 * Context: process, sess->lock held.
 */
void stallcap_attach_resume_late(struct stallcap_attach_ent *a,
				 const struct task_struct *task)
{
	struct stallcap_watch *w = stallcap_watch_find_attached(a->sess, task, a);

	/* @task is only compared: the watch holds its thread */
	if (!w || READ_ONCE(w->wait_seen))
		return;
	if (stallcap_task_left_wait_call(w->task, a->waits))
		stallcap_watch_busy_unless_waited(w, ktime_get_mono_fast_ns());
	else
		resume_by_poll(a, w->task);
}

/**
 * stallcap_attach_resume_request() - @task's watch, made at the attach
 * while @task is inside a wait call, goes busy when that call returns
 * @a: the attach
 * @task: the thread
 *
 * A thread that is not inside such a call is left idle until its next one.
 * Context: process, sess->lock held.
 * Return: 0, or -ENOMEM.
 */
int stallcap_attach_resume_request(struct stallcap_attach_ent *a,
				   struct task_struct *task)
{
	if (!stallcap_task_in_wait_call(task, a->waits))
		return 0;
	if (SC_HAVE_TASK_WORK)
		return resume_by_task_work(a, task);
	return resume_by_poll(a, task);
}

/** stallcap_attach_resume_init() - @a is new.  Context: any. */
void stallcap_attach_resume_init(struct stallcap_attach_ent *a)
{
	INIT_DELAYED_WORK(&a->resume_poll, resume_poll_fn);
}

/**
 * stallcap_attach_resume_stop() - @a is dead: no more polls
 * @a: the attach
 *
 * Context: process (waits for a poll running now).
 */
void stallcap_attach_resume_stop(struct stallcap_attach_ent *a)
{
	cancel_delayed_work_sync(&a->resume_poll);
}
