// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap attach: the event-loop wait boundaries, from kretprobes on the
 * system call entry points of the wait calls.
 *
 * Why not the sys_enter/sys_exit tracepoints: registering a probe there sets
 * the syscall-tracepoint work flag on every task of the system, and every
 * system call of every process then takes the slow path.  A kretprobe on
 * __x64_sys_epoll_wait costs only the calls to that function, and for a
 * process nobody attached its entry handler does one hash lookup and asks
 * for no return hook.  The probes exist only while an attach exists.
 *
 * io_uring_enter counts as a wait only with IORING_ENTER_GETEVENTS (waiting
 * for completions); a submission-only call is busy time.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>

#include "stallcap.h"

/* IORING_ENTER_GETEVENTS of <linux/io_uring.h> (ABI, never changes) */
#define SC_IORING_ENTER_GETEVENTS	BIT(0)

/*
 * Instances of a return probe: one per thread inside a probed call of a
 * watched thread (unwatched threads take none beyond the entry handler).
 */
#define WAIT_MAXACTIVE	1024

static int wait_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	/* 0: watched, run the return handler; else no return hook */
	return stallcap_attach_wait_boundary(false) ? 0 : 1;
}

static int wait_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	stallcap_attach_wait_boundary(true);
	return 0;
}

/* io_uring_enter(fd, to_submit, min_complete, flags, ...): 4th argument */
static int uring_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const struct pt_regs *uregs = (const struct pt_regs *)regs->di;

	if (!(READ_ONCE(uregs->r10) & SC_IORING_ENTER_GETEVENTS))
		return 1;
	return wait_entry(ri, regs);
}

#define WAIT_PROBE(sym, entry) {				\
	.kp.symbol_name = sym,					\
	.entry_handler = entry,					\
	.handler = wait_return,					\
	.maxactive = WAIT_MAXACTIVE,				\
}

static struct kretprobe wait_probes[] = {
	WAIT_PROBE("__x64_sys_epoll_wait", wait_entry),
	WAIT_PROBE("__x64_sys_epoll_pwait", wait_entry),
	WAIT_PROBE("__x64_sys_epoll_pwait2", wait_entry),
	WAIT_PROBE("__x64_sys_poll", wait_entry),
	WAIT_PROBE("__x64_sys_ppoll", wait_entry),
	WAIT_PROBE("__x64_sys_select", wait_entry),
	WAIT_PROBE("__x64_sys_pselect6", wait_entry),
	WAIT_PROBE("__x64_sys_io_getevents", wait_entry),
	WAIT_PROBE("__x64_sys_io_pgetevents", wait_entry),
	WAIT_PROBE("__x64_sys_io_uring_enter", uring_entry),
};

static struct kretprobe *wait_probe_ptrs[ARRAY_SIZE(wait_probes)];
static unsigned int nr_registered;

/**
 * stallcap_wait_probes_register() - register the wait-call kretprobes
 *
 * A call the running kernel does not have (io_uring compiled out,
 * epoll_pwait2 before 5.11) is skipped; epoll_wait, epoll_pwait and poll
 * must be there.
 * Context: process, attach_lock held.
 */
int stallcap_wait_probes_register(void)
{
	unsigned int i;
	int ret;

	nr_registered = 0;
	for (i = 0; i < ARRAY_SIZE(wait_probes); i++) {
		struct kretprobe *rp = &wait_probes[i];

		/* a kretprobe is reusable once its address is cleared */
		rp->kp.addr = NULL;
		rp->kp.flags = 0;
		rp->nmissed = 0;
		ret = register_kretprobe(rp);
		if (ret) {
			/* epoll_wait, epoll_pwait and poll (not epoll_pwait2) */
			if (i < 4 && i != 2)
				goto fail;
			pr_info_once("%s not probed (%d)\n", rp->kp.symbol_name,
				     ret);
			continue;
		}
		wait_probe_ptrs[nr_registered++] = rp;
	}
	return 0;
fail:
	pr_warn("cannot probe %s: %d\n", wait_probes[i].kp.symbol_name, ret);
	stallcap_wait_probes_unregister();
	return ret == -ENOENT ? -EOPNOTSUPP : ret;
}

/**
 * stallcap_wait_probes_unregister() - remove them (waits for handlers)
 *
 * Context: process.
 */
void stallcap_wait_probes_unregister(void)
{
	unsigned int i;
	unsigned long missed = 0;

	if (!nr_registered)
		return;
	for (i = 0; i < nr_registered; i++)
		missed += wait_probe_ptrs[i]->nmissed;
	unregister_kretprobes(wait_probe_ptrs, nr_registered);
	nr_registered = 0;
	if (missed)
		pr_warn("%lu wait-call returns missed (more than %d watched threads waiting)\n",
			missed, WAIT_MAXACTIVE);
}
