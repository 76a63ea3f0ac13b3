/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * stallcap: catch the moment a thread misses its deadline and save its stack.
 *
 * A thread opens /dev/stallcap (a *session*), arms a deadline or a heartbeat
 * watch for itself (or a reader attaches the module's own watches to an
 * unmodified process), and the module captures where the thread is when the
 * deadline passes: registers, kernel stack, user stack (frame-pointer walk
 * plus a raw copy of the top of the user stack for DWARF unwinding) or, for a
 * thread that is not running, its wait state and kernel stack, and why it
 * stalled (where its time went, who ran instead, who holds its lock).
 * Records go to a ring buffer that the session maps with mmap().
 *
 * Conventions of this ABI:
 *  - ioctl dispatch: the module matches a command by its type
 *    (STALLCAP_IOC_MAGIC), number and direction; the size bits of the
 *    command are ignored.  The size of an argument struct is its first
 *    field, __u32 size, which the caller sets to sizeof() the struct as its
 *    header declares it.  A caller may pass a larger struct than the module
 *    knows if the unknown tail is zero (else E2BIG), or a smaller one down to
 *    STALLCAP_*_SIZE_VER0 (missing fields read as zero).  Output structs are
 *    written up to min(size passed, size known) and their size field is set
 *    to the size the module knows.  So programs built against an older or a
 *    newer header than the module's keep working;
 *  - fields named __reserved* must be zero on input (else EINVAL) and are
 *    zero on output;
 *  - unknown flag bits are rejected with EINVAL;
 *  - a failing ioctl changes nothing;
 *  - records are self-describing: a record says its size, a sample its fixed
 *    part's size, and its variable parts are typed sections that carry their
 *    own size; readers skip what they do not know (see "Records").
 *
 * Errors common to every ioctl:
 *  EFAULT  the argument pointer is not readable/writable
 *  EINVAL  size below VER0, unknown flag, non-zero reserved field, a value
 *          argument that must be 0 is not
 *  E2BIG   size larger than known and the unknown tail is not zero, or
 *          larger than a page
 *  ENOMEM  out of kernel memory
 *  EPERM   (ARM, ATTACH, mmap, SET_CONFIG with STALLCAP_CFG_GLOBAL: the
 *          calls that create the session's ring and slots) the ring and
 *          slots are beyond what the caller's user may still lock: as perf
 *          charges its buffers, they are charged first to the user's
 *          allowance (module parameter mlock_kb per online CPU, shared by
 *          all the user's sessions in every process, see
 *          stallcap_info.mlock_bytes), and what does not fit there to the
 *          caller's pinned memory (pinned_vm) against RLIMIT_MEMLOCK;
 *          CAP_IPC_LOCK is exempt from RLIMIT_MEMLOCK, not from the
 *          allowance.  The charge is given back when the session's last
 *          reference goes (close, and the end of its queued work).  The
 *          memory is also charged to the caller's memory cgroup.
 *  ENOTTY  unknown command (type, number or direction)
 *
 * Who may open the device: root and members of the device's group (module
 * parameters, default mode 0660, group "stallcap"); others get EACCES from
 * open().
 *
 * Stability: this is ABI version 2, declared stable.  What may still change
 * is limited to additions that old programs never see or skip: new ioctls,
 * new flag bits (rejected by older modules), new fields at the end of the
 * argument structs (zero meaning "as before"), new fields at the end of a
 * record's fixed part (fixed_size grows), new section types, new record
 * types, new values of the enumerations (state, path, clock, origin, kinds),
 * and use of the control page's reserved space.  Existing fields, offsets,
 * section layouts and semantics never change (BUILD_BUG_ON in the module pins
 * every offset).
 */
#ifndef _UAPI_LINUX_STALLCAP_H
#define _UAPI_LINUX_STALLCAP_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define STALLCAP_DEVICE		"/dev/stallcap"
#define STALLCAP_ABI_VERSION	2

/* ioctl type; checked free in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define STALLCAP_IOC_MAGIC	0xB9

/* ------------------------------------------------------------------------
 * Watches
 * ------------------------------------------------------------------------
 */

/* struct stallcap_arm.flags */
/**
 * STALLCAP_ARM_ABSOLUTE - timeout_ns is an absolute CLOCK_MONOTONIC time.
 * Not valid with _HEARTBEAT (EINVAL).
 */
#define STALLCAP_ARM_ABSOLUTE	(1U << 0)
/**
 * STALLCAP_ARM_CPUTIME - count only the time the thread spends on a CPU
 * (Seastar's semantics): a preempted or sleeping thread is not blamed.
 * Not valid with STALLCAP_ARM_ABSOLUTE, _HEARTBEAT or _SHARED_DEADLINE
 * (EINVAL).
 */
#define STALLCAP_ARM_CPUTIME	(1U << 1)
/**
 * STALLCAP_ARM_HEARTBEAT - a heartbeat watch: timeout_ns is the threshold
 * without progress; the thread marks progress in its slot (see struct
 * stallcap_slot) instead of re-arming.  On success the ioctl returns the
 * slot index.
 */
#define STALLCAP_ARM_HEARTBEAT	(1U << 2)
/**
 * STALLCAP_ARM_SHARED_DEADLINE - a deadline watch re-armed without a system
 * call: the thread stores its next absolute deadline in its slot's
 * deadline_ns (see struct stallcap_slot).  timeout_ns is the threshold T
 * used for the sampling intervals and the first deadline is now + T (or
 * timeout_ns itself with STALLCAP_ARM_ABSOLUTE).  On success the ioctl
 * returns the slot index.  Not valid with _HEARTBEAT or _CPUTIME.
 */
#define STALLCAP_ARM_SHARED_DEADLINE	(1U << 3)
/**
 * STALLCAP_ARM_DEADLINE_TSC - with _SHARED_DEADLINE: the thread stores its
 * deadlines as time-stamp counter values (the x86 RDTSC instruction's) in
 * its slot's deadline_tsc instead of nanoseconds in deadline_ns, so that a
 * re-arm is one counter read and one store, without the vDSO's clock
 * arithmetic.  struct stallcap_info.tsc_khz converts nanoseconds into
 * ticks.  Offered (STALLCAP_FEAT_DEADLINE_TSC) only while the TSC is the
 * kernel's clocksource (CLOCK_MONOTONIC is that counter scaled, in step on
 * every CPU) and not marked unstable; elsewhere the ARM fails with
 * EOPNOTSUPP.  A watch armed before the kernel gives up on the counter keeps
 * converting at its rate.  timeout_ns stays in nanoseconds.
 */
#define STALLCAP_ARM_DEADLINE_TSC	(1U << 4)
#define STALLCAP_ARM_FLAGS_ALL	(STALLCAP_ARM_ABSOLUTE | STALLCAP_ARM_CPUTIME | \
				 STALLCAP_ARM_HEARTBEAT | \
				 STALLCAP_ARM_SHARED_DEADLINE | \
				 STALLCAP_ARM_DEADLINE_TSC)

/**
 * struct stallcap_arm - arm a watch on the calling thread
 * @size: sizeof(struct stallcap_arm) as known to the caller
 * @flags: STALLCAP_ARM_*
 * @timeout_ns: relative timeout (from now), absolute deadline
 *	(STALLCAP_ARM_ABSOLUTE) or heartbeat threshold, in nanoseconds
 * @user_tag: opaque value copied into every record of this watch
 * @__reserved: must be zero
 *
 * STALLCAP_IOC_ARM creates the calling thread's watch in this session if it
 * has none, and (re)arms it: arming again before expiry moves the deadline.
 * A watch belongs to the thread that armed it; other threads (and a forked
 * child) cannot act on it.  It lives until STALLCAP_IOC_RELEASE, the thread's
 * exit or execve() (as POSIX timers, watches do not survive exec: a new
 * program, set-user-ID ones included, is never captured into the caller's
 * session), or the session's close.  A stall in progress then ends.
 * Changing the kind of the watch (deadline, heartbeat, shared deadline)
 * replaces it; if that fails the old watch stays as it was.
 *
 * Returns 0, or the slot index for STALLCAP_ARM_HEARTBEAT and
 * STALLCAP_ARM_SHARED_DEADLINE.
 * Errors:
 *  ERANGE  timeout below the module's min_deadline_us, above 1 hour, or an
 *          absolute deadline already in the past by more than 1 hour; or
 *          the session's configuration (its defaults included) is out of
 *          the module's ranges when the ring is created (max_ring_kb
 *          lowered below the default ring size)
 *  ENOSPC  the user's max_watches_per_user watches exist already, or no
 *          free slot in this session, or the user's
 *          max_fast_watches_per_user watches with a timer period under
 *          1 ms (a timeout, or a heartbeat's timeout / 4) are armed already
 *          (CAP_SYS_RESOURCE of the opener's thread is exempt)
 *  EINVAL  flags that do not go together (see each flag; _DEADLINE_TSC
 *          without _SHARED_DEADLINE), besides the errors common to every
 *          ioctl
 *  ESRCH   the calling thread is exiting
 *  EPERM   the ring and slot memory exceed the user's allowance plus
 *          RLIMIT_MEMLOCK (see the errors common to every ioctl)
 *  EOPNOTSUPP  STALLCAP_ARM_DEADLINE_TSC where the time-stamp counter is not
 *          usable (STALLCAP_FEAT_DEADLINE_TSC clear)
 */
struct stallcap_arm {
	__u32 size;
	__u32 flags;
	__u64 timeout_ns;
	__u64 user_tag;
	__u64 __reserved;
};

#define STALLCAP_ARM_SIZE_VER0	32

/* struct stallcap_attach.flags */
/**
 * STALLCAP_ATTACH_CPUTIME - count only CPU time within a busy period.
 */
