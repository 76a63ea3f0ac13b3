// SPDX-License-Identifier: GPL-2.0
/*
 * STALLCAP_ATTACH_INHERIT: an attach follows the processes the attached
 * process creates after it and the programs they execute.  A child process
 * (it knows nothing of stallcap) is attached; on "go" it makes a new
 * process by fork, fork + exec, posix_spawn (vfork + exec), or executes a
 * program itself; that process polls, spins past the deadline in
 * follow_spin(), and polls again.  The reader sees its watch start, its
 * first busy period (STALLCAP_WATCH_BUSY, once), its stall (origin ATTACH,
 * follow_spin() among the innermost user frames: the executed program
 * tells its address through a pipe) and the stall's end; when the loop
 * runs in a second thread, the first thread, which only waits for it in
 * pthread_join(), has a watch that is never told busy.
 * Without INHERIT the same new process is not watched.  On a kernel without
 * the task_work_add export a worker makes the new process's attach, maybe
 * after its first wait call returned: kept from running (a SCHED_FIFO hog on
 * the only CPU unbound workqueues may use) until the loop is in its stall,
 * the worker still starts the loop's busy period (fork_late_worker), also
 * in a thread the new process made before the worker came
 * (fork_thread_late_worker).  An executed set-user-ID program is not
 * followed: a STALLCAP_WATCH_MISSED record says so.  Nor, for an attach made by an unprivileged user, is the root process
 * that such a program starts (as su does: it becomes root, then forks and
 * executes a shell, an exec that raises nothing): that user could not trace
 * it.
 *
 * The executed program is this test binary again: a constructor runs the
 * loop when FOLLOW_LOOP_FD is set, before the harness starts.
 */
#include <grp.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#include "stall_util.h"

#define DEADLINE	SC_MS(30)
#define SPIN		SC_MS(300)
#define TAG		0x666f6c6c6f770001ULL
#define LOOP_ENV	"FOLLOW_LOOP_FD"
#define ROOT_CHILD_ENV	"FOLLOW_ROOT_CHILD_FD"
#define NOBODY		65534

extern char **environ;

SC_NOINLINE void follow_spin(uint64_t ns)
{
	uint64_t end = sc_now_ns() + ns;

	/*
	 * The clock is read rarely: a sample inside clock_gettime() (the
	 * vDSO's leaf, under the C library's frameless wrapper) loses this
	 * function's frame in the frame-pointer walk (CI46, debug-notw).
	 */
	while (sc_now_ns() < end)
		for (int i = 0; i < 1000000; i++)
			__asm__ volatile("" ::: "memory");
}

/*
 * What the loop tells the test: its pid and follow_spin()'s address; then,
 * as its stall begins, the time (CLOCK_MONOTONIC).
 */
struct loop_hello {
	pid_t pid;
	pid_t tid;	/* the loop's thread */
	uint64_t spin;
};

/* An event loop of one thread: a stall between two waits. */
static void loop_run(int fd)
{
	struct loop_hello h = {
		.pid = getpid(),
		.tid = sc_gettid(),
		.spin = (uint64_t)(uintptr_t)follow_spin,
	};

	uint64_t busy_from;

	if (write(fd, &h, sizeof(h)) != sizeof(h))
		_exit(20);
	poll(NULL, 0, 1);
	poll(NULL, 0, 1);	/* busy from here... */
	busy_from = sc_now_ns();
	if (write(fd, &busy_from, sizeof(busy_from)) != sizeof(busy_from))
		_exit(21);
	follow_spin(SPIN);	/* ...past the deadline */
	poll(NULL, 0, 1);	/* idle: the stall ends */
}

static void *loop_thread_main(void *arg)
{
	loop_run(*(int *)arg);
	return NULL;
}

/* The same loop in a second thread; the first waits in pthread_join(). */
static void loop_run_in_thread(int fd)
{
	pthread_t t;

	if (pthread_create(&t, NULL, loop_thread_main, &fd) ||
	    pthread_join(t, NULL))
		_exit(22);
}

