/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap attached watches: STALLCAP_IOC_ATTACH and DETACH (attach.c), who
 * may attach (attach_perm.c), the wait-call probes (attach_wait.c), a
 * thread's wait call told from its registers (attach_wait_regs.c), what
 * appears after the attach (attach_follow.c), the threads inside a wait
 * call at the attach (attach_resume.c), and the watches' busy and idle
 * periods (watch_attached.c).
 */
#ifndef STALLCAP_ATTACH_H
#define STALLCAP_ATTACH_H

#include <linux/errno.h>
#include <linux/ptrace.h>

#include "stallcap.h"

/* ---- attached watches (attach.c, attach_wait.c) ---- */

#define STALLCAP_ATTACH_TWORKS	BITS_PER_LONG
#define STALLCAP_FOLLOW_THREADS	5	/* the first thread and four more */
#define STALLCAP_ATTACH_HASH_BITS	6

/**
 * struct stallcap_attach_twork - a request to watch a new thread, or to
 * attach a followed process, run in that task on its way back to user space
 * (attach_follow.c); or, without task_work_add() (compat.h), by a worker
 * @twork: the task_work
 * @a: the attach (a reference is held while queued)
 * @work: (worker) the work item
 * @task: (worker) the task, a reference held
 * @mm: (worker) its mm when asked, a reference held (mmgrab): an exec since
 *	(a set-user-ID program, maybe) cancels the request
 * @fn: (worker) what to do, as the task_work would have
 * @follow_task: (worker, a followed process) @task while the request is
 *	in flight, else 0
 * @follow_threads: (worker, a followed process) the threads of @mm, @task
 *	or others, that entered a wait call the attach to be made counts (a
 *	thread's address, set from 0 by stallcap_follow_wait_entry(), NMI
 *	included); a thread that finds them all taken starts idle
 */
struct stallcap_attach_twork {
	struct callback_head twork;
	struct stallcap_attach_ent *a;
	struct work_struct work;
	struct task_struct *task;
	struct mm_struct *mm;
	void (*fn)(const struct stallcap_attach_twork *nt);
	unsigned long follow_task;
	unsigned long follow_threads[STALLCAP_FOLLOW_THREADS];
};

/**
 * struct stallcap_attacher - who made an attach (ATTACH's caller)
 * @uid: the caller's real uid
 * @gid: the caller's real gid
 * @trace_any: the caller had CAP_SYS_PTRACE in the initial user namespace
 *
 * What the attaches that follow its processes are checked against.
 */
struct stallcap_attacher {
	kuid_t uid;
	kgid_t gid;
	bool trace_any;
};

/**
 * enum stallcap_wait_kind - the kinds of wait call, each counted by the
 * attaches that ask for it
 * @SC_WAIT_LOOP: an event loop's wait (epoll_wait, poll, ...): every attach
 * @SC_WAIT_PARK: a futex wait, a semaphore wait, a sleep
 *	(STALLCAP_ATTACH_PARK)
 * @SC_WAIT_RECV: a receive on a blocking socket (STALLCAP_ATTACH_RECV)
 */
enum stallcap_wait_kind {
	SC_WAIT_LOOP = BIT(0),
	SC_WAIT_PARK = BIT(1),
	SC_WAIT_RECV = BIT(2),
};

/**
 * struct stallcap_watch_reserve - watches counted ahead against the
 *	per-user limits, for the threads of one ATTACH (watch_limits.c)
 * @uw: the user's entry (valid while @left is counted)
 * @left: watches counted and not yet made
 * @fast: counted as fast watches too (a deadline under 1 ms)
 */
struct stallcap_watch_reserve {
	struct user_watches *uw;
	unsigned int left;
	bool fast;
};

