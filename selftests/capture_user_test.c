// SPDX-License-Identifier: GPL-2.0
/*
 * A thread spinning in user code misses its deadline: the record says it was
 * running in user mode, inside the known function, with the frame-pointer
 * chain up to its callers, its registers and a raw copy of its stack.
 */
#include "stallcap_test.h"

#include "sc_harness.h"
#include "stall_util.h"

#define TIMEOUT		SC_MS(20)

int main(int argc, char **argv);	/* TEST_HARNESS_MAIN's, reached by the FP walk */
#define TAG		0x7461677573657231ULL
#define SAMPLES		2	/* samples a spinning thread takes before it stops */
#define ATTEMPTS	SC_ATTEMPTS
/*
 * Runs to catch a spinning thread in user mode, or by the path a case asks
 * for: on the debug kernel an IPI lands in the slow tick's kernel code often
 * enough (CI54: three runs in a row, each a correct sample of the thread in
 * the kernel), and beside a kernel build the buddy checker took a late
 * CPU's timer over three times in a row on 6.12-rt; a run costs a few
 * hundred ms.
 */
#define USER_ATTEMPTS	6

/* What a spinning thread's stall must look like. */
struct spin_expect {
	pid_t tid;
	char comm[16];
	uint64_t t0, t1;	/* CLOCK_MONOTONIC around the ARM */
	uint64_t t2;		/* when it went to spin (after migrating) */
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

/* The first sample of a thread that spun in spin_in_user() from spin_in_user_caller(). */
/*
 * The user stack of a user-mode sample: the sample's own (NMI/IPI: copied by
 * the irq_work after the handler), or, taken by the thread's own timer, its
 * USER_STACK record, read on that interrupt's return to user space (the
 * module parameter user_copy_in_timer=1, or a kernel without task_work_add(),
 * copies it in the interrupt).
 */
static const struct stallcap_sample *
user_part_of(struct __test_metadata *_metadata, const struct sc_records *rs,
	     const struct stallcap_sample *r)
{
	const struct stallcap_sample *u = sc4_user_frames_of(rs, r);

	if (r->path == STALLCAP_PATH_LOCAL && !sc_param_is("user_copy_in_timer", 'Y') &&
	    !sc_expect_no_task_work()) {
		EXPECT_TRUE(r->flags & STALLCAP_SAMPLE_DEFER_PENDING)
			TH_LOG("a user-mode LOCAL sample copied its user stack in the interrupt");
		EXPECT_EQ(0, sc_nu(r) + sc_stack_size(r));
	}
	/* without task_work_add() the timer copies it (compat.h) */
	if (sc_expect_no_task_work()) {
		EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_DEFER_PENDING);
		EXPECT_EQ(u, r) TH_LOG("the user part is not the sample's own");
	}
	if (!u)
		return NULL;
	EXPECT_EQ(1, sc4_user_stacks_of(rs, r->cookie, NULL) + (u == r));
	EXPECT_EQ(sc_regs(r)->ip, sc_regs(u)->ip);
	EXPECT_EQ(sc_regs(r)->sp, sc_regs(u)->sp);
	EXPECT_EQ(sc_regs(r)->bp, sc_regs(u)->bp);
	return u;
}

