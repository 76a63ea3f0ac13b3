// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap watch timer: one hrtimer per watch, HARD mode so that it expires
 * in hard-IRQ context on PREEMPT_RT too.  Its state machine:
 *
 *   ARMED --deadline--> capture --> STALLED --next sample--> capture ...
 *                          |                       (T, 2T, 4T, ... capped)
 *                          +--(thread on another CPU)--> CAPTURING
 *   CAPTURING --poll: DONE--> STALLED
 *             --poll: MISMATCH--> resend (bounded) or capture as blocked
 *   any --progress (rearm, disarm, beat, slot store, release, exit)-->
 *        stall-end record
 *
 * A shared-deadline watch's timer expires at the deadline it last read from
 * the slot: a later deadline there re-queues it (no stall), 0 (idle) makes
 * it look again every T, an unchanged one is the stall.  While stalled it
 * looks at the slot at every sample and at least every T/4: a new value
 * ends the stall.
 *
 * The timer runs with the watch's lock held and never waits for another
 * CPU: a capture on another CPU is requested, then polled on a later expiry.
 */
#include <linux/hrtimer.h>
#include <linux/sched.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <asm/irq_regs.h>

#include "compat.h"
#include "stallcap.h"
#include "capture.h"

#define POLL_NS		(100 * NSEC_PER_USEC)	/* NMI/IPI result polling */
#define REMOTE_TIMEOUT_NS (20 * NSEC_PER_MSEC)	/* give up on a lost NMI */
#define IRQ_RETRY_NS	(500 * NSEC_PER_USEC)	/* look again after an irq */
#define MAX_MIGRATE_RETRIES 16	/* whatever the migrate_retries parameter */

static u32 migrate_retries(void)
{
	return min_t(u32, READ_ONCE(stallcap_migrate_retries),
		     MAX_MIGRATE_RETRIES);
}

/* The watch's thread now runs another program (exec): stop capturing it. */
static bool program_changed(const struct stallcap_watch *w)
{
	return READ_ONCE(w->task->mm) != w->mm;
}

static enum hrtimer_restart restart_at(struct stallcap_watch *w, u64 when)
{
	hrtimer_set_expires(&w->timer, ns_to_ktime(when));
	return HRTIMER_RESTART;
}

/* While stalled, a slot watch also checks its slot every T/4. */
static enum hrtimer_restart stalled_restart(struct stallcap_watch *w, u64 now)
{
	u64 when = w->state == WATCH_STALLED ? w->sample_at : U64_MAX;

	if (w->flags & STALLCAP_ARM_SLOT_KINDS)
		when = min(when, now + stallcap_beat_period(w));
	return when == U64_MAX ? HRTIMER_NORESTART : restart_at(w, when);
}

/*
 * After a sample: schedule the next one, or stay quiet until progress.
 * SET_CONFIG may replace the configuration meanwhile: one snapshot of the
 * two fields is used.  The next point of T, 2T, 4T, ... (capped) still ahead
 * is found in at most log2(cap / T) doublings and one division: a timer
 * that lagged for long skips the points it missed without looping.
 */
static enum hrtimer_restart next_sample(struct stallcap_watch *w, u64 now)
{
	const struct stallcap_config *cfg = &w->sess->cfg;
	u32 max_samples = READ_ONCE(cfg->max_samples);
	u64 min = stallcap_min_timeout_ns();
	u64 cap = max(READ_ONCE(cfg->sample_cap_ns), min);

	if (w->samples >= max_samples) {
		WRITE_ONCE(w->state, WATCH_STALLED_QUIET);
		return stalled_restart(w, now);
	}
	WRITE_ONCE(w->state, WATCH_STALLED);
	/* never a zero interval (an absolute deadline already past) */
	w->next_interval = clamp(w->next_interval, min, cap);
	do {
		w->sample_at += w->next_interval;
		w->next_interval = min(w->next_interval * 2, cap);
	} while (w->sample_at <= now && w->next_interval < cap);
	if (w->sample_at <= now)	/* intervals are at the cap now */
		w->sample_at += ((now - w->sample_at) / cap + 1) * cap;
	return stalled_restart(w, now);
}

