// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap capture of a thread running on another CPU, by NMI (default: it
 * reaches code running with interrupts disabled) or by IPI.
 *
 * The watch's timer reserves the record, publishes a request in the target
 * CPU's slot with cmpxchg() and sends the NMI; it never waits: it polls the
 * request's result on its next expiry.  The handler claims the slot with
 * xchg(), checks that the thread it interrupted is the target, captures it
 * and commits the record.  A request can be revoked while unclaimed.
 *
 * NMIs carry no sender: whichever NMI comes first on the target claims the
 * request (a perf or watchdog NMI that comes first captures the same
 * thread).  An NMI that finds no request is taken for stallcap's own late
 * one, and swallowed once so that it is not reported as unknown, in two
 * cases:
 *  - a request of this CPU was revoked (timed out, or its watch moved on)
 *    since the CPU last entered its NMI handler: the revoked request was
 *    never claimed, so its NMI has not been handled yet; NMIs held off meet
 *    in one, so the next NMI of the CPU, whatever it finds, settles that
 *    debt (remote_nmi_owed_until).  This holds however long the CPU held
 *    NMIs off (another NMI handler running long), which a window counted
 *    from the send does not;
 *  - within NMI_WINDOW_NS of stallcap's last send to that CPU (another NMI
 *    claimed the request before stallcap's own came).
 * Both close by themselves (NMI_OWED_NS bounds the first), so an NMI that
 * never came leaves nothing wrong behind for long.
 *
 * In IPI mode one call_single_data per target CPU is in flight at a time
 * (remote_csd_busy): a sender that finds it queued leaves its request in the
 * slot, where the queued call's handler finds it.
 *
 * Requests live in their watch, freed after an RCU grace period, which also
 * waits for NMI handlers in flight.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>
#include <asm/irq_regs.h>
#include <asm/nmi.h>
#include <asm/unwind.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"
#include "why.h"

#define NMI_WINDOW_NS	(50 * NSEC_PER_MSEC)	/* TCG can deliver late */
#define NMI_OWED_NS	NSEC_PER_SEC	/* a revoked request's NMI never came */

static DEFINE_PER_CPU(struct stallcap_capture_req *, remote_req);
static DEFINE_PER_CPU(u64, remote_nmi_until);
/* until when the CPU's next NMI is a revoked request's (0: none owed) */
static DEFINE_PER_CPU(u64, remote_nmi_owed_until);
static DEFINE_PER_CPU(call_single_data_t, remote_csd);
static DEFINE_PER_CPU(atomic_t, remote_csd_busy);

/*
 * The handler landed in stallcap's own code (its buddy checker or a watch
 * timer, or any of its text) in the one hard IRQ on top of the thread: that
 * is never the stall.  Return the registers the IRQ interrupted (the
 * thread's own frame 0), or NULL (not stallcap's, or an IRQ that sets no
 * irq regs).
 */
static struct pt_regs *own_irq_regs(struct pt_regs *regs)
{
	/* this handler's own hard-IRQ count, and the IRQ's */
	if (hardirq_count() >> HARDIRQ_SHIFT != 2)
		return NULL;
	if (!this_cpu_read(stallcap_own_irq) &&
	    !within_module(regs->ip, THIS_MODULE))
		return NULL;
	return get_irq_regs();
}

static void remote_capture(struct stallcap_capture_req *req,
			   struct pt_regs *regs)
{
	struct pt_regs *under;
	struct stallcap_watch *w = req->watch;
	u64 start = ktime_get_mono_fast_ns();

	if (current != w->task && req->for_runner)
		stallcap_why_note_runner(req, regs);
	if (current != w->task || current->mm != w->mm) {
		/* pairs with smp_load_acquire() in poll_remote() */
		smp_store_release(&req->result, CAPTURE_MISMATCH);
		return;
	}
	under = own_irq_regs(regs);	/* stallcap's callback on top: under it */
	/*
	 * Another interrupt on top of the thread is not its stall either: the
	 * timer asks again a little later, a bounded number of times; then the
	 * thread is taken as it is, flagged IN_HARDIRQ/IN_SOFTIRQ, the
	 * handler's frames above its own.
	 */
	if (!under && req->irq_retries < STALLCAP_IRQ_RETRIES &&
	    stallcap_interrupted_an_interrupt()) {
		/* pairs with smp_load_acquire() in poll_remote() */
		smp_store_release(&req->result, CAPTURE_IRQ);
		return;
	}
	/* the user stack is read after the handler (capture_tail.c) */
	stallcap_tail_capture(req, under ?: regs, start);
}

