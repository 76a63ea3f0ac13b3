// SPDX-License-Identifier: GPL-2.0
/*
 * Section "beats", heartbeat watches at scale (issue #16, target 3): N
 * threads (64 KiB stacks) each holding a heartbeat watch with a 2 ms
 * threshold, against the same N threads without watches.  Each thread is
 * an event loop that mostly waits by design: one beat, idle = 1, a 100 ms
 * nanosleep, idle = 0, again.  The watches then never stall (idle counts as
 * progress) and what they cost is the module's checking alone: a watch
 * whose thread sleeps marked idle dozes (module/beat_doze.c), the others
 * are checked every threshold / 4 (500 µs) by their CPU's heartbeat
 * scanner, one timer expiry per CPU and period (module/beat_scan.c).  The
 * same watches not dozing (beat_doze=0, checked every period all along) are
 * run in the same rounds, for comparison.
 * For comparison, in the same rounds (100 watches only: 1,000 would
 * saturate 2 emulated vCPUs), the same watches with one hrtimer each
 * (beat_scan=0), on a grid of that period so that a CPU's watches expire
 * in one timer interrupt, as before the scanner.
 *
 * Measured, the loads taking turns (no threads, the threads without
 * watches, the threads with watches): the CPU time left to a soaker, one
 * SCHED_IDLE thread per CPU counting in a loop, which gets whatever the
 * load, its interrupts included, leaves.  /proc/stat cannot show the
 * watches' cost: their timer interrupts arrive while the CPU is idle, and
 * without IRQ_TIME_ACCOUNTING (Debian's kernels) the kernel books that time
 * as idle.  The machine busy time of a load, in CPUs, is the number of CPUs
 * minus the soaker's count divided by its count per CPU with no threads.
 * Also measured: the watch timers' and the scanners' expiries per second
 * (/sys/kernel/debug/stallcap/expiries).  The target is an extra of at most
 * 2% of one CPU for 1,000 watches, i.e. 0.002% of a CPU per watch: a smaller
 * N is held to the same budget per watch, scaled to N.  When N watches
 * already cost more than half a CPU extra, the larger N is not run (on 2
 * emulated vCPUs it would saturate them).
 *
 * The same threads once more, paced: they never mark themselves idle and
 * one pacer thread bumps every slot's beat counter every BEAT_PACE_NS, as
 * a busy event loop beating each iteration would (N threads beating for
 * real would saturate the 2 vCPUs).  Every check then sees progress,
 * which is the scanner's other path (its counters' snapshot is taken only
 * when a check finds none, module/beat_scan.c).
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define BEAT_THRESHOLD_NS	(2 * NS_PER_MS)
#define BEAT_SLEEP_NS	(100 * NS_PER_MS)
#define BEAT_STACK_BYTES	(64 * 1024)
/* the pacer's beats: twice per check period (threshold / 4) */
#define BEAT_PACE_NS	(BEAT_THRESHOLD_NS / 8)
#define BEAT_EXPIRIES_FILE	"/sys/kernel/debug/stallcap/expiries"

struct beater {
	pthread_t th;
	struct beat_load *l;
	volatile struct stallcap_slot *slot;
	struct stallcap_slot own;	/* without a watch: ordinary memory */
	int err;
} __attribute__((aligned(64)));

struct beat_load {
	unsigned int n;
	bool watched;
	bool paced;	/* never idle; beats by the pacer thread */
	volatile bool measuring;	/* inside the measured window */
	uint64_t pace_gap_max;	/* the pacer's longest time between two passes */
	uint64_t pace_gaps;	/* its passes later than the threshold */
	struct sc *s;
	struct stallcap_slot *slots;
	pthread_barrier_t armed;
	volatile int stop;
	struct beater *b;
};

static void *beater_fn(void *arg)
{
	struct beater *b = arg;
	struct beat_load *l = b->l;
	struct timespec ts = { 0, BEAT_SLEEP_NS };
	volatile struct stallcap_slot *mine = &b->own;
	int slot;

	if (l->watched) {
		slot = sc_arm(l->s, BEAT_THRESHOLD_NS, STALLCAP_ARM_HEARTBEAT);
		if (slot < 0 || (size_t)slot >= l->s->cfg.slots)
			b->err = slot < 0 ? errno : ERANGE;
		else
			mine = &l->slots[slot];
	}
	/* the pacer (already running) beats it from here */
	__atomic_store_n(&b->slot, mine, __ATOMIC_RELEASE);
	pthread_barrier_wait(&l->armed);
	while (!l->stop) {
		if (!l->paced) {
			b->slot->idle = 0;
			b->slot->beats++;
			b->slot->idle = 1;
		}
		nanosleep(&ts, NULL);
	}
	if (l->watched && !b->err)
		sc_disarm(l->s);
	return NULL;
}

