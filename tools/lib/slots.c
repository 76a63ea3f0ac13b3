// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: slot watches (heartbeat, shared deadline) and the slot area.
 */
#include <errno.h>
#include <sys/mman.h>

#include "internal.h"

/* Map the slot area once; later callers see the pointer published with release. */
static int slots_map(struct stallcap_session *s)
{
	struct stallcap_config cfg;
	void *map;
	size_t len;
	int ret = 0;

	if (__atomic_load_n(&s->slots, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&s->map_lock);
	if (s->slots)
		goto out;
	ret = stallcap_session_get_config(s, &cfg);
	if (ret < 0)
		goto out;
	len = (size_t)cfg.slots * sizeof(struct stallcap_slot);
	if (!len) {
		ret = -EINVAL;
		goto out;
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		   STALLCAP_MMAP_SLOTS);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	s->slots_len = len;
	__atomic_store_n(&s->slots, (struct stallcap_slot *)map, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&s->map_lock);
	return ret;
}

/* Arm a slot watch of the calling thread and find its slot. */
static int slot_arm(struct stallcap_session *s, const struct stallcap_arm *arm,
		    struct stallcap_slot **slotp)
{
	int slot, ret;

	if (!s || !slotp)
		return -EINVAL;
	if (s->noop) {		/* the marks go to a slot nobody reads */
		*slotp = &s->noop_slot;
		return 0;
	}
	ret = slots_map(s);
	if (ret < 0)
		return ret;
	slot = scl_ioctl(s->fd, STALLCAP_IOC_ARM, (void *)arm);
	if (slot < 0)
		return slot;
	if ((size_t)slot >= s->slots_len / sizeof(struct stallcap_slot)) {
		stallcap_watch_release(s);
		return -ERANGE;
	}
	*slotp = &s->slots[slot];
	return slot;
}

int stallcap_heartbeat_attach(struct stallcap_session *s, __u64 threshold_ns,
			      __u64 user_tag, struct stallcap_slot **slotp)
{
	struct stallcap_arm arm = {
		.size = sizeof(arm),
		.flags = STALLCAP_ARM_HEARTBEAT,
		.timeout_ns = threshold_ns,
		.user_tag = user_tag,
	};

	return slot_arm(s, &arm, slotp);
}

int stallcap_deadline_arm(struct stallcap_session *s, __u64 timeout_ns, __u64 user_tag,
			  unsigned int flags, struct stallcap_slot **slotp)
{
	struct stallcap_arm arm = {
		.size = sizeof(arm),
		.flags = STALLCAP_ARM_SHARED_DEADLINE | flags,
		.timeout_ns = timeout_ns,
		.user_tag = user_tag,
	};

	if (flags & ~(STALLCAP_ARM_ABSOLUTE | STALLCAP_ARM_DEADLINE_TSC))
		return -EINVAL;
	return slot_arm(s, &arm, slotp);
}

__u64 stallcap_tsc_ticks(struct stallcap_session *s, __u64 ns)
{
	struct stallcap_info info;

	if (stallcap_session_get_info(s, &info) ||
	    !(info.features & STALLCAP_FEAT_DEADLINE_TSC) || !info.tsc_khz)
		return 0;
	/* ns * kHz / 10^6, the product in 128 bits */
	return (__u64)((unsigned __int128)ns * info.tsc_khz / 1000000U);
}
