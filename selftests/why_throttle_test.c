// SPDX-License-Identifier: GPL-2.0
/*
 * Why it stalled: a thread held off the CPU by its cgroup's CPU quota (CPU
 * bandwidth control, cgroup v2 cpu.max) is runnable, and its sample says
 * it was throttled (STALLCAP_SAMPLE_THROTTLED), not merely preempted: what
 * runs on its CPU meanwhile (here: nothing, idle) is no cause.
 *
 * The test process moves itself into a cgroup of its own under the
 * cgroup2 root (mounted at /sys/fs/cgroup if it is not mounted), with the
 * cpu controller enabled, and spins on CPU 1 under a watch:
 *  - quota on its own group (5 ms per 100 ms: throttled about 95% of the
 *    time), where the throttled group's entity is off its parent's queue;
 *  - quota on the parent of its group, the thread one level below: the
 *    module must look past the first group above the thread;
 *  - a lock owner alone in a threaded child group with the quota, held
 *    off while the watched thread (no quota) waits for its mutex: the
 *    owner's section is marked, the waiter's samples never;
 *  - no quota, the thread preempted by a thread of its group at nice -20:
 *    runnable, never throttled;
 *  - memory.high far below what the thread touches: the kernel makes it
 *    sleep on its way back to user space, a memory stall
 *    (STALLCAP_SAMPLE_MEMSTALL); a plain sleep is none.
 * Each sample is checked on its own: a throttled one is runnable, waited
 * for a CPU (the scheduler counts a throttled wait as run delay) and never
 * slept; the scenario's sample times (30, 60,
 * 90 and 150 ms after the arm) make at least one throttled sample nearly
 * certain, and the scenario is run up to 3 times for one.  The cgroup's own
 * cpu.stat must show the throttling.
 */
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "sc_harness.h"
#include "stall_util.h"
#include "why_util.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define TIMEOUT_MS	30
#define SPIN_MS		400
#define QUOTA_US	5000
#define PERIOD_US	100000
#define ATTEMPTS	3
#define MAX_SAMPLES	16

FIXTURE(throttle)
{
	struct why_session s;
	char top[96], inner[128];
	uint64_t buf[MAX_SAMPLES][16384 / 8];
	struct stallcap_sample *smp[MAX_SAMPLES];
	unsigned int nr;
};

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return sc4_write_file(path, val);
}

static bool cgroup2_mounted(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char dev[64], dir[256], type[64];
	bool found = false;

	if (!f)
		return false;
	while (fscanf(f, "%63s %255s %63s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(dir, CG_ROOT) && !strcmp(type, "cgroup2"))
			found = true;
	fclose(f);
	return found;
}

/* nr_throttled of a group's cpu.stat, or -1 */
static long long nr_throttled(const char *dir)
{
	char path[256], key[64];
	long long v, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, "nr_throttled"))
			found = v;
	fclose(f);
	return found;
}

FIXTURE_SETUP(throttle)
{
	char path[160];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
	if (!cgroup2_mounted())
		ASSERT_EQ(0, mount("none", CG_ROOT, "cgroup2", 0, NULL));
	/* the cpu controller for the root's children (kept once enabled) */
	ASSERT_EQ(0, write_file(CG_ROOT, "cgroup.subtree_control", "+cpu"));
	snprintf(self->top, sizeof(self->top), CG_ROOT "/stallcap-throttle-%d",
		 getpid());
	snprintf(self->inner, sizeof(self->inner), "%s/inner", self->top);
	ASSERT_EQ(0, mkdir(self->top, 0755));
	snprintf(path, sizeof(path), "%s/cpu.max", self->top);
	if (access(path, F_OK)) {
		rmdir(self->top);
		SKIP(return, "no CPU bandwidth control (CONFIG_CFS_BANDWIDTH)");
	}
	ASSERT_EQ(0, write_file(self->top, "cgroup.subtree_control", "+cpu"));
	ASSERT_EQ(0, mkdir(self->inner, 0755));
	ASSERT_EQ(0, why_pin(1));
	ASSERT_EQ(0, why_open(&self->s));
}

FIXTURE_TEARDOWN(throttle)
{
	why_close(&self->s);
	write_file(CG_ROOT, "cgroup.procs", "0");
	rmdir(self->inner);
	rmdir(self->top);
}

