// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-check: a kselftest-harness program that dies on its way
 * (its second case kills it, once), after a failed case and before its
 * third case ran.  Its retry must run it whole, not only the case that
 * failed: the first case passes only once the third has run.  Retried
 * whole, the first case fails again and passes on the second retry (run
 * alone); retried alone, it would fail every time.
 */
#include <signal.h>

#include "kselftest_harness.h"
#include "first_time.h"

#define THIRD_RAN	"/tmp/harness_retry_died.third"

TEST(passes_once_the_third_ran)
{
	ASSERT_EQ(0, access(THIRD_RAN, F_OK)) TH_LOG("the third case never ran");
}

TEST(kills_the_program_once)
{
	if (first_time("/tmp/harness_retry_died.killed"))
		kill(getppid(), SIGKILL);
}

TEST(third)
{
	first_time(THIRD_RAN);
}

TEST_HARNESS_MAIN
