// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap watch timers brought home: a watch's timer is queued on its
 * thread's CPU, where its interrupt lands on the thread (the cheap local
 * capture).  A buddy checker moves it away when that CPU does not take it in
 * time (buddy.c); the thread brings it back when it starts it again (ARM,
 * REARM, an attached thread's busy period), but the thread of a
 * shared-deadline watch never does (its re-arms are stores), nor does a
 * lazy re-arm.  Those come back from here.
 */
#include <linux/hrtimer.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>

#include "compat.h"
#include "stallcap.h"

DEFINE_PER_CPU(unsigned long, stallcap_watch_homes);

/*
 * Called on the thread's CPU (an async IPI) by the next look that lets the
 * armed watch's timer wait on elsewhere: starts it here, pinned, at the
 * same expiry.
 */
static void watch_home_fn(void *info)
{
	struct stallcap_watch *w = info;
	struct hrtimer *t = &w->timer;

	raw_spin_lock(&w->lock);
	if (!w->dead && READ_ONCE(w->state) == WATCH_ARMED &&
	    !w->beat_scanner && hrtimer_is_queued(t) &&
	    task_cpu(w->task) == smp_processor_id() &&
	    stallcap_cpu_takes_timers()) {
		hrtimer_start(t, hrtimer_get_expires(t),
			      HRTIMER_MODE_ABS_PINNED_HARD);
		this_cpu_inc(stallcap_watch_homes);
	}
	raw_spin_unlock(&w->lock);
	/* the last touch of @w: the csd itself was released before the call */
	atomic_set_release(&w->home_pending, 0);
}

/** stallcap_watch_home_init() - set up @w's home_csd (watch creation) */
void stallcap_watch_home_init(struct stallcap_watch *w)
{
	INIT_CSD(&w->home_csd, watch_home_fn, w);
	atomic_set(&w->home_pending, 0);
}

/**
 * stallcap_watch_timer_home() - an armed watch's timer restarts away from
 * its thread: bring it back to the thread's CPU
 * @w: the watch, lock held (its timer callback, hard-IRQ)
 *
 * Only while the thread runs there: a CPU running a task is online, and it
 * cannot finish going offline (stop_machine) before this interrupt ends,
 * so the call is never left queued on a dead CPU.  One at most is pending;
 * once at home, none is sent.  A dead watch is freed only once none is
 * pending (stallcap_watch_home_sync()).
 */
void stallcap_watch_timer_home(struct stallcap_watch *w)
{
	int cpu = task_cpu(w->task);

	/* never to a CPU isolated from timers: the timer stays with a checker */
	if (cpu == smp_processor_id() || READ_ONCE(w->isolated) ||
	    !housekeeping_cpu(cpu, STALLCAP_HK_TIMER) ||
	    !READ_ONCE(w->task->on_cpu) ||
	    atomic_cmpxchg(&w->home_pending, 0, 1))
		return;
	if (smp_call_function_single_async(cpu, &w->home_csd))
		atomic_set(&w->home_pending, 0);
}

/**
 * stallcap_watch_home_sync() - wait until @w has no homing call in flight
 * @w: a dead watch whose timer is cancelled (none is sent any more)
 *
 * Context: process.
 */
void stallcap_watch_home_sync(struct stallcap_watch *w)
{
	while (atomic_read_acquire(&w->home_pending))
		cpu_relax();
}
