// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user stacks: a thread stalled in a system call is sampled in the
 * kernel, where its user stack cannot be read (it is asleep, read from
 * another CPU) or, with STALLCAP_CFG_DEFER_USER, is not read in full; the
 * samples carry a cookie and DEFER_PENDING, and when the thread returns to
 * user space exactly one USER_STACK record with that cookie follows, taken
 * in its own context: its frames reach main and its raw copy goes far
 * deeper than the session's user_stack_bytes.
 */
#include "stallcap_test.h"

#include "sc_harness.h"

#include "stall_util.h"

#define DEF_T		SC_MS(20)
#define BLOCK_MS	200		/* in getrandom() after 3 samples */
/*
 * The blocked variant's waker writes this long after the ARM: samples come
 * at T, 2T, 4T, 8T, 16T after it (20, 40, 80, 160, 320 ms), and 12T is
 * 4T away from both neighbours, so no sample races the wake-up.
 */
#define WAKE_AFTER_ARM	SC_MS(240)
#define USTACK		4096		/* the capture-time copy: 4 KiB */
#define DEPTH		64		/* frames of ... */
#define FRAME_BYTES	1024		/* ... 1 KiB each: the stack is 64 KiB deep */
#define MAGIC		0x64656570737461ULL
#define TAG		0x6465666572726564ULL

#ifndef GRND_INSECURE
#define GRND_INSECURE	0x0004
#endif

int main(int argc, char **argv);	/* TEST_HARNESS_MAIN's, reached by the FP walk */

/* anonymous pipes read in anon_pipe_read() since Linux 6.16 */
static const char *const pipe_fns[] = { "pipe_read", "anon_pipe_read", NULL };
static const char *const getrandom_fns[] = {
	"__x64_sys_getrandom", "__do_sys_getrandom", "get_random_bytes_user", NULL,
};

/* What the deep thread does at the bottom of its recursion. */
struct deep {
	int sc_fd;			/* armed just before the system call */
	int arm_ret, arm_errno;
	long disarm_ret;		/* right after it, -errno */
	_Atomic uint64_t armed_at;	/* CLOCK_MONOTONIC, just before ARM */
	int fd;				/* blocking read of this pipe */
	bool in_kernel;			/* or: getrandom() until *stop */
	const volatile int *stop;
	void *buf;
	size_t buf_len;
	long calls;
};

SC_NOINLINE long deep_bottom(struct deep *d)
{
	struct stallcap_arm a = {
		.size = sizeof(a), .timeout_ns = DEF_T, .user_tag = TAG,
	};
	long ret;
	char c;

	/*
	 * Armed here, not before the 64 KiB of stack were built: on a loaded
	 * host that alone can take longer than the deadline.  Through
	 * raw_syscall6() like the calls below: a sample taken in the ARM's
	 * own return (a slow kernel's exit work) has its frame 0 there too.
	 */
	d->armed_at = sc_now_ns();
	ret = raw_syscall6(SYS_ioctl, d->sc_fd, STALLCAP_IOC_ARM, (long)&a, 0, 0, 0);
	d->arm_ret = ret < 0 ? -1 : 0;
	d->arm_errno = ret < 0 ? -ret : 0;
	if (d->arm_ret)
		return -1;
	ret = 1;
	if (!d->in_kernel)
		ret = raw_syscall6(SYS_read, d->fd, (long)&c, 1, 0, 0, 0);
	while (d->in_kernel && !*d->stop) {
		raw_syscall6(SYS_getrandom, (long)d->buf, (long)d->buf_len, GRND_INSECURE,
			     0, 0, 0);
		d->calls++;
	}
	/*
	 * The stall ends here, before any other system call: every sample is
	 * in the system call above, between two of them, or in this one.
	 */
	d->disarm_ret = raw_syscall6(SYS_ioctl, d->sc_fd, STALLCAP_IOC_DISARM, 0, 0, 0, 0);
	return ret;
}

/*
 * @depth + 1 frames of deep_recurse(), each with 1 KiB of locals marked
 * with MAGIC + its depth (depth 0 is the innermost), then deep_bottom().
 */
SC_NOINLINE long deep_recurse(struct deep *d, int depth)
{
	volatile uint64_t pad[FRAME_BYTES / 8];
	long ret;

	for (unsigned int i = 0; i < FRAME_BYTES / 8; i++)
		pad[i] = MAGIC + depth;
	ret = depth ? deep_recurse(d, depth - 1) : deep_bottom(d);
	for (unsigned int i = 0; i < FRAME_BYTES / 8; i++)
		if (pad[i] != MAGIC + (uint64_t)depth)
			abort();
	return ret;
}

