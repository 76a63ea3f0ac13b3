// SPDX-License-Identifier: GPL-2.0
/*
 * A thread spinning in user code misses its deadline: the record says it was
 * running in user mode, inside the known function, with the frame-pointer
 * chain up to its callers, its registers and a raw copy of its stack.
 */
#include "stallcap_test.h"

#include "kselftest_harness.h"

#define TIMEOUT		SC_MS(20)

int main(int argc, char **argv);	/* TEST_HARNESS_MAIN's, reached by the FP walk */
#define TAG		0x7461677573657231ULL
/*
 * Samples to let a spinning thread take: the thread may be caught in an
 * interrupt or softirq run on top of its user code (under TCG the timer
 * interrupt often lands in the softirq of the previous tick), so "mode
 * user" is asserted on at least one of several samples.
 */
#define SAMPLES		3

FIXTURE(user) {
	struct sc_session s;
	struct sc_records rs;
};

FIXTURE_SETUP(user)
{
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	ASSERT_LE(self->s.info.min_deadline_ns, TIMEOUT)
		TH_LOG("min_deadline_ns %llu above the test's timeout",
		       (unsigned long long)self->s.info.min_deadline_ns);
}

FIXTURE_TEARDOWN(user)
{
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/* What a spinning thread's stall must look like. */
struct spin_expect {
	pid_t tid;
	char comm[16];
	uint64_t t0, t1;	/* CLOCK_MONOTONIC around the ARM */
	uint64_t timeout;	/* relative timeout; 0 for ABSOLUTE */
	uint64_t deadline;	/* absolute deadline; 0 for relative */
	uint64_t tag;
	const void *outer_fn;	/* a caller the FP walk must reach */
	const char *outer_name;
};

/* The stall's samples are 0..n-1 of one stall, all of this thread. */
static const struct stallcap_sample *
check_one_stall(struct __test_metadata *_metadata, const struct sc_records *rs,
		const struct spin_expect *e, size_t *nr_samples)
{
	const struct stallcap_sample *first = NULL;
	size_t n = 0;

	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		EXPECT_EQ(e->tid, (pid_t)r->tid);
		if (r->sample_index == 0) {
			EXPECT_EQ(NULL, first) TH_LOG("two first samples");
			first = r;
		}
		EXPECT_EQ(n, r->sample_index) TH_LOG("samples out of order");
		n++;
	}
	ASSERT_NE(NULL, first) TH_LOG("no first sample");
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE) {
			EXPECT_EQ(first->stall_id, r->stall_id);
			EXPECT_EQ(first->deadline_ns, r->deadline_ns);
			EXPECT_LE(first->capture_ns, r->capture_ns);
		}
	}
	*nr_samples = n;
	return first;
}

static void check_stall_end(struct __test_metadata *_metadata, const struct sc_records *rs,
			    const struct stallcap_sample *first, size_t nr_samples)
{
	const struct stallcap_stall_end *end = sc_stall_end_of(rs, first->stall_id);

	ASSERT_NE(NULL, end) TH_LOG("no stall-end record after the disarm");
	EXPECT_EQ(1, sc_records_count(rs, STALLCAP_REC_STALL_END));
	EXPECT_EQ(first->tid, end->tid);
	EXPECT_EQ(first->pid, end->pid);
	EXPECT_EQ(first->user_tag, end->user_tag);
	EXPECT_EQ(first->deadline_ns, end->deadline_ns);
	EXPECT_LE(first->capture_ns, end->end_ns);
	EXPECT_EQ(nr_samples, end->nr_samples);
}

/*
 * The thread spins in user code without system calls or faults: a sample
 * finds it in user mode, or in an interrupt or softirq taken on top of it
 * (kernel frames, user registers still those of spin_in_user()).
 */
