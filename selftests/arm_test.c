// SPDX-License-Identifier: GPL-2.0
/*
 * Arming, re-arming and disarming: a deadline that is moved or cancelled in
 * time reports nothing, however often it is done; a moved deadline is the
 * one in force.
 */
#include <signal.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#include "torture_util.h"

#define TAG		0x61726d7465737431ULL
#define LONG_TIMEOUT	SC_MS(500)
/*
 * Cycles of the many_* tests: 10000, or STALLCAP_ARM_CYCLES (the debug
 * kernel's guest makes 1000: each ioctl is 13x slower there under lockdep,
 * KASAN and kmemleak, and one cycle already walks every path).
 */
#define CYCLES		((int)sc_tunable("STALLCAP_ARM_CYCLES", 10000))

FIXTURE(arm) {
	struct sc_session s;
	struct sc_records rs;
	uint64_t timeout;	/* short, but at least the module's minimum */
};

FIXTURE_SETUP(arm)
{
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	self->timeout = SC_MS(20);
	if (self->timeout < self->s.info.min_deadline_ns)
		self->timeout = self->s.info.min_deadline_ns;
	ASSERT_GT(LONG_TIMEOUT, self->timeout);
}

FIXTURE_TEARDOWN(arm)
{
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/* Nothing in the ring for a while, no stall counted, watch disarmed. */
static void expect_quiet(struct __test_metadata *_metadata, FIXTURE_DATA(arm) *self,
			 int quiet_ms, uint64_t watches)
{
	struct stallcap_stats st;

	EXPECT_EQ(0, sc_ring_collect(&self->s, &self->rs, 0, 0, quiet_ms))
		sc_log_records(NULL, &self->rs);
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_EQ(0, st.stalls);
	EXPECT_EQ(0, st.samples);
	EXPECT_EQ(0, st.stall_ends);
	EXPECT_EQ(0, st.armed);
	EXPECT_EQ(watches, st.watches);
}

/* Block (so a capture would be a blocked one) until the first sample. */
static const struct stallcap_sample *wait_sample(struct __test_metadata *_metadata,
						 FIXTURE_DATA(arm) *self)
{
	const struct stallcap_sample *r;

	ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	return r;
}

/*
 * The first sample of this thread whose deadline came at or after @since.
 * A thread held off its CPU for longer than the timeout between an ARM and
 * its DISARM (a loaded host: 83 ms on the debug guest in CI76) has a stall
 * of that ARM first, with the earlier deadline: not the one to check.
 */
static const struct stallcap_sample *
wait_sample_since(struct __test_metadata *_metadata, FIXTURE_DATA(arm) *self,
		  uint64_t since)
{
	const struct stallcap_sample *r = NULL;

	/* the earlier stall has 8 samples at most (the default max_samples) */
	for (size_t i = 0; i <= 8; i++) {
		ASSERT_LE(i + 1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE,
						 i + 1, SC_WAIT_MS));
		r = sc_records_nth(&self->rs, STALLCAP_REC_SAMPLE, i);
		if (r->tid == sc_gettid() && r->deadline_ns >= since)
			return r;
		TH_LOG("a sample of an earlier deadline (%llu ns before), skipped",
		       (unsigned long long)(since - r->deadline_ns));
	}
	ASSERT_TRUE(false) TH_LOG("no sample of a deadline after the rearm");
	return r;
}

TEST_F(arm, disarm_before_the_deadline_reports_nothing)
{
	ASSERT_EQ(0, sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG));
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	EXPECT_EQ(0, SC_STAT(self->s.fd, armed));
	/* well past the cancelled deadline */
	expect_quiet(_metadata, self, 2 * LONG_TIMEOUT / SC_NSEC_PER_MSEC, 1);
	/* disarming a disarmed watch is fine, it still exists */
	EXPECT_EQ(0, sc_disarm(self->s.fd));
	EXPECT_EQ(0, sc_release(self->s.fd));
	EXPECT_EQ(0, SC_STAT(self->s.fd, watches));
}

TEST_F(arm, rearm_before_the_deadline_reports_nothing)
{
	uint64_t end;

	ASSERT_EQ(0, sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG));
	end = sc_now_ns() + 3 * LONG_TIMEOUT;
	while (sc_now_ns() < end) {
		sc_sleep_ms(10);
		ASSERT_EQ(0, sc_rearm(self->s.fd, LONG_TIMEOUT));
		EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	}
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	expect_quiet(_metadata, self, SC_QUIET_MS, 1);
}

