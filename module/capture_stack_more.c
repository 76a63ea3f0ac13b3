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
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

#include "stallcap.h"
#include "capture.h"

/* sections at most: a gap or two per large frame, and the frames above */
#define STACK_MORE_MAX_SECTIONS	8

/* The end of @sp's mapping in @task's mm, at most the reach; 0: none. */
static unsigned long stack_more_end(struct task_struct *task, unsigned long sp)
{
	struct mm_struct *mm = get_task_mm(task);
	struct vm_area_struct *vma;
	unsigned long end = 0;

	if (!mm)
		return 0;
	if (!mmap_read_lock_killable(mm)) {
		vma = find_vma(mm, sp);
		if (vma && vma->vm_start <= sp)
			end = min_t(unsigned long, vma->vm_end,
				    sp + STALLCAP_USER_STACK_REACH);
		mmap_read_unlock(mm);
	}
	mmput(mm);
	return end;
}

/*
 * Read @len bytes of @task's stack at @addr, within one page.  The current
 * thread's: resident pages only.  Another's (a blocked thread read from
 * outside, without task_work: capture_deferred.c): FOLL_DUMP makes a page
 * never touched (no page table entry, or the shared zero page) an error
 * rather than zeros, so the read ends at a big frame's untouched pages as
 * the current thread's does; a page swapped out is read in.
 */
static bool read_task_stack(struct task_struct *task, unsigned long addr,
			    void *dst, u32 len)
{
	if (task == current)
		return !copy_from_user_nofault(dst, (const void __user *)addr,
					       len);
	return access_process_vm(task, addr, dst, len, FOLL_DUMP) == len;
}

/* Is @sp on @task's alternate signal stack (on_sig_stack(), any task)? */
static bool stack_more_on_sigstack(struct task_struct *task, unsigned long sp)
{
	return task->sas_ss_size && !(task->sas_ss_flags & SS_AUTODISARM) &&
	       sp > task->sas_ss_sp && sp - task->sas_ss_sp <= task->sas_ss_size;
}

/*
 * Copy the resident bytes at @addr into @dst, up to @max bytes and @end, to
 * the first page that is not resident (read_task_stack()).  Return: bytes copied, a multiple
 * of 8 (@addr is 8-aligned).
 */
static u32 stack_more_run(struct task_struct *task, unsigned long addr,
			  unsigned long end, u8 *dst, u32 max)
{
	u32 done = 0, chunk;

	while (done < max && addr + done < end) {
		chunk = min_t(unsigned long, max - done,
			      min_t(unsigned long, end - addr - done,
				    PAGE_SIZE - offset_in_page(addr + done)));
		if (!read_task_stack(task, addr + done, dst + done, chunk))
			break;
		done += chunk;
	}
	return done & ~7U;
}

/**
 * stallcap_put_stack_more() - the resident runs above a copy's gap
 * @wr: the writer, after the sample's other stack sections
 * @task: the sampled thread: current, or one off CPU read from outside
 * @sp: the user stack pointer the first copy started at
 * @copied_end: where that copy ended: at a page that was not resident
 * @room: bytes left of the record's room for the stack (the sections'
 *	headers come out of it)
 *
 * Context: process context (a deferred user-stack record): the mapping is
 * looked up under the mmap lock.  At most STALLCAP_USER_STACK_REACH /
 * PAGE_SIZE pages are tried.
 */
void stallcap_put_stack_more(struct stallcap_rec_writer *wr,
			     struct task_struct *task, unsigned long sp,
			     unsigned long copied_end, u32 room)
{
	const u32 hdr = sizeof(struct stallcap_sec_user_stack);
	unsigned long end;
	/* the page the copy could not read is not resident: past it */
	unsigned long addr = PAGE_ALIGN(copied_end) + PAGE_SIZE;
	unsigned int nr = 0;
	u32 n;

	/* the alternate signal stack's top ends it (capture_sigstack.c) */
	if (stack_more_on_sigstack(task, sp))
		return;
	end = stack_more_end(task, sp);
	while (addr < end && nr < STACK_MORE_MAX_SECTIONS && room >= hdr + 8) {
		n = stack_more_run(task, addr, end, stallcap_sec_start(wr) + hdr,
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
