// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap watches: creation, lookup, release, and their end when
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
#include "attach.h"
#include "capture.h"

static DEFINE_HASHTABLE(task_watches, 12);
static DEFINE_RAW_SPINLOCK(task_watches_lock);

/**
 * stallcap_task_watch_bucket() - the hash bucket that holds @task's watches
 * @task: the watched thread
 *
 * Walked with stallcap_for_each_watch_of_task() under RCU (or with
 * interrupts off: the watches are freed after a grace period).
 * Return: the bucket of the hash table that @task's watches are in.
 */
struct hlist_head *stallcap_task_watch_bucket(const struct task_struct *task)
{
	return &task_watches[hash_min((unsigned long)task,
				      HASH_BITS(task_watches))];
}

/* ---- creation and destruction ---- */

/* Watches are about 1 KiB: their own cache, charged to the opener's memcg. */
static struct kmem_cache *watch_cache;

static void watch_free_rcu(struct rcu_head *rcu)
{
	struct stallcap_watch *w = container_of(rcu, struct stallcap_watch, rcu);

	stallcap_defer_free(w->defer);
	put_task_struct(w->task);
	kmem_cache_free(watch_cache, w);
}

void stallcap_watch_count_armed(struct stallcap_watch *w, bool armed)
{
	if (w->counted_armed == armed)
		return;
	w->counted_armed = armed;
	stallcap_count(&w->sess->stats, SC_ARMED, armed ? 1 : -1);
	if (armed)
		stallcap_buddy_armed();
}

/**
 * stallcap_watch_begin_deadline() - @w is armed with @deadline from @now
 * (ARM and REARM, or an attached thread's return from its wait)
 * @w: the watch, its lock held, not dead
 * @now: the time (ns)
 * @deadline: the deadline (ns)
 *
 * A stall in progress ends.  A sample's time breakdown covers the busy
 * period alone: from a base taken at an earlier point (the last stall's
 * end, or none) it would count the time between (an event loop's idle
 * waits) as blocked.  The caller queues the timer (or parks a heartbeat
 * watch on its CPU's scanner).
 */
void stallcap_watch_begin_deadline(struct stallcap_watch *w, u64 now,
				   u64 deadline)
{
	lockdep_assert_held(&w->lock);
	stallcap_watch_end_stall(w, now);
	w->armed_at = now;
	WRITE_ONCE(w->deadline, deadline);
	stallcap_why_rebase(w, now);
	if (w->flags & STALLCAP_ARM_CPUTIME)
		w->cpu_base = stallcap_task_cputime(w->task);
	WRITE_ONCE(w->state, WATCH_ARMED);
	stallcap_watch_count_armed(w, true);
}

/* Stop @w for good: no timer restart, no new capture.  Lock not held. */
static void watch_kill(struct stallcap_watch *w)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&w->lock, flags);
	if (!w->dead) {
		WRITE_ONCE(w->dead, true);
		stallcap_beat_unpark(w);
		stallcap_watch_end_stall(w, ktime_get_mono_fast_ns());
		stallcap_watch_count_armed(w, false);
		stallcap_watch_fast_update(w, U64_MAX);
		WRITE_ONCE(w->state, WATCH_IDLE);
		/* not yet announced: stallcap_watch_announce() tells both */
		if (w->attach && w->started_told)
			stallcap_attach_watch_event(w, STALLCAP_WATCH_ENDED);
	}
	raw_spin_unlock_irqrestore(&w->lock, flags);
}

/*
 * Unlink @w and hand it to the session's doomed work, which frees it once
 * its chain work is done: waiting for that work here, under sess->lock,
 * could deadlock (the chain work reads user memory under mmap_lock, and
 * mmap() takes sess->lock under mmap_lock).  A chain work that still runs
 * finds the watch dead and publishes nothing.
 * Context: process, sess->lock held.
 */
void stallcap_watch_destroy(struct stallcap_watch *w)
{
	struct stallcap_session *sess = w->sess;
	unsigned long flags;

	lockdep_assert_held(&sess->lock);
	/* a second destroy would move it off the doomed work's list */
	if (WARN_ON_ONCE(w->doomed))
		return;
	w->doomed = true;
	watch_kill(w);
	hrtimer_cancel(&w->timer);
	list_move(&w->sess_node, &sess->doomed);
	raw_spin_lock_irqsave(&task_watches_lock, flags);
	hash_del_rcu(&w->task_node);
	raw_spin_unlock_irqrestore(&task_watches_lock, flags);
	stallcap_buddy_del(w);
	stallcap_slot_detach(sess, w);
	stallcap_watch_uncharge(sess->uid);
	stallcap_count(&sess->stats, SC_WATCHES, -1);
	if (w->attach)
		stallcap_count(&sess->stats, SC_ATTACHED, -1);
	schedule_work(&sess->doomed_work);
}