static void exec_loop(const char *path, int fd);

/*
 * The set-user-ID copy run with FOLLOW_ROOT_CHILD_FD, as su: it becomes
 * root entirely, then a child of it executes the loop program (this binary).
 */
static void root_child_program(int fd)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	pid_t p;

	if (n <= 0 || setgroups(0, NULL) || setresgid(0, 0, 0) || setresuid(0, 0, 0))
		_exit(40);
	exe[n] = 0;
	unsetenv(ROOT_CHILD_ENV);
	p = fork();
	if (!p)
		exec_loop(exe, fd);
	if (p < 0 || waitpid(p, NULL, 0) != p)
		_exit(41);
	_exit(0);
}

/* The executed program: this binary with FOLLOW_LOOP_FD set. */
__attribute__((constructor)) static void loop_program(void)
{
	const char *fd = getenv(LOOP_ENV);

	if (getenv(ROOT_CHILD_ENV))
		root_child_program(atoi(getenv(ROOT_CHILD_ENV)));
	if (!fd)
		return;
	loop_run(atoi(fd));
	_exit(0);
}

enum how {
	BY_FORK, BY_FORK_THREAD, BY_FORK_EXEC, BY_SPAWN, BY_EXEC_SELF, BY_SETUID_EXEC,
	BY_SETUID_ROOT_CHILD
};

/* Become nobody for good (and stay dumpable: its owner may trace it). */
static int become_nobody(void)
{
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static char self_exe[4096];

/* Run this binary as the loop program, reporting to @fd. */
static void exec_loop(const char *path, int fd)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", fd);
	setenv(LOOP_ENV, num, 1);
	execl(path, path, (char *)NULL);
	_exit(30);
}

/* The attached process: on "go", a new process or program runs the loop. */
static void child_main(enum how how, int go_fd, int hello_fd, const char *suid)
{
	char *argv[] = { self_exe, NULL }, num[16], env[64];
	char *envp[] = { env, NULL };
	pid_t p = 0;
	char c;

	/* attached by nobody: nobody's process from the start */
	if (how == BY_SETUID_ROOT_CHILD && become_nobody())
		_exit(6);
	if (read(go_fd, &c, 1) != 1)
		_exit(2);
	switch (how) {
	case BY_FORK:
	case BY_FORK_THREAD:
	case BY_FORK_EXEC:
		p = fork();
		if (!p && how != BY_FORK_EXEC) {
			if (how == BY_FORK_THREAD)
				loop_run_in_thread(hello_fd);
			else
				loop_run(hello_fd);
			_exit(0);
		}
		if (!p)
			exec_loop(self_exe, hello_fd);
		break;
	case BY_SPAWN:
		snprintf(num, sizeof(num), "%d", hello_fd);
		snprintf(env, sizeof(env), "%s=%s", LOOP_ENV, num);
		if (posix_spawn(&p, self_exe, NULL, NULL, argv, envp))
			_exit(3);
		break;
	case BY_EXEC_SELF:
		exec_loop(self_exe, hello_fd);
		break;
	case BY_SETUID_EXEC:
		if (setgid(65534) || setuid(65534))
			_exit(4);
		exec_loop(suid, hello_fd);
		break;
	case BY_SETUID_ROOT_CHILD:
		snprintf(num, sizeof(num), "%d", hello_fd);
		setenv(ROOT_CHILD_ENV, num, 1);
		execl(suid, suid, (char *)NULL);
		_exit(7);
	}
	if (p < 0)
		_exit(5);
	waitpid(p, NULL, 0);
	_exit(0);
}


FIXTURE(follow) {
	struct sc_session s;
	struct sc_records rs;
	pid_t child;
	int go[2], hello[2];
	char suid[64];
};

