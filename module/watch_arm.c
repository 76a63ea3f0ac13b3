// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap watch ioctls of the calling thread: ARM, REARM, DISARM and
 * RELEASE.  The watches themselves (creation, lookup, lifetime, exit and
 * exec) are in watch.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hrtimer.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "compat.h"
#include "stallcap.h"

#define MAX_TIMEOUT_NS	(3600ULL * NSEC_PER_SEC)

static int check_timeout(u64 timeout_ns)
{
	if (timeout_ns < stallcap_min_timeout_ns() ||
	    timeout_ns > MAX_TIMEOUT_NS)
		return -ERANGE;
	return 0;
}

/* (Re)start @w's deadline at @deadline (ns).  Lock held. */
static int watch_start(struct stallcap_watch *w, u64 now, u64 deadline)
{
	bool lazy;

	if (w->dead)
		return -ENOENT;
	stallcap_beat_unpark(w);
	/*
	 * Moving an armed deadline later leaves the queued timer alone: when
	 * it fires early, the callback re-queues it at w->deadline.  An event
	 * loop re-arming every iteration then touches the timer about once
	 * per timeout instead of once per iteration (as Seastar re-arms its
	 * timer at most once per period).
	 */
	lazy = w->state == WATCH_ARMED && hrtimer_is_queued(&w->timer) &&
	       ktime_to_ns(hrtimer_get_expires(&w->timer)) <= deadline;
	stallcap_watch_begin_deadline(w, now, deadline);
	if (lazy)
		return 0;
	/*
	 * A heartbeat watch waits for its checks on this CPU's scanner (none
	 * on a CPU isolated from timers: it then keeps its own timer, left to
	 * a buddy checker as any other watch's there).
	 */
	if ((w->flags & STALLCAP_ARM_HEARTBEAT) && stallcap_beat_park(w, now)) {
		WRITE_ONCE(w->isolated, false);
		hrtimer_try_to_cancel(&w->timer);
	} else {
		stallcap_watch_timer_start(w, deadline);
	}
	return 0;
}

static int arm_check(const struct stallcap_arm *arm, u64 now, u64 *deadline)
{
	u32 f = arm->flags;

	if (f & ~STALLCAP_ARM_FLAGS_ALL || arm->__reserved)
		return -EINVAL;
	if ((f & STALLCAP_ARM_CPUTIME) &&
	    (f & (STALLCAP_ARM_ABSOLUTE | STALLCAP_ARM_SLOT_KINDS)))
		return -EINVAL;
	if ((f & STALLCAP_ARM_SLOT_KINDS) == STALLCAP_ARM_SLOT_KINDS)
		return -EINVAL;
	if ((f & STALLCAP_ARM_ABSOLUTE) && (f & STALLCAP_ARM_HEARTBEAT))
		return -EINVAL;
	if ((f & STALLCAP_ARM_DEADLINE_TSC) &&
	    !(f & STALLCAP_ARM_SHARED_DEADLINE))
		return -EINVAL;
	if ((f & STALLCAP_ARM_DEADLINE_TSC) && !stallcap_tsc_khz())
		return -EOPNOTSUPP;
	if (f & STALLCAP_ARM_ABSOLUTE) {
		if (arm->timeout_ns + MAX_TIMEOUT_NS < now ||
		    arm->timeout_ns > now + MAX_TIMEOUT_NS)
			return -ERANGE;
		*deadline = arm->timeout_ns;
		return 0;
	}
	*deadline = now + arm->timeout_ns;
	return check_timeout(arm->timeout_ns);
}

/*
 * The calling thread's watch changes kind (deadline, heartbeat, shared
 * deadline): stop it and give back a slot it no longer needs, in place, so
 * that nothing can fail after the old watch was touched.  sess->lock held.
 */
static void watch_change_kind(struct stallcap_session *sess,
			      struct stallcap_watch *w, u32 new_flags)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&w->lock, flags);
	stallcap_beat_unpark(w);
	stallcap_watch_end_stall(w, ktime_get_mono_fast_ns());
	WRITE_ONCE(w->state, WATCH_IDLE);
	stallcap_watch_count_armed(w, false);
	raw_spin_unlock_irqrestore(&w->lock, flags);
	hrtimer_cancel(&w->timer);
	if (!(new_flags & STALLCAP_ARM_SLOT_KINDS))
		stallcap_slot_detach(sess, w);
}

