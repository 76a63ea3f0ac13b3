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
#include <linux/types.h>
#include <linux/stallcap.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STALLCAP_API __attribute__((visibility("default")))

/** Environment variable naming an inherited session fd (STALLCAP_OPEN_ENV). */
#define STALLCAP_FD_ENV		"STALLCAP_FD"

/**
 * @STALLCAP_OPEN_ENV: use the session whose fd STALLCAP_FD names when it is
 * set (as `stallcap record -- CMD` passes it to CMD); the configuration
 * argument is then ignored, the owner of the session configured it.  Without
 * STALLCAP_FD in the environment a new session is opened.
 */
#define STALLCAP_OPEN_ENV	(1U << 0)

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
/** stallcap_session_adopt() - wrap an open session fd; the session owns it. */
STALLCAP_API int stallcap_session_adopt(struct stallcap_session **sp, int fd);
/** stallcap_session_close() - unmap, close and free; no other call may run. */
STALLCAP_API void stallcap_session_close(struct stallcap_session *s);
/** stallcap_session_fd() - the session fd, e.g. to pass to `stallcap record --fd`. */
STALLCAP_API int stallcap_session_fd(const struct stallcap_session *s);

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
 * Heartbeat watches
 * ------------------------------------------------------------------------
 */

/**
 * stallcap_heartbeat_attach() - make the calling thread's watch a heartbeat
 * @threshold_ns: time without progress that counts as a stall
 * @user_tag: copied into every record of this watch
 * @slotp: receives the thread's beat slot, valid until the session closes
 *
 * Maps the beat area on first use.  Returns the slot index (>= 0).
 */
STALLCAP_API int stallcap_heartbeat_attach(struct stallcap_session *s,
					   __u64 threshold_ns, __u64 user_tag,
					   struct stallcap_beat_slot **slotp);

/*
 * The marks follow the contract of struct stallcap_beat_slot: only the owning
 * thread writes its slot, with plain (relaxed atomic) stores; no
 * read-modify-write instruction, no fence, no system call.
 */

/** stallcap_beat() - the thread made progress (e.g. one event-loop iteration). */
static inline void stallcap_beat(struct stallcap_beat_slot *slot)
{
	__u64 beats = __atomic_load_n(&slot->beats, __ATOMIC_RELAXED);

	__atomic_store_n(&slot->beats, beats + 1, __ATOMIC_RELAXED);
}

/** stallcap_beat_idle() - the thread is about to wait for work by design. */
static inline void stallcap_beat_idle(struct stallcap_beat_slot *slot)
{
	__atomic_store_n(&slot->idle, 1U, __ATOMIC_RELAXED);
}

/** stallcap_beat_busy() - the wait is over: busy again, the window restarts. */
static inline void stallcap_beat_busy(struct stallcap_beat_slot *slot)
{
	__atomic_store_n(&slot->idle, 0U, __ATOMIC_RELAXED);
	stallcap_beat(slot);
}

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
 * stallcap_record_fn - called for each complete record, PAD excluded
 * @rec: a private copy of the record (8-byte aligned, rec->size bytes, its
 *	header checked against the ring), valid only during the call.  Never
 *	the shared bytes: a writer changing them meanwhile cannot reach it.
 *
 * Return 0 to go on, a positive value to stop after this record, a negative
 * errno to stop before it (it stays in the ring) and fail with that value.
 */
typedef int (*stallcap_record_fn)(const struct stallcap_rec_header *rec, void *ctx);

/**
 * stallcap_ring_init() - a ring view over a mapping of len bytes
 *
 * Checks the control page (ABI version, power-of-two data area of at least
 * 8 bytes inside the mapping; -EINVAL for a map not 8-byte aligned).  Works
 * on any memory laid out as the module's ring.
 */
STALLCAP_API int stallcap_ring_init(struct stallcap_ring *r, void *map, size_t len);

/**
 * stallcap_ring_read() - deliver the complete records, then release them
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
 * struct stallcap_sample_view - the parts of a sample record
 * @s: the fixed part
 * @kernel_ips: @nr_kernel kernel return addresses, innermost first
 * @user_ips: @nr_user user addresses (frame-pointer walk), innermost first
 * @stack: @stack_size bytes of raw user stack, copied from s->stack_start up
 */
struct stallcap_sample_view {
	const struct stallcap_sample *s;
	const __u64 *kernel_ips;
	const __u64 *user_ips;
	const void *stack;
	unsigned int nr_kernel;
	unsigned int nr_user;
	__u32 stack_size;
};

/**
 * stallcap_sample_parse() - check a SAMPLE or USER_STACK record and split it
 * @rec: the record; @len: bytes available at rec
 *
 * Returns 0 or -EBADMSG if the counts do not fit the record's size.
 */
STALLCAP_API int stallcap_sample_parse(const void *rec, size_t len,
				       struct stallcap_sample_view *v);

/** stallcap_stall_end_parse() - check a STALL_END record. */
STALLCAP_API int stallcap_stall_end_parse(const void *rec, size_t len,
					  const struct stallcap_stall_end **endp);

#ifdef __cplusplus
}
#endif

#endif /* STALLCAP_STALLCAP_H */
