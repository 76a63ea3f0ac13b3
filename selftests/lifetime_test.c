// SPDX-License-Identifier: GPL-2.0
/*
 * Lifetime of watches and sessions: a thread that exits while armed or
 * while stalled, a session closed while armed or while a capture is in
 * flight, fork (the child has no watch), exec, many threads of one process
 * sharing a session.  No record after the end, no leaked watch, no crash
 * (the harness checks the kernel log for splats).
 */
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TAG		0x6c69666574696d65ULL
#define TIMEOUT		SC_MS(20)
#define LONG_TIMEOUT	SC_MS(1000)

static char *self_exe;

FIXTURE(life) {
	struct sc_session s;
	struct sc_records rs;
};

FIXTURE_SETUP(life)
{
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	ASSERT_LE(self->s.info.min_deadline_ns, TIMEOUT);
}

FIXTURE_TEARDOWN(life)
{
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/* Wait until the session's watch count is @n (exit is asynchronous). */
static uint64_t wait_watches(int fd, uint64_t n)
{
	uint64_t end = sc_now_ns() + SC_MS(SC_WAIT_MS), w;

	while ((w = SC_STAT(fd, watches)) != n && sc_now_ns() < end)
		sc_sleep_ms(5);
	return w;
}

struct armer {
	int fd;
	uint64_t timeout;
	volatile int *stop;	/* spin until set; NULL: exit at once */
	pid_t tid;
	int arm_ret;
};

SC_NOINLINE void *armer_thread_main(void *arg)
{
	struct armer *a = arg;

	a->tid = sc_gettid();
	a->arm_ret = sc_arm(a->fd, a->timeout, 0, TAG);
	if (!a->arm_ret && a->stop)
		spin_in_user_caller(a->stop);
	return NULL;	/* exits armed */
}

TEST_F(life, thread_exit_while_armed_frees_its_watch)
{
	struct armer a = { .fd = self->s.fd, .timeout = SC_MS(200) };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, armer_thread_main, &a));
	pthread_join(th, NULL);
	ASSERT_EQ(0, a.arm_ret);
	EXPECT_EQ(0, wait_watches(self->s.fd, 0));
	EXPECT_EQ(0, SC_STAT(self->s.fd, armed));
	/* past the deadline: the exited thread is not reported */
	sc_sleep_ms(400);
	EXPECT_EQ(0, sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS))
		sc_log_records(NULL, &self->rs);
	EXPECT_EQ(0, SC_STAT(self->s.fd, stalls));
}

TEST_F(life, thread_exit_during_a_stall_ends_it_and_frees_the_watch)
{
	struct sc_stopper st = { .cpu = -1 };
	struct armer a = { .fd = self->s.fd, .timeout = TIMEOUT, .stop = &st.stop };
	const struct stallcap_stall_end *e;
	const struct stallcap_sample *r;
	pthread_t th;

	ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, 1, SC_WAIT_MS));
	ASSERT_EQ(0, pthread_create(&th, NULL, armer_thread_main, &a));
	pthread_join(th, NULL);
	sc_stopper_join(&st);
	ASSERT_EQ(0, a.arm_ret);
	ASSERT_FALSE(st.timed_out);
	EXPECT_EQ(0, wait_watches(self->s.fd, 0));

	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, a.tid);
	ASSERT_NE(NULL, r);
	e = sc_stall_end_of(&self->rs, r->stall_id);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(a.tid, (pid_t)e->tid);
	/* nothing after the end */
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);
	for (size_t i = 0; i < self->rs.n; i++) {
		const struct stallcap_sample *x = (const void *)self->rs.rec[i];

		if (x->hdr.type == STALLCAP_REC_SAMPLE)
			EXPECT_GE(e->end_ns, x->capture_ns) TH_LOG("a sample after the exit");
	}
	EXPECT_EQ(1, SC_STAT(self->s.fd, stall_ends));
}

/* Many threads of one process, one session: each its own watch and stall. */
#define NR_THREADS 8

struct waiter {
	int fd, rfd;
	pid_t tid;
	int arm_ret;
};

SC_NOINLINE void *waiter_thread_main(void *arg)
{
	struct waiter *w = arg;
	char c;

	w->tid = sc_gettid();
	w->arm_ret = sc_arm(w->fd, TIMEOUT, 0, TAG + w->tid);
	if (!w->arm_ret && read(w->rfd, &c, 1) == 1)
		sc_disarm(w->fd);
	return NULL;
}