/* Depths whose marked locals are in @r's raw stack copy, as a bitmap. */
static uint64_t depths_in_copy(const struct stallcap_sample *r)
{
	const unsigned char *p = sc_stack(r);
	uint64_t seen = 0;

	for (uint32_t off = 0; off + 16 <= sc_stack_size(r); off += 8) {
		uint64_t w[2];

		memcpy(w, p + off, sizeof(w));
		if (w[0] == w[1] && w[0] >= MAGIC && w[0] < MAGIC + DEPTH)
			seen |= 1ULL << (w[0] - MAGIC);
	}
	return seen;
}

/* Wakes the reader once @samples samples are in and @after_arm has passed. */
struct waker {
	pthread_t thread;
	int fd, cpu;
	struct sc_session *s;
	uint64_t samples;
	const _Atomic uint64_t *armed_at;	/* set before the first sample */
	uint64_t after_arm;
	uint64_t wrote_at;
	bool timed_out;
};

static void *waker_fn(void *arg)
{
	struct waker *w = arg;
	uint64_t end = sc_now_ns() + SC_MS(SC_WAIT_MS);

	if (w->cpu >= 0)
		sc_pin_self(w->cpu);
	while (SC_STAT(w->s->fd, samples) < w->samples) {
		if (sc_now_ns() >= end) {
			w->timed_out = true;
			break;
		}
		sc_sleep_ms(2);
	}
	while (sc_now_ns() < *w->armed_at + w->after_arm)
		sc_sleep_ms(1);
	w->wrote_at = sc_now_ns();
	if (write(w->fd, "x", 1) != 1)
		abort();
	return NULL;
}

FIXTURE(deferred) {
	struct sc_session s;
	struct sc_records rs;
	struct sc_ksyms ks;
	bool have_ks;
	int pipefd[2];
	int other_cpu;
	bool no_task_work;	/* sc_expect_no_task_work() */
};

FIXTURE_VARIANT(deferred) {
	uint32_t cfg_flags;
	bool in_kernel;
};

/* Asleep in read(): the user stack is not readable at capture. */
FIXTURE_VARIANT_ADD(deferred, blocked) {
	.cfg_flags = 0,
	.in_kernel = false,
};

FIXTURE_VARIANT_ADD(deferred, blocked_defer_user) {
	.cfg_flags = STALLCAP_CFG_DEFER_USER,
	.in_kernel = false,
};

/* Running in getrandom(): DEFER_USER completes the 4 KiB capture-time copy. */
FIXTURE_VARIANT_ADD(deferred, running_in_kernel_defer_user) {
	.cfg_flags = STALLCAP_CFG_DEFER_USER,
	.in_kernel = true,
};

FIXTURE_SETUP(deferred)
{
	struct sc_opts o = { .flags = variant->cfg_flags, .user_stack_bytes = USTACK };

	self->pipefd[0] = self->pipefd[1] = -1;
	self->no_task_work = sc_expect_no_task_work();
	if (self->no_task_work && (variant->cfg_flags & STALLCAP_CFG_DEFER_USER)) {
		/* a module without task_work_add() rejects DEFER_USER */
		ASSERT_EQ(-EINVAL, sc_session_setup(&self->s, &o));
		SKIP(return, "DEFER_USER rejected with EINVAL, as documented");
	}
	ASSERT_EQ(0, sc_session_setup(&self->s, &o));
	ASSERT_EQ(!self->no_task_work,
		  !!(self->s.info.features & STALLCAP_FEAT_DEFER_USER));
	ASSERT_EQ(USTACK, self->s.cfg.user_stack_bytes);
	ASSERT_EQ(variant->cfg_flags, self->s.cfg.flags);
	ASSERT_LE(self->s.info.min_deadline_ns, DEF_T);
	ASSERT_EQ(0, pipe(self->pipefd));
	self->have_ks = !sc_ksyms_load(&self->ks) &&
			(self->s.info.features & STALLCAP_FEAT_KADDR);
	ASSERT_EQ(0, sc_pin_self(0));
	self->other_cpu = sc_nr_cpus_allowed() > 1 ? 1 : -1;
}

