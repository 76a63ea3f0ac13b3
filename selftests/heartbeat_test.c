// SPDX-License-Identifier: GPL-2.0
/*
 * Heartbeat watches: a thread that marks progress with a plain store in its
 * beat slot is never reported while it beats, nor while it says it is idle;
 * when it stops beating (busy, or asleep without saying idle) it is captured
 * within two thresholds of its last beat, where it stopped, and a stall-end
 * record follows as soon as it beats again.
 *
 * Host noise (see stall_util.h): the thread measures the gaps between its
 * own progress marks, the records give the module's timer times; an attempt
 * whose only failure they explain is run again.  A stall reported although
 * the thread never went a threshold without progress, or a late detection
 * with on-time timers, fails at once.
 */
#include <sys/resource.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#include "stall_util.h"

/*
 * Threshold: detection must come within 2T of the last beat and normally
 * comes by 1.25T: T = 100 ms leaves 75 ms for timer slack on a loaded TCG
 * host (50 ms left too little: timers 40-80 ms late were seen).
 */
#define HB_T		SC_MS(100)
#define HB_CHECK	(HB_T / 4)		/* the module's check period */
#define HB_PERIOD	(100 * 1000ULL)		/* a beat every 100 us */
#define TAG		0x6865617274626561ULL

int main(int argc, char **argv);	/* TEST_HARNESS_MAIN's, reached by the FP walk */

static const char *const sleep_fns[] = {
	"do_nanosleep", "hrtimer_nanosleep", "__x64_sys_nanosleep",
	"__x64_sys_clock_nanosleep", "common_nsleep", NULL,
};

/*
 * Where the test thread gets stuck: spins without beating until *@stop.
 * A leaf that takes its frame address, so that it has a frame of its own
 * and the FP walk goes on through its caller.
 */
SC_NOINLINE void hb_stuck_here(const volatile int *stop)
{
	sc_spin_frame = __builtin_frame_address(0);
	while (!*stop)
		sc_spin_count++;
}

FIXTURE(hb) {
	struct sc_session s;
	struct sc_records rs;
	struct stallcap_slot *slots;
	size_t slots_len;
	struct sc_ksyms ks;
	bool have_ks;
	int cpu, other_cpu;
};

static void hb_close(FIXTURE_DATA(hb) *self)
{
	if (self->slots)
		munmap(self->slots, self->slots_len);
	self->slots = NULL;
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

static int hb_open(FIXTURE_DATA(hb) *self)
{
	int ret = sc_session_setup(&self->s, NULL);

	if (ret)
		return ret;
	self->slots = sc4_map_beats(&self->s, &self->slots_len);
	return self->slots ? 0 : -errno;
}

FIXTURE_SETUP(hb)
{
	ASSERT_EQ(0, hb_open(self)) TH_LOG("session and beat slots: %s", strerror(errno));
	if (!(self->s.info.features & STALLCAP_FEAT_HEARTBEAT))
		SKIP(return, "module without heartbeat watches");
	ASSERT_LE(self->s.info.min_deadline_ns, HB_CHECK);
	self->have_ks = !sc_ksyms_load(&self->ks) &&
			(self->s.info.features & STALLCAP_FEAT_KADDR);
	/* the watched thread on one CPU, the stopper and collector on another */
	self->cpu = 0;
	self->other_cpu = sc_nr_cpus_allowed() > 1 ? 1 : -1;
	ASSERT_EQ(0, sc_pin_self(self->cpu));
}

static void hb_cpu1_back(void);

FIXTURE_TEARDOWN(hb)
{
	hb_cpu1_back();	/* a failed hotplug case */
	if (_metadata->exit_code && self->rs.n)
		sc_log_records(&self->ks, &self->rs);
	sc_ksyms_free(&self->ks);
	hb_close(self);
}

/* Run @fn until it is not disturbed by the host, in a fresh session each time. */
#define HB_RUN(fn) SC4_RETRY(fn(_metadata, self), {				\
	hb_close(self);								\
	ASSERT_EQ(0, hb_open(self));						\
})

/* Arm a heartbeat watch for the calling thread; returns its slot. */
static struct stallcap_slot *hb_arm(struct __test_metadata *_metadata,
					 FIXTURE_DATA(hb) *self, uint64_t *armed)
{
	struct stallcap_slot *b;
	int slot;

	*armed = sc_now_ns();
	slot = sc_arm(self->s.fd, HB_T, STALLCAP_ARM_HEARTBEAT, TAG);
	if (slot < 0) {
		TH_LOG("ARM HEARTBEAT: %s", strerror(errno));
		return NULL;
	}
	if (slot >= (int)self->s.cfg.slots) {
		TH_LOG("slot %d beyond slots %u", slot, self->s.cfg.slots);
		return NULL;
	}
	b = &self->slots[slot];
	EXPECT_EQ(1, __atomic_load_n(&b->armed, __ATOMIC_RELAXED));
	EXPECT_EQ(sc_gettid(), (pid_t)__atomic_load_n(&b->tid, __ATOMIC_RELAXED));
	EXPECT_EQ(0, b->idle);
	EXPECT_EQ(0, b->beats);
	return b;
}

/*
 * No stall so far, unless the thread itself went @max_gap >= T without
 * progress (the host stopped its CPU): then the attempt is disturbed.
 */
static enum sc4_result hb_quiet(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self,
			       uint64_t max_gap, const char *what)
{
	struct stallcap_stats st;

	if (sc_ring_drain(&self->s, &self->rs) < 0) {
		EXPECT_EQ(0, self->rs.err[0]) TH_LOG("%s", self->rs.err);
		return SC4_OK;
	}
	EXPECT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_EQ(1, st.armed);
	if (!st.stalls && !self->rs.n)
		return SC4_OK;
	if (max_gap >= HB_T) {
		TH_LOG("%s: a stall, but the thread itself went %.1f ms without progress",
		       what, max_gap / 1e6);
		return SC4_NOISY;
	}
	EXPECT_EQ(0, st.stalls) TH_LOG("%s: a stall although the thread never went more "
				       "than %.1f ms without progress", what, max_gap / 1e6);
	EXPECT_EQ(0, self->rs.n);
	return SC4_OK;
}

/*
 * Beat every 100 us for @dur_ns, then check that no stall came.  When the
 * host stopped the thread for a threshold or more in the last stretch,
 * beat on a few check periods first, so that the stall the module then
 * rightly reports comes now (the attempt is disturbed), not later.
 */
