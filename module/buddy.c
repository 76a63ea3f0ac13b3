// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap buddy checkers: deadlines watched from CPUs that take interrupts.
 *
 * A watch's timer is queued on the CPU its thread armed it from (the cheap
 * local path: the timer interrupt lands on the thread).  That CPU cannot
 * take the timer while it runs with interrupts disabled, in a long hard-IRQ
 * handler, or with its timers isolated away (nohz_full).  So, as the kernel's
 * buddy hard-lockup detector does, other CPUs run checkers (a HARD hrtimer,
 * every check_us) while watches exist: the buddy_cpus lowest-numbered
 * housekeeping CPUs that are active (2 by default; each checker looks at
 * every watch, so two are enough for a CPU with interrupts off to be seen by
 * another, and a machine of 128 CPUs takes two timer interrupts per period
 * for its watches, not 128):
 *
 *  - a watch whose timer is queued but overdue by a whole period is on a CPU
 *    that does not take interrupts: the checker moves the timer onto its own
 *    CPU and lets it expire at once; the watch's timer callback then finds
 *    its thread running on another CPU and captures it by NMI, which reaches
 *    code running with interrupts off.  The timer stays on the checker's CPU
 *    until the thread starts it again from its own CPU (the re-arm after the
 *    stall), or until a look that lets it wait on finds the thread running
 *    on its CPU again and sends it home (watch_home.c: a shared-deadline
 *    watch's thread, or a lazy re-arm, never starts it).
 *  - a watch armed from a CPU isolated from timers (not housekeeping for
 *    HK_TYPE_TIMER) queues no timer there (stallcap_watch_timer_start(): an
 *    explicit watch's arm, an attached watch's busy period); the checker starts
 *    its timer on its own CPU once the deadline is less than a period away.
 *
 * A period costs a look at each CPU, not at each watch: only a CPU that may
 * hold an overdue timer is looked into (its hrtimer base's next event passed
 * a period ago, or it has been inside one hrtimer interrupt since the last
 * look: buddy_cpu_suspect()), and then only the head of its timer queue,
 * where overdue timers are (buddy_queue.c; a queue whose lock is held is
 * looked into next period).  Only a suspect CPU whose base is unknown, and
 * every period while CPUs are isolated from timers (their watches'
 * deadlines are started from here), make the checkers walk a list of every
 * watch, under RCU, reading a watch's state without its lock (10,000
 * watches made each walk take milliseconds under TCG).  Only a suspect
 * watch is locked, with a trylock (a CPU stuck with the lock held is
 * skipped until it lets go).  While every armed watch is a heartbeat watch
 * parked on a scanner (beat_scan.c), the walk is skipped: the checkers then
 * only scan overdue scanners' lists.
 *
 * The CPUs that run checkers change only with CPU hotplug: a CPU going
 * offline starts its successor's checker, a CPU coming online starts its
 * own if it is among the first, and a checker that finds its CPU no longer
 * among them stops.
 *
 * The checkers run only while watches are armed: a checker that finds none
 * (or only heartbeat watches dozing: their threads off every CPU marked
 * idle) for BUDDY_LINGER_PERIODS periods in a row stops (an event loop idle
 * for longer than that then costs the machine no timer interrupt), and the
 * next watch counted armed (or woken from its doze) wakes them, from a hard
 * irq_work that queues their start (arming never waits).  The linger bounds
 * the wakes of a loop armed in short bursts to one per that many periods.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/ktime.h>
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

/* periods without an armed watch after which a checker stops */
#define BUDDY_LINGER_PERIODS	32

static LIST_HEAD(buddy_watches);
static DEFINE_RAW_SPINLOCK(buddy_lock);	/* list writers, checker start/stop */
static DEFINE_PER_CPU(struct hrtimer, buddy_timer);
static DEFINE_PER_CPU(bool, buddy_running);	/* buddy_lock */
static DEFINE_PER_CPU(struct work_struct, buddy_start_work);
/* periods in a row this CPU's checker found no armed watch */
static DEFINE_PER_CPU(unsigned int, buddy_unarmed_periods);
/* a checker stopped with watches listed, none armed (buddy_lock to set) */
static bool buddy_asleep;
/* CPUs between their hotplug online and offline callbacks (buddy_lock) */
static struct cpumask buddy_cpus_up;
/*
 * Each CPU's hrtimer base; the count of its hrtimer interrupts a checker
 * last saw it inside one, and since when (buddy_cpu_suspect())
 */