/**
 * struct stallcap_attach_ent - one STALLCAP_IOC_ATTACH of one session
 * @node: in the list of attaches (attach_lock)
 * @mm_node: in the hash by @mm, read under RCU by the wait probes
 * @sess: the attaching session (alive while !@dead)
 * @leader: the process's thread group leader (reference held)
 * @mm: the program's address space (mmgrab: compared, never reused)
 * @ns_pid: the process's id in the caller's pid namespace, as given to
 *	ATTACH (DETACH names it so)
 * @tgid: the process's id in the initial namespace
 * @timeout_ns: the deadline of a busy period
 * @user_tag: copied into the records
 * @cputime: STALLCAP_ATTACH_CPUTIME
 * @inherit: STALLCAP_ATTACH_INHERIT (attach_follow.c)
 * @waits: the kinds of wait call it counts (enum stallcap_wait_kind):
 *	SC_WAIT_LOOP always, SC_WAIT_PARK with STALLCAP_ATTACH_PARK,
 *	SC_WAIT_RECV with STALLCAP_ATTACH_RECV
 * @who: who made the attach (the first one's, for those that follow)
 * @dead: detached; no new watch
 * @no_new_threads: a watch for a new thread failed (limit): stop trying
 * @reserve: the watch counts taken ahead for the threads present at the
 *	ATTACH, while it makes their watches (attach.c)
 * @ref: the attach list and each queued task_work hold one
 * @twork_busy: bitmap of @tworks in flight
 * @tworks: new-thread and new-process requests, taken without allocating
 * @resume_poll: looks for the return of the wait calls its threads were in
 *	at the attach, without task_work_add() (attach_resume.c)
 * @rcu: deferred free, after a grace period
 * @free_work: then the free itself, in process context (attach.c)
 */
struct stallcap_attach_ent {
	struct list_head node;
	struct hlist_node mm_node;
	struct stallcap_session *sess;
	struct task_struct *leader;
	struct mm_struct *mm;
	pid_t ns_pid;
	pid_t tgid;
	u64 timeout_ns;
	u64 user_tag;
	bool cputime;
	bool inherit;
	u8 waits;
	bool dead;
	bool no_new_threads;
	struct stallcap_watch_reserve reserve;
	struct stallcap_attacher who;
	refcount_t ref;
	unsigned long twork_busy;
	struct stallcap_attach_twork tworks[STALLCAP_ATTACH_TWORKS];
	struct delayed_work resume_poll;
	struct rcu_head rcu;
	struct work_struct free_work;
};

int stallcap_attach(struct stallcap_session *sess,
		    const struct stallcap_attach *arg);
int stallcap_detach(struct stallcap_session *sess, unsigned long pid);
void stallcap_attach_release(struct stallcap_session *sess);
int stallcap_attach_init(void);
int stallcap_attach_permitted(struct task_struct *task);
struct mm_struct *stallcap_attach_checked_mm(struct task_struct *leader,
					     int *ret);
struct task_struct *stallcap_attach_find_process(pid_t pid);
void stallcap_attacher_current(struct stallcap_attacher *who);
bool stallcap_attacher_may_follow(const struct stallcap_attacher *who,
				  const struct cred *tcred);
void stallcap_attach_perm_init(void);
/* ksym_lto.c: the names a ThinLTO kernel gave the probed functions */
int stallcap_ksym_lto_names(const char *const *names, const char **found,
			    unsigned int n);
unsigned int stallcap_ksym_lto_loads(void);
size_t stallcap_ksym_base_len(const char *name);
void stallcap_ksym_lto_init(void);
void stallcap_ksym_lto_exit(void);
void stallcap_attach_exit(void);
void stallcap_attach_watch_event(struct stallcap_watch *w, u32 event);
void stallcap_attach_missed(const struct stallcap_attach_ent *a,
			    struct task_struct *task, bool thread);
int stallcap_attach_watch_task(struct stallcap_attach_ent *a,
			       struct task_struct *task, bool busy);
unsigned int stallcap_attach_count_threads(struct stallcap_attach_ent *a);
int stallcap_attach_present_threads(struct stallcap_attach_ent *a);
int stallcap_attach_inherited(struct stallcap_attach_ent *parent,
			      struct task_struct *task,
			      const struct stallcap_attach_twork *nt);
void stallcap_follow_resume_waited(const struct stallcap_attach_twork *nt,
				   struct stallcap_attach_ent *a);
void stallcap_attach_queue_work(struct work_struct *work);
void stallcap_attach_put(struct stallcap_attach_ent *a);
void stallcap_attach_lock(void);
void stallcap_attach_unlock(void);
extern DECLARE_HASHTABLE(stallcap_attach_by_mm, STALLCAP_ATTACH_HASH_BITS);
bool stallcap_attach_wait_boundary(bool busy, unsigned int kind,
				   bool restartable);