static enum sc4_result hb_beat_phase(struct __test_metadata *_metadata,
				     FIXTURE_DATA(hb) *self, struct stallcap_slot *b,
				     uint64_t dur_ns, uint64_t *last, uint64_t *nr_beats,
				     const char *what)
{
	uint64_t gap, max_gap;

	max_gap = gap = sc4_beat_for(b, dur_ns, HB_PERIOD, last, nr_beats);
	for (int i = 0; i < 5 && gap >= HB_T; i++) {
		gap = sc4_beat_for(b, 3 * HB_CHECK, HB_PERIOD, last, nr_beats);
		if (gap > max_gap)
			max_gap = gap;
	}
	if (max_gap >= HB_T)
		TH_LOG("%s: the thread itself went %.1f ms without progress", what,
		       max_gap / 1e6);
	if (gap >= HB_T)
		return SC4_NOISY;
	return hb_quiet(_metadata, self, max_gap, what);
}

/* Has the thread gone a threshold without progress since @last? */
static bool hb_gap_since(uint64_t last)
{
	uint64_t gap = sc_now_ns() - last;

	if (gap < HB_T)
		return false;
	fprintf(stderr, "# the thread itself went %.1f ms without progress\n", gap / 1e6);
	return true;
}

/*
 * Detection of a stall whose last progress was at @last: a full threshold
 * without progress (never earlier), and within two thresholds.  Late beyond
 * two thresholds is the host's doing when the module's own timers show it:
 * the check that saw the last progress, or the one that detected the stall,
 * came more than a check period late.
 */
static enum sc4_result hb_detection(struct __test_metadata *_metadata,
				   const struct stallcap_sample *r, uint64_t last)
{
	TH_LOG("detected %.1f ms after the last progress (deadline %+.1f ms, threshold %llu ms)",
	       (double)(int64_t)(r->capture_ns - last) / 1e6,
	       (double)(int64_t)(r->deadline_ns - last) / 1e6, HB_T / SC_NSEC_PER_MSEC);
	EXPECT_LE(last + HB_T, r->deadline_ns)
		TH_LOG("deadline %.1f ms after the last progress, threshold %llu ms",
		       (double)(int64_t)(r->deadline_ns - last) / 1e6, HB_T / SC_NSEC_PER_MSEC);
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	EXPECT_LE(last + HB_T, r->capture_ns);
	if (r->capture_ns < last + 2 * HB_T)
		return SC4_OK;
	if (r->capture_ns - r->deadline_ns > HB_CHECK ||
	    r->deadline_ns > last + HB_T + HB_CHECK) {
		TH_LOG("detected %.1f ms after the last progress: timers late by the host",
		       (r->capture_ns - last) / 1e6);
		return SC4_NOISY;
	}
	EXPECT_GT(last + 2 * HB_T, r->capture_ns)
		TH_LOG("detected %.1f ms after the last progress with timers on time",
		       (r->capture_ns - last) / 1e6);
	return SC4_OK;
}

/*
 * The one stall of this session: its samples are 0..n-1 of one stall id and
 * it ended with a stall-end record counting them.  Returns its first sample.
 */
static const struct stallcap_sample *hb_one_stall(struct __test_metadata *_metadata,
						  FIXTURE_DATA(hb) *self,
						  const struct stallcap_stall_end **endp)
{
	const struct stallcap_sample *first = sc_first_sample_of(&self->rs, sc_gettid());
	const struct stallcap_sample *smp[SC_MAX_SAMPLES];
	const struct stallcap_stall_end *end;
	bool ordered;
	size_t n;

	*endp = NULL;
	if (!first)
		return NULL;
	n = sc4_samples_of(&self->rs, first->stall_id, smp, SC_MAX_SAMPLES, &ordered);
	EXPECT_EQ(n, sc_records_count(&self->rs, STALLCAP_REC_SAMPLE)) TH_LOG("several stalls");
	EXPECT_TRUE(ordered) TH_LOG("sample indexes not 0..%zu in ring order", n - 1);
	for (size_t i = 1; i < n && i < SC_MAX_SAMPLES; i++) {
		EXPECT_EQ(first->deadline_ns, smp[i]->deadline_ns);
		EXPECT_LE(smp[i - 1]->capture_ns, smp[i]->capture_ns);
		EXPECT_EQ(STALLCAP_CLOCK_HEARTBEAT, smp[i]->clock);
	}
	end = sc_stall_end_of(&self->rs, first->stall_id);
	EXPECT_EQ(1, sc_records_count(&self->rs, STALLCAP_REC_STALL_END));
	if (end) {
		EXPECT_EQ(first->tid, end->tid);
		EXPECT_EQ(first->pid, end->pid);
		EXPECT_EQ(TAG, end->user_tag);
		EXPECT_EQ(first->deadline_ns, end->deadline_ns);
		EXPECT_EQ(n, end->nr_samples);
		EXPECT_LE(smp[n - 1]->capture_ns, end->end_ns);
	}
	*endp = end;
	return first;
}

/* Common fields of a heartbeat stall's first sample. */
static void hb_check_first(struct __test_metadata *_metadata, const struct stallcap_sample *r)
{
	char comm[16];

	sc_get_comm(comm);
	EXPECT_EQ(getpid(), (pid_t)r->pid);
	EXPECT_EQ(sc_gettid(), (pid_t)r->tid);
	EXPECT_EQ(0, strncmp(comm, r->comm, 16));
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(HB_T, r->timeout_ns);
	EXPECT_EQ(STALLCAP_CLOCK_HEARTBEAT, r->clock);
	EXPECT_EQ(0, r->sample_index);
	EXPECT_EQ(0, r->suppressed);
}

/*
 * The stall ended when the thread beat again at @resume: seen by the next
 * check, a period later plus slack; later only when the host held the
 * check timer (no check at all ran: no other sample came either).
 */
static enum sc4_result hb_check_end(struct __test_metadata *_metadata,
				    const struct stallcap_sample *r,
				    const struct stallcap_stall_end *end, uint64_t resume)
{
	ASSERT_NE(NULL, end);
	EXPECT_LE(resume, end->end_ns);
	EXPECT_LE(r->deadline_ns, end->end_ns);
	if (end->end_ns < resume + HB_CHECK + SC_MAX_LATENESS_NS)
		return SC4_OK;
	TH_LOG("stall end seen %.1f ms after the beat: check timer held by the host",
	       (end->end_ns - resume) / 1e6);
	return SC4_NOISY;
}