static void check_mode(struct __test_metadata *_metadata, const struct stallcap_sample *r)
{
	EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_NO_USER);
	if (r->flags & STALLCAP_SAMPLE_USER_MODE) {
		EXPECT_FALSE(r->flags & (STALLCAP_SAMPLE_IRQS_OFF | STALLCAP_SAMPLE_IN_HARDIRQ |
					 STALLCAP_SAMPLE_IN_SOFTIRQ));
	} else {
		EXPECT_TRUE(r->flags & (STALLCAP_SAMPLE_IN_HARDIRQ | STALLCAP_SAMPLE_IN_SOFTIRQ))
			TH_LOG("kernel mode, but not in an interrupt");
		EXPECT_LT(0, r->nr_kernel_frames);
	}
	EXPECT_TRUE(sc_ip_in_fn(r->regs.ip, spin_in_user))
		TH_LOG("sample %u: regs.ip %#llx is in %s", r->sample_index,
		       (unsigned long long)r->regs.ip, sc_usym_name(r->regs.ip) ?: "?");
}

/* The first sample of a thread that spun in spin_in_user() from spin_in_user_caller(). */
static void check_user_sample(struct __test_metadata *_metadata, const struct sc_session *s,
			      const struct stallcap_sample *r, const struct spin_expect *e)
{
	int caller, outer;

	EXPECT_EQ(getpid(), (pid_t)r->pid);
	EXPECT_EQ(e->tid, (pid_t)r->tid);
	EXPECT_EQ(0, strncmp(e->comm, r->comm, 16))
		TH_LOG("comm '%.16s', expected '%.16s'", r->comm, e->comm);
	EXPECT_EQ(e->tag, r->user_tag);
	EXPECT_EQ(STALLCAP_CLOCK_WALL, r->clock);
	EXPECT_EQ(STALLCAP_STATE_RUNNING, r->state);
	EXPECT_TRUE(r->path == STALLCAP_PATH_LOCAL || r->path == STALLCAP_PATH_NMI ||
		    r->path == STALLCAP_PATH_IPI) TH_LOG("path %u", r->path);
	check_mode(_metadata, r);
	EXPECT_GT(sysconf(_SC_NPROCESSORS_CONF), (long)r->cpu);

	/* timing: the deadline is the one armed, the capture came at it */
	if (e->deadline) {
		EXPECT_EQ(e->deadline, r->deadline_ns);
	} else {
		EXPECT_EQ(e->timeout, r->timeout_ns);
		EXPECT_LE(e->t0 + e->timeout, r->deadline_ns);
		EXPECT_GE(e->t1 + e->timeout, r->deadline_ns);
	}
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	EXPECT_GT(SC_MAX_LATENESS_NS, r->capture_ns - r->deadline_ns)
		TH_LOG("captured %llu ns after the deadline",
		       (unsigned long long)(r->capture_ns - r->deadline_ns));

	/* where: ip in spin_in_user, FP walk up through its callers */
	EXPECT_TRUE(sc_ip_in_fn(r->regs.ip, spin_in_user))
		TH_LOG("regs.ip %#llx is in %s", (unsigned long long)r->regs.ip,
		       sc_usym_name(r->regs.ip) ?: "?");
	ASSERT_LE(2, r->nr_user_frames);
	EXPECT_EQ(r->regs.ip, sc_user_ips(r)[0]);
	EXPECT_EQ(0, sc_ustack_find(r, spin_in_user));
	caller = sc_ustack_find(r, spin_in_user_caller);
	EXPECT_EQ(1, caller) TH_LOG("spin_in_user_caller not frame 1");
	outer = sc_ustack_find(r, e->outer_fn);
	EXPECT_LT(caller, outer) TH_LOG("%s not reached by the frame-pointer walk",
					e->outer_name);

	/* the raw copy: from regs.sp, as long as configured, the real stack */
	EXPECT_NE(0, r->regs.sp);
	EXPECT_NE(0, r->regs.bp);
	EXPECT_EQ(r->regs.sp, r->stack_start);
	if (r->flags & STALLCAP_SAMPLE_COPY_PARTIAL) {
		EXPECT_GT(s->cfg.user_stack_bytes, r->stack_size);
	} else {
		EXPECT_EQ(s->cfg.user_stack_bytes, r->stack_size);
	}
	if (r->regs.bp >= r->regs.sp && r->regs.bp + 16 <= r->regs.sp + r->stack_size) {
		uint64_t ret;

		memcpy(&ret, sc_stack(r) + (r->regs.bp + 8 - r->regs.sp), 8);
		EXPECT_EQ(sc_user_ips(r)[1], ret)
			TH_LOG("the copy's return address at bp+8 is not user frame 1");
	}
	EXPECT_TRUE(sc_stack_has_canary(r))
		TH_LOG("the caller's canary is not in the raw stack copy");
}

