/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the "why it stalled" selftests: a session with its ring, the
 * sections of a sample, and threads that hog a CPU or hold a lock.
 * Self-contained on the uapi header (ABI v2).
 */
#ifndef STALLCAP_WHY_UTIL_H
#define STALLCAP_WHY_UTIL_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/stallcap.h>

#define WHY_MS(x)	((uint64_t)(x) * 1000000ULL)
#define WHY_NOINLINE	__attribute__((noinline, noclone, used))

static inline uint64_t why_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline pid_t why_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline int why_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static inline int why_fifo(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	return sched_setscheduler(0, SCHED_FIFO, &sp);
}

/* ---- a session and its ring ---- */

struct why_session {
	int fd;
	void *map;
	size_t map_len;
	struct stallcap_ring_ctl *ctl;
	unsigned char *data;
	uint64_t size;
};

static inline int why_open(struct why_session *s)
{
	struct stallcap_config cfg = { .size = sizeof(cfg) };
	long page = sysconf(_SC_PAGESIZE);

	memset(s, 0, sizeof(*s));
	s->fd = open(STALLCAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -1;
	cfg.max_samples = 4;
	cfg.user_stack_bytes = 4096;
	if (ioctl(s->fd, STALLCAP_IOC_SET_CONFIG, &cfg))
		return -1;
	cfg.size = sizeof(cfg);
	if (ioctl(s->fd, STALLCAP_IOC_GET_CONFIG, &cfg))
		return -1;
	s->map_len = page + cfg.ring_bytes;
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      s->fd, STALLCAP_MMAP_RING);
	if (s->map == MAP_FAILED)
		return -1;
	s->ctl = s->map;
	s->data = (unsigned char *)s->map + s->ctl->data_offset;
	s->size = s->ctl->data_size;
	return 0;
}

static inline void why_close(struct why_session *s)
{
	if (s->map && s->map != MAP_FAILED)
		munmap(s->map, s->map_len);
	if (s->fd >= 0)
		close(s->fd);
}

static inline int why_arm(struct why_session *s, uint64_t timeout_ns)
{
	struct stallcap_arm a = { .size = sizeof(a), .timeout_ns = timeout_ns };

	return ioctl(s->fd, STALLCAP_IOC_ARM, &a);
}

static inline int why_disarm(struct why_session *s)
{
	return ioctl(s->fd, STALLCAP_IOC_DISARM, 0);
}

/*
 * The first sample of the newest stall of @tid, copied into @out (room
 * @room), or NULL; with @state >= 0, the newest stall's first sample in
 * that state (STALLCAP_STATE_*) instead.  Consumes the ring.
 */
static inline struct stallcap_sample *why_sample_in(struct why_session *s,
						     pid_t tid, int state,
						     void *out, size_t room)
{
	uint64_t stall = 0;
	uint64_t head = __atomic_load_n(&s->ctl->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = s->ctl->data_tail;
	struct stallcap_sample *found = NULL;

	while (tail < head) {
		struct stallcap_rec_header *h =
			(void *)(s->data + (tail & (s->size - 1)));
		uint16_t flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
		struct stallcap_sample *smp = (void *)h;

		if (flags & STALLCAP_REC_F_BUSY)
			break;
		if (h->type == STALLCAP_REC_SAMPLE && h->size <= room &&
		    smp->tid == (uint32_t)tid &&
		    (state < 0 ? smp->sample_index == 0 :
		     smp->state == state && (!found || smp->stall_id != stall))) {
			memcpy(out, h, h->size);
			found = out;
			stall = smp->stall_id;
		}
		tail += h->size;
	}
	__atomic_store_n(&s->ctl->data_tail, tail, __ATOMIC_RELEASE);
	return found;
}

static inline struct stallcap_sample *why_first_sample(struct why_session *s,
							pid_t tid, void *out,
							size_t room)
{
	return why_sample_in(s, tid, -1, out, room);
}

/* The @n-th section of @type in @smp (n from 0), or NULL. */
static inline const void *why_section(const struct stallcap_sample *smp,
				      uint16_t type, unsigned int n)
{
	const unsigned char *p = (const void *)smp, *end = p + smp->hdr.size;

	for (p += smp->fixed_size; p + 8 <= end;) {
		const struct stallcap_section *sec = (const void *)p;

		if (sec->size < 8 || sec->size > (size_t)(end - p))
			return NULL;
		if (sec->type == type && !n--)
			return sec;
		p += sec->size;
	}
	return NULL;
}

/* The task section of @role and @hop, or NULL. */
static inline const struct stallcap_sec_task *
why_task(const struct stallcap_sample *smp, uint16_t role, uint16_t hop)
{
	const struct stallcap_sec_task *t;
	unsigned int i;

	for (i = 0; (t = why_section(smp, STALLCAP_SEC_TASK, i)); i++)
		if (t->role == role && t->hop == hop)
			return t;
	return NULL;
}

static inline const uint64_t *why_task_ips(const struct stallcap_sec_task *t)
{
	return (const uint64_t *)((const char *)t + t->fixed_size);
}

/* Where kernel functions are: past a start, before the next text symbol. */
struct why_kfns {
	unsigned long long start[8], end[8];
	unsigned int n;
};

/* Find @names (at most 8, NULL-terminated) in /proc/kallsyms: 0 or -1. */
static inline int why_kfns_load(struct why_kfns *k, const char *const *names)
{
	unsigned long long addr;
	char line[512], sym[256], type;
	unsigned int i;
	FILE *f;

	memset(k, 0, sizeof(*k));
	while (k->n < 8 && names[k->n])
		k->n++;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -1;
	for (int pass = 0; pass < 2; pass++, rewind(f))
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3 ||
			    (type != 't' && type != 'T'))
				continue;
			for (i = 0; i < k->n; i++) {
				if (!pass && !strcmp(sym, names[i]))
					k->start[i] = k->end[i] = addr;
				else if (pass && k->start[i] && addr > k->start[i] &&
					 (k->end[i] == k->start[i] || addr < k->end[i]))
					k->end[i] = addr;
			}
		}
	fclose(f);
	return 0;
}

