// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attached watches (STALLCAP_IOC_ATTACH, attach.c): the thread's
 * wait-call probes (attach_wait.c) mark its watches busy when a wait call
 * returns (the deadline starts) and idle when one is entered (the deadline
 * stops), as ARM and DISARM do for an explicit watch.  A wait stopped and
 * continued returns to be resumed by restart_syscall: the function in the
 * thread's restart block then tells whether the resumed call is the wait
 * that the watch counted.  Watches are created, found and freed in watch.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"

/*
 * A stall of the thread is seen from now on: the reader is told once, after
 * the watch's STALLCAP_WATCH_STARTED (stallcap_watch_announce()).
 * Context: w->lock held.
 */
static void watch_tell_busy(struct stallcap_watch *w)
{
	if (w->busy_told)
		return;
	if (!w->started_told) {
		w->busy_pending = true;
		return;
	}
	w->busy_told = true;
	stallcap_attach_watch_event(w, STALLCAP_WATCH_BUSY);
}

static void watch_busy(struct stallcap_watch *w, u64 now, bool unless_waited)
{
	u64 deadline = now + w->timeout_ns;
	unsigned long flags;
	bool lazy;

	raw_spin_lock_irqsave(&w->lock, flags);
	if (w->dead || (unless_waited && READ_ONCE(w->wait_seen)))
		goto out;
	lazy = hrtimer_is_queued(&w->timer) &&
	       ktime_to_ns(hrtimer_get_expires(&w->timer)) <= deadline;
	stallcap_watch_begin_deadline(w, now, deadline);
	if (!lazy)
		stallcap_watch_timer_start(w, deadline);
	watch_tell_busy(w);
out:
	raw_spin_unlock_irqrestore(&w->lock, flags);
}

/**
 * stallcap_watch_announce() - tell the reader of @w's attach that the
 * thread is watched (STALLCAP_WATCH_STARTED)
 * @w: a watch just made by stallcap_attach_watch_task()
 *
 * The watch is in the hash of watches by thread before it is announced: its
 * thread may go busy, or exit, in between.  Under the watch's lock the
 * records come in their order whatever happened first: STARTED, then BUSY
 * if the thread went busy meanwhile, then ENDED if the watch ended.
 * Context: process.
 */
void stallcap_watch_announce(struct stallcap_watch *w)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&w->lock, flags);
	w->started_told = true;
	stallcap_attach_watch_event(w, STALLCAP_WATCH_STARTED);
	if (w->busy_pending)
		watch_tell_busy(w);
	if (w->dead)
		stallcap_attach_watch_event(w, STALLCAP_WATCH_ENDED);
	raw_spin_unlock_irqrestore(&w->lock, flags);
}

/**
 * stallcap_watch_busy() - an attached thread left its wait call: its
 * deadline starts (as STALLCAP_IOC_REARM)
 * @w: the watch
 * @now: the time (ns)
 *
 * A timer still queued from an earlier busy period at an earlier expiry is
 * left alone: its callback re-queues it at the new deadline, so an event
 * loop touches its timer about once per timeout, not once per iteration.
 * Context: any but NMI.
 */
void stallcap_watch_busy(struct stallcap_watch *w, u64 now)
{
	watch_busy(w, now, false);
}

/**
 * stallcap_watch_busy_unless_waited() - the same, from another context
 * than the thread's, unless the thread was seen to enter or leave a wait
 * call: checked under the watch's lock, which that thread's boundary takes
 * after it sets wait_seen (stallcap_watches_attached_mark())
 * @w: the watch
 * @now: the time (ns)
 *
 * Context: any but NMI.
 */
void stallcap_watch_busy_unless_waited(struct stallcap_watch *w, u64 now)
{
	watch_busy(w, now, true);
}

/**
 * stallcap_watch_idle() - an attached thread entered its wait call: its
 * deadline stops and a stall in progress ends (as STALLCAP_IOC_DISARM)
 * @w: the watch
 * @now: the time (ns), or 0: the end of a stall in progress reads the
 *	clock itself (stallcap_watch_end_stall()), and an iteration without
 *	a stall needs no time at all
 *
 * A queued timer stays queued: it expires once more and finds the watch
 * idle.  Context: any but NMI.
 */
void stallcap_watch_idle(struct stallcap_watch *w, u64 now)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&w->lock, flags);
	if (!w->dead && w->state != WATCH_IDLE) {
		stallcap_watch_end_stall(w, now);
		WRITE_ONCE(w->state, WATCH_IDLE);
		stallcap_watch_count_armed(w, false);
	}
	raw_spin_unlock_irqrestore(&w->lock, flags);
}

/*
 * @w's thread left (@busy) or entered a wait.  Leaving it starts the
 * deadline at *@now, read at the first watch found: every process's wait
 * calls come through here, the clock is read only for a watched thread.
 * Entering it reads no clock (a clock read is the most expensive part of
 * an iteration's hooks under TCG, which emulates the TSC).
 */
static void watch_mark(struct stallcap_watch *w, bool busy, u64 *now)
{
	if (!busy) {
		stallcap_watch_idle(w, 0);
		return;
	}
	if (!*now)
		*now = ktime_get_mono_fast_ns();
	stallcap_watch_busy(w, *now);
}

/*
 * @w's thread (@task, current) left a counted wait call to be resumed by
 * restart_syscall (@restartable), or not: the function that will resume it
 * is in its restart block now.
 */
