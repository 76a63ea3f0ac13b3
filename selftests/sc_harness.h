/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kselftest harness with stallcap's default per-test timeout: 120 s
 * instead of the harness's 30.  The guests run under TCG, and the debug
 * kernel (lockdep, KASAN, kmemleak) 3x slower still: tests that take 5 s
 * on a fast guest passed 30 s there on a loaded host (heartbeat_test,
 * why_fault_test).  A hung test still ends, and TEST_F_TIMEOUT sets its own.
 * Also the running kernel's version, for expectations that depend on it.
 */
#ifndef SC_HARNESS_H
#define SC_HARNESS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/utsname.h>

#include "kselftest_harness.h"

#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	120

/* Is the running kernel older than @major.@minor? */
static inline bool sc_kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
}

/* Is the running kernel built with PREEMPT_RT? */
static inline bool sc_kernel_is_rt(void)
{
	struct utsname u;

	return !uname(&u) && strstr(u.version, "PREEMPT_RT");
}

#endif
