// SPDX-License-Identifier: GPL-2.0
/*
 * A session's ring and beat slots are locked memory, charged as perf charges
 * its buffers: first to the caller's user's allowance (module parameter
 * mlock_kb per online CPU, perf's perf_event_mlock_kb), shared by all the
 * user's processes, and what does not fit there to the caller's pinned_vm
 * against RLIMIT_MEMLOCK (CAP_IPC_LOCK exempt); EPERM beyond both.
 *
 *  - with RLIMIT_MEMLOCK at 64 KiB (Linux 5.10's default) an unprivileged
 *    default session works: mmap and ARM succeed, the session's stats say
 *    locked_bytes = its memory and locked_rlimit_bytes = 0, VmPin does not
 *    move, GET_INFO's mlock_used_bytes grows by it and mlock_bytes is
 *    mlock_kb times the online CPUs;
 *  - the allowance is per user: another process of the same user fills what
 *    is left of it, and then its next default session is refused with EPERM
 *    (ARM and mmap); the refusal changes nothing (no watch, no ring, no
 *    charge: stats, mlock_used_bytes and VmPin as before);
 *  - beyond the allowance the memory goes to RLIMIT_MEMLOCK: with the limit
 *    raised by one session's memory it fits (locked_rlimit_bytes and VmPin
 *    grow by exactly it), and the next session, over what is left of the
 *    limit, gets EPERM and changes nothing;
 *  - closing gives it all back (the other process's exit, a close);
 *  - with mlock_kb = 0 only RLIMIT_MEMLOCK counts, as before the allowance:
 *    the default ring over the limit is refused, two small sessions fit,
 *    the third does not until one is closed;
 *  - root (CAP_IPC_LOCK) is not held to RLIMIT_MEMLOCK.
 *
 * Without root the test skips.
 */
#include <sys/resource.h>

#include "torture_util.h"

#include "sc_harness.h"

#define CHK		TU_CHK
#define LOW_MEMLOCK	(64 * 1024ULL)		/* 5.10's default */
#define ARM_TIMEOUT	SC_MS(60000)

