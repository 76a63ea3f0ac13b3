/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap compat: every difference between the kernels we build for
 * (6.1 LTS, 6.12 LTS, 6.12 PREEMPT_RT) is handled here and nowhere else.
 * The STALLCAP_HAVE_* macros come from feature tests in module/Kbuild, which
 * look into the headers of the kernel being built for.
 */
#ifndef STALLCAP_COMPAT_H
#define STALLCAP_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/sched.h>

/* Blocked on a sleeping spinlock of PREEMPT_RT: a lock wait. */
#ifdef TASK_RTLOCK_WAIT
#define STALLCAP_TASK_RTLOCK_WAIT	TASK_RTLOCK_WAIT
#else
#define STALLCAP_TASK_RTLOCK_WAIT	0
#endif

/* hrtimer_setup() replaced hrtimer_init() (6.13). */
static inline void stallcap_hrtimer_setup(struct hrtimer *timer,
					  enum hrtimer_restart (*fn)(struct hrtimer *),
					  clockid_t clock, enum hrtimer_mode mode)
{
#ifdef STALLCAP_HAVE_HRTIMER_SETUP
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

/* vm_flags became read-only behind helpers (6.3). */
static inline void stallcap_vm_flags_set(struct vm_area_struct *vma,
					 unsigned long flags)
{
#ifdef STALLCAP_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void stallcap_vm_flags_clear(struct vm_area_struct *vma,
					   unsigned long flags)
{
#ifdef STALLCAP_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * The ring and slot mappings: never copied into a forked child (as after
 * MADV_DONTFORK: its stores cannot move its parent's slots), never grown
 * by mremap(), left out of core dumps, never executable.
 */
static inline void stallcap_vma_set_private(struct vm_area_struct *vma)
{
	stallcap_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	stallcap_vm_flags_clear(vma, VM_MAYEXEC);
}

#endif /* STALLCAP_COMPAT_H */
