// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap deferred user stacks: complete a sample's user stack in the
 * thread's own context just before it next returns to user space, where user
 * memory may be read at length with interrupts on (as Linux 6.17's deferred
 * unwinder does, which modules cannot use on 6.1/6.12).  The stack copy
 * reads resident pages only, as at a capture, and faults nothing in.
 *
 * A sample that could not read the user stack (thread off CPU, or pages not
 * resident under NMI), or every kernel-mode sample with STALLCAP_CFG_DEFER_USER,
 * asks for completion: it gets a 64-bit cookie and STALLCAP_SAMPLE_DEFER_PENDING.
 * Samples taken before the thread returns to user space share the pending
 * cookie: one deferred capture per kernel entry.
 *
 * The request (struct stallcap_defer) is allocated with its watch.  While
 * queued it is owned by the task_work, which the kernel always runs (on
 * return to user space or in do_exit()); it holds a session reference, a
 * reference to its task (the watch's may be dropped before an irq_work
 * drain queues the task_work) and a module reference.  The task_work drops
 * the module reference as its last step, so module exit waits, with
 * synchronize_rcu_tasks(), for every task to have left the callback's
 * remaining instructions (a voluntary switch or user mode).  From NMI,
 * task_work_add() is reached through a per-CPU irq_work draining a
 * per-CPU lock-free list: the request itself carries no
 * irq_work, whose core would touch it after a task_work already freed it.
 *
 * Without task_work_add() (compat.h) only a blocked thread's sample asks
 * (the others copy at capture): a worker reads the user stack from outside
 * while the thread is still off CPU (pages it never touched end the copy,
 * as pages not resident end its own: the runs past them follow).  Its user
 * registers and stack are then those of the sample as long as it has not
 * run since: not on a CPU, and its context-switch count the one of the
 * capture, checked before and after the reads.  A thread that ran
 * meanwhile loses the record (counted as a deferred stack lost, as one
 * that exits first).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/module.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"
#include "why.h"

enum { DEFER_IDLE, DEFER_QUEUED, DEFER_ORPHANED };

static atomic64_t defer_cookie;
/* a task_work of this module was ever queued (here, or attach_follow.c) */
atomic_t stallcap_task_works_used;
static DEFINE_PER_CPU(struct llist_head, defer_from_nmi);
static DEFINE_PER_CPU(struct irq_work, defer_irq_work);

/*
 * Bytes of used stack above @sp in @mm, up to @max: to its mapping's end,
 * which @d keeps for the captures' copies (capture.c: copy_ended_in_gap()).
 */
static u32 defer_stack_extent(struct stallcap_defer *d, struct mm_struct *mm,
			      unsigned long sp, u32 max)
{
	struct vm_area_struct *vma;
	u32 len = 0;

	if (!mm || mmap_read_lock_killable(mm))
		return 0;
	vma = find_vma(mm, sp);
	if (vma && vma->vm_start <= sp) {
		len = min_t(u64, vma->vm_end - sp, max);
		WRITE_ONCE(d->stack_end, vma->vm_end);
	}
	mmap_read_unlock(mm);
	return len & ~7U;
}

