/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the stallcap selftests: a session (open, configure,
 * map the ring), a ring reader that follows the memory ordering documented
 * in uapi/linux/stallcap.h and checks every record it consumes, record
 * accessors, kernel symbol lookup through /proc/kallsyms, user symbol lookup
 * through dladdr(), CPU pinning and a few known user functions to stall in.
 *
 * Nothing here uses the harness's ASSERT/EXPECT macros: the helpers may run
 * in any thread and report through return values.  Functions that are
 * looked up by address (dladdr) are global and noinline: the test programs
 * are linked with -rdynamic, which exports global symbols only.
 */
#ifndef STALLCAP_TEST_H
#define STALLCAP_TEST_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
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

/*
 * The harness's EXPECT_TRUE(x) compares x with the int 0, EXPECT_EQ(1, u64)
 * an int with an unsigned: -Wextra's sign-compare would flag every use.
 */
#pragma GCC diagnostic ignored "-Wsign-compare"
/*
 * TEST_F's wrapper keeps its fork() result in a register across setjmp():
 * after a failed ASSERT in the test process it may read the pre-fork value,
 * which only skips FIXTURE_TEARDOWN there (the test is still reported as
 * failed, and exiting closes the sessions anyway).
 */
#pragma GCC diagnostic ignored "-Wclobbered"

#define SC_NSEC_PER_MSEC	1000000ULL
#define SC_NSEC_PER_SEC		1000000000ULL
#define SC_MS(x)		((uint64_t)(x) * SC_NSEC_PER_MSEC)

/*
 * Generous bounds: the guests run under TCG (10-50x slower than native) on
 * a shared host.  Lateness is bounded only to show that the capture came at
 * the deadline and not at some later event (disarm, exit).
 */
#define SC_MAX_LATENESS_NS	SC_MS(100)
#define SC_ATTEMPTS		3	/* runs of a capture test before it fails */
#define SC_WAIT_MS		10000	/* waiting for a record that must come */
#define SC_QUIET_MS		300	/* waiting for a record that must not come */

#define SC_MAX_SAMPLES		64	/* largest max_samples accepted */

#define SC_NOINLINE		__attribute__((noinline, noclone, used))

/* ------------------------------------------------------------------------
 * Small utilities
 * ------------------------------------------------------------------------
 */

static inline uint64_t sc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SC_NSEC_PER_SEC + ts.tv_nsec;
}

static inline void sc_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline pid_t sc_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline uint64_t sc_round8(uint64_t x)
{
	return (x + 7) & ~7ULL;
}

static inline uint64_t sc_pow2_roundup(uint64_t x)
{
	uint64_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* The smallest ring SET_CONFIG accepts for @user_stack_bytes. */
static inline uint32_t sc_min_ring_bytes(uint32_t user_stack_bytes)
{
	return (uint32_t)sc_pow2_roundup(4 * STALLCAP_RECORD_MAX_BYTES(user_stack_bytes));
}

/*
 * Was the first sample @r late beyond SC_MAX_LATENESS_NS?  On a loaded host
 * a TCG vCPU can stop for hundreds of milliseconds: capture tests run again
 * when the deadline was noticed that late, and fail if it always is.
 */
static inline bool sc_late(const struct stallcap_sample *r)
{
	return r->capture_ns - r->deadline_ns >= SC_MAX_LATENESS_NS;
}

/* Pin the calling thread to @cpu; returns 0 or -errno. */
#define SC_STATS_FILE	"/sys/kernel/debug/stallcap/stats"

/* The module-wide counter @name of the debugfs stats file, or ~0. */
static inline uint64_t sc_debugfs_counter(const char *name)
{
	size_t len = strlen(name);
	char line[256];
	uint64_t v = ~0ULL;
	FILE *f = fopen(SC_STATS_FILE, "r");

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ' &&
		    sscanf(line + len, "%llu", (unsigned long long *)&v) == 1)
			break;
	fclose(f);
	return v;
}

/* The module-wide count of watch timer expiries (debugfs), or ~0. */
static inline uint64_t sc_timer_expiries(void)
{
	return sc_debugfs_counter("timer_expiries");
}

/*
 * Of those, the polls of a capture sent to another CPU (every 100 us until
 * its NMI or IPI is done, at most 20 ms), or ~0.
 */
static inline uint64_t sc_timer_polls(void)
{
	return sc_debugfs_counter("timer_polls");
}

/* Write "1" or "0" to the sysfs or module parameter file @path: 0 or -errno. */
static inline int sc_write_bool(const char *path, int on)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, on ? "1" : "0", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

