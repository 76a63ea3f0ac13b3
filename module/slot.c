// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap watch slots: heartbeat and shared-deadline watches share a slot
 * (struct stallcap_slot) of the session's slot area, mapped at
 * STALLCAP_MMAP_SLOTS, with their thread.  The thread writes it with plain
 * stores; the watch's timer reads it with READ_ONCE().  See the heartbeat
 * and shared-deadline contracts on struct stallcap_slot in the uapi header.
 */
#include <linux/bitmap.h>
#include <linux/math64.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/timekeeping.h>
#ifdef CONFIG_X86_TSC
#include <asm/tsc.h>
#endif

#include "compat.h"
#include "stallcap.h"

bool stallcap_deadline_tsc __read_mostly = true;

/* A deadline further than this is looked at again then (garbage, U64_MAX). */
#define SHARED_MAX_SLEEP_NS	(3600ULL * NSEC_PER_SEC)

static struct stallcap_slot *slot_of(const struct stallcap_watch *w)
{
	return &w->sess->slots[w->slot];
}

#ifdef CONFIG_X86_TSC
/*
 * Does the kernel's own clock read the TSC now?  Then CLOCK_MONOTONIC is
 * that counter scaled, read by the vDSO on whatever CPU the caller is on:
 * the kernel keeps it in step on every CPU.  A snapshot of the timekeeping
 * clock (its raw counter value) taken between two reads of the TSC lies
 * between them only if it is the TSC (HPET, ACPI PM or a paravirtual clock
 * count in other units, from other origins).
 */
static bool tsc_is_kernel_clock(void)
{
	struct system_time_snapshot snap;
	u64 before, after;

	before = rdtsc_ordered();
	sc_ktime_get_snapshot(&snap);
	after = rdtsc_ordered();
	return before <= snap.cycles && snap.cycles <= after;
}
#endif

/**
 * stallcap_tsc_khz() - the rate of a time-stamp counter that shared
 * deadlines may be given in (STALLCAP_ARM_DEADLINE_TSC), or 0
 *
 * The counter must be the kernel's clocksource, not marked unstable (by
 * the clocksource watchdog, a failed synchronization check between CPUs,
 * a frequency change or deep C-states stopping it).
 *
 * Context: process (takes the timekeeping seqlock as a reader).
 */
u32 stallcap_tsc_khz(void)
{
#ifdef CONFIG_X86_TSC
	if (!READ_ONCE(stallcap_deadline_tsc) || !boot_cpu_has(X86_FEATURE_TSC) ||
	    check_tsc_unstable() || !tsc_is_kernel_clock())
		return 0;
	return READ_ONCE(tsc_khz);
#else
	return 0;
#endif
}

static u64 tsc_now(void)
{
#ifdef CONFIG_X86_TSC
	return rdtsc_ordered();
#else
	return 0;
#endif
}

/* The calibrated rate, whether or not the counter may be used now. */
static u32 tsc_rate(void)
{
#ifdef CONFIG_X86_TSC
	return READ_ONCE(tsc_khz);
#else
	return 0;
#endif
}

/*
 * A slot value of a DEADLINE_TSC watch as CLOCK_MONOTONIC: its distance from
 * the counter read now, at the calibrated rate, from the clock read next to
 * it (not the timer's @now, read earlier in the interrupt).  Never 0 (that
 * is idle).
 */
static u64 tsc_to_mono(u64 tsc)
{
	u32 khz = tsc_rate();
	u64 t = tsc_now(), mono = ktime_get_mono_fast_ns(), ns;

	if (!khz)	/* not armed without it: cannot be */
		return mono;
	if (tsc >= t) {
		/*
		 * Clamped before the conversion: the thread writes any value,
		 * and x86's divq faults on a quotient over 64 bits (a counter
		 * slower than 1 GHz, a value near 2^64).
		 */
		if (tsc - t >= mul_u64_u32_div(2 * SHARED_MAX_SLEEP_NS, khz,
					       NSEC_PER_MSEC))
			return mono + 2 * SHARED_MAX_SLEEP_NS;
		ns = mul_u64_u32_div(tsc - t, NSEC_PER_MSEC, khz);
		return mono + ns;
	}
	ns = mul_u64_u32_div(t - tsc, NSEC_PER_MSEC, khz);
	return ns < mono ? mono - ns : 1;
}

