// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap capture of the current thread from interrupted registers: the
 * timer interrupt on the thread's own CPU, or the NMI/IPI handler on another
 * CPU.  Everything here is NMI-safe: no locks, no allocation, bounded work,
 * user memory read only with copy_from_user_nofault().
 *
 * The ring is mapped writable by the session's reader, so nothing is ever
 * read back from it: a sample is built in kernel memory (the fixed part in
 * the watch's req.draft, frames and stack in a per-CPU capture buffer), then
 * copied into the reserved record, and system-wide readers get their copy
 * from the same kernel memory.  Two buffers per CPU: one for the timer's own
 * captures (hard-IRQ), one for NMI/IPI captures, which may interrupt it.
 * The NMI/IPI buffer stays held until the timer that asked has mirrored it;
 * a capture that finds it held writes straight into the ring and is not
 * mirrored (counted lost for the system-wide readers).
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
#include <asm/unwind.h>

#include "compat.h"
#include "stallcap.h"

#define CAPTURE_BUF_BYTES	STALLCAP_RECORD_MAX_BYTES(STALLCAP_MAX_USER_STACK)

static DEFINE_PER_CPU(void *, capture_buf_irq);
static DEFINE_PER_CPU(void *, capture_buf_remote);
static DEFINE_PER_CPU(struct stallcap_capture_req *, capture_buf_remote_held);

/** stallcap_capture_buf() - this CPU's buffer for the timer's captures */
void *stallcap_capture_buf(void)
{
	return this_cpu_read(capture_buf_irq);
}

/**
 * stallcap_capture_buf_remote() - this CPU's NMI/IPI buffer, if free
 *
 * Context: the NMI/IPI handler.  Return: NULL while a timer still mirrors
 * the previous capture from it.
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
 * stallcap_sample_max_len() - bytes to reserve for one sample
 * @sess: the session (its user_stack_bytes)
 */
u32 stallcap_sample_max_len(const struct stallcap_session *sess)
{
	return ALIGN(STALLCAP_RECORD_MAX_BYTES(sess->cfg.user_stack_bytes), 8);
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
	s->stall_id = w->stall_id;
	s->user_tag = w->user_tag;
	s->deadline_ns = w->deadline;
	s->capture_ns = now;
	s->timeout_ns = w->timeout_ns;
	s->pid = task->tgid;
	s->tid = w->tid;
	s->cpu = task_cpu(task);
	s->sample_index = w->samples;
	if (w->flags & STALLCAP_ARM_HEARTBEAT)
		s->clock = STALLCAP_CLOCK_HEARTBEAT;
	else if (w->flags & STALLCAP_ARM_CPUTIME)
		s->clock = STALLCAP_CLOCK_CPUTIME;
	else
		s->clock = STALLCAP_CLOCK_WALL;
	/* exec may be renaming the thread: only the armed program's name */
	if (READ_ONCE(task->mm) == w->mm)
		memcpy(s->comm, task->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
}

/**
 * stallcap_unwind_kernel() - kernel return addresses with the ORC unwinder
 * @task: the task (current, or a task that is not running)
 * @regs: interrupted kernel registers, or NULL for a sleeping task
 * @ips: output, room for STALLCAP_MAX_FRAMES
 * @flags: STALLCAP_SAMPLE_KSTACK_TRUNC is set when frames were left out
 *
 * Frame 0 of an interrupted context is the interrupted instruction itself:
 * unwind_start() with registers steps over the register frame (as
 * arch_stack_walk() knows, which stores regs->ip first), so it is stored
 * here before the unwinder's first return address.
 *
 * With @hide, zeroes are stored instead of the addresses (for a reader who
 * may not see them): @ips may be user-visible memory, the ring itself.
 *
 * Return: number of addresses stored.
 */
unsigned int stallcap_unwind_kernel(struct task_struct *task,
				    struct pt_regs *regs, u64 *ips, u32 *flags,
				    bool hide)
{
	struct unwind_state state;
	unsigned int n = 0;
	unsigned long addr;

	if (regs && !user_mode(regs))
		ips[n++] = hide ? 0 : regs->ip;
	for (unwind_start(&state, task, regs, NULL); !unwind_done(&state);
	     unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		if (n == STALLCAP_MAX_FRAMES) {
			*flags |= STALLCAP_SAMPLE_KSTACK_TRUNC;
			break;
		}
		ips[n++] = hide ? 0 : addr;
	}
	if (hide)
		*flags |= STALLCAP_SAMPLE_KADDR_HIDDEN;
	return n;
}

/**
 * stallcap_interrupted_regs() - registers of the context this interrupt
 * interrupted, found by unwinding up to the first interrupt frame
 *
 * For a call-function IPI (x86 sets no irq regs for it) and as a fallback
 * when get_irq_regs() has none.  Return: NULL when there is none.
 */
struct pt_regs *stallcap_interrupted_regs(void)
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

static bool read_user_frame(unsigned long frame[2], unsigned long fp,
			    bool may_fault)
{
	const void __user *p = (const void __user *)fp;

	if (may_fault)
		return !copy_from_user(frame, p, 2 * sizeof(*frame));
	return !copy_from_user_nofault(frame, p, 2 * sizeof(*frame));
}

/**
 * stallcap_walk_user_frames() - user return addresses by frame pointers
 * @uregs: the user registers (frame 0 is their ip)
 * @ips: output, room for STALLCAP_MAX_FRAMES
 * @flags: gets STALLCAP_SAMPLE_USTACK_FAULT / _TRUNC
 * @may_fault: in the thread's own context with faults allowed (deferred
 *	capture); else any context, NMI included, resident memory only
 *
 * Return: number of addresses stored.
 */
unsigned int stallcap_walk_user_frames(const struct pt_regs *uregs, u64 *ips,
				       u32 *flags, bool may_fault)
{
	unsigned long fp = uregs->bp, frame[2];
	unsigned int n = 0;

	ips[n++] = uregs->ip;
	while (fp && !(fp & 7) && fp >= uregs->sp) {
		if (!read_user_frame(frame, fp, may_fault)) {
			*flags |= STALLCAP_SAMPLE_USTACK_FAULT;
			break;
		}
		if (!frame[1])
			break;
		if (n == STALLCAP_MAX_FRAMES) {
			*flags |= STALLCAP_SAMPLE_USTACK_TRUNC;
			break;
		}
		ips[n++] = frame[1];
		if (frame[0] <= fp)
			break;
		fp = frame[0];
		if (may_fault)
			cond_resched();
	}
	return n;
}

static u32 copy_user_stack(unsigned long sp, u8 *dst, u32 want, u32 *flags)
{
	u32 done = 0, chunk;
	unsigned long addr;

	while (done < want) {
		addr = sp + done;
		chunk = min_t(u32, want - done, PAGE_SIZE - offset_in_page(addr));
		if (copy_from_user_nofault(dst + done,
					   (const void __user *)addr, chunk))
			break;
		done += chunk;
	}
	done &= ~7U;
	if (done < want)
		*flags |= STALLCAP_SAMPLE_COPY_PARTIAL;
	return done;
}

void stallcap_copy_user_regs(struct stallcap_user_regs *d,
			     const struct pt_regs *r)
{
	d->ax = r->ax;
	d->bx = r->bx;
	d->cx = r->cx;
	d->dx = r->dx;
	d->si = r->si;
	d->di = r->di;
	d->bp = r->bp;
	d->sp = r->sp;
	d->r8 = r->r8;
	d->r9 = r->r9;
	d->r10 = r->r10;
	d->r11 = r->r11;
	d->r12 = r->r12;
	d->r13 = r->r13;
	d->r14 = r->r14;
	d->r15 = r->r15;
	d->ip = r->ip;
	d->flags = r->flags;
}

/*
 * User registers of @task, or NULL for kernel threads, 32-bit tasks, and a
 * task whose address space is no longer @mm (it is exec'ing another program).
 */
struct pt_regs *stallcap_user_regs_of(struct task_struct *task,
				      const struct mm_struct *mm)
{
	struct pt_regs *uregs;

	if (task->flags & (PF_KTHREAD | PF_EXITING) || !task->mm ||
	    READ_ONCE(task->mm) != mm)
		return NULL;
	uregs = task_pt_regs(task);
	return user_64bit_mode(uregs) ? uregs : NULL;
}

/**
 * stallcap_sample_end_len() - record length from the counts in @s
 * @s: a sample whose frame counts and stack size are final
 */
u32 stallcap_sample_end_len(const struct stallcap_sample *s)
{
	return ALIGN(sizeof(*s) + 8 * (s->nr_kernel_frames + s->nr_user_frames) +
		     s->stack_size, 8);
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
u32 stallcap_capture_current(const struct stallcap_watch *w,
			     struct stallcap_sample *s, void *rec,
			     struct pt_regs *regs, u8 path)
{
	const struct stallcap_session *sess = w->sess;
	u64 *ips = rec + sizeof(*s);
	unsigned int nk = 0, nu;
	struct pt_regs *uregs;
	/* the handler we run in entered hard-IRQ (or NMI) once itself */
	unsigned int depth = (hardirq_count() >> HARDIRQ_SHIFT) - 1;

	s->capture_ns = ktime_get_mono_fast_ns();
	s->cpu = smp_processor_id();
	s->path = path;
	s->state = STALLCAP_STATE_RUNNING;
	if (!(regs->flags & X86_EFLAGS_IF))
		s->flags |= STALLCAP_SAMPLE_IRQS_OFF;
	if (depth)
		s->flags |= STALLCAP_SAMPLE_IN_HARDIRQ;
	if (softirq_count() & SOFTIRQ_OFFSET)
		s->flags |= STALLCAP_SAMPLE_IN_SOFTIRQ;

	if (user_mode(regs)) {
		s->flags |= STALLCAP_SAMPLE_USER_MODE;
		uregs = user_64bit_mode(regs) && current->mm == w->mm ?
			regs : NULL;
	} else {
		nk = stallcap_unwind_kernel(current, regs, ips, &s->flags,
					    !sess->kaddr_visible);
		uregs = stallcap_user_regs_of(current, w->mm);
	}
	s->nr_kernel_frames = nk;
	if (!uregs) {
		s->flags |= STALLCAP_SAMPLE_NO_USER;
		return stallcap_sample_end_len(s);
	}
	stallcap_copy_user_regs(&s->regs, uregs);
	nu = stallcap_walk_user_frames(uregs, ips + nk, &s->flags, false);
	s->nr_user_frames = nu;
	s->stack_start = uregs->sp;
	s->stack_size = copy_user_stack(uregs->sp, (u8 *)(ips + nk + nu),
					sess->cfg.user_stack_bytes, &s->flags);
	return stallcap_sample_end_len(s);
}

/**
 * stallcap_sample_finish() - account and publish a sample
 * @w: the watch
 * @s: the draft (counts and flags final)
 * @buf: where frames and stack were built (a capture buffer), or @ring_rec
 *	itself, or NULL when there are none
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
	u64 end = ktime_get_mono_fast_ns();

	if (stallcap_defer_wanted(sess, s))
		stallcap_defer_request(w, s, in_nmi());
	if (!s->sample_index)
		stallcap_hist_add(&sess->stats, end - start_ns,
				  (s64)(s->capture_ns - s->deadline_ns));
	stallcap_count(&sess->stats, SC_SAMPLES, 1);
	w->req.rec_len = len;
	memcpy(ring_rec + hdr, (void *)s + hdr, sizeof(*s) - hdr);
	if (buf && buf != ring_rec) {
		memcpy(buf, s, sizeof(*s));
		memcpy(ring_rec + sizeof(*s), buf + sizeof(*s), len - sizeof(*s));
	}
	stallcap_ring_commit(sess->ring, ring_rec, stallcap_sample_max_len(sess),
			     len);
	if (in_handler)
		return;
	irq_work_queue(&sess->wake_work);
	if (!buf)
		stallcap_global_mirror(sess, STALLCAP_REC_SAMPLE, s, len);
	else if (buf != ring_rec)
		stallcap_global_mirror(sess, STALLCAP_REC_SAMPLE, buf, len);
	else
		stallcap_global_lost(sess);
}
