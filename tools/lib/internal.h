/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/* libstallcap: what the library's files share. */
#ifndef STALLCAP_LIB_INTERNAL_H
#define STALLCAP_LIB_INTERNAL_H

#include <pthread.h>
#include <stallcap/stallcap.h>

/**
 * struct scl_ring_buf - a reader's private copy of the current record
 * @buf: malloc'd, 8-byte aligned, @cap bytes
 */
struct scl_ring_buf {
	struct stallcap_rec_header *buf;
	__u32 cap;
};

/**
 * struct stallcap_session - one open /dev/stallcap
 * @fd: the session fd
 * @map_lock: serialises the lazy mappings below
 * @ring_lock: the ring's single-consumer lock
 * @ring_map: mapping of the control page and data area (ring_len bytes)
 * @ring: view of @ring_map, published by @ring_ready (release/acquire)
 * @ring_buf: private record copies of stallcap_ring_consume(), under @ring_lock
 * @slots: the slot area (slots_len bytes), published with release
 * @noop: opened with STALLCAP_OPEN_NOOP and no module: every call succeeds
 *	and does nothing; @noop_slot takes the inline slot stores
 * @reporter: stallcap_report()'s state, under @ring_lock
 */
struct stallcap_session {
	int fd;
	pthread_mutex_t map_lock;
	pthread_mutex_t ring_lock;
	void *ring_map;
	size_t ring_len;
	struct stallcap_ring ring;
	int ring_ready;
	struct scl_ring_buf ring_buf;
	struct stallcap_slot *slots;
	size_t slots_len;
	int noop;
	struct stallcap_slot noop_slot;
	struct stallcap_reporter *reporter;
};

int scl_ioctl(int fd, unsigned long cmd, void *arg);
int scl_ring_read(struct stallcap_ring *r, stallcap_record_fn fn, void *ctx,
		  struct scl_ring_buf *b);

#endif /* STALLCAP_LIB_INTERNAL_H */