#define STALLCAP_ATTACH_CPUTIME	(1U << 0)
/**
 * STALLCAP_ATTACH_INHERIT - follow the process: a process it creates after
 * the attach (fork, or clone without CLONE_VM and CLONE_THREAD), and the
 * program that it or a child of it executes (exec, also after vfork or
 * posix_spawn), are attached as well, with the same deadline, tag and
 * flags, recursively (as perf's inherited events).  A program executed
 * with privileges (set-user-ID, set-group-ID, file capabilities: AT_SECURE)
 * is not followed.
 */
#define STALLCAP_ATTACH_INHERIT	(1U << 1)
/**
 * STALLCAP_ATTACH_PARK - futex waits (FUTEX_WAIT, FUTEX_WAIT_BITSET,
 * futex_waitv, futex_wait), System V semaphore waits (semop, semtimedop;
 * not a try: IPC_NOWAIT on every operation that could wait, or a zero
 * timeout) and sleeps (nanosleep, clock_nanosleep) are idle waits too,
 * and a thread's first such call gets it a watch: for runtimes that park
 * their idle worker threads on a futex while one of them polls (Go, tokio,
 * thread pools), whose parked workers would otherwise be busy.  Lock waits
 * on a plain futex or a semaphore and sleeps then end a
 * busy period instead of being reported (priority-inheritance locks,
 * FUTEX_LOCK_PI, stay busy).  While such an attach exists, every process's
 * futex, semaphore and sleep calls pass through the module's probe (one
 * hash lookup).
 * Without STALLCAP_FEAT_ATTACH_PARK the module cannot attach at all
 * (EOPNOTSUPP, as for any ATTACH).
 */
#define STALLCAP_ATTACH_PARK	(1U << 2)
/**
 * STALLCAP_ATTACH_RECV - a receive on a blocking socket (recv, recvfrom,
 * recvmsg, recvmmsg, read() of a socket; not with MSG_DONTWAIT) is an idle
 * wait too, and a thread's first such call gets it a watch: for servers
 * with a thread per connection that blocks in its socket for the client's
 * next request (Python's socketserver and http.server, thread-per-client C
 * and Java servers), whose request handling is otherwise never watched.
 * With STALLCAP_FEAT_RECV_PIPE, a read() of a blocking pipe or FIFO too:
 * worker processes fed through a pipe (Python's multiprocessing pools and
 * concurrent.futures process pools, a jobserver's tokens).
 * With STALLCAP_FEAT_RECV_TTY, a read() of a blocking terminal or serial
 * port too (the default line discipline's): a device's control loop that
 * waits for the next frame on its serial line, an interactive program.
 * A handler's own blocking receive from a backend (a database, another
 * service, a child process) then ends a busy period instead of being
 * reported.  While such an attach exists, every process's receive calls
 * pipe reads and terminal reads pass through the module's probe (one hash
 * lookup).
 * Without STALLCAP_FEAT_ATTACH_RECV the module cannot attach at all
 * (EOPNOTSUPP, as for any ATTACH).
 */
#define STALLCAP_ATTACH_RECV	(1U << 3)
#define STALLCAP_ATTACH_FLAGS_ALL	(STALLCAP_ATTACH_CPUTIME | \
					 STALLCAP_ATTACH_INHERIT | \
					 STALLCAP_ATTACH_PARK | \
					 STALLCAP_ATTACH_RECV)

/**
 * struct stallcap_attach - watch an unmodified process's event loops
 * @size: sizeof(struct stallcap_attach) as known to the caller
 * @flags: STALLCAP_ATTACH_*
 * @pid: the process (thread group id, in the caller's pid namespace)
 * @__reserved0: must be zero
 * @timeout_ns: the deadline of a busy period (T)
 * @user_tag: copied into every record of these watches
 * @__reserved: must be zero
 *
 * STALLCAP_IOC_ATTACH makes the module watch every thread of @pid, present
 * and future, at the boundaries of its event-loop waits: a thread is idle
 * while it is inside a wait system call (epoll_wait, epoll_pwait,
 * epoll_pwait2, poll, ppoll, select, pselect6, io_getevents, io_pgetevents,
 * io_uring_enter waiting for completions, accept and accept4 on a blocking
 * socket: a pre-forked server's worker; a blocking read of a timerfd, a
 * signalfd, an eventfd or (with STALLCAP_FEAT_RECV_TTY) an inotify
 * descriptor: a file watcher's wait for events; with
 * STALLCAP_FEAT_WAIT_DEVICES, a blocking read of fanotify, a userfaultfd
 * (a fault handler), /dev/fuse (a FUSE server's wait for requests; with
 * STALLCAP_FEAT_WAIT_SPLICE, its splice() of one too), an RTC,
 * an input device or a UIO device (a driver's wait for its interrupt: of a
 * driver module loaded before the attach); mq_timedreceive on a blocking
 * queue, msgrcv without IPC_NOWAIT; rt_sigtimedwait unless its
 * timeout is zero, rt_sigsuspend, pause) and busy from the moment such a
 * call returns until it enters the next one; busy longer than @timeout_ns
 * is a stall, captured and sampled exactly as an armed watch's (records
 * with origin STALLCAP_ORIGIN_ATTACH).  A thread that never waits in such a call
 * is never reported (with STALLCAP_ATTACH_PARK, futex waits and sleeps are
 * wait calls too; with STALLCAP_ATTACH_RECV, blocking socket receives,
 * pipe and terminal reads).
 * The program is not stopped, changed or signalled.  On a kernel that does
 * not export task_work_add() to modules (no
 * STALLCAP_FEAT_DEFER_USER), the return of a wait call that a thread was
 * inside at the attach is found by a poll every @timeout_ns / 4 (at least a
 * clock tick), and a new thread's watch, or a followed process's attach,
 * is made by a worker: such a busy period may start that much late.  The
 * watches end with STALLCAP_IOC_DETACH, the session's close, or the
 * process's exit or exec (with STALLCAP_ATTACH_INHERIT, the executed
 * program is attached in its turn).  Each followed process is an attach of
 * its own, which DETACH names by its pid (0: all); the attach of a process
 * that exited or executed another program ends when the session next
 * follows one.  STALLCAP_REC_WATCH records tell the reader which threads
 * are watched, when each is first busy (STALLCAP_WATCH_BUSY: a thread
 * that never waits in a counted call never is, and its stalls cannot be
 * seen), and which thread or process could not be watched
 * (STALLCAP_WATCH_MISSED: never silently).
 * Errors: ESRCH (no such process, or none of its threads can be watched:
 * all exiting or kernel workers), EPERM (the caller may not
 * ptrace-attach to it, as for perf -p: other user, set-user-ID, no
 * CAP_SYS_PTRACE), EEXIST (already attached in this session), ERANGE (as for
 * ARM), ENOSPC (max_watches_per_user, one watch per thread; or a timeout
 * under 1 ms, whose watches count against max_fast_watches_per_user while
 * they exist; the threads present are counted at once before anything is
 * made, so another session of the user cannot take their room meanwhile:
 * a refused ATTACH leaves nothing, and one that made watches is not
 * refused: a thread created after that count gets its watch at its first
 * wait call, as later threads do; CAP_SYS_RESOURCE of the opener is
 * exempt),
 * EOPNOTSUPP (the kernel cannot probe the wait calls: no kretprobes,
 * STALLCAP_FEAT_ATTACH unset).  Where the kernel checks indirect branches
 * (kernel IBT, clang CFI) the module applies the ptrace credential and
 * dumpability rules itself, without the LSMs.  With
 * STALLCAP_ATTACH_INHERIT, a process or program is followed only if the
 * caller of ATTACH could trace it: the same real ids as all of its ids, or
 * CAP_SYS_PTRACE in the initial user namespace; never a set-user-ID
 * program (STALLCAP_WATCH_MISSED instead).
 */
struct stallcap_attach {
	__u32 size;
	__u32 flags;
	__u32 pid;
	__u32 __reserved0;
	__u64 timeout_ns;
	__u64 user_tag;
	__u64 __reserved[2];
};

#define STALLCAP_ATTACH_SIZE_VER0	48

/* ------------------------------------------------------------------------
 * Session configuration
 * ------------------------------------------------------------------------
 */

/* struct stallcap_config.flags */
/**
 * STALLCAP_CFG_DEFER_USER - always complete the user stack in the thread's
 * own context on its next return to user space (a STALLCAP_REC_USER_STACK
 * record), not only when the capture-time copy was incomplete.  Modules
 * without STALLCAP_FEAT_DEFER_USER reject it (EINVAL).
 */
#define STALLCAP_CFG_DEFER_USER	(1U << 0)
/**
 * STALLCAP_CFG_GLOBAL - system-wide reader: this session's ring also receives
 * the records of every other session.  Needs CAP_SYS_ADMIN in the opener's
 * credentials (else EPERM).
 */
#define STALLCAP_CFG_GLOBAL	(1U << 1)
#define STALLCAP_CFG_FLAGS_ALL	(STALLCAP_CFG_DEFER_USER | STALLCAP_CFG_GLOBAL)

