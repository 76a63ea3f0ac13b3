// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): what the live loop sleeps on.
 *
 * The session's fd wakes it for records; a pidfd per process whose exit
 * ends the run (-p PID, the command it started) wakes it for that exit.
 * An idle run then sleeps until something happens, instead of waking every
 * POLL_MS to read /proc: the reader shares its CPU with the programs it
 * watches.  A process without a pidfd (pidfd_open() is Linux 5.3; a -p that
 * names a thread, not a process, before 6.9) is looked for by polling, as
 * the loop did before.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tool.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif

/**
 * waitset_init() - the session's fd, nothing else yet
 * @ws: the set
 * @session_fd: the session's fd (negative: a session without one, which
 *	never becomes readable; the loop then polls)
 */
void waitset_init(struct waitset *ws, int session_fd)
{
	memset(ws, 0, sizeof(*ws));
	ws->pfd[0].fd = session_fd;
	ws->pfd[0].events = POLLIN;
	ws->n = 1;
	ws->polled = session_fd < 0;
}

/**
 * waitset_add_exit() - wake when process @pid exits
 * @ws: the set
 * @pid: a process (a thread-group leader)
 *
 * Without a pidfd for it, the set is marked polled: the loop looks for the
 * exit every POLL_MS.
 */
void waitset_add_exit(struct waitset *ws, pid_t pid)
{
	int fd = -1;

	if (ws->n < ARRAY_SIZE(ws->pfd))
		fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		ws->polled = true;
		return;
	}
	ws->pfd[ws->n].fd = fd;
	ws->pfd[ws->n].events = POLLIN;
	ws->n++;
}

/* A pidfd that became readable (its process exited): closed, out of the set. */
static void note_exits(struct waitset *ws)
{
	unsigned int i;

	for (i = 1; i < ws->n; i++) {
		if (ws->pfd[i].fd < 0 || !ws->pfd[i].revents)
			continue;
		close(ws->pfd[i].fd);
		ws->pfd[i].fd = -1;	/* poll() skips it */
		ws->exited = true;
	}
}

/**
 * waitset_wait() - sleep until a record, an exit, a signal or @timeout_ms
 * @ws: the set
 * @timeout_ms: at most this long
 *
 * Return: 0 (whatever woke it: the loop looks at everything), -EIO if the
 * session's fd failed, or -errno from poll().
 */
int waitset_wait(struct waitset *ws, int timeout_ms)
{
	int ret = poll(ws->pfd, ws->n, timeout_ms);

	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	if (ws->pfd[0].fd >= 0 && (ws->pfd[0].revents & (POLLERR | POLLNVAL)))
		return -EIO;
	note_exits(ws);
	return 0;
}

/**
 * waitset_exit_seen() - has a process of the set exited, or must the loop
 * look for itself (polled)?
 * @ws: the set
 *
 * Stays true once a pidfd fired: the loop reads /proc at every pass from
 * then on, until none of its processes runs (a pidfd fires only once, and
 * another process of the set may still run when it does).
 */
bool waitset_exit_seen(const struct waitset *ws)
{
	return ws->exited || ws->polled;
}

/** waitset_release() - close the pidfds left */
void waitset_release(struct waitset *ws)
{
	unsigned int i;

	for (i = 1; i < ws->n; i++)
		if (ws->pfd[i].fd >= 0)
			close(ws->pfd[i].fd);
	ws->n = 1;
}
