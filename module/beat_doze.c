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
 * The probe runs on every context switch of the system once registered (at
 * the first heartbeat ARM, until the module is unloaded): with no watch
 * parked it returns after one load; otherwise one hash bucket of the
 * watches by thread is looked into, for the thread leaving and the one
 * coming in.
 */
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>

#include "compat.h"
#include "stallcap.h"

bool stallcap_beat_doze_on __read_mostly = true;

static struct tracepoint *switch_tp;
static DEFINE_MUTEX(doze_register_lock);
static bool doze_registered;

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
 * stallcap_beat_doze_enable() - register the sched_switch probe, once
 *
 * Called by every heartbeat ARM before it takes any lock.  Without the
 * tracepoint, or when registering fails, watches never doze: they are
 * checked as before, nothing else changes.
 * Context: process.
 */
void stallcap_beat_doze_enable(void)
{
	if (READ_ONCE(doze_registered) || !switch_tp)
		return;
	mutex_lock(&doze_register_lock);
	if (!doze_registered &&
	    !tracepoint_probe_register(switch_tp, probe_sched_switch, NULL))
		WRITE_ONCE(doze_registered, true);
	mutex_unlock(&doze_register_lock);
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
	if (!doze_registered)
		return;
	tracepoint_probe_unregister(switch_tp, probe_sched_switch, NULL);
	tracepoint_synchronize_unregister();
}