/**
 * struct stallcap_config - session configuration
 * @size: sizeof(struct stallcap_config) as known to the caller
 * @flags: STALLCAP_CFG_*
 * @ring_bytes: size of the ring's data area; a power of two, at least
 *	4 * STALLCAP_RECORD_MAX_BYTES(user_stack_bytes) and at most the module's
 *	max_ring_kb.  Default 1 MiB.
 * @user_stack_bytes: bytes of the user stack copied raw at capture, from the
 *	user stack pointer up, a multiple of 8, at most 65536.  Default 16384.
 * @slots: number of watch slots (heartbeat and shared-deadline watches;
 *	multiple of 64, at most 4096).  Default 64.
 * @max_samples: samples taken during one stall, the first included
 *	(1..64).  Default 8.
 * @sample_cap_ns: samples after the first come at T, 2T, 4T, ... after the
 *	deadline (T = the watch's timeout), the interval capped at this value.
 *	Default 1 s; at least the module's min_deadline_us.
 * @rate_limit: at most this many stalls reported per minute (0: no limit).
 *	Stalls beyond it are counted as suppressed, never silently dropped.
 * @__reserved: must be zero
 *
 * STALLCAP_IOC_SET_CONFIG replaces the whole configuration; a field left 0
 * takes its default.  The ring and slot memory are charged to the caller's
 * user's allowance, the rest to its pinned memory against RLIMIT_MEMLOCK
 * (see EPERM at the top) when they are created, by the first ARM, ATTACH or
 * mmap, or by SET_CONFIG with STALLCAP_CFG_GLOBAL.  Errors:
 *  EBUSY   ring_bytes, user_stack_bytes or slots change after the ring was
 *          created
 *  ERANGE  a value out of the ranges above
 *  EPERM   STALLCAP_CFG_GLOBAL without CAP_SYS_ADMIN; or creating the ring
 *          would exceed the user's allowance plus RLIMIT_MEMLOCK
 * STALLCAP_IOC_GET_CONFIG fills the struct with the values in force (defaults
 * resolved).
 */
struct stallcap_config {
	__u32 size;
	__u32 flags;
	__u32 ring_bytes;
	__u32 user_stack_bytes;
	__u32 slots;
	__u32 max_samples;
	__u64 sample_cap_ns;
	__u32 rate_limit;
	__u32 __reserved[5];
};

#define STALLCAP_CONFIG_SIZE_VER0	56

/* ------------------------------------------------------------------------
 * Module information and counters
 * ------------------------------------------------------------------------
 */

/* struct stallcap_info.features */
#define STALLCAP_FEAT_NMI		(1ULL << 0) /* NMI capture in use */
#define STALLCAP_FEAT_HEARTBEAT		(1ULL << 1)
#define STALLCAP_FEAT_CPUTIME		(1ULL << 2)
#define STALLCAP_FEAT_DEFER_USER	(1ULL << 3)
#define STALLCAP_FEAT_GLOBAL		(1ULL << 4)
#define STALLCAP_FEAT_KADDR		(1ULL << 5) /* this session sees kernel addresses */
#define STALLCAP_FEAT_SHARED_DEADLINE	(1ULL << 6)
#define STALLCAP_FEAT_ATTACH		(1ULL << 7) /* STALLCAP_IOC_ATTACH */
#define STALLCAP_FEAT_TIMES		(1ULL << 8) /* STALLCAP_SEC_TIMES */
#define STALLCAP_FEAT_WHY		(1ULL << 9) /* _SEC_WAIT and _SEC_TASK */
/*
 * Kernel mutexes, rw-semaphores held for writing and semaphores: what a
 * blocked task waits on and who holds it (the kernel tracks it: Linux 6.16
 * and later with CONFIG_DETECT_HUNG_TASK_BLOCKER, not PREEMPT_RT); without
 * it such waits are STALLCAP_WAIT_OTHER with STALLCAP_WAIT_F_OWNER_UNKNOWN.
 */
#define STALLCAP_FEAT_KERNEL_LOCKS	(1ULL << 10)
/* STALLCAP_ATTACH_INHERIT and STALLCAP_WATCH_MISSED */
#define STALLCAP_FEAT_ATTACH_INHERIT	(1ULL << 11)
/* STALLCAP_ATTACH_PARK */
#define STALLCAP_FEAT_ATTACH_PARK	(1ULL << 12)
/*
 * STALLCAP_SAMPLE_THROTTLED and STALLCAP_TASK_F_THROTTLED: the kernel has
 * CPU bandwidth control (CONFIG_CFS_BANDWIDTH); without it they are never set
 */
#define STALLCAP_FEAT_THROTTLE		(1ULL << 13)
/*
 * STALLCAP_SAMPLE_MEMSTALL and STALLCAP_TASK_F_MEMSTALL: the kernel has
 * pressure stall information (CONFIG_PSI); they are never set without it,
 * nor when it was turned off at boot (psi=0, or CONFIG_PSI_DEFAULT_DISABLED
 * without psi=1: then /proc/pressure does not exist)
 */
#define STALLCAP_FEAT_MEMSTALL		(1ULL << 14)
/*
 * STALLCAP_SEC_INTERRUPTED_STACK: a sample taken in a signal handler that
 * runs on the thread's alternate signal stack also copies the stack that
 * the handler interrupted (x86-64)
 */
#define STALLCAP_FEAT_SIGNAL_STACK	(1ULL << 15)
/*
 * STALLCAP_SEC_USER_STACK_MORE: a user-mode sample whose stack copy ended
 * at a page that was not resident also has the resident runs above it
 * (with STALLCAP_FEAT_DEFER_USER: the copy made on the way back to user).
 * Without this feature, a blocked thread's STALLCAP_REC_USER_STACK record
 * (read from outside) may still carry them.
 */
#define STALLCAP_FEAT_USER_STACK_MORE	(1ULL << 16)
/**
 * STALLCAP_FEAT_DEADLINE_TSC - STALLCAP_ARM_DEADLINE_TSC is accepted now:
 * the time-stamp counter is the kernel's clocksource, running at
 * struct stallcap_info.tsc_khz
 */
#define STALLCAP_FEAT_DEADLINE_TSC	(1ULL << 17)
/*
 * STALLCAP_WATCH_BUSY: an attached thread's first busy period is told, so
 * that a reader knows which watched threads never waited in a call the
 * attach counts (their stalls cannot be seen)
 */
#define STALLCAP_FEAT_WATCH_BUSY	(1ULL << 18)
/* STALLCAP_ATTACH_RECV */
#define STALLCAP_FEAT_ATTACH_RECV	(1ULL << 19)
/* STALLCAP_ATTACH_RECV counts a read() of a blocking pipe or FIFO too */
#define STALLCAP_FEAT_RECV_PIPE		(1ULL << 20)
/* samples of a thread inside a system call carry STALLCAP_SEC_SYSCALL */
#define STALLCAP_FEAT_SEC_SYSCALL	(1ULL << 21)
/*
 * STALLCAP_ATTACH_RECV counts a read() of a blocking terminal or serial
 * port too, and every attach a blocking read of an inotify descriptor
 */
#define STALLCAP_FEAT_RECV_TTY		(1ULL << 22)
/*
 * every attach counts a blocking read of fanotify, a userfaultfd, /dev/fuse
 * (a FUSE server), an RTC, an input device (evdev) or a UIO device as a wait
 */
#define STALLCAP_FEAT_WAIT_DEVICES	(1ULL << 23)
/*
 * every attach counts a FUSE server's splice() of its next request from a
 * blocking /dev/fuse as a wait, as its read() (libfuse 3's default when the
 * file system has write_buf: sshfs, fuse-overlayfs, any high-level one)
 */
#define STALLCAP_FEAT_WAIT_SPLICE	(1ULL << 24)

/* struct stallcap_info.arch and struct stallcap_sec_regs.arch */
#define STALLCAP_ARCH_X86_64	1
#define STALLCAP_ARCH_ARM64	2

/**
 * struct stallcap_info - what the module supports (STALLCAP_IOC_GET_INFO)
 * @size: in: size known to the caller (the only field read: the struct is
 *	output, as stallcap_config is for STALLCAP_IOC_GET_CONFIG); out: size
 *	known to the module
 * @abi_version: STALLCAP_ABI_VERSION of the module
 * @features: STALLCAP_FEAT_*
 * @min_deadline_ns: smallest timeout accepted (module parameter)
 * @max_ring_bytes: largest ring_bytes accepted (module parameter)
 * @max_watches_per_user: watches one user may hold (module parameter)
 * @arch: STALLCAP_ARCH_* of the register sets the module writes
 * @sample_fixed_size: sizeof(struct stallcap_sample) as the module knows it
 * @mlock_bytes: ring and slot memory each user may lock beyond
 *	RLIMIT_MEMLOCK, now: the module parameter mlock_kb times the online
 *	CPUs (as perf's perf_event_mlock_kb).  Zero from modules before it.
 * @mlock_used_bytes: what the caller's user has charged to that allowance
 *	now, all its sessions together
 * @tsc_khz: the time-stamp counter's rate in kHz as the kernel calibrated
 *	it (ticks = ns * tsc_khz / 1000000) when STALLCAP_FEAT_DEADLINE_TSC
 *	is set, else 0
 * @__reserved: zero
 */
struct stallcap_info {
	__u32 size;
	__u32 abi_version;
	__u64 features;
	__u64 min_deadline_ns;
	__u32 max_ring_bytes;
	__u32 max_watches_per_user;
	__u32 arch;
	__u32 sample_fixed_size;
	__u64 mlock_bytes;
	__u64 mlock_used_bytes;
	__u32 tsc_khz;
	__u32 __reserved;
};

#define STALLCAP_INFO_SIZE_VER0	64

/** Number of log2 buckets of the histograms of struct stallcap_stats. */
#define STALLCAP_HIST_BUCKETS	24

/* struct stallcap_stats.flags (in) */
/**
 * STALLCAP_STATS_GLOBAL - return the module-wide counters, not the
 * session's.  Needs CAP_SYS_ADMIN or CAP_PERFMON in the opener's credentials
 * (else EPERM).
 */
#define STALLCAP_STATS_GLOBAL	(1U << 0)

