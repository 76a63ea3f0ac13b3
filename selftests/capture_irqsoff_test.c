// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that misses its deadline while its own CPU runs with interrupts
 * off, preemption off, or in a softirq: the test-only module stallcap_spin
 * (selftests/kmod) spins in a named function that calls nothing for ten
 * deadlines.  The stall must be caught while it happens: the first sample
 * within 2x the deadline plus the buddy checking period after arming, with
 * the right context flag, the spinning function as kernel frame 0, and more
 * samples during the spin.  Pinned and unpinned, idle and with both vCPUs
 * busy; and with a heartbeat watch (never beating), whose checks are made
 * by its CPU's heartbeat scanner: the spinning CPU cannot run it, and a
 * buddy checker must scan its list for it.  And armed once the buddy
 * checkers stopped for want of an armed watch: the ARM must wake them, and
 * not from the CPU that then spins.  Pinned to CPU 0, one of the CPUs that
 * run checkers (buddy_cpus, the two lowest by default), and to the last
 * CPU, which with more than two runs none.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TAG		0x697271736f666631ULL
#define SPIN_DIR	"/sys/kernel/debug/stallcap_spin/"
#define EXPIRIES	"/sys/kernel/debug/stallcap/expiries"
#define TIMEOUT		SC_MS(20)
#define SPIN_MS		200	/* ten deadlines */
#define ATTEMPTS	8	/* a loaded TCG host delays the guest now and then */

FIXTURE(spin) {
	struct sc_session s;
	struct sc_records rs;
	struct sc_ksyms ks;
	uint64_t period;
	pthread_t busy[2];
	volatile int stop_busy;
	int nr_busy;
	int deferred;	/* attempts whose tasklet ran in ksoftirqd */
};

FIXTURE_VARIANT(spin) {
	const char *file;	/* SPIN_DIR file */
	const char *fn;		/* the function spinning */
	uint32_t flag;		/* the sample flag its context must carry */
	bool needs_nmi;		/* only an NMI reaches it */
	bool pinned;
	bool busy;		/* a busy thread on each vCPU */
	uint32_t arm_flags;	/* STALLCAP_ARM_HEARTBEAT: a heartbeat watch */
	bool after_stop;	/* armed once the buddy checkers stopped */
	bool last_cpu;		/* pinned to the last CPU, not CPU 0 */
};

FIXTURE_VARIANT_ADD(spin, irqsoff_pinned) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .pinned = true,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_pinned_checkers_stopped) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .pinned = true,
	.after_stop = true,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_pinned_last_cpu) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .pinned = true,
	.last_cpu = true,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_unpinned) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_pinned_busy) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .pinned = true,
	.busy = true,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_unpinned_busy) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .busy = true,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_pinned_heartbeat) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .pinned = true,
	.arm_flags = STALLCAP_ARM_HEARTBEAT,
};

FIXTURE_VARIANT_ADD(spin, irqsoff_pinned_busy_heartbeat) {
	.file = "irqsoff", .fn = "stallcap_spin_irqsoff_loop",
	.flag = STALLCAP_SAMPLE_IRQS_OFF, .needs_nmi = true, .pinned = true,
	.busy = true, .arm_flags = STALLCAP_ARM_HEARTBEAT,
};

FIXTURE_VARIANT_ADD(spin, preemptoff_pinned) {
	.file = "preemptoff", .fn = "stallcap_spin_preemptoff_loop",
	.pinned = true,
};

FIXTURE_VARIANT_ADD(spin, preemptoff_unpinned_busy) {
	.file = "preemptoff", .fn = "stallcap_spin_preemptoff_loop",
	.busy = true,
};

FIXTURE_VARIANT_ADD(spin, softirq_pinned) {
	.file = "softirq", .fn = "stallcap_spin_softirq_loop",
	.flag = STALLCAP_SAMPLE_IN_SOFTIRQ, .pinned = true,
};

