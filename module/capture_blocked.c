// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap capture of a thread that is not running: its state class, the
 * kernel stack where it waits, and the user registers saved at its kernel
 * entry.  Its user stack belongs to another mm and cannot be read from here.
 *
 * Safety against exit: the caller holds the watch's lock, which the exit
 * probe takes before the thread goes further in do_exit(), so the thread's
 * stack cannot be freed under the unwinder.  Against wake-up: the thread may
 * start running on another CPU while we read its stack; the ORC unwinder
 * stays within the stack's bounds, and the record says RACED when the thread
 * switched during the capture.
 */
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"

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

static unsigned long switch_count(struct task_struct *task)
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
	unsigned long switches = switch_count(task);
	struct stallcap_rec_writer wr;
	struct pt_regs *uregs;
	u64 *ips;

	stallcap_sample_stamp(s);
	stallcap_rec_begin(&wr, s, rec);
	s->cpu = task_cpu(task);
	s->path = STALLCAP_PATH_BLOCKED;
	s->state = stallcap_task_off_cpu_state(task);
	stallcap_put_kernel_ips(&wr, sess, task, NULL, &s->flags);
	if (READ_ONCE(task->on_cpu) || switch_count(task) != switches)
		s->flags |= STALLCAP_SAMPLE_RACED;
	uregs = stallcap_user_regs_of(task, w->mm);
	if (!uregs) {
		s->flags |= STALLCAP_SAMPLE_NO_USER;
		goto out;
	}
	stallcap_sec_put_regs(&wr, uregs);
	ips = stallcap_sec_start(&wr) + sizeof(struct stallcap_section);
	ips[0] = uregs->ip;
	stallcap_sec_end(&wr, STALLCAP_SEC_USER_IPS,
			 sizeof(struct stallcap_section) + sizeof(*ips));
	/* where the stack is, none of it copied: read in its own context */
	stallcap_sec_put_stack(&wr, uregs->sp, 0);
	s->flags |= STALLCAP_SAMPLE_USTACK_REMOTE;
	if (sess->cfg.user_stack_bytes)
		s->flags |= STALLCAP_SAMPLE_COPY_PARTIAL;
out:
	stallcap_why_put_blocked(&wr, w, task, s);
	return wr.len;
}
