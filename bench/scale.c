// SPDX-License-Identifier: GPL-2.0
/*
 * Section 4, scale.
 *
 * Load: N threads (64 KiB stacks) each holding an armed 10 ms deadline and
 * re-arming it every 1 ms (REARM, then a 1 ms nanosleep), against the same
 * N threads doing only the 1 ms nanosleep.  The CPU they cost (process
 * user+system time from getrusage, and the whole machine's busy time from
 * /proc/stat, which also counts hard and soft interrupts) is divided by the
 * loop iterations actually achieved: on 2 emulated CPUs thousands of
 * threads cannot all wake every millisecond, and both variants saturate.
 * A thread that loops every 0.2 s instead of every 1 ms misses its 10 ms
 * deadline every iteration, and stallcap captures each of those stalls:
 * the same armed load runs once more with the deadline at 10 times the
 * period the plain load achieved in that round (as 10 ms is 10 times
 * 1 ms), which measures what watching costs when the deadlines are met;
 * and once more with that deadline on shared-deadline watches (issue #16
 * target 1: the re-arm is a clock read and a store into the watch's slot,
 * no system call; a session holds at most 4096 slots, so N / 4096
 * sessions).  The stalls each armed load caught are counted (GET_STATS).
 *
 * Memory: active slab objects (/proc/slabinfo: objects x size, all caches)
 * and /proc/meminfo (unreclaimable slab, vmalloc, per-CPU) before and after
 * the N threads create their watches, divided by N.  meminfo misses watches
 * that reuse free objects of partly used slabs; slabinfo counts them.
 *
 * Throughput: REARM (the hot path) and ARM loops in 1 and 2 threads pinned
 * to separate CPUs, each thread with its own watch in one shared session,
 * next to getppid() loops as the machine's own scaling baseline, and
 * clock_gettime() loops: REARM reads the TSC, and an emulator may serialise
 * TSC reads across vCPUs (QEMU's TCG takes a global lock for each).
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define DEADLINE_NS	(10 * NS_PER_MS)
#define PERIOD_NS	NS_PER_MS
#define STACK_BYTES	(64 * 1024)
#define SLOTS_PER_SESSION	4096	/* the most a session has */

struct worker {
	pthread_t th;
	struct load *load;
	volatile uint64_t iters;
	int err;
	float *lat;		/* the last REARM durations (ns), a ring */
	unsigned int nlat;
	volatile __u64 *slot_deadline;	/* a shared-deadline watch's */
} __attribute__((aligned(64)));

/* The shared-deadline watches' sessions and their mapped slots. */
struct slot_sessions {
	unsigned int n;
	struct sc *s;
	struct stallcap_slot **map;
};

struct load {
	unsigned int n;
	bool stallcap;
	uint64_t deadline_ns;
	struct sc *s;
	struct slot_sessions *slots;	/* shared-deadline watches, or NULL */
	pthread_barrier_t created, go_arm, armed;
	volatile int stop;
	unsigned int lat_cap;	/* samples kept per worker */
	struct worker *w;
};

/* A shared-deadline watch for @w on its session's slots; 0 or -errno. */
static int arm_slot(struct worker *w, struct load *l)
{
	unsigned int k = (unsigned int)(w - l->w) / SLOTS_PER_SESSION;
	int slot = sc_arm(&l->slots->s[k], l->deadline_ns, STALLCAP_ARM_SHARED_DEADLINE);

	if (slot < 0 || (uint32_t)slot >= l->slots->s[k].cfg.slots)
		return slot < 0 ? -errno : -ERANGE;
	w->slot_deadline = &l->slots->map[k][slot].deadline_ns;
	return 0;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->load;
	struct timespec ts = { 0, PERIOD_NS };

	pthread_barrier_wait(&l->created);
	pthread_barrier_wait(&l->go_arm);
	if (l->slots)
		w->err = -arm_slot(w, l);
	else if (l->stallcap && sc_arm(l->s, l->deadline_ns, 0))
		w->err = errno;
	pthread_barrier_wait(&l->armed);
	while (!l->stop) {
		if (w->slot_deadline) {
			*w->slot_deadline = now_ns() + l->deadline_ns;
		} else if (l->stallcap) {
			uint64_t t0 = now_ns();

			if (sc_rearm(l->s, 0))
				w->err = errno;
			if (w->lat)
				w->lat[w->nlat++ % l->lat_cap] = (float)(now_ns() - t0);
		}
		nanosleep(&ts, NULL);
		w->iters++;
	}
	return NULL;
}

