// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap capture of the current thread from interrupted registers: the
 * timer interrupt on the thread's own CPU, or the NMI/IPI handler on another
 * CPU.  Everything here is NMI-safe: no locks, no allocation, bounded work,
 * user memory read only with copy_from_user_nofault() (the stack walks and
 * copies: capture_stack.c).
 *
 * The ring is mapped writable by the session's reader, so nothing is ever
 * read back from it.  The fixed part is built in the watch's req.draft and
 * copied in last.  Frames and stack are written straight into the reserved
 * record, write-only, unless a system-wide reader (global.c) wants a copy:
 * then they are built in a per-CPU capture buffer, copied into the record,
 * and the copy for the system-wide readers comes from the same kernel
 * memory.  Two buffers per CPU: one for the timer's own captures
 * (hard-IRQ), one for NMI/IPI captures, which may interrupt it.  The
 * NMI/IPI buffer stays held until the timer that asked has mirrored it (or
 * read the runner described in it: why_record.c); a capture that finds it
 * held writes straight into the ring and is not mirrored (counted lost for
 * the system-wide readers).
 */
#include <linux/irq_work.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <asm/irq_regs.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

#define CAPTURE_BUF_BYTES	STALLCAP_RECORD_MAX_BYTES(STALLCAP_MAX_USER_STACK)

static DEFINE_PER_CPU(void *, capture_buf_irq);
static DEFINE_PER_CPU(void *, capture_buf_remote);
static DEFINE_PER_CPU(struct stallcap_capture_req *, capture_buf_remote_held);

/**
 * stallcap_capture_buf_for() - where the timer builds a sample
 * @ring_rec: the record reserved for it in the session's ring
 *
 * Context: the timer (hard-IRQ) or IRQs off.  Return: this CPU's capture
 * buffer when a system-wide reader wants a copy, else @ring_rec itself.
 */
void *stallcap_capture_buf_for(void *ring_rec)
{
	return stallcap_global_readers() ? this_cpu_read(capture_buf_irq) :
	       ring_rec;
}

/**
 * stallcap_capture_buf_remote() - this CPU's NMI/IPI buffer, if free
 *
 * Context: the NMI/IPI handler.  Return: NULL while a timer still mirrors
 * the previous capture from it, or reads the runner described in it.
 */
void *stallcap_capture_buf_remote(void)
{
	/* pairs with the release in stallcap_capture_buf_release() */
	if (smp_load_acquire(this_cpu_ptr(&capture_buf_remote_held)))
		return NULL;
	return this_cpu_read(capture_buf_remote);
}

/** stallcap_capture_buf_hold() - keep this CPU's NMI/IPI buffer for @req */
void stallcap_capture_buf_hold(struct stallcap_capture_req *req)
{
	this_cpu_write(capture_buf_remote_held, req);
}

/**
 * stallcap_capture_buf_held() - the NMI/IPI buffer holding @req's capture
 * @req: a request whose result is CAPTURE_DONE
 *
 * Return: the buffer, or NULL when the capture went straight to the ring.
 */
void *stallcap_capture_buf_held(const struct stallcap_capture_req *req)
{
	if (READ_ONCE(*per_cpu_ptr(&capture_buf_remote_held, req->cpu)) != req)
		return NULL;
	return *per_cpu_ptr(&capture_buf_remote, req->cpu);
}

/** stallcap_capture_buf_release() - @req's NMI/IPI buffer may be reused */
void stallcap_capture_buf_release(struct stallcap_capture_req *req)
{
	struct stallcap_capture_req **held;

	held = per_cpu_ptr(&capture_buf_remote_held, req->cpu);
	if (READ_ONCE(*held) == req)
		smp_store_release(held, NULL);	/* pairs with buf_remote() */
}

int stallcap_capture_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		*per_cpu_ptr(&capture_buf_irq, cpu) = vmalloc(CAPTURE_BUF_BYTES);
		*per_cpu_ptr(&capture_buf_remote, cpu) = vmalloc(CAPTURE_BUF_BYTES);
		if (!*per_cpu_ptr(&capture_buf_irq, cpu) ||
		    !*per_cpu_ptr(&capture_buf_remote, cpu)) {
			stallcap_capture_exit();
			return -ENOMEM;
		}
	}
	return 0;
}

void stallcap_capture_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		vfree(*per_cpu_ptr(&capture_buf_irq, cpu));
		vfree(*per_cpu_ptr(&capture_buf_remote, cpu));
		*per_cpu_ptr(&capture_buf_irq, cpu) = NULL;
		*per_cpu_ptr(&capture_buf_remote, cpu) = NULL;
	}
}

