/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap compat: every difference between the kernels we build for
 * (5.10 LTS, 6.1 LTS, 6.12 LTS and PREEMPT_RT, 7.2 and PREEMPT_RT) is
 * handled here and nowhere else.
 * The STALLCAP_HAVE_* macros come from feature tests in module/Kbuild, which
 * look into the headers of the kernel being built for.
 */
#ifndef STALLCAP_COMPAT_H
#define STALLCAP_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/smp.h>

/* task->state became task->__state, an unsigned int (5.14). */
static inline unsigned int stallcap_task_state(const struct task_struct *task)
{
#ifdef STALLCAP_HAVE_TASK_STATE_UNDERSCORE
	return READ_ONCE(task->__state);
#else
	return READ_ONCE(task->state);
#endif
}

/*
 * The sched_process_exit tracepoint passes group_dead too (6.16): a probe
 * must have the tracepoint's exact prototype (kCFI checks indirect calls).
 */
#ifdef STALLCAP_HAVE_EXIT_GROUP_DEAD
#define STALLCAP_EXIT_PROBE_ARGS	void *data, struct task_struct *task, \
					bool group_dead
#else
#define STALLCAP_EXIT_PROBE_ARGS	void *data, struct task_struct *task
#endif

/* INIT_CSD() (5.11); before it a csd was initialised by its fields. */
#ifndef STALLCAP_HAVE_INIT_CSD
#define INIT_CSD(_csd, _func, _info)				\
	(*(_csd) = (call_single_data_t){ .func = (_func), .info = (_info) })
#endif

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

/* Inode attribute changes take an idmap, no longer a user namespace (6.3). */
#ifdef STALLCAP_HAVE_MNT_IDMAP
#define STALLCAP_NOP_IDMAP	(&nop_mnt_idmap)
#else
#define STALLCAP_NOP_IDMAP	(&init_user_ns)
#endif
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
