// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the verdict of a sample ("runnable 14.2 ms of 15.0:
 * preempted by hog (tid 161, SCHED_FIFO 50) on cpu 1"), its time breakdown,
 * and the JSON of the why-sections.  Fields whose valid bit is clear are
 * never printed as numbers: the text leaves them out, JSON writes null.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"
#include "output.h"
#include "why.h"

#define VALID(t, f)	((t)->valid & (1ULL << STALLCAP_TIME_##f))

/* a bounded appender: never writes past len, always terminated */
struct line {
	char *buf;
	size_t len, used;
};

static void put(struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->used + 1 >= l->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->used, l->len - l->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->used = l->used + n < l->len ? l->used + n : l->len - 1;
}

static double ms(__u64 ns)
{
	return ns / 1e6;
}

const char *why_policy_name(__u8 policy)
{
	static const char *const names[] = {
		"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH",
		"SCHED_ISO", "SCHED_IDLE", "SCHED_DEADLINE",
	};

	return policy < ARRAY_SIZE(names) ? names[policy] : "SCHED_?";
}

const char *why_wait_name(__u32 kind)
{
	static const char *const names[] = {
		"nothing", "futex", "PI futex", "mutex", "rw-semaphore",
		"semaphore", "other",
	};

	return kind < ARRAY_SIZE(names) ? names[kind] : "unknown";
}

static void put_sched(struct line *l, const struct stallcap_sec_task *t)
{
	if (t->policy == 1 || t->policy == 2)
		put(l, "%s %d", why_policy_name(t->policy), t->prio);
	else if (t->policy == 6)
		put(l, "%s", why_policy_name(t->policy));
	else
		put(l, "%s nice %d", why_policy_name(t->policy), t->prio);
}

/*
 * "hog (tid 161, SCHED_FIFO 50)", or what the CPU was doing instead; with
 * @with_tid false, as a verdict class names it: "hog (SCHED_FIFO 50)"
 */
static void put_task_as(struct line *l, const struct stallcap_sec_task *t,
			bool with_tid)
{
	if (t->flags & STALLCAP_TASK_F_IDLE) {
		put(l, "idle");
		return;
	}
	if (t->flags & STALLCAP_TASK_F_IN_HARDIRQ)
		put(l, "a hard interrupt over ");
	else if (t->flags & STALLCAP_TASK_F_IN_SOFTIRQ)
		put(l, "a softirq over ");
	put(l, "%.16s (", t->comm);
	if (with_tid)
		put(l, "tid %u, ", t->tid);
	if (t->flags & STALLCAP_TASK_F_KTHREAD)
		put(l, "kernel thread, ");
	put_sched(l, t);
	put(l, ")");
}

static void put_task(struct line *l, const struct stallcap_sec_task *t)
{
	put_task_as(l, t, true);
}

static const char *state_word(__u8 state)
{
	switch (state) {
	case STALLCAP_STATE_RUNNING:
		return "running";
	case STALLCAP_STATE_RUNNABLE:
		return "runnable";
	case STALLCAP_STATE_SLEEPING:
		return "sleeping";
	case STALLCAP_STATE_UNINTERRUPTIBLE:
		return "in uninterruptible sleep";
	case STALLCAP_STATE_STOPPED:
		return "stopped";
	case STALLCAP_STATE_EXITING:
		return "exiting";
	default:
		return "in an unknown state";
	}
}

static const struct stallcap_sec_task *
runner_of(const struct why_input *in, unsigned int hop)
{
	unsigned int i;

	for (i = 0; i < in->nr_runners; i++)
		if (in->runners[i]->t.hop == hop)
			return &in->runners[i]->t;
	return NULL;
}

void why_from_view(struct why_input *in, const struct stallcap_sample_view *v)
{
	const struct stallcap_task_view *tv;
	unsigned int i;

	memset(in, 0, sizeof(*in));
	in->state = v->s.state;
	in->throttled = v->s.flags & STALLCAP_SAMPLE_THROTTLED;
	in->memstall = v->s.flags & STALLCAP_SAMPLE_MEMSTALL;
	in->cpu = v->s.cpu;
	in->capture_ns = v->s.capture_ns;
	in->times = stallcap_sample_times(v);
	in->wait = stallcap_sample_wait(v);
	for (i = 0; i < v->nr_tasks; i++) {
		tv = &v->tasks[i];
		if (tv->t.role == STALLCAP_ROLE_RUNNER)
			in->runners[in->nr_runners++] = tv;
		else if (tv->t.role == STALLCAP_ROLE_OWNER)
			in->owners[in->nr_owners++] = tv;
	}
}