/*
 * Beating every 100 us for 2 s: never a stall.  Then stuck in a known
 * function without beating: captured there (frame 0 in it, the walk up to
 * main), between one and two thresholds after the last beat; beating again
 * ends the stall.
 */
static enum sc4_result stuck_loop(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self)
{
	struct sc_stopper st = { .cpu = self->other_cpu };
	const struct stallcap_stall_end *end = NULL;
	const struct stallcap_sample *r, *u;
	const struct stallcap_sec_times *times;
	struct stallcap_slot *b;
	uint64_t nr_beats = 0, last, resume;

	b = hb_arm(_metadata, self, &last);
	ASSERT_NE(NULL, b);
	if (hb_beat_phase(_metadata, self, b, 2 * SC_NSEC_PER_SEC, &last, &nr_beats,
			  "beating every 100 us") != SC4_OK)
		return SC4_NOISY;
	EXPECT_EQ(nr_beats, b->beats);
	TH_LOG("%llu beats in 2 s and no stall", (unsigned long long)nr_beats);

	/* the last beat, then stuck until the stopper sees one sample */
	ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, 1, SC_WAIT_MS));
	if (hb_gap_since(last)) {
		st.stop = 1;
		sc_stopper_join(&st);
		return SC4_NOISY;
	}
	last = sc_now_ns();
	sc4_beat(b);
	hb_stuck_here(&st.stop);
	resume = sc_now_ns();
	sc4_beat(b);
	sc4_set_idle(b, 1);		/* waiting for the records, by design */
	sc_stopper_join(&st);
	ASSERT_FALSE(st.timed_out) TH_LOG("no capture within %d ms", SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	sc4_set_idle(b, 0);
	ASSERT_EQ(0, sc_release(self->s.fd));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);

	r = hb_one_stall(_metadata, self, &end);
	ASSERT_NE(NULL, r) TH_LOG("no first sample of this thread");
	hb_check_first(_metadata, r);
	if (hb_detection(_metadata, r, last) != SC4_OK)
		return SC4_NOISY;
	times = (const void *)sc_section(r, STALLCAP_SEC_TIMES);
	ASSERT_NE(NULL, times);
	/*
	 * Its time breakdown starts after the last beat, at the check that saw
	 * it or (the counters' snapshot put off) the next one: within the
	 * first half of the threshold that ended at the deadline.
	 */
	EXPECT_LE(last, times->since_ns)
		TH_LOG("interval from %.1f ms before the last beat",
		       (double)(int64_t)(last - times->since_ns) / 1e6);
	if (times->since_ns > r->deadline_ns - HB_T / 2) {
		/* a later start is a check the host delayed: another attempt */
		TH_LOG("interval from %.1f ms after the last beat",
		       (double)(int64_t)(times->since_ns - last) / 1e6);
		return SC4_NOISY;
	}
	/* on its CPU, or preempted there: the user registers are the same */
	EXPECT_TRUE(r->state == STALLCAP_STATE_RUNNING || r->state == STALLCAP_STATE_RUNNABLE)
		TH_LOG("state %u", r->state);

	/* where: in hb_stuck_here, called from this test, from main */
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, hb_stuck_here))
		TH_LOG("regs.ip %#llx is in %s", (unsigned long long)sc_regs(r)->ip,
		       sc_usym_name(sc_regs(r)->ip) ?: "?");
	u = sc4_user_frames_of(&self->rs, r);
	ASSERT_NE(NULL, u) TH_LOG("user frames deferred, but no USER_STACK record");
	EXPECT_EQ(0, sc_ustack_find(u, hb_stuck_here));
	EXPECT_LT(1, sc_ustack_find(u, main)) TH_LOG("main not reached by the FP walk");

	sc4_check_counters(&self->s, &self->rs);
	return hb_check_end(_metadata, r, end, resume);
}

TEST_F(hb, beats_keep_it_quiet_and_a_stuck_loop_is_caught_in_its_function)
{
	HB_RUN(stuck_loop);
}

/*
 * Marking idle is progress: a thread that says it is idle and sleeps 1 s
 * (10 thresholds) is not reported.
 */
static enum sc4_result idle_sleep(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self)
{
	struct stallcap_slot *b;
	uint64_t last;

	b = hb_arm(_metadata, self, &last);
	ASSERT_NE(NULL, b);
	if (hb_beat_phase(_metadata, self, b, 4 * HB_T, &last, NULL, "beating") != SC4_OK)
		return SC4_NOISY;
	sc4_set_idle(b, 1);
	if (hb_gap_since(last))
		return SC4_NOISY;
	sc_sleep_ms(1000);
	last = sc_now_ns();
	sc4_set_idle(b, 0);
	sc4_beat(b);
	if (hb_beat_phase(_metadata, self, b, 4 * HB_T, &last, NULL, "idle for 1 s") != SC4_OK)
		return SC4_NOISY;
	EXPECT_EQ(0, sc_release(self->s.fd));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);
	EXPECT_EQ(0, self->rs.n);
	sc4_check_counters(&self->s, &self->rs);
	return SC4_OK;
}

TEST_F(hb, idle_sleeper_is_not_reported)
{
	HB_RUN(idle_sleep);
}

/*
 * The last beat, then a 1 s sleep without one, not marked idle: the stall
 * is caught during the sleep, asleep.  Returns its first sample (its end
 * in *@endp; the beat after the sleep at *@resume), or NULL when the host
 * stopped the thread for a threshold before the last beat (noisy).
 */
static const struct stallcap_sample *
hb_sleep_unbeaten(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self,
		  struct stallcap_slot *b, uint64_t *last, uint64_t *resume,
		  const struct stallcap_stall_end **endp)
{
	const struct stallcap_sample *r;

	if (hb_gap_since(*last))
		return NULL;
	*last = sc_now_ns();
	sc4_beat(b);
	sc_sleep_ms(1000);
	*resume = sc_now_ns();
	sc4_beat(b);
	sc4_set_idle(b, 1);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS)) TH_LOG("the sleep was not reported");
	sc4_set_idle(b, 0);
	ASSERT_EQ(0, sc_release(self->s.fd));
	/* a sample read remotely asks for the user stack on return: let it come */
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);

	r = hb_one_stall(_metadata, self, endp);
	ASSERT_NE(NULL, r) TH_LOG("no first sample of this thread");
	hb_check_first(_metadata, r);
	/* the issue asks 2T of a stuck loop only; asleep, it must come in the sleep */
	EXPECT_LE(*last + HB_T, r->deadline_ns);
	EXPECT_LE(*last + HB_T, r->capture_ns);
	EXPECT_GT(*resume, r->capture_ns) TH_LOG("not detected during the 1 s sleep");
	TH_LOG("detected %.1f ms after the last beat", (r->capture_ns - *last) / 1e6);
	EXPECT_EQ(STALLCAP_STATE_SLEEPING, r->state);
	return r;
}

