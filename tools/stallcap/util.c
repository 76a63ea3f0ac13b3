// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): small helpers every part of the tool uses.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "tool.h"

const char *prog = "stallcap";

void warnx_(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Why the session could not be opened (@err: a negative errno). */
void warn_open(int err)
{
	if (err == -EACCES)
		warnx_("no permission on " STALLCAP_DEVICE ": add yourself to group stallcap "
		       "(as root: adduser $USER stallcap), then log in again");
	else if (err == -ENOENT)
		warnx_("no " STALLCAP_DEVICE ": is the stallcap module loaded?");
	else
		warnx_("cannot open the session: %s", strerror(-err));
}

__u64 now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
}
