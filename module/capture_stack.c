// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap stacks: a task's kernel return addresses with the ORC unwinder,
 * the registers an interrupt interrupted, and the user stack of the
 * current thread, its return addresses by frame pointers and its resident
 * bytes.  Used by every capture path (capture.c, capture_blocked.c, the
 * deferred and tail captures): NMI-safe unless told it may fault.
 */
#include <linux/mm.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include <asm/nospec-branch.h>
#include <asm/unwind.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

/*
 * Another task that is running or runnable (woken while it is unwound, or
 * preempted) with a return trampoline on its stack (inside a probed wait
 * call): the next step may reach the trampoline, whose lookup warns and
 * fails for such a task.  Checked before each step when the task could not
 * be held asleep (see stallcap_unwind_off_cpu()).
 */
static bool unwind_must_stop(struct task_struct *task)
{
	return task != current &&
	       stallcap_task_state(task) == TASK_RUNNING &&
	       stallcap_task_has_rethooks(task);
}

/*
 * Has the unwind of @task's kernel stack reached the registers of its entry
 * from user mode?  They are at the top of its stack (task_pt_regs()): an
 * address that merely looks like user mode elsewhere is not its end.
 */
static bool unwind_reached_user(struct unwind_state *state,
				struct task_struct *task)
{
	struct pt_regs *regs = unwind_get_entry_regs(state, NULL);

	return regs && regs == task_pt_regs(task) && user_mode(regs);
}

/*
 * Did the unwind of a thread's kernel stack end on an error before it reached
 * the registers of its entry from user mode?  (Before 5.16 the ORC unwinder
 * stops so at a kretprobe's trampoline, whose return address it cannot find.)
 * An error it recovered from, reaching user mode after all, cut nothing.
 */
static bool unwind_ended_early(struct unwind_state *state)
{
	struct pt_regs *regs = unwind_get_entry_regs(state, NULL);

	return unwind_error(state) && !(regs && user_mode(regs));
}

/*
 * The unwind from @regs (or from a sleeping task's saved frame), its return
 * addresses stored after the @n already in @ips.  @entry: interrupted code
 * on the CPU's entry stack, whose end is not a cut.  @last_regs: set to the
 * register frame of an interrupt whose ip is the last address stored (an
 * unwind that stopped at the code an interrupt interrupted), else NULL.
 */
static unsigned int unwind_frames(struct task_struct *task,
				  struct pt_regs *regs, bool entry, u64 *ips,
				  unsigned int n, u32 *flags,
				  const struct pt_regs **last_regs)
{
	struct unwind_state state;
	struct pt_regs *frame;
	unsigned long addr;
	bool partial;

	*last_regs = NULL;
	for (unwind_start(&state, task, regs, NULL); !unwind_done(&state);
	     unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr) {
			/* user mode, or else the unwinder lost its way */
			if (!entry && !unwind_reached_user(&state, task))
				*flags |= STALLCAP_SAMPLE_KSTACK_TRUNC;
			break;
		}
		if (n == STALLCAP_MAX_FRAMES || unwind_must_stop(task)) {
			*flags |= STALLCAP_SAMPLE_KSTACK_TRUNC;
			*last_regs = NULL;
			break;
		}
		ips[n++] = addr;
		frame = unwind_get_entry_regs(&state, &partial);
		*last_regs = frame && !partial && frame->ip == addr ? frame :
			     NULL;
	}
	if (!entry && unwind_ended_early(&state))
		*flags |= STALLCAP_SAMPLE_KSTACK_TRUNC;
	return n;
}

#ifdef STALLCAP_HAVE_RETPOLINE_THUNKS
/*
 * The first instruction of the retpoline thunk @ip is in, or 0.  The
 * thunks, one per register, are in machine order, RETPOLINE_THUNK_SIZE
 * apart (the kernel relies on it): one range from rax's to r15's.
 */
