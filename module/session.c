// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap sessions: one open file of /dev/stallcap.  Its configuration,
 * its ring and slot mappings and poll(); its ioctls are in ioctl.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"
#include "capture.h"

#define DEFAULT_RING_BYTES	(1U << 20)
#define DEFAULT_USER_STACK	16384
#define DEFAULT_SLOTS		64
#define DEFAULT_MAX_SAMPLES	8
#define DEFAULT_SAMPLE_CAP_NS	NSEC_PER_SEC
#define MAX_SLOTS		4096
#define MAX_SAMPLES		64
#define SLOT_BYTES		sizeof(struct stallcap_slot)
#define RATE_WINDOW_NS		(60 * NSEC_PER_SEC)

/* ---- configuration ---- */

void stallcap_config_defaults(struct stallcap_config *c)
{
	c->size = sizeof(*c);
	if (!c->ring_bytes)
		c->ring_bytes = DEFAULT_RING_BYTES;
	if (!c->user_stack_bytes)
		c->user_stack_bytes = DEFAULT_USER_STACK;
	if (!c->slots)
		c->slots = DEFAULT_SLOTS;
	if (!c->max_samples)
		c->max_samples = DEFAULT_MAX_SAMPLES;
	if (!c->sample_cap_ns)
		c->sample_cap_ns = DEFAULT_SAMPLE_CAP_NS;
}

int stallcap_config_check(const struct stallcap_session *sess,
			  const struct stallcap_config *c)
{
	u64 max_ring = (u64)stallcap_max_ring_kb * 1024;

	if (c->flags & ~STALLCAP_CFG_FLAGS_ALL ||
	    memchr_inv(c->__reserved, 0, sizeof(c->__reserved)))
		return -EINVAL;
	/* nothing runs on the way back to user space (compat.h) */
	if ((c->flags & STALLCAP_CFG_DEFER_USER) && !SC_HAVE_TASK_WORK)
		return -EINVAL;
	/* the opener's right, as for kernel addresses: not the caller's */
	if ((c->flags & STALLCAP_CFG_GLOBAL) && !sess->may_global)
		return -EPERM;
	if (c->user_stack_bytes > STALLCAP_MAX_USER_STACK ||
	    c->user_stack_bytes % 8)
		return -ERANGE;
	if (!is_power_of_2(c->ring_bytes) || c->ring_bytes < PAGE_SIZE ||
	    c->ring_bytes > max_ring ||
	    c->ring_bytes < 4 * STALLCAP_RECORD_MAX_BYTES(c->user_stack_bytes))
		return -ERANGE;
	if (c->slots % 64 || c->slots > MAX_SLOTS)
		return -ERANGE;
	if (c->max_samples > MAX_SAMPLES)
		return -ERANGE;
	if (c->sample_cap_ns < stallcap_min_timeout_ns())
		return -ERANGE;
	return 0;
}

/**
 * stallcap_session_ensure_ring() - create the ring and the slots once
 * @sess: the session, sess->lock held
 * @mmap_locked: called from mmap(), the caller's mmap lock held
 *
 * After this the size-related configuration is frozen.
 */
int stallcap_session_ensure_ring(struct stallcap_session *sess, bool mmap_locked)
{
	size_t slot_bytes = PAGE_ALIGN(sess->cfg.slots * SLOT_BYTES);
	struct stallcap_ring *ring;
	int ret;

	lockdep_assert_held(&sess->lock);
	if (sess->ring)
		return 0;
	/* the defaults too: max_ring_kb may be below the default ring */
	ret = stallcap_config_check(sess, &sess->cfg);
	if (ret)
		return ret;
	ret = stallcap_charge_locked(sess, (PAGE_SIZE + sess->cfg.ring_bytes +
					    slot_bytes) >> PAGE_SHIFT, mmap_locked);
	if (ret)
		return ret;
	ring = stallcap_ring_create(sess->cfg.ring_bytes, sess->pid_ns->ns.inum);
	sess->slots = stallcap_alloc_user(slot_bytes);
	sess->slot_used = bitmap_zalloc(sess->cfg.slots, GFP_KERNEL_ACCOUNT);
	if (!ring || !sess->slots || !sess->slot_used) {
		vfree(sess->slots);
		bitmap_free(sess->slot_used);
		sess->slots = NULL;
		sess->slot_used = NULL;
		stallcap_ring_destroy(ring);
		stallcap_uncharge_locked(sess);
		return -ENOMEM;
	}
	/* ring initialised before it is seen, pairs with stallcap_poll() */
	smp_store_release(&sess->ring, ring);
	return 0;
}

/**
 * stallcap_session_rate_ok() - may one more stall be reported now?
 * @sess: the session
 * @now: current time (ns)
 *
 * Context: any but NMI.  A refused stall is counted as suppressed, in the
 * counters, the control page and the next record.
 */
bool stallcap_session_rate_ok(struct stallcap_session *sess, u64 now)
{
	u32 limit = READ_ONCE(sess->cfg.rate_limit);
	unsigned long flags;
	bool ok;

	if (!limit)
		return true;
	raw_spin_lock_irqsave(&sess->rate_lock, flags);
	if (now - sess->rate_window >= RATE_WINDOW_NS) {
		sess->rate_window = now;
		sess->rate_count = 0;
	}
	ok = sess->rate_count < limit;
	if (ok) {
		sess->rate_count++;
	} else {
		/* counted and published under the lock: ctl never goes back */
		stallcap_count(&sess->stats, SC_SUPPRESSED, 1);
		atomic_inc(&sess->pending_suppressed);
		stallcap_ring_set_suppressed(sess->ring,
					     atomic64_read(&sess->stats.c[SC_SUPPRESSED]));
	}
	raw_spin_unlock_irqrestore(&sess->rate_lock, flags);
	return ok;
}

