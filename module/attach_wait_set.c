// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: the wait-call probes as sets registered and removed
 * together (the event-loop waits while an attach exists; the futex waits,
 * semaphore waits and sleeps while an attach with STALLCAP_ATTACH_PARK
 * exists; the socket and pipe receives while one with STALLCAP_ATTACH_RECV
 * does; each a few seconds longer, attach_probes.c), and which calls they
 * count for a thread found inside one.  The
 * calls, their handlers and the sets' contents: attach_wait.c (the
 * event-loop waits) and attach_wait_kinds.c (the others).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "compat.h"
#include "stallcap.h"
#include "attach.h"

static void probe_set_unregister(struct stallcap_wait_probe_set *set)
{
	unsigned long missed = 0;
	unsigned int i;

	if (!set->nr_registered)
		return;
	for (i = 0; i < set->nr_registered; i++)
		missed += set->ptrs[i]->nmissed;
	WRITE_ONCE(set->registered, 0);
	unregister_kretprobes(set->ptrs, set->nr_registered);
	stallcap_wait_deferred_sync();
	set->nr_registered = 0;
	if (missed)
		pr_warn("%lu %s returns missed (more watched threads waiting than the probes' instances)\n",
			missed, set->name);
}

/* Register @set's probe @i; a required one's failure is told. */
static int probe_set_register_one(struct stallcap_wait_probe_set *set,
				  unsigned int i)
{
	struct kretprobe *rp = &set->probes[i];
	int ret;

	/* a kretprobe is reusable once its address is cleared */
	rp->kp.addr = NULL;
	rp->kp.flags = 0;
	rp->nmissed = 0;
	ret = register_kretprobe(rp);
	if (ret) {
		if (i < set->nr_required)
			pr_warn("cannot probe %s: %d\n", rp->kp.symbol_name, ret);
		else
			pr_info_once("%s not probed (%d)\n", rp->kp.symbol_name,
				     ret);
		return ret;
	}
	set->ptrs[set->nr_registered++] = rp;
	WRITE_ONCE(set->registered, set->registered | BIT(i));
	return 0;
}

/*
 * Probe by their ThinLTO names (ksym_lto.c) the functions of @set not found
 * by name, @missing: looked for once, and again after a module was loaded.
 * The probe keeps the name found: the kernel's name for the function, as
 * stallcap_wait_probes_count_read() compares it.
 */
static void probe_set_register_lto(struct stallcap_wait_probe_set *set,
				   unsigned long missing)
{
	unsigned int loads = stallcap_ksym_lto_loads(), n = 0, i, k;
	const char **names, **found;
	int *idx;

	if (!IS_ENABLED(CONFIG_LTO_CLANG) || !missing ||
	    (!(missing & ~set->lto_tried) && set->lto_loads == loads))
		return;
	names = kcalloc(set->nr, sizeof(*names), GFP_KERNEL);
	found = kcalloc(set->nr, sizeof(*found), GFP_KERNEL);
	idx = kcalloc(set->nr, sizeof(*idx), GFP_KERNEL);
	if (!names || !found || !idx)
		goto out;
	for_each_set_bit(i, &missing, set->nr) {
		idx[n] = i;
		names[n++] = set->probes[i].kp.symbol_name;
	}
	if (stallcap_ksym_lto_names(names, found, n) < 0)
		goto out;
	set->lto_tried |= missing;
	set->lto_loads = loads;
	for (k = 0; k < n; k++) {
		if (!found[k])
			continue;
		set->probes[idx[k]].kp.symbol_name = found[k];
		probe_set_register_one(set, idx[k]);
	}
out:
	kfree(idx);
	kfree(found);
	kfree(names);
}

static int probe_set_register(struct stallcap_wait_probe_set *set)
{
	unsigned long missing = 0;
	unsigned int i;
	int ret;

	stallcap_wait_deferred_init();
	set->nr_registered = 0;
	for (i = 0; i < set->nr; i++) {
		ret = probe_set_register_one(set, i);
		if (ret && i < set->nr_required) {
			probe_set_unregister(set);
			return ret == -ENOENT ? -EOPNOTSUPP : ret;
		}
		if (ret == -ENOENT)
			missing |= BIT(i);
	}
	probe_set_register_lto(set, missing);
	return 0;
}

/*
 * Remove @set's probe @i, whose function went with its module (the kprobe
 * is "gone": never hit again, nothing of it runs), so that it can be
 * registered again on the module's next load.
 */
static void probe_set_forget(struct stallcap_wait_probe_set *set,
			     unsigned int i)
{
	struct kretprobe *rp = &set->probes[i];
	unsigned int k;

	WRITE_ONCE(set->registered, set->registered & ~BIT(i));
	unregister_kretprobe(rp);
	for (k = 0; k < set->nr_registered && set->ptrs[k] != rp; k++)
		;
	if (k < set->nr_registered)
		set->ptrs[k] = set->ptrs[--set->nr_registered];
}

/*
 * Probe what @set's registration could not: a driver's read function whose
 * module was loaded since (uio_read, evdev_read), or loaded again since it
 * was removed.  A symbol the kernel does not have costs a failed lookup.
 */
static void probe_set_register_more(struct stallcap_wait_probe_set *set)
{
	unsigned long missing = 0;
	unsigned int i;

	for (i = set->nr_required; i < set->nr; i++) {
		if ((set->registered & BIT(i)) && kprobe_gone(&set->probes[i].kp))
			probe_set_forget(set, i);
		if (!(set->registered & BIT(i)) &&
		    probe_set_register_one(set, i) == -ENOENT)
			missing |= BIT(i);
	}
	probe_set_register_lto(set, missing);
}

/* ---- which calls count: for a thread found inside one (attach_wait_regs.c) ---- */

