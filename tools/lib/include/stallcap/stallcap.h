/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libstallcap: the client library of stallcap.
 *
 * A session is one open /dev/stallcap.  Threads of a process may share a
 * session: arming acts on the calling thread's own watch, so the watch calls
 * hold no library state and are safe from any thread.  The ring has one
 * consumer at a time: stallcap_ring_consume() serialises callers of the same
 * session with a lock; the bare struct stallcap_ring API has no lock and is
 * for a single consumer.
 *
 * Every function returning int returns 0 (or a count) on success and a
 * negative errno on failure; errno is left as the failing call set it.
 */
#ifndef STALLCAP_STALLCAP_H
#define STALLCAP_STALLCAP_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <linux/types.h>
#include <linux/stallcap.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STALLCAP_API __attribute__((visibility("default")))

/** Environment variable naming an inherited session fd (STALLCAP_OPEN_ENV). */
#define STALLCAP_FD_ENV		"STALLCAP_FD"

/**
 * STALLCAP_OPEN_ENV - use the session whose fd STALLCAP_FD names when it is
 * set (as `stallcap record -- CMD` passes it to CMD); the configuration
 * argument is then ignored, the owner of the session configured it.  Without
 * STALLCAP_FD in the environment a new session is opened.  The inherited fd
 * is marked close-on-exec and the session works on a close-on-exec
 * duplicate: programs this one executes do not inherit the session.
 */
#define STALLCAP_OPEN_ENV	(1U << 0)
/**
 * STALLCAP_OPEN_NOOP - when the module is absent (no /dev/stallcap: ENOENT,
 * ENODEV, ENXIO), return a no-op session instead of failing: every call on
 * it succeeds and does nothing (watches are not armed, the slot marks go to
 * a private slot nobody reads, the ring is empty, counters and
 * configuration read as zero, stallcap_ring_wait() just waits), so call
 * sites need no "if (stallcap)".  stallcap_session_is_noop() tells, e.g. to
 * log it once; stallcap_session_fd() gives -EINVAL.  Other open errors
 * (EACCES...) are still returned.
 */
#define STALLCAP_OPEN_NOOP	(1U << 1)

struct stallcap_session;

/**
 * stallcap_session_open() - open a session
 * @sp: receives the session
 * @cfg: configuration to apply (NULL: module defaults); size must be set
 * @flags: STALLCAP_OPEN_*
 */
STALLCAP_API int stallcap_session_open(struct stallcap_session **sp,
				       const struct stallcap_config *cfg,
				       unsigned int flags);
/*
 * stallcap_session_open() opens the device O_CLOEXEC: an exec'd program
 * never inherits a session unless its fd is handed over on purpose (clear
 * FD_CLOEXEC in the child, as `stallcap record -- CMD` does).
 */

/**
 * stallcap_session_adopt() - wrap an open session fd, which the session owns
 * @sp: receives the session
 * @fd: an open /dev/stallcap fd
 *
 * Sets FD_CLOEXEC on @fd.
 */
STALLCAP_API int stallcap_session_adopt(struct stallcap_session **sp, int fd);
/** stallcap_session_close() - unmap, close and free; no other call may run. */
STALLCAP_API void stallcap_session_close(struct stallcap_session *s);
/** stallcap_session_fd() - the session fd, e.g. to pass to `stallcap record --fd`. */
STALLCAP_API int stallcap_session_fd(const struct stallcap_session *s);
/** stallcap_session_is_noop() - 1 for a no-op session (STALLCAP_OPEN_NOOP), else 0. */
STALLCAP_API int stallcap_session_is_noop(const struct stallcap_session *s);

STALLCAP_API int stallcap_session_set_config(struct stallcap_session *s,
					     const struct stallcap_config *cfg);
STALLCAP_API int stallcap_session_get_config(struct stallcap_session *s,
					     struct stallcap_config *cfg);
STALLCAP_API int stallcap_session_get_info(struct stallcap_session *s,
					   struct stallcap_info *info);
/** @flags: STALLCAP_STATS_GLOBAL for the module-wide counters. */
STALLCAP_API int stallcap_session_get_stats(struct stallcap_session *s,
					    struct stallcap_stats *st,
					    unsigned int flags);

/* ------------------------------------------------------------------------
 * Watches of the calling thread
 * ------------------------------------------------------------------------
 */