static void check_user_sample(struct __test_metadata *_metadata, const struct sc_session *s,
			      const struct sc_records *rs, const struct stallcap_sample *sample,
			      const struct spin_expect *e)
{
	const struct stallcap_sample *r = sample;
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
	EXPECT_TRUE(r->flags & STALLCAP_SAMPLE_USER_MODE);
	EXPECT_EQ(NULL, sc_syscall(r)) TH_LOG("a system call in user mode");
	EXPECT_FALSE(r->flags & (STALLCAP_SAMPLE_IRQS_OFF | STALLCAP_SAMPLE_IN_HARDIRQ |
				 STALLCAP_SAMPLE_IN_SOFTIRQ | STALLCAP_SAMPLE_NO_USER |
				 STALLCAP_SAMPLE_MIGRATED | STALLCAP_SAMPLE_RACED));
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
	r = user_part_of(_metadata, rs, sample);
	ASSERT_NE(NULL, r) TH_LOG("no USER_STACK record for cookie %llu",
				  (unsigned long long)sample->cookie);
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user))
		TH_LOG("regs.ip %#llx is in %s", (unsigned long long)sc_regs(r)->ip,
		       sc_usym_name(sc_regs(r)->ip) ?: "?");
	ASSERT_LE(2, sc_nu(r));
	EXPECT_EQ(sc_regs(r)->ip, sc_user_ips(r)[0]);
	EXPECT_EQ(0, sc_ustack_find(r, spin_in_user));
	caller = sc_ustack_find(r, spin_in_user_caller);
	EXPECT_EQ(1, caller) TH_LOG("spin_in_user_caller not frame 1");
	outer = sc_ustack_find(r, e->outer_fn);
	EXPECT_LT(caller, outer) TH_LOG("%s not reached by the frame-pointer walk",
					e->outer_name);

	/* the raw copy: from regs.sp, as long as configured, the real stack */
	EXPECT_NE(0, sc_regs(r)->sp);
	EXPECT_NE(0, sc_regs(r)->bp);
	EXPECT_EQ(sc_regs(r)->sp, sc_stack_start(r));
	if (r->flags & STALLCAP_SAMPLE_COPY_PARTIAL) {
		EXPECT_GT(s->cfg.user_stack_bytes, sc_stack_size(r));
	} else {
		EXPECT_EQ(s->cfg.user_stack_bytes, sc_stack_size(r));
	}
	if (sc_regs(r)->bp >= sc_regs(r)->sp && sc_regs(r)->bp + 16 <= sc_regs(r)->sp + sc_stack_size(r)) {
		uint64_t ret;

		memcpy(&ret, sc_stack(r) + (sc_regs(r)->bp + 8 - sc_regs(r)->sp), 8);
		EXPECT_EQ(sc_user_ips(r)[1], ret)
			TH_LOG("the copy's return address at bp+8 is not user frame 1");
	}
	EXPECT_TRUE(sc_stack_has_canary(r))
		TH_LOG("the caller's canary is not in the raw stack copy");
}

/*
 * Any sample of the spinning thread.  It spins in user code without system
 * calls or faults, so its user registers are in spin_in_user() whatever the
 * sample found: the thread in user mode, in an interrupt or a preemption
 * taken on top of its user code (kernel mode), or preempted (read remotely).
 */
static void check_any_sample(struct __test_metadata *_metadata, const struct stallcap_sample *r)
{
	EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_NO_USER);
	if (r->flags & STALLCAP_SAMPLE_ABANDONED)
		return;
	/*
	 * RACED (a thread still migrating, read remotely while it ran): the
	 * registers saved at its last kernel entry may be those of the
	 * sched_setaffinity() that moved it (seen in a notw run, 6.12)
	 */
	if ((r->flags & STALLCAP_SAMPLE_RACED) &&
	    sc_ip_in_fn(sc_regs(r)->ip, sched_setaffinity))
		return;
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user))
		TH_LOG("sample %u: regs.ip %#llx is in %s", r->sample_index,
		       (unsigned long long)sc_regs(r)->ip, sc_usym_name(sc_regs(r)->ip) ?: "?");
	if (r->path == STALLCAP_PATH_BLOCKED) {
		EXPECT_TRUE(r->state == STALLCAP_STATE_RUNNABLE ||
			    r->state == STALLCAP_STATE_RUNNING) TH_LOG("state %u", r->state);
	} else {
		EXPECT_EQ(STALLCAP_STATE_RUNNING, r->state);
		if (!(r->flags & STALLCAP_SAMPLE_USER_MODE))
			EXPECT_LT(0, sc_nk(r));
	}
}