/* A paced load's beats: every thread's slot, every BEAT_PACE_NS. */
static void *pacer_fn(void *arg)
{
	struct beat_load *l = arg;
	struct timespec ts = { 0, BEAT_PACE_NS };
	uint64_t last = now_ns(), t;
	unsigned int i;

	/* ahead of every other thread: a late pass would be the watches' stall */
	sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 40 });

	while (!l->stop) {
		t = now_ns();
		if (t - last > l->pace_gap_max)
			l->pace_gap_max = t - last;
		if (t - last >= BEAT_THRESHOLD_NS && l->measuring)
			l->pace_gaps++;
		last = t;
		for (i = 0; i < l->n; i++) {
			volatile struct stallcap_slot *slot =
				__atomic_load_n(&l->b[i].slot, __ATOMIC_ACQUIRE);

			if (slot)
				slot->beats++;
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Module counters of the heartbeat machinery, all CPUs (debugfs). */
struct beat_counts {
	double watch;	/* watch timer expiries */
	double buddy;	/* buddy checker expiries */
	double scan;	/* scanner expiries */
	double checks;	/* heartbeat checks made by the scanners */
	double scan_ns;	/* time in the scanners' walks */
};

/* The counters so far; NAN without the debugfs file. */
static void timer_expiries(struct beat_counts *c)
{
	FILE *f = fopen(BEAT_EXPIRIES_FILE, "r");
	unsigned long long w, b, r, sc, ch, ns;
	char line[256];
	int cpu;

	c->watch = c->buddy = c->scan = c->checks = c->scan_ns = f ? 0 : NAN;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "cpu%d watch %llu buddy %llu rescued %llu beat %llu "
			       "checks %llu scan_ns %llu", &cpu, &w, &b, &r, &sc, &ch, &ns);

		if (n >= 2)
			c->watch += (double)w;
		if (n >= 3)
			c->buddy += (double)b;
		if (n >= 5)
			c->scan += (double)sc;
		if (n == 7) {
			c->checks += (double)ch;
			c->scan_ns += (double)ns;
		}
	}
	fclose(f);
}

/* ---- the soaker: one SCHED_IDLE counting thread per CPU ---- */

#define MAX_SOAK	64

struct soak_cpu {
	pthread_t th;
	int cpu;
	volatile int *stop;
	volatile uint64_t count;
} __attribute__((aligned(64)));

struct soak {
	int n;
	volatile int stop;
	struct soak_cpu c[MAX_SOAK];
};

static void *soak_fn(void *arg)
{
	struct soak_cpu *c = arg;
	uint64_t n = 0;
	unsigned int i;

	pin_self(c->cpu);
	sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){ .sched_priority = 0 });
	while (!*c->stop) {
		for (i = 0; i < 1000; i++)
			__asm__ volatile("" ::: "memory");
		c->count = n += 1000;
	}
	return NULL;
}

static int soak_start(struct soak *k)
{
	int i, ret;

	k->n = nr_cpus() < MAX_SOAK ? nr_cpus() : MAX_SOAK;
	k->stop = 0;
	for (i = 0; i < k->n; i++) {
		k->c[i].cpu = i;
		k->c[i].stop = &k->stop;
		k->c[i].count = 0;
		ret = -pthread_create(&k->c[i].th, NULL, soak_fn, &k->c[i]);
		if (ret) {
			k->n = i;
			return ret;
		}
	}
	return 0;
}

static void soak_stop(struct soak *k)
{
	int i;

	k->stop = 1;
	for (i = 0; i < k->n; i++)
		pthread_join(k->c[i].th, NULL);
}

static double soak_count(const struct soak *k)
{
	double sum = 0;
	int i;

	for (i = 0; i < k->n; i++)
		sum += (double)k->c[i].count;
	return sum;
}

