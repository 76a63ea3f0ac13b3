// SPDX-License-Identifier: GPL-2.0
/*
 * One stall, many samples: a long stall is sampled at T, 2T, 4T, 8T after
 * the arm (the interval doubling, capped by sample_cap_ns, at most
 * max_samples), all with one stall id, then ended by a stall-end record
 * whose duration is the stall's.  CPU-time deadlines: a thread kept off its
 * CPU by a hog is not blamed, while a wall-clock deadline is; a CPU-time
 * deadline fires once the thread itself has run for the timeout.  Rate
 * limit: beyond the limit stalls are counted as suppressed, not reported.
 * Every test ends by checking the session's counters and histograms
 * against the records delivered.  Timing checks that fail only the way a
 * host stopping the guest's CPU explains are retried (stall_util.h).
 */
#include "stallcap_test.h"

#include "sc_harness.h"

#include "stall_util.h"

#define TAG		0x73616d706c696e67ULL

/* Samples may come late (timer slack, TCG), never early. */
#define SLACK		SC_MS(150)
/* A first sample's lateness: at the deadline, not at a later event. */
#define LATE_MAX	SC_MS(150)
/*
 * After the hog the thread shares its CPU with whatever the hog held off
 * (kworkers, RCU): its CPU time reaches T later than T after it resumed.
 */
#define CPU_LATE_MAX	SC_MS(500)
/* CPU time is accounted at ticks (HZ >= 100): one tick of error. */
#define TICK_SLACK	SC_MS(10)

/* ------------------------------------------------------------------------
 * Repeated samples
 * ------------------------------------------------------------------------
 */

FIXTURE(sampling) {
	struct sc_session s;
	struct sc_records rs;
};

FIXTURE_VARIANT(sampling) {
	uint64_t timeout;		/* T */
	uint32_t max_samples;		/* 0: default (8) */
	uint64_t sample_cap_ns;		/* 0: default (1 s) */
	unsigned int stall_t;		/* the stall lasts this many T after the arm */
	unsigned int nr;		/* samples expected */
	unsigned int at[8];		/* ... at these multiples of T after the arm */
};

/* Default backoff: T, 2T, 4T, 8T; the next (16T) is after the end. */
FIXTURE_VARIANT_ADD(sampling, doubling) {
	.timeout = SC_MS(100),
	.stall_t = 10,
	.nr = 4,
	.at = { 1, 2, 4, 8 },
};

/* Interval capped at 2T, at most 4 samples: T, 2T, 4T, 6T, not 8T nor 10T. */
FIXTURE_VARIANT_ADD(sampling, capped_and_limited) {
	.timeout = SC_MS(100),
	.max_samples = 4,
	.sample_cap_ns = SC_MS(200),
	.stall_t = 10,
	.nr = 4,
	.at = { 1, 2, 4, 6 },
};

static int sampling_open(FIXTURE_DATA(sampling) *self, const FIXTURE_VARIANT(sampling) *variant)
{
	struct sc_opts o = {
		.max_samples = variant->max_samples,
		.sample_cap_ns = variant->sample_cap_ns,
	};

	return sc_session_setup(&self->s, &o);
}