FIXTURE_VARIANT_ADD(spin, softirq_unpinned_busy) {
	.file = "softirq", .fn = "stallcap_spin_softirq_loop",
	.flag = STALLCAP_SAMPLE_IN_SOFTIRQ, .busy = true,
};

static void *busy_fn(void *arg)
{
	FIXTURE_DATA(spin) *self = arg;

	while (!self->stop_busy)
		;
	return NULL;
}

static uint64_t read_check_us(void)
{
	FILE *f = fopen("/sys/module/stallcap/parameters/check_us", "r");
	unsigned long long us = 0;

	if (f) {
		if (fscanf(f, "%llu", &us) != 1)
			us = 0;
		fclose(f);
	}
	return us * 1000;
}

FIXTURE_SETUP(spin)
{
	char path[128];

	self->s.fd = -1;
	snprintf(path, sizeof(path), SPIN_DIR "%s", variant->file);
	if (access(path, W_OK))
		SKIP(return, "no test module (%s)", path);
	if (geteuid() != 0)
		SKIP(return, "needs root (kernel addresses, debugfs)");
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	if (variant->needs_nmi && !(self->s.info.features & STALLCAP_FEAT_NMI))
		SKIP(return, "capture by IPI cannot reach a CPU with interrupts off");
	if (variant->flag == STALLCAP_SAMPLE_IN_SOFTIRQ && variant->busy && sc_kernel_is_rt())
		SKIP(return, "PREEMPT_RT runs softirqs preemptibly: a busy thread preempts the spin");
	ASSERT_TRUE(self->s.info.features & STALLCAP_FEAT_KADDR);
	ASSERT_EQ(0, sc_ksyms_load(&self->ks));
	self->period = read_check_us();
	ASSERT_LT(0, self->period) TH_LOG("no check_us parameter");
	if (variant->busy) {
		for (int i = 0; i < 2; i++) {
			cpu_set_t set;

			ASSERT_EQ(0, pthread_create(&self->busy[i], NULL, busy_fn, self));
			CPU_ZERO(&set);
			CPU_SET(i, &set);
			pthread_setaffinity_np(self->busy[i], sizeof(set), &set);
			self->nr_busy++;
		}
	}
	if (variant->pinned) {
		ASSERT_EQ(0, sc_pin_self(variant->last_cpu ?
					 (int)sysconf(_SC_NPROCESSORS_ONLN) - 1 : 0));
	} else {
		cpu_set_t all;

		CPU_ZERO(&all);
		for (int i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &all);
		sched_setaffinity(0, sizeof(all), &all);
	}
}