bool stallcap_attach_wants_current(unsigned int kind);
void stallcap_follow_wait_entry(unsigned int kind);
int stallcap_attach_probes_get(unsigned int waits);
void stallcap_attach_probes_put(unsigned int waits);
void stallcap_attach_probes_exit(void);
int stallcap_follow_probes_register(void);
void stallcap_follow_probes_unregister(void);
int stallcap_wait_probes_register(void);
void stallcap_wait_probes_unregister(void);
void stallcap_wait_probes_register_more(void);
int stallcap_park_probes_register(void);
void stallcap_park_probes_unregister(void);
int stallcap_recv_probes_register(void);
void stallcap_recv_probes_unregister(void);
struct stallcap_watch *stallcap_watch_create_attached(struct stallcap_session *sess,
						      struct task_struct *task,
						      struct stallcap_attach_ent *a);
struct stallcap_watch *stallcap_watch_find_attached(struct stallcap_session *sess,
						    const struct task_struct *task,
						    struct stallcap_attach_ent *a);
void stallcap_watches_destroy_attached(struct stallcap_session *sess,
				       struct stallcap_attach_ent *a);
void stallcap_watch_announce(struct stallcap_watch *w);
void stallcap_watch_busy(struct stallcap_watch *w, u64 now);
void stallcap_watch_busy_unless_waited(struct stallcap_watch *w, u64 now);
void stallcap_watch_idle(struct stallcap_watch *w, u64 now);
unsigned int stallcap_watches_attached_mark(struct task_struct *task,
					    bool busy, unsigned int kind,
					    bool restartable);
unsigned int stallcap_watches_attached_restart(struct task_struct *task,
					       bool entering, bool restartable);
bool stallcap_watches_restart_pending(struct task_struct *task);
bool stallcap_watched_by_attach(const struct stallcap_attach_ent *a);
void stallcap_watch_attached_resumed(const struct stallcap_attach_ent *a,
				     bool restartable);
int stallcap_attach_resume_request(struct stallcap_attach_ent *a,
				   struct task_struct *task);
bool stallcap_wait_probes_count(long nr, const struct pt_regs *regs,
				unsigned int waits);
bool stallcap_wait_probes_count_read(const char *fn_name, unsigned int waits);

/* between the wait calls (attach_wait.c) and their sets (attach_wait_set.c) */
struct kretprobe;

/**
 * struct stallcap_wait_probe_set - kretprobes registered and removed together
 * @probes: the probes
 * @ptrs: the registered ones, for unregister_kretprobes()
 * @nr: how many probes
 * @nr_required: the first @nr_required probes must exist (those after them
 *	are calls that a kernel may lack: epoll_pwait2 before 5.11,
 *	futex_waitv before 5.16, io_uring compiled out)
 * @nr_registered: how many are registered (attach_lock)
 * @registered: bit i: @probes[i] is registered (written under attach_lock)
 * @syscall_nrs: each probe's x86-64 system call number, -1 if unknown
 * @lto_tried: bit i: @probes[i]'s ThinLTO name was looked for (attach_lock)
 * @lto_loads: stallcap_ksym_lto_loads() then
 * @name: for the log
 */
struct stallcap_wait_probe_set {
	struct kretprobe *probes;
	struct kretprobe **ptrs;
	unsigned long registered;
	const int *syscall_nrs;
	unsigned int nr;
	unsigned int nr_required;
	unsigned int nr_registered;
	unsigned long lto_tried;
	unsigned int lto_loads;
	const char *name;
};

extern struct stallcap_wait_probe_set stallcap_wait_set, stallcap_park_set,
	stallcap_recv_set;

void stallcap_wait_deferred_init(void);
void stallcap_wait_deferred_sync(void);
bool stallcap_wait_call_args_count(long nr, const struct pt_regs *regs);
bool stallcap_task_in_wait_call(struct task_struct *task, unsigned int waits);
bool stallcap_task_left_wait_call(struct task_struct *task,
				  unsigned int waits);
void stallcap_attach_resume_init(struct stallcap_attach_ent *a);
void stallcap_attach_resume_late(struct stallcap_attach_ent *a,
				 const struct task_struct *task);
void stallcap_attach_resume_stop(struct stallcap_attach_ent *a);
bool stallcap_current_call_returned(void);
bool stallcap_current_call_restartable(void);

/* A wait call returned: to be resumed by restart_syscall? */
static inline bool stallcap_returned_restartable(const struct pt_regs *regs)
{
	return regs_return_value((struct pt_regs *)regs) ==
	       -ERESTART_RESTARTBLOCK;
}

#endif /* STALLCAP_ATTACH_H */