/* Write @v in decimal into the file @path (a parameter, a debugfs knob). */
static inline int sc_write_num(const char *path, long long v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), len, ret = 0;
	char buf[24];

	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%lld\n", v);
	if (write(fd, buf, len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

static inline int sc_pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return 0;
}

/* Number of CPUs this process may run on. */
static inline int sc_nr_cpus_allowed(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

/* The calling thread's name, as the kernel's comm. */
static inline void sc_get_comm(char comm[16])
{
	memset(comm, 0, 16);
	prctl(PR_GET_NAME, comm, 0, 0, 0);
}

/* ------------------------------------------------------------------------
 * ioctl wrappers: each returns the ioctl's value, -1 with errno on error
 * ------------------------------------------------------------------------
 */

static inline int sc_arm(int fd, uint64_t timeout_ns, uint32_t flags, uint64_t tag)
{
	struct stallcap_arm a = {
		.size = sizeof(a),
		.flags = flags,
		.timeout_ns = timeout_ns,
		.user_tag = tag,
	};

	return ioctl(fd, STALLCAP_IOC_ARM, &a);
}

static inline int sc_rearm(int fd, uint64_t timeout_ns)
{
	return ioctl(fd, STALLCAP_IOC_REARM, (unsigned long)timeout_ns);
}

static inline int sc_disarm(int fd)
{
	return ioctl(fd, STALLCAP_IOC_DISARM, 0UL);
}

static inline int sc_release(int fd)
{
	return ioctl(fd, STALLCAP_IOC_RELEASE, 0UL);
}

static inline int sc_get_stats(int fd, struct stallcap_stats *st, uint32_t flags)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->flags = flags;
	return ioctl(fd, STALLCAP_IOC_GET_STATS, st);
}

static inline int sc_get_config(int fd, struct stallcap_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	return ioctl(fd, STALLCAP_IOC_GET_CONFIG, cfg);
}

static inline int sc_get_info(int fd, struct stallcap_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return ioctl(fd, STALLCAP_IOC_GET_INFO, info);
}

/* A session counter, or ~0 if GET_STATS failed. */
#define SC_STAT(fd, field) ({						\
	struct stallcap_stats __st;					\
	sc_get_stats((fd), &__st, 0) ? ~0ULL : (uint64_t)__st.field;	\
})

/* ------------------------------------------------------------------------
 * A session: open, configure, map
 * ------------------------------------------------------------------------
 */

struct sc_session {
	int fd;
	struct stallcap_info info;
	struct stallcap_config cfg;	/* in force, after GET_CONFIG */
	size_t page;
	void *map;
	size_t map_len;
	struct stallcap_ring_ctl *ctl;
	unsigned char *data;
};

/*
 * Configuration wanted by a test; fields left 0 take the module's defaults,
 * as in struct stallcap_config.
 */
struct sc_opts {
	uint32_t flags;
	uint32_t ring_bytes;
	uint32_t user_stack_bytes;
	uint32_t max_samples;
	uint64_t sample_cap_ns;
	uint32_t rate_limit;
	bool no_map;
};

/* Open a session and read the module's info; returns 0 or -errno. */
static inline int sc_open(struct sc_session *s)
{
	memset(s, 0, sizeof(*s));
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	s->fd = open(STALLCAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (sc_get_info(s->fd, &s->info))
		return -errno;
	return 0;
}

static inline int sc_configure(struct sc_session *s, const struct sc_opts *o)
{
	struct stallcap_config cfg = {
		.size = sizeof(cfg),
		.flags = o->flags,
		.ring_bytes = o->ring_bytes,
		.user_stack_bytes = o->user_stack_bytes,
		.max_samples = o->max_samples,
		.sample_cap_ns = o->sample_cap_ns,
		.rate_limit = o->rate_limit,
	};

	if (ioctl(s->fd, STALLCAP_IOC_SET_CONFIG, &cfg))
		return -errno;
	if (sc_get_config(s->fd, &s->cfg))
		return -errno;
	return 0;
}

/* Map the control page and the whole data area. */
static inline int sc_map(struct sc_session *s)
{
	s->map_len = s->page + s->cfg.ring_bytes;
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      s->fd, STALLCAP_MMAP_RING);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		return -errno;
	}
	s->ctl = s->map;
	s->data = (unsigned char *)s->map + s->ctl->data_offset;
	return 0;
}

/*
 * A tunable: $NAME from the environment, else NAME=value on the kernel
 * command line (the test guest), else @dflt.
 */
static inline unsigned long long sc_tunable(const char *name, unsigned long long dflt)
{
	const char *v = getenv(name);
	static char cmdline[4096];
	size_t len = strlen(name);
	char *p;
	FILE *f;

	if (v && *v)
		return strtoull(v, NULL, 0);
	f = fopen("/proc/cmdline", "r");
	if (!f)
		return dflt;
	if (!fgets(cmdline, sizeof(cmdline), f))
		cmdline[0] = 0;
	fclose(f);
	for (p = cmdline; (p = strstr(p, name)); p += len)
		if ((p == cmdline || p[-1] == ' ') && p[len] == '=')
			return strtoull(p + len + 1, NULL, 0);
	return dflt;
}

/*
 * The module under test was built as for a kernel that does not export
 * task_work_add() (the harness's notw boot): no STALLCAP_FEAT_DEFER_USER.
 */
static inline int sc_expect_no_task_work(void)
{
	return sc_tunable("STALLCAP_TEST_NO_TASK_WORK", 0) != 0;
}

/* Open, configure (@o may be NULL: defaults) and map; 0 or -errno. */
static inline int sc_session_setup(struct sc_session *s, const struct sc_opts *o)
{
	static const struct sc_opts defaults;
	int ret;

	if (!o)
		o = &defaults;
	ret = sc_open(s);
	if (!ret)
		ret = sc_configure(s, o);
	if (!ret && !o->no_map)
		ret = sc_map(s);
	return ret;
}

