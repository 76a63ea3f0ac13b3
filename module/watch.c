// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap watches: creation, arming, disarming, release, and their end when
 * their thread exits or execs (sched_process_exit and sched_process_exec
 * tracepoint probes: like POSIX timers, watches do not survive exec, and a
 * set-user-ID program is never captured into its caller's session) or their
 * session closes.
 *
 * Lifetime: a watch is on its session's list (sess->lock) and in the global
 * hash keyed by its task_struct, read under RCU by the ioctls of its thread
 * and by the exit probe; the key holds even when exec() changes the thread's
 * tid, and cannot be reused while the watch holds its task reference.  It is
 * unlinked in process context (release, session close, or the session's
 * reaper after an exit), marked dead under its lock so that neither the
 * timer nor a racing ioctl restarts it, its timer cancelled, and freed after
 * an RCU grace period (which also covers NMI handlers in flight).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/binfmts.h>
#include <linux/pid_namespace.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/tracepoint.h>
#include <linux/uidgid.h>

#include "compat.h"
#include "stallcap.h"

#define MAX_TIMEOUT_NS	(3600ULL * NSEC_PER_SEC)

static DEFINE_HASHTABLE(task_watches, 12);
static DEFINE_RAW_SPINLOCK(task_watches_lock);

/* ---- per-user accounting of watches ---- */

struct user_watches {
	struct hlist_node node;
	kuid_t uid;
	unsigned int count;
	atomic_t fast;		/* armed watches with a period under FAST_NS */
};

/*
 * A watch's timer expires about once per period (lazy re-arm): periods
 * under 1 ms are the hard-IRQ work one user may cause on every CPU.  Their
 * number is bounded per user (max_fast_watches_per_user; CAP_SYS_RESOURCE
 * exempt, as for max_watches_per_user).
 */
#define FAST_NS		NSEC_PER_MSEC

static DEFINE_HASHTABLE(user_watches, 6);
static DEFINE_SPINLOCK(user_watches_lock);

static struct user_watches *user_watches_find(kuid_t uid)
{
	struct user_watches *u;

	hash_for_each_possible(user_watches, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* Count one more watch of @uid; returns its entry (valid while counted). */
static struct user_watches *user_watches_charge(kuid_t uid)
{
	struct user_watches *u, *fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	bool unlimited = capable(CAP_SYS_RESOURCE);
	int ret = 0;

	if (!fresh)
		return ERR_PTR(-ENOMEM);
	spin_lock(&user_watches_lock);
	u = user_watches_find(uid);
	if (!u) {
		u = fresh;
		fresh = NULL;
		u->uid = uid;
		hash_add(user_watches, &u->node, __kuid_val(uid));
	}
	if (u->count >= stallcap_max_watches_per_user && !unlimited)
		ret = -ENOSPC;
	else
		u->count++;
	spin_unlock(&user_watches_lock);
	kfree(fresh);
	return ret ? ERR_PTR(ret) : u;
}

/*
 * Account @w as armed with timer period @period (U64_MAX: not armed).
 * Context: @w's lock held (atomic only).  Return: 0, or -ENOSPC when the
 * user's fast watches are at max_fast_watches_per_user.
 */
static int watch_fast_update(struct stallcap_watch *w, u64 period)
{
	bool fast = period < FAST_NS;

	if (fast == w->fast)
		return 0;
	if (!fast) {
		atomic_dec(&w->uw->fast);
	} else if (atomic_inc_return(&w->uw->fast) >
		   READ_ONCE(stallcap_max_fast_watches_per_user) &&
		   !w->fast_exempt) {
		atomic_dec(&w->uw->fast);
		return -ENOSPC;
	}
	w->fast = fast;
	return 0;
}

static void user_watches_uncharge(kuid_t uid)
{
	struct user_watches *u;

	spin_lock(&user_watches_lock);
	u = user_watches_find(uid);
	if (u && !--u->count) {
		hash_del(&u->node);
		kfree(u);
		u = NULL;
	}
	spin_unlock(&user_watches_lock);
}

/* ---- creation and destruction ---- */

static void watch_free_rcu(struct rcu_head *rcu)
{
	struct stallcap_watch *w = container_of(rcu, struct stallcap_watch, rcu);

	stallcap_defer_free(w->defer);
	put_task_struct(w->task);
	kfree(w);
}

static void watch_count_armed(struct stallcap_watch *w, bool armed)
{
	if (w->counted_armed == armed)
		return;
	w->counted_armed = armed;
	stallcap_count(&w->sess->stats, SC_ARMED, armed ? 1 : -1);
}

/* Stop @w for good: no timer restart, no new capture.  Lock not held. */
static void watch_kill(struct stallcap_watch *w)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&w->lock, flags);
	if (!w->dead) {
		w->dead = true;
		stallcap_watch_end_stall(w, ktime_get_mono_fast_ns());
		watch_count_armed(w, false);
		watch_fast_update(w, U64_MAX);
		w->state = WATCH_IDLE;
	}
	raw_spin_unlock_irqrestore(&w->lock, flags);
}

/* Unlink and free @w.  Context: process, sess->lock held. */
static void watch_destroy(struct stallcap_watch *w)
{
	struct stallcap_session *sess = w->sess;
	unsigned long flags;

	watch_kill(w);
	hrtimer_cancel(&w->timer);
	stallcap_why_cancel(w);
	list_del(&w->sess_node);
	raw_spin_lock_irqsave(&task_watches_lock, flags);
	hash_del_rcu(&w->task_node);
	raw_spin_unlock_irqrestore(&task_watches_lock, flags);
	stallcap_buddy_del(w);
	stallcap_slot_detach(sess, w);
	user_watches_uncharge(sess->uid);
	stallcap_count(&sess->stats, SC_WATCHES, -1);
	call_rcu(&w->rcu, watch_free_rcu);
}

static struct stallcap_watch *watch_create(struct stallcap_session *sess)
{
	struct stallcap_watch *w;
	unsigned long flags;
	struct user_watches *uw;

	uw = user_watches_charge(sess->uid);
	if (IS_ERR(uw))
		return ERR_CAST(uw);
	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w) {
		user_watches_uncharge(sess->uid);
		return ERR_PTR(-ENOMEM);
	}
	w->defer = stallcap_defer_alloc(current);
	if (!w->defer) {
		kfree(w);
		user_watches_uncharge(sess->uid);
		return ERR_PTR(-ENOMEM);
	}
	w->sess = sess;
	w->uw = uw;
	w->fast_exempt = capable(CAP_SYS_RESOURCE);
	w->task = get_task_struct(current);
	w->mm = current->mm;
	w->tid = task_pid_nr(current);
	/* here, not in the timer: pid lookups are no NMI or hard-IRQ work */
	w->ns_pid = task_tgid_nr_ns(current, sess->pid_ns);
	w->ns_tid = task_pid_nr_ns(current, sess->pid_ns);
	w->slot = -1;
	w->req.watch = w;
	w->req.cpu = -1;
	raw_spin_lock_init(&w->lock);
	stallcap_why_init_watch(w);
	stallcap_hrtimer_setup(&w->timer, stallcap_watch_timer_fn,
			       CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_HARD);
	list_add(&w->sess_node, &sess->watches);
	raw_spin_lock_irqsave(&task_watches_lock, flags);
	hash_add_rcu(task_watches, &w->task_node, (unsigned long)current);
	raw_spin_unlock_irqrestore(&task_watches_lock, flags);
	stallcap_buddy_add(w);
	stallcap_count(&sess->stats, SC_WATCHES, 1);
	return w;
}

