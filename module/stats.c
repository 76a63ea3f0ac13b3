// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap counters: per session and module-wide, updated from any context
 * (NMI included) with atomic64 operations only.
 */
#include <linux/atomic.h>
#include <linux/log2.h>

#include "stallcap.h"

struct stallcap_counters stallcap_global;

/**
 * stallcap_count() - add to a counter of a session and to the global one
 * @sc: the session's counters
 * @i: which counter
 * @delta: amount (may be negative for gauges such as SC_ARMED)
 */
void stallcap_count(struct stallcap_counters *sc, enum stallcap_counter i,
		    s64 delta)
{
	atomic64_add(delta, &sc->c[i]);
	atomic64_add(delta, &stallcap_global.c[i]);
}

static unsigned int hist_bucket(u64 ns)
{
	unsigned int b = ns ? ilog2(ns) : 0;

	return min_t(unsigned int, b, STALLCAP_HIST_BUCKETS - 1);
}

/**
 * stallcap_hist_add() - account one capture in the histograms
 * @sc: the session's counters
 * @cost_ns: time spent capturing
 * @late_ns: capture time minus deadline (negative counts as 0)
 */
void stallcap_hist_add(struct stallcap_counters *sc, u64 cost_ns, s64 late_ns)
{
	unsigned int cb = hist_bucket(cost_ns);
	unsigned int lb = hist_bucket(late_ns > 0 ? late_ns : 0);

	atomic64_inc(&sc->cost[cb]);
	atomic64_inc(&stallcap_global.cost[cb]);
	atomic64_inc(&sc->late[lb]);
	atomic64_inc(&stallcap_global.late[lb]);
}

/**
 * stallcap_counters_read() - snapshot counters into the ABI struct
 * @sc: the counters
 * @st: filled from @sc (size and flags are left alone)
 */
void stallcap_counters_read(struct stallcap_counters *sc,
			    struct stallcap_stats *st)
{
	u64 *dst[SC_NR_COUNTERS] = {
		[SC_WATCHES] = &st->watches,
		[SC_ARMED] = &st->armed,
		[SC_STALLS] = &st->stalls,
		[SC_SAMPLES] = &st->samples,
		[SC_STALL_ENDS] = &st->stall_ends,
		[SC_DEFERRED] = &st->deferred,
		[SC_LOST] = &st->lost,
		[SC_SUPPRESSED] = &st->suppressed,
		[SC_CAPTURE_LOCAL] = &st->capture_local,
		[SC_CAPTURE_NMI] = &st->capture_nmi,
		[SC_CAPTURE_IPI] = &st->capture_ipi,
		[SC_CAPTURE_BLOCKED] = &st->capture_blocked,
		[SC_MIGRATE_RETRIES] = &st->migrate_retries,
	};
	int i;

	for (i = 0; i < SC_NR_COUNTERS; i++)
		*dst[i] = atomic64_read(&sc->c[i]);
	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++) {
		st->capture_cost_hist[i] = atomic64_read(&sc->cost[i]);
		st->lateness_hist[i] = atomic64_read(&sc->late[i]);
	}
}