FIXTURE_VARIANT(follow) {
	enum how how;
	uint32_t flags;
	bool watched;
	bool by_nobody;	/* ATTACH called by nobody, not root */
	bool late_worker;	/* no kworker runs until the loop stalls */
};

FIXTURE_VARIANT_ADD(follow, fork) {
	.how = BY_FORK, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
};

FIXTURE_VARIANT_ADD(follow, fork_exec) {
	.how = BY_FORK_EXEC, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
};

FIXTURE_VARIANT_ADD(follow, posix_spawn) {
	.how = BY_SPAWN, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
};

FIXTURE_VARIANT_ADD(follow, exec_self) {
	.how = BY_EXEC_SELF, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
};

FIXTURE_VARIANT_ADD(follow, fork_late_worker) {
	.how = BY_FORK, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
	.late_worker = true,
};

/*
 * The loop in a thread of the new process, whose first thread waits for it
 * in pthread_join(): a futex wait, which the attach does not count without
 * PARK; that thread's watch starts but never sees a busy period
 */
FIXTURE_VARIANT_ADD(follow, fork_thread) {
	.how = BY_FORK_THREAD, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
};

/* the loop in a thread the new process made before the worker came */
FIXTURE_VARIANT_ADD(follow, fork_thread_late_worker) {
	.how = BY_FORK_THREAD, .flags = STALLCAP_ATTACH_INHERIT, .watched = true,
	.late_worker = true,
};

FIXTURE_VARIANT_ADD(follow, fork_without_inherit) {
	.how = BY_FORK, .flags = 0, .watched = false,
};

FIXTURE_VARIANT_ADD(follow, exec_self_without_inherit) {
	.how = BY_EXEC_SELF, .flags = 0, .watched = false,
};

FIXTURE_VARIANT_ADD(follow, setuid_exec) {
	.how = BY_SETUID_EXEC, .flags = STALLCAP_ATTACH_INHERIT, .watched = false,
};

FIXTURE_VARIANT_ADD(follow, setuid_helper_root_child) {
	.how = BY_SETUID_ROOT_CHILD, .flags = STALLCAP_ATTACH_INHERIT,
	.watched = false, .by_nobody = true,
};

/* A set-user-ID copy of this binary, runnable by nobody. */
static int make_suid_copy(char *path, size_t len)
{
	char cmd[4300];

	snprintf(path, len, "/tmp/follow_suid.%d", getpid());
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 4755 %s", self_exe, path, path);
	return system(cmd) ? -1 : 0;
}

FIXTURE_SETUP(follow)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);

	ASSERT_LT(0, n);
	self_exe[n] = 0;
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	if (!(self->s.info.features & STALLCAP_FEAT_ATTACH_INHERIT))
		SKIP(return, "the module cannot follow processes");
	if (variant->how == BY_SETUID_EXEC || variant->how == BY_SETUID_ROOT_CHILD) {
		if (geteuid())
			SKIP(return, "needs root to make a set-user-ID program");
		ASSERT_EQ(0, make_suid_copy(self->suid, sizeof(self->suid)));
	}
	ASSERT_EQ(0, pipe(self->go));
	ASSERT_EQ(0, pipe(self->hello));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close(self->go[1]);
		close(self->hello[0]);
		close(self->s.fd);
		child_main(variant->how, self->go[0], self->hello[1], self->suid);
	}
	close(self->go[0]);
	close(self->hello[1]);
}

