// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): small helpers every part of the tool uses.
 */
#include <stdarg.h>
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

__u64 now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + (__u64)ts.tv_nsec;
}