static void capture_blocked_into(struct stallcap_watch *w, u64 start,
				 u32 flags)
{
	struct stallcap_sample *d = &w->req.draft;
	void *buf = stallcap_capture_buf_for(w->req.rec);
	u32 len;

	d->flags |= flags;
	len = stallcap_capture_blocked(w, d, buf);
	stallcap_count(&w->sess->stats, SC_CAPTURE_BLOCKED, 1);
	stallcap_sample_finish(w, d, buf, w->req.rec, len, start, false);
}

/* Copy a user-mode thread's user stack here, with interrupts off? */
static bool timer_copies_user_stack(void)
{
	return !SC_HAVE_TASK_WORK || READ_ONCE(stallcap_user_copy_in_timer);
}

/*
 * The thread this timer interrupted: in user mode, its user stack is read on
 * this interrupt's return to user space rather than with interrupts off
 * here (capture_deferred.c), unless user_copy_in_timer says otherwise (or
 * the kernel lacks task_work_add(), compat.h).
 */
static u32 capture_current_here(struct stallcap_watch *w,
				struct stallcap_sample *d, void *buf,
				struct pt_regs *regs)
{
	bool room = w->req.rec_reserved >=
		    stallcap_sample_reserve_len(w->sess, true);
	u32 len;

	if (room && (!user_mode(regs) || timer_copies_user_stack()))
		return stallcap_capture_current(w, d, buf, regs,
						STALLCAP_PATH_LOCAL);
	/* no room reserved for it (a parameter changed since): read it later */
	if (stallcap_capture_head(w, d, buf, regs, STALLCAP_PATH_LOCAL, &len)) {
		if (user_mode(regs))
			stallcap_defer_request_user(w, d);
		else
			stallcap_defer_request(w, d, false);
	}
	return stallcap_capture_rest(w, d, buf, len, NULL, current);
}

/*
 * Does a capture by this timer of the thread it interrupted copy the user
 * stack into the record (capture_current_here())?  Decides the room
 * reserved for it.
 */
static bool current_copies_user_stack(void)
{
	struct pt_regs *regs = get_irq_regs() ?: stallcap_interrupted_regs();

	return regs && (!user_mode(regs) || timer_copies_user_stack());
}

/*
 * Capture from this CPU: the thread itself when the timer interrupted it
 * (also after it migrated here while a remote capture was being tried: its
 * stack read "as blocked" would start at this timer's own frame), else the
 * thread as it waits.
 */
static void capture_here(struct stallcap_watch *w, u64 start, u32 flags)
{
	struct stallcap_sample *d = &w->req.draft;
	void *buf = stallcap_capture_buf_for(w->req.rec);
	struct pt_regs *regs;
	u32 len;

	if (w->task != current) {
		capture_blocked_into(w, start, flags);
		return;
	}
	regs = get_irq_regs() ?: stallcap_interrupted_regs();
	d->flags |= flags;
	if (!regs) {
		struct stallcap_rec_writer wr;

		stallcap_sample_stamp(d);
		stallcap_rec_begin(&wr, d, w->req.draft_room);
		d->path = STALLCAP_PATH_LOCAL;
		d->state = STALLCAP_STATE_RUNNING;
		d->flags |= STALLCAP_SAMPLE_ABANDONED;
		stallcap_sample_finish(w, d, w->req.draft_room, w->req.rec,
				       wr.len, start, false);
		return;
	}
	len = capture_current_here(w, d, buf, regs);
	stallcap_count(&w->sess->stats, SC_CAPTURE_LOCAL, 1);
	stallcap_sample_finish(w, d, buf, w->req.rec, len, start, false);
}