FIXTURE_TEARDOWN(follow)
{
	sc4_workers_release();
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	if (self->suid[0])
		unlink(self->suid);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/* ---- fork_late_worker: unbound kworkers kept from running ---- */

/* The test and the attached process on CPU 1, the workers held on CPU 0. */
static const char *late_worker_start(pid_t child)
{
	cpu_set_t one;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return "needs two CPUs";
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	if (sched_setaffinity(0, sizeof(one), &one) ||
	    sched_setaffinity(child, sizeof(one), &one))
		return "cannot pin to CPU 1";
	return sc4_workers_hold();
}

static int attach(int fd, pid_t pid, uint32_t flags)
{
	struct stallcap_attach a = {
		.size = sizeof(a),
		.flags = flags,
		.pid = (uint32_t)pid,
		.timeout_ns = DEADLINE,
		.user_tag = TAG,
	};

	return ioctl(fd, STALLCAP_IOC_ATTACH, &a) ? -errno : 0;
}

/* ATTACH called by a child of the test that became nobody: -errno or 0. */
static int attach_by_nobody_once(int fd, pid_t pid, uint32_t flags)
{
	int status;
	pid_t p = fork();

	if (!p)
		_exit(become_nobody() ? 255 : -attach(fd, pid, flags));
	if (p < 0 || waitpid(p, &status, 0) != p || !WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

/*
 * The same, once the target became nobody's and dumpable (it does so as
 * it starts: until then nobody may not attach, EPERM).
 */
static int attach_by_nobody(int fd, pid_t pid, uint32_t flags)
{
	int ret = attach_by_nobody_once(fd, pid, flags);

	for (int i = 0; ret == -EPERM && i < 300; i++) {
		usleep(10 * 1000);
		ret = attach_by_nobody_once(fd, pid, flags);
	}
	return ret;
}

static size_t count_samples(const struct sc_records *rs)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->n; i++)
		n += rs->rec[i]->type == STALLCAP_REC_SAMPLE;
	return n;
}

/* STALLCAP_REC_WATCH records of thread @tid with @event */
static unsigned int count_watch_events(const struct sc_records *rs, pid_t tid,
				       uint32_t event)
{
	unsigned int n = 0;

	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_watch_event *w = (const void *)rs->rec[i];

		n += w->hdr.type == STALLCAP_REC_WATCH && w->tid == (__u32)tid &&
		     w->event == event;
	}
	return n;
}

/* The place of @tid's first @event in the records read, or rs->n: none. */
static size_t watch_event_index(const struct sc_records *rs, pid_t tid,
				uint32_t event)
{
	const struct stallcap_watch_event *w = sc_find_watch_event(rs, tid, event);
	size_t i = 0;

	while (i < rs->n && (const void *)rs->rec[i] != w)
		i++;
	return i;
}