FIXTURE_TEARDOWN(spin)
{
	self->stop_busy = 1;
	for (int i = 0; i < self->nr_busy; i++)
		pthread_join(self->busy[i], NULL);
	sc_ksyms_free(&self->ks);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

static int spin_ms(const char *file, unsigned int ms)
{
	char path[128];

	snprintf(path, sizeof(path), SPIN_DIR "%s", file);
	return sc_write_num(path, ms);
}

/* Is @r's kernel frame 0 in the function named @fn? */
static bool frame0_is(const struct sc_ksyms *ks, const struct stallcap_sample *r,
		      const char *fn)
{
	const char *name;

	if (!sc_nk(r))
		return false;
	name = sc_ksym_name(ks, sc_kernel_ips(r)[0]);
	return name && !strcmp(name, fn);
}

/*
 * Was @r taken in an interrupt on top of @fn: the frame just above @fn is
 * an interrupt's entry (asm_sysvec_*, asm_common_interrupt) or its return
 * (the iret back to @fn)?  With interrupts on, the capture may land in a
 * timer interrupt taken on the spin, in its softirqs (flagged IN_SOFTIRQ)
 * or in its exit path (no longer counted as hard IRQ: seen on debug in
 * irqentry_exit(), and on 6.1 at native_irq_return_iret itself).
 */
static bool under_an_interrupt(const struct sc_ksyms *ks, const struct stallcap_sample *r,
			       const char *fn)
{
	static const char *const irq_return[] = {
		"native_irq_return", "native_iret", "common_interrupt_return",
		"restore_regs_and_return_to_kernel", NULL
	};
	const __u64 *ip = sc_kernel_ips(r);
	const char *const fns[] = { fn, NULL };
	const char *above;

	for (unsigned int i = 1; i < sc_nk(r); i++) {
		/* an interrupted ip, not a return address: look at both */
		if (!sc_name_has_prefix(sc_ksym_name(ks, ip[i]), fns) &&
		    !sc_name_has_prefix(sc_ksym_name(ks, ip[i] - 1), fns))
			continue;
		above = sc_ksym_name(ks, ip[i - 1]);
		if (!above)
			return false;
		return (!strncmp(above, "asm_", 4) && strstr(above, "interrupt")) ||
		       sc_name_has_prefix(above, irq_return);
	}
	return false;
}

/*
 * Was @r taken in an interrupt's entry code, before the registers it
 * interrupted were saved, so that the unwinder could not go past it?  Its
 * stack is then cut (KSTACK_TRUNC) at an asm_*interrupt frame (seen on
 * 7.2: an NMI at asm_sysvec_apic_timer_interrupt, the only frame).
 */
static bool cut_in_interrupt_entry(const struct sc_ksyms *ks, const struct stallcap_sample *r)
{
	const char *last;

	if (!(r->flags & STALLCAP_SAMPLE_KSTACK_TRUNC) || !sc_nk(r))
		return false;
	last = sc_ksym_name(ks, sc_kernel_ips(r)[sc_nk(r) - 1]);
	return last && !strncmp(last, "asm_", 4) && strstr(last, "interrupt");
}

/*
 * One spin under a deadline; returns true when it met the timing acceptance
 * (a loaded TCG host may delay the guest: the caller tries again).
 */
/*
 * The buddy checkers' expiries (debugfs stallcap/expiries) on CPU @cpu, or
 * on all CPUs for -1; -1 when unreadable.
 */
static long buddy_expiries_on(int cpu)
{
	FILE *f = fopen(EXPIRIES, "r");
	unsigned long w, b;
	long sum = -1;
	char line[160];
	int c;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu%d watch %lu buddy %lu", &c, &w, &b) == 3 &&
		    (cpu < 0 || c == cpu))
			sum = (sum < 0 ? 0 : sum) + (long)b;
	fclose(f);
	return sum;
}

static long buddy_expiries(void)
{
	return buddy_expiries_on(-1);
}

/*
 * The checkers' expiries, walks of every watch and looks into a suspect
 * CPU's timer queue (-1 from a module that has none), all CPUs: 0, or -1.
 */
static int buddy_counts(long *expiries, long *walks, long *queue_looks)
{
	FILE *f = fopen(EXPIRIES, "r");
	unsigned long w, b, r, bt, ch, sn, bn, wk, hm, ql;
	char line[256];
	int c, n, ret = -1;

	*expiries = *walks = *queue_looks = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n = sscanf(line, "cpu%d watch %lu buddy %lu rescued %lu beat %lu checks %lu scan_ns %lu buddy_ns %lu walks %lu homed %lu queue_looks %lu",
			   &c, &w, &b, &r, &bt, &ch, &sn, &bn, &wk, &hm, &ql);
		if (n < 9)
			continue;
		*expiries += (long)b;
		*walks += (long)wk;
		*queue_looks = n == 11 && *queue_looks >= 0 ? *queue_looks + (long)ql : -1;
		ret = 0;
	}
	fclose(f);
	return ret;
}

static int buddy_walks(long *expiries, long *walks)
{
	long queue_looks;

	return buddy_counts(expiries, walks, &queue_looks);
}

/*
 * Wait until the buddy checkers have stopped for want of an armed watch
 * (BUDDY_LINGER_PERIODS, 32, after the last): their expiries stand still.
 * Return: the expiries then, or -1 when they never stopped.
 */