/* Every sample of this thread in the ring, copied (self->smp, self->nr). */
static void collect(FIXTURE_DATA(throttle) *self)
{
	struct why_session *s = &self->s;
	uint64_t head = __atomic_load_n(&s->ctl->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = s->ctl->data_tail;
	pid_t tid = why_gettid();

	self->nr = 0;
	while (tail < head) {
		struct stallcap_rec_header *h =
			(void *)(s->data + (tail & (s->size - 1)));
		struct stallcap_sample *smp = (void *)h;

		if (__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & STALLCAP_REC_F_BUSY)
			break;
		if (h->type == STALLCAP_REC_SAMPLE && smp->tid == (uint32_t)tid &&
		    h->size <= sizeof(self->buf[0]) && self->nr < MAX_SAMPLES) {
			memcpy(self->buf[self->nr], h, h->size);
			self->smp[self->nr] = (void *)self->buf[self->nr];
			why_log_sample(self->smp[self->nr]);
			self->nr++;
		}
		tail += h->size;
	}
	__atomic_store_n(&s->ctl->data_tail, tail, __ATOMIC_RELEASE);
}

/* The thread's busy loop under the watch. */
WHY_NOINLINE void throttle_spin(uint64_t until)
{
	while (why_now() < until)
		__asm__ volatile("" ::: "memory");
}

/*
 * Disarm, join @th if any (its result in @ret), and collect this stall's
 * samples once the reader's work is done.
 */
static int end_watch(FIXTURE_DATA(throttle) *self, pthread_t *th, void **ret)
{
	if (why_disarm(&self->s))
		return -1;
	if (th)
		pthread_join(*th, ret);
	usleep(20000);
	collect(self);
	return 0;
}

/* Arm, spin SPIN_MS on CPU 1, disarm, and collect this stall's samples. */
static int spin_watched(FIXTURE_DATA(throttle) *self)
{
	if (why_arm(&self->s, WHY_MS(TIMEOUT_MS)))
		return -1;
	throttle_spin(why_now() + WHY_MS(SPIN_MS));
	return end_watch(self, NULL, NULL);
}

/*
 * A throttled sample, checked exactly: runnable, off CPU, read on its
 * CPU's timer; the interval's time went to waiting for a CPU, none to
 * sleep (the thread never blocks).
 */
static void check_throttled(struct __test_metadata *_metadata,
			    const struct stallcap_sample *smp)
{
	const struct stallcap_sec_times *t = why_section(smp, STALLCAP_SEC_TIMES, 0);
	uint64_t span;

	ASSERT_EQ(STALLCAP_STATE_RUNNABLE, smp->state);
	ASSERT_EQ(STALLCAP_PATH_BLOCKED, smp->path);
	ASSERT_EQ(1U, smp->cpu);
	ASSERT_EQ(0U, smp->flags & STALLCAP_SAMPLE_MEMSTALL);
	ASSERT_NE(NULL, t);
	ASSERT_NE(0ULL, t->valid & (1ULL << STALLCAP_TIME_RUN_DELAY));
	span = smp->capture_ns - t->since_ns;
	/*
	 * Waiting for a CPU, never asleep (10% + 5 ms for TCG's clocks).  How
	 * much of it was run delay is not asserted: a loaded host stopping the
	 * vCPU is charged as time on CPU (18 of 30 ms once on debug).
	 */
	ASSERT_LT(0ULL, t->run_delay_ns);
	ASSERT_LE(t->sleep_ns, span / 10 + WHY_MS(5));
}

/*
 * Spin in @dir with @quota_dir's cpu.max at QUOTA_US per PERIOD_US: at
 * least one sample throttled, every throttled sample checked, every sample
 * that says it is throttled runnable, and the group throttled per cpu.stat.
 */
static void throttled_case(struct __test_metadata *_metadata,
			   FIXTURE_DATA(throttle) *self, const char *dir,
			   const char *quota_dir)
{
	unsigned int i, attempt, throttled = 0;
	char max[64];
	long long before;

	snprintf(max, sizeof(max), "%d %d", QUOTA_US, PERIOD_US);
	ASSERT_EQ(0, write_file(quota_dir, "cpu.max", max));
	ASSERT_EQ(0, write_file(dir, "cgroup.procs", "0"));
	before = nr_throttled(quota_dir);
	ASSERT_LE(0, before);
	for (attempt = 0; attempt < ATTEMPTS && !throttled; attempt++) {
		ASSERT_EQ(0, spin_watched(self));
		ASSERT_LE(1U, self->nr);
		for (i = 0; i < self->nr; i++) {
			if (!(self->smp[i]->flags & STALLCAP_SAMPLE_THROTTLED))
				continue;
			check_throttled(_metadata, self->smp[i]);
			throttled++;
		}
	}
	ASSERT_LE(1U, throttled);
	ASSERT_LT(before, nr_throttled(quota_dir));
}

/* The quota on the thread's own group. */
TEST_F(throttle, quota_of_its_group)
{
	throttled_case(_metadata, self, self->top, self->top);
}

/* The quota one group up: its own group's entity stays queued. */
TEST_F(throttle, quota_of_the_parent_group)
{
	throttled_case(_metadata, self, self->inner, self->top);
}

/* ---- a lock held by a throttled thread ---- */

struct holder {
	pthread_mutex_t m;
	const char *group;	/* the quota's threaded group */
	pid_t tid, waiter;
	int locked;
};

/* /proc/self/task/@tid/@name into @buf, a string: false if unreadable. */
static bool read_task_file(pid_t tid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/*
 * Is thread @tid of this process blocked in futex() (its system call
 * number first in /proc/.../syscall), within 5 s?  Exact where the state
 * letter is not: the waiter's own sleeps before the lock read as S too.
 */
static bool thread_in_futex(pid_t tid)
{
	char buf[128];
	int i;

	for (i = 0; i < 500; i++, usleep(10000)) {
		if (!read_task_file(tid, "syscall", buf, sizeof(buf)))
			return false;
		if (strtol(buf, NULL, 10) == SYS_futex)
			return true;
	}
	return false;
}

/*
 * Alone in the quota's group: moves itself there, holds the mutex, and
 * spins (using up the quota) once the waiter sleeps on it.  The waiter,
 * in the group above without a quota, is never throttled itself, so it
 * reaches the lock however slow the kernel (the debug kernel once kept a
 * waiter of the same group throttled short of it for the whole stall).
 */
static void *holder_fn(void *arg)
{
	struct holder *h = arg;
	int spun = 0;

	why_pin(1);
	__atomic_store_n(&h->tid, why_gettid(), __ATOMIC_RELAXED);
	if (write_file(h->group, "cgroup.threads", "0"))
		goto out;
	pthread_mutex_lock(&h->m);
	__atomic_store_n(&h->locked, 1, __ATOMIC_RELEASE);
	if (thread_in_futex(h->waiter)) {
		throttle_spin(why_now() + WHY_MS(SPIN_MS));
		spun = 1;
	}
	pthread_mutex_unlock(&h->m);
out:
	return (void *)(long)spun;
}

/*
 * The watched thread (CPU 0, no quota) waits for a glibc mutex that a
 * thread of a threaded child group with the quota holds while it spins on
 * CPU 1: its samples are blocked on the futex, never throttled themselves,
 * and the owner they name is marked throttled when it is runnable and held
 * off (most of the time), never when it runs.
 */
TEST_F(throttle, lock_owner_held_off_by_the_quota)
{
	struct holder h = { .m = PTHREAD_MUTEX_INITIALIZER,
			    .group = self->inner };
	const struct stallcap_sec_task *o;
	unsigned int i, attempt, marked = 0;
	char max[64];
	pthread_t th;
	void *spun;

	snprintf(max, sizeof(max), "%d %d", QUOTA_US, PERIOD_US);
	ASSERT_EQ(0, write_file(self->inner, "cgroup.type", "threaded"));
	ASSERT_EQ(0, write_file(self->inner, "cpu.max", max));
	ASSERT_EQ(0, write_file(self->top, "cgroup.procs", "0"));
	ASSERT_EQ(0, why_pin(0));
	h.waiter = why_gettid();
	for (attempt = 0; attempt < ATTEMPTS && !marked; attempt++) {
		h.locked = 0;
		ASSERT_EQ(0, pthread_create(&th, NULL, holder_fn, &h));
		while (!__atomic_load_n(&h.locked, __ATOMIC_ACQUIRE))
			usleep(1000);
		ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
		pthread_mutex_lock(&h.m);
		pthread_mutex_unlock(&h.m);
		ASSERT_EQ(0, end_watch(self, &th, &spun));
		ASSERT_NE(NULL, spun);	/* the holder saw this thread wait */
		ASSERT_LE(1U, self->nr);
		for (i = 0; i < self->nr; i++) {
			ASSERT_EQ(0U, self->smp[i]->flags & STALLCAP_SAMPLE_THROTTLED);
			o = why_task(self->smp[i], STALLCAP_ROLE_OWNER, 1);
			if (!o)
				continue;
			ASSERT_EQ((uint32_t)h.tid, o->tid);
			if (!(o->flags & STALLCAP_TASK_F_THROTTLED))
				continue;
			ASSERT_EQ(STALLCAP_STATE_RUNNABLE, o->state);
			ASSERT_EQ(1U, o->cpu);
			marked++;
		}
	}
	ASSERT_LE(1U, marked);
	ASSERT_LT(0LL, nr_throttled(self->inner));
}

/* ---- no quota: preempted inside the group, never throttled ---- */

#define BUSY_MS		700

/*
 * Nice -20 on CPU 1 for BUSY_MS, then gone: the watched thread (nice 0,
 * spinning under its watch) gets about 1% of the CPU meanwhile (weights
 * 88761 and 1024), runnable most of the time, and the CPU to itself when
 * this thread is done (its spin ends, the stall too).
 */
static void *busy_fn(void *arg)
{
	uint64_t until;

	why_pin(1);
	setpriority(PRIO_PROCESS, 0, -20);	/* this thread only (Linux) */
	until = why_now() + WHY_MS(BUSY_MS);
	throttle_spin(until);
	return NULL;
}

TEST_F(throttle, preempted_without_quota_is_not_throttled)
{
	unsigned int i, runnable = 0;
	pthread_t th;

	ASSERT_EQ(0, write_file(self->top, "cpu.max", "max 100000"));
	ASSERT_EQ(0, write_file(self->inner, "cgroup.procs", "0"));
	/*
	 * Armed first, the busy thread started after: waiting for it to be
	 * ready let a slow kernel (debug) keep this thread from even arming
	 * until the busy thread was done.
	 */
	ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
	ASSERT_EQ(0, pthread_create(&th, NULL, busy_fn, NULL));
	throttle_spin(why_now() + WHY_MS(SPIN_MS));
	ASSERT_EQ(0, end_watch(self, &th, NULL));
	ASSERT_LE(1U, self->nr);
	for (i = 0; i < self->nr; i++) {
		EXPECT_EQ(0U, self->smp[i]->flags & STALLCAP_SAMPLE_THROTTLED);
		runnable += self->smp[i]->state == STALLCAP_STATE_RUNNABLE;
	}
	/* runnable nearly all the time the busy thread spins */
	ASSERT_LE(1U, runnable);
}

/* ---- memory.high: the sleep a thread over it is made to take ---- */

#define MEM_HIGH	"4M"
#define MEM_TOUCH	(48UL << 20)
#define MEM_PREFAULT	(8UL << 20)
#define MEM_LIFT_MS	300
#define MEM_SEEN_MAX_MS	5000

/* The group's memory.high, with the memory controller on: 0, or SKIP. */
static bool memory_high_on(FIXTURE_DATA(throttle) *self)
{
	char path[192];

	if (write_file(CG_ROOT, "cgroup.subtree_control", "+memory"))
		return false;
	snprintf(path, sizeof(path), "%s/memory.high", self->top);
	return !access(path, F_OK);
}

/* Is thread @tid of this process in the sleep memory.high imposes? */
static bool in_over_high_sleep(pid_t tid)
{
	char buf[128];

	return read_task_file(tid, "wchan", buf, sizeof(buf)) &&
	       strstr(buf, "mem_cgroup_handle_over_high");	/* or __ */
}

struct lifter {
	const char *group;
	pid_t toucher;
};

/*
 * Lifts the group's memory.high MEM_LIFT_MS after the toucher was first
 * seen in the sleep it imposes (its wchan), or after MEM_SEEN_MAX_MS: the
 * sleeps that came meanwhile, up to 2 s each, are its stall; later ones
 * would only make the case longer.  A fixed delay lifted it before the
 * first sleep on the debug kernel, still busy reclaiming (CI55).
 * Returns whether the sleep was seen.
 */
static void *lift_fn(void *arg)
{
	const struct lifter *l = arg;
	bool seen = false;
	int i;

	why_pin(0);	/* off the toucher's CPU */
	for (i = 0; i < MEM_SEEN_MAX_MS / 5 && !seen; i++) {
		usleep(5000);
		seen = in_over_high_sleep(l->toucher);
	}
	if (seen)
		usleep(MEM_LIFT_MS * 1000);
	write_file(l->group, "memory.high", "max");
	return (void *)(long)seen;
}

WHY_NOINLINE void touch_pages(volatile char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
}

/*
 * The watched thread uses 8 MiB, then touches 40 MiB more in a group whose
 * memory.high is 4 MiB (no swap: nothing to reclaim): on its way back to
 * user space the kernel
 * makes it sleep (mem_cgroup_handle_over_high(), up to 2 s a time) inside
 * a pressure stall.  Every sample in that sleep (uninterruptible:
 * TASK_KILLABLE, its kernel stack in that function) is marked MEMSTALL, and
 * one at least is taken; no sample is marked throttled.  Reclaim, on CPU or
 * preempted there, is a memory stall too, not asserted: the moments between
 * it and the sleep are none.
 */
TEST_F(throttle, over_memory_high_is_a_memory_stall)
{
	const char *const over_high[] = {
		"mem_cgroup_handle_over_high",	/* __ since 6.19 */
		"__mem_cgroup_handle_over_high", NULL
	};
	struct lifter l = { .group = self->top, .toucher = why_gettid() };
	unsigned int i, attempt, asleep = 0;
	struct why_kfns kfns;
	const struct stallcap_sample *smp;
	pthread_t th;
	void *seen;
	char *mem;

	if (!memory_high_on(self))
		SKIP(return, "no memory controller (CONFIG_MEMCG)");
	ASSERT_EQ(0, why_kfns_load(&kfns, over_high));
	ASSERT_NE(0ULL, kfns.start[0] | kfns.start[1]);
	ASSERT_EQ(0, write_file(self->top, "cgroup.procs", "0"));
	for (attempt = 0; attempt < ATTEMPTS && !asleep; attempt++) {
		mem = mmap(NULL, MEM_TOUCH, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, mem);
		/*
		 * Twice the limit in use before it is set: the first page
		 * charged under the watch makes the longest sleep (2 s) at
		 * once, whatever the kernel's speed (the debug kernel,
		 * reclaiming slowly, grew over a limit set first by so
		 * little at a time that its sleeps were short)
		 */
		touch_pages(mem, MEM_PREFAULT);
		ASSERT_EQ(0, write_file(self->top, "memory.high", MEM_HIGH));
		ASSERT_EQ(0, pthread_create(&th, NULL, lift_fn, &l));
		ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
		touch_pages(mem + MEM_PREFAULT, MEM_TOUCH - MEM_PREFAULT);
		ASSERT_EQ(0, end_watch(self, &th, &seen));
		munmap(mem, MEM_TOUCH);
		if (!seen)
			TH_LOG("attempt %u: never seen in the sleep", attempt);
		ASSERT_LE(1U, self->nr);
		for (i = 0; i < self->nr; i++) {
			smp = self->smp[i];
			ASSERT_EQ(0U, smp->flags & STALLCAP_SAMPLE_THROTTLED);
			if (smp->state != STALLCAP_STATE_UNINTERRUPTIBLE ||
			    !why_kstack_in(smp, &kfns))
				continue;
			ASSERT_EQ(STALLCAP_PATH_BLOCKED, smp->path);
			ASSERT_NE(0U, smp->flags & STALLCAP_SAMPLE_MEMSTALL);
			asleep++;
		}
	}
	ASSERT_LE(1U, asleep);
}

/* A plain sleep of the same group, no limit: never a memory stall. */
TEST_F(throttle, sleep_is_not_a_memory_stall)
{
	unsigned int i, sleeping = 0;

	if (!memory_high_on(self))
		SKIP(return, "no memory controller (CONFIG_MEMCG)");
	ASSERT_EQ(0, write_file(self->top, "cgroup.procs", "0"));
	ASSERT_EQ(0, why_arm(&self->s, WHY_MS(TIMEOUT_MS)));
	usleep(200000);
	ASSERT_EQ(0, end_watch(self, NULL, NULL));
	ASSERT_LE(1U, self->nr);
	for (i = 0; i < self->nr; i++) {
		EXPECT_EQ(0U, self->smp[i]->flags & STALLCAP_SAMPLE_MEMSTALL);
		sleeping += self->smp[i]->state == STALLCAP_STATE_SLEEPING;
	}
	ASSERT_LE(1U, sleeping);
}

TEST_HARNESS_MAIN