static void check_spin_stall(struct __test_metadata *_metadata, struct sc_session *s,
			     struct sc_records *rs, const struct spin_expect *e)
{
	const struct stallcap_sample *first;
	size_t n, user_mode = 0;

	ASSERT_EQ(1, sc_ring_collect(s, rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS))
		sc_log_records(NULL, rs);
	first = check_one_stall(_metadata, rs, e, &n);
	check_user_sample(_metadata, s, first, e);
	check_stall_end(_metadata, rs, first, n);
	/* every sample in spin_in_user(), at least one of them in user mode */
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		check_mode(_metadata, r);
		user_mode += !!(r->flags & STALLCAP_SAMPLE_USER_MODE);
	}
	EXPECT_LT(0, user_mode) TH_LOG("no sample in user mode");
	TH_LOG("%zu samples, %zu in user mode, first by path %u, %llu us late", n, user_mode,
	       first->path, (unsigned long long)(first->capture_ns - first->deadline_ns) / 1000);
	if (_metadata->exit_code)
		sc_log_records(NULL, rs);
}

TEST_F(user, main_thread_spinning_is_captured_in_its_function)
{
	struct sc_stopper st = { .cpu = sc_nr_cpus_allowed() > 1 ? 1 : -1 };
	struct spin_expect e = {
		.tid = sc_gettid(), .timeout = TIMEOUT, .tag = TAG,
		.outer_fn = main, .outer_name = "main",
	};
	struct stallcap_stats stats;

	sc_get_comm(e.comm);
	ASSERT_EQ(0, sc_pin_self(0));
	ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, SAMPLES, SC_WAIT_MS));
	e.t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, TIMEOUT, 0, TAG));
	e.t1 = sc_now_ns();
	spin_in_user_caller(&st.stop);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	sc_stopper_join(&st);
	ASSERT_FALSE(st.timed_out) TH_LOG("no capture within %d ms", SC_WAIT_MS);

	check_spin_stall(_metadata, &self->s, &self->rs, &e);

	ASSERT_EQ(0, sc_get_stats(self->s.fd, &stats, 0));
	EXPECT_EQ(1, stats.stalls);
	EXPECT_EQ(sc_records_count(&self->rs, STALLCAP_REC_SAMPLE), stats.samples);
	EXPECT_EQ(1, stats.stall_ends);
	EXPECT_EQ(0, stats.lost);
	EXPECT_EQ(0, stats.suppressed);
	EXPECT_EQ(1, stats.watches);
	EXPECT_EQ(0, stats.armed);
}

struct spinner {
	struct sc_session *s;
	volatile int *stop;
	int arm_cpu, spin_cpu;	/* -1: do not pin */
	uint64_t deadline;	/* ABSOLUTE if non-zero */
	struct spin_expect e;
	int arm_ret, arm_errno, disarm_ret;
};

/* The thread start function the FP walk must reach. */
SC_NOINLINE void *spinner_thread_main(void *arg)
{
	struct spinner *sp = arg;

	prctl(PR_SET_NAME, "sc-spinner", 0, 0, 0);
	sc_get_comm(sp->e.comm);
	sp->e.tid = sc_gettid();
	if (sp->arm_cpu >= 0)
		sc_pin_self(sp->arm_cpu);
	sp->e.t0 = sc_now_ns();
	if (sp->deadline)
		sp->arm_ret = sc_arm(sp->s->fd, sp->deadline, STALLCAP_ARM_ABSOLUTE, sp->e.tag);
	else
		sp->arm_ret = sc_arm(sp->s->fd, sp->e.timeout, 0, sp->e.tag);
	sp->arm_errno = errno;
	sp->e.t1 = sc_now_ns();
	if (sp->spin_cpu >= 0)
		sc_pin_self(sp->spin_cpu);	/* migrates now */
	if (!sp->arm_ret)
		spin_in_user_caller(sp->stop);
	sp->disarm_ret = sc_disarm(sp->s->fd);
	return NULL;
}

static void run_spinner(struct __test_metadata *_metadata, struct spinner *sp,
			struct sc_stopper *st, uint64_t samples)
{
	pthread_t th;

