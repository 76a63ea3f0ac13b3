// SPDX-License-Identifier: GPL-2.0
/*
 * Section 5, against Seastar's stall detector itself.
 *
 * A small re-creation of its posix-timer mechanism (scylladb/seastar
 * src/core/reactor.cc, cpu_stall_detector_posix_timer): a
 * CLOCK_THREAD_CPUTIME_ID timer created with SIGEV_THREAD_ID so that its
 * signal goes to the reactor thread, re-armed with a relative
 * timer_settime(), and a handler that takes a backtrace().  It is armed
 * with the same 1 ms threshold as a stallcap deadline, at the same moment,
 * by the same thread, which then stalls four ways:
 *  - user:      spinning in user mode;
 *  - kernel:    inside one long system call (mmap with MAP_POPULATE);
 *  - preempted: a SCHED_FIFO thread takes its CPU for 20 ms;
 *  - sleeping:  blocked for 20 ms on a mutex another thread holds.
 * For each detector: did it report the stall, did it do so while the stall
 * lasted, how late after the threshold, with a kernel stack, with a user
 * stack (at least two frames; for stallcap, those of the sample or of its
 * deferred user-stack record).
 */
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define THRESHOLD_NS	NS_PER_MS
#define STALL_NS	(20 * NS_PER_MS)
#define GRACE_NS	(20 * NS_PER_MS)	/* wait for a late report after a stall */
#define MIB		(1024UL * 1024)

/* ---- the posix-timer detector ---- */

static struct {
	timer_t timer;
	volatile int armed;
	volatile uint64_t fired_ns;
	volatile uint64_t done_ns;
	volatile int depth;
	void *bt[64];
} pt;

static void pt_handler(int sig, siginfo_t *si, void *uc)
{
	uint64_t t = now_ns();

	if (!pt.armed || pt.fired_ns)
		return;
	pt.fired_ns = t;
	pt.depth = backtrace(pt.bt, 64);
	pt.done_ns = now_ns();
}

static int pt_init(void)
{
	struct sigaction sa = { .sa_sigaction = pt_handler, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct sigevent sev = { 0 };

	backtrace(pt.bt, 64);	/* as Seastar: initialise the unwinder early */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGRTMIN + 2, &sa, NULL))
		return -errno;
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN + 2;
	sev._sigev_un._tid = gettid_();
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &pt.timer))
		return -errno;
	return 0;
}

static void pt_arm(uint64_t ns)
{
	struct itimerspec its = {
		.it_value = { (time_t)(ns / NS_PER_SEC), (long)(ns % NS_PER_SEC) },
	};

	pt.fired_ns = 0;
	pt.depth = 0;
	pt.armed = 1;
	timer_settime(pt.timer, 0, &its, NULL);
}

static void pt_disarm(void)
{
	struct itimerspec its = { 0 };

	pt.armed = 0;
	timer_settime(pt.timer, 0, &its, NULL);
}

/* ---- results ---- */

struct det {
	unsigned int trials, detected, during, kstack, ustack;
	double *late;
	double *handler;	/* posix: time spent in the handler */
	size_t nlate, nhandler;
	unsigned int state[STALLCAP_STATE_EXITING + 1];
};

struct scen {
	const char *name;
	struct det sc, pt;
};

static int det_init(struct det *d, unsigned int n)
{
	memset(d, 0, sizeof(*d));
	d->late = calloc(n, sizeof(double));
	d->handler = calloc(n, sizeof(double));
	return d->late && d->handler ? 0 : -ENOMEM;
}

static void det_out(struct det *d, const char *scen, const char *who)
{
	char key[96];

	snprintf(key, sizeof(key), "seastar.%s.%s", scen, who);
	out_num(d->trials, "%s.trials", key);
	out_num(d->detected, "%s.detected", key);
	out_num(d->during, "%s.during", key);
	out_num(d->kstack, "%s.kstack", key);
	out_num(d->ustack, "%s.ustack", key);
	strcat(key, ".late");
	out_summary(d->late, d->nlate, key);
	if (d->nhandler) {
		snprintf(key, sizeof(key), "seastar.%s.%s.handler", scen, who);
		out_summary(d->handler, d->nhandler, key);
	}
	if (!strcmp(who, "stallcap")) {
		out_num(d->state[STALLCAP_STATE_RUNNING], "seastar.%s.%s.state_running", scen, who);
		out_num(d->state[STALLCAP_STATE_RUNNABLE], "seastar.%s.%s.state_runnable", scen, who);
		out_num(d->state[STALLCAP_STATE_SLEEPING] + d->state[STALLCAP_STATE_UNINTERRUPTIBLE],
			"seastar.%s.%s.state_sleeping", scen, who);
	}
	free(d->late);
	free(d->handler);
}