FIXTURE_TEARDOWN(deferred)
{
	if (_metadata->exit_code && self->rs.n)
		sc_log_records(&self->ks, &self->rs);
	if (self->pipefd[0] >= 0) {
		close(self->pipefd[0]);
		close(self->pipefd[1]);
	}
	sc_ksyms_free(&self->ks);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/*
 * A USER_STACK record of the deep thread: taken in its own context on the
 * way back to user space, where the system call was made, with the whole
 * frame chain and a raw copy far deeper than user_stack_bytes.
 */
static void check_user_stack(struct __test_metadata *_metadata, FIXTURE_DATA(deferred) *self,
			     const struct stallcap_sample *u, const struct stallcap_sample *k)
{
	const __u64 *ip = sc_user_ips(u);
	uint64_t depths;
	int in_recurse = 0, at_main;
	char comm[16];

	sc_get_comm(comm);
	EXPECT_EQ(STALLCAP_PATH_DEFERRED, u->path);
	/* without task_work_add() read from outside, the thread still asleep */
	EXPECT_EQ(self->no_task_work ? k->state : STALLCAP_STATE_RUNNING, u->state);
	EXPECT_TRUE(u->flags & STALLCAP_SAMPLE_USER_MODE);
	EXPECT_FALSE(u->flags & (STALLCAP_SAMPLE_DEFER_PENDING | STALLCAP_SAMPLE_USTACK_REMOTE |
				 STALLCAP_SAMPLE_USTACK_FAULT | STALLCAP_SAMPLE_USTACK_TRUNC |
				 STALLCAP_SAMPLE_NO_USER));
	EXPECT_EQ(getpid(), (pid_t)u->pid);
	EXPECT_EQ(sc_gettid(), (pid_t)u->tid);
	EXPECT_EQ(0, strncmp(comm, u->comm, 16));
	EXPECT_EQ(k->stall_id, u->stall_id);
	EXPECT_EQ(k->user_tag, u->user_tag);
	EXPECT_EQ(k->deadline_ns, u->deadline_ns);
	EXPECT_EQ(k->timeout_ns, u->timeout_ns);
	EXPECT_EQ(k->clock, u->clock);
	EXPECT_EQ(0, sc_nk(u));
	/* the same kernel entry: the same user registers */
	EXPECT_EQ(sc_regs(k)->ip, sc_regs(u)->ip);
	EXPECT_EQ(sc_regs(k)->sp, sc_regs(u)->sp);
	EXPECT_EQ(sc_regs(k)->bp, sc_regs(u)->bp);
	EXPECT_LE(k->capture_ns, u->capture_ns);

	/*
	 * frames: raw_syscall6 (or deep_bottom itself, for an interrupt that
	 * came between two calls), deep_bottom, DEPTH x deep_recurse, ..., main
	 */
	ASSERT_LE(DEPTH + 3, sc_nu(u));
	EXPECT_TRUE(sc_ip_in_fn(ip[0], raw_syscall6) || sc_ip_in_fn(ip[0], deep_bottom))
		TH_LOG("frame 0 %#llx in %s", (unsigned long long)ip[0],
		       sc_usym_name(ip[0]) ?: "?");
	EXPECT_EQ(sc_ip_in_fn(ip[0], raw_syscall6) ? 1 : 0, sc_ustack_find(u, deep_bottom));
	for (unsigned int i = 1; i < sc_nu(u); i++)
		in_recurse += sc_ip_in_fn(ip[i] - 1, deep_recurse);
	EXPECT_EQ(DEPTH, in_recurse);
	at_main = sc_ustack_find(u, main);
	EXPECT_LT(DEPTH + 1, at_main) TH_LOG("main not reached: %u frames", sc_nu(u));

	/* the raw copy: from sp, far beyond the 4 KiB of the capture-time copy */
	EXPECT_EQ(sc_regs(u)->sp, sc_stack_start(u));
	EXPECT_LT(USTACK, sc_stack_size(u));
	EXPECT_GE(STALLCAP_MAX_USER_STACK, sc_stack_size(u));
	depths = depths_in_copy(u);
	EXPECT_TRUE(depths & 1) TH_LOG("innermost frame's locals not in the copy");
	EXPECT_LE(32, __builtin_popcountll(depths))
		TH_LOG("locals of only %d frames in %u bytes", __builtin_popcountll(depths),
		       sc_stack_size(u));
	TH_LOG("deferred record: %u user frames (main at %d), %u bytes of stack holding "
	       "%d of the %d frames", sc_nu(u), at_main, sc_stack_size(u),
	       __builtin_popcountll(depths), DEPTH);
}

/*
 * An NMI capture in flight when the thread's DISARM came is abandoned: no
 * registers, and no deferred user stack (DISARM's kernel entry is not the
 * sample's).
 */
static bool abandoned(struct __test_metadata *_metadata, const struct stallcap_sample *x)
{
	if (!(x->flags & STALLCAP_SAMPLE_ABANDONED))
		return false;
	EXPECT_FALSE(x->flags & STALLCAP_SAMPLE_DEFER_PENDING);
	EXPECT_EQ(0, x->cookie);
	EXPECT_EQ(0, sc_nk(x) + sc_nu(x));
	return true;
}

/*
 * Without task_work_add(): each asleep sample's user stack is read from
 * outside while the thread still sleeps, by a worker; samples taken while
 * that read is queued share its cookie.  Each cookie gets one USER_STACK
 * record, the same registers and stack as its sample, or, when the thread
 * was woken and ran before the worker read it, none, counted in
 * lost_deferred.  The first samples, long before the wake-up, have theirs.
 */
static void blocked_read_from_outside(struct __test_metadata *_metadata,
				      FIXTURE_DATA(deferred) *self,
				      const struct stallcap_sample **asleep,
				      size_t n)
{
	const struct stallcap_sample *u;
	struct stallcap_stats st;
	uint64_t cookies[SC_MAX_SAMPLES];
	size_t nr_cookies = 0, got = 0;

	for (size_t i = 0; i < n; i++) {
		size_t c;

		for (c = 0; c < nr_cookies && cookies[c] != asleep[i]->cookie; c++)
			;
		if (c < nr_cookies)
			continue;
		cookies[nr_cookies++] = asleep[i]->cookie;
		u = NULL;
		EXPECT_GE(1, sc4_user_stacks_of(&self->rs, asleep[i]->cookie, &u));
		if (!u)
			continue;
		got++;
		check_user_stack(_metadata, self, u, asleep[i]);
	}
	/* (a sample after the wake-up may have asked too) */
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_LE(got, st.deferred);
	EXPECT_LE(nr_cookies, got + st.lost_deferred)
		TH_LOG("%zu cookies, %zu records, %llu lost", nr_cookies, got,
		       (unsigned long long)st.lost_deferred);
	EXPECT_LE(1, got) TH_LOG("no asleep sample's user stack was read");
	EXPECT_EQ(st.deferred, sc_records_count(&self->rs, STALLCAP_REC_USER_STACK));
	sc4_check_counters(&self->s, &self->rs);
}

/*
 * Blocked 240 ms in read() of a pipe (12 deadlines) at the bottom of a
 * 64 KiB deep stack: every sample of the stall is a kernel sample read
 * remotely, asleep in pipe_read, all with DEFER_PENDING and one cookie;
 * when read() returns, exactly one USER_STACK record with that cookie.
 * (Without task_work_add(): blocked_read_from_outside().)
 */
static bool blocked_once(struct __test_metadata *_metadata, FIXTURE_DATA(deferred) *self)
{
	struct deep d = { .sc_fd = self->s.fd, .fd = self->pipefd[0] };
	struct waker wk = { .fd = self->pipefd[1], .cpu = self->other_cpu, .s = &self->s,
			    .samples = 3, .armed_at = &d.armed_at,
			    .after_arm = WAKE_AFTER_ARM };
	const struct stallcap_sample *smp[SC_MAX_SAMPLES], *k, *u = NULL;
	const struct stallcap_sample *asleep[SC_MAX_SAMPLES];
	const struct stallcap_stall_end *end;
	struct stallcap_stats st;
	size_t n, nr_asleep = 0;
	uint64_t started, other_cookie = 0;
	bool ordered;
	long ret;

	/*
	 * The waker writes 240 ms after the ARM and after 3 samples (before:
	 * 200 ms after this point, which on the debug kernel, where starting
	 * the waker thread can take tens of ms, put the write just before the
	 * 8T sample: sampled again on its way back to user space).
	 */
	started = sc_now_ns();
	ASSERT_EQ(0, pthread_create(&wk.thread, NULL, waker_fn, &wk));
	ret = deep_recurse(&d, DEPTH - 1);
	if (d.arm_ret)
		ASSERT_EQ(1, write(self->pipefd[1], "x", 1));	/* release the waker */
	pthread_join(wk.thread, NULL);
	ASSERT_EQ(0, d.arm_ret) TH_LOG("ARM: %s", strerror(d.arm_errno));
	TH_LOG("armed %llu us after the waker started, woken %llu us after the ARM",
	       (unsigned long long)(d.armed_at - started) / 1000,
	       (unsigned long long)(wk.wrote_at - d.armed_at) / 1000);
	ASSERT_EQ(1, ret);
	ASSERT_EQ(0, d.disarm_ret);
	ASSERT_FALSE(wk.timed_out) TH_LOG("fewer than %llu samples in %d ms",
					  (unsigned long long)wk.samples, SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_USER_STACK, 1,
				     SC_WAIT_MS));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);	/* nothing more */

	k = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, k);
	if (k->state != STALLCAP_STATE_SLEEPING || k->path != STALLCAP_PATH_BLOCKED) {
		/* a loaded host: still in ARM's return or read()'s entry */
		TH_LOG("first sample %llu us after the ARM, before the wait: state %u path %u",
		       (unsigned long long)(k->capture_ns - d.armed_at) / 1000, k->state,
		       k->path);
		return false;
	}
	n = sc4_samples_of(&self->rs, k->stall_id, smp, SC_MAX_SAMPLES, &ordered);
	EXPECT_TRUE(ordered);
	EXPECT_LE(3, n);
	ASSERT_GE(SC_MAX_SAMPLES, n);
	for (size_t i = 0; i < n; i++) {
		const struct stallcap_sample *x = smp[i];

		if (x->capture_ns > wk.wrote_at) {
			/*
			 * Woken, on its way out of the stall (a host that
			 * stopped the guest for the 4T between the write and
			 * the next sample): in read()'s return, where on a
			 * slow kernel (KASAN) the deferred 64 KiB copy runs
			 * long, pending like the others or read at once; in
			 * the few user instructions before DISARM; or in
			 * DISARM, a kernel entry of its own (its own cookie
			 * when pending).
			 */
			TH_LOG("sample %zu taken %llu ns after the write, state %u flags %#x", i,
			       (unsigned long long)(x->capture_ns - wk.wrote_at), x->state,
			       x->flags);
			if (abandoned(_metadata, x))
				continue;
			EXPECT_TRUE(sc_ip_in_fn(sc_regs(x)->ip, raw_syscall6) ||
				    sc_ip_in_fn(sc_regs(x)->ip, deep_bottom));
			/* (read from outside: a cookie per off-CPU period) */
			if ((x->flags & STALLCAP_SAMPLE_DEFER_PENDING) && x->cookie != k->cookie &&
			    x->cookie != other_cookie && !self->no_task_work) {
				EXPECT_EQ(0, other_cookie) TH_LOG("a third kernel entry");
				other_cookie = x->cookie;
			}
			continue;
		}
		/* asleep in read(): the kernel entry's user stack comes later */
		EXPECT_FALSE(x->flags & (STALLCAP_SAMPLE_USER_MODE | STALLCAP_SAMPLE_NO_USER));
		EXPECT_TRUE(x->flags & STALLCAP_SAMPLE_DEFER_PENDING)
			TH_LOG("sample %zu without DEFER_PENDING (flags %#x)", i, x->flags);
		EXPECT_NE(0, x->cookie);
		if (!self->no_task_work)
			EXPECT_EQ(k->cookie, x->cookie) TH_LOG("sample %zu: another cookie", i);
		asleep[nr_asleep] = x;
		EXPECT_TRUE(sc_ip_in_fn(sc_regs(x)->ip, raw_syscall6));
		EXPECT_GE(USTACK, sc_stack_size(x));
		nr_asleep++;
		EXPECT_EQ(STALLCAP_STATE_SLEEPING, x->state);
		EXPECT_EQ(STALLCAP_PATH_BLOCKED, x->path);
		if (self->have_ks) {
			EXPECT_TRUE(sc_kstack_has(&self->ks, x, pipe_fns));
		}
	}
	/* the waker wrote only after 3 samples: they were all asleep in read() */
	EXPECT_LE(3, nr_asleep);

	if (self->no_task_work) {
		blocked_read_from_outside(_metadata, self, asleep, nr_asleep);
		return true;
	}
	/* exactly one deferred record with the samples' cookie (and DISARM's) */
	EXPECT_EQ(1 + !!other_cookie, sc_records_count(&self->rs, STALLCAP_REC_USER_STACK));
	EXPECT_EQ(1, sc4_user_stacks_of(&self->rs, k->cookie, &u));
	ASSERT_NE(NULL, u);
	EXPECT_LE(wk.wrote_at, u->capture_ns);
	check_user_stack(_metadata, self, u, k);

	end = sc_stall_end_of(&self->rs, k->stall_id);
	ASSERT_NE(NULL, end);
	EXPECT_EQ(n, end->nr_samples);

	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_EQ(1 + !!other_cookie, st.deferred);
	sc4_check_counters(&self->s, &self->rs);
	return true;
}

