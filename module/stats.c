// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap counters: per session and module-wide, updated from any context
 * (NMI included) with atomic64 operations only.
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/log2.h>
#include <linux/seq_file.h>

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
 * stallcap_hist_nmi() - account the time one remote capture spent in NMI
 * or IPI handler context
 * @sc: the session's counters
 * @ns: the time
 */
void stallcap_hist_nmi(struct stallcap_counters *sc, u64 ns)
{
	unsigned int b = hist_bucket(ns);

	atomic64_inc(&sc->nmi[b]);
	atomic64_inc(&stallcap_global.nmi[b]);
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
		[SC_LOST_FIRST] = &st->lost_first,
		[SC_LOST_DEFERRED] = &st->lost_deferred,
		[SC_ATTACHED] = &st->attached,
		[SC_LOCKED_BYTES] = &st->locked_bytes,
		[SC_LOCKED_RLIMIT_BYTES] = &st->locked_rlimit_bytes,
	};
	int i;

	for (i = 0; i < SC_NR_COUNTERS; i++)
		if (dst[i])
			*dst[i] = atomic64_read(&sc->c[i]);
	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++) {
		st->capture_cost_hist[i] = atomic64_read(&sc->cost[i]);
		st->lateness_hist[i] = atomic64_read(&sc->late[i]);
		st->nmi_time_hist[i] = atomic64_read(&sc->nmi[i]);
	}
}

/* ---- /sys/kernel/debug/stallcap/stats: the module-wide counters ---- */

static const char *const counter_names[SC_NR_COUNTERS] = {
	[SC_WATCHES] = "watches",
	[SC_ARMED] = "armed",
	[SC_STALLS] = "stalls",
	[SC_SAMPLES] = "samples",
	[SC_STALL_ENDS] = "stall_ends",
	[SC_DEFERRED] = "deferred",
	[SC_LOST] = "lost",
	[SC_SUPPRESSED] = "suppressed",
	[SC_CAPTURE_LOCAL] = "capture_local",
	[SC_CAPTURE_NMI] = "capture_nmi",
	[SC_CAPTURE_IPI] = "capture_ipi",
	[SC_CAPTURE_BLOCKED] = "capture_blocked",
	[SC_MIGRATE_RETRIES] = "migrate_retries",
	[SC_LOST_FIRST] = "lost_first",
	[SC_LOST_DEFERRED] = "lost_deferred",
	[SC_ATTACHED] = "attached",
	[SC_LOCKED_BYTES] = "locked_bytes",
	[SC_LOCKED_RLIMIT_BYTES] = "locked_rlimit_bytes",
	[SC_TIMER_EXPIRIES] = "timer_expiries",
	[SC_TIMER_POLLS] = "timer_polls",
	[SC_DEFER_BUF_ALLOCS] = "defer_buf_allocs",
};

static void show_hist(struct seq_file *m, const char *name, atomic64_t *h)
{
	int i;

	seq_printf(m, "%s_hist_log2_ns", name);
	for (i = 0; i < STALLCAP_HIST_BUCKETS; i++)
		seq_printf(m, " %lld", (long long)atomic64_read(&h[i]));
	seq_putc(m, '\n');
}

static int stats_show(struct seq_file *m, void *unused)
{
	int i;

	for (i = 0; i < SC_NR_COUNTERS; i++)
		seq_printf(m, "%s %lld\n", counter_names[i],
			   (long long)atomic64_read(&stallcap_global.c[i]));
	show_hist(m, "capture_cost", stallcap_global.cost);
	show_hist(m, "lateness", stallcap_global.late);
	show_hist(m, "nmi_time", stallcap_global.nmi);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

/*
 * Timer expiries per CPU: the watches' timers, the buddy checkers, the
 * watch timers a checker took over from a CPU that did not take them, the
 * heartbeat scanner, the heartbeat checks it made and the time its walks
 * took, the time in the buddy checkers' callbacks and their walks of every
 * watch, the timers sent home (watch_home.c) and the checkers' looks into a
 * suspect CPU's timer queue (buddy_queue.c).
 */
static int expiries_show(struct seq_file *m, void *unused)
{
	int cpu;

	for_each_possible_cpu(cpu)
		seq_printf(m, "cpu%d watch %lu buddy %lu rescued %lu beat %lu checks %lu scan_ns %lu buddy_ns %lu walks %lu homed %lu queue_looks %lu\n",
			   cpu, READ_ONCE(per_cpu(stallcap_watch_expiries, cpu)),
			   READ_ONCE(per_cpu(stallcap_buddy_expiries, cpu)),
			   READ_ONCE(per_cpu(stallcap_buddy_rescues, cpu)),
			   READ_ONCE(per_cpu(stallcap_beat_expiries, cpu)),
			   READ_ONCE(per_cpu(stallcap_beat_checks, cpu)),
			   READ_ONCE(per_cpu(stallcap_beat_scan_ns, cpu)),
			   READ_ONCE(per_cpu(stallcap_buddy_ns, cpu)),
			   READ_ONCE(per_cpu(stallcap_buddy_walks, cpu)),
			   READ_ONCE(per_cpu(stallcap_watch_homes, cpu)),
			   READ_ONCE(per_cpu(stallcap_buddy_queue_looks, cpu)));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(expiries);

static struct dentry *stats_dir;

/**
 * stallcap_stats_init() - create /sys/kernel/debug/stallcap/stats
 *
 * One "name value" line per counter, then one line per histogram with its
 * STALLCAP_HIST_BUCKETS log2 buckets; and .../expiries, one line per CPU:
 * "cpuN watch W buddy B rescued R beat S checks C" (timer expiries).  Failure is not fatal.
 */
void stallcap_stats_init(void)
{
	stats_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("stats", 0444, stats_dir, NULL, &stats_fops);
	debugfs_create_file("expiries", 0444, stats_dir, NULL, &expiries_fops);
}

void stallcap_stats_exit(void)
{
	debugfs_remove_recursive(stats_dir);
}