/*
 * Does @set probe call @nr with the arguments in @regs, now?  No @regs: a
 * call resumed by restart_syscall, whose arguments are in its restart block.
 */
static bool probe_set_counts(const struct stallcap_wait_probe_set *set, long nr,
			     const struct pt_regs *regs)
{
	unsigned long registered = READ_ONCE(set->registered);
	unsigned int i;

	if (nr < 0)
		return false;
	for (i = 0; i < set->nr; i++) {
		if (set->syscall_nrs[i] == nr && (registered & BIT(i)))
			return stallcap_wait_call_args_count(nr, regs);
	}
	return false;
}

/**
 * stallcap_wait_probes_count() - do the registered probes count call @nr
 * with the arguments in @regs as a wait, now
 * @nr: an x86-64 system call number (-1: none)
 * @regs: the call's user registers, or NULL for a call resumed by
 *	restart_syscall (its arguments are in its restart block)
 * @waits: the kinds of wait call counted (enum stallcap_wait_kind)
 */
bool stallcap_wait_probes_count(long nr, const struct pt_regs *regs,
				unsigned int waits)
{
	return probe_set_counts(&stallcap_wait_set, nr, regs) ||
	       ((waits & SC_WAIT_PARK) &&
		probe_set_counts(&stallcap_park_set, nr, regs)) ||
	       ((waits & SC_WAIT_RECV) &&
		probe_set_counts(&stallcap_recv_set, nr, regs));
}

/* Does @set probe the read function @fn_name, now? */
static bool probe_set_counts_read(const struct stallcap_wait_probe_set *set,
				  const char *fn_name)
{
	unsigned long registered = READ_ONCE(set->registered);
	const char *sym;
	unsigned int i;
	size_t len;

	for (i = 0; i < set->nr; i++) {
		/* the read functions' probes have no system call number */
		if (set->syscall_nrs[i] >= 0 || !(registered & BIT(i)))
			continue;
		/* a name ThinLTO gave it compares without its suffix */
		sym = set->probes[i].kp.symbol_name;
		len = stallcap_ksym_base_len(sym);
		if (!strncmp(sym, fn_name, len) && !fn_name[len])
			return true;
	}
	return false;
}

/**
 * stallcap_wait_probes_count_read() - does a registered probe count a read
 * by @fn_name (a file's read_iter or read function: a timerfd's, a
 * signalfd's, an eventfd's; a socket's, a pipe's) as a wait
 * @fn_name: the function's symbol name (without a ThinLTO suffix)
 * @waits: the kinds of wait call counted (enum stallcap_wait_kind)
 *
 * For a thread found inside a blocking read() of that file (the file's
 * flags are the caller's to check).
 */
bool stallcap_wait_probes_count_read(const char *fn_name, unsigned int waits)
{
	return probe_set_counts_read(&stallcap_wait_set, fn_name) ||
	       ((waits & SC_WAIT_RECV) &&
		probe_set_counts_read(&stallcap_recv_set, fn_name));
}

/**
 * stallcap_wait_probes_register() - register the wait-call kretprobes
 *
 * A call the running kernel does not have (io_uring compiled out,
 * epoll_pwait2 before 5.11) is skipped; epoll_wait, epoll_pwait and poll
 * must be there.
 * Context: process, attach_lock held.
 * Return: 0 or -errno.
 */
int stallcap_wait_probes_register(void)
{
	return probe_set_register(&stallcap_wait_set);
}

/**
 * stallcap_wait_probes_unregister() - remove them (waits for handlers)
 *
 * Context: process, attach_lock held.
 */
void stallcap_wait_probes_unregister(void)
{
	probe_set_unregister(&stallcap_wait_set);
}

/**
 * stallcap_wait_probes_register_more() - register the wait-call kretprobes
 * that the first attach could not (a new attach while others exist)
 *
 * A device driver built as a module and loaded since: its read counts from
 * this attach on.
 * Context: process, attach_lock held, the probes registered.
 */
void stallcap_wait_probes_register_more(void)
{
	probe_set_register_more(&stallcap_wait_set);
}

/**
 * stallcap_park_probes_register() - register the futex and sleep
 * kretprobes (the first attach with STALLCAP_ATTACH_PARK)
 *
 * futex, nanosleep and clock_nanosleep must be there; futex_waitv (5.16),
 * futex_wait (6.7), semop and semtimedop (CONFIG_SYSVIPC) are skipped where
 * missing.
 * Context: process, attach_lock held.
 * Return: 0 or -errno.
 */
int stallcap_park_probes_register(void)
{
	return probe_set_register(&stallcap_park_set);
}

/**
 * stallcap_park_probes_unregister() - remove them (the last such attach
 * ended; waits for handlers)
 *
 * Context: process, attach_lock held.
 */
void stallcap_park_probes_unregister(void)
{
	probe_set_unregister(&stallcap_park_set);
}

/**
 * stallcap_recv_probes_register() - register the receive kretprobes
 * (the first attach with STALLCAP_ATTACH_RECV)
 *
 * recvfrom and recvmsg must be there; sock_read_iter (a read() of a
 * socket), recvmmsg and the pipe reads (pipe_read, anon_pipe_read from
 * 6.15: one of the two) are skipped where missing (such a read is then busy
 * time).
 * Context: process, attach_lock held.
 * Return: 0 or -errno.
 */
int stallcap_recv_probes_register(void)
{
	return probe_set_register(&stallcap_recv_set);
}

/**
 * stallcap_recv_probes_unregister() - remove them (the last such attach
 * ended; waits for handlers)
 *
 * Context: process, attach_lock held.
 */
void stallcap_recv_probes_unregister(void)
{
	probe_set_unregister(&stallcap_recv_set);
}