/*
 * The blocked run, again in a new session when its deadline passed before
 * the thread was asleep in read() (20 ms between ARM and the wait: the
 * debug kernel on a loaded host has taken longer).
 */
static void run_blocked(struct __test_metadata *_metadata, FIXTURE_DATA(deferred) *self,
			const FIXTURE_VARIANT(deferred) *variant)
{
	const struct sc_opts o = { .flags = variant->cfg_flags, .user_stack_bytes = USTACK };

	for (int attempt = 1; !blocked_once(_metadata, self); attempt++) {
		ASSERT_GT(SC_ATTEMPTS, attempt) TH_LOG("never asleep in read() at the deadline");
		sc_records_free(&self->rs);
		sc_session_close(&self->s);
		ASSERT_EQ(0, sc_session_setup(&self->s, &o));
	}
}

/* @cookie added to the set cookies[*n] (room for SC_MAX_SAMPLES) */
static void add_cookie(uint64_t *cookies, size_t *n, uint64_t cookie)
{
	for (size_t c = 0; c < *n; c++)
		if (cookies[c] == cookie)
			return;
	if (*n < SC_MAX_SAMPLES)
		cookies[(*n)++] = cookie;
}

/*
 * Bytes one getrandom() call takes about @ns to fill (4 KiB to 1 MiB): the
 * samples (T, 2T, 4T, ... after the ARM) then fall in different calls, so
 * there are several kernel entries to read user stacks for.  A fixed 1 MiB
 * took the whole stall in one call on a debug kernel (CI, stop 56).
 */
