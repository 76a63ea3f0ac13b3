// SPDX-License-Identifier: GPL-2.0
/*
 * The verdict and breakdown of why a sample stalled, from synthetic
 * STALLCAP_SEC_TIMES / _WAIT / _TASK sections laid out as the module writes
 * them: exact text, unavailable fields left out (text) or null (JSON),
 * unknown sections skipped, malformed sizes refused.
 */
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "why.h"
#include "kselftest_harness.h"

#define MS		1000000ULL
#define CAPTURE		(5000 * MS)
#define BIT(f)		(1ULL << STALLCAP_TIME_##f)
#define SCHED_BITS	(BIT(ON_CPU) | BIT(USER) | BIT(SYSTEM) | BIT(RUN_DELAY) | \
			 BIT(NVCSW) | BIT(NIVCSW) | BIT(MIN_FLT) | BIT(MAJ_FLT) | \
			 BIT(CPU_IRQS) | BIT(CPU_SOFTIRQS) | BIT(SLEEP))
#define DELAY_BITS	(BIT(BLKIO_DELAY) | BIT(SWAPIN_DELAY) | BIT(RECLAIM_DELAY) | \
			 BIT(COMPACT_DELAY) | BIT(THRASHING_DELAY))

/* sections appended one after the other, as in a record */
struct secbuf {
	__u64 b[512];
	size_t len;
};

static void *add(struct secbuf *sb, __u16 type, size_t size)
{
	struct stallcap_section *sec = (void *)((char *)sb->b + sb->len);

	size = (size + 7) & ~(size_t)7;
	memset(sec, 0, size);
	sec->size = (__u32)size;
	sec->type = type;
	sb->len += size;
	return sec;
}

static struct stallcap_sec_times *add_times(struct secbuf *sb, __u64 since)
{
	struct stallcap_sec_times *t = add(sb, STALLCAP_SEC_TIMES, sizeof(*t));

	t->valid = SCHED_BITS;
	t->since_ns = since;
	return t;
}

static struct stallcap_sec_task *add_task(struct secbuf *sb, __u16 role,
					  __u16 hop, const char *comm,
					  __u32 tid, __u8 policy, int prio,
					  unsigned int nk, unsigned int nu)
{
	struct stallcap_sec_task *t = add(sb, STALLCAP_SEC_TASK,
					  sizeof(*t) + 8 * (nk + nu));
	__u64 *ips = (__u64 *)(t + 1);

	t->fixed_size = sizeof(*t);
	t->role = role;
	t->hop = hop;
	t->tid = tid;
	t->pid = 150;
	t->cpu = 1;
	t->policy = policy;
	t->prio = prio;
	t->state = role == STALLCAP_ROLE_RUNNER ? STALLCAP_STATE_RUNNING :
		   STALLCAP_STATE_RUNNABLE;
	strncpy(t->comm, comm, sizeof(t->comm));
	t->nr_kernel_frames = nk;
	t->nr_user_frames = nu;
	for (unsigned int i = 0; i < nk + nu; i++)
		ips[i] = 0x1000 + i;
	return t;
}

/*
 * A thread blocked @sleep_ms on the futex at @object held by "holder" (tid
 * 160, hop 1): the owner's section.
 */
static struct stallcap_sec_task *futex_held(struct secbuf *sb, __u64 sleep_ms,
					    __u64 object)
{
	struct stallcap_sec_times *t = add_times(sb, CAPTURE - (sleep_ms + 1) * MS);
	struct stallcap_sec_wait *w;

	t->sleep_ns = sleep_ms * MS;
	t->on_cpu_ns = MS;
	w = add(sb, STALLCAP_SEC_WAIT, sizeof(*w));
	w->kind = STALLCAP_WAIT_FUTEX;
	w->object = object;
	w->nr_hops = 1;
	return add_task(sb, STALLCAP_ROLE_OWNER, 1, "holder", 160, 0, 0, 0, 0);
}

