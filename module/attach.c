// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: watch an unmodified process's event loops
 * (STALLCAP_IOC_ATTACH / STALLCAP_IOC_DETACH).
 *
 * A thread of an attached process is idle while it is inside an event-loop
 * wait system call and busy from the moment such a call returns until it
 * enters the next one.  The boundaries come from kretprobes on the system
 * call entry points (attach_wait.c), registered while an attach exists and
 * a few seconds after (attach_probes.c): unlike the raw syscall tracepoints,
 * they cost nothing to a process's other system calls, and a wait call of a
 * process nobody attached costs one hash lookup.  Each thread gets a
 * module-made watch (origin ATTACH) in the reader's session, sharing the
 * watches' timer state machine: going busy starts its deadline as a REARM
 * would, going idle ends it (and a stall in progress) as a DISARM would.
 *
 * Threads present at ATTACH get their watch from the ioctl (counted
 * against the watch limits first: attach_threads.c); one that is inside a
 * wait call then (entered before its return could be hooked) goes busy
 * when that call returns, from a task_work.  A thread created later
 * gets its watch at its first wait call, from a task_work that runs when
 * that call returns to user space (process context: the watch is allocated
 * and charged there; attach_follow.c).  Watches end with DETACH, the session's
 * close, the thread's exit or the process's exec (the exec probe of watch.c
 * ends the thread's watches; the new program has another mm, which this
 * attach never matches again: with STALLCAP_ATTACH_INHERIT it gets an
 * attach of its own, as a new process does, attach_follow.c).
 * STALLCAP_REC_WATCH records tell the reader when a thread's watch starts
 * and ends, and what could not be watched.
 *
 * Locking: attach_lock (mutex) protects the list of attaches and the probe
 * registration; it nests inside sess->lock.  The hash by mm is read under
 * RCU by the kretprobe handlers.  An attach is freed after an RCU grace
 * period, once its watches are gone.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/pid_namespace.h>
#include <linux/ptrace.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"

#define MAX_TIMEOUT_NS	(3600ULL * NSEC_PER_SEC)

static DEFINE_MUTEX(attach_lock);
static LIST_HEAD(attaches);			/* attach_lock */
/* RCU readers (attach_follow.c), attach_lock */
DEFINE_HASHTABLE(stallcap_attach_by_mm, STALLCAP_ATTACH_HASH_BITS);

/** stallcap_attach_lock() - take the lock of the attaches (a mutex) */
void stallcap_attach_lock(void)
{
	mutex_lock(&attach_lock);
}

/** stallcap_attach_unlock() - release it */
void stallcap_attach_unlock(void)
{
	mutex_unlock(&attach_lock);
}

/* ---- records ---- */

/*
 * Write a STALLCAP_REC_WATCH record of @task (a thread of @a's process, or
 * with @tid the process itself) into @a's session.  Context: any but NMI.
 */
static void attach_event(const struct stallcap_attach_ent *a,
			 struct task_struct *task, bool tid, u32 event)
{
	struct stallcap_session *sess = a->sess;
	const size_t hdr = sizeof(struct stallcap_rec_header);
	struct stallcap_watch_event ev = {
		.fixed_size = sizeof(ev),
		.event = event,
		.time_ns = ktime_get_mono_fast_ns(),
		.realtime_ns = ktime_get_real_fast_ns(),
		.timeout_ns = a->timeout_ns,
		.user_tag = a->user_tag,
		.pid = task->tgid,
		.tid = tid ? task->pid : task->tgid,
		.ns_pid = task_tgid_nr_ns(task, sess->pid_ns),
		.ns_tid = tid ? task_pid_nr_ns(task, sess->pid_ns) :
				task_tgid_nr_ns(task, sess->pid_ns),
	};
	void *rec;

	strscpy_pad(ev.comm, task->comm, sizeof(ev.comm));
	rec = stallcap_ring_reserve(sess->ring, STALLCAP_REC_WATCH, sizeof(ev));
	if (!rec) {
		stallcap_count(&sess->stats, SC_LOST, 1);
		return;
	}
	memcpy(rec + hdr, (void *)&ev + hdr, sizeof(ev) - hdr);
	stallcap_ring_commit(sess->ring, rec, sizeof(ev), sizeof(ev));
	irq_work_queue(&sess->wake_work);
	stallcap_global_mirror(sess, STALLCAP_REC_WATCH, &ev, sizeof(ev));
}

/**
 * stallcap_attach_watch_event() - write a STALLCAP_REC_WATCH record
 * @w: an attached watch (w->attach set)
 * @event: STALLCAP_WATCH_STARTED, _BUSY or _ENDED
 *
 * Context: any but NMI (a ring reservation: under w->lock too).
 */
