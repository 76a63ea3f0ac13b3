// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap: a user stack on the alternate signal stack.
 *
 * A handler of a signal with SA_ONSTACK runs on the stack the thread gave
 * with sigaltstack(2): its frames end at the signal frame that the kernel
 * wrote near that stack's top, and the frames of the code it interrupted
 * are on another stack, from the stack pointer saved in that frame.  A copy
 * of the used stack above the sample's stack pointer holds the handler's
 * frames and the signal frame, not those: a user-space unwinder reads the
 * saved registers from the signal frame and then finds no bytes at the
 * interrupted stack pointer.  So a sample on the alternate stack copies
 * that stack only up to its top, finds the outermost signal frame in the
 * copy, and copies the interrupted stack into a section of its own
 * (STALLCAP_SEC_INTERRUPTED_STACK) from the room left.
 *
 * Only the current thread's: the alternate stack is task state read as
 * current's, and the copies are nofault (any context, NMI included: the
 * search is bounded, the copies are of resident pages).  A handler that
 * set SS_AUTODISARM runs with the alternate stack disarmed: not seen.
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <asm/sigframe.h>

#include "stallcap.h"
#include "capture.h"

/*
 * How far below the copy's end the outermost signal frame is looked for:
 * it sits below the extended FPU state (a few KiB, 11 KiB with AMX) under
 * the alternate stack's top.
 */
#define SIGSTACK_SEARCH_BYTES	(16 * 1024)

/**
 * stallcap_sigstack_bound() - bytes of the user stack to copy above @sp
 * @sp: the current thread's user stack pointer
 * @want: bytes wanted
 *
 * Context: the current thread's, any (NMI included).
 * Return: @want, or on the alternate signal stack at most the bytes up to
 * its top (the memory above it is not stack; the room is the interrupted
 * stack's).
 */
u32 stallcap_sigstack_bound(unsigned long sp, u32 want)
{
	unsigned long top;

	if (!current->sas_ss_size || !on_sig_stack(sp))
		return want;
	top = current->sas_ss_sp + current->sas_ss_size;
	return min_t(unsigned long, want, (top - sp) & ~7UL);
}

/*
 * Are @ss and @isp, a signal frame's saved uc_stack and stack pointer, of a
 * frame made on this thread's alternate stack, interrupting another?
 */
static bool sigstack_frame(const stack_t *ss, unsigned long isp)
{
	return (unsigned long)ss->ss_sp == current->sas_ss_sp &&
	       ss->ss_size == current->sas_ss_size &&
	       !(ss->ss_flags & SS_DISABLE) && isp && !on_sig_stack(isp);
}

/*
 * The signal frame at @addr read again from the thread's memory (its two
 * fields only: this may run on the NMI stack): the copy may be the ring's
 * record, which its reader can write, and nothing is taken from the ring.
 * Return: its saved stack pointer, or 0.
 */
static unsigned long sigstack_frame_sp(unsigned long addr)
{
	const struct rt_sigframe __user *f = (const void __user *)addr;
	unsigned long isp;
	stack_t ss;

	if (copy_from_user_nofault(&ss, &f->uc.uc_stack, sizeof(ss)) ||
	    copy_from_user_nofault(&isp, &f->uc.uc_mcontext.sp, sizeof(isp)) ||
	    !sigstack_frame(&ss, isp))
		return 0;
	return isp;
}

/*
 * The stack pointer saved in the outermost signal frame on the alternate
 * stack within @copy (@len bytes from @sp), or 0: a frame whose saved
 * uc_stack is this thread's alternate stack and whose saved stack pointer
 * is not on it.  Frames are 8-byte aligned (16 minus the return address).
 */
static unsigned long sigstack_interrupted_sp(unsigned long sp, const u8 *copy,
					     u32 len)
{
	const struct rt_sigframe *f;
	unsigned long isp;
	u32 off, low;

	if (!current->sas_ss_size || !on_sig_stack(sp) || !IS_ALIGNED(sp, 8) ||
	    len < sizeof(*f))
		return 0;
	low = len > SIGSTACK_SEARCH_BYTES ? len - SIGSTACK_SEARCH_BYTES : 0;
	for (off = (len - sizeof(*f)) & ~7U; off >= low; off -= 8) {
		f = (const void *)(copy + off);
		if (sigstack_frame(&f->uc.uc_stack, f->uc.uc_mcontext.sp)) {
			isp = sigstack_frame_sp(sp + off);
			if (isp)
				return isp;
		}
		if (!off)
			break;
	}
	return 0;
}

/**
 * stallcap_put_interrupted_stack() - the stack a handler on the alternate
 *	signal stack interrupted, as a STALLCAP_SEC_INTERRUPTED_STACK section
 * @wr: the writer, right after the STALLCAP_SEC_USER_STACK section
 * @sp: the user stack pointer that section's copy starts at
 * @copy: that copy
 * @len: its bytes
 * @room: bytes left of the record's room for user stack (this section's
 *	header comes out of it)
 * @flags: the sample's flags (STALLCAP_SAMPLE_COPY_PARTIAL)
 *
 * Nothing when @sp is not on the current thread's alternate signal stack or
 * no signal frame was found in the copy.
 * Context: the current thread's, any (NMI included).
 */
void stallcap_put_interrupted_stack(struct stallcap_rec_writer *wr,
				    unsigned long sp, const u8 *copy, u32 len,
				    u32 room, u32 *flags)
{
	const u32 hdr = sizeof(struct stallcap_sec_user_stack);
	unsigned long isp = sigstack_interrupted_sp(sp, copy, len);
	u8 *stack;
	u32 n;

	if (!isp || room <= hdr + 8)
		return;
	stack = stallcap_sec_start(wr) + hdr;
	n = stallcap_copy_user_stack(isp, stack, (room - hdr) & ~7U, flags);
	stallcap_sec_put_stack_as(wr, STALLCAP_SEC_INTERRUPTED_STACK, isp, n);
}
