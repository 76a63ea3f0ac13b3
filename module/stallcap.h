/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap internal interfaces: sessions, watches and the ring.  Capture is
 * in capture.h, attached watches in attach.h, why a thread stalled in why.h.
 *
 * Contexts:
 *  - ioctl/mmap/release run in process context and take sess->lock (mutex);
 *  - watch timers run in hard-IRQ context (HRTIMER_MODE_*_HARD, also on
 *    PREEMPT_RT) and take only raw spinlocks (watch->lock, then ring->lock);
 *  - the NMI handler takes no lock: it fills a ring record that the timer
 *    reserved for it and publishes it with a release store;
 *  - the exit tracepoint probe runs in the exiting task, preemption off.
 */
#ifndef STALLCAP_INTERNAL_H
#define STALLCAP_INTERNAL_H

#include <linux/hashtable.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/init.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include <linux/stallcap.h>

#include "why.h"

/* ---- module parameters (main.c) ---- */
extern unsigned int stallcap_min_deadline_us;
extern unsigned int stallcap_max_watches_per_user;
extern unsigned int stallcap_max_ring_kb;
extern unsigned int stallcap_migrate_retries;
extern bool stallcap_use_nmi;
extern unsigned int stallcap_check_us;
extern unsigned int stallcap_buddy_cpus;
extern unsigned int stallcap_max_fast_watches_per_user;
extern bool stallcap_abi_test;
extern bool stallcap_user_copy_in_handler;
extern bool stallcap_user_copy_in_timer;
extern unsigned int stallcap_mlock_kb;
u64 stallcap_min_timeout_ns(void);
void __init stallcap_abi_layout_check(void);

/* ---- counters (stats.c) ---- */
enum stallcap_counter {
	SC_WATCHES,
	SC_ARMED,
	SC_STALLS,
	SC_SAMPLES,
	SC_STALL_ENDS,
	SC_DEFERRED,
	SC_LOST,
	SC_SUPPRESSED,
	SC_CAPTURE_LOCAL,
	SC_CAPTURE_NMI,
	SC_CAPTURE_IPI,
	SC_CAPTURE_BLOCKED,
	SC_MIGRATE_RETRIES,
	SC_LOST_FIRST,
	SC_LOST_DEFERRED,
	SC_ATTACHED,
	SC_LOCKED_BYTES,
	SC_LOCKED_RLIMIT_BYTES,
	/* not in struct stallcap_stats: debugfs only */
	SC_TIMER_EXPIRIES,
	SC_TIMER_POLLS,		/* of those, polls of a capture sent to a CPU */
	SC_DEFER_BUF_ALLOCS,	/* scratch buffers of deferred reads allocated */
	SC_NR_COUNTERS
};

/**
 * struct stallcap_counters - counters and histograms, all atomic so that
 * NMI, timer and process context may update them without locks
 * @c: the counters, indexed by enum stallcap_counter
 * @cost: capture cost histogram (log2 ns buckets)
 * @late: capture lateness histogram (log2 ns buckets)
 * @nmi: time in NMI/IPI handler context per remote capture (log2 ns buckets)
 */
struct stallcap_counters {
	atomic64_t c[SC_NR_COUNTERS];
	atomic64_t cost[STALLCAP_HIST_BUCKETS];
	atomic64_t late[STALLCAP_HIST_BUCKETS];
	atomic64_t nmi[STALLCAP_HIST_BUCKETS];
};

extern struct stallcap_counters stallcap_global;

void stallcap_count(struct stallcap_counters *sc, enum stallcap_counter i,
		    s64 delta);
void stallcap_hist_add(struct stallcap_counters *sc, u64 cost_ns, s64 late_ns);
void stallcap_hist_nmi(struct stallcap_counters *sc, u64 ns);
void stallcap_counters_read(struct stallcap_counters *sc,
			    struct stallcap_stats *st);
void stallcap_stats_init(void);
void stallcap_stats_exit(void);

/* ---- the ring (ring.c) ---- */

