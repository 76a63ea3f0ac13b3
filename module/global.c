// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap system-wide readers: a session configured with
 * STALLCAP_CFG_GLOBAL (CAP_SYS_ADMIN) receives a copy of every record that
 * any other session writes.  Copies are made in timer, task or process
 * context, never in NMI: a record an NMI captured is mirrored when the timer
 * that asked for it sees the capture done.
 */
#include <linux/capability.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/string.h>

#include "stallcap.h"

static LIST_HEAD(global_readers);
static DEFINE_MUTEX(global_readers_lock);

/**
 * stallcap_global_attach() - make @sess a system-wide reader
 * @sess: the session; its ring exists
 */
void stallcap_global_attach(struct stallcap_session *sess)
{
	mutex_lock(&global_readers_lock);
	if (!sess->global) {
		sess->global = true;
		list_add_tail_rcu(&sess->global_node, &global_readers);
	}
	mutex_unlock(&global_readers_lock);
}

/**
 * stallcap_global_detach() - stop mirroring into @sess
 * @sess: the session
 *
 * Waits for an RCU grace period after unlinking it: a later attach may add
 * the same node again, which a reader still on it must not see.
 * Context: process.
 */
void stallcap_global_detach(struct stallcap_session *sess)
{
	bool was = false;

	mutex_lock(&global_readers_lock);
	if (sess->global) {
		sess->global = false;
		list_del_rcu(&sess->global_node);
		was = true;
	}
	mutex_unlock(&global_readers_lock);
	if (was)
		synchronize_rcu();
}

/**
 * stallcap_global_readers() - is there a system-wide reader to copy to?
 *
 * A sample built while there is none is built straight in its ring record
 * (capture.c); a reader attached meanwhile counts it lost.
 * Context: any, NMI included.
 */
bool stallcap_global_readers(void)
{
	return !list_empty(&global_readers);
}

/**
 * stallcap_global_lost() - a record of @src could not be mirrored
 * @src: the session that wrote it
 *
 * Context: any but NMI.
 */
void stallcap_global_lost(struct stallcap_session *src)
{
	struct stallcap_session *g;

	if (list_empty(&global_readers))
		return;
	rcu_read_lock();
	list_for_each_entry_rcu(g, &global_readers, global_node)
		if (g != src) {
			stallcap_count(&g->stats, SC_LOST, 1);
			stallcap_ring_count_lost(g->ring);
		}
	rcu_read_unlock();
}

/**
 * stallcap_global_mirror() - copy a committed record to every global reader
 * @src: the session that wrote it
 * @type: its type
 * @rec: the record, in kernel memory (never the ring, which the session's
 *	reader may write)
 * @len: its length
 * Context: any but NMI.
 */
void stallcap_global_mirror(struct stallcap_session *src, u16 type,
			    const void *rec, u32 len)
{
	const size_t hdr = sizeof(struct stallcap_rec_header);
	struct stallcap_session *g;
	void *dst;

	if (list_empty(&global_readers))
		return;
	rcu_read_lock();
	list_for_each_entry_rcu(g, &global_readers, global_node) {
		if (g == src)
			continue;
		dst = len <= g->ring->size / 4 ?
		      stallcap_ring_reserve(g->ring, type, len) : NULL;
		if (!dst) {
			stallcap_count(&g->stats, SC_LOST, 1);
			if (len > g->ring->size / 4)
				stallcap_ring_count_lost(g->ring);
			continue;
		}
		memcpy(dst + hdr, rec + hdr, len - hdr);
		stallcap_ring_commit(g->ring, dst, len, len);
		irq_work_queue(&g->wake_work);
	}
	rcu_read_unlock();
}
