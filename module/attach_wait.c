// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: the event-loop wait boundaries, from kretprobes on the
 * system call entry points of the wait calls.
 *
 * Why not the sys_enter/sys_exit tracepoints: registering a probe there sets
 * the syscall-tracepoint work flag on every task of the system, and every
 * system call of every process then takes the slow path.  A kretprobe on
 * __x64_sys_epoll_wait costs only the calls to that function, and for a
 * process nobody attached its entry handler does one hash lookup and asks
 * for no return hook.  The probes exist while an attach exists, and a few
 * seconds after the last one (attach_probes.c).
 *
 * io_uring_enter counts as a wait only with IORING_ENTER_GETEVENTS (waiting
 * for completions); a submission-only call is busy time.  accept and
 * accept4 count only on a blocking listening socket: a pre-forked server's
 * worker (Apache's prefork, PHP-FPM) waits for its next connection there,
 * while an event loop's accept on a non-blocking socket it was told is
 * ready returns at once and is busy time.  So does a blocking read of a
 * timerfd (a periodic loop's pacing) or a signalfd: probed in their read
 * functions, not in read(), which every process calls for everything.
 * And a command loop's wait for its next message: mq_timedreceive on a
 * blocking message queue, msgrcv without IPC_NOWAIT; a blocking read of an
 * eventfd (a worker woken by a counter) or of an inotify descriptor (a
 * file watcher's wait for events); and a wait for signals
 * (sigwaitinfo and sigtimedwait unless the timeout is zero, sigsuspend,
 * pause: a loop paced by a POSIX timer's signal, a master process).
 *
 * A wait interrupted by a signal that no handler takes (a stop and a
 * continue, a tracer's interrupt, the freezer) may return
 * -ERESTART_RESTARTBLOCK and be resumed by restart_syscall: that call is
 * probed too, and counts as a wait only for a thread whose counted wait
 * returned so.
 *
 * The kinds that only some attaches count (futex waits, System V semaphore
 * waits and sleeps with STALLCAP_ATTACH_PARK; blocking socket, pipe and
 * terminal receives with STALLCAP_ATTACH_RECV) are probed in
 * attach_wait_kinds.c, through the entry and return work here.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ipc.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>	/* task_pt_regs() on 5.15 */
#include <linux/time_types.h>
#include <linux/uaccess.h>
#include <asm/unistd.h>
#include <uapi/linux/futex.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"
#include "attach_wait.h"
#include "why.h"

/* IORING_ENTER_GETEVENTS of <linux/io_uring.h> (ABI, never changes) */
#define SC_IORING_ENTER_GETEVENTS	BIT(0)

/*
 * Where the probed function has no ftrace site (a kernel built without the
 * function tracer), a kprobe is an int3 trap until it is optimized into a
 * jump, and a handler entered by the trap runs in an NMI-like context: the
 * watch's lock, its timer and task_work_add() may not be used there
 * (lockdep: "inconsistent {INITIAL USE} -> {IN-NMI} usage").  Then the
 * entry's work is done by a hard irq_work on the same CPU: it runs as soon
 * as the trap returns into the system call, whose interrupts are on, so
 * still in the thread that entered the wait.  Return handlers run from the
 * return trampoline, in the thread's own context, never from the trap.
 */
enum deferred_call { DEFERRED_BOUNDARY, DEFERRED_RESTART, DEFERRED_FD_WAIT };

/*
 * @fd and @counted: an accept's or an mq_timedreceive's, which counts as a
 * wait only on a blocking socket or queue; its file is looked up here, not
 * from the trap, and @counted (the return probe's instance data) tells the
 * return handler.
 */
struct deferred_entry {
	struct irq_work work;
	struct task_struct *task;	/* compared with current, never used */
	enum deferred_call call;
	unsigned int kind;		/* enum stallcap_wait_kind */
	unsigned long fd;
	bool *counted;
};

static DEFINE_PER_CPU(struct deferred_entry, deferred_entries);
static bool deferred_entries_ready;	/* attach_lock */

/*
 * Is @fd of the current thread a blocking file?  Context: not NMI (a last
 * reference, the file closed meanwhile, could not be put there).
 */
static bool fd_blocks(unsigned long fd)
{
	struct file *file;
	bool blocks;

	if (fd > INT_MAX)
		return false;
	file = fget(fd);
	if (!file)
		return false;
	blocks = !(READ_ONCE(file->f_flags) & O_NONBLOCK);
	fput(file);
	return blocks;
}

/*
 * An accept, an mq_timedreceive or a receive from the trap: a wait if its
 * file blocks
 */
static void deferred_fd_wait(struct deferred_entry *d)
{
	unsigned int kind = READ_ONCE(d->kind);

	if (!fd_blocks(READ_ONCE(d->fd)))
		return;
	stallcap_follow_wait_entry(kind);
	stallcap_attach_wait_boundary(false, kind, false);
	WRITE_ONCE(*d->counted, true);
}

static void deferred_entry_fn(struct irq_work *work)
{
	struct deferred_entry *d = container_of(work, struct deferred_entry,
						work);
	enum deferred_call call = READ_ONCE(d->call);

	if (xchg(&d->task, NULL) != current)
		return;
	switch (call) {
	case DEFERRED_FD_WAIT:
		deferred_fd_wait(d);
		break;
	case DEFERRED_RESTART:
		stallcap_watches_attached_restart(current, true, false);
		break;
	default:
		stallcap_attach_wait_boundary(false, READ_ONCE(d->kind), false);
	}
}

/* From the trap: the entry's work by the irq_work, in the same thread. */
static void defer_entry(enum deferred_call call, unsigned int kind)
{
	struct deferred_entry *d = this_cpu_ptr(&deferred_entries);

	WRITE_ONCE(d->call, call);
	WRITE_ONCE(d->kind, kind);
	WRITE_ONCE(d->task, current);
	irq_work_queue(&d->work);
}

/* Entry of a wait call of @kind (enum stallcap_wait_kind). */
int stallcap_wait_boundary_entry(unsigned int kind)
{
	/* 0: watched, run the return handler; else no return hook */
	stallcap_follow_wait_entry(kind);
	if (likely(!in_nmi()))
		return stallcap_attach_wait_boundary(false, kind, false) ? 0 : 1;
	if (!stallcap_attach_wants_current(kind))
		return 1;
	defer_entry(DEFERRED_BOUNDARY, kind);
	return 0;
}

/* Context: process, attach_lock held (the first probe set registered). */
void stallcap_wait_deferred_init(void)
{
	int cpu;

	if (deferred_entries_ready)
		return;
	for_each_possible_cpu(cpu)
		stallcap_irq_work_init_hard(&per_cpu(deferred_entries, cpu).work,
					    deferred_entry_fn);
	deferred_entries_ready = true;
}

/* Context: process (a probe set removed: no entry handler runs now). */
void stallcap_wait_deferred_sync(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		irq_work_sync(&per_cpu(deferred_entries, cpu).work);
}

static int wait_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return stallcap_wait_boundary_entry(SC_WAIT_LOOP);
}

/* The return of a wait call of @kind */
void stallcap_wait_boundary_return(struct pt_regs *regs, unsigned int kind)
{
	stallcap_attach_wait_boundary(true, kind,
				      stallcap_returned_restartable(regs));
}

static int wait_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	stallcap_wait_boundary_return(regs, SC_WAIT_LOOP);
	return 0;
}

/*
 * restart_syscall resumes a wait that returned -ERESTART_RESTARTBLOCK (a
 * poll, a sleep or a timed futex wait interrupted by a signal that no
 * handler took): idle again for the watches that counted that wait.
 */
static int restart_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (!stallcap_watches_restart_pending(current))
		return 1;
	if (likely(!in_nmi()))
		stallcap_watches_attached_restart(current, true, false);
	else
		defer_entry(DEFERRED_RESTART, 0);
	return 0;
}

static int restart_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (!fatal_signal_pending(current))
		stallcap_watches_attached_restart(current, false,
						  stallcap_returned_restartable(regs));
	return 0;
}

/* io_uring_enter(fd, to_submit, min_complete, flags, ...): 4th argument */
static int uring_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const struct pt_regs *u = syscall_uregs(regs);

	if (!(READ_ONCE(u->r10) & SC_IORING_ENTER_GETEVENTS))
		return 1;
	return wait_entry(ri, regs);
}