/**
 * stallcap_watch_arm() - arm (or move) the calling thread's deadline watch
 * @s: the session
 * @timeout_ns: relative timeout, or absolute deadline with STALLCAP_ARM_ABSOLUTE
 * @user_tag: copied into every record of this watch
 * @flags: STALLCAP_ARM_ABSOLUTE, STALLCAP_ARM_CPUTIME
 */
STALLCAP_API int stallcap_watch_arm(struct stallcap_session *s, __u64 timeout_ns,
				    __u64 user_tag, unsigned int flags);
/** stallcap_watch_rearm() - deadline at now + timeout_ns (0: last ARM's timeout). */
STALLCAP_API int stallcap_watch_rearm(struct stallcap_session *s, __u64 timeout_ns);
STALLCAP_API int stallcap_watch_disarm(struct stallcap_session *s);
/** stallcap_watch_release() - disarm and free the calling thread's watch. */
STALLCAP_API int stallcap_watch_release(struct stallcap_session *s);

/* ------------------------------------------------------------------------
 * Slot watches: heartbeat and shared deadline (no system call to re-arm)
 * ------------------------------------------------------------------------
 *
 * Both kinds live in a struct stallcap_slot of the session's slot area,
 * which the library maps on first use.  The marks below follow the contract
 * of struct stallcap_slot in the uapi header: only the owning thread writes
 * its slot, with plain (relaxed atomic) stores; no read-modify-write
 * instruction, no fence, no system call.  The slot mapping is not inherited
 * by a forked child (VM_DONTCOPY): a child arms its own watches.
 */

/**
 * stallcap_heartbeat_attach() - make the calling thread's watch a heartbeat
 * @s: the session
 * @threshold_ns: time without progress that counts as a stall
 * @user_tag: copied into every record of this watch
 * @slotp: receives the thread's slot, valid until the session closes
 *
 * Maps the slot area on first use.  Returns the slot index (>= 0).
 */
STALLCAP_API int stallcap_heartbeat_attach(struct stallcap_session *s,
					   __u64 threshold_ns, __u64 user_tag,
					   struct stallcap_slot **slotp);

/** stallcap_beat() - the thread made progress (e.g. one event-loop iteration). */
static inline void stallcap_beat(struct stallcap_slot *slot)
{
	__u64 beats = __atomic_load_n(&slot->beats, __ATOMIC_RELAXED);

	__atomic_store_n(&slot->beats, beats + 1, __ATOMIC_RELAXED);
}

/** stallcap_beat_idle() - the thread is about to wait for work by design. */
static inline void stallcap_beat_idle(struct stallcap_slot *slot)
{
	__atomic_store_n(&slot->idle, 1U, __ATOMIC_RELAXED);
}

/** stallcap_beat_busy() - the wait is over: busy again, the window restarts. */
static inline void stallcap_beat_busy(struct stallcap_slot *slot)
{
	__atomic_store_n(&slot->idle, 0U, __ATOMIC_RELAXED);
	stallcap_beat(slot);
}

/**
 * stallcap_deadline_arm() - make the calling thread's watch a shared deadline
 * @s: the session
 * @timeout_ns: the threshold T (sampling intervals); the first deadline is
 *	now + T, or @timeout_ns itself with STALLCAP_ARM_ABSOLUTE
 * @user_tag: copied into every record of this watch
 * @flags: 0, STALLCAP_ARM_ABSOLUTE, STALLCAP_ARM_DEADLINE_TSC or both
 * @slotp: receives the thread's slot, valid until the session closes
 *
 * Arms a STALLCAP_ARM_SHARED_DEADLINE watch: afterwards the thread moves its
 * deadline with stallcap_deadline_set() / _in() and marks its waits with
 * stallcap_deadline_idle(), all plain stores.  With STALLCAP_ARM_DEADLINE_TSC
 * it uses stallcap_deadline_tsc_in() / _tsc_idle() instead (x86; -EOPNOTSUPP
 * where the module cannot use the counter: fall back to the first kind).
 * Maps the slot area on first use.  Returns the slot index (>= 0).
 */
STALLCAP_API int stallcap_deadline_arm(struct stallcap_session *s, __u64 timeout_ns,
				       __u64 user_tag, unsigned int flags,
				       struct stallcap_slot **slotp);