	sp->stop = &st->stop;
	sp->e.outer_fn = spinner_thread_main;
	sp->e.outer_name = "spinner_thread_main";
	ASSERT_EQ(0, sc_stopper_start(st, sp->s->fd, samples, SC_WAIT_MS));
	ASSERT_EQ(0, pthread_create(&th, NULL, spinner_thread_main, sp));
	pthread_join(th, NULL);
	sc_stopper_join(st);
	ASSERT_EQ(0, sp->arm_ret) TH_LOG("ARM: %s", strerror(sp->arm_errno));
	ASSERT_EQ(0, sp->disarm_ret);
	ASSERT_FALSE(st->timed_out) TH_LOG("no capture within %d ms", SC_WAIT_MS);
}

TEST_F(user, other_thread_spinning_is_captured_with_its_tid_and_comm)
{
	struct sc_stopper st = { .cpu = -1 };
	struct spinner sp = {
		.s = &self->s, .arm_cpu = -1, .spin_cpu = -1,
		.e = { .timeout = TIMEOUT, .tag = TAG + 1 },
	};

	run_spinner(_metadata, &sp, &st, SAMPLES);
	EXPECT_NE(getpid(), sp.e.tid);
	EXPECT_STREQ("sc-spinner", sp.e.comm);
	check_spin_stall(_metadata, &self->s, &self->rs, &sp.e);
}

TEST_F(user, absolute_deadline_is_the_recorded_deadline)
{
	struct sc_stopper st = { .cpu = -1 };
	struct spinner sp = {
		.s = &self->s, .arm_cpu = -1, .spin_cpu = -1,
		.deadline = sc_now_ns() + SC_MS(200),
		.e = { .tag = TAG + 2 },
	};

	sp.e.deadline = sp.deadline;
	run_spinner(_metadata, &sp, &st, SAMPLES);
	check_spin_stall(_metadata, &self->s, &self->rs, &sp.e);
}

/*
 * The timer fires on the CPU that armed it (CPU 0); the thread then runs on
 * CPU 1: the capture must come by NMI (or IPI if the module was loaded with
 * capture=ipi) on CPU 1, and be counted as such.
 */
TEST_F(user, thread_on_another_cpu_is_captured_by_nmi)
{
	struct sc_stopper st = { .cpu = 0 };
	struct spinner sp = {
		.s = &self->s, .arm_cpu = 0, .spin_cpu = 1,
		.e = { .timeout = TIMEOUT, .tag = TAG + 3 },
	};
	bool nmi = self->s.info.features & STALLCAP_FEAT_NMI;
	const struct stallcap_sample *first;
	struct stallcap_stats stats;
	size_t nmis = 0, ipis = 0, locals = 0;

	if (sc_nr_cpus_allowed() < 2)
		SKIP(return, "needs 2 CPUs");
	run_spinner(_metadata, &sp, &st, SAMPLES);
	check_spin_stall(_metadata, &self->s, &self->rs, &sp.e);

	first = sc_first_sample_of(&self->rs, sp.e.tid);
	ASSERT_NE(NULL, first);
	EXPECT_EQ(1, first->cpu);
	EXPECT_EQ(nmi ? STALLCAP_PATH_NMI : STALLCAP_PATH_IPI, first->path)
		TH_LOG("features %#llx", (unsigned long long)self->s.info.features);
	EXPECT_FALSE(first->flags & STALLCAP_SAMPLE_MIGRATED);

	for (size_t i = 0; i < self->rs.n; i++) {
		const struct stallcap_sample *r = (const void *)self->rs.rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		nmis += r->path == STALLCAP_PATH_NMI;
		ipis += r->path == STALLCAP_PATH_IPI;
		locals += r->path == STALLCAP_PATH_LOCAL;
	}
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &stats, 0));
	EXPECT_LE(1, nmi ? stats.capture_nmi : stats.capture_ipi);
	EXPECT_EQ(nmis, stats.capture_nmi);
	EXPECT_EQ(ipis, stats.capture_ipi);
	EXPECT_EQ(locals, stats.capture_local);
	EXPECT_EQ(0, stats.capture_blocked);
}