/**
 * stallcap_sample_reserve_len() - bytes to reserve in the ring for a sample
 * @sess: the session (its user_stack_bytes)
 * @user_stack: the capture may copy the user stack into the record (a
 *	thread on a CPU in kernel mode, or any remote capture); not for a
 *	thread off CPU, or one in user mode whose stack is read on its return
 *	there (its own USER_STACK record, of the bytes copied)
 *
 * The owner hops of a lock chain are not counted: stallcap_watch_chain_done()
 * adds the bytes of the chain it has.  The bytes reserved and not written
 * become padding until the reader passes them, so the bound decides how
 * many samples a ring holds at once: a burst of threads blocked together
 * takes a sixth of what the largest record would.
 */
u32 stallcap_sample_reserve_len(const struct stallcap_session *sess,
				bool user_stack)
{
	u32 stack = user_stack ? sess->cfg.user_stack_bytes : 0;

	return ALIGN(STALLCAP_RECORD_MAX_BYTES(stack) -
		     STALLCAP_MAX_OWNER_HOPS * STALLCAP_SECTION_TASK_MAX, 8);
}

/**
 * stallcap_watch_clock() - what triggers @w's stalls: STALLCAP_CLOCK_*
 * @w: the watch
 */
u8 stallcap_watch_clock(const struct stallcap_watch *w)
{
	if (w->flags & STALLCAP_ARM_HEARTBEAT)
		return STALLCAP_CLOCK_HEARTBEAT;
	if (w->flags & STALLCAP_ARM_SHARED_DEADLINE)
		return STALLCAP_CLOCK_SHARED;
	if (w->flags & STALLCAP_ARM_CPUTIME)
		return STALLCAP_CLOCK_CPUTIME;
	return STALLCAP_CLOCK_WALL;
}

/**
 * stallcap_sample_init() - fill the fixed part that the watch knows
 * @w: the watch (its lock held)
 * @s: the kernel-private draft (w->req.draft)
 * @now: time of the timer expiry (ns)
 *
 * Every byte is written, so stale ring contents never leak.
 */