/* ---- measurements ---- */

struct meminfo {
	long long sunreclaim, vmalloc, percpu, kstack;
	double slab_bytes;
};

/* Bytes in active slab objects, all caches (root only: /proc/slabinfo). */
static double slab_active_bytes(void)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	unsigned long long active, total, size;
	char line[512], name[128];
	double bytes = 0;

	if (!f)
		return NAN;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %llu %llu %llu", name, &active, &total, &size) == 4)
			bytes += (double)active * (double)size;
	fclose(f);
	return bytes;
}

static void read_meminfo(struct meminfo *m)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long long v;

	memset(m, 0, sizeof(*m));
	m->slab_bytes = slab_active_bytes();
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SUnreclaim: %lld", &v) == 1)
			m->sunreclaim = v;
		else if (sscanf(line, "VmallocUsed: %lld", &v) == 1)
			m->vmalloc = v;
		else if (sscanf(line, "Percpu: %lld", &v) == 1)
			m->percpu = v;
		else if (sscanf(line, "KernelStack: %lld", &v) == 1)
			m->kstack = v;
	}
	fclose(f);
}

struct cpu_snap {
	uint64_t t;		/* ns */
	double proc_ns;		/* process user+system */
	double busy_ns;		/* machine, all CPUs, not idle/iowait */
	double sys_ns;		/* machine: system+irq+softirq */
	double buddy_ns;	/* in the buddy checkers' callbacks, all CPUs */
	double watch_expiries;	/* the watches' own timers, all CPUs */
	double walks;		/* checker periods that walked every watch */
	double queue_looks;	/* looks into a suspect CPU's timer queue */
	uint64_t iters;
};

/* The module's per-CPU timer counters, summed (debugfs; NAN without it). */
static void read_expiries(struct cpu_snap *c)
{
	FILE *f = fopen("/sys/kernel/debug/stallcap/expiries", "r");
	unsigned long long w, b, r, bt, ch, sn, bn, wk, hm, ql;
	char line[256];
	int cpu, n;

	c->buddy_ns = c->watch_expiries = c->walks = c->queue_looks = f ? 0 : NAN;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		n = sscanf(line, "cpu%d watch %llu buddy %llu rescued %llu beat %llu checks %llu scan_ns %llu buddy_ns %llu walks %llu homed %llu queue_looks %llu",
			   &cpu, &w, &b, &r, &bt, &ch, &sn, &bn, &wk, &hm, &ql);
		if (n < 8)
			continue;
		c->buddy_ns += (double)bn;
		c->watch_expiries += (double)w;
		c->walks += n >= 9 ? (double)wk : NAN;
		c->queue_looks += n >= 11 ? (double)ql : NAN;
	}
	fclose(f);
}

static void read_cpu(struct cpu_snap *c, const struct load *l)
{
	unsigned long long v[10] = { 0 };
	double tick = (double)NS_PER_SEC / (double)sysconf(_SC_CLK_TCK);
	struct rusage ru;
	FILE *f;
	unsigned int i;

	c->t = now_ns();
	getrusage(RUSAGE_SELF, &ru);
	c->proc_ns = ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * NS_PER_SEC +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * NS_PER_US;
	c->busy_ns = c->sys_ns = 0;
	f = fopen("/proc/stat", "r");
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			   &v[8], &v[9]) >= 8) {
			/* user nice system idle iowait irq softirq steal */
			c->busy_ns = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tick;
			c->sys_ns = (double)(v[2] + v[5] + v[6]) * tick;
		}
		fclose(f);
	}
	read_expiries(c);
	c->iters = 0;
	for (i = 0; i < l->n; i++)
		c->iters += l->w[i].iters;
}

/* ---- one load ---- */

