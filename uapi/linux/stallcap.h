/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * stallcap: catch the moment a thread misses its deadline and save its stack.
 *
 * A thread opens /dev/stallcap (a *session*), arms a deadline or a heartbeat
 * watch for itself, and the module captures where the thread is when the
 * deadline passes: registers, kernel stack, user stack (frame-pointer walk
 * plus a raw copy of the top of the user stack for DWARF unwinding) or, for a
 * thread that is not running, its wait state and kernel stack.  Records go to
 * a ring buffer that the session maps with mmap().
 *
 * Conventions of this ABI:
 *  - every argument struct starts with __u32 size, the size the caller knows
 *    (STALLCAP_*_SIZE_VER0 or larger).  A caller may pass a larger struct
 *    than the module knows if the unknown tail is zero (else E2BIG), or a
 *    smaller one down to VER0 (missing fields read as zero);
 *  - fields named __reserved* must be zero (else EINVAL);
 *  - unknown flag bits are rejected with EINVAL;
 *  - a failing ioctl changes nothing.
 *
 * Errors common to every ioctl:
 *  EFAULT  the argument pointer is not readable/writable
 *  EINVAL  size below VER0, unknown flag, non-zero reserved field
 *  E2BIG   size larger than known and the unknown tail is not zero, or
 *          larger than a page
 *  ENOMEM  out of kernel memory; or creating the session's ring and beat
 *          slots (at the first ARM, mmap, or SET_CONFIG with
 *          STALLCAP_CFG_GLOBAL) would take the caller's locked memory
 *          (locked_vm, where they are charged) over RLIMIT_MEMLOCK;
 *          CAP_IPC_LOCK is exempt.  The memory is also charged to the
 *          caller's memory cgroup.
 *  ENOTTY  unknown command
 */
#ifndef _UAPI_LINUX_STALLCAP_H
#define _UAPI_LINUX_STALLCAP_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define STALLCAP_DEVICE		"/dev/stallcap"
#define STALLCAP_ABI_VERSION	1

/* ioctl type; checked free in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define STALLCAP_IOC_MAGIC	0xB9

/* ------------------------------------------------------------------------
 * Watches
 * ------------------------------------------------------------------------
 */

/* struct stallcap_arm.flags */
/** @STALLCAP_ARM_ABSOLUTE: timeout_ns is an absolute CLOCK_MONOTONIC time. */
#define STALLCAP_ARM_ABSOLUTE	(1U << 0)
/**
 * @STALLCAP_ARM_CPUTIME: count only the time the thread spends on a CPU
 * (Seastar's semantics): a preempted or sleeping thread is not blamed.
 * Not valid with STALLCAP_ARM_ABSOLUTE or STALLCAP_ARM_HEARTBEAT.
 */
#define STALLCAP_ARM_CPUTIME	(1U << 1)
/**
 * @STALLCAP_ARM_HEARTBEAT: a heartbeat watch: timeout_ns is the threshold
 * without progress; the thread marks progress in its beat slot (see below)
 * instead of re-arming.  On success the ioctl returns the slot index.
 */
