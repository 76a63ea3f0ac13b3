// SPDX-License-Identifier: GPL-2.0
/*
 * Section 2, detection lateness: how long after a 1 ms deadline stallcap
 * captures the thread (capture_ns - deadline_ns of the first sample), next
 * to the hrtimer's own floor measured the cyclictest way: the wake-up
 * lateness of clock_nanosleep(TIMER_ABSTIME) with a 1 ms period in a
 * SCHED_FIFO thread with timer slack 1 ns.
 *
 * The kinds take turns stall by stall on CPU 0 (a baseline wake-up, a REARM
 * stall, a shared-deadline stall, one in ticks, the order rotating), first
 * with the guest idle, then with a busy process pinned to every CPU, so
 * that a spell of host noise falls on all of them alike.  With the guest
 * idle, the baseline is also measured with a SCHED_OTHER spinner on CPU 0
 * (in blocks of 100), because stallcap's stalled thread keeps that vCPU
 * busy, and a busy vCPU thread is what the (shared) host's scheduler
 * preempts first.  The stalled thread is an ordinary SCHED_OTHER thread
 * spinning in user mode, as an application's would be; under the hog it is
 * often preempted at its deadline and then captured as a runnable
 * (blocked-path) thread.
 *
 * The shared-deadline watches are used as an event loop uses them: idle (0)
 * between busy periods, now + 1 ms stored with a plain store (no system
 * call) when one begins, 0 again after it: their timers look at an idle
 * slot every 1 ms, and the first look after the store reads the deadline.
 * Both should be as exact as REARM.  One stores its deadlines in TSC ticks
 * (STALLCAP_ARM_DEADLINE_TSC), which the module converts.
 */
#include <sys/mman.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "bench.h"

#define PERIOD_NS	NS_PER_MS
#define BLOCK		100

struct lat {
	double *base, *sc, *busy, *shared, *tsc;
	size_t nbase, nsc, nbusy, nshared, ntsc;
	unsigned int shared_missed, tsc_missed;
	unsigned int missed;
	unsigned int path[STALLCAP_PATH_DEFERRED + 1];
	unsigned int user_mode;
};

static int set_fifo(bool on)
{
	struct sched_param sp = { .sched_priority = on ? 90 : 0 };

	if (sched_setscheduler(0, on ? SCHED_FIFO : SCHED_OTHER, &sp))
		return -errno;
	return 0;
}