struct load_result {
	double window_ns, iters, proc_ns, busy_ns, sys_ns, mem_kb, slab_bytes;
	double buddy_ns, watch_expiries, walks, queue_looks;
	unsigned int errs, runs;
	double *lat;		/* REARM durations of all workers and runs */
	size_t nlat, cap_lat;
	double stalls;		/* caught in the windows (the session's count) */
	double deadline_ns;	/* summed over the runs */
	double last_period_ns;	/* of one thread, in the last run */
};

/* The session's stall count, NAN if unknown. */
static double session_stalls(struct sc *s)
{
	struct stallcap_stats st;

	return sc_stats(s, &st, 0) ? NAN : (double)st.stalls;
}

static void slot_sessions_close(struct slot_sessions *ss)
{
	for (unsigned int k = 0; k < ss->n; k++) {
		if (ss->map[k])
			munmap(ss->map[k], (size_t)ss->s[k].cfg.slots * sizeof(struct stallcap_slot));
		sc_close(&ss->s[k]);
	}
	free(ss->s);
	free(ss->map);
	ss->n = 0;
}

/* Sessions with SLOTS_PER_SESSION slots each, mapped, for @n watches. */
static int slot_sessions_open(struct slot_sessions *ss, unsigned int n)
{
	unsigned int want = (n + SLOTS_PER_SESSION - 1) / SLOTS_PER_SESSION;
	int ret = 0;

	ss->n = 0;
	ss->s = calloc(want, sizeof(*ss->s));
	ss->map = calloc(want, sizeof(*ss->map));
	if (!ss->s || !ss->map)
		return -ENOMEM;
	while (ss->n < want) {
		struct sc *s = &ss->s[ss->n];
		void *map;

		ret = sc_open_cfg(s, 0, 1, 4, SLOTS_PER_SESSION, 0);
		if (ret)
			break;
		ss->n++;
		map = mmap(NULL, (size_t)s->cfg.slots * sizeof(struct stallcap_slot),
			   PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, STALLCAP_MMAP_SLOTS);
		if (map == MAP_FAILED) {
			ret = -errno;
			break;
		}
		ss->map[ss->n - 1] = map;
	}
	if (ret)
		slot_sessions_close(ss);
	return ret;
}

/* The stalls of @l's sessions, NAN if unknown. */
static double load_stalls(const struct load *l)
{
	double sum = 0;

	if (!l->slots)
		return session_stalls(l->s);
	for (unsigned int k = 0; k < l->slots->n; k++)
		sum += session_stalls(&l->slots->s[k]);
	return sum;
}