/**
 * struct stallcap_ring - one session's record ring
 * @base: vmalloc_user() area: control page then data area
 * @ctl: the control page, shared with user space
 * @data: the data area
 * @size: data area size (a power of two)
 * @head: reservation head (private copy of ctl->data_head)
 * @lost: records dropped (private copy of ctl->lost, which user may write)
 * @lock: serialises reservations; taken in hard-IRQ or with IRQs off only
 */
struct stallcap_ring {
	void *base;
	struct stallcap_ring_ctl *ctl;
	u8 *data;
	u64 size;
	u64 head;
	u64 lost;
	raw_spinlock_t lock;
};

struct stallcap_ring *stallcap_ring_create(u32 data_bytes, u64 pid_ns_inum);
void stallcap_ring_destroy(struct stallcap_ring *ring);
void *stallcap_ring_reserve(struct stallcap_ring *ring, u16 type, u32 len);
void stallcap_ring_commit(struct stallcap_ring *ring, void *rec, u32 reserved,
			  u32 used);
bool stallcap_ring_readable(struct stallcap_ring *ring);
void stallcap_ring_set_suppressed(struct stallcap_ring *ring, u64 n);
void stallcap_ring_count_lost(struct stallcap_ring *ring);

/* ---- records: the fixed part and its sections (record.c) ---- */

/* abi_test: bytes added to a sample's fixed part, and its extra section */
#define STALLCAP_TEST_FIXED_EXTRA	8
#define STALLCAP_TEST_SEC_TYPE		0x7f00
#define STALLCAP_TEST_SEC_BYTES		24
/* room for a sample's fixed part with nothing else but test additions */
#define STALLCAP_DRAFT_BYTES	(sizeof(struct stallcap_sample) + \
				 STALLCAP_TEST_FIXED_EXTRA + \
				 STALLCAP_TEST_SEC_BYTES)

/**
 * struct stallcap_rec_writer - appends sections to a record being built
 * @rec: the record (its header first); written, never read back
 * @len: bytes of the record so far (the fixed part, then each section)
 */
struct stallcap_rec_writer {
	u8 *rec;
	u32 len;
};

void stallcap_rec_begin(struct stallcap_rec_writer *wr,
			struct stallcap_sample *s, void *rec);
void *stallcap_sec_start(struct stallcap_rec_writer *wr);
void stallcap_sec_end(struct stallcap_rec_writer *wr, u16 type, u32 bytes);
void stallcap_sec_put_regs(struct stallcap_rec_writer *wr,
			   const struct pt_regs *r);
void stallcap_sec_put_sample_regs(struct stallcap_rec_writer *wr,
				  const struct pt_regs *r);
void stallcap_sec_put_stack_as(struct stallcap_rec_writer *wr, u16 type,
			       u64 start, u32 len);
void stallcap_sec_put_stack(struct stallcap_rec_writer *wr, u64 start,
			    u32 len);
void stallcap_sample_stamp(struct stallcap_sample *s);

/* ---- sessions (session.c) ---- */

extern const struct file_operations stallcap_fops;
int stallcap_device_init(void);
void stallcap_device_exit(void);

struct stallcap_user_locked;

/**
 * struct stallcap_locked - where a session's ring and slot memory is charged
 * @user: the caller's user's allowance (mlock_kb), NULL if not charged
 * @user_pages: pages charged to @user
 * @mm: the address space whose pinned_vm holds the rest against
 *	RLIMIT_MEMLOCK (a reference held), or NULL
 * @mm_pages: pages charged to @mm
 * @pages: all the pages charged (without an address space, the part beyond
 *	the allowance is counted here only)
 */
struct stallcap_locked {
	struct stallcap_user_locked *user;
	unsigned long user_pages;
	struct mm_struct *mm;
	unsigned long mm_pages;
	unsigned long pages;
};

