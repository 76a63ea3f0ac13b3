// SPDX-License-Identifier: GPL-2.0
/*
 * STALLCAP_IOC_ATTACH / _DETACH: the module watches an unmodified process at
 * the boundaries of its event-loop waits.  A child process (it knows nothing
 * of stallcap) runs a "loop" thread that polls, then spins past the deadline,
 * then polls again; the reader attached to the child sees that thread's
 * watch start (STALLCAP_REC_WATCH), its stall (origin ATTACH, the spinning
 * function on top) and the stall's end when the thread enters poll() again.
 * The thread is created after the attach: watched from its first wait call.
 * Threads that never wait in such a call (the child's main thread, blocked
 * in pthread_join) are never reported.  The ioctl's errors, and DETACH.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#include "stall_util.h"

#define DEADLINE	SC_MS(30)
#define SPIN		SC_MS(300)
#define TAG		0x6174746163680001ULL

static int attach(int fd, pid_t pid, uint64_t timeout, uint32_t flags)
{
	struct stallcap_attach a = {
		.size = sizeof(a),
		.flags = flags,
		.pid = (uint32_t)pid,
		.timeout_ns = timeout,
		.user_tag = TAG,
	};

	return ioctl(fd, STALLCAP_IOC_ATTACH, &a) ? -errno : 0;
}

SC_NOINLINE void attach_spin_in_loop(uint64_t ns)
{
	uint64_t end = sc_now_ns() + ns;

	while (sc_now_ns() < end)
		__asm__ volatile("" ::: "memory");
}

/* attach_spin_in_loop() is frame 0, or 1-2 under clock_gettime() */
static bool in_spin(const struct stallcap_sample *r)
{
	uint64_t fn = (uint64_t)(uintptr_t)attach_spin_in_loop;

	for (unsigned int i = 0; i < sc_nu(r) && i < 3; i++)
		if (sc_user_ips(r)[i] >= fn && sc_user_ips(r)[i] < fn + 256)
			return true;
	return false;
}

static void *loop_thread(void *arg)
{
	int *tid_pipe = arg;
	pid_t tid = sc_gettid();

	if (write(tid_pipe[1], &tid, sizeof(tid)) != sizeof(tid))
		return NULL;
	poll(NULL, 0, 1);		/* the first wait: its watch is made */
	poll(NULL, 0, 1);		/* busy from here... */
	attach_spin_in_loop(SPIN);	/* ...past the deadline */
	poll(NULL, 0, 1);		/* idle: the stall ends */
	return NULL;
}

/* The child: waits for "go", then runs the loop thread once. */
static void child_main(int go_fd, int *tid_pipe)
{
	pthread_t t;
	char c;

	if (read(go_fd, &c, 1) != 1)
		_exit(2);
	if (pthread_create(&t, NULL, loop_thread, tid_pipe))
		_exit(3);
	pthread_join(t, NULL);
	_exit(0);
}

FIXTURE(attach) {
	struct sc_session s;
	struct sc_records rs;
	pid_t child;
	int go[2], tid_pipe[2];
};

FIXTURE_SETUP(attach)
{
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	if (!(self->s.info.features & STALLCAP_FEAT_ATTACH))
		SKIP(return, "the module cannot attach");
	ASSERT_EQ(0, pipe(self->go));
	ASSERT_EQ(0, pipe(self->tid_pipe));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close(self->go[1]);
		close(self->s.fd);
		child_main(self->go[0], self->tid_pipe);
	}
	close(self->go[0]);
}

FIXTURE_TEARDOWN(attach)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

