// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap per-user watch limits: how many watches each user has
 * (max_watches_per_user), and how many of them may run their timer faster
 * than once a millisecond (max_fast_watches_per_user).  An opener with
 * CAP_SYS_RESOURCE is counted but not bounded.
 *
 * A watch is counted when it is made and uncounted when it is destroyed.
 * ATTACH makes a watch per thread: it counts them all at once, before it
 * makes anything (a reservation), so that another session of the same user
 * cannot take the room between its count and its last watch; the watches
 * it then makes take their count from the reservation, and what is left
 * (threads that exited meanwhile) is given back.
 */
#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>

#include "stallcap.h"
#include "attach.h"

struct user_watches {
	struct hlist_node node;
	kuid_t uid;
	unsigned int count;
	atomic_t fast;		/* armed watches with a period under FAST_NS */
};

/*
 * A watch's timer expires about once per period (lazy re-arm): periods
 * under 1 ms are the hard-IRQ work one user may cause on every CPU.  Their
 * number is bounded per user (max_fast_watches_per_user; CAP_SYS_RESOURCE
 * exempt, as for max_watches_per_user).
 */
#define FAST_NS		NSEC_PER_MSEC

static DEFINE_HASHTABLE(user_watches, 6);
static DEFINE_SPINLOCK(user_watches_lock);

static struct user_watches *user_watches_find(kuid_t uid)
{
	struct user_watches *u;

	hash_for_each_possible(user_watches, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* @uid's entry, made from *@fresh (then NULL) if it has none.  Lock held. */
static struct user_watches *user_watches_get(kuid_t uid,
					     struct user_watches **fresh)
{
	struct user_watches *u = user_watches_find(uid);

	if (!u) {
		u = *fresh;
		*fresh = NULL;
		u->uid = uid;
		hash_add(user_watches, &u->node, __kuid_val(uid));
	}
	return u;
}

/* Uncount @n watches of @u; the entry goes with its last.  Lock held. */
static void user_watches_put(struct user_watches *u, unsigned int n)
{
	u->count -= n;
	if (!u->count) {
		hash_del(&u->node);
		kfree(u);
	}
}

/**
 * stallcap_watch_charge() - count one more watch of @uid
 * @uid: the session opener's user
 * @unlimited: the opener had CAP_SYS_RESOURCE
 *
 * Return: the user's entry (valid while the watch is counted), or
 * ERR_PTR(-ENOSPC) at max_watches_per_user, or ERR_PTR(-ENOMEM).
 */
struct user_watches *stallcap_watch_charge(kuid_t uid, bool unlimited)
{
	struct user_watches *u, *fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	int ret = 0;

	if (!fresh)
		return ERR_PTR(-ENOMEM);
	spin_lock(&user_watches_lock);
	u = user_watches_get(uid, &fresh);
	if (u->count >= stallcap_max_watches_per_user && !unlimited)
		ret = -ENOSPC;
	else
		u->count++;
	if (ret && !u->count)
		user_watches_put(u, 0);
	spin_unlock(&user_watches_lock);
	kfree(fresh);
	return ret ? ERR_PTR(ret) : u;
}

/* Uncount one watch of @uid (stallcap_watch_charge()). */
void stallcap_watch_uncharge(kuid_t uid)
{
	struct user_watches *u;

	spin_lock(&user_watches_lock);
	u = user_watches_find(uid);
	if (u)
		user_watches_put(u, 1);
	spin_unlock(&user_watches_lock);
}

/*
 * Account @w as armed with timer period @period (U64_MAX: not armed).
 * Context: @w's lock held (atomic only).  Return: 0, or -ENOSPC when the
 * user's fast watches are at max_fast_watches_per_user.
 */
int stallcap_watch_fast_update(struct stallcap_watch *w, u64 period)
{
	bool fast = period < FAST_NS;

	if (fast == w->fast)
		return 0;
	if (!fast) {
		atomic_dec(&w->uw->fast);
	} else if (atomic_inc_return(&w->uw->fast) >
		   READ_ONCE(stallcap_max_fast_watches_per_user) &&
		   !w->fast_exempt) {
		atomic_dec(&w->uw->fast);
		return -ENOSPC;
	}
	w->fast = fast;
	return 0;
}

/**
 * stallcap_watch_reserve() - count @n watches of @sess's user ahead
 * @sess: the session (its opener's user and rights)
 * @n: watches to be made
 * @period: their timer period (under 1 ms: counted as fast watches too)
 * @r: the reservation, empty; filled on success
 *
 * For a call that makes several watches (ATTACH): all of them or none, and
 * refused before it makes the session's ring.  The watches made for it
 * take their count from @r (stallcap_watch_take_reserved()); the caller
 * gives back the rest with stallcap_watch_unreserve().
 *
 * Return: 0, -ENOSPC (a limit would be passed) or -ENOMEM.
 */
int stallcap_watch_reserve(struct stallcap_session *sess, unsigned int n,
			   u64 period, struct stallcap_watch_reserve *r)
{
	struct user_watches *u, *fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	bool fast = period < FAST_NS;
	int ret = 0;

	if (!fresh)
		return -ENOMEM;
	spin_lock(&user_watches_lock);
	u = user_watches_get(sess->uid, &fresh);
	if (!sess->unlimited &&
	    (u64)u->count + n > READ_ONCE(stallcap_max_watches_per_user))
		ret = -ENOSPC;
	else if (fast && atomic_add_return(n, &u->fast) >
		 READ_ONCE(stallcap_max_fast_watches_per_user) &&
		 !sess->unlimited) {
		atomic_sub(n, &u->fast);
		ret = -ENOSPC;
	}
	if (!ret) {
		u->count += n;
		*r = (struct stallcap_watch_reserve){ .uw = u, .left = n,
						      .fast = fast };
	} else if (!u->count) {
		user_watches_put(u, 0);
	}
	spin_unlock(&user_watches_lock);
	kfree(fresh);
	return ret;
}

/* One watch's count out of @r (not empty): its user's entry. */
struct user_watches *stallcap_watch_take_reserved(struct stallcap_watch_reserve *r)
{
	r->left--;
	return r->uw;
}

/* A count taken from @r for a watch that was not made after all. */
void stallcap_watch_give_back(struct stallcap_watch_reserve *r)
{
	r->left++;
}

/* Uncount what is left of @r (threads gone before their watch was made). */
void stallcap_watch_unreserve(struct stallcap_watch_reserve *r)
{
	if (!r->left)
		return;
	spin_lock(&user_watches_lock);
	if (r->fast)
		atomic_sub(r->left, &r->uw->fast);
	user_watches_put(r->uw, r->left);
	spin_unlock(&user_watches_lock);
	r->left = 0;
}