static enum hrtimer_restart send_remote(struct stallcap_watch *w, u64 now)
{
	struct stallcap_capture_req *req = &w->req;

	req->runner_len = 0;
	if (stallcap_remote_send(req, task_cpu(w->task)))
		req->cpu = -1;	/* slot busy: send on the next poll */
	WRITE_ONCE(w->state, WATCH_CAPTURING);
	return restart_at(w, now + POLL_NS);
}

/*
 * Put a capture off because the timer interrupted an interrupt taken on top
 * of the thread (e.g. RCU's softirq after the tick)?  Bounded per sample.
 */
static bool irq_retry(struct stallcap_watch *w)
{
	if (w->task == current && w->irq_retries < STALLCAP_IRQ_RETRIES &&
	    stallcap_interrupted_an_interrupt()) {
		w->irq_retries++;
		return true;
	}
	w->irq_retries = 0;
	return false;
}

/* Take one sample of @w's thread now. */
static enum hrtimer_restart take_sample(struct stallcap_watch *w, u64 now)
{
	struct stallcap_session *sess = w->sess;
	struct stallcap_sample *d = &w->req.draft;
	struct task_struct *task = w->task;
	u32 rec_bytes;
	bool remote;
	void *rec;

	/* a later sample: look again a little later, a bounded number of times */
	if (w->samples && irq_retry(w)) {
		WRITE_ONCE(w->state, WATCH_STALLED);
		w->sample_at = now + IRQ_RETRY_NS;
		return restart_at(w, w->sample_at);
	}

	/* (the first sample: deadline_passed() has just looked) */
	if (w->samples && program_changed(w)) {
		WRITE_ONCE(w->state, WATCH_STALLED_QUIET);
		return HRTIMER_NORESTART;
	}
	if (task != current && stallcap_why_wants_chain(task)) {
		/* who holds its lock: read in process context */
		w->samples++;
		WRITE_ONCE(w->state, WATCH_CHAINING);
		stallcap_why_queue_chain(w);
		return HRTIMER_NORESTART;
	}
	/* running elsewhere: capture it there; runnable: name what runs there */
	remote = task != current && task_cpu(task) != smp_processor_id() &&
		 (READ_ONCE(task->on_cpu) || stallcap_why_runnable(task));
	/* decided once: a thread off CPU here is captured as blocked */
	rec_bytes = stallcap_sample_reserve_len(sess, remote ||
			(task == current && current_copies_user_stack()));
	rec = stallcap_ring_reserve(sess->ring, STALLCAP_REC_SAMPLE, rec_bytes);
	w->samples++;
	if (!rec) {
		stallcap_count(&sess->stats, SC_LOST, 1);
		if (w->samples == 1)
			stallcap_count(&sess->stats, SC_LOST_FIRST, 1);
		return next_sample(w, now);
	}
	w->req.rec = rec;
	w->req.rec_reserved = rec_bytes;
	stallcap_sample_init(w, d, now);
	d->sample_index = w->samples - 1;
	if (w->samples == 1)
		d->suppressed = atomic_xchg(&sess->pending_suppressed, 0);
	w->req.for_runner = false;
	if (remote) {
		w->req.for_runner = !READ_ONCE(task->on_cpu);
		w->req.retries = 0;
		w->req.irq_retries = 0;
		w->req.begin_ns = now;
		return send_remote(w, now);
	}
	capture_here(w, now, 0);
	return next_sample(w, now);
}

/**
 * stallcap_watch_remote_done() - a capture on another CPU is done: mirror
 * its kernel copy, free its buffer
 * @w: the watch, lock held
 */
void stallcap_watch_remote_done(struct stallcap_watch *w)
{
	struct stallcap_capture_req *req = &w->req;
	void *buf = stallcap_capture_buf_held(req);

	/* the handler left the wake-up and the mirroring to this timer */
	irq_work_queue(&w->sess->wake_work);
	if (buf) {
		stallcap_global_mirror(w->sess, STALLCAP_REC_SAMPLE, buf,
				       req->rec_len);
		stallcap_capture_buf_release(req);
	} else {
		stallcap_global_lost(w->sess);
	}
}

