// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): small helpers every part of the tool uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * Open a file named by a recording (a map's path, possibly from another
 * machine) for reading: a regular file only.  Opening never blocks (a FIFO)
 * and never acquires a terminal; a device node is refused before any read.
 * Returns the fd, or -1 with errno set (EINVAL for a file that is not
 * regular).
 */
/* Does @s end with @suffix? */
bool str_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

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

bool sc_time_utc;

/* /proc/sys/kernel/random/boot_id without its newline, or "" */
void read_boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC now: realtime read on both sides of the
 * monotonic read, the pair with the closest reads kept.
 */
__s64 realtime_offset_ns(void)
{
	__u64 r0, m, r1, best = ~0ULL;
	__s64 off = 0;
	int i;

	for (i = 0; i < 3; i++) {
		r0 = now_ns(CLOCK_REALTIME);
		m = now_ns(CLOCK_MONOTONIC);
		r1 = now_ns(CLOCK_REALTIME);
		if (r1 - r0 < best) {
			best = r1 - r0;
			off = (__s64)(r0 + (r1 - r0) / 2 - m);
		}
	}
	return off;
}

/* inode of this process's pid namespace, 0 if unknown */
__u64 self_pid_ns(void)
{
	struct stat sb;

	return stat("/proc/self/ns/pid", &sb) ? 0 : (__u64)sb.st_ino;
}

/*
 * Memory stalls are marked from the kernel's pressure stall information,
 * which a kernel built with it may have off at boot (psi=0, or
 * CONFIG_PSI_DEFAULT_DISABLED without psi=1): then /proc/pressure is absent
 * and no sample is ever marked, though the module has the feature.
 */
bool psi_on(void)
{
	return access("/proc/pressure/memory", F_OK) == 0;
}

/**
 * sc_wallclock() - ISO 8601 with microseconds: 2026-11-22T16:55:47.123456Z
 * in UTC (sc_time_utc), else local time with its offset (+01:00)
 */
void sc_wallclock(char *buf, size_t len, __u64 realtime_ns)
{
	time_t t = (time_t)(realtime_ns / NSEC_PER_SEC);
	unsigned long us = (unsigned long)(realtime_ns % NSEC_PER_SEC / 1000);
	struct tm tm;
	char date[32], zone[8] = "Z";
	long off;

	if (sc_time_utc) {
		gmtime_r(&t, &tm);
	} else {
		localtime_r(&t, &tm);
		off = tm.tm_gmtoff / 60;
		snprintf(zone, sizeof(zone), "%c%02ld:%02ld", off < 0 ? '-' : '+',
			 labs(off) / 60 % 100, labs(off) % 60);
	}
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06lu%s", date, us, zone);
}

/**
 * sc_ids() - a thread or process id as the reader sees it: the id in the
 * session's pid namespace, and the initial namespace's when it differs
 * ("12 (host 3456)"); "? (host 3456)" when the thread is not visible there
 */
void sc_ids(char *buf, size_t len, __u32 ns_id, __u32 host_id)
{
	if (ns_id == host_id)
		snprintf(buf, len, "%u", host_id);
	else if (!ns_id)
		snprintf(buf, len, "? (host %u)", host_id);
	else
		snprintf(buf, len, "%u (host %u)", ns_id, host_id);
}