static inline void sc_session_close(struct sc_session *s)
{
	if (s->map)
		munmap(s->map, s->map_len);
	s->map = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* ------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------
 */

/*
 * Sections of a sample: the record's fixed part is fixed_size bytes, then
 * come sections that carry their own size (see "Records" in the header).
 * These helpers read records copied out of the ring (struct sc_records):
 * hdr.size bytes are there.  They are what a reader built against this
 * header does: known fields of the fixed part, known sections found by
 * type, unknown ones skipped.
 */

/* Walk: the section at @off, or NULL at the end or on a malformed one. */
static inline const struct stallcap_section *
sc_section_at(const struct stallcap_sample *r, uint32_t off)
{
	const struct stallcap_section *sec = (const void *)((const char *)r + off);

	if (off < r->fixed_size || off + sizeof(*sec) > r->hdr.size)
		return NULL;
	if (sec->size < sizeof(*sec) || (sec->size & 7) || sec->size > r->hdr.size - off)
		return NULL;
	return sec;
}

/* Iterate over the sections of @r: for (SC_FOR_EACH_SECTION(r, off, sec)) */
#define SC_FOR_EACH_SECTION(r, off, sec)					\
	uint32_t off = (r)->fixed_size;						\
	((sec) = sc_section_at((r), off)) != NULL;				\
	off += (sec)->size

/* The first section of @type in @r, or NULL. */
static inline const struct stallcap_section *sc_section(const struct stallcap_sample *r,
							 uint16_t type)
{
	const struct stallcap_section *sec;

	for (SC_FOR_EACH_SECTION(r, off, sec))
		if (sec->type == type)
			return sec;
	return NULL;
}

/* Sections of @r of types this header does not define. */
static inline unsigned int sc_unknown_sections(const struct stallcap_sample *r)
{
	const struct stallcap_section *sec;
	unsigned int n = 0;

	for (SC_FOR_EACH_SECTION(r, off, sec))
		n += sec->type < STALLCAP_SEC_REGS || sec->type > STALLCAP_SEC_TASK;
	return n;
}

static inline unsigned int sc_nr_ips(const struct stallcap_sample *r, uint16_t type)
{
	const struct stallcap_section *sec = sc_section(r, type);

	return sec ? (sec->size - sizeof(*sec)) / 8 : 0;
}

static inline const __u64 *sc_ips(const struct stallcap_sample *r, uint16_t type)
{
	static const __u64 none[1];
	const struct stallcap_section *sec = sc_section(r, type);

	return sec ? (const __u64 *)(sec + 1) : none;
}

#define sc_nk(r)		sc_nr_ips((r), STALLCAP_SEC_KERNEL_IPS)
#define sc_nu(r)		sc_nr_ips((r), STALLCAP_SEC_USER_IPS)
#define sc_kernel_ips(r)	sc_ips((r), STALLCAP_SEC_KERNEL_IPS)
#define sc_user_ips(r)		sc_ips((r), STALLCAP_SEC_USER_IPS)

/* The x86-64 user registers of @r; all zero when it has none. */
static inline const struct stallcap_regs_x86_64 *sc_regs(const struct stallcap_sample *r)
{
	static const struct stallcap_regs_x86_64 none;
	const struct stallcap_sec_regs *sec = (const void *)sc_section(r, STALLCAP_SEC_REGS);

	if (!sec || sec->arch != STALLCAP_ARCH_X86_64 ||
	    sec->regs_size < sizeof(none) || sec->sec.size < sizeof(*sec) + sizeof(none))
		return &none;
	return (const void *)(sec + 1);
}

static inline const struct stallcap_sec_user_stack *
sc_stack_sec(const struct stallcap_sample *r)
{
	const struct stallcap_sec_user_stack *sec = (const void *)sc_section(r, STALLCAP_SEC_USER_STACK);

	if (!sec || sec->sec.size < sizeof(*sec) || sec->len > sec->sec.size - sizeof(*sec))
		return NULL;
	return sec;
}

static inline const unsigned char *sc_stack(const struct stallcap_sample *r)
{
	const struct stallcap_sec_user_stack *sec = sc_stack_sec(r);

	return sec ? (const unsigned char *)(sec + 1) : (const unsigned char *)"";
}

static inline uint32_t sc_stack_size(const struct stallcap_sample *r)
{
	const struct stallcap_sec_user_stack *sec = sc_stack_sec(r);

	return sec ? sec->len : 0;
}

static inline uint64_t sc_stack_start(const struct stallcap_sample *r)
{
	const struct stallcap_sec_user_stack *sec = sc_stack_sec(r);

	return sec ? sec->start : 0;
}

/* flags a newer header may define; 0 when it does not */
#define SC_SAMPLE_USTACK_REMOTE	STALLCAP_SAMPLE_USTACK_REMOTE
#define SC_SAMPLE_ABANDONED	STALLCAP_SAMPLE_ABANDONED
#define SC_SAMPLE_FLAGS_ALL	((STALLCAP_SAMPLE_MEMSTALL << 1) - 1)

/* The STALLCAP_SEC_SYSCALL section, or NULL. */
static inline const struct stallcap_sec_syscall *sc_syscall(const struct stallcap_sample *r)
{
	return (const void *)sc_section(r, STALLCAP_SEC_SYSCALL);
}

/*
 * A SYSCALL section comes with the registers of the call's entry: its
 * arguments are theirs, and they say a 64-bit call is in progress (ax
 * -ENOSYS, cx and r11 the ip and flags SYSCALL saved).
 */
static inline const char *sc_syscall_check(const struct stallcap_sample *r)
{
	const struct stallcap_sec_syscall *sys = sc_syscall(r);
	const struct stallcap_regs_x86_64 *g = sc_regs(r);

	if (!sys)
		return NULL;
	if (sys->sec.size != sizeof(*sys) || sys->__reserved)
		return "SYSCALL section's size or __reserved wrong";
	if (r->hdr.type != STALLCAP_REC_SAMPLE)
		return "SYSCALL section in a USER_STACK record";
	if (!sc_section(r, STALLCAP_SEC_REGS) || (r->flags & STALLCAP_SAMPLE_USER_MODE))
		return "SYSCALL section without the registers of a kernel entry";
	if (g->ax != (__u64)-38 || g->cx != g->ip || g->r11 != g->flags)
		return "SYSCALL section but the registers are not a system call's entry";
	if (sys->args[0] != g->di || sys->args[1] != g->si || sys->args[2] != g->dx ||
	    sys->args[3] != g->r10 || sys->args[4] != g->r8 || sys->args[5] != g->r9)
		return "SYSCALL arguments are not the entry registers";
	return NULL;
}

/* Sections well formed, reaching hdr.size exactly, known ones at most once
 * (TASK and USER_STACK_MORE may repeat). */
static inline const char *sc_sections_check(const struct stallcap_sample *r)
{
	const struct stallcap_section *sec;
	unsigned int seen = 0;
	uint32_t end = r->fixed_size;

	if (r->fixed_size < sizeof(*r) || (r->fixed_size & 7) || r->fixed_size > r->hdr.size)
		return "bad fixed_size";
	for (SC_FOR_EACH_SECTION(r, off, sec)) {
		end = off + sec->size;
		if (sec->flags)
			return "section flags not zero";
		if (sec->type >= STALLCAP_SEC_REGS && sec->type <= STALLCAP_SEC_SYSCALL) {
			if (sec->type != STALLCAP_SEC_TASK &&
			    sec->type != STALLCAP_SEC_USER_STACK_MORE && (seen & (1U << sec->type)))
				return "a section type twice";
			seen |= 1U << sec->type;
		} else if (sec->type < 0x7f00 || sec->type > 0x7fff) {
			return "section of an unknown type outside 0x7f00..0x7fff";
		}
	}
	if (end != r->hdr.size)
		return "sections do not end at the record's size";
	return NULL;
}

static inline const char *sc_sample_check(const struct stallcap_rec_header *h,
					  const struct stallcap_config *cfg)
{
	const struct stallcap_sample *r = (const void *)h;
	const char *why;

	if (h->size < sizeof(*r))
		return "sample shorter than struct stallcap_sample";
	why = sc_sections_check(r);
	if (why)
		return why;
	if (sc_nk(r) > STALLCAP_MAX_FRAMES || sc_nu(r) > STALLCAP_MAX_FRAMES)
		return "more than STALLCAP_MAX_FRAMES frames";
	if (h->type == STALLCAP_REC_SAMPLE && sc_stack_size(r) > cfg->user_stack_bytes)
		return "stack_size above user_stack_bytes";
	if (r->__reserved0)
		return "sample __reserved0 not zero";
	if (r->state < STALLCAP_STATE_RUNNING || r->state > STALLCAP_STATE_EXITING)
		return "unknown sample state";
	if (r->path < STALLCAP_PATH_LOCAL || r->path > STALLCAP_PATH_DEFERRED)
		return "unknown sample path";
	if (r->clock < STALLCAP_CLOCK_WALL || r->clock > STALLCAP_CLOCK_SHARED)
		return "unknown sample clock";
	if (r->origin != STALLCAP_ORIGIN_ARM && r->origin != STALLCAP_ORIGIN_ATTACH)
		return "sample origin is neither ARM nor ATTACH";
	if (r->flags & ~SC_SAMPLE_FLAGS_ALL)
		return "unknown sample flags";
	if (r->sample_index >= SC_MAX_SAMPLES)
		return "sample_index beyond the largest max_samples";
	if ((r->flags & STALLCAP_SAMPLE_KADDR_HIDDEN) && sc_section(r, STALLCAP_SEC_KERNEL_IPS))
		return "kernel frames although KADDR_HIDDEN";
	if (h->type == STALLCAP_REC_USER_STACK && sc_section(r, STALLCAP_SEC_KERNEL_IPS))
		return "USER_STACK record with kernel frames";
	if (sc_section(r, STALLCAP_SEC_REGS) && sc_regs(r)->sp == 0 && sc_regs(r)->ip == 0)
		return "REGS section of an unknown arch";
	if (sc_nu(r) && sc_user_ips(r)[0] != sc_regs(r)->ip)
		return "user frame 0 is not regs.ip";
	if (sc_stack_sec(r) && sc_stack_start(r) != sc_regs(r)->sp)
		return "stack_start is not regs.sp";
	if (sc_section(r, STALLCAP_SEC_USER_STACK) && !sc_stack_sec(r))
		return "USER_STACK section shorter than its len";
	why = sc_syscall_check(r);
	if (why)
		return why;
	if (r->capture_realtime_ns < r->capture_ns)
		return "capture_realtime_ns before capture_ns";
	return NULL;
}

/*
 * Check one complete record against the documented layout; returns NULL if
 * well formed, else a static description.
 */
static inline const char *sc_record_check(const struct stallcap_rec_header *h,
					  const struct stallcap_config *cfg)
{
	const struct stallcap_stall_end *e = (const void *)h;

	if (h->flags)
		return "record flags other than BUSY";
	switch (h->type) {
	case STALLCAP_REC_PAD:
		return NULL;
	case STALLCAP_REC_SAMPLE:
	case STALLCAP_REC_USER_STACK:
		return sc_sample_check(h, cfg);
	case STALLCAP_REC_STALL_END:
		if (h->size != sizeof(*e) || e->fixed_size != sizeof(*e))
			return "stall-end size is not sizeof(struct stallcap_stall_end)";
		if (e->__reserved)
			return "stall-end __reserved not zero";
		if (e->origin != STALLCAP_ORIGIN_ARM &&
		    e->origin != STALLCAP_ORIGIN_ATTACH)
			return "stall-end origin is neither ARM nor ATTACH";
		if (e->end_ns < e->deadline_ns)
			return "stall ended before its deadline";
		if (e->end_realtime_ns < e->end_ns)
			return "end_realtime_ns before end_ns";
		return NULL;
	case STALLCAP_REC_WATCH: {
		const struct stallcap_watch_event *w = (const void *)h;

		if (h->size != sizeof(*w) || w->fixed_size != sizeof(*w))
			return "watch record size is not sizeof(struct stallcap_watch_event)";
		if (w->event < STALLCAP_WATCH_STARTED || w->event > STALLCAP_WATCH_BUSY)
			return "watch record event unknown";
		if (w->realtime_ns < w->time_ns)
			return "watch realtime_ns before time_ns";
		return NULL;
	}
	default:
		return "unknown record type";
	}
}

/* Records consumed from a ring, each copied out of it. */
struct sc_records {
	size_t n, cap;
	struct stallcap_rec_header **rec;
	size_t nr_pad;
	char err[160];		/* first malformation seen */
};

static inline void sc_records_free(struct sc_records *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->rec[i]);
	free(rs->rec);
	memset(rs, 0, sizeof(*rs));
}