/**
 * struct stallcap_session - one open file of /dev/stallcap
 * @lock: serialises configuration, ring creation and watch creation
 * @cfg: the configuration in force (defaults resolved)
 * @ring: the ring, NULL until the first ARM or mmap; then never changes
 * @slots: watch slots (heartbeat, shared deadline), allocated with the ring
 * @slot_used: bitmap of slots in use
 * @pid_ns: the opener's pid namespace (reference held): records' ns ids
 * @watches: the session's watches (sess->lock); lookups by thread go
 *	through the global task hash (watch.c), which survives tid changes
 * @next_stall_id: last stall id handed out
 * @stats: the session's counters
 * @kaddr_visible: the opener may see kernel addresses (CAP_SYSLOG)
 * @may_global: the opener may read system-wide records and counters
 *	(CAP_SYS_ADMIN in the opener's credentials, not the caller's)
 * @may_stats_global: the opener may read the module-wide counters
 *	(CAP_SYS_ADMIN or CAP_PERFMON)
 * @may_trace_all: the opener had CAP_SYS_PTRACE: user stacks of any task
 *	named in a sample (runner, lock owners), not only the watched process
 * @unlimited: the opener had CAP_SYS_RESOURCE: exempt from the watch
 *	limits (max_watches_per_user, max_fast_watches_per_user)
 * @uid: the opener, charged for the watches
 * @wait: poll() waiters
 * @wake_work: wakes @wait from NMI or hard-IRQ context
 * @reap_work: frees the watches of exited threads
 * @doomed: destroyed watches whose chain work may still run (under @lock)
 * @doomed_work: waits for that work and frees them, without @lock (the
 *	chain work takes mmap_lock, and mmap() takes @lock under it)
 * @rate_lock: protects the rate limiter below
 * @rate_window: start of the current one-minute window (ns)
 * @rate_count: stalls reported in the current window
 * @pending_suppressed: suppressed stalls not yet shown in a record
 * @ref: the open file and each queued deferred capture hold one
 * @global: a system-wide reader (STALLCAP_CFG_GLOBAL), on @global_node
 * @global_node: in the list of system-wide readers (global.c)
 * @locked: what the ring and beat slots are charged to (memory.c)
 * @defer_buf: the scratch buffer of the last deferred user-stack read, kept
 *	for the next (capture_deferred.c), or NULL
 */
struct stallcap_session {
	struct mutex lock;
	struct stallcap_config cfg;
	struct stallcap_ring *ring;
	struct stallcap_slot *slots;
	unsigned long *slot_used;
	struct pid_namespace *pid_ns;
	struct list_head watches;
	atomic64_t next_stall_id;
	struct stallcap_counters stats;
	bool kaddr_visible;
	bool may_global;
	bool may_stats_global;
	bool may_trace_all;
	bool unlimited;
	kuid_t uid;
	wait_queue_head_t wait;
	struct irq_work wake_work;
	struct work_struct reap_work;
	struct list_head doomed;
	struct work_struct doomed_work;
	raw_spinlock_t rate_lock;
	u64 rate_window;
	u32 rate_count;
	atomic_t pending_suppressed;
	refcount_t ref;
	bool global;
	struct list_head global_node;
	struct stallcap_locked locked;
	struct stallcap_defer_buf *defer_buf;
};

int stallcap_session_ensure_ring(struct stallcap_session *sess, bool mmap_locked);
void stallcap_config_defaults(struct stallcap_config *c);
int stallcap_config_check(const struct stallcap_session *sess,
			  const struct stallcap_config *c);
long stallcap_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* ---- memory mapped to user space (memory.c) ---- */
void *stallcap_alloc_user(size_t bytes);
int stallcap_map_user(struct vm_area_struct *vma, void *base, size_t bytes);
int stallcap_charge_locked(struct stallcap_session *sess, unsigned long pages,
			   bool mmap_locked);
void stallcap_uncharge_locked(struct stallcap_session *sess);
u64 stallcap_mlock_bytes(void);
u64 stallcap_mlock_used_bytes(kuid_t uid);
void stallcap_session_get(struct stallcap_session *sess);
void stallcap_session_put(struct stallcap_session *sess);
bool stallcap_session_rate_ok(struct stallcap_session *sess, u64 now);

/* ---- watches (watch.c) ---- */

struct user_watches;
struct stallcap_watch_reserve;	/* attach.h */

enum stallcap_watch_state {
	WATCH_IDLE,		/* registered, not armed */
	WATCH_ARMED,		/* deadline timer running */
	WATCH_CAPTURING,	/* NMI/IPI sent, timer polls for the result */
	WATCH_STALLED,		/* captured; timer runs for the next sample */
	WATCH_STALLED_QUIET,	/* captured; no more samples until progress */
	WATCH_CHAINING,		/* blocked in a futex: the chain work samples */
};