static void sampling_close(FIXTURE_DATA(sampling) *self)
{
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

FIXTURE_SETUP(sampling)
{
	ASSERT_EQ(0, sampling_open(self, variant));
	ASSERT_LE(self->s.info.min_deadline_ns, variant->timeout);
	ASSERT_EQ(0, sc_pin_self(0));
}

FIXTURE_TEARDOWN(sampling)
{
	if (_metadata->exit_code && self->rs.n)
		sc_log_records(NULL, &self->rs);
	sampling_close(self);
}

/*
 * The main thread spins in user mode for stall_t * T after arming, then
 * disarms: the samples come at the expected multiples of T after the arm
 * (never before, at most SLACK after), the stall-end at the disarm, with
 * the stall's duration and sample count.  A sample later than SLACK, or a
 * disarm that came late, is the host's doing (the module only ever sets
 * its timer for the nominal times): the attempt is run again, as is one
 * whose sample came before the spin began (a slow kernel spent T creating
 * the alarm thread).
 */
static enum sc4_result backoff(struct __test_metadata *_metadata, FIXTURE_DATA(sampling) *self,
			       const FIXTURE_VARIANT(sampling) *variant)
{
	const uint64_t T = variant->timeout;
	const struct stallcap_sample *smp[SC_MAX_SAMPLES], *r;
	const struct stallcap_stall_end *end;
	struct sc4_alarm alarm;
	uint64_t t0, t1, t_spin, d0, d1;
	bool ordered, late;
	size_t n;

	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, T, 0, TAG));
	t1 = sc_now_ns();
	ASSERT_EQ(0, sc4_alarm_start(&alarm, sc_nr_cpus_allowed() > 1 ? 1 : -1,
				     t1 + variant->stall_t * T));
	t_spin = sc_now_ns();
	spin_in_user(&alarm.stop);
	d0 = sc_now_ns();
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	d1 = sc_now_ns();
	sc4_alarm_join(&alarm);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	late = d0 > alarm.at + SLACK;
	if (late)
		TH_LOG("the spinning thread disarmed %.1f ms late", (d0 - alarm.at) / 1e6);

	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	n = sc4_samples_of(&self->rs, r->stall_id, smp, SC_MAX_SAMPLES, &ordered);
	EXPECT_EQ(n, sc_records_count(&self->rs, STALLCAP_REC_SAMPLE)) TH_LOG("several stalls");
	EXPECT_TRUE(ordered) TH_LOG("sample indexes not 0, 1, 2, ... in ring order");
	ASSERT_GE(SC_MAX_SAMPLES, n);
	for (size_t i = 0; i < n; i++) {
		const struct stallcap_sample *x = smp[i];
		unsigned int at = i < variant->nr ? variant->at[i] : variant->stall_t;
		uint64_t lo = t0 + at * T, hi = t1 + at * T + SLACK;

		TH_LOG("sample %zu at %.1f ms after the arm (expected %u T = %llu ms)", i,
		       (x->capture_ns - t0) / 1e6, at, at * T / SC_NSEC_PER_MSEC);
		EXPECT_EQ(i, x->sample_index);
		EXPECT_EQ(r->stall_id, x->stall_id);
		EXPECT_EQ(r->deadline_ns, x->deadline_ns);
		EXPECT_EQ(T, x->timeout_ns);
		EXPECT_EQ(TAG, x->user_tag);
		EXPECT_EQ(STALLCAP_CLOCK_WALL, x->clock);
		EXPECT_LE(lo, x->capture_ns) TH_LOG("sample %zu early", i);
		if (x->capture_ns < t_spin) {
			/* a slow kernel spent T creating the alarm thread */
			TH_LOG("sample %zu before the spin began", i);
			late = true;
			continue;
		}
		/* spinning on its CPU, or preempted there for a moment */
		EXPECT_TRUE(x->state == STALLCAP_STATE_RUNNING ||
			    x->state == STALLCAP_STATE_RUNNABLE) TH_LOG("state %u", x->state);
		EXPECT_TRUE(sc_ip_in_fn(sc_regs(x)->ip, spin_in_user));
		if (x->capture_ns > hi) {
			TH_LOG("sample %zu %.1f ms late", i, (x->capture_ns - lo) / 1e6);
			late = true;
		}
	}
	/* the deadline was the arm's */
	EXPECT_LE(t0 + T, r->deadline_ns);
	EXPECT_GE(t1 + T, r->deadline_ns);

	/* the end: at the disarm, lasting from the deadline to it */
	end = sc_stall_end_of(&self->rs, r->stall_id);
	ASSERT_NE(NULL, end);
	EXPECT_EQ(1, sc_records_count(&self->rs, STALLCAP_REC_STALL_END));
	EXPECT_EQ(n, end->nr_samples);
	EXPECT_EQ(r->deadline_ns, end->deadline_ns);
	EXPECT_EQ(TAG, end->user_tag);
	EXPECT_EQ(sc_gettid(), (pid_t)end->tid);
	EXPECT_LE(d0, end->end_ns);
	EXPECT_GE(d1, end->end_ns);
	EXPECT_LE(d0 - (t1 + T), end->end_ns - end->deadline_ns);
	EXPECT_GE(d1 - (t0 + T), end->end_ns - end->deadline_ns);
	TH_LOG("stall lasted %.1f ms beyond its deadline, %u samples",
	       (end->end_ns - end->deadline_ns) / 1e6, end->nr_samples);
	sc4_check_counters(&self->s, &self->rs);
	if (late)
		return SC4_NOISY;
	EXPECT_EQ(variant->nr, n);
	return SC4_OK;
}