static inline void sc_records_add(struct sc_records *rs, const void *rec, size_t size)
{
	void *copy;

	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 64;
		rs->rec = realloc(rs->rec, rs->cap * sizeof(*rs->rec));
		if (!rs->rec)
			abort();
	}
	copy = malloc(size);
	if (!copy)
		abort();
	memcpy(copy, rec, size);
	rs->rec[rs->n++] = copy;
}

/* The first watch event @event of thread @tid among @rs, or NULL. */
static inline const struct stallcap_watch_event *
sc_find_watch_event(const struct sc_records *rs, pid_t tid, uint32_t event)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_watch_event *w = (const void *)rs->rec[i];

		if (w->hdr.type == STALLCAP_REC_WATCH && w->tid == (__u32)tid &&
		    w->event == event)
			return w;
	}
	return NULL;
}

static inline void sc_records_fail(struct sc_records *rs, const char *fmt, ...)
{
	va_list ap;

	if (rs->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(rs->err, sizeof(rs->err), fmt, ap);
	va_end(ap);
}

/*
 * Consume every complete record in the ring now (the reader side of the
 * ordering diagram in the uapi header): stops at a busy record, skips PAD,
 * checks each record, publishes the new tail.  Returns the number of
 * non-PAD records consumed, or -1 (with rs->err set) on a malformed ring,
 * in which case nothing more is consumed.
 */
static inline int sc_ring_drain(struct sc_session *s, struct sc_records *rs)
{
	struct stallcap_ring_ctl *ctl = s->ctl;
	uint64_t size = ctl->data_size;
	uint64_t head, tail;
	int got = 0;

	head = __atomic_load_n(&ctl->data_head, __ATOMIC_ACQUIRE);		/* A */
	tail = __atomic_load_n(&ctl->data_tail, __ATOMIC_RELAXED);
	if (head < tail || head - tail > size || (head & 7)) {
		sc_records_fail(rs, "bad head %llu / tail %llu (data_size %llu)",
				(unsigned long long)head, (unsigned long long)tail,
				(unsigned long long)size);
		return -1;
	}
	while (tail < head) {
		uint64_t off = tail & (size - 1);
		struct stallcap_rec_header *h = (void *)(s->data + off);
		uint16_t flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);	/* B */
		uint32_t rsize = __atomic_load_n(&h->size, __ATOMIC_RELAXED);
		const char *why;

		if (flags & STALLCAP_REC_F_BUSY)
			break;
		if (rsize < sizeof(*h) || (rsize & 7) || off + rsize > size ||
		    rsize > head - tail) {
			sc_records_fail(rs, "record at %llu: bad size %u",
					(unsigned long long)tail, rsize);
			return -1;
		}
		why = sc_record_check(h, &s->cfg);
		if (why) {
			sc_records_fail(rs, "record at %llu (type %u size %u): %s",
					(unsigned long long)tail, h->type, rsize, why);
			return -1;
		}
		if (h->type == STALLCAP_REC_PAD) {
			rs->nr_pad++;
		} else {
			sc_records_add(rs, h, rsize);
			got++;
		}
		tail += rsize;
	}
	__atomic_store_n(&ctl->data_tail, tail, __ATOMIC_RELEASE);		/* D */
	return got;
}

