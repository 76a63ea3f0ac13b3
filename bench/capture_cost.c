// SPDX-License-Identifier: GPL-2.0
/*
 * Section 3, capture cost: the time the module spends in its capture path
 * (kernel unwind, user frame-pointer walk, raw user-stack copy), from its
 * own log2 histogram (GET_STATS capture_cost_hist of a fresh session per
 * variant), for
 *  - a thread stalled in user mode and one stalled in a long system call
 *    (read() from /dev/zero into a large buffer),
 *  - 16 KiB and 64 KiB raw stack copies,
 *  - the local path (the deadline timer fires on the thread's own CPU) and
 *    the remote path (the thread moved to another CPU after arming, so the
 *    timer sends an NMI or, with the module loaded with capture=ipi, an IPI).
 * The baseline is a user-space memcpy() of the same number of bytes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

#define MIB		(1024UL * 1024)

struct variant {
	bool remote;
	bool kernel;
	uint32_t stack_bytes;
};

static const struct variant variants[] = {
	{ false, false, 16384 },
	{ false, false, 65536 },
	{ false, true,  16384 },
	{ false, true,  65536 },
	{ true,  false, 16384 },
	{ true,  true,  16384 },
	{ true,  false, 65536 },
};

#define NR_VARIANTS	(sizeof(variants) / sizeof(variants[0]))

struct kwork {
	int zero_fd;
	char *buf;
	size_t len;
};

/* A read() of /dev/zero that stays in the kernel for at least ~5 ms. */
static int kwork_init(struct kwork *k)
{
	uint64_t t0, t1;

	k->zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (k->zero_fd < 0)
		return -errno;
	for (k->len = 1 * MIB; ; k->len *= 2) {
		k->buf = mmap(NULL, k->len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (k->buf == MAP_FAILED)
			return -errno;
		t0 = now_ns();
		if (read(k->zero_fd, k->buf, k->len) < 0)
			return -errno;
		t1 = now_ns();
		if (t1 - t0 >= 5 * NS_PER_MS || k->len >= 64 * MIB)
			break;
		munmap(k->buf, k->len);
	}
	note("capture: a %zu MiB read of /dev/zero takes %.1f ms", k->len / MIB,
	     (double)(t1 - t0) / NS_PER_MS);
	out_num((double)(t1 - t0) / NS_PER_MS, "capture.kernel_read_ms");
	return 0;
}

static double memcpy_ns(uint32_t bytes)
{
	unsigned int n = bench_opts.smoke ? 11 : 1001, i;
	char *src = malloc(bytes), *dst = malloc(bytes);
	double *v = calloc(n, sizeof(double)), med;

	memset(src, 1, bytes);
	memset(dst, 2, bytes);
	for (i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		memcpy(dst, src, bytes);
		__asm__ volatile("" : : "r"(dst) : "memory");
		v[i] = (double)(now_ns() - t0);
	}
	sort_doubles(v, n);
	med = v[n / 2];
	free(src);
	free(dst);
	free(v);
	return med;
}

/* One stall: arm, move if remote, stall until the first sample. */
static __attribute__((noinline)) int one_stall(struct sc *s, const struct variant *v, struct kwork *k,
		     struct sc_seen *seen)
{
	uint64_t deadline = v->remote ? 20 * NS_PER_MS : NS_PER_MS;	/* time to migrate */
	uint64_t end = now_ns() + 2 * NS_PER_SEC;
	pid_t tid = gettid_();
	int ret;

	pin_self(0);
	if (sc_rearm(s, deadline))
		return -errno;
	if (v->remote)
		pin_self(1);
	do {
		if (v->kernel) {
			if (read(k->zero_fd, k->buf, k->len) < 0)
				return -errno;
			ret = sc_poll_sample(s, tid, seen);
		} else {
			ret = sc_wait_sample(s, tid, seen, 10 * NS_PER_MS);
		}
	} while (!ret && now_ns() < end);
	sc_disarm(s);
	return ret < 0 ? -EPROTO : ret;
}

/*
 * Stall below an 80 KiB frame of touched stack pages, so that a 64 KiB copy
 * from the stalled thread's stack pointer up finds mapped stack all the
 * way (the top of a main thread's stack holds only a few KiB).
 */
static __attribute__((noinline)) int deep_stall(struct sc *s, const struct variant *v,
						struct kwork *k, struct sc_seen *seen)
{
	volatile char pad[80 * 1024];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(pad); i += 1024)
		pad[i] = 1;
	ret = one_stall(s, v, k, seen);
	__asm__ volatile("" : : "r"(pad) : "memory");
	return ret;
}