/* A small raw copy is exactly user_stack_bytes long. */
TEST(small_user_stack_copy_has_the_configured_size)
{
	struct sc_opts o = { .user_stack_bytes = 64 };
	struct sc_stopper st = { .cpu = -1 };
	struct sc_session s;
	struct sc_records rs = {};
	struct spinner sp = {
		.s = &s, .arm_cpu = -1, .spin_cpu = -1,
		.e = { .timeout = TIMEOUT, .tag = TAG + 4 },
	};
	const struct stallcap_sample *r;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(64, s.cfg.user_stack_bytes);
	run_spinner(_metadata, &sp, &st, 1);
	ASSERT_EQ(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&rs, sp.e.tid);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(64, r->stack_size);
	EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_COPY_PARTIAL);
	EXPECT_EQ(r->regs.sp, r->stack_start);
	EXPECT_TRUE(sc_ip_in_fn(r->regs.ip, spin_in_user));
	sc_records_free(&rs);
	sc_session_close(&s);
}

/*
 * max_samples 4: samples 1, 2, 3 come at least T, 2T, 4T after the
 * deadline, no fifth sample comes, and the stall-end counts four.
 */
TEST(a_long_stall_gets_max_samples_spaced_by_doubling_intervals)
{
	struct sc_opts o = { .max_samples = 4 };
	struct sc_stopper st = { .cpu = -1, .delay_ms = 400 };
	struct sc_session s;
	struct sc_records rs = {};
	struct spinner sp = {
		.s = &s, .arm_cpu = -1, .spin_cpu = -1,
		.e = { .timeout = TIMEOUT, .tag = TAG + 5 },
	};
	const struct stallcap_sample *first;
	struct stallcap_stats stats;
	size_t n;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(4, s.cfg.max_samples);
	run_spinner(_metadata, &sp, &st, 4);
	ASSERT_EQ(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	first = check_one_stall(_metadata, &rs, &sp.e, &n);
	EXPECT_EQ(4, n) sc_log_records(NULL, &rs);
	for (size_t k = 1; k < n; k++) {
		const struct stallcap_sample *r = sc_records_nth(&rs, STALLCAP_REC_SAMPLE, k);

		EXPECT_LE(first->deadline_ns + (TIMEOUT << (k - 1)), r->capture_ns)
			TH_LOG("sample %zu came %llu ns after the deadline", k,
			       (unsigned long long)(r->capture_ns - r->deadline_ns));
		EXPECT_EQ(STALLCAP_STATE_RUNNING, r->state);
	}
	check_stall_end(_metadata, &rs, first, n);
	ASSERT_EQ(0, sc_get_stats(s.fd, &stats, 0));
	EXPECT_EQ(1, stats.stalls);
	EXPECT_EQ(4, stats.samples);
	EXPECT_EQ(1, stats.stall_ends);
	sc_records_free(&rs);
	sc_session_close(&s);
}

/* sample_cap_ns = T: samples come every T, not 2T, 4T, ... 64T after the deadline. */
TEST(sample_cap_bounds_the_interval_between_samples)
{
	struct sc_opts o = { .max_samples = 8, .sample_cap_ns = TIMEOUT };
	struct sc_stopper st = { .cpu = -1 };
	struct sc_session s;
	struct sc_records rs = {};
	struct spinner sp = {
		.s = &s, .arm_cpu = -1, .spin_cpu = -1,
		.e = { .timeout = TIMEOUT, .tag = TAG + 6 },
	};
	const struct stallcap_sample *first, *last;
	size_t n;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(TIMEOUT, s.cfg.sample_cap_ns);
	run_spinner(_metadata, &sp, &st, 8);
	ASSERT_EQ(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	first = check_one_stall(_metadata, &rs, &sp.e, &n);
	ASSERT_EQ(8, n);
	last = sc_records_nth(&rs, STALLCAP_REC_SAMPLE, 7);
	/* capped: about 7T; uncapped it would be at least 64T */
	EXPECT_GT(first->deadline_ns + 32 * TIMEOUT, last->capture_ns)
		TH_LOG("the eighth sample came %llu ns after the deadline",
		       (unsigned long long)(last->capture_ns - first->deadline_ns));
	EXPECT_LE(first->deadline_ns + 7 * TIMEOUT, last->capture_ns);
	sc_records_free(&rs);
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
