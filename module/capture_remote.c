// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap capture of a thread running on another CPU, by NMI (default: it
 * reaches code running with interrupts disabled) or by IPI.
 *
 * The watch's timer reserves the record, publishes a request in the target
 * CPU's slot with cmpxchg() and sends the NMI; it never waits: it polls the
 * request's result on its next expiry.  The handler claims the slot with
 * xchg(), checks that the thread it interrupted is the target, captures it
 * and commits the record.  A request can be revoked while unclaimed; a late
 * NMI for a revoked request is then swallowed (remote_stale) rather than
 * reported as unknown.  Requests live in their watch, freed after an RCU
 * grace period, which also waits for NMI handlers in flight.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>
#include <asm/irq_regs.h>
#include <asm/nmi.h>
#include <asm/unwind.h>

#include "stallcap.h"

static DEFINE_PER_CPU(struct stallcap_capture_req *, remote_req);
static DEFINE_PER_CPU(atomic_t, remote_stale);
static DEFINE_PER_CPU(call_single_data_t, remote_csd);

static void remote_capture(struct stallcap_capture_req *req,
			   struct pt_regs *regs)
{
	struct stallcap_watch *w = req->watch;
	u64 start = ktime_get_mono_fast_ns();
	void *buf;
	u32 len;

	if (current != w->task || current->mm != w->mm) {
		/* pairs with smp_load_acquire() in poll_remote() */
		smp_store_release(&req->result, CAPTURE_MISMATCH);
		return;
	}
	buf = stallcap_capture_buf_remote() ?: req->rec;
	len = stallcap_capture_current(w, &req->draft, buf, regs, req->path);
	req->draft.migrate_retries = req->retries;
	stallcap_count(&w->sess->stats, req->path == STALLCAP_PATH_NMI ?
		       SC_CAPTURE_NMI : SC_CAPTURE_IPI, 1);
	stallcap_sample_finish(w, &req->draft, buf, req->rec, len, start);
	stallcap_hist_nmi(&w->sess->stats, ktime_get_mono_fast_ns() - start);
	if (buf != req->rec)
		stallcap_capture_buf_hold(req);	/* until the timer mirrors it */
	/* record and rec_len before DONE, pairs with poll_remote() */
	smp_store_release(&req->result, CAPTURE_DONE);
}

static int stallcap_nmi_handler(unsigned int type, struct pt_regs *regs)
{
	struct stallcap_capture_req *req;

	req = xchg(this_cpu_ptr(&remote_req), NULL);
	if (!req) {
		if (atomic_dec_if_positive(this_cpu_ptr(&remote_stale)) >= 0)
			return NMI_HANDLED;
		return NMI_DONE;	/* not ours */
	}
	remote_capture(req, regs);
	return NMI_HANDLED;
}

/*
 * The registers the call-function IPI interrupted: x86 does not set
 * get_irq_regs() for it, so walk up to the first interrupt frame.
 */
static struct pt_regs *ipi_interrupted_regs(void)
{
	struct unwind_state state;
	struct pt_regs *regs;

	for (unwind_start(&state, current, NULL, NULL); !unwind_done(&state);
	     unwind_next_frame(&state)) {
		regs = unwind_get_entry_regs(&state, NULL);
		if (regs)
			return regs;
	}
	return NULL;
}

static void stallcap_ipi_handler(void *unused)
{
	struct stallcap_capture_req *req;
	struct pt_regs *regs;

	req = xchg(this_cpu_ptr(&remote_req), NULL);
	if (!req)
		return;
	regs = get_irq_regs() ?: ipi_interrupted_regs();
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
		apic->send_IPI(cpu, NMI_VECTOR);
		return 0;
	}
	if (smp_call_function_single_async(cpu, per_cpu_ptr(&remote_csd, cpu))) {
		/* csd still queued for a revoked request: try again later */
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
	if (req->path == STALLCAP_PATH_NMI)
		atomic_inc(per_cpu_ptr(&remote_stale, req->cpu));
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

static void remote_nop(void *unused)
{
}

void stallcap_remote_exit(void)
{
	if (stallcap_use_nmi)
		unregister_nmi_handler(NMI_LOCAL, "stallcap");
	else
		on_each_cpu(remote_nop, NULL, 1);	/* flush queued csds */
}