TEST_F(arm, rearm_moves_the_deadline_to_now_plus_its_argument)
{
	const struct stallcap_sample *r;
	uint64_t t0, t1;

	ASSERT_EQ(0, sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG));
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_rearm(self->s.fd, self->timeout));
	t1 = sc_now_ns();
	r = wait_sample(_metadata, self);
	EXPECT_LE(t0 + self->timeout, r->deadline_ns);
	EXPECT_GE(t1 + self->timeout, r->deadline_ns);
	EXPECT_EQ(TAG, r->user_tag);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
}

TEST_F(arm, rearm_zero_uses_the_timeout_of_the_last_arm)
{
	const struct stallcap_sample *r;
	uint64_t t0, t1;

	ASSERT_EQ(0, sc_arm(self->s.fd, self->timeout, 0, TAG + 1));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_rearm(self->s.fd, 0));
	t1 = sc_now_ns();
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	r = wait_sample_since(_metadata, self, t0);
	EXPECT_EQ(self->timeout, r->timeout_ns);
	EXPECT_LE(t0 + self->timeout, r->deadline_ns);
	EXPECT_GE(t1 + self->timeout, r->deadline_ns);
	EXPECT_EQ(TAG + 1, r->user_tag);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
}

TEST_F(arm, arm_again_moves_the_deadline_and_the_tag_of_the_same_watch)
{
	const struct stallcap_sample *r;
	uint64_t t0, t1;

	ASSERT_EQ(0, sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG + 2));
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, self->timeout, 0, TAG + 3));
	t1 = sc_now_ns();
	EXPECT_EQ(1, SC_STAT(self->s.fd, watches));
	r = wait_sample(_metadata, self);
	EXPECT_EQ(TAG + 3, r->user_tag);
	EXPECT_EQ(self->timeout, r->timeout_ns);
	EXPECT_LE(t0 + self->timeout, r->deadline_ns);
	EXPECT_GE(t1 + self->timeout, r->deadline_ns);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
}

/* Re-arming a stalled watch ends the stall (stall-end) and starts afresh. */
TEST_F(arm, rearm_during_a_stall_ends_it)
{
	const struct stallcap_stall_end *e;
	const struct stallcap_sample *r;
	uint64_t t0;

	ASSERT_EQ(0, sc_arm(self->s.fd, self->timeout, 0, TAG + 4));
	r = wait_sample(_metadata, self);
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_rearm(self->s.fd, LONG_TIMEOUT));
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	e = sc_stall_end_of(&self->rs, r->stall_id);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(r->tid, e->tid);
	EXPECT_EQ(TAG + 4, e->user_tag);
	EXPECT_EQ(r->deadline_ns, e->deadline_ns);
	EXPECT_LE(t0, e->end_ns);
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	EXPECT_EQ(1, SC_STAT(self->s.fd, stalls));
}

TEST_F_TIMEOUT(arm, many_arm_rearm_disarm_cycles_report_nothing, 180)
{
	struct stallcap_stats g0, g1;
	int fails = 0, cycles = CYCLES;

	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g0, STALLCAP_STATS_GLOBAL));
	for (int i = 0; i < cycles; i++) {
		fails += sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG) != 0;
		fails += sc_rearm(self->s.fd, 0) != 0;
		fails += sc_rearm(self->s.fd, LONG_TIMEOUT) != 0;
		fails += sc_disarm(self->s.fd) != 0;
	}
	EXPECT_EQ(0, fails);
	expect_quiet(_metadata, self, SC_QUIET_MS, 1);
	ASSERT_EQ(0, sc_release(self->s.fd));
	EXPECT_EQ(0, SC_STAT(self->s.fd, watches));
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g1, STALLCAP_STATS_GLOBAL));
	EXPECT_EQ(g0.watches, g1.watches) TH_LOG("module-wide watches leaked");
	EXPECT_EQ(g0.armed, g1.armed);
}