/* Lateness of one wake-up of a 1 ms clock_nanosleep(TIMER_ABSTIME). */
static double baseline_once(void)
{
	uint64_t next = now_ns() + PERIOD_NS;
	struct timespec ts = {
		.tv_sec = (time_t)(next / NS_PER_SEC),
		.tv_nsec = (long)(next % NS_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	return (double)(now_ns() - next);
}

/* The baseline's wake-ups, as a SCHED_FIFO thread. */
static int baseline_block(double *out, size_t *nout, unsigned int n)
{
	int ret = set_fifo(true);

	while (!ret && n--)
		out[(*nout)++] = baseline_once();
	return ret ? ret : set_fifo(false);
}

/*
 * One stall of the REARM watch: re-armed for 1 ms, caught, disarmed (its
 * stall ends and its timer stops while the others are measured).
 */
static int rearm_once(struct lat *l, struct sc *s)
{
	struct sc_seen seen;
	int ret;

	if (sc_rearm(s, PERIOD_NS))
		return -errno;
	ret = sc_wait_sample(s, gettid_(), &seen, NS_PER_SEC);
	if (ret < 0)
		return -EPROTO;
	if (sc_disarm(s))
		return -errno;
	if (!ret) {
		l->missed++;
		return 0;
	}
	l->sc[l->nsc++] = (double)(int64_t)(seen.capture_ns - seen.deadline_ns);
	if (seen.path <= STALLCAP_PATH_DEFERRED)
		l->path[seen.path]++;
	l->user_mode += !!(seen.flags & STALLCAP_SAMPLE_USER_MODE);
	return 0;
}

/* A shared-deadline watch's session and slot (@tsc: in counter ticks). */
struct shared {
	struct sc s;
	struct stallcap_slot *slots;
	size_t len;
	volatile __u64 *dl;
	bool tsc;
};

static void shared_close(struct shared *sh)
{
	if (sh->slots)
		munmap(sh->slots, sh->len);
	sc_close(&sh->s);
}

/*
 * Open a session, arm the calling thread's shared-deadline watch and store
 * 0: idle by design, as an event loop between its busy periods (the watch's
 * timer then looks at the slot every 1 ms).
 */
static int shared_open(struct shared *sh, bool tsc)
{
	int ret = sc_open(&sh->s, 0, 1, 64), slot;

	if (ret)
		return ret;
	sh->tsc = tsc;
	sh->len = (size_t)sh->s.cfg.slots * sizeof(*sh->slots);
	sh->slots = mmap(NULL, sh->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 sh->s.fd, STALLCAP_MMAP_SLOTS);
	if (sh->slots == MAP_FAILED) {
		sh->slots = NULL;
		return -errno;
	}
	slot = sc_arm(&sh->s, PERIOD_NS, STALLCAP_ARM_SHARED_DEADLINE |
		      (tsc ? STALLCAP_ARM_DEADLINE_TSC : 0));
	if (slot < 0 || (size_t)slot >= sh->s.cfg.slots)
		return -errno;
	sh->dl = tsc ? &sh->slots[slot].deadline_tsc : &sh->slots[slot].deadline_ns;
	*sh->dl = 0;
	return 0;
}

/*
 * One busy period of the shared-deadline watch: a plain store of now + 1 ms
 * (in ticks with @sh->tsc) after an idle period, the stall caught, then 0
 * stored: idle again (which ends the stall).  Records left in its ring (a
 * stall of its own when the guest stopped the thread before a store of 0)
 * are consumed first.
 */
static int shared_once(struct shared *sh, double *out, size_t *nout,
		       unsigned int *missed)
{
	__u64 ticks = (__u64)sh->s.info.tsc_khz * PERIOD_NS / NS_PER_MS;
	pid_t tid = gettid_();
	struct sc_seen seen;
	int ret;

	if (sc_poll_sample(&sh->s, -1, &seen) < 0)
		return -EPROTO;
	if (sh->tsc)
		*sh->dl = __builtin_ia32_rdtsc() + ticks;
	else
		*sh->dl = now_ns() + PERIOD_NS;
	ret = sc_wait_sample(&sh->s, tid, &seen, NS_PER_SEC);
	*sh->dl = 0;
	if (ret < 0)
		return -EPROTO;
	if (!ret)
		(*missed)++;
	else
		out[(*nout)++] = (double)(int64_t)(seen.capture_ns - seen.deadline_ns);
	return 0;
}

/*
 * One of each, in an order that rotates with @i: a baseline wake-up, a
 * REARM stall, a shared-deadline stall, one in ticks (the kinds take turns
 * stall by stall, so that a spell of host noise falls on all alike).
 */
static int lateness_round(struct lat *l, struct sc *s, struct shared *ns,
		     struct shared *tsc, unsigned int i)
{
	int ret = 0;

	for (unsigned int k = 0; k < 4 && !ret; k++) {
		switch ((i + k) % 4) {
		case 0:
			ret = baseline_block(l->base, &l->nbase, 1);
			break;
		case 1:
			ret = rearm_once(l, s);
			break;
		case 2:
			ret = shared_once(ns, l->shared, &l->nshared, &l->shared_missed);
			break;
		default:
			if (tsc)
				ret = shared_once(tsc, l->tsc, &l->ntsc, &l->tsc_missed);
			break;
		}
	}
	return ret;
}

static void out_mode(struct lat *l, const char *mode, bool busy_baseline)
{
	char key[64];

	snprintf(key, sizeof(key), "lateness.%s.baseline", mode);
	out_summary(l->base, l->nbase, key);
	if (busy_baseline) {
		snprintf(key, sizeof(key), "lateness.%s.baseline_busy", mode);
		out_summary(l->busy, l->nbusy, key);
	}
	snprintf(key, sizeof(key), "lateness.%s.stallcap", mode);
	out_summary(l->sc, l->nsc, key);
	out_num(l->missed, "%s.missed", key);
	out_num(l->path[STALLCAP_PATH_LOCAL], "%s.path_local", key);
	out_num(l->path[STALLCAP_PATH_NMI], "%s.path_nmi", key);
	out_num(l->path[STALLCAP_PATH_IPI], "%s.path_ipi", key);
	out_num(l->path[STALLCAP_PATH_BLOCKED], "%s.path_blocked", key);
	out_num(l->user_mode, "%s.user_mode", key);
	snprintf(key, sizeof(key), "lateness.%s.shared", mode);
	out_summary(l->shared, l->nshared, key);
	out_num(l->shared_missed, "%s.missed", key);
	if (l->ntsc || l->tsc_missed) {
		snprintf(key, sizeof(key), "lateness.%s.shared_tsc", mode);
		out_summary(l->tsc, l->ntsc, key);
		out_num(l->tsc_missed, "%s.missed", key);
	}
}

/*
 * @busy_baseline: also measure the baseline with a SCHED_OTHER spinner on
 * vCPU 0, as the stalled thread keeps it busy during stallcap's stalls (a
 * busy vCPU is more exposed to the host's scheduler than a halted one): in
 * blocks of 100 between the rounds, as starting the spinner takes time.
 */
static int run_mode(const char *mode, unsigned int n, bool busy_baseline)
{
	struct shared ns = { .s.fd = -1 }, tsc = { .s.fd = -1 };
	bool have_tsc = false;
	struct lat l = { 0 };
	struct sc s;
	int ret;

	l.base = calloc(n, sizeof(double));
	l.sc = calloc(n, sizeof(double));
	l.busy = calloc(n, sizeof(double));
	l.shared = calloc(n, sizeof(double));
	l.tsc = calloc(n, sizeof(double));
	if (!l.base || !l.sc || !l.busy || !l.shared || !l.tsc)
		return -ENOMEM;
	ret = sc_open(&s, 0, 1, 64);
	if (ret)
		goto out;
	ret = shared_open(&ns, false);
	if (!ret && (ns.s.info.features & STALLCAP_FEAT_DEADLINE_TSC)) {
		have_tsc = true;
		ret = shared_open(&tsc, true);
	}
	if (ret)
		goto out_close;
	/* create the watch once; REARM moves it from then on */
	if (sc_arm(&s, PERIOD_NS, 0) || sc_disarm(&s)) {
		ret = -errno;
		goto out_close;
	}
	for (unsigned int i = 0; i < n && !ret; i++) {
		if (busy_baseline && !(i % BLOCK)) {
			struct hogs spinner;
			unsigned int chunk = n - i < BLOCK ? n - i : BLOCK;

			ret = hogs_start(&spinner, 0);
			if (ret)
				break;
			ret = baseline_block(l.busy, &l.nbusy, chunk);
			hogs_stop(&spinner);
		}
		if (!ret)
			ret = lateness_round(&l, &s, &ns, have_tsc ? &tsc : NULL, i);
	}
	if (!ret)
		out_mode(&l, mode, busy_baseline);
out_close:
	shared_close(&tsc);
	shared_close(&ns);
	sc_close(&s);
out:
	free(l.shared);
	free(l.tsc);
	free(l.base);
	free(l.sc);
	free(l.busy);
	return ret;
}

int bench_lateness(void)
{
	unsigned int n = bench_opts.smoke ? 20 : 3000;
	struct hogs hogs;
	int ret;

	pin_self(0);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	note("lateness: %u stalls of %llu ns deadlines and %u baseline wake-ups, idle",
	     n, (unsigned long long)PERIOD_NS, n);
	ret = run_mode("idle", n, true);
	if (ret) {
		out_str(strerror(-ret), "lateness.idle.error");
		return ret;
	}
	ret = hogs_start(&hogs, -1);
	if (ret)
		return ret;
	note("lateness: the same with %d CPU hogs", hogs.n);
	out_num(hogs.n, "lateness.hog.hogs");
	ret = run_mode("hog", n, false);
	hogs_stop(&hogs);
	if (ret)
		out_str(strerror(-ret), "lateness.hog.error");
	return ret;
}