/*
 * The same sleep without marking idle is a stall: captured asleep (state
 * SLEEPING, read remotely, in nanosleep) while it sleeps, then ended by the
 * next beat.
 */
static enum sc4_result busy_sleep(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self)
{
	const struct stallcap_stall_end *end = NULL;
	const struct stallcap_sample *r;
	struct stallcap_slot *b;
	uint64_t last, resume;

	b = hb_arm(_metadata, self, &last);
	ASSERT_NE(NULL, b);
	if (hb_beat_phase(_metadata, self, b, 4 * HB_T, &last, NULL, "beating") != SC4_OK)
		return SC4_NOISY;
	r = hb_sleep_unbeaten(_metadata, self, b, &last, &resume, &end);
	if (!r)
		return SC4_NOISY;
	EXPECT_EQ(STALLCAP_PATH_BLOCKED, r->path);
	EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_USER_MODE);
	EXPECT_LE(3, sc_nk(r));
	if (self->have_ks) {
		EXPECT_TRUE(sc_kstack_has(&self->ks, r, sleep_fns))
			TH_LOG("no kernel frame in nanosleep");
	}
	/* 1 s at T, 2T, 4T, 8T after the deadline: several samples */
	EXPECT_LE(2, end ? end->nr_samples : 0);
	sc4_check_counters(&self->s, &self->rs);
	return hb_check_end(_metadata, r, end, resume);
}

TEST_F(hb, sleeper_not_marked_idle_is_reported_sleeping)
{
	HB_RUN(busy_sleep);
}

/*
 * Going busy again after an idle period starts the threshold: a thread that
 * was idle for 1 s, then goes busy and gets stuck without a beat, is
 * reported once idle has been 0 for the threshold (uapi: "A stall is
 * reported once beats has not moved and idle has been 0 for the
 * threshold"), and within two thresholds.
 */
static enum sc4_result busy_after_idle_on(struct __test_metadata *_metadata,
					 FIXTURE_DATA(hb) *self, bool moved)
{
	struct sc_stopper st = { .cpu = moved ? self->cpu : self->other_cpu };
	const struct stallcap_stall_end *end = NULL;
	const struct stallcap_sample *r;
	struct stallcap_slot *b;
	uint64_t last, busy = 0;

	ASSERT_EQ(0, sc_pin_self(self->cpu));
	b = hb_arm(_metadata, self, &last);
	ASSERT_NE(NULL, b);
	if (hb_beat_phase(_metadata, self, b, 4 * HB_T, &last, NULL, "beating") != SC4_OK)
		return SC4_NOISY;
	sc4_set_idle(b, 1);
	if (hb_gap_since(last))
		return SC4_NOISY;
	/* the stopper first: its start must not delay the busy store */
	ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, 1, SC_WAIT_MS));
	/* idle, off CPU 0 (its watch parked there), to run on the other */
	if (moved)
		ASSERT_EQ(0, sc_pin_self(self->other_cpu));
	sc_sleep_ms(1000);
	/*
	 * The moment idle goes 0, read closely around the store: if the
	 * thread lost its CPU in between (the clock is a system call under
	 * TCG), it goes idle again and retries.
	 */
	for (int i = 0; i < 100; i++) {
		uint64_t lo = sc_now_ns(), hi;

		sc4_set_idle(b, 0);
		hi = sc_now_ns();
		busy = lo;
		if (hi - lo < SC_MS(1))
			break;
		sc4_set_idle(b, 1);
	}
	hb_stuck_here(&st.stop);
	sc4_beat(b);
	sc4_set_idle(b, 1);
	sc_stopper_join(&st);
	ASSERT_FALSE(st.timed_out) TH_LOG("no capture within %d ms", SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	sc4_set_idle(b, 0);
	ASSERT_EQ(0, sc_release(self->s.fd));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);

	r = hb_one_stall(_metadata, self, &end);
	ASSERT_NE(NULL, r) TH_LOG("no first sample of this thread");
	hb_check_first(_metadata, r);
	if (hb_detection(_metadata, r, busy) != SC4_OK)
		return SC4_NOISY;
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, hb_stuck_here));
	if (moved)
		EXPECT_EQ((uint32_t)self->other_cpu, r->cpu);
	sc4_check_counters(&self->s, &self->rs);
	return SC4_OK;
}

static enum sc4_result busy_after_idle(struct __test_metadata *_metadata,
				      FIXTURE_DATA(hb) *self)
{
	return busy_after_idle_on(_metadata, self, false);
}

TEST_F(hb, busy_after_idle_is_reported_a_threshold_later)
{
	HB_RUN(busy_after_idle);
}

/*
 * The same when the thread went idle on one CPU and runs again on another:
 * its watch dozed on the first CPU's scanner and is checked again from the
 * second, its stall caught there, in its function.
 */
static enum sc4_result busy_after_idle_moved(struct __test_metadata *_metadata,
					    FIXTURE_DATA(hb) *self)
{
	return busy_after_idle_on(_metadata, self, true);
}

TEST_F(hb, busy_after_idle_on_another_cpu_is_reported_a_threshold_later)
{
	if (self->other_cpu < 0)
		SKIP(return, "needs 2 CPUs");
	HB_RUN(busy_after_idle_moved);
}

/*
 * A failing ARM changes nothing: with every beat slot taken, a thread with
 * a deadline watch asking for a heartbeat keeps its deadline watch, and a
 * thread without a watch gets none (not one left registered and charged).
 */
struct slot_taker {
	int fd;
	int home_fd;		/* read end of a pipe: EOF sends it home */
	int ret;
	volatile int done;
};

/*
 * Takes a slot and keeps it, asleep in read() until the pipe closes: the
 * debug kernel took a minute to create 64 takers that each woke every 5 ms.
 */
static void *slot_taker_fn(void *arg)
{
	struct slot_taker *t = arg;
	char c;

	t->ret = sc_arm(t->fd, SC_MS(60000), STALLCAP_ARM_HEARTBEAT, TAG);
	t->done = 1;
	while (read(t->home_fd, &c, 1) < 0 && errno == EINTR)
		;
	sc_release(t->fd);
	return NULL;
}