#define THROTTLED_WHY	"throttled by its cgroup's CPU quota (cpu.max)"
/* what pressure stall information counts as a memory stall */
#define MEMSTALL_WHY	"in a memory stall (reclaim, compaction, thrashing " \
			"or its cgroup's memory.high)"

/*
 * Why a runnable task did not run: ", preempted by hog (tid 161, SCHED_FIFO
 * 50) on cpu 1", or, when its cgroup's quota held it off whatever ran there,
 * ", throttled by ...; cpu 1 ran hog (...)" (@sep before the first part).
 */
static void put_held_off(struct line *l, bool throttled,
			 const struct stallcap_sec_task *r, const char *sep)
{
	if (throttled) {
		put(l, "%s" THROTTLED_WHY, sep);
		if (r) {
			put(l, "; cpu %u ran ", r->cpu);
			put_task(l, r);
		}
	} else if (r) {
		put(l, "%spreempted by ", sep);
		put_task(l, r);
		put(l, " on cpu %u", r->cpu);
	}
}

static void put_owner_chain(struct line *l, const struct why_input *in)
{
	const struct stallcap_sec_wait *w = in->wait;
	const struct stallcap_sec_task *o, *r;
	unsigned int i;

	if (w->flags & STALLCAP_WAIT_F_OWNER_UNKNOWN && !in->nr_owners) {
		put(l, ": owner unknown");
		return;
	}
	for (i = 0; i < in->nr_owners; i++) {
		o = &in->owners[i]->t;
		if (i)
			put(l, "; it waits on %s 0x%llx",
			    why_wait_name(in->owners[i - 1]->t.wait_kind),
			    (unsigned long long)in->owners[i - 1]->t.wait_object);
		if (!i && w->flags & STALLCAP_WAIT_F_JOIN)
			put(l, ": joining tid %u (%.16s), which has not exited: ", o->tid, o->comm);
		else
			put(l, "%s held by tid %u (%.16s), ", i ? "" : ":", o->tid, o->comm);
		put(l, "%s", state_word(o->state));
		if (o->state == STALLCAP_STATE_RUNNING)
			put(l, " on cpu %u", o->cpu);
		if (o->flags & STALLCAP_TASK_F_MEMSTALL)
			put(l, ", " MEMSTALL_WHY);
		r = runner_of(in, o->hop);
		put_held_off(l, o->flags & STALLCAP_TASK_F_THROTTLED, r, ", ");
	}
	if ((w->flags & STALLCAP_WAIT_F_OWNER_GONE))
		put(l, "%s owner exited", in->nr_owners ? ";" : ":");
	if (w->flags & STALLCAP_WAIT_F_CYCLE)
		put(l, "; deadlock: the chain leads back to an earlier waiter");
	else if (w->flags & STALLCAP_WAIT_F_TRUNCATED)
		put(l, "; ... (chain longer than %d)", STALLCAP_MAX_OWNER_HOPS);
}

