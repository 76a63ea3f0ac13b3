// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach probes: the wait calls' kretprobes and the follow
 * tracepoints that every attach needs, and the optional sets of some
 * (STALLCAP_ATTACH_PARK, STALLCAP_ATTACH_RECV).  Each is registered by the
 * first attach that needs it and stays while one does, and PROBES_LINGER
 * after the last one ended.
 *
 * Removing probes waits on the kernel: unregister_kretprobes() for an RCU
 * grace period and for the patched function entries to be written back on
 * every CPU, tracepoint_synchronize_unregister() for RCU and SRCU grace
 * periods.  That took 0.4-0.6 s in an idle 7.3 guest, all of it inside the
 * close() of the reader's session: `stallcap record` ended that long after
 * its command (2.4-3.4 s in all on a loaded guest).  The removal runs from a
 * delayed work instead, and an attach made meanwhile finds the probes still
 * there.  While they linger, a wait call of a process nobody attached costs
 * its probe's hash lookup, as it does while any attach exists.
 *
 * Locking: attach_lock, taken by the callers of stallcap_attach_probes_get()
 * and stallcap_attach_probes_put(), and by the delayed work.
 */
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/workqueue.h>

#include "stallcap.h"
#include "attach.h"

#define PROBES_LINGER	(5 * HZ)

/*
 * A set of probes registered and removed together.
 * @kind: SC_WAIT_* that needs it, 0: every attach
 * @nr_attaches: the attaches that need it now
 * @registered: it is registered (needed, or lingering)
 * @more: register what the set's first registration could not (may be NULL)
 */
struct probe_kind {
	unsigned int kind;
	unsigned int nr_attaches;
	bool registered;
	int (*reg)(void);
	void (*unreg)(void);
	void (*more)(void);
};

static int base_probes_register(void)
{
	int ret;

	ret = stallcap_wait_probes_register();
	if (ret)
		return ret;
	ret = stallcap_follow_probes_register();
	if (ret)
		stallcap_wait_probes_unregister();
	return ret;
}

static void base_probes_unregister(void)
{
	stallcap_follow_probes_unregister();
	stallcap_wait_probes_unregister();
}

static struct probe_kind probe_kinds[] = {
	{ .kind = SC_WAIT_PARK, .reg = stallcap_park_probes_register,
	  .unreg = stallcap_park_probes_unregister },
	{ .kind = SC_WAIT_RECV, .reg = stallcap_recv_probes_register,
	  .unreg = stallcap_recv_probes_unregister },
	{ .kind = 0, .reg = base_probes_register,
	  .unreg = base_probes_unregister,
	  .more = stallcap_wait_probes_register_more },
};

static void probes_linger_end(struct work_struct *work);
static DECLARE_DELAYED_WORK(probes_linger_work, probes_linger_end);

static bool probe_kind_wanted(const struct probe_kind *k, unsigned int waits)
{
	return !k->kind || (waits & k->kind);
}

static int probe_kind_get(struct probe_kind *k)
{
	int ret;

	if (k->registered) {
		if (k->more)
			k->more();
	} else {
		ret = k->reg();
		if (ret)
			return ret;
		k->registered = true;
	}
	k->nr_attaches++;
	return 0;
}

static void probe_kind_put(struct probe_kind *k)
{
	if (!--k->nr_attaches)
		mod_delayed_work(system_unbound_wq, &probes_linger_work,
				 PROBES_LINGER);
}

/* Remove the sets no attach needs.  attach_lock held. */
static void probes_remove_unneeded(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(probe_kinds); i++) {
		struct probe_kind *k = &probe_kinds[i];

		if (k->registered && !k->nr_attaches) {
			k->unreg();
			k->registered = false;
		}
	}
}

static void probes_linger_end(struct work_struct *work)
{
	stallcap_attach_lock();
	probes_remove_unneeded();
	stallcap_attach_unlock();
}

/**
 * stallcap_attach_probes_get() - make sure the probes an attach needs are
 * registered
 * @waits: the attach's kinds of wait call (enum stallcap_wait_kind)
 *
 * Context: process, attach_lock held.
 * Return: 0, or -errno from the registration (nothing taken then).
 */
int stallcap_attach_probes_get(unsigned int waits)
{
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(probe_kinds); i++) {
		if (!probe_kind_wanted(&probe_kinds[i], waits))
			continue;
		ret = probe_kind_get(&probe_kinds[i]);
		if (ret)
			goto err;
	}
	return 0;
err:
	while (i--)
		if (probe_kind_wanted(&probe_kinds[i], waits))
			probe_kind_put(&probe_kinds[i]);
	return ret;
}

/**
 * stallcap_attach_probes_put() - an attach that needed them ended; the sets
 * no attach needs are removed PROBES_LINGER later
 * @waits: the attach's kinds of wait call, as given to the get
 *
 * Context: process, attach_lock held.
 */
void stallcap_attach_probes_put(unsigned int waits)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(probe_kinds); i++)
		if (probe_kind_wanted(&probe_kinds[i], waits))
			probe_kind_put(&probe_kinds[i]);
}

/**
 * stallcap_attach_probes_exit() - remove the lingering probes now
 *
 * Context: module exit, no session left (so no attach), before anything
 * their handlers use is torn down.
 */
void stallcap_attach_probes_exit(void)
{
	cancel_delayed_work_sync(&probes_linger_work);
	probes_linger_end(&probes_linger_work.work);
}
