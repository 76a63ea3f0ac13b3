/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/* libstallcap: what the library's files share. */
#ifndef STALLCAP_LIB_INTERNAL_H
#define STALLCAP_LIB_INTERNAL_H

#include <pthread.h>
#include <stallcap/stallcap.h>

/**
 * struct stallcap_session - one open /dev/stallcap
 * @fd: the session fd
 * @map_lock: serialises the lazy mappings below
 * @ring_lock: the ring's single-consumer lock
 * @ring_map: mapping of the control page and data area (ring_len bytes)
 * @ring: view of @ring_map, published by @ring_ready (release/acquire)
 * @slots: the slot area (slots_len bytes), published with release
 */
struct stallcap_session {
	int fd;
	pthread_mutex_t map_lock;
	pthread_mutex_t ring_lock;
	void *ring_map;
	size_t ring_len;
	struct stallcap_ring ring;
	int ring_ready;
	struct stallcap_slot *slots;
	size_t slots_len;
};

int scl_ioctl(int fd, unsigned long cmd, void *arg);

#endif /* STALLCAP_LIB_INTERNAL_H */
