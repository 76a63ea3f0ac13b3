// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: the watches of one attach's threads.  ATTACH counts
 * them against the watch limits before it makes anything, then watches
 * those present (attach.c); a thread created later gets its watch at its
 * first wait call (attach_follow.c), through stallcap_attach_watch_task()
 * as they do.
 */
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"

/**
 * stallcap_attach_watch_task() - make @task's watch for @a
 * @a: the attach
 * @task: a thread of its process
 * @busy: the thread is busy now (it left a wait call)
 *
 * Context: process, sess->lock held.
 */
int stallcap_attach_watch_task(struct stallcap_attach_ent *a,
			       struct task_struct *task, bool busy)
{
	struct stallcap_watch *w;

	if (stallcap_watch_find_attached(a->sess, task, a))
		return 0;
	w = stallcap_watch_create_attached(a->sess, task, a);
	if (IS_ERR(w))
		return PTR_ERR(w);
	stallcap_watch_announce(w);
	/*
	 * The exit and exec probes end a thread's watches.  A thread that
	 * began to exit (PF_EXITING) or executed a program (a new mm) while
	 * this watch was being made may have passed them before the watch
	 * was in their hash: look again now that it is, and end it here
	 * (started and ended: the reader sees both).
	 */
	smp_mb();	/* the hash insert before the reads; pairs with do_exit() */
	if ((READ_ONCE(task->flags) & PF_EXITING) ||
	    READ_ONCE(task->mm) != a->mm) {
		stallcap_watch_destroy(w);
		return 0;
	}
	if (busy)
		stallcap_watch_busy(w, ktime_get_mono_fast_ns());
	return 0;
}

/* Is @t a thread @a watches: of its mm, not exiting, one that returns to user space? */
static bool attach_takes(struct stallcap_attach_ent *a, struct task_struct *t)
{
	return READ_ONCE(t->mm) == a->mm &&
	       !(t->flags & (PF_EXITING | SC_PF_NO_USER_RETURN));
}

/*
 * The threads of @a's process now: references taken, at most @max.
 * Threads created meanwhile get their watch at their first wait call.
 */
static unsigned int collect_threads(struct stallcap_attach_ent *a,
				    struct task_struct **tasks, unsigned int max)
{
	struct task_struct *t;
	unsigned int n = 0;

	rcu_read_lock();
	for_each_thread(a->leader, t) {
		if (n == max)
			break;
		if (attach_takes(a, t))
			tasks[n++] = get_task_struct(t);
	}
	rcu_read_unlock();
	return n;
}

/* How many threads collect_threads() would take now. */
unsigned int stallcap_attach_count_threads(struct stallcap_attach_ent *a)
{
	struct task_struct *t;
	unsigned int n = 0;

	rcu_read_lock();
	for_each_thread(a->leader, t)
		n += attach_takes(a, t);
	rcu_read_unlock();
	return n;
}

/*
 * Watch the threads present now.  They start idle; one inside a wait call
 * goes busy when that call returns.  No more than the attach counted
 * against the limits (a limited session): a thread made since the count
 * gets its watch at its first wait call, as a later one does, so the
 * ATTACH is never refused once watches were announced.  sess->lock held.
 */
int stallcap_attach_present_threads(struct stallcap_attach_ent *a)
{
	unsigned int i, n, max = get_nr_threads(a->leader) + 16;
	struct task_struct **tasks;
	int ret = 0;

	if (!a->sess->unlimited)
		max = min(max, a->reserve.left);

	tasks = kvcalloc(max, sizeof(*tasks), GFP_KERNEL);
	if (!tasks)
		return -ENOMEM;
	n = collect_threads(a, tasks, max);
	for (i = 0; i < n; i++) {
		if (!ret)
			ret = stallcap_attach_watch_task(a, tasks[i], false);
		if (!ret)
			ret = stallcap_attach_resume_request(a, tasks[i]);
		put_task_struct(tasks[i]);
	}
	kvfree(tasks);
	if (!ret && !n)
		ret = -ESRCH;
	return ret;
}