/*
 * accept(fd, ...), accept4(fd, ...), mq_timedreceive(mqd, ...) and the
 * socket receives (SC_WAIT_RECV): a wait on a blocking socket or message
 * queue @fd only.  The instance's data says whether this call counted
 * (from the trap, the irq_work decides it).
 */
int stallcap_wait_fd_entry(struct kretprobe_instance *ri, unsigned long fd,
			   unsigned int kind)
{
	bool *counted = (bool *)ri->data;
	struct deferred_entry *d;

	*counted = false;
	if (!stallcap_attach_wants_current(kind))
		return 1;
	if (unlikely(in_nmi())) {
		d = this_cpu_ptr(&deferred_entries);
		WRITE_ONCE(d->fd, fd);
		WRITE_ONCE(d->counted, counted);
		defer_entry(DEFERRED_FD_WAIT, kind);
		return 0;
	}
	if (!fd_blocks(fd))
		return 1;
	*counted = true;
	return stallcap_wait_boundary_entry(kind);
}

static int fd_wait_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return stallcap_wait_fd_entry(ri, READ_ONCE(syscall_uregs(regs)->di),
				      SC_WAIT_LOOP);
}

static int fd_wait_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (READ_ONCE(*(bool *)ri->data))
		stallcap_wait_boundary_return(regs, SC_WAIT_LOOP);
	return 0;
}

