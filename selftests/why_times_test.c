// SPDX-License-Identifier: GPL-2.0
/*
 * Where the time went (STALLCAP_SEC_TIMES) over every sample of a stall,
 * not only the first: a thread that never leaves its CPU is never said to
 * have slept, and a thread that does sleep is.
 *
 * On CPU is read with the scheduler's clock, the interval with
 * CLOCK_MONOTONIC; in a TCG guest the two drift apart by milliseconds, and
 * a user-mode spinner was reported "blocked 5.4 ms of 41.7" (and, after an
 * interval whose estimate was capped, "blocked 10.1 ms of 18.4").  The
 * module knows better: runnable at both ends of the interval and no
 * voluntary switch between means no sleep at all.
 */
#include <time.h>

#include "sc_harness.h"
#include "why_util.h"

#define TIMEOUT_MS	20
#define SPIN_MS		300
#define NAP_MS		150
#define MAX_SAMPLES	16

struct samples {
	uint64_t buf[MAX_SAMPLES][8192 / 8];
	unsigned int n;
};

FIXTURE(why_times)
{
	struct why_session s;
	struct samples got;
};

FIXTURE_SETUP(why_times)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, why_open(&self->s));
	self->got.n = 0;
}

FIXTURE_TEARDOWN(why_times)
{
	why_close(&self->s);
}

/* The innermost frame of a spinning sample; never inlined. */
WHY_NOINLINE void why_times_spin(uint64_t until)
{
	while (why_now() < until)
		__asm__ volatile("" ::: "memory");
}

static uint64_t ring_head(struct why_session *s)
{
	return __atomic_load_n(&s->ctl->data_head, __ATOMIC_ACQUIRE);
}

/* Spin until the ring moves past @head (the first sample), or @limit. */
static void spin_until_sampled(struct why_session *s, uint64_t head,
			       uint64_t limit)
{
	while (ring_head(s) == head && why_now() < limit)
		__asm__ volatile("" ::: "memory");
}

