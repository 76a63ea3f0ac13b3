/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the heartbeat, sampling and deferred-stack selftests (issue 4),
 * on top of stallcap_test.h: beat slots, thread CPU time, a CPU hog pinned
 * next to a watched thread, and a check that a session's counters and
 * histograms agree with the records it delivered.
 *
 * Include after kselftest_harness.h: sc4_check_counters() uses its macros.
 */
#ifndef STALLCAP_STALL_UTIL_H
#define STALLCAP_STALL_UTIL_H

#include "stallcap_test.h"

/* ------------------------------------------------------------------------
 * Host noise
 *
 * Under TCG on a loaded host a guest CPU can stop for hundreds of
 * milliseconds: a thread then really goes that long without running, and a
 * timer really fires that late.  A timing check that fails only in a way
 * such a stop explains (the thread's own clock or CPU time shows it, or
 * the module's timers were all late, never early) marks its attempt NOISY:
 * it is run again in a fresh session, at most SC4_ATTEMPTS times.  Failed
 * expectations end the test at once, and a module that is always late
 * still fails.
 * ------------------------------------------------------------------------
 */

enum sc4_result { SC4_OK, SC4_NOISY };

#define SC4_ATTEMPTS	5

/*
 * Run @attempt (an expression of type enum sc4_result) until it is not
 * disturbed by the host; @reset (a statement) runs before each retry.
 */
#define SC4_RETRY(attempt, reset) do {						\
	enum sc4_result __r = SC4_NOISY;					\
	for (int __a = 1; __a <= SC4_ATTEMPTS; __a++) {				\
		if (__a > 1) {							\
			TH_LOG("attempt %d disturbed by the host, again", __a - 1); \
			reset;							\
		}								\
		__r = (attempt);						\
		if (__r == SC4_OK || _metadata->exit_code)			\
			break;							\
	}									\
	EXPECT_EQ(SC4_OK, __r) TH_LOG("%d attempts disturbed by the host", SC4_ATTEMPTS); \
} while (0)

/* ------------------------------------------------------------------------
 * Heartbeat slots
 * ------------------------------------------------------------------------
 */

/* Map the session's beat slots (cfg.slots of them); NULL on error. */
static inline struct stallcap_slot *sc4_map_beats(struct sc_session *s, size_t *len)
{
	void *p;

	*len = (size_t)s->cfg.slots * sizeof(struct stallcap_slot);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, STALLCAP_MMAP_SLOTS);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * The owner's side of the heartbeat contract: a plain (relaxed atomic) store
 * of beats + 1; only the owning thread writes beats and idle.
 */