struct beat_result {
	double window_ns, soak, expiries, buddies, scans, checks, scan_ns, pace_gap_max, pace_gaps;
	unsigned int errs, runs;
	uint64_t stalls;
};

/* @n threads (0: none), with watches or not, paced or not, under the soaker @k. */
static int run_beats(unsigned int n, bool watched, bool paced, struct sc *s,
		     struct stallcap_slot *slots, uint64_t window_ns,
		     const struct soak *k, struct beat_result *r)
{
	struct beat_load l = {
		.n = n, .watched = watched, .paced = paced, .s = s, .slots = slots,
	};
	struct stallcap_stats st0, st1;
	struct beat_counts c0, c1;
	double k0, k1;
	uint64_t t0, t1;
	pthread_attr_t attr;
	pthread_t pacer;
	unsigned int i, started = 0;
	int ret = 0;

	l.b = aligned_alloc(64, sizeof(*l.b) * (n ?: 1));
	if (!l.b)
		return -ENOMEM;
	memset(l.b, 0, sizeof(*l.b) * (n ?: 1));
	pthread_barrier_init(&l.armed, NULL, n + 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, BEAT_STACK_BYTES);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &(struct sched_param){ .sched_priority = 0 });
	/* before the threads: a watch must not wait for its first beat */
	paced = paced && !pthread_create(&pacer, NULL, pacer_fn, &l);
	for (i = 0; i < n; i++) {
		l.b[i].l = &l;
		ret = -pthread_create(&l.b[i].th, &attr, beater_fn, &l.b[i]);
		if (ret)
			break;
		started++;
	}
	pthread_attr_destroy(&attr);
	if (ret) {
		/* the started threads wait on a barrier sized for n + 1: leave them */
		out_str(strerror(-ret), "beats.%u.%s.error", n, watched ? "watched" : "plain");
		return ret;
	}
	pthread_barrier_wait(&l.armed);
	sleep_ns(window_ns / 4);	/* settle */
	sc_stats(s, &st0, 0);
	timer_expiries(&c0);
	k0 = soak_count(k);
	t0 = now_ns();
	l.measuring = true;
	sleep_ns(window_ns);
	l.measuring = false;
	t1 = now_ns();
	k1 = soak_count(k);
	timer_expiries(&c1);
	sc_stats(s, &st1, 0);
	l.stop = 1;
	if (paced) {
		pthread_join(pacer, NULL);
		if (l.pace_gap_max > r->pace_gap_max)
			r->pace_gap_max = (double)l.pace_gap_max;
		r->pace_gaps += (double)l.pace_gaps;
	}
	for (i = 0; i < n; i++) {
		pthread_join(l.b[i].th, NULL);
		r->errs += l.b[i].err != 0;
	}
	sleep_ns(200 * NS_PER_MS);	/* exited threads' watches are reaped */
	r->runs++;
	r->window_ns += (double)(t1 - t0);
	r->soak += k1 - k0;
	r->expiries += c1.watch - c0.watch;
	r->buddies += c1.buddy - c0.buddy;
	r->scans += c1.scan - c0.scan;
	r->checks += c1.checks - c0.checks;
	r->scan_ns += c1.scan_ns - c0.scan_ns;
	r->stalls += st1.stalls - st0.stalls;
	pthread_barrier_destroy(&l.armed);
	free(l.b);
	return 0;
}

static void beats_out(unsigned int n, const char *var, const struct beat_result *r)
{
	out_num(r->runs, "beats.%u.%s.runs", n, var);
	out_num(r->window_ns / NS_PER_MS, "beats.%u.%s.window_ms", n, var);
	out_num(r->soak * NS_PER_SEC / r->window_ns, "beats.%u.%s.soak_per_s", n, var);
	out_num(r->expiries * NS_PER_SEC / r->window_ns, "beats.%u.%s.expiries_per_s", n, var);
	out_num(r->scans * NS_PER_SEC / r->window_ns, "beats.%u.%s.scans_per_s", n, var);
	out_num(r->buddies * NS_PER_SEC / r->window_ns, "beats.%u.%s.buddy_per_s", n, var);
	out_num(r->checks * NS_PER_SEC / r->window_ns, "beats.%u.%s.checks_per_s", n, var);
	/* the scanners' walk per check (their expiry's own cost not included) */
	if (r->checks > 0)
		out_num(r->scan_ns / r->checks, "beats.%u.%s.ns_per_check", n, var);
	if (r->pace_gap_max > 0) {
		out_num(r->pace_gap_max / NS_PER_MS, "beats.%u.%s.pace_gap_max_ms", n, var);
		out_num(r->pace_gaps, "beats.%u.%s.pace_gaps_over_threshold", n, var);
	}
	out_num(r->errs, "beats.%u.%s.thread_errors", n, var);
	out_num((double)r->stalls, "beats.%u.%s.stalls", n, var);
}