#define STALLCAP_ARM_HEARTBEAT	(1U << 2)
#define STALLCAP_ARM_FLAGS_ALL	(STALLCAP_ARM_ABSOLUTE | STALLCAP_ARM_CPUTIME | \
				 STALLCAP_ARM_HEARTBEAT)

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
 *
 * Returns 0, or the beat slot index for STALLCAP_ARM_HEARTBEAT.
 * Errors:
 *  ERANGE  timeout below the module's min_deadline_us, above 1 hour, or an
 *          absolute deadline already in the past by more than 1 hour; or
 *          the session's configuration (its defaults included) is out of
 *          the module's ranges when the ring is created (max_ring_kb
 *          lowered below the default ring size)
 *  ENOSPC  the user's max_watches_per_user watches exist already, or
 *          (heartbeat) no free beat slot in this session, or the user's
 *          max_fast_watches_per_user watches with a timer period under
 *          1 ms (a timeout, or a heartbeat's timeout / 4) are armed already
 *          (CAP_SYS_RESOURCE of the opener's thread is exempt)
 *  ESRCH   the calling thread is exiting
 */
struct stallcap_arm {
	__u32 size;
	__u32 flags;
	__u64 timeout_ns;
	__u64 user_tag;
	__u64 __reserved;
};

#define STALLCAP_ARM_SIZE_VER0	32

/* ------------------------------------------------------------------------
 * Session configuration
 * ------------------------------------------------------------------------
 */

/* struct stallcap_config.flags */
/**
 * @STALLCAP_CFG_DEFER_USER: always complete the user stack in the thread's
 * own context on its next return to user space (a STALLCAP_REC_USER_STACK
 * record), not only when the capture-time copy was incomplete.
 */
#define STALLCAP_CFG_DEFER_USER	(1U << 0)
/**
 * @STALLCAP_CFG_GLOBAL: system-wide reader: this session's ring also receives
 * the records of every other session.  Needs CAP_SYS_ADMIN in the
 * credentials that opened the file (else EPERM), whoever makes the call.
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
 * @beat_slots: number of heartbeat slots (multiple of 64, at most 4096).
 *	Default 64.
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
 * takes its default.  Errors:
 *  EBUSY   ring_bytes, user_stack_bytes or beat_slots change after the
 *          ring was created (by the first ARM or mmap)
 *  ERANGE  a value out of the ranges above
 *  EPERM   STALLCAP_CFG_GLOBAL without CAP_SYS_ADMIN (of the opener)
 * STALLCAP_IOC_GET_CONFIG fills the struct with the values in force (defaults
 * resolved); on return @size is the size the module knows and
 * min(size passed, size known) bytes were written.
 */
struct stallcap_config {
	__u32 size;
	__u32 flags;
	__u32 ring_bytes;
	__u32 user_stack_bytes;
	__u32 beat_slots;
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

/**
 * struct stallcap_info - what the module supports (STALLCAP_IOC_GET_INFO)
 * @size: in: size known to the caller; out: size known to the module
 * @abi_version: STALLCAP_ABI_VERSION of the module
 * @features: STALLCAP_FEAT_*
 * @min_deadline_ns: smallest timeout accepted (module parameter)
 * @max_ring_bytes: largest ring_bytes accepted (module parameter)
 * @max_watches_per_user: watches one user may hold (module parameter)
 * @__reserved: zero
 */
struct stallcap_info {
	__u32 size;
	__u32 abi_version;
	__u64 features;
	__u64 min_deadline_ns;
	__u32 max_ring_bytes;
	__u32 max_watches_per_user;
	__u64 __reserved[4];
};

#define STALLCAP_INFO_SIZE_VER0	64

/** Number of log2 buckets of the capture cost and lateness histograms. */
#define STALLCAP_HIST_BUCKETS	24

/* struct stallcap_stats.flags (in) */
/**
 * @STALLCAP_STATS_GLOBAL: return the module-wide counters, not the session's.
 * They tell about every user's activity: like STALLCAP_CFG_GLOBAL, this
 * needs CAP_SYS_ADMIN in the credentials that opened the file (else EPERM).
 */
#define STALLCAP_STATS_GLOBAL	(1U << 0)

/**
 * struct stallcap_stats - counters (STALLCAP_IOC_GET_STATS)
 * @size: in: size known to the caller; out: size known to the module
 * @flags: in: STALLCAP_STATS_*
 * @watches: watches that exist now
 * @armed: watches armed now
 * @stalls: stalls detected (deadlines missed / heartbeats stopped)
 * @samples: sample records written (first and repeated)
 * @stall_ends: stall-end records written
 * @deferred: deferred user-stack records written
 * @lost: records that did not fit in the ring (also in the ring's control page)
 * @suppressed: stalls not reported because of the rate limit
 * @capture_local: captures from the timer interrupt on the thread's own CPU
 * @capture_nmi: captures by NMI on the thread's CPU
 * @capture_ipi: captures by IPI on the thread's CPU
 * @capture_blocked: captures of a thread that was not running
 * @migrate_retries: NMIs/IPIs that found another thread on the CPU
 * @__reserved: zero
 * @capture_cost_hist: capture time, bucket i counts [2^i, 2^(i+1)) ns
 *	(bucket 0 also counts 0 ns; the last bucket counts everything above)
 * @lateness_hist: capture time minus deadline, buckets as above
 *
 * The invariant: stalls == first samples + lost first samples + suppressed.
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
	__u64 __reserved[6];
	__u64 capture_cost_hist[STALLCAP_HIST_BUCKETS];
	__u64 lateness_hist[STALLCAP_HIST_BUCKETS];
};

#define STALLCAP_STATS_SIZE_VER0	(8 + 19 * 8 + 2 * STALLCAP_HIST_BUCKETS * 8)

/* ------------------------------------------------------------------------
 * ioctl commands
 * ------------------------------------------------------------------------
 */

/** STALLCAP_IOC_ARM: arm the calling thread's watch (struct stallcap_arm). */
#define STALLCAP_IOC_ARM	_IOW(STALLCAP_IOC_MAGIC, 0x01, struct stallcap_arm)
/**
 * STALLCAP_IOC_REARM: move the calling thread's (armed or disarmed) deadline
 * watch to now + arg nanoseconds; arg 0 means the timeout of its last ARM.
 * The argument is the value itself, not a pointer: the hot path copies
 * nothing.  Errors: ENOENT (no watch for this thread in this session),
 * ERANGE (as for ARM), EINVAL (a heartbeat watch), ENOSPC (a timeout under
 * 1 ms beyond the user's max_fast_watches_per_user, as for ARM).
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

/* ------------------------------------------------------------------------
 * mmap: the ring and the beat slots
 * ------------------------------------------------------------------------
 *
 * offset STALLCAP_MMAP_RING: one control page (struct stallcap_ring_ctl)
 * followed by the data area of ring_bytes; map it MAP_SHARED with length
 * page size + ring_bytes (or just the control page), PROT_READ|PROT_WRITE
 * (the reader writes data_tail).  The first mmap freezes the configuration.
 *
 * offset STALLCAP_MMAP_BEATS: beat_slots * 64 bytes of struct
 * stallcap_beat_slot, MAP_SHARED, PROT_READ|PROT_WRITE.
 *
 * mmap errors: EINVAL (offset not one of these, length larger than the area,
 * not MAP_SHARED, or PROT_EXEC), ENOMEM.  A failed mmap creates nothing.
 */
#define STALLCAP_MMAP_RING	0x0ULL
#define STALLCAP_MMAP_BEATS	0x40000000ULL

/**
 * struct stallcap_ring_ctl - the ring's control page
 * @abi_version: STALLCAP_ABI_VERSION
 * @ctl_size: sizeof(struct stallcap_ring_ctl) as the module knows it
 * @data_offset: offset of the data area from the start of the mapping
 * @data_size: size of the data area (a power of two)
 * @data_head: written by the module: end of the reserved records
 * @data_tail: written by the reader: start of the records not yet consumed
 * @lost: records dropped because the ring was full
 * @suppressed: stalls not reported because of the rate limit
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
 * poll()/epoll report EPOLLIN while data_tail != data_head.
 */
struct stallcap_ring_ctl {
	__u32 abi_version;
	__u32 ctl_size;
	__u64 data_offset;
	__u64 data_size;
	__u64 __reserved0[5];
	/* cache line 1: written by the module */
	__u64 data_head;
	__u64 lost;
	__u64 suppressed;
	__u64 __reserved1[5];
	/* cache line 2: written by the reader */
	__u64 data_tail;
	__u64 __reserved2[7];
};

/**
 * struct stallcap_beat_slot - one heartbeat watch, shared with its thread
 * @beats: progress counter; the owning thread increments it with a plain
 *	store (no atomic read-modify-write, no fence): the module only tests
 *	whether it moved since its previous check
 * @idle: 1 while the thread waits for work by design (e.g. in epoll_wait),
 *	0 while it is busy; a plain store
 * @armed: 1 while the slot belongs to a heartbeat watch (written by module)
 * @tid: the owning thread (written by the module)
 * @__reserved: zero
 *
 * Heartbeat contract: the thread stores beats + 1 whenever it makes progress
 * (e.g. once per event-loop iteration) and idle = 1 / idle = 0 around a wait.
 * Only the owning thread writes beats and idle.  The module checks the slot
 * from a periodic timer (period threshold / 4) with READ_ONCE: a store is
 * seen within the check period because x86 stores become visible in order
 * and promptly; a compiler barrier (volatile or relaxed atomic store) is
 * enough on the thread's side.  A stall is reported once beats has not moved
 * and idle has been 0 for the threshold, so detection comes between 1 and
 * 1.25 thresholds after the last beat.  Marking idle counts as progress.
 */
struct stallcap_beat_slot {
	__u64 beats;
	__u32 idle;
	__u32 armed;
	__u32 tid;
	__u32 __reserved0;
	__u64 __reserved[5];
};

/* ------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------
 */

/* struct stallcap_rec_header.type */
#define STALLCAP_REC_PAD	1 /* skip: padding */
#define STALLCAP_REC_SAMPLE	2 /* struct stallcap_sample */
#define STALLCAP_REC_STALL_END	3 /* struct stallcap_stall_end */
#define STALLCAP_REC_USER_STACK	4 /* struct stallcap_sample, deferred user stack */

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

/* struct stallcap_sample.state: where the thread was */
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

/* struct stallcap_sample.flags */
#define STALLCAP_SAMPLE_USER_MODE	(1U << 0) /* interrupted in user mode */
#define STALLCAP_SAMPLE_IRQS_OFF	(1U << 1) /* interrupts were disabled */
#define STALLCAP_SAMPLE_IN_HARDIRQ	(1U << 2)
#define STALLCAP_SAMPLE_IN_SOFTIRQ	(1U << 3)
#define STALLCAP_SAMPLE_KSTACK_TRUNC	(1U << 4) /* more than 128 kernel frames */
#define STALLCAP_SAMPLE_USTACK_TRUNC	(1U << 5) /* more than 128 user frames */
#define STALLCAP_SAMPLE_USTACK_FAULT	(1U << 6) /* FP walk hit unreadable memory */
#define STALLCAP_SAMPLE_COPY_PARTIAL	(1U << 7) /* raw copy shorter than asked */
#define STALLCAP_SAMPLE_KADDR_HIDDEN	(1U << 8) /* kernel addresses zeroed */
#define STALLCAP_SAMPLE_RACED		(1U << 9) /* blocked thread ran during capture */
#define STALLCAP_SAMPLE_MIGRATED	(1U << 10) /* retries exhausted, read remotely */
#define STALLCAP_SAMPLE_DEFER_PENDING	(1U << 11) /* a USER_STACK record will follow */
#define STALLCAP_SAMPLE_NO_USER		(1U << 12) /* no user context (kthread/exit) */
/* thread off CPU: its user stack was not readable at capture, only regs */
#define STALLCAP_SAMPLE_USTACK_REMOTE	(1U << 13)
/* capture abandoned (progress or exit came first): no frames */
#define STALLCAP_SAMPLE_ABANDONED	(1U << 14)

#define STALLCAP_MAX_FRAMES		128
#define STALLCAP_MAX_USER_STACK		65536

/**
 * struct stallcap_user_regs - user registers at capture (x86-64)
 *
 * The thread's user-mode registers: where it was interrupted in user mode,
 * or those saved at its last kernel entry.  Enough for a DWARF unwinder
 * (ip, sp and the callee-saved registers are the minimum).
 */
struct stallcap_user_regs {
	__u64 ax, bx, cx, dx, si, di, bp, sp;
	__u64 r8, r9, r10, r11, r12, r13, r14, r15;
	__u64 ip, flags;
};

/**
 * struct stallcap_sample - one capture of a stalled thread
 * @hdr: type STALLCAP_REC_SAMPLE, or STALLCAP_REC_USER_STACK for a deferred
 *	user stack (then nr_kernel_frames is 0 and @cookie links it to its
 *	kernel sample)
 * @stall_id: session-unique stall number, shared by all samples of a stall
 * @cookie: non-zero when a deferred user stack belongs to this sample
 * @user_tag: the watch's user_tag
 * @deadline_ns: CLOCK_MONOTONIC time the deadline passed; lateness of the
 *	capture is capture_ns - deadline_ns for the first sample
 * @capture_ns: CLOCK_MONOTONIC time of the capture
 * @timeout_ns: the watch's timeout (threshold)
 * @pid: thread group id (as seen from the initial pid namespace)
 * @tid: thread id
 * @cpu: CPU the thread ran on (or last ran on)
 * @sample_index: 0 for the first sample of a stall, then 1, 2, ...
 * @state: STALLCAP_STATE_*
 * @path: STALLCAP_PATH_*
 * @clock: STALLCAP_CLOCK_*
 * @__reserved0: zero
 * @flags: STALLCAP_SAMPLE_*
 * @suppressed: stalls suppressed by the rate limit since the previous record
 * @migrate_retries: NMIs/IPIs that found another thread on the CPU
 * @comm: thread name
 * @regs: user registers (see struct stallcap_user_regs)
 * @nr_kernel_frames: kernel return addresses that follow the fixed part
 * @nr_user_frames: user return addresses that follow the kernel ones
 *	(frame 0 is regs.ip)
 * @stack_size: bytes of raw user stack that follow the frames, copied from
 *	@stack_start upwards
 * @stack_start: user address of the first byte copied (regs.sp)
 *
 * Followed by __u64 kernel_ips[nr_kernel_frames], __u64
 * user_ips[nr_user_frames], then stack_size bytes (padded to 8).
 *
 * Deferred user stacks (STALLCAP_REC_USER_STACK): a sample whose user stack
 * could not be read at capture (STALLCAP_SAMPLE_USTACK_REMOTE or _FAULT, or
 * any kernel-mode sample with STALLCAP_CFG_DEFER_USER) carries a @cookie and
 * STALLCAP_SAMPLE_DEFER_PENDING; just before the thread next returns to user
 * space, the module walks its user stack with faults allowed and writes one
 * USER_STACK record with the same @cookie (path STALLCAP_PATH_DEFERRED):
 * all samples taken during one kernel entry share that one record.  Its
 * stack_size may exceed user_stack_bytes: it copies the used stack up to the
 * end of its mapping, at most 64 KiB and a quarter of the ring.  If the
 * thread exits first, no USER_STACK record comes and lost is incremented.
 */
struct stallcap_sample {
	struct stallcap_rec_header hdr;
	__u64 stall_id;
	__u64 cookie;
	__u64 user_tag;
	__u64 deadline_ns;
	__u64 capture_ns;
	__u64 timeout_ns;
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u32 sample_index;
	__u8 state;
	__u8 path;
	__u8 clock;
	__u8 __reserved0;
	__u32 flags;
	__u32 suppressed;
	__u32 migrate_retries;
	char comm[16];
	struct stallcap_user_regs regs;
	__u16 nr_kernel_frames;
	__u16 nr_user_frames;
	__u32 stack_size;
	__u64 stack_start;
};

/** Largest record for a given user_stack_bytes. */
#define STALLCAP_RECORD_MAX_BYTES(user_stack_bytes) \
	(sizeof(struct stallcap_sample) + 2 * STALLCAP_MAX_FRAMES * 8 + \
	 (user_stack_bytes))

/**
 * struct stallcap_stall_end - the thread made progress again
 * @hdr: type STALLCAP_REC_STALL_END
 * @stall_id: the stall that ended
 * @user_tag: the watch's user_tag
 * @deadline_ns: when the stall began (the missed deadline)
 * @end_ns: CLOCK_MONOTONIC time progress was seen (re-arm, disarm, beat,
 *	release or exit)
 * @pid: thread group id
 * @tid: thread id
 * @nr_samples: samples taken during the stall (written or lost)
 * @__reserved: zero
 *
 * The stall lasted end_ns - deadline_ns beyond its deadline.
 */
struct stallcap_stall_end {
	struct stallcap_rec_header hdr;
	__u64 stall_id;
	__u64 user_tag;
	__u64 deadline_ns;
	__u64 end_ns;
	__u32 pid;
	__u32 tid;
	__u32 nr_samples;
	__u32 __reserved;
};

#endif /* _UAPI_LINUX_STALLCAP_H */
