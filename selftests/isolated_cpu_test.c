// SPDX-License-Identifier: GPL-2.0
/*
 * Isolated CPUs stay quiet: in a guest booted with nohz_full=1 isolcpus=1
 * (scripts/vmtest.sh boots one on some kernels), a thread on CPU 1 that
 * re-arms its deadline 100,000 times and always meets it costs CPU 1 no
 * stallcap timer expiry (the module's per-CPU counts in debugfs
 * stallcap/expiries: watch timers and buddy checkers), while CPU 0 watches
 * its deadline; and a deadline it misses is still captured, from CPU 0 by
 * NMI.  The same for a process watched by STALLCAP_IOC_ATTACH: its event
 * loop on CPU 1 starts a deadline at every return from poll(), and CPU 1
 * takes no stallcap timer for it, nor an irq_work interrupt (IWI in
 * /proc/interrupts) when a return from a long idle wait wakes the sleeping
 * buddy checkers, while its stall is still captured there.  A thread on
 * CPU 1 storing shared deadlines is sent no function-call interrupt by its
 * watch's timer, which runs on CPU 0.  Elsewhere the test skips.
 */
#include <poll.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"
#include "stall_util.h"

#define TAG		0x69736f6c61746564ULL
#define EXPIRIES	"/sys/kernel/debug/stallcap/expiries"
#define TIMEOUT		SC_MS(20)
#define REARMS		100000

struct expiries {
	unsigned long watch, buddy, beat, checks;
};

static int read_expiries(int cpu, struct expiries *e)
{
	FILE *f = fopen(EXPIRIES, "r");
	unsigned long w, b, r, s = 0, k = 0;
	char line[160];
	int c, n, ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n = sscanf(line, "cpu%d watch %lu buddy %lu rescued %lu beat %lu checks %lu",
			   &c, &w, &b, &r, &s, &k);
		if (n >= 4 && c == cpu) {
			e->watch = w;
			e->buddy = b;
			e->beat = n == 6 ? s : 0;
			e->checks = n == 6 ? k : 0;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static bool cpu1_is_nohz_full(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/nohz_full", "r");
	char buf[64] = "";
	bool yes;

	if (!f)
		return false;
	yes = fgets(buf, sizeof(buf), f) && (!strcmp(buf, "1\n") || !strncmp(buf, "1-", 2) ||
					   !strncmp(buf, "1,", 2));
	fclose(f);
	return yes;
}

FIXTURE(iso) {
	struct sc_session s;
	struct sc_records rs;
};

FIXTURE_SETUP(iso)
{
	struct expiries e;

	self->s.fd = -1;
	if (!cpu1_is_nohz_full())
		SKIP(return, "CPU 1 is not nohz_full (boot with nohz_full=1 isolcpus=1)");
	if (read_expiries(1, &e))
		SKIP(return, "no %s", EXPIRIES);
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	ASSERT_EQ(0, sc_pin_self(1));
}

FIXTURE_TEARDOWN(iso)
{
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

TEST_F_TIMEOUT(iso, rearming_on_an_isolated_cpu_fires_no_timer_there, 240)
{
	struct expiries b1, a1, b0, a0;
	uint64_t t0, t1;

	ASSERT_EQ(0, read_expiries(1, &b1));
	ASSERT_EQ(0, read_expiries(0, &b0));
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(self->s.fd, TIMEOUT, 0, TAG));
	for (int i = 0; i < REARMS; i++)
		ASSERT_EQ(0, sc_rearm(self->s.fd, 0));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	t1 = sc_now_ns();
	ASSERT_EQ(0, read_expiries(1, &a1));
	ASSERT_EQ(0, read_expiries(0, &a0));
	TH_LOG("%d re-arms in %llu ms; CPU 0: %lu watch, %lu buddy expiries", REARMS,
	       (unsigned long long)(t1 - t0) / SC_MS(1), a0.watch - b0.watch,
	       a0.buddy - b0.buddy);

	EXPECT_EQ(0, a1.watch - b1.watch) TH_LOG("watch timers expired on CPU 1");
	EXPECT_EQ(0, a1.buddy - b1.buddy) TH_LOG("buddy checkers expired on CPU 1");
	/* the deadline was watched, from CPU 0 */
	EXPECT_LT(0, a0.buddy - b0.buddy);
	/* no stall: every re-arm came within the deadline (unless the host
	 * stopped the vCPU for a whole deadline: then the stall is recorded)
	 */
	if (SC_STAT(self->s.fd, stalls))
		TH_LOG("note: %llu stalls (a descheduled vCPU)",
		       (unsigned long long)SC_STAT(self->s.fd, stalls));
}

TEST_F_TIMEOUT(iso, a_missed_deadline_on_an_isolated_cpu_is_captured, 120)
{
	const struct stallcap_sample *r;
	struct expiries b1, a1;
	volatile uint64_t n = 0;
	uint64_t t0;

	ASSERT_EQ(0, read_expiries(1, &b1));
	/* the deadline may find the thread preempted: then it is tried again */
	for (int attempt = 1; ; attempt++) {
		t0 = sc_now_ns();
		ASSERT_EQ(0, sc_arm(self->s.fd, TIMEOUT, 0, TAG));
		while (sc_now_ns() < t0 + 5 * TIMEOUT)
			n++;
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
					     SC_WAIT_MS));
		r = sc_first_sample_of(&self->rs, sc_gettid());
		ASSERT_NE(NULL, r);
		if (r->state == STALLCAP_STATE_RUNNING || attempt == SC_ATTEMPTS)
			break;
		TH_LOG("attempt %d: state %u, path %u", attempt, r->state, r->path);
		sc_records_free(&self->rs);
	}
	ASSERT_EQ(0, read_expiries(1, &a1));
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(1, r->cpu);
	EXPECT_EQ(STALLCAP_STATE_RUNNING, r->state);
	EXPECT_EQ(self->s.info.features & STALLCAP_FEAT_NMI ? STALLCAP_PATH_NMI :
		  STALLCAP_PATH_IPI, r->path);
	EXPECT_GT(t0 + 5 * TIMEOUT, r->capture_ns) TH_LOG("captured after the stall");
	EXPECT_EQ(0, a1.watch - b1.watch) TH_LOG("watch timers expired on CPU 1");
	EXPECT_EQ(0, a1.buddy - b1.buddy);
}