/* STALLCAP_SAMPLE_* of the next record parse() makes (then reset) */
static __u32 next_flags;

/* a record: the fixed part, then the sections of @sb */
static int parse(struct secbuf *sb, __u8 state, struct stallcap_sample_view *v)
{
	static __u64 rec[sizeof(struct secbuf) / 8 + 32];
	struct stallcap_sample *s = (void *)rec;

	memset(rec, 0, sizeof(*s));
	s->hdr.type = STALLCAP_REC_SAMPLE;
	s->hdr.size = sizeof(*s) + sb->len;
	s->fixed_size = sizeof(*s);
	s->state = state;
	s->flags = next_flags;
	next_flags = 0;
	s->cpu = 1;
	s->capture_ns = CAPTURE;
	memcpy(s + 1, sb->b, sb->len);
	return stallcap_sample_parse(rec, s->hdr.size, v);
}

static char *verdict(struct secbuf *sb, __u8 state, struct why_input *in,
		     struct stallcap_sample_view *v)
{
	static char buf[512];

	if (parse(sb, state, v))
		return NULL;
	why_from_view(in, v);
	why_verdict(in, buf, sizeof(buf));
	return buf;
}

/* the verdict's class, what --group-by verdict groups by */
static char *verdict_class(const struct why_input *in)
{
	static char buf[512];

	why_verdict_class(in, buf, sizeof(buf));
	return buf;
}

TEST(runnable_preempted_by_hog)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t = add_times(&sb, CAPTURE - 15 * MS);
	static struct stallcap_sample_view copy;
	struct why_input in;

	t->run_delay_ns = 14200 * 1000;
	t->on_cpu_ns = 800 * 1000;
	t->nivcsw = 1;
	add_task(&sb, STALLCAP_ROLE_RUNNER, 0, "hog", 161, 1, 50, 2, 1);
	ASSERT_STREQ("runnable 14.2 ms of 15.0: preempted by hog (tid 161, SCHED_FIFO 50) on cpu 1",
		     verdict(&sb, STALLCAP_STATE_RUNNABLE, &in, &copy));
	ASSERT_STREQ("runnable: preempted by hog (SCHED_FIFO 50)", verdict_class(&in));
	ASSERT_EQ(1, in.nr_runners);
	ASSERT_EQ(2, in.runners[0]->nr_kernel);
	ASSERT_EQ(1, in.runners[0]->nr_user);
	ASSERT_EQ(0x1002, in.runners[0]->user_ips[0]);
}

TEST(blocked_on_futex_holder_preempted)
{
	struct secbuf sb = { .len = 0 };
	static struct stallcap_sample_view copy;
	struct why_input in;

	futex_held(&sb, 900, 0x7f0000001000ULL);
	add_task(&sb, STALLCAP_ROLE_RUNNER, 1, "hog", 161, 1, 50, 0, 0);
	ASSERT_STREQ("blocked 900.0 ms on futex 0x7f0000001000: held by tid 160 (holder), runnable, preempted by hog (tid 161, SCHED_FIFO 50) on cpu 1",
		     verdict(&sb, STALLCAP_STATE_SLEEPING, &in, &copy));
	ASSERT_STREQ("blocked on futex: held by holder (runnable), preempted by hog (SCHED_FIFO 50)",
		     verdict_class(&in));
}

/* pthread_join() of a thread at work: the futex is its exit word */
TEST(join_of_a_thread_at_work)
{
	struct secbuf sb = { .len = 0 };
	static struct stallcap_sample_view copy;
	struct stallcap_sec_wait *w;
	struct stallcap_sec_task *o;
	struct why_input in;

	o = futex_held(&sb, 900, 0x7f0000001000ULL);
	o->state = STALLCAP_STATE_RUNNING;
	o->cpu = 1;
	w = (void *)((char *)sb.b + sizeof(struct stallcap_sec_times));
	w->flags = STALLCAP_WAIT_F_JOIN;
	ASSERT_STREQ("blocked 900.0 ms on futex 0x7f0000001000: joining tid 160 (holder), which has not exited: running on cpu 1",
		     verdict(&sb, STALLCAP_STATE_SLEEPING, &in, &copy));
	ASSERT_STREQ("blocked on futex: joining holder (running)", verdict_class(&in));
}