static long checkers_stopped(uint64_t period_ns)
{
	useconds_t wait = 100 * 1000 + 64 * period_ns / 1000;
	long before, after = -1;

	for (int tries = 0; tries < 20; tries++) {
		before = buddy_expiries();
		usleep(wait);
		after = buddy_expiries();
		if (before >= 0 && after == before)
			return after;
	}
	return -1;
}

#define NOHZ_FULL	"/sys/devices/system/cpu/nohz_full"

/* Are CPUs isolated from timers (nohz_full=)? */
static bool cpus_isolated(void)
{
	char buf[64] = "";
	FILE *f = fopen(NOHZ_FULL, "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return buf[0] && buf[0] != '\n' && strncmp(buf, "(null)", 6);
}

static bool run_once(struct __test_metadata *_metadata, FIXTURE_DATA(spin) *self,
		     const FIXTURE_VARIANT(spin) *variant, int attempt)
{
	const struct stallcap_sample *first, *r;
	uint64_t t0, t1, bound, spin_end;
	const char *const spin_fn[] = { variant->fn, NULL };
	bool irqs_off = variant->flag & STALLCAP_SAMPLE_IRQS_OFF;
	unsigned int during = 0, in_fn = 0, in_hardirq = 0;
	pid_t tid = sc_gettid();
	long stopped = 0, exp0, walks0, looks0, exp1, walks1, looks1;
	int ret;

	/*
	 * Kernels before 6.5 leave softirqs to ksoftirqd while it is runnable,
	 * as it is right after a previous spin (which ended with softirqs
	 * pending): give it a moment to drain first.
	 */
	usleep(20000);
	if (variant->after_stop) {
		/* a watch that exists, idle: the checkers stop, the ARM wakes them */
		ASSERT_EQ(0, sc_arm(self->s.fd, TIMEOUT, 0, TAG));
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		stopped = checkers_stopped(self->period);
		ASSERT_LT(0, stopped) TH_LOG("the checkers still run with no watch armed");
	}
	ASSERT_EQ(0, buddy_counts(&exp0, &walks0, &looks0));
	t0 = sc_now_ns();
	/* a heartbeat watch's ARM returns its slot: the thread never beats */
	ASSERT_LE(0, sc_arm(self->s.fd, TIMEOUT, variant->arm_flags, TAG));
	ret = spin_ms(variant->file, SPIN_MS);
	t1 = sc_now_ns();
	ASSERT_EQ(0, buddy_counts(&exp1, &walks1, &looks1));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	if (ret == -EAGAIN) {
		/* the spin ran in ksoftirqd, not in this thread: no claim */
		TH_LOG("attempt %d: the kernel ran the tasklet in ksoftirqd", attempt);
		ASSERT_GT(ATTEMPTS, ++self->deferred) TH_LOG("never spun in this thread");
		sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, 100);
		sc_records_free(&self->rs);
		return false;
	}
	ASSERT_EQ(0, ret);
	attempt -= self->deferred;	/* those are not held against the timing */
	/*
	 * No stall at all: the only CPU that could see it (the other vCPU)
	 * did not run for the whole spin, which a TCG guest on an overloaded
	 * host sees.  Logged, and tried again like a late one.
	 */
	first = NULL;
	if (sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) == 1)
		first = sc_first_sample_of(&self->rs, tid);
	if (!first) {
		TH_LOG("attempt %d: no stall recorded (spin took %llu us)", attempt,
		       (unsigned long long)(t1 - t0) / 1000);
		ASSERT_GT(ATTEMPTS, attempt) TH_LOG("never caught");
		sc_records_free(&self->rs);
		return false;
	}

	/*
	 * Within 2x the deadline plus the checking period, and during the
	 * spin: it began after t0 and lasts SPIN_MS (the write may return
	 * much later when a busy thread preempts this one after the spin).
	 */
	bound = t0 + 2 * TIMEOUT + self->period;
	spin_end = t0 + SC_MS(SPIN_MS);
	for (size_t i = 0; (r = sc_records_nth(&self->rs, STALLCAP_REC_SAMPLE, i)); i++) {
		/* a capture that could not interrupt the thread claims no frame */
		if (r->tid != (__u32)tid || r->capture_ns >= spin_end ||
		    r->state != STALLCAP_STATE_RUNNING ||
		    r->flags & (STALLCAP_SAMPLE_MIGRATED | STALLCAP_SAMPLE_ABANDONED))
			continue;
		if (r->flags & STALLCAP_SAMPLE_IN_HARDIRQ && !irqs_off) {
			in_hardirq++;
			continue;
		}
		during++;
		/*
		 * With interrupts off no interrupt can be on top of the spin:
		 * frame 0 is the spin function, exactly (an interrupt's or the
		 * NMI's frames there would be the capture's own, a bug)
		 */
		in_fn += frame0_is(&self->ks, r, variant->fn) ||
			 (!irqs_off && (under_an_interrupt(&self->ks, r, variant->fn) ||
					cut_in_interrupt_entry(&self->ks, r)));
	}
	/*
	 * A vCPU descheduled by a loaded host for a whole deadline lets it
	 * pass before the spin (still in ARM, or on the way to the spin:
	 * the debug guest was caught in spin_write()'s parsing of the
	 * count, 20 ms after the ARM): the first sample then lacks the
	 * spinning function; then, or when it is late, try again.
	 */
	/*
	 * an NMI may also land in an interrupt on top of the spin, unless
	 * interrupts are off: then such a first sample fails below
	 */
	if (first->capture_ns > bound || first->state != STALLCAP_STATE_RUNNING ||
	    (!irqs_off && (first->flags & STALLCAP_SAMPLE_IN_HARDIRQ ||
			   under_an_interrupt(&self->ks, first, variant->fn) ||
			   cut_in_interrupt_entry(&self->ks, first))) ||
	    !sc_kstack_has(&self->ks, first, spin_fn)) {
		TH_LOG("attempt %d: first sample %lld us after arming (bound %llu us), state %u, path %u",
		       attempt, (long long)(first->capture_ns - t0) / 1000,
		       (unsigned long long)(bound - t0) / 1000, first->state, first->path);
		sc_log_sample(&self->ks, first);
		ASSERT_GT(ATTEMPTS, attempt) TH_LOG("never caught in time");
		sc_records_free(&self->rs);
		return false;
	}
	/*
	 * The later samples of the spin all landed in a hard interrupt on
	 * top of it (CI120's 6.12 guest: three NMIs in a row inside the
	 * timer interrupt of a loaded host's vCPU): a try that says nothing
	 * about them either
	 */
	if (during < 2 && during + in_hardirq >= 2) {
		TH_LOG("attempt %d: %u of the spin's samples in a hard interrupt on top of it",
		       attempt, in_hardirq);
		ASSERT_GT(ATTEMPTS, attempt) TH_LOG("never sampled outside an interrupt");
		sc_records_free(&self->rs);
		return false;
	}

	EXPECT_EQ(TAG, first->user_tag);
	EXPECT_LT(first->capture_ns, spin_end) TH_LOG("first sample after the spin");
	EXPECT_LE(SC_MS(SPIN_MS), t1 - t0) TH_LOG("the spin took only %llu us",
						  (unsigned long long)(t1 - t0) / 1000);
	EXPECT_TRUE(frame0_is(&self->ks, first, variant->fn))
		TH_LOG("kernel frame 0 is %s, not %s",
		       sc_nk(first) ?
		       sc_ksym_name(&self->ks, sc_kernel_ips(first)[0]) ?: "?" : "none",
		       variant->fn);
	EXPECT_FALSE(first->flags & STALLCAP_SAMPLE_USER_MODE);
	if (variant->flag)
		EXPECT_TRUE(first->flags & variant->flag)
			TH_LOG("flags %#x lack %#x", first->flags, variant->flag);
	if (variant->needs_nmi)
		EXPECT_EQ(STALLCAP_PATH_NMI, first->path);
	EXPECT_LE(2, during) TH_LOG("only %u samples during the spin", during);
	if (variant->after_stop)
		EXPECT_LT(stopped, buddy_expiries()) TH_LOG("the ARM woke no checker");
	EXPECT_EQ(during, in_fn) TH_LOG("samples during the spin outside %s", variant->fn);
	/*
	 * The checkers found the stuck CPU's overdue timer at the head of its
	 * hrtimer queue, not by walking every watch in every period of the
	 * spin (a heartbeat watch is on its scanner's list instead; CPUs
	 * isolated from timers make every period walk).
	 */
	if (variant->needs_nmi && !(variant->arm_flags & STALLCAP_ARM_HEARTBEAT) &&
	    !cpus_isolated() && looks1 >= 0) {
		ksft_print_msg("during the spin: %ld checker periods, %ld queue looks, %ld walks\n",
			       exp1 - exp0, looks1 - looks0, walks1 - walks0);
		EXPECT_LT(0, looks1 - looks0) TH_LOG("no look into the stuck CPU's timer queue");
		EXPECT_LE(4 * (walks1 - walks0), looks1 - looks0)
			TH_LOG("the checkers walked every watch in %ld periods", walks1 - walks0);
	}
	if (_metadata->exit_code)
		sc_log_records(&self->ks, &self->rs);
	return true;
}

