// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap benchmark: output, time, statistics, CPU hogs and a minimal
 * stallcap session with a ring reader (the reader side of the ordering
 * diagram in uapi/linux/stallcap.h).
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* ---- output ---- */

static void out_line(const char *val, const char *keyfmt, va_list ap)
{
	char key[256];

	vsnprintf(key, sizeof(key), keyfmt, ap);
	printf("@bench %s=%s\n", key, val);
	fflush(stdout);
}

void out_num(double v, const char *keyfmt, ...)
{
	char val[64];
	va_list ap;

	if (v == (double)(int64_t)v && v < 1e15 && v > -1e15)
		snprintf(val, sizeof(val), "%lld", (long long)v);
	else
		snprintf(val, sizeof(val), "%.6g", v);
	va_start(ap, keyfmt);
	out_line(val, keyfmt, ap);
	va_end(ap);
}

void out_str(const char *s, const char *keyfmt, ...)
{
	char val[256];
	va_list ap;
	size_t i;

	/* one line, no '=' ambiguity: the value is the rest of the line */
	snprintf(val, sizeof(val), "%s", s);
	for (i = 0; val[i]; i++)
		if (val[i] == '\n' || val[i] == '\r')
			val[i] = ' ';
	va_start(ap, keyfmt);
	out_line(val, keyfmt, ap);
	va_end(ap);
}

void note(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- time and CPUs ---- */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS_PER_SEC), (long)(ns % NS_PER_SEC) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int pin_self(int cpu)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	else
		for (i = 0; i < nr_cpus() && i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int nr_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Write boolean parameter @name of the stallcap module. */
int module_param_set(const char *name, bool on)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "/sys/module/stallcap/parameters/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void sort_doubles(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double pct_sorted(const double *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)((p / 100.0) * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

void out_summary(double *v, size_t n, const char *key)
{
	double sum = 0;
	size_t i;

	sort_doubles(v, n);
	for (i = 0; i < n; i++)
		sum += v[i];
	out_num((double)n, "%s.n", key);
	if (!n)
		return;
	out_num(pct_sorted(v, n, 50), "%s.p50", key);
	out_num(pct_sorted(v, n, 99), "%s.p99", key);
	out_num(v[n - 1], "%s.max", key);
	out_num(sum / (double)n, "%s.mean", key);
}

int hist_pct_bucket(const __u64 *hist, int nr, double p)
{
	uint64_t total = 0, cum = 0, want;
	int i;

	for (i = 0; i < nr; i++)
		total += hist[i];
	if (!total)
		return -1;
	want = (uint64_t)((p / 100.0) * (double)total + 0.999999);
	if (want < 1)
		want = 1;
	for (i = 0; i < nr; i++) {
		cum += hist[i];
		if (cum >= want)
			return i;
	}
	return nr - 1;
}

/* ---- CPU hogs ---- */

static void hog_loop(int cpu)
{
	struct sched_param sp = { 0 };
	volatile unsigned long x = 0;

	sched_setscheduler(0, SCHED_OTHER, &sp);
	pin_self(cpu);
	for (;;)
		x++;
}

/* @cpu < 0: one hog on every CPU; else one hog on @cpu */
int hogs_start(struct hogs *h, int only_cpu)
{
	int cpu, n = nr_cpus();

	h->n = 0;
	if (n > 64)
		n = 64;
	for (cpu = 0; cpu < n; cpu++) {
		pid_t pid;

		if (only_cpu >= 0 && cpu != only_cpu)
			continue;
		pid = fork();
		if (pid < 0) {
			hogs_stop(h);
			return -errno;
		}
		if (!pid) {
			hog_loop(cpu);
			_exit(0);
		}
		h->pid[h->n++] = pid;
	}
	sleep_ns(20 * NS_PER_MS);	/* let them reach their CPUs */
	return 0;
}

void hogs_stop(struct hogs *h)
{
	int i;

	for (i = 0; i < h->n; i++)
		kill(h->pid[i], SIGKILL);
	for (i = 0; i < h->n; i++)
		waitpid(h->pid[i], NULL, 0);
	h->n = 0;
}

/* ---- stallcap sessions ---- */

static uint32_t pow2_roundup(uint64_t x)
{
	uint64_t p = 4096;

	while (p < x)
		p <<= 1;
	return (uint32_t)p;
}

int sc_open(struct sc *s, uint32_t user_stack_bytes, uint32_t max_samples,
	    uint32_t min_records)
{
	return sc_open_cfg(s, user_stack_bytes, max_samples, min_records, 0, 0);
}

int sc_open_cfg(struct sc *s, uint32_t user_stack_bytes, uint32_t max_samples,
		uint32_t min_records, uint32_t slots, uint64_t sample_cap_ns)
{
	struct stallcap_config cfg = {
		.size = sizeof(cfg),
		.slots = slots,
		.sample_cap_ns = sample_cap_ns,
	};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t rec;

	memset(s, 0, sizeof(*s));
	s->fd = open(STALLCAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	s->info.size = sizeof(s->info);
	if (ioctl(s->fd, STALLCAP_IOC_GET_INFO, &s->info))
		goto err;
	rec = STALLCAP_RECORD_MAX_BYTES(user_stack_bytes ? user_stack_bytes : 16384);
	if (min_records < 4)
		min_records = 4;
	cfg.user_stack_bytes = user_stack_bytes;
	cfg.max_samples = max_samples;
	cfg.ring_bytes = pow2_roundup(rec * min_records);
	if (cfg.ring_bytes > s->info.max_ring_bytes)
		cfg.ring_bytes = pow2_roundup(4 * rec);
	if (ioctl(s->fd, STALLCAP_IOC_SET_CONFIG, &cfg))
		goto err;
	s->cfg.size = sizeof(s->cfg);
	if (ioctl(s->fd, STALLCAP_IOC_GET_CONFIG, &s->cfg))
		goto err;
	s->map_len = page + s->cfg.ring_bytes;
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      s->fd, STALLCAP_MMAP_RING);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		goto err;
	}
	s->ctl = s->map;
	s->data = (unsigned char *)s->map + s->ctl->data_offset;
	return 0;
err:
	{
		int e = errno;

		sc_close(s);
		return -e;
	}
}