static DEFINE_PER_CPU(struct hrtimer_cpu_base *, buddy_hrtimer_base);
static DEFINE_PER_CPU(unsigned int, buddy_seen_events);
static DEFINE_PER_CPU(u64, buddy_seen_at);
static DEFINE_PER_CPU(struct hrtimer, buddy_base_probe);
static struct irq_work buddy_wake_irq_work;
/* the same from a housekeeping CPU, for an arming CPU isolated from timers */
static struct work_struct buddy_wake_work;

DEFINE_PER_CPU(unsigned long, stallcap_watch_expiries);
DEFINE_PER_CPU(unsigned long, stallcap_buddy_expiries);
DEFINE_PER_CPU(unsigned long, stallcap_buddy_rescues);
DEFINE_PER_CPU(unsigned long, stallcap_buddy_ns);	/* in buddy_fn() */
DEFINE_PER_CPU(unsigned long, stallcap_buddy_walks);
DEFINE_PER_CPU(unsigned long, stallcap_buddy_queue_looks);
DEFINE_PER_CPU(unsigned int, stallcap_own_irq);

/*
 * Does @cpu run a checker: is it one of the first buddy_cpus housekeeping
 * CPUs that are up (buddy_cpus_up)?  At least two: a checker's own CPU needs
 * another.  Read without the lock in a checker's callback: a CPU coming or
 * going meanwhile is seen at its next period.
 */
static bool buddy_chosen(int cpu)
{
	unsigned int n = READ_ONCE(stallcap_buddy_cpus), seen = 0;
	int c;

	if (!housekeeping_cpu(cpu, STALLCAP_HK_TIMER) ||
	    !cpumask_test_cpu(cpu, &buddy_cpus_up))
		return false;
	if (!n)
		return true;
	for_each_cpu_and(c, housekeeping_cpumask(STALLCAP_HK_TIMER), &buddy_cpus_up) {
		if (c == cpu)
			return true;
		if (++seen >= max(n, 2U))
			return false;
	}
	return false;
}

/** stallcap_buddy_period_ns() - how often the checkers look */
u64 stallcap_buddy_period_ns(void)
{
	return max_t(u64, (u64)READ_ONCE(stallcap_check_us) * NSEC_PER_USEC,
		     100 * NSEC_PER_USEC);
}

/**
 * stallcap_cpu_takes_timers() - may a watch's timer be queued on this CPU?
 *
 * Context: preemption off.  False on a CPU isolated from timers (nohz_full).
 */
bool stallcap_cpu_takes_timers(void)
{
	return housekeeping_cpu(smp_processor_id(), STALLCAP_HK_TIMER);
}

/**
 * stallcap_watch_timer_start() - queue @w's timer on this CPU for @deadline,
 * unless this CPU is isolated from timers
 * @w: an armed watch; w->lock held, interrupts off
 * @deadline: CLOCK_MONOTONIC (ns)
 *
 * On an isolated CPU no timer is queued (a queued one is cancelled): the
 * buddy checkers start it on their own CPU when @deadline comes within a
 * period, and it stays there while the thread's deadlines keep moving later
 * (the lazy re-arm).  Explicit and attached watches alike come here.
 */
void stallcap_watch_timer_start(struct stallcap_watch *w, u64 deadline)
{
	lockdep_assert_held(&w->lock);
	WRITE_ONCE(w->isolated, !stallcap_cpu_takes_timers());
	if (w->isolated)
		hrtimer_try_to_cancel(&w->timer);
	else
		hrtimer_start(&w->timer, ns_to_ktime(deadline),
			      HRTIMER_MODE_ABS_PINNED_HARD);
}