/**
 * stallcap_deadline_set() - the next deadline is @abs_ns (CLOCK_MONOTONIC)
 * @slot: the thread's slot (stallcap_deadline_arm())
 * @abs_ns: the deadline, CLOCK_MONOTONIC nanoseconds
 *
 * One relaxed store.  The module's timer finds the moved deadline when it
 * fires and sleeps until the new one: detection stays exact.
 */
static inline void stallcap_deadline_set(struct stallcap_slot *slot, __u64 abs_ns)
{
	__atomic_store_n(&slot->deadline_ns, abs_ns, __ATOMIC_RELAXED);
}

/**
 * stallcap_deadline_in() - the next deadline is @rel_ns from now
 * @slot: the thread's slot (stallcap_deadline_arm())
 * @rel_ns: nanoseconds from now
 *
 * clock_gettime(CLOCK_MONOTONIC) (the vDSO: no system call) and one relaxed
 * store.
 */
static inline void stallcap_deadline_in(struct stallcap_slot *slot, __u64 rel_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	stallcap_deadline_set(slot, (__u64)ts.tv_sec * 1000000000ULL +
				    (__u64)ts.tv_nsec + rel_ns);
}

/** stallcap_deadline_idle() - the thread waits for work by design: no deadline. */
static inline void stallcap_deadline_idle(struct stallcap_slot *slot)
{
	stallcap_deadline_set(slot, 0);
}

/**
 * stallcap_tsc_ticks() - @ns in time-stamp counter ticks, for
 * stallcap_deadline_tsc_in()
 * @s: the session
 * @ns: nanoseconds
 *
 * Asks the module once per call (an ioctl): convert T once, at start-up.
 * Returns 0 where the module takes no deadline in ticks
 * (STALLCAP_FEAT_DEADLINE_TSC clear, or no module: a no-op session).
 */
STALLCAP_API __u64 stallcap_tsc_ticks(struct stallcap_session *s, __u64 ns);

#if defined(__x86_64__) || defined(__i386__)
/**
 * stallcap_deadline_tsc_in() - the next deadline is @ticks from now
 * @slot: the thread's slot (stallcap_deadline_arm(), STALLCAP_ARM_DEADLINE_TSC)
 * @ticks: stallcap_tsc_ticks() of the interval
 *
 * For a watch armed with STALLCAP_ARM_DEADLINE_TSC: one RDTSC and one
 * relaxed store, the cheapest re-arm there is (no vDSO clock arithmetic).
 * RDTSC is not ordered with the thread's earlier instructions: the deadline
 * may start a few nanoseconds early, never late.
 */
static inline void stallcap_deadline_tsc_in(struct stallcap_slot *slot, __u64 ticks)
{
	__atomic_store_n(&slot->deadline_tsc, __builtin_ia32_rdtsc() + ticks,
			 __ATOMIC_RELAXED);
}

/** stallcap_deadline_tsc_idle() - as stallcap_deadline_idle(), for a TSC watch. */
static inline void stallcap_deadline_tsc_idle(struct stallcap_slot *slot)
{
	__atomic_store_n(&slot->deadline_tsc, 0ULL, __ATOMIC_RELAXED);
}
#endif

/* ------------------------------------------------------------------------
 * The ring
 * ------------------------------------------------------------------------
 */

/**
 * struct stallcap_ring - a view of a mapped ring (control page + data area)
 * @ctl: the control page
 * @data: the data area
 * @mask: data_size - 1
 */
struct stallcap_ring {
	struct stallcap_ring_ctl *ctl;
	unsigned char *data;
	__u64 mask;
};

/**
 * typedef stallcap_record_fn - called for each complete record, PAD excluded
 * @rec: a private copy of the record (8-byte aligned, rec->size bytes, its
 *	header checked against the ring), valid only during the call.  Never
 *	the shared bytes: a writer changing them meanwhile cannot reach it.
 *	It may go to stallcap_sample_parse() and friends as it is.
 * @ctx: the caller's argument, as given to stallcap_ring_read()
 *
 * Return 0 to go on, a positive value to stop after this record, a negative
 * errno to stop before it (it stays in the ring) and fail with that value.
 */
typedef int (*stallcap_record_fn)(const struct stallcap_rec_header *rec, void *ctx);

/**
 * stallcap_ring_init() - a ring view over a mapping of @len bytes
 * @r: receives the view
 * @map: the mapping (control page, then data area), 8-byte aligned
 * @len: its bytes
 *
 * Checks the control page (ABI version, power-of-two data area of at least
 * 8 bytes inside the mapping; -EINVAL for a map not 8-byte aligned).  Works
 * on any memory laid out as the module's ring.
 */
