// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap heartbeat dozing: a parked heartbeat watch whose thread is off
 * every CPU, marked idle, is not checked at all until the thread runs again.
 *
 * An event loop waits most of the time, and says so (idle = 1): its CPU's
 * heartbeat scanner (beat_scan.c) would find it idle at every check, every
 * threshold / 4, for as long as it waits, and the timer interrupts of those
 * checks are most of what heartbeat watches cost.  A thread that is not on a
 * CPU cannot change its slot, so nothing can happen to its watch until it
 * is switched in again: the scheduler's sched_switch tracepoint tells both
 * moments.  Switched out with its slot idle, the watch dozes (off its
 * scanner's list); switched in, it is checked again from that moment, as
 * after a check that found it idle.  What is detected, and when, does not
 * change; a scanner with only dozing watches takes no timer interrupt
 * after the one it was queued for (stallcap_beat_doze()).
 *
 * The one difference: another thread that clears a dozing thread's idle
 * mark (the slot is its own) starts the threshold at the thread's next
 * switch in, not at once.  Dozing watches do not keep the buddy checkers
 * running either (buddy.c): a server whose event loops all wait marked idle
 * costs the machine no timer interrupt at all.
 *
 * The probe runs on every context switch of the system while registered:
 * with no watch parked it returns after one load; otherwise one hash
 * bucket of the watches by thread is looked into, for the thread leaving
 * and the one coming in.  It is registered by the first heartbeat ARM and
 * removed once no heartbeat watch is left (looked at every
 * DOZE_RETIRE_PERIOD), so that a machine that used heartbeat watches once
 * does not pay a call on every switch until the module is unloaded.
 */
#include <linux/atomic.h>
#include <linux/jiffies.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "stallcap.h"

#define DOZE_RETIRE_PERIOD	(2 * HZ)

bool stallcap_beat_doze_on __read_mostly = true;

static struct tracepoint *switch_tp;
static DEFINE_MUTEX(doze_register_lock);
static bool doze_registered;
/* heartbeat watches, and heartbeat ARMs on their way to make one */
static atomic_t beat_watches = ATOMIC_INIT(0);

static void doze_retire(struct work_struct *work);
static DECLARE_DELAYED_WORK(doze_retire_work, doze_retire);

/* Context: the sched_switch tracepoint (IRQs off, RCU read side). */
static void doze_watches_of(struct task_struct *task, bool in)
{
	struct stallcap_watch *w;

	stallcap_for_each_watch_of_task(w, task) {
		if (w->task != task || !(READ_ONCE(w->flags) & STALLCAP_ARM_HEARTBEAT))
			continue;
		if (in)
			stallcap_beat_wake(w);
		else if (READ_ONCE(stallcap_beat_doze_on))
			stallcap_beat_doze(w);
	}
}

static void probe_sched_switch(STALLCAP_SWITCH_PROBE_ARGS)
{
	if (!atomic_read(&stallcap_beat_parked))
		return;
	doze_watches_of(prev, false);
	doze_watches_of(next, true);
}

/**
 * stallcap_beat_doze_get() - a heartbeat ARM begins: register the
 * sched_switch probe unless it is
 *
 * Called by every heartbeat ARM before it takes any lock.  The reference
 * taken becomes the watch's when it is made a heartbeat watch, else the ARM
 * drops it (stallcap_beat_doze_put()).  Without the tracepoint, or when
 * registering fails, watches never doze: they are checked as before,
 * nothing else changes.
 * Context: process.
 */
void stallcap_beat_doze_get(void)
{
	atomic_inc(&beat_watches);
	smp_mb__after_atomic();	/* the count, then the state: doze_retire() */
	if (READ_ONCE(doze_registered) || !switch_tp)
		return;
	mutex_lock(&doze_register_lock);
	if (!doze_registered &&
	    !tracepoint_probe_register(switch_tp, probe_sched_switch, NULL)) {
		WRITE_ONCE(doze_registered, true);
		queue_delayed_work(system_unbound_wq, &doze_retire_work,
				   DOZE_RETIRE_PERIOD);
	}
	mutex_unlock(&doze_register_lock);
}

/**
 * stallcap_beat_doze_put() - a heartbeat watch is one no more (destroyed,
 * or armed as another kind, after it was unparked), or an ARM's reference
 * was not needed
 *
 * Context: any but NMI.
 */
void stallcap_beat_doze_put(void)
{
	atomic_dec(&beat_watches);
}

/*
 * Remove the probe when no heartbeat watch is left.  No watch can be
 * parked, so none dozes, and an ARM that comes meanwhile either was counted
 * before the state was read here (the removal waits) or reads the state
 * cleared and registers the probe again after this (the mutex): its count
 * and this state are each stored before the other's is read.
 */
static void doze_retire(struct work_struct *work)
{
	mutex_lock(&doze_register_lock);
	if (!atomic_read(&beat_watches)) {
		WRITE_ONCE(doze_registered, false);
		smp_mb();	/* the state, then the count: stallcap_beat_doze_get() */
		if (!atomic_read(&beat_watches)) {
			tracepoint_probe_unregister(switch_tp, probe_sched_switch,
						    NULL);
			tracepoint_synchronize_unregister();
			mutex_unlock(&doze_register_lock);
			return;
		}
		WRITE_ONCE(doze_registered, true);
	}
	queue_delayed_work(system_unbound_wq, &doze_retire_work,
			   DOZE_RETIRE_PERIOD);
	mutex_unlock(&doze_register_lock);
}

/** stallcap_beat_doze_probed() - is the sched_switch probe registered? */
bool stallcap_beat_doze_probed(void)
{
	return READ_ONCE(doze_registered);
}

/**
 * stallcap_beat_doze_ready() - is the probe registered and dozing on?
 *
 * A watch may doze only then: its probe's switch in is what wakes it.
 */
bool stallcap_beat_doze_ready(void)
{
	return READ_ONCE(doze_registered) && READ_ONCE(stallcap_beat_doze_on);
}

void stallcap_beat_doze_init(void)
{
	switch_tp = stallcap_find_tracepoint("sched_switch");
}

/* Context: module exit, every watch gone. */
void stallcap_beat_doze_exit(void)
{
	cancel_delayed_work_sync(&doze_retire_work);
	if (!doze_registered)
		return;
	tracepoint_probe_unregister(switch_tp, probe_sched_switch, NULL);
	tracepoint_synchronize_unregister();
}