/* The fixed part of @task's USER_STACK record, from the request. */
static void defer_fill_fixed(struct stallcap_defer *d, struct stallcap_sample *s,
			     struct task_struct *task)
{
	memset((u8 *)s + sizeof(s->hdr), 0, sizeof(*s) - sizeof(s->hdr));
	s->stall_id = d->stall_id;
	s->cookie = d->cookie;
	s->user_tag = d->user_tag;
	s->deadline_ns = d->deadline_ns;
	s->timeout_ns = d->timeout_ns;
	s->pid = task->tgid;
	s->tid = task->pid;
	s->ns_pid = d->ns_pid;
	s->ns_tid = d->ns_tid;
	s->cpu = task == current ? raw_smp_processor_id() : task_cpu(task);
	s->state = task == current ? STALLCAP_STATE_RUNNING :
		   stallcap_task_off_cpu_state(task);
	s->path = STALLCAP_PATH_DEFERRED;
	s->clock = d->clock;
	s->origin = d->origin;
	s->flags = STALLCAP_SAMPLE_USER_MODE;
	memcpy(s->comm, task->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
}

/* Build the USER_STACK record in @s (room for @max_stack stack bytes). */
static u32 defer_fill(struct stallcap_defer *d, struct stallcap_sample *s,
		      u32 max_stack)
{
	struct pt_regs *uregs = task_pt_regs(current);
	/* on the alternate signal stack, up to its top (capture_sigstack.c) */
	u32 bound = stallcap_sigstack_bound(uregs->sp, max_stack);
	struct stallcap_rec_writer wr;
	u32 want, len, stack_at;
	u64 *ips;
	u8 *stack;

	defer_fill_fixed(d, s, current);
	stallcap_rec_begin(&wr, s, s);
	stallcap_sec_put_regs(&wr, uregs);
	ips = stallcap_sec_start(&wr) + sizeof(struct stallcap_section);
	len = stallcap_walk_user_frames(uregs, ips, &s->flags, !d->copy_bytes);
	stallcap_sec_end(&wr, STALLCAP_SEC_USER_IPS,
			 sizeof(struct stallcap_section) + 8 * len);
	stack_at = wr.len + sizeof(struct stallcap_sec_user_stack);
	stack = stallcap_sec_start(&wr) + sizeof(struct stallcap_sec_user_stack);
	/*
	 * A user-mode sample's: the copy it would have made itself; a
	 * kernel-mode sample's: the used stack to the end of its mapping.
	 * Resident pages only, either way: no page is faulted in, so the
	 * thread's memory and time stay as they were, and pages a big frame
	 * never touched are not read as zeros that use up the copy (the runs
	 * past them follow, below).
	 */
	want = d->copy_bytes ? bound :
	       defer_stack_extent(d, current->mm, uregs->sp, bound);
	len = stallcap_copy_user_stack(uregs->sp, stack, want, &s->flags);
	/* the stack goes on past the copy, or no mapping at sp: partial */
	if (!d->copy_bytes && (want == max_stack || !want))
		s->flags |= STALLCAP_SAMPLE_COPY_PARTIAL;
	stallcap_sec_put_stack(&wr, uregs->sp, len);
	stallcap_put_interrupted_stack(&wr, uregs->sp, stack, len,
				       max_stack - len, &s->flags);
	/* a copy that ended at a page not resident: what lies past the gap */
	if (len < want && wr.len - stack_at < max_stack)
		stallcap_put_stack_more(&wr, current, uregs->sp, uregs->sp + len,
					max_stack - (wr.len - stack_at));
	/*
	 * Stamped after the reads, which may sleep (faults, the mmap lock): a
	 * sample taken meanwhile is of the same kernel entry and shares the
	 * cookie, and must not be later than the record that completes it.
	 */
	stallcap_sample_stamp(s);
	return wr.len;
}

/* Has @d's thread stayed off CPU since its sample?  (compat.h) */
static bool remote_still_off_cpu(const struct stallcap_defer *d)
{
	struct task_struct *task = d->task;

	smp_rmb();	/* what was read before, the checks after */
	return !READ_ONCE(task->on_cpu) &&
	       stallcap_switch_count(task) == d->switches &&
	       !(READ_ONCE(task->flags) & PF_EXITING);
}

/*
 * The USER_STACK record of @d's thread, read from outside while it is off
 * CPU (compat.h), in @s; 0 when it ran since its sample or cannot be read.
 */
static u32 defer_fill_remote(struct stallcap_defer *d, struct stallcap_sample *s,
			     u32 max_stack)
{
	struct task_struct *task = d->task;
	struct stallcap_rec_writer wr;
	struct mm_struct *mm;
	struct pt_regs uregs;
	u32 want, len, stack_at;
	u64 *ips;
	u8 *stack;
	int got;

	if (!remote_still_off_cpu(d) || !stallcap_task_user_regs(task, &uregs))
		return 0;
	mm = get_task_mm(task);
	if (!mm)
		return 0;
	want = mm == d->mm ? defer_stack_extent(d, mm, uregs.sp, max_stack) : 0;
	mmput(mm);
	defer_fill_fixed(d, s, task);
	stallcap_rec_begin(&wr, s, s);
	stallcap_sec_put_regs(&wr, &uregs);
	ips = stallcap_sec_start(&wr) + sizeof(struct stallcap_section);
	len = stallcap_remote_user_frames(task, &uregs, ips, &s->flags);
	stallcap_sec_end(&wr, STALLCAP_SEC_USER_IPS,
			 sizeof(struct stallcap_section) + 8 * len);
	stack_at = wr.len + sizeof(struct stallcap_sec_user_stack);
	stack = stallcap_sec_start(&wr) + sizeof(struct stallcap_sec_user_stack);
	/*
	 * Up to the first page never touched (FOLL_DUMP), as defer_fill()'s
	 * copy ends at the first page not resident; the runs past it follow.
	 */
	got = want ? access_process_vm(task, uregs.sp, stack, want, FOLL_DUMP) : 0;
	len = got > 0 ? got & ~7U : 0;
	if (len < want || want == max_stack || !want)
		s->flags |= STALLCAP_SAMPLE_COPY_PARTIAL;
	stallcap_sec_put_stack(&wr, uregs.sp, len);
	if (len < want)
		stallcap_put_stack_more(&wr, task, uregs.sp, uregs.sp + len,
					max_stack - (wr.len - stack_at));
	/* run since: these are not the sample's registers and stack */
	if (!remote_still_off_cpu(d))
		return 0;
	stallcap_sample_stamp(s);
	return wr.len;
}

/**
 * struct stallcap_defer_buf - scratch room of a deferred user-stack read
 * @size: bytes of @data
 * @data: the record is built here, then copied into the ring (and to the
 *	system-wide readers)
 */
struct stallcap_defer_buf {
	size_t size;
	u8 data[] __aligned(8);
};

/*
 * The session keeps the buffer of its last read for the next: a thread on
 * its way back to user space neither allocates nor frees tens of KiB per
 * sample (a vmalloc()ed buffer, when memory is fragmented, would flush
 * every CPU's TLB when freed).  One is kept, at most a quarter of the
 * session's ring (defer_emit()); reads in several threads at once allocate
 * their own, and the last returned stays.
 */
static struct stallcap_defer_buf *defer_buf_get(struct stallcap_session *sess,
						u32 len)
{
	struct stallcap_defer_buf *b = xchg(&sess->defer_buf, NULL);

	if (b && b->size >= len)
		return b;
	kvfree(b);
	b = kvmalloc(struct_size(b, data, len), GFP_KERNEL);
	if (b) {
		b->size = len;
		stallcap_count(&sess->stats, SC_DEFER_BUF_ALLOCS, 1);
	}
	return b;
}

static void defer_buf_put(struct stallcap_session *sess,
			  struct stallcap_defer_buf *b)
{
	if (cmpxchg(&sess->defer_buf, NULL, b))
		kvfree(b);
}

/**
 * stallcap_defer_buf_free() - free the buffer a session kept
 * @sess: the session, on its last reference
 */
void stallcap_defer_buf_free(struct stallcap_session *sess)
{
	kvfree(xchg(&sess->defer_buf, NULL));
}

/*
 * A deferred user stack that never comes: counted, and seen in ctl->lost,
 * also by the system-wide readers that got its DEFER_PENDING sample.
 */
static void defer_lost(struct stallcap_session *sess)
{
	stallcap_count(&sess->stats, SC_LOST, 1);
	stallcap_count(&sess->stats, SC_LOST_DEFERRED, 1);
	stallcap_ring_count_lost(sess->ring);
	stallcap_global_lost(sess);
}

static void defer_emit(struct stallcap_defer *d)
{
	struct stallcap_session *sess = d->sess;
	u32 max_stack = min_t(u64, STALLCAP_MAX_USER_STACK,
			      sess->ring->size / 4 -
			      STALLCAP_RECORD_MAX_BYTES(0));
	struct stallcap_defer_buf *buf;
	struct stallcap_sample *tmp, *s;
	u32 max_len, len;

	/* a user-mode sample's copy: no bigger buffer than it needs */
	if (d->copy_bytes)
		max_stack = min(max_stack, d->copy_bytes);
	max_len = ALIGN(STALLCAP_RECORD_MAX_BYTES(max_stack), 8);
	if (d->task->flags & PF_EXITING ||
	    !stallcap_user_regs_of(d->task, d->mm))
		goto lost;
	buf = defer_buf_get(sess, max_len);
	if (!buf)
		goto lost;
	tmp = (struct stallcap_sample *)buf->data;
	len = SC_HAVE_TASK_WORK ? defer_fill(d, tmp, max_stack) :
	      defer_fill_remote(d, tmp, max_stack);
	if (!len) {
		defer_buf_put(sess, buf);
		goto lost;
	}
	s = stallcap_ring_reserve(sess->ring, STALLCAP_REC_USER_STACK, len);
	if (s) {
		memcpy((u8 *)s + sizeof(s->hdr), (u8 *)tmp + sizeof(s->hdr),
		       len - sizeof(s->hdr));
		stallcap_count(&sess->stats, SC_DEFERRED, 1);
		stallcap_ring_commit(sess->ring, s, len, len);
		irq_work_queue(&sess->wake_work);
	} else {
		/* the ring counted it in ctl->lost already */
		stallcap_count(&sess->stats, SC_LOST, 1);
		stallcap_count(&sess->stats, SC_LOST_DEFERRED, 1);
	}
	/* the system-wide readers got the sample: they get its stack too */
	stallcap_global_mirror(sess, STALLCAP_REC_USER_STACK, tmp, len);
	defer_buf_put(sess, buf);
	return;
lost:
	defer_lost(sess);
}

/* Last step of a queued request: back to idle, or freed if orphaned. */
static void defer_done(struct stallcap_defer *d)
{
	struct stallcap_session *sess = d->sess;
	struct task_struct *task = d->task;

	if (cmpxchg(&d->state, DEFER_QUEUED, DEFER_IDLE) != DEFER_QUEUED)
		kfree(d);
	put_task_struct(task);
	stallcap_session_put(sess);
	module_put(THIS_MODULE);	/* see stallcap_defer_exit() */
}

static void defer_task_work(struct callback_head *cb)
{
	struct stallcap_defer *d = container_of(cb, struct stallcap_defer, twork);

	defer_emit(d);
	defer_done(d);
}

static void defer_done_work(struct work_struct *work)
{
	defer_done(container_of(work, struct stallcap_defer, done_work));
}

/* compat.h: the read from outside, in a worker */
static void defer_remote_work(struct work_struct *work)
{
	struct stallcap_defer *d = container_of(work, struct stallcap_defer,
						remote_work);

	defer_emit(d);
	defer_done(d);
}

/* Context: any but NMI (hard IRQ included, also on PREEMPT_RT). */
static void defer_queue_task_work(struct stallcap_defer *d)
{
	if (!sc_task_work_add(d->task, &d->twork, SC_TWA_RESUME_ATOMIC))
		return;
	/* the thread is past exit_task_work(): no user stack ever */
	defer_lost(d->sess);
	/*
	 * Its last references (session, task, the request itself if
	 * orphaned) may go with it: never in hard-IRQ context, where
	 * PREEMPT_RT cannot free.
	 */
	INIT_WORK(&d->done_work, defer_done_work);
	schedule_work(&d->done_work);
}

static void defer_drain_nmi_requests(struct irq_work *iw)
{
	struct llist_node *list = llist_del_all(this_cpu_ptr(&defer_from_nmi));
	struct stallcap_defer *d, *next;

	/* next is read before the task_work may free d */
	llist_for_each_entry_safe(d, next, list, lnode)
		defer_queue_task_work(d);
}

void stallcap_defer_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		/*
		 * hard: on PREEMPT_RT not left to a FIFO-1 kthread that a
		 * stalled real-time thread would starve
		 */
		stallcap_irq_work_init_hard(per_cpu_ptr(&defer_irq_work, cpu),
					    defer_drain_nmi_requests);
}