/*
 * Account one trial: the stall ran from @armed_at to @end.  The posix timer
 * is disarmed first, as the reactor would do when the stalled task ends, so
 * that the wait for stallcap's record below is not itself counted as a
 * stall; stallcap's record says when it was captured.
 */
static void account(struct scen *sn, struct sc *s, uint64_t armed_at, uint64_t end)
{
	struct sc_seen seen;
	int got;

	pt_disarm();
	sn->pt.trials++;
	if (pt.fired_ns) {
		sn->pt.detected++;
		sn->pt.during += pt.fired_ns <= end;
		sn->pt.ustack += pt.depth >= 2;
		sn->pt.late[sn->pt.nlate++] = (double)(int64_t)(pt.fired_ns - armed_at - THRESHOLD_NS);
		sn->pt.handler[sn->pt.nhandler++] = (double)(pt.done_ns - pt.fired_ns);
	}

	got = sc_wait_sample(s, gettid_(), &seen, GRACE_NS);
	sc_disarm(s);
	sn->sc.trials++;
	if (got == 1) {
		sn->sc.detected++;
		sn->sc.during += seen.capture_ns <= end;
		sn->sc.kstack += seen.nr_kernel_frames > 0;
		sn->sc.ustack += sc_user_frames(s, &seen, GRACE_NS) >= 2;
		sn->sc.late[sn->sc.nlate++] = (double)(int64_t)(seen.capture_ns - seen.deadline_ns);
		if (seen.state <= STALLCAP_STATE_EXITING)
			sn->sc.state[seen.state]++;
	}
}

/* Arm both detectors; returns the time the posix timer was armed. */
static uint64_t arm_both(struct sc *s)
{
	uint64_t t = now_ns();

	pt_arm(THRESHOLD_NS);
	sc_rearm(s, THRESHOLD_NS);
	return t;
}

/* ---- the four stalls ---- */

static void stall_user(struct sc *s, struct scen *sn)
{
	uint64_t t0 = arm_both(s), end;
	volatile unsigned long x = 0;

	/* stall until both reported, or 20 ms */
	while (now_ns() - t0 < STALL_NS &&
	       !(pt.fired_ns && s->ctl->data_head != s->ctl->data_tail))
		x++;
	end = now_ns();
	account(sn, s, t0, end);
}

static size_t populate_len;