static size_t getrandom_len_for(struct __test_metadata *_metadata, uint64_t ns)
{
	const size_t probe = 64 << 10, min = 4 << 10, max = 1 << 20;
	uint64_t took = ~0ULL;
	size_t len;
	void *buf = malloc(probe);

	if (!buf)
		return min;
	for (int i = 0; i < 3; i++) {	/* the fastest of three */
		uint64_t t0 = sc_now_ns();

		if (syscall(SYS_getrandom, buf, probe, GRND_INSECURE) != (long)probe)
			break;
		t0 = sc_now_ns() - t0;
		took = t0 < took ? t0 : took;
	}
	free(buf);
	len = took == ~0ULL ? min : (size_t)((double)probe * ns / (took ? took : 1));
	len = len < min ? min : len > max ? max : len & ~(size_t)4095;
	TH_LOG("getrandom(): %zu bytes per call (%llu us for %zu)", len,
	       (unsigned long long)(took == ~0ULL ? 0 : took / 1000), probe);
	return len;
}

/*
 * Running in getrandom() calls made at the bottom of the deep stack, with
 * DEFER_USER: every kernel-mode sample carries DEFER_PENDING and the cookie
 * of its kernel entry; each cookie gets exactly one USER_STACK record,
 * written when that getrandom() returns, reaching main.
 */
