// SPDX-License-Identifier: GPL-2.0
/*
 * The ring: its control page, poll/epoll readiness, overflow (every record
 * that does not fit is counted in lost, in the control page and in the
 * counters; nothing partially written is ever visible), a reader racing the
 * writer, the rate limit's suppressed count, and a burst of blocked stalls
 * in a ring sized for four of the largest records.
 */
#include <sys/epoll.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TAG		0x72696e6774657374ULL

static uint64_t short_timeout(const struct sc_session *s)
{
	uint64_t t = SC_MS(2);

	return t < s->info.min_deadline_ns ? s->info.min_deadline_ns : t;
}

/*
 * One stall of the calling thread: arm, spin in user space until the
 * module counts the stall, disarm (which ends it).  Returns 0 or -1.
 */
static int stall_once(struct sc_session *s, uint64_t timeout)
{
	uint64_t before = SC_STAT(s->fd, stalls);
	uint64_t end = sc_now_ns() + SC_MS(SC_WAIT_MS);
	volatile unsigned long n = 0;
	int ret = -1;

	if (sc_arm(s->fd, timeout, 0, TAG))
		return -1;
	while (sc_now_ns() < end) {
		for (int i = 0; i < 20000; i++)
			n++;
		if (SC_STAT(s->fd, stalls) != before) {
			ret = 0;
			break;
		}
	}
	if (sc_disarm(s->fd))
		return -1;
	return ret;
}

static uint64_t ctl_lost(const struct sc_session *s)
{
	return __atomic_load_n(&s->ctl->lost, __ATOMIC_ACQUIRE);
}

/*
 * Every attempted record was written or counted lost.  With max_samples 1
 * and every stall ended, a stall is one sample and one stall-end; a sample
 * whose user stack could not be read at capture (e.g. a preempted thread
 * read remotely) adds one deferred USER_STACK record for its cookie.
 */
static void check_accounting(struct __test_metadata *_metadata, const struct sc_session *s,
			     const struct sc_records *rs, uint64_t stalls_made)
{
	size_t samples = sc_records_count(rs, STALLCAP_REC_SAMPLE);
	size_t ends = sc_records_count(rs, STALLCAP_REC_STALL_END);
	size_t deferred = sc_records_count(rs, STALLCAP_REC_USER_STACK);
	size_t pending = 0;	/* deferred records asked for by the samples seen */
	struct stallcap_stats st;
	uint64_t written, asked;

	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];
		bool dup = false;

		if (r->hdr.type != STALLCAP_REC_SAMPLE ||
		    !(r->flags & STALLCAP_SAMPLE_DEFER_PENDING))
			continue;
		for (size_t j = 0; j < i; j++) {
			const struct stallcap_sample *o = (const void *)rs->rec[j];

			dup |= o->hdr.type == STALLCAP_REC_SAMPLE &&
			       (o->flags & STALLCAP_SAMPLE_DEFER_PENDING) && o->cookie == r->cookie;
		}
		pending += !dup;
	}

	ASSERT_EQ(0, sc_get_stats(s->fd, &st, 0));
	EXPECT_EQ(stalls_made, st.stalls);
	EXPECT_EQ(samples, st.samples);
	EXPECT_EQ(ends, st.stall_ends);
	EXPECT_EQ(deferred, st.deferred);
	EXPECT_EQ(st.lost, ctl_lost(s));
	EXPECT_EQ(0, st.suppressed);
	EXPECT_EQ(0, __atomic_load_n(&s->ctl->suppressed, __ATOMIC_ACQUIRE));
	/*
	 * written + lost = attempted = 2 per stall + the deferred records
	 * asked for: by the samples seen, and at most one per lost record.
	 */
	written = st.samples + st.stall_ends + st.deferred;
	asked = 2 * st.stalls + pending;
	EXPECT_LE(asked, written + st.lost);
	EXPECT_GE(asked, written) TH_LOG("more records than attempted");
	if (!st.lost)
		EXPECT_EQ(asked, written);
	TH_LOG("stalls %llu samples %llu ends %llu deferred %llu (%zu asked) lost %llu",
	       (unsigned long long)st.stalls, (unsigned long long)st.samples,
	       (unsigned long long)st.stall_ends, (unsigned long long)st.deferred, pending,
	       (unsigned long long)st.lost);
	/*
	 * the header's invariant, exactly: every stall's first sample was
	 * written, lost or suppressed; and every lost record is counted once,
	 * as a first sample, a stall end (every stall ended) or a deferred
	 * user stack
	 */
	EXPECT_EQ(st.stalls, st.samples + st.lost_first + st.suppressed);
	EXPECT_EQ(st.lost, st.lost_first + (st.stalls - st.stall_ends) + st.lost_deferred)
		TH_LOG("lost %llu: %llu first samples, %llu stall ends, %llu deferred",
		       (unsigned long long)st.lost, (unsigned long long)st.lost_first,
		       (unsigned long long)(st.stalls - st.stall_ends),
		       (unsigned long long)st.lost_deferred);
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];
		const struct stallcap_stall_end *e = (const void *)rs->rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE)
			EXPECT_EQ(0, r->sample_index);
		if (e->hdr.type == STALLCAP_REC_STALL_END)
			EXPECT_EQ(1, e->nr_samples);
	}
}

