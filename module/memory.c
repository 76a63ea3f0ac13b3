// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap memory that user space maps (rings, beat slots): allocated with
 * __GFP_ACCOUNT (charged to the caller's memory cgroup), charged as perf
 * charges its buffers -- first to the caller's user's allowance (mlock_kb
 * per online CPU, perf's perf_event_mlock_kb), the rest to the caller's
 * pinned_vm against RLIMIT_MEMLOCK (CAP_IPC_LOCK exempt) -- and mapped page
 * by page.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "stallcap.h"

/**
 * stallcap_alloc_user() - zeroed, accounted memory to be mapped to user space
 * @bytes: a multiple of PAGE_SIZE
 */
void *stallcap_alloc_user(size_t bytes)
{
	return __vmalloc(bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
}

/**
 * stallcap_map_user() - map @base (from stallcap_alloc_user()) into @vma
 * @vma: the mapping, from its start; at most @bytes long
 * @base: the memory
 * @bytes: its size
 */
int stallcap_map_user(struct vm_area_struct *vma, void *base, size_t bytes)
{
	unsigned long addr, len = vma->vm_end - vma->vm_start;
	int ret;

	if (len > bytes)
		return -EINVAL;
	stallcap_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	for (addr = 0; addr < len; addr += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + addr,
				     vmalloc_to_page(base + addr));
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- locked memory: the user's allowance first, then RLIMIT_MEMLOCK ---- */

/**
 * struct stallcap_user_locked - one user's charge to its allowance
 * @node: in user_locked, while @pages is not zero
 * @uid: the user
 * @pages: pages its sessions have charged to the allowance
 *
 * Per user, not per process or session: however many processes a user
 * runs, together they lock at most the allowance beyond their own
 * RLIMIT_MEMLOCK.  A session that charged pages keeps the entry alive.
 */
struct stallcap_user_locked {
	struct hlist_node node;
	kuid_t uid;
	unsigned long pages;
};

static DEFINE_HASHTABLE(user_locked, 6);
static DEFINE_MUTEX(user_locked_lock);	/* the table and every entry */

static struct stallcap_user_locked *user_locked_find(kuid_t uid)
{
	struct stallcap_user_locked *u;

	lockdep_assert_held(&user_locked_lock);
	hash_for_each_possible(user_locked, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* The allowance in pages: mlock_kb per online CPU, as perf's. */
static unsigned long allowance_pages(void)
{
	return (READ_ONCE(stallcap_mlock_kb) >> (PAGE_SHIFT - 10)) *
	       num_online_cpus();
}

/** stallcap_mlock_bytes() - the allowance each user has now (GET_INFO) */
u64 stallcap_mlock_bytes(void)
{
	return (u64)allowance_pages() << PAGE_SHIFT;
}

/** stallcap_mlock_used_bytes() - what @uid has charged to its allowance */
u64 stallcap_mlock_used_bytes(kuid_t uid)
{
	struct stallcap_user_locked *u;
	u64 bytes = 0;

	mutex_lock(&user_locked_lock);
	u = user_locked_find(uid);
	if (u)
		bytes = (u64)u->pages << PAGE_SHIFT;
	mutex_unlock(&user_locked_lock);
	return bytes;
}

/*
 * Charge @pages to @mm's pinned_vm against RLIMIT_MEMLOCK (CAP_IPC_LOCK
 * exempt), as perf: an atomic counter, no mmap lock (taking it here, as
 * account_locked_vm() does, would order it after sess->lock in ARM and
 * before it in mmap(), a lock inversion).
 */
static int charge_pinned(struct mm_struct *mm, unsigned long pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	if (atomic64_add_return(pages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -EPERM;	/* the uapi header's errno, as perf's */
	}
	return 0;
}

/**
 * stallcap_charge_locked() - charge @pages of ring and slots
 * @sess: the session; remembers what was charged where
 * @pages: pages about to be allocated for it
 * @mmap_locked: the caller holds its mmap lock (in mmap()); either way
 *	neither the mmap lock nor anything that allocates user memory is
 *	taken here
 *
 * As perf_mmap(): to the caller's user's allowance while it lasts (what a
 * user charged beyond a since lowered mlock_kb counts as the whole
 * allowance), the rest to the caller's pinned_vm against RLIMIT_MEMLOCK.
 * All or nothing: on failure nothing stays charged.
 *
 * Context: process, the caller's (its user and address space are charged);
 * sess->lock held.
 * Return: 0, -ENOMEM, or -EPERM when the rest exceeds RLIMIT_MEMLOCK.
 */
int stallcap_charge_locked(struct stallcap_session *sess, unsigned long pages,
			   bool mmap_locked)
{
	struct stallcap_user_locked *u, *fresh;
	struct stallcap_locked *l = &sess->locked;
	struct mm_struct *mm = current->mm;
	unsigned long own, used, limit;
	int ret = 0;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	mutex_lock(&user_locked_lock);
	u = user_locked_find(current_uid());
	limit = allowance_pages();
	used = min(u ? u->pages : 0, limit);
	own = min(pages, limit - used);
	if (pages > own && mm)
		ret = charge_pinned(mm, pages - own);
	if (!ret && own) {
		if (!u) {
			u = fresh;
			fresh = NULL;
			u->uid = current_uid();
			hash_add(user_locked, &u->node, __kuid_val(u->uid));
		}
		u->pages += own;
		l->user = u;
		l->user_pages = own;
	}
	mutex_unlock(&user_locked_lock);
	kfree(fresh);
	if (ret)
		return ret;
	if (pages > own && mm) {
		mmgrab(mm);
		l->mm = mm;
		l->mm_pages = pages - own;
	}
	l->pages = pages;
	stallcap_count(&sess->stats, SC_LOCKED_BYTES, (s64)pages << PAGE_SHIFT);
	stallcap_count(&sess->stats, SC_LOCKED_RLIMIT_BYTES,
		       (s64)l->mm_pages << PAGE_SHIFT);
	return 0;
}

/**
 * stallcap_uncharge_locked() - give back what stallcap_charge_locked() took
 * @sess: the session
 *
 * Context: process.
 */
void stallcap_uncharge_locked(struct stallcap_session *sess)
{
	struct stallcap_locked *l = &sess->locked;

	if (l->user) {
		mutex_lock(&user_locked_lock);
		l->user->pages -= l->user_pages;
		if (!l->user->pages) {
			hash_del(&l->user->node);
			kfree(l->user);
		}
		mutex_unlock(&user_locked_lock);
	}
	if (l->mm) {
		atomic64_sub(l->mm_pages, &l->mm->pinned_vm);
		mmdrop(l->mm);
	}
	stallcap_count(&sess->stats, SC_LOCKED_BYTES, -((s64)l->pages << PAGE_SHIFT));
	stallcap_count(&sess->stats, SC_LOCKED_RLIMIT_BYTES,
		       -((s64)l->mm_pages << PAGE_SHIFT));
	memset(l, 0, sizeof(*l));
}