/* Is @w's timer overdue (or, for an isolated thread, due within a period)? */
static bool buddy_suspect(struct stallcap_watch *w, u64 now, u64 period)
{
	struct hrtimer *t = &w->timer;

	if (READ_ONCE(w->dead) || READ_ONCE(w->state) == WATCH_IDLE)
		return false;
	if (hrtimer_is_queued(t))
		return ktime_to_ns(hrtimer_get_expires(t)) + period <= now;
	return READ_ONCE(w->isolated) && READ_ONCE(w->state) == WATCH_ARMED &&
	       READ_ONCE(w->deadline) < now + period;
}

/*
 * Move @w's timer here if it is overdue.  Return: false when it stays
 * overdue where it is (its lock or callback busy: tried next period).
 */
static bool buddy_check(struct stallcap_watch *w, u64 now, u64 period)
{
	struct hrtimer *t = &w->timer;
	bool moved = false;
	u64 when = now;

	if (!buddy_suspect(w, now, period))
		return true;
	if (!raw_spin_trylock(&w->lock))
		return false;
	if (!buddy_suspect(w, now, period)) {
		moved = true;
	} else if (!hrtimer_callback_running(t)) {
		if (!hrtimer_is_queued(t)) {
			/* an isolated thread's deadline, started from here */
			when = max(now, w->deadline);
			WRITE_ONCE(w->isolated, false);
		} else {
			this_cpu_inc(stallcap_buddy_rescues);
		}
		/* pinned, from here: the timer moves to this CPU */
		hrtimer_start(t, ns_to_ktime(when), HRTIMER_MODE_ABS_PINNED_HARD);
		moved = true;
	}
	raw_spin_unlock(&w->lock);
	return moved;
}

/*
 * Could a watch timer queued on @cpu be overdue?  Its hrtimer base's next
 * event (expires_next, the earliest of its queued timers) passed a period
 * ago without the interrupt that would have moved it on (interrupts off, a
 * long hard-IRQ handler); or the base is inside its interrupt (expires_next
 * is KTIME_MAX while the expired timers run), the same one for a period
 * (no interrupt counted since a checker first saw it so); or it cannot
 * tell (low resolution).
 * Racy reads of another CPU's base: a wrong guess costs one walk, or
 * delays a rescue by a period.
 */
static bool buddy_cpu_suspect(int cpu, u64 now, u64 period)
{
	struct hrtimer_cpu_base *base = per_cpu(buddy_hrtimer_base, cpu);
	unsigned int *seen = per_cpu_ptr(&buddy_seen_events, cpu);
	u64 *seen_at = per_cpu_ptr(&buddy_seen_at, cpu), next;

	/* + 0: a bit-field before 7.x */
	if (!base || !data_race(base->hres_active + 0))
		return true;
	next = ktime_to_ns(READ_ONCE(base->expires_next));
	if (next != KTIME_MAX)
		return next + period <= now;
#ifdef CONFIG_HIGH_RES_TIMERS
	if (READ_ONCE(base->nr_events) != READ_ONCE(*seen)) {
		WRITE_ONCE(*seen, READ_ONCE(base->nr_events));
		WRITE_ONCE(*seen_at, now);
		return false;
	}
	return READ_ONCE(*seen_at) + period <= now;
#else
	return true;
#endif
}

/* overdue watches taken from a queue at a time, batches per CPU and period */
#define BUDDY_BATCH		16
#define BUDDY_BATCHES		64

/*
 * Move the overdue watch timers queued on @cpu here, taken from its hrtimer
 * queue (buddy_queue.c).  A queue whose lock is held is tried again next
 * period: a walk would wait for that lock too (moving a timer takes the
 * lock of the base it is queued on).  Return: false when @cpu's base is
 * unknown: the watches must be walked.
 */
static bool buddy_rescue_queue(int cpu, u64 now, u64 period)
{
	struct hrtimer_cpu_base *base = per_cpu(buddy_hrtimer_base, cpu);
	struct stallcap_watch *batch[BUDDY_BATCH];
	unsigned int skip = 0, round;
	int n, i;

	if (!base)
		return false;
	this_cpu_inc(stallcap_buddy_queue_looks);
	rcu_read_lock();	/* the watches found stay until the unlock */
	for (round = 0; round < BUDDY_BATCHES; round++) {
		n = stallcap_overdue_watches(base, now - period, skip, batch,
					     BUDDY_BATCH);
		if (n < 0)
			break;
		for (i = 0; i < n; i++)
			skip += !buddy_check(batch[i], now, period);
		if (n < BUDDY_BATCH)
			break;
	}
	rcu_read_unlock();
	return true;
}