TEST_F(attach, new_thread_stall_is_captured)
{
	const struct stallcap_watch_event *ws, *we;
	const struct stallcap_stall_end *end;
	const struct stallcap_sample *r, *u;
	struct stallcap_stats st;
	pid_t tid, child = self->child;
	int status;

	ASSERT_EQ(0, attach(self->s.fd, self->child, DEADLINE, 0));
	ASSERT_EQ(-EEXIST, attach(self->s.fd, self->child, DEADLINE, 0));
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_EQ(1, st.attached) TH_LOG("one watch: the child's main thread");

	ASSERT_EQ(1, write(self->go[1], "g", 1));
	ASSERT_EQ(sizeof(tid), read(self->tid_pipe[0], &tid, sizeof(tid)));
	ASSERT_EQ(self->child, waitpid(self->child, &status, 0));
	self->child = 0;
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));

	ASSERT_LE(0, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_WATCH, 3,
				     SC_WAIT_MS));
	ws = sc_find_watch_event(&self->rs, tid, STALLCAP_WATCH_STARTED);
	we = sc_find_watch_event(&self->rs, tid, STALLCAP_WATCH_ENDED);
	ASSERT_NE(NULL, ws) TH_LOG("no WATCH_STARTED for the loop thread");
	ASSERT_NE(NULL, we) TH_LOG("no WATCH_ENDED for the loop thread (exit)");
	EXPECT_EQ(DEADLINE, ws->timeout_ns);
	EXPECT_EQ(TAG, ws->user_tag);
	EXPECT_LE(ws->time_ns, we->time_ns);

	r = sc_first_sample_of(&self->rs, tid);
	ASSERT_NE(NULL, r) TH_LOG("the loop thread's stall was not captured");
	EXPECT_EQ(STALLCAP_ORIGIN_ATTACH, r->origin);
	EXPECT_EQ(STALLCAP_CLOCK_WALL, r->clock);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(DEADLINE, r->timeout_ns);
	EXPECT_EQ((__u32)child, r->pid);
	EXPECT_LE(ws->time_ns, r->deadline_ns);
	/* in the kernel or preempted (an RT kernel's IRQ threads): deferred */
	u = sc4_user_frames_of(&self->rs, r);
	if (!u || !sc_nu(u) || !in_spin(u))
		sc_log_records(NULL, &self->rs);
	ASSERT_NE(NULL, u) TH_LOG("DEFER_PENDING but no USER_STACK record");
	ASSERT_LT(0, sc_nu(u));
	EXPECT_TRUE(in_spin(u)) TH_LOG("attach_spin_in_loop() is not among the innermost frames");
	end = sc_stall_end_of(&self->rs, r->stall_id);
	ASSERT_NE(NULL, end) TH_LOG("no stall end when the thread entered poll()");
	EXPECT_EQ(STALLCAP_ORIGIN_ATTACH, end->origin);
	EXPECT_GE(end->end_ns, r->deadline_ns + SPIN / 2);

	/* nothing of any other thread */
	for (size_t i = 0; i < self->rs.n; i++) {
		const struct stallcap_sample *x = (const void *)self->rs.rec[i];

		if (x->hdr.type == STALLCAP_REC_SAMPLE)
			EXPECT_EQ((__u32)tid, x->tid);
	}
	/* the watches end with the process (freed by the session's reaper) */
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
		if (!st.attached)
			break;
		sc_sleep_ms(10);
	}
	EXPECT_EQ(0, st.attached);
	EXPECT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_DETACH, 0));
	EXPECT_EQ(-1, ioctl(self->s.fd, STALLCAP_IOC_DETACH, 0));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(attach, errors)
{
	struct stallcap_attach a = {
		.size = sizeof(a), .pid = (uint32_t)self->child,
		.timeout_ns = DEADLINE,
	};

	EXPECT_EQ(-EINVAL, attach(self->s.fd, self->child, DEADLINE, 1U << 31));
	EXPECT_EQ(-ERANGE, attach(self->s.fd, self->child, 0, 0));
	EXPECT_EQ(-ERANGE, attach(self->s.fd, self->child, 3601 * SC_NSEC_PER_SEC, 0));
	EXPECT_EQ(-ESRCH, attach(self->s.fd, 0, DEADLINE, 0));
	EXPECT_EQ(-ESRCH, attach(self->s.fd, 0x7ffffff0, DEADLINE, 0));
	a.__reserved0 = 1;
	EXPECT_EQ(-1, ioctl(self->s.fd, STALLCAP_IOC_ATTACH, &a));
	EXPECT_EQ(EINVAL, errno);
	a.__reserved0 = 0;
	a.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->s.fd, STALLCAP_IOC_ATTACH, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->s.fd, STALLCAP_IOC_DETACH, self->child));
	EXPECT_EQ(ENOENT, errno);

	/* a user may not attach to root's process */
	if (!geteuid()) {
		pid_t p = fork();
		int status;

		ASSERT_LE(0, p);
		if (!p) {
			if (setgid(65534) || setuid(65534))
				_exit(10);
			_exit(attach(self->s.fd, getppid(), DEADLINE, 0) == -EPERM ? 0 : 11);
		}
		ASSERT_EQ(p, waitpid(p, &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("nobody attached to root's process");
	}
	/* DETACH by pid */
	ASSERT_EQ(0, attach(self->s.fd, self->child, DEADLINE, STALLCAP_ATTACH_CPUTIME));
	EXPECT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_DETACH, self->child));
	EXPECT_EQ(-1, ioctl(self->s.fd, STALLCAP_IOC_DETACH, self->child));
}

TEST_HARNESS_MAIN
