// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap user stack past a gap: the resident runs above a copy that ended
 * at a page that was not resident.
 *
 * A frame holding a large buffer that its function wrote only the start of
 * (a parser's line buffer of 64 KiB or more: unbound's frames hold 64-128
 * KiB) leaves pages that were never touched between the stack pointer and
 * the frame's saved registers and return address.  The copy of a user-mode
 * sample reads resident pages only (it faults nothing in), so it ends at
 * the first of them, and the unwinder with it.  The words the unwinder
 * needs lie above the gap: the frame's top and its callers' frames.  This
 * copies the resident runs found there, within the stack pointer's mapping
 * and STALLCAP_USER_STACK_REACH of the stack pointer, as
 * STALLCAP_SEC_USER_STACK_MORE sections, in what is left of the record's
 * room for the stack.
 */
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

#include "stallcap.h"
#include "capture.h"

/* sections at most: a gap or two per large frame, and the frames above */
#define STACK_MORE_MAX_SECTIONS	8

/* The end of @sp's mapping in current's mm, at most the reach; 0: none. */
static unsigned long stack_more_end(unsigned long sp)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long end = 0;

	if (!mm || mmap_read_lock_killable(mm))
		return 0;
	vma = find_vma(mm, sp);
	if (vma && vma->vm_start <= sp)
		end = min_t(unsigned long, vma->vm_end,
			    sp + STALLCAP_USER_STACK_REACH);
	mmap_read_unlock(mm);
	return end;
}

/*
 * Copy the resident bytes at @addr into @dst, up to @max bytes and @end, to
 * the first page that is not resident.  Return: bytes copied, a multiple
 * of 8 (@addr is 8-aligned).
 */
static u32 stack_more_run(unsigned long addr, unsigned long end, u8 *dst,
			  u32 max)
{
	u32 done = 0, chunk;

	while (done < max && addr + done < end) {
		chunk = min_t(unsigned long, max - done,
			      min_t(unsigned long, end - addr - done,
				    PAGE_SIZE - offset_in_page(addr + done)));
		if (copy_from_user_nofault(dst + done,
					   (const void __user *)(addr + done),
					   chunk))
			break;
		done += chunk;
	}
	return done & ~7U;
}

/**
 * stallcap_put_stack_more() - the resident runs above a copy's gap
 * @wr: the writer, after the sample's other stack sections
 * @sp: the user stack pointer the first copy started at
 * @copied_end: where that copy ended: at a page that was not resident
 * @room: bytes left of the record's room for the stack (the sections'
 *	headers come out of it)
 *
 * Context: the current thread's own, in process context (its deferred
 * user-stack record): the mapping is looked up under the mmap lock.  At
 * most STALLCAP_USER_STACK_REACH / PAGE_SIZE pages are tried.
 */
void stallcap_put_stack_more(struct stallcap_rec_writer *wr, unsigned long sp,
			     unsigned long copied_end, u32 room)
{
	const u32 hdr = sizeof(struct stallcap_sec_user_stack);
	unsigned long end;
	/* the page the copy could not read is not resident: past it */
	unsigned long addr = PAGE_ALIGN(copied_end) + PAGE_SIZE;
	unsigned int nr = 0;
	u32 n;

	/* the alternate signal stack's top ends it (capture_sigstack.c) */
	if (current->sas_ss_size && on_sig_stack(sp))
		return;
	end = stack_more_end(sp);
	while (addr < end && nr < STACK_MORE_MAX_SECTIONS && room >= hdr + 8) {
		n = stack_more_run(addr, end, stallcap_sec_start(wr) + hdr,
				   (room - hdr) & ~7U);
		if (!n) {
			addr = PAGE_ALIGN(addr + 1);
			continue;
		}
		stallcap_sec_put_stack_as(wr, STALLCAP_SEC_USER_STACK_MORE,
					  addr, n);
		room -= hdr + n;
		addr = PAGE_ALIGN(addr + n) + PAGE_SIZE;
		nr++;
	}
}