/* Find or make the calling thread's watch for @arm; sess->lock held. */
static struct stallcap_watch *watch_for_arm(struct stallcap_session *sess,
					    const struct stallcap_arm *arm)
{
	struct stallcap_watch *w;

	rcu_read_lock();
	w = stallcap_watch_of_current(sess);	/* stays: only sess->lock holders free it */
	rcu_read_unlock();
	if (!w)
		return stallcap_watch_create(sess);
	if ((w->flags ^ arm->flags) &
	    (STALLCAP_ARM_SLOT_KINDS | STALLCAP_ARM_DEADLINE_TSC))
		watch_change_kind(sess, w, arm->flags);
	return w;
}

/* The timer period an ARM asks for: a heartbeat is checked every T / 4. */
static u64 arm_period(const struct stallcap_arm *arm, u64 timeout)
{
	if (arm->flags & STALLCAP_ARM_HEARTBEAT)
		return max(timeout / 4, stallcap_min_timeout_ns());
	return timeout;
}

/**
 * stallcap_watch_arm() - STALLCAP_IOC_ARM
 * @sess: the session
 * @arm: the validated-size argument
 *
 * Context: process, takes sess->lock.
 * Return: 0, or the slot index for a heartbeat or shared-deadline watch;
 * -errno.
 */
int stallcap_watch_arm(struct stallcap_session *sess,
		       const struct stallcap_arm *arm)
{
	u64 now = ktime_get_mono_fast_ns(), deadline, timeout;
	struct stallcap_watch *w, *old;
	unsigned long flags;
	int ret, slot = 0;

	ret = arm_check(arm, now, &deadline);
	if (ret)
		return ret;
	if (current->flags & PF_EXITING)
		return -ESRCH;
	if (arm->flags & STALLCAP_ARM_HEARTBEAT)
		stallcap_beat_doze_enable();
	stallcap_times_refresh();
	mutex_lock(&sess->lock);
	/* an absolute deadline's T is its distance, at least the minimum */
	timeout = arm->flags & STALLCAP_ARM_ABSOLUTE ?
		  max_t(s64, (s64)(deadline - now), (s64)stallcap_min_timeout_ns()) :
		  arm->timeout_ns;
	/*
	 * The per-user bound on fast watches is checked before anything
	 * changes (a failing ARM changes nothing): on the thread's watch if it
	 * has one, else on the new one, which goes again if refused.
	 */
	rcu_read_lock();
	old = stallcap_watch_of_current(sess);	/* stays: only sess->lock holders free it */
	rcu_read_unlock();
	/* a failing ARM leaves the old watch as it was: a slot first */
	if ((arm->flags & STALLCAP_ARM_SLOT_KINDS) &&
	    !stallcap_slot_available(sess, old)) {
		ret = -ENOSPC;
		goto out;
	}
	if (old) {
		raw_spin_lock_irqsave(&old->lock, flags);
		ret = stallcap_watch_fast_update(old, arm_period(arm, timeout));
		raw_spin_unlock_irqrestore(&old->lock, flags);
		if (ret)
			goto out;
	}
	/* fails only creating a new watch: an old one is as it was */
	w = watch_for_arm(sess, arm);
	if (IS_ERR(w)) {
		ret = PTR_ERR(w);
		goto out;
	}
	if (!old) {
		raw_spin_lock_irqsave(&w->lock, flags);
		ret = stallcap_watch_fast_update(w, arm_period(arm, timeout));
		raw_spin_unlock_irqrestore(&w->lock, flags);
		/*
		 * The session's first watch makes its ring, after the watch
		 * limits: a refused ARM leaves the sizes open to SET_CONFIG.
		 * (A watch exists only with the ring: an old one had it.)
		 */
		if (!ret)
			ret = stallcap_session_ensure_ring(sess, false);
		if (ret) {
			stallcap_watch_destroy(w);
			goto out;
		}
	}
	/* cannot fail: a free slot was made sure of first */
	if (arm->flags & STALLCAP_ARM_HEARTBEAT)
		slot = stallcap_slot_attach(sess, w, STALLCAP_SLOT_HEARTBEAT, 0);
	else if (arm->flags & STALLCAP_ARM_SHARED_DEADLINE)
		slot = stallcap_slot_attach(sess, w,
					    arm->flags & STALLCAP_ARM_DEADLINE_TSC ?
					    STALLCAP_SLOT_DEADLINE_TSC :
					    STALLCAP_SLOT_DEADLINE, deadline);
	raw_spin_lock_irqsave(&w->lock, flags);
	/*
	 * A relative deadline counts from now: creating the ring and the watch
	 * (the first ARM) is not the thread's work.
	 */
	now = ktime_get_mono_fast_ns();
	if (!(arm->flags & (STALLCAP_ARM_ABSOLUTE | STALLCAP_ARM_SLOT_KINDS)))
		deadline = now + arm->timeout_ns;
	w->flags = arm->flags;
	w->timeout_ns = timeout;
	w->user_tag = arm->user_tag;
	if (arm->flags & STALLCAP_ARM_HEARTBEAT)
		deadline = stallcap_beat_next(w, now);
	ret = watch_start(w, now, deadline);
	raw_spin_unlock_irqrestore(&w->lock, flags);
	if (!ret)
		ret = slot;
out:
	mutex_unlock(&sess->lock);
	return ret;
}