TEST_F(life, threads_sharing_a_session_each_get_their_own_stall)
{
	struct waiter w[NR_THREADS];
	pthread_t th[NR_THREADS];
	int p[2], got = 0;

	ASSERT_EQ(0, pipe(p));
	for (int i = 0; i < NR_THREADS; i++) {
		w[i] = (struct waiter){ .fd = self->s.fd, .rfd = p[0] };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, waiter_thread_main, &w[i]));
	}
	/* until every thread's first sample is in (some may have several) */
	for (uint64_t end = sc_now_ns() + SC_MS(SC_WAIT_MS); sc_now_ns() < end; ) {
		got = 0;
		for (int i = 0; i < NR_THREADS; i++) {
			pid_t tid = __atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE);

			got += tid && sc_first_sample_of(&self->rs, tid);
		}
		if (got == NR_THREADS)
			break;
		ASSERT_LE(0, sc_ring_collect(&self->s, &self->rs, 0, 0, 20));
	}
	EXPECT_EQ(NR_THREADS, SC_STAT(self->s.fd, watches));
	for (int i = 0; i < NR_THREADS; i++)
		ASSERT_EQ(1, write(p[1], "x", 1));
	for (int i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	ASSERT_EQ(NR_THREADS, got);

	for (int i = 0; i < NR_THREADS; i++) {
		const struct stallcap_sample *r = sc_first_sample_of(&self->rs, w[i].tid);

		ASSERT_EQ(0, w[i].arm_ret);
		ASSERT_NE(NULL, r) TH_LOG("no stall for thread %d", w[i].tid);
		EXPECT_EQ(TAG + w[i].tid, r->user_tag);
		EXPECT_EQ(getpid(), (pid_t)r->pid);
		for (int j = 0; j < i; j++) {
			const struct stallcap_sample *o = sc_first_sample_of(&self->rs, w[j].tid);

			EXPECT_NE(o->stall_id, r->stall_id) TH_LOG("stall ids not unique");
		}
	}
	EXPECT_EQ(NR_THREADS, SC_STAT(self->s.fd, stalls));
	EXPECT_EQ(0, wait_watches(self->s.fd, 0));
	close(p[0]);
	close(p[1]);
}

/*
 * Close (and unmap) a session while its watch is armed and the deadline is
 * about to pass, at once, or just passed: the timer, the capture and the
 * release race.  The module must survive; a new session then works.
 */
static void close_around_deadline(struct sc_session *s, int i)
{
	uint64_t t0 = sc_now_ns();
	/* from 1 ms before to 1 ms after the deadline, 100 us apart */
	int64_t off = (int64_t)(i % 21 - 10) * 100000;
	uint64_t when = t0 + TIMEOUT + off;

	if (sc_arm(s->fd, TIMEOUT, 0, TAG))
		return;
	while (sc_now_ns() < when)
		;
	if (i & 1) {		/* close first, the mapping keeps it alive */
		close(s->fd);
		s->fd = -1;
	}
	sc_session_close(s);
}

TEST_F_TIMEOUT(life, session_closed_around_the_deadline, 180)
{
	struct stallcap_stats g0, g1;
	int fails = 0;

	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g0, STALLCAP_STATS_GLOBAL));
	for (int i = 0; i < 84; i++) {
		struct sc_session s;
		struct sc_opts o = { .no_map = i % 4 == 2 };

		fails += sc_session_setup(&s, &o) != 0;
		close_around_deadline(&s, i);
	}
	EXPECT_EQ(0, fails);
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g1, STALLCAP_STATS_GLOBAL));
	EXPECT_EQ(g0.watches, g1.watches) TH_LOG("module-wide watches leaked");
	EXPECT_EQ(g0.armed, g1.armed);
}

struct remote_spinner {
	struct sc_session *s;
	volatile int go, stop, armed;
	int arm_ret;
};

SC_NOINLINE void *remote_spinner_main(void *arg)
{
	struct remote_spinner *rs = arg;

	sc_pin_self(1);
	while (!__atomic_load_n(&rs->go, __ATOMIC_ACQUIRE))
		;
	rs->arm_ret = sc_arm(rs->s->fd, TIMEOUT, 0, TAG);
	__atomic_store_n(&rs->armed, 1, __ATOMIC_RELEASE);
	spin_in_user_caller(&rs->stop);
	return NULL;
}

/*
 * The same with the armed thread spinning on CPU 1 and another thread
 * closing the session: the capture (NMI/IPI) is in flight on CPU 1 while
 * the release runs on CPU 0.
 */
TEST_F_TIMEOUT(life, session_closed_by_another_thread_during_a_capture, 180)
{
	struct stallcap_stats g0, g1;

	if (sc_nr_cpus_allowed() < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, sc_pin_self(0));
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g0, STALLCAP_STATS_GLOBAL));
	for (int i = 0; i < 42; i++) {
		struct remote_spinner r = {};
		struct sc_session s;
		uint64_t when;
		pthread_t th;

		ASSERT_EQ(0, sc_session_setup(&s, NULL));
		r.s = &s;
		ASSERT_EQ(0, pthread_create(&th, NULL, remote_spinner_main, &r));
		__atomic_store_n(&r.go, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&r.armed, __ATOMIC_ACQUIRE))
			sc_sleep_ms(0);
		when = sc_now_ns() + TIMEOUT + (int64_t)(i % 21 - 10) * 100000;
		while (sc_now_ns() < when)
			;
		sc_session_close(&s);
		__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		EXPECT_EQ(0, r.arm_ret);
	}
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g1, STALLCAP_STATS_GLOBAL));
	EXPECT_EQ(g0.watches, g1.watches) TH_LOG("module-wide watches leaked");
	EXPECT_EQ(g0.armed, g1.armed);
}