/* TSC ticks per ns, measured once as the program starts */
static double tsc_per_ns;

__attribute__((constructor)) static void measure_tsc(void)
{
	uint64_t t0 = sc_now_ns(), c0 = __builtin_ia32_rdtsc(), t;

	do
		t = sc_now_ns();
	while (t - t0 < SC_MS(20));
	tsc_per_ns = (double)(__builtin_ia32_rdtsc() - c0) / (double)(t - t0);
}

/*
 * Spins @ns calling nothing (the clock is the TSC, read inline), so that
 * a capture of it has its innermost frame here: a call to clock_gettime()
 * was sometimes caught in its PLT stub or the vDSO.
 */
SC_NOINLINE void isolated_spin(uint64_t ns)
{
	uint64_t end = __builtin_ia32_rdtsc() + (uint64_t)((double)ns * tsc_per_ns);

	while (__builtin_ia32_rdtsc() < end)
		__asm__ volatile("" ::: "memory");
}

/* CPU @cpu's count of the interrupts of /proc/interrupts line @name, or -1 */
static long read_irqs(const char *name, int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[1024], *p, *end;
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, name, strlen(name)) || p[strlen(name)] != ':')
			continue;
		p += strlen(name) + 1;
		for (int c = 0; c <= cpu; c++, p = end) {
			n = strtol(p, &end, 10);
			if (end == p) {
				n = -1;
				break;
			}
		}
		break;
	}
	fclose(f);
	return n;
}

/* CPU @cpu's count of irq_work interrupts, or -1 */
static long read_iwi(int cpu)
{
	return read_irqs("IWI", cpu);
}

#define IDLE_WAITS	10

/*
 * An unmodified event loop on CPU 1: REARMS quick iterations, IDLE_WAITS
 * waits long enough for the buddy checkers to stop, a byte on @phase_fd,
 * then a stall.
 */
static void __attribute__((noreturn)) event_loop_child(int go_fd, int phase_fd)
{
	char c;

	if (read(go_fd, &c, 1) != 1)
		_exit(2);
	for (int i = 0; i < REARMS; i++)
		poll(NULL, 0, 0);
	for (int i = 0; i < IDLE_WAITS; i++)
		poll(NULL, 0, 80);
	if (write(phase_fd, "p", 1) != 1)
		_exit(3);
	isolated_spin(5 * TIMEOUT);
	poll(NULL, 0, 0);
	_exit(0);
}