/**
 * struct stallcap_capture_req - a capture to be done on another CPU
 * @watch: the watch asking (for its task, session and record fields)
 * @draft: kernel-private fixed part of the sample being captured
 * @draft_room: @draft with room for abi_test's additions (abandoned
 *	captures are built here)
 * @rec: the record reserved in the ring for the result (written, never read)
 * @rec_len: bytes the capture wrote
 * @rec_reserved: bytes reserved for @rec (stallcap_sample_reserve_len())
 * @result: CAPTURE_PENDING until the target CPU wrote DONE, MISMATCH or IRQ
 * @cpu: the CPU asked
 * @path: STALLCAP_PATH_NMI or STALLCAP_PATH_IPI
 * @retries: requests that found another thread on the CPU
 * @irq_retries: requests that found an interrupt on top of the thread
 *	(CAPTURE_IRQ): sent again a little later, at most
 *	STALLCAP_IRQ_RETRIES times
 * @sent_ns: when the request was sent
 * @begin_ns: when the first request of this sample was tried
 * @for_runner: sent for a runnable thread off CPU: the handler is expected
 *	to find another task and describes it (the runner) in the target
 *	CPU's NMI/IPI capture buffer, which it holds for this request
 *	(why_record.c)
 * @runner_len: bytes of the runner's STALLCAP_SEC_TASK section there
 * @times_now: counters read at this capture (STALLCAP_SEC_TIMES); they
 *	become the watch's @times_base when the sample is published
 * @times_taken: @times_now holds the capture's counters
 *
 * The watch holds one (about 400 bytes); what a capture needs only while
 * it is in flight on a CPU, at most one per CPU, is per CPU: the runner's
 * section (in the capture buffer) and the tail (capture_tail.c).
 */
struct stallcap_capture_req {
	struct stallcap_watch *watch;
	union {
		struct stallcap_sample draft;
		u8 draft_room[STALLCAP_DRAFT_BYTES];
	};
	void *rec;
	u32 rec_len;
	u32 rec_reserved;
	int result;
	int cpu;
	u8 path;
	u32 retries;
	u8 irq_retries;
	u64 sent_ns;
	u64 begin_ns;
	bool for_runner;
	u32 runner_len;
	struct stallcap_times_snap times_now;
	bool times_taken;
};

