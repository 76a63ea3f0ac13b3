// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-check: a kselftest-harness program one of whose cases fails
 * on its first run in a boot.  The guest's init must run that case again
 * alone (-r fixture.test): the other case fails when it runs a second time,
 * so the program passes on its retry only if nothing but the failed case
 * ran again.  The host must report it passed, with a FLAKY note.
 */
#include "kselftest_harness.h"
#include "first_time.h"

TEST(runs_once)
{
	ASSERT_TRUE(first_time("/tmp/harness_retry_cases.once"))
		TH_LOG("ran again: the retry ran more than the failed case");
}

TEST(fails_on_its_first_run)
{
	ASSERT_FALSE(first_time("/tmp/harness_retry_cases.first"))
		TH_LOG("the deliberate failure of the first run");
}

TEST_HARNESS_MAIN
