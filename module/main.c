// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap: catch the moment a thread misses its deadline and save its
 * stack.  Module parameters, init and exit.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>

/* main.o is built first: a kernel stallcap cannot use stops the build here */
#ifndef CONFIG_X86_64
#error "stallcap runs on x86-64 kernels only (capture by NMI/IPI, the x86 unwinder)"
#endif
#ifndef STALLCAP_HAVE_USER_NOFAULT
#error "stallcap needs Linux 5.10 or later (copy_from_user_nofault(), 5.8, among others)"
#endif

#include "stallcap.h"
#include "attach.h"
#include "capture.h"

unsigned int stallcap_min_deadline_us __read_mostly = 100;
module_param_named(min_deadline_us, stallcap_min_deadline_us, uint, 0644);
MODULE_PARM_DESC(min_deadline_us, "Smallest timeout accepted, in microseconds (default 100, floor 10)");

/* Whatever min_deadline_us says, no timer runs more often than this. */
#define HARD_MIN_TIMEOUT_NS	(10 * NSEC_PER_USEC)

/**
 * stallcap_min_timeout_ns() - the smallest timeout, interval or period
 *
 * min_deadline_us, but never below 10 us even if root sets it to 0: a
 * zero interval would loop the timer callback.
 */
u64 stallcap_min_timeout_ns(void)
{
	return max_t(u64, (u64)READ_ONCE(stallcap_min_deadline_us) * NSEC_PER_USEC,
		     HARD_MIN_TIMEOUT_NS);
}

unsigned int stallcap_max_watches_per_user __read_mostly = 4096;
module_param_named(max_watches_per_user, stallcap_max_watches_per_user, uint, 0644);
MODULE_PARM_DESC(max_watches_per_user,
		 "Watches one user may hold; CAP_SYS_RESOURCE is exempt (default 4096)");

unsigned int stallcap_max_fast_watches_per_user __read_mostly = 64;
module_param_named(max_fast_watches_per_user, stallcap_max_fast_watches_per_user, uint, 0644);
MODULE_PARM_DESC(max_fast_watches_per_user,
		 "Armed watches with a timer period under 1 ms one user may hold; CAP_SYS_RESOURCE is exempt (default 64)");

unsigned int stallcap_max_ring_kb __read_mostly = 65536;
module_param_named(max_ring_kb, stallcap_max_ring_kb, uint, 0644);
MODULE_PARM_DESC(max_ring_kb, "Largest ring data area per session, in KiB (default 65536)");

/* 1032 KiB: one default session (control page, 1 MiB ring, 64 slots) */
unsigned int stallcap_mlock_kb __read_mostly = 1032;
module_param_named(mlock_kb, stallcap_mlock_kb, uint, 0644);
MODULE_PARM_DESC(mlock_kb,
		 "Ring and slot memory each user may lock beyond RLIMIT_MEMLOCK, in KiB per online CPU, as perf's perf_event_mlock_kb (default 1032: one default session per CPU)");

unsigned int stallcap_migrate_retries __read_mostly = 3;
module_param_named(migrate_retries, stallcap_migrate_retries, uint, 0644);
MODULE_PARM_DESC(migrate_retries,
		 "NMIs/IPIs sent after the target migrated before reading it remotely (default 3)");

static char *capture = "nmi";
module_param(capture, charp, 0444);
MODULE_PARM_DESC(capture, "How to interrupt a thread on another CPU: nmi (default) or ipi");

bool stallcap_use_nmi __read_mostly = true;

unsigned int stallcap_check_us __read_mostly = 1000;
module_param_named(check_us, stallcap_check_us, uint, 0644);
MODULE_PARM_DESC(check_us,
		 "Period of the buddy checkers that watch deadlines on CPUs not taking interrupts, in microseconds (default 1000, floor 100)");

unsigned int stallcap_buddy_cpus __read_mostly = 2;
module_param_named(buddy_cpus, stallcap_buddy_cpus, uint, 0444);
MODULE_PARM_DESC(buddy_cpus,
		 "How many housekeeping CPUs run buddy checkers, the lowest numbered (default 2, at least 2; 0: every one)");