/* The capture-cost histogram's non-empty buckets, as KEY.hist.N. */
static void out_hist(const struct stallcap_stats *st, const char *key)
{
	unsigned int i;

	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++)
		if (st->capture_cost_hist[i])
			out_num((double)st->capture_cost_hist[i], "%s.hist.%u", key, i);
}

static int run_variant(const struct variant *v, const char *path, struct kwork *k,
		       unsigned int n)
{
	unsigned int i, got = 0, user_mode = 0, partial = 0;
	unsigned int paths[STALLCAP_PATH_DEFERRED + 1] = { 0 };
	double copied = 0;
	struct stallcap_stats st;
	struct sc_seen seen;
	char key[96];
	struct sc s;
	int ret, b50, b99;

	snprintf(key, sizeof(key), "capture.%s.%s.%uk", path,
		 v->kernel ? "kernel" : "user", v->stack_bytes / 1024);
	ret = sc_open(&s, v->stack_bytes, 1, 16);
	if (!ret && (sc_arm(&s, 10 * NS_PER_SEC, 0) || sc_disarm(&s)))
		ret = -errno;
	for (i = 0; !ret && i < n; i++) {
		ret = deep_stall(&s, v, k, &seen);
		if (ret == 1) {
			got++;
			partial += !!(seen.flags & STALLCAP_SAMPLE_COPY_PARTIAL);
			copied += seen.stack_size;
			user_mode += !!(seen.flags & STALLCAP_SAMPLE_USER_MODE);
			if (seen.path <= STALLCAP_PATH_DEFERRED)
				paths[seen.path]++;
			ret = 0;
		}
	}
	pin_self(0);
	if (ret) {
		out_str(strerror(-ret), "%s.error", key);
		sc_close(&s);
		return ret;
	}
	if (sc_stats(&s, &st, 0)) {
		ret = -errno;
		sc_close(&s);
		return ret;
	}
	sc_close(&s);
	out_num(n, "%s.stalls", key);
	out_num(got, "%s.captured", key);
	out_num(user_mode, "%s.user_mode", key);
	out_num(partial, "%s.copy_partial", key);
	if (got)
		out_num(copied / got, "%s.stack_bytes_mean", key);
	out_num(paths[STALLCAP_PATH_LOCAL], "%s.path_local", key);
	out_num(paths[STALLCAP_PATH_NMI], "%s.path_nmi", key);
	out_num(paths[STALLCAP_PATH_IPI], "%s.path_ipi", key);
	out_num(paths[STALLCAP_PATH_BLOCKED], "%s.path_blocked", key);
	b50 = hist_pct_bucket(st.capture_cost_hist, STALLCAP_HIST_BUCKETS, 50);
	b99 = hist_pct_bucket(st.capture_cost_hist, STALLCAP_HIST_BUCKETS, 99);
	if (b50 >= 0) {
		out_num((double)(1ULL << b50), "%s.p50_lo", key);
		out_num((double)(2ULL << b50), "%s.p50_hi", key);
		out_num((double)(1ULL << b99), "%s.p99_lo", key);
		out_num((double)(2ULL << b99), "%s.p99_hi", key);
	}
	out_hist(&st, key);
	return 0;
}

static int set_global(struct sc *g, bool on)
{
	struct stallcap_config cfg = g->cfg;

	if (on)
		cfg.flags |= STALLCAP_CFG_GLOBAL;
	else
		cfg.flags &= ~STALLCAP_CFG_GLOBAL;
	return ioctl(g->fd, STALLCAP_IOC_SET_CONFIG, &cfg) ? -errno : 0;
}


