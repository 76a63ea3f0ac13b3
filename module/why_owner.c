// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap "who holds the lock": for a thread blocked in a futex wait, the
 * STALLCAP_SEC_WAIT section and one STALLCAP_SEC_TASK section per owner hop.
 *
 * What a thread waits on comes from the system call it sleeps in: the user
 * registers saved at its kernel entry (orig_ax = futex, di = uaddr, si = op).
 * Who owns it comes from user memory, read with access_process_vm():
 *  - PI futexes (FUTEX_LOCK_PI, _LOCK_PI2): the futex word holds the owner's
 *    tid (FUTEX_TID_MASK), as the kernel's own PI code reads it;
 *  - plain futex waits (FUTEX_WAIT, _WAIT_BITSET): when the word is 1 or 2
 *    (glibc's locked / locked-with-waiters), the owner is the __owner field
 *    of struct __pthread_mutex_s, 8 bytes after the word (x86-64 glibc), and
 *    must be a thread of the same address space; anything else (condition
 *    variables, semaphores, process-shared mutexes) is OWNER_UNKNOWN;
 *  - a plain futex wait on a thread's exit word (pthread_join(): the word
 *    is that thread's tid until the kernel clears it at its exit): the
 *    thread of the same address space whose clear_child_tid is the futex
 *    (STALLCAP_WAIT_F_JOIN when the blocked thread itself joins).
 * The chain then follows what each owner waits on, up to
 * STALLCAP_MAX_OWNER_HOPS, and stops with STALLCAP_WAIT_F_CYCLE when an
 * owner is a thread seen before (a deadlock).  Kernel locks: where the
 * kernel tracks what a task blocks on (task->blocker, see compat.h), a
 * mutex, a semaphore or an rw-semaphore wait is STALLCAP_WAIT_MUTEX,
 * _SEMAPHORE or _RWSEM, its owner read from the lock (the mutex or rwsem
 * owner word, the semaphore's last holder) and accepted only if it is a
 * live thread of the system (found by a walk of every thread under RCU, as
 * the hung-task detector does: the word may be stale); readers of an
 * rw-semaphore are not recorded by the kernel, so that owner is unknown.
 * Elsewhere such waits are STALLCAP_WAIT_OTHER with the owner unknown.
 *
 * Context: process context only (access_process_vm() sleeps): the chain is
 * walked by a work item, never in the hard-IRQ timer.  Every owner is held
 * by a task reference taken under RCU (find_pid_ns() + pid_task() +
 * get_task_struct()), so an owner that exits meanwhile stays readable and
 * is reported with STALLCAP_WAIT_F_OWNER_GONE.  User memory is read only of
 * tasks this reader may see (why_task.c's rule); else OWNER_UNKNOWN.
 * A runnable owner's CPU is asked (call-function IPI, waited for from
 * process context) what runs there instead: a RUNNER section with the
 * owner's hop.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <uapi/linux/futex.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/smp.h>
#include <asm/irq_regs.h>
#include <asm/unistd.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"
#include "why.h"

#define GLIBC_OWNER_OFFSET	8	/* __owner in struct __pthread_mutex_s */

struct why_wait {
	u32 kind;
	u64 uaddr;		/* futex address or kernel lock */
};

static bool is_futex(u32 kind)
{
	return kind == STALLCAP_WAIT_FUTEX || kind == STALLCAP_WAIT_PI_FUTEX;
}

static bool is_kernel_lock(u32 kind)
{
	return kind == STALLCAP_WAIT_MUTEX || kind == STALLCAP_WAIT_RWSEM ||
	       kind == STALLCAP_WAIT_SEMAPHORE;
}

/* Waits whose owner can be known. */
static bool has_owner(u32 kind)
{
	return is_futex(kind) || is_kernel_lock(kind);
}

/*
 * The object as the reader may see it: a kernel lock's address only if
 * kernel addresses are visible to it.
 */
static u64 wait_object(const struct stallcap_why_ctx *ctx,
		       const struct why_wait *ww)
{
	return is_kernel_lock(ww->kind) && !ctx->kaddr_visible ? 0 : ww->uaddr;
}

/* The kernel lock @task blocks on, from the kernel's blocker tracking. */
static bool kernel_wait_of(struct task_struct *task, struct why_wait *ww)
{
	unsigned long blocker = stallcap_task_blocker(task);

	if (!blocker)
		return false;
	switch (blocker & BLOCKER_TYPE_MASK) {
	case BLOCKER_TYPE_MUTEX:
		ww->kind = STALLCAP_WAIT_MUTEX;
		break;
	case BLOCKER_TYPE_SEM:
		ww->kind = STALLCAP_WAIT_SEMAPHORE;
		break;
	default:
		ww->kind = STALLCAP_WAIT_RWSEM;
		break;
	}
	ww->uaddr = blocker & ~BLOCKER_TYPE_MASK;
	return true;
}

/* What a task off CPU waits on, from the system call it sleeps in. */
static void wait_of(struct task_struct *task, struct why_wait *ww)
{
	struct pt_regs regs;
	unsigned int op;

	ww->kind = STALLCAP_WAIT_NONE;
	ww->uaddr = 0;
	if (stallcap_why_state(task) != STALLCAP_STATE_SLEEPING &&
	    stallcap_why_state(task) != STALLCAP_STATE_UNINTERRUPTIBLE)
		return;
	ww->kind = STALLCAP_WAIT_OTHER;
	if (kernel_wait_of(task, ww))
		return;
	if ((task->flags & PF_KTHREAD) || !task->mm)
		return;
	if (!stallcap_task_user_regs(task, &regs) || regs.orig_ax != __NR_futex)
		return;
	op = regs.si & FUTEX_CMD_MASK;
	switch (op) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
		ww->kind = STALLCAP_WAIT_FUTEX;
		break;
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
		ww->kind = STALLCAP_WAIT_PI_FUTEX;
		break;
	default:
		return;
	}
	ww->uaddr = regs.di;
}

/*
 * The task of thread id @tid in @waiter's pid namespace.  A waiter that
 * exited and was reaped meanwhile has no pid left, hence no namespace
 * (task_active_pid_ns() is NULL: 7.2-rt's CI oopsed in idr_find() there).
 */
static struct task_struct *task_by_tid(struct task_struct *waiter, pid_t tid)
{
	struct task_struct *t = NULL;
	struct pid_namespace *ns;
	struct pid *pid = NULL;

	rcu_read_lock();
	ns = task_active_pid_ns(waiter);
	if (ns)
		pid = find_pid_ns(tid, ns);
	if (pid)
		t = pid_task(pid, PIDTYPE_PID);
	if (t)
		get_task_struct(t);
	rcu_read_unlock();
	return t;
}

/*
 * Has @owner exited, for a user lock's sake?  Past exit_mm() a thread in
 * do_exit() has no address space (it can never unlock) and is not yet a
 * zombie: without this, its NULL mm would read as another process's.
 */
static bool owner_exited(struct task_struct *owner)
{
	return owner->exit_state ||
	       ((READ_ONCE(owner->flags) & PF_EXITING) && !READ_ONCE(owner->mm));
}

/*
 * The thread whose exit word (set_tid_address(), CLONE_CHILD_CLEARTID) is
 * the futex at @uaddr holding @tid, of @waiter's address space, with a
 * reference; else NULL.
 */
static struct task_struct *joined_thread(struct task_struct *waiter, u64 uaddr,
					 u32 tid)
{
	struct task_struct *t;

	if (!tid || tid > FUTEX_TID_MASK)
		return NULL;
	t = task_by_tid(waiter, (pid_t)tid);
	if (t && (READ_ONCE(t->mm) != waiter->mm ||
		  (unsigned long)READ_ONCE(t->clear_child_tid) != uaddr)) {
		put_task_struct(t);
		t = NULL;
	}
	return t;
}

/*
 * The owner of what @waiter waits on, with a reference, or NULL with
 * OWNER_UNKNOWN or OWNER_GONE set in @flags; JOIN too when @first (the
 * chain's blocked thread) waits for the owner's exit.
 */
static struct task_struct *owner_of(const struct stallcap_why_ctx *ctx,
				    struct task_struct *waiter,
				    const struct why_wait *ww, u32 *flags,
				    bool first)
{
	u32 word[3];
	int want = ww->kind == STALLCAP_WAIT_PI_FUTEX ? 4 : sizeof(word);
	struct task_struct *owner;
	pid_t tid;

	if (!stallcap_why_user_visible(ctx, waiter) ||
	    access_process_vm(waiter, ww->uaddr, word, want, 0) != want)
		goto unknown;
	if (ww->kind == STALLCAP_WAIT_FUTEX && word[0] != 1 && word[0] != 2) {
		owner = joined_thread(waiter, ww->uaddr, word[0]);
		if (!owner)
			goto unknown;
		if (first)
			*flags |= STALLCAP_WAIT_F_JOIN;
		return owner;
	}
	if (ww->kind == STALLCAP_WAIT_PI_FUTEX)
		tid = word[0] & FUTEX_TID_MASK;
	else
		tid = (pid_t)word[GLIBC_OWNER_OFFSET / 4];
	if (tid <= 0)
		goto unknown;
	owner = task_by_tid(waiter, tid);
	if (!owner || owner_exited(owner)) {
		if (owner)
			put_task_struct(owner);
		*flags |= STALLCAP_WAIT_F_OWNER_GONE;
		return NULL;
	}
	/* the glibc layout is trusted only within one process */
	if (ww->kind == STALLCAP_WAIT_FUTEX && owner->mm != waiter->mm) {
		put_task_struct(owner);
		goto unknown;
	}
	return owner;
unknown:
	*flags |= STALLCAP_WAIT_F_OWNER_UNKNOWN;
	return NULL;
}

/* @addr if it is a live thread, with a reference; else NULL. */
static struct task_struct *live_thread(unsigned long addr)
{
	struct task_struct *g, *t, *found = NULL;

	if (!addr)
		return NULL;
	rcu_read_lock();
	for_each_process_thread(g, t) {
		if ((unsigned long)t == addr && !t->exit_state) {
			found = t;
			get_task_struct(found);
			goto out;
		}
	}
out:
	rcu_read_unlock();
	return found;
}

/* The holder recorded in the kernel lock @ww names (compat.h), or 0. */
static unsigned long kernel_lock_holder(const struct why_wait *ww)
{
	void *lock = (void *)(unsigned long)ww->uaddr;

	switch (ww->kind) {
	case STALLCAP_WAIT_MUTEX:
		return stallcap_mutex_holder(lock);
	case STALLCAP_WAIT_RWSEM:
		return stallcap_rwsem_holder(lock);
	default:
		return stallcap_sem_last_holder(lock);
	}
}

/* The holder of the kernel lock @waiter waits on, with a reference. */
static struct task_struct *kernel_owner_of(struct task_struct *waiter,
					   const struct why_wait *ww,
					   u32 *flags)
{
	struct task_struct *owner = live_thread(kernel_lock_holder(ww));

	/* still waiting on that lock: the word read was its holder's */
	if (owner && owner != waiter &&
	    (stallcap_task_blocker(waiter) & ~BLOCKER_TYPE_MASK) == ww->uaddr)
		return owner;
	if (owner)
		put_task_struct(owner);
	*flags |= STALLCAP_WAIT_F_OWNER_UNKNOWN;
	return NULL;
}

struct runner_req {
	const struct stallcap_why_ctx *ctx;
	struct task_struct *owner;
	void *dst;
	u32 len;
};

static void runner_ipi(void *arg)
{
	struct runner_req *rr = arg;
	struct pt_regs *regs = get_irq_regs() ?: stallcap_interrupted_regs();

	if (regs && current != rr->owner)
		rr->len = stallcap_why_runner(rr->ctx, regs, rr->dst);
}

/* What runs on a runnable owner's CPU instead of it. */
static u32 owner_runner(const struct stallcap_why_ctx *ctx,
			struct task_struct *owner, u16 hop, void *dst)
{
	struct runner_req rr = { .ctx = ctx, .owner = owner, .dst = dst };
	struct stallcap_sec_task *t = dst;
	int cpu = task_cpu(owner);

	if (stallcap_why_state(owner) != STALLCAP_STATE_RUNNABLE ||
	    cpu == raw_smp_processor_id() || !cpu_online(cpu))
		return 0;
	if (smp_call_function_single(cpu, runner_ipi, &rr, 1) || !rr.len)
		return 0;
	t->hop = hop;
	return rr.len;
}

static bool seen_before(const pid_t *seen, unsigned int n, pid_t tid)
{
	while (n--)
		if (seen[n] == tid)
			return true;
	return false;
}

/**
 * stallcap_why_chain() - what @task waits on and the chain of its owners
 * @ctx: what the reader may see
 * @task: the blocked thread (reference held by the caller)
 * @dst: where the WAIT and TASK sections go
 * @room: bytes available at @dst; at least sizeof(struct stallcap_sec_wait)
 *
 * Context: process context, may sleep.  Bounded: STALLCAP_MAX_OWNER_HOPS
 * owners, each read once.
 * Return: bytes written (0 when @task is not blocked).
 */
u32 stallcap_why_chain(const struct stallcap_why_ctx *ctx,
		       struct task_struct *task, void *dst, u32 room)
{
	struct stallcap_sec_wait *w = dst;
	pid_t seen[STALLCAP_MAX_OWNER_HOPS + 1];
	struct task_struct *cur = task, *owner;
	struct stallcap_sec_task *t;
	struct why_wait ww, next;
	unsigned int hop, nseen = 0;
	u32 len = sizeof(*w);

	wait_of(task, &ww);
	if (ww.kind == STALLCAP_WAIT_NONE)
		return 0;
	memset(w, 0, sizeof(*w));
	w->sec.type = STALLCAP_SEC_WAIT;
	w->sec.size = sizeof(*w);
	w->kind = ww.kind;
	w->object = wait_object(ctx, &ww);
	if (!has_owner(ww.kind)) {
		w->flags |= STALLCAP_WAIT_F_OWNER_UNKNOWN;
		return len;
	}
	seen[nseen++] = task->pid;
	for (hop = 1; ; hop++) {
		owner = is_kernel_lock(ww.kind) ?
			kernel_owner_of(cur, &ww, &w->flags) :
			owner_of(ctx, cur, &ww, &w->flags, hop == 1);
		if (!owner)
			break;
		if (seen_before(seen, nseen, owner->pid)) {
			w->flags |= STALLCAP_WAIT_F_CYCLE;
			put_task_struct(owner);
			break;
		}
		if (hop > STALLCAP_MAX_OWNER_HOPS ||
		    room - len < 2 * STALLCAP_WHY_TASK_MAX) {
			w->flags |= STALLCAP_WAIT_F_TRUNCATED;
			put_task_struct(owner);
			break;
		}
		wait_of(owner, &next);
		t = dst + len;
		len += stallcap_why_task(ctx, owner, STALLCAP_ROLE_OWNER, hop, t);
		t->wait_kind = next.kind;
		t->wait_object = wait_object(ctx, &next);
		w->nr_hops = hop;
		len += owner_runner(ctx, owner, hop, dst + len);
		seen[nseen++] = owner->pid;
		if (cur != task)
			put_task_struct(cur);
		cur = owner;
		ww = next;
		if (!has_owner(ww.kind))
			break;
	}
	if (cur != task)
		put_task_struct(cur);
	return len;
}