/**
 * stallcap_watches_free_doomed() - free the destroyed watches of a session
 * @work: &sess->doomed_work
 *
 * Context: process, sess->lock not held: waits for each watch's chain work.
 */
void stallcap_watches_free_doomed(struct work_struct *work)
{
	struct stallcap_session *sess = container_of(work,
						     struct stallcap_session,
						     doomed_work);
	struct stallcap_watch *w, *tmp;
	LIST_HEAD(doomed);

	mutex_lock(&sess->lock);
	list_splice_init(&sess->doomed, &doomed);
	mutex_unlock(&sess->lock);
	list_for_each_entry_safe(w, tmp, &doomed, sess_node) {
		stallcap_why_cancel(w);
		stallcap_watch_home_sync(w);
		call_rcu(&w->rcu, watch_free_rcu);
	}
}

/*
 * A watch of @task in @sess, made by @a (STALLCAP_IOC_ATTACH) or by the
 * thread itself (@a NULL).  Context: process, sess->lock held.
 */
static struct stallcap_watch *watch_create_task(struct stallcap_session *sess,
						struct task_struct *task,
						struct stallcap_attach_ent *a)
{
	bool unlimited = sess->unlimited;	/* the opener's right */
	/* counted already, with the attach's other threads (ATTACH) */
	bool reserved = a && a->reserve.left;
	struct stallcap_watch *w;
	unsigned long flags;
	struct user_watches *uw;
	int ret = -ENOMEM;

	uw = reserved ? stallcap_watch_take_reserved(&a->reserve) :
			stallcap_watch_charge(sess->uid, unlimited);
	if (IS_ERR(uw))
		return ERR_CAST(uw);
	w = kmem_cache_zalloc(watch_cache, GFP_KERNEL);
	if (!w)
		goto err_uncharge;
	w->defer = stallcap_defer_alloc(task);
	if (!w->defer)
		goto err_free;
	w->uw = uw;
	w->fast_exempt = unlimited;
	/*
	 * An attached watch's timer may run at its deadline's period whenever
	 * the thread is busy: a deadline under 1 ms counts against the user's
	 * fast watches for the watch's whole life.
	 */
	if (reserved && a->reserve.fast) {
		w->fast = true;
	} else if (a && stallcap_watch_fast_update(w, a->timeout_ns)) {
		ret = -ENOSPC;
		goto err_defer;
	}
	w->sess = sess;
	w->task = get_task_struct(task);
	w->mm = READ_ONCE(task->mm);
	w->tid = task_pid_nr(task);
	/* here, not in the timer: pid lookups are no NMI or hard-IRQ work */
	w->ns_pid = task_tgid_nr_ns(task, sess->pid_ns);
	w->ns_tid = task_pid_nr_ns(task, sess->pid_ns);
	w->slot = -1;
	INIT_LIST_HEAD(&w->beat_node);
	w->attach = a;
	if (a) {
		w->timeout_ns = a->timeout_ns;
		w->user_tag = a->user_tag;
		w->flags = a->cputime ? STALLCAP_ARM_CPUTIME : 0;
		stallcap_count(&sess->stats, SC_ATTACHED, 1);
	}
	w->req.watch = w;
	w->req.cpu = -1;
	raw_spin_lock_init(&w->lock);
	stallcap_why_init_watch(w);
	stallcap_hrtimer_setup(&w->timer, stallcap_watch_timer_fn,
			       CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_HARD);
	stallcap_watch_home_init(w);
	list_add(&w->sess_node, &sess->watches);
	raw_spin_lock_irqsave(&task_watches_lock, flags);
	hash_add_rcu(task_watches, &w->task_node, (unsigned long)task);
	raw_spin_unlock_irqrestore(&task_watches_lock, flags);
	stallcap_buddy_add(w);
	stallcap_count(&sess->stats, SC_WATCHES, 1);
	return w;

err_defer:
	stallcap_defer_free(w->defer);
err_free:
	kmem_cache_free(watch_cache, w);
err_uncharge:
	if (reserved)
		stallcap_watch_give_back(&a->reserve);
	else
		stallcap_watch_uncharge(sess->uid);
	return ERR_PTR(ret);
}

struct stallcap_watch *stallcap_watch_create(struct stallcap_session *sess)
{
	return watch_create_task(sess, current, NULL);
}

/* ---- watches made by STALLCAP_IOC_ATTACH (attach.c) ---- */

/**
 * stallcap_watch_create_attached() - a watch of @task for the attach @a
 * @sess: the attaching session
 * @task: a thread of the attached process
 * @a: the attach
 *
 * The watch starts idle.  Context: process, sess->lock held.
 */
