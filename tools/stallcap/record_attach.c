// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): watching unmodified programs (--deadline).
 *
 * `stallcap record --deadline 20ms -- CMD` starts CMD and, once it has
 * exec'd (a close-on-exec pipe tells us: the module's watches end at exec, so
 * attaching earlier would watch this tool's copy), asks the module to watch
 * every thread of it at the boundaries of its event-loop waits
 * (STALLCAP_IOC_ATTACH).  `-p PID[,PID...]` attaches to running processes.
 * Nothing is injected into the program: closing the session ends the watches.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tool.h"

/**
 * parse_duration() - "20ms", "500us", "1.5s", "100ns"; a bare number is
 * seconds
 * @arg: the text
 * @ns: the result
 *
 * Return: 0, or -EINVAL.
 */
int parse_duration(const char *arg, __u64 *ns)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "", 1e9 },
	};
	unsigned int i;
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || v < 0)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(end, units[i].unit)) {
			if (v * units[i].mult > 3600e9)
				return -EINVAL;
			*ns = (__u64)(v * units[i].mult + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

/** parse_pids() - "PID[,PID...]" appended to o->pids. */
int parse_pids(struct collect_opts *o, const char *arg)
{
	const char *p = arg;
	char *end;
	long v;

	while (*p) {
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > 0x7fffffff ||
		    (*end && *end != ','))
			return -EINVAL;
		if (o->npids == ARRAY_SIZE(o->pids)) {
			warnx_("at most %zu processes", ARRAY_SIZE(o->pids));
			return -EINVAL;
		}
		o->pids[o->npids++] = (__u32)v;
		p = *end ? end + 1 : end;
	}
	return o->npids ? 0 : -EINVAL;
}

static const char *attach_error(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "not permitted: as for perf -p and ptrace, the process must run as your user and not be set-user-ID, or you need CAP_SYS_PTRACE";
	case ESRCH:
		return "no such process";
	case EEXIST:
		return "already attached";
	case ERANGE:
		return "deadline out of range (see stallcap stats for the module's minimum)";
	case ENOSPC:
		return "too many watches for this user (max_watches_per_user)";
	case ENOTTY:
	case EOPNOTSUPP:
		return "the loaded stallcap module cannot attach to processes";
	default:
		return strerror(err);
	}
}

/**
 * attach_process() - watch process @pid's event loops in session fd @fd
 * @o: the options (deadline, --cputime)
 *
 * Return: 0, or -errno after printing why.
 */
int attach_process(const struct collect_opts *o, int fd, __u32 pid)
{
	struct stallcap_attach a = {
		.size = sizeof(a),
		.flags = (o->cputime ? STALLCAP_ATTACH_CPUTIME : 0) |
			 (o->no_inherit ? 0 : STALLCAP_ATTACH_INHERIT),
		.pid = pid,
		.timeout_ns = o->deadline_ns,
	};

	if (!ioctl(fd, STALLCAP_IOC_ATTACH, &a))
		return 0;
	warnx_("cannot attach to process %u: %s", pid, attach_error(errno));
	return -errno;
}

/**
 * spawn_unmodified() - start CMD and return once it has exec'd
 * @cmd: the command
 *
 * The child gets no session: it is watched by ATTACH.  Returns the child's
 * pid, or -errno (the exec failed: the message is printed).
 */
pid_t spawn_unmodified(char **cmd)
{
	int pfd[2], err = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -err;
	}
	if (!pid) {
		close(pfd[0]);
		execvp(cmd[0], cmd);
		err = errno;
		if (write(pfd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	/* EOF: the pipe closed on exec; data: the exec failed */
	do
		n = read(pfd[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n > 0) {
		warnx_("%s: %s", cmd[0], strerror(err));
		return -err;
	}
	return pid;
}

/** any_alive() - does one of the -p processes still run? */
bool any_alive(const struct collect_opts *o)
{
	char path[64], line[256], *p;
	size_t i;
	FILE *f;

	for (i = 0; i < o->npids; i++) {
		snprintf(path, sizeof(path), "/proc/%u/stat", o->pids[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		/* pid (comm) S ...: the state follows the last ')' */
		if (!p || (p[1] && p[2] != 'Z' && p[2] != 'X'))
			return true;
	}
	return false;
}