static int stallcap_nmi_handler(unsigned int type, struct pt_regs *regs)
{
	struct stallcap_capture_req *req;
	u64 *until = this_cpu_ptr(&remote_nmi_until);
	u64 *owed_until = this_cpu_ptr(&remote_nmi_owed_until);
	/*
	 * This NMI is, or met, the NMI of any request revoked before it
	 * (xchg(), not this_cpu_xchg(): the revoker writes from its CPU;
	 * a plain read first: nothing is owed for nearly every NMI).
	 */
	u64 owed = READ_ONCE(*owed_until) ? xchg(owed_until, 0) : 0;
	u64 now;

	req = xchg(this_cpu_ptr(&remote_req), NULL);
	if (req) {
		remote_capture(req, regs);
		return NMI_HANDLED;
	}
	now = ktime_get_mono_fast_ns();
	if (now < owed || now < READ_ONCE(*until)) {
		/* a revoked request's, or a late one: one swallow per send */
		WRITE_ONCE(*until, 0);
		return NMI_HANDLED;
	}
	return NMI_DONE;	/* not ours */
}

static void stallcap_ipi_handler(void *unused)
{
	struct stallcap_capture_req *req;
	struct pt_regs *regs;

	/* the csd may be queued again: a sender from now on sends it */
	atomic_set(this_cpu_ptr(&remote_csd_busy), 0);
	smp_mb__after_atomic();	/* busy cleared before the slot is read */
	req = xchg(this_cpu_ptr(&remote_req), NULL);
	if (!req)
		return;
	regs = get_irq_regs() ?: stallcap_interrupted_regs();
	if (regs)
		remote_capture(req, regs);
	else	/* pairs with smp_load_acquire() in poll_remote() */
		smp_store_release(&req->result, CAPTURE_MISMATCH);
}

/**
 * stallcap_remote_send() - ask @cpu to capture its current thread
 * @req: the request (watch, rec and retries set by the caller)
 * @cpu: the CPU the target runs on
 *
 * Context: hard-IRQ, IRQs off.  Never waits.
 * Return: 0 when sent, -EBUSY when @cpu has a request pending already.
 */
int stallcap_remote_send(struct stallcap_capture_req *req, int cpu)
{
	struct stallcap_capture_req **slot = per_cpu_ptr(&remote_req, cpu);

	req->cpu = cpu;
	req->path = stallcap_use_nmi ? STALLCAP_PATH_NMI : STALLCAP_PATH_IPI;
	req->sent_ns = ktime_get_mono_fast_ns();
	/* request fields before the slot's cmpxchg() publishes it */
	smp_store_release(&req->result, CAPTURE_PENDING);
	if (cmpxchg(slot, NULL, req))
		return -EBUSY;
	if (stallcap_use_nmi) {
		WRITE_ONCE(*per_cpu_ptr(&remote_nmi_until, cpu),
			   req->sent_ns + NMI_WINDOW_NS);
		apic->send_IPI(cpu, NMI_VECTOR);
		return 0;
	}
	/*
	 * A csd still queued (for a revoked request, or another sender's)
	 * will find this request in the slot: queue it only when it is not.
	 * The cmpxchg()es order the slot before busy, pairing with the
	 * handler's barrier between clearing busy and reading the slot.
	 */
	if (atomic_cmpxchg(per_cpu_ptr(&remote_csd_busy, cpu), 0, 1))
		return 0;
	if (smp_call_function_single_async(cpu, per_cpu_ptr(&remote_csd, cpu))) {
		/* cannot happen with busy held; undo rather than wait */
		atomic_set(per_cpu_ptr(&remote_csd_busy, cpu), 0);
		if (cmpxchg(slot, req, NULL) == req)
			return -EBUSY;
	}
	return 0;
}

/**
 * stallcap_remote_revoke() - withdraw a request not yet claimed
 * @req: a request sent with stallcap_remote_send()
 *
 * Return: true when revoked (the handler will not touch it); false when the
 * handler claimed it: its result is or will soon be DONE or MISMATCH.
 */
bool stallcap_remote_revoke(struct stallcap_capture_req *req)
{
	if (cmpxchg(per_cpu_ptr(&remote_req, req->cpu), req, NULL) != req)
		return false;
	/* unclaimed: no NMI was handled there since the send; its own is due */
	if (req->path == STALLCAP_PATH_NMI)
		WRITE_ONCE(*per_cpu_ptr(&remote_nmi_owed_until, req->cpu),
			   ktime_get_mono_fast_ns() + NMI_OWED_NS);
	return true;
}

int stallcap_remote_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		INIT_CSD(per_cpu_ptr(&remote_csd, cpu), stallcap_ipi_handler,
			 NULL);
	if (!stallcap_use_nmi)
		return 0;
	return register_nmi_handler(NMI_LOCAL, stallcap_nmi_handler, 0,
				    "stallcap");
}

void stallcap_remote_exit(void)
{
	int cpu;

	if (stallcap_use_nmi) {
		unregister_nmi_handler(NMI_LOCAL, "stallcap");
		return;
	}
	/* no sender is left: wait for queued csds to have run, then for
	 * their handlers (IRQs off) to have returned
	 */
	for_each_possible_cpu(cpu)
		while (atomic_read(per_cpu_ptr(&remote_csd_busy, cpu)))
			usleep_range(1000, 2000);
	synchronize_rcu();
}