struct stallcap_watch *stallcap_watch_create_attached(struct stallcap_session *sess,
						      struct task_struct *task,
						      struct stallcap_attach_ent *a)
{
	return watch_create_task(sess, task, a);
}

/**
 * stallcap_watch_find_attached() - @task's watch for @a, or NULL
 * @sess: the session
 * @task: the thread
 * @a: the attach
 *
 * Context: process, sess->lock held.
 */
struct stallcap_watch *stallcap_watch_find_attached(struct stallcap_session *sess,
						    const struct task_struct *task,
						    struct stallcap_attach_ent *a)
{
	struct stallcap_watch *w;

	list_for_each_entry(w, &sess->watches, sess_node)
		if (w->task == task && w->attach == a && !READ_ONCE(w->dead))
			return w;
	return NULL;
}

/**
 * stallcap_watches_destroy_attached() - free the watches made by @a
 * @sess: the session
 * @a: the attach
 *
 * Context: process, sess->lock held.
 */
void stallcap_watches_destroy_attached(struct stallcap_session *sess,
				       struct stallcap_attach_ent *a)
{
	struct stallcap_watch *w, *tmp;

	list_for_each_entry_safe(w, tmp, &sess->watches, sess_node)
		if (w->attach == a)
			stallcap_watch_destroy(w);
}

/* The calling thread's watch in @sess.  Context: RCU read side. */
struct stallcap_watch *stallcap_watch_of_current(struct stallcap_session *sess)
{
	struct stallcap_watch *w;

	stallcap_for_each_watch_of_task(w, current)
		if (w->task == current && w->sess == sess && !w->attach &&
		    !READ_ONCE(w->dead))
			return w;
	return NULL;
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
			stallcap_watch_destroy(w);
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
		stallcap_watch_destroy(w);
	mutex_unlock(&sess->lock);
	synchronize_rcu();
	cancel_work_sync(&sess->reap_work);
	/* after the reaper: it may have destroyed some */
	flush_work(&sess->doomed_work);
}

/* ---- thread exit and exec ---- */

/* End every watch of @task; they are freed by their sessions' reapers. */
static void watches_of_task_end(struct task_struct *task)
{
	struct stallcap_watch *w;

	if (!atomic64_read(&stallcap_global.c[SC_WATCHES]))
		return;
	rcu_read_lock();
	stallcap_for_each_watch_of_task(w, task) {
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

struct tracepoint_lookup {
	const char *name;
	struct tracepoint *tp;
};

static void tracepoint_match(struct tracepoint *tp, void *priv)
{
	struct tracepoint_lookup *l = priv;

	if (!strcmp(tp->name, l->name))
		l->tp = tp;
}

/**
 * stallcap_find_tracepoint() - a tracepoint of the kernel by name
 * @name: its name, such as "sched_switch"
 *
 * Tracepoints are not all exported to modules; the kernel's list of them is.
 * Return: the tracepoint, or NULL when this kernel has none of that name.
 */
struct tracepoint *stallcap_find_tracepoint(const char *name)
{
	struct tracepoint_lookup l = { .name = name };

	for_each_kernel_tracepoint(tracepoint_match, &l);
	return l.tp;
}

int stallcap_watch_init(void)
{
	int ret;

	exit_tp = stallcap_find_tracepoint("sched_process_exit");
	exec_tp = stallcap_find_tracepoint("sched_process_exec");
	if (!exit_tp || !exec_tp) {
		pr_err("tracepoints sched_process_exit/exec not found\n");
		return -ENOENT;
	}
	watch_cache = KMEM_CACHE(stallcap_watch, SLAB_ACCOUNT);
	if (!watch_cache)
		return -ENOMEM;
	ret = tracepoint_probe_register(exit_tp, probe_sched_process_exit,
					NULL);
	if (ret)
		goto err_cache;
	ret = tracepoint_probe_register(exec_tp, probe_sched_process_exec,
					NULL);
	if (ret) {
		tracepoint_probe_unregister(exit_tp, probe_sched_process_exit,
					    NULL);
		tracepoint_synchronize_unregister();
		goto err_cache;
	}
	return 0;
err_cache:
	kmem_cache_destroy(watch_cache);
	return ret;
}

void stallcap_watch_exit(void)
{
	tracepoint_probe_unregister(exec_tp, probe_sched_process_exec, NULL);
	tracepoint_probe_unregister(exit_tp, probe_sched_process_exit, NULL);
	tracepoint_synchronize_unregister();
	rcu_barrier();	/* watch_free_rcu() */
	kmem_cache_destroy(watch_cache);
}