static void *one_more_fn(void *arg)
{
	struct slot_taker *t = arg;

	t->ret = sc_arm(t->fd, SC_MS(60000), STALLCAP_ARM_HEARTBEAT, TAG) ? -errno : 0;
	return NULL;
}

/*
 * One thread per slot (cfg.slots of them), each arming a heartbeat watch:
 * the debug kernel on a loaded host took longer than the harness's default
 * 30 s to create and arm them all.
 */
TEST_F_TIMEOUT(hb, failing_arm_leaves_nothing_behind, 180)
{
	unsigned int n = self->s.cfg.slots;
	struct slot_taker *t = calloc(n + 1, sizeof(*t));
	pthread_t *th = calloc(n + 1, sizeof(*th));
	struct stallcap_stats st;
	uint64_t watches;
	int home[2];

	ASSERT_NE(NULL, t);
	ASSERT_NE(NULL, th);
	ASSERT_EQ(0, pipe(home));
	ASSERT_EQ(0, sc_arm(self->s.fd, SC_MS(60000), 0, TAG));
	for (unsigned int i = 0; i < n; i++) {
		t[i] = (struct slot_taker){ .fd = self->s.fd, .home_fd = home[0] };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, slot_taker_fn, &t[i]));
	}
	for (unsigned int i = 0; i < n; i++) {
		while (!t[i].done)
			sc_sleep_ms(1);
		ASSERT_LE(0, t[i].ret) TH_LOG("slot taker %u: %s", i, strerror(errno));
	}
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	watches = st.watches;
	ASSERT_EQ(n + 1, watches);

	/* the deadline watch asks for a heartbeat: refused, and kept */
	EXPECT_EQ(-1, sc_arm(self->s.fd, SC_MS(60000), STALLCAP_ARM_HEARTBEAT, TAG));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, sc_rearm(self->s.fd, 0)) TH_LOG("deadline watch gone or changed: %s",
						      strerror(errno));

	/* a thread without a watch: refused, and no watch left behind */
	t[n] = (struct slot_taker){ .fd = self->s.fd, .home_fd = home[0] };
	ASSERT_EQ(0, pthread_create(&th[n], NULL, one_more_fn, &t[n]));
	pthread_join(th[n], NULL);
	EXPECT_EQ(-ENOSPC, t[n].ret);
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_EQ(watches, st.watches) TH_LOG("the refused ARM left a watch");

	close(home[1]);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	close(home[0]);
	EXPECT_EQ(0, sc_release(self->s.fd));
	free(t);
	free(th);
}

/*
 * ---- a CPU that goes offline with a watch parked on its scanner ----
 *
 * The watch was parked on CPU 1's scanner; its thread moves to CPU 0 and
 * CPU 1 goes offline (the kernel moves the scanner's pinned timer to a CPU
 * still online): beating keeps it quiet, and a sleep without a beat is
 * still caught during the sleep.  CPU 1 comes back: a watch parked there
 * again is checked there as before.
 */
#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"

static bool hb_cpu1_taken_offline;

static void hb_cpu1_back(void)
{
	if (hb_cpu1_taken_offline && !sc_write_bool(CPU1_ONLINE, 1))
		hb_cpu1_taken_offline = false;
}

/*
 * Beat on @cpu for a few thresholds (the watch is parked there), then on
 * CPU 0 with CPU 1 offline if @offline, then sleep 1 s without a beat: the
 * stall is caught during the sleep, asleep.
 */
static enum sc4_result hb_hotplug_round(struct __test_metadata *_metadata,
					FIXTURE_DATA(hb) *self, int cpu, bool offline)
{
	const struct stallcap_stall_end *end = NULL;
	const struct stallcap_sample *r;
	struct stallcap_slot *b;
	uint64_t last, resume;

	ASSERT_EQ(0, sc_pin_self(cpu));
	b = hb_arm(_metadata, self, &last);
	ASSERT_NE(NULL, b);
	if (hb_beat_phase(_metadata, self, b, 4 * HB_T, &last, NULL,
			  "beating on the first CPU") != SC4_OK)
		return SC4_NOISY;
	if (offline) {
		/*
		 * idle while the write takes the CPU down: hundreds of ms on a
		 * loaded debug guest (CI49), a stall of a busy thread
		 */
		sc4_set_idle(b, 1);
		ASSERT_EQ(0, sc_pin_self(0));
		ASSERT_EQ(0, sc_write_bool(CPU1_ONLINE, 0));
		hb_cpu1_taken_offline = true;
		sc4_set_idle(b, 0);
		last = sc_now_ns();
		sc4_beat(b);
		if (hb_beat_phase(_metadata, self, b, 4 * HB_T, &last, NULL,
				  "beating with CPU 1 offline") != SC4_OK)
			return SC4_NOISY;
	}
	r = hb_sleep_unbeaten(_metadata, self, b, &last, &resume, &end);
	if (!r)
		return SC4_NOISY;
	return hb_check_end(_metadata, r, end, resume);
}

static enum sc4_result hb_hotplug_offline(struct __test_metadata *_metadata,
					  FIXTURE_DATA(hb) *self)
{
	enum sc4_result res = hb_hotplug_round(_metadata, self, 1, true);

	hb_cpu1_back();
	return res;
}

static enum sc4_result hb_hotplug_back(struct __test_metadata *_metadata,
				       FIXTURE_DATA(hb) *self)
{
	return hb_hotplug_round(_metadata, self, 1, false);
}

TEST_F(hb, parked_watch_is_checked_when_its_cpu_goes_offline_and_back)
{
	if (geteuid() || self->other_cpu < 0 || access(CPU1_ONLINE, W_OK))
		SKIP(return, "needs root and CPU 1's hotplug");
	HB_RUN(hb_hotplug_offline);
	hb_cpu1_back();
	ASSERT_FALSE(hb_cpu1_taken_offline) TH_LOG("CPU 1 did not come back");
	hb_close(self);
	ASSERT_EQ(0, hb_open(self));
	HB_RUN(hb_hotplug_back);
}