/*
 * Issue #16 target 5, side by side: local 64 KiB user-mode stalls taken in
 * turn, blocks of RING_BLOCK, by two sessions, a system-wide reader switched off for the one
 * ("direct": built straight in the ring record) and on for the other
 * ("buffered": built in the per-CPU buffer, copied into the ring, then
 * mirrored).  Each session's histogram counts only its own stalls.
 */
/* stalls per block of one side (the reader off, or on) */
#define RING_BLOCK	20

static int ring_pair(struct kwork *k, unsigned int n)
{
	static const struct variant v = { false, false, 65536 };
	struct sc a, b, g;
	unsigned int block = n < 2 * RING_BLOCK ? 1 : RING_BLOCK;
	struct sc_seen seen;
	unsigned int i, got[2] = { 0, 0 };
	int ret;

	ret = sc_open(&g, 65536, 1, 16);
	if (ret)
		goto err;
	ret = sc_open(&a, 65536, 1, 16);
	if (ret)
		goto err_g;
	ret = sc_open(&b, 65536, 1, 16);
	if (ret)
		goto err_a;
	if (sc_arm(&a, 10 * NS_PER_SEC, 0) || sc_disarm(&a) ||
	    sc_arm(&b, 10 * NS_PER_SEC, 0) || sc_disarm(&b))
		ret = -errno;
	for (i = 0; !ret && i < 2 * n; i++) {
		unsigned int side = (i / block) & 1;

		/*
		 * Switching the reader off waits for an RCU grace period (the
		 * thread sleeps), switching it on does not: a sleep after
		 * either, so that both blocks start alike.  The switch and the
		 * sleep cost the next stall's capture far more than the copy
		 * compared here: once per block of stalls, not before each.
		 */
		if (i % block == 0) {
			ret = set_global(&g, side);
			sleep_ns(2 * NS_PER_MS);
		}
		if (!ret)
			ret = deep_stall(side ? &b : &a, &v, k, &seen);
		if (ret == 1) {
			got[side]++;
			ret = 0;
		}
	}
	set_global(&g, false);
	pin_self(0);
	if (!ret) {
		out_num(got[0], "capture.ring.direct.captured");
		out_num(got[1], "capture.ring.buffered.captured");
		struct stallcap_stats st;

		if (!sc_stats(&a, &st, 0))
			out_hist(&st, "capture.ring.direct");
		if (!sc_stats(&b, &st, 0))
			out_hist(&st, "capture.ring.buffered");
	}
	sc_close(&b);
err_a:
	sc_close(&a);
err_g:
	sc_close(&g);
err:
	if (ret)
		out_str(strerror(-ret), "capture.ring.error");
	return 0;	/* the other rows stand without it */
}

int bench_capture(void)
{
	unsigned int n = bench_opts.smoke ? 3 : 200, i;
	struct stallcap_info info = { .size = sizeof(info) };
	struct kwork k = { .zero_fd = -1 };
	const char *remote;
	struct sc s;
	int ret;

	ret = sc_open(&s, 0, 1, 4);
	if (ret)
		return ret;
	info = s.info;
	sc_close(&s);
	remote = info.features & STALLCAP_FEAT_NMI ? "nmi" : "ipi";
	ret = kwork_init(&k);
	if (ret)
		return ret;
	out_num(memcpy_ns(16384), "capture.baseline.memcpy_16k");
	out_num(memcpy_ns(65536), "capture.baseline.memcpy_64k");
	for (i = 0; i < NR_VARIANTS; i++) {
		const struct variant *v = &variants[i];

		if (bench_opts.remote_only && !v->remote)
			continue;
		if (v->remote && nr_cpus() < 2)
			continue;
		note("capture: %s %s-mode stalls, %u KiB stack copies",
		     v->remote ? remote : "local", v->kernel ? "kernel" : "user",
		     v->stack_bytes / 1024);
		ret = run_variant(v, v->remote ? remote : "local", &k, n);
		if (ret)
			break;
	}
	if (!ret && !bench_opts.remote_only) {
		note("capture: local 64 KiB user-mode stalls, in turn without and with a system-wide reader");
		ret = ring_pair(&k, n);
	}
	munmap(k.buf, k.len);
	close(k.zero_fd);
	return ret;
}