/**
 * struct stallcap_stats - counters (STALLCAP_IOC_GET_STATS)
 * @size: in: size known to the caller; out: size known to the module
 * @flags: in: STALLCAP_STATS_* (the inputs: @size, @flags and @__reserved,
 *	which must be zero; the counters are output only)
 * @watches: watches that exist now (armed by threads and attached)
 * @armed: watches armed now
 * @stalls: stalls detected (deadlines missed / heartbeats stopped)
 * @samples: sample records written (first and repeated)
 * @stall_ends: stall-end records written
 * @deferred: deferred user-stack records written
 * @lost: records that did not fit in the ring (also in the control page)
 * @suppressed: stalls not reported because of the rate limit
 * @capture_local: captures from the timer interrupt on the thread's own CPU
 * @capture_nmi: captures by NMI on the thread's CPU
 * @capture_ipi: captures by IPI on the thread's CPU
 * @capture_blocked: captures of a thread that was not running
 * @migrate_retries: NMIs/IPIs that found another thread on the CPU
 * @lost_first: first samples of a stall among @lost
 * @lost_deferred: deferred user stacks never written (the thread exited
 *	first, or the ring was full); also among @lost
 * @attached: watches made by STALLCAP_IOC_ATTACH that exist now
 * @locked_bytes: ring and slot memory charged now (see EPERM at the top)
 * @locked_rlimit_bytes: the part of @locked_bytes that did not fit in the
 *	users' allowances, charged to pinned memory against RLIMIT_MEMLOCK
 * @__reserved: zero
 * @capture_cost_hist: capture time of each stall's first sample, from the
 *	capture's start to its record written in the ring; bucket i counts
 *	[2^i, 2^(i+1)) ns (bucket 0 also counts 0 ns; the last bucket counts
 *	everything above)
 * @lateness_hist: capture time minus deadline, buckets as above
 * @nmi_time_hist: time spent in NMI or IPI handler context per remote
 *	capture, buckets as above
 *
 * The invariant: stalls == first samples written + lost_first + suppressed.
 */
struct stallcap_stats {
	__u32 size;
	__u32 flags;
	__u64 watches;
	__u64 armed;
	__u64 stalls;
	__u64 samples;
	__u64 stall_ends;
	__u64 deferred;
	__u64 lost;
	__u64 suppressed;
	__u64 capture_local;
	__u64 capture_nmi;
	__u64 capture_ipi;
	__u64 capture_blocked;
	__u64 migrate_retries;
	__u64 lost_first;
	__u64 lost_deferred;
	__u64 attached;
	__u64 locked_bytes;
	__u64 locked_rlimit_bytes;
	__u64 __reserved;
	__u64 capture_cost_hist[STALLCAP_HIST_BUCKETS];
	__u64 lateness_hist[STALLCAP_HIST_BUCKETS];
	__u64 nmi_time_hist[STALLCAP_HIST_BUCKETS];
};

#define STALLCAP_STATS_SIZE_VER0	(8 + 19 * 8 + 3 * STALLCAP_HIST_BUCKETS * 8)

/* ------------------------------------------------------------------------
 * ioctl commands (matched by type, number and direction; see the top)
 * ------------------------------------------------------------------------
 */

/** STALLCAP_IOC_ARM: arm the calling thread's watch (struct stallcap_arm). */
#define STALLCAP_IOC_ARM	_IOW(STALLCAP_IOC_MAGIC, 0x01, struct stallcap_arm)
/**
 * STALLCAP_IOC_REARM: move the calling thread's (armed or disarmed) deadline
 * watch to now + arg nanoseconds; arg 0 means the timeout of its last ARM.
 * The argument is the value itself, not a pointer: the hot path copies
 * nothing.  Errors: ENOENT (no watch for this thread in this session),
 * ERANGE (as for ARM), EINVAL (a heartbeat or shared-deadline watch), ENOSPC
 * (a timeout under 1 ms beyond the user's max_fast_watches_per_user, as for
 * ARM).
 */
#define STALLCAP_IOC_REARM	_IO(STALLCAP_IOC_MAGIC, 0x02)
/**
 * STALLCAP_IOC_DISARM: stop the calling thread's watch (arg must be 0); it
 * stays registered for a cheap REARM.  A stall in progress ends.
 * Errors: ENOENT, EINVAL (arg not 0).
 */
#define STALLCAP_IOC_DISARM	_IO(STALLCAP_IOC_MAGIC, 0x03)
/**
 * STALLCAP_IOC_RELEASE: disarm and free the calling thread's watch (arg must
 * be 0).  Errors: ENOENT, EINVAL (arg not 0).
 */
#define STALLCAP_IOC_RELEASE	_IO(STALLCAP_IOC_MAGIC, 0x04)
#define STALLCAP_IOC_SET_CONFIG	_IOW(STALLCAP_IOC_MAGIC, 0x05, struct stallcap_config)
#define STALLCAP_IOC_GET_CONFIG	_IOWR(STALLCAP_IOC_MAGIC, 0x06, struct stallcap_config)
#define STALLCAP_IOC_GET_STATS	_IOWR(STALLCAP_IOC_MAGIC, 0x07, struct stallcap_stats)
#define STALLCAP_IOC_GET_INFO	_IOWR(STALLCAP_IOC_MAGIC, 0x08, struct stallcap_info)
/** STALLCAP_IOC_ATTACH: watch an unmodified process (struct stallcap_attach). */
#define STALLCAP_IOC_ATTACH	_IOW(STALLCAP_IOC_MAGIC, 0x09, struct stallcap_attach)
/**
 * STALLCAP_IOC_DETACH: end this session's attached watches of process arg
 * (its pid in the caller's namespace; 0: of every process).  Stalls in
 * progress end.  Errors: ENOENT (not attached).
 */
#define STALLCAP_IOC_DETACH	_IO(STALLCAP_IOC_MAGIC, 0x0a)

/* ------------------------------------------------------------------------
 * mmap: the ring and the watch slots
 * ------------------------------------------------------------------------
 *
 * offset STALLCAP_MMAP_RING: one control page (struct stallcap_ring_ctl)
 * followed by the data area of ring_bytes; map it MAP_SHARED with length
 * page size + ring_bytes (or just the control page), PROT_READ|PROT_WRITE
 * (the reader writes data_tail).  The first mmap creates the ring and
 * freezes the configuration.
 *
 * offset STALLCAP_MMAP_SLOTS: slots * 64 bytes of struct stallcap_slot,
 * MAP_SHARED, PROT_READ|PROT_WRITE.
 *
 * fork(): both mappings are VM_DONTCOPY (as after MADV_DONTFORK): a child
 * does not inherit them, so its stores can never move its parent's slots;
 * in the child the range is unmapped (a program that undoes this with
 * madvise(MADV_DOFORK) on them shares its slots with its children on
 * purpose).  The session file descriptor follows
 * the usual rules (libstallcap opens it O_CLOEXEC); a child or an exec'd
 * program that uses an inherited session may arm watches for its own
 * threads there (records carry its pid; the opener's limits apply) and may
 * map the ring, but never acts on another thread's watch.
 *
 * mmap errors: EINVAL (offset not one of these, length larger than the area,
 * not MAP_SHARED, or PROT_EXEC; a session opened O_RDONLY cannot be mapped
 * shared), ERANGE (the session's sizes exceed max_ring_kb, lowered since
 * they were set), ENOMEM, EPERM (the user's allowance plus RLIMIT_MEMLOCK,
 * see the top).  A failed mmap creates nothing, but for the rare ENOMEM
 * of the mapping itself (page tables) after the first mmap made the ring:
 * the ring then stays, as if mapped and unmapped.  read() and write() of
 * the device are not supported (EINVAL): records come through the ring.
 */
#define STALLCAP_MMAP_RING	0x0ULL
#define STALLCAP_MMAP_SLOTS	0x40000000ULL

/**
 * struct stallcap_ring_ctl - the ring's control page
 * @abi_version: STALLCAP_ABI_VERSION
 * @ctl_size: sizeof(struct stallcap_ring_ctl) as the module knows it
 * @data_offset: offset of the data area from the start of the mapping
 * @data_size: size of the data area (a power of two)
 * @pid_ns_inum: inode number of the pid namespace whose ids the records'
 *	ns_pid/ns_tid use (the session opener's), as in /proc/self/ns/pid
 * @data_head: written by the module: end of the reserved records
 * @lost: records dropped because the ring was full
 * @suppressed: stalls not reported because of the rate limit
 * @data_tail: written by the reader: start of the records not yet consumed
 * @__reserved0: zero
 * @__reserved1: zero
 * @__reserved2: zero
 *
 * data_head and data_tail grow without wrapping; a record at position p is
 * at data area offset p & (data_size - 1).  Records never straddle the end
 * of the data area (the module pads with STALLCAP_REC_PAD) and are 8-byte
 * aligned.
 *
 * Memory ordering (as perf's ring, with a busy bit as the BPF ring buffer):
 *
 *   module (writer)                       reader
 *   reserve [p, p + size): header with    head = smp_load_acquire(&data_head)
 *     STALLCAP_REC_F_BUSY, then           while (tail < head) {
 *   smp_store_release(&data_head, ..)  A    hdr = smp_load_acquire(rec)  B
 *   fill the record                         if (hdr.flags & BUSY) break;
 *   smp_store_release(&hdr.flags,         read the record, pairs with C
 *     flags without BUSY)               C   tail += hdr.size }
 *                                         smp_store_release(&data_tail, tail) D
 *   space check: smp_load_acquire(&data_tail), pairs with D
 *
 * A reader that finds a busy record stops there and retries later (the module
 * finishes it within microseconds, or within its NMI retry window).
 * poll()/epoll report EPOLLIN while records are pending.
 *
 * The ring is writable by every process that maps it, the watched program
 * included: a reader must treat its contents as untrusted (a head more than
 * data_size ahead of its tail, a misaligned or oversized record is
 * corruption) and copy a record before checking it.
 */