static inline void sc4_beat(struct stallcap_slot *b)
{
	__atomic_store_n(&b->beats, __atomic_load_n(&b->beats, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

static inline void sc4_set_idle(struct stallcap_slot *b, int idle)
{
	__atomic_store_n(&b->idle, (__u32)idle, __ATOMIC_RELAXED);
}

/*
 * Beat every @period_ns (spinning in between, never sleeping) for @dur_ns,
 * from a last progress at *@last (updated: the CLOCK_MONOTONIC time read
 * just before the last beat's store).  Returns the longest time between two
 * progress marks the thread itself saw: when the host stalls the guest's
 * CPU for longer than the threshold, the module rightly sees no progress.
 */
static inline uint64_t sc4_beat_for(struct stallcap_slot *b, uint64_t dur_ns,
				    uint64_t period_ns, uint64_t *last, uint64_t *nr_beats)
{
	uint64_t start = sc_now_ns(), now = start, next = start, gap = 0;

	while (now - start < dur_ns) {
		if (now >= next) {
			if (now - *last > gap)
				gap = now - *last;
			*last = now;
			sc4_beat(b);
			if (nr_beats)
				(*nr_beats)++;
			next = now + period_ns;
		}
		now = sc_now_ns();
	}
	return gap;
}

/* ------------------------------------------------------------------------
 * Thread CPU time (the same sum_exec_runtime the module counts)
 * ------------------------------------------------------------------------
 */

static inline uint64_t sc4_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * SC_NSEC_PER_SEC + ts.tv_nsec;
}

/* Spin in user mode until the calling thread has used @cpu_ns more CPU time. */
static inline void sc4_burn_cpu(uint64_t cpu_ns)
{
	uint64_t end = sc4_thread_cpu_ns() + cpu_ns;

	while (sc4_thread_cpu_ns() < end)
		sc_spin_count++;
}

/* ------------------------------------------------------------------------
 * A hog: a thread pinned to a CPU that, each time it is kicked, spins for
 * a while (wall clock) there, SCHED_FIFO if asked, so that a SCHED_OTHER
 * thread pinned to the same CPU stays runnable but gets no CPU.
 * ------------------------------------------------------------------------
 */

struct sc4_hog {
	pthread_t thread;
	int cpu;
	int policy;		/* SCHED_OTHER or SCHED_FIFO */
	int kick[2];		/* a byte: spin once; EOF: exit */
	uint64_t spin_ns;
	int setup_err;		/* errno of pinning / sched_setscheduler */
	volatile int ready;
	volatile uint64_t started, ended;	/* the last spin, CLOCK_MONOTONIC */
	volatile int spins;
};

static inline void *sc4_hog_fn(void *arg)
{
	struct sc4_hog *h = arg;
	char c;

	prctl(PR_SET_NAME, "sc-hog", 0, 0, 0);
	h->setup_err = -sc_pin_self(h->cpu);
	if (!h->setup_err && h->policy != SCHED_OTHER) {
		struct sched_param sp = { .sched_priority = 1 };

		h->setup_err = pthread_setschedparam(pthread_self(), h->policy, &sp);
	}
	__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
	while (read(h->kick[0], &c, 1) == 1) {
		uint64_t t0 = sc_now_ns();

		h->started = t0;
		while (sc_now_ns() - t0 < h->spin_ns)
			sc_spin_count++;
		h->ended = sc_now_ns();
		__atomic_store_n(&h->spins, h->spins + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Start the hog; returns 0, or -errno (pinning or the scheduling policy). */
static inline int sc4_hog_start(struct sc4_hog *h, int cpu, int policy, uint64_t spin_ns)
{
	memset(h, 0, sizeof(*h));
	h->cpu = cpu;
	h->policy = policy;
	h->spin_ns = spin_ns;
	if (pipe(h->kick))
		return -errno;
	if (pthread_create(&h->thread, NULL, sc4_hog_fn, h))
		return -EAGAIN;
	while (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
		sc_sleep_ms(1);
	return -h->setup_err;
}

/* Let the hog spin once (it preempts the caller at once if it is FIFO). */
static inline void sc4_hog_kick(struct sc4_hog *h)
{
	if (write(h->kick[1], "k", 1) != 1)
		abort();
}

static inline void sc4_hog_stop(struct sc4_hog *h)
{
	close(h->kick[1]);
	pthread_join(h->thread, NULL);
	close(h->kick[0]);
}

/* ------------------------------------------------------------------------
 * An alarm: a thread (on another CPU) that sets ->stop at an absolute
 * CLOCK_MONOTONIC time, for a thread spinning in spin_in_user() without
 * reading the clock (under TCG clock_gettime() is a system call).
 * ------------------------------------------------------------------------
 */

struct sc4_alarm {
	pthread_t thread;
	int cpu;		/* -1: do not pin */
	uint64_t at;
	uint64_t fired_at;
	volatile int stop;
};

/* Sleep until CLOCK_MONOTONIC time @ns (signals do not cut it short). */
static inline void sc4_sleep_until(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / SC_NSEC_PER_SEC),
		.tv_nsec = (long)(ns % SC_NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static inline void *sc4_alarm_fn(void *arg)
{
	struct sc4_alarm *a = arg;

	if (a->cpu >= 0)
		sc_pin_self(a->cpu);
	sc4_sleep_until(a->at);
	a->fired_at = sc_now_ns();
	__atomic_store_n(&a->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static inline int sc4_alarm_start(struct sc4_alarm *a, int cpu, uint64_t at)
{
	a->cpu = cpu;
	a->at = at;
	a->fired_at = 0;
	a->stop = 0;
	return -pthread_create(&a->thread, NULL, sc4_alarm_fn, a);
}

static inline void sc4_alarm_join(struct sc4_alarm *a)
{
	pthread_join(a->thread, NULL);
}

/* ------------------------------------------------------------------------
 * Records of one stall
 * ------------------------------------------------------------------------
 */

/* Number of SAMPLE records of @stall_id; *@ordered says index i is the i-th. */
static inline size_t sc4_samples_of(const struct sc_records *rs, uint64_t stall_id,
				    const struct stallcap_sample **out, size_t max, bool *ordered)
{
	size_t n = 0;

	*ordered = true;
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE || r->stall_id != stall_id)
			continue;
		if (r->sample_index != n)
			*ordered = false;
		if (n < max)
			out[n] = r;
		n++;
	}
	return n;
}

/* The USER_STACK records carrying @cookie. */
static inline size_t sc4_user_stacks_of(const struct sc_records *rs, uint64_t cookie,
					const struct stallcap_sample **first)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type != STALLCAP_REC_USER_STACK || r->cookie != cookie)
			continue;
		if (!n++ && first)
			*first = r;
	}
	return n;
}

/*
 * The user frames of a sample: its own, or, when they were deferred (the
 * thread was preempted or in the kernel: its user stack is read when it
 * returns to user mode), those of its USER_STACK record (NULL: none yet).
 */
static inline const struct stallcap_sample *
sc4_user_frames_of(const struct sc_records *rs, const struct stallcap_sample *r)
{
	const struct stallcap_sample *u = NULL;

	if (!(r->flags & STALLCAP_SAMPLE_DEFER_PENDING))
		return r;
	sc4_user_stacks_of(rs, r->cookie, &u);
	return u;
}

/*
 * Is the function at @fn frame 0 of the user frames @u, or frame 1-2 (a
 * sample in clock_gettime(): the C library's frameless wrapper and the
 * vDSO's leaf, where the frame-pointer walk may skip the caller's frame)?
 */
static inline bool sc4_user_frames_in(const struct stallcap_sample *u,
				      uint64_t fn)
{
	for (unsigned int i = 0; i < sc_nu(u) && i < 3; i++)
		if (sc_user_ips(u)[i] >= fn && sc_user_ips(u)[i] < fn + 256)
			return true;
	return false;
}

/*
 * The user frames of the first sample of @first's stall (its thread, its
 * stall) taken in the function at @fn, or NULL.  A stall's first sample
 * may find the thread preempted just before that function or in one of
 * its clock reads; each sample's frames are exact for where it was.
 */
static inline const struct stallcap_sample *
sc4_stall_frames_in(const struct sc_records *rs,
		    const struct stallcap_sample *first, uint64_t fn)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i], *u;

		if (r->hdr.type != STALLCAP_REC_SAMPLE || r->tid != first->tid ||
		    r->stall_id != first->stall_id)
			continue;
		u = sc4_user_frames_of(rs, r);
		if (u && sc4_user_frames_in(u, fn))
			return u;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Workers held off: unbound workqueues restricted to CPU 0, where a
 * SCHED_FIFO thread spins until let run (at most SC4_HOLD_MAX).  The module's
 * workers (the attach's, the reads of a blocked thread's user stack without
 * task_work_add()) then run late, when the test says.
 * ------------------------------------------------------------------------
 */

#define SC4_WQ_CPUMASK	"/sys/devices/virtual/workqueue/cpumask"
#define SC4_HOLD_MAX	SC_MS(3000)

static char sc4_wq_cpumask_saved[256];
static volatile int sc4_hog_release, sc4_hog_state;	/* 1 running, -1 failed */
static pthread_t sc4_hog;
static bool sc4_hog_started;

static void *sc4_worker_hog(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	uint64_t end = sc_now_ns() + SC4_HOLD_MAX;

	(void)arg;
	if (sc_pin_self(0) || pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) {
		__atomic_store_n(&sc4_hog_state, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&sc4_hog_state, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sc4_hog_release, __ATOMIC_ACQUIRE) && sc_now_ns() < end)
		;
	return NULL;
}

static inline int sc4_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, text, strlen(text));
		close(fd);
	}
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The hog gone, unbound workqueues as they were (also from a teardown). */
static inline void sc4_workers_release(void)
{
	__atomic_store_n(&sc4_hog_release, 1, __ATOMIC_RELEASE);
	if (sc4_hog_started)
		pthread_join(sc4_hog, NULL);
	sc4_hog_started = false;
	if (sc4_wq_cpumask_saved[0])
		sc4_write_file(SC4_WQ_CPUMASK, sc4_wq_cpumask_saved);
	sc4_wq_cpumask_saved[0] = 0;
}

/* The hog stops: the held workers run (the CPU mask stays until release). */
static inline void sc4_workers_let_run(void)
{
	__atomic_store_n(&sc4_hog_release, 1, __ATOMIC_RELEASE);
}

/* Hold the unbound workers on CPU 0 (the caller stays off it): NULL, or why not. */
static inline const char *sc4_workers_hold(void)
{
	ssize_t n;
	int fd;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return "needs two CPUs";
	fd = open(SC4_WQ_CPUMASK, O_RDONLY);
	if (fd < 0)
		return "no " SC4_WQ_CPUMASK;
	n = read(fd, sc4_wq_cpumask_saved, sizeof(sc4_wq_cpumask_saved) - 1);
	close(fd);
	if (n <= 0)
		return "cannot read " SC4_WQ_CPUMASK;
	sc4_wq_cpumask_saved[n] = 0;
	if (sc4_write_file(SC4_WQ_CPUMASK, "1")) {
		sc4_wq_cpumask_saved[0] = 0;
		return "cannot restrict unbound workqueues to CPU 0";
	}
	sc4_hog_release = 0;
	sc4_hog_state = 0;
	sc4_hog_started = !pthread_create(&sc4_hog, NULL, sc4_worker_hog, NULL);
	while (sc4_hog_started && !__atomic_load_n(&sc4_hog_state, __ATOMIC_ACQUIRE))
		sc_sleep_ms(1);
	if (!sc4_hog_started || sc4_hog_state < 0) {
		sc4_workers_release();
		return "no SCHED_FIFO thread on CPU 0";
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Counters against records
 * ------------------------------------------------------------------------
 */

static inline unsigned int sc4_hist_bucket(int64_t ns)
{
	unsigned int b = 0;
	uint64_t v = ns > 0 ? (uint64_t)ns : 0;

	while (v >>= 1)
		b++;
	return b < STALLCAP_HIST_BUCKETS ? b : STALLCAP_HIST_BUCKETS - 1;
}

/*
 * Once everything is quiet (no watch armed or stalled, the ring drained
 * into @rs, nothing lost), the session's counters must agree with its
 * records: samples, stall-ends and deferred records as delivered, captures
 * by path as the samples' paths, stalls = first samples + suppressed, and
 * the cost and lateness histograms one entry per first sample, the
 * lateness one in the bucket of that sample's capture_ns - deadline_ns.
 */
#define sc4_check_counters(s, rs) __sc4_check_counters(_metadata, (s), (rs))
static inline void __sc4_check_counters(struct __test_metadata *_metadata,
					struct sc_session *s, const struct sc_records *rs)
{
	uint64_t late[STALLCAP_HIST_BUCKETS] = { 0 };
	uint64_t by_path[STALLCAP_PATH_DEFERRED + 1] = { 0 };
	uint64_t samples = 0, first = 0, ends = 0, user = 0, abandoned = 0;
	uint64_t cost_sum = 0, late_sum = 0;
	struct stallcap_stats st;

	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		switch (r->hdr.type) {
		case STALLCAP_REC_SAMPLE:
			samples++;
			if (r->flags & SC_SAMPLE_ABANDONED)
				abandoned++;
			else if (r->path <= STALLCAP_PATH_DEFERRED)
				by_path[r->path]++;
			if (!r->sample_index) {
				first++;
				late[sc4_hist_bucket((int64_t)(r->capture_ns - r->deadline_ns))]++;
			}
			break;
		case STALLCAP_REC_STALL_END:
			ends++;
			break;
		case STALLCAP_REC_USER_STACK:
			user++;
			break;
		}
	}
	ASSERT_EQ(0, sc_get_stats(s->fd, &st, 0));
	EXPECT_EQ(0, st.lost);
	EXPECT_EQ(st.lost, __atomic_load_n(&s->ctl->lost, __ATOMIC_ACQUIRE));
	EXPECT_EQ(st.suppressed, __atomic_load_n(&s->ctl->suppressed, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, st.armed);
	EXPECT_EQ(samples, st.samples);
	EXPECT_EQ(ends, st.stall_ends);
	EXPECT_EQ(user, st.deferred);
	EXPECT_EQ(first + st.suppressed + st.lost, st.stalls)
		TH_LOG("stalls %llu, first samples %llu, suppressed %llu",
		       (unsigned long long)st.stalls, (unsigned long long)first,
		       (unsigned long long)st.suppressed);
	EXPECT_EQ(by_path[STALLCAP_PATH_LOCAL], st.capture_local);
	EXPECT_EQ(by_path[STALLCAP_PATH_NMI], st.capture_nmi);
	EXPECT_EQ(by_path[STALLCAP_PATH_IPI], st.capture_ipi);
	EXPECT_EQ(by_path[STALLCAP_PATH_BLOCKED], st.capture_blocked);
	EXPECT_EQ(samples - abandoned, st.capture_local + st.capture_nmi + st.capture_ipi +
				       st.capture_blocked);
	for (int b = 0; b < STALLCAP_HIST_BUCKETS; b++) {
		cost_sum += st.capture_cost_hist[b];
		late_sum += st.lateness_hist[b];
		EXPECT_EQ(late[b], st.lateness_hist[b])
			TH_LOG("lateness bucket %d (%llu..%llu ns)", b, b ? 1ULL << b : 0ULL,
			       (2ULL << b) - 1);
	}
	EXPECT_EQ(first, cost_sum) TH_LOG("cost histogram: not one entry per first sample");
	EXPECT_EQ(first, late_sum) TH_LOG("lateness histogram: not one entry per first sample");
}

#endif /* STALLCAP_STALL_UTIL_H */