void stallcap_defer_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		irq_work_sync(per_cpu_ptr(&defer_irq_work, cpu));
	/*
	 * Every task_work has dropped its module reference (rmmod got here),
	 * but the last one may still be executing its final instructions in
	 * this module's text: wait until every task passed a voluntary
	 * context switch or user mode.
	 */
	if (atomic_read(&stallcap_task_works_used))
		synchronize_rcu_tasks();
}

/**
 * stallcap_defer_alloc() - allocate a watch's deferred-capture request
 * @task: the watched thread
 */
struct stallcap_defer *stallcap_defer_alloc(struct task_struct *task)
{
	struct stallcap_defer *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	d->task = task;
	init_task_work(&d->twork, defer_task_work);
	return d;
}

/**
 * stallcap_defer_free() - the watch is going away
 * @d: its request
 *
 * A queued request now belongs to its task_work, which frees it.
 */
void stallcap_defer_free(struct stallcap_defer *d)
{
	if (d && cmpxchg(&d->state, DEFER_QUEUED, DEFER_ORPHANED) != DEFER_QUEUED)
		kfree(d);
}

/*
 * compat.h: may @s's user stack be read from outside?  A blocked sample of
 * a thread that waits, or that its cgroup's CPU quota holds off (until the
 * quota's next period), not a preempted one (it runs again before most
 * reads: each would be a counted loss), that no switch disturbed, not from
 * NMI; one of the same off-CPU period as a read already queued shares it.
 */