struct stallcap_ring_ctl {
	__u32 abi_version;
	__u32 ctl_size;
	__u64 data_offset;
	__u64 data_size;
	__u64 pid_ns_inum;
	__u64 __reserved0[4];
	/* cache line 1: written by the module */
	__u64 data_head;
	__u64 lost;
	__u64 suppressed;
	__u64 __reserved1[5];
	/* cache line 2: written by the reader */
	__u64 data_tail;
	__u64 __reserved2[7];
};

/* struct stallcap_slot.kind */
#define STALLCAP_SLOT_FREE		0
#define STALLCAP_SLOT_HEARTBEAT		1
#define STALLCAP_SLOT_DEADLINE		2
#define STALLCAP_SLOT_DEADLINE_TSC	3 /* its deadline in deadline_tsc */

/**
 * struct stallcap_slot - one heartbeat or shared-deadline watch, shared
 * with its thread
 * @beats: heartbeat progress counter; the owning thread increments it with
 *	a plain store (no atomic read-modify-write, no fence): the module only
 *	tests whether it moved since its previous check
 * @idle: heartbeat: 1 while the thread waits for work by design (e.g. in
 *	epoll_wait), 0 while it is busy; a plain store
 * @armed: 1 while the slot belongs to a watch (written by the module)
 * @tid: the owning thread, in the initial pid namespace (written by the
 *	module)
 * @kind: STALLCAP_SLOT_* (written by the module)
 * @deadline_ns: shared deadline: the absolute CLOCK_MONOTONIC time (as
 *	clock_gettime() returns it through the vDSO) by which the thread will
 *	next make progress; 0 while it is idle (waiting by design).  A plain
 *	store by the owning thread
 * @deadline_tsc: the same in time-stamp counter ticks, for a watch armed
 *	with STALLCAP_ARM_DEADLINE_TSC (kind STALLCAP_SLOT_DEADLINE_TSC), whose
 *	deadline_ns is unused: RDTSC + T * tsc_khz / 1000000, or 0 while
 *	idle.  The module converts it to CLOCK_MONOTONIC when it reads it (the
 *	kernel's calibrated rate: within parts per million of the interval)
 * @__reserved: zero
 *
 * Heartbeat contract: the thread stores beats + 1 whenever it makes progress
 * (e.g. once per event-loop iteration) and idle = 1 / idle = 0 around a wait.
 * Only the owning thread writes beats, idle and deadline_ns.  The module
 * checks the slot from a periodic timer (period threshold / 4) with
 * READ_ONCE: a store is seen within the check period because stores become
 * visible promptly (in order on x86); a compiler barrier (volatile or
 * relaxed atomic store) is enough on the thread's side.  A stall is reported
 * once beats has not moved and idle has been 0 for the threshold, so
 * detection comes between 1 and 1.25 thresholds after the last beat.
 * Marking idle counts as progress.
 *
 * Shared-deadline contract: before each busy period the thread stores
 * now + T (or any absolute deadline) into deadline_ns, and 0 before it waits
 * by design; no system call, no fence.  The module's timer expires at the
 * deadline it last read; if it then reads a later deadline it sleeps until
 * that one, so a deadline is detected when it passes, exactly as with
 * STALLCAP_IOC_REARM.  While deadline_ns is 0 the timer looks at the slot
 * every T, so a deadline stored at least T ahead after an idle period is
 * read before it passes and detected when it passes (one closer than T may
 * be seen up to T late).  The timer does not look sooner than the deadline
 * it last read: a deadline earlier than that one (a shorter budget than
 * the previous busy period's, stored before that one passed) is seen when
 * that one passes, late by the difference; store deadlines T ahead, or
 * STALLCAP_IOC_ARM again for a shorter T.
 * A deadline that the thread moved while its timer was reading the slot
 * counts from the value read: a store is visible to the module before the
 * deadline it stored passes unless the thread runs that store less than the
 * store-buffer latency (nanoseconds) before the old deadline.  A stall ends
 * when deadline_ns changes (seen at the next sample or within T/4).
 */
struct stallcap_slot {
	__u64 beats;
	__u32 idle;
	__u32 armed;
	__u32 tid;
	__u32 kind;
	__u64 deadline_ns;
	__u64 deadline_tsc;
	__u64 __reserved[3];
};

/* ------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------
 *
 * Every record starts with struct stallcap_rec_header; hdr.size covers the
 * whole record and is a multiple of 8.  Readers skip records of unknown type.
 *
 * A SAMPLE or USER_STACK record is struct stallcap_sample (the fixed part)
 * followed, from offset fixed_size, by sections up to hdr.size.  Each section
 * starts with struct stallcap_section, whose size (a multiple of 8, at least
 * 8) covers its header and payload.  A reader reads the fixed part as
 * min(fixed_size, sizeof its struct) bytes (fields it knows beyond
 * fixed_size read as zero), ignores fixed-part bytes it does not know, and
 * skips sections whose type it does not know.  Sections come in any order;
 * each type appears at most once, except STALLCAP_SEC_TASK.  Section types
 * 0x7f00..0x7fff are never assigned: the module writes such sections only
 * when loaded with its abi_test parameter, so readers can prove they skip.
 */

/* struct stallcap_rec_header.type */
#define STALLCAP_REC_PAD	1 /* skip: padding */
#define STALLCAP_REC_SAMPLE	2 /* struct stallcap_sample */
#define STALLCAP_REC_STALL_END	3 /* struct stallcap_stall_end */
#define STALLCAP_REC_USER_STACK	4 /* struct stallcap_sample, deferred user stack */
#define STALLCAP_REC_WATCH	5 /* struct stallcap_watch_event */

/* struct stallcap_rec_header.flags */
#define STALLCAP_REC_F_BUSY	(1U << 15) /* being written: stop here */

/**
 * struct stallcap_rec_header - common header of every record
 * @size: bytes of the record, header included, a multiple of 8
 * @type: STALLCAP_REC_*
 * @flags: STALLCAP_REC_F_*
 */
struct stallcap_rec_header {
	__u32 size;
	__u16 type;
	__u16 flags;
};

/* struct stallcap_sample.state and struct stallcap_sec_task.state */
#define STALLCAP_STATE_RUNNING		1 /* on a CPU */
#define STALLCAP_STATE_RUNNABLE		2 /* ready but preempted */
#define STALLCAP_STATE_SLEEPING		3 /* S: interruptible sleep */
#define STALLCAP_STATE_UNINTERRUPTIBLE	4 /* D: uninterruptible sleep */
#define STALLCAP_STATE_STOPPED		5 /* stopped or traced */
#define STALLCAP_STATE_EXITING		6

/* struct stallcap_sample.path: how it was captured */
#define STALLCAP_PATH_LOCAL	1 /* timer interrupt on the thread's CPU */
#define STALLCAP_PATH_NMI	2 /* NMI sent to the thread's CPU */
#define STALLCAP_PATH_IPI	3 /* IPI sent to the thread's CPU */
#define STALLCAP_PATH_BLOCKED	4 /* thread not running, read remotely */
#define STALLCAP_PATH_DEFERRED	5 /* thread's own context, return to user */

/* struct stallcap_sample.clock: what triggered it */
#define STALLCAP_CLOCK_WALL	1
#define STALLCAP_CLOCK_CPUTIME	2
#define STALLCAP_CLOCK_HEARTBEAT 3
#define STALLCAP_CLOCK_SHARED	4 /* shared-deadline slot */

/* struct stallcap_sample.origin: who made the watch */
#define STALLCAP_ORIGIN_ARM	1 /* the thread armed it (ARM) */
#define STALLCAP_ORIGIN_ATTACH	2 /* the module, for STALLCAP_IOC_ATTACH */

/* struct stallcap_sample.flags */
#define STALLCAP_SAMPLE_USER_MODE	(1U << 0) /* interrupted in user mode */
#define STALLCAP_SAMPLE_IRQS_OFF	(1U << 1) /* interrupts were disabled */
#define STALLCAP_SAMPLE_IN_HARDIRQ	(1U << 2)
#define STALLCAP_SAMPLE_IN_SOFTIRQ	(1U << 3)
/*
 * kernel frames left out: over 128, past a return trampoline of a task that
 * woke up, or where the unwinder could not go on (an interrupt's entry code
 * interrupted before it saved the registers)
 */
#define STALLCAP_SAMPLE_KSTACK_TRUNC	(1U << 4)
#define STALLCAP_SAMPLE_USTACK_TRUNC	(1U << 5) /* more than 128 user frames */
#define STALLCAP_SAMPLE_USTACK_FAULT	(1U << 6) /* FP walk hit unreadable memory */
#define STALLCAP_SAMPLE_COPY_PARTIAL	(1U << 7) /* raw copy shorter than asked */
#define STALLCAP_SAMPLE_KADDR_HIDDEN	(1U << 8) /* kernel frames left out */
#define STALLCAP_SAMPLE_RACED		(1U << 9) /* blocked thread woke or ran during capture */
#define STALLCAP_SAMPLE_MIGRATED	(1U << 10) /* retries exhausted, read remotely */
#define STALLCAP_SAMPLE_DEFER_PENDING	(1U << 11) /* a USER_STACK record will follow */
#define STALLCAP_SAMPLE_NO_USER		(1U << 12) /* no user context (kthread/exit) */
/* thread off CPU: its user stack was not readable at capture, only regs */
#define STALLCAP_SAMPLE_USTACK_REMOTE	(1U << 13)
/*
 * capture abandoned (progress or exit came first): no registers, no frames,
 * no deferred user stack
 */
#define STALLCAP_SAMPLE_ABANDONED	(1U << 14)
/* preemption was disabled (preempt count without hardirq/softirq/NMI) */
#define STALLCAP_SAMPLE_PREEMPT_OFF	(1U << 15)
/*
 * interrupted in user mode, but the thread ran on before its user stack was
 * copied (the copy is made just after the NMI/IPI handler): REGS only, no
 * USER_IPS or USER_STACK rather than bytes of a later moment.  Without
 * STALLCAP_FEAT_DEFER_USER also a kernel-mode sample whose user stack would
 * have been deferred.
 */