TEST_F_TIMEOUT(iso, an_attached_event_loop_on_an_isolated_cpu_fires_no_timer_there, 240)
{
	struct stallcap_attach a = {
		.size = sizeof(a), .timeout_ns = TIMEOUT, .user_tag = TAG,
	};
	const struct stallcap_sample *r;
	struct expiries b1, a1;
	int go[2], phase[2], status;
	long iwi0, iwi1, samples0, samples1;
	pid_t child;
	char c;

	if (!(self->s.info.features & STALLCAP_FEAT_ATTACH))
		SKIP(return, "the module cannot attach");
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(phase));
	child = fork();		/* on CPU 1, as this thread */
	ASSERT_LE(0, child);
	if (!child) {
		close(go[1]);
		close(phase[0]);
		event_loop_child(go[0], phase[1]);
	}
	close(go[0]);
	close(phase[1]);
	ASSERT_EQ(0, sc_pin_self(0));
	a.pid = (uint32_t)child;
	ASSERT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_ATTACH, &a));
	ASSERT_EQ(0, read_expiries(1, &b1));
	samples0 = (long)SC_STAT(self->s.fd, samples);
	iwi0 = read_iwi(1);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(phase[0], &c, 1));
	iwi1 = read_iwi(1);
	samples1 = (long)SC_STAT(self->s.fd, samples);
	close(phase[0]);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(0, read_expiries(1, &a1));
	close(go[1]);

	EXPECT_EQ(0, a1.watch - b1.watch) TH_LOG("watch timers expired on CPU 1");
	EXPECT_EQ(0, a1.buddy - b1.buddy) TH_LOG("buddy checkers expired on CPU 1");
	/*
	 * Each of the idle waits' returns woke the buddy checkers, from CPU 0
	 * (before, from an irq_work on CPU 1: one per wait).  A sample taken
	 * meanwhile (the loop's vCPU descheduled for a deadline: CI116 saw
	 * three such stalls, 8 irq_work interrupts) interrupts CPU 1 by NMI
	 * and finishes in an irq_work there (capture_tail.c): up to two each.
	 */
	ASSERT_LE(0, iwi0) TH_LOG("no IWI line in /proc/interrupts");
	TH_LOG("CPU 1: %ld irq_work interrupts over %d idle waits, %ld samples meanwhile",
	       iwi1 - iwi0, IDLE_WAITS, samples1 - samples0);
	EXPECT_GT(IDLE_WAITS / 2 + 2 * (samples1 - samples0), iwi1 - iwi0)
		TH_LOG("irq_work interrupts on CPU 1");
	/* the stall was captured, on CPU 1, from CPU 0 */
	ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, child);
	ASSERT_NE(NULL, r) TH_LOG("the loop's stall was not captured");
	EXPECT_EQ(STALLCAP_ORIGIN_ATTACH, r->origin);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(1, r->cpu);
	if (r->state == STALLCAP_STATE_RUNNING) {
		EXPECT_EQ(self->s.info.features & STALLCAP_FEAT_NMI ? STALLCAP_PATH_NMI :
			  STALLCAP_PATH_IPI, r->path);
	} else {
		TH_LOG("note: state %u (a descheduled vCPU)", r->state);
	}
	if (SC_STAT(self->s.fd, stalls) > 1)
		TH_LOG("note: %llu stalls (a descheduled vCPU)",
		       (unsigned long long)SC_STAT(self->s.fd, stalls));
}

/*
 * A heartbeat watch whose thread may run on the isolated CPU: armed on
 * CPU 0, its watch waits on CPU 0's scanner; its thread, allowed on both
 * CPUs, waits marked idle and does not doze (a wake on CPU 1 could not
 * wake the buddy checkers from there: beat_scan.c), so CPU 0 goes on
 * checking it while it sleeps; then it runs on CPU 1 and gets stuck, and
 * CPU 0 catches it there, by NMI, a threshold later, while CPU 1 takes no
 * stallcap timer (watch, buddy or scanner) all along.
 */