/* /proc/self/status VmPin (the address space's pinned_vm), in bytes */
static long long vm_pin_bytes(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static int set_memlock(uint64_t cur)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return -errno;
	rl.rlim_cur = cur;
	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

/* The memory one session charges: control page, ring, slots. */
static uint64_t session_bytes(const struct sc_session *s)
{
	uint64_t slots = (uint64_t)s->cfg.slots * sizeof(struct stallcap_slot);

	return s->page + s->cfg.ring_bytes + (slots + s->page - 1) / s->page * s->page;
}

/* A session with @ring_bytes (0: default), not yet mapped: 0 or -errno. */
static int open_session(struct sc_session *s, uint32_t ring_bytes)
{
	struct sc_opts o = { .ring_bytes = ring_bytes, .no_map = true };

	if (ring_bytes)
		o.user_stack_bytes = 8;
	return sc_session_setup(s, &o);
}

/* Create the ring: ARM (and, if @map, mmap first); 0 or -errno. */
static int make_ring(struct sc_session *s, bool map)
{
	int ret;

	if (map) {
		ret = sc_map(s);
		if (ret)
			return ret;
	}
	return sc_arm(s->fd, ARM_TIMEOUT, 0, 1) ? -errno : 0;
}

static uint64_t used_bytes(int fd)
{
	struct stallcap_info in;

	return sc_get_info(fd, &in) ? ~0ULL : in.mlock_used_bytes;
}

/*
 * A session over what the user may still lock: ARM and mmap both get
 * EPERM, and nothing changes: no watch, no charge, nor the user's use of
 * its allowance, nor the process's VmPin.
 */
static int refused_changes_nothing(struct sc_session *s)
{
	uint64_t used = used_bytes(s->fd);
	long long pin = vm_pin_bytes();
	void *p;

	CHK(sc_arm(s->fd, ARM_TIMEOUT, 0, 1) == -1 && errno == EPERM,
	    "ARM over the allowance and RLIMIT_MEMLOCK: %s", strerror(errno));
	p = mmap(NULL, s->page, PROT_READ, MAP_SHARED, s->fd, STALLCAP_MMAP_RING);
	CHK(p == MAP_FAILED && errno == EPERM, "mmap over the allowance and RLIMIT_MEMLOCK: %s",
	    p == MAP_FAILED ? strerror(errno) : "mapped");
	CHK(SC_STAT(s->fd, watches) == 0, "the refused ARM left a watch");
	CHK(SC_STAT(s->fd, locked_bytes) == 0 && SC_STAT(s->fd, locked_rlimit_bytes) == 0,
	    "the refused session is charged %llu bytes",
	    (unsigned long long)SC_STAT(s->fd, locked_bytes));
	CHK(used_bytes(s->fd) == used, "the refusal moved mlock_used_bytes: %llu, was %llu",
	    (unsigned long long)used_bytes(s->fd), (unsigned long long)used);
	CHK(vm_pin_bytes() == pin, "the refusal moved VmPin: %lld, was %lld", vm_pin_bytes(), pin);
	return 0;
}

struct allowance {
	uint64_t mlock_kb;
	uint64_t one;		/* a default session's memory */
	uint64_t small;		/* a smallest session's memory */
	uint64_t allowance;	/* GET_INFO's mlock_bytes */
	int ready[2];		/* the first process lets the second go */
};

/*
 * The second process of the user: fill what is left of the allowance with
 * default sessions, be refused, then go over RLIMIT_MEMLOCK.
 */
static int second_process(struct allowance *a)
{
	unsigned int k = a->allowance / a->one, i;
	uint64_t rest = a->allowance - (uint64_t)k * a->one;
	struct sc_session s[65], extra;
	long long pin = vm_pin_bytes();
	char c;

	CHK(read(a->ready[0], &c, 1) == 1, "first process");
	CHK(set_memlock(LOW_MEMLOCK) == 0, "RLIMIT_MEMLOCK %llu", LOW_MEMLOCK);
	CHK(k >= 1 && k < 64, "allowance %llu for sessions of %llu",
	    (unsigned long long)a->allowance, (unsigned long long)a->one);
	/* the first process holds one; k - 1 more fit in the allowance */
	for (i = 0; i + 1 < k; i++) {
		CHK(!open_session(&s[i], 0), "open %u", i);
		CHK(!make_ring(&s[i], i % 2), "default session %u of the allowance: %s", i,
		    strerror(errno));
		CHK(SC_STAT(s[i].fd, locked_rlimit_bytes) == 0,
		    "session %u of the allowance charged to RLIMIT_MEMLOCK", i);
	}
	CHK(!open_session(&extra, 0), "open");
	CHK(used_bytes(extra.fd) == (uint64_t)k * a->one, "mlock_used_bytes %llu for %u sessions",
	    (unsigned long long)used_bytes(extra.fd), k);
	CHK(vm_pin_bytes() == pin, "sessions of the allowance moved VmPin");

	/* over both: this user's allowance is used by two processes */
	CHK(a->one - rest > LOW_MEMLOCK, "mlock_kb %llu leaves room for another session",
	    (unsigned long long)a->mlock_kb);
	if (refused_changes_nothing(&extra))
		return __LINE__;

	/* RLIMIT_MEMLOCK raised by what the allowance lacks: it fits */
	CHK(set_memlock(a->one - rest + LOW_MEMLOCK) == 0, "raise RLIMIT_MEMLOCK");
	CHK(!make_ring(&extra, false), "beyond the allowance, within RLIMIT_MEMLOCK: %s",
	    strerror(errno));
	CHK(SC_STAT(extra.fd, locked_bytes) == a->one &&
	    SC_STAT(extra.fd, locked_rlimit_bytes) == a->one - rest,
	    "charged %llu, %llu of it to RLIMIT_MEMLOCK; expected %llu, %llu",
	    (unsigned long long)SC_STAT(extra.fd, locked_bytes),
	    (unsigned long long)SC_STAT(extra.fd, locked_rlimit_bytes),
	    (unsigned long long)a->one, (unsigned long long)(a->one - rest));
	CHK(vm_pin_bytes() == pin + (long long)(a->one - rest), "VmPin %lld, expected %lld",
	    vm_pin_bytes(), pin + (long long)(a->one - rest));
	CHK(used_bytes(extra.fd) == a->allowance, "mlock_used_bytes %llu, allowance %llu",
	    (unsigned long long)used_bytes(extra.fd), (unsigned long long)a->allowance);

	/* what is left of RLIMIT_MEMLOCK (64 KiB) is below the smallest session */
	CHK(a->small > LOW_MEMLOCK, "a smallest session fits in 64 KiB");
	CHK(!open_session(&s[k], sc_min_ring_bytes(8)), "open small");
	if (refused_changes_nothing(&s[k]))
		return __LINE__;
	sc_session_close(&s[k]);
	sc_session_close(&extra);
	CHK(vm_pin_bytes() == pin, "close did not give back VmPin: %lld, was %lld",
	    vm_pin_bytes(), pin);
	/* the rest goes with this process's exit */
	return 0;
}

/* The first process of the user, RLIMIT_MEMLOCK at 64 KiB. */
static int user_with_low_memlock(void *arg)
{
	struct allowance *a = arg;
	struct sc_session s, again;
	long long pin;
	int status;
	pid_t pid;

	CHK(set_memlock(LOW_MEMLOCK) == 0, "RLIMIT_MEMLOCK 64 KiB: %s", strerror(errno));
	pin = vm_pin_bytes();
	CHK(pin >= 0, "no VmPin in /proc/self/status");
	CHK(!open_session(&s, 0), "open: %s", strerror(errno));
	CHK(s.info.mlock_bytes == a->allowance, "GET_INFO mlock_bytes %llu, expected %llu",
	    (unsigned long long)s.info.mlock_bytes, (unsigned long long)a->allowance);
	CHK(s.info.mlock_used_bytes == 0, "the user has %llu bytes charged already",
	    (unsigned long long)s.info.mlock_used_bytes);
	a->one = session_bytes(&s);
	CHK(!make_ring(&s, true), "a default session under a 64 KiB RLIMIT_MEMLOCK: %s",
	    strerror(errno));
	CHK(SC_STAT(s.fd, locked_bytes) == a->one && SC_STAT(s.fd, locked_rlimit_bytes) == 0,
	    "charged %llu, %llu to RLIMIT_MEMLOCK; expected %llu, 0",
	    (unsigned long long)SC_STAT(s.fd, locked_bytes),
	    (unsigned long long)SC_STAT(s.fd, locked_rlimit_bytes), (unsigned long long)a->one);
	CHK(used_bytes(s.fd) == a->one, "mlock_used_bytes %llu", (unsigned long long)used_bytes(s.fd));
	CHK(vm_pin_bytes() == pin, "VmPin moved: %lld", vm_pin_bytes());
	/* a stall is caught in it: the session works */
	CHK(!sc_arm(s.fd, SC_MS(5), 0, 2), "ARM 5 ms: %s", strerror(errno));
	for (int ms = 0; ms < SC_WAIT_MS && SC_STAT(s.fd, stalls) != 1; ms += 10)
		usleep(10000);
	CHK(SC_STAT(s.fd, stalls) == 1, "stalls %llu", (unsigned long long)SC_STAT(s.fd, stalls));
	CHK(!sc_release(s.fd), "RELEASE");

	/* another process of the same user: the allowance is shared */
	pid = fork();
	CHK(pid >= 0, "fork");
	if (!pid)
		_exit(second_process(a) ? 1 : 0);
	CHK(write(a->ready[1], "x", 1) == 1, "second process");
	CHK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	    "the second process failed (status %#x)", status);
	CHK(used_bytes(s.fd) == a->one, "the second process's exit left mlock_used_bytes %llu",
	    (unsigned long long)used_bytes(s.fd));

	/* closing gives the allowance back */
	sc_session_close(&s);
	CHK(!open_session(&again, 0), "open again");
	CHK(again.info.mlock_used_bytes == 0, "close left mlock_used_bytes %llu",
	    (unsigned long long)again.info.mlock_used_bytes);
	CHK(!make_ring(&again, true), "a default session after close: %s", strerror(errno));
	CHK(SC_STAT(again.fd, locked_rlimit_bytes) == 0, "charged to RLIMIT_MEMLOCK after close");
	sc_session_close(&again);
	CHK(vm_pin_bytes() == pin, "VmPin %lld at the end, was %lld", vm_pin_bytes(), pin);
	return 0;
}