TEST(control_page_describes_the_ring)
{
	struct sc_opts o = { .ring_bytes = 256 * 1024 };
	struct sc_session s;
	struct pollfd pfd;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	EXPECT_EQ(STALLCAP_ABI_VERSION, s.ctl->abi_version);
	EXPECT_EQ(sizeof(struct stallcap_ring_ctl), s.ctl->ctl_size);
	EXPECT_EQ(s.page, s.ctl->data_offset);
	EXPECT_EQ(256 * 1024, s.ctl->data_size);
	EXPECT_EQ(0, s.ctl->data_head);
	EXPECT_EQ(0, s.ctl->data_tail);
	EXPECT_EQ(0, s.ctl->lost);
	EXPECT_EQ(0, s.ctl->suppressed);
	pfd = (struct pollfd){ .fd = s.fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("an empty ring is readable");
	sc_session_close(&s);
}

TEST(poll_and_epoll_report_records_waiting)
{
	struct sc_session s;
	struct sc_records rs = {};
	struct pollfd pfd;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep;

	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));

	/* this thread stalls while it waits in epoll (a blocked capture) */
	ASSERT_EQ(0, sc_arm(s.fd, short_timeout(&s), 0, TAG));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, SC_WAIT_MS));
	EXPECT_TRUE(out.events & EPOLLIN);
	pfd = (struct pollfd){ .fd = s.fd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLIN);
	ASSERT_EQ(0, sc_disarm(s.fd));

	/* consumed up to the stall-end: no longer readable */
	ASSERT_EQ(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	sc_ring_drain(&s, &rs);
	EXPECT_EQ(s.ctl->data_head, s.ctl->data_tail);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(0, rs.err[0]) TH_LOG("%s", rs.err);

	/* data_head is the reader's to scribble on: poll() does not trust it */
	__atomic_store_n(&s.ctl->data_head, s.ctl->data_tail + 4096, __ATOMIC_RELEASE);
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("poll() believed a forged data_head");
	close(ep);
	sc_records_free(&rs);
	sc_session_close(&s);
}

FIXTURE(small_ring) {
	struct sc_session s;
	struct sc_records rs;
	uint64_t timeout;
	int capacity;		/* stalls that surely fill the ring */
};

FIXTURE_SETUP(small_ring)
{
	struct sc_opts o = {
		.ring_bytes = sc_min_ring_bytes(64),
		.user_stack_bytes = 64,
		.max_samples = 1,
	};

	ASSERT_EQ(0, sc_session_setup(&self->s, &o));
	ASSERT_EQ(o.ring_bytes, self->s.cfg.ring_bytes);
	ASSERT_EQ(1, self->s.cfg.max_samples);
	self->timeout = short_timeout(&self->s);
	/* a stall takes at least a bare sample and a stall-end */
	self->capacity = o.ring_bytes / (sizeof(struct stallcap_sample) + 8 + 64 +
					 sizeof(struct stallcap_stall_end)) + 1;
}