/**
 * struct stallcap_watch - one thread's watch in one session
 * @sess: owning session (the session outlives its watches)
 * @task: the watched thread (reference held)
 * @tid: its thread id when the watch was made: records keep it even after
 *	an exec from a secondary thread takes the leader's
 * @ns_pid: its thread group id in the session's pid namespace (0: not there)
 * @ns_tid: its thread id there
 * @mm: its address space when armed (compared, never dereferenced): user
 *	memory is read only while the thread still runs that program
 * @sess_node: in the session's list of watches
 * @timer: deadline / sampling / polling timer (hard-IRQ)
 * @lock: protects everything below against the timer and the exit probe;
 *	@state, @dead, @isolated and @deadline are also read without it (the
 *	buddy checker's first look, buddy.c), so they are written with
 *	WRITE_ONCE()
 * @state: enum stallcap_watch_state
 * @dead: the thread exited or the watch is being freed; the timer stops
 * @doomed: destroyed (stallcap_watch_destroy()): on the session's doomed
 *	list, never destroyed again (sess->lock)
 * @flags: STALLCAP_ARM_* of the last arm
 * @timeout_ns: relative timeout (threshold) of the last arm
 * @user_tag: the user's tag
 * @armed_at: when the current deadline period began (ns)
 * @deadline: when the deadline passes / passed (ns)
 * @cpu_base: task CPU time at @armed_at (CPUTIME watches)
 * @slot: slot index (heartbeat and shared-deadline watches), or -1
 * @last_beats: beat counter seen at the previous heartbeat check
 * @shared_seen: shared deadline: the slot's value at the last look (ns, or
 *	counter ticks with STALLCAP_ARM_DEADLINE_TSC), which a stall missed
 * @shared_looked_at: shared deadline: when the timer last read the slot
 * @last_idle: idle mark seen at the previous heartbeat check
 * @beat_base_stale: a parked watch progressed at its last check: @times_base
 *	is taken at the next check that sees none (beat_scan.c)
 * @beat_scanner: the CPU scanner checking this heartbeat watch (parked: its
 *	own timer idle), NULL when not parked (beat_scan.c)
 * @beat_dozing: parked, but off the scanner's list while its thread is off
 *	every CPU marked idle (stallcap_beat_doze(), beat_doze.c)
 * @beat_node: in that scanner's list (empty while dozing)
 * @beat_next: when the scanner checks the parked watch next (ns)
 * @beat_period: its check period, stallcap_beat_period() when parked
 * @stall_id: current stall, 0 when none
 * @samples: samples taken in the current stall (written or lost)
 * @next_interval: interval to the next sample (ns)
 * @sample_at: nominal time of the next sample (ns)
 * @quiet: the current stall was suppressed by the rate limit: no records
 * @irq_retries: samples put off because the thread's CPU was in an interrupt
 * @counted_armed: the watch is counted in SC_ARMED
 * @req: capture request in flight (WATCH_CAPTURING)
 * @defer: deferred user-stack request (capture_deferred.c)
 * @blocked_switches: the thread's context-switch count as its last blocked
 *	sample began, which no switch changed during that capture (else 0):
 *	without task_work_add() (compat.h) its user stack is read from a worker
 *	while that count holds (capture_deferred.c)
 * @chain_work: takes a sample of the thread blocked in a futex wait, with
 *	its owner chain, in process context (why_chain.c)
 * @times_base: counters at the start of the next sample's interval (arm,
 *	progress, or the previous sample): STALLCAP_SEC_TIMES
 * @task_node: node in the global task -> watches hash
 * @buddy_node: in the list the buddy checkers walk (buddy.c)
 * @uw: its user's entry in the per-user accounting (watch.c)
 * @fast: counted in the user's armed watches with a period under 1 ms
 * @fast_exempt: the opener had CAP_SYS_RESOURCE
 * @isolated: armed (or, attached, gone busy) on a CPU isolated from timers:
 *	no timer queued, a buddy checker starts it on a housekeeping CPU when
 *	the deadline nears
 * @home_csd: brings the timer back to the thread's CPU (watch_home.c)
 * @home_pending: @home_csd is queued or its function runs
 * @attach: the attach that made this watch (attach.c), NULL for ARM
 * @wait_seen: an attached watch saw its thread enter or leave a wait call
 * @started_told: an attached watch was announced (STALLCAP_WATCH_STARTED,
 *	stallcap_watch_announce()); w->lock
 * @busy_pending: its thread went busy before that: BUSY follows STARTED
 * @busy_told: an attached watch told its thread's first busy period
 *	(STALLCAP_WATCH_BUSY); w->lock
 * @resume_pending: its thread was inside a wait call at the attach, and
 *	the attach's poll looks for that call's return (attach_resume.c)
 * @restart_fn: its thread's last counted wait call returned to be resumed
 *	by restart_syscall (-ERESTART_RESTARTBLOCK), by this function of its
 *	restart block, or NULL: only that restart resumes the wait (a
 *	handler's sigreturn or another call replaces the function)
 * @in_restart: its thread is inside that restart_syscall
 * @rcu: deferred free
 */