static int run_load(unsigned int n, const char *var, uint64_t deadline_ns, struct sc *s,
		    uint64_t window_ns, struct load_result *r)
{
	bool stallcap = deadline_ns != 0;
	struct load l = { .n = n, .stallcap = stallcap, .s = s, .deadline_ns = deadline_ns };
	struct slot_sessions slots = { 0 };
	double stalls0, stalls1;
	struct cpu_snap c0, c1;
	struct meminfo m0, m1;
	pthread_attr_t attr;
	unsigned int i, started = 0;
	int ret = 0;

	if (!strcmp(var, "shared")) {
		ret = slot_sessions_open(&slots, n);
		if (ret) {
			out_str(strerror(-ret), "scale.%u.%s.error", n, var);
			return ret;
		}
		l.slots = &slots;
	}
	l.w = aligned_alloc(64, sizeof(*l.w) * n);
	if (!l.w)
		return -ENOMEM;
	memset(l.w, 0, sizeof(*l.w) * n);
	pthread_barrier_init(&l.created, NULL, n + 1);
	pthread_barrier_init(&l.go_arm, NULL, n + 1);
	pthread_barrier_init(&l.armed, NULL, n + 1);
	l.lat_cap = 200000 / n > 16 ? 200000 / n : 16;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_BYTES);
	/* the workers are ordinary threads, whatever the measuring thread is */
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &(struct sched_param){ .sched_priority = 0 });
	for (i = 0; i < n; i++) {
		l.w[i].load = &l;
		if (stallcap)
			l.w[i].lat = calloc(l.lat_cap, sizeof(float));
		ret = -pthread_create(&l.w[i].th, &attr, worker_fn, &l.w[i]);
		if (ret)
			break;
		started++;
	}
	pthread_attr_destroy(&attr);
	if (ret) {
		/*
		 * The started threads wait on barriers sized for n + 1: leave
		 * them; the section's process exits after this error.
		 */
		note("scale: %u threads: pthread_create failed after %u: %s", n,
		     started, strerror(-ret));
		out_num(started, "scale.%u.%s.created", n, var);
		out_str(strerror(-ret), "scale.%u.%s.error", n, var);
		return ret;
	}
	pthread_barrier_wait(&l.created);
	read_meminfo(&m0);
	pthread_barrier_wait(&l.go_arm);
	pthread_barrier_wait(&l.armed);
	read_meminfo(&m1);

	sleep_ns(window_ns / 4);	/* settle */
	stalls0 = load_stalls(&l);
	read_cpu(&c0, &l);
	sleep_ns(window_ns);
	read_cpu(&c1, &l);
	stalls1 = load_stalls(&l);
	l.stop = 1;
	for (i = 0; i < n; i++) {
		struct worker *w = &l.w[i];
		unsigned int k, kept = w->nlat < l.lat_cap ? w->nlat : l.lat_cap;

		pthread_join(w->th, NULL);
		r->errs += w->err != 0;
		for (k = 0; w->lat && k < kept && r->nlat < r->cap_lat; k++)
			r->lat[r->nlat++] = w->lat[k];
		free(w->lat);
	}
	sleep_ns(500 * NS_PER_MS);	/* exited threads' watches are reaped */

	r->runs++;
	if (stallcap)
		r->stalls += stalls1 - stalls0;
	r->deadline_ns += (double)deadline_ns;
	r->last_period_ns = c1.iters > c0.iters ?
			    (double)(c1.t - c0.t) * n / (double)(c1.iters - c0.iters) : NAN;
	r->window_ns += (double)(c1.t - c0.t);
	r->iters += (double)(c1.iters - c0.iters);
	r->proc_ns += c1.proc_ns - c0.proc_ns;
	r->busy_ns += c1.busy_ns - c0.busy_ns;
	r->sys_ns += c1.sys_ns - c0.sys_ns;
	r->buddy_ns += c1.buddy_ns - c0.buddy_ns;
	r->watch_expiries += c1.watch_expiries - c0.watch_expiries;
	r->walks += c1.walks - c0.walks;
	r->queue_looks += c1.queue_looks - c0.queue_looks;
	r->mem_kb += (double)((m1.sunreclaim - m0.sunreclaim) + (m1.vmalloc - m0.vmalloc) +
			      (m1.percpu - m0.percpu));
	r->slab_bytes += m1.slab_bytes - m0.slab_bytes;
	pthread_barrier_destroy(&l.created);
	pthread_barrier_destroy(&l.go_arm);
	pthread_barrier_destroy(&l.armed);
	free(l.w);
	if (l.slots)
		slot_sessions_close(l.slots);
	return 0;
}

