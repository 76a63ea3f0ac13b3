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
 * User frames in files that carry no symbol for them (a distribution's
 * stripped binaries and libraries keep only their exported names) and no
 * debug file found by build-id or debug link: where names would come from.
 */
void hint_unnamed(const struct resolver *r)
{
	bool many = r->nr_unnamed_files > 1 || r->more_unnamed_files;
	char files[1024] = "";
	size_t len = 0;
	unsigned int i;

	if (!r->nr_unnamed_files)
		return;
	for (i = 0; i < r->nr_unnamed_files && len < sizeof(files); i++)
		len += (size_t)snprintf(files + len, sizeof(files) - len, "%s%s", i ? ", " : "",
					r->unnamed_files[i]);
	warnx_("hint: user frames in %s%s have no name: %s no symbol for them and no "
	       "debug file of %s was found; install %s debug symbols (on Debian the "
	       "package's -dbgsym or -dbg package: under /usr/lib/debug, where stallcap "
	       "looks by build-id), or give a directory holding them with --symfs DIR",
	       files, r->more_unnamed_files ? " and others" : "",
	       many ? "those files carry" : "the file carries", many ? "them" : "it",
	       many ? "their" : "its");
}

/*
 * @yielding of the @stalls stalls shown found their thread in sched_yield()
 * at every sample (sc_stall_yields()).
 */
void hint_busy_wait(__u64 yielding, __u64 stalls)
{
	if (yielding)
		warnx_("hint: %llu of %llu stalls found their thread in sched_yield() at every "
		       "sample: a busy wait, the thread runnable, not working (a runtime's "
		       "scheduler spinning before it sleeps, as Erlang's unless run with "
		       "+sbwt none +sbwtdcpu none +sbwtdio none; a lock that yields): what it "
		       "waits for is elsewhere",
		       (unsigned long long)yielding, (unsigned long long)stalls);
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

/*
 * @receiving of the @stalls stalls of attached threads (without --recv)
 * found their thread in a socket receive, a pipe or a terminal read at
 * their first sample: a thread per connection waits so for the next
 * request, a pool's worker process for its next job (Python's
 * multiprocessing), a device's control loop for its serial line's next
 * frame.  One is
 * enough: how many of a pool's workers were watched before such a wait
 * depends on who took the job queue's lock first (a futex wait under
 * --park or not), and an event loop that blocks in a receive is rarer than
 * one that takes a lock.
 */
void hint_recv(__u64 receiving, __u64 stalls)
{
	if (receiving)
		warnx_("hint: %llu of %llu stalls began with the thread in a socket receive, "
		       "a pipe or a terminal read: if those threads wait there for work (a "
		       "thread per connection for the next request, a pool's worker process for "
		       "its next job, a loop for its serial line's next frame), record with "
		       "--recv, which counts blocking receives, pipe and terminal reads as idle",
		       (unsigned long long)receiving, (unsigned long long)stalls);
}