bool stallcap_abi_test __read_mostly;
module_param_named(abi_test, stallcap_abi_test, bool, 0644);
MODULE_PARM_DESC(abi_test,
		 "Test readers: samples carry a longer fixed part and a section of an unassigned type (default off)");

bool stallcap_user_copy_in_handler __read_mostly;
module_param_named(user_copy_in_handler, stallcap_user_copy_in_handler, bool, 0644);
MODULE_PARM_DESC(user_copy_in_handler,
		 "Copy and walk the user stack inside the NMI/IPI handler (default off: after it, by an irq_work for a thread in the kernel, on the return to user space for one in user mode)");

bool stallcap_user_copy_in_timer __read_mostly;
module_param_named(user_copy_in_timer, stallcap_user_copy_in_timer, bool, 0644);
MODULE_PARM_DESC(user_copy_in_timer,
		 "Copy and walk the user stack of a thread its own timer interrupted in user mode inside the timer interrupt (default off: on that interrupt's return to user space, a USER_STACK record)");

module_param_named(beat_scan, stallcap_beat_scan, bool, 0644);
MODULE_PARM_DESC(beat_scan,
		 "Check heartbeat watches from one scanning timer per CPU (default on; off: one timer per watch, for comparisons; applies to watches parked after the change)");

module_param_named(beat_doze, stallcap_beat_doze_on, bool, 0644);
MODULE_PARM_DESC(beat_doze,
		 "Stop checking a heartbeat watch while its thread is off every CPU marked idle, until it runs again (default on; off: checked every period all along, for comparisons)");

module_param_named(deadline_tsc, stallcap_deadline_tsc, bool, 0644);
MODULE_PARM_DESC(deadline_tsc,
		 "Accept shared deadlines in time-stamp counter ticks while the TSC is the kernel's clocksource (default on; off: such ARMs fail with EOPNOTSUPP, as where it is not)");

static int __init stallcap_init(void)
{
	int ret;

	stallcap_abi_layout_check();
	if (!strcmp(capture, "ipi")) {
		stallcap_use_nmi = false;
	} else if (strcmp(capture, "nmi")) {
		pr_err("capture=%s: expected nmi or ipi\n", capture);
		return -EINVAL;
	}
	stallcap_defer_init();
	stallcap_tail_init();
	ret = stallcap_buddy_init();
	if (ret)
		return ret;
	stallcap_beat_init();
	stallcap_beat_doze_init();
	ret = stallcap_attach_init();
	if (ret)
		goto err_buddy;
	ret = stallcap_capture_init();
	if (ret)
		goto err_attach;
	ret = stallcap_why_init();
	if (ret)
		goto err_capture;
	ret = stallcap_remote_init();
	if (ret)
		goto err_why;
	ret = stallcap_watch_init();
	if (ret)
		goto err_remote;
	ret = stallcap_device_init();
	if (ret)
		goto err_watch;
	stallcap_stats_init();
	return 0;

err_watch:
	stallcap_watch_exit();
err_remote:
	stallcap_remote_exit();
err_why:
	stallcap_why_exit();
err_capture:
	stallcap_capture_exit();
err_attach:
	stallcap_attach_exit();
err_buddy:
	stallcap_buddy_exit();
	return ret;
}

static void __exit stallcap_exit(void)
{
	stallcap_stats_exit();
	stallcap_device_exit();
	stallcap_attach_probes_exit();	/* lingering after the last attach */
	stallcap_watch_exit();
	stallcap_remote_exit();
	stallcap_tail_exit();
	stallcap_why_exit();
	stallcap_defer_exit();
	stallcap_buddy_exit();
	stallcap_beat_doze_exit();
	stallcap_beat_exit();
	rcu_barrier();	/* watch_free_rcu() and attach_free_rcu() callbacks */
	stallcap_attach_exit();
	stallcap_capture_exit();
}

module_init(stallcap_init);
module_exit(stallcap_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Capture the stack of a thread that misses its deadline");