/*
 * ---- the heartbeat scanner: one timer per CPU, not one per watch ----
 *
 * SCAN_WATCHES threads, spread over the CPUs, each hold a heartbeat watch
 * (2 ms: a check every 500 us) and wait by design (idle = 1, asleep 20 ms at
 * a time).  By default (beat_doze=1) a watch whose thread is off its CPU
 * marked idle is not checked until the thread runs again: the scanners then
 * check a watch only when a point of their grid falls while its thread is
 * awake, and take no timer interrupt while every watch dozes: far fewer
 * checks and expiries than with dozing off.  With dozing off (beat_doze=0)
 * no watch timer expires at all, the CPUs' scanners expire about once per
 * check period each, however many watches there are, and they check each
 * watch once per period.  The same threads with one timer per watch
 * (beat_scan=0) are run last: their timers expire once per watch and
 * period (as far as the CPUs keep up), which the counts tell apart.
 */
#define SCAN_WATCHES	32
#define SCAN_T		SC_MS(2)
#define SCAN_WINDOW_US	(1000 * 1000)
#define SCAN_EXPIRIES	"/sys/kernel/debug/stallcap/expiries"

struct scan_counts {
	unsigned long long watch, buddy, beat, checks;
	unsigned long long wakes;	/* the threads' wake-ups, whole round */
	uint64_t at;
};

/* Sum the module's per-CPU expiry counts; 0 or -1. */
static int scan_counts_read(struct scan_counts *c)
{
	unsigned long long w, b, r, s, k;
	FILE *f = fopen(SCAN_EXPIRIES, "r");
	char line[256];
	int cpu, lines = 0;

	if (!f)
		return -1;
	memset(c, 0, sizeof(*c));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "cpu%d watch %llu buddy %llu rescued %llu beat %llu checks %llu",
			   &cpu, &w, &b, &r, &s, &k) != 6)
			continue;
		c->watch += w;
		c->buddy += b;
		c->beat += s;
		c->checks += k;
		lines++;
	}
	fclose(f);
	c->at = sc_now_ns();
	return lines ? 0 : -1;
}

/* @d's counts: those of @c1 less those of @c0, over the time between */
static void scan_counts_sub(struct scan_counts *d, const struct scan_counts *c1,
			    const struct scan_counts *c0)
{
	d->watch = c1->watch - c0->watch;
	d->buddy = c1->buddy - c0->buddy;
	d->beat = c1->beat - c0->beat;
	d->checks = c1->checks - c0->checks;
	d->at = c1->at - c0->at;
}

/* The scanner tests' threshold: 2 ms, or 4 of the module's shortest */
static uint64_t scan_timeout(FIXTURE_DATA(hb) *self)
{
	return SCAN_T > 4 * self->s.info.min_deadline_ns ?
	       SCAN_T : 4 * self->s.info.min_deadline_ns;
}

struct scan_idler {
	pthread_t th;
	int fd, cpu, err;
	uint64_t timeout;
	unsigned int sleep_us;
	unsigned long wakes;
	struct stallcap_slot *slots;
	size_t nr_slots;
	volatile int *stop;
	pthread_barrier_t *armed;
};

static void *scan_idler_fn(void *arg)
{
	struct scan_idler *t = arg;
	int slot;

	sc_pin_self(t->cpu);
	slot = sc_arm(t->fd, t->timeout, STALLCAP_ARM_HEARTBEAT, TAG);
	if (slot < 0 || (size_t)slot >= t->nr_slots) {
		t->err = slot < 0 ? errno : ERANGE;
	} else {
		t->slots[slot].beats++;
		__atomic_store_n(&t->slots[slot].idle, 1, __ATOMIC_RELEASE);
	}
	pthread_barrier_wait(t->armed);
	/*
	 * One short sleep inside the settling time first: a watch whose
	 * thread the guest held for a threshold between its ARM and its idle
	 * mark (the debug kernel, CI92) stalled, and its timer parks it again
	 * at the stall's end while the thread sleeps: it dozes only at the
	 * thread's next switch out, which a 1 s sleep puts past the window.
	 */
	usleep(t->sleep_us < 50000 ? t->sleep_us : 50000);
	while (!*t->stop) {
		usleep(t->sleep_us);
		t->wakes++;
	}
	if (!t->err)
		sc_disarm(t->fd);
	return NULL;
}

/*
 * The counts of one window with @nr idle heartbeat watches (at most
 * SCAN_WATCHES), their threads asleep @sleep_us at a time.
 */
static void scan_round(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self,
		       int nr, unsigned int sleep_us, bool scan, bool doze,
		       uint64_t timeout, struct scan_counts *d)
{
	struct scan_idler t[SCAN_WATCHES] = {};
	struct scan_counts c0, c1;
	pthread_barrier_t armed;
	volatile int stop = 0;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	ASSERT_EQ(0, sc_param_set("beat_scan", scan));
	ASSERT_EQ(0, sc_param_set("beat_doze", doze));
	ASSERT_GE(SCAN_WATCHES, nr);
	ASSERT_EQ(0, pthread_barrier_init(&armed, NULL, nr + 1));
	for (int i = 0; i < nr; i++) {
		t[i] = (struct scan_idler){
			.fd = self->s.fd, .cpu = i % ncpu, .timeout = timeout,
			.sleep_us = sleep_us,
			.slots = self->slots, .nr_slots = self->s.cfg.slots,
			.stop = &stop, .armed = &armed,
		};
		ASSERT_EQ(0, pthread_create(&t[i].th, NULL, scan_idler_fn, &t[i]));
	}
	pthread_barrier_wait(&armed);
	usleep(100 * 1000);	/* every watch idle and parked (or timed) */
	ASSERT_EQ(0, scan_counts_read(&c0)) TH_LOG("no %s", SCAN_EXPIRIES);
	usleep(SCAN_WINDOW_US);
	ASSERT_EQ(0, scan_counts_read(&c1));
	stop = 1;
	d->wakes = 0;
	for (int i = 0; i < nr; i++) {
		pthread_join(t[i].th, NULL);
		EXPECT_EQ(0, t[i].err) TH_LOG("thread %d: ARM: %s", i, strerror(t[i].err));
		d->wakes += t[i].wakes;
	}
	pthread_barrier_destroy(&armed);
	scan_counts_sub(d, &c1, &c0);
}