TEST_F_TIMEOUT(arm, many_arm_release_cycles_leave_no_watch, 180)
{
	struct stallcap_stats g0, g1;
	int fails = 0, cycles = CYCLES;

	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g0, STALLCAP_STATS_GLOBAL));
	for (int i = 0; i < cycles; i++) {
		fails += sc_arm(self->s.fd, LONG_TIMEOUT, 0, TAG) != 0;
		fails += sc_release(self->s.fd) != 0;
	}
	EXPECT_EQ(0, fails);
	expect_quiet(_metadata, self, SC_QUIET_MS, 0);
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &g1, STALLCAP_STATS_GLOBAL));
	EXPECT_EQ(g0.watches, g1.watches) TH_LOG("module-wide watches leaked");
	EXPECT_EQ(g0.armed, g1.armed);
	/* released: nothing left to act on */
	EXPECT_EQ(-1, sc_disarm(self->s.fd));
	EXPECT_EQ(ENOENT, errno);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * SC_NSEC_PER_SEC + ts.tv_nsec;
}

/*
 * A CPU-time watch of a thread that went to sleep just short of its budget
 * looks again when the budget could run out at the earliest: never sooner
 * than the smallest timeout (min_deadline_us, 100 ms here), however little
 * is left (before that bound, the frozen remainder, 10-20 ms here, fired its
 * timer at that rate for as long as the thread slept: 44 times in the
 * second on 6.12, against at most 22 allowed).  The scale is TCG's: its timers
 * do not resolve much under a millisecond, the module's view of the
 * thread's CPU time may be a tick ahead of the thread's own clock, and a
 * host that stops the vCPU while the thread runs charges the thread (CI57's
 * debug guest used up a 10 ms remainder in three attempts of three: 20 ms
 * now, five attempts).
 */
#define CPUTIME_MIN_US		100000
#define CPUTIME_SHORT_NS	SC_MS(20)	/* the budget left at the sleep */
#define CPUTIME_SLEEP_MS	1000
#define CPUTIME_ATTEMPTS	5

TEST_F(arm, cputime_watch_asleep_near_its_budget_looks_at_most_once_per_minimum)
{
	long long old_min = tu_param_read("min_deadline_us");
	uint64_t timeout = SC_MS(200), cpu0, e0 = 0, e1 = 0, bound;
	int attempt;

	if (!(self->s.info.features & STALLCAP_FEAT_CPUTIME))
		SKIP(return, "no STALLCAP_FEAT_CPUTIME");
	if (old_min < 0 || geteuid())
		SKIP(return, "needs root and the min_deadline_us parameter");
	ASSERT_EQ(0, tu_param_write("min_deadline_us", CPUTIME_MIN_US));
	for (attempt = 1; attempt <= CPUTIME_ATTEMPTS; attempt++) {
		/* read first: reading debugfs costs more than the budget left */
		e0 = sc_timer_expiries();
		cpu0 = thread_cpu_ns();
		ASSERT_EQ(0, sc_arm(self->s.fd, timeout, STALLCAP_ARM_CPUTIME, TAG + 6));
		while (thread_cpu_ns() - cpu0 < timeout - CPUTIME_SHORT_NS)
			;
		sc_sleep_ms(CPUTIME_SLEEP_MS);
		e1 = sc_timer_expiries();
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		if (!SC_STAT(self->s.fd, stalls))
			break;
		/* the budget ran out after all (charged for the wake-up): again */
		TH_LOG("attempt %d: the thread used its budget, no verdict", attempt);
		sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS);
		sc_records_free(&self->rs);
		EXPECT_EQ(0, sc_release(self->s.fd));
		sc_session_close(&self->s);
		ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	}
	EXPECT_EQ(0, tu_param_write("min_deadline_us", old_min));
	ASSERT_GE(CPUTIME_ATTEMPTS, attempt) TH_LOG("the budget ran out in every attempt");
	ASSERT_NE(~0ULL, e0) TH_LOG("no %s", SC_STATS_FILE);
	/* the sleep's looks, and the few while the thread spun */
	bound = CPUTIME_SLEEP_MS * 1000ULL / CPUTIME_MIN_US * 5 / 4 + 10;
	ksft_print_msg("%llu timer expiries, the thread asleep %d ms (bound %llu)\n",
		       (unsigned long long)(e1 - e0), CPUTIME_SLEEP_MS,
		       (unsigned long long)bound);
	EXPECT_GE(bound, e1 - e0);
}

/*
 * A CPU-time watch counts only the thread's time on a CPU: a long sleep is
 * not a stall, spinning for the timeout is, and the sample says so.
 */