STALLCAP_API int stallcap_ring_init(struct stallcap_ring *r, void *map, size_t len);

/**
 * stallcap_ring_read() - deliver the complete records, then release them
 * @r: the ring (stallcap_ring_init())
 * @fn: called with each record
 * @ctx: passed to @fn
 *
 * Follows the ordering of the uapi header: acquire data_head, acquire each
 * header, stop at a BUSY record, skip PAD, release data_tail once at the end.
 * Each header is read once from the shared ring, checked, and the record
 * copied privately before the callback sees it.  Single consumer: no lock.
 * Returns the records delivered or a negative errno: -EBADMSG for a
 * malformed header (the ring stays at that record) or a control page out of
 * bounds (data_head more than data_size ahead of data_tail, or a data_tail
 * not 8-byte aligned: nothing is read), -ENOMEM.
 */
STALLCAP_API int stallcap_ring_read(struct stallcap_ring *r, stallcap_record_fn fn,
				    void *ctx);

/** stallcap_ring_pending() - bytes between data_tail and data_head. */
STALLCAP_API __u64 stallcap_ring_pending(const struct stallcap_ring *r);

/** stallcap_ring_map() - map the session's ring (freezes its configuration). */
STALLCAP_API int stallcap_ring_map(struct stallcap_session *s);
/** stallcap_session_ring() - the mapped ring, or NULL before stallcap_ring_map(). */
STALLCAP_API struct stallcap_ring *stallcap_session_ring(struct stallcap_session *s);
/** stallcap_ring_consume() - stallcap_ring_read() under the session's lock. */
STALLCAP_API int stallcap_ring_consume(struct stallcap_session *s,
				       stallcap_record_fn fn, void *ctx);
/** stallcap_ring_wait() - poll() the session fd for records; 1 ready, 0 timeout. */
STALLCAP_API int stallcap_ring_wait(struct stallcap_session *s, int timeout_ms);
/** stallcap_ring_counters() - lost and suppressed counters of the control page. */
STALLCAP_API int stallcap_ring_counters(struct stallcap_session *s, __u64 *lost,
					__u64 *suppressed);

/* ------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------
 */

/**
 * struct stallcap_task_view - one STALLCAP_SEC_TASK section
 * @t: its fixed part, copied: fields the module did not write read as zero
 * @kernel_ips: @nr_kernel kernel addresses, innermost first
 * @user_ips: @nr_user user addresses, innermost first
 * @nr_kernel: how many @kernel_ips
 * @nr_user: how many @user_ips
 */
struct stallcap_task_view {
	struct stallcap_sec_task t;
	const __u64 *kernel_ips;
	const __u64 *user_ips;
	unsigned int nr_kernel;
	unsigned int nr_user;
};

/** Task sections a sample view holds (the module writes 1 + owner hops). */
#define STALLCAP_VIEW_MAX_TASKS	(2 + STALLCAP_MAX_OWNER_HOPS)

/**
 * struct stallcap_sample_view - the parts of a SAMPLE or USER_STACK record
 * @s: the fixed part, copied: min(fixed_size, sizeof) bytes of the record,
 *	fields beyond what the module wrote read as zero
 * @regs_arch: STALLCAP_ARCH_* of the register set, 0 if the record has none
 * @regs_size: bytes of the register set at @regs
 * @regs: the register set, NULL if none; interpret it only through
 *	stallcap_sample_regs_x86_64() / _arm64() (they check the arch tag)
 * @kernel_ips: @nr_kernel kernel addresses, innermost first (NULL if none)
 * @user_ips: @nr_user user addresses (frame-pointer walk), innermost first
 * @stack: @stack_size bytes of raw user stack, copied from @stack_start up
 * @stack_start: the user address of @stack's first byte
 * @stack_size: the bytes at @stack
 * @nr_kernel: how many @kernel_ips
 * @nr_user: how many @user_ips
 * @has_times: the record has a STALLCAP_SEC_TIMES section, copied to @times
 *	(fields the module did not write read as zero); see
 *	stallcap_sample_times()
 * @has_wait: likewise for STALLCAP_SEC_WAIT and @wait
 * @times: the STALLCAP_SEC_TIMES section, when @has_times
 * @wait: the STALLCAP_SEC_WAIT section, when @has_wait
 * @tasks: the STALLCAP_SEC_TASK sections in record order, @nr_tasks of them
 *	(extra ones beyond STALLCAP_VIEW_MAX_TASKS are counted in
 *	@nr_tasks_dropped)
 * @nr_tasks: how many @tasks
 * @nr_tasks_dropped: task sections past STALLCAP_VIEW_MAX_TASKS, left out
 * @nr_unknown: sections of a type this library does not know (skipped)
 *
 * The pointers point into the buffer given to stallcap_sample_parse(): the
 * view (and any copy of it) is valid while that buffer is.
 */
