// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap STALLCAP_SEC_TASK sections: another task that explains a stall.
 *
 * The runner (what ran on the stalled thread's CPU instead) is captured as
 * `current` by the code interrupting that CPU: the watch's timer when it
 * expires there, or the NMI/IPI handler (capture_remote.c).  NMI rules:
 * loads, the ORC unwinder and copy_from_user_nofault() only.
 *
 * Owners (who holds a lock) are described from process context by the
 * chain walk (why_owner.c), holding a task reference: their kernel stack is
 * unwound under rcu_read_lock() when they are off CPU (since Linux 5.18 a
 * stack freed by an exit is released through RCU or kept in the stack
 * cache, so the unwinder, which stays within the stack's bounds, reads
 * mapped memory; before, only an owner held asleep by its pi_lock is
 * unwound: STALLCAP_STACK_FREED_BY_RCU; the result is dropped when the task
 * began to exit meanwhile), their user stack is read with
 * access_process_vm() when this reader may see it.
 *
 * User stacks: shown when the opener had CAP_SYS_PTRACE, or when the task
 * shares the watched thread's address space (the session captures that
 * process already).  LSMs are not consulted: the rule is narrower than
 * ptrace_may_access() and can be decided in NMI context.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"
#include "why.h"

/**
 * stallcap_why_state() - STALLCAP_STATE_* of a task that may run elsewhere
 * @task: the task (reference held)
 */
u8 stallcap_why_state(struct task_struct *task)
{
	if (task->exit_state || (READ_ONCE(task->flags) & PF_EXITING))
		return STALLCAP_STATE_EXITING;
	if (READ_ONCE(task->on_cpu))
		return STALLCAP_STATE_RUNNING;
	return stallcap_task_off_cpu_state(task);
}

static void task_ids(const struct stallcap_why_ctx *ctx,
		     struct task_struct *task, struct stallcap_sec_task *t)
{
	t->pid = task->tgid;
	t->tid = task->pid;
	if (ctx->ns) {
		t->ns_pid = __task_pid_nr_ns(task, PIDTYPE_TGID, ctx->ns);
		t->ns_tid = __task_pid_nr_ns(task, PIDTYPE_PID, ctx->ns);
	}
}

static void task_header(const struct stallcap_why_ctx *ctx,
			struct task_struct *task, u16 role, u16 hop,
			struct stallcap_sec_task *t)
{
	unsigned int policy = READ_ONCE(task->policy);

	memset(t, 0, sizeof(*t));
	t->sec.type = STALLCAP_SEC_TASK;
	t->fixed_size = sizeof(*t);
	t->role = role;
	t->hop = hop;
	task_ids(ctx, task, t);
	t->cpu = task_cpu(task);
	t->policy = policy;
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		t->prio = READ_ONCE(task->rt_priority);
	else if (policy != SCHED_DEADLINE)
		t->prio = task_nice(task);
	if (task->flags & PF_KTHREAD)
		t->flags |= STALLCAP_TASK_F_KTHREAD;
	if (is_idle_task(task))
		t->flags |= STALLCAP_TASK_F_IDLE;
	/* a racy copy of a name being changed is still terminated */
	memcpy(t->comm, task->comm, sizeof(t->comm));
	t->comm[sizeof(t->comm) - 1] = '\0';
}

/**
 * stallcap_why_user_visible() - may this reader see @task's user memory?
 * @ctx: the reader
 * @task: the task
 */
bool stallcap_why_user_visible(const struct stallcap_why_ctx *ctx,
			       struct task_struct *task)
{
	const struct mm_struct *mm = READ_ONCE(task->mm);

	if (!mm || (task->flags & PF_KTHREAD))
		return false;
	return ctx->may_trace_all || mm == ctx->mm;
}

/*
 * Close a section of @nk kernel and @nu user frames.  The size comes from
 * the caller's counts, never read back from @t: it may be the ring, which
 * its reader can write.
 */
static u32 task_end(struct stallcap_sec_task *t, unsigned int nk,
		    unsigned int nu)
{
	u32 size = ALIGN(sizeof(*t) + 8 * (nk + nu), 8);

	t->nr_kernel_frames = nk;
	t->nr_user_frames = nu;
	t->sec.size = size;
	return size;
}

/**
 * stallcap_why_runner() - describe the task running on this CPU
 * @ctx: what the reader may see
 * @regs: the registers the caller interrupted
 * @dst: room for STALLCAP_WHY_TASK_MAX bytes
 *
 * Context: hard-IRQ or NMI on the stalled thread's CPU; one interrupt level
 * (the caller's own) is not counted as the runner's.
 * Return: the section's size.
 */
u32 stallcap_why_runner(const struct stallcap_why_ctx *ctx,
			struct pt_regs *regs, void *dst)
{
	struct stallcap_sec_task *t = dst;
	u64 *ips = dst + sizeof(*t);
	unsigned int nk = 0, nu = 0;
	struct pt_regs *uregs = NULL;
	u32 dummy = 0;

