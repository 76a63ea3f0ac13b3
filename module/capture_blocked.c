// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap capture of a thread that is not running: its state class, the
 * kernel stack where it waits, and the user registers saved at its kernel
 * entry.  Its user stack belongs to another mm and cannot be read from here
 * (capture_deferred.c reads it later).
 *
 * Safety against exit: the caller holds the watch's lock, which the exit
 * probe takes before the thread goes further in do_exit(), so the thread's
 * stack cannot be freed under the unwinder.  Against wake-up: a sleeping
 * thread is unwound with its pi_lock held, so it cannot be woken during the
 * walk (stallcap_unwind_off_cpu()); a runnable one may start running on
 * another CPU while we read its stack: the ORC unwinder stays within the
 * stack's bounds, and the record says RACED when the thread switched during
 * the capture.
 */
#include <linux/kasan.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

/**
 * stallcap_task_off_cpu_state() - STALLCAP_STATE_* of a task not on a CPU
 * @task: the task
 */
u8 stallcap_task_off_cpu_state(struct task_struct *task)
{
	unsigned int state = stallcap_task_state(task);

	if (task->exit_state || (task->flags & PF_EXITING))
		return STALLCAP_STATE_EXITING;
	if (state == TASK_RUNNING)
		return STALLCAP_STATE_RUNNABLE;
	if (state & (__TASK_STOPPED | __TASK_TRACED))
		return STALLCAP_STATE_STOPPED;
	if (state & (TASK_UNINTERRUPTIBLE | STALLCAP_TASK_RTLOCK_WAIT))
		return STALLCAP_STATE_UNINTERRUPTIBLE;
	return STALLCAP_STATE_SLEEPING;
}

/*
 * A task that sleeps and is not on a CPU: try_to_wake_up() changes a
 * sleeping state only under the task's pi_lock (TASK_WAKING is already on
 * its way to a CPU).  It may still be queued: a dequeue the scheduler
 * delays (6.12's EEVDF) keeps it so without letting it run; one preempted
 * before it slept could run again unwoken, which unwind_must_stop() still
 * watches for at each step.
 */
static bool asleep_and_held(struct task_struct *task)
{
	unsigned int state = stallcap_task_state(task);

	if (state == TASK_RUNNING || state == TASK_WAKING)
		return false;
	/* pairs with the release in finish_task(), as in try_to_wake_up() */
	return !smp_load_acquire(&task->on_cpu);
}

/*
 * A task not held asleep may start running on another CPU during the walk,
 * and its stack and that stack's KASAN shadow change under the unwinder.
 * The ORC unwinder reads stack words with READ_ONCE_NOCHECK(), but the mode
 * of the registers it found on the stack (user_mode()) with a plain load,
 * which KASAN then reports when a function now running there has laid a
 * redzone on those bytes (seen on the debug kernel: "out-of-bounds in
 * unwind_next_frame" during an IPI-mode torture run).  No memory is freed
 * under the walk (see the top of this file) and a changed stack is marked
 * RACED: reports are off for it, KASAN's own interface for racy reads.
 */
static unsigned int unwind_unheld(struct task_struct *task, u64 *ips,
				  u32 *flags)
{
	unsigned int n;

	kasan_disable_current();
	n = stallcap_unwind_kernel(task, NULL, ips, flags);
	kasan_enable_current();
	return n;
}

/* Unwind @task into @ips if it is asleep, holding its pi_lock meanwhile. */
static bool unwind_held_asleep(struct task_struct *task, u64 *ips, u32 *flags,
			       unsigned int *n)
{
	unsigned long irqflags;
	bool held;

	raw_spin_lock_irqsave(&task->pi_lock, irqflags);
	held = asleep_and_held(task);
	if (held)
		*n = stallcap_unwind_kernel(task, NULL, ips, flags);
	raw_spin_unlock_irqrestore(&task->pi_lock, irqflags);
	return held;
}

/**
 * stallcap_unwind_off_cpu() - kernel return addresses of a task that is not
 *	current and not on a CPU
 * @task: the task (its stack must stay allocated: see the callers)
 * @ips: output, room for STALLCAP_MAX_FRAMES
 * @flags: STALLCAP_SAMPLE_KSTACK_TRUNC as for stallcap_unwind_kernel()
 *
 * Outside NMI context a sleeping task is unwound with its pi_lock held, the
 * lock try_to_wake_up() takes first: it cannot be woken during the walk, so
 * the stack is the one where it waits, unchanged, and a return trampoline
 * on it (a kretprobe's) is looked up as for a blocked task.  A task that is
 * runnable, or any task in NMI context, is unwound without it (a wake-up
 * during the walk then stops it at a trampoline, see unwind_must_stop()).
 *
 * Context: any; not with @task's pi_lock or a runqueue lock held.
 * Return: number of addresses stored.
 */
