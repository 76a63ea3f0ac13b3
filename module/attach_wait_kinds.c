// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: the wait calls that count only for the attaches that ask
 * for them, each kind a probe set of its own, registered while such an
 * attach exists (attach.c): futex waits, System V semaphore waits and
 * sleeps with STALLCAP_ATTACH_PARK (SC_WAIT_PARK), receives on a blocking
 * socket, pipe or terminal with STALLCAP_ATTACH_RECV (SC_WAIT_RECV).  The
 * event-loop waits, counted by every attach, and the entry and return work
 * all share: attach_wait.c.
 *
 * futex and nanosleep are called far more often than the event-loop waits,
 * by every process, and so are the socket and pipe reads: their entry
 * handlers look at an attach's process only (one hash lookup for any
 * other).
 */
#include <linux/fs.h>
#include <linux/ipc.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/sem.h>
#include <linux/socket.h>
#include <linux/time_types.h>
#include <linux/uaccess.h>
#include <asm/unistd.h>
#include <uapi/linux/futex.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"
#include "attach_wait.h"

#ifndef __NR_futex_waitv
#define __NR_futex_waitv	-1
#endif
#ifndef __NR_futex_wait
#define __NR_futex_wait		-1
#endif

/* ---- STALLCAP_ATTACH_PARK: futex waits, semaphore waits, sleeps ---- */

static int park_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return stallcap_wait_boundary_entry(SC_WAIT_PARK);
}

static int park_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	stallcap_wait_boundary_return(regs, SC_WAIT_PARK);
	return 0;
}

/*
 * futex(uaddr, op, ...): FUTEX_WAIT and FUTEX_WAIT_BITSET park; wakes,
 * requeues and the priority-inheritance locks do not.
 */
static int futex_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const struct pt_regs *u = syscall_uregs(regs);

	if (!stallcap_futex_op_parks(READ_ONCE(u->si)))
		return 1;
	return park_entry(ri, regs);
}

/* The most operations of a semop() looked at; a longer one parks. */
#define SEMOP_OPS_READ	8

/*
 * May semop(id, sops, nsops) wait: has one of its operations that can
 * wait (a decrement or a wait for zero, sem_op <= 0) no IPC_NOWAIT?  Every
 * one with it is a try (EAGAIN at once).  The operations are read without
 * faulting; more than SEMOP_OPS_READ of them, or ones that cannot be read
 * now, may.
 */
static bool semop_may_wait(const struct sembuf __user *usops,
			   unsigned long nsops)
{
	struct sembuf sops[SEMOP_OPS_READ];
	unsigned long i;

	if (nsops > ARRAY_SIZE(sops) || !stallcap_user_access_okay() ||
	    copy_from_user_nofault(sops, usops, nsops * sizeof(*sops)))
		return true;
	for (i = 0; i < nsops; i++)
		if (sops[i].sem_op <= 0 && !(sops[i].sem_flg & IPC_NOWAIT))
			return true;
	return false;
}

/*
 * semop(id, sops, nsops), semtimedop(id, sops, nsops, timeout): a System V
 * semaphore wait parks, as a futex wait does, unless it is a try (every
 * operation that could wait with IPC_NOWAIT, or semtimedop's timeout zero:
 * @timed).  Only for an attached process are the arguments read.
 */
static int sem_entry(struct kretprobe_instance *ri, struct pt_regs *regs,
		     bool timed)
{
	const struct pt_regs *u = syscall_uregs(regs);
	const void __user *uts = (const void __user *)READ_ONCE(u->r10);
	struct __kernel_timespec ts;

	if (!stallcap_attach_wants_current(SC_WAIT_PARK) ||
	    !semop_may_wait((const struct sembuf __user *)READ_ONCE(u->si),
			    READ_ONCE(u->dx)))
		return 1;
	if (timed && uts && stallcap_user_access_okay() &&
	    !copy_from_user_nofault(&ts, uts, sizeof(ts)) &&
	    !ts.tv_sec && !ts.tv_nsec)
		return 1;
	return park_entry(ri, regs);
}

static int semop_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return sem_entry(ri, regs, false);
}

static int semtimedop_entry(struct kretprobe_instance *ri,
			    struct pt_regs *regs)
{
	return sem_entry(ri, regs, true);
}

static struct kretprobe park_probes[] = {
	WAIT_PROBE_N("__x64_sys_futex", futex_entry, park_return,
		     FUTEX_MAXACTIVE),
	WAIT_PROBE("__x64_sys_nanosleep", park_entry, park_return),
	WAIT_PROBE("__x64_sys_clock_nanosleep", park_entry, park_return),
	WAIT_PROBE("__x64_sys_futex_waitv", park_entry, park_return),
	WAIT_PROBE("__x64_sys_futex_wait", park_entry, park_return),
	WAIT_PROBE("__x64_sys_semop", semop_entry, park_return),
	WAIT_PROBE("__x64_sys_semtimedop", semtimedop_entry, park_return),
};