static void stall_kernel(struct sc *s, struct scen *sn)
{
	uint64_t t0 = arm_both(s), end;
	void *p = mmap(NULL, populate_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	end = now_ns();
	account(sn, s, t0, end);
	if (p != MAP_FAILED)
		munmap(p, populate_len);
}

static int calibrate_populate(void)
{
	uint64_t t0, t1;
	void *p;

	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	for (populate_len = 8 * MIB; ; populate_len *= 2) {
		t0 = now_ns();
		p = mmap(NULL, populate_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		t1 = now_ns();
		if (p == MAP_FAILED)
			return -errno;
		munmap(p, populate_len);
		if (t1 - t0 >= STALL_NS || populate_len >= 128 * MIB)
			break;
	}
	note("seastar: populating %zu MiB takes %.1f ms", populate_len / MIB,
	     (double)(t1 - t0) / NS_PER_MS);
	out_num((double)(t1 - t0) / NS_PER_MS, "seastar.kernel.syscall_ms");
	return 0;
}

/* preempted: a SCHED_FIFO thread on the same CPU runs for 20 ms */
static struct {
	sem_t go, done;
	volatile int quit;
	uint64_t ran_ns;
} fifo;

static void *fifo_fn(void *arg)
{
	struct sched_param sp = { .sched_priority = 80 };

	pin_self(0);
	sched_setscheduler(0, SCHED_FIFO, &sp);
	for (;;) {
		sem_wait(&fifo.go);
		if (fifo.quit)
			break;
		uint64_t t0 = now_ns();

		while (now_ns() - t0 < STALL_NS)
			;
		fifo.ran_ns = now_ns() - t0;
		sem_post(&fifo.done);
	}
	return NULL;
}

static void stall_preempted(struct sc *s, struct scen *sn)
{
	uint64_t t0 = arm_both(s), end;

	sem_post(&fifo.go);	/* the FIFO thread preempts us here */
	sem_wait(&fifo.done);	/* (or, if it did not, we wait for it) */
	end = now_ns();
	account(sn, s, t0, end);
	/* keep the FIFO thread's share far below the RT throttling limit */
	sleep_ns(2 * STALL_NS);
}

/* sleeping: blocked on a mutex that another thread holds for 20 ms */
static struct {
	pthread_mutex_t m;
	sem_t go, locked;
	volatile int quit;
} holder = { .m = PTHREAD_MUTEX_INITIALIZER };

static void *holder_fn(void *arg)
{
	pin_self(1 % nr_cpus());
	for (;;) {
		sem_wait(&holder.go);
		if (holder.quit)
			break;
		pthread_mutex_lock(&holder.m);
		sem_post(&holder.locked);
		sleep_ns(STALL_NS);
		pthread_mutex_unlock(&holder.m);
	}
	return NULL;
}

static void stall_sleeping(struct sc *s, struct scen *sn)
{
	uint64_t t0, end;

	sem_post(&holder.go);
	sem_wait(&holder.locked);
	t0 = arm_both(s);
	pthread_mutex_lock(&holder.m);
	end = now_ns();
	pthread_mutex_unlock(&holder.m);
	account(sn, s, t0, end);
}

/* ---- driver ---- */

int bench_seastar(void)
{
	unsigned int nuser = bench_opts.smoke ? 5 : 1000;
	unsigned int nother = bench_opts.smoke ? 3 : 50, i, k;
	struct scen sn[4] = {
		{ .name = "user" }, { .name = "kernel" },
		{ .name = "preempted" }, { .name = "sleeping" },
	};
	void (*stall[4])(struct sc *, struct scen *) = {
		stall_user, stall_kernel, stall_preempted, stall_sleeping,
	};
	pthread_t fifo_th, holder_th;
	struct sc s;
	int ret;

	pin_self(0);
	ret = sc_open(&s, 0, 1, 64);
	if (ret)
		return ret;
	if (sc_arm(&s, THRESHOLD_NS, 0) || sc_disarm(&s)) {
		ret = -errno;
		goto out;
	}
	ret = pt_init();
	if (!ret)
		ret = calibrate_populate();
	if (ret)
		goto out;
	sem_init(&fifo.go, 0, 0);
	sem_init(&fifo.done, 0, 0);
	sem_init(&holder.go, 0, 0);
	sem_init(&holder.locked, 0, 0);
	pthread_create(&fifo_th, NULL, fifo_fn, NULL);
	pthread_create(&holder_th, NULL, holder_fn, NULL);

	for (k = 0; k < 4; k++) {
		unsigned int n = k ? nother : nuser;

		if (det_init(&sn[k].sc, n) || det_init(&sn[k].pt, n)) {
			ret = -ENOMEM;
			break;
		}
		note("seastar: %u %s stalls, %llu us threshold", n, sn[k].name,
		     (unsigned long long)THRESHOLD_NS / NS_PER_US);
		for (i = 0; i < n; i++)
			stall[k](&s, &sn[k]);
		det_out(&sn[k].sc, sn[k].name, "stallcap");
		det_out(&sn[k].pt, sn[k].name, "posix");
	}

	fifo.quit = 1;
	holder.quit = 1;
	sem_post(&fifo.go);
	sem_post(&holder.go);
	pthread_join(fifo_th, NULL);
	pthread_join(holder_th, NULL);
	timer_delete(pt.timer);
out:
	sc_close(&s);
	return ret;
}