unsigned int stallcap_unwind_off_cpu(struct task_struct *task, u64 *ips,
				     u32 *flags)
{
	unsigned int n;

	if (!in_nmi() && unwind_held_asleep(task, ips, flags, &n))
		return n;
	return unwind_unheld(task, ips, flags);
}

/**
 * stallcap_unwind_asleep() - stallcap_unwind_off_cpu() for a task whose
 *	stack nothing keeps but its sleep
 * @task: the task, not current (a reference held)
 * @ips: output, room for STALLCAP_MAX_FRAMES
 * @flags: STALLCAP_SAMPLE_KSTACK_TRUNC as for stallcap_unwind_kernel()
 *
 * Before Linux 5.18 a dead task's stack that the per-CPU cache did not take
 * was unmapped by a work item soon after its last switch, with no RCU grace
 * period (STALLCAP_STACK_FREED_BY_RCU): a runnable task could run, exit and
 * lose its stack under a walk.  Held asleep by its pi_lock it cannot.
 *
 * Context: process or IRQ (not NMI); not with @task's pi_lock held.
 * Return: number of addresses stored; 0 for a task not held asleep.
 */
unsigned int stallcap_unwind_asleep(struct task_struct *task, u64 *ips,
				    u32 *flags)
{
	unsigned int n;

	return unwind_held_asleep(task, ips, flags, &n) ? n : 0;
}

/**
 * stallcap_switch_count() - how many times @task was switched out
 * @task: the task
 *
 * Unchanged while it is off CPU; never 0 for a task that blocked.
 * Context: any.
 */
unsigned long stallcap_switch_count(const struct task_struct *task)
{
	return READ_ONCE(task->nvcsw) + READ_ONCE(task->nivcsw);
}

/**
 * stallcap_capture_blocked() - capture a thread that is not on a CPU
 * @w: the watch (its thread, session and address space)
 * @s: the draft (fixed part initialised)
 * @rec: where the record is built: a capture buffer, or the ring record
 *	(written, never read back)
 *
 * Context: hard-IRQ (the watch's timer), watch lock held.
 * Return: the record's length.
 */
u32 stallcap_capture_blocked(struct stallcap_watch *w,
			     struct stallcap_sample *s, void *rec)
{
	const struct stallcap_session *sess = w->sess;
	struct task_struct *task = w->task;
	unsigned long switches = stallcap_switch_count(task);
	struct stallcap_rec_writer wr;
	struct pt_regs *uregs, snap;
	u64 *ips;

	stallcap_sample_stamp(s);
	stallcap_rec_begin(&wr, s, rec);
	s->cpu = task_cpu(task);
	s->path = STALLCAP_PATH_BLOCKED;
	s->state = stallcap_task_off_cpu_state(task);
	if (s->state == STALLCAP_STATE_RUNNABLE && stallcap_task_throttled(task))
		s->flags |= STALLCAP_SAMPLE_THROTTLED;
	if (stallcap_task_memstall(task))
		s->flags |= STALLCAP_SAMPLE_MEMSTALL;
	stallcap_put_kernel_ips(&wr, sess, task, NULL, &s->flags);
	/*
	 * The user registers are read once: a thread woken meanwhile may enter
	 * the kernel again and rewrite them, and the record's registers and
	 * its user frame 0 must be the same reading.
	 */
	uregs = stallcap_user_regs_of(task, w->mm);
	if (uregs)
		snap = *uregs;
	/* woken, or switched in and out, while it was read */
	w->blocked_switches = switches;
	if (READ_ONCE(task->on_cpu) || stallcap_switch_count(task) != switches ||
	    stallcap_task_off_cpu_state(task) != s->state) {
		s->flags |= STALLCAP_SAMPLE_RACED;
		w->blocked_switches = 0;
	}
	if (!uregs) {
		s->flags |= STALLCAP_SAMPLE_NO_USER;
		goto out;
	}
	stallcap_sec_put_sample_regs(&wr, &snap);
	ips = stallcap_sec_start(&wr) + sizeof(struct stallcap_section);
	ips[0] = snap.ip;
	stallcap_sec_end(&wr, STALLCAP_SEC_USER_IPS,
			 sizeof(struct stallcap_section) + sizeof(*ips));
	/* where the stack is, none of it copied: read in its own context */
	stallcap_sec_put_stack(&wr, snap.sp, 0);
	s->flags |= STALLCAP_SAMPLE_USTACK_REMOTE;
	if (sess->cfg.user_stack_bytes)
		s->flags |= STALLCAP_SAMPLE_COPY_PARTIAL;
out:
	stallcap_why_put_blocked(&wr, w, task, s);
	return wr.len;
}