/* After all that, a new session still captures a stall normally. */
TEST_F(life, a_session_after_the_races_still_captures)
{
	struct sc_stopper st = { .cpu = -1 };
	struct armer a = { .fd = self->s.fd, .timeout = TIMEOUT, .stop = &st.stop };
	const struct stallcap_sample *r;
	pthread_t th;

	ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, 1, SC_WAIT_MS));
	ASSERT_EQ(0, pthread_create(&th, NULL, armer_thread_main, &a));
	pthread_join(th, NULL);
	sc_stopper_join(&st);
	ASSERT_FALSE(st.timed_out);
	ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, a.tid);
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user));
}

/* A forked child inherits the session but no watch: it cannot act on the parent's. */
TEST_F(life, forked_child_has_no_watch)
{
	const struct stallcap_sample *r;
	int status;
	pid_t pid;

	ASSERT_EQ(0, sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int code = 0;

		if (sc_rearm(self->s.fd, LONG_TIMEOUT) != -1 || errno != ENOENT)
			code |= 1;
		if (sc_disarm(self->s.fd) != -1 || errno != ENOENT)
			code |= 2;
		if (sc_release(self->s.fd) != -1 || errno != ENOENT)
			code |= 4;
		if (SC_STAT(self->s.fd, armed) != 1)	/* the parent's, untouched */
			code |= 8;
		_exit(code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: 1 REARM, 2 DISARM, 4 RELEASE did not fail with ENOENT, "
		       "8 parent's watch not armed");
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	EXPECT_EQ(1, SC_STAT(self->s.fd, watches));

	/* the parent's watch still works */
	ASSERT_EQ(0, sc_rearm(self->s.fd, TIMEOUT));
	ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	r = sc_records_nth(&self->rs, STALLCAP_REC_SAMPLE, 0);
	EXPECT_EQ(sc_gettid(), (pid_t)r->tid);
	EXPECT_EQ(1, SC_STAT(self->s.fd, stalls));
}

/* A child that execs with the session inherited does not disturb the parent's watch. */
TEST_F(life, exec_in_a_child_leaves_the_parent_watch_alone)
{
	int fd2, status;
	pid_t pid;

	ASSERT_EQ(0, sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG));
	fd2 = dup(self->s.fd);	/* without O_CLOEXEC: inherited through exec */
	ASSERT_LE(0, fd2);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd2);
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	EXPECT_EQ(1, SC_STAT(self->s.fd, watches));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	EXPECT_EQ(0, sc_ring_collect(&self->s, &self->rs, 0, 0, 50));
}

/*
 * A watch ends at execve(), as POSIX timers do: a child arms in the
 * inherited session (fd not close-on-exec) and execs this program, which
 * spins well past the deadline.  The new program is never captured and its
 * thread has no watch any more.
 */
#define EXEC_TIMEOUT	SC_MS(500)

TEST_F(life, watch_ends_at_exec)
{
	int fd2, status;
	pid_t pid;

	if (!self_exe)
		SKIP(return, "cannot find this program");
	fd2 = dup(self->s.fd);	/* without O_CLOEXEC */
	ASSERT_LE(0, fd2);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char ms[16], fd[16];

		snprintf(ms, sizeof(ms), "%llu", 3 * EXEC_TIMEOUT / SC_NSEC_PER_MSEC);
		snprintf(fd, sizeof(fd), "%d", fd2);
		if (sc_arm(fd2, EXEC_TIMEOUT, 0, TAG + 1))
			_exit(10);
		execl(self_exe, "sc-exec-spin", "--spin-after-exec", fd, ms, (char *)NULL);
		_exit(127);
	}
	close(fd2);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child: 10 ARM failed, 127 exec failed, "
						 "1 the watch was still there after exec");
	EXPECT_EQ(0, wait_watches(self->s.fd, 0));
	EXPECT_EQ(0, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 0, SC_QUIET_MS))
		sc_log_records(NULL, &self->rs);
	EXPECT_EQ(0, SC_STAT(self->s.fd, stalls)) TH_LOG("the exec'd program was captured");
}

/* The exec'd program: spin past the old deadline, then look for the watch. */
static int spin_after_exec(int fd, int ms)
{
	uint64_t end = sc_now_ns() + SC_MS(ms);
	volatile unsigned long n = 0;

	while (sc_now_ns() < end)
		for (int i = 0; i < 100000; i++)
			n++;
	if (sc_rearm(fd, 0) != -1 || errno != ENOENT)
		return 1;
	return 0;
}

static char *find_self_exe(void)
{
	static char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--spin-after-exec"))
		return spin_after_exec(atoi(argv[2]), atoi(argv[3]));
	self_exe = find_self_exe();
	return test_harness_run(argc, argv);
}
