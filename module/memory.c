// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap memory that user space maps (rings, beat slots): allocated with
 * __GFP_ACCOUNT (charged to the caller's memory cgroup), charged to the
 * opener's pinned_vm against RLIMIT_MEMLOCK as perf charges its buffers
 * (CAP_IPC_LOCK exempt), and mapped page by page.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "stallcap.h"

/**
 * stallcap_alloc_user() - zeroed, accounted memory to be mapped to user space
 * @bytes: a multiple of PAGE_SIZE
 */
void *stallcap_alloc_user(size_t bytes)
{
	return __vmalloc(bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
}

/**
 * stallcap_map_user() - map @base (from stallcap_alloc_user()) into @vma
 * @vma: the mapping, from its start; at most @bytes long
 * @base: the memory
 * @bytes: its size
 */
int stallcap_map_user(struct vm_area_struct *vma, void *base, size_t bytes)
{
	unsigned long addr, len = vma->vm_end - vma->vm_start;
	int ret;

	if (len > bytes)
		return -EINVAL;
	stallcap_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	for (addr = 0; addr < len; addr += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + addr,
				     vmalloc_to_page(base + addr));
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * stallcap_charge_locked() - charge @pages to the caller's pinned memory
 * @sess: the session; remembers the address space charged
 * @pages: pages about to be allocated for it
 * @mmap_locked: the caller holds its mmap lock (in mmap()); either way no
 *	lock is taken here: the charge is an atomic counter, as perf's
 *
 * The pages count in the address space's pinned_vm against RLIMIT_MEMLOCK
 * (CAP_IPC_LOCK exempt), as perf charges its ring buffers: taking the mmap
 * lock here (account_locked_vm()) would order it after sess->lock in ARM
 * and before it in mmap(), a lock inversion.
 *
 * Context: process, the opener's or a thread sharing its resources.
 * Return: 0, or -EPERM when RLIMIT_MEMLOCK would be exceeded (as perf).
 */
int stallcap_charge_locked(struct stallcap_session *sess, unsigned long pages,
			   bool mmap_locked)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;
	s64 total;

	if (!mm)
		return 0;
	total = atomic64_add_return(pages, &mm->pinned_vm);
	if (total > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -EPERM;	/* the uapi header's errno, as perf's */
	}
	mmgrab(mm);
	sess->locked_mm = mm;
	sess->locked_pages = pages;
	return 0;
}

/** stallcap_uncharge_locked() - give back what stallcap_charge_locked() took */
void stallcap_uncharge_locked(struct stallcap_session *sess)
{
	if (!sess->locked_mm)
		return;
	atomic64_sub(sess->locked_pages, &sess->locked_mm->pinned_vm);
	mmdrop(sess->locked_mm);
	sess->locked_mm = NULL;
}