/* Poll a capture requested from another CPU. */
static enum hrtimer_restart poll_remote(struct stallcap_watch *w, u64 now)
{
	struct stallcap_capture_req *req = &w->req;
	struct task_struct *task = w->task;
	int result;

	if (req->cpu < 0) {
		/* the target's slot was busy: try again, as long as for an NMI */
		if (now - req->begin_ns < REMOTE_TIMEOUT_NS)
			return send_remote(w, now);
		goto read_here;
	}
	/* a capture of interrupts-off code may go without its irq_work */
	stallcap_tail_steal(req, false);
	result = smp_load_acquire(&req->result);	/* pairs with the handler */
	if (result == CAPTURE_DONE) {
		stallcap_watch_remote_done(w);
		return next_sample(w, now);
	}
	if (result == CAPTURE_MISMATCH && req->for_runner &&
	    !READ_ONCE(task->on_cpu)) {
		/* as asked: another task ran there, described on req->cpu */
		capture_blocked_into(w, now, 0);
		stallcap_capture_buf_release(req);
		req->cpu = -1;
		return next_sample(w, now);
	}
	if (result == CAPTURE_IRQ) {
		/*
		 * An interrupt ran on top of the thread: send again on the next
		 * poll (the NMI's own latency spaces the tries), the time limit
		 * for a busy slot counted from now.
		 */
		req->irq_retries++;
		req->cpu = -1;
		req->begin_ns = now;
		return restart_at(w, now + POLL_NS);
	}
	if (result == CAPTURE_PENDING) {
		if (now - req->sent_ns < REMOTE_TIMEOUT_NS ||
		    !stallcap_remote_revoke(req))
			return restart_at(w, now + POLL_NS);
	} else {
		stallcap_capture_buf_release(req);	/* a runner, unread */
		req->for_runner = false;
		req->retries++;
		stallcap_count(&w->sess->stats, SC_MIGRATE_RETRIES, 1);
		if (req->retries <= migrate_retries() &&
		    READ_ONCE(task->on_cpu) &&
		    task_cpu(task) != smp_processor_id())
			return send_remote(w, now);
	}
	req->cpu = -1;	/* nothing outstanding on another CPU any more */
read_here:
	if (program_changed(w)) {
		stallcap_watch_abandon_capture(w);
		WRITE_ONCE(w->state, WATCH_STALLED_QUIET);
		return HRTIMER_NORESTART;
	}
	/* migrated too often or the NMI never came: read it from here */
	req->draft.migrate_retries = req->retries;
	capture_here(w, now, req->for_runner ? 0 : STALLCAP_SAMPLE_MIGRATED);
	return next_sample(w, now);
}

/* The deadline passed: is it a stall? */
static enum hrtimer_restart deadline_passed(struct stallcap_watch *w, u64 now)
{
	struct stallcap_session *sess = w->sess;
	u64 used, cpu;

	if (program_changed(w))
		return HRTIMER_NORESTART;	/* the exec probe ends the watch */
	if (w->flags & STALLCAP_ARM_CPUTIME) {
		/*
		 * The base may hold a running slice estimated from
		 * sched_clock, a little ahead of what the scheduler (on its
		 * rq clock) later adds for that slice: a sleeping thread can
		 * read a few microseconds below its base.  That is no time
		 * used, not 2^64 ns of it.
		 */
		cpu = stallcap_task_cputime(w->task);
		used = cpu > w->cpu_base ? cpu - w->cpu_base : 0;
		/*
		 * A thread asleep just short of its budget would otherwise
		 * look again a few ns later, for as long as it sleeps.
		 */
		if (used < w->timeout_ns)
			return restart_at(w, now + max(w->timeout_ns - used,
						       stallcap_min_timeout_ns()));
	}
	/* not a stall yet: the deadline is checked again shortly */
	if (irq_retry(w))
		return restart_at(w, now + IRQ_RETRY_NS);
	w->stall_id = atomic64_inc_return(&sess->next_stall_id);
	w->samples = 0;
	w->sample_at = now;
	w->next_interval = w->timeout_ns;
	if (w->flags & STALLCAP_ARM_CPUTIME)
		WRITE_ONCE(w->deadline, now);
	stallcap_count(&sess->stats, SC_STALLS, 1);
	w->quiet = !stallcap_session_rate_ok(sess, now);
	if (w->quiet) {
		WRITE_ONCE(w->state, WATCH_STALLED_QUIET);
		return stalled_restart(w, now);
	}
	return take_sample(w, now);
}

