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