void sc_close(struct sc *s)
{
	if (s->map)
		munmap(s->map, s->map_len);
	if (s->fd >= 0)
		close(s->fd);
	s->map = NULL;
	s->fd = -1;
}

int sc_arm(struct sc *s, uint64_t timeout_ns, uint32_t flags)
{
	struct stallcap_arm a = {
		.size = sizeof(a),
		.flags = flags,
		.timeout_ns = timeout_ns,
	};

	return ioctl(s->fd, STALLCAP_IOC_ARM, &a);
}

int sc_rearm(struct sc *s, uint64_t timeout_ns)
{
	return ioctl(s->fd, STALLCAP_IOC_REARM, (unsigned long)timeout_ns);
}

int sc_disarm(struct sc *s)
{
	return ioctl(s->fd, STALLCAP_IOC_DISARM, 0UL);
}

int sc_stats(struct sc *s, struct stallcap_stats *st, uint32_t flags)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->flags = flags;
	return ioctl(s->fd, STALLCAP_IOC_GET_STATS, st);
}

int sc_poll_sample(struct sc *s, pid_t tid, struct sc_seen *seen)
{
	struct stallcap_ring_ctl *ctl = s->ctl;
	uint64_t size = ctl->data_size, head, tail;
	int found = 0;

	head = __atomic_load_n(&ctl->data_head, __ATOMIC_ACQUIRE);	/* A */
	tail = ctl->data_tail;
	if (head < tail || head - tail > size)
		return -1;
	while (tail < head) {
		struct stallcap_rec_header *h = (void *)(s->data + (tail & (size - 1)));
		uint16_t flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);	/* B */
		const struct stallcap_sample *r = (const void *)h;

		if (flags & STALLCAP_REC_F_BUSY)
			break;
		if (h->size < sizeof(*h) || (h->size & 7) || h->size > head - tail)
			return -1;
		if (h->type == STALLCAP_REC_USER_STACK) {
			s->deferred_cookie = r->cookie;
			s->deferred_user_frames = sc_nu(r);
		}
		if (h->type == STALLCAP_REC_SAMPLE && r->tid == (uint32_t)tid &&
		    r->sample_index == 0 && !found) {
			seen->cookie = r->cookie;
			seen->deadline_ns = r->deadline_ns;
			seen->capture_ns = r->capture_ns;
			seen->flags = r->flags;
			seen->state = r->state;
			seen->path = r->path;
			seen->nr_kernel_frames = sc_nk(r);
			seen->nr_user_frames = sc_nu(r);
			seen->stack_size = sc_stack_size(r);
			found = 1;
		}
		tail += h->size;
	}
	__atomic_store_n(&ctl->data_tail, tail, __ATOMIC_RELEASE);	/* D */
	return found;
}

int sc_wait_sample(struct sc *s, pid_t tid, struct sc_seen *seen,
		   uint64_t timeout_ns)
{
	uint64_t end = now_ns() + timeout_ns;
	unsigned int spins = 0;
	int ret;

	for (;;) {
		/* unconsumed records (complete or still busy): look at them */
		if (__atomic_load_n(&s->ctl->data_head, __ATOMIC_ACQUIRE) !=
		    s->ctl->data_tail) {
			ret = sc_poll_sample(s, tid, seen);
			if (ret)
				return ret;
		}
		/* the clock is read only now and then: mostly a user-mode spin */
		if (!(++spins & 1023) && now_ns() >= end)
			return sc_poll_sample(s, tid, seen);
	}
}

unsigned int sc_user_frames(struct sc *s, const struct sc_seen *seen,
			    uint64_t timeout_ns)
{
	uint64_t end = now_ns() + timeout_ns;
	struct sc_seen other;

	if (!(seen->flags & STALLCAP_SAMPLE_DEFER_PENDING) || !seen->cookie)
		return seen->nr_user_frames;
	while (s->deferred_cookie != seen->cookie && now_ns() < end)
		if (sc_poll_sample(s, -1, &other) < 0)
			break;
	if (s->deferred_cookie == seen->cookie &&
	    s->deferred_user_frames > seen->nr_user_frames)
		return s->deferred_user_frames;
	return seen->nr_user_frames;
}