void stallcap_sample_init(struct stallcap_watch *w, struct stallcap_sample *s,
			  u64 now)
{
	struct task_struct *task = w->task;

	memset(s, 0, sizeof(*s));
	s->fixed_size = sizeof(*s);
	s->stall_id = w->stall_id;
	s->user_tag = w->user_tag;
	s->deadline_ns = w->deadline;
	s->capture_ns = now;
	s->timeout_ns = w->timeout_ns;
	s->pid = task->tgid;
	s->tid = w->tid;
	s->ns_pid = w->ns_pid;
	s->ns_tid = w->ns_tid;
	s->cpu = task_cpu(task);
	s->sample_index = w->samples;
	s->clock = stallcap_watch_clock(w);
	s->origin = w->attach ? STALLCAP_ORIGIN_ATTACH : STALLCAP_ORIGIN_ARM;
	/* exec may be renaming the thread: only the armed program's name */
	if (READ_ONCE(task->mm) == w->mm)
		memcpy(s->comm, task->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
}

/**
 * stallcap_put_kernel_ips() - a STALLCAP_SEC_KERNEL_IPS section, if allowed
 * @wr: the writer
 * @sess: the session: a reader who may not see kernel addresses gets no
 *	section (never zeros) and STALLCAP_SAMPLE_KADDR_HIDDEN
 * @task: the task (current, or one that is not running)
 * @regs: interrupted kernel registers, or NULL for a sleeping task
 * @flags: the sample's flags
 */
void stallcap_put_kernel_ips(struct stallcap_rec_writer *wr,
			     const struct stallcap_session *sess,
			     struct task_struct *task, struct pt_regs *regs,
			     u32 *flags)
{
	u64 *ips = stallcap_sec_start(wr) + sizeof(struct stallcap_section);
	unsigned int n;

	if (!sess->kaddr_visible) {
		*flags |= STALLCAP_SAMPLE_KADDR_HIDDEN;
		return;
	}
	if (task == current)
		n = stallcap_unwind_kernel(task, regs, ips, flags);
	else
		n = stallcap_unwind_off_cpu(task, ips, flags);
	stallcap_sec_end(wr, STALLCAP_SEC_KERNEL_IPS,
			 sizeof(struct stallcap_section) + 8 * n);
}

/*
 * Did a kernel-mode sample's copy of the user stack (@len of @want bytes
 * above @sp) end at a page that was not resident, short of the end of the
 * stack's mapping?  A frame's big buffer whose pages were never touched
 * does that (capture_stack_more.c): the deferred read on the way back to
 * user space copies the runs past it.  The mapping's end is the one the
 * last deferred read found (capture_deferred.c); not known yet, or @sp on
 * another stack: that read is asked for, and finds out.
 */
static bool copy_ended_in_gap(const struct stallcap_watch *w, unsigned long sp,
			      u32 len, u32 want, u32 flags)
{
	unsigned long end = READ_ONCE(w->defer->stack_end);

	if (!SC_HAVE_TASK_WORK || len >= want ||
	    (flags & STALLCAP_SAMPLE_USER_MODE))
		return false;
	return !end || sp >= end || end - sp > STALLCAP_USER_STACK_REACH ||
	       sp + len < end;
}

/*
 * USER_IPS and USER_STACK sections of the current thread's user context.
 * Return: the copy ended in a gap that the deferred read can copy past.
 */
static bool put_user_stack(struct stallcap_rec_writer *wr,
			   const struct stallcap_watch *w,
			   const struct pt_regs *uregs, u32 *flags)
{
	u64 *ips = stallcap_sec_start(wr) + sizeof(struct stallcap_section);
	unsigned int n = stallcap_walk_user_frames(uregs, ips, flags, false);
	u32 room = w->sess->cfg.user_stack_bytes, len, want;
	u8 *stack;

	stallcap_sec_end(wr, STALLCAP_SEC_USER_IPS,
			 sizeof(struct stallcap_section) + 8 * n);
	stack = stallcap_sec_start(wr) + sizeof(struct stallcap_sec_user_stack);
	want = stallcap_sigstack_bound(uregs->sp, room);
	len = stallcap_copy_user_stack(uregs->sp, stack, want, flags);
	stallcap_sec_put_stack(wr, uregs->sp, len);
	stallcap_put_interrupted_stack(wr, uregs->sp, stack, len, room - len,
				       flags);
	return copy_ended_in_gap(w, uregs->sp, len, want, *flags);
}

/*
 * The fixed part's context, the kernel frames and the user registers of the
 * current thread.  Return: the user registers to read its user stack from,
 * or NULL when it has none (STALLCAP_SAMPLE_NO_USER is set).
 */
static struct pt_regs *capture_begin(struct stallcap_watch *w,
				     struct stallcap_sample *s,
				     struct stallcap_rec_writer *wr, void *rec,
				     struct pt_regs *regs, u8 path)
{
	const struct stallcap_session *sess = w->sess;
	struct pt_regs *uregs;
	/* the handler we run in entered hard-IRQ (or NMI) once itself */
	unsigned int depth = (hardirq_count() >> HARDIRQ_SHIFT) - 1;

	/* an NMI taking what stallcap's own IRQ interrupted: not counted */
	if (in_nmi() && depth && regs == get_irq_regs())
		depth--;

	stallcap_sample_stamp(s);
	stallcap_rec_begin(wr, s, rec);
	s->cpu = smp_processor_id();
	s->path = path;
	s->state = STALLCAP_STATE_RUNNING;
	if (!(regs->flags & X86_EFLAGS_IF))
		s->flags |= STALLCAP_SAMPLE_IRQS_OFF;
	if (depth)
		s->flags |= STALLCAP_SAMPLE_IN_HARDIRQ;
	if (softirq_count() & SOFTIRQ_OFFSET)
		s->flags |= STALLCAP_SAMPLE_IN_SOFTIRQ;
	if (stallcap_task_memstall(current))
		s->flags |= STALLCAP_SAMPLE_MEMSTALL;

	if (user_mode(regs)) {
		s->flags |= STALLCAP_SAMPLE_USER_MODE;
		uregs = user_64bit_mode(regs) && current->mm == w->mm ?
			regs : NULL;
	} else {
		stallcap_put_kernel_ips(wr, sess, current, regs, &s->flags);
		uregs = stallcap_user_regs_of(current, w->mm);
		if (uregs)
			uregs = stallcap_entry_user_regs(regs, uregs);
	}
	if (!uregs) {
		s->flags |= STALLCAP_SAMPLE_NO_USER;
		return NULL;
	}
	stallcap_sec_put_sample_regs(wr, uregs);
	return uregs;
}

/**
 * stallcap_capture_current() - capture the current thread
 * @w: the watch (session, expected address space)
 * @s: the draft (fixed part initialised): counts and flags are set here
 * @rec: where the record is built: a capture buffer, or the ring record
 *	(then written, never read); frames and stack go after the fixed part
 * @regs: interrupted registers (from get_irq_regs() or the NMI)
 * @path: STALLCAP_PATH_LOCAL, _NMI or _IPI
 *
 * Context: hard-IRQ or NMI on the CPU the thread runs on; IRQs off.
 * Return: the record's length.
 */
u32 stallcap_capture_current(struct stallcap_watch *w,
			     struct stallcap_sample *s, void *rec,
			     struct pt_regs *regs, u8 path)
{
	struct stallcap_rec_writer wr;
	struct pt_regs *uregs;

	uregs = capture_begin(w, s, &wr, rec, regs, path);
	if (uregs && put_user_stack(&wr, w, uregs, &s->flags))
		stallcap_defer_request(w, s, in_nmi());
	stallcap_why_put_times(&wr, w, current, s->capture_ns);
	return wr.len;
}

/**
 * stallcap_capture_head() - capture the current thread but its user stack
 * @w: the watch
 * @s: the draft, as for stallcap_capture_current()
 * @rec: where the record is built, likewise
 * @regs: interrupted registers
 * @path: STALLCAP_PATH_NMI or _IPI
 * @len: output: the record's length so far
 *
 * Writes the context, kernel frames and user registers: what
 * stallcap_capture_current() writes before the user stack;
 * stallcap_capture_rest() appends the rest later.
 * Context: the NMI or IPI handler, or the thread's own timer interrupt.
 * Return: the user registers the user stack is to be read from (@regs
 * itself, the thread's entry frame, or those built for an NMI inside the
 * kernel's entry code, capture_entry.c: copy them to keep them past the
 * handler), or NULL when there is no user stack to read.
 */
struct pt_regs *stallcap_capture_head(struct stallcap_watch *w,
				      struct stallcap_sample *s, void *rec,
				      struct pt_regs *regs, u8 path, u32 *len)
{
	struct stallcap_rec_writer wr;
	struct pt_regs *uregs;

	uregs = capture_begin(w, s, &wr, rec, regs, path);
	*len = wr.len;
	return uregs;
}

/**
 * stallcap_capture_rest() - append the user stack and CPU times to a head
 * @w: the watch
 * @s: the draft
 * @rec: the record stallcap_capture_head() began
 * @len: its length so far
 * @uregs: the user registers stallcap_capture_head() copied, or NULL when
 *	the user stack is not to be read (or there is none)
 * @task: the captured thread
 *
 * Context: any, NMI included; with @uregs, the current thread must be
 * @task, still in the same kernel entry (or user-mode interruption) as at
 * stallcap_capture_head().
 * Return: the record's length.
 */
u32 stallcap_capture_rest(struct stallcap_watch *w, struct stallcap_sample *s,
			  void *rec, u32 len, const struct pt_regs *uregs,
			  struct task_struct *task)
{
	struct stallcap_rec_writer wr = { .rec = rec, .len = len };

	if (uregs && put_user_stack(&wr, w, uregs, &s->flags))
		stallcap_defer_request(w, s, in_nmi());
	stallcap_why_put_times(&wr, w, task, s->capture_ns);
	return wr.len;
}

/**
 * stallcap_sample_finish() - account and publish a sample
 * @w: the watch
 * @s: the draft (counts and flags final)
 * @buf: where the sections were built (a capture buffer, or the draft's
 *	room for an abandoned capture), or @ring_rec itself
 * @ring_rec: the record reserved in the ring
 * @len: the record's length
 * @start_ns: when the capture began (for the cost histogram)
 *
 * @in_handler: called from the NMI/IPI handler of a remote capture: the
 *	timer that asked wakes the reader and mirrors the record when it sees
 *	the capture done, out of NMI (and once: not here and there)
 *
 * Asks for a deferred user stack when the sample lacks it, copies draft and
 * buffer into the ring record, commits it, and (from the timer) wakes the
 * reader and mirrors the kernel copy to the system-wide readers.
 * Context: any, NMI included.
 */
void stallcap_sample_finish(struct stallcap_watch *w, struct stallcap_sample *s,
			    void *buf, void *ring_rec, u32 len, u64 start_ns,
			    bool in_handler)
{
	struct stallcap_session *sess = w->sess;
	const size_t hdr = sizeof(s->hdr);

	if (stallcap_defer_wanted(sess, s))
		stallcap_defer_request(w, s, in_nmi());
	stallcap_count(&sess->stats, SC_SAMPLES, 1);
	stallcap_why_published(w);
	w->req.rec_len = len;
	memcpy(ring_rec + hdr, (void *)s + hdr, sizeof(*s) - hdr);
	if (buf != ring_rec) {
		if (buf != (void *)s)
			memcpy(buf, s, sizeof(*s));
		memcpy(ring_rec + sizeof(*s), buf + sizeof(*s), len - sizeof(*s));
	}
	/* the capture's cost: up to the record written in the ring */
	if (!s->sample_index)
		stallcap_hist_add(&sess->stats,
				  ktime_get_mono_fast_ns() - start_ns,
				  (s64)(s->capture_ns - s->deadline_ns));
	stallcap_ring_commit(sess->ring, ring_rec, w->req.rec_reserved, len);
	if (in_handler)
		return;
	irq_work_queue(&sess->wake_work);
	if (buf != ring_rec)
		stallcap_global_mirror(sess, STALLCAP_REC_SAMPLE, buf, len);
	else
		stallcap_global_lost(sess);
}