static unsigned long retpoline_thunk_of(unsigned long ip)
{
	unsigned long first = (unsigned long)__x86_indirect_thunk_rax;
	unsigned long last = (unsigned long)__x86_indirect_thunk_r15;

	if (last - first != 15 * RETPOLINE_THUNK_SIZE || ip < first ||
	    ip >= last + RETPOLINE_THUNK_SIZE)
		return 0;
	return ip - (ip - first) % RETPOLINE_THUNK_SIZE;
}

/*
 * Where the return address of the code that branched to a retpoline thunk
 * is, when @regs interrupted the thunk (whose unwind hint, "undefined" or,
 * on 5.10 and 6.1, "end of stack", stops the ORC unwinder): at the stack
 * pointer on its first instruction, the word above after the retpoline's
 * own call (the word at the stack pointer is then an address inside the
 * thunk).  0 elsewhere in it: at its last instruction the word there is the
 * branch's target.
 */
static unsigned long thunk_return_slot(const struct pt_regs *regs)
{
	unsigned long thunk = retpoline_thunk_of(regs->ip), word;

	if (!thunk)
		return 0;
	if (regs->ip == thunk)
		return regs->sp;
	if (copy_from_kernel_nofault(&word, (void *)regs->sp, sizeof(word)))
		return 0;
	if (word - thunk - 1 < RETPOLINE_THUNK_SIZE - 1)
		return regs->sp + sizeof(word);
	return 0;
}

/*
 * The unwind of code interrupted in a retpoline thunk, from its caller:
 * the return address read from the stack is frame @n, the unwind goes on
 * from registers that say the thunk returned there (@last_regs as for
 * unwind_frames()).  Return: the number of addresses stored, @n when @regs
 * is not in a thunk's known states.
 */
static noinline unsigned int unwind_past_thunk(struct task_struct *task,
					       const struct pt_regs *regs,
					       u64 *ips, unsigned int n,
					       u32 *flags,
					       const struct pt_regs **last_regs)
{
	unsigned long slot = thunk_return_slot(regs), ret;
	struct pt_regs caller;

	*last_regs = NULL;
	if (!slot || n == STALLCAP_MAX_FRAMES ||
	    copy_from_kernel_nofault(&ret, (void *)slot, sizeof(ret)))
		return n;
	caller = *regs;
	caller.ip = ret;
	caller.sp = slot + sizeof(ret);
	ips[n++] = ret;
	return unwind_frames(task, &caller, false, ips, n, flags, last_regs);
}
#else
static unsigned int unwind_past_thunk(struct task_struct *task,
				      const struct pt_regs *regs, u64 *ips,
				      unsigned int n, u32 *flags,
				      const struct pt_regs **last_regs)
{
	*last_regs = NULL;
	return n;
}
#endif

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
 * here before the unwinder's first return address.  An NMI that lands in an
 * interrupt's entry code between its error_entry() call and the register
 * frame's unwind hint (seen on 7.2: k0 asm_sysvec_apic_timer_interrupt, the
 * ORC data there describing the stack before the call) sends the unwinder
 * to an address that is not kernel text: the stack is cut there and says so.
 * Where the entry from user mode has not begun to use the thread's kernel
 * stack, frame 0 is the whole stack; on the CPU's entry stack the entry code
 * is (capture_entry.c): neither is cut.  In a retpoline thunk, where the
 * unwinder stops at once (seen on 7.3: k0 __x86_indirect_thunk_rdx+0x0,
 * the stack flagged cut; on 5.10 and 6.1 its hint says "end of stack", so
 * that one frame even looked whole), the unwind goes on from the return
 * address the thunk's caller left; so it does where the unwind stops at an
 * interrupt's register frame whose ip is in a thunk (seen on 7.3: a sample
 * in a softirq, cut at the __x86_indirect_thunk_rax+0x0 its interrupt had
 * interrupted).
 *
 * Return: number of addresses stored.
 */