#define STALLCAP_SAMPLE_USTACK_MISSED	(1U << 16)
/*
 * runnable (STALLCAP_STATE_RUNNABLE) but held off every CPU by CPU bandwidth
 * control: its cgroup used its CPU quota for the period (cgroup v2 cpu.max,
 * v1 cpu.cfs_quota_us), so it waits for the next period whatever runs on
 * its CPU (STALLCAP_FEAT_THROTTLE)
 */
#define STALLCAP_SAMPLE_THROTTLED	(1U << 17)
/*
 * in a memory stall, as pressure stall information counts one (the kernel's
 * psi_memstall_enter() to _leave(), /proc/pressure/memory): direct or
 * cgroup reclaim, compaction, waiting for a page that was reclaimed while in
 * use (thrashing), or the sleep its cgroup's memory.high imposes on a task
 * over it (STALLCAP_FEAT_MEMSTALL).  Whatever the state: a running thread
 * may be reclaiming.
 */
#define STALLCAP_SAMPLE_MEMSTALL	(1U << 18)

#define STALLCAP_MAX_FRAMES		128
#define STALLCAP_MAX_USER_STACK		65536
/** Lock owners followed from a blocked thread (STALLCAP_SEC_TASK hops). */
#define STALLCAP_MAX_OWNER_HOPS		4

/**
 * struct stallcap_sample - one capture of a stalled thread (fixed part)
 * @hdr: type STALLCAP_REC_SAMPLE, or STALLCAP_REC_USER_STACK for a deferred
 *	user stack (then it has no kernel frames and @cookie links it to its
 *	kernel sample)
 * @fixed_size: bytes of this fixed part as the module wrote it: the first
 *	section starts at this offset
 * @flags: STALLCAP_SAMPLE_*
 * @stall_id: session-unique stall number, shared by all samples of a stall
 * @cookie: non-zero when a deferred user stack belongs to this sample
 * @user_tag: the watch's user_tag
 * @deadline_ns: CLOCK_MONOTONIC time the deadline passed; lateness of the
 *	capture is capture_ns - deadline_ns for the first sample
 * @capture_ns: CLOCK_MONOTONIC time of the capture
 * @capture_realtime_ns: CLOCK_REALTIME time of the capture (the same
 *	instant, read together): realtime of any CLOCK_MONOTONIC time t of
 *	this record is t + capture_realtime_ns - capture_ns
 * @timeout_ns: the watch's timeout (threshold)
 * @pid: thread group id, as seen from the initial pid namespace
 * @tid: thread id, likewise
 * @ns_pid: thread group id in the pid namespace of the session's opener
 *	(struct stallcap_ring_ctl.pid_ns_inum), 0 if not visible there
 * @ns_tid: thread id, likewise
 * @cpu: CPU the thread ran on (or last ran on)
 * @sample_index: 0 for the first sample of a stall, then 1, 2, ...
 * @state: STALLCAP_STATE_*
 * @path: STALLCAP_PATH_*
 * @clock: STALLCAP_CLOCK_*
 * @origin: STALLCAP_ORIGIN_*
 * @suppressed: stalls suppressed by the rate limit since the previous record
 * @migrate_retries: NMIs/IPIs that found another thread on the CPU
 * @__reserved0: zero
 * @comm: thread name
 *
 * Sections of a sample: STALLCAP_SEC_REGS (user registers at capture: where
 * it was interrupted in user mode, or those saved at its last kernel entry),
 * STALLCAP_SEC_KERNEL_IPS, STALLCAP_SEC_USER_IPS (frame 0 is the user ip),
 * STALLCAP_SEC_USER_STACK (and STALLCAP_SEC_INTERRUPTED_STACK, on an
 * alternate signal stack), STALLCAP_SEC_TIMES, STALLCAP_SEC_WAIT and
 * STALLCAP_SEC_TASK; any may be absent (no user context, kernel addresses
 * hidden from this reader, a kernel that cannot provide it).
 *
 * Deferred user stacks (STALLCAP_REC_USER_STACK): a sample whose user stack
 * could not be read at capture (STALLCAP_SAMPLE_USTACK_REMOTE or _FAULT, a
 * kernel-mode NMI/IPI sample whose thread kept interrupts off or left the
 * CPU before the copy that follows the handler, a kernel-mode sample whose
 * copy ended at a page that was not resident short of the end of the
 * stack's mapping as last seen, or whose mapping was not seen yet: a large
 * frame's untouched pages, see STALLCAP_SEC_USER_STACK_MORE; any
 * kernel-mode sample with STALLCAP_CFG_DEFER_USER, or a sample of a thread
 * interrupted in user mode: LOCAL, NMI or IPI) carries a @cookie and
 * STALLCAP_SAMPLE_DEFER_PENDING; just before the thread next returns to user
 * space, the module walks its user stack with faults allowed and writes one
 * USER_STACK record with the same @cookie (path STALLCAP_PATH_DEFERRED,
 * sections REGS, USER_IPS, USER_STACK, INTERRUPTED_STACK): all samples
 * taken during one kernel entry share that one record (one taken while the
 * thread is writing it may carry a later @capture_ns than the record's).  Its stack may exceed
 * user_stack_bytes: it copies the used stack up to the end of its mapping,
 * at most 64 KiB and a quarter of the ring; for a user-mode sample (read on
 * the way back to user space from the interrupt that took it, before
 * another user instruction) it copies user_stack_bytes of resident memory,
 * as that sample would have (STALLCAP_SAMPLE_COPY_PARTIAL when a page was
 * not resident).
 * If the thread exits first, no USER_STACK record comes and lost and
 * lost_deferred are incremented.  Without STALLCAP_FEAT_DEFER_USER (a
 * kernel that does not export task_work_add() to modules, as upstream
 * Linux's does not: nothing can run in a thread on its way back to user
 * space) a user-mode sample's user stack is copied at capture (by the
 * timer, or just after the NMI/IPI handler); the sample of a thread that
 * waits (path STALLCAP_PATH_BLOCKED, USTACK_REMOTE, not RUNNABLE: a
 * preempted thread runs again before most such reads) still gets a @cookie,
 * DEFER_PENDING and a USER_STACK record, read from outside the thread by a
 * worker while it is still off CPU (its @state is the thread's then, not
 * RUNNING), the same registers and stack as long as the thread has not run
 * since, else none (lost and lost_deferred incremented); samples taken
 * while that read is queued share it, later ones of the same wait get their
 * own.  Any other sample that could not read it keeps USTACK_REMOTE or
 * _FAULT, or gets USTACK_MISSED, and no USER_STACK record follows.
 */
struct stallcap_sample {
	struct stallcap_rec_header hdr;
	__u32 fixed_size;
	__u32 flags;
	__u64 stall_id;
	__u64 cookie;
	__u64 user_tag;
	__u64 deadline_ns;
	__u64 capture_ns;
	__u64 capture_realtime_ns;
	__u64 timeout_ns;
	__u32 pid;
	__u32 tid;
	__u32 ns_pid;
	__u32 ns_tid;
	__u32 cpu;
	__u32 sample_index;
	__u8 state;
	__u8 path;
	__u8 clock;
	__u8 origin;
	__u32 suppressed;
	__u32 migrate_retries;
	__u32 __reserved0;
	char comm[16];
};

/* struct stallcap_section.type */
#define STALLCAP_SEC_REGS	1 /* struct stallcap_sec_regs */
#define STALLCAP_SEC_KERNEL_IPS	2 /* __u64 ips[], innermost first */
#define STALLCAP_SEC_USER_IPS	3 /* __u64 ips[], innermost first */
#define STALLCAP_SEC_USER_STACK	4 /* struct stallcap_sec_user_stack */
#define STALLCAP_SEC_TIMES	5 /* struct stallcap_sec_times */
#define STALLCAP_SEC_WAIT	6 /* struct stallcap_sec_wait */
#define STALLCAP_SEC_TASK	7 /* struct stallcap_sec_task, repeatable */
#define STALLCAP_SEC_INTERRUPTED_STACK 8 /* struct stallcap_sec_user_stack */
#define STALLCAP_SEC_USER_STACK_MORE 9 /* struct stallcap_sec_user_stack, repeatable */
#define STALLCAP_SEC_SYSCALL	10 /* struct stallcap_sec_syscall */

/**
 * struct stallcap_section - header of a section of a sample
 * @size: bytes of the section, this header included, a multiple of 8
 * @type: STALLCAP_SEC_*
 * @flags: zero (reserved for per-section flags)
 *
 * STALLCAP_SEC_KERNEL_IPS and STALLCAP_SEC_USER_IPS: (size - 8) / 8
 * addresses follow the header.  The first kernel address is the interrupted
 * instruction of a running thread (or where a sleeping one switched out).
 */
struct stallcap_section {
	__u32 size;
	__u16 type;
	__u16 flags;
};

/**
 * struct stallcap_regs_x86_64 - user registers, STALLCAP_ARCH_X86_64
 * @ax: rax
 * @bx: rbx
 * @cx: rcx
 * @dx: rdx
 * @si: rsi
 * @di: rdi
 * @bp: rbp (the frame pointer where the code keeps one)
 * @sp: rsp
 * @r8: r8
 * @r9: r9
 * @r10: r10
 * @r11: r11
 * @r12: r12
 * @r13: r13
 * @r14: r14
 * @r15: r15
 * @ip: rip: the instruction the thread was at (or returns to)
 * @flags: rflags
 */
struct stallcap_regs_x86_64 {
	__u64 ax, bx, cx, dx, si, di, bp, sp;
	__u64 r8, r9, r10, r11, r12, r13, r14, r15;
	__u64 ip, flags;
};