TEST_F(sampling, long_stall_is_sampled_with_backoff_then_ended)
{
	SC4_RETRY(backoff(_metadata, self, variant), {
		sampling_close(self);
		ASSERT_EQ(0, sampling_open(self, variant));
	});
}

/* ------------------------------------------------------------------------
 * CPU-time deadlines
 * ------------------------------------------------------------------------
 */

#define CPU_T		SC_MS(50)
#define HOG_NS		(4 * CPU_T)	/* the hog keeps the thread off its CPU this long */

FIXTURE(cputime) {
	struct sc_session s;
	struct sc_records rs;
	struct sc4_hog hog;
	bool hog_started;
};

FIXTURE_VARIANT(cputime) {
	uint32_t arm_flags;
	uint8_t clock;
	bool reported;
};

FIXTURE_VARIANT_ADD(cputime, wall) {
	.arm_flags = 0, .clock = STALLCAP_CLOCK_WALL, .reported = true,
};

FIXTURE_VARIANT_ADD(cputime, cputime) {
	.arm_flags = STALLCAP_ARM_CPUTIME, .clock = STALLCAP_CLOCK_CPUTIME, .reported = false,
};

FIXTURE_SETUP(cputime)
{
	int ret;

	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	if (!(self->s.info.features & STALLCAP_FEAT_CPUTIME))
		SKIP(return, "module without CPU-time deadlines");
	ASSERT_LE(self->s.info.min_deadline_ns, CPU_T);
	/* watched thread and hog share CPU 0; the hog is FIFO: it always wins */
	ASSERT_EQ(0, sc_pin_self(0));
	ret = sc4_hog_start(&self->hog, 0, SCHED_FIFO, HOG_NS);
	self->hog_started = true;
	if (ret == -EPERM)
		SKIP(return, "SCHED_FIFO not permitted");
	ASSERT_EQ(0, ret) TH_LOG("hog: %s", strerror(-ret));
}

FIXTURE_TEARDOWN(cputime)
{
	if (self->hog_started)
		sc4_hog_stop(&self->hog);
	if (_metadata->exit_code && self->rs.n)
		sc_log_records(NULL, &self->rs);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

#define CPUTIME_RUN(fn) SC4_RETRY(fn(_metadata, self, variant), {		\
	sc_records_free(&self->rs);						\
	sc_session_close(&self->s);						\
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));				\
})

/*
 * A thread that needs half a timeout of CPU is kept off its CPU by the hog
 * for four timeouts right after it arms: runnable, not running.  A
 * wall-clock deadline reports it (RUNNABLE, read remotely, clock WALL); a
 * CPU-time deadline does not, it never ran for the timeout.  (When the host
 * stops the guest CPU while the thread runs, its CPU time really grows: if
 * it reached the timeout, the attempt is run again.)
 */
static enum sc4_result preempted(struct __test_metadata *_metadata,
				 FIXTURE_DATA(cputime) *self,
				 const FIXTURE_VARIANT(cputime) *variant)
{
	uint64_t cpu0, cpu_used, t0, t1, d0;
	const struct stallcap_sample *r;
	struct stallcap_stats st;
	int spins = self->hog.spins;

	cpu0 = sc4_thread_cpu_ns();
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, CPU_T, variant->arm_flags, TAG));
	t1 = sc_now_ns();
	sc4_hog_kick(&self->hog);		/* preempts us here */
	cpu_used = sc4_thread_cpu_ns() - cpu0;
	if (cpu_used < CPU_T / 2)
		sc4_burn_cpu(CPU_T / 2 - cpu_used);
	cpu_used = sc4_thread_cpu_ns() - cpu0;
	d0 = sc_now_ns();
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	ASSERT_EQ(spins + 1, __atomic_load_n(&self->hog.spins, __ATOMIC_ACQUIRE))
		TH_LOG("the hog did not run before the thread finished");
	TH_LOG("thread used %.1f ms of CPU in %.1f ms; hog ran %.1f ms, %.1f ms after the arm",
	       cpu_used / 1e6, (d0 - t0) / 1e6, (self->hog.ended - self->hog.started) / 1e6,
	       (self->hog.started - t1) / 1e6);
	EXPECT_LE(t0 + CPU_T, d0);

	if (variant->reported) {
		ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
					     SC_WAIT_MS));
	}
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	if (!variant->reported) {
		if (cpu_used >= CPU_T - TICK_SLACK) {
			TH_LOG("the thread used %.1f ms of CPU: the host stopped it", cpu_used / 1e6);
			return SC4_NOISY;
		}
		EXPECT_EQ(0, st.stalls);
		EXPECT_EQ(0, self->rs.n);
		sc4_check_counters(&self->s, &self->rs);
		return SC4_OK;
	}
	EXPECT_EQ(1, st.stalls);
	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	EXPECT_EQ(variant->clock, r->clock);
	EXPECT_EQ(CPU_T, r->timeout_ns);
	EXPECT_LE(t0 + CPU_T, r->deadline_ns);
	EXPECT_GE(t1 + CPU_T, r->deadline_ns);
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	if (r->capture_ns < self->hog.ended) {
		/* taken while the hog ran: the thread was preempted */
		EXPECT_EQ(STALLCAP_STATE_RUNNABLE, r->state);
		EXPECT_EQ(STALLCAP_PATH_BLOCKED, r->path);
	}
	sc4_check_counters(&self->s, &self->rs);
	if (r->capture_ns - r->deadline_ns >= LATE_MAX) {
		TH_LOG("captured %.1f ms after the deadline", (r->capture_ns - r->deadline_ns) / 1e6);
		return SC4_NOISY;
	}
	return SC4_OK;
}