TEST(deadlock_cycle)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_wait *w;
	struct stallcap_sec_task *o;
	static struct stallcap_sample_view copy;
	struct why_input in;

	w = add(&sb, STALLCAP_SEC_WAIT, sizeof(*w));
	w->kind = STALLCAP_WAIT_PI_FUTEX;
	w->object = 0x1000;
	w->flags = STALLCAP_WAIT_F_CYCLE;
	w->nr_hops = 1;
	o = add_task(&sb, STALLCAP_ROLE_OWNER, 1, "b", 171, 0, 0, 0, 0);
	o->state = STALLCAP_STATE_SLEEPING;
	o->wait_kind = STALLCAP_WAIT_PI_FUTEX;
	o->wait_object = 0x2000;
	ASSERT_STREQ("blocked on PI futex 0x1000: held by tid 171 (b), sleeping; deadlock: the chain leads back to an earlier waiter",
		     verdict(&sb, STALLCAP_STATE_SLEEPING, &in, &copy));
	ASSERT_STREQ("blocked on PI futex: held by b (sleeping), deadlock", verdict_class(&in));
}

TEST(major_faults_with_delay_accounting)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t = add_times(&sb, CAPTURE - 25 * MS);
	static struct stallcap_sample_view copy;
	struct why_input in;
	char line[512];

	t->valid |= DELAY_BITS;
	t->sleep_ns = 20100 * 1000;
	t->on_cpu_ns = 4900 * 1000;
	t->maj_flt = 40;
	t->blkio_delay_ns = 18300 * 1000;
	ASSERT_STREQ("blocked 20.1 ms of 25.0, 40 major page faults, 18.3 ms waiting for block I/O",
		     verdict(&sb, STALLCAP_STATE_UNINTERRUPTIBLE, &in, &copy));
	ASSERT_STREQ("blocked, major page faults, waiting for block I/O", verdict_class(&in));
	why_breakdown(in.times, line, sizeof(line));
	ASSERT_STREQ("on CPU 4.9 ms (user 0.0, system 0.0), runnable 0.0 ms, blocked 20.1 ms; switches 0 voluntary, 0 involuntary; faults 0 minor, 40 major; delays: block I/O 18.3 ms, swap-in 0.0, reclaim 0.0, compaction 0.0, thrashing 0.0; its CPU took 0 interrupts, 0 softirqs",
		     line);
}

TEST(unavailable_fields_are_left_out_and_null)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t = add_times(&sb, CAPTURE - 30 * MS);
	static struct stallcap_sample_view copy;
	struct why_input in;
	char line[512], *json = NULL;
	size_t len = 0;
	FILE *m;

	t->valid = BIT(ON_CPU) | BIT(MAJ_FLT) | BIT(MIN_FLT);
	t->on_cpu_ns = 29 * MS;
	t->run_delay_ns = 99 * MS;	/* not valid: must not appear */
	t->maj_flt = 3;
	ASSERT_STREQ("on CPU 29.0 ms of 30.0, 3 major page faults",
		     verdict(&sb, STALLCAP_STATE_RUNNING, &in, &copy));
	why_breakdown(in.times, line, sizeof(line));
	ASSERT_STREQ("on CPU 29.0 ms; faults 0 minor, 3 major", line);
	m = open_memstream(&json, &len);
	ASSERT_NE(NULL, m);
	why_json(m, &in);
	fclose(m);
	ASSERT_NE(NULL, strstr(json, "\"run_delay_ns\":null"));
	ASSERT_NE(NULL, strstr(json, "\"on_cpu_ns\":29000000"));
	ASSERT_NE(NULL, strstr(json, "\"blkio_delay_ns\":null"));
	ASSERT_NE(NULL, strstr(json, "\"steal_ns\":null"));
	free(json);
}