/* what the blocked or faulting time was spent on, from delay accounting */
static const struct {
	unsigned int bit;	/* STALLCAP_TIME_* */
	size_t off;		/* of the field in struct stallcap_sec_times */
	__u64 min;		/* shown from this much */
	const char *pre, *what;	/* ", PRE 1.2 ms WHAT" */
} delays[] = {
#define D(bit, field, min, pre, what) \
	{ STALLCAP_TIME_##bit, offsetof(struct stallcap_sec_times, field), min, pre, what }
	D(MAJ_FLT, maj_flt, 1, "", "major page faults"),
	D(BLKIO_DELAY, blkio_delay_ns, 100000, "", "waiting for block I/O"),
	D(SWAPIN_DELAY, swapin_delay_ns, 100000, "", "swapping in"),
	D(THRASHING_DELAY, thrashing_delay_ns, 100000, "", "thrashing"),
	D(RECLAIM_DELAY, reclaim_delay_ns, 100000, "", "in direct reclaim"),
	D(COMPACT_DELAY, compact_delay_ns, 100000, "", "compacting memory"),
	D(STEAL, steal_ns, 100000, "", "stolen by the hypervisor"),
	D(CPU_SOFTIRQ_TIME, cpu_softirq_ns, 100000, "its CPU ", "in softirqs"),
	D(CPU_IRQ_TIME, cpu_irq_ns, 100000, "its CPU ", "in interrupts"),
#undef D
};

/* the delays that count, with their amounts or (@amounts false) only named */
static void put_delays(struct line *l, const struct stallcap_sec_times *t, bool amounts)
{
	unsigned int i;
	__u64 v;

	for (i = 0; i < ARRAY_SIZE(delays); i++) {
		if (!(t->valid & (1ULL << delays[i].bit)))
			continue;
		memcpy(&v, (const char *)t + delays[i].off, sizeof(v));
		if (v < delays[i].min)
			continue;
		if (!amounts)
			put(l, ", %s%s", delays[i].pre, delays[i].what);
		else if (delays[i].bit == STALLCAP_TIME_MAJ_FLT)
			put(l, ", %llu %s", (unsigned long long)v, delays[i].what);
		else
			put(l, ", %s%.1f ms %s", delays[i].pre, ms(v), delays[i].what);
	}
}

enum part { PART_NONE, PART_CPU, PART_RUNQ, PART_SLEEP };

static enum part dominant(const struct stallcap_sec_times *t)
{
	enum part p = PART_NONE;
	__u64 best = 0;

	if (VALID(t, ON_CPU) && t->on_cpu_ns >= best) {
		best = t->on_cpu_ns;
		p = PART_CPU;
	}
	if (VALID(t, RUN_DELAY) && t->run_delay_ns > best) {
		best = t->run_delay_ns;
		p = PART_RUNQ;
	}
	if (VALID(t, SLEEP) && t->sleep_ns > best)
		p = PART_SLEEP;
	return p;
}

static void put_times_verdict(struct line *l, const struct why_input *in)
{
	const struct stallcap_sec_times *t = in->times;
	__u64 span = in->capture_ns > t->since_ns ? in->capture_ns - t->since_ns : 0;

	switch (dominant(t)) {
	case PART_RUNQ:
		put(l, "runnable %.1f ms of %.1f", ms(t->run_delay_ns), ms(span));
		break;
	case PART_SLEEP:
		put(l, "blocked %.1f ms of %.1f", ms(t->sleep_ns), ms(span));
		break;
	case PART_CPU:
		put(l, "on CPU %.1f ms of %.1f", ms(t->on_cpu_ns), ms(span));
		if (VALID(t, SYSTEM) && VALID(t, USER) &&
		    t->system_ns + t->user_ns)
			put(l, " (%.0f%% in the kernel)", 100.0 * t->system_ns /
			    (t->system_ns + t->user_ns));
		break;
	default:
		put(l, "%s", state_word(in->state));
		break;
	}
	put_delays(l, t, true);
}

int why_verdict(const struct why_input *in, char *buf, size_t len)
{
	struct line l = { buf, len, 0 };
	const struct stallcap_sec_task *r = runner_of(in, 0);

	if (len)
		buf[0] = '\0';
	if (in->wait && in->wait->kind != STALLCAP_WAIT_NONE) {
		put(&l, "blocked");
		if (in->times && VALID(in->times, SLEEP))
			put(&l, " %.1f ms", ms(in->times->sleep_ns));
		put(&l, " on %s", why_wait_name(in->wait->kind));
		if (in->wait->object)
			put(&l, " 0x%llx", (unsigned long long)in->wait->object);
		put_owner_chain(&l, in);
	} else if (in->times) {
		put_times_verdict(&l, in);
	} else {
		put(&l, "%s", state_word(in->state));
	}
	if (in->memstall)
		put(&l, ", " MEMSTALL_WHY);
	put_held_off(&l, in->throttled, r, ": ");
	return (int)l.used;
}

int why_breakdown(const struct stallcap_sec_times *t, char *buf, size_t len)
{
	struct line l = { buf, len, 0 };
	const char *sep = "";

	if (len)
		buf[0] = '\0';
	if (VALID(t, ON_CPU)) {
		put(&l, "on CPU %.1f ms", ms(t->on_cpu_ns));
		if (VALID(t, USER) && VALID(t, SYSTEM))
			put(&l, " (user %.1f, system %.1f)", ms(t->user_ns),
			    ms(t->system_ns));
		sep = ", ";
	}
	if (VALID(t, RUN_DELAY)) {
		put(&l, "%srunnable %.1f ms", sep, ms(t->run_delay_ns));
		sep = ", ";
	}
	if (VALID(t, SLEEP))
		put(&l, "%sblocked %.1f ms", sep, ms(t->sleep_ns));
	if (VALID(t, NVCSW) && VALID(t, NIVCSW))
		put(&l, "; switches %llu voluntary, %llu involuntary",
		    (unsigned long long)t->nvcsw, (unsigned long long)t->nivcsw);
	if (VALID(t, MIN_FLT) && VALID(t, MAJ_FLT))
		put(&l, "; faults %llu minor, %llu major",
		    (unsigned long long)t->min_flt, (unsigned long long)t->maj_flt);
	if (VALID(t, BLKIO_DELAY))
		put(&l, "; delays: block I/O %.1f ms, swap-in %.1f, reclaim %.1f, compaction %.1f, thrashing %.1f",
		    ms(t->blkio_delay_ns), ms(t->swapin_delay_ns),
		    ms(t->reclaim_delay_ns), ms(t->compact_delay_ns),
		    ms(t->thrashing_delay_ns));
	if (VALID(t, CPU_IRQS) && VALID(t, CPU_SOFTIRQS))
		put(&l, "; its CPU took %llu interrupts, %llu softirqs",
		    (unsigned long long)t->cpu_irqs,
		    (unsigned long long)t->cpu_softirqs);
	if (VALID(t, CPU_IRQ_TIME))
		put(&l, " (%.1f ms, %.1f ms)", ms(t->cpu_irq_ns),
		    ms(t->cpu_softirq_ns));
	if (VALID(t, STEAL))
		put(&l, "; steal %.1f ms", ms(t->steal_ns));
	return (int)l.used;
}

int why_task_line(const struct stallcap_sec_task *t, char *buf, size_t len)
{
	struct line l = { buf, len, 0 };

	if (len)
		buf[0] = '\0';
	if (t->role == STALLCAP_ROLE_RUNNER)
		put(&l, "ran instead on cpu %u: ", t->cpu);
	else
		put(&l, "owner (hop %u): ", t->hop);
	put_task(&l, t);
	put(&l, ", pid %u, %s", t->pid, state_word(t->state));
	if (t->role == STALLCAP_ROLE_OWNER && t->wait_kind) {
		put(&l, ", waits on %s", why_wait_name(t->wait_kind));
		if (t->wait_object)
			put(&l, " 0x%llx", (unsigned long long)t->wait_object);
	}
	if (t->flags & STALLCAP_TASK_F_THROTTLED)
		put(&l, ", " THROTTLED_WHY);
	if (t->flags & STALLCAP_TASK_F_MEMSTALL)
		put(&l, ", " MEMSTALL_WHY);
	if (t->flags & STALLCAP_TASK_F_USER_HIDDEN)
		put(&l, " (user stack hidden)");
	if (t->flags & STALLCAP_TASK_F_KADDR_HIDDEN)
		put(&l, " (kernel stack hidden)");
	return (int)l.used;
}

/* ---- JSON ---- */

static void json_u64(FILE *out, const char *key, bool valid, __u64 v)
{
	if (valid)
		fprintf(out, ",\"%s\":%llu", key, (unsigned long long)v);
	else
		fprintf(out, ",\"%s\":null", key);
}

static void json_times(FILE *out, const struct stallcap_sec_times *t)
{
	fprintf(out, ",\"times\":{\"since_ns\":%llu",
		(unsigned long long)t->since_ns);
	json_u64(out, "on_cpu_ns", VALID(t, ON_CPU), t->on_cpu_ns);
	json_u64(out, "user_ns", VALID(t, USER), t->user_ns);
	json_u64(out, "system_ns", VALID(t, SYSTEM), t->system_ns);
	json_u64(out, "run_delay_ns", VALID(t, RUN_DELAY), t->run_delay_ns);
	json_u64(out, "sleep_ns", VALID(t, SLEEP), t->sleep_ns);
	json_u64(out, "nvcsw", VALID(t, NVCSW), t->nvcsw);
	json_u64(out, "nivcsw", VALID(t, NIVCSW), t->nivcsw);
	json_u64(out, "min_flt", VALID(t, MIN_FLT), t->min_flt);
	json_u64(out, "maj_flt", VALID(t, MAJ_FLT), t->maj_flt);
	json_u64(out, "iowait_ns", VALID(t, IOWAIT), t->iowait_ns);
	json_u64(out, "blkio_delay_ns", VALID(t, BLKIO_DELAY), t->blkio_delay_ns);
	json_u64(out, "swapin_delay_ns", VALID(t, SWAPIN_DELAY), t->swapin_delay_ns);
	json_u64(out, "reclaim_delay_ns", VALID(t, RECLAIM_DELAY), t->reclaim_delay_ns);
	json_u64(out, "compact_delay_ns", VALID(t, COMPACT_DELAY), t->compact_delay_ns);
	json_u64(out, "thrashing_delay_ns", VALID(t, THRASHING_DELAY),
		 t->thrashing_delay_ns);
	json_u64(out, "cpu_irqs", VALID(t, CPU_IRQS), t->cpu_irqs);
	json_u64(out, "cpu_softirqs", VALID(t, CPU_SOFTIRQS), t->cpu_softirqs);
	json_u64(out, "cpu_irq_ns", VALID(t, CPU_IRQ_TIME), t->cpu_irq_ns);
	json_u64(out, "cpu_softirq_ns", VALID(t, CPU_SOFTIRQ_TIME), t->cpu_softirq_ns);
	json_u64(out, "steal_ns", VALID(t, STEAL), t->steal_ns);
	fputc('}', out);
}

static void json_frames(FILE *out, const char *key, const __u64 *ips,
			unsigned int n)
{
	fprintf(out, ",\"%s\":[", key);
	for (unsigned int i = 0; i < n; i++)
		fprintf(out, "%s\"0x%llx\"", i ? "," : "",
			(unsigned long long)ips[i]);
	fputc(']', out);
}

static void json_task(FILE *out, const struct stallcap_task_view *tv, bool first)
{
	const struct stallcap_sec_task *t = &tv->t;
	char comm[sizeof(t->comm) + 1];

	fprintf(out, "%s{\"role\":\"%s\",\"hop\":%u,\"pid\":%u,\"tid\":%u,"
		"\"ns_pid\":%u,\"ns_tid\":%u,\"cpu\":%u,\"state\":\"%s\","
		"\"policy\":\"%s\",\"prio\":%d,\"kthread\":%s,\"idle\":%s,"
		"\"in_hardirq\":%s,\"in_softirq\":%s,\"user_hidden\":%s,"
		"\"kaddr_hidden\":%s,\"throttled\":%s,\"memstall\":%s,"
		"\"wait_kind\":\"%s\","
		"\"wait_object\":%llu,"
		"\"comm\":", first ? "" : ",",
		t->role == STALLCAP_ROLE_RUNNER ? "runner" : "owner", t->hop,
		t->pid, t->tid, t->ns_pid, t->ns_tid, t->cpu,
		sc_state_name(t->state), why_policy_name(t->policy), t->prio,
		t->flags & STALLCAP_TASK_F_KTHREAD ? "true" : "false",
		t->flags & STALLCAP_TASK_F_IDLE ? "true" : "false",
		t->flags & STALLCAP_TASK_F_IN_HARDIRQ ? "true" : "false",
		t->flags & STALLCAP_TASK_F_IN_SOFTIRQ ? "true" : "false",
		t->flags & STALLCAP_TASK_F_USER_HIDDEN ? "true" : "false",
		t->flags & STALLCAP_TASK_F_KADDR_HIDDEN ? "true" : "false",
		t->flags & STALLCAP_TASK_F_THROTTLED ? "true" : "false",
		t->flags & STALLCAP_TASK_F_MEMSTALL ? "true" : "false",
		why_wait_name(t->wait_kind),
		(unsigned long long)t->wait_object);
	memcpy(comm, t->comm, sizeof(t->comm));
	comm[sizeof(t->comm)] = '\0';
	json_str(out, comm);
	json_frames(out, "kernel_ips", tv->kernel_ips, tv->nr_kernel);
	json_frames(out, "user_ips", tv->user_ips, tv->nr_user);
	fputc('}', out);
}

void why_json(FILE *out, const struct why_input *in)
{
	const struct stallcap_sec_wait *w = in->wait;
	unsigned int i;
	char buf[512];

	why_verdict(in, buf, sizeof(buf));
	fputs(",\"verdict\":", out);
	json_str(out, buf);
	if (in->times)
		json_times(out, in->times);
	if (w)
		fprintf(out, ",\"wait\":{\"kind\":\"%s\",\"object\":%llu,"
			"\"cycle\":%s,\"truncated\":%s,\"owner_unknown\":%s,"
			"\"owner_gone\":%s,\"join\":%s,\"nr_hops\":%u}",
			why_wait_name(w->kind), (unsigned long long)w->object,
			w->flags & STALLCAP_WAIT_F_CYCLE ? "true" : "false",
			w->flags & STALLCAP_WAIT_F_TRUNCATED ? "true" : "false",
			w->flags & STALLCAP_WAIT_F_OWNER_UNKNOWN ? "true" : "false",
			w->flags & STALLCAP_WAIT_F_OWNER_GONE ? "true" : "false",
			w->flags & STALLCAP_WAIT_F_JOIN ? "true" : "false",
			w->nr_hops);
	if (!in->nr_runners && !in->nr_owners)
		return;
	fputs(",\"tasks\":[", out);
	for (i = 0; i < in->nr_runners; i++)
		json_task(out, in->runners[i], !i);
	for (i = 0; i < in->nr_owners; i++)
		json_task(out, in->owners[i], !in->nr_runners && !i);
	fputc(']', out);
}

/* a task as a verdict class names it: no tid, no CPU */
static void put_task_class(struct line *l, const struct stallcap_sec_task *t)
{
	put_task_as(l, t, false);
}

static void put_wait_class(struct line *l, const struct why_input *in)
{
	const struct stallcap_sec_wait *w = in->wait;
	const struct stallcap_sec_task *o, *r;

	put(l, "blocked on %s", why_wait_name(w->kind));
	if (in->nr_owners) {
		o = &in->owners[0]->t;
		put(l, ": %s %.16s (%s)", w->flags & STALLCAP_WAIT_F_JOIN ? "joining" : "held by",
		    o->comm, state_word(o->state));
		if (o->flags & STALLCAP_TASK_F_MEMSTALL)
			put(l, ", in a memory stall");
		r = runner_of(in, o->hop);
		if (o->flags & STALLCAP_TASK_F_THROTTLED) {
			put(l, ", throttled by its cgroup's CPU quota");
		} else if (r) {
			put(l, ", preempted by ");
			put_task_class(l, r);
		}
	} else if (w->flags & STALLCAP_WAIT_F_OWNER_UNKNOWN) {
		put(l, ": owner unknown");
	}
	if (w->flags & STALLCAP_WAIT_F_OWNER_GONE)
		put(l, ", owner exited");
	if (w->flags & STALLCAP_WAIT_F_CYCLE)
		put(l, ", deadlock");
}

/**
 * why_verdict_class() - the verdict without its amounts and ids, what
 * report --group-by verdict groups by: "runnable: preempted by hog
 * (SCHED_FIFO 50)", "blocked on futex: held by holder (runnable)",
 * "blocked, major page faults".  Never holds ';'.  Returns its length.
 */
int why_verdict_class(const struct why_input *in, char *buf, size_t len)
{
	static const char *const part_word[] = {
		[PART_CPU] = "on CPU", [PART_RUNQ] = "runnable", [PART_SLEEP] = "blocked",
	};
	struct line l = { buf, len, 0 };
	const struct stallcap_sec_task *r = runner_of(in, 0);
	enum part p;
	size_t i;

	if (len)
		buf[0] = '\0';
	if (in->wait && in->wait->kind != STALLCAP_WAIT_NONE) {
		put_wait_class(&l, in);
	} else if (in->times) {
		p = dominant(in->times);
		put(&l, "%s", p == PART_NONE ? state_word(in->state) : part_word[p]);
		put_delays(&l, in->times, false);
	} else {
		put(&l, "%s", state_word(in->state));
	}
	if (in->memstall)
		put(&l, ", in a memory stall");
	if (in->throttled) {
		put(&l, ": throttled by its cgroup's CPU quota");
	} else if (r) {
		put(&l, ": preempted by ");
		put_task_class(&l, r);
	}
	for (i = 0; i < l.used; i++)	/* ';' separates frames in a group key */
		if (buf[i] == ';')
			buf[i] = ':';
	return (int)l.used;
}