struct stallcap_sample_view {
	struct stallcap_sample s;
	__u32 regs_arch;
	__u32 regs_size;
	const void *regs;
	const __u64 *kernel_ips;
	const __u64 *user_ips;
	const void *stack;
	__u64 stack_start;
	unsigned int nr_kernel;
	unsigned int nr_user;
	__u32 stack_size;
	unsigned int nr_unknown;
	int has_times;
	int has_wait;
	struct stallcap_sec_times times;
	struct stallcap_sec_wait wait;
	unsigned int nr_tasks;
	unsigned int nr_tasks_dropped;
	struct stallcap_task_view tasks[STALLCAP_VIEW_MAX_TASKS];
};

/**
 * stallcap_sample_parse() - check a SAMPLE or USER_STACK record and split it
 * @rec: the record, 8-byte aligned, in memory the caller owns (a ring is
 *	writable by the watched program: copy a record out of it first)
 * @len: bytes available at @rec
 * @v: receives the view
 *
 * A pure function of the buffer: it reads it once per field, writes nothing
 * but @v, and keeps no state.  The fixed part is read as min(fixed_size,
 * sizeof(struct stallcap_sample)) bytes; sections are walked from
 * fixed_size to hdr.size with bounds checks; unknown section types and
 * unknown fixed-part bytes are skipped.  Returns 0, or -EBADMSG when a size
 * or count does not fit the record (then @v is undefined), -EINVAL for a
 * NULL or misaligned argument.
 */
STALLCAP_API int stallcap_sample_parse(const void *rec, size_t len,
				       struct stallcap_sample_view *v);

/**
 * stallcap_sample_interrupted_stack() - a record's STALLCAP_SEC_INTERRUPTED_STACK
 * @rec: a SAMPLE or USER_STACK record, as for stallcap_sample_parse()
 * @len: bytes available at @rec
 * @bytes: receives the stack bytes (a pointer into @rec)
 * @start: receives the user address of the first byte
 * @size: receives how many bytes there are
 *
 * A sample taken in a signal handler on the alternate signal stack has,
 * besides the view's stack (that stack, up to its top), the stack the
 * handler interrupted (see the uapi header): an unwinder reads both.  It is
 * not in struct stallcap_sample_view, whose layout this library keeps.
 * Returns 1 and fills the outputs when the record has one, 0 when not, or
 * stallcap_sample_parse()'s error.
 */
STALLCAP_API int stallcap_sample_interrupted_stack(const void *rec, size_t len,
						   const void **bytes, __u64 *start,
						   __u32 *size);

/**
 * stallcap_sample_stack_more() - a record's STALLCAP_SEC_USER_STACK_MORE
 *	sections, one by one
 * @rec: a SAMPLE or USER_STACK record, as for stallcap_sample_parse()
 * @len: bytes available at @rec
 * @index: which one: 0 for the first (lowest address), then 1, 2, ...
 * @bytes: receives the stack bytes (a pointer into @rec)
 * @start: receives the user address of the first byte
 * @size: receives how many bytes there are
 *
 * A user-mode sample whose stack copy ended at a page that was not resident
 * has the resident runs found above that gap (see the uapi header): an
 * unwinder reads them with the view's stack.  Not in struct
 * stallcap_sample_view, whose layout this library keeps.  Returns 1 and
 * fills the outputs when the record has an @index-th one, 0 when not, or
 * stallcap_sample_parse()'s error.
 */
STALLCAP_API int stallcap_sample_stack_more(const void *rec, size_t len, unsigned int index,
					    const void **bytes, __u64 *start, __u32 *size);