struct stallcap_watch {
	struct stallcap_session *sess;
	struct task_struct *task;
	pid_t tid;
	pid_t ns_pid;
	pid_t ns_tid;
	u32 flags;
	const struct mm_struct *mm;
	struct list_head sess_node;
	struct hrtimer timer;
	raw_spinlock_t lock;
	enum stallcap_watch_state state;
	bool dead;
	bool doomed;
	bool last_idle;
	bool beat_base_stale;
	bool beat_dozing;
	bool quiet;
	u8 irq_retries;
	bool counted_armed;
	bool fast;
	bool fast_exempt;
	bool started_told;
	bool busy_pending;
	bool busy_told;
	u64 timeout_ns;
	u64 user_tag;
	u64 armed_at;
	u64 deadline;
	u64 cpu_base;
	int slot;
	atomic_t home_pending;
	u64 last_beats;
	u64 shared_seen;
	u64 shared_looked_at;
	struct stallcap_beat_scanner *beat_scanner;
	struct list_head beat_node;
	u64 beat_next;
	u64 beat_period;
	u64 stall_id;
	u32 samples;
	bool isolated;
	bool wait_seen;
	bool resume_pending;
	bool in_restart;
	u64 next_interval;
	u64 sample_at;
	struct stallcap_capture_req req;
	struct stallcap_defer *defer;
	unsigned long blocked_switches;
	struct work_struct chain_work;
	struct stallcap_times_snap times_base;
	struct hlist_node task_node;
	struct list_head buddy_node;
	struct user_watches *uw;
	call_single_data_t home_csd;
	struct stallcap_attach_ent *attach;
	long (*restart_fn)(struct restart_block *restart);
	struct rcu_head rcu;
};

/* shared by watch.c (lifetime), watch_arm.c (the ARM ioctls) and watch_attached.c */
struct stallcap_watch *stallcap_watch_create(struct stallcap_session *sess);
void stallcap_watch_destroy(struct stallcap_watch *w);
struct stallcap_watch *stallcap_watch_of_current(struct stallcap_session *sess);
struct hlist_head *stallcap_task_watch_bucket(const struct task_struct *task);
/* each watch of @task (RCU read side); the caller checks w->task */
#define stallcap_for_each_watch_of_task(w, task) \
	hlist_for_each_entry_rcu(w, stallcap_task_watch_bucket(task), task_node)
void stallcap_watch_count_armed(struct stallcap_watch *w, bool armed);
void stallcap_watch_begin_deadline(struct stallcap_watch *w, u64 now,
				   u64 deadline);
/* per-user limits (watch_limits.c) */
struct user_watches *stallcap_watch_charge(kuid_t uid, bool unlimited);
void stallcap_watch_uncharge(kuid_t uid);
int stallcap_watch_fast_update(struct stallcap_watch *w, u64 period);
int stallcap_watch_reserve(struct stallcap_session *sess, unsigned int n,
			   u64 period, struct stallcap_watch_reserve *r);
struct user_watches *stallcap_watch_take_reserved(struct stallcap_watch_reserve *r);
void stallcap_watch_give_back(struct stallcap_watch_reserve *r);
void stallcap_watch_unreserve(struct stallcap_watch_reserve *r);
int stallcap_watch_arm(struct stallcap_session *sess,
		       const struct stallcap_arm *arm);
int stallcap_watch_rearm(struct stallcap_session *sess, u64 timeout_ns);
int stallcap_watch_disarm(struct stallcap_session *sess);
int stallcap_watch_release(struct stallcap_session *sess);
void stallcap_watches_destroy(struct stallcap_session *sess);
void stallcap_watches_reap(struct work_struct *work);
void stallcap_watches_free_doomed(struct work_struct *work);
enum hrtimer_restart stallcap_watch_timer_fn(struct hrtimer *timer);
void stallcap_watch_abandon_capture(struct stallcap_watch *w);
void stallcap_watch_remote_done(struct stallcap_watch *w);
void stallcap_watch_end_stall(struct stallcap_watch *w, u64 now);
void stallcap_watch_chain_done(struct stallcap_watch *w, const void *chain,
			       u32 chain_len, bool raced);
u64 stallcap_task_cputime(struct task_struct *task);
struct tracepoint;
struct tracepoint *stallcap_find_tracepoint(const char *name);
int stallcap_watch_init(void);
void stallcap_watch_exit(void);

/* ---- system-wide readers (global.c) ---- */
void stallcap_global_attach(struct stallcap_session *sess);
void stallcap_global_detach(struct stallcap_session *sess);
void stallcap_global_mirror(struct stallcap_session *src, u16 type,
			    const void *rec, u32 len);
void stallcap_global_lost(struct stallcap_session *src);
bool stallcap_global_readers(void);

/* ---- slots: heartbeat and shared-deadline watches (slot.c) ---- */
#define STALLCAP_ARM_SLOT_KINDS	(STALLCAP_ARM_HEARTBEAT | \
				 STALLCAP_ARM_SHARED_DEADLINE)