/* A session with room for @n slot watches, its slots mapped. */
static int beats_session(struct sc *s, unsigned int n, struct stallcap_slot **slots,
			 size_t *len)
{
	int ret = sc_open_cfg(s, 0, 1, 4, (n + 63) / 64 * 64, 0);

	if (ret)
		return ret;
	*len = (size_t)s->cfg.slots * sizeof(**slots);
	*slots = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		      STALLCAP_MMAP_SLOTS);
	if (*slots == MAP_FAILED) {
		*slots = NULL;
		return -errno;
	}
	return 0;
}

/*
 * Soaker counts per second: with no threads, without watches, with them
 * (checked by the CPUs' scanners), the same two paced (progress at every
 * check), and the watches on one timer each (last: for small N only).
 */
enum {
	LOAD_NONE, LOAD_PLAIN, LOAD_WATCHED, LOAD_AWAKE, LOAD_PACED_PLAIN,
	LOAD_PACED_WATCHED, LOAD_TIMERS, NR_LOADS
};
static const char *const load_key[NR_LOADS] = {
	"none", "plain", "watched", "awake", "paced_plain", "paced_watched", "timers",
};

/* The largest N whose watches are also run with one timer each. */
#define BEAT_TIMERS_MAX	100

/*
 * The module parameter a load turns off while it runs: the awake load's
 * watches are checked every period all along (beat_doze=0, as before
 * dozing), the timers load's have one timer each (beat_scan=0).
 */
static const char *load_param_off(unsigned int load)
{
	return load == LOAD_AWAKE ? "beat_doze" : load == LOAD_TIMERS ? "beat_scan" : NULL;
}

/* One load of @n threads. */
static int beats_load(unsigned int load, unsigned int n, struct sc *s,
		    struct stallcap_slot *slots, uint64_t window_ns,
		    const struct soak *k, struct beat_result *r)
{
	const char *off = load_param_off(load);
	int ret;

	if (off) {
		ret = module_param_set(off, false);
		if (ret)
			return ret;
	}
	ret = run_beats(load == LOAD_NONE ? 0 : n,
			load == LOAD_WATCHED || load == LOAD_AWAKE ||
			load >= LOAD_PACED_WATCHED,
			load == LOAD_PACED_PLAIN || load == LOAD_PACED_WATCHED,
			s, slots, window_ns, k, r);
	if (off && module_param_set(off, true) && !ret)
		ret = -EIO;
	return ret;
}

