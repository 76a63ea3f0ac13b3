// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap record ring: many writers (timer and NMI context on any CPU), one
 * reader in user space through mmap.
 *
 *   writer (timer, IRQs off)               reader (user space)
 *   raw_spin_lock(ring->lock)
 *   tail = smp_load_acquire(data_tail)  E  (pairs with D)
 *   header = {size, type, BUSY}
 *   smp_store_release(data_head)        A  head = load_acquire(data_head)
 *   raw_spin_unlock(ring->lock)            hdr = load_acquire(record)     B
 *   ... fill (timer, NMI or IPI) ...       if (BUSY) stop
 *   smp_store_release(hdr->flags, 0)    C  read record (after B, pairs C)
 *                                          store_release(data_tail)       D
 *
 * The lock only orders reservations among writers; the NMI handler never
 * takes it: the timer reserves the record the NMI fills.  The reader never
 * waits for the lock.  Records never straddle the end of the data area.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "stallcap.h"

/**
 * stallcap_ring_create() - allocate a ring
 * @data_bytes: data area size, a power of two multiple of PAGE_SIZE
 * @pid_ns_inum: the pid namespace of the records' ns ids, for the reader
 *
 * Return: the ring, or NULL when out of memory.
 */
struct stallcap_ring *stallcap_ring_create(u32 data_bytes, u64 pid_ns_inum)
{
	struct stallcap_ring *ring = kzalloc(sizeof(*ring), GFP_KERNEL_ACCOUNT);

	if (!ring)
		return NULL;
	ring->base = stallcap_alloc_user(PAGE_SIZE + data_bytes);
	if (!ring->base) {
		kfree(ring);
		return NULL;
	}
	ring->ctl = ring->base;
	ring->data = (u8 *)ring->base + PAGE_SIZE;
	ring->size = data_bytes;
	raw_spin_lock_init(&ring->lock);
	ring->ctl->abi_version = STALLCAP_ABI_VERSION;
	ring->ctl->ctl_size = sizeof(*ring->ctl);
	ring->ctl->data_offset = PAGE_SIZE;
	ring->ctl->data_size = data_bytes;
	ring->ctl->pid_ns_inum = pid_ns_inum;
	return ring;
}

void stallcap_ring_destroy(struct stallcap_ring *ring)
{
	if (!ring)
		return;
	vfree(ring->base);
	kfree(ring);
}

static void ring_write_header(struct stallcap_ring *ring, u64 pos, u32 size,
			      u16 type, u16 flags)
{
	struct stallcap_rec_header *hdr;

	hdr = (void *)(ring->data + (pos & (ring->size - 1)));
	WRITE_ONCE(hdr->size, size);
	WRITE_ONCE(hdr->type, type);
	WRITE_ONCE(hdr->flags, flags);
}

/**
 * stallcap_ring_reserve() - reserve a record
 * @ring: the ring
 * @type: STALLCAP_REC_* of the record
 * @len: bytes to reserve, a multiple of 8, at most a quarter of the ring
 *
 * Context: any but NMI (takes ring->lock with IRQs off).
 * Return: the record, its header written with STALLCAP_REC_F_BUSY; NULL when
 * the ring is full (counted in lost).
 */
void *stallcap_ring_reserve(struct stallcap_ring *ring, u16 type, u32 len)
{
	unsigned long flags;
	u64 head, tail, off, pad;
	void *rec = NULL;

	raw_spin_lock_irqsave(&ring->lock, flags);
	head = ring->head;
	tail = smp_load_acquire(&ring->ctl->data_tail);	/* E, pairs with D */
	off = head & (ring->size - 1);
	pad = off + len > ring->size ? ring->size - off : 0;
	/* A reader's bogus tail only makes the ring look full or empty. */
	if (tail > head || head + pad + len - tail > ring->size) {
		WRITE_ONCE(ring->ctl->lost, ++ring->lost);
		goto out;
	}
	if (pad) {
		ring_write_header(ring, head, pad, STALLCAP_REC_PAD, 0);
		head += pad;
	}
	ring_write_header(ring, head, len, type, STALLCAP_REC_F_BUSY);
	rec = ring->data + (head & (ring->size - 1));
	WRITE_ONCE(ring->head, head + len);	/* read locklessly by poll() */
	smp_store_release(&ring->ctl->data_head, ring->head);	/* A */
out:
	raw_spin_unlock_irqrestore(&ring->lock, flags);
	return rec;
}

/**
 * stallcap_ring_commit() - publish a reserved record
 * @ring: the ring
 * @rec: the record from stallcap_ring_reserve()
 * @reserved: the length reserved
 * @used: bytes used (multiple of 8, <= @reserved); the rest becomes padding
 *
 * Lengths come from the caller, never from the ring, which user space may
 * write.  Context: any, NMI included; no lock.
 */
void stallcap_ring_commit(struct stallcap_ring *ring, void *rec, u32 reserved,
			  u32 used)
{
	struct stallcap_rec_header *hdr = rec;

	if (used < reserved) {
		struct stallcap_rec_header *pad = rec + used;

		pad->size = reserved - used;
		pad->type = STALLCAP_REC_PAD;
		pad->flags = 0;
		WRITE_ONCE(hdr->size, used);
	}
	smp_store_release(&hdr->flags, 0);	/* C, pairs with B */
}

/* Records to read?  From the private head: user space may write data_head. */
bool stallcap_ring_readable(struct stallcap_ring *ring)
{
	return READ_ONCE(ring->head) != READ_ONCE(ring->ctl->data_tail);
}

void stallcap_ring_set_suppressed(struct stallcap_ring *ring, u64 n)
{
	WRITE_ONCE(ring->ctl->suppressed, n);
}

/**
 * stallcap_ring_count_lost() - a record that never reached the ring
 * @ring: the ring
 *
 * For records lost before their reservation (a deferred user stack whose
 * thread exited): the reader sees them in ctl->lost as ring-full losses.
 * Context: any but NMI.
 */
void stallcap_ring_count_lost(struct stallcap_ring *ring)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ring->lock, flags);
	WRITE_ONCE(ring->ctl->lost, ++ring->lost);
	raw_spin_unlock_irqrestore(&ring->lock, flags);
}