TEST_F_TIMEOUT(spin, caught_during_the_spin, 60)
{
	for (int attempt = 1; !run_once(_metadata, self, variant, attempt); attempt++)
		;
}

#define BUDDY_CPUS	"/sys/module/stallcap/parameters/buddy_cpus"

/* How many CPUs run checkers: buddy_cpus (0: all), at least 2; -1 if unknown. */
static int checker_cpus(int cpus)
{
	FILE *f = fopen(BUDDY_CPUS, "r");
	int n = -1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	if (n < 0)
		return -1;
	return n == 0 || n >= cpus ? cpus : n < 2 ? 2 : n;
}

/* Each CPU's checker expiries over @ms: which CPUs ran one (a bit each). */
static uint64_t checking_cpus(int cpus, unsigned int ms)
{
	long before[64], after;
	uint64_t mask = 0;

	for (int c = 0; c < cpus; c++)
		before[c] = buddy_expiries_on(c);
	usleep(ms * 1000);
	for (int c = 0; c < cpus; c++) {
		after = buddy_expiries_on(c);
		if (before[c] >= 0 && after > before[c])
			mask |= 1ULL << c;
	}
	return mask;
}

/*
 * With a watch armed, the checkers run on the buddy_cpus lowest CPUs only
 * (2 by default): every checker looks at every watch, so that more would
 * only add timer interrupts (each CPU of a large machine took 1,000 per
 * second while any watch was armed).  A CPU that runs none is still
 * covered: irqsoff_pinned_last_cpu above.
 */