/* A first sample that found the thread running its user code. */
static bool caught_running_in_user(const struct stallcap_sample *r)
{
	return r->state == STALLCAP_STATE_RUNNING && r->path != STALLCAP_PATH_BLOCKED &&
	       (r->flags & STALLCAP_SAMPLE_USER_MODE) &&
	       !(r->flags & (STALLCAP_SAMPLE_IN_HARDIRQ | STALLCAP_SAMPLE_IN_SOFTIRQ |
			     STALLCAP_SAMPLE_MIGRATED | STALLCAP_SAMPLE_RACED |
			     STALLCAP_SAMPLE_ABANDONED));
}

/* How a spinning thread is set up, and what it must produce. */
struct scenario {
	struct sc_opts opts;
	bool in_main;		/* spin in the test's own thread */
	int arm_cpu;		/* -1: do not pin */
	int spin_cpu;		/* migrate here after arming; -1: stay */
	int stopper_cpu;
	uint64_t timeout;	/* relative timeout, or */
	uint64_t absolute_in;	/* ABSOLUTE deadline this far from now */
	uint64_t tag;
	uint64_t samples;	/* spin until this many samples */
	int delay_ms;		/* and this much longer */
};

struct run {
	struct sc_session s;
	struct sc_records rs;
	struct spin_expect e;
};

struct spinner {
	const struct scenario *sc;
	struct run *run;
	volatile int *stop;
	int arm_ret, arm_errno, disarm_ret;
};

static void spin_body(struct spinner *sp)
{
	const struct scenario *sc = sp->sc;
	struct spin_expect *e = &sp->run->e;
	int fd = sp->run->s.fd;

	sc_get_comm(e->comm);
	e->tid = sc_gettid();
	e->tag = sc->tag;
	if (sc->arm_cpu >= 0)
		sc_pin_self(sc->arm_cpu);
	e->t0 = sc_now_ns();
	if (sc->absolute_in) {
		e->deadline = e->t0 + sc->absolute_in;
		sp->arm_ret = sc_arm(fd, e->deadline, STALLCAP_ARM_ABSOLUTE, sc->tag);
	} else {
		e->timeout = sc->timeout;
		sp->arm_ret = sc_arm(fd, sc->timeout, 0, sc->tag);
	}
	sp->arm_errno = errno;
	e->t1 = sc_now_ns();
	if (sc->spin_cpu >= 0)
		sc_pin_self(sc->spin_cpu);	/* migrates now */
	e->t2 = sc_now_ns();
	if (!sp->arm_ret)
		spin_in_user_caller(sp->stop);
	sp->disarm_ret = sc_disarm(fd);
}

/* The thread start function the FP walk must reach. */
SC_NOINLINE void *spinner_thread_main(void *arg)
{
	prctl(PR_SET_NAME, "sc-spinner", 0, 0, 0);
	spin_body(arg);
	return NULL;
}

static void run_free(struct run *run)
{
	sc_records_free(&run->rs);
	sc_session_close(&run->s);
	memset(run, 0, sizeof(*run));
}

/* Run @sc once: a session, a spinning thread, its stall up to the stall-end. */
static void run_once(struct __test_metadata *_metadata, const struct scenario *sc,
		     struct run *run)
{
	struct sc_stopper st = { .cpu = sc->stopper_cpu, .delay_ms = sc->delay_ms };
	struct spinner sp = { .sc = sc, .run = run, .stop = &st.stop };
	pthread_t th;