void stallcap_attach_watch_event(struct stallcap_watch *w, u32 event)
{
	attach_event(w->attach, w->task, true, event);
}

/**
 * stallcap_attach_missed() - tell @a's reader that @task is not watched
 * @a: the attach
 * @task: a new thread of @a's process (@thread), or a process @a follows
 * @thread: which
 *
 * Context: any but NMI.
 */
void stallcap_attach_missed(const struct stallcap_attach_ent *a,
			    struct task_struct *task, bool thread)
{
	attach_event(a, task, thread, STALLCAP_WATCH_MISSED);
}

/* ---- ATTACH and DETACH ---- */

static struct workqueue_struct *attach_free_wq;

/* Process context: __mmdrop() takes locks that softirq context may not. */
static void attach_free_work(struct work_struct *work)
{
	struct stallcap_attach_ent *a = container_of(work,
						     struct stallcap_attach_ent,
						     free_work);

	mmdrop(a->mm);
	put_task_struct(a->leader);
	kfree(a);
}

static void attach_free_rcu(struct rcu_head *rcu)
{
	struct stallcap_attach_ent *a = container_of(rcu,
						     struct stallcap_attach_ent,
						     rcu);

	INIT_WORK(&a->free_work, attach_free_work);
	queue_work(attach_free_wq, &a->free_work);
}

/** stallcap_attach_put() - drop a reference to @a.  Context: any but NMI. */
void stallcap_attach_put(struct stallcap_attach_ent *a)
{
	if (refcount_dec_and_test(&a->ref))
		call_rcu(&a->rcu, attach_free_rcu);
}

static int attach_check(const struct stallcap_attach *arg)
{
	if (arg->flags & ~STALLCAP_ATTACH_FLAGS_ALL || arg->__reserved0 ||
	    memchr_inv(arg->__reserved, 0, sizeof(arg->__reserved)))
		return -EINVAL;
	if (arg->timeout_ns < stallcap_min_timeout_ns() ||
	    arg->timeout_ns > MAX_TIMEOUT_NS)
		return -ERANGE;
	return 0;
}

/*
 * A new attach of @leader's program @mm; @parent is the attach that follows
 * it (its maker and watch limit exemption are inherited), or NULL for
 * ATTACH's caller.
 */
static struct stallcap_attach_ent *
attach_new(struct stallcap_session *sess, const struct stallcap_attach *arg,
	   struct task_struct *leader, struct mm_struct *mm,
	   const struct stallcap_attach_ent *parent)
{
	struct stallcap_attach_ent *a = kzalloc(sizeof(*a), GFP_KERNEL);
	unsigned int i;

	if (!a)
		return NULL;
	a->sess = sess;
	a->leader = get_task_struct(leader);
	a->mm = mm;
	mmgrab(mm);
	a->ns_pid = arg->pid;
	a->tgid = leader->tgid;
	a->timeout_ns = arg->timeout_ns;
	a->user_tag = arg->user_tag;
	a->cputime = arg->flags & STALLCAP_ATTACH_CPUTIME;
	a->inherit = arg->flags & STALLCAP_ATTACH_INHERIT;
	a->waits = SC_WAIT_LOOP;
	if (arg->flags & STALLCAP_ATTACH_PARK)
		a->waits |= SC_WAIT_PARK;
	if (arg->flags & STALLCAP_ATTACH_RECV)
		a->waits |= SC_WAIT_RECV;
	if (parent)
		a->who = parent->who;
	else
		stallcap_attacher_current(&a->who);
	for (i = 0; i < STALLCAP_ATTACH_TWORKS; i++)
		a->tworks[i].a = a;
	stallcap_attach_resume_init(a);
	refcount_set(&a->ref, 1);
	return a;
}

/* Publish @a with the probes it needs.  attach_lock held. */
static int attach_publish(struct stallcap_attach_ent *a)
{
	int ret;

	ret = stallcap_attach_probes_get(a->waits);
	if (ret)
		return ret;
	list_add(&a->node, &attaches);
	hash_add_rcu(stallcap_attach_by_mm, &a->mm_node, (unsigned long)a->mm);
	return 0;
}

/*
 * End @a: no new watch after this, its watches destroyed, the probes gone
 * a while after the last attach.  Context: process, sess->lock held.
 */
static void attach_end(struct stallcap_attach_ent *a)
{
	mutex_lock(&attach_lock);
	WRITE_ONCE(a->dead, true);
	list_del(&a->node);
	hash_del_rcu(&a->mm_node);
	stallcap_attach_probes_put(a->waits);
	mutex_unlock(&attach_lock);
	stallcap_attach_resume_stop(a);
	stallcap_watches_destroy_attached(a->sess, a);
	stallcap_attach_put(a);
}