TEST(buddy_checkers_run_on_the_lowest_buddy_cpus_only)
{
	int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN), k = checker_cpus(cpus);
	struct sc_session s;
	uint64_t mask;

	if (cpus < 3 || cpus > 64)
		SKIP(return, "%d CPUs: all of them run checkers", cpus);
	if (k < 0 || buddy_expiries_on(0) < 0)
		SKIP(return, "no %s or %s", BUDDY_CPUS, EXPIRIES);
	if (cpus_isolated())
		SKIP(return, "CPUs isolated from timers (nohz_full)");
	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	ASSERT_EQ(0, sc_arm(s.fd, SC_MS(60000), 0, TAG));
	usleep(100 * 1000);
	mask = checking_cpus(cpus, 300);
	ksft_print_msg("%d CPUs, %d run checkers: mask %#llx\n", cpus, k,
		       (unsigned long long)mask);
	EXPECT_EQ((1ULL << k) - 1, mask);
	EXPECT_EQ(0, sc_disarm(s.fd));
	sc_session_close(&s);
}

/*
 * With watches armed and no CPU stuck, a checker looks at each CPU's next
 * hrtimer event, not at every watch: most of its periods skip the walk (a
 * period of 10,000 watches took tens of microseconds under TCG).  Not all:
 * a vCPU that the host stops for a period looks stuck, and is.  The
 * interrupts-off cases above show that a stuck CPU's watches are walked.
 */
