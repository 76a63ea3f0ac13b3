/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap compat: every difference between the kernels we build for
 * (6.1 LTS, 6.12 LTS, 6.12 PREEMPT_RT) is handled here and nowhere else.
 */
#ifndef STALLCAP_COMPAT_H
#define STALLCAP_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/version.h>

/* Blocked on a sleeping spinlock of PREEMPT_RT: a lock wait. */
#ifdef TASK_RTLOCK_WAIT
#define STALLCAP_TASK_RTLOCK_WAIT	TASK_RTLOCK_WAIT
#else
#define STALLCAP_TASK_RTLOCK_WAIT	0
#endif

/* hrtimer_setup() replaced hrtimer_init() in 6.13. */
static inline void stallcap_hrtimer_setup(struct hrtimer *timer,
					  enum hrtimer_restart (*fn)(struct hrtimer *),
					  clockid_t clock, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

/* vm_flags became read-only behind helpers in 6.3. */
static inline void stallcap_vm_flags_set(struct vm_area_struct *vma,
					 unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void stallcap_vm_flags_clear(struct vm_area_struct *vma,
					   unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

#endif /* STALLCAP_COMPAT_H */