static bool defer_remote_possible(struct stallcap_watch *w,
				  const struct stallcap_sample *s, bool in_nmi)
{
	struct stallcap_defer *d = w->defer;

	if (in_nmi || s->path != STALLCAP_PATH_BLOCKED ||
	    (s->state == STALLCAP_STATE_RUNNABLE &&
	     !(s->flags & STALLCAP_SAMPLE_THROTTLED)) ||
	    !(s->flags & STALLCAP_SAMPLE_USTACK_REMOTE) ||
	    (s->flags & STALLCAP_SAMPLE_RACED) || !w->blocked_switches)
		return false;
	return READ_ONCE(d->state) != DEFER_QUEUED ||
	       READ_ONCE(d->switches) == w->blocked_switches;
}

static void defer_request(struct stallcap_watch *w, struct stallcap_sample *s,
			  bool in_nmi, u32 copy_bytes)
{
	struct stallcap_defer *d = w->defer;

	if (!SC_HAVE_TASK_WORK && !defer_remote_possible(w, s, in_nmi)) {
		s->flags |= STALLCAP_SAMPLE_USTACK_MISSED;
		return;
	}
	if (READ_ONCE(d->state) == DEFER_QUEUED) {
		s->cookie = READ_ONCE(d->cookie);
		s->flags |= STALLCAP_SAMPLE_DEFER_PENDING;
		return;
	}
	if (!try_module_get(THIS_MODULE))
		return;
	atomic_set(&stallcap_task_works_used, 1);
	get_task_struct(d->task);	/* dropped by defer_done() */
	d->cookie = atomic64_inc_return(&defer_cookie);
	d->sess = w->sess;
	d->mm = w->mm;
	d->stall_id = s->stall_id;
	d->user_tag = s->user_tag;
	d->deadline_ns = s->deadline_ns;
	d->timeout_ns = s->timeout_ns;
	d->clock = s->clock;
	d->origin = s->origin;
	d->ns_pid = s->ns_pid;
	d->ns_tid = s->ns_tid;
	d->copy_bytes = copy_bytes;
	d->switches = w->blocked_switches;
	stallcap_session_get(w->sess);
	/* fields above before the state, pairs with the cmpxchg()s */
	smp_store_release(&d->state, DEFER_QUEUED);
	s->cookie = d->cookie;
	s->flags |= STALLCAP_SAMPLE_DEFER_PENDING;
	if (!SC_HAVE_TASK_WORK) {
		INIT_WORK(&d->remote_work, defer_remote_work);
		queue_work(system_unbound_wq, &d->remote_work);
	} else if (in_nmi) {
		llist_add(&d->lnode, this_cpu_ptr(&defer_from_nmi));
		irq_work_queue(this_cpu_ptr(&defer_irq_work));
	} else
		defer_queue_task_work(d);
}