TEST_F_TIMEOUT(iso, a_heartbeat_thread_allowed_on_an_isolated_cpu_is_checked_from_cpu0, 120)
{
	struct expiries b1, a1, s0, e0;
	const struct stallcap_sample *r;
	struct stallcap_slot *slots, *b;
	uint64_t t0, period = TIMEOUT / 4;
	cpu_set_t both;
	size_t len;
	int slot;

	if (!(self->s.info.features & STALLCAP_FEAT_HEARTBEAT))
		SKIP(return, "module without heartbeat watches");
	if (!sc_param_is("beat_scan", 'Y') || !sc_param_is("beat_doze", 'Y'))
		SKIP(return, "module without the heartbeat scanner and dozing on");
	slots = sc4_map_beats(&self->s, &len);
	ASSERT_NE(NULL, slots) TH_LOG("beat slots: %s", strerror(errno));
	ASSERT_EQ(0, read_expiries(1, &b1));
	ASSERT_EQ(0, sc_pin_self(0));
	slot = sc_arm(self->s.fd, TIMEOUT, STALLCAP_ARM_HEARTBEAT, TAG);
	ASSERT_LE(0, slot) TH_LOG("ARM HEARTBEAT: %s", strerror(errno));
	ASSERT_GT((int)self->s.cfg.slots, slot);
	b = &slots[slot];
	sc4_beat(b);
	sc4_set_idle(b, 1);
	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(both), &both));
	/* asleep marked idle, 300 ms: checked all along from CPU 0 */
	ASSERT_EQ(0, read_expiries(0, &s0));
	t0 = sc_now_ns();
	for (int i = 0; i < 30; i++)
		usleep(10 * 1000);
	ASSERT_EQ(0, read_expiries(0, &e0));
	TH_LOG("asleep %llu ms: CPU 0 scanner %lu expiries, %lu checks",
	       (unsigned long long)(sc_now_ns() - t0) / SC_MS(1),
	       e0.beat - s0.beat, e0.checks - s0.checks);
	EXPECT_LE((sc_now_ns() - t0) / period / 4, e0.checks - s0.checks)
		TH_LOG("the watch dozed: its thread may wake on the isolated CPU");
	/* on CPU 1, stuck without a beat */
	ASSERT_EQ(0, sc_pin_self(1));
	sc4_set_idle(b, 0);
	t0 = sc_now_ns();
	isolated_spin(5 * TIMEOUT);
	sc4_beat(b);
	sc4_set_idle(b, 1);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	ASSERT_EQ(0, read_expiries(1, &a1));
	munmap(slots, len);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(1, r->cpu);
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, isolated_spin) ||
		    r->state != STALLCAP_STATE_RUNNING)
		TH_LOG("caught running at %#llx, not in isolated_spin",
		       (unsigned long long)sc_regs(r)->ip);
	EXPECT_GT(t0 + 5 * TIMEOUT, r->capture_ns) TH_LOG("captured after the stall");
	EXPECT_EQ(0, a1.watch - b1.watch) TH_LOG("watch timers expired on CPU 1");
	EXPECT_EQ(0, a1.buddy - b1.buddy) TH_LOG("buddy checkers expired on CPU 1");
	EXPECT_EQ(0, a1.beat - b1.beat) TH_LOG("a heartbeat scanner expired on CPU 1");
}

/*
 * A shared-deadline watch armed on CPU 1 gets no timer there: a checker
 * starts it on CPU 0, where it looks at the slot at each deadline and
 * finds a later one.  A look that restarts the timer would send it to the
 * thread's CPU if that took timers (watch_home.c); CPU 1 does not: no
 * function-call interrupt (CAL) is sent there for it while the thread
 * stores a deadline 20 ms ahead every millisecond, for 2 s (before, each
 * look sent one, about 100 here).
 */
TEST_F_TIMEOUT(iso, a_shared_deadline_loop_on_an_isolated_cpu_is_sent_no_timer, 120)
{
	struct stallcap_slot *slots;
	long cal0, cal1;
	uint64_t end;
	size_t len;
	int slot;

	if (!(self->s.info.features & STALLCAP_FEAT_SHARED_DEADLINE))
		SKIP(return, "module without shared-deadline watches");
	slots = sc4_map_beats(&self->s, &len);
	ASSERT_NE(NULL, slots) TH_LOG("slots: %s", strerror(errno));
	slot = sc_arm(self->s.fd, TIMEOUT, STALLCAP_ARM_SHARED_DEADLINE, TAG);
	ASSERT_LE(0, slot) TH_LOG("ARM SHARED_DEADLINE: %s", strerror(errno));
	ASSERT_GT((int)self->s.cfg.slots, slot);
	cal0 = read_irqs("CAL", 1);
	ASSERT_LE(0, cal0) TH_LOG("no CAL line in /proc/interrupts");
	end = sc_now_ns() + 2 * SC_NSEC_PER_SEC;
	while (sc_now_ns() < end) {
		__atomic_store_n(&slots[slot].deadline_ns, sc_now_ns() + TIMEOUT,
				 __ATOMIC_RELAXED);
		isolated_spin(SC_MS(1));
	}
	__atomic_store_n(&slots[slot].deadline_ns, 0, __ATOMIC_RELAXED);
	cal1 = read_irqs("CAL", 1);
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	munmap(slots, len);
	TH_LOG("CPU 1: %ld function-call interrupts in 2 s", cal1 - cal0);
	EXPECT_GT(10, cal1 - cal0) TH_LOG("the watch's timer was sent home to CPU 1");
	if (SC_STAT(self->s.fd, stalls))	/* the host stopped the vCPU */
		TH_LOG("note: %llu stalls (a descheduled vCPU)",
		       (unsigned long long)SC_STAT(self->s.fd, stalls));
}

TEST_HARNESS_MAIN