/* Nanoseconds from now as a counter value, for a DEADLINE_TSC slot. */
static u64 mono_to_tsc(u64 deadline, u64 now)
{
	u32 khz = tsc_rate();
	u64 t = tsc_now();

	if (deadline <= now || !khz)
		return t;
	return t + mul_u64_u32_div(deadline - now, khz, NSEC_PER_MSEC);
}

/* The slot's deadline as the thread stored it (ns or ticks); 0: idle. */
static u64 slot_deadline_raw(const struct stallcap_watch *w)
{
	const struct stallcap_slot *slot = slot_of(w);

	if (w->flags & STALLCAP_ARM_DEADLINE_TSC)
		return READ_ONCE(slot->deadline_tsc);
	return READ_ONCE(slot->deadline_ns);
}

/**
 * stallcap_slot_available() - could @w get a slot?
 * @sess: the session, sess->lock held
 * @w: the watch, or NULL for a new one
 */
bool stallcap_slot_available(struct stallcap_session *sess,
			     const struct stallcap_watch *w)
{
	lockdep_assert_held(&sess->lock);
	if (!sess->slot_used)	/* before the ring: all free */
		return sess->cfg.slots;
	return (w && w->slot >= 0) ||
	       !bitmap_full(sess->slot_used, sess->cfg.slots);
}

/**
 * stallcap_slot_attach() - give @w a slot of @kind
 * @sess: the session, sess->lock held
 * @w: the watch (not armed)
 * @kind: STALLCAP_SLOT_HEARTBEAT, STALLCAP_SLOT_DEADLINE or _DEADLINE_TSC
 * @deadline: the first deadline of a shared-deadline watch
 *	(CLOCK_MONOTONIC, also for _DEADLINE_TSC), else 0
 *
 * A watch that has a slot keeps it.
 * Return: the slot index, or -ENOSPC when all slots are in use.
 */
int stallcap_slot_attach(struct stallcap_session *sess, struct stallcap_watch *w,
			 u32 kind, u64 deadline)
{
	struct stallcap_slot *slot;
	unsigned long i;

	lockdep_assert_held(&sess->lock);
	if (w->slot < 0) {
		i = find_first_zero_bit(sess->slot_used, sess->cfg.slots);
		if (i >= sess->cfg.slots)
			return -ENOSPC;
		set_bit(i, sess->slot_used);
		w->slot = i;
	}
	slot = slot_of(w);
	WRITE_ONCE(slot->beats, 0);
	WRITE_ONCE(slot->idle, 0);
	WRITE_ONCE(slot->tid, w->tid);
	WRITE_ONCE(slot->kind, kind);
	if (kind == STALLCAP_SLOT_DEADLINE_TSC) {
		WRITE_ONCE(slot->deadline_ns, 0);
		WRITE_ONCE(slot->deadline_tsc,
			   mono_to_tsc(deadline, ktime_get_mono_fast_ns()));
	} else {
		WRITE_ONCE(slot->deadline_ns, deadline);
		WRITE_ONCE(slot->deadline_tsc, 0);
	}
	WRITE_ONCE(slot->armed, 1);
	w->last_beats = 0;
	w->last_idle = false;
	return w->slot;
}

/**
 * stallcap_slot_detach() - give @w's slot back
 * @sess: the session, sess->lock held
 * @w: the watch, no longer armed
 */
void stallcap_slot_detach(struct stallcap_session *sess, struct stallcap_watch *w)
{
	struct stallcap_slot *slot;

	if (w->slot < 0)
		return;
	slot = slot_of(w);
	WRITE_ONCE(slot->armed, 0);
	WRITE_ONCE(slot->kind, STALLCAP_SLOT_FREE);
	clear_bit(w->slot, sess->slot_used);
	w->slot = -1;
}

/**
 * stallcap_beat_look() - what did @w's thread do since the previous check?
 * @w: a heartbeat watch, lock held (parked: its scanner's lock)
 *
 * Return: STALLCAP_BEAT_CHANGED when it beat, went idle or busy again (its
 * slot changed), STALLCAP_BEAT_IDLE when it stayed idle (progress as well),
 * STALLCAP_BEAT_NONE when it stayed busy without a beat.
 */