/**
 * struct stallcap_regs_arm64 - user registers, STALLCAP_ARCH_ARM64
 * @x: x0..x30 (x29 is the frame pointer, x30 the link register)
 * @sp: stack pointer
 * @pc: program counter
 * @pstate: processor state
 */
struct stallcap_regs_arm64 {
	__u64 x[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};

/**
 * struct stallcap_sec_regs - STALLCAP_SEC_REGS: a tagged register set
 * @sec: type STALLCAP_SEC_REGS
 * @arch: STALLCAP_ARCH_*: which struct stallcap_regs_* follows
 * @regs_size: bytes of the register set that follows
 *
 * A reader that does not know @arch must not interpret the registers.
 */
struct stallcap_sec_regs {
	struct stallcap_section sec;
	__u32 arch;
	__u32 regs_size;
};

/* how far above the user stack pointer USER_STACK_MORE sections may reach */
#define STALLCAP_USER_STACK_REACH	(1024 * 1024)

/**
 * struct stallcap_sec_user_stack - STALLCAP_SEC_USER_STACK: raw user stack
 * @sec: type STALLCAP_SEC_USER_STACK
 * @start: user address of the first byte copied (the user stack pointer)
 * @len: bytes that follow (the section is padded to 8)
 * @__reserved: zero
 *
 * The same layout serves STALLCAP_SEC_INTERRUPTED_STACK.  When the user
 * stack pointer is on the thread's alternate signal stack (sigaltstack(2),
 * a handler of a signal with SA_ONSTACK running), STALLCAP_SEC_USER_STACK
 * ends at the top of that stack, and an INTERRUPTED_STACK section, if the
 * signal frame of the outermost handler on it was within the copy, holds
 * the stack that handler interrupted, from the stack pointer saved in that
 * frame (@start): the frames beyond the signal frame are there.  Both
 * sections together, headers included, stay within the record's room for
 * user_stack_bytes (STALLCAP_RECORD_MAX_BYTES).  Its bytes, as the first
 * section's, are of resident memory only (STALLCAP_SAMPLE_COPY_PARTIAL
 * when a page was not).
 *
 * STALLCAP_SEC_USER_STACK_MORE (USER_STACK records, none to several, in
 * address order): when the first section
 * ended at a page that was not resident (a frame whose large buffer was
 * never written to its end leaves such pages between the stack pointer and
 * the frame's return address), the resident runs found above it, within
 * the stack pointer's mapping and STALLCAP_USER_STACK_REACH bytes of the
 * stack pointer, each with its own @start.  They come out of the same room
 * as the sections above, headers included.  A reader that does not know
 * them skips them (the first section alone is what it had before).
 */
struct stallcap_sec_user_stack {
	struct stallcap_section sec;
	__u64 start;
	__u32 len;
	__u32 __reserved;
};

/* struct stallcap_sec_times.valid: bit STALLCAP_TIME_x set = field provided */
#define STALLCAP_TIME_ON_CPU		0
#define STALLCAP_TIME_USER		1
#define STALLCAP_TIME_SYSTEM		2
#define STALLCAP_TIME_RUN_DELAY		3
#define STALLCAP_TIME_NVCSW		4
#define STALLCAP_TIME_NIVCSW		5
#define STALLCAP_TIME_MIN_FLT		6
#define STALLCAP_TIME_MAJ_FLT		7
#define STALLCAP_TIME_IOWAIT		8
#define STALLCAP_TIME_BLKIO_DELAY	9
#define STALLCAP_TIME_SWAPIN_DELAY	10
#define STALLCAP_TIME_RECLAIM_DELAY	11
#define STALLCAP_TIME_COMPACT_DELAY	12
#define STALLCAP_TIME_THRASHING_DELAY	13
#define STALLCAP_TIME_CPU_IRQS		14
#define STALLCAP_TIME_CPU_SOFTIRQS	15
#define STALLCAP_TIME_CPU_IRQ_TIME	16
#define STALLCAP_TIME_CPU_SOFTIRQ_TIME	17
#define STALLCAP_TIME_STEAL		18
#define STALLCAP_TIME_SLEEP		19

/**
 * struct stallcap_sec_times - STALLCAP_SEC_TIMES: where the time went
 * @sec: type STALLCAP_SEC_TIMES
 * @valid: bit STALLCAP_TIME_<field> set when the running kernel provides
 *	that field; a field whose bit is clear is 0 and means "unknown", never
 *	"none"
 * @since_ns: CLOCK_MONOTONIC start of the interval: when the watch was armed
 *	(first sample of a stall) or the previous sample; the interval ends at
 *	the sample's capture_ns.  All other fields are amounts over it
 * @on_cpu_ns: time the thread ran.  It and @run_delay_ns come from the
 *	scheduler's clock, which can drift from CLOCK_MONOTONIC (in a VM by a
 *	few percent): both are clamped so that their sum never exceeds the
 *	interval; for a thread that never slept in the interval (runnable at
 *	both ends, no voluntary switch) the sum is the interval
 * @user_ns: of which in user mode (as the kernel accounts it: ticks or
 *	context tracking)
 * @system_ns: of which in the kernel
 * @run_delay_ns: time runnable but waiting for a CPU (schedstats/sched_info)
 * @nvcsw: voluntary context switches
 * @nivcsw: involuntary context switches (preemptions)
 * @min_flt: minor page faults
 * @maj_flt: major page faults
 * @iowait_ns: time blocked in I/O wait (delay accounting: block I/O)
 * @blkio_delay_ns: delay accounting: waiting for block I/O
 * @swapin_delay_ns: delay accounting: swapping in
 * @reclaim_delay_ns: delay accounting: direct memory reclaim
 * @compact_delay_ns: delay accounting: memory compaction
 * @thrashing_delay_ns: delay accounting: thrashing.  Each delay field is
 *	at most the interval (the kernel adds a wait when it ends, from a start
 *	it recorded, and some kernels record it wrongly: clamped)
 * @cpu_irqs: hard interrupts taken on the thread's CPU
 * @cpu_softirqs: softirqs run on the thread's CPU
 * @cpu_irq_ns: time the thread's CPU spent in hard interrupts
 * @cpu_softirq_ns: time the thread's CPU spent in softirqs
 * @steal_ns: time stolen by the hypervisor from the thread's CPU
 * @sleep_ns: time blocked (sleeping or uninterruptible): the interval
 *	less @on_cpu_ns and @run_delay_ns; 0 when the thread never slept
 * @__reserved: zero
 *
 * A reader reads min(sec.size, its sizeof) bytes; later fields may be added.
 */
struct stallcap_sec_times {
	struct stallcap_section sec;
	__u64 valid;
	__u64 since_ns;
	__u64 on_cpu_ns;
	__u64 user_ns;
	__u64 system_ns;
	__u64 run_delay_ns;
	__u64 nvcsw;
	__u64 nivcsw;
	__u64 min_flt;
	__u64 maj_flt;
	__u64 iowait_ns;
	__u64 blkio_delay_ns;
	__u64 swapin_delay_ns;
	__u64 reclaim_delay_ns;
	__u64 compact_delay_ns;
	__u64 thrashing_delay_ns;
	__u64 cpu_irqs;
	__u64 cpu_softirqs;
	__u64 cpu_irq_ns;
	__u64 cpu_softirq_ns;
	__u64 steal_ns;
	__u64 sleep_ns;
	__u64 __reserved[4];
};

/* struct stallcap_sec_wait.kind and struct stallcap_sec_task.wait_kind */
#define STALLCAP_WAIT_NONE	0
#define STALLCAP_WAIT_FUTEX	1 /* futex (glibc mutex, condvar, ...) */
#define STALLCAP_WAIT_PI_FUTEX	2 /* priority-inheritance futex */
#define STALLCAP_WAIT_MUTEX	3 /* kernel mutex / rt_mutex */
#define STALLCAP_WAIT_RWSEM	4 /* kernel rw-semaphore */
#define STALLCAP_WAIT_SEMAPHORE	5 /* kernel semaphore */
#define STALLCAP_WAIT_OTHER	6 /* known blocked, on something else */

/* struct stallcap_sec_wait.flags */
#define STALLCAP_WAIT_F_CYCLE		(1U << 0) /* the owner chain loops: deadlock */
#define STALLCAP_WAIT_F_TRUNCATED	(1U << 1) /* more than STALLCAP_MAX_OWNER_HOPS */
#define STALLCAP_WAIT_F_OWNER_UNKNOWN	(1U << 2) /* owner not knowable */
#define STALLCAP_WAIT_F_OWNER_GONE	(1U << 3) /* owner exited or is exiting */
/*
 * the futex is a thread's exit word (pthread_join(): set_tid_address(),
 * CLONE_CHILD_CLEARTID), which the kernel clears when that thread exits:
 * hop 1 is that thread, whose exit the waiter waits for
 */
#define STALLCAP_WAIT_F_JOIN		(1U << 4)

/**
 * struct stallcap_sec_wait - STALLCAP_SEC_WAIT: what a blocked thread waits on
 * @sec: type STALLCAP_SEC_WAIT
 * @kind: STALLCAP_WAIT_*
 * @flags: STALLCAP_WAIT_F_*
 * @object: the futex's user address, or the kernel lock's address (0 when
 *	kernel addresses are hidden from this reader)
 * @nr_hops: STALLCAP_SEC_TASK sections of role STALLCAP_ROLE_OWNER that
 *	follow the chain: hop 1 holds @object, hop 2 holds what hop 1 waits
 *	on, ...
 * @__reserved: zero
 */
struct stallcap_sec_wait {
	struct stallcap_section sec;
	__u32 kind;
	__u32 flags;
	__u64 object;
	__u32 nr_hops;
	__u32 __reserved;
};

/**
 * struct stallcap_sec_syscall - STALLCAP_SEC_SYSCALL: the system call the
 *	thread is inside
 * @sec: type STALLCAP_SEC_SYSCALL
 * @nr: its number in the x86-64 table (with __X32_SYSCALL_BIT for the x32
 *	ABI's); a call that restart_syscall resumes is restart_syscall's
 * @__reserved: zero
 * @args: its six arguments as the thread passed them (%rdi, %rsi, %rdx,
 *	%r10, %r8, %r9), whatever their number: a descriptor, a user
 *	address, flags
 *
 * Follows a sample's STALLCAP_SEC_REGS section (and is shown to the same
 * readers) when those registers are the thread's entry into a 64-bit
 * system call that has not returned: the thread runs or sleeps inside it
 * (or is stopped at its entry by a tracer).  A thread interrupted in user
 * mode, in a page fault or inside a 32-bit call (int 0x80) has no such
 * section, nor has a USER_STACK record.
 */
struct stallcap_sec_syscall {
	struct stallcap_section sec;
	__u32 nr;
	__u32 __reserved;
	__u64 args[6];
};

/* struct stallcap_sec_task.role */
#define STALLCAP_ROLE_RUNNER	1 /* ran on the stalled thread's CPU instead */
#define STALLCAP_ROLE_OWNER	2 /* holds what the thread (or previous hop) waits on */

/* struct stallcap_sec_task.flags */
#define STALLCAP_TASK_F_KTHREAD		(1U << 0)
#define STALLCAP_TASK_F_IDLE		(1U << 1) /* the CPU's idle task */
#define STALLCAP_TASK_F_IN_HARDIRQ	(1U << 2) /* its CPU was in a hard interrupt */
#define STALLCAP_TASK_F_IN_SOFTIRQ	(1U << 3) /* its CPU was in a softirq */
#define STALLCAP_TASK_F_USER_HIDDEN	(1U << 4) /* reader may not trace it: no user stack */
#define STALLCAP_TASK_F_KADDR_HIDDEN	(1U << 5) /* kernel frames left out */
/* runnable, held off by its cgroup's CPU quota (as STALLCAP_SAMPLE_THROTTLED) */
#define STALLCAP_TASK_F_THROTTLED	(1U << 6)
/* in a memory stall (as STALLCAP_SAMPLE_MEMSTALL) */
#define STALLCAP_TASK_F_MEMSTALL	(1U << 7)

/**
 * struct stallcap_sec_task - STALLCAP_SEC_TASK: another task that explains
 * the stall
 * @sec: type STALLCAP_SEC_TASK
 * @fixed_size: bytes of this struct as the module wrote it; the frames
 *	follow at this offset from the section's start
 * @role: STALLCAP_ROLE_*
 * @hop: for STALLCAP_ROLE_OWNER, 1 for the owner of the thread's lock, 2 for
 *	the owner of what hop 1 waits on, ...; for STALLCAP_ROLE_RUNNER, 0
 *	when it ran on the stalled thread's CPU, N when it ran instead of
 *	owner hop N (a runnable owner preempted on its CPU)
 * @flags: STALLCAP_TASK_F_*
 * @pid: thread group id (initial pid namespace)
 * @tid: thread id (initial pid namespace)
 * @ns_pid: thread group id in the opener's pid namespace, 0 if not visible
 * @ns_tid: thread id likewise
 * @cpu: its CPU (or last CPU)
 * @state: STALLCAP_STATE_*
 * @policy: scheduling policy (SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2,
 *	SCHED_BATCH 3, SCHED_IDLE 5, SCHED_DEADLINE 6)
 * @__reserved0: zero
 * @__reserved1: zero
 * @prio: real-time priority (1..99) for SCHED_FIFO/RR, else the nice value
 * @wait_kind: STALLCAP_WAIT_* this task itself waits on (owners)
 * @__reserved2: zero
 * @wait_object: the object it waits on, as struct stallcap_sec_wait.object
 * @comm: its name
 * @nr_kernel_frames: kernel addresses after the struct
 * @nr_user_frames: user addresses after the kernel ones
 * @__reserved3: zero
 */
struct stallcap_sec_task {
	struct stallcap_section sec;
	__u16 fixed_size;
	__u16 role;
	__u16 hop;
	__u16 __reserved0;
	__u32 flags;
	__u32 pid;
	__u32 tid;
	__u32 ns_pid;
	__u32 ns_tid;
	__u32 cpu;
	__u8 state;
	__u8 policy;
	__u16 __reserved1;
	__s32 prio;
	__u32 wait_kind;
	__u32 __reserved2;
	__u64 wait_object;
	char comm[16];
	__u16 nr_kernel_frames;
	__u16 nr_user_frames;
	__u32 __reserved3;
};

#define STALLCAP_SECTION_IPS_MAX	(8 + STALLCAP_MAX_FRAMES * 8)
#define STALLCAP_SECTION_TASK_MAX	(sizeof(struct stallcap_sec_task) + \
					 2 * STALLCAP_MAX_FRAMES * 8)