static inline size_t sc_records_count(const struct sc_records *rs, uint16_t type)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->n; i++)
		n += !type || rs->rec[i]->type == type;
	return n;
}

/* The @idx-th record of @type (0 = any type), or NULL. */
static inline const void *sc_records_nth(const struct sc_records *rs, uint16_t type,
					 size_t idx)
{
	for (size_t i = 0; i < rs->n; i++) {
		if (type && rs->rec[i]->type != type)
			continue;
		if (!idx--)
			return rs->rec[i];
	}
	return NULL;
}

/* The first sample with sample_index @idx of thread @tid, or NULL. */
static inline const struct stallcap_sample *
sc_nth_sample_of(const struct sc_records *rs, pid_t tid, uint32_t idx)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->tid == (__u32)tid &&
		    r->sample_index == idx)
			return r;
	}
	return NULL;
}

/* First sample (sample_index 0) of the calling tid @tid, or NULL. */
static inline const struct stallcap_sample *
sc_first_sample_of(const struct sc_records *rs, pid_t tid)
{
	return sc_nth_sample_of(rs, tid, 0);
}

static inline const struct stallcap_stall_end *
sc_stall_end_of(const struct sc_records *rs, uint64_t stall_id)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_stall_end *e = (const void *)rs->rec[i];

		if (e->hdr.type == STALLCAP_REC_STALL_END && e->stall_id == stall_id)
			return e;
	}
	return NULL;
}