/* msgrcv(id, msg, size, type, flags): a wait unless IPC_NOWAIT (5th argument) */
static int msgrcv_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (READ_ONCE(syscall_uregs(regs)->r8) & IPC_NOWAIT)
		return 1;
	return wait_entry(ri, regs);
}

/*
 * A read of a timerfd or a signalfd that may block (not O_NONBLOCK, nor an
 * io_uring attempt without waiting, IOCB_NOWAIT) is a wait; of a socket or
 * a pipe, one of @kind SC_WAIT_RECV.  The file is held by the read: its
 * flags are read in place, from the trap too.
 */
int stallcap_wait_fd_read_entry(const struct file *file, int iocb_flags,
				unsigned int kind)
{
	if ((READ_ONCE(file->f_flags) & O_NONBLOCK) || (iocb_flags & IOCB_NOWAIT))
		return 1;
	return stallcap_wait_boundary_entry(kind);
}

/*
 * timerfd_read_iter(iocb, to), signalfd_read_iter(iocb, to): 6.8 and later;
 * eventfd_read(iocb, to): every kernel the module builds for
 */
static int fd_read_iter_entry(struct kretprobe_instance *ri,
			      struct pt_regs *regs)
{
	const struct kiocb *iocb = (const struct kiocb *)regs->di;

	return stallcap_wait_fd_read_entry(iocb->ki_filp, iocb->ki_flags,
					   SC_WAIT_LOOP);
}

/* timerfd_read(file, buf, count, ppos), signalfd_read() likewise: before */
static int fd_read_file_entry(struct kretprobe_instance *ri,
			      struct pt_regs *regs)
{
	return stallcap_wait_fd_read_entry((const struct file *)regs->di, 0,
					   SC_WAIT_LOOP);
}

/*
 * rt_sigtimedwait(set, info, timeout, setsize): a wait unless its timeout
 * is zero (a try: the pending signals taken without waiting).  The timeout
 * is read without faulting, only for an attached process; one that cannot
 * be read now counts.
 */
static int sigtimedwait_entry(struct kretprobe_instance *ri,
			      struct pt_regs *regs)
{
	const void __user *uts = (const void __user *)syscall_uregs(regs)->dx;
	struct __kernel_timespec ts;

	if (!stallcap_attach_wants_current(SC_WAIT_LOOP))
		return 1;
	if (uts && stallcap_user_access_okay() &&
	    !copy_from_user_nofault(&ts, uts, sizeof(ts)) &&
	    !ts.tv_sec && !ts.tv_nsec)
		return 1;
	return wait_entry(ri, regs);
}

/**
 * stallcap_wait_call_args_count() - do the arguments of call @nr make it a
 * wait (its probe registered)
 * @nr: an x86-64 system call number that a probe set probes
 * @regs: the call's user registers, or NULL for a call resumed by
 *	restart_syscall (its arguments are in its restart block: a futex call
 *	resumed there is a wait)
 *
 * For a thread found inside the call (attach_wait_regs.c).  An accept, an
 * mq_timedreceive, a msgrcv or a sigtimedwait seen from outside is not
 * looked at: one that may not block does not stay.
 */