	ASSERT_EQ(0, sc_session_setup(&run->s, &sc->opts));
	ASSERT_LE(run->s.info.min_deadline_ns, TIMEOUT);
	run->e.outer_fn = sc->in_main ? (void *)main : (void *)spinner_thread_main;
	run->e.outer_name = sc->in_main ? "main" : "spinner_thread_main";
	ASSERT_EQ(0, sc_stopper_start(&st, run->s.fd, sc->samples, SC_WAIT_MS));
	if (sc->in_main) {
		spin_body(&sp);
	} else {
		ASSERT_EQ(0, pthread_create(&th, NULL, spinner_thread_main, &sp));
		pthread_join(th, NULL);
	}
	sc_stopper_join(&st);
	ASSERT_EQ(0, sp.arm_ret) TH_LOG("ARM: %s", strerror(sp.arm_errno));
	ASSERT_EQ(0, sp.disarm_ret);
	ASSERT_FALSE(st.timed_out) TH_LOG("no capture within %d ms", SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&run->s, &run->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS))
		sc_log_records(NULL, &run->rs);
	for (size_t i = 0; i < run->rs.n; i++) {
		const struct stallcap_sample *r = (const void *)run->rs.rec[i];

		/*
		 * A deadline that came while a loaded host was still migrating
		 * the thread finds it in sched_setaffinity(), not spinning:
		 * run_until_caught_in_user() tries again.  A sample after the
		 * stopper ended the spin may find the thread in its DISARM
		 * (CI29's debug guest: in the ioctl, before the stall's end).
		 */
		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->capture_ns >= run->e.t2 &&
		    r->capture_ns < st.stop_ns)
			check_any_sample(_metadata, r);
	}
}

/*
 * Is @ip on the thread's way into spin_in_user(), after the clock read of
 * e.t2 began: still inside that clock_gettime() (its clock value read,
 * not yet returned: CI118's debug guest, a sample 3.8 ms late there, after
 * e.t2), or in the caller's code before its call?
 */
static bool on_way_into_spin(uint64_t ip)
{
	return sc_ip_in_fn(ip, clock_gettime) || sc_ip_in_fn(ip, spin_in_user_caller) ||
	       sc_ip_in_fn(ip, spinner_thread_main);
}

/*
 * Run @sc until its first sample caught the thread running its user code:
 * on a loaded TCG host the deadline may also find it preempted, or in an
 * interrupt taken on top of it, or not yet in its spin (CI100's debug
 * guest: 1 ms after its ARM the thread was still on its way, in the
 * test's own code, a sample taken before it read the clock at e.t2; or
 * after, see on_way_into_spin()).
 * Those samples are checked for consistency and logged; one of
 * USER_ATTEMPTS runs must catch it in user mode, spinning.
 */
static const struct stallcap_sample *
run_until_caught_in_user(struct __test_metadata *_metadata, const struct scenario *sc,
			 struct run *run)
{
	for (int attempt = 1; ; attempt++) {
		const struct stallcap_sample *r;

		run_once(_metadata, sc, run);
		r = sc_first_sample_of(&run->rs, run->e.tid);
		ASSERT_NE(NULL, r);
		if (caught_running_in_user(r) && !sc_late(r) && r->capture_ns >= run->e.t2 &&
		    !on_way_into_spin(sc_regs(r)->ip))
			return r;
		TH_LOG("attempt %d: the deadline found the thread in state %u, path %u, "
		       "flags %#x, %llu us late%s", attempt, r->state, r->path, r->flags,
		       (unsigned long long)(r->capture_ns - r->deadline_ns) / 1000,
		       r->capture_ns < run->e.t2 ? ", before its spin" :
		       on_way_into_spin(sc_regs(r)->ip) ? ", on its way into the spin" : "");
		sc_log_sample(NULL, r);
		ASSERT_GT(USER_ATTEMPTS, attempt) TH_LOG("never caught running in user mode");
		run_free(run);
	}
}

/* All the checks of a spinning thread's stall, first sample in user mode. */
static void check_spin_stall(struct __test_metadata *_metadata, struct run *run)
{
	const struct stallcap_sample *first;
	size_t n;

	first = check_one_stall(_metadata, &run->rs, &run->e, &n);
	check_user_sample(_metadata, &run->s, &run->rs, first, &run->e);
	check_stall_end(_metadata, &run->rs, first, n);
	if (_metadata->exit_code)
		sc_log_records(NULL, &run->rs);
}

