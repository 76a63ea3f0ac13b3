/* SPDX-License-Identifier: GPL-2.0 */
/* Harness self-check programs: what happens once in a boot. */
#ifndef HARNESS_FIRST_TIME_H
#define HARNESS_FIRST_TIME_H

#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

/* Is this the first time in this boot that @mark is asked for? */
static inline bool first_time(const char *mark)
{
	int fd = open(mark, O_CREAT | O_EXCL | O_WRONLY, 0600);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

#endif