bool stallcap_wait_call_args_count(long nr, const struct pt_regs *regs)
{
	if (nr == __NR_futex)
		return !regs || stallcap_futex_op_parks(regs->si);
	if (nr == __NR_io_uring_enter)
		return regs && (regs->r10 & SC_IORING_ENTER_GETEVENTS);
	return true;
}

#define FD_WAIT_PROBE(sym)	FD_PROBE(sym, fd_wait_entry, fd_wait_return)

static struct kretprobe wait_probes[] = {
	WAIT_PROBE("__x64_sys_epoll_wait", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_epoll_pwait", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_poll", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_epoll_pwait2", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_ppoll", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_select", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_pselect6", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_io_getevents", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_io_pgetevents", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_io_uring_enter", uring_entry, wait_return),
	WAIT_PROBE("__x64_sys_restart_syscall", restart_entry, restart_return),
	FD_WAIT_PROBE("__x64_sys_accept"),
	FD_WAIT_PROBE("__x64_sys_accept4"),
	FD_WAIT_PROBE("__x64_sys_mq_timedreceive"),
	WAIT_PROBE("__x64_sys_msgrcv", msgrcv_entry, wait_return),
	/* each kernel has one name of the two */
	WAIT_PROBE("timerfd_read_iter", fd_read_iter_entry, wait_return),
	WAIT_PROBE("timerfd_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("signalfd_read_iter", fd_read_iter_entry, wait_return),
	WAIT_PROBE("signalfd_read", fd_read_file_entry, wait_return),
	/* a kiocb since 5.10 ("eventfd: convert to f_op->read_iter()") */
	WAIT_PROBE("eventfd_read", fd_read_iter_entry, wait_return),
	/* inotify_read(file, buf, count, pos): a watcher's wait for events */
	WAIT_PROBE("inotify_read", fd_read_file_entry, wait_return),
	/*
	 * the next event of a device or a kernel service (FEAT_WAIT_DEVICES):
	 * fanotify's, a userfaultfd's page faults (read_iter since 6.8), a
	 * FUSE server's requests, an RTC's, an input device's, a UIO
	 * driver's interrupts (modules: probed when loaded at the first attach)
	 */
	WAIT_PROBE("fanotify_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("userfaultfd_read_iter", fd_read_iter_entry, wait_return),
	WAIT_PROBE("userfaultfd_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("fuse_dev_read", fd_read_iter_entry, wait_return),
	/*
	 * fuse_dev_splice_read(in, ppos, pipe, len, flags): libfuse 3's way
	 * (FEAT_WAIT_SPLICE); whether it waits is @in's O_NONBLOCK alone
	 */
	WAIT_PROBE("fuse_dev_splice_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("rtc_dev_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("evdev_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("uio_read", fd_read_file_entry, wait_return),
	WAIT_PROBE("__x64_sys_rt_sigtimedwait", sigtimedwait_entry, wait_return),
	WAIT_PROBE("__x64_sys_rt_sigsuspend", wait_entry, wait_return),
	WAIT_PROBE("__x64_sys_pause", wait_entry, wait_return),
};

/* The x86-64 system call number of each probe, -1 where unknown here. */
#ifndef __NR_epoll_pwait2
#define __NR_epoll_pwait2	-1
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter	-1
#endif

static const int wait_probe_nrs[] = {
	__NR_epoll_wait, __NR_epoll_pwait, __NR_poll, __NR_epoll_pwait2,
	__NR_ppoll, __NR_select, __NR_pselect6, __NR_io_getevents,
	__NR_io_pgetevents, __NR_io_uring_enter, __NR_restart_syscall,
	__NR_accept, __NR_accept4, __NR_mq_timedreceive, __NR_msgrcv,
	-1, -1, -1, -1, -1, -1,	/* read(): not every read is a wait */
	-1, -1, -1, -1, -1, -1, -1, -1,
	__NR_rt_sigtimedwait, __NR_rt_sigsuspend, __NR_pause,
};
static_assert(ARRAY_SIZE(wait_probe_nrs) == ARRAY_SIZE(wait_probes));

static struct kretprobe *wait_probe_ptrs[ARRAY_SIZE(wait_probes)];

struct stallcap_wait_probe_set stallcap_wait_set = {
	.probes = wait_probes,
	.ptrs = wait_probe_ptrs,
	.syscall_nrs = wait_probe_nrs,
	.nr = ARRAY_SIZE(wait_probes),
	.nr_required = 3,
	.name = "wait-call",
};