/* mlock_kb = 0: RLIMIT_MEMLOCK alone, as before the allowance */
static int user_over_memlock(void *arg)
{
	uint32_t ring = sc_min_ring_bytes(8);
	/* ring + control page + 64 beat slots: one session's charge */
	uint64_t one = ring + 2 * sysconf(_SC_PAGESIZE);
	struct sc_session s[4];
	int i;

	CHK(set_memlock(3 * one - one / 2) == 0, "setrlimit: %s", strerror(errno));

	/* the 1 MiB default ring is over the limit */
	CHK(!open_session(&s[0], 0), "open");
	CHK(s[0].info.mlock_bytes == 0, "mlock_bytes %llu with mlock_kb=0",
	    (unsigned long long)s[0].info.mlock_bytes);
	if (refused_changes_nothing(&s[0]))
		return __LINE__;
	sc_session_close(&s[0]);

	/* small rings: two fit, the third does not, until one is closed */
	for (i = 0; i < 2; i++) {
		CHK(!open_session(&s[i], ring), "open %d", i);
		CHK(!make_ring(&s[i], false), "ARM in small session %d: %s", i, strerror(errno));
		CHK(SC_STAT(s[i].fd, locked_rlimit_bytes) == one, "small session %d charged %llu",
		    i, (unsigned long long)SC_STAT(s[i].fd, locked_rlimit_bytes));
	}
	CHK(!open_session(&s[2], ring), "open 2");
	if (refused_changes_nothing(&s[2]))
		return __LINE__;
	sc_session_close(&s[2]);
	sc_session_close(&s[0]);
	CHK(!open_session(&s[3], ring), "open 3");
	CHK(!make_ring(&s[3], false), "ARM after a session's memory was given back: %s",
	    strerror(errno));
	sc_session_close(&s[1]);
	sc_session_close(&s[3]);
	return 0;
}

