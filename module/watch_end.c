// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap stall ends: progress (a REARM, a DISARM, a beat, a slot store,
 * an attached thread's next wait, release or exit) ends a watch's stall.
 * A reported stall gets its STALLCAP_REC_STALL_END record: when it began
 * (the missed deadline), when progress was seen, how many samples it had.
 * A sample still held by a remote capture or by the chain work is settled
 * first (committed as abandoned, or counted lost).
 */
#include <linux/irq_work.h>
#include <linux/ktime.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <asm/processor.h>

#include "stallcap.h"
#include "capture.h"
#include "why.h"

/**
 * stallcap_watch_end_stall() - the thread made progress: end its stall
 * @w: the watch, lock held
 * @now: time progress was seen (a caller's earlier reading is raised to
 *	the time the lock was taken: the stall may have begun meanwhile)
 *
 * Writes the stall-end record of a reported stall.
 */
void stallcap_watch_end_stall(struct stallcap_watch *w, u64 now)
{
	struct stallcap_session *sess = w->sess;
	struct stallcap_stall_end *e;
	u64 mono, real;

	if (w->state == WATCH_CHAINING) {
		/*
		 * The chain work holds this stall's sample: lost, counted here
		 * once (the work may be pending for the next stall by then).
		 */
		stallcap_ring_count_lost(sess->ring);
		stallcap_count(&sess->stats, SC_LOST, 1);
		if (w->samples == 1)
			stallcap_count(&sess->stats, SC_LOST_FIRST, 1);
		WRITE_ONCE(w->state, WATCH_STALLED_QUIET);
	}
	stallcap_watch_abandon_capture(w);
	if (!w->stall_id)
		return;
	mono = ktime_get_mono_fast_ns();
	real = ktime_get_real_fast_ns();
	/* realtime of the same instant as end_ns */
	if (now > mono)
		real += now - mono;
	now = max(now, mono);
	if (!w->quiet) {
		struct stallcap_stall_end end = {
			.fixed_size = sizeof(end),
			.origin = w->attach ? STALLCAP_ORIGIN_ATTACH :
				  STALLCAP_ORIGIN_ARM,
			.stall_id = w->stall_id,
			.user_tag = w->user_tag,
			.deadline_ns = w->deadline,
			.end_ns = now,
			.end_realtime_ns = real,
			.pid = w->task->tgid,
			.tid = w->tid,
			.ns_pid = w->ns_pid,
			.ns_tid = w->ns_tid,
			.nr_samples = w->samples,
		};
		const size_t hdr = sizeof(end.hdr);

		e = stallcap_ring_reserve(sess->ring, STALLCAP_REC_STALL_END,
					  sizeof(*e));
		if (e) {
			memcpy((void *)e + hdr, (void *)&end + hdr,
			       sizeof(end) - hdr);
			stallcap_count(&sess->stats, SC_STALL_ENDS, 1);
			stallcap_ring_commit(sess->ring, e, sizeof(*e), sizeof(*e));
			irq_work_queue(&sess->wake_work);
			stallcap_global_mirror(sess, STALLCAP_REC_STALL_END, &end,
					       sizeof(end));
		} else {
			stallcap_count(&sess->stats, SC_LOST, 1);
		}
	}
	w->stall_id = 0;
	w->quiet = false;
	stallcap_why_rebase(w, now);
}

/**
 * stallcap_watch_abandon_capture() - settle a capture in flight
 * @w: the watch, lock held
 *
 * Called when progress, release or exit comes while an NMI/IPI capture is
 * pending: the record reserved for it must still be committed.  Waits (a
 * bounded few microseconds) only for a handler that already claimed it.
 */
void stallcap_watch_abandon_capture(struct stallcap_watch *w)
{
	struct stallcap_capture_req *req = &w->req;
	struct stallcap_sample *d = &req->draft;
	struct stallcap_rec_writer wr;

	if (w->state != WATCH_CAPTURING)
		return;
	if (req->cpu >= 0 && !stallcap_remote_revoke(req)) {
		/*
		 * The handler claimed it: it finishes in microseconds; its
		 * irq_work may be held off longer: then it is completed here.
		 */
		while (smp_load_acquire(&req->result) == CAPTURE_PENDING &&
		       !stallcap_tail_steal(req, true))
			cpu_relax();
		if (req->result == CAPTURE_DONE) {
			stallcap_watch_remote_done(w);
			return;
		}
		stallcap_capture_buf_release(req);	/* a runner, unread */
	}
	stallcap_sample_stamp(d);
	stallcap_rec_begin(&wr, d, req->draft_room);
	d->path = stallcap_use_nmi ? STALLCAP_PATH_NMI : STALLCAP_PATH_IPI;
	d->state = STALLCAP_STATE_RUNNING;	/* it was, on another CPU */
	d->flags |= STALLCAP_SAMPLE_ABANDONED;
	d->migrate_retries = req->retries;
	stallcap_sample_finish(w, d, req->draft_room, req->rec, wr.len,
			       d->capture_ns, false);
}
