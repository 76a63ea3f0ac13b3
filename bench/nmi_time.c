// SPDX-License-Identifier: GPL-2.0
/*
 * Section "nmi", time in NMI context per capture (issue #16, target 2): a
 * thread arms a 20 ms deadline on vCPU 0, moves to vCPU 1 and spins in user
 * mode below a 96 KiB frame of touched stack; every sample of its stall is
 * then taken by an NMI (or IPI) to vCPU 1, with a 64 KiB user-stack copy.
 * The module's own histogram of the time spent in the handler per remote
 * capture (GET_STATS nmi_time_hist, the one capture_defer_test reads) is
 * taken round by round, the rounds alternating between the user stack
 * copied inside the handler (module parameter user_copy_in_handler=1, how
 * captures were made before the deferred copy) and after it (the default).
 *
 * The first round copies after the handler: the kernel prints "NMI handler
 * took too long" only for a handler slower than every one before it (and
 * over 1 ms), so the rounds that copy in the handler, which raise that
 * mark, come after.  They are framed by the "vmtest: allow-slow-nmi"
 * lines in the kernel log, as in capture_defer_test: bench/run.sh counts
 * the "took too long" lines inside and outside those frames.  The smoke
 * run (make check) runs only rounds that copy after the handler, so that
 * it never raises the mark for the selftests that follow.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define NMI_DEADLINE_NS	(20 * NS_PER_MS)	/* time to move to vCPU 1 */
#define NMI_SAMPLE_CAP_NS	(2 * NS_PER_MS)		/* samples 2 ms apart */
#define NMI_STACK_PAD	(96 * 1024)		/* room above sp for the copy */
#define NMI_ROUND_TIMEOUT	(10 * NS_PER_SEC)

enum { IN_HANDLER, DEFERRED, NR_MODES };
static const char *const mode_key[NR_MODES] = { "in_handler", "deferred" };

struct nmi_run {
	struct sc s;
	volatile int stop;
	volatile int armed;
	int err;
};

static int kmsg(const char *msg)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, msg, strlen(msg));
	close(fd);
	return n < 0 ? -errno : 0;
}

static int set_in_handler(bool on)
{
	return module_param_set("user_copy_in_handler", on);
}

/*
 * Copy in the handler from now on, framed for the log like
 * capture_defer_test's rounds (scripts/vmtest.sh, bench/run.sh).
 */
static int in_handler_begin(void)
{
	kmsg("vmtest: allow-slow-nmi begin\n");
	return set_in_handler(true);
}

static int in_handler_end(void)
{
	int ret = set_in_handler(false);

	sleep_ns(100 * NS_PER_MS);	/* an NMI in flight has printed */
	kmsg("vmtest: allow-slow-nmi end\n");
	return ret;
}

static __attribute__((noinline)) void spin_until(volatile int *stop)
{
	while (!*stop)
		__asm__ volatile("" ::: "memory");
}

/* The stalled thread: arm on vCPU 0, spin in user mode on vCPU 1. */
static __attribute__((noinline)) void *stall_thread(void *arg)
{
	struct nmi_run *r = arg;
	volatile char pad[NMI_STACK_PAD];
	size_t i;

	for (i = 0; i < sizeof(pad); i += 1024)
		pad[i] = 1;
	pin_self(0);
	if (sc_arm(&r->s, NMI_DEADLINE_NS, 0))	/* a new thread: a new watch */
		r->err = errno;
	pin_self(1);
	r->armed = 1;
	if (!r->err)
		spin_until(&r->stop);
	sc_disarm(&r->s);
	__asm__ volatile("" : : "r"(pad) : "memory");
	return NULL;
}

/* Drop every record of the ring (the stalled thread never reads it). */
static void drain(struct sc *s)
{
	struct sc_seen seen;

	sc_poll_sample(s, -1, &seen);
}

/* What a mode's rounds added up to. */
struct nmi_acc {
	__u64 hist[STALLCAP_HIST_BUCKETS];
	__u64 samples, remote, local, blocked;
};