TEST_F(arm, cputime_watch_blames_spinning_not_sleeping)
{
	struct sc_stopper st = { .cpu = -1 };
	const struct stallcap_sample *r;
	uint64_t t_spin, cpu0, used, stalls;

	if (!(self->s.info.features & STALLCAP_FEAT_CPUTIME))
		SKIP(return, "no STALLCAP_FEAT_CPUTIME");
	ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, 1, SC_WAIT_MS));
	cpu0 = thread_cpu_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, self->timeout, STALLCAP_ARM_CPUTIME, TAG + 5));
	sc_sleep_ms(10 * self->timeout / SC_NSEC_PER_MSEC);
	stalls = SC_STAT(self->s.fd, stalls);
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));

	t_spin = sc_now_ns();
	used = thread_cpu_ns() - cpu0;	/* CPU time already counted */
	/*
	 * Asleep, the thread is charged nothing but its wake-up and these
	 * calls: no stall.  Unless they took the whole budget (the debug
	 * kernel under TCG charged one 64.7 ms of CPU time for them, CI35):
	 * then the stall is the thread's, and the checks below know it.
	 */
	if (used + SC_MS(1) < self->timeout) {
		EXPECT_EQ(0, stalls) TH_LOG("a sleeping thread was blamed (%llu ns of CPU time used)",
					    (unsigned long long)used);
	} else {
		TH_LOG("the sleep's wake-up and calls used %llu ns of CPU time: %llu stalls",
		       (unsigned long long)used, (unsigned long long)stalls);
	}
	spin_in_user_caller(&st.stop);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	sc_stopper_join(&st);
	ASSERT_FALSE(st.timed_out);

	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	EXPECT_EQ(STALLCAP_CLOCK_CPUTIME, r->clock);
	EXPECT_EQ(self->timeout, r->timeout_ns);
	EXPECT_EQ(TAG + 5, r->user_tag);
	/*
	 * Over budget while on its CPU, or preempted from the spin by another
	 * thread of the guest just as the budget ran out: either way the
	 * thread's own frame 0 is the spin, never a sleep.  Unless the budget
	 * ran out before the spin: the debug kernel under TCG once charged the
	 * thread its whole budget in the sleep's wake-up and the two statistics
	 * calls after it (CI5: captured in GET_STATS); then the thread must
	 * really have used it by the spin's start.
	 */
	EXPECT_TRUE(r->state == STALLCAP_STATE_RUNNING ||
		    r->state == STALLCAP_STATE_RUNNABLE)
		TH_LOG("state %u", r->state);
	if (r->capture_ns < t_spin)
		EXPECT_LE(self->timeout, used + SC_MS(1))
			TH_LOG("captured %llu ns before the spin with %llu ns of CPU time used",
			       (unsigned long long)(t_spin - r->capture_ns),
			       (unsigned long long)used);
	/*
	 * Spent before the spin, the budget's stall may be captured on the
	 * way into it too (CI37, debug: 12 ms late, in the page fault of the
	 * spin's first instructions), so frame 0 is the spin only otherwise.
	 */
	if (self->timeout <= used + SC_MS(1))
		TH_LOG("budget spent before the spin (%llu ns): frame 0 not checked",
		       (unsigned long long)used);
	else
		EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user))
			TH_LOG("frame 0 at %#llx (spin_in_user at %p), state %u, path %u, flags %#x, "
			       "captured %lld ns after the spin began, %llu ns of CPU time before it",
			       (unsigned long long)sc_regs(r)->ip, (void *)spin_in_user, r->state,
			       r->path, r->flags, (long long)(r->capture_ns - t_spin),
			       (unsigned long long)used);
	/* the rest of the budget was spent spinning (1 ms for accounting) */
	if (used < self->timeout)
		EXPECT_LE(t_spin + (self->timeout - used) - SC_MS(1), r->capture_ns)
			TH_LOG("%llu ns of CPU time before the spin",
			       (unsigned long long)used);
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	if (_metadata->exit_code)
		sc_log_records(NULL, &self->rs);
}