TEST_F(cputime, preempted_thread_is_blamed_only_by_wall_clock)
{
	CPUTIME_RUN(preempted);
}

/*
 * The same start (four timeouts off CPU), then the thread spins until
 * captured: the CPU-time deadline fires once the thread itself has run for
 * the timeout after the hog, the wall-clock one at the timeout after the
 * arm; each record names its clock.
 */
static enum sc4_result running(struct __test_metadata *_metadata,
			       FIXTURE_DATA(cputime) *self,
			       const FIXTURE_VARIANT(cputime) *variant)
{
	struct sc_stopper stop = { .cpu = sc_nr_cpus_allowed() > 1 ? 1 : -1 };
	uint64_t cpu0, t0, t1, resumed, cpu_resumed;
	const struct stallcap_sample *r;
	bool late = false;

	ASSERT_EQ(0, sc_stopper_start(&stop, self->s.fd, 1, SC_WAIT_MS));
	cpu0 = sc4_thread_cpu_ns();
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, CPU_T, variant->arm_flags, TAG));
	t1 = sc_now_ns();
	sc4_hog_kick(&self->hog);		/* preempts us here */
	resumed = sc_now_ns();
	cpu_resumed = sc4_thread_cpu_ns();
	spin_in_user(&stop.stop);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	sc_stopper_join(&stop);
	ASSERT_FALSE(stop.timed_out) TH_LOG("no capture within %d ms", SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);

	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	TH_LOG("captured %.1f ms after the arm, %.1f ms after the hog (which ran %.1f ms)",
	       (r->capture_ns - t0) / 1e6, ((int64_t)r->capture_ns - (int64_t)resumed) / 1e6,
	       (self->hog.ended - self->hog.started) / 1e6);
	EXPECT_EQ(variant->clock, r->clock);
	EXPECT_EQ(CPU_T, r->timeout_ns);
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	late = r->capture_ns - r->deadline_ns >= LATE_MAX;
	if (variant->arm_flags & STALLCAP_ARM_CPUTIME) {
		/* the thread's own CPU time reached T: not before it resumed + T - used */
		uint64_t used = cpu_resumed - cpu0;

		if (used >= CPU_T - TICK_SLACK) {
			TH_LOG("used %.1f ms of CPU before the hog: the host stopped it",
			       used / 1e6);
			return SC4_NOISY;
		}
		EXPECT_LE(resumed + (CPU_T - used) - TICK_SLACK, r->capture_ns)
			TH_LOG("blamed before it ran for the timeout");
		late |= r->capture_ns > resumed + CPU_T + CPU_LATE_MAX;
		EXPECT_TRUE(r->state == STALLCAP_STATE_RUNNING ||
			    r->state == STALLCAP_STATE_RUNNABLE) TH_LOG("state %u", r->state);
		EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user));
	} else {
		EXPECT_LE(t0 + CPU_T, r->deadline_ns);
		EXPECT_GE(t1 + CPU_T, r->deadline_ns);
	}
	sc4_check_counters(&self->s, &self->rs);
	return late ? SC4_NOISY : SC4_OK;
}

TEST_F(cputime, running_thread_is_blamed_after_its_own_cpu_time)
{
	CPUTIME_RUN(running);
}