/*
 * Drain the ring, waiting with poll() up to @timeout_ms until at least
 * @want records of @type (0: any) have been collected in @rs (in total).
 * Returns the number of such records, or -1 on a malformed ring.
 * With @want 0 it waits the whole timeout (to show that nothing comes).
 */
static inline int sc_ring_collect(struct sc_session *s, struct sc_records *rs,
				  uint16_t type, size_t want, int timeout_ms)
{
	uint64_t end = sc_now_ns() + SC_MS(timeout_ms);

	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		uint64_t now;
		int got;

		got = sc_ring_drain(s, rs);
		if (got < 0) {
			fprintf(stderr, "# ring error: %s\n", rs->err);
			return -1;
		}
		if (want && sc_records_count(rs, type) >= want)
			break;
		now = sc_now_ns();
		if (now >= end)
			break;
		if (poll(&pfd, 1, (int)((end - now) / SC_NSEC_PER_MSEC) + 1) > 0 && !got)
			sc_sleep_ms(1);	/* readable but busy: let the writer finish */
	}
	return (int)sc_records_count(rs, type);
}

/* ------------------------------------------------------------------------
 * Kernel symbols (/proc/kallsyms; addresses are visible to root)
 * ------------------------------------------------------------------------
 */

struct sc_ksym {
	uint64_t addr;
	char *name;
};

struct sc_ksyms {
	struct sc_ksym *sym;
	size_t n;
};

static inline int sc_ksym_cmp(const void *a, const void *b)
{
	const struct sc_ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Load the text symbols; returns 0, or -1 if unreadable or all zero. */
static inline int sc_ksyms_load(struct sc_ksyms *ks)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0;

	memset(ks, 0, sizeof(*ks));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (!addr || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		if (ks->n == cap) {
			cap = cap ? 2 * cap : 65536;
			ks->sym = realloc(ks->sym, cap * sizeof(*ks->sym));
			if (!ks->sym)
				abort();
		}
		ks->sym[ks->n].addr = addr;
		ks->sym[ks->n].name = strdup(name);
		ks->n++;
	}
	fclose(f);
	if (!ks->n)
		return -1;
	qsort(ks->sym, ks->n, sizeof(*ks->sym), sc_ksym_cmp);
	return 0;
}

static inline void sc_ksyms_free(struct sc_ksyms *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		free(ks->sym[i].name);
	free(ks->sym);
	memset(ks, 0, sizeof(*ks));
}

