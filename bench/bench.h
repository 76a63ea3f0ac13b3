/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap benchmark: shared helpers.
 *
 * Every section prints its results as "@bench KEY=VALUE" lines on stdout
 * (VALUE a number, or text); `stallcap_bench report` turns the collected
 * lines of a run into the Markdown table and the JSON file.  Human-readable
 * progress goes to stderr prefixed with "# ".
 *
 * Every figure is measured next to its baseline in the same process and, as
 * far as possible, interleaved with it, so that their ratio holds even on a
 * noisy emulated guest where absolute times mean little.
 */
#ifndef STALLCAP_BENCH_H
#define STALLCAP_BENCH_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/stallcap.h>

#define NS_PER_US	1000ULL
#define NS_PER_MS	1000000ULL
#define NS_PER_SEC	1000000000ULL

/* ---- run-wide options (stallcap_bench.c) ---- */

struct bench_opts {
	bool smoke;		/* tiny counts: prove the program works */
	bool remote_only;	/* capture section: only the NMI/IPI variants */
	unsigned int scale_max;	/* largest thread count of the scale section */
};

extern struct bench_opts bench_opts;

/* ---- output ---- */

void out_num(double v, const char *keyfmt, ...)
	__attribute__((format(printf, 2, 3)));
void out_str(const char *s, const char *keyfmt, ...)
	__attribute__((format(printf, 2, 3)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- time and CPUs ---- */

uint64_t now_ns(void);
void sleep_ns(uint64_t ns);
int pin_self(int cpu);		/* -1: every CPU */
int nr_cpus(void);
pid_t gettid_(void);
int module_param_set(const char *name, bool on);	/* 0 or -errno */

/* ---- statistics ---- */

/* Sort @v and return its @p-th percentile (nearest rank, 0 <= p <= 100). */
double pct_sorted(const double *v, size_t n, double p);
void sort_doubles(double *v, size_t n);

/*
 * Summary of a sample: "KEY.n", ".p50", ".p99", ".max", ".mean" (all in
 * the sample's unit).  @v is sorted in place.
 */
void out_summary(double *v, size_t n, const char *key);

/*
 * Log2 histogram (bucket i counts [2^i, 2^(i+1)) ns): the bucket holding
 * the @p-th percentile, or -1 when the histogram is empty.
 */
int hist_pct_bucket(const __u64 *hist, int nr, double p);

/* ---- CPU hogs: busy SCHED_OTHER processes pinned to CPUs ---- */

struct hogs {
	int n;
	pid_t pid[64];
};

int hogs_start(struct hogs *h, int only_cpu);	/* -1: every CPU */
void hogs_stop(struct hogs *h);

/* ---- stallcap sessions ---- */

struct sc {
	int fd;
	struct stallcap_info info;
	struct stallcap_config cfg;
	void *map;
	size_t map_len;
	struct stallcap_ring_ctl *ctl;
	unsigned char *data;
	/* the last deferred user stack (STALLCAP_REC_USER_STACK) consumed */
	uint64_t deferred_cookie;
	uint16_t deferred_user_frames;
};

/*
 * Open a session with @user_stack_bytes (0: default) and @max_samples per
 * stall, a ring large enough for @min_records samples, and map it.
 * Returns 0 or -errno.
 */
int sc_open(struct sc *s, uint32_t user_stack_bytes, uint32_t max_samples,
	    uint32_t min_records);
/* The same with @slots (0: default) and @sample_cap_ns (0: default). */
int sc_open_cfg(struct sc *s, uint32_t user_stack_bytes, uint32_t max_samples,
		uint32_t min_records, uint32_t slots, uint64_t sample_cap_ns);
void sc_close(struct sc *s);
int sc_arm(struct sc *s, uint64_t timeout_ns, uint32_t flags);
int sc_rearm(struct sc *s, uint64_t timeout_ns);
int sc_disarm(struct sc *s);
int sc_stats(struct sc *s, struct stallcap_stats *st, uint32_t flags);

/*
 * Payload bytes of the first section of @type in sample @r (NULL when
 * absent), skipping sections of other or unknown types; *@len gets the
 * section's payload size.
 */
static inline const void *sc_section_payload(const struct stallcap_sample *r,
					     uint16_t type, uint32_t *len)
{
	uint32_t off = r->fixed_size;

	while (off >= sizeof(*r) && off + sizeof(struct stallcap_section) <= r->hdr.size) {
		const struct stallcap_section *sec = (const void *)((const char *)r + off);

		if (sec->size < sizeof(*sec) || (sec->size & 7) || sec->size > r->hdr.size - off)
			break;
		if (sec->type == type) {
			*len = sec->size - sizeof(*sec);
			return sec + 1;
		}
		off += sec->size;
	}
	*len = 0;
	return NULL;
}

static inline uint32_t sc_nr_frames(const struct stallcap_sample *r, uint16_t type)
{
	uint32_t len;

	sc_section_payload(r, type, &len);
	return len / 8;
}

#define sc_nk(r)	sc_nr_frames((r), STALLCAP_SEC_KERNEL_IPS)
#define sc_nu(r)	sc_nr_frames((r), STALLCAP_SEC_USER_IPS)

static inline uint32_t sc_stack_size(const struct stallcap_sample *r)
{
	const struct stallcap_sec_user_stack *st;
	uint32_t len;

	st = (const void *)((const char *)sc_section_payload(r, STALLCAP_SEC_USER_STACK, &len) -
			    sizeof(struct stallcap_section));
	return len >= sizeof(*st) - sizeof(struct stallcap_section) ? st->len : 0;
}

/* What a benchmark keeps of a first sample. */
struct sc_seen {
	uint64_t cookie;
	uint64_t deadline_ns;
	uint64_t capture_ns;
	uint32_t flags;
	uint8_t state;
	uint8_t path;
	uint16_t nr_kernel_frames;
	uint16_t nr_user_frames;
	uint32_t stack_size;
};

/*
 * Consume the ring; return 1 and fill @seen when a first sample (index 0)
 * of thread @tid was consumed, 0 when none, -1 on a malformed ring.
 */
int sc_poll_sample(struct sc *s, pid_t tid, struct sc_seen *seen);

/*
 * Spin (in user mode, no system call) until a first sample of @tid shows
 * up or @timeout_ns passes.  Returns 1, 0 on timeout, -1 on a bad ring.
 */
int sc_wait_sample(struct sc *s, pid_t tid, struct sc_seen *seen,
		   uint64_t timeout_ns);

/*
 * User frames of a sample: its own, or those of its deferred user stack
 * record (waited for up to @timeout_ns when the sample says one follows).
 */
unsigned int sc_user_frames(struct sc *s, const struct sc_seen *seen,
			    uint64_t timeout_ns);

/* ---- sections ---- */

int bench_hotpath(void);
int bench_lateness(void);
int bench_capture(void);
int bench_scale(void);
int bench_seastar(void);
int bench_nmi_time(void);
int bench_beats(void);
int bench_report(const char *raw, const char *out_base);

#endif /* STALLCAP_BENCH_H */