static void watch_restart_set(struct stallcap_watch *w,
			      struct task_struct *task, bool restartable)
{
	WRITE_ONCE(w->restart_fn,
		   restartable ? READ_ONCE(task->restart_block.fn) : NULL);
}

/* Will the restart_syscall that @task (current) enters resume @w's wait? */
static bool watch_restart_pending(const struct stallcap_watch *w,
				  struct task_struct *task)
{
	long (*fn)(struct restart_block *restart) = READ_ONCE(w->restart_fn);

	return fn && fn == READ_ONCE(task->restart_block.fn);
}

/**
 * stallcap_watches_attached_mark() - mark @task's attached watches busy
 * (left a wait call) or idle (entered one)
 * @task: the current thread
 * @busy: which
 * @kind: the call's, enum stallcap_wait_kind: only the watches of attaches
 *	that count that kind see it
 * @restartable: (@busy) the call returned to be resumed by restart_syscall
 *	if no signal handler runs (-ERESTART_RESTARTBLOCK)
 *
 * Context: the thread's kretprobe handler.
 * Return: how many attached watches @task has (that count the call).
 */
unsigned int stallcap_watches_attached_mark(struct task_struct *task,
					    bool busy, unsigned int kind,
					    bool restartable)
{
	struct stallcap_watch *w;
	unsigned int found = 0;
	u64 now = 0;

	rcu_read_lock();
	stallcap_for_each_watch_of_task(w, task) {
		if (w->task != task || !w->attach || !(w->attach->waits & kind))
			continue;
		WRITE_ONCE(w->wait_seen, true);
		WRITE_ONCE(w->in_restart, false);
		watch_restart_set(w, task, busy && restartable);
		watch_mark(w, busy, &now);
		found++;
	}
	rcu_read_unlock();
	return found;
}

/*
 * Is @w's thread, entering (@entering) or leaving restart_syscall, resuming
 * a wait that @w counted?  The pending restart (restart_fn) moves to
 * in_restart at the entry, and back (if the call returned to be restarted
 * again) at the return.
 */
static bool watch_restart_step(struct stallcap_watch *w,
			       struct task_struct *task, bool entering,
			       bool restartable)
{
	if (entering) {
		if (!watch_restart_pending(w, task))
			return false;
		WRITE_ONCE(w->restart_fn, NULL);
		WRITE_ONCE(w->in_restart, true);
		return true;
	}
	if (!READ_ONCE(w->in_restart))
		return false;
	WRITE_ONCE(w->in_restart, false);
	watch_restart_set(w, task, restartable);
	return true;
}

/**
 * stallcap_watches_attached_restart() - restart_syscall resumes a wait
 * call: the watches that counted it go idle again (@entering) or busy (its
 * return)
 * @task: the current thread
 * @entering: the entry of restart_syscall, else its return
 * @restartable: (return) it returned to be restarted again
 *
 * A wait interrupted by a signal that no handler takes (a stop and a
 * continue, a tracer, the freezer) returns -ERESTART_RESTARTBLOCK and is
 * resumed by restart_syscall, whose probe comes here: without it the thread
 * stayed busy through the rest of its wait.
 * Context: the thread's kretprobe handler, not from the trap.
 * Return: how many watches it moved.
 */
unsigned int stallcap_watches_attached_restart(struct task_struct *task,
					       bool entering, bool restartable)
{
	struct stallcap_watch *w;
	unsigned int found = 0;
	u64 now = 0;

	rcu_read_lock();
	stallcap_for_each_watch_of_task(w, task) {
		if (w->task != task || !w->attach ||
		    !watch_restart_step(w, task, entering, restartable))
			continue;
		watch_mark(w, !entering, &now);
		found++;
	}
	rcu_read_unlock();
	return found;
}

/**
 * stallcap_watches_restart_pending() - has @task an attached watch whose
 * wait returned to be restarted?
 * @task: the current thread
 *
 * Context: any, NMI included (RCU lookup, no lock).
 */
bool stallcap_watches_restart_pending(struct task_struct *task)
{
	struct stallcap_watch *w;
	bool pending = false;

	rcu_read_lock();
	stallcap_for_each_watch_of_task(w, task)
		if (w->task == task && w->attach &&
		    watch_restart_pending(w, task))
			pending = true;
	rcu_read_unlock();
	return pending;
}

/**
 * stallcap_watch_attached_resumed() - the current thread was inside a wait
 * call when @a attached it, and is on its way back to user space: its
 * watch by @a goes busy now, unless it saw a wait boundary since
 * @a: the attach
 * @restartable: the call returned to be resumed by restart_syscall (a stop):
 *	that call counts as the same wait
 *
 * Only the thread itself marks its boundaries: nothing races with the
 * check.  Context: the thread's task_work (attach_follow.c).
 */
void stallcap_watch_attached_resumed(const struct stallcap_attach_ent *a,
				     bool restartable)
{
	struct stallcap_watch *w;

	rcu_read_lock();
	stallcap_for_each_watch_of_task(w, current)
		if (w->task == current && w->attach == a &&
		    !READ_ONCE(w->wait_seen)) {
			watch_restart_set(w, current, restartable);
			stallcap_watch_busy(w, ktime_get_mono_fast_ns());
		}
	rcu_read_unlock();
}

/* Has the current thread a watch made by @a?  Context: RCU read side. */
bool stallcap_watched_by_attach(const struct stallcap_attach_ent *a)
{
	struct stallcap_watch *w;

	stallcap_for_each_watch_of_task(w, current)
		if (w->task == current && w->attach == a)
			return true;
	return false;
}