/* One stall of @samples samples; the counters' growth goes into @acc. */
static int one_round(struct nmi_run *r, unsigned int samples, struct nmi_acc *acc)
{
	struct stallcap_stats a, b;
	uint64_t end;
	pthread_attr_t attr;
	pthread_t th;
	unsigned int i;
	int ret;

	if (sc_stats(&r->s, &a, 0))
		return -errno;
	r->stop = 0;
	r->armed = 0;
	r->err = 0;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, NMI_STACK_PAD + 256 * 1024);
	ret = -pthread_create(&th, &attr, stall_thread, r);
	pthread_attr_destroy(&attr);
	if (ret)
		return ret;
	end = now_ns() + NMI_ROUND_TIMEOUT;
	for (;;) {
		drain(&r->s);
		if (sc_stats(&r->s, &b, 0)) {
			ret = -errno;
			break;
		}
		if (b.samples + b.lost >= a.samples + a.lost + samples || r->err)
			break;
		if (now_ns() >= end) {
			ret = -ETIMEDOUT;
			break;
		}
		sleep_ns(2 * NS_PER_MS);
	}
	r->stop = 1;
	pthread_join(th, NULL);
	drain(&r->s);
	if (r->err)
		return -r->err;
	if (ret)
		return ret;
	if (sc_stats(&r->s, &b, 0))
		return -errno;
	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++)
		acc->hist[i] += b.nmi_time_hist[i] - a.nmi_time_hist[i];
	acc->samples += b.samples - a.samples;
	acc->remote += (b.capture_nmi - a.capture_nmi) + (b.capture_ipi - a.capture_ipi);
	acc->local += b.capture_local - a.capture_local;
	acc->blocked += b.capture_blocked - a.capture_blocked;
	return 0;
}

static void out_acc(const char *mode, const struct nmi_acc *acc)
{
	const __u64 *hist = acc->hist;
	__u64 n = 0, over_1ms = 0;
	int b50, b99, i;

	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++) {
		n += hist[i];
		if (i >= 20)		/* [2^20 ns, ...): over 1.05 ms */
			over_1ms += hist[i];
		if (hist[i])
			out_num((double)hist[i], "nmi.%s.hist.%d", mode, i);
	}
	out_num((double)n, "nmi.%s.captures", mode);
	out_num((double)acc->samples, "nmi.%s.samples", mode);
	out_num((double)acc->remote, "nmi.%s.remote", mode);
	out_num((double)acc->local, "nmi.%s.local", mode);
	out_num((double)acc->blocked, "nmi.%s.blocked", mode);
	out_num((double)over_1ms, "nmi.%s.over_1ms", mode);
	b50 = hist_pct_bucket(hist, STALLCAP_HIST_BUCKETS, 50);
	b99 = hist_pct_bucket(hist, STALLCAP_HIST_BUCKETS, 99);
	if (b50 < 0)
		return;
	out_num(b50, "nmi.%s.p50_bucket", mode);
	out_num(b99, "nmi.%s.p99_bucket", mode);
	out_num((double)(1ULL << b50), "nmi.%s.p50_lo", mode);
	out_num((double)(2ULL << b50), "nmi.%s.p50_hi", mode);
	out_num((double)(1ULL << b99), "nmi.%s.p99_lo", mode);
	out_num((double)(2ULL << b99), "nmi.%s.p99_hi", mode);
}

int bench_nmi_time(void)
{
	unsigned int rounds = bench_opts.smoke ? 1 : 20;
	unsigned int samples = bench_opts.smoke ? 4 : 32, round;
	struct nmi_acc acc[NR_MODES];
	struct nmi_run r;
	int ret, mode;

	memset(acc, 0, sizeof(acc));
	if (nr_cpus() < 2) {
		out_str("fewer than 2 CPUs", "nmi.error");
		return 0;
	}
	ret = set_in_handler(false);
	if (ret) {
		out_str(strerror(-ret), "nmi.error");
		return ret;
	}
	/* samples 2 ms apart */
	ret = sc_open_cfg(&r.s, 65536, samples, 16, 0, NMI_SAMPLE_CAP_NS);
	if (ret)
		return ret;
	pin_self(0);
	out_num(samples, "nmi.samples_per_stall");
	out_num(65536, "nmi.stack_bytes");
	out_num(bench_opts.smoke ? 0 : 1, "nmi.in_handler_measured");
	note("nmi: %u stalls of %u samples, 64 KiB copies, the copy in the handler "
	     "and after it in turn", rounds, samples);
	for (round = 0; round < rounds; round++) {
		/* deferred first: see the top of this file */
		mode = bench_opts.smoke || !(round & 1) ? DEFERRED : IN_HANDLER;
		if (mode == IN_HANDLER && (ret = in_handler_begin()))
			break;
		ret = one_round(&r, samples, &acc[mode]);
		if (mode == IN_HANDLER) {
			int ret2 = in_handler_end();

			ret = ret ?: ret2;
		}
		if (ret)
			break;
	}
	if (ret) {
		out_str(strerror(-ret), "nmi.error");
		goto out;
	}
	for (mode = 0; mode < NR_MODES; mode++)
		if (mode == DEFERRED || !bench_opts.smoke)
			out_acc(mode_key[mode], &acc[mode]);
out:
	sc_close(&r.s);
	return ret;
}