/**
 * stallcap_defer_request() - ask for the user stack of a sample's thread
 * @w: the watch (lock held, or the NMI handling its request)
 * @s: the sample: gets the cookie and STALLCAP_SAMPLE_DEFER_PENDING
 * @in_nmi: called from the NMI handler
 *
 * The record copies the used stack up to the end of its mapping (at most
 * 64 KiB and a quarter of the ring): the thread may have been anywhere.
 */
void stallcap_defer_request(struct stallcap_watch *w, struct stallcap_sample *s,
			    bool in_nmi)
{
	defer_request(w, s, in_nmi, 0);
}

/**
 * stallcap_defer_request_user() - read a user-mode sample's user stack on the
 * interrupt's return to user space
 * @w: the watch
 * @s: a sample of the thread interrupted in user mode: taken by its timer,
 *	or by an NMI/IPI whose irq_work found the thread as the handler left
 *	it (capture_tail.c)
 *
 * The task_work runs on the exit of the very interrupt that took @s, before
 * the thread executes another user instruction: (anything it meets first,
 * a reschedule, a signal's get_signal(), runs task_work first or leaves the
 * user registers alone) so the copy is the sample's own, made with
 * interrupts on.  It copies what the sample would have: user_stack_bytes of
 * resident memory, COPY_PARTIAL when a page was not.  (A thread in an rseq
 * critical section may have it aborted after the copy: its record shows
 * the section, the thread resumes at the abort handler.)
 * Context: hard-IRQ (the timer or the irq_work), the thread's own CPU,
 * @w->task is current.
 */