static int other_cpu(int cpu)
{
	return sc_nr_cpus_allowed() > 1 ? !cpu : -1;
}

TEST(main_thread_spinning_is_captured_in_its_function)
{
	struct scenario sc = {
		.in_main = true, .arm_cpu = 0, .spin_cpu = -1, .stopper_cpu = other_cpu(0),
		.timeout = TIMEOUT, .tag = TAG, .samples = SAMPLES,
	};
	struct stallcap_stats stats;
	struct run run = {};

	run_until_caught_in_user(_metadata, &sc, &run);
	check_spin_stall(_metadata, &run);

	ASSERT_EQ(0, sc_get_stats(run.s.fd, &stats, 0));
	EXPECT_EQ(1, stats.stalls);
	EXPECT_EQ(sc_records_count(&run.rs, STALLCAP_REC_SAMPLE), stats.samples);
	EXPECT_EQ(1, stats.stall_ends);
	EXPECT_EQ(0, stats.lost);
	EXPECT_EQ(0, stats.suppressed);
	EXPECT_EQ(1, stats.watches);
	EXPECT_EQ(0, stats.armed);
	run_free(&run);
}

TEST(other_thread_spinning_is_captured_with_its_tid_and_comm)
{
	struct scenario sc = {
		.arm_cpu = 0, .spin_cpu = -1, .stopper_cpu = other_cpu(0),
		.timeout = TIMEOUT, .tag = TAG + 1, .samples = SAMPLES,
	};
	struct run run = {};

	run_until_caught_in_user(_metadata, &sc, &run);
	EXPECT_NE(getpid(), run.e.tid);
	EXPECT_STREQ("sc-spinner", run.e.comm);
	check_spin_stall(_metadata, &run);
	run_free(&run);
}

TEST(absolute_deadline_is_the_recorded_deadline)
{
	struct scenario sc = {
		.arm_cpu = 0, .spin_cpu = -1, .stopper_cpu = other_cpu(0),
		.absolute_in = SC_MS(50), .tag = TAG + 2, .samples = SAMPLES,
	};
	struct run run = {};

	run_until_caught_in_user(_metadata, &sc, &run);
	check_spin_stall(_metadata, &run);
	run_free(&run);
}

/*
 * The timer fires on the CPU that armed it (CPU 0); the thread then runs on
 * CPU 1: the capture must come by NMI (or IPI if the module was loaded with
 * capture=ipi) on CPU 1, and be counted as such.  When CPU 0 takes its timer
 * interrupt more than a checking period late (a vCPU descheduled by a loaded
 * TCG host), the buddy checker on CPU 1 takes the timer over and captures
 * locally: that run is tried again.
 */
TEST(thread_on_another_cpu_is_captured_by_nmi)
{
	struct scenario sc = {
		.arm_cpu = 0, .spin_cpu = 1, .stopper_cpu = 0,
		.timeout = TIMEOUT, .tag = TAG + 3, .samples = SAMPLES,
	};
	size_t by_path[STALLCAP_PATH_DEFERRED + 1] = {};
	const struct stallcap_sample *first;
	struct stallcap_stats stats;
	struct run run = {};
	bool nmi;

	if (sc_nr_cpus_allowed() < 2)
		SKIP(return, "needs 2 CPUs");
	for (int attempt = 1; ; attempt++) {
		first = run_until_caught_in_user(_metadata, &sc, &run);
		if (first->path != STALLCAP_PATH_LOCAL)
			break;
		TH_LOG("attempt %d: CPU 0 was late, the buddy checker captured locally",
		       attempt);
		ASSERT_GT(USER_ATTEMPTS, attempt);
		run_free(&run);
	}
	check_spin_stall(_metadata, &run);
	nmi = run.s.info.features & STALLCAP_FEAT_NMI;
	EXPECT_EQ(1, first->cpu);
	EXPECT_EQ(nmi ? STALLCAP_PATH_NMI : STALLCAP_PATH_IPI, first->path)
		TH_LOG("features %#llx", (unsigned long long)run.s.info.features);

	for (size_t i = 0; i < run.rs.n; i++) {
		const struct stallcap_sample *r = (const void *)run.rs.rec[i];

		/*
		 * an abandoned sample (progress came while its NMI was
		 * pending: the stopper ended the spin) is no capture
		 */
		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->path <= STALLCAP_PATH_DEFERRED &&
		    !(r->flags & STALLCAP_SAMPLE_ABANDONED))
			by_path[r->path]++;
	}
	ASSERT_EQ(0, sc_get_stats(run.s.fd, &stats, 0));
	EXPECT_LE(1, nmi ? stats.capture_nmi : stats.capture_ipi);
	EXPECT_EQ(by_path[STALLCAP_PATH_NMI], stats.capture_nmi);
	EXPECT_EQ(by_path[STALLCAP_PATH_IPI], stats.capture_ipi);
	EXPECT_EQ(by_path[STALLCAP_PATH_LOCAL], stats.capture_local);
	EXPECT_EQ(by_path[STALLCAP_PATH_BLOCKED], stats.capture_blocked);
	run_free(&run);
}

