// SPDX-License-Identifier: GPL-2.0
/*
 * libstallcap's sessions and fork/exec: a session fd the library adopts or
 * finds in STALLCAP_FD is close-on-exec afterwards, so a program the
 * application executes does not inherit it.  The device does not exist on
 * the host: any fd (a pipe) stands for the session, no ioctl is made.
 */
#include "helpers.h"
#include "kselftest_harness.h"

static bool cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);

	return f >= 0 && (f & FD_CLOEXEC);
}

/* Does a program exec'd now see fd?  (sh's "[" is a builtin: /proc/self is sh) */
static bool exec_sees(int fd)
{
	char cmd[64];
	int status;
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "[ -e /proc/self/fd/%d ]", fd);
	pid = fork();
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(adopted_fd_becomes_cloexec)
{
	struct stallcap_session *s;
	int p[2];

	ASSERT_EQ(0, pipe(p));
	ASSERT_FALSE(cloexec(p[0]));
	ASSERT_TRUE(exec_sees(p[0]));	/* the check does check */
	ASSERT_EQ(0, stallcap_session_adopt(&s, p[0]));
	EXPECT_EQ(p[0], stallcap_session_fd(s));
	EXPECT_TRUE(cloexec(p[0]));
	EXPECT_FALSE(exec_sees(p[0]));
	stallcap_session_close(s);	/* closes the adopted fd */
	EXPECT_EQ(-1, fcntl(p[0], F_GETFD));
	close(p[1]);
	EXPECT_EQ(-EBADF, stallcap_session_adopt(&s, p[0]));
}

TEST(env_fd_not_passed_on)
{
	struct stallcap_session *s;
	char num[16];
	int p[2], fd;

	ASSERT_EQ(0, pipe(p));
	snprintf(num, sizeof(num), "%d", p[0]);
	setenv(STALLCAP_FD_ENV, num, 1);
	ASSERT_EQ(0, stallcap_session_open(&s, NULL, STALLCAP_OPEN_ENV));
	fd = stallcap_session_fd(s);
	EXPECT_NE(p[0], fd);
	EXPECT_TRUE(cloexec(fd));
	EXPECT_TRUE(cloexec(p[0]));	/* the inherited one as well */
	EXPECT_FALSE(exec_sees(fd));
	EXPECT_FALSE(exec_sees(p[0]));
	stallcap_session_close(s);
	EXPECT_EQ(-1, fcntl(fd, F_GETFD));
	EXPECT_EQ(0, fcntl(p[0], F_GETFD) & ~FD_CLOEXEC);	/* still open */
	close(p[0]);
	close(p[1]);
	/* a stale number is refused, never a new session by surprise */
	EXPECT_EQ(-EBADF, stallcap_session_open(&s, NULL, STALLCAP_OPEN_ENV));
	unsetenv(STALLCAP_FD_ENV);
}

TEST(slot_helpers_store_what_they_should)
{
	struct stallcap_slot slot;
	struct timespec t0, t1;
	__u64 lo, hi;

	memset(&slot, 0xee, sizeof(slot));
	slot.deadline_ns = 0;
	stallcap_deadline_set(&slot, 42);
	EXPECT_EQ(42, slot.deadline_ns);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	stallcap_deadline_in(&slot, 20 * NSEC_PER_MSEC);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	lo = (__u64)t0.tv_sec * NSEC_PER_SEC + (__u64)t0.tv_nsec + 20 * NSEC_PER_MSEC;
	hi = (__u64)t1.tv_sec * NSEC_PER_SEC + (__u64)t1.tv_nsec + 20 * NSEC_PER_MSEC;
	EXPECT_LE(lo, slot.deadline_ns);
	EXPECT_GE(hi, slot.deadline_ns);
	stallcap_deadline_idle(&slot);
	EXPECT_EQ(0, slot.deadline_ns);
	/* nothing but deadline_ns was written: the module owns the rest */
	EXPECT_EQ(0xeeeeeeeeeeeeeeeeULL, slot.beats);
	EXPECT_EQ(0xeeeeeeee, slot.armed);
	EXPECT_EQ(0xeeeeeeee, slot.tid);
	EXPECT_EQ(0xeeeeeeee, slot.kind);
	EXPECT_EQ(-EINVAL, stallcap_deadline_arm(NULL, 1, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, stallcap_watch_arm(NULL, 1, 0, STALLCAP_ARM_SHARED_DEADLINE));
}

TEST_HARNESS_MAIN
