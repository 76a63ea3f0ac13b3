/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap compat: every difference between the kernels we build for
 * (5.10 LTS, 6.1 LTS, 6.12 LTS and PREEMPT_RT, 7.2 and PREEMPT_RT) is
 * handled here and nowhere else.
 * The STALLCAP_HAVE_* macros come from feature tests in module/Kbuild, which
 * look into the headers of the kernel being built for.
 */
#ifndef STALLCAP_COMPAT_H
#define STALLCAP_COMPAT_H

#include <linux/fs.h>
#include <linux/futex.h>
#include <linux/hardirq.h>
#include <linux/hrtimer.h>
#ifdef STALLCAP_HAVE_HRTIMER_BASES
#include <linux/hrtimer_bases.h>	/* 7.3: hrtimer_callback_running() */
#endif
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/task_work.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <asm/processor.h>

/* task->state became task->__state, an unsigned int (5.14). */
static inline unsigned int stallcap_task_state(const struct task_struct *task)
{
#ifdef STALLCAP_HAVE_TASK_STATE_UNDERSCORE
	return READ_ONCE(task->__state);
#else
	return READ_ONCE(task->state);
#endif
}

/*
 * Has @task left the runqueue for its wake-up to bring it back: dequeued
 * (on_rq 0), or, since 6.12, left queued after it blocked ("delayed
 * dequeue", se.sched_delayed) until its turn comes, when it is dequeued,
 * or a wake-up re-queues it for real before it can run.  The opposite of
 * task_is_runnable() (6.12), read once each.
 */
static inline bool stallcap_task_dequeued(const struct task_struct *task)
{
	if (!READ_ONCE(task->on_rq))
		return true;
#ifdef STALLCAP_HAVE_TASK_IS_RUNNABLE
	return READ_ONCE(task->se.sched_delayed);
#else
	return false;
#endif
}

/*
 * The sched_process_exit tracepoint passes group_dead too (6.16): a probe
 * must have the tracepoint's exact prototype (kCFI checks indirect calls).
 */
#ifdef STALLCAP_HAVE_EXIT_GROUP_DEAD
#define STALLCAP_EXIT_PROBE_ARGS	void *data, struct task_struct *task, \
					bool group_dead
#else
#define STALLCAP_EXIT_PROBE_ARGS	void *data, struct task_struct *task
#endif

/* sched_switch's prev_state (5.18): the probe's exact prototype, as above */
#ifdef STALLCAP_HAVE_SWITCH_PREV_STATE
#define STALLCAP_SWITCH_PROBE_ARGS	void *data, bool preempt, \
					struct task_struct *prev, \
					struct task_struct *next, \
					unsigned int prev_state
#else
#define STALLCAP_SWITCH_PROBE_ARGS	void *data, bool preempt, \
					struct task_struct *prev, \
					struct task_struct *next
#endif

/* An iov_iter read into: ITER_DEST (6.1), READ before. */
#ifndef ITER_DEST
#define ITER_DEST	READ
#endif

/* INIT_CSD() (5.11); before it a csd was initialised by its fields. */
#ifndef STALLCAP_HAVE_INIT_CSD
#define INIT_CSD(_csd, _func, _info)				\
	(*(_csd) = (call_single_data_t){ .func = (_func), .info = (_info) })
#endif

/* Blocked on a sleeping spinlock of PREEMPT_RT: a lock wait. */
#ifdef TASK_RTLOCK_WAIT
#define STALLCAP_TASK_RTLOCK_WAIT	TASK_RTLOCK_WAIT
#else
#define STALLCAP_TASK_RTLOCK_WAIT	0
#endif

/*
 * Since Linux 5.18 a dead task's stack goes back to the per-CPU stack cache
 * or is freed after an RCU grace period (the same series added
 * exit_task_stack_account()); before, one the cache did not take was
 * unmapped by a work item soon after the task's last switch.
 */