/* ---- mmap and poll ---- */

static int stallcap_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct stallcap_session *sess = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	int ret = -EINVAL;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	mutex_lock(&sess->lock);
	/* check before creating the ring: a failed mmap changes nothing */
	if (off == STALLCAP_MMAP_RING && len <= PAGE_SIZE + sess->cfg.ring_bytes) {
		ret = stallcap_session_ensure_ring(sess, true);
		if (!ret)
			ret = stallcap_map_user(vma, sess->ring->base,
						PAGE_SIZE + sess->cfg.ring_bytes);
	} else if (off == STALLCAP_MMAP_SLOTS &&
		   len <= sess->cfg.slots * SLOT_BYTES) {
		ret = stallcap_session_ensure_ring(sess, true);
		if (!ret)
			ret = stallcap_map_user(vma, sess->slots,
						sess->cfg.slots * SLOT_BYTES);
	}
	if (!ret)
		stallcap_vma_set_private(vma);
	mutex_unlock(&sess->lock);
	return ret;
}

static __poll_t stallcap_poll(struct file *file, poll_table *pt)
{
	struct stallcap_session *sess = file->private_data;
	struct stallcap_ring *ring;

	poll_wait(file, &sess->wait, pt);
	ring = smp_load_acquire(&sess->ring);	/* pairs with ensure_ring */
	return ring && stallcap_ring_readable(ring) ? EPOLLIN | EPOLLRDNORM : 0;
}

static void session_wake(struct irq_work *work)
{
	struct stallcap_session *sess = container_of(work,
						     struct stallcap_session,
						     wake_work);

	wake_up_interruptible_poll(&sess->wait, EPOLLIN | EPOLLRDNORM);
}

/* ---- open and release ---- */

/*
 * The kernel's own policy for showing kernel addresses to the opener:
 * CAP_SYSLOG, and kptr_restrict, which modules cannot read but "%pK" obeys
 * (it prints zeros under kptr_restrict=2, or =1 without CAP_SYSLOG).
 */
static bool kaddr_policy_allows(struct file *file)
{
	char buf[32];

	if (!file_ns_capable(file, &init_user_ns, CAP_SYSLOG))
		return false;
	snprintf(buf, sizeof(buf), "%pK", (void *)_RET_IP_);
	return strspn(buf, "0") != strlen(buf);
}

static int stallcap_open(struct inode *inode, struct file *file)
{
	struct stallcap_session *sess = kzalloc(sizeof(*sess), GFP_KERNEL_ACCOUNT);

	if (!sess)
		return -ENOMEM;
	mutex_init(&sess->lock);
	stallcap_config_defaults(&sess->cfg);
	sess->pid_ns = get_pid_ns(task_active_pid_ns(current));
	INIT_LIST_HEAD(&sess->watches);
	sess->kaddr_visible = kaddr_policy_allows(file);
	sess->may_global = file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN);
	sess->may_stats_global = sess->may_global ||
				 file_ns_capable(file, &init_user_ns, CAP_PERFMON);
	sess->may_trace_all = file_ns_capable(file, &init_user_ns,
					      CAP_SYS_PTRACE);
	sess->unlimited = file_ns_capable(file, &init_user_ns,
					  CAP_SYS_RESOURCE);
	sess->uid = current_uid();
	init_waitqueue_head(&sess->wait);
	init_irq_work(&sess->wake_work, session_wake);
	INIT_WORK(&sess->reap_work, stallcap_watches_reap);
	INIT_LIST_HEAD(&sess->doomed);
	INIT_WORK(&sess->doomed_work, stallcap_watches_free_doomed);
	raw_spin_lock_init(&sess->rate_lock);
	/* the first stall opens the first one-minute window */
	sess->rate_window = ktime_get_mono_fast_ns() - RATE_WINDOW_NS;
	refcount_set(&sess->ref, 1);
	file->private_data = sess;
	return stream_open(inode, file);
}

void stallcap_session_get(struct stallcap_session *sess)
{
	refcount_inc(&sess->ref);
}

/**
 * stallcap_session_put() - drop a reference; the last one frees the session
 * @sess: the session
 *
 * Context: process (vfree of the ring).
 */
void stallcap_session_put(struct stallcap_session *sess)
{
	if (!refcount_dec_and_test(&sess->ref))
		return;
	irq_work_sync(&sess->wake_work);
	stallcap_ring_destroy(sess->ring);
	stallcap_defer_buf_free(sess);
	vfree(sess->slots);
	bitmap_free(sess->slot_used);
	stallcap_uncharge_locked(sess);
	put_pid_ns(sess->pid_ns);
	mutex_destroy(&sess->lock);
	kfree(sess);
}

static int stallcap_release(struct inode *inode, struct file *file)
{
	struct stallcap_session *sess = file->private_data;

	stallcap_global_detach(sess);
	stallcap_attach_release(sess);
	stallcap_watches_destroy(sess);
	irq_work_sync(&sess->wake_work);
	stallcap_session_put(sess);
	return 0;
}

const struct file_operations stallcap_fops = {
	.owner = THIS_MODULE,
	.open = stallcap_open,
	.release = stallcap_release,
	.unlocked_ioctl = stallcap_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = stallcap_mmap,
	.poll = stallcap_poll,
};