FIXTURE_TEARDOWN(small_ring)
{
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

TEST_F_TIMEOUT(small_ring, overflow_counts_every_lost_record_exactly, 240)
{
	int n = self->capacity + 10, made = 0;
	size_t ends;

	for (int i = 0; i < n; i++)
		made += !stall_once(&self->s, self->timeout);
	ASSERT_EQ(n, made);

	/* nothing consumed yet: the ring is full and records were lost */
	EXPECT_LE(self->s.ctl->data_head - self->s.ctl->data_tail, self->s.ctl->data_size);
	EXPECT_LT(0, ctl_lost(&self->s));
	ASSERT_LE(0, sc_ring_drain(&self->s, &self->rs)) TH_LOG("%s", self->rs.err);
	EXPECT_EQ(self->s.ctl->data_head, self->s.ctl->data_tail);
	check_accounting(_metadata, &self->s, &self->rs, made);

	/* consumed: the next stall is delivered again, and is complete */
	ends = sc_records_count(&self->rs, STALLCAP_REC_STALL_END);
	ASSERT_EQ(0, stall_once(&self->s, self->timeout));
	made++;
	ASSERT_EQ(ends + 1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END,
					    ends + 1, SC_WAIT_MS));
	EXPECT_EQ(made, SC_STAT(self->s.fd, stalls));
	check_accounting(_metadata, &self->s, &self->rs, made);
	EXPECT_EQ(0, self->rs.err[0]) TH_LOG("%s", self->rs.err);
}

struct reader {
	struct sc_session *s;
	struct sc_records rs;
	volatile int stop;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		if (sc_ring_collect(r->s, &r->rs, 0, 0, 20) < 0)
			break;
	return NULL;
}

/*
 * A reader consuming while stalls are written, the data area wrapping many
 * times: every record it sees is complete and well formed (checked by the
 * reader), and written + lost accounts for every record.
 */
TEST_F_TIMEOUT(small_ring, reader_racing_the_writer_sees_only_complete_records, 240)
{
	struct reader r = { .s = &self->s };
	int n = 4 * self->capacity, made = 0;
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, reader_main, &r));
	for (int i = 0; i < n; i++)
		made += !stall_once(&self->s, self->timeout);
	sc_sleep_ms(SC_QUIET_MS);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ASSERT_EQ(0, r.rs.err[0]) TH_LOG("%s", r.rs.err);
	ASSERT_LE(0, sc_ring_drain(&self->s, &r.rs)) TH_LOG("%s", r.rs.err);
	ASSERT_EQ(n, made);
	check_accounting(_metadata, &self->s, &r.rs, made);
	/* the data area wrapped */
	EXPECT_LT(self->s.ctl->data_size, self->s.ctl->data_head);
	TH_LOG("%zu records, %zu pads, %llu lost", r.rs.n, r.rs.nr_pad,
	       (unsigned long long)ctl_lost(&self->s));
	sc_records_free(&r.rs);
}

/*
 * rate_limit 2 per minute: of 5 stalls, 2 are reported and 3 counted as
 * suppressed, in the counters and in the control page.
 */
TEST(rate_limit_counts_suppressed_stalls)
{
	struct sc_session s;
	struct sc_records rs = {};
	struct sc_opts o = { .max_samples = 1, .rate_limit = 2 };
	struct stallcap_stats st;
	uint64_t timeout;
	int made = 0;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(2, s.cfg.rate_limit);
	timeout = short_timeout(&s);
	for (int i = 0; i < 5; i++)
		made += !stall_once(&s, timeout);
	ASSERT_EQ(5, made);
	sc_ring_collect(&s, &rs, 0, 0, SC_QUIET_MS);
	ASSERT_EQ(0, rs.err[0]) TH_LOG("%s", rs.err);
	ASSERT_EQ(0, sc_get_stats(s.fd, &st, 0));
	EXPECT_EQ(5, st.stalls);
	EXPECT_EQ(2, st.samples);
	EXPECT_EQ(3, st.suppressed);
	EXPECT_EQ(3, __atomic_load_n(&s.ctl->suppressed, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, st.lost);
	EXPECT_EQ(2, sc_records_count(&rs, STALLCAP_REC_SAMPLE));
	/* stall-ends only for the stalls that were reported */
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_stall_end *e = (const void *)rs.rec[i];
		bool reported = false;

		if (e->hdr.type != STALLCAP_REC_STALL_END)
			continue;
		for (size_t j = 0; j < rs.n; j++) {
			const struct stallcap_sample *x = (const void *)rs.rec[j];

			reported |= x->hdr.type == STALLCAP_REC_SAMPLE &&
				    x->stall_id == e->stall_id;
		}
		EXPECT_TRUE(reported) TH_LOG("stall-end of suppressed stall %llu",
					     (unsigned long long)e->stall_id);
	}
	sc_records_free(&rs);
	sc_session_close(&s);
}