TEST(short_times_section_and_unknown_sections)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t;
	static struct stallcap_sample_view copy;
	struct why_input in;

	add(&sb, 0x7f01, 24);	/* unknown: skipped */
	/* an older module's shorter TIMES: the missing tail reads as zero */
	t = add(&sb, STALLCAP_SEC_TIMES, offsetof(struct stallcap_sec_times, iowait_ns));
	t->valid = BIT(ON_CPU) | BIT(RUN_DELAY);
	t->since_ns = CAPTURE - 10 * MS;
	t->run_delay_ns = 9 * MS;
	ASSERT_STREQ("runnable 9.0 ms of 10.0",
		     verdict(&sb, STALLCAP_STATE_RUNNABLE, &in, &copy));
	ASSERT_EQ(0, in.times->steal_ns);
}

TEST(malformed_sections_are_refused)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_task *tk;
	static struct stallcap_sample_view v;

	tk = add_task(&sb, STALLCAP_ROLE_RUNNER, 0, "x", 1, 0, 0, 1, 1);
	tk->nr_user_frames = 9;	/* more frames than the section holds */
	ASSERT_NE(0, parse(&sb, STALLCAP_STATE_RUNNING, &v));
}

TEST(runner_in_softirq_and_kthread)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t = add_times(&sb, CAPTURE - 20 * MS);
	static struct stallcap_sample_view copy;
	struct stallcap_sec_task *r;
	struct why_input in;

	t->run_delay_ns = 19 * MS;
	r = add_task(&sb, STALLCAP_ROLE_RUNNER, 0, "ksoftirqd/1", 22, 0, 0, 0, 0);
	r->flags = STALLCAP_TASK_F_KTHREAD | STALLCAP_TASK_F_IN_SOFTIRQ;
	ASSERT_STREQ("runnable 19.0 ms of 20.0: preempted by a softirq over ksoftirqd/1 (tid 22, kernel thread, SCHED_OTHER nice 0) on cpu 1",
		     verdict(&sb, STALLCAP_STATE_RUNNABLE, &in, &copy));
	ASSERT_STREQ("runnable: preempted by a softirq over ksoftirqd/1 (kernel thread, SCHED_OTHER nice 0)",
		     verdict_class(&in));
}

/*
 * Held off by its cgroup's CPU quota: that is the cause, not what ran on its
 * CPU meanwhile (here nothing: idle), in the verdict, its class, the task
 * line and JSON; a lock owner likewise.
 */
TEST(runnable_throttled_by_cgroup_quota)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t = add_times(&sb, CAPTURE - 40 * MS);
	static struct stallcap_sample_view copy;
	struct stallcap_sec_task *r;
	struct why_input in;
	char *json = NULL;
	size_t len = 0;
	FILE *m;

	t->run_delay_ns = 38 * MS;
	t->on_cpu_ns = 2 * MS;
	r = add_task(&sb, STALLCAP_ROLE_RUNNER, 0, "swapper/1", 0, 0, 0, 0, 0);
	r->flags = STALLCAP_TASK_F_KTHREAD | STALLCAP_TASK_F_IDLE;
	next_flags = STALLCAP_SAMPLE_THROTTLED;
	ASSERT_STREQ("runnable 38.0 ms of 40.0: throttled by its cgroup's CPU quota (cpu.max); cpu 1 ran idle",
		     verdict(&sb, STALLCAP_STATE_RUNNABLE, &in, &copy));
	ASSERT_TRUE(in.throttled);
	ASSERT_STREQ("runnable: throttled by its cgroup's CPU quota", verdict_class(&in));
	m = open_memstream(&json, &len);
	ASSERT_NE(NULL, m);
	why_json(m, &in);
	fclose(m);
	ASSERT_NE(NULL, strstr(json, "throttled by its cgroup's CPU quota (cpu.max)"));
	ASSERT_NE(NULL, strstr(json, "\"throttled\":false"));	/* the runner */
	free(json);
}