static void load_out(unsigned int n, const char *var, const struct load_result *r)
{
	bool stallcap = strcmp(var, "plain") != 0;

	out_num(n, "scale.%u.%s.threads", n, var);
	out_num(r->runs, "scale.%u.%s.runs", n, var);
	out_num(r->window_ns / NS_PER_MS, "scale.%u.%s.window_ms", n, var);
	out_num(r->iters, "scale.%u.%s.iters", n, var);
	out_num(r->proc_ns / NS_PER_MS, "scale.%u.%s.proc_cpu_ms", n, var);
	out_num(r->busy_ns / NS_PER_MS, "scale.%u.%s.busy_cpu_ms", n, var);
	out_num(r->sys_ns / NS_PER_MS, "scale.%u.%s.sys_cpu_ms", n, var);
	if (r->iters > 0) {
		out_num(r->proc_ns / r->iters, "scale.%u.%s.proc_ns_per_iter", n, var);
		out_num(r->busy_ns / r->iters, "scale.%u.%s.busy_ns_per_iter", n, var);
		/* the checkers' walks and the watch timers, per iteration */
		if (!isnan(r->buddy_ns)) {
			out_num(r->buddy_ns / r->iters, "scale.%u.%s.buddy_ns_per_iter", n, var);
			out_num(r->watch_expiries / r->iters,
				"scale.%u.%s.watch_expiries_per_iter", n, var);
			/* per second of the load */
			out_num(r->walks * NS_PER_SEC / r->window_ns,
				"scale.%u.%s.walks_per_s", n, var);
			out_num(r->queue_looks * NS_PER_SEC / r->window_ns,
				"scale.%u.%s.queue_looks_per_s", n, var);
		}
		/* achieved period of one thread, in ms */
		out_num(r->window_ns * n / r->iters / NS_PER_MS, "scale.%u.%s.period_ms", n, var);
	}
	if (stallcap && r->runs) {
		out_num(r->errs, "scale.%u.%s.thread_errors", n, var);
		out_num(r->deadline_ns / r->runs / NS_PER_MS, "scale.%u.%s.deadline_ms", n, var);
		out_num(r->stalls, "scale.%u.%s.stalls", n, var);
		if (r->iters > 0)
			out_num(r->stalls * 1000 / r->iters, "scale.%u.%s.stalls_per_1000_iters",
				n, var);
	}
	if (strcmp(var, "stallcap"))
		return;		/* the rest: the literal load's */
	if (r->nlat) {
		char key[64];

		snprintf(key, sizeof(key), "scale.%u.stallcap.rearm_ns", n);
		out_summary(r->lat, r->nlat, key);
	}
	if (r->runs) {
		out_num(r->mem_kb / r->runs, "scale.%u.stallcap.watch_mem_kb", n);
		out_num(r->mem_kb * 1024 / r->runs / n, "scale.%u.stallcap.bytes_per_watch", n);
		if (!isnan(r->slab_bytes))
			out_num(r->slab_bytes / r->runs / n,
				"scale.%u.stallcap.slab_bytes_per_watch", n);
	}
}

/* ---- throughput, 1 vs 2 threads ---- */

enum tp_op { TP_GETPPID, TP_CLOCK, TP_REARM, TP_ARM, TP_NR };
static const char *const tp_name[TP_NR] = { "getppid", "clock", "rearm", "arm" };

struct tp_thread {
	pthread_t th;
	int cpu;
	enum tp_op op;
	struct sc *s;
	volatile int *stop;
	pthread_barrier_t *ready;
	uint64_t ops;
	int err;
} __attribute__((aligned(64)));

static void *tp_fn(void *arg)
{
	struct tp_thread *t = arg;
	uint64_t ops = 0;
	unsigned int i;

	pin_self(t->cpu);
	if (t->op >= TP_REARM && sc_arm(t->s, 10 * NS_PER_SEC, 0))
		t->err = errno;
	pthread_barrier_wait(t->ready);
	while (!*t->stop) {
		for (i = 0; i < 64; i++) {
			switch (t->op) {
			case TP_GETPPID:
				syscall(SYS_getppid);
				break;
			case TP_CLOCK:
				now_ns();	/* vDSO: one TSC read, no system call */
				break;
			case TP_REARM:
				sc_rearm(t->s, 0);
				break;
			default:
				sc_arm(t->s, 10 * NS_PER_SEC, 0);
				break;
			}
		}
		ops += 64;
	}
	if (t->op >= TP_REARM)
		sc_disarm(t->s);
	t->ops = ops;
	return NULL;
}

static double tp_run(enum tp_op op, int nthreads, struct sc *s, uint64_t dur_ns)
{
	struct tp_thread t[2];
	pthread_barrier_t ready;
	volatile int stop = 0;
	uint64_t t0, t1, ops = 0;
	int i;

	pthread_barrier_init(&ready, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		t[i] = (struct tp_thread){ .cpu = i, .op = op, .s = s,
					   .stop = &stop, .ready = &ready };
		pthread_create(&t[i].th, NULL, tp_fn, &t[i]);
	}
	pthread_barrier_wait(&ready);
	t0 = now_ns();
	sleep_ns(dur_ns);
	stop = 1;
	t1 = now_ns();
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i].th, NULL);
		ops += t[i].ops;
	}
	pthread_barrier_destroy(&ready);
	return (double)ops * NS_PER_SEC / (double)(t1 - t0);
}