#ifdef STALLCAP_HAVE_STACK_FREE_RCU
#define STALLCAP_STACK_FREED_BY_RCU	true
#else
#define STALLCAP_STACK_FREED_BY_RCU	false
#endif

/* A snapshot of the timekeeping clock: Linux 7.2 names the clock. */
static inline void sc_ktime_get_snapshot(struct system_time_snapshot *snap)
{
#ifdef STALLCAP_HAVE_KTIME_GET_SNAPSHOT_ID
	ktime_get_snapshot_id(CLOCK_MONOTONIC, snap);
#else
	ktime_get_snapshot(snap);
#endif
}

/* hrtimer_setup() replaced hrtimer_init() (6.13). */
static inline void stallcap_hrtimer_setup(struct hrtimer *timer,
					  enum hrtimer_restart (*fn)(struct hrtimer *),
					  clockid_t clock, enum hrtimer_mode mode)
{
#ifdef STALLCAP_HAVE_HRTIMER_SETUP
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

/* vm_flags became read-only behind helpers (6.3). */
static inline void stallcap_vm_flags_set(struct vm_area_struct *vma,
					 unsigned long flags)
{
#ifdef STALLCAP_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void stallcap_vm_flags_clear(struct vm_area_struct *vma,
					   unsigned long flags)
{
#ifdef STALLCAP_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * notify_change() on a device node: an idmap since 6.3, a user namespace
 * since 5.12, neither before.
 */
static inline int stallcap_notify_change(struct dentry *dentry,
					 struct iattr *attr)
{
#if defined(STALLCAP_HAVE_MNT_IDMAP)
	return notify_change(&nop_mnt_idmap, dentry, attr, NULL);
#elif defined(STALLCAP_HAVE_NOTIFY_CHANGE_USERNS)
	return notify_change(&init_user_ns, dentry, attr, NULL);
#else
	return notify_change(dentry, attr, NULL);
#endif
}

/*
 * Local timer, reschedule and call-function interrupts of @cpu: x86 counts
 * these system vectors apart from device interrupts, in one array since 7.x.
 */
static inline unsigned long stallcap_cpu_sysvec_irqs(int cpu)
{
	const irq_cpustat_t *st = &per_cpu(irq_stat, cpu);
	unsigned long n = 0;

#ifdef CONFIG_X86_LOCAL_APIC
#ifdef STALLCAP_HAVE_IRQ_COUNTS
	n += st->counts[IRQ_COUNT_APIC_TIMER];
#else
	n += st->apic_timer_irqs;
#endif
#endif
#ifdef CONFIG_SMP
#ifdef STALLCAP_HAVE_IRQ_COUNTS
	n += st->counts[IRQ_COUNT_RESCHEDULE];
	n += st->counts[IRQ_COUNT_CALL_FUNCTION];
#else
	n += st->irq_resched_count + st->irq_call_count;
#endif
#endif
	return n;
}

/* A per-CPU workqueue says so since 6.17 (WQ_PERCPU), as the default was. */
#ifdef STALLCAP_HAVE_WQ_PERCPU
#define STALLCAP_WQ_PERCPU	WQ_PERCPU
#else
#define STALLCAP_WQ_PERCPU	0
#endif

/*
 * A hard irq_work (hard-IRQ context on PREEMPT_RT too): IRQ_WORK_INIT_HARD()
 * since 5.11; before it, the IRQ_WORK_HARD_IRQ flag set by hand.
 */
static inline void stallcap_irq_work_init_hard(struct irq_work *work,
					       void (*fn)(struct irq_work *))
{
#ifdef IRQ_WORK_INIT_HARD
	*work = IRQ_WORK_INIT_HARD(fn);
#else
	init_irq_work(work, fn);
	atomic_set(&work->flags, IRQ_WORK_HARD_IRQ);
#endif
}

/*
 * Retpoline thunks, __x86_indirect_thunk_<reg> (asm/nospec-branch.h, one
 * per register, RETPOLINE_THUNK_SIZE apart): CONFIG_RETPOLINE before 6.9.
 */
#if defined(CONFIG_X86_64) && \
	(defined(CONFIG_RETPOLINE) || defined(CONFIG_MITIGATION_RETPOLINE))
#define STALLCAP_HAVE_RETPOLINE_THUNKS
#endif

/* FUTEX_LOCK_PI2 (5.14): user ABI, so its number is fixed */
#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2		13
#endif

/* in_irq() became in_hardirq() (5.11). */
#ifndef in_hardirq
#define in_hardirq()		in_irq()
#endif

/*
 * A CPU's CLOCK_MONOTONIC hard timers in expiry order, first and next (7.2
 * queues them on linked timerqueue nodes).  Caller holds the base's
 * cpu_base->lock.
 */
#ifdef STALLCAP_HAVE_TIMERQUEUE_LINKED
static inline struct hrtimer *stallcap_hrtimer_first(struct hrtimer_clock_base *cb)
{
	struct timerqueue_linked_node *n = timerqueue_linked_first(&cb->active);

	return n ? container_of(n, struct hrtimer, node) : NULL;
}

static inline struct hrtimer *stallcap_hrtimer_next(struct hrtimer *t)
{
	struct timerqueue_linked_node *n = timerqueue_linked_next(&t->node);

	return n ? container_of(n, struct hrtimer, node) : NULL;
}
#else
static inline struct hrtimer *stallcap_hrtimer_first(struct hrtimer_clock_base *cb)
{
	struct timerqueue_node *n = timerqueue_getnext(&cb->active);

	return n ? container_of(n, struct hrtimer, node) : NULL;
}

static inline struct hrtimer *stallcap_hrtimer_next(struct hrtimer *t)
{
	struct rb_node *n = rb_next(&t->node.node);

	return n ? container_of(rb_entry(n, struct timerqueue_node, node),
				struct hrtimer, node) : NULL;
}
#endif

/* Timer housekeeping CPUs: enum hk_type since 5.18, hk_flags before. */
#ifdef STALLCAP_HAVE_HK_TYPE
#define STALLCAP_HK_TIMER	HK_TYPE_TIMER
#else
#define STALLCAP_HK_TIMER	HK_FLAG_TIMER
#endif

/*
 * Is a runnable @task held off every CPU by CPU bandwidth control (its
 * cgroup used its cpu.max quota for the period)?  Until Linux 6.18 the
 * throttled group's entity is dequeued from its parent's run queue while
 * the task stays queued inside the group; since then a task is throttled on
 * its way back to user space, dequeued and marked (task->throttled).  The
 * task's own entity queued under an unqueued ancestor means the former: no
 * other state has it (a real-time, deadline or sched_ext task's fair entity
 * is not queued at all).  Lockless loads: the timer, NMI or RCU reader that
 * calls this keeps a group being freed (call_rcu()) readable.
 */
#define STALLCAP_GROUP_DEPTH_MAX	64
static inline bool stallcap_task_throttled(struct task_struct *task)
{
#ifdef CONFIG_CFS_BANDWIDTH
	const struct sched_entity *se = &task->se;
	int depth;

#ifdef STALLCAP_HAVE_TASK_THROTTLED
	if (READ_ONCE(task->throttled))
		return true;
#endif
	if (!READ_ONCE(se->on_rq))
		return false;
	for (depth = 0; depth < STALLCAP_GROUP_DEPTH_MAX; depth++) {
		se = READ_ONCE(se->parent);
		if (!se)
			break;
		if (!READ_ONCE(se->on_rq))
			return true;
	}
#endif
	return false;
}

/*
 * Is @task in a memory stall as pressure stall information counts one
 * (between psi_memstall_enter() and _leave(): reclaim, compaction,
 * thrashing, the sleep memory.high imposes)?  A bit the task sets and
 * clears itself, under its run queue's lock: read without it, as of one
 * moment (the current task's own from its NMI or interrupt, another's from
 * the timer or under RCU).
 */
static inline bool stallcap_task_memstall(struct task_struct *task)
{
#ifdef CONFIG_PSI
	/* a bit field, written by its task under its run queue's lock */
	return data_race(!!task->in_memstall);
#else
	return false;
#endif
}

/*
 * The ring and slot mappings: never copied into a forked child (as after
 * MADV_DONTFORK: its stores cannot move its parent's slots), never grown
 * by mremap(), left out of core dumps, never executable.
 */
static inline void stallcap_vma_set_private(struct vm_area_struct *vma)
{
	stallcap_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	stallcap_vm_flags_clear(vma, VM_MAYEXEC);
}

/*
 * What a task blocks on in the kernel: hung-task blocker tracking (6.16,
 * CONFIG_DETECT_HUNG_TASK_BLOCKER) keeps the lock's address | its
 * BLOCKER_TYPE_* in task->blocker while the task waits.  Not used on
 * PREEMPT_RT, whose mutexes and rw-semaphores are rt_mutex based.
 */
#if defined(STALLCAP_HAVE_HUNG_TASK_BLOCKER) && \
	defined(CONFIG_DETECT_HUNG_TASK_BLOCKER) && !defined(CONFIG_PREEMPT_RT)
#include <linux/hung_task.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/semaphore.h>
#include <linux/uaccess.h>
#define STALLCAP_KERNEL_LOCKS	1
static inline unsigned long stallcap_task_blocker(struct task_struct *task)
{
	return READ_ONCE(task->blocker);
}

/*
 * The holder recorded in a kernel lock, as a task_struct address that the
 * caller must still check: read without faulting (the waiter may have got
 * the lock meanwhile and its memory be gone).  Mutex and rwsem owner words
 * keep flags in their low 3 bits; a reader-owned rwsem names no owner.
 */
static inline unsigned long stallcap_mutex_holder(void *lock)
{
	struct mutex *m = lock;
	unsigned long word;

	if (copy_from_kernel_nofault(&word, &m->owner, sizeof(word)))
		return 0;
	return word & ~0x07UL;			/* MUTEX_FLAGS */
}

static inline unsigned long stallcap_rwsem_holder(void *lock)
{
	struct rw_semaphore *sem = lock;
	unsigned long word;

	if (copy_from_kernel_nofault(&word, &sem->owner, sizeof(word)) ||
	    (word & 1UL))			/* RWSEM_READER_OWNED */
		return 0;
	return word & ~0x07UL;			/* RWSEM_OWNER_FLAGS_MASK */
}

/* A semaphore's last holder (kept with the blocker tracking), or 0. */
static inline unsigned long stallcap_sem_last_holder(void *lock)
{
	struct semaphore *sem = lock;
	unsigned long holder;

	if (copy_from_kernel_nofault(&holder, &sem->last_holder,
				     sizeof(holder)))
		return 0;
	return holder;
}
#else
#define STALLCAP_KERNEL_LOCKS	0
#define BLOCKER_TYPE_MUTEX		0x00UL
#define BLOCKER_TYPE_SEM		0x01UL
#define BLOCKER_TYPE_RWSEM_READER	0x02UL
#define BLOCKER_TYPE_RWSEM_WRITER	0x03UL
#define BLOCKER_TYPE_MASK		0x03UL
static inline unsigned long stallcap_task_blocker(struct task_struct *task)
{
	return 0;
}

static inline unsigned long stallcap_mutex_holder(void *lock)
{
	return 0;
}

static inline unsigned long stallcap_rwsem_holder(void *lock)
{
	return 0;
}

static inline unsigned long stallcap_sem_last_holder(void *lock)
{
	return 0;
}
#endif

/*
 * Return trampolines on @task's kernel stack: the kprobes' rethook (the
 * attach's wait probes are kretprobes).  The ORC unwinder recovers such a
 * frame through rethook_find_ret_addr(), which warns and gives up for a
 * task other than current that is running or runnable.
 */
static inline bool stallcap_task_has_rethooks(struct task_struct *task)
{
#ifdef CONFIG_RETHOOK
	return !llist_empty(&task->rethooks);
#else
	return false;
#endif
}

/*
 * May current's user memory be read without faulting now?  Outside NMI
 * context, yes.  In it, only while the loaded page tables are current's: an
 * NMI inside a context switch, after the next task's page tables are loaded
 * and before current changes, would read the next process's memory.
 * copy_from_user_nofault() checks this itself (nmi_uaccess_okay()) only in
 * newer kernels (not in 6.1's mm/maccess.c, nor 5.10's), and
 * nmi_uaccess_okay() is not exported, so CR3 is compared here.
 */
static inline bool stallcap_user_access_okay(void)
{
	struct mm_struct *mm = current->mm;

	if (!in_nmi())
		return true;
	return mm && read_cr3_pa() == __pa(mm->pgd);
}

/*
 * Threads of a process that never return to user space: io_uring's
 * workers (PF_IO_WORKER, 5.12) and, from 6.4, every user worker (vhost's
 * too, PF_USER_WORKER); before 5.12 io_uring's workers were kernel threads.
 */
#ifndef PF_IO_WORKER
#define PF_IO_WORKER	0
#endif
#ifndef PF_USER_WORKER
#define PF_USER_WORKER	0
#endif
#define SC_PF_NO_USER_RETURN	(PF_KTHREAD | PF_IO_WORKER | PF_USER_WORKER)

/* x86-64's syscall instruction (0f 05), read as a little-endian u16 */
#define SC_X86_SYSCALL_INSN	0x050f

/*
 * task_work_add() where nothing may be allocated (a tracepoint probe, a hard
 * irq_work): KASAN records the caller's stack without growing its depot
 * (TWAF_NO_ALLOC, 6.11), which PREEMPT_RT forbids there.
 */
#ifdef STALLCAP_HAVE_TWAF_NO_ALLOC
#define SC_TWA_RESUME_ATOMIC	(TWA_RESUME | TWAF_NO_ALLOC)
#else
#define SC_TWA_RESUME_ATOMIC	TWA_RESUME
#endif

/*
 * task_work_add() is exported by Debian's and Ubuntu's kernels (a patch for
 * binder), not by upstream Linux (module/Kbuild reads Module.symvers).
 * Without it nothing runs in a thread on its way back to user space: user
 * stacks are read when the sample is taken (in the interrupt, never from
 * NMI context beyond what user_copy_in_handler asks), never deferred (no
 * STALLCAP_FEAT_DEFER_USER), a blocked thread's from outside by a worker
 * while it is still off CPU (capture_deferred.c); the attach makes a new thread's watch, or a
 * followed process's attach, from a worker (attach_follow.c), and finds the
 * return of a wait call a thread was in at the attach by a poll
 * (attach_resume.c).  sc_task_work_add() fails as for an exiting task: it
 * is never called then.
 */
#ifdef STALLCAP_NO_TASK_WORK_EXPORT
#define SC_HAVE_TASK_WORK	false
static inline int sc_task_work_add(struct task_struct *task,
				   struct callback_head *work, int notify)
{
	return -ESRCH;
}
#else
#define SC_HAVE_TASK_WORK	true
#define sc_task_work_add	task_work_add
#endif

/*
 * pt_regs->ax of a thread inside a system call that has not returned: the
 * x86 entry code stores the errno of an unknown call number there (38,
 * written out: checkpatch takes that errno's name for a misuse), and the
 * call's result when it returns.
 */
#define SC_AX_IN_SYSCALL	((unsigned long)-38L)

#endif /* STALLCAP_COMPAT_H */