/*
 * Rescue what other CPUs hold overdue.  Return: whether the watches must be
 * walked this period: CPUs are isolated from timers (their watches'
 * deadlines are started from here), or a suspect CPU's base is unknown.
 */
static bool buddy_walk_needed(u64 now, u64 period)
{
	int cpu;

	if (stallcap_beat_all_parked())
		return false;
	if (!cpumask_subset(cpu_online_mask, housekeeping_cpumask(STALLCAP_HK_TIMER)))
		return true;
	for_each_online_cpu(cpu)
		if (cpu != smp_processor_id() && buddy_cpu_suspect(cpu, now, period) &&
		    !buddy_rescue_queue(cpu, now, period))
			return true;
	return false;
}

/* An armed watch other than a dozing heartbeat watch (beat_scan.c)? */
static bool buddy_any_armed(void)
{
	return atomic64_read(&stallcap_global.c[SC_ARMED]) >
	       atomic_read(&stallcap_beat_dozing);
}

/*
 * Stop this CPU's checker when no watch is left, or none was armed for
 * BUDDY_LINGER_PERIODS periods?  In the second case buddy_asleep is set
 * first, then the count read again: a watch counted armed meanwhile is seen
 * here, or sees buddy_asleep and wakes the checkers
 * (stallcap_buddy_armed()).  Context: its callback.
 */
static bool buddy_stop(void)
{
	unsigned int *unarmed = this_cpu_ptr(&buddy_unarmed_periods);
	bool stop;

	*unarmed = buddy_any_armed() ? 0 : *unarmed + 1;
	raw_spin_lock(&buddy_lock);
	stop = list_empty(&buddy_watches);
	if (!stop && *unarmed >= BUDDY_LINGER_PERIODS) {
		WRITE_ONCE(buddy_asleep, true);
		smp_mb();	/* pairs with stallcap_buddy_armed() */
		stop = !buddy_any_armed();
	}
	if (stop)
		__this_cpu_write(buddy_running, false);
	raw_spin_unlock(&buddy_lock);
	return stop;
}

static enum hrtimer_restart buddy_fn(struct hrtimer *timer)
{
	u64 now = ktime_get_mono_fast_ns(), period = stallcap_buddy_period_ns();
	struct stallcap_watch *w;

	/* another CPU's checker, moved here by its going offline: stop it */
	if (unlikely(timer != this_cpu_ptr(&buddy_timer)))
		return HRTIMER_NORESTART;
	/* a CPU of a lower number came online: it checks now, not this one */
	if (unlikely(!buddy_chosen(smp_processor_id()))) {
		raw_spin_lock(&buddy_lock);
		__this_cpu_write(buddy_running, false);
		raw_spin_unlock(&buddy_lock);
		return HRTIMER_NORESTART;
	}
	this_cpu_inc(stallcap_buddy_expiries);
	stallcap_own_irq_enter();
	if (buddy_walk_needed(now, period)) {
		this_cpu_inc(stallcap_buddy_walks);
		rcu_read_lock();
		list_for_each_entry_rcu(w, &buddy_watches, buddy_node)
			buddy_check(w, now, period);
		rcu_read_unlock();
	}
	stallcap_beat_rescue(now, period);
	this_cpu_add(stallcap_buddy_ns, ktime_get_mono_fast_ns() - now);
	stallcap_own_irq_exit();
	if (buddy_stop())
		return HRTIMER_NORESTART;
	/* on the heartbeat scanners' grid: one interrupt serves both */
	hrtimer_set_expires(timer, ns_to_ktime(stallcap_grid_next(now, period)));
	return HRTIMER_RESTART;
}