unsigned int stallcap_unwind_kernel(struct task_struct *task,
				    struct pt_regs *regs, u64 *ips, u32 *flags)
{
	const struct pt_regs *stopped_at;
	unsigned int n = 0, unwound;
	bool entry = false;
	u32 cut = 0;

	if (regs && !user_mode(regs)) {
		ips[n++] = regs->ip;
		if (stallcap_kernel_stack_unused(regs))
			return n;
		entry = stallcap_kernel_on_entry_stack(regs);
	}
	unwound = unwind_frames(task, regs, entry, ips, n, &cut, &stopped_at);
	if (n == 1 && unwound == 1 && !entry)
		stopped_at = regs;
	/* each pass stores a frame more: at most STALLCAP_MAX_FRAMES passes */
	while (stopped_at) {
		u32 past_cut = 0;
		unsigned int past = unwind_past_thunk(task, stopped_at, ips,
						      unwound, &past_cut,
						      &stopped_at);

		if (past == unwound)
			break;
		unwound = past;
		cut = past_cut;
	}
	*flags |= cut;
	return unwound;
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

/*
 * The two words of the frame at @fp: from @remote's memory (process
 * context), or the current thread's, faulting pages in when @may_fault,
 * else resident pages only (any context, NMI included).
 */
static bool read_user_frame(unsigned long frame[2], unsigned long fp,
			    struct task_struct *remote, bool may_fault)
{
	const void __user *p = (const void __user *)fp;
	const int len = 2 * sizeof(*frame);

	if (remote)
		return access_process_vm(remote, fp, frame, len, 0) == len;
	if (may_fault)
		return !copy_from_user(frame, p, len);
	return stallcap_user_access_okay() &&
	       !copy_from_user_nofault(frame, p, len);
}

static unsigned int walk_user_frames(const struct pt_regs *uregs, u64 *ips,
				     u32 *flags, struct task_struct *remote,
				     bool may_fault)
{
	unsigned long fp = uregs->bp, frame[2];
	unsigned int n = 0;

	ips[n++] = uregs->ip;
	while (fp && !(fp & 7) && fp >= uregs->sp) {
		if (!read_user_frame(frame, fp, remote, may_fault)) {
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
		if (remote || may_fault)
			cond_resched();
	}
	return n;
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
	return walk_user_frames(uregs, ips, flags, NULL, may_fault);
}

/**
 * stallcap_remote_user_frames() - user return addresses of a task that is
 *	not current, by frame pointers
 * @task: the task (blocked in the kernel: its user registers hold)
 * @uregs: its user registers
 * @ips: output, room for STALLCAP_MAX_FRAMES
 * @flags: gets STALLCAP_SAMPLE_USTACK_FAULT or _TRUNC when the walk stops
 *	on an unreadable frame or on the room
 *
 * Context: process, may sleep (access_process_vm()).
 * Return: number of addresses stored, the first one @uregs->ip.
 */
unsigned int stallcap_remote_user_frames(struct task_struct *task,
					 const struct pt_regs *uregs, u64 *ips,
					 u32 *flags)
{
	return walk_user_frames(uregs, ips, flags, task, false);
}

/**
 * stallcap_copy_user_stack() - copy the resident user stack above @sp
 * @sp: the user stack pointer
 * @dst: output, room for @want bytes
 * @want: bytes wanted
 * @flags: gets STALLCAP_SAMPLE_COPY_PARTIAL when a page could not be read
 *
 * Context: any, NMI included (no fault is taken: pages not resident end it).
 * Return: bytes copied, a multiple of 8.
 */
u32 stallcap_copy_user_stack(unsigned long sp, u8 *dst, u32 want, u32 *flags)
{
	u32 done = 0, chunk;
	unsigned long addr;

	if (!stallcap_user_access_okay()) {
		*flags |= STALLCAP_SAMPLE_COPY_PARTIAL;
		return 0;
	}
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