static void run_in_kernel(struct __test_metadata *_metadata, FIXTURE_DATA(deferred) *self)
{
	struct sc_stopper stop = { .cpu = self->other_cpu, .delay_ms = BLOCK_MS };
	struct deep d = { .sc_fd = self->s.fd, .in_kernel = true };
	const struct stallcap_sample *k = NULL;
	uint64_t cookies[SC_MAX_SAMPLES];
	size_t nr_cookies = 0, nr_kernel = 0, nr_named = 0, nr_user_deferred = 0;
	uint64_t allocs = sc_debugfs_counter("defer_buf_allocs");
	struct stallcap_stats st;
	long ret;

	d.buf_len = getrandom_len_for(_metadata, DEF_T / 4);
	d.buf = malloc(d.buf_len);
	ASSERT_NE(NULL, d.buf);
	memset(d.buf, 0, d.buf_len);
	ASSERT_EQ(0, sc_stopper_start(&stop, self->s.fd, 3, SC_WAIT_MS));
	d.stop = &stop.stop;
	ret = deep_recurse(&d, DEPTH - 1);
	if (d.arm_ret)
		stop.stop = 1;
	sc_stopper_join(&stop);
	free(d.buf);
	ASSERT_EQ(0, d.arm_ret) TH_LOG("ARM: %s", strerror(d.arm_errno));
	ASSERT_EQ(1, ret);
	ASSERT_EQ(0, d.disarm_ret);
	ASSERT_FALSE(stop.timed_out) TH_LOG("fewer than 3 samples in %d ms", SC_WAIT_MS);
	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	sc_ring_collect(&self->s, &self->rs, 0, 0, SC_QUIET_MS);
	TH_LOG("%ld getrandom() calls", d.calls);

	for (size_t i = 0; i < self->rs.n; i++) {
		const struct stallcap_sample *x = (const void *)self->rs.rec[i];
		const struct stallcap_sample *u = NULL;

		if (x->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		if (abandoned(_metadata, x))
			continue;
		if (x->flags & STALLCAP_SAMPLE_USER_MODE) {
			/*
			 * Between two calls.  Complete, nothing deferred; or
			 * read on the interrupt's return to user space, a
			 * USER_STACK record of its own: taken by the thread's
			 * own timer on its CPU (CI18 saw one on 5.10), or by
			 * an NMI/IPI whose irq_work found the thread as the
			 * handler left it (CI56 on 5.10: the buddy checker
			 * took a late timer over; capture_tail.c).
			 */
			if (!(x->flags & STALLCAP_SAMPLE_DEFER_PENDING)) {
				EXPECT_EQ(0, x->cookie);
				continue;
			}
			EXPECT_TRUE(x->path == STALLCAP_PATH_LOCAL ||
				    x->path == STALLCAP_PATH_NMI ||
				    x->path == STALLCAP_PATH_IPI)
				TH_LOG("path %u", x->path);
			EXPECT_NE(0, x->cookie);
			EXPECT_EQ(1, sc4_user_stacks_of(&self->rs, x->cookie, &u))
				TH_LOG("cookie %llu", (unsigned long long)x->cookie);
			add_cookie(cookies, &nr_cookies, x->cookie);
			nr_user_deferred++;
			continue;
		}
		nr_kernel++;
		EXPECT_TRUE(x->flags & STALLCAP_SAMPLE_DEFER_PENDING)
			TH_LOG("kernel-mode sample %u without DEFER_PENDING", x->sample_index);
		EXPECT_NE(0, x->cookie);
		/* in getrandom(), or in an interrupt that came between two calls */
		EXPECT_TRUE(sc_ip_in_fn(sc_regs(x)->ip, raw_syscall6) ||
			    sc_ip_in_fn(sc_regs(x)->ip, deep_bottom));
		if (x->path != STALLCAP_PATH_BLOCKED) {
			/* read at capture, as configured: 4 KiB only */
			EXPECT_EQ(STALLCAP_STATE_RUNNING, x->state);
			EXPECT_GE(USTACK, sc_stack_size(x));
		}
		if (self->have_ks)
			nr_named += sc_kstack_has(&self->ks, x, getrandom_fns);
		EXPECT_EQ(1, sc4_user_stacks_of(&self->rs, x->cookie, &u))
			TH_LOG("cookie %llu", (unsigned long long)x->cookie);
		if (u && !k) {
			check_user_stack(_metadata, self, u, x);
			k = x;
		} else if (u) {
			/* the record of this sample's kernel entry: its registers */
			EXPECT_EQ(sc_regs(x)->ip, sc_regs(u)->ip);
			EXPECT_EQ(sc_regs(x)->sp, sc_regs(u)->sp);
			EXPECT_EQ(sc_regs(x)->bp, sc_regs(u)->bp);
			/*
			 * Taken while the thread wrote that record on its way
			 * out (after the record's stamp, before the request is
			 * done): the same kernel entry, so the same cookie.
			 */
			if (x->capture_ns > u->capture_ns)
				TH_LOG("sample %u taken %llu us after its deferred record",
				       x->sample_index,
				       (unsigned long long)(x->capture_ns - u->capture_ns) / 1000);
			EXPECT_EQ(x->stall_id, u->stall_id);
		}
		add_cookie(cookies, &nr_cookies, x->cookie);
	}
	ASSERT_LE(1, nr_kernel) TH_LOG("no sample in the kernel");
	if (self->have_ks) {
		EXPECT_LE(1, nr_named) TH_LOG("no kernel sample in getrandom");
	}
	/* every deferred record answers a sample; one per kernel entry (or
	 * user-mode interruption) */
	EXPECT_EQ(nr_cookies, sc_records_count(&self->rs, STALLCAP_REC_USER_STACK));
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, 0));
	EXPECT_EQ(nr_cookies, st.deferred);
	TH_LOG("%zu kernel-mode samples, %zu kernel entries or interruptions", nr_kernel,
	       nr_cookies);
	/*
	 * One scratch buffer for all of them: the session keeps it from one
	 * read to the next (one thread: never two reads at once).  A read for
	 * a user-mode sample takes a buffer only as big as that sample's copy:
	 * when one came first, the first kernel entry's read needs a bigger
	 * one, once (CI97, 7.2-rt).
	 */
	if (allocs != ~0ULL) {
		uint64_t nr_allocs = sc_debugfs_counter("defer_buf_allocs") - allocs;

		ASSERT_LE(2, st.deferred) TH_LOG("one read only: nothing to reuse");
		EXPECT_LE(1, nr_allocs);
		EXPECT_GE(nr_user_deferred ? 2 : 1, nr_allocs)
			TH_LOG("%zu reads for user-mode samples", nr_user_deferred);
	}
	sc4_check_counters(&self->s, &self->rs);
}