void stallcap_defer_request_user(struct stallcap_watch *w,
				 struct stallcap_sample *s)
{
	defer_request(w, s, false, w->sess->cfg.user_stack_bytes);
}

/**
 * stallcap_defer_wanted() - does this sample need a deferred user stack?
 * @sess: the session
 * @s: the captured sample
 *
 * Not an abandoned one: it holds no registers, and the thread's next return
 * to user space ends a later kernel entry (the DISARM or exit that
 * abandoned it), whose user stack is not this sample's.  Without
 * task_work_add() (compat.h) only a blocked thread's, read from outside.
 */
bool stallcap_defer_wanted(const struct stallcap_session *sess,
			   const struct stallcap_sample *s)
{
	if (!SC_HAVE_TASK_WORK && s->path != STALLCAP_PATH_BLOCKED)
		return false;
	if (s->flags & (STALLCAP_SAMPLE_NO_USER | STALLCAP_SAMPLE_USER_MODE |
			STALLCAP_SAMPLE_DEFER_PENDING |
			STALLCAP_SAMPLE_ABANDONED))
		return false;
	if (sess->cfg.flags & STALLCAP_CFG_DEFER_USER)
		return true;
	return s->flags & (STALLCAP_SAMPLE_USTACK_REMOTE |
			   STALLCAP_SAMPLE_USTACK_FAULT);
}