/**
 * stallcap_sample_syscall() - a record's STALLCAP_SEC_SYSCALL section
 * @rec: a SAMPLE or USER_STACK record, as for stallcap_sample_parse()
 * @len: bytes available at @rec
 * @sys: receives the section: min(its size, sizeof(*sys)) bytes, the rest
 *	zero
 *
 * The system call the thread was inside when it was captured (its number
 * and arguments; see the uapi header).  Not in struct stallcap_sample_view,
 * whose layout this library keeps.  Returns 1 and fills @sys when the
 * record has one, 0 when not, or stallcap_sample_parse()'s error.
 */
STALLCAP_API int stallcap_sample_syscall(const void *rec, size_t len,
					 struct stallcap_sec_syscall *sys);

/** stallcap_sample_regs_x86_64() - the registers if they are x86-64's, else NULL. */
STALLCAP_API const struct stallcap_regs_x86_64 *
stallcap_sample_regs_x86_64(const struct stallcap_sample_view *v);
/** stallcap_sample_regs_arm64() - the registers if they are arm64's, else NULL. */
STALLCAP_API const struct stallcap_regs_arm64 *
stallcap_sample_regs_arm64(const struct stallcap_sample_view *v);

/** stallcap_sample_times() - the sample's time breakdown, or NULL. */
static inline const struct stallcap_sec_times *
stallcap_sample_times(const struct stallcap_sample_view *v)
{
	return v->has_times ? &v->times : NULL;
}

/** stallcap_sample_wait() - what the blocked thread waits on, or NULL. */
static inline const struct stallcap_sec_wait *
stallcap_sample_wait(const struct stallcap_sample_view *v)
{
	return v->has_wait ? &v->wait : NULL;
}

/**
 * stallcap_stall_end_parse() - check a STALL_END record and copy it
 * @rec: the record, as for stallcap_sample_parse()
 * @len: bytes available at @rec
 * @end: receives min(fixed_size, sizeof) bytes, the rest zero
 */
STALLCAP_API int stallcap_stall_end_parse(const void *rec, size_t len,
					  struct stallcap_stall_end *end);

/**
 * stallcap_watch_event_parse() - check a STALLCAP_REC_WATCH record and copy it
 * @rec: the record, as for stallcap_sample_parse()
 * @len: bytes available at @rec
 * @ev: receives min(fixed_size, sizeof) bytes, the rest zero
 */
STALLCAP_API int stallcap_watch_event_parse(const void *rec, size_t len,
					    struct stallcap_watch_event *ev);

/* ------------------------------------------------------------------------
 * In-process reporting: the application writes its stalls into its own log
 * ------------------------------------------------------------------------
 *
 * Every line starts with "stallcap: ".  A stall is one block, as Seastar
 * prints a reactor stall into its log:
 *
 *   stallcap: stall 7 of tid 1234 (reactor), tag 0x2a: 5.00 ms past its 20.00 ms deadline so far, blocked (sleeping): waits on a futex 0x7f3a4c0008c0 held by tid 1240 (worker)
 *   stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1
 *   stallcap:     kernel #0  0xffffffff81234567
 *   stallcap:     user stack completed on return to user space (deferred)
 *   stallcap:     user   #0  0x000055d4c2a1b2c3  handle_tick+0x1c (/usr/bin/server)
 *   stallcap:   sample 1 at +25.00 ms, blocked (sleeping), cpu 1: same stack as sample 0
 *   stallcap:   samples 2-4 at +45.00 to +325.00 ms, blocked (sleeping): same stack as sample 0 (x3)
 *   stallcap: stall 7 of tid 1234 ended: 331.20 ms over its deadline, 6 samples, 1 lost
 *
 * - the header, written with the stall's first sample: the stall's id, the
 *   thread (its id in the opener's pid namespace, its name), the watch's
 *   user_tag, how far past its deadline the first sample was taken, the
 *   deadline (the watch's timeout), the thread's state, and, when the record
 *   says why, a verdict: what it waits on and who holds it (", deadlock"
 *   when the owner chain loops), what ran instead of it, or where most of
 *   the time since it was armed went: "runnable X of Y ms" (waiting for a
 *   CPU), "blocked X of Y ms", or "on cpu X of Y ms" (on its CPU for at
 *   least half of it);
 * - each sample: its index, how far past the deadline, state, cpu, then its
 *   kernel frames as the record's addresses and its user frames named with
 *   dladdr() ("fn+0x1c (/path/lib.so)"); a deferred user stack (a
 *   USER_STACK record) is merged into the samples it completes ("user stack
 *   completed on return to user space (deferred)"; "user stack deferred,
 *   not received" if it never came);
 * - a sample with the same stack (and state) as the sample before it in its
 *   stall is one line, "same stack as sample N"; consecutive ones are one
 *   line "samples A-B ...: same stack as sample N (xK)", written when a
 *   different stack or the stall's end comes, at the end of each
 *   stallcap_report() call, or by stallcap_reporter_flush();
 * - the end: how long the stall lasted past its deadline, the samples the
 *   module took, and how many of them never reached the reporter ("lost":
 *   the ring was full; left out for a stall the reporter did not follow,
 *   e.g. one that began before it).
 *
 * When the lines of another stall (or a watch's line) came in between, a
 * block goes on after "stallcap: stall 7 of tid 1234 (reactor), continued".
 * A stall whose samples were all lost is its end line alone.  The reporter's
 * memory is bounded: it follows 32 stalls at once (the least recently seen
 * is let go, its count kept for its end) and keeps per stall a few counters
 * and the hash of the last stack written, never its samples.
 *
 * The library depends on libc alone: dladdr() knows dynamic symbols only
 * (link the program with -rdynamic to name its own functions, static ones
 * stay "+0xoff (file)"), and no kernel symbol, DWARF or inline frame is
 * looked up.  For all of that, hand the session to the tool (`stallcap
 * report --fd N`, or record and report later).
 */