/* The calling thread's watch in @sess.  Context: RCU read side. */
static struct stallcap_watch *watch_of_current(struct stallcap_session *sess)
{
	struct stallcap_watch *w;

	hash_for_each_possible_rcu(task_watches, w, task_node,
				   (unsigned long)current)
		if (w->task == current && w->sess == sess &&
		    !READ_ONCE(w->dead))
			return w;
	return NULL;
}

/* ---- arming ---- */

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
	/*
	 * Moving an armed deadline later leaves the queued timer alone: when
	 * it fires early, the callback re-queues it at w->deadline.  An event
	 * loop re-arming every iteration then touches the timer about once
	 * per timeout instead of once per iteration (as Seastar re-arms its
	 * timer at most once per period).
	 */
	lazy = w->state == WATCH_ARMED && hrtimer_is_queued(&w->timer) &&
	       ktime_to_ns(hrtimer_get_expires(&w->timer)) <= deadline;
	stallcap_watch_end_stall(w, now);
	w->armed_at = now;
	w->deadline = deadline;
	stallcap_why_rebase(w, now);
	if (w->flags & STALLCAP_ARM_CPUTIME)
		w->cpu_base = stallcap_task_cputime(w->task);
	w->state = WATCH_ARMED;
	watch_count_armed(w, true);
	if (lazy)
		return 0;
	/*
	 * A CPU isolated from timers gets none: a buddy checker starts the
	 * timer on its housekeeping CPU when the deadline comes near.
	 */
	w->isolated = !stallcap_cpu_takes_timers();
	if (w->isolated)
		hrtimer_try_to_cancel(&w->timer);
	else
		hrtimer_start(&w->timer, ns_to_ktime(deadline),
			      HRTIMER_MODE_ABS_PINNED_HARD);
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
	stallcap_watch_end_stall(w, ktime_get_mono_fast_ns());
	w->state = WATCH_IDLE;
	watch_count_armed(w, false);
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
	w = watch_of_current(sess);	/* stays: only sess->lock holders free it */
	rcu_read_unlock();
	/* a failing ARM leaves the old watch as it was: check first */
	if ((arm->flags & STALLCAP_ARM_SLOT_KINDS) &&
	    !stallcap_slot_available(sess, w))
		return ERR_PTR(-ENOSPC);
	if (!w)
		return watch_create(sess);
	if ((w->flags ^ arm->flags) & STALLCAP_ARM_SLOT_KINDS)
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
	bool was_fast = false;
	unsigned long flags;
	int ret, slot = 0;

	ret = arm_check(arm, now, &deadline);
	if (ret)
		return ret;
	if (current->flags & PF_EXITING)
		return -ESRCH;
	stallcap_times_refresh();
	mutex_lock(&sess->lock);
	ret = stallcap_session_ensure_ring(sess, false);
	if (ret)
		goto out;
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
	old = watch_of_current(sess);	/* stays: only sess->lock holders free it */
	rcu_read_unlock();
	if (old) {
		raw_spin_lock_irqsave(&old->lock, flags);
		was_fast = old->fast;
		ret = watch_fast_update(old, arm_period(arm, timeout));
		raw_spin_unlock_irqrestore(&old->lock, flags);
		if (ret)
			goto out;
	}
	w = watch_for_arm(sess, arm);
	if (IS_ERR(w)) {
		ret = PTR_ERR(w);
		if (old) {	/* as it was */
			raw_spin_lock_irqsave(&old->lock, flags);
			watch_fast_update(old, was_fast ? 0 : U64_MAX);
			raw_spin_unlock_irqrestore(&old->lock, flags);
		}
		goto out;
	}
	if (!old) {
		raw_spin_lock_irqsave(&w->lock, flags);
		ret = watch_fast_update(w, arm_period(arm, timeout));
		raw_spin_unlock_irqrestore(&w->lock, flags);
		if (ret) {
			watch_destroy(w);
			goto out;
		}
	}
	/* cannot fail: watch_for_arm() made sure of a slot */
	if (arm->flags & STALLCAP_ARM_HEARTBEAT)
		slot = stallcap_slot_attach(sess, w, STALLCAP_SLOT_HEARTBEAT, 0);
	else if (arm->flags & STALLCAP_ARM_SHARED_DEADLINE)
		slot = stallcap_slot_attach(sess, w, STALLCAP_SLOT_DEADLINE,
					    deadline);
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
		deadline = now + stallcap_beat_period(w);
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
	w = watch_of_current(sess);
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
			ret = watch_fast_update(w, timeout_ns);
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
	w = watch_of_current(sess);
	if (w) {
		raw_spin_lock_irqsave(&w->lock, flags);
		if (!w->dead) {
			stallcap_watch_end_stall(w, ktime_get_mono_fast_ns());
			w->state = WATCH_IDLE;
			watch_count_armed(w, false);
			watch_fast_update(w, U64_MAX);
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
	w = watch_of_current(sess);
	rcu_read_unlock();
	if (w) {
		watch_destroy(w);
		ret = 0;
	}
	mutex_unlock(&sess->lock);
	return ret;
}

/**
 * stallcap_watches_reap() - free the watches of exited threads
 * @work: &sess->reap_work
 */
void stallcap_watches_reap(struct work_struct *work)
{
	struct stallcap_session *sess = container_of(work,
						     struct stallcap_session,
						     reap_work);
	struct stallcap_watch *w, *tmp;

	mutex_lock(&sess->lock);
	list_for_each_entry_safe(w, tmp, &sess->watches, sess_node)
		if (READ_ONCE(w->dead))
			watch_destroy(w);
	mutex_unlock(&sess->lock);
}

/**
 * stallcap_watches_destroy() - free all watches of a closing session
 * @sess: the session
 *
 * Afterwards no exit probe, timer or NMI handler refers to the session.
 */
void stallcap_watches_destroy(struct stallcap_session *sess)
{
	struct stallcap_watch *w, *tmp;

	mutex_lock(&sess->lock);
	list_for_each_entry_safe(w, tmp, &sess->watches, sess_node)
		watch_destroy(w);
	mutex_unlock(&sess->lock);
	synchronize_rcu();
	cancel_work_sync(&sess->reap_work);
}

/* ---- thread exit and exec ---- */

/* End every watch of @task; they are freed by their sessions' reapers. */
static void watches_of_task_end(struct task_struct *task)
{
	struct stallcap_watch *w;

	if (!atomic64_read(&stallcap_global.c[SC_WATCHES]))
		return;
	rcu_read_lock();
	hash_for_each_possible_rcu(task_watches, w, task_node,
				   (unsigned long)task) {
		if (w->task != task)
			continue;
		watch_kill(w);
		hrtimer_try_to_cancel(&w->timer);
		schedule_work(&w->sess->reap_work);
	}
	rcu_read_unlock();
}

static void probe_sched_process_exit(STALLCAP_EXIT_PROBE_ARGS)
{
	watches_of_task_end(task);
}

static void probe_sched_process_exec(void *data, struct task_struct *task,
				     pid_t old_pid, struct linux_binprm *bprm)
{
	watches_of_task_end(task);
}

static struct tracepoint *exit_tp, *exec_tp;

static void find_tracepoints(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exit"))
		exit_tp = tp;
	else if (!strcmp(tp->name, "sched_process_exec"))
		exec_tp = tp;
}

int stallcap_watch_init(void)
{
	int ret;

	for_each_kernel_tracepoint(find_tracepoints, NULL);
	if (!exit_tp || !exec_tp) {
		pr_err("tracepoints sched_process_exit/exec not found\n");
		return -ENOENT;
	}
	ret = tracepoint_probe_register(exit_tp, probe_sched_process_exit,
					NULL);
	if (ret)
		return ret;
	ret = tracepoint_probe_register(exec_tp, probe_sched_process_exec,
					NULL);
	if (ret) {
		tracepoint_probe_unregister(exit_tp, probe_sched_process_exit,
					    NULL);
		tracepoint_synchronize_unregister();
	}
	return ret;
}

void stallcap_watch_exit(void)
{
	tracepoint_probe_unregister(exec_tp, probe_sched_process_exec, NULL);
	tracepoint_probe_unregister(exit_tp, probe_sched_process_exit, NULL);
	tracepoint_synchronize_unregister();
}