/**
 * STALLCAP_RECORD_MAX_BYTES() - an upper bound of a sample record's size
 * @user_stack_bytes: struct stallcap_config.user_stack_bytes
 *
 * Fixed part, registers (room for the arm64 set, which on x86-64 also
 * holds the system call section), both frame lists, the stack copy, the
 * time breakdown, the wait section and one task section for the runner
 * plus one per owner hop, each with both frame lists.
 */
#define STALLCAP_RECORD_MAX_BYTES(user_stack_bytes) \
	(sizeof(struct stallcap_sample) + \
	 sizeof(struct stallcap_sec_regs) + 34 * 8 + \
	 2 * STALLCAP_SECTION_IPS_MAX + \
	 sizeof(struct stallcap_sec_user_stack) + (user_stack_bytes) + \
	 sizeof(struct stallcap_sec_times) + \
	 sizeof(struct stallcap_sec_wait) + \
	 (1 + STALLCAP_MAX_OWNER_HOPS) * STALLCAP_SECTION_TASK_MAX)

/**
 * struct stallcap_stall_end - the thread made progress again
 * @hdr: type STALLCAP_REC_STALL_END
 * @fixed_size: bytes of this struct as the module wrote it (readers ignore
 *	bytes beyond what they know and read missing fields as zero)
 * @origin: STALLCAP_ORIGIN_*
 * @stall_id: the stall that ended
 * @user_tag: the watch's user_tag
 * @deadline_ns: when the stall began (the missed deadline)
 * @end_ns: CLOCK_MONOTONIC time progress was seen (re-arm, disarm, beat,
 *	slot store, return to the wait call, release or exit)
 * @end_realtime_ns: CLOCK_REALTIME at the same instant as @end_ns
 * @pid: thread group id (initial pid namespace)
 * @tid: thread id
 * @ns_pid: thread group id in the opener's pid namespace (0: not visible)
 * @ns_tid: thread id likewise
 * @nr_samples: samples taken during the stall (written or lost)
 * @__reserved: zero
 *
 * The stall lasted end_ns - deadline_ns beyond its deadline.
 */
struct stallcap_stall_end {
	struct stallcap_rec_header hdr;
	__u32 fixed_size;
	__u32 origin;
	__u64 stall_id;
	__u64 user_tag;
	__u64 deadline_ns;
	__u64 end_ns;
	__u64 end_realtime_ns;
	__u32 pid;
	__u32 tid;
	__u32 ns_pid;
	__u32 ns_tid;
	__u32 nr_samples;
	__u32 __reserved;
};

/* struct stallcap_watch_event.event */
#define STALLCAP_WATCH_STARTED	1 /* the module now watches this thread */
#define STALLCAP_WATCH_ENDED	2 /* no longer (exit, exec, detach) */
/*
 * This thread (a new thread of an attached process), or this process
 * (@tid == @pid: one that STALLCAP_ATTACH_INHERIT follows), could not be
 * watched: the watch limit (ENOSPC), memory, too many new processes at once,
 * or an undumpable (set-user-ID) program.  Its stalls are not reported.
 */
#define STALLCAP_WATCH_MISSED	3
/*
 * The thread's first busy period began: it returned from a wait call the
 * attach counts (or was inside one at the attach), and from now on a stall
 * of it is seen (STALLCAP_FEAT_WATCH_BUSY).  Once per watch, after its
 * STALLCAP_WATCH_STARTED (a thread that went busy while its watch was being
 * made is told at the announce).  A watch that ends without it belonged to a
 * thread that never waited so: a thread that only computes, a pool's
 * worker fed through a condition variable (without STALLCAP_ATTACH_PARK),
 * a process forked to do one job (a parallel query's worker).
 */
#define STALLCAP_WATCH_BUSY	4

/**
 * struct stallcap_watch_event - a watch made by STALLCAP_IOC_ATTACH began,
 * saw its thread's first busy period, or ended
 * @hdr: type STALLCAP_REC_WATCH
 * @fixed_size: bytes of this struct as the module wrote it
 * @event: STALLCAP_WATCH_*
 * @time_ns: CLOCK_MONOTONIC time of the event
 * @realtime_ns: CLOCK_REALTIME at the same instant
 * @timeout_ns: the watch's deadline
 * @user_tag: the attach's user_tag
 * @pid: thread group id (initial pid namespace)
 * @tid: thread id
 * @ns_pid: thread group id in the opener's pid namespace (0: not visible)
 * @ns_tid: thread id likewise
 * @comm: thread name
 */
struct stallcap_watch_event {
	struct stallcap_rec_header hdr;
	__u32 fixed_size;
	__u32 event;
	__u64 time_ns;
	__u64 realtime_ns;
	__u64 timeout_ns;
	__u64 user_tag;
	__u32 pid;
	__u32 tid;
	__u32 ns_pid;
	__u32 ns_tid;
	char comm[16];
};

#endif /* _UAPI_LINUX_STALLCAP_H */
