// SPDX-License-Identifier: GPL-2.0
/*
 * Section 2, detection lateness: how long after a 1 ms deadline stallcap
 * captures the thread (capture_ns - deadline_ns of the first sample), next
 * to the hrtimer's own floor measured the cyclictest way: the wake-up
 * lateness of clock_nanosleep(TIMER_ABSTIME) with a 1 ms period in a
 * SCHED_FIFO thread with timer slack 1 ns.
 *
 * The two alternate in blocks of 100 on CPU 0, first with the guest idle,
 * then with a busy process pinned to every CPU.  With the guest idle, the
 * baseline is also measured with a SCHED_OTHER spinner on CPU 0, because
 * stallcap's stalled thread keeps that vCPU busy, and a busy vCPU thread is
 * what the (shared) host's scheduler preempts first.  The stalled thread is an
 * ordinary SCHED_OTHER thread spinning in user mode, as an application's
 * would be; under the hog it is often preempted at its deadline and then
 * captured as a runnable (blocked-path) thread.
 */
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
	double *base, *sc, *busy;
	size_t nbase, nsc, nbusy;
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

static void baseline_block(double *out, size_t *nout, unsigned int n)
{
	uint64_t next = now_ns() + PERIOD_NS, t;
	struct timespec ts;
	unsigned int i;

	for (i = 0; i < n; i++) {
		ts.tv_sec = (time_t)(next / NS_PER_SEC);
		ts.tv_nsec = (long)(next % NS_PER_SEC);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		t = now_ns();
		out[(*nout)++] = (double)(t - next);
		next += PERIOD_NS;
		if (next <= t)		/* overran a period: restart the grid */
			next = t + PERIOD_NS;
	}
}

static int stallcap_block(struct lat *l, struct sc *s, unsigned int n)
{
	pid_t tid = gettid_();
	struct sc_seen seen;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		if (sc_rearm(s, PERIOD_NS))
			return -errno;
		ret = sc_wait_sample(s, tid, &seen, NS_PER_SEC);
		if (ret < 0)
			return -EPROTO;
		if (!ret) {
			l->missed++;
			continue;
		}
		l->sc[l->nsc++] = (double)(int64_t)(seen.capture_ns - seen.deadline_ns);
		if (seen.path <= STALLCAP_PATH_DEFERRED)
			l->path[seen.path]++;
		l->user_mode += !!(seen.flags & STALLCAP_SAMPLE_USER_MODE);
	}
	return sc_disarm(s) ? -errno : 0;
}

/*
 * @busy_baseline: also measure the baseline with a SCHED_OTHER spinner on
 * vCPU 0, as the stalled thread keeps it busy during stallcap's blocks (a
 * busy vCPU is more exposed to the host's scheduler than a halted one).
 */
static int run_mode(const char *mode, unsigned int n, bool busy_baseline)
{
	struct lat l = { 0 };
	unsigned int done, chunk;
	struct sc s;
	char key[64];
	int ret;

	l.base = calloc(n, sizeof(double));
	l.sc = calloc(n, sizeof(double));
	l.busy = calloc(n, sizeof(double));
	if (!l.base || !l.sc || !l.busy)
		return -ENOMEM;
	ret = sc_open(&s, 0, 1, 64);
	if (ret)
		goto out;
	/* create the watch once; REARM moves it from then on */
	if (sc_arm(&s, PERIOD_NS, 0) || sc_disarm(&s)) {
		ret = -errno;
		goto out_close;
	}
	for (done = 0; done < n; done += chunk) {
		chunk = n - done < BLOCK ? n - done : BLOCK;
		ret = set_fifo(true);
		if (ret)
			goto out_close;
		baseline_block(l.base, &l.nbase, chunk);
		if (busy_baseline) {
			struct hogs spinner;

			set_fifo(false);
			ret = hogs_start(&spinner, 0);
			if (ret)
				goto out_close;
			set_fifo(true);
			baseline_block(l.busy, &l.nbusy, chunk);
			hogs_stop(&spinner);
		}
		set_fifo(false);
		ret = stallcap_block(&l, &s, chunk);
		if (ret)
			goto out_close;
	}
	snprintf(key, sizeof(key), "lateness.%s.baseline", mode);
	out_summary(l.base, l.nbase, key);
	if (busy_baseline) {
		snprintf(key, sizeof(key), "lateness.%s.baseline_busy", mode);
		out_summary(l.busy, l.nbusy, key);
	}
	snprintf(key, sizeof(key), "lateness.%s.stallcap", mode);
	out_summary(l.sc, l.nsc, key);
	out_num(l.missed, "%s.missed", key);
	out_num(l.path[STALLCAP_PATH_LOCAL], "%s.path_local", key);
	out_num(l.path[STALLCAP_PATH_NMI], "%s.path_nmi", key);
	out_num(l.path[STALLCAP_PATH_IPI], "%s.path_ipi", key);
	out_num(l.path[STALLCAP_PATH_BLOCKED], "%s.path_blocked", key);
	out_num(l.user_mode, "%s.user_mode", key);
out_close:
	sc_close(&s);
out:
	free(l.base);
	free(l.sc);
	free(l.busy);
	return ret;
}

int bench_lateness(void)
{
	unsigned int n = bench_opts.smoke ? 20 : 1000;
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