TEST_F_TIMEOUT(hb, idle_watches_are_checked_by_one_scanner_per_cpu, 150)
{
	uint64_t timeout = scan_timeout(self);
	uint64_t period = timeout / 4;
	struct scan_counts dz, on, off;
	double periods;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	if (geteuid() != 0 || access(SCAN_EXPIRIES, R_OK))
		SKIP(return, "needs root and debugfs (%s)", SCAN_EXPIRIES);
	if (!sc_param_is("beat_scan", 'Y'))
		SKIP(return, "module without the heartbeat scanner on");
	ASSERT_TRUE(sc_param_is("beat_doze", 'Y')) TH_LOG("dozing is the default");
	ASSERT_LE(SCAN_WATCHES, (int)self->s.cfg.slots);
	scan_round(_metadata, self, SCAN_WATCHES, 20000, true, true, timeout, &dz);
	scan_round(_metadata, self, SCAN_WATCHES, 20000, true, false, timeout, &on);
	scan_round(_metadata, self, SCAN_WATCHES, 20000, false, true, timeout, &off);
	ASSERT_EQ(0, sc_param_set("beat_scan", true));
	ASSERT_EQ(0, sc_param_set("beat_doze", true));
	if (_metadata->exit_code)
		return;
	periods = (double)on.at / (double)period;
	TH_LOG("dozing: %llu watch timer expiries, %llu scanner expiries, %llu checks in %.0f periods x %d CPUs, %llu wake-ups",
	       dz.watch, dz.beat, dz.checks, (double)dz.at / (double)period, ncpu,
	       dz.wakes);
	TH_LOG("scanner, no dozing: %llu watch timer expiries, %llu scanner expiries, %llu checks in %.0f periods x %d CPUs",
	       on.watch, on.beat, on.checks, periods, ncpu);
	TH_LOG("a timer per watch: %llu watch timer expiries, %llu scanner expiries in %.0f periods",
	       off.watch, off.beat, (double)off.at / (double)period);
	/* with the scanner: no watch timer, one scanner expiry per CPU and period */
	EXPECT_EQ(0, on.watch);
	EXPECT_GE(ncpu * (periods + 10), (double)on.beat);
	EXPECT_LT(0, on.beat);
	/*
	 * each watch checked once per period at most (once per scanner
	 * expiry: the same slack as the expiries', which a host that stopped
	 * the guest can bunch: CI61's 5.10 had 11 periods' worth over 2,003),
	 * and checked all along
	 */
	EXPECT_GE(SCAN_WATCHES * (periods + 10), (double)on.checks);
	EXPECT_LE(SCAN_WATCHES * periods / 10, (double)on.checks);
	/*
	 * Dozing: the threads are awake some microseconds per 20 ms, so a
	 * check comes for a small part of their wake-ups only: far fewer than
	 * a check per watch and period.
	 */
	EXPECT_EQ(0, dz.watch);
	EXPECT_GE(on.checks / 10, dz.checks);
	/*
	 * and a scanner left with dozing watches lets its timer expire once
	 * more and stops there: an expiry is a check due, or the one a
	 * wake-up queued, never a timer that goes on by itself (one
	 * restarted at every expiry: one per period and CPU)
	 */
	EXPECT_GE(dz.checks + dz.wakes + dz.wakes / 10 + 10, dz.beat);
	/*
	 * fewer than the scanners that check all along, when those kept up
	 * with their periods: the debug kernel's run once per 4 periods and
	 * CPU (CI130: 1,099 of 4,196), under the dozing ones' wake-ups
	 */
	if (on.beat >= ncpu * periods / 2) {
		EXPECT_GT(on.beat, dz.beat);
	} else {
		TH_LOG("the scanners not dozing expired %llu times of %.0f: too slow a machine to compare",
		       on.beat, ncpu * periods);
	}
	/*
	 * One timer per watch: the counts tell it apart.  Those timers
	 * expire more often than the scanners, though far from once per watch
	 * and period where they saturate the CPUs (the debug kernel: 6,000 of
	 * the 64,000 asked for).
	 */
	EXPECT_EQ(0, off.beat);
	EXPECT_LT(on.beat, off.watch);
}

/*
 * An idle server: 4 threads, each an event loop waiting 1 s at a time
 * marked idle.  Their watches doze while they wait, and dozing watches do
 * not keep the buddy checkers running: the checkers stop 32 periods after
 * each wake-up, so the module's timers expire a small part of what they do
 * with dozing off (the checkers then run all along, 1,000 times a second
 * on each of their CPUs, and the scanners every 500 us).
 */
TEST_F_TIMEOUT(hb, idle_server_costs_almost_no_timer_interrupts, 90)
{
	uint64_t timeout = scan_timeout(self);
	unsigned long long dozing, awake;
	struct scan_counts dz, on;

	if (geteuid() != 0 || access(SCAN_EXPIRIES, R_OK))
		SKIP(return, "needs root and debugfs (%s)", SCAN_EXPIRIES);
	if (!sc_param_is("beat_scan", 'Y'))
		SKIP(return, "module without the heartbeat scanner on");
	scan_round(_metadata, self, 4, 1000 * 1000, true, true, timeout, &dz);
	scan_round(_metadata, self, 4, 1000 * 1000, true, false, timeout, &on);
	ASSERT_EQ(0, sc_param_set("beat_doze", true));
	if (_metadata->exit_code)
		return;
	dozing = dz.watch + dz.buddy + dz.beat;
	awake = on.watch + on.buddy + on.beat;
	TH_LOG("dozing: %llu watch timer, %llu buddy checker, %llu scanner expiries in %.2f s",
	       dz.watch, dz.buddy, dz.beat, dz.at / 1e9);
	TH_LOG("not dozing: %llu watch timer, %llu buddy checker, %llu scanner expiries in %.2f s",
	       on.watch, on.buddy, on.beat, on.at / 1e9);
	/* the checkers ran all along without dozing: the comparison holds */
	EXPECT_LE(on.at / 2000000, on.buddy);
	EXPECT_GE(awake / 4, dozing);
}

/*
 * A watch parked again while its thread sleeps dozes at once.  The thread
 * gets stuck without a beat (a stall, its watch handed to its own timer),
 * then beats, goes idle and sleeps 1 s: the stall's end is seen by that
 * timer while the thread sleeps, and the watch is parked again with its
 * thread off every CPU, after the switch out that dozes a watch.  It must
 * doze there and then (not be checked every period until the thread's next
 * switch out, as it was until stop 69: CI92's flake), and still wake at the
 * thread's switch in: stuck again, the thread is caught again.
 */
struct park_sleeper {
	pthread_t th;
	int fd, cpu, err;
	uint64_t timeout;
	struct stallcap_slot *slots;
	size_t nr_slots;
	int nice;		/* the sleeper's */
	volatile int phase;	/* 1: asleep after its stall; 2: done */
};