TEST_F(deferred, stalled_in_syscall_gets_one_user_stack_per_kernel_entry)
{
	if (variant->in_kernel)
		run_in_kernel(_metadata, self);
	else
		run_blocked(_metadata, self, variant);
}

/*
 * Without task_work_add() a blocked thread's user stack is read from
 * outside, by a worker, while the thread is off CPU.  Here the worker is
 * held (unbound workqueues on CPU 0 behind a SCHED_FIFO thread) until the
 * thread, asleep in read() at its deadline, was woken, ran on and went to
 * sleep again in another read(): off CPU, but its registers and stack are
 * no longer the sample's, so no USER_STACK record comes for that cookie and
 * the loss is counted (lost_deferred).
 */
struct reader {
	int sc_fd, fd, park_fd, ret;
	volatile int disarmed;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	volatile char buf[512];
	char c;

	if (sc_pin_self(1) || sc_arm(r->sc_fd, DEF_T, 0, TAG)) {
		r->ret = -1;
		return NULL;
	}
	if (read(r->fd, &c, 1) != 1)
		r->ret = -1;
	/* on, with another stack: the sample's registers are gone */
	memset((void *)buf, 0x5a, sizeof(buf));
	if (sc_disarm(r->sc_fd) || buf[0] != 0x5a)
		r->ret = -1;
	__atomic_store_n(&r->disarmed, 1, __ATOMIC_RELEASE);
	if (read(r->park_fd, &c, 1) != 1)	/* off CPU again, elsewhere */
		r->ret = -1;
	return NULL;
}