/*
 * A system-wide reader gets each sample of a thread captured on another CPU
 * (by NMI, or by IPI with capture=ipi) exactly once.
 */
TEST(remote_samples_are_mirrored_once_to_a_global_reader)
{
	struct scenario sc = {
		.arm_cpu = 0, .spin_cpu = 1, .stopper_cpu = 0,
		.timeout = TIMEOUT, .tag = TAG + 7, .samples = SAMPLES,
	};
	struct stallcap_config c = { .size = sizeof(c), .flags = STALLCAP_CFG_GLOBAL };
	size_t own = 0, mirrored = 0, remote = 0;
	struct sc_records grs = {};
	struct run run = {};
	struct sc_session g;

	if (sc_nr_cpus_allowed() < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, sc_open(&g));
	if (!(g.info.features & STALLCAP_FEAT_GLOBAL) ||
	    ioctl(g.fd, STALLCAP_IOC_SET_CONFIG, &c))
		SKIP(sc_session_close(&g); return, "no system-wide reader here");
	ASSERT_EQ(0, sc_get_config(g.fd, &g.cfg));
	ASSERT_EQ(0, sc_map(&g));
	/* a late CPU 0 lets the buddy checker capture locally: try again */
	for (int attempt = 1; ; attempt++) {
		run_until_caught_in_user(_metadata, &sc, &run);
		sc_ring_collect(&g, &grs, 0, 0, SC_QUIET_MS);
		own = remote = 0;
		for (size_t i = 0; i < run.rs.n; i++) {
			const struct stallcap_sample *r = (const void *)run.rs.rec[i];

			if (r->hdr.type == STALLCAP_REC_SAMPLE && r->tid == (__u32)run.e.tid) {
				own++;
				remote += r->path == STALLCAP_PATH_NMI ||
					  r->path == STALLCAP_PATH_IPI;
			}
		}
		if (remote || attempt == SC_ATTEMPTS)
			break;
		TH_LOG("attempt %d: no remote sample", attempt);
		sc_records_free(&grs);
		run_free(&run);
	}
	for (size_t i = 0; i < grs.n; i++) {
		const struct stallcap_sample *r = (const void *)grs.rec[i];

		mirrored += r->hdr.type == STALLCAP_REC_SAMPLE && r->tid == (__u32)run.e.tid;
	}
	TH_LOG("%zu samples (%zu remote), %zu mirrored", own, remote, mirrored);
	EXPECT_LT(0, remote);
	EXPECT_EQ(own, mirrored) TH_LOG("lost %llu in the global ring",
					(unsigned long long)SC_STAT(g.fd, lost));
	sc_records_free(&grs);
	sc_session_close(&g);
	run_free(&run);
}

