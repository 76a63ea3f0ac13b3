// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that misses its deadline while blocked: the record classifies its
 * state (sleeping, uninterruptible), says it was read remotely, and its
 * kernel stack names the wait it is in.
 */
#include <linux/futex.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TIMEOUT		SC_MS(20)
#define TAG		0x626c6f636b656431ULL

static const char *const schedule_fns[] = { "schedule", "__schedule", NULL };
static const char *const switch_fns[] = { "__schedule", NULL };
static const char *const futex_fns[] = {
	"futex_wait", "__futex_wait", "do_futex", "__x64_sys_futex", NULL,
};
/* anonymous pipes read in anon_pipe_read() since Linux 6.16 */
static const char *const pipe_fns[] = { "pipe_read", "anon_pipe_read", NULL };
static const char *const vfork_fns[] = {
	"wait_for_vfork_done", "kernel_clone", "__do_sys_vfork", "__x64_sys_vfork", NULL,
};

enum block_kind { BLOCK_FUTEX, BLOCK_PIPE, BLOCK_VFORK };

struct blocker {
	struct sc_session *s;
	enum block_kind kind;
	uint32_t futex_word;
	int pipefd[2];
	char comm[16];
	pid_t tid;
	int arm_ret, arm_errno, disarm_ret;
};

