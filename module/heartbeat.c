// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap heartbeat watches: the thread marks progress with a plain store
 * into its slot of the session's beat area (mapped at STALLCAP_MMAP_BEATS);
 * the watch's timer checks the slot every threshold / 4.  See the contract
 * on struct stallcap_beat_slot in the uapi header.
 */
#include <linux/bitmap.h>
#include <linux/minmax.h>

#include "stallcap.h"

/**
 * stallcap_beat_attach() - give @w a beat slot
 * @sess: the session, sess->lock held
 * @w: the watch (not yet armed)
 *
 * Return: the slot index, or -ENOSPC when all slots are in use.
 */
int stallcap_beat_attach(struct stallcap_session *sess, struct stallcap_watch *w)
{
	struct stallcap_beat_slot *slot;
	unsigned long i;

	lockdep_assert_held(&sess->lock);
	if (w->beat_slot >= 0)
		return w->beat_slot;
	i = find_first_zero_bit(sess->beat_used, sess->cfg.beat_slots);
	if (i >= sess->cfg.beat_slots)
		return -ENOSPC;
	set_bit(i, sess->beat_used);
	slot = &sess->beats[i];
	WRITE_ONCE(slot->beats, 0);
	WRITE_ONCE(slot->idle, 0);
	WRITE_ONCE(slot->tid, w->tid);
	WRITE_ONCE(slot->armed, 1);
	w->beat_slot = i;
	w->last_beats = 0;
	w->last_idle = false;
	return i;
}

/**
 * stallcap_beat_detach() - give @w's slot back
 * @sess: the session, sess->lock held
 * @w: the watch, no longer armed
 */
void stallcap_beat_detach(struct stallcap_session *sess, struct stallcap_watch *w)
{
	if (w->beat_slot < 0)
		return;
	WRITE_ONCE(sess->beats[w->beat_slot].armed, 0);
	clear_bit(w->beat_slot, sess->beat_used);
	w->beat_slot = -1;
}

/**
 * stallcap_beat_progress() - did @w's thread beat or go idle since last time?
 * @w: a heartbeat watch, lock held
 */
bool stallcap_beat_progress(struct stallcap_watch *w)
{
	struct stallcap_beat_slot *slot = &w->sess->beats[w->beat_slot];
	u64 beats = READ_ONCE(slot->beats);

	bool idle = READ_ONCE(slot->idle), was_idle = w->last_idle;

	w->last_idle = idle;
	if (beats != w->last_beats) {
		w->last_beats = beats;
		return true;
	}
	/* idle now, or busy again since the previous check: both progress */
	return idle || was_idle;
}

/**
 * stallcap_beat_period() - how often @w's slot is checked
 * @w: a heartbeat watch
 */
u64 stallcap_beat_period(const struct stallcap_watch *w)
{
	return max_t(u64, w->timeout_ns / 4,
		     stallcap_min_timeout_ns());
}
