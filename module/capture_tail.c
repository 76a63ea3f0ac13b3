// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap NMI/IPI captures in two steps: little work in the handler.
 *
 * The NMI (or IPI) handler of a remote capture saves what only it can see:
 * the interrupted context, the kernel frames and the user registers
 * (stallcap_capture_head()).  The user stack, up to 64 KiB copied and
 * walked, and the CPU times (STALLCAP_SEC_TIMES: counters read microseconds
 * later) are left to an irq_work queued on the same CPU, which also
 * commits the record; the timer that asked mirrors it to the system-wide
 * readers when it sees the capture done, as before.
 *
 * A capture that interrupted user mode is not copied by the irq_work
 * either: in time (below), it asks for the deferred user stack
 * (capture_deferred.c), whose task_work runs on the exit of the irq_work's
 * own interrupt to user space, before another user instruction, with
 * interrupts on: the same bytes, one USER_STACK record by cookie, as the
 * thread's own timer does (watch_timer.c).
 *
 * Why the irq_work still copies the bytes of the moment of the stall:
 * irq_work_queue() from the handler raises the irq_work self-IPI on this
 * CPU before the handler returns.  User code always runs with interrupts
 * enabled, so the CPU takes that pending interrupt before it executes
 * another user instruction: between the handler and the irq_work, the
 * thread can only have run in kernel mode on this CPU (the rest of the
 * interrupted kernel code, or other interrupts), which does not move its
 * user stack pointer nor rewrite its frames.  The user registers saved at
 * its kernel entry, and the return addresses and saved frame pointers above
 * them, are those of the capture.  (A system call that is itself writing a
 * user buffer on the stack may change that buffer's bytes meanwhile, as it
 * may for the kernel's own deferred unwinder; the frames do not change.)
 * The thread may leave this CPU before the irq_work runs: a context switch
 * (the interrupted kernel code scheduled, with interrupts off up to the
 * switch) lets it run user code elsewhere.  So the irq_work checks that it
 * interrupts the same thread with the same context-switch count, and, when
 * it interrupted user mode, at the same user ip, sp and bp.  If not:
 *  - a capture taken in kernel mode asks for a deferred user stack
 *    (capture_deferred.c), read on the thread's return to user space: by
 *    the same reasoning still the stack of the stall, in its own record
 *    with STALLCAP_SAMPLE_DEFER_PENDING and a cookie;
 *  - a capture taken in user mode gets STALLCAP_SAMPLE_USTACK_MISSED and no
 *    user stack rather than bytes of a later moment.
 *
 * Code running with interrupts disabled holds the irq_work off, possibly
 * for long (the stall itself may be such code).  A capture that interrupted
 * it can be completed by the watch's timer from its own CPU after
 * TAIL_WAIT_NS, as "not taken" above (a kernel-mode capture: the deferred
 * user stack), so that its sample is not late; so can any capture whose
 * watch is being abandoned.
 *
 * One capture per CPU waits for its irq_work at a time (tail_req), its
 * state in the CPU's tail (tail_data, not in the watch: a watch stays
 * small); the irq_work and the timer claim it with xchg()/cmpxchg(), so
 * exactly one of them completes it, and frees the tail when done with it.
 * A handler that finds the tail in use (a second NMI before the irq_work
 * ran or finished) reads the user stack itself, as before, or for a
 * kernel-mode capture asks for the deferred user stack.
 *
 * Lifetime: the request lives in its watch, which is not freed while its
 * result is pending (stallcap_watch_abandon_capture() completes or waits
 * for it); the tail also holds a reference to its task.  Module exit waits
 * for the irq_works (stallcap_tail_exit()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/irq_work.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

/* How long the timer lets a capture of interrupts-off code wait. */
#define TAIL_WAIT_NS	(1 * NSEC_PER_MSEC)

/**
 * struct stallcap_capture_tail - the rest of an NMI/IPI capture, done by an
 * irq_work on the same CPU right after the handler; one per CPU
 * @uregs: the user registers at the capture (a copy)
 * @buf: where the record is being built (capture buffer or ring record)
 * @len: its length after the handler's part
 * @start_ns: when the capture began
 * @queued_ns: when the handler left the rest to the irq_work
 * @task: the captured thread (a reference held until the tail is done)
 * @switches: its context switches at the capture (nvcsw + nivcsw)
 * @user_mode: the handler interrupted user mode
 * @irqs_off: it interrupted code running with interrupts disabled, which
 *	holds the irq_work off: the timer may complete the capture without it
 * @in_use: set by the handler that fills it, cleared by whoever completed
 *	the capture once done with it (the slot is cleared before that)
 */
struct stallcap_capture_tail {
	struct pt_regs uregs;
	void *buf;
	u32 len;
	u64 start_ns;
	u64 queued_ns;
	struct task_struct *task;
	unsigned long switches;
	bool user_mode;
	bool irqs_off;
	bool in_use;
};

static DEFINE_PER_CPU(struct stallcap_capture_req *, tail_req);
static DEFINE_PER_CPU(struct stallcap_capture_tail, tail_data);
static DEFINE_PER_CPU(struct irq_work, tail_work);

/*
 * Commit @req's record and tell the timer that asked; @in_handler: count
 * the time spent in the NMI/IPI handler, which this is the end of.
 */
static void tail_publish(struct stallcap_capture_req *req, void *buf, u32 len,
			 u64 start, bool in_handler)
{
	struct stallcap_watch *w = req->watch;

	stallcap_count(&w->sess->stats, req->path == STALLCAP_PATH_NMI ?
		       SC_CAPTURE_NMI : SC_CAPTURE_IPI, 1);
	stallcap_sample_finish(w, &req->draft, buf, req->rec, len, start, true);
	if (in_handler)
		stallcap_hist_nmi(&w->sess->stats,
				  ktime_get_mono_fast_ns() - start);
	/* record and rec_len before DONE, pairs with poll_remote() */
	smp_store_release(&req->result, CAPTURE_DONE);
}

/*
 * Is the current context still the captured thread with the user stack of
 * the capture?  Context: the irq_work on the capture's CPU.
 */
static bool tail_in_time(const struct stallcap_capture_tail *t,
			 const struct stallcap_watch *w)
{
	/* the irq_work vector sets no irq regs: find the interrupted ones */
	struct pt_regs *regs = stallcap_interrupted_regs();

	if (current != t->task || READ_ONCE(current->mm) != w->mm ||
	    current->nvcsw + current->nivcsw != t->switches)
		return false;
	if (regs && user_mode(regs))
		return regs->ip == t->uregs.ip && regs->sp == t->uregs.sp &&
		       regs->bp == t->uregs.bp;
	return true;
}

/*
 * Finish a claimed tail (@t, of @req's CPU): with the user stack when
 * @in_time, else without.
 */
static void tail_complete(struct stallcap_capture_req *req,
			  struct stallcap_capture_tail *t, bool in_time)
{
	struct stallcap_watch *w = req->watch;
	struct stallcap_sample *s = &req->draft;
	u64 start = t->start_ns;
	void *buf = t->buf;
	u32 len = t->len;

	if (!in_time && t->user_mode) {
		s->flags |= STALLCAP_SAMPLE_USTACK_MISSED;
	} else if (!in_time) {
		stallcap_defer_request(w, s, in_nmi());
	} else if (t->user_mode && SC_HAVE_TASK_WORK) {
		/* on this interrupt's return to user space: see above */
		stallcap_defer_request_user(w, s);
		in_time = false;
	}
	len = stallcap_capture_rest(w, s, buf, len, in_time ? &t->uregs : NULL,
				    t->task);
	/* never the last reference: the watch holds one while it waits */
	put_task_struct(t->task);
	/* done with it: the CPU's next handler may fill it (tail_queue()) */
	smp_store_release(&t->in_use, false);
	tail_publish(req, buf, len, start, false);
}

static void tail_run(struct irq_work *work)
{
	struct stallcap_capture_req *req = xchg(this_cpu_ptr(&tail_req), NULL);
	struct stallcap_capture_tail *t = this_cpu_ptr(&tail_data);

	if (req)
		tail_complete(req, t, tail_in_time(t, req->watch));
}

/*
 * Leave the user stack (read from a copy of @uregs, the record so far
 * @len bytes at @buf) to this CPU's irq_work.  Return: false when another
 * capture's tail is still in this CPU's tail.
 */
static bool tail_queue(struct stallcap_capture_req *req, struct pt_regs *regs,
		       const struct pt_regs *uregs, void *buf, u32 len,
		       u64 start)
{
	struct stallcap_capture_req **slot = this_cpu_ptr(&tail_req);
	struct stallcap_capture_tail *t = this_cpu_ptr(&tail_data);

	/*
	 * Only this CPU's handler fills it: free until the stores below.
	 * Pairs with the release in tail_complete(): its reads of the
	 * previous tail are done.
	 */
	if (smp_load_acquire(&t->in_use))
		return false;
	t->in_use = true;
	t->uregs = *uregs;
	t->buf = buf;
	t->len = len;
	t->start_ns = start;
	t->user_mode = user_mode(regs);
	t->irqs_off = !(regs->flags & X86_EFLAGS_IF);
	t->task = current;
	t->switches = current->nvcsw + current->nivcsw;
	t->queued_ns = ktime_get_mono_fast_ns();
	get_task_struct(current);
	/* it runs after this handler returns, finding the slot set */
	irq_work_queue(this_cpu_ptr(&tail_work));
	/* the watch's last use here: once in the slot, a timer may complete it */
	stallcap_hist_nmi(&req->watch->sess->stats,
			  ktime_get_mono_fast_ns() - start);
	/* the tail's fields before the slot, pairs with stallcap_tail_steal() */
	smp_store_release(slot, req);
	return true;
}

/**
 * stallcap_tail_capture() - capture the current thread for @req
 * @req: the claimed request; current is its thread
 * @regs: the interrupted registers
 * @start: when the handler began
 *
 * Context: the NMI or IPI handler on the thread's CPU.
 */
void stallcap_tail_capture(struct stallcap_capture_req *req,
			   struct pt_regs *regs, u64 start)
{
	struct stallcap_watch *w = req->watch;
	struct stallcap_sample *s = &req->draft;
	struct pt_regs *uregs;
	void *buf = NULL;
	u32 len;

	/* a kernel copy only for the system-wide readers (capture.c) */
	if (stallcap_global_readers())
		buf = stallcap_capture_buf_remote();
	if (!buf)
		buf = req->rec;

	if (buf != req->rec)
		stallcap_capture_buf_hold(req);	/* until the timer mirrors it */
	s->migrate_retries = req->retries;
	if (READ_ONCE(stallcap_user_copy_in_handler)) {
		len = stallcap_capture_current(w, s, buf, regs, req->path);
		goto publish;
	}
	uregs = stallcap_capture_head(w, s, buf, regs, req->path, &len);
	if (!uregs) {
		len = stallcap_capture_rest(w, s, buf, len, NULL, current);
		goto publish;
	}
	if (tail_queue(req, regs, uregs, buf, len, start))
		return;
	/* another capture's tail waits on this CPU: read it now or later */
	if (!user_mode(regs))
		stallcap_defer_request(w, s, in_nmi());
	len = stallcap_capture_rest(w, s, buf, len,
				    user_mode(regs) ? uregs : NULL, current);
publish:
	tail_publish(req, buf, len, start, true);
}

/**
 * stallcap_tail_steal() - complete @req's capture without its irq_work
 * @req: a request claimed by its handler (result pending)
 * @now: whatever it interrupted (the watch is abandoning the capture);
 *	else only a capture of interrupts-off code queued TAIL_WAIT_NS ago
 *
 * The sample goes without its user stack (see the top of this file).
 * Context: the watch's lock held (its timer, or progress), any CPU.
 * Return: true when completed here: its result is CAPTURE_DONE.
 */
bool stallcap_tail_steal(struct stallcap_capture_req *req, bool now)
{
	struct stallcap_capture_req **slot = per_cpu_ptr(&tail_req, req->cpu);
	struct stallcap_capture_tail *t = per_cpu_ptr(&tail_data, req->cpu);

	/* pairs with the release in tail_queue() */
	if (smp_load_acquire(slot) != req)
		return false;
	if (!now && (!READ_ONCE(t->irqs_off) ||
		     ktime_get_mono_fast_ns() - READ_ONCE(t->queued_ns) <
		     TAIL_WAIT_NS))
		return false;
	if (cmpxchg(slot, req, NULL) != req)
		return false;	/* the irq_work has it */
	tail_complete(req, t, false);
	return true;
}

void stallcap_tail_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		stallcap_irq_work_init_hard(per_cpu_ptr(&tail_work, cpu), tail_run);
}

/* No capture is pending any more: wait for irq_works still running. */
void stallcap_tail_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		irq_work_sync(per_cpu_ptr(&tail_work, cpu));
}