static int throughput(uint64_t dur_ns, unsigned int reps)
{
	double rate[TP_NR][3] = { { 0 } };
	unsigned int r;
	struct sc s;
	int op, k, ret;

	if (nr_cpus() < 2) {
		out_str("fewer than 2 CPUs", "scale.tp.error");
		return 0;
	}
	ret = sc_open(&s, 0, 1, 4);
	if (ret)
		return ret;
	/* the main thread idles on CPU 0 during the runs: it only sleeps */
	for (r = 0; r < reps; r++)
		for (op = 0; op < TP_NR; op++)
			for (k = 1; k <= 2; k++)
				rate[op][k] += tp_run(op, k, &s, dur_ns) / reps;
	sc_close(&s);
	for (op = 0; op < TP_NR; op++) {
		out_num(rate[op][1], "scale.tp.%s.1", tp_name[op]);
		out_num(rate[op][2], "scale.tp.%s.2", tp_name[op]);
		out_num(rate[op][2] / rate[op][1], "scale.tp.%s.scaling", tp_name[op]);
	}
	return 0;
}

int bench_scale(void)
{
	static const unsigned int counts[] = { 1, 100, 1000, 10000 };
	uint64_t window = bench_opts.smoke ? 200 * NS_PER_MS : 3 * NS_PER_SEC;
	unsigned int i, rep, reps = bench_opts.smoke ? 1 : 2;
	struct sc s;
	int ret = 0;

	pin_self(-1);
	/*
	 * The measuring thread only sleeps; as SCHED_FIFO it wakes on time
	 * even among thousands of runnable workers, so that the windows last
	 * what they should.
	 */
	if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 50 }))
		note("scale: no SCHED_FIFO for the measuring thread: %s", strerror(errno));
	ret = sc_open(&s, 0, 1, 4);	/* maps the ring: created before any watch */
	if (ret)
		return ret;
	for (i = 0; !ret && i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct load_result plain = { 0 }, armed = { 0 }, scaled = { 0 }, shared = { 0 };
		unsigned int n = counts[i];
		uint64_t deadline;

		if (n > bench_opts.scale_max)
			break;
		armed.cap_lat = 2 * 200000 + 2 * 16 * (size_t)n;
		armed.lat = calloc(armed.cap_lat, sizeof(double));
		if (!armed.lat) {
			ret = -ENOMEM;
			break;
		}
		/* the two loads take turns, so that host noise hits both */
		for (rep = 0; !ret && rep < reps; rep++) {
			note("scale: %u threads, plain nanosleep loops (%u/%u)", n, rep + 1, reps);
			ret = run_load(n, "plain", 0, &s, window, &plain);
			if (ret)
				break;
			note("scale: %u threads, armed 10 ms deadlines re-armed every 1 ms (%u/%u)",
			     n, rep + 1, reps);
			ret = run_load(n, "stallcap", DEADLINE_NS, &s, window, &armed);
			if (ret)
				break;
			/* 10 times the period achieved, as 10 ms is 10 x 1 ms */
			deadline = isnan(plain.last_period_ns) ? 0 :
				   (uint64_t)(10 * plain.last_period_ns);
			deadline = deadline > DEADLINE_NS ? deadline : DEADLINE_NS;
			note("scale: %u threads, the same with %.0f ms deadlines (%u/%u)", n,
			     (double)deadline / NS_PER_MS, rep + 1, reps);
			ret = run_load(n, "scaled", deadline, &s, window, &scaled);
			if (ret)
				break;
			note("scale: %u threads, %.0f ms shared-deadline watches (%u/%u)", n,
			     (double)deadline / NS_PER_MS, rep + 1, reps);
			ret = run_load(n, "shared", deadline, &s, window, &shared);
		}
		load_out(n, "plain", &plain);
		load_out(n, "stallcap", &armed);
		load_out(n, "scaled", &scaled);
		load_out(n, "shared", &shared);
		free(armed.lat);
	}
	sc_close(&s);
	sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ .sched_priority = 0 });
	if (ret)
		return ret;
	note("scale: REARM/ARM/getppid throughput, 1 vs 2 threads");
	/* short runs taking turns many times: host noise hits all alike */
	return throughput(bench_opts.smoke ? 100 * NS_PER_MS : 500 * NS_PER_MS,
			  bench_opts.smoke ? 1 : 10);
}