/* Every sample of @tid's stalls, in ring order, copied into @got. */
static void collect(struct why_session *s, pid_t tid, struct samples *got)
{
	uint64_t head = __atomic_load_n(&s->ctl->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = s->ctl->data_tail;

	while (tail < head) {
		struct stallcap_rec_header *h =
			(void *)(s->data + (tail & (s->size - 1)));
		uint16_t flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
		struct stallcap_sample *smp = (void *)h;

		if (flags & STALLCAP_REC_F_BUSY)
			break;
		if (h->type == STALLCAP_REC_SAMPLE &&
		    h->size <= sizeof(got->buf[0]) &&
		    smp->tid == (uint32_t)tid && got->n < MAX_SAMPLES)
			memcpy(got->buf[got->n++], h, h->size);
		tail += h->size;
	}
	__atomic_store_n(&s->ctl->data_tail, tail, __ATOMIC_RELEASE);
}

static const struct stallcap_sample *nth(const struct samples *got,
					 unsigned int i)
{
	return (const void *)got->buf[i];
}

static void log_times(const struct stallcap_sample *smp,
		      const struct stallcap_sec_times *t)
{
	fprintf(stderr, "#  sample %u state %u path %u: span %.2f ms on_cpu %.2f run_delay %.2f sleep %.2f nvcsw %llu nivcsw %llu valid 0x%llx\n",
		smp->sample_index, smp->state, smp->path,
		(smp->capture_ns - t->since_ns) / 1e6, t->on_cpu_ns / 1e6,
		t->run_delay_ns / 1e6, t->sleep_ns / 1e6,
		(unsigned long long)t->nvcsw, (unsigned long long)t->nivcsw,
		(unsigned long long)t->valid);
}

#define BIT_OF(f)	(1ULL << STALLCAP_TIME_##f)

/*
 * A thread spins in user mode on CPU 1 for 300 ms past a 20 ms deadline:
 * samples at 20, 40, 80 and 160 ms (fewer when a loaded host delays the
 * timers), local or remote alike.  Each says it never slept: sleep is 0 and
 * on CPU plus waiting for a CPU is the whole interval.
 */
TEST_F(why_times, spinner_never_sleeps)
{
	const struct stallcap_sec_times *t;
	const struct stallcap_sample *smp;
	unsigned int i, with_times = 0;

	ASSERT_EQ(0, why_pin(1));
	ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
	why_times_spin(why_now() + WHY_MS(SPIN_MS));
	ASSERT_EQ(0, why_disarm(&self->s));
	collect(&self->s, why_gettid(), &self->got);
	why_log_stats(&self->s);

	for (i = 0; i < self->got.n; i++) {
		smp = nth(&self->got, i);
		t = why_section(smp, STALLCAP_SEC_TIMES, 0);
		if (!t)
			continue;	/* a stall-end sample */
		log_times(smp, t);
		with_times++;
		ASSERT_EQ(i, smp->sample_index);
		ASSERT_TRUE(smp->state == STALLCAP_STATE_RUNNING ||
			    smp->state == STALLCAP_STATE_RUNNABLE);
		ASSERT_NE(0ULL, t->valid & BIT_OF(SLEEP));
		ASSERT_EQ(0ULL, t->nvcsw);
		ASSERT_EQ(0ULL, t->sleep_ns);
		ASSERT_EQ(smp->capture_ns - t->since_ns,
			  t->on_cpu_ns + t->run_delay_ns);
	}
	ASSERT_GE(with_times, 2U);
}

/*
 * The same thread spins until its first sample is in the ring, sleeps
 * 150 ms in clock_nanosleep, then spins 30 ms: the samples at 40, 80 and
 * 160 ms find it asleep.  Each says it slept; one taken asleep since the
 * previous sample (no voluntary switch in its interval: the case a "never
 * slept" verdict must not take) says it slept through at least 3/4 of its
 * interval.  Boundaries, not timings: a loaded TCG host delays timers by
 * milliseconds.
 */
TEST_F(why_times, sleeper_is_said_to_sleep)
{
	const struct timespec nap = { 0, WHY_MS(NAP_MS) };
	const struct stallcap_sec_times *t;
	const struct stallcap_sample *smp;
	unsigned int i, asleep = 0, whole = 0;
	uint64_t slept = 0, head;

	ASSERT_EQ(0, why_pin(1));
	head = ring_head(&self->s);
	ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
	spin_until_sampled(&self->s, head, why_now() + WHY_MS(SPIN_MS));
	ASSERT_NE(head, ring_head(&self->s));
	ASSERT_EQ(0, clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL));
	why_times_spin(why_now() + WHY_MS(30));
	ASSERT_EQ(0, why_disarm(&self->s));
	collect(&self->s, why_gettid(), &self->got);
	why_log_stats(&self->s);

	for (i = 0; i < self->got.n; i++) {
		smp = nth(&self->got, i);
		t = why_section(smp, STALLCAP_SEC_TIMES, 0);
		if (!t)
			continue;
		log_times(smp, t);
		ASSERT_NE(0ULL, t->valid & BIT_OF(SLEEP));
		if (smp->state != STALLCAP_STATE_SLEEPING)
			continue;
		asleep++;
		slept += t->sleep_ns;
		ASSERT_GT(t->sleep_ns, 0ULL);
		if (t->nvcsw)
			continue;
		whole++;
		ASSERT_GE(t->sleep_ns, (smp->capture_ns - t->since_ns) * 3 / 4);
	}
	ASSERT_GE(asleep, 2U);
	ASSERT_GE(whole, 1U);
	/* 150 ms asleep, about 140 of them before the 160 ms sample */
	ASSERT_GE(slept, WHY_MS(NAP_MS) / 2);
}

TEST_HARNESS_MAIN