SC_NOINLINE void *blocker_thread_main(void *arg)
{
	struct blocker *b = arg;
	char c;

	prctl(PR_SET_NAME, "sc-blocker", 0, 0, 0);
	sc_get_comm(b->comm);
	b->tid = sc_gettid();
	b->arm_ret = sc_arm(b->s->fd, TIMEOUT, 0, TAG);
	b->arm_errno = errno;
	if (b->arm_ret)
		return NULL;
	switch (b->kind) {
	case BLOCK_FUTEX:
		while (!__atomic_load_n(&b->futex_word, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, &b->futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		break;
	case BLOCK_PIPE:
		if (read(b->pipefd[0], &c, 1) != 1)
			b->arm_ret = -2;
		break;
	case BLOCK_VFORK:
		/* the parent waits, uninterruptibly, until the child exits */
		if (vfork() == 0) {
			raw_syscall6(SYS_read, b->pipefd[0], (long)&c, 1, 0, 0, 0);
			raw_syscall6(SYS_exit, 0, 0, 0, 0, 0, 0);
		}
		wait(NULL);
		break;
	}
	b->disarm_ret = sc_disarm(b->s->fd);
	return NULL;
}

FIXTURE(blocked) {
	struct sc_session s;
	struct sc_records rs;
	struct sc_ksyms ks;
	bool have_ks;
};

FIXTURE_SETUP(blocked)
{
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	ASSERT_LE(self->s.info.min_deadline_ns, TIMEOUT);
	self->have_ks = !sc_ksyms_load(&self->ks) &&
			(self->s.info.features & STALLCAP_FEAT_KADDR);
	/* root in the guests sees kernel addresses: the frames are checked */
	if (!geteuid())
		ASSERT_TRUE(self->have_ks) TH_LOG("root, but no kernel symbols or addresses");
}

FIXTURE_TEARDOWN(blocked)
{
	sc_ksyms_free(&self->ks);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/*
 * A sample flagged DEFER_PENDING is completed by a USER_STACK record taken in
 * the thread's own context when it returns to user space (without
 * task_work_add(): from outside while it waits): same cookie, same user
 * registers (it was in the same system call all along).
 */
static void check_deferred(struct __test_metadata *_metadata, FIXTURE_DATA(blocked) *self,
			   const struct stallcap_sample *r)
{
	const struct stallcap_sample *u = NULL;

	EXPECT_NE(0, r->cookie);
	sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_USER_STACK, 1, SC_WAIT_MS);
	for (size_t i = 0; i < self->rs.n; i++) {
		const struct stallcap_sample *x = (const void *)self->rs.rec[i];

		if (x->hdr.type == STALLCAP_REC_USER_STACK && x->cookie == r->cookie)
			u = x;
	}
	ASSERT_NE(NULL, u) TH_LOG("DEFER_PENDING but no USER_STACK record");
	EXPECT_EQ(STALLCAP_PATH_DEFERRED, u->path);
	EXPECT_EQ(r->tid, u->tid);
	EXPECT_EQ(r->stall_id, u->stall_id);
	EXPECT_EQ(0, sc_nk(u));
	EXPECT_EQ(sc_regs(r)->ip, sc_regs(u)->ip);
	EXPECT_EQ(sc_regs(r)->sp, sc_regs(u)->sp);
	EXPECT_EQ(sc_regs(u)->sp, sc_stack_start(u));
	EXPECT_LE(1, sc_nu(u));
	EXPECT_LT(0, sc_stack_size(u));
}

/*
 * Run a blocker of @kind in a fresh session, wake it once its first sample
 * is in the ring, collect up to the stall-end.
 */
static void run_blocker_once(struct __test_metadata *_metadata, FIXTURE_DATA(blocked) *self,
			     struct blocker *b)
{
	pthread_t th;
	int got;

	sc_records_free(&self->rs);
	sc_session_close(&self->s);
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	b->s = &self->s;
	b->futex_word = 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, blocker_thread_main, b));
	got = sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS);
	/*
	 * Without task_work_add() a waiting thread's user stack is read from
	 * outside while it waits: that read first (woken before it, it is
	 * lost, counted; CI50's debug-notw futex case)
	 */
	for (int i = 0; sc_expect_no_task_work() && i < 500 &&
	     SC_STAT(self->s.fd, deferred) + SC_STAT(self->s.fd, lost_deferred) < 1; i++)
		sc_sleep_ms(2);

	/* wake it up whatever happened */
	__atomic_store_n(&b->futex_word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &b->futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	ASSERT_EQ(1, write(b->pipefd[1], "x", 1));
	pthread_join(th, NULL);
	ASSERT_EQ(0, b->arm_ret) TH_LOG("ARM: %s", strerror(b->arm_errno));
	ASSERT_EQ(0, b->disarm_ret);
	ASSERT_LE(1, got) TH_LOG("no sample within %d ms", SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
}

/*
 * Captured before the wait: the thread had not yet entered the wait when
 * its deadline passed (it runs a few hundred instructions between ARM and
 * the wait; a debug kernel under TCG can take longer than TIMEOUT: in user
 * mode, or in the kernel on the way to the wait, e.g. vfork's copy_process
 * in CI5), running or preempted there (RUNNABLE: the vfork child, just
 * woken, ran first on the parent's CPU in CI27).  Exactly what stallcap
 * must report then, and no sample of the wait.  Every wait here is a
 * sleep, never RUNNING or RUNNABLE; a RUNNABLE sample counts as before the
 * wait only when no frame of the wait is on its kernel stack, or a frame of
 * what comes before it is (CI84's debug guest preempted the vfork parent in
 * copy_process, under kernel_clone, which the vfork wait's frames include).
 */
static const char *const before_wait_fns[] = { "copy_process", NULL };

static bool not_yet_waiting(FIXTURE_DATA(blocked) *self, const struct stallcap_sample *r,
			    uint8_t wait_state, const char *const *wait_fns)
{
	if (r->state == STALLCAP_STATE_RUNNING)
		return wait_state != r->state;
	/* preempted, and not in its wait: a sleeper reported runnable is not */
	return r->state == STALLCAP_STATE_RUNNABLE && wait_state != r->state &&
	       self->have_ks && (!sc_kstack_has(&self->ks, r, wait_fns) ||
				 sc_kstack_has(&self->ks, r, before_wait_fns));
}

/* the system call it sleeps in, and its arguments */
static void check_syscall(struct __test_metadata *_metadata, const struct blocker *b,
			  const struct stallcap_sample *r)
{
	const struct stallcap_sec_syscall *sys = sc_syscall(r);

	ASSERT_NE(NULL, sys) TH_LOG("no SYSCALL section");
	switch (b->kind) {
	case BLOCK_FUTEX:
		EXPECT_EQ(SYS_futex, sys->nr);
		EXPECT_EQ((uintptr_t)&b->futex_word, sys->args[0]);
		EXPECT_EQ(FUTEX_WAIT_PRIVATE, sys->args[1]);
		break;
	case BLOCK_PIPE:
		EXPECT_EQ(SYS_read, sys->nr);
		EXPECT_EQ(b->pipefd[0], sys->args[0]);
		EXPECT_EQ(1, sys->args[2]);
		break;
	case BLOCK_VFORK:
		/* the parent waits inside vfork() itself, until the child exits */
		EXPECT_EQ(SYS_vfork, sys->nr);
		break;
	}
}

/*
 * Run a blocker of @kind (again if its deadline passed before it reached the
 * wait, or was noticed very late, see sc_late()) and check its first sample.
 */
static void run_blocked(struct __test_metadata *_metadata, FIXTURE_DATA(blocked) *self,
			enum block_kind kind, uint8_t state, const char *const *wait_fns)
{
	struct blocker b = { .kind = kind };
	const struct stallcap_sample *r;
	struct stallcap_stats stats;
	size_t nr_blocked = 0;

	ASSERT_EQ(0, pipe(b.pipefd));
	for (int attempt = 1; ; attempt++) {
		run_blocker_once(_metadata, self, &b);
		r = sc_first_sample_of(&self->rs, b.tid);
		ASSERT_NE(NULL, r);
		if (not_yet_waiting(self, r, state, wait_fns)) {
			/* a slow guest (debug, TCG): 20 ms passed before the wait */
			TH_LOG("attempt %d: captured in state %u (%s mode, ip %#llx), before its wait",
			       attempt, r->state, r->flags & STALLCAP_SAMPLE_USER_MODE ? "user" : "kernel",
			       (unsigned long long)sc_regs(r)->ip);
		} else if (sc_late(r)) {
			TH_LOG("attempt %d: captured %llu us after the deadline", attempt,
			       (unsigned long long)(r->capture_ns - r->deadline_ns) / 1000);
		} else {
			break;
		}
		ASSERT_GT(SC_ATTEMPTS, attempt);
	}

	r = sc_first_sample_of(&self->rs, b.tid);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(getpid(), (pid_t)r->pid);
	EXPECT_EQ(0, strncmp(b.comm, r->comm, 16));
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(state, r->state);
	EXPECT_EQ(STALLCAP_PATH_BLOCKED, r->path);
	EXPECT_FALSE(r->flags & (STALLCAP_SAMPLE_USER_MODE | STALLCAP_SAMPLE_NO_USER));
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	EXPECT_GT(SC_MAX_LATENESS_NS, r->capture_ns - r->deadline_ns);

	/* the user registers saved at the system call's entry */
	EXPECT_NE(0, sc_regs(r)->ip);
	EXPECT_NE(0, sc_regs(r)->sp);
	if (r->flags & SC_SAMPLE_USTACK_REMOTE) {
		/* user memory not readable from here: registers only */
		EXPECT_GE(1, sc_nu(r));
		EXPECT_EQ(0, sc_stack_size(r));
	} else {
		ASSERT_LE(1, sc_nu(r));
		EXPECT_EQ(sc_regs(r)->sp, sc_stack_start(r));
	}
	if (sc_nu(r))
		EXPECT_EQ(sc_regs(r)->ip, sc_user_ips(r)[0]);
	if (r->flags & STALLCAP_SAMPLE_DEFER_PENDING)
		check_deferred(_metadata, self, r);
	check_syscall(_metadata, &b, r);

	/* the kernel stack of the wait */
	ASSERT_LE(3, sc_nk(r));
	if (self->have_ks) {
		EXPECT_TRUE(sc_kstack_has(&self->ks, r, wait_fns))
			TH_LOG("no kernel frame in %s...", wait_fns[0]);
		/* frame 0: where it switched out, in __schedule() */
		EXPECT_TRUE(sc_kip_named(&self->ks, sc_kernel_ips(r)[0], switch_fns))
			TH_LOG("kernel frame 0 is %s, not __schedule",
			       sc_ksym_name(&self->ks, sc_kernel_ips(r)[0]) ?: "?");
		EXPECT_TRUE(sc_kstack_has(&self->ks, r, schedule_fns))
			TH_LOG("no kernel frame in schedule");
	}

	/* counted as a blocked capture, like every sample taken while blocked */
	for (size_t i = 0; i < self->rs.n; i++) {
		const struct stallcap_sample *x = (const void *)self->rs.rec[i];

		if (x->hdr.type == STALLCAP_REC_SAMPLE)
			nr_blocked += x->path == STALLCAP_PATH_BLOCKED;
	}
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &stats, 0));
	EXPECT_LE(1, stats.capture_blocked);
	EXPECT_EQ(nr_blocked, stats.capture_blocked);

	if (_metadata->exit_code)
		sc_log_records(self->have_ks ? &self->ks : NULL, &self->rs);
	close(b.pipefd[0]);
	close(b.pipefd[1]);
}

TEST_F(blocked, futex_wait_is_sleeping_in_futex_wait)
{
	run_blocked(_metadata, self, BLOCK_FUTEX, STALLCAP_STATE_SLEEPING, futex_fns);
}

TEST_F(blocked, read_of_an_empty_pipe_is_sleeping_in_pipe_read)
{
	run_blocked(_metadata, self, BLOCK_PIPE, STALLCAP_STATE_SLEEPING, pipe_fns);
}

TEST_F(blocked, vfork_parent_is_uninterruptible_in_vfork_wait)
{
	run_blocked(_metadata, self, BLOCK_VFORK, STALLCAP_STATE_UNINTERRUPTIBLE, vfork_fns);
}

TEST_HARNESS_MAIN