/* The text symbol containing @ip (the last one at or below it), or NULL. */
static inline const struct sc_ksym *sc_ksym_at(const struct sc_ksyms *ks, uint64_t ip)
{
	size_t lo = 0, hi = ks->n;

	if (!ks->n || ip < ks->sym[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->sym[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	return &ks->sym[lo];
}

/* Name of the text symbol containing @ip, or NULL. */
static inline const char *sc_ksym_name(const struct sc_ksyms *ks, uint64_t ip)
{
	const struct sc_ksym *sym = sc_ksym_at(ks, ip);

	if (!sym || ip - sym->addr > (1 << 20))	/* past the end of text */
		return NULL;
	return sym->name;
}

/* A line in the kernel log (the harness reads it: scripts/vmtest.sh). */
static inline void sc_kmsg(const char *line)
{
	int fd = open("/dev/kmsg", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, line, strlen(line)) < 0)
			perror("/dev/kmsg");
		close(fd);
	}
}

/* Does module parameter @name read as @value (its first character: 'Y', '1')? */
static inline bool sc_param_is(const char *name, char value)
{
	char path[256], c = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/stallcap/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%c", &c) != 1)
		c = 0;
	fclose(f);
	return c == value;
}

/* Write boolean module parameter @name; 0 or -errno. */
static inline int sc_param_set(const char *name, bool on)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "/sys/module/stallcap/parameters/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

static inline bool sc_name_has_prefix(const char *name, const char *const *prefixes)
{
	if (!name)
		return false;
	for (; *prefixes; prefixes++)
		if (!strncmp(name, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

/*
 * Does any kernel frame of @r name a function starting with one of
 * @prefixes (NULL-terminated)?  Return addresses may point just past their
 * caller, so ip - 1 is tried as well.
 */
static inline bool sc_kip_named(const struct sc_ksyms *ks, __u64 ip,
				const char *const *prefixes)
{
	return sc_name_has_prefix(sc_ksym_name(ks, ip), prefixes) ||
	       sc_name_has_prefix(sc_ksym_name(ks, ip - 1), prefixes);
}

static inline bool sc_kstack_has(const struct sc_ksyms *ks, const struct stallcap_sample *r,
				 const char *const *prefixes)
{
	const __u64 *ip = sc_kernel_ips(r);

	for (unsigned int i = 0; i < sc_nk(r); i++)
		if (sc_kip_named(ks, ip[i], prefixes))
			return true;
	return false;
}

/*
 * Is @r's kernel stack whole: not cut (STALLCAP_SAMPLE_KSTACK_TRUNC), no
 * kretprobe or rethook trampoline standing for a return address, and its
 * outermost frame the system call's entry?
 */
static inline bool sc_kstack_whole_syscall(const struct sc_ksyms *ks,
					   const struct stallcap_sample *r)
{
	static const char *const tramp[] = { "kretprobe_trampoline", "__kretprobe_trampoline",
					     "arch_rethook_trampoline", "rethook_trampoline",
					     NULL };
	static const char *const entry[] = { "entry_SYSCALL_64", "do_syscall_64", NULL };
	const __u64 *ip = sc_kernel_ips(r);

	if ((r->flags & STALLCAP_SAMPLE_KSTACK_TRUNC) || sc_nk(r) < 2 ||
	    sc_kstack_has(ks, r, tramp))
		return false;
	return sc_kip_named(ks, ip[sc_nk(r) - 1], entry);
}

/*
 * Is @r's kernel stack under an interrupt or exception entry (an asm_* entry
 * stub, or the way back to the interrupted context)?
 */
static inline bool sc_kstack_under_interrupt(const struct sc_ksyms *ks,
					     const struct stallcap_sample *r)
{
	static const char *const entry[] = { "asm_sysvec_", "asm_common_interrupt",
					     "asm_exc_", "irqentry_exit", NULL };

	return sc_kstack_has(ks, r, entry);
}

/* ------------------------------------------------------------------------
 * User symbols (dladdr; the programs are linked with -rdynamic)
 * ------------------------------------------------------------------------
 */

static inline const char *sc_usym_name(uint64_t ip)
{
	Dl_info di;

	if (!ip || !dladdr((void *)(uintptr_t)ip, &di) || !di.dli_sname)
		return NULL;
	return di.dli_sname;
}

/* Is @ip inside the (exported) function @fn? */
static inline bool sc_ip_in_fn(uint64_t ip, const void *fn)
{
	Dl_info di;

	return ip && dladdr((void *)(uintptr_t)ip, &di) && di.dli_saddr == fn;
}

/* Index of the first user frame inside @fn (ip or return address - 1), or -1. */
static inline int sc_ustack_find(const struct stallcap_sample *r, const void *fn)
{
	const __u64 *ip = sc_user_ips(r);

	for (unsigned int i = 0; i < sc_nu(r); i++)
		if (sc_ip_in_fn(ip[i], fn) || (i && sc_ip_in_fn(ip[i] - 1, fn)))
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------------------
 * Logging a sample (to the TAP stream, as "# " comments)
 * ------------------------------------------------------------------------
 */

static inline void sc_log_sample(const struct sc_ksyms *ks, const struct stallcap_sample *r)
{
	const __u64 *k = sc_kernel_ips(r), *u = sc_user_ips(r);
	const struct stallcap_section *sec;

	fprintf(stderr, "#   sample stall %llu idx %u tid %u pid %u cpu %u comm '%.16s' "
		"state %u path %u clock %u flags 0x%x late %lld ns\n",
		(unsigned long long)r->stall_id, r->sample_index, r->tid, r->pid, r->cpu,
		r->comm, r->state, r->path, r->clock, r->flags,
		(long long)(r->capture_ns - r->deadline_ns));
	fprintf(stderr, "#   ip %#llx sp %#llx bp %#llx, %u kernel / %u user frames, "
		"stack %u bytes at %#llx\n",
		(unsigned long long)sc_regs(r)->ip, (unsigned long long)sc_regs(r)->sp,
		(unsigned long long)sc_regs(r)->bp, sc_nk(r), sc_nu(r),
		sc_stack_size(r), (unsigned long long)sc_stack_start(r));
	for (unsigned int i = 0; i < sc_nk(r); i++) {
		const char *n = ks ? sc_ksym_name(ks, k[i]) : NULL;

		fprintf(stderr, "#     k%-3u %#llx %s\n", i, (unsigned long long)k[i],
			n ? n : "?");
	}
	for (unsigned int i = 0; i < sc_nu(r); i++) {
		const char *n = sc_usym_name(u[i]);

		fprintf(stderr, "#     u%-3u %#llx %s\n", i, (unsigned long long)u[i],
			n ? n : "?");
	}
	/* who ran instead, lock owners: a flaky capture names its culprit */
	for (SC_FOR_EACH_SECTION(r, off, sec)) {
		const struct stallcap_sec_task *t = (const void *)sec;

		if (sec->type != STALLCAP_SEC_TASK || sec->size < sizeof(*t))
			continue;
		fprintf(stderr, "#   task role %u hop %u: '%.16s' pid %u tid %u cpu %u state %u "
			"policy %u prio %d flags 0x%x, %u kernel frames\n", t->role, t->hop,
			t->comm, t->pid, t->tid, t->cpu, t->state, t->policy, t->prio, t->flags,
			t->nr_kernel_frames);
	}
}

static inline void sc_log_records(const struct sc_ksyms *ks, const struct sc_records *rs)
{
	static struct sc_ksyms own;

	if (!ks && (own.n || !sc_ksyms_load(&own)))
		ks = &own;	/* resolve kernel frames when kallsyms allows */
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_rec_header *h = rs->rec[i];
		const struct stallcap_stall_end *e = (const void *)h;
		const struct stallcap_watch_event *we = (const void *)h;

		if (h->type == STALLCAP_REC_STALL_END)
			fprintf(stderr, "#   stall-end stall %llu tid %u samples %u lasted %lld ns\n",
				(unsigned long long)e->stall_id, e->tid, e->nr_samples,
				(long long)(e->end_ns - e->deadline_ns));
		else if (h->type == STALLCAP_REC_WATCH)
			fprintf(stderr, "#   watch event %u pid %u tid %u at %llu ns\n",
				we->event, we->pid, we->tid,
				(unsigned long long)we->time_ns);
		else if (h->type == STALLCAP_REC_SAMPLE)
			sc_log_sample(ks, (const void *)h);
		else
			fprintf(stderr, "#   record type %u\n", h->type);
	}
	if (rs->err[0])
		fprintf(stderr, "#   ring error: %s\n", rs->err);
}

/* ------------------------------------------------------------------------
 * Known places to stall in
 * ------------------------------------------------------------------------
 */

volatile unsigned long sc_spin_count;
void *volatile sc_spin_frame;

/*
 * Spin in user mode, without system calls, until *@stop becomes non-zero.
 * GCC 12 sets up no frame in a leaf function that needs no stack, even with
 * -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer; taking the frame
 * address forces one, so that the FP walk goes through the caller.
 */
SC_NOINLINE void spin_in_user(const volatile int *stop)
{
	sc_spin_frame = __builtin_frame_address(0);
	while (!*stop)
		sc_spin_count++;
}

#define SC_CANARY	0x5ca1ab1e0ddba115ULL

/*
 * Calls spin_in_user() with a canary on its own stack frame, so that a test
 * can find the canary in the raw user-stack copy.
 */
SC_NOINLINE void spin_in_user_caller(const volatile int *stop)
{
	volatile uint64_t canary[4];

	for (int i = 0; i < 4; i++)
		canary[i] = SC_CANARY + i;
	spin_in_user(stop);
	for (int i = 0; i < 4; i++)
		if (canary[i] != SC_CANARY + i)
			abort();
}

/* Does @r's raw stack copy hold the canary of spin_in_user_caller()? */
static inline bool sc_stack_has_canary(const struct stallcap_sample *r)
{
	const unsigned char *p = sc_stack(r);

	for (uint32_t off = 0; off + 32 <= sc_stack_size(r); off += 8) {
		uint64_t w[4];

		memcpy(w, p + off, sizeof(w));
		if (w[0] == SC_CANARY && w[1] == SC_CANARY + 1 &&
		    w[2] == SC_CANARY + 2 && w[3] == SC_CANARY + 3)
			return true;
	}
	return false;
}

/*
 * A system call made from this very function (not from a libc wrapper that
 * sets up no frame), so that the user registers saved at kernel entry have
 * regs.ip in raw_syscall6() and user frame 1 in its caller.
 */
SC_NOINLINE long raw_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	sc_spin_frame = __builtin_frame_address(0);	/* force a frame */
	__asm__ volatile ("syscall"
			  : "=a" (ret)
			  : "0" (nr), "D" (a1), "S" (a2), "d" (a3), "r" (r10), "r" (r8), "r" (r9)
			  : "rcx", "r11", "memory");
	return ret;
}

/*
 * A stopper thread: sets ->stop once the session's counters show @samples
 * more sample records written (or lost) than when it started, or after
 * @timeout_ms.  Lets a thread stall until the module has captured it,
 * however slow the guest is.  Set ->delay_ms and ->cpu (-1: any) before
 * sc_stopper_start().
 */
struct sc_stopper {
	pthread_t thread;
	int fd;
	volatile int stop;
	uint64_t samples;
	int timeout_ms;
	int delay_ms;		/* keep stalling this long after the samples */
	int cpu;		/* pin the stopper here if >= 0 */
	bool timed_out;
	uint64_t stop_ns;	/* when it set stop */
};

static inline void *sc_stopper_fn(void *arg)
{
	struct sc_stopper *st = arg;
	uint64_t end = sc_now_ns() + SC_MS(st->timeout_ms);

	if (st->cpu >= 0)
		sc_pin_self(st->cpu);
	for (;;) {
		struct stallcap_stats stats;

		if (!sc_get_stats(st->fd, &stats, 0) &&
		    stats.samples + stats.lost >= st->samples)
			break;
		if (sc_now_ns() >= end) {
			st->timed_out = true;
			break;
		}
		sc_sleep_ms(5);
	}
	if (!st->timed_out && st->delay_ms)
		sc_sleep_ms(st->delay_ms);
	st->stop_ns = sc_now_ns();
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static inline int sc_stopper_start(struct sc_stopper *st, int fd, uint64_t samples,
				   int timeout_ms)
{
	struct stallcap_stats stats;

	if (sc_get_stats(fd, &stats, 0))
		return -errno;
	st->fd = fd;
	st->stop = 0;
	st->samples = stats.samples + stats.lost + samples;
	st->timeout_ms = timeout_ms;
	st->timed_out = false;
	return -pthread_create(&st->thread, NULL, sc_stopper_fn, st);
}

static inline void sc_stopper_join(struct sc_stopper *st)
{
	pthread_join(st->thread, NULL);
}

#endif /* STALLCAP_TEST_H */
