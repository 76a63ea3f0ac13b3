// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: what appears after the attach.  A thread created later
 * gets its watch at its first wait call; with STALLCAP_ATTACH_INHERIT, a
 * process the attached process creates, and the program it executes, get
 * an attach of their own (a thread inside a wait call at the attach:
 * attach_resume.c).
 *
 * The events are seen where nothing may be allocated (a kretprobe handler,
 * the sched_process_fork and sched_process_exec tracepoints: preemption
 * off, also on PREEMPT_RT).  They queue a task_work on the thread or
 * process concerned, taken from the attach's pool of requests; it runs in
 * that task's context on its way back to user space (a new process: before
 * its first instruction; an executed program: before its first), where the
 * watch or the attach is made.  What cannot be followed (the pool empty,
 * the watch limit, memory, a set-user-ID program, a process whose
 * credentials the attach's maker could not trace) is told to the reader by
 * a STALLCAP_WATCH_MISSED record, never silently.
 *
 * Which attach follows what: a fork of a process whose mm is attached with
 * INHERIT (looked up by mm, as the wait probes do); an exec by a process
 * that was attached (the same signal_struct: the thread group survives
 * exec) or whose parent is (a vfork child shares its parent's mm until it
 * executes a program, so it is followed only then).  The probes exist while
 * an attach exists, and a few seconds after the last one (attach_probes.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/binfmts.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/module.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/task_work.h>
#include <linux/tracepoint.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"
#include "capture.h"

/* ---- the pool of requests ---- */

/*
 * A request of @a's pool, holding a reference to @a and to the module, or
 * NULL when all are in flight.  Context: any but NMI, no allocation.
 */
static struct stallcap_attach_twork *twork_get(struct stallcap_attach_ent *a)
{
	unsigned int i;

	for (i = 0; i < STALLCAP_ATTACH_TWORKS; i++)
		if (!test_and_set_bit_lock(i, &a->twork_busy))
			break;
	if (i == STALLCAP_ATTACH_TWORKS)
		return NULL;
	if (!refcount_inc_not_zero(&a->ref)) {
		clear_bit_unlock(i, &a->twork_busy);
		return NULL;
	}
	__module_get(THIS_MODULE);
	return &a->tworks[i];
}

/* The request @nt may be taken again (its task_work is not queued). */
static void twork_free(struct stallcap_attach_twork *nt)
{
	clear_bit_unlock(nt - nt->a->tworks, &nt->a->twork_busy);
}

/* The attach of the task_work @cb, whose request may be taken again. */
static struct stallcap_attach_ent *twork_take(struct callback_head *cb)
{
	struct stallcap_attach_twork *nt;
	struct stallcap_attach_ent *a;

	nt = container_of(cb, struct stallcap_attach_twork, twork);
	a = nt->a;
	twork_free(nt);
	return a;
}

/* Drop what twork_get() took, after twork_free().  Process context. */
static void twork_put(struct stallcap_attach_ent *a)
{
	stallcap_attach_put(a);
	module_put(THIS_MODULE);
}

/*
 * Without task_work_add(): follow requests queued to a worker and not done
 * yet.  While there are any, every wait call's entry looks for its thread
 * among them (stallcap_follow_wait_entry()).
 */
static atomic_t follow_workers_queued = ATOMIC_INIT(0);

/* The request @nt (its task_work, or its work item) is done. */
static void twork_done(struct stallcap_attach_twork *nt)
{
	twork_free(nt);
	stallcap_attach_put(nt->a);	/* call_rcu(): any context but NMI */
	module_put(THIS_MODULE);
}

/*
 * Without task_work_add() (compat.h): @fn runs in a worker, for @task,
 * unless @task executed another program since (a set-user-ID one, maybe:
 * its exec decides for itself) or is exiting.  It runs later than the
 * task_work would have: the thread may have gone on to its next wait call.
 */
static void twork_worker_fn(struct work_struct *work)
{
	struct stallcap_attach_twork *nt;
	struct stallcap_attach_ent *a;
	struct task_struct *task;
	struct mm_struct *mm;

	nt = container_of(work, struct stallcap_attach_twork, work);
	a = nt->a;
	task = nt->task;
	mm = nt->mm;
	if (READ_ONCE(task->mm) == mm && !(READ_ONCE(task->flags) & PF_EXITING))
		nt->fn(nt);
	if (xchg(&nt->follow_task, 0))
		atomic_dec(&follow_workers_queued);
	put_task_struct(task);
	mmdrop(mm);
	twork_done(nt);
}

static bool twork_queue_worker(struct stallcap_attach_twork *nt,
			       struct task_struct *task,
			       void (*fn)(const struct stallcap_attach_twork *),
			       bool follow)
{
	struct mm_struct *mm = READ_ONCE(task->mm);

	if (!mm || (task->flags & PF_EXITING)) {
		twork_done(nt);
		return false;
	}
	mmgrab(mm);
	nt->mm = mm;
	nt->task = get_task_struct(task);
	nt->fn = fn;
	if (follow) {
		memset(nt->follow_threads, 0, sizeof(nt->follow_threads));
		atomic_inc(&follow_workers_queued);
		/* @task, @mm and no marks before: stallcap_follow_wait_entry() */
		smp_store_release(&nt->follow_task, (unsigned long)task);
	}
	INIT_WORK(&nt->work, twork_worker_fn);
	stallcap_attach_queue_work(&nt->work);
	return true;
}

/*
 * Queue @nt on @task to run @fn (a task_work) or @worker_fn (a worker,
 * compat.h; @follow: a followed process's attach); false (all undone) if
 * @task is exiting.
 */
static bool twork_queue(struct stallcap_attach_twork *nt,
			struct task_struct *task, task_work_func_t fn,
			void (*worker_fn)(const struct stallcap_attach_twork *),
			bool follow)
{
	if (!SC_HAVE_TASK_WORK)
		return twork_queue_worker(nt, task, worker_fn, follow);
	init_task_work(&nt->twork, fn);
	atomic_set(&stallcap_task_works_used, 1);	/* stallcap_defer_exit() */
	if (!sc_task_work_add(task, &nt->twork, SC_TWA_RESUME_ATOMIC))
		return true;
	twork_done(nt);
	return false;
}

/*
 * The session of @a with a reference, if @a still wants @task (not
 * detached, the task not exiting); else NULL.  Process context.
 */
static struct stallcap_session *twork_session(struct stallcap_attach_ent *a,
					      struct task_struct *task)
{
	struct stallcap_session *sess = NULL;

	stallcap_attach_lock();
	if (!READ_ONCE(a->dead) && !(READ_ONCE(task->flags) & PF_EXITING)) {
		sess = a->sess;
		stallcap_session_get(sess);
	}
	stallcap_attach_unlock();
	return sess;
}

/* ---- new threads: a watch made when their first wait call returns ---- */

/*
 * @task's watch, @busy or idle.  Idle and @resume: made by a worker, busy
 * now if @task is out of its wait calls, else when the one it is in
 * returns (attach_resume.c).  Idle without: made by the task_work inside
 * the wait call that asked for it (io_uring_enter runs task_works inside
 * its wait), whose return the probe hooked (newthread_check()).
 */
static void newthread_make(struct stallcap_attach_ent *a,
			   struct task_struct *task, bool busy, bool resume)
{
	struct stallcap_session *sess;

	sess = READ_ONCE(task->mm) == a->mm ? twork_session(a, task) : NULL;
	if (!sess)
		return;
	mutex_lock(&sess->lock);
	if (!READ_ONCE(a->dead) && stallcap_attach_watch_task(a, task, busy)) {
		WRITE_ONCE(a->no_new_threads, true);
		stallcap_attach_missed(a, task, true);
	} else if (!READ_ONCE(a->dead) && resume) {
		stallcap_attach_resume_late(a, task);
	}
	mutex_unlock(&sess->lock);
	stallcap_session_put(sess);
}

/* As the wait call that asked returns, or inside it (io_uring_enter). */
static void newthread_fn(struct callback_head *cb)
{
	struct stallcap_attach_ent *a = twork_take(cb);

	newthread_make(a, current, stallcap_current_call_returned(), false);
	twork_put(a);
}

static void newthread_worker(const struct stallcap_attach_twork *nt)
{
	newthread_make(nt->a, nt->task, false, true);
}

/*
 * @a's process has a thread without a watch: queue its creation.  When all
 * requests are in flight the thread's next wait call asks again.  Return:
 * queued.
 */
static bool newthread_request(struct stallcap_attach_ent *a)
{
	struct stallcap_attach_twork *nt;

	if (READ_ONCE(a->no_new_threads) || current->flags & PF_EXITING)
		return false;
	nt = twork_get(a);
	return nt && twork_queue(nt, current, newthread_fn, newthread_worker,
				 false);
}

/* Does @a count a call of the current process of this kind? */
static bool attach_counts(const struct stallcap_attach_ent *a,
			  const struct mm_struct *mm, unsigned int kind)
{
	return a->mm == mm && (a->waits & kind) && !READ_ONCE(a->dead);
}

/* How many attaches count such a call of process @mm.  RCU read side. */
static unsigned int attaches_counting(const struct mm_struct *mm,
				      unsigned int kind)
{
	struct stallcap_attach_ent *a;
	unsigned int n = 0;

	hash_for_each_possible_rcu(stallcap_attach_by_mm, a, mm_node,
				   (unsigned long)mm)
		n += attach_counts(a, mm, kind);
	return n;
}

/*
 * The current thread entered a wait call with @watched watches counting
 * it: an attach of its process that has none for it yet (a thread created
 * after the attach, or one whose first call counts only for another
 * attach) asks for one.  Return: one was asked for; it may be made before
 * this call returns, by a worker (compat.h) or by the task_work, which
 * io_uring_enter runs inside its wait: then the call's return starts the
 * thread's busy period, and its probe must hook it.
 */
static bool newthread_check(const struct mm_struct *mm, unsigned int kind,
			    unsigned int watched)
{
	struct stallcap_attach_ent *a;
	bool queued = false;

	rcu_read_lock();
	if (attaches_counting(mm, kind) > watched)
		hash_for_each_possible_rcu(stallcap_attach_by_mm, a, mm_node,
					   (unsigned long)mm)
			if (attach_counts(a, mm, kind) &&
			    !stallcap_watched_by_attach(a))
				queued |= newthread_request(a);
	rcu_read_unlock();
	return queued;
}

/**
 * stallcap_attach_wants_current() - would a wait call of the current thread
 * count (an attach of its process, live, counting calls of this kind)?
 * @kind: the call's, enum stallcap_wait_kind
 *
 * Context: any, NMI included (RCU lookup, no lock).
 */
bool stallcap_attach_wants_current(unsigned int kind)
{
	struct mm_struct *mm = current->mm;
	bool wants;

	if (!mm || (current->flags & SC_PF_NO_USER_RETURN))
		return false;
	rcu_read_lock();
	wants = attaches_counting(mm, kind);
	rcu_read_unlock();
	return wants;
}

/**
 * stallcap_attach_wait_boundary() - the current thread enters (idle) or
 * leaves (busy) an event-loop wait
 * @busy: true when the wait call returned
 * @kind: the call's, enum stallcap_wait_kind (only the watches of attaches
 *	that count that kind see it)
 * @restartable: (@busy) it returned to be resumed by restart_syscall
 *
 * A kernel thread using the process's mm (kthread_use_mm()), or a worker
 * of its (io_uring's, vhost's) never returns to user space: its reads on
 * the process's behalf are no event loop's waits, and it is never watched.
 * A thread that leaves its wait to die (a fatal signal) stays idle: its
 * exit is no busy period (the exit of a large process's last thread, its
 * address space torn down, can take longer than a deadline).
 * Context: kretprobe handler of the current thread, preemption disabled.
 * Return: true if the thread has attached watches, or a worker is making
 * one (its return matters).
 */
bool stallcap_attach_wait_boundary(bool busy, unsigned int kind,
				   bool restartable)
{
	struct mm_struct *mm = current->mm;
	unsigned int watched;

	if (!mm || (current->flags & SC_PF_NO_USER_RETURN) ||
	    (busy && fatal_signal_pending(current)))
		return false;
	watched = stallcap_watches_attached_mark(current, busy, kind,
						 restartable);
	if (!busy && newthread_check(mm, kind, watched))
		return true;
	return watched;
}

/* ---- new processes and programs: an attach of their own ---- */

/*
 * Attach @task's process (new, or a new program) as @a does; @nt: the
 * worker's request, or NULL in @task's task_work.
 */
static void follow_make(struct stallcap_attach_ent *a, struct task_struct *task,
			const struct stallcap_attach_twork *nt)
{
	struct stallcap_session *sess;
	int ret;

	sess = twork_session(a, task);
	if (!sess)
		return;
	ret = stallcap_attach_inherited(a, task, nt);
	if (ret && ret != -EEXIST && ret != -ESRCH)
		stallcap_attach_missed(a, task, false);
	stallcap_session_put(sess);
}

/* In the new process (or program), on its way to user space. */
static void follow_fn(struct callback_head *cb)
{
	struct stallcap_attach_ent *a = twork_take(cb);

	follow_make(a, current, NULL);
	twork_put(a);
}

static void follow_worker(const struct stallcap_attach_twork *nt)
{
	follow_make(nt->a, nt->task, nt);
}

/**
 * stallcap_follow_resume_waited() - the threads of the worker's follow
 * request @nt that entered a wait call the new attach counts, before it
 * was there, go busy as that call returns (now, if it did)
 * @nt: the request, in its worker
 * @a: the attach it made
 *
 * Asked once the attach is in the hash of attaches: a wait call entered
 * since is seen by the probes, one entered before marked @nt.  A marked
 * thread that exited since has no watch (its address is only compared).
 * Context: the worker, sess->lock held.
 */
void stallcap_follow_resume_waited(const struct stallcap_attach_twork *nt,
				   struct stallcap_attach_ent *a)
{
	unsigned long t;
	unsigned int i;

	smp_mb();	/* the attach's publication before; pairs with the entry */
	for (i = 0; i < STALLCAP_FOLLOW_THREADS; i++) {
		t = READ_ONCE(nt->follow_threads[i]);
		if (t)
			stallcap_attach_resume_late(a, (void *)t);
	}
}

/* Is the request @nt a follow of process @mm in flight? */
static bool follows(struct stallcap_attach_twork *nt, const struct mm_struct *mm)
{
	/* pairs with smp_store_release() in twork_queue_worker() */
	return smp_load_acquire(&nt->follow_task) && READ_ONCE(nt->mm) == mm;
}

/*
 * Mark the current thread (@me) in @nt, unless there already or no room is
 * left.  A mark left by a thread of another process (a request freed and
 * taken again meanwhile) matches no thread of @nt's process.
 */
static void follow_mark_thread(struct stallcap_attach_twork *nt,
			       unsigned long me)
{
	unsigned long t;
	unsigned int i;

	for (i = 0; i < STALLCAP_FOLLOW_THREADS; i++) {
		t = READ_ONCE(nt->follow_threads[i]);
		if (t == me || (!t && !cmpxchg(&nt->follow_threads[i], 0, me)))
			return;
	}
}

/**
 * stallcap_follow_wait_entry() - the current thread enters a wait call
 * @kind: the call's, enum stallcap_wait_kind
 *
 * Without task_work_add() (compat.h), a followed process is attached by a
 * worker, later than its first instruction.  If it enters a wait call that
 * the attach will count before then, the request is marked: the thread is
 * busy from that call's return on, as it would be with the attach made in
 * time (stallcap_attach_inherited()).  So is a thread the process made
 * meanwhile (STALLCAP_FOLLOW_THREADS threads in all; with the attach made
 * in time, its first wait call would have asked for its watch).  Costs an
 * atomic read while no request is in flight.
 * Context: a wait probe's entry, NMI included (RCU lookup, no lock).
 */
void stallcap_follow_wait_entry(unsigned int kind)
{
	unsigned long me = (unsigned long)current;
	struct mm_struct *mm = current->mm;
	struct stallcap_attach_twork *nt;
	struct stallcap_attach_ent *a;
	unsigned long in_flight;
	unsigned int bkt, i;

	if (SC_HAVE_TASK_WORK || !atomic_read(&follow_workers_queued) || !mm)
		return;
	rcu_read_lock();
	hash_for_each_rcu(stallcap_attach_by_mm, bkt, a, mm_node) {
		if (!a->inherit || !(a->waits & kind))
			continue;
		in_flight = READ_ONCE(a->twork_busy);
		for_each_set_bit(i, &in_flight, STALLCAP_ATTACH_TWORKS) {
			nt = &a->tworks[i];
			if (follows(nt, mm))
				follow_mark_thread(nt, me);
		}
	}
	rcu_read_unlock();
}

/* Have @a follow @task (a new process, or the current one after exec). */
static void follow_request(struct stallcap_attach_ent *a,
			   struct task_struct *task)
{
	struct stallcap_attach_twork *nt = twork_get(a);

	if (!nt) {
		stallcap_attach_missed(a, task, false);
		return;
	}
	twork_queue(nt, task, follow_fn, follow_worker, true);
}

static void probe_sched_process_fork(void *data, struct task_struct *parent,
				     struct task_struct *child)
{
	struct mm_struct *mm = READ_ONCE(parent->mm);
	struct stallcap_attach_ent *a;

	/* a thread (its first wait call asks), vfork (followed at exec) */
	if (!mm || !child->mm || child->mm == mm)
		return;
	rcu_read_lock();
	hash_for_each_possible_rcu(stallcap_attach_by_mm, a, mm_node,
				   (unsigned long)mm) {
		if (a->mm != mm || !a->inherit || READ_ONCE(a->dead))
			continue;
		if (stallcap_attacher_may_follow(&a->who, __task_cred(child)))
			follow_request(a, child);
		else
			stallcap_attach_missed(a, child, false);
	}
	rcu_read_unlock();
}

/*
 * May @a follow the program @task (current) has just executed, with
 * credentials @cred?  Never a set-user-ID program (as ptrace_may_access());
 * one that this exec left not dumpable (ids that differ, a file it may not
 * read: begin_new_exec()) only for a maker who may trace any process; else
 * as the maker's ids allow (a root shell started by a set-user-ID helper
 * that the attached process ran is not followed).  RCU read side.
 */
static bool exec_may_follow(const struct stallcap_attach_ent *a,
			    const struct linux_binprm *bprm,
			    const struct cred *cred)
{
	bool not_dumpable;

	if (bprm->secureexec)
		return false;
	not_dumpable = bprm->interp_flags & BINPRM_FLAGS_ENFORCE_NONDUMP ||
		       !uid_eq(cred->euid, cred->uid) ||
		       !gid_eq(cred->egid, cred->gid);
	if (not_dumpable)
		return a->who.trace_any;
	return stallcap_attacher_may_follow(&a->who, cred);
}

static void probe_sched_process_exec(void *data, struct task_struct *task,
				     pid_t old_pid, struct linux_binprm *bprm)
{
	struct signal_struct *parent_sig;
	struct stallcap_attach_ent *a;
	unsigned int bkt;

	rcu_read_lock();
	parent_sig = rcu_dereference(task->real_parent)->signal;
	hash_for_each_rcu(stallcap_attach_by_mm, bkt, a, mm_node) {
		if (!a->inherit || READ_ONCE(a->dead) ||
		    (a->leader->signal != task->signal &&
		     a->leader->signal != parent_sig))
			continue;
		if (exec_may_follow(a, bprm, __task_cred(task)))
			follow_request(a, task);
		else
			stallcap_attach_missed(a, task, false);
	}
	rcu_read_unlock();
}

static struct tracepoint *fork_tp, *exec_tp;

/**
 * stallcap_follow_probes_register() - watch forks and execs (first attach)
 *
 * Context: process, under the attach lock.
 * Return: 0 or -errno.
 */
int stallcap_follow_probes_register(void)
{
	int ret;

	if (!fork_tp || !exec_tp) {
		fork_tp = stallcap_find_tracepoint("sched_process_fork");
		exec_tp = stallcap_find_tracepoint("sched_process_exec");
	}
	if (!fork_tp || !exec_tp)
		return -EOPNOTSUPP;
	ret = tracepoint_probe_register(fork_tp, probe_sched_process_fork,
					NULL);
	if (ret)
		return ret;
	ret = tracepoint_probe_register(exec_tp, probe_sched_process_exec,
					NULL);
	if (ret) {
		tracepoint_probe_unregister(fork_tp, probe_sched_process_fork,
					    NULL);
		tracepoint_synchronize_unregister();
	}
	return ret;
}

/**
 * stallcap_follow_probes_unregister() - and no more (no attach needs them)
 *
 * Waits for running probes; their queued task_works hold the module.
 * Context: process.
 */
void stallcap_follow_probes_unregister(void)
{
	tracepoint_probe_unregister(exec_tp, probe_sched_process_exec, NULL);
	tracepoint_probe_unregister(fork_tp, probe_sched_process_fork, NULL);
	tracepoint_synchronize_unregister();
}