/* A small raw copy is exactly user_stack_bytes long. */
TEST(small_user_stack_copy_has_the_configured_size)
{
	struct scenario sc = {
		.opts = { .user_stack_bytes = 64 },
		.arm_cpu = 0, .spin_cpu = -1, .stopper_cpu = other_cpu(0),
		.timeout = TIMEOUT, .tag = TAG + 4, .samples = 1,
	};
	const struct stallcap_sample *r;
	struct run run = {};

	r = run_until_caught_in_user(_metadata, &sc, &run);
	r = user_part_of(_metadata, &run.rs, r);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(64, run.s.cfg.user_stack_bytes);
	EXPECT_EQ(64, sc_stack_size(r));
	EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_COPY_PARTIAL);
	EXPECT_EQ(sc_regs(r)->sp, sc_stack_start(r));
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user));
	run_free(&run);
}

/*
 * max_samples 4: samples 1, 2, 3 come at least T, 2T, 4T after the
 * deadline, no fifth sample comes, and the stall-end counts four.
 */
TEST(a_long_stall_gets_max_samples_spaced_by_doubling_intervals)
{
	struct scenario sc = {
		.opts = { .max_samples = 4 },
		.arm_cpu = 0, .spin_cpu = -1, .stopper_cpu = other_cpu(0),
		.timeout = TIMEOUT, .tag = TAG + 5, .samples = 4, .delay_ms = 400,
	};
	const struct stallcap_sample *first;
	struct stallcap_stats stats;
	struct run run = {};
	size_t n;

	run_once(_metadata, &sc, &run);
	ASSERT_EQ(4, run.s.cfg.max_samples);
	first = check_one_stall(_metadata, &run.rs, &run.e, &n);
	EXPECT_EQ(4, n) sc_log_records(NULL, &run.rs);
	for (size_t k = 1; k < n; k++) {
		const struct stallcap_sample *r = sc_records_nth(&run.rs, STALLCAP_REC_SAMPLE, k);

		EXPECT_LE(first->deadline_ns + (TIMEOUT << (k - 1)), r->capture_ns)
			TH_LOG("sample %zu came %llu ns after the deadline", k,
			       (unsigned long long)(r->capture_ns - r->deadline_ns));
	}
	check_stall_end(_metadata, &run.rs, first, n);
	ASSERT_EQ(0, sc_get_stats(run.s.fd, &stats, 0));
	EXPECT_EQ(1, stats.stalls);
	EXPECT_EQ(4, stats.samples);
	EXPECT_EQ(1, stats.stall_ends);
	run_free(&run);
}

/* sample_cap_ns = T: samples come every T, not 2T, 4T, ... 64T after the deadline. */
TEST(sample_cap_bounds_the_interval_between_samples)
{
	struct scenario sc = {
		.opts = { .max_samples = 8, .sample_cap_ns = TIMEOUT },
		.arm_cpu = 0, .spin_cpu = -1, .stopper_cpu = other_cpu(0),
		.timeout = TIMEOUT, .tag = TAG + 6, .samples = 8,
	};
	const struct stallcap_sample *first, *last;
	struct run run = {};
	size_t n;

	run_once(_metadata, &sc, &run);
	ASSERT_EQ(TIMEOUT, run.s.cfg.sample_cap_ns);
	first = check_one_stall(_metadata, &run.rs, &run.e, &n);
	ASSERT_EQ(8, n);
	last = sc_records_nth(&run.rs, STALLCAP_REC_SAMPLE, 7);
	/* capped: about 7T; uncapped it would be at least 64T */
	EXPECT_GT(first->deadline_ns + 32 * TIMEOUT, last->capture_ns)
		TH_LOG("the eighth sample came %llu ns after the deadline",
		       (unsigned long long)(last->capture_ns - first->deadline_ns));
	EXPECT_LE(first->deadline_ns + 7 * TIMEOUT, last->capture_ns);
	run_free(&run);
}

TEST_HARNESS_MAIN