TEST_F(follow, new_process_is_watched_as_its_parent)
{
	const struct stallcap_watch_event *ws, *wb;
	const struct stallcap_sample *r, *u;
	struct loop_hello h = { 0 };
	uint64_t busy_from = 0;
	const char *why;
	int status;

	ASSERT_EQ(0, variant->by_nobody ?
		  attach_by_nobody(self->s.fd, self->child, variant->flags) :
		  attach(self->s.fd, self->child, variant->flags));
	if (variant->late_worker) {
		why = late_worker_start(self->child);
		if (why)
			SKIP(return, "%s", why);
	}
	ASSERT_EQ(1, write(self->go[1], "g", 1));
	ASSERT_EQ(sizeof(h), read(self->hello[0], &h, sizeof(h)));
	if (variant->late_worker) {
		/* the loop left its waits: the worker may run now */
		ASSERT_EQ(sizeof(busy_from), read(self->hello[0], &busy_from,
						  sizeof(busy_from)));
		sc4_workers_let_run();
	}
	ASSERT_EQ(self->child, waitpid(self->child, &status, 0));
	/*
	 * The workqueues' CPUs restored after the loop's stall: on its CPU
	 * that takes long enough (the debug kernel) to preempt the loop, and
	 * a preempted thread's sample has no user stack without task_work_add()
	 */
	sc4_workers_release();
	self->child = 0;
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));

	if (variant->how == BY_SETUID_EXEC || variant->how == BY_SETUID_ROOT_CHILD) {
		ASSERT_LE(0, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_WATCH,
					     3, SC_WAIT_MS));
		ASSERT_NE(NULL, sc_find_watch_event(&self->rs, h.pid, STALLCAP_WATCH_MISSED))
			TH_LOG("no WATCH_MISSED for the set-user-ID program");
		EXPECT_EQ(0, count_samples(&self->rs))
			TH_LOG("a set-user-ID program was watched");
		return;
	}
	if (variant->how == BY_SETUID_ROOT_CHILD) {
		/* the helper's exec and its root child: neither is followed */
		ASSERT_LE(0, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_WATCH,
					     4, SC_WAIT_MS));
		EXPECT_NE(NULL, sc_find_watch_event(&self->rs, h.pid, STALLCAP_WATCH_MISSED))
			TH_LOG("no WATCH_MISSED for the root process the helper started");
		EXPECT_EQ(NULL, sc_find_watch_event(&self->rs, h.pid, STALLCAP_WATCH_STARTED))
			TH_LOG("nobody's attach watches a root process");
		EXPECT_EQ(0, count_samples(&self->rs))
			TH_LOG("nobody's attach captured a root process's stack");
		return;
	}
	if (!variant->watched) {
		sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 1,
				SC_QUIET_MS);
		EXPECT_EQ(NULL, sc_first_sample_of(&self->rs, h.tid))
			TH_LOG("a process was watched without INHERIT");
		return;
	}
	ASSERT_LE(0, sc_ring_collect(&self->s, &self->rs,
				     STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	ws = sc_find_watch_event(&self->rs, h.tid, STALLCAP_WATCH_STARTED);
	ASSERT_NE(NULL, ws) TH_LOG("no WATCH_STARTED for the new process");
	EXPECT_EQ(DEADLINE, ws->timeout_ns);
	EXPECT_EQ(TAG, ws->user_tag);
	/* made before the first instruction by a task_work, else later */
	if (variant->late_worker && sc_expect_no_task_work())
		EXPECT_LT(busy_from, ws->time_ns)
			TH_LOG("the worker was not late: the case tests nothing");
	/*
	 * The loop's first busy period is told once, after its start's record
	 * (also when the thread went busy while a worker announced its watch:
	 * CI98, debug-notw)
	 */
	wb = sc_find_watch_event(&self->rs, h.tid, STALLCAP_WATCH_BUSY);
	ASSERT_NE(NULL, wb) TH_LOG("no WATCH_BUSY for the loop's thread");
	EXPECT_LT(watch_event_index(&self->rs, h.tid, STALLCAP_WATCH_STARTED),
		  watch_event_index(&self->rs, h.tid, STALLCAP_WATCH_BUSY))
		TH_LOG("WATCH_BUSY came before WATCH_STARTED");
	EXPECT_EQ(1, count_watch_events(&self->rs, h.tid, STALLCAP_WATCH_BUSY));
	if (h.tid != h.pid) {
		/* the first thread only waited in pthread_join() */
		EXPECT_NE(NULL, sc_find_watch_event(&self->rs, h.pid, STALLCAP_WATCH_STARTED))
			TH_LOG("no WATCH_STARTED for the process's first thread");
		EXPECT_EQ(NULL, sc_find_watch_event(&self->rs, h.pid, STALLCAP_WATCH_BUSY))
			TH_LOG("a thread that never waited in a counted call was told busy");
	}
	r = sc_first_sample_of(&self->rs, h.tid);
	ASSERT_NE(NULL, r) TH_LOG("the new process's stall was not captured");
	EXPECT_EQ(STALLCAP_ORIGIN_ATTACH, r->origin);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ((__u32)h.pid, r->pid);
	/* the first sample may be just before or in a clock read (6.12) */
	u = sc4_stall_frames_in(&self->rs, r, h.spin);
	if (!u)
		sc_log_records(NULL, &self->rs);
	EXPECT_NE(NULL, u)
		TH_LOG("follow_spin() is not among any sample's innermost frames");
	ASSERT_NE(NULL, sc_stall_end_of(&self->rs, r->stall_id));
}

TEST_HARNESS_MAIN