bool stallcap_slot_available(struct stallcap_session *sess,
			     const struct stallcap_watch *w);
int stallcap_slot_attach(struct stallcap_session *sess, struct stallcap_watch *w,
			 u32 kind, u64 deadline);
void stallcap_slot_detach(struct stallcap_session *sess, struct stallcap_watch *w);
enum stallcap_beat_seen {
	STALLCAP_BEAT_NONE,	/* busy, no beat: no progress */
	STALLCAP_BEAT_IDLE,	/* idle since the previous check */
	STALLCAP_BEAT_CHANGED,	/* a beat, or idle / busy again */
};
enum stallcap_beat_seen stallcap_beat_look(struct stallcap_watch *w);
bool stallcap_beat_progress(struct stallcap_watch *w);
bool stallcap_beat_idle(struct stallcap_watch *w);
u64 stallcap_beat_period(const struct stallcap_watch *w);
u64 stallcap_beat_next(const struct stallcap_watch *w, u64 now);
u64 stallcap_grid_next(u64 now, u64 period);
bool stallcap_shared_due(struct stallcap_watch *w, u64 now, u64 *next);
extern bool stallcap_deadline_tsc;
u32 stallcap_tsc_khz(void);
bool stallcap_shared_moved(const struct stallcap_watch *w);

/* ---- heartbeat scanners, one per CPU (beat_scan.c) ---- */
struct stallcap_beat_scanner;
extern bool stallcap_beat_scan;
DECLARE_PER_CPU(unsigned long, stallcap_beat_expiries);
DECLARE_PER_CPU(unsigned long, stallcap_beat_checks);
DECLARE_PER_CPU(unsigned long, stallcap_beat_scan_ns);
bool stallcap_beat_park(struct stallcap_watch *w, u64 now);
void stallcap_beat_unpark(struct stallcap_watch *w);
void stallcap_beat_rescue(u64 now, u64 overdue);
bool stallcap_beat_all_parked(void);
extern atomic_t stallcap_beat_parked;
extern atomic_t stallcap_beat_dozing;
void stallcap_beat_doze(struct stallcap_watch *w);
void stallcap_beat_wake(struct stallcap_watch *w);
void stallcap_beat_init(void);
void stallcap_beat_exit(void);
/* beat_doze.c: the sched_switch probe that dozes and wakes parked watches */
extern bool stallcap_beat_doze_on;
void stallcap_beat_doze_enable(void);
bool stallcap_beat_doze_ready(void);
void stallcap_beat_doze_init(void);
void stallcap_beat_doze_exit(void);

/* ---- buddy checkers (buddy.c) ---- */
DECLARE_PER_CPU(unsigned long, stallcap_watch_expiries);
DECLARE_PER_CPU(unsigned long, stallcap_buddy_expiries);
DECLARE_PER_CPU(unsigned long, stallcap_buddy_rescues);
DECLARE_PER_CPU(unsigned long, stallcap_buddy_ns);
DECLARE_PER_CPU(unsigned long, stallcap_buddy_walks);
DECLARE_PER_CPU(unsigned long, stallcap_buddy_queue_looks);
DECLARE_PER_CPU(unsigned long, stallcap_watch_homes);
u64 stallcap_buddy_period_ns(void);
bool stallcap_cpu_takes_timers(void);
void stallcap_watch_timer_start(struct stallcap_watch *w, u64 deadline);
void stallcap_watch_home_init(struct stallcap_watch *w);
void stallcap_watch_timer_home(struct stallcap_watch *w);
void stallcap_watch_home_sync(struct stallcap_watch *w);
void stallcap_buddy_add(struct stallcap_watch *w);
void stallcap_buddy_armed(void);
void stallcap_buddy_del(struct stallcap_watch *w);
struct hrtimer_cpu_base;
int stallcap_overdue_watches(struct hrtimer_cpu_base *base, u64 before,
			     unsigned int skip, struct stallcap_watch **out,
			     unsigned int max);
int stallcap_buddy_init(void);
void stallcap_buddy_exit(void);

#endif /* STALLCAP_INTERNAL_H */
