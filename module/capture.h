/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap capture: a sample of a watched thread, taken by its timer on its
 * own CPU (capture.c), by NMI or IPI on another CPU (capture_remote.c, the
 * rest after the handler in capture_tail.c), inside the kernel's entry code
 * (capture_entry.c), or off CPU (capture_blocked.c); and its user stack read
 * later in the thread's own context (capture_deferred.c).
 */
#ifndef STALLCAP_CAPTURE_H
#define STALLCAP_CAPTURE_H

#include "stallcap.h"

/* ---- capture (capture.c, capture_remote.c, capture_blocked.c) ---- */

enum { CAPTURE_PENDING, CAPTURE_DONE, CAPTURE_MISMATCH, CAPTURE_IRQ };

/* Samples put off because an interrupt ran on top of the thread. */
#define STALLCAP_IRQ_RETRIES	3

/**
 * stallcap_interrupted_an_interrupt() - did this handler (timer, NMI or
 * IPI) interrupt an interrupt taken on top of the current thread?
 *
 * A hard IRQ (stallcap's own buddy checker or watch timer, the tick, ...)
 * or a softirq being served: that handler is not the thread's stall.  The
 * handler running this entered hard-IRQ once itself (nmi_enter() counts
 * one too).
 */
static inline bool stallcap_interrupted_an_interrupt(void)
{
	return (hardirq_count() >> HARDIRQ_SHIFT) > 1 ||
	       (softirq_count() & SOFTIRQ_OFFSET);
}

/* stallcap's own hrtimer callback (buddy checker, watch timer) runs here */
DECLARE_PER_CPU(unsigned int, stallcap_own_irq);

/*
 * Bracket stallcap's own hard-IRQ callbacks: an NMI that lands inside one
 * takes the thread it interrupted, not stallcap's handler.
 */
static inline void stallcap_own_irq_enter(void)
{
	__this_cpu_inc(stallcap_own_irq);
	barrier();	/* before the callback's work, for an NMI here */
}

static inline void stallcap_own_irq_exit(void)
{
	barrier();	/* after the callback's work */
	__this_cpu_dec(stallcap_own_irq);
}

/* Fixed part of a sample, filled by the timer before any capture path. */
void stallcap_sample_init(struct stallcap_watch *w, struct stallcap_sample *s,
			  u64 now);
u32 stallcap_sample_reserve_len(const struct stallcap_session *sess,
				bool user_stack);
u8 stallcap_watch_clock(const struct stallcap_watch *w);
u32 stallcap_capture_current(struct stallcap_watch *w,
			     struct stallcap_sample *s, void *rec,
			     struct pt_regs *regs, u8 path);
void stallcap_put_kernel_ips(struct stallcap_rec_writer *wr,
			     const struct stallcap_session *sess,
			     struct task_struct *task, struct pt_regs *regs,
			     u32 *flags);
struct pt_regs *stallcap_capture_head(struct stallcap_watch *w,
				      struct stallcap_sample *s, void *rec,
				      struct pt_regs *regs, u8 path, u32 *len);
u32 stallcap_capture_rest(struct stallcap_watch *w, struct stallcap_sample *s,
			  void *rec, u32 len, const struct pt_regs *uregs,
			  struct task_struct *task);
unsigned int stallcap_walk_user_frames(const struct pt_regs *uregs, u64 *ips,
				       u32 *flags, bool may_fault);
unsigned int stallcap_unwind_kernel(struct task_struct *task,
				    struct pt_regs *regs, u64 *ips, u32 *flags);
unsigned int stallcap_unwind_off_cpu(struct task_struct *task, u64 *ips,
				     u32 *flags);
unsigned int stallcap_unwind_asleep(struct task_struct *task, u64 *ips,
				    u32 *flags);
struct pt_regs *stallcap_user_regs_of(struct task_struct *task,
				      const struct mm_struct *mm);
bool stallcap_kernel_stack_unused(const struct pt_regs *regs);
bool stallcap_kernel_on_entry_stack(const struct pt_regs *regs);
struct pt_regs *stallcap_entry_user_regs(const struct pt_regs *regs,
					 struct pt_regs *frame);
u8 stallcap_task_off_cpu_state(struct task_struct *task);
unsigned long stallcap_switch_count(const struct task_struct *task);
unsigned int stallcap_remote_user_frames(struct task_struct *task,
					 const struct pt_regs *uregs, u64 *ips,
					 u32 *flags);
u32 stallcap_capture_blocked(struct stallcap_watch *w,
			     struct stallcap_sample *s, void *rec);