/*
 * A burst of threads blocked at once: each sample takes the room its
 * capture needs, not the largest record's.  The ring is the smallest one
 * allowed (four of the largest records: user stack, both frame lists, a
 * lock chain of four owners); the threads stay blocked (in read()) until
 * it is read, so their deferred user stacks come later.
 */
#define BURST_THREADS	8

struct burst_thread {
	struct sc_session *s;
	uint64_t timeout;
	int pipe_rd;
	int failed;
};

static void *burst_main(void *arg)
{
	struct burst_thread *t = arg;
	char c;

	if (sc_arm(t->s->fd, t->timeout, 0, TAG)) {
		t->failed = errno;
		return NULL;
	}
	if (read(t->pipe_rd, &c, 1) != 1)
		t->failed = EIO;
	sc_disarm(t->s->fd);
	return NULL;
}

/* One burst; 1 when every sample was taken off CPU (the case at test). */
static int burst_round(struct __test_metadata *_metadata, struct sc_session *s)
{
	struct burst_thread t[BURST_THREADS];
	pthread_t th[BURST_THREADS];
	struct sc_records rs = {};
	uint64_t end = sc_now_ns() + SC_MS(SC_WAIT_MS);
	uint64_t used, lost_before = ctl_lost(s);
	uint64_t samples_before = SC_STAT(s->fd, samples);
	uint64_t seen = samples_before + SC_STAT(s->fd, lost);
	uint64_t counted;
	int fds[2], blocked = 0, n;

	if (pipe(fds))
		return -1;
	for (int i = 0; i < BURST_THREADS; i++) {
		t[i] = (struct burst_thread){ s, SC_MS(50), fds[0], 0 };
		if (pthread_create(&th[i], NULL, burst_main, &t[i]))
			return -1;
	}
	while (SC_STAT(s->fd, samples) + SC_STAT(s->fd, lost) <
	       seen + BURST_THREADS && sc_now_ns() < end)
		sc_sleep_ms(10);
	used = s->ctl->data_head - s->ctl->data_tail;
	/*
	 * A sample is counted when its room is reserved: the last one may
	 * still be in the writing (busy); wait for every counted sample.
	 */
	counted = SC_STAT(s->fd, samples) - samples_before;
	EXPECT_LE(0, sc_ring_collect(s, &rs, STALLCAP_REC_SAMPLE, counted,
				     SC_WAIT_MS)) TH_LOG("%s", rs.err);
	n = sc_records_count(&rs, STALLCAP_REC_SAMPLE);
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_sample *r = (const void *)rs.rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE)
			blocked += r->path == STALLCAP_PATH_BLOCKED;
	}
	TH_LOG("%d samples (%d blocked) in %llu of %u bytes, %llu lost",
	       n, blocked, (unsigned long long)used, s->cfg.ring_bytes,
	       (unsigned long long)(ctl_lost(s) - lost_before));
	if (write(fds[1], "xxxxxxxxxxxxxxxx", BURST_THREADS) != BURST_THREADS)
		return -1;
	for (int i = 0; i < BURST_THREADS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, t[i].failed);
	}
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(0, rs.err[0]) TH_LOG("%s", rs.err);
	if (blocked != n)
		return 0;	/* a thread still running at its deadline */
	EXPECT_EQ(BURST_THREADS, n);
	EXPECT_EQ(lost_before, ctl_lost(s));
	sc_records_free(&rs);
	return 1;
}

static void burst_in_smallest_ring(struct __test_metadata *_metadata,
				   uint32_t user_stack_bytes)
{
	struct sc_opts o = {
		.ring_bytes = sc_min_ring_bytes(user_stack_bytes),
		.user_stack_bytes = user_stack_bytes,
		.max_samples = 1,
	};
	struct sc_session s;
	int ret = 0;

	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(o.ring_bytes, s.cfg.ring_bytes);
	for (int i = 0; i < 3 && ret == 0; i++)
		ret = burst_round(_metadata, &s);
	EXPECT_EQ(1, ret) TH_LOG("no round with every thread off CPU");
	sc_session_close(&s);
}

/* 8 stack bytes: the room of a lock chain is not reserved (64 KiB ring) */
TEST(a_burst_of_blocked_stalls_fits_the_smallest_ring)
{
	burst_in_smallest_ring(_metadata, 8);
}

/* 16 KiB: nor is a user stack that a thread off CPU cannot have (128 KiB) */
TEST(a_burst_of_blocked_stalls_reserves_no_user_stack)
{
	burst_in_smallest_ring(_metadata, 16384);
}

TEST_HARNESS_MAIN