/*
 * Stuck for @ns, without a beat; on until the stall is caught, up to 8 ×
 * @ns: a host that stopped the guest's vCPU for all of @ns leaves no
 * moment to catch it in (CI99, 5.10, beside the debug kernel's build).
 */
static void park_sleeper_stuck(const struct park_sleeper *t, uint64_t ns)
{
	uint64_t start = sc_now_ns(), stalls = SC_STAT(t->fd, stalls), took;

	do {
		took = sc_now_ns() - start;
	} while (took < ns ||
		 (took < 8 * ns && SC_STAT(t->fd, stalls) == stalls));
}

static void *park_sleeper_fn(void *arg)
{
	struct park_sleeper *t = arg;
	struct stallcap_slot *b;
	int slot;

	sc_pin_self(t->cpu);
	if (t->nice && setpriority(PRIO_PROCESS, 0, t->nice)) {
		t->err = errno;
		t->phase = 2;
		return NULL;
	}
	slot = sc_arm(t->fd, t->timeout, STALLCAP_ARM_HEARTBEAT, TAG);
	if (slot < 0 || (size_t)slot >= t->nr_slots) {
		t->err = slot < 0 ? errno : ERANGE;
		t->phase = 2;
		return NULL;
	}
	b = &t->slots[slot];
	sc4_beat(b);
	park_sleeper_stuck(t, 8 * t->timeout);
	sc4_beat(b);
	sc4_set_idle(b, 1);
	t->phase = 1;
	usleep(1000 * 1000);
	sc4_set_idle(b, 0);
	park_sleeper_stuck(t, 8 * t->timeout);
	sc4_beat(b);
	sc4_set_idle(b, 1);
	sc_disarm(t->fd);
	t->phase = 2;
	return NULL;
}

struct park_hog {
	pthread_t th;
	int cpu;
	volatile int stop;
};

static void *park_hog_fn(void *arg)
{
	struct park_hog *h = arg;

	sc_pin_self(h->cpu);
	while (!h->stop)
		;
	return NULL;
}

/*
 * One round: the counts of 600 ms of the sleep, and the stalls caught.
 * @crowded: the sleeper at nice 19 shares its CPU with a hog at nice 0.
 */
static void park_round(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self,
		       bool doze, bool crowded, uint64_t timeout,
		       struct scan_counts *d, uint64_t *stalls)
{
	struct park_sleeper t = {
		.fd = self->s.fd, .cpu = self->cpu, .timeout = timeout,
		.slots = self->slots, .nr_slots = self->s.cfg.slots,
		.nice = crowded ? 19 : 0,
	};
	struct park_hog hog = { .cpu = self->cpu };
	struct stallcap_stats st0, st1;
	struct scan_counts c0, c1;

	ASSERT_EQ(0, sc_param_set("beat_scan", true));
	ASSERT_EQ(0, sc_param_set("beat_doze", doze));
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st0, 0));
	if (crowded)
		ASSERT_EQ(0, pthread_create(&hog.th, NULL, park_hog_fn, &hog));
	ASSERT_EQ(0, pthread_create(&t.th, NULL, park_sleeper_fn, &t));
	while (!t.phase)
		sc_sleep_ms(1);
	usleep(200 * 1000);	/* the stall's end seen, the watch parked */
	ASSERT_EQ(0, scan_counts_read(&c0)) TH_LOG("no %s", SCAN_EXPIRIES);
	usleep(600 * 1000);
	ASSERT_EQ(0, scan_counts_read(&c1));
	hog.stop = 1;
	if (crowded)
		pthread_join(hog.th, NULL);
	pthread_join(t.th, NULL);
	ASSERT_EQ(0, t.err) TH_LOG("ARM: %s", strerror(t.err));
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st1, 0));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);
	scan_counts_sub(d, &c1, &c0);
	*stalls = st1.stalls - st0.stalls;
}

/* Both rounds of a parked-again test: dozing, then not. */
static void park_rounds(struct __test_metadata *_metadata, FIXTURE_DATA(hb) *self,
			bool crowded)
{
	uint64_t timeout = scan_timeout(self);
	uint64_t dz_stalls, on_stalls;
	struct scan_counts dz, on;
	double periods;

	if (geteuid() != 0 || access(SCAN_EXPIRIES, R_OK))
		SKIP(return, "needs root and debugfs (%s)", SCAN_EXPIRIES);
	if (!sc_param_is("beat_scan", 'Y'))
		SKIP(return, "module without the heartbeat scanner on");
	park_round(_metadata, self, true, crowded, timeout, &dz, &dz_stalls);
	park_round(_metadata, self, false, crowded, timeout, &on, &on_stalls);
	ASSERT_EQ(0, sc_param_set("beat_doze", true));
	if (_metadata->exit_code)
		return;
	periods = (double)on.at / (double)(timeout / 4);
	TH_LOG("dozing: %llu stalls, %llu watch timer, %llu scanner expiries, %llu checks in %.0f periods",
	       (unsigned long long)dz_stalls, dz.watch, dz.beat, dz.checks,
	       (double)dz.at / (double)(timeout / 4));
	TH_LOG("not dozing: %llu stalls, %llu watch timer, %llu scanner expiries, %llu checks in %.0f periods",
	       (unsigned long long)on_stalls, on.watch, on.beat, on.checks, periods);
	/* both stalls caught: the one before the sleep, the one after it */
	EXPECT_LE(2, dz_stalls);
	EXPECT_LE(2, on_stalls);
	/* not dozing, the sleeper's watch is checked every period */
	EXPECT_LE(periods / 4, (double)on.checks);
	/* dozing, almost never: its thread sleeps all along */
	EXPECT_GE(on.checks / 20, dz.checks);
	EXPECT_GE(on.beat / 10, dz.beat);
}

TEST_F_TIMEOUT(hb, watch_parked_again_while_its_thread_sleeps_dozes, 60)
{
	park_rounds(_metadata, self, false);
}

/*
 * The same with the sleeper at nice 19 beside a hog at nice 0 on its CPU:
 * since 6.12 the fair class leaves a thread that blocks before its fair
 * share is used up queued, "delayed" (on_rq 1, se.sched_delayed), until
 * its turn comes: a low-weight thread that ran is far past its share, and
 * stays so for tens of ms, when its watch is parked again.  It sleeps all
 * the same, and must doze.
 */
TEST_F_TIMEOUT(hb, watch_parked_again_while_its_thread_waits_a_delayed_dequeue_dozes, 60)
{
	park_rounds(_metadata, self, true);
}

TEST_HARNESS_MAIN