TEST(lock_owner_throttled_by_cgroup_quota)
{
	struct secbuf sb = { .len = 0 };
	static struct stallcap_sample_view copy;
	struct stallcap_sec_task *o;
	struct why_input in;
	char line[512];

	o = futex_held(&sb, 300, 0x7f0000002000ULL);
	o->flags = STALLCAP_TASK_F_THROTTLED;
	add_task(&sb, STALLCAP_ROLE_RUNNER, 1, "other", 170, 0, 0, 0, 0);
	ASSERT_STREQ("blocked 300.0 ms on futex 0x7f0000002000: held by tid 160 (holder), runnable, throttled by its cgroup's CPU quota (cpu.max); cpu 1 ran other (tid 170, SCHED_OTHER nice 0)",
		     verdict(&sb, STALLCAP_STATE_SLEEPING, &in, &copy));
	ASSERT_FALSE(in.throttled);
	ASSERT_STREQ("blocked on futex: held by holder (runnable), throttled by its cgroup's CPU quota",
		     verdict_class(&in));
	why_task_line(o, line, sizeof(line));
	ASSERT_STREQ("owner (hop 1): holder (tid 160, SCHED_OTHER nice 0), pid 150, runnable, throttled by its cgroup's CPU quota (cpu.max)",
		     line);
}

/*
 * In a memory stall (pressure stall information: here the sleep memory.high
 * imposes): said after what the interval went to, in the verdict and its
 * class; a lock owner reclaiming likewise, in its task line and JSON.
 */
TEST(blocked_in_a_memory_stall)
{
	struct secbuf sb = { .len = 0 };
	struct stallcap_sec_times *t = add_times(&sb, CAPTURE - 40 * MS);
	static struct stallcap_sample_view copy;
	struct why_input in;

	t->sleep_ns = 39 * MS;
	t->on_cpu_ns = MS;
	next_flags = STALLCAP_SAMPLE_MEMSTALL;
	ASSERT_STREQ("blocked 39.0 ms of 40.0, in a memory stall (reclaim, compaction, thrashing or its cgroup's memory.high)",
		     verdict(&sb, STALLCAP_STATE_UNINTERRUPTIBLE, &in, &copy));
	ASSERT_TRUE(in.memstall);
	ASSERT_FALSE(in.throttled);
	ASSERT_STREQ("blocked, in a memory stall", verdict_class(&in));
}

TEST(lock_owner_in_a_memory_stall)
{
	struct secbuf sb = { .len = 0 };
	static struct stallcap_sample_view copy;
	struct stallcap_sec_task *o;
	struct why_input in;
	char line[512], *json = NULL;
	size_t len = 0;
	FILE *m;

	o = futex_held(&sb, 300, 0x7f0000002000ULL);
	o->state = STALLCAP_STATE_RUNNING;
	o->flags = STALLCAP_TASK_F_MEMSTALL;
	ASSERT_STREQ("blocked 300.0 ms on futex 0x7f0000002000: held by tid 160 (holder), running on cpu 1, in a memory stall (reclaim, compaction, thrashing or its cgroup's memory.high)",
		     verdict(&sb, STALLCAP_STATE_SLEEPING, &in, &copy));
	ASSERT_FALSE(in.memstall);
	ASSERT_STREQ("blocked on futex: held by holder (running), in a memory stall",
		     verdict_class(&in));
	why_task_line(o, line, sizeof(line));
	ASSERT_STREQ("owner (hop 1): holder (tid 160, SCHED_OTHER nice 0), pid 150, running, in a memory stall (reclaim, compaction, thrashing or its cgroup's memory.high)",
		     line);
	m = open_memstream(&json, &len);
	ASSERT_NE(NULL, m);
	why_json(m, &in);
	fclose(m);
	ASSERT_NE(NULL, strstr(json, "\"memstall\":true"));	/* the owner */
	free(json);
}

TEST_HARNESS_MAIN