/* ------------------------------------------------------------------------
 * Rate limit
 * ------------------------------------------------------------------------
 */

#define RATE_T		SC_MS(20)
#define RATE_LIMIT	5
#define RATE_STALLS	20
#define RATE_WINDOW	(60 * SC_NSEC_PER_SEC)

/*
 * One stall: arm, sleep until the module counted it, disarm.  Returns 0, or
 * -1 if the stall was not counted in time.
 */
static int stall_once(struct sc_session *s, uint64_t stalls_before)
{
	uint64_t end = sc_now_ns() + SC_MS(SC_WAIT_MS);

	if (sc_arm(s->fd, RATE_T, 0, TAG))
		return -1;
	while (SC_STAT(s->fd, stalls) <= stalls_before && sc_now_ns() < end)
		sc_sleep_ms(2);
	if (sc_disarm(s->fd))
		return -1;
	return SC_STAT(s->fd, stalls) == stalls_before + 1 ? 0 : -1;
}

/*
 * 20 stalls in quick succession with a limit of 5 per minute: the first 5
 * are reported (a sample and a stall-end each), the other 15 counted as
 * suppressed, in the counters and in the control page, and never written.
 *
 * The per-record count (stallcap_sample.suppressed) shows up on the next
 * stall reported, which is after the one-minute window: not waited for
 * here; within the window, no record may carry a count.
 */
TEST(rate_limit_reports_5_of_20_stalls)
{
	struct sc_opts o = { .max_samples = 1, .rate_limit = RATE_LIMIT };
	struct sc_records rs = {};
	struct stallcap_stats st;
	struct sc_session s;
	uint64_t now, first_ns = 0;
	size_t first = 0;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(RATE_LIMIT, s.cfg.rate_limit);
	ASSERT_LE(s.info.min_deadline_ns, RATE_T);
	/*
	 * The module's first window may start at boot (CLOCK_MONOTONIC 0):
	 * do not let it end in the middle of the test.
	 */
	now = sc_now_ns();
	if (now < RATE_WINDOW && now + SC_MS(5000) > RATE_WINDOW) {
		TH_LOG("waiting %.1f s for the boot-time window to end",
		       (RATE_WINDOW - now) / 1e9 + 0.5);
		sc_sleep_ms((RATE_WINDOW - now) / SC_NSEC_PER_MSEC + 500);
	}
	for (int i = 0; i < RATE_STALLS; i++) {
		ASSERT_EQ(0, stall_once(&s, i)) TH_LOG("stall %d not detected", i);
	}
	sc_ring_collect(&s, &rs, 0, 0, SC_QUIET_MS);
	ASSERT_EQ(0, rs.err[0]) TH_LOG("%s", rs.err);

	ASSERT_EQ(0, sc_get_stats(s.fd, &st, 0));
	EXPECT_EQ(RATE_STALLS, st.stalls);
	EXPECT_EQ(RATE_STALLS - RATE_LIMIT, st.suppressed);
	EXPECT_EQ(RATE_STALLS - RATE_LIMIT, __atomic_load_n(&s.ctl->suppressed,
							    __ATOMIC_ACQUIRE));
	EXPECT_EQ(RATE_LIMIT, st.samples);
	EXPECT_EQ(RATE_LIMIT, st.stall_ends);
	EXPECT_EQ(RATE_LIMIT, sc_records_count(&rs, STALLCAP_REC_SAMPLE));
	EXPECT_EQ(RATE_LIMIT, sc_records_count(&rs, STALLCAP_REC_STALL_END));
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_sample *r = (const void *)rs.rec[i];
		const struct stallcap_stall_end *e = (const void *)rs.rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE) {
			EXPECT_EQ(0, r->sample_index);
			EXPECT_EQ(0, r->suppressed) TH_LOG("a count before any suppression");
			if (!first++)
				first_ns = r->capture_ns;
			/* the reported stalls are the first five */
			EXPECT_GE(RATE_LIMIT, r->stall_id);
		}
		if (e->hdr.type == STALLCAP_REC_STALL_END) {
			EXPECT_GE(RATE_LIMIT, e->stall_id);
		}
	}
	TH_LOG("%d stalls in %.1f ms; reported %zu", RATE_STALLS,
	       (sc_now_ns() - first_ns) / 1e6, first);
	sc4_check_counters(&s, &rs);
	if (_metadata->exit_code)
		sc_log_records(NULL, &rs);
	sc_records_free(&rs);
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