static bool attach_exists(struct stallcap_session *sess,
			  const struct task_struct *leader,
			  const struct mm_struct *mm)
{
	struct stallcap_attach_ent *a;

	list_for_each_entry(a, &attaches, node)
		if (a->sess == sess && a->tgid == leader->tgid && a->mm == mm)
			return true;
	return false;
}

/*
 * Before anything is made: an attach that exists already (EEXIST: its own
 * watches count against the limits), no thread to watch (ESRCH), or more
 * threads than the watch limits leave room for (ENOSPC); then the
 * session's ring.  So a refused ATTACH leaves the sizes open to
 * SET_CONFIG, as a refused ARM does.  The threads' watches are counted
 * here, all at once (@a's reservation): another session of the user
 * cannot take their room before they are made.  sess->lock held.
 */
static int attach_room(struct stallcap_session *sess,
		       struct stallcap_attach_ent *a)
{
	unsigned int n;
	int ret;

	mutex_lock(&attach_lock);
	ret = attach_exists(sess, a->leader, a->mm) ? -EEXIST : 0;
	mutex_unlock(&attach_lock);
	if (ret)
		return ret;
	n = stallcap_attach_count_threads(a);
	if (!n)
		return -ESRCH;
	ret = stallcap_watch_reserve(sess, n, a->timeout_ns, &a->reserve);
	if (ret)
		return ret;
	ret = stallcap_session_ensure_ring(sess, false);
	if (ret)
		stallcap_watch_unreserve(&a->reserve);
	return ret;
}

/*
 * Under sess->lock: the attach itself, once the target is known; the new
 * attach in *@made (if @made is not NULL).
 */
static int attach_locked(struct stallcap_session *sess,
			 const struct stallcap_attach *arg,
			 struct task_struct *leader, struct mm_struct *mm,
			 const struct stallcap_attach_ent *parent,
			 struct stallcap_attach_ent **made)
{
	struct stallcap_attach_ent *a;
	int ret;

	a = attach_new(sess, arg, leader, mm, parent);
	if (!a)
		return -ENOMEM;
	ret = attach_room(sess, a);
	if (ret) {
		stallcap_attach_put(a);
		return ret;
	}
	mutex_lock(&attach_lock);
	ret = attach_exists(sess, leader, mm) ? -EEXIST : attach_publish(a);
	mutex_unlock(&attach_lock);
	if (ret) {
		stallcap_watch_unreserve(&a->reserve);
		stallcap_attach_put(a);
		return ret;
	}
	ret = stallcap_attach_present_threads(a);
	/* the counts of threads that exited before their watch was made */
	stallcap_watch_unreserve(&a->reserve);
	if (ret)
		attach_end(a);	/* a failing ATTACH leaves nothing */
	else if (made)
		*made = a;
	return ret;
}

/**
 * stallcap_attach() - STALLCAP_IOC_ATTACH
 * @sess: the session
 * @arg: the argument, size checked and copied
 *
 * Context: process, takes sess->lock.
 */
int stallcap_attach(struct stallcap_session *sess,
		    const struct stallcap_attach *arg)
{
	struct task_struct *leader;
	struct mm_struct *mm;
	int ret;

	ret = attach_check(arg);
	if (ret)
		return ret;
	/* the wait boundaries are kretprobes */
	if (!IS_ENABLED(CONFIG_KRETPROBES))
		return -EOPNOTSUPP;
	leader = stallcap_attach_find_process(arg->pid);
	if (!leader)
		return -ESRCH;
	mm = stallcap_attach_checked_mm(leader, &ret);
	if (mm) {
		mutex_lock(&sess->lock);
		ret = attach_locked(sess, arg, leader, mm, NULL, NULL);
		mutex_unlock(&sess->lock);
		mmput(mm);
	}
	put_task_struct(leader);
	return ret;
}

/*
 * End @sess's attaches of programs that no longer run: their process exited
 * or executed another program (nobody uses their address space any more).
 * Context: process, sess->lock held.
 */
static void attach_end_gone(struct stallcap_session *sess)
{
	struct stallcap_attach_ent *a, *found;

	do {
		found = NULL;
		mutex_lock(&attach_lock);
		list_for_each_entry(a, &attaches, node) {
			if (a->sess == sess && !atomic_read(&a->mm->mm_users)) {
				found = a;
				break;
			}
		}
		mutex_unlock(&attach_lock);
		if (found)
			attach_end(found);
	} while (found);
}

