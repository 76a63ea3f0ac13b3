// SPDX-License-Identifier: GPL-2.0
/*
 * Why it stalled: the time breakdown (STALLCAP_SEC_TIMES) and the task that
 * ran instead (STALLCAP_SEC_TASK, role RUNNER) of a thread preempted by a
 * SCHED_FIFO hog on its CPU, read by the timer on that CPU (local) and by
 * NMI/IPI from another CPU (remote).
 *
 * Tolerance of the breakdown: the watched thread wakes the hog right after
 * arming and the hog (SCHED_FIFO on the same CPU) preempts it at once; from
 * then on until the capture the thread only waits on the run queue.  Its
 * time on CPU in the interval is the return from ARM and the wake-up call,
 * microseconds on hardware and well under a millisecond under QEMU TCG,
 * against an interval of at least the 20 ms timeout: run delay must be at
 * least 3/4 of the interval (a generous bound for TCG's coarse clocks) and
 * on CPU + run delay may not exceed the interval by more than 1 ms (the
 * scheduler's clock and CLOCK_MONOTONIC are read at slightly different
 * instants).
 */
#include "kselftest_harness.h"
#include "why_util.h"

#define TIMEOUT_MS	20
#define HOG_MS		150
#define HOG_PRIO	50

struct hog {
	pthread_t th;
	int cpu;
	int pipe[2];
	pid_t tid;
	volatile int ready;
};

/* The hog's busy loop: the innermost user frame of the runner. */
WHY_NOINLINE void why_hog_spin(uint64_t until)
{
	while (why_now() < until)
		__asm__ volatile("" ::: "memory");
}

static void *hog_fn(void *arg)
{
	struct hog *h = arg;
	char c;

	why_pin(h->cpu);
	prctl(PR_SET_NAME, "why-hog");
	h->tid = why_gettid();
	if (why_fifo(HOG_PRIO))
		return (void *)1L;
	__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
	if (read(h->pipe[0], &c, 1) != 1)
		return (void *)1L;
	why_hog_spin(why_now() + WHY_MS(HOG_MS));
	return NULL;
}

static int hog_start(struct hog *h, int cpu)
{
	h->cpu = cpu;
	h->ready = 0;
	if (pipe(h->pipe) || pthread_create(&h->th, NULL, hog_fn, h))
		return -1;
	while (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	return 0;
}

static void hog_kick(struct hog *h)
{
	if (write(h->pipe[1], "x", 1) != 1)
		abort();
}

static void hog_join(struct hog *h)
{
	pthread_join(h->th, NULL);
	close(h->pipe[0]);
	close(h->pipe[1]);
}

FIXTURE(why)
{
	struct why_session s;
	struct hog hog;
	uint64_t buf[65536 / 8];
};

FIXTURE_SETUP(why)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, why_open(&self->s));
}

FIXTURE_TEARDOWN(why)
{
	why_close(&self->s);
}

/*
 * Arm on @arm_cpu (the watch's timer is pinned there), run on CPU 1 where
 * the hog preempts us, and check the first sample.
 */
static void preempted_by_hog(struct __test_metadata *_metadata,
			     FIXTURE_DATA(why) *self, int arm_cpu)
{
	const struct stallcap_sec_times *t;
	const struct stallcap_sec_task *r;
	struct stallcap_sample *smp;
	uint64_t before, after, span;
	const uint64_t *ips;
	pid_t me = why_gettid();

	ASSERT_EQ(0, hog_start(&self->hog, 1));
	ASSERT_EQ(0, why_pin(arm_cpu));
	before = why_now();
	ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
	after = why_now();
	ASSERT_EQ(0, why_pin(1));
	hog_kick(&self->hog);		/* preempts us until it is done */
	hog_join(&self->hog);
	ASSERT_EQ(0, why_disarm(&self->s));

	smp = why_first_sample(&self->s, me, self->buf, sizeof(self->buf));
	ASSERT_NE(NULL, smp);
	why_log_sample(smp);
	ASSERT_EQ(STALLCAP_STATE_RUNNABLE, smp->state);
	ASSERT_EQ(1U, smp->cpu);

	t = why_section(smp, STALLCAP_SEC_TIMES, 0);
	ASSERT_NE(NULL, t);
	ASSERT_TRUE(t->valid & (1ULL << STALLCAP_TIME_ON_CPU));
	ASSERT_TRUE(t->valid & (1ULL << STALLCAP_TIME_RUN_DELAY));
	ASSERT_TRUE(t->valid & (1ULL << STALLCAP_TIME_NIVCSW));
	/* no IRQ time or steal clock on these kernels: marked unavailable */
	ASSERT_FALSE(t->valid & (1ULL << STALLCAP_TIME_STEAL));
	ASSERT_EQ(0ULL, t->steal_ns);
	ASSERT_GE(t->since_ns, before);
	ASSERT_LE(t->since_ns, after);
	span = smp->capture_ns - t->since_ns;
	ASSERT_GE(span, WHY_MS(TIMEOUT_MS));
	ASSERT_GE(t->run_delay_ns, span * 3 / 4);
	ASSERT_LE(t->on_cpu_ns + t->run_delay_ns, span + WHY_MS(1));
	ASSERT_GE(t->nivcsw, 1ULL);

	r = why_task(smp, STALLCAP_ROLE_RUNNER, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ((uint32_t)self->hog.tid, r->tid);
	ASSERT_EQ((uint32_t)getpid(), r->pid);
	ASSERT_STREQ("why-hog", r->comm);
	ASSERT_EQ(SCHED_FIFO, (int)r->policy);
	ASSERT_EQ(HOG_PRIO, r->prio);
	ASSERT_EQ(1U, r->cpu);
	ASSERT_EQ(STALLCAP_STATE_RUNNING, r->state);
	ASSERT_EQ(0U, r->flags & (STALLCAP_TASK_F_KTHREAD | STALLCAP_TASK_F_IDLE |
				 STALLCAP_TASK_F_USER_HIDDEN));
	/* interrupted in its spin loop (user mode) or in the kernel above it */
	ASSERT_GE(r->nr_user_frames, 1U);
	ips = why_task_ips(r) + r->nr_kernel_frames;
	if (!r->nr_kernel_frames) {
		ASSERT_TRUE(why_ip_in(ips[0], "why_hog_spin"));
	} else {
		ASSERT_TRUE(why_ip_in(ips[0], "why_hog_spin") ||
			    why_ip_in(ips[1], "why_hog_spin"));
	}
}

/* The timer expires on the thread's CPU: the runner is what it interrupted. */
TEST_F(why, runnable_local_runner)
{
	preempted_by_hog(_metadata, self, 1);
}

/* The timer expires on CPU 0: the runner is found by NMI (or IPI). */
TEST_F(why, runnable_remote_runner)
{
	preempted_by_hog(_metadata, self, 0);
}

TEST_HARNESS_MAIN
