// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap: an NMI inside the kernel's entry from, or return to, user mode.
 *
 * An NMI can land between any two instructions of the entry code, where the
 * thread's entry frame (task_pt_regs()) is not yet written and the kernel
 * stack is not yet in use.  Reading the frame there gives the registers of
 * the thread's previous kernel entry: another call site, another stack.
 * These are the windows, on x86-64 without FRED:
 *
 *  - The system call entry before its switch to the kernel stack:
 *    SYSCALL does not switch stacks, so the entry's first instructions run
 *    on the user's stack pointer, with the user's instruction pointer and
 *    flags in %rcx and %r11 (the return, after switching back for SYSRET,
 *    is the same picture, and its frame is whole).  The interrupted
 *    instruction is the whole kernel stack.  With page-table isolation the
 *    entry, once it saved the user's stack pointer in tss.sp2, uses %rsp
 *    as scratch for the page-table switch: holding a page-table root, it
 *    is not the user's, tss.sp2 is.
 *  - The system call entry after that switch, pushing the frame: the words
 *    pushed are the user's, the rest are still in the live registers
 *    (%rcx, %r11 and tss.sp2 for the instruction pointer, flags and stack
 *    pointer).  A return popping the frame on the kernel stack leaves it
 *    whole, popped words and live registers agreeing.
 *  - An interrupt or exception from user mode before it copied its frame
 *    from the CPU's entry stack to the thread's (error_entry(),
 *    sync_regs()): the hardware frame at the entry stack's top holds the
 *    user's instruction and stack pointers, the words pushed after it the
 *    registers saved so far, the live registers the rest.  The unwinder
 *    either stops inside the entry code or reaches that frame, which is not
 *    the thread's entry frame: the entry code is all the kernel stack there
 *    is.  A return through the entry stack holds an IRET frame there (whose
 *    registers the thread's frame also has) or, for SYSRET, the user's
 *    stack pointer and %rdi: the thread's frame is whole then.
 *
 * Only an NMI sees these windows: interrupts are off in all of them.
 */
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/sched/task_stack.h>
#include <linux/bits.h>
#include <linux/mm_types.h>
#include <asm/page.h>
#include <asm/processor.h>

#include "stallcap.h"
#include "capture.h"

/* the user registers built for an NMI in a window: only NMIs use it */
static DEFINE_PER_CPU(struct pt_regs, entry_window_uregs);

/*
 * Does %rsp hold a page-table root of the current thread's address space
 * (the page-table isolation's switch in the system call entry)?  Compared
 * without the PCID and no-flush bits, the user-half bit and the memory
 * encryption bit (bits 47 and up).
 */
static bool pti_scratch_sp(const struct pt_regs *regs)
{
	const struct mm_struct *mm = current->mm;

	return boot_cpu_has(X86_FEATURE_PTI) && mm &&
	       !((regs->sp ^ __pa(mm->pgd)) & GENMASK_ULL(46, PAGE_SHIFT + 1));
}

/*
 * Is interrupted kernel code still (or again) on the user's stack pointer,
 * or in the entry's page-table switch right after it saved it?
 */
static bool on_user_stack(const struct pt_regs *regs)
{
	return regs->sp < TASK_SIZE_MAX || pti_scratch_sp(regs);
}

/* Is it on the current thread's stack, inside or at the base of its frame? */
static bool on_entry_frame(const struct pt_regs *regs,
			   const struct pt_regs *frame)
{
	return regs->sp >= (unsigned long)frame &&
	       regs->sp <= (unsigned long)(frame + 1);
}

/**
 * stallcap_kernel_stack_unused() - is no frame of the current thread's
 * kernel stack in use by the interrupted kernel code?
 * @regs: interrupted kernel-mode registers of the current thread
 *
 * The system call entry before its stack switch or the return after the
 * switch back (the user's stack pointer), the entry pushing its frame, a
 * return popping it, or the first instruction after the frame is complete
 * (after an interrupt's sync_regs(), whose unwind data still describes the
 * stack before the call): the interrupted instruction is the whole kernel
 * stack.
 */
bool stallcap_kernel_stack_unused(const struct pt_regs *regs)
{
	return on_user_stack(regs) || on_entry_frame(regs, task_pt_regs(current));
}

/*
 * Top of this CPU's entry stack, if interrupted kernel code (@regs) runs
 * on it, else 0.  tss.sp0 points there whatever task runs (since 4.15),
 * but for Xen PV guests, which enter the kernel on the thread's stack.
 */
static unsigned long entry_stack_top(const struct pt_regs *regs)
{
	unsigned long top = this_cpu_read(cpu_tss_rw.x86_tss.sp0);

	if (boot_cpu_has(X86_FEATURE_XENPV))
		return 0;
	if (regs->sp < top && top - regs->sp <= sizeof(struct entry_stack))
		return top;
	return 0;
}

/**
 * stallcap_kernel_on_entry_stack() - does interrupted kernel code run on
 * the CPU's entry stack (an interrupt from user mode, or a return to it)?
 * @regs: interrupted kernel-mode registers
 */
bool stallcap_kernel_on_entry_stack(const struct pt_regs *regs)
{
	return entry_stack_top(regs);
}

/*
 * The live registers as the system call entry has them, in the per-CPU
 * buffer: the user's ip and flags in %rcx and %r11, with @sp.
 */
static struct pt_regs *live_user_regs(const struct pt_regs *regs,
				      unsigned long sp)
{
	struct pt_regs *uregs = this_cpu_ptr(&entry_window_uregs);

	*uregs = *regs;
	uregs->ip = regs->cx;
	uregs->flags = regs->r11;
	uregs->sp = sp;
	uregs->cs = __USER_CS;
	uregs->ss = __USER_DS;
	return uregs;
}

/*
 * The live registers, with every word of @frame that lies at or above the
 * stack pointer (pushed already, or not popped yet) taken from @frame.
 */
static struct pt_regs *merge_pushed(const struct pt_regs *regs,
				    const struct pt_regs *frame)
{
	/* not pushed yet: where the system call entry keeps them */
	struct pt_regs *uregs =
		live_user_regs(regs, this_cpu_read(cpu_tss_rw.x86_tss.sp2));
	const unsigned long *saved = (const unsigned long *)frame;
	unsigned long *out = (unsigned long *)uregs;
	unsigned int i;

	for (i = 0; i < sizeof(*uregs) / sizeof(long); i++)
		if ((unsigned long)&saved[i] >= regs->sp)
			out[i] = saved[i];
	return uregs;
}

/* The system call entry before its stack switch (or the return after it). */
static struct pt_regs *on_user_stack_regs(const struct pt_regs *regs)
{
	return live_user_regs(regs, pti_scratch_sp(regs) ?
			      this_cpu_read(cpu_tss_rw.x86_tss.sp2) : regs->sp);
}

/*
 * A return to user mode through the entry stack (page-table isolation's
 * IRET path)?  It pops the thread's frame, whole, but for %rdi, which holds
 * that frame's address while it copies the IRET frame to the entry stack
 * and pushes the user's %rdi there (in the orig_ax slot), then the user
 * page-table root and its PCID, until it pops the user's %rdi.
 */
static bool returning_through(const struct pt_regs *regs,
			      const struct pt_regs *hw,
			      const struct pt_regs *frame)
{
	if (regs->di == (unsigned long)&frame->di)
		return true;
	return READ_ONCE(hw->ip) == frame->ip && READ_ONCE(hw->sp) == frame->sp &&
	       READ_ONCE(hw->flags) == frame->flags &&
	       READ_ONCE(hw->orig_ax) == frame->di;
}

/*
 * An interrupt from user mode on the entry stack; or a return through it,
 * an IRET frame there or the SYSRET path's stack pointer and %rdi: the
 * thread's frame is whole then.  The entry's error_entry() is called with
 * its return address in the di slot, where it then stores %rdi, which
 * holds the user's until all is pushed: %rdi is taken live there.
 */
static struct pt_regs *on_entry_stack_regs(const struct pt_regs *regs,
					   struct pt_regs *frame,
					   unsigned long top)
{
	const struct pt_regs *hw = (const struct pt_regs *)top - 1;
	struct pt_regs *uregs;

	if (READ_ONCE(hw->ss) != __USER_DS || READ_ONCE(hw->cs) != __USER_CS ||
	    returning_through(regs, hw, frame))
		return frame;
	uregs = merge_pushed(regs, hw);
	if (regs->sp >= (unsigned long)&hw->si)
		uregs->di = regs->di;
	return uregs;
}

/**
 * stallcap_entry_user_regs() - the user registers of the current thread
 * @regs: the interrupted kernel-mode registers
 * @frame: the thread's entry frame (task_pt_regs(), a 64-bit user context)
 *
 * Context: any; only an NMI finds the entry code inside a window (the top
 * of this file), other contexts get @frame.
 * Return: @frame, or the registers of the moment built in a per-CPU
 * buffer (copy them before the NMI handler returns).  No kernel address
 * the entry code keeps in a register or a slot of the frame it builds
 * stands for a user register.
 */
struct pt_regs *stallcap_entry_user_regs(const struct pt_regs *regs,
					 struct pt_regs *frame)
{
	unsigned long top;

	if (!in_nmi())
		return frame;
	if (on_user_stack(regs))
		return on_user_stack_regs(regs);
	if (regs->sp > (unsigned long)frame && on_entry_frame(regs, frame))
		return merge_pushed(regs, frame);
	top = entry_stack_top(regs);
	if (top)
		return on_entry_stack_regs(regs, frame, top);
	return frame;
}