void stallcap_sample_finish(struct stallcap_watch *w, struct stallcap_sample *s,
			    void *buf, void *ring_rec, u32 len, u64 start_ns,
			    bool in_handler);
struct pt_regs *stallcap_interrupted_regs(void);
int stallcap_capture_init(void);
void stallcap_capture_exit(void);
void *stallcap_capture_buf_for(void *ring_rec);
void *stallcap_capture_buf_remote(void);
void stallcap_capture_buf_hold(struct stallcap_capture_req *req);
void *stallcap_capture_buf_held(const struct stallcap_capture_req *req);
void stallcap_capture_buf_release(struct stallcap_capture_req *req);

/**
 * struct stallcap_defer - a deferred user-stack capture (capture_deferred.c)
 * @twork: runs in the thread on its return to user space
 * @done_work: instead, when its task_work_add() failed: the record's end
 * @remote_work: instead, without task_work_add(): the stack read from
 *	outside the thread (compat.h)
 * @lnode: on the per-CPU list of requests made from NMI
 * @task: the thread
 * @state: idle, queued (owned by @twork), or orphaned (watch gone)
 * @sess: the session the record goes to (reference held while queued)
 * @mm: the watch's address space (compared only)
 * @cookie: links the record to the samples that asked for it
 * @stall_id: fields copied from the sample that asked first
 * @user_tag: likewise
 * @deadline_ns: likewise
 * @timeout_ns: likewise
 * @clock: likewise
 * @ns_pid: likewise
 * @ns_tid: likewise
 * @origin: likewise (the sample's STALLCAP_ORIGIN_*)
 * @switches: the thread's context switches when a blocked thread's
 *	request was made: the stack read later is the same only if unchanged
 * @copy_bytes: stack bytes to copy from the user sp (a user-mode sample's
 *	user_stack_bytes), or 0: the used stack to the end of its mapping
 * @stack_end: the end of that mapping, as the last such copy found (0: not
 *	yet); read by captures in any context, the watch's as long as it lives
 */
struct stallcap_defer {
	union {
		struct callback_head twork;	/* queued on the task */
		struct work_struct done_work;	/* its task_work_add() failed */
		struct work_struct remote_work;	/* compat.h: read off CPU */
	};
	struct llist_node lnode;
	struct task_struct *task;
	int state;
	struct stallcap_session *sess;
	const struct mm_struct *mm;
	u64 cookie;
	u64 stall_id;
	u64 user_tag;
	u64 deadline_ns;
	u64 timeout_ns;
	u8 clock;
	u8 origin;
	u32 ns_pid;
	u32 ns_tid;
	u32 copy_bytes;
	unsigned long switches;
	unsigned long stack_end;
};

extern atomic_t stallcap_task_works_used;
struct stallcap_defer *stallcap_defer_alloc(struct task_struct *task);
void stallcap_defer_free(struct stallcap_defer *d);
void stallcap_defer_request(struct stallcap_watch *w, struct stallcap_sample *s,
			    bool in_nmi);
u32 stallcap_copy_user_stack(unsigned long sp, u8 *dst, u32 want, u32 *flags);
void stallcap_defer_request_user(struct stallcap_watch *w,
				 struct stallcap_sample *s);
bool stallcap_defer_wanted(const struct stallcap_session *sess,
			   const struct stallcap_sample *s);
void stallcap_defer_buf_free(struct stallcap_session *sess);
void stallcap_defer_init(void);
void stallcap_defer_exit(void);

/* ---- a user stack on the alternate signal stack (capture_sigstack.c) ---- */
u32 stallcap_sigstack_bound(unsigned long sp, u32 want);
void stallcap_put_interrupted_stack(struct stallcap_rec_writer *wr,
				    unsigned long sp, const u8 *copy, u32 len,
				    u32 room, u32 *flags);

/* ---- a user stack past a copy's gap (capture_stack_more.c) ---- */
void stallcap_put_stack_more(struct stallcap_rec_writer *wr,
			     struct task_struct *task, unsigned long sp,
			     unsigned long copied_end, u32 room);

/* ---- the rest of NMI/IPI captures, after the handler (capture_tail.c) ---- */
void stallcap_tail_capture(struct stallcap_capture_req *req,
			   struct pt_regs *regs, u64 start);
bool stallcap_tail_steal(struct stallcap_capture_req *req, bool now);
void stallcap_tail_init(void);
void stallcap_tail_exit(void);

int stallcap_remote_init(void);
void stallcap_remote_exit(void);
int stallcap_remote_send(struct stallcap_capture_req *req, int cpu);
bool stallcap_remote_revoke(struct stallcap_capture_req *req);

#endif /* STALLCAP_CAPTURE_H */
