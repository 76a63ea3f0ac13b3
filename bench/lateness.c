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
 *
 * The same stalls are also caught by a shared-deadline watch (the deadline
 * stored into the slot with a plain store, no system call), to compare its
 * lateness with REARM's: the module's timer expires at the deadline it last
 * read, so both should be equally exact; and by one whose deadlines are
 * stored in TSC ticks (STALLCAP_ARM_DEADLINE_TSC), which the module converts.
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

/* The shared-deadline watch's session and slot. */
struct shared {
	struct sc s;
	struct stallcap_slot *slots;
	size_t len;
};

static int shared_open(struct shared *sh)
{
	int ret = sc_open(&sh->s, 0, 1, 64);

	if (ret)
		return ret;
	sh->len = (size_t)sh->s.cfg.slots * sizeof(*sh->slots);
	sh->slots = mmap(NULL, sh->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 sh->s.fd, STALLCAP_MMAP_SLOTS);
	if (sh->slots == MAP_FAILED) {
		sh->slots = NULL;
		return -errno;
	}
	return 0;
}

static void shared_close(struct shared *sh)
{
	if (sh->slots)
		munmap(sh->slots, sh->len);
	sc_close(&sh->s);
}

/*
 * Stalls caught by a shared-deadline watch: ARM gives the first deadline,
 * then each one is a plain store of now + period after the previous stall
 * was seen (which also ends that stall); with @tsc in counter ticks.
 */
static int shared_block(struct lat *l, struct shared *sh, unsigned int n, bool tsc)
{
	__u64 ticks = (__u64)sh->s.info.tsc_khz * PERIOD_NS / NS_PER_MS;
	pid_t tid = gettid_();
	volatile __u64 *dl;
	struct sc_seen seen;
	unsigned int i;
	int slot, ret;

	slot = sc_arm(&sh->s, PERIOD_NS, STALLCAP_ARM_SHARED_DEADLINE |
		      (tsc ? STALLCAP_ARM_DEADLINE_TSC : 0));
	if (slot < 0 || (size_t)slot >= sh->s.cfg.slots)
		return -errno;
	dl = tsc ? &sh->slots[slot].deadline_tsc : &sh->slots[slot].deadline_ns;
	for (i = 0; i < n; i++) {
		if (i && tsc)
			*dl = __builtin_ia32_rdtsc() + ticks;
		else if (i)
			*dl = now_ns() + PERIOD_NS;
		ret = sc_wait_sample(&sh->s, tid, &seen, NS_PER_SEC);
		if (ret < 0)
			return -EPROTO;
		if (!ret) {
			(*(tsc ? &l->tsc_missed : &l->shared_missed))++;
			continue;
		}
		if (tsc)
			l->tsc[l->ntsc++] = (double)(int64_t)(seen.capture_ns -
							      seen.deadline_ns);
		else
			l->shared[l->nshared++] = (double)(int64_t)(seen.capture_ns -
								    seen.deadline_ns);
	}
	return sc_disarm(&sh->s) ? -errno : 0;
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
	struct shared sh = { .s.fd = -1 };
	struct sc s;
	char key[64];
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
	ret = shared_open(&sh);
	if (ret)
		goto out_close;
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
		ret = shared_block(&l, &sh, chunk, false);
		if (ret)
			goto out_close;
		if (sh.s.info.features & STALLCAP_FEAT_DEADLINE_TSC) {
			ret = shared_block(&l, &sh, chunk, true);
			if (ret)
				goto out_close;
		}
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
	snprintf(key, sizeof(key), "lateness.%s.shared", mode);
	out_summary(l.shared, l.nshared, key);
	out_num(l.shared_missed, "%s.missed", key);
	if (l.ntsc || l.tsc_missed) {
		snprintf(key, sizeof(key), "lateness.%s.shared_tsc", mode);
		out_summary(l.tsc, l.ntsc, key);
		out_num(l.tsc_missed, "%s.missed", key);
	}
out_close:
	shared_close(&sh);
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