	task_header(ctx, current, STALLCAP_ROLE_RUNNER, 0, t);
	t->state = STALLCAP_STATE_RUNNING;
	t->cpu = smp_processor_id();
	if ((hardirq_count() >> HARDIRQ_SHIFT) > 1)
		t->flags |= STALLCAP_TASK_F_IN_HARDIRQ;
	if (softirq_count() & SOFTIRQ_OFFSET)
		t->flags |= STALLCAP_TASK_F_IN_SOFTIRQ;
	if (user_mode(regs)) {
		if (user_64bit_mode(regs))
			uregs = regs;
	} else if (ctx->kaddr_visible) {
		nk = stallcap_unwind_kernel(current, regs, ips, &dummy);
	} else {
		t->flags |= STALLCAP_TASK_F_KADDR_HIDDEN;
	}
	if (!uregs && current->mm && !(current->flags & PF_KTHREAD)) {
		uregs = task_pt_regs(current);
		if (!user_64bit_mode(uregs))
			uregs = NULL;
	}
	if (uregs && !stallcap_why_user_visible(ctx, current)) {
		t->flags |= STALLCAP_TASK_F_USER_HIDDEN;
		uregs = NULL;
	}
	if (uregs)
		nu = stallcap_walk_user_frames(uregs, ips + nk, &dummy, false);
	return task_end(t, nk, nu);
}

/* Kernel frames of an off-CPU task; 0 when it runs or began to exit. */
static unsigned int owner_kernel_frames(struct task_struct *task, u64 *ips)
{
	unsigned int n = 0;
	u32 dummy = 0;

	rcu_read_lock();
	if (!READ_ONCE(task->on_cpu) && !(READ_ONCE(task->flags) & PF_EXITING) &&
	    task_stack_page(task)) {
		n = STALLCAP_STACK_FREED_BY_RCU ?
			stallcap_unwind_off_cpu(task, ips, &dummy) :
			stallcap_unwind_asleep(task, ips, &dummy);
		if (READ_ONCE(task->on_cpu) ||
		    (READ_ONCE(task->flags) & PF_EXITING))
			n = 0;
	}
	rcu_read_unlock();
	return n;
}

/**
 * stallcap_task_user_regs() - copy the user registers of a task not current
 * @task: the task (reference held); it may exit meanwhile
 * @regs: output
 *
 * They are at the top of its kernel stack, which is freed once it has
 * exited, and a module cannot pin that stack (put_task_stack() is not
 * exported): they are read only before it begins to exit, and without
 * faulting (a stack freed in between reads as an error, or as stale bytes
 * of no consequence).  Context: any, NMI included.
 * Return: true when @regs holds its 64-bit user registers.
 */
bool stallcap_task_user_regs(struct task_struct *task, struct pt_regs *regs)
{
	if ((READ_ONCE(task->flags) & PF_EXITING) || !task_stack_page(task))
		return false;
	if (copy_from_kernel_nofault(regs, task_pt_regs(task), sizeof(*regs)))
		return false;
	return user_64bit_mode(regs);
}

/* User frames of a task blocked in the kernel, by frame pointers. */
static unsigned int owner_user_frames(struct task_struct *task, u64 *ips)
{
	struct pt_regs uregs;
	u32 dummy = 0;

	if (!stallcap_task_user_regs(task, &uregs))
		return 0;
	return stallcap_remote_user_frames(task, &uregs, ips, &dummy);
}

/**
 * stallcap_why_task() - describe a task that is not current (a lock owner)
 * @ctx: what the reader may see
 * @task: the task (reference held)
 * @role: STALLCAP_ROLE_*
 * @hop: its hop in the owner chain
 * @dst: room for STALLCAP_WHY_TASK_MAX bytes
 *
 * The caller sets wait_kind and wait_object.  A running task gets no
 * frames: its stacks change under the reader.
 * Context: process context, may sleep (user memory of another process).
 * Return: the section's size.
 */
u32 stallcap_why_task(const struct stallcap_why_ctx *ctx,
		      struct task_struct *task, u16 role, u16 hop, void *dst)
{
	struct stallcap_sec_task *t = dst;
	u64 *ips = dst + sizeof(*t);
	unsigned int nk = 0, nu = 0;
	u8 state = stallcap_why_state(task);

	task_header(ctx, task, role, hop, t);
	t->state = state;
	if (state == STALLCAP_STATE_RUNNABLE) {
		rcu_read_lock();	/* its group's entities */
		if (stallcap_task_throttled(task))
			t->flags |= STALLCAP_TASK_F_THROTTLED;
		rcu_read_unlock();
	}
	if (stallcap_task_memstall(task))
		t->flags |= STALLCAP_TASK_F_MEMSTALL;
	if (state != STALLCAP_STATE_RUNNING && state != STALLCAP_STATE_EXITING) {
		if (ctx->kaddr_visible)
			nk = owner_kernel_frames(task, ips);
		else
			t->flags |= STALLCAP_TASK_F_KADDR_HIDDEN;
		if (!stallcap_why_user_visible(ctx, task))
			t->flags |= STALLCAP_TASK_F_USER_HIDDEN;
		else if (!(task->flags & PF_KTHREAD))
			nu = owner_user_frames(task, ips + nk);
	}
	return task_end(t, nk, nu);
}