/* Runs in a kworker bound to the checker's CPU. */
static void buddy_start_here(struct work_struct *work)
{
	preempt_disable();
	__this_cpu_write(buddy_unarmed_periods, 0);
	hrtimer_start(this_cpu_ptr(&buddy_timer),
		      ns_to_ktime(stallcap_grid_next(ktime_get_mono_fast_ns(),
						     stallcap_buddy_period_ns())),
		      HRTIMER_MODE_ABS_PINNED_HARD);
	preempt_enable();
}

/*
 * Start the checker of every CPU chosen for one (buddy_chosen()) that has
 * none running, from a work item on that CPU: the arming thread does not
 * wait for other CPUs.  Context: any but NMI (queue_work_on() only).
 */
static void buddy_start_cpus(void)
{
	unsigned long flags;
	bool start;
	int cpu;

	/* up: not a CPU going offline (buddy_cpu_offline()) */
	for_each_cpu(cpu, &buddy_cpus_up) {
		if (!buddy_chosen(cpu))
			continue;
		raw_spin_lock_irqsave(&buddy_lock, flags);
		start = !per_cpu(buddy_running, cpu);
		per_cpu(buddy_running, cpu) = true;
		raw_spin_unlock_irqrestore(&buddy_lock, flags);
		if (start)
			queue_work_on(cpu, system_highpri_wq,
				      per_cpu_ptr(&buddy_start_work, cpu));
	}
}

static void buddy_start_all(void)
{
	cpus_read_lock();
	buddy_start_cpus();
	cpus_read_unlock();
}

/*
 * Wake the checkers that stopped for want of an armed watch.  A hard
 * irq_work: it runs as soon as the arming CPU takes interrupts again, and
 * queues the other CPUs' starts even when that CPU then spins with
 * interrupts off (the stall the checkers are for).  It cannot hold off CPU
 * hotplug: a CPU going offline meanwhile may miss its checker's start.
 */
static void buddy_wake(void)
{
	unsigned long flags;

	/* cleared before the starts: a checker stopping meanwhile sets it again */
	raw_spin_lock_irqsave(&buddy_lock, flags);
	WRITE_ONCE(buddy_asleep, false);
	raw_spin_unlock_irqrestore(&buddy_lock, flags);
	buddy_start_cpus();
}

static void buddy_wake_irq_fn(struct irq_work *work)
{
	buddy_wake();
}

static void buddy_wake_work_fn(struct work_struct *work)
{
	cpus_read_lock();
	buddy_wake();
	cpus_read_unlock();
}

/**
 * stallcap_buddy_armed() - a watch was just counted armed (SC_ARMED raised)
 *
 * Wakes the checkers if they stopped for want of an armed watch.  The
 * counter's atomic add orders the count before buddy_asleep is read.  The
 * irq_work would interrupt this CPU: one isolated from timers (nohz_full)
 * hands the wake to a work item on a housekeeping CPU instead.
 * Context: any but NMI; the watch's lock held.
 */
void stallcap_buddy_armed(void)
{
	int cpu;

	smp_mb__after_atomic();	/* pairs with buddy_stop() */
	if (!READ_ONCE(buddy_asleep))
		return;
	if (stallcap_cpu_takes_timers()) {
		irq_work_queue(&buddy_wake_irq_work);
		return;
	}
	cpu = cpumask_any_and(housekeeping_cpumask(STALLCAP_HK_TIMER),
			      cpu_online_mask);
	if (cpu < nr_cpu_ids)
		queue_work_on(cpu, system_highpri_wq, &buddy_wake_work);
}

/**
 * stallcap_buddy_add() - watch @w's deadlines from the checkers too
 * @w: a new watch
 *
 * Context: process.
 */
void stallcap_buddy_add(struct stallcap_watch *w)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&buddy_lock, flags);
	list_add_tail_rcu(&w->buddy_node, &buddy_watches);
	raw_spin_unlock_irqrestore(&buddy_lock, flags);
	buddy_start_all();
}

/**
 * stallcap_buddy_del() - @w is being destroyed
 * @w: the watch; freed after an RCU grace period, which the checkers honour
 */
void stallcap_buddy_del(struct stallcap_watch *w)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&buddy_lock, flags);
	list_del_rcu(&w->buddy_node);
	raw_spin_unlock_irqrestore(&buddy_lock, flags);
}