/* The sample's read was queued; the thread woke, ran and sleeps again. */
static int reader_ran_on(struct sc_session *s, struct reader *r, int wake_fd)
{
	for (int i = 0; i < 1000 && SC_STAT(s->fd, samples) < 1; i++)
		sc_sleep_ms(2);
	if (write(wake_fd, "x", 1) != 1)
		return -1;
	for (int i = 0; i < 1000 && !__atomic_load_n(&r->disarmed, __ATOMIC_ACQUIRE); i++)
		sc_sleep_ms(2);
	sc_sleep_ms(20);	/* into the second read() */
	return r->disarmed ? 0 : -1;
}

TEST(woken_before_the_read_from_outside_loses_the_record)
{
	const struct stallcap_sample *k = NULL, *u = NULL;
	struct sc_opts o = { .user_stack_bytes = USTACK };
	struct sc_records rs = {};
	struct stallcap_stats st;
	struct reader r = {};
	struct sc_session s;
	int fds[2], park[2], ran;
	const char *why;
	pthread_t th;

	if (!sc_expect_no_task_work())
		SKIP(return, "user stacks are read on the way back to user space");
	if (geteuid())
		SKIP(return, "needs root (the workqueues' CPU mask)");
	ASSERT_EQ(0, sc_session_setup(&s, &o));
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, pipe(park));
	ASSERT_EQ(0, sc_pin_self(1));
	why = sc4_workers_hold();
	if (why)
		SKIP(return, "%s", why);
	r = (struct reader){ .sc_fd = s.fd, .fd = fds[0], .park_fd = park[0] };
	ran = pthread_create(&th, NULL, reader_fn, &r) ? -1 : reader_ran_on(&s, &r, fds[1]);
	sc4_workers_release();	/* the worker reads now */
	ASSERT_EQ(0, ran);
	ASSERT_EQ(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	for (int i = 0; i < 500 && SC_STAT(s.fd, deferred) + SC_STAT(s.fd, lost_deferred) < 1; i++)
		sc_sleep_ms(2);
	sc_ring_collect(&s, &rs, 0, 0, SC_QUIET_MS);
	EXPECT_EQ(1, write(park[1], "x", 1));
	pthread_join(th, NULL);
	EXPECT_EQ(0, r.ret);
	for (size_t i = 0; !k && i < rs.n; i++)
		if (rs.rec[i]->type == STALLCAP_REC_SAMPLE)
			k = (const void *)rs.rec[i];
	ASSERT_NE(NULL, k);
	if (k->path != STALLCAP_PATH_BLOCKED || !(k->flags & STALLCAP_SAMPLE_DEFER_PENDING)) {
		sc_log_records(NULL, &rs);
		SKIP(goto out, "the first sample did not find the thread asleep");
	}
	EXPECT_EQ(0, sc4_user_stacks_of(&rs, k->cookie, &u))
		TH_LOG("a user stack read after the thread ran on");
	ASSERT_EQ(0, sc_get_stats(s.fd, &st, 0));
	EXPECT_EQ(1, st.lost_deferred);
	EXPECT_EQ(0, st.deferred);
	EXPECT_EQ(st.lost_deferred, st.lost) TH_LOG("another loss than the read's");
	EXPECT_EQ(1, st.stalls);
out:
	sc_records_free(&rs);
	sc_session_close(&s);
	close(fds[0]);
	close(fds[1]);
	close(park[0]);
	close(park[1]);
}

TEST_HARNESS_MAIN