/**
 * stallcap_attach_inherited() - attach @task's process as @parent
 * @parent: the attach that follows it (STALLCAP_ATTACH_INHERIT), alive
 * @task: a thread of the process to attach
 * @nt: the worker's request that made it (compat.h), or NULL
 *
 * @task's process was created by @parent's process, or is that process
 * (or a child of it) after an exec.  The new attach has @parent's deadline,
 * tag and flags, its watch limit exemption, and watches of the threads it
 * has now.  (A set-user-ID program, or one @parent's maker may not trace,
 * never gets here: attach_follow.c.)
 * Made by a worker's request @nt (compat.h; else NULL), later than @task's
 * first instruction: if @task, or another thread of its process, entered a
 * wait call that the attach counts before the attach was there, its watch
 * goes busy as that call returns (now, if it did).
 * Context: process: @task's task_work, or a worker.
 * Return: 0, -EEXIST if attached already, or the reason it cannot be.
 */
int stallcap_attach_inherited(struct stallcap_attach_ent *parent,
			      struct task_struct *task,
			      const struct stallcap_attach_twork *nt)
{
	struct stallcap_session *sess = parent->sess;
	struct stallcap_attach arg = {
		.size = sizeof(arg),
		.flags = STALLCAP_ATTACH_INHERIT |
			 (parent->cputime ? STALLCAP_ATTACH_CPUTIME : 0) |
			 (parent->waits & SC_WAIT_PARK ? STALLCAP_ATTACH_PARK : 0) |
			 (parent->waits & SC_WAIT_RECV ? STALLCAP_ATTACH_RECV : 0),
		.pid = task_tgid_nr_ns(task, sess->pid_ns),
		.timeout_ns = parent->timeout_ns,
		.user_tag = parent->user_tag,
	};
	struct mm_struct *mm = get_task_mm(task);
	struct stallcap_attach_ent *made;
	int ret;

	if (!mm)
		return -ESRCH;
	/*
	 * A worker's request is for the program it was made for: one executed
	 * since (after the worker's look) decided for itself at its exec,
	 * where a set-user-ID program is refused.
	 */
	if (nt && mm != nt->mm) {
		mmput(mm);
		return -ESRCH;
	}
	mutex_lock(&sess->lock);
	ret = READ_ONCE(parent->dead) ? -ESRCH :
	      attach_locked(sess, &arg, task->group_leader, mm, parent, &made);
	/* after the attach's publication: a wait entry sees one or the other */
	if (!ret && nt)
		stallcap_follow_resume_waited(nt, made);
	/* after: @parent may be the program this exec replaced */
	attach_end_gone(sess);
	mutex_unlock(&sess->lock);
	mmput(mm);
	return ret;
}

/**
 * stallcap_detach() - STALLCAP_IOC_DETACH
 * @sess: the session
 * @pid: process id in the caller's namespace, 0 for every process
 *
 * Context: process, takes sess->lock.
 */
int stallcap_detach(struct stallcap_session *sess, unsigned long pid)
{
	struct stallcap_attach_ent *a, *found;
	int ret = -ENOENT;

	if (pid > INT_MAX)
		return -ENOENT;
	mutex_lock(&sess->lock);
	do {
		found = NULL;
		mutex_lock(&attach_lock);
		list_for_each_entry(a, &attaches, node) {
			if (a->sess == sess && (!pid || a->ns_pid == pid)) {
				found = a;
				break;
			}
		}
		mutex_unlock(&attach_lock);
		if (found) {
			attach_end(found);
			ret = 0;
		}
	} while (found);
	mutex_unlock(&sess->lock);
	return ret;
}

/**
 * stallcap_attach_release() - end a closing session's attaches
 * @sess: the session
 *
 * Context: process; before the session's watches are destroyed.
 */
void stallcap_attach_release(struct stallcap_session *sess)
{
	stallcap_detach(sess, 0);
}

/**
 * stallcap_attach_queue_work() - run @work on the attach's workqueue, which
 * module exit drains
 * @work: the work item
 *
 * Context: any but NMI.
 */
void stallcap_attach_queue_work(struct work_struct *work)
{
	queue_work(attach_free_wq, work);
}

int stallcap_attach_init(void)
{
	attach_free_wq = alloc_workqueue("stallcap_attach", WQ_UNBOUND, 0);
	if (!attach_free_wq)
		return -ENOMEM;
	stallcap_attach_perm_init();
	stallcap_ksym_lto_init();
	return 0;
}

/**
 * stallcap_attach_exit() - after rcu_barrier(): the last attach entries
 * are freed (destroy_workqueue() drains their work)
 */
void stallcap_attach_exit(void)
{
	destroy_workqueue(attach_free_wq);
	stallcap_ksym_lto_exit();
}
