// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): one-line hints after an error or a surprise, saying what to
 * do about it (suppressed by sc_quiet, like every warning).  Why
 * /dev/stallcap could not be opened: warn_open() (util.c).
 */
#include <errno.h>

#include "tool.h"

void hint_lost(__u64 lost)
{
	if (lost)
		warnx_("hint: %llu records did not fit in the ring and were lost: enlarge it "
		       "with --ring-kb KB (a power of two, e.g. --ring-kb 4096)",
		       (unsigned long long)lost);
}

void hint_kallsyms(int err)
{
	if (err == -EPERM)
		warnx_("hint: kernel frames stay unresolved: /proc/kallsyms shows zeros "
		       "(run as root, or with CAP_SYSLOG and kernel.kptr_restrict=0 or 1)");
}

void hint_no_watch(__u64 records)
{
	if (!records)
		warnx_("hint: no records: no deadline was missed, or the command never armed "
		       "a watch (it must use libstallcap's session from STALLCAP_FD)");
}

/*
 * @futex of the @stalls stalls of attached threads (without --park) found
 * their thread waiting on a futex at their first sample: idle workers of a
 * pool or a thread cache (MariaDB's between connections, a runtime's)
 * wait so for work, on a condition variable, and are then reported.
 */
void hint_park(__u64 futex, __u64 stalls)
{
	if (futex >= 2)
		warnx_("hint: %llu of %llu stalls began with the thread waiting on a futex: "
		       "if those threads are idle workers waiting for work (a thread pool, "
		       "a thread cache), record with --park, which counts futex waits and "
		       "sleeps as idle (lock waits on a plain futex too)",
		       (unsigned long long)futex, (unsigned long long)stalls);
}