/*
 * A CPU-time watch whose thread shares its CPU with a hog: at each of the
 * watch's looks the thread is on the CPU or waiting for it, about half and
 * half, and either way the look must count the CPU time it used.  The
 * module once measured a running thread's pending slice from the
 * scheduler's task clock to sched_clock, which differ by all interrupt
 * time since boot with IRQ_TIME_ACCOUNTING (the debug kernel; capped at
 * 1 s): the base taken at the arm, on the CPU, held 1 s too much, and a
 * look while the thread waited found nothing used and waited a whole
 * budget more: the stall was caught late, by half a budget of the
 * thread's CPU time or more, or not within two budgets (the debug kernel:
 * 126 ms, 172 ms, none).  Four rounds: each stall is caught within two
 * budgets and not before the budget, and the median round with the
 * thread's CPU time at most 1.4 times it (the fixed module on debug: 103
 * to 120 ms of a 100 ms budget).  A host that stops the vCPU while the
 * thread runs charges the thread: one round of four at 144-162 ms was seen
 * on a loaded CI host (CI113, CI114), never the median.
 */
#define SHARED_BUDGET_NS	SC_MS(100)
#define SHARED_ROUNDS		4
#define SHARED_WALL_MS		4000

/* Spin until the thread used @until_ns of CPU time; its CPU time each ms. */
static void spin_logging_cputime(uint64_t wall0, uint64_t cpu0, uint64_t until_ns,
				 uint64_t *at_ms)
{
	uint64_t cpu, ms;

	do {
		cpu = thread_cpu_ns() - cpu0;
		ms = (sc_now_ns() - wall0) / SC_NSEC_PER_MSEC;
		if (ms < SHARED_WALL_MS)
			at_ms[ms] = cpu;
	} while (cpu < until_ns && ms < SHARED_WALL_MS);
}

/* The thread's CPU time at @t (ns), from the spin's log; ~0 if past it. */
static uint64_t cputime_at(const uint64_t *at_ms, uint64_t wall0, uint64_t t)
{
	uint64_t ms = t > wall0 ? (t - wall0) / SC_NSEC_PER_MSEC : 0, best = ~0ULL;

	for (; ms < SHARED_WALL_MS; ms++)
		if (at_ms[ms]) {
			best = at_ms[ms];
			break;
		}
	return best;
}

/* The median of @n (even) values: the higher of the middle two. */
static uint64_t median_high(uint64_t *v, int n)
{
	int i, j;
	uint64_t t;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

TEST_F(arm, cputime_watch_sharing_its_cpu_counts_every_look)
{
	static uint64_t at_ms[SHARED_WALL_MS];
	const struct stallcap_sample *r;
	uint64_t wall0, cpu0, used, used_by_round[SHARED_ROUNDS];
	int cpu = sched_getcpu(), round;
	cpu_set_t set;
	pid_t hog;

	if (!(self->s.info.features & STALLCAP_FEAT_CPUTIME))
		SKIP(return, "no STALLCAP_FEAT_CPUTIME");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	hog = fork();
	ASSERT_LE(0, hog);
	if (!hog) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			__asm__ volatile("" ::: "memory");
	}
	for (round = 1; round <= SHARED_ROUNDS; round++) {
		memset(at_ms, 0, sizeof(at_ms));
		wall0 = sc_now_ns();
		cpu0 = thread_cpu_ns();
		ASSERT_EQ(0, sc_arm(self->s.fd, SHARED_BUDGET_NS, STALLCAP_ARM_CPUTIME, TAG + 7));
		spin_logging_cputime(wall0, cpu0, 2 * SHARED_BUDGET_NS, at_ms);
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_SAMPLE, 1,
					     SC_WAIT_MS));
		r = sc_first_sample_of(&self->rs, sc_gettid());
		ASSERT_NE(NULL, r);
		used = cputime_at(at_ms, wall0, r->capture_ns);
		ksft_print_msg("round %d: caught at %llu ms of CPU time, %llu ms after the arm\n",
			       round, (unsigned long long)(used / SC_NSEC_PER_MSEC),
			       (unsigned long long)((r->capture_ns - wall0) / SC_NSEC_PER_MSEC));
		EXPECT_GE(2 * SHARED_BUDGET_NS, used)
			TH_LOG("round %d: the stall was caught after two budgets", round);
		EXPECT_LE(SHARED_BUDGET_NS - SC_MS(2), used)
			TH_LOG("round %d: the stall was caught early", round);
		used_by_round[round - 1] = used;
		sc_records_free(&self->rs);
		sc_session_close(&self->s);
		ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	}
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	used = median_high(used_by_round, SHARED_ROUNDS);
	EXPECT_GE(SHARED_BUDGET_NS * 7 / 5, used)
		TH_LOG("the stalls were caught late: %llu ms of CPU time in the median round",
		       (unsigned long long)(used / SC_NSEC_PER_MSEC));
}

TEST_HARNESS_MAIN
