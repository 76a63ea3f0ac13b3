/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The input of fuzz_ring: a header choosing the ring's shape and positions,
 * then the bytes of the data area (zero-filled if the input is shorter).
 */
#ifndef STALLCAP_FUZZ_RING_H
#define STALLCAP_FUZZ_RING_H

#include <linux/types.h>

#define FUZZ_RING_PAGE		4096
#define FUZZ_RING_MAX_LOG2	16	/* data areas of 1 byte .. 64 KiB */

/* struct fuzz_ring_hdr.flags */
#define FUZZ_RING_SHORT_MAP	(1U << 0)	/* mapping shorter than the area */
#define FUZZ_RING_BAD_ABI	(1U << 1)
#define FUZZ_RING_STOP_EARLY	(1U << 2)	/* callback stops after a record */

struct fuzz_ring_hdr {
	__u64 data_head;
	__u64 data_tail;
	__u32 data_offset_delta;	/* added to FUZZ_RING_PAGE */
	__u8 log2_size;
	__u8 flags;
	__u16 reads;			/* read calls, at most 8 */
};

#endif /* STALLCAP_FUZZ_RING_H */
