// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap heartbeat scan: one timer per CPU checks every heartbeat watch
 * waiting on that CPU, instead of one timer per watch.
 *
 * A heartbeat watch that is armed and not stalled needs nothing but a look
 * at its slot every threshold / 4 (stallcap_beat_period()).  Its own hrtimer
 * would cost an expiry, a lock and an rbtree re-insertion per watch and per
 * check; instead the watch is *parked*: put on the list of the CPU it was
 * armed (or last checked) on, its own timer idle.  That CPU's scanner, a
 * HARD hrtimer expiring at the earliest check due on the list, walks the
 * list and reads each due watch's slot; a watch whose thread neither beat
 * nor went idle for its whole threshold is handed back to its own timer,
 * started to expire at once on this CPU, which captures the stall exactly as
 * before (stallcap_watch_timer_fn(); the stall's end parks the watch again).
 *
 * Ownership: while a watch is parked (w->beat_scanner set) its progress
 * fields (last_beats, last_idle, armed_at, beat_next, times_base) belong to
 * the scanner, under the scanner's lock; its timer callback does nothing.
 * Park and unpark run under w->lock and take the scanner's lock inside it;
 * the scanner, holding its lock, only trylocks a watch (as the buddy
 * checkers do), so the two orders cannot deadlock.
 *
 * A CPU running with interrupts off cannot run its scanner: the buddy
 * checkers (buddy.c) scan an overdue scanner's list for it and hand a
 * stalled watch to their own CPU, whose timer then captures the thread by
 * NMI.  A CPU isolated from timers parks nothing (its watches keep their
 * own timers, started by the buddy checkers on housekeeping CPUs).
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/sched/isolation.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

/* Retry soon when a due watch's lock was busy (its own timer, an ioctl). */
#define BEAT_LOCK_RETRY_NS	(10 * NSEC_PER_USEC)

/**
 * struct stallcap_beat_scanner - one CPU's heartbeat scanner
 * @lock: the list and the parked watches' progress fields
 * @watches: parked watches (stallcap_watch.beat_node)
 * @timer: expires at the earliest check due (HARD, pinned)
 */
struct stallcap_beat_scanner {
	raw_spinlock_t lock;
	struct list_head watches;
	struct hrtimer timer;
};

static DEFINE_PER_CPU(struct stallcap_beat_scanner, beat_scanners);
/*
 * Parked watches, all CPUs, dozing ones included: part of SC_ARMED
 * (stallcap_beat_all_parked()); 0 lets the sched_switch probe return at once
 */
atomic_t stallcap_beat_parked = ATOMIC_INIT(0);
/* Of those, dozing: armed watches the buddy checkers need not run for */
atomic_t stallcap_beat_dozing = ATOMIC_INIT(0);
DEFINE_PER_CPU(unsigned long, stallcap_beat_expiries);
DEFINE_PER_CPU(unsigned long, stallcap_beat_checks);
DEFINE_PER_CPU(unsigned long, stallcap_beat_scan_ns);

bool stallcap_beat_scan __read_mostly = true;

/*
 * @w's thread beat or went idle or busy again by @now: the next sample's
 * interval starts here.  The snapshot of its counters (a few dozen loads)
 * is put off to the first check that sees no progress, which a thread
 * beating all along never reaches; the interval then starts there, less
 * than one period after its last progress was seen.  Unless that check
 * could already be the one that declares the stall (a period over half
 * the threshold).
 */
static void beat_progressed(struct stallcap_watch *w, u64 now)
{
	if (2 * w->beat_period <= w->timeout_ns) {
		w->beat_base_stale = true;
		return;
	}
	stallcap_why_rebase(w, now);
}

/*
 * One parked watch due for its check.  Return: true when its thread made no
 * progress for a whole threshold: a stall, for its own timer to capture.
 */
static bool beat_check(struct stallcap_watch *w, u64 now)
{
	switch (stallcap_beat_look(w)) {
	case STALLCAP_BEAT_CHANGED:
		/*
		 * A thread still idle since the previous check (IDLE) did
		 * nothing it could be blamed for: its interval goes on.
		 */
		beat_progressed(w, now);
		fallthrough;
	case STALLCAP_BEAT_IDLE:
		w->armed_at = now;
		break;
	case STALLCAP_BEAT_NONE:
		if (w->beat_base_stale) {
			stallcap_why_rebase(w, now);
			w->beat_base_stale = false;
		}
		if (now - w->armed_at >= w->timeout_ns)
			return true;
		break;
	}
	/* the next point of the grid; a late scanner (or rescue) finds it */
	w->beat_next += w->beat_period;
	if (w->beat_next <= now)
		w->beat_next = stallcap_beat_next(w, now);
	return false;
}

/* Give a stalled watch back to its own timer, on this CPU.  bs->lock held. */
static bool beat_hand_over(struct stallcap_watch *w, u64 now)
{
	if (!raw_spin_trylock(&w->lock)) {
		w->beat_next = now + BEAT_LOCK_RETRY_NS;
		return false;
	}
	list_del_init(&w->beat_node);
	WRITE_ONCE(w->beat_scanner, NULL);
	atomic_dec(&stallcap_beat_parked);
	hrtimer_start(&w->timer, ns_to_ktime(now), HRTIMER_MODE_ABS_PINNED_HARD);
	raw_spin_unlock(&w->lock);
	return true;
}

/* Check every due watch of @bs.  Return: the next check due, or U64_MAX. */
static u64 beat_scan(struct stallcap_beat_scanner *bs, u64 now)
{
	struct stallcap_watch *w, *tmp;
	unsigned long checks = 0;
	u64 next = U64_MAX;

	lockdep_assert_held(&bs->lock);
	list_for_each_entry_safe(w, tmp, &bs->watches, beat_node) {
		if (now >= w->beat_next) {
			checks++;
			if (beat_check(w, now) && beat_hand_over(w, now))
				continue;
		}
		next = min(next, w->beat_next);
	}
	this_cpu_add(stallcap_beat_checks, checks);
	return next;
}

/* (Re)start @bs's timer for a check due at @next.  bs->lock held. */
static void beat_timer_due(struct stallcap_beat_scanner *bs, u64 next)
{
	struct hrtimer *t = &bs->timer;

	if (hrtimer_is_queued(t) && ktime_to_ns(hrtimer_get_expires(t)) <= next)
		return;
	hrtimer_start(t, ns_to_ktime(next), HRTIMER_MODE_ABS_PINNED_HARD);
}

/*
 * The scanner's callback.  Its timer is (re)started only under its lock,
 * here as in stallcap_beat_park(), so that a restart never races with an
 * expiry written by the other.
 *
 * Context: hard-IRQ.
 */
static enum hrtimer_restart beat_scan_fn(struct hrtimer *timer)
{
	struct stallcap_beat_scanner *bs =
		container_of(timer, struct stallcap_beat_scanner, timer);
	u64 now = ktime_get_mono_fast_ns(), next;

	this_cpu_inc(stallcap_beat_expiries);
	stallcap_own_irq_enter();
	raw_spin_lock(&bs->lock);
	next = beat_scan(bs, now);
	if (next != U64_MAX)
		beat_timer_due(bs, next);
	raw_spin_unlock(&bs->lock);
	this_cpu_add(stallcap_beat_scan_ns, ktime_get_mono_fast_ns() - now);
	stallcap_own_irq_exit();
	return HRTIMER_NORESTART;
}

/*
 * Does @task run only on CPUs that take timers?  One woken on a CPU isolated
 * from them (nohz_full) could not wake the buddy checkers from there (a
 * work item, not under a runqueue lock) and would bring the scanner's timer
 * onto it: its watches do not doze.
 */
static bool doze_cpus_take_timers(struct task_struct *task)
{
	return cpumask_subset(task->cpus_ptr,
			      housekeeping_cpumask(STALLCAP_HK_TIMER));
}

/*
 * May @w doze at all?  Not when a check period is over half the threshold
 * (the counters' snapshot of a wake is then not put off: beat_progressed()),
 * nor when its thread may run on a CPU isolated from timers.
 */
static bool beat_may_doze(struct stallcap_watch *w)
{
	return 2 * w->beat_period <= w->timeout_ns &&
	       doze_cpus_take_timers(w->task);
}

/*
 * Park @w dozing: its thread is already off every CPU marked idle.  A watch
 * parked again by its own timer at a stall's end, its thread asleep since,
 * missed the switch out that dozes a watch, and would be checked every
 * period until the thread's next one.  bs->lock held.
 *
 * Against the thread's switch in, whose probe reads stallcap_beat_parked
 * and the doze before it takes bs->lock: the doze (and the count) are
 * stored, then a full barrier, then the thread is read as dequeued (on_rq
 * 0, or queued "delayed" since it blocked: stallcap_task_dequeued()).  Its
 * waker enqueues it (or clears the delay) before __schedule() takes that
 * runqueue's lock with smp_mb__after_spinlock(), which comes before the
 * probe: either the probe sees the doze, or this sees the thread queued
 * (and undoes it).  The idle mark is read after: the thread's last store
 * to its slot came before the __schedule() that dequeued it (or marked it
 * delayed) under that lock, and it stores nothing more until it is
 * switched in.  (A thread at nice 19 beside a busy thread on its CPU,
 * 6.12: the watch of a sleeper stayed checked every period.)
 */
static bool beat_park_dozing(struct stallcap_watch *w)
{
	if (w->task == current || !stallcap_beat_doze_ready() || !beat_may_doze(w))
		return false;
	WRITE_ONCE(w->beat_dozing, true);
	smp_mb();	/* the doze, then on_rq: the probe's side is in __schedule() */
	if (stallcap_task_dequeued(w->task)) {
		smp_rmb();	/* dequeued, then the slot the thread left */
		if (stallcap_beat_idle(w)) {
			atomic_inc(&stallcap_beat_dozing);
			return true;
		}
	}
	WRITE_ONCE(w->beat_dozing, false);
	return false;
}

/**
 * stallcap_beat_park() - let this CPU's scanner check heartbeat watch @w
 * @w: an armed, not stalled heartbeat watch; w->lock held, IRQs off
 * @now: CLOCK_MONOTONIC now (ns): @w's progress was last seen at w->armed_at
 *
 * The caller leaves @w's own timer idle (its callback returns NORESTART, an
 * ARM cancels it).  Parking a parked watch changes nothing.  A watch whose
 * thread is off its CPU marked idle is parked dozing (beat_park_dozing()).
 * Return: false when @w keeps its own timer: scanning is off
 * (beat_scan=0), or this CPU is isolated from timers.
 */
bool stallcap_beat_park(struct stallcap_watch *w, u64 now)
{
	struct stallcap_beat_scanner *bs;

	lockdep_assert_held(&w->lock);
	if (w->beat_scanner)
		return true;
	if (!READ_ONCE(stallcap_beat_scan) || !stallcap_cpu_takes_timers())
		return false;
	bs = this_cpu_ptr(&beat_scanners);
	raw_spin_lock(&bs->lock);
	w->beat_period = stallcap_beat_period(w);
	w->beat_next = stallcap_beat_next(w, now);
	w->beat_base_stale = false;
	WRITE_ONCE(w->beat_scanner, bs);
	atomic_inc(&stallcap_beat_parked);
	if (!beat_park_dozing(w)) {
		list_add_tail(&w->beat_node, &bs->watches);
		beat_timer_due(bs, w->beat_next);
	}
	raw_spin_unlock(&bs->lock);
	return true;
}

/**
 * stallcap_beat_unpark() - take @w off its scanner's list, if it is on one
 * @w: the watch, w->lock held: its progress fields are the caller's again
 *
 * Every change of a watch's state (ARM, DISARM, a change of kind, exit,
 * destruction) unparks it first, dozing or not.  The scanner's timer is
 * left alone: it stops by itself when it finds its list empty.
 */
void stallcap_beat_unpark(struct stallcap_watch *w)
{
	struct stallcap_beat_scanner *bs = w->beat_scanner;
	unsigned long flags;

	lockdep_assert_held(&w->lock);
	if (!bs)
		return;
	raw_spin_lock_irqsave(&bs->lock, flags);
	list_del_init(&w->beat_node);
	if (w->beat_dozing)
		atomic_dec(&stallcap_beat_dozing);
	WRITE_ONCE(w->beat_dozing, false);
	WRITE_ONCE(w->beat_scanner, NULL);
	atomic_dec(&stallcap_beat_parked);
	raw_spin_unlock_irqrestore(&bs->lock, flags);
}

/**
 * stallcap_beat_doze() - stop checking a parked watch whose thread leaves
 *	its CPU marked idle
 * @w: a heartbeat watch of the thread being switched out
 *
 * Off every CPU its thread cannot touch its slot: the idle mark holds until
 * it runs again, and every check until then would find it idle (progress).
 * So the watch leaves its scanner's list, still parked (w->beat_scanner
 * kept), until stallcap_beat_wake() at the thread's next switch in.  The
 * scanner's timer is left queued when no watch is left to check: it stops
 * at its expiry, finding its list empty, and a wake-up meanwhile finds it
 * queued and need not start it.  At most one expiry per wake-up and period,
 * instead of a cancel and a start per wake-up, which cost more under TCG
 * (1,000 event loops waking every 100 ms on 2 vCPUs: 12.1% of a CPU, where
 * cancelling cost 21.1%, bench/README.md).  Only a watch that may doze at
 * all (beat_may_doze()).  A dozing watch does not keep
 * the buddy checkers running (buddy.c): every armed watch dozing for a while,
 * they stop.
 *
 * Context: the sched_switch tracepoint (beat_doze.c): IRQs off, a runqueue
 * lock held: only the scanner's lock is taken, never @w's.
 */
void stallcap_beat_doze(struct stallcap_watch *w)
{
	struct stallcap_beat_scanner *bs = READ_ONCE(w->beat_scanner);

	if (!bs || READ_ONCE(w->beat_dozing))
		return;
	raw_spin_lock(&bs->lock);
	/* still parked there: its slot is still its own (unpark comes first) */
	if (w->beat_scanner == bs && !w->beat_dozing && beat_may_doze(w) &&
	    stallcap_beat_idle(w)) {
		list_del_init(&w->beat_node);
		WRITE_ONCE(w->beat_dozing, true);
		atomic_inc(&stallcap_beat_dozing);
	}
	raw_spin_unlock(&bs->lock);
}

/**
 * stallcap_beat_wake() - check a dozing watch again: its thread runs
 * @w: a heartbeat watch of the thread being switched in
 *
 * As a check that found the thread idle: its interval starts now, the
 * counters' snapshot put off to the first check that sees no progress, and
 * the next check is the next point of the grid, on the scanner the watch is
 * parked on (whose timer hrtimer_start() moves to this CPU when that is
 * another one: the thread migrated while it dozed), and the buddy checkers
 * are woken if they stopped (stallcap_buddy_armed()).  A thread dozes only
 * when every CPU it may run on takes timers; one whose
 * affinity changed meanwhile to a CPU isolated from them moves the
 * scanner's timer there and does not wake the checkers.
 *
 * Context: as stallcap_beat_doze().
 */
void stallcap_beat_wake(struct stallcap_watch *w)
{
	struct stallcap_beat_scanner *bs = READ_ONCE(w->beat_scanner);
	u64 now;

	if (!bs || !READ_ONCE(w->beat_dozing))
		return;
	now = ktime_get_mono_fast_ns();
	raw_spin_lock(&bs->lock);
	if (w->beat_scanner == bs && w->beat_dozing) {
		WRITE_ONCE(w->beat_dozing, false);
		atomic_dec(&stallcap_beat_dozing);
		/* elsewhere a work item: none under a runqueue lock */
		if (stallcap_cpu_takes_timers())
			stallcap_buddy_armed();
		stallcap_beat_look(w);
		w->armed_at = now;
		w->beat_base_stale = true;
		w->beat_next = stallcap_beat_next(w, now);
		list_add_tail(&w->beat_node, &bs->watches);
		beat_timer_due(bs, w->beat_next);
	}
	raw_spin_unlock(&bs->lock);
}

/**
 * stallcap_beat_all_parked() - is every armed watch parked on a scanner?
 *
 * Then no watch timer is queued for a deadline (a disarmed watch's timer
 * that is still queued only finds it idle) and the buddy checkers need not
 * walk the watches: the scanners' lists are all there is to look after.
 * A watch armed meanwhile is seen at the checkers' next period.
 */
bool stallcap_beat_all_parked(void)
{
	return atomic64_read(&stallcap_global.c[SC_ARMED]) <=
	       atomic_read(&stallcap_beat_parked);
}

/**
 * stallcap_beat_rescue() - scan for CPUs whose scanner is overdue
 * @now: CLOCK_MONOTONIC now (ns)
 * @overdue: how late a scanner must be (the buddy checking period)
 *
 * A CPU with interrupts off (or in a long interrupt handler) cannot run its
 * scanner; its stalled watches are handed to this CPU's timers.  A scanner
 * whose lock is held (that CPU scanning, or stuck holding it) is skipped.
 *
 * Context: hard-IRQ (a buddy checker's callback).
 */
void stallcap_beat_rescue(u64 now, u64 overdue)
{
	struct stallcap_beat_scanner *bs;
	struct hrtimer *t;
	int cpu;

	for_each_online_cpu(cpu) {
		bs = per_cpu_ptr(&beat_scanners, cpu);
		t = &bs->timer;
		if (cpu == smp_processor_id() || !hrtimer_is_queued(t) ||
		    ktime_to_ns(hrtimer_get_expires(t)) + overdue > now)
			continue;
		if (!raw_spin_trylock(&bs->lock))
			continue;
		beat_scan(bs, now);
		raw_spin_unlock(&bs->lock);
	}
}

void stallcap_beat_init(void)
{
	struct stallcap_beat_scanner *bs;
	int cpu;

	for_each_possible_cpu(cpu) {
		bs = per_cpu_ptr(&beat_scanners, cpu);
		raw_spin_lock_init(&bs->lock);
		INIT_LIST_HEAD(&bs->watches);
		stallcap_hrtimer_setup(&bs->timer, beat_scan_fn, CLOCK_MONOTONIC,
				       HRTIMER_MODE_ABS_PINNED_HARD);
	}
}

/* Context: module exit, every watch gone (every list empty). */
void stallcap_beat_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		hrtimer_cancel(&per_cpu_ptr(&beat_scanners, cpu)->timer);
}