/* The loads of @n threads in turn, @reps times; -errno or 0. */
static int beats_n(unsigned int n, unsigned int reps, uint64_t window,
		   const struct soak *k, double *extra_cpus)
{
	struct beat_result r[NR_LOADS] = { { 0 } };
	double rate[NR_LOADS], per_cpu, lo = 1e9, hi = -1e9;
	unsigned int nr_loads = n <= BEAT_TIMERS_MAX ? NR_LOADS : LOAD_TIMERS;
	struct stallcap_slot *slots = NULL;
	unsigned int rep, load;
	size_t len = 0;
	struct sc s;
	int ret;

	ret = beats_session(&s, n, &slots, &len);
	for (rep = 0; !ret && rep < reps; rep++) {
		struct beat_result one[NR_LOADS] = { { 0 } };

		for (load = 0; !ret && load < nr_loads; load++) {
			note("beats: %u threads, %s (%u/%u)", n, load_key[load], rep + 1, reps);
			ret = beats_load(load, n, &s, slots, window, k, &one[load]);
			r[load].window_ns += one[load].window_ns;
			r[load].soak += one[load].soak;
			r[load].expiries += one[load].expiries;
			r[load].buddies += one[load].buddies;
			r[load].scans += one[load].scans;
			r[load].checks += one[load].checks;
			r[load].scan_ns += one[load].scan_ns;
			r[load].pace_gaps += one[load].pace_gaps;
			if (one[load].pace_gap_max > r[load].pace_gap_max)
				r[load].pace_gap_max = one[load].pace_gap_max;
			r[load].errs += one[load].errs;
			r[load].stalls += one[load].stalls;
			r[load].runs += one[load].runs;
		}
		if (ret)
			break;
		/* this round's extra, for the spread between rounds */
		for (load = 0; load < nr_loads; load++)
			rate[load] = one[load].soak / one[load].window_ns;
		per_cpu = rate[LOAD_NONE] / k->n;
		if (per_cpu > 0) {
			double e = (rate[LOAD_PLAIN] - rate[LOAD_WATCHED]) / per_cpu;

			lo = e < lo ? e : lo;
			hi = e > hi ? e : hi;
		}
	}
	if (slots)
		munmap(slots, len);
	sc_close(&s);
	if (ret) {
		out_str(strerror(-ret), "beats.%u.error", n);
		return ret;
	}
	out_num(n, "beats.%u.threads", n);
	for (load = 0; load < nr_loads; load++) {
		beats_out(n, load_key[load], &r[load]);
		rate[load] = r[load].soak / r[load].window_ns;
	}
	per_cpu = rate[LOAD_NONE] / k->n;
	if (per_cpu <= 0) {
		out_str("the soaker did not run", "beats.%u.error", n);
		return -EIO;
	}
	out_num(k->n - rate[LOAD_PLAIN] / per_cpu, "beats.%u.plain.busy_cpus", n);
	out_num(k->n - rate[LOAD_WATCHED] / per_cpu, "beats.%u.watched.busy_cpus", n);
	*extra_cpus = (rate[LOAD_PLAIN] - rate[LOAD_WATCHED]) / per_cpu;
	out_num(*extra_cpus, "beats.%u.extra_cpus", n);
	out_num((rate[LOAD_PLAIN] - rate[LOAD_AWAKE]) / per_cpu, "beats.%u.awake_extra_cpus", n);
	out_num((rate[LOAD_PACED_PLAIN] - rate[LOAD_PACED_WATCHED]) / per_cpu,
		"beats.%u.paced_extra_cpus", n);
	if (nr_loads > LOAD_TIMERS) {
		out_num(k->n - rate[LOAD_TIMERS] / per_cpu, "beats.%u.timers.busy_cpus", n);
		out_num((rate[LOAD_PLAIN] - rate[LOAD_TIMERS]) / per_cpu,
			"beats.%u.timers_extra_cpus", n);
	}
	out_num(lo, "beats.%u.extra_cpus_min", n);
	out_num(hi, "beats.%u.extra_cpus_max", n);
	out_num(n, "beats.largest");
	return 0;
}

int bench_beats(void)
{
	static const unsigned int counts[] = { 100, 1000 };
	uint64_t window = bench_opts.smoke ? 200 * NS_PER_MS : 2 * NS_PER_SEC;
	unsigned int i, reps = bench_opts.smoke ? 1 : 3;
	unsigned int nc = bench_opts.smoke ? 1 : sizeof(counts) / sizeof(counts[0]);
	struct soak k;
	double extra;
	int ret;

	pin_self(-1);
	if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 50 }))
		note("beats: no SCHED_FIFO for the measuring thread: %s", strerror(errno));
	out_num(BEAT_THRESHOLD_NS, "beats.threshold_ns");
	out_num(BEAT_SLEEP_NS, "beats.loop_sleep_ns");
	ret = soak_start(&k);
	out_num(k.n, "beats.soakers");
	/* the smoke run: 10 threads, once */
	for (i = 0; !ret && i < nc; i++) {
		unsigned int n = bench_opts.smoke ? 10 : counts[i];

		ret = beats_n(n, reps, window, &k, &extra);
		if (!ret && extra > 0.5 && i + 1 < nc) {
			out_num(counts[i + 1], "beats.skipped");
			note("beats: %u watches cost %.2f CPUs extra: %u not run", n, extra,
			     counts[i + 1]);
			break;
		}
	}
	soak_stop(&k);
	sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ .sched_priority = 0 });
	return ret;
}
