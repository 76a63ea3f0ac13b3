// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap buddy checkers: the overdue watch timers of a stuck CPU, read
 * from that CPU's hrtimer queue instead of a walk of every watch.
 *
 * A checker that suspects a CPU (buddy.c: its next hrtimer event passed a
 * period ago, or it sits in one interrupt) needs the watch timers queued
 * there whose expiry is a period past.  They are at the head of the CPU's
 * CLOCK_MONOTONIC hard queue, which is sorted by expiry: a look there,
 * under the base's lock, costs the overdue timers, not the watches of the
 * machine.  A walk of 10,000 watches took milliseconds under TCG, and it
 * came every time the host stopped a vCPU for a period.
 *
 * The base's lock is only tried: a CPU holding it (queueing a timer, in
 * its timer interrupt, or stopped by the host in the middle of that) is
 * looked into again next period, as a walk would have waited for the same
 * lock to move a timer queued there.  Other overdue timers (the CPU's
 * tick, ...) are passed over, a bounded number.
 *
 * A watch whose timer is seen queued here is not freed before the checker's
 * callback ends: its destruction cancels the timer, under this same lock,
 * before the RCU grace period that frees it, and the callback is an RCU
 * reader throughout.
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/spinlock.h>

#include "compat.h"
#include "stallcap.h"

/* other overdue timers passed over per look: a stuck CPU's tick and such */
#define OVERDUE_OTHERS_MAX	32

/**
 * stallcap_overdue_watches() - the watches whose timers on @base expired
 * by @before, in expiry order
 * @base: a CPU's hrtimer base (not this CPU's)
 * @before: CLOCK_MONOTONIC (ns): the latest expiry collected
 * @skip: how many of those to pass over first (the ones a previous batch
 *	found busy, still at the head of the queue)
 * @out: the watches found
 * @max: room in @out
 *
 * Context: hard-IRQ, under rcu_read_lock(): the watches in @out stay
 * readable until it ends.
 * Return: how many were put in @out, or -EBUSY when the base's lock was
 * held.
 */
int stallcap_overdue_watches(struct hrtimer_cpu_base *base, u64 before,
			     unsigned int skip, struct stallcap_watch **out,
			     unsigned int max)
{
	struct hrtimer_clock_base *cb = &base->clock_base[HRTIMER_BASE_MONOTONIC];
	unsigned int n = 0, others = 0;
	struct hrtimer *t;

	if (!raw_spin_trylock(&base->lock))
		return -EBUSY;
	for (t = stallcap_hrtimer_first(cb); t && n < max;
	     t = stallcap_hrtimer_next(t)) {
		if ((u64)ktime_to_ns(hrtimer_get_expires(t)) > before)
			break;
		if (ACCESS_PRIVATE(t, function) != stallcap_watch_timer_fn) {
			if (++others > OVERDUE_OTHERS_MAX)
				break;
			continue;
		}
		if (skip) {
			skip--;
			continue;
		}
		out[n++] = container_of(t, struct stallcap_watch, timer);
	}
	raw_spin_unlock(&base->lock);
	return n;
}
