// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): small helpers every part of the tool uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

const char *prog = "stallcap";
bool sc_quiet;

void warnx_(const char *fmt, ...)
{
	va_list ap;

	if (sc_quiet)
		return;
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

/*
 * Open a file named by a recording (a map's path, possibly from another
 * machine) for reading: a regular file only.  Opening never blocks (a FIFO)
 * and never acquires a terminal; a device node is refused before any read.
 * Returns the fd, or -1 with errno set (EINVAL for a file that is not
 * regular).
 */
int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}