/*
 * A heartbeat watch not stalled waits for its next check on this CPU's
 * scanner (beat_scan.c), or with its own timer where there is none.
 */
static enum hrtimer_restart beat_wait(struct stallcap_watch *w, u64 now)
{
	if (stallcap_beat_park(w, now))
		return HRTIMER_NORESTART;
	return restart_at(w, stallcap_beat_next(w, now));
}

/*
 * A heartbeat watch's check by its own timer: the scanner handed it over
 * (no progress for a whole threshold), or it has no scanner.
 */
static enum hrtimer_restart beat_tick(struct stallcap_watch *w, u64 now)
{
	if (stallcap_beat_progress(w)) {
		w->armed_at = now;
		stallcap_why_rebase(w, now);
	} else if (now - w->armed_at >= w->timeout_ns) {
		WRITE_ONCE(w->deadline, w->armed_at + w->timeout_ns);
		return deadline_passed(w, now);
	}
	return beat_wait(w, now);
}

/* A shared-deadline watch's timer while not stalled. */
static enum hrtimer_restart shared_tick(struct stallcap_watch *w, u64 now)
{
	u64 seen = w->deadline, next;

	if (stallcap_shared_due(w, now, &next))
		return deadline_passed(w, now);
	/*
	 * A new deadline (or none: idle) since the last look: the next
	 * sample's time breakdown starts here, so that it never counts an
	 * idle time before the busy period as time blocked.
	 */
	if (w->deadline != seen || !w->deadline)
		stallcap_why_rebase(w, now);
	return restart_at(w, next);
}

/* A stalled watch's timer: progress ends the stall, else sample again. */
static enum hrtimer_restart stalled_tick(struct stallcap_watch *w, u64 now)
{
	if ((w->flags & STALLCAP_ARM_SHARED_DEADLINE) &&
	    stallcap_shared_moved(w)) {
		stallcap_watch_end_stall(w, now);
		WRITE_ONCE(w->state, WATCH_ARMED);
		return shared_tick(w, now);
	}
	if ((w->flags & STALLCAP_ARM_HEARTBEAT) && stallcap_beat_progress(w)) {
		stallcap_watch_end_stall(w, now);
		WRITE_ONCE(w->state, WATCH_ARMED);
		w->armed_at = now;
		return beat_wait(w, now);
	}
	if (w->state == WATCH_STALLED && now >= w->sample_at)
		return take_sample(w, now);
	return stalled_restart(w, now);
}

/**
 * stallcap_watch_timer_fn() - the watch's hrtimer callback
 * @timer: &watch->timer
 *
 * Context: hard-IRQ.
 */
enum hrtimer_restart stallcap_watch_timer_fn(struct hrtimer *timer)
{
	struct stallcap_watch *w = container_of(timer, struct stallcap_watch,
						timer);
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	u64 now = ktime_get_mono_fast_ns();