static const int park_probe_nrs[] = {
	__NR_futex, __NR_nanosleep, __NR_clock_nanosleep, __NR_futex_waitv,
	__NR_futex_wait, __NR_semop, __NR_semtimedop,
};
static_assert(ARRAY_SIZE(park_probe_nrs) == ARRAY_SIZE(park_probes));

/* ---- STALLCAP_ATTACH_RECV: receives on a blocking socket, pipe, tty ---- */

/*
 * recvfrom(fd, buf, len, flags, ...), recvmmsg(fd, vec, vlen, flags, ...):
 * the 4th argument; recvmsg(fd, msg, flags): the 3rd.  MSG_DONTWAIT is a
 * try.
 */
static int recv_entry(struct kretprobe_instance *ri, struct pt_regs *regs,
		      unsigned long flags)
{
	unsigned long fd = READ_ONCE(syscall_uregs(regs)->di);

	if (flags & MSG_DONTWAIT)
		return 1;
	return stallcap_wait_fd_entry(ri, fd, SC_WAIT_RECV);
}

static int recvfrom_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const struct pt_regs *u = syscall_uregs(regs);

	return recv_entry(ri, regs, READ_ONCE(u->r10));
}

static int recvmsg_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const struct pt_regs *u = syscall_uregs(regs);

	return recv_entry(ri, regs, READ_ONCE(u->dx));
}

static int recv_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (READ_ONCE(*(bool *)ri->data))
		stallcap_wait_boundary_return(regs, SC_WAIT_RECV);
	return 0;
}

/*
 * sock_read_iter(iocb, to): a read() or readv() of a socket; pipe_read(iocb,
 * to): of a pipe or FIFO (a worker process fed through a pipe: Python's
 * multiprocessing pools, a make jobserver's token), anon_pipe_read() from
 * 6.15 (a FIFO's fifo_pipe_read() calls it)
 */
static int recv_read_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const struct kiocb *iocb = (const struct kiocb *)regs->di;

	return stallcap_wait_fd_read_entry(iocb->ki_filp, iocb->ki_flags,
					   SC_WAIT_RECV);
}

static int recv_read_return(struct kretprobe_instance *ri,
			    struct pt_regs *regs)
{
	stallcap_wait_boundary_return(regs, SC_WAIT_RECV);
	return 0;
}

/*
 * n_tty_read(tty, file, buf, nr, ...): a read() of a terminal or a serial
 * port (the default line discipline's), the input of a device's control
 * loop (a Modbus RTU, GPS or motor controller's serial line) or of an
 * interactive program
 */
static int recv_tty_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return stallcap_wait_fd_read_entry((const struct file *)regs->si, 0,
					   SC_WAIT_RECV);
}

/* the first two must be there */
static struct kretprobe recv_probes[] = {
	FD_PROBE_N("__x64_sys_recvfrom", recvfrom_entry, recv_return,
		   RECV_MAXACTIVE),
	FD_PROBE_N("__x64_sys_recvmsg", recvmsg_entry, recv_return,
		   RECV_MAXACTIVE),
	WAIT_PROBE_N("sock_read_iter", recv_read_entry, recv_read_return,
		     RECV_MAXACTIVE),
	FD_PROBE("__x64_sys_recvmmsg", recvfrom_entry, recv_return),
	WAIT_PROBE_N("pipe_read", recv_read_entry, recv_read_return,
		     RECV_MAXACTIVE),
	WAIT_PROBE_N("anon_pipe_read", recv_read_entry, recv_read_return,
		     RECV_MAXACTIVE),
	WAIT_PROBE("n_tty_read", recv_tty_entry, recv_read_return),
};

static const int recv_probe_nrs[] = {
	__NR_recvfrom, __NR_recvmsg, -1 /* read() */, __NR_recvmmsg,
	-1 /* read() */, -1 /* read() */, -1 /* read() */,
};
static_assert(ARRAY_SIZE(recv_probe_nrs) == ARRAY_SIZE(recv_probes));

static struct kretprobe *park_probe_ptrs[ARRAY_SIZE(park_probes)];
static struct kretprobe *recv_probe_ptrs[ARRAY_SIZE(recv_probes)];

struct stallcap_wait_probe_set stallcap_park_set = {
	.probes = park_probes,
	.ptrs = park_probe_ptrs,
	.syscall_nrs = park_probe_nrs,
	.nr = ARRAY_SIZE(park_probes),
	.nr_required = 3,
	.name = "futex/semaphore/sleep",
};

struct stallcap_wait_probe_set stallcap_recv_set = {
	.probes = recv_probes,
	.ptrs = recv_probe_ptrs,
	.syscall_nrs = recv_probe_nrs,
	.nr = ARRAY_SIZE(recv_probes),
	.nr_required = 2,
	.name = "socket/pipe/tty receive",
};