/**
 * stallcap_format_record() - one record as text, as snprintf() does
 * @rec: a record as stallcap_record_fn gets it (SAMPLE, USER_STACK,
 *	STALL_END, WATCH; other types give "")
 * @buf: receives the text, NUL-terminated, cut at @len - 1 bytes
 * @len: bytes at @buf (0: only measure)
 *
 * Stateless: a SAMPLE or USER_STACK record is a block of its own (the
 * header, then the sample in full, a USER_STACK as "user stack of sample
 * N"), a STALL_END the end line without "lost", a WATCH "stallcap: watch of
 * tid N started" / "ended".  stallcap_report_record() groups them.  Returns
 * the length of the whole text (more than @len - 1: it was cut), -EBADMSG
 * for a malformed record, -EINVAL.
 */
STALLCAP_API int stallcap_format_record(const struct stallcap_rec_header *rec, char *buf,
					size_t len);

struct stallcap_reporter;

/** stallcap_reporter_new() - a reporter writing to @out; -EINVAL, -ENOMEM. */
STALLCAP_API int stallcap_reporter_new(struct stallcap_reporter **rp, FILE *out);
/**
 * stallcap_report_record() - a stallcap_record_fn writing the records to
 * the reporter (@reporter) as the blocks above
 * @rec: the record
 * @reporter: the struct stallcap_reporter (stallcap_reporter_new())
 *
 * A sample waiting for its deferred user stack (STALLCAP_SAMPLE_DEFER_PENDING)
 * is held until the USER_STACK record of its cookie comes, then written once
 * with those user frames; the later samples and the end of its stall wait
 * behind it, so the block stays in order (at most 16 samples held: the
 * oldest is written without its stack when more come).  Each chunk of lines
 * (a sample with its frames, an end) goes out with one fputs().  0, or
 * -ENOMEM.
 */
STALLCAP_API int stallcap_report_record(const struct stallcap_rec_header *rec,
					void *reporter);
/**
 * stallcap_reporter_flush() - write the held samples as they are (and the
 * ends waiting behind them), the runs of same stacks not written yet, then
 * fflush()
 * @r: the reporter
 */
STALLCAP_API void stallcap_reporter_flush(struct stallcap_reporter *r);
/** stallcap_reporter_free() - flush, then free. */
STALLCAP_API void stallcap_reporter_free(struct stallcap_reporter *r);

/**
 * stallcap_report() - the one call: write the records waiting in the
 * session's ring to @out (mapping the ring on first use) as the blocks
 * above, deferred user stacks merged across calls (the session keeps a
 * reporter for @out); the runs of same stacks are written at the end of
 * each call, so a stall still going on shows its samples now
 * @s: the session
 * @out: where the text goes
 *
 * Returns the records consumed (0 on a no-op session), or a negative errno
 * of stallcap_ring_map() / stallcap_ring_read().
 */
STALLCAP_API int stallcap_report(struct stallcap_session *s, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* STALLCAP_STALLCAP_H */