TEST(buddy_checkers_walk_the_watches_only_for_a_stuck_cpu)
{
	long e0, w0, e1, w1;
	struct sc_session s;

	if (buddy_walks(&e0, &w0))
		SKIP(return, "no walk counts in %s", EXPIRIES);
	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	ASSERT_EQ(0, sc_arm(s.fd, SC_MS(60000), 0, TAG));
	usleep(100 * 1000);
	ASSERT_EQ(0, buddy_walks(&e0, &w0));
	usleep(500 * 1000);
	ASSERT_EQ(0, buddy_walks(&e1, &w1));
	ksft_print_msg("%ld checker periods, %ld walked the watches\n", e1 - e0, w1 - w0);
	EXPECT_LT(100, e1 - e0) TH_LOG("the checkers did not run");
	EXPECT_GE(e1 - e0, 2 * (w1 - w0)) TH_LOG("most periods walked the watches");
	EXPECT_EQ(0, sc_disarm(s.fd));
	sc_session_close(&s);
}

#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"

static int cpu1_set_online(int on)
{
	return sc_write_bool(CPU1_ONLINE, on);
}

/*
 * CPU 1 goes offline and comes back while a watch is armed: its checker
 * runs there again (before, the kernel moved its pinned timer to CPU 0,
 * where it ran as CPU 0's, and CPU 1 was marked running for good: no
 * checker there any more to catch a CPU with interrupts off).  With more
 * CPUs than run checkers, the next CPU takes CPU 1's place while it is
 * away and gives it back.
 */
TEST(buddy_checker_runs_again_after_cpu_hotplug)
{
	int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int k = cpus > 64 || cpus_isolated() ? -1 : checker_cpus(cpus);
	struct sc_session s;
	long b0, b1;

	if (geteuid() || access(CPU1_ONLINE, W_OK))
		SKIP(return, "needs root and CPU 1's hotplug");
	if (buddy_expiries_on(1) < 0)
		SKIP(return, "no %s", EXPIRIES);
	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	ASSERT_EQ(0, sc_arm(s.fd, SC_MS(60000), 0, TAG));
	usleep(100 * 1000);
	b0 = buddy_expiries_on(1);
	usleep(200 * 1000);
	b1 = buddy_expiries_on(1);
	EXPECT_LT(b0, b1) TH_LOG("no checker on CPU 1 with a watch armed");
	ASSERT_EQ(0, cpu1_set_online(0));
	usleep(100 * 1000);
	if (k >= 0 && k < cpus)
		EXPECT_NE(0ULL, checking_cpus(cpus, 200) & 1ULL << k)
			TH_LOG("CPU %d did not take CPU 1's place", k);
	ASSERT_EQ(0, cpu1_set_online(1));
	usleep(100 * 1000);
	if (k >= 0 && k < cpus)
		EXPECT_EQ((1ULL << k) - 1, checking_cpus(cpus, 200))
			TH_LOG("CPU 1 back: the checkers are not on the %d lowest CPUs", k);
	b0 = buddy_expiries_on(1);
	usleep(200 * 1000);
	b1 = buddy_expiries_on(1);
	EXPECT_LT(b0, b1) TH_LOG("CPU 1's checker did not come back (%ld expiries, then %ld)",
				 b0, b1);
	EXPECT_EQ(0, sc_disarm(s.fd));
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