/*
 * CPU hotplug.  A CPU going offline stops its checker on the way (else the
 * kernel would move its pinned timer to another CPU, where it would run as
 * that CPU's and leave this one's marked running for good) and, while
 * checkers are awake, starts the one of the CPU that takes its place among
 * the chosen (it is no longer active here); a CPU coming online starts one
 * while watches exist, if it is among the chosen.  Both run on that CPU, in
 * its hotplug thread.
 */
static int buddy_cpu_offline(unsigned int cpu)
{
	unsigned long flags;
	bool successor;

	cancel_work_sync(per_cpu_ptr(&buddy_start_work, cpu));
	hrtimer_cancel(per_cpu_ptr(&buddy_timer, cpu));
	raw_spin_lock_irqsave(&buddy_lock, flags);
	cpumask_clear_cpu(cpu, &buddy_cpus_up);
	per_cpu(buddy_running, cpu) = false;
	successor = !list_empty(&buddy_watches) && !buddy_asleep;
	raw_spin_unlock_irqrestore(&buddy_lock, flags);
	if (successor)
		buddy_start_cpus();
	return 0;
}

static enum hrtimer_restart buddy_probe_fn(struct hrtimer *timer)
{
	return HRTIMER_NORESTART;
}

/*
 * Remember @cpu's hrtimer base: a timer set up on a CPU starts out on that
 * CPU's base (the probe is never started).  Runs on @cpu.
 */
static void buddy_note_hrtimer_base(unsigned int cpu)
{
	struct hrtimer *probe = per_cpu_ptr(&buddy_base_probe, cpu);
	struct hrtimer_cpu_base *base;

	stallcap_hrtimer_setup(probe, buddy_probe_fn, CLOCK_MONOTONIC,
			       HRTIMER_MODE_ABS_PINNED_HARD);
	base = probe->base->cpu_base;
	/* not this CPU's (a callback moved elsewhere): look every period */
	per_cpu(buddy_hrtimer_base, cpu) = base->cpu == cpu ? base : NULL;
}

static int buddy_cpu_online(unsigned int cpu)
{
	unsigned long flags;
	bool start;

	buddy_note_hrtimer_base(cpu);
	raw_spin_lock_irqsave(&buddy_lock, flags);
	cpumask_set_cpu(cpu, &buddy_cpus_up);
	start = !list_empty(&buddy_watches) && !per_cpu(buddy_running, cpu) &&
		buddy_chosen(cpu);
	if (start)
		per_cpu(buddy_running, cpu) = true;
	raw_spin_unlock_irqrestore(&buddy_lock, flags);
	if (start)
		buddy_start_here(NULL);
	return 0;
}

static enum cpuhp_state buddy_hp_state;

/** stallcap_buddy_init() - Return: 0, or -errno (no hotplug state left). */
int stallcap_buddy_init(void)
{
	int cpu, ret;

	for_each_possible_cpu(cpu) {
		stallcap_hrtimer_setup(per_cpu_ptr(&buddy_timer, cpu), buddy_fn,
				       CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_HARD);
		INIT_WORK(per_cpu_ptr(&buddy_start_work, cpu), buddy_start_here);
	}
	stallcap_irq_work_init_hard(&buddy_wake_irq_work, buddy_wake_irq_fn);
	INIT_WORK(&buddy_wake_work, buddy_wake_work_fn);
	/* the online callback runs for every CPU up now: buddy_cpus_up */
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "stallcap/buddy:online",
				buddy_cpu_online, buddy_cpu_offline);
	if (ret < 0)
		return ret;
	buddy_hp_state = ret;
	return 0;
}

/* Context: module exit, every watch gone. */
void stallcap_buddy_exit(void)
{
	int cpu;

	cpuhp_remove_state_nocalls(buddy_hp_state);
	cancel_work_sync(&buddy_wake_work);
	irq_work_sync(&buddy_wake_irq_work);
	for_each_possible_cpu(cpu) {
		cancel_work_sync(per_cpu_ptr(&buddy_start_work, cpu));
		hrtimer_cancel(per_cpu_ptr(&buddy_timer, cpu));
	}
}
