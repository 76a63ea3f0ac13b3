// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: heartbeat watches and the shared beat area.
 */
#include <errno.h>
#include <sys/mman.h>

#include "internal.h"

/* Map the beat area once; later callers see the pointer published with release. */
static int beats_map(struct stallcap_session *s)
{
	struct stallcap_config cfg;
	void *map;
	size_t len;
	int ret = 0;

	if (__atomic_load_n(&s->beats, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&s->map_lock);
	if (s->beats)
		goto out;
	ret = stallcap_session_get_config(s, &cfg);
	if (ret < 0)
		goto out;
	len = (size_t)cfg.beat_slots * sizeof(struct stallcap_beat_slot);
	if (!len) {
		ret = -EINVAL;
		goto out;
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		   STALLCAP_MMAP_BEATS);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	s->beats_len = len;
	__atomic_store_n(&s->beats, (struct stallcap_beat_slot *)map, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&s->map_lock);
	return ret;
}

int stallcap_heartbeat_attach(struct stallcap_session *s, __u64 threshold_ns,
			      __u64 user_tag, struct stallcap_beat_slot **slotp)
{
	struct stallcap_arm arm = {
		.size = sizeof(arm),
		.flags = STALLCAP_ARM_HEARTBEAT,
		.timeout_ns = threshold_ns,
		.user_tag = user_tag,
	};
	int slot, ret;

	if (!s || !slotp)
		return -EINVAL;
	ret = beats_map(s);
	if (ret < 0)
		return ret;
	slot = scl_ioctl(s->fd, STALLCAP_IOC_ARM, &arm);
	if (slot < 0)
		return slot;
	if ((size_t)slot >= s->beats_len / sizeof(struct stallcap_beat_slot)) {
		stallcap_watch_release(s);
		return -ERANGE;
	}
	*slotp = &s->beats[slot];
	return slot;
}