/* Kernel stack of @smp holds a return address into one of @k's functions. */
static inline bool why_kstack_in(const struct stallcap_sample *smp,
				 const struct why_kfns *k)
{
	const struct stallcap_section *sec =
		why_section(smp, STALLCAP_SEC_KERNEL_IPS, 0);
	const uint64_t *ips;
	unsigned int i, j, n;

	if (!sec)
		return false;
	ips = (const uint64_t *)(sec + 1);
	n = (sec->size - sizeof(*sec)) / 8;
	for (i = 0; i < k->n; i++)
		for (j = 0; k->start[i] && j < n; j++)
			if (ips[j] > k->start[i] &&
			    (k->end[i] == k->start[i] || ips[j] <= k->end[i]))
				return true;
	return false;
}

/* Kernel stack of @smp holds a return address into one of @names. */
static inline bool why_kstack_has(const struct stallcap_sample *smp,
				  const char *const *names)
{
	struct why_kfns k;

	return !why_kfns_load(&k, names) && why_kstack_in(smp, &k);
}

/* Is @ip inside function @name (by the dynamic symbol table)? */
static inline bool why_ip_in(uint64_t ip, const char *name)
{
	Dl_info di;

	return dladdr((void *)(uintptr_t)ip, &di) && di.dli_sname &&
	       !strcmp(di.dli_sname, name);
}

/* The session's counters, when a sample that must exist is missing. */
static inline void why_log_stats(struct why_session *s)
{
	struct stallcap_stats st = { .size = sizeof(st) };

	if (ioctl(s->fd, STALLCAP_IOC_GET_STATS, &st))
		return;
	fprintf(stderr, "# stats: stalls %llu samples %llu lost %llu lost_first %llu stall_ends %llu blocked %llu\n",
		(unsigned long long)st.stalls, (unsigned long long)st.samples,
		(unsigned long long)st.lost, (unsigned long long)st.lost_first,
		(unsigned long long)st.stall_ends,
		(unsigned long long)st.capture_blocked);
}

static inline void why_log_sample(const struct stallcap_sample *smp)
{
	const struct stallcap_sec_times *t = why_section(smp, STALLCAP_SEC_TIMES, 0);
	const struct stallcap_sec_task *k;
	unsigned int i;

	fprintf(stderr, "# sample tid %u cpu %u state %u path %u flags 0x%x\n",
		smp->tid, smp->cpu, smp->state, smp->path, smp->flags);
	if (t)
		fprintf(stderr, "#  times valid 0x%llx span %.2f ms on_cpu %.2f run_delay %.2f sleep %.2f nvcsw %llu nivcsw %llu maj %llu min %llu irqs %llu softirqs %llu blkio %.2f\n",
			(unsigned long long)t->valid,
			(smp->capture_ns - t->since_ns) / 1e6, t->on_cpu_ns / 1e6,
			t->run_delay_ns / 1e6, t->sleep_ns / 1e6,
			(unsigned long long)t->nvcsw, (unsigned long long)t->nivcsw,
			(unsigned long long)t->maj_flt, (unsigned long long)t->min_flt,
			(unsigned long long)t->cpu_irqs,
			(unsigned long long)t->cpu_softirqs,
			t->blkio_delay_ns / 1e6);
	for (i = 0; (k = why_section(smp, STALLCAP_SEC_TASK, i)); i++)
		fprintf(stderr, "#  task role %u hop %u tid %u comm %.16s cpu %u state %u policy %u prio %d flags 0x%x wait %u 0x%llx frames %u+%u\n",
			k->role, k->hop, k->tid, k->comm, k->cpu, k->state,
			k->policy, k->prio, k->flags, k->wait_kind,
			(unsigned long long)k->wait_object, k->nr_kernel_frames,
			k->nr_user_frames);
}

#endif /* STALLCAP_WHY_UTIL_H */