	this_cpu_inc(stallcap_watch_expiries);
	stallcap_own_irq_enter();
	raw_spin_lock(&w->lock);
	/*
	 * Re-armed meanwhile: the new expiry is queued already.  Parked
	 * meanwhile (an ARM): the scanner checks the watch now.
	 */
	if (w->dead || hrtimer_is_queued(timer) || w->beat_scanner)
		goto out;
	stallcap_count(&w->sess->stats, SC_TIMER_EXPIRIES, 1);
	switch (w->state) {
	case WATCH_ARMED:
		if (w->flags & STALLCAP_ARM_HEARTBEAT)
			ret = beat_tick(w, now);
		else if (w->flags & STALLCAP_ARM_SHARED_DEADLINE)
			ret = shared_tick(w, now);
		else if (now >= w->deadline)
			ret = deadline_passed(w, now);
		else
			ret = restart_at(w, w->deadline);
		break;
	case WATCH_STALLED:
	case WATCH_STALLED_QUIET:
		ret = stalled_tick(w, now);
		break;
	case WATCH_CAPTURING:
		stallcap_count(&w->sess->stats, SC_TIMER_POLLS, 1);
		ret = poll_remote(w, now);
		break;
	default:
		break;
	}
	/* a look that let it wait on: away from its thread, it goes home */
	if (ret == HRTIMER_RESTART && w->state == WATCH_ARMED &&
	    !(w->flags & STALLCAP_ARM_HEARTBEAT))
		stallcap_watch_timer_home(w);
out:
	raw_spin_unlock(&w->lock);
	stallcap_own_irq_exit();
	return ret;
}

/**
 * stallcap_watch_chain_done() - the chain work's sample of a thread blocked
 * in a futex wait
 * @w: the watch, lock held (process context, IRQs off)
 * @chain: the WAIT and owner TASK sections walked just before
 * @chain_len: their bytes (0: none)
 * @raced: the thread switched while the chain was walked
 *
 * Captures the thread as the timer would, appends @chain, publishes the
 * sample and restarts the timer for the next one.  When progress, release
 * or exit came first, the sample (already counted in the stall) is lost.
 */
void stallcap_watch_chain_done(struct stallcap_watch *w, const void *chain,
			       u32 chain_len, bool raced)
{
	struct stallcap_session *sess = w->sess;
	struct stallcap_sample *d = &w->req.draft;
	u64 now = ktime_get_mono_fast_ns();
	/* a blocked capture and the chain; never more than the largest record */
	u32 len, max = min_t(u32, stallcap_sample_reserve_len(sess, false) +
			     ALIGN(chain_len, 8),
			     ALIGN(STALLCAP_RECORD_MAX_BYTES(sess->cfg.user_stack_bytes),
				   8));
	void *rec, *buf;

	/* the stall ended first: its end counted this sample lost */
	if (w->dead || w->state != WATCH_CHAINING)
		return;
	rec = stallcap_ring_reserve(sess->ring, STALLCAP_REC_SAMPLE, max);
	if (!rec) {
		stallcap_count(&sess->stats, SC_LOST, 1);
		if (w->samples == 1)
			stallcap_count(&sess->stats, SC_LOST_FIRST, 1);
		goto next;
	}
	w->req.rec = rec;
	w->req.rec_reserved = max;
	w->req.for_runner = false;
	stallcap_sample_init(w, d, now);
	d->sample_index = w->samples - 1;
	if (w->samples == 1)
		d->suppressed = atomic_xchg(&sess->pending_suppressed, 0);
	buf = stallcap_capture_buf_for(rec);
	len = stallcap_capture_blocked(w, d, buf);
	if (raced)
		d->flags |= STALLCAP_SAMPLE_RACED;
	if (chain_len && len + chain_len <= max) {
		memcpy(buf + len, chain, chain_len);
		len += chain_len;
	}
	stallcap_count(&sess->stats, SC_CAPTURE_BLOCKED, 1);
	stallcap_sample_finish(w, d, buf, rec, len, now, false);
next:
	if (next_sample(w, now) == HRTIMER_RESTART)
		hrtimer_start(&w->timer, hrtimer_get_expires(&w->timer),
			      HRTIMER_MODE_ABS_PINNED_HARD);
}