/**
 * stallcap_watch_rearm() - STALLCAP_IOC_REARM, the hot path
 * @sess: the session
 * @timeout_ns: relative timeout, 0 for the last one
 *
 * Context: process; no sleeping lock, no copy from user.
 */
int stallcap_watch_rearm(struct stallcap_session *sess, u64 timeout_ns)
{
	u64 now = ktime_get_mono_fast_ns();
	struct stallcap_watch *w;
	unsigned long flags;
	int ret = -ENOENT;

	rcu_read_lock();
	w = stallcap_watch_of_current(sess);
	if (!w)
		goto out;
	raw_spin_lock_irqsave(&w->lock, flags);
	if (w->flags & STALLCAP_ARM_SLOT_KINDS) {
		ret = -EINVAL;
	} else {
		if (!timeout_ns)
			timeout_ns = w->timeout_ns;
		ret = check_timeout(timeout_ns);
		if (!ret)
			ret = stallcap_watch_fast_update(w, timeout_ns);
		if (!ret) {
			w->timeout_ns = timeout_ns;
			w->flags &= ~STALLCAP_ARM_ABSOLUTE;
			ret = watch_start(w, now, now + timeout_ns);
		}
	}
	raw_spin_unlock_irqrestore(&w->lock, flags);
out:
	rcu_read_unlock();
	return ret;
}

/**
 * stallcap_watch_disarm() - STALLCAP_IOC_DISARM
 * @sess: the session
 *
 * Never blocks: a timer callback running meanwhile sees the idle state.
 */
int stallcap_watch_disarm(struct stallcap_session *sess)
{
	struct stallcap_watch *w;
	unsigned long flags;
	int ret = -ENOENT;

	rcu_read_lock();
	w = stallcap_watch_of_current(sess);
	if (w) {
		raw_spin_lock_irqsave(&w->lock, flags);
		if (!w->dead) {
			stallcap_beat_unpark(w);
			stallcap_watch_end_stall(w, ktime_get_mono_fast_ns());
			WRITE_ONCE(w->state, WATCH_IDLE);
			stallcap_watch_count_armed(w, false);
			stallcap_watch_fast_update(w, U64_MAX);
			hrtimer_try_to_cancel(&w->timer);
			ret = 0;
		}
		raw_spin_unlock_irqrestore(&w->lock, flags);
	}
	rcu_read_unlock();
	return ret;
}

/**
 * stallcap_watch_release() - STALLCAP_IOC_RELEASE
 * @sess: the session
 *
 * Context: process, takes sess->lock, waits for a running timer callback.
 */
int stallcap_watch_release(struct stallcap_session *sess)
{
	struct stallcap_watch *w;
	int ret = -ENOENT;

	mutex_lock(&sess->lock);
	rcu_read_lock();
	w = stallcap_watch_of_current(sess);
	rcu_read_unlock();
	if (w) {
		stallcap_watch_destroy(w);
		ret = 0;
	}
	mutex_unlock(&sess->lock);
	return ret;
}
