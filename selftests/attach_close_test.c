// SPDX-License-Identifier: GPL-2.0
/*
 * The close of a session that attached a process returns without waiting
 * for the attach's probes to be removed: removing kretprobes and
 * tracepoint probes waits for grace periods (0.4-0.6 s in an idle 7.3
 * guest, all of it in close(), so that `stallcap record` ended that long
 * after its command; 2.4-3.4 s in all on a loaded guest).  The probes go a
 * few seconds later (module/attach_probes.c), unless another attach needs
 * them: they are seen in the kernel's list of kprobes (debugfs).
 */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define KPROBES_LIST	"/sys/kernel/debug/kprobes/list"
/* the close without the probes' removal: 5-30 ms, a grace period */
#define CLOSE_MAX_NS	SC_MS(300)
/* the probes linger 5 s (PROBES_LINGER) after the last attach */
#define LINGER_NS	SC_MS(5000)
#define GONE_MAX_NS	(LINGER_NS + SC_MS(5000))

/* The kprobes registered on epoll_wait's entry, or -1 without the list. */
static int epoll_wait_probes(void)
{
	FILE *f = fopen(KPROBES_LIST, "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "sys_epoll_wait+") != NULL;
	fclose(f);
	return n;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	return pid;
}

static int attach(int fd, pid_t pid)
{
	struct stallcap_attach a = {
		.size = sizeof(a),
		.pid = (uint32_t)pid,
		.timeout_ns = SC_MS(1000),
	};

	return ioctl(fd, STALLCAP_IOC_ATTACH, &a) ? -errno : 0;
}

FIXTURE(close) {
	struct sc_session s[2];
	pid_t child;
};

FIXTURE_SETUP(close)
{
	static const struct sc_opts o = { .no_map = true };

	self->s[0].fd = self->s[1].fd = -1;
	if (epoll_wait_probes() < 0)
		SKIP(return, "no %s", KPROBES_LIST);
	/* first: a child's copies of the sessions' fds would keep them open */
	self->child = sleeper();
	ASSERT_LT(0, self->child);
	ASSERT_EQ(0, sc_session_setup(&self->s[0], &o));
	ASSERT_EQ(0, sc_session_setup(&self->s[1], &o));
	if (!(self->s[0].info.features & STALLCAP_FEAT_ATTACH))
		SKIP(return, "the module cannot attach");
}

FIXTURE_TEARDOWN(close)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	sc_session_close(&self->s[0]);
	sc_session_close(&self->s[1]);
}

/* Close @s, timed; returns when it was closed. */
static uint64_t timed_close(struct __test_metadata *_metadata,
			    struct sc_session *s)
{
	uint64_t t0 = sc_now_ns(), t;

	sc_session_close(s);
	t = sc_now_ns();
	TH_LOG("the close took %.1f ms", (double)(t - t0) / 1e6);
	EXPECT_GE(CLOSE_MAX_NS, t - t0);
	return t;
}

/* Wait for the probes to go; how long after @closed they went. */
static uint64_t probes_gone_after(uint64_t closed)
{
	while (epoll_wait_probes() > 0 && sc_now_ns() - closed < GONE_MAX_NS)
		sc_sleep_ms(50);
	return sc_now_ns() - closed;
}

TEST_F(close, the_close_does_not_wait_for_the_probes_removal)
{
	uint64_t closed, gone;

	ASSERT_EQ(0, attach(self->s[0].fd, self->child));
	ASSERT_EQ(1, epoll_wait_probes());
	closed = timed_close(_metadata, &self->s[0]);
	gone = probes_gone_after(closed);
	TH_LOG("the probes went %.1f s after the close", (double)gone / 1e9);
	ASSERT_EQ(0, epoll_wait_probes());
	/* they lingered: a close that removed them would have waited */
	ASSERT_LE(LINGER_NS - SC_MS(500), gone);
}

TEST_F(close, the_probes_stay_while_another_attach_needs_them)
{
	uint64_t closed;

	ASSERT_EQ(0, attach(self->s[0].fd, self->child));
	ASSERT_EQ(0, attach(self->s[1].fd, self->child));
	closed = timed_close(_metadata, &self->s[0]);
	sc_sleep_ms((LINGER_NS + SC_MS(1000)) / SC_MS(1));
	ASSERT_EQ(1, epoll_wait_probes());
	closed = timed_close(_metadata, &self->s[1]);
	TH_LOG("the probes went %.1f s after the last close",
	       (double)probes_gone_after(closed) / 1e9);
	ASSERT_EQ(0, epoll_wait_probes());
}

TEST_HARNESS_MAIN