enum stallcap_beat_seen stallcap_beat_look(struct stallcap_watch *w)
{
	struct stallcap_slot *slot = slot_of(w);
	u64 beats = READ_ONCE(slot->beats);
	bool idle = READ_ONCE(slot->idle);

	if (beats == w->last_beats && idle == w->last_idle)
		return idle ? STALLCAP_BEAT_IDLE : STALLCAP_BEAT_NONE;
	w->last_beats = beats;
	w->last_idle = idle;
	return STALLCAP_BEAT_CHANGED;
}

/**
 * stallcap_beat_idle() - does @w's slot say its thread is idle?
 * @w: a heartbeat watch
 */
bool stallcap_beat_idle(struct stallcap_watch *w)
{
	return READ_ONCE(slot_of(w)->idle);
}

/**
 * stallcap_beat_progress() - did @w's thread beat or go idle since last time?
 * @w: a heartbeat watch, lock held
 */
bool stallcap_beat_progress(struct stallcap_watch *w)
{
	return stallcap_beat_look(w) != STALLCAP_BEAT_NONE;
}

/**
 * stallcap_beat_period() - how often @w's slot is checked (heartbeat), or
 * looked at while stalled (shared deadline)
 * @w: a slot watch
 */
u64 stallcap_beat_period(const struct stallcap_watch *w)
{
	return max_t(u64, w->timeout_ns / 4,
		     stallcap_min_timeout_ns());
}

/**
 * stallcap_beat_next() - when @w's slot is checked next after @now
 * @w: a heartbeat watch
 * @now: CLOCK_MONOTONIC now (ns)
 *
 * The next multiple of the check period: every heartbeat watch of a period
 * queued on one CPU expires at the same instant, so that CPU takes one
 * timer interrupt per period for all of them, not one per watch.  A check
 * still comes at most one period after the last.
 */
u64 stallcap_beat_next(const struct stallcap_watch *w, u64 now)
{
	return stallcap_grid_next(now, stallcap_beat_period(w));
}

/**
 * stallcap_grid_next() - the first multiple of @period after @now
 * @now: CLOCK_MONOTONIC now (ns)
 * @period: a period (ns), not 0
 *
 * The heartbeat checks and the buddy checkers expire on this grid: timers of
 * one CPU whose periods divide share their timer interrupts.
 */
u64 stallcap_grid_next(u64 now, u64 period)
{
	return (div64_u64(now, period) + 1) * period;
}

/**
 * stallcap_shared_due() - a shared-deadline watch's timer expired: did its
 * thread miss the deadline in its slot?
 * @w: the watch, lock held; w->deadline is the deadline last read
 * @now: the time
 * @next: when not missed: when to look again (a later deadline, or now + T
 *	while the thread is idle)
 *
 * Return: true when the deadline read (now in w->deadline) has passed.
 */
bool stallcap_shared_due(struct stallcap_watch *w, u64 now, u64 *next)
{
	u64 raw = slot_deadline_raw(w), d = raw;
	u64 min = stallcap_min_timeout_ns(), prev = w->shared_looked_at;

	w->shared_seen = raw;
	w->shared_looked_at = now;
	if (raw && (w->flags & STALLCAP_ARM_DEADLINE_TSC))
		d = tsc_to_mono(raw);
	if (!d) {	/* idle by design */
		WRITE_ONCE(w->deadline, 0);
		*next = now + max(w->timeout_ns, min);
		return false;
	}
	WRITE_ONCE(w->deadline, d);
	if (d <= now)
		return true;
	/*
	 * The slot is the thread's to write: a deadline always just ahead
	 * (now + 1 us in a loop) must not fire this timer at that rate.  At
	 * most two looks in any window of the smallest timeout: the next one
	 * no sooner than that after the look before this one, so that a
	 * deadline read just before it passes (the first one stored after an
	 * idle period, read by the idle look that followed the store) is
	 * still met when it passes, not a smallest timeout later.
	 */
	*next = clamp_t(u64, d, prev + min,
			now + SHARED_MAX_SLEEP_NS);
	return false;
}

/**
 * stallcap_shared_moved() - did a stalled shared-deadline watch's thread
 * store a new deadline (or 0) since the stall began?
 * @w: the watch, lock held; w->shared_seen is the missed deadline as read
 */
bool stallcap_shared_moved(const struct stallcap_watch *w)
{
	return slot_deadline_raw(w) != w->shared_seen;
}