FIXTURE(memlock) {
	long long mlock_kb;		/* to restore */
	struct rlimit saved;
	struct allowance *a;
};

FIXTURE_SETUP(memlock)
{
	struct rlimit big = { .rlim_cur = 64 << 20, .rlim_max = 64 << 20 };

	if (geteuid() != 0)
		SKIP(return, "needs root to become another user");
	if (access(STALLCAP_DEVICE, R_OK | W_OK))
		SKIP(return, "no %s", STALLCAP_DEVICE);
	self->mlock_kb = tu_param_read("mlock_kb");
	ASSERT_LE(0, self->mlock_kb) TH_LOG("no mlock_kb parameter");
	/* the user's hard limit: room to raise its soft limit */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &self->saved));
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &big));
	self->a = mmap(NULL, sizeof(*self->a), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->a);
	memset(self->a, 0, sizeof(*self->a));
	ASSERT_EQ(0, pipe(self->a->ready));
}

FIXTURE_TEARDOWN(memlock)
{
	if (self->mlock_kb >= 0)
		tu_param_write("mlock_kb", self->mlock_kb);
	setrlimit(RLIMIT_MEMLOCK, &self->saved);
}

TEST_F(memlock, default_session_works_under_a_64k_rlimit_and_the_allowance_is_per_user)
{
	struct allowance *a = self->a;
	long page = sysconf(_SC_PAGESIZE);

	a->mlock_kb = self->mlock_kb;
	/* as the module counts it: whole pages per CPU */
	a->allowance = (uint64_t)(a->mlock_kb * 1024 / page) * page *
		       sysconf(_SC_NPROCESSORS_ONLN);
	a->small = sc_min_ring_bytes(8) + 2 * page;
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_with_low_memlock, a));
}

TEST_F(memlock, without_the_allowance_rlimit_memlock_alone_counts)
{
	ASSERT_EQ(0, tu_param_write("mlock_kb", 0));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_over_memlock, NULL));
}

TEST_F(memlock, cap_ipc_lock_is_not_held_to_rlimit_memlock)
{
	struct sc_session s;
	uint64_t one;

	ASSERT_EQ(0, tu_param_write("mlock_kb", 0));
	ASSERT_EQ(0, set_memlock(0));
	ASSERT_EQ(0, open_session(&s, 0));
	one = session_bytes(&s);
	ASSERT_EQ(0, make_ring(&s, true)) TH_LOG("root's default session: %s", strerror(errno));
	EXPECT_EQ(one, SC_STAT(s.fd, locked_bytes));
	EXPECT_EQ(one, SC_STAT(s.fd, locked_rlimit_bytes));
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
