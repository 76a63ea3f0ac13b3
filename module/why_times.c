// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap "where the time went": a snapshot of a thread's own accounting
 * (scheduler, fault and context-switch counters, delay accounting) and of
 * its CPU's interrupt counters, taken when a watch is armed and at every
 * sample; a sample carries the differences as STALLCAP_SEC_TIMES.
 *
 * Snapshots only load counters (no lock, no allocation): they run in the
 * arming thread, the hard-IRQ watch timer and the NMI/IPI handler alike.
 * Counters another CPU updates may be read a few nanoseconds stale.
 *
 * What each field rests on, and when its valid bit is set:
 *  - on_cpu: se.sum_exec_runtime plus the running slice not yet added
 *    (stallcap_task_cputime()); always;
 *  - user/system: task->utime/stime as the kernel accounts them (ticks, or
 *    context tracking on nohz_full CPUs); always;
 *  - run_delay: sched_info.run_delay plus the wait in progress when the
 *    thread is queued now (sched_info.last_queued); CONFIG_SCHED_INFO;
 *  - nvcsw, nivcsw, min_flt, maj_flt: always;
 *  - delay accounting (blkio, swapin, reclaim, compaction, thrashing):
 *    CONFIG_TASK_DELAY_ACCT and kernel.task_delayacct = 1 when the watch
 *    was armed and at the capture (the module reads the sysctl from process
 *    context, see stallcap_times_refresh());
 *  - cpu_irqs/cpu_softirqs: the per-CPU counts of the thread's CPU, when the
 *    thread is on the same CPU at both ends of the interval;
 *  - cpu_irq_ns/cpu_softirq_ns: CONFIG_IRQ_TIME_ACCOUNTING, same CPU;
 *  - steal: CONFIG_PARAVIRT_TIME_ACCOUNTING with a KVM steal clock, same
 *    CPU;
 *  - sleep: the rest of the interval, interval - on_cpu - run_delay
 *    (derived; valid when both are); 0 for a thread that could not have
 *    slept (see never_slept());
 *  - iowait: not provided separately (blkio_delay is the I/O wait).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/spinlock.h>
#include <linux/delayacct.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel_stat.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/string.h>
#include <asm/hardirq.h>
#include <asm/cpufeature.h>
#include <asm/kvm_para.h>
#include <asm/processor.h>
#ifdef STALLCAP_HAVE_CPUID_API
#include <asm/cpuid/api.h>	/* 6.15: cpuid() left asm/processor.h */
#endif

#include "compat.h"
#include "stallcap.h"
#include "why.h"

#define BIT_OF(f)	BIT_ULL(STALLCAP_TIME_##f)
#define TASK_BITS	(BIT_OF(ON_CPU) | BIT_OF(USER) | BIT_OF(SYSTEM) | \
			 BIT_OF(NVCSW) | BIT_OF(NIVCSW) | BIT_OF(MIN_FLT) | \
			 BIT_OF(MAJ_FLT))
#define DELAY_BITS	(BIT_OF(BLKIO_DELAY) | BIT_OF(SWAPIN_DELAY) | \
			 BIT_OF(RECLAIM_DELAY) | BIT_OF(COMPACT_DELAY) | \
			 BIT_OF(THRASHING_DELAY))
#define CPU_BITS	(BIT_OF(CPU_IRQS) | BIT_OF(CPU_SOFTIRQS) | \
			 BIT_OF(CPU_IRQ_TIME) | BIT_OF(CPU_SOFTIRQ_TIME) | \
			 BIT_OF(STEAL))

/* kernel.task_delayacct as last read from process context */
static bool delayacct_enabled __read_mostly;
static unsigned long delayacct_read_at;
static bool delayacct_read_once;

#ifndef KVM_SIGNATURE	/* not in 5.10's uapi/asm/kvm_para.h */
#define KVM_SIGNATURE "KVMKVMKVM\0\0\0"
#endif

/*
 * Steal time is accounted into cpustat by a paravirtual kernel whose KVM
 * host offers it (kvm_guest_init()).  kvm_para_has_feature() calls a
 * function no kernel exports, so the hypervisor's CPUID leaves are read
 * here, once, from process context (stallcap_times_refresh()).
 */
static bool kvm_steal_time_offered(void)
{
	u32 base, eax, sig[3];

	if (!IS_ENABLED(CONFIG_PARAVIRT) || !IS_ENABLED(CONFIG_KVM_GUEST) ||
	    !boot_cpu_has(X86_FEATURE_HYPERVISOR))
		return false;
	for (base = 0x40000000; base < 0x40010000; base += 0x100) {
		cpuid(base, &eax, &sig[0], &sig[1], &sig[2]);
		if (!memcmp(sig, KVM_SIGNATURE, sizeof(sig)))
			return cpuid_eax(base | KVM_CPUID_FEATURES) &
			       BIT(KVM_FEATURE_STEAL_TIME);
	}
	return false;
}

static bool steal_clock;	/* kvm_steal_time_offered(), once */
static bool steal_clock_known;

static bool have_steal_clock(void)
{
	return READ_ONCE(steal_clock);
}

/**
 * stallcap_times_refresh() - re-read kernel.task_delayacct (at most 1/s)
 *
 * Context: process context (ARM), may sleep.  A missing or unreadable
 * sysctl (no /proc/sys in this mount namespace) leaves delay accounting
 * marked unavailable.  Also reads, once, whether steal time is accounted.
 */
void stallcap_times_refresh(void)
{
	struct file *f;
	char buf[4] = "";
	loff_t pos = 0;

	if (!READ_ONCE(steal_clock_known)) {
		WRITE_ONCE(steal_clock, kvm_steal_time_offered());
		WRITE_ONCE(steal_clock_known, true);
	}
	if (!IS_ENABLED(CONFIG_TASK_DELAY_ACCT))
		return;
#ifndef STALLCAP_HAVE_DELAYACCT_SYSCTL
	/*
	 * Before 5.14 there is no sysctl: accounting is on unless the kernel
	 * was booted with nodelayacct, which leaves every task->delays NULL.
	 */
	WRITE_ONCE(delayacct_enabled, true);
	return;
#endif
	if (READ_ONCE(delayacct_read_once) &&
	    time_before(jiffies, READ_ONCE(delayacct_read_at) + HZ))
		return;
	WRITE_ONCE(delayacct_read_at, jiffies);
	WRITE_ONCE(delayacct_read_once, true);
	f = filp_open("/proc/sys/kernel/task_delayacct", O_RDONLY, 0);
	if (IS_ERR(f)) {
		WRITE_ONCE(delayacct_enabled, false);
		return;
	}
	if (kernel_read(f, buf, sizeof(buf) - 1, &pos) > 0)
		WRITE_ONCE(delayacct_enabled, buf[0] == '1');
	else
		WRITE_ONCE(delayacct_enabled, false);
	filp_close(f, NULL);
}

static void snap_delays(struct task_struct *task,
			struct stallcap_times_snap *sn)
{
#ifdef CONFIG_TASK_DELAY_ACCT
	const struct task_delay_info *d = READ_ONCE(task->delays);

	if (!d || !READ_ONCE(delayacct_enabled))
		return;
	sn->blkio = READ_ONCE(d->blkio_delay);
	sn->swapin = READ_ONCE(d->swapin_delay);
	sn->reclaim = READ_ONCE(d->freepages_delay);
	sn->thrashing = READ_ONCE(d->thrashing_delay);
	sn->valid |= DELAY_BITS & ~BIT_OF(COMPACT_DELAY);
#ifdef STALLCAP_HAVE_COMPACT_DELAY
	sn->compact = READ_ONCE(d->compact_delay);
	sn->valid |= BIT_OF(COMPACT_DELAY);
#endif
#endif
}

static void snap_sched_info(struct task_struct *task,
			    struct stallcap_times_snap *sn)
{
#ifdef CONFIG_SCHED_INFO
	u64 queued = READ_ONCE(task->sched_info.last_queued);
	u64 now;

	sn->run_delay = READ_ONCE(task->sched_info.run_delay);
	/* queued now: the wait in progress is not in run_delay yet */
	if (queued) {
		now = sched_clock_cpu(task_cpu(task));
		if (now > queued)
			sn->run_delay += now - queued;
	}
	sn->valid |= BIT_OF(RUN_DELAY);
#endif
}

static unsigned long cpu_hardirqs(int cpu)
{
	return kstat_cpu(cpu).irqs_sum + stallcap_cpu_sysvec_irqs(cpu);
}

static void snap_cpu(int cpu, struct stallcap_times_snap *sn)
{
	const u64 *cpustat = kcpustat_cpu(cpu).cpustat;
	unsigned long soft = 0;
	int i;

	for (i = 0; i < NR_SOFTIRQS; i++)
		soft += kstat_cpu(cpu).softirqs[i];
	sn->cpu_irqs = cpu_hardirqs(cpu);
	sn->cpu_softirqs = soft;
	sn->valid |= BIT_OF(CPU_IRQS) | BIT_OF(CPU_SOFTIRQS);
	if (IS_ENABLED(CONFIG_IRQ_TIME_ACCOUNTING)) {
		sn->cpu_irq_ns = READ_ONCE(cpustat[CPUTIME_IRQ]);
		sn->cpu_softirq_ns = READ_ONCE(cpustat[CPUTIME_SOFTIRQ]);
		sn->valid |= BIT_OF(CPU_IRQ_TIME) | BIT_OF(CPU_SOFTIRQ_TIME);
	}
	if (have_steal_clock()) {
		sn->steal_ns = READ_ONCE(cpustat[CPUTIME_STEAL]);
		sn->valid |= BIT_OF(STEAL);
	}
}

/*
 * How far the scheduler's task clock, in which exec_start is, runs behind
 * sched_clock on @cpu: by the CPU's interrupt time since boot with
 * CONFIG_IRQ_TIME_ACCOUNTING, its steal time with
 * CONFIG_PARAVIRT_TIME_ACCOUNTING (seconds, on a machine up for days).
 * The totals of kernel_cpustat: at least what the task clock left out
 * (ksoftirqd's own time is in them too), so that a slice measured with
 * this lag is never longer than the real one, at worst cut to nothing.
 */
static u64 task_clock_lag(int cpu)
{
	const u64 *cpustat = kcpustat_cpu(cpu).cpustat;
	u64 lag = 0;

	if (IS_ENABLED(CONFIG_IRQ_TIME_ACCOUNTING))
		lag += READ_ONCE(cpustat[CPUTIME_IRQ]) +
		       READ_ONCE(cpustat[CPUTIME_SOFTIRQ]);
	if (IS_ENABLED(CONFIG_PARAVIRT_TIME_ACCOUNTING))
		lag += READ_ONCE(cpustat[CPUTIME_STEAL]);
	return lag;
}

/**
 * stallcap_task_cputime() - CPU time of @task, including the part that the
 * scheduler has not yet added to sum_exec_runtime while it runs
 * @task: the thread
 *
 * Context: any, NMI included (loads only).
 */
u64 stallcap_task_cputime(struct task_struct *task)
{
	u64 sum = READ_ONCE(task->se.sum_exec_runtime), start, now;
	int tries = 3;

	if (task != current && !READ_ONCE(task->on_cpu))
		return sum;
	/*
	 * sum and exec_start as of one accounting: the scheduler moves
	 * exec_start, then adds the slice to sum (from a tick on top of us,
	 * or on the task's CPU); a sum older than exec_start would lose that
	 * slice and later blame it on the thread.
	 */
	do {
		start = READ_ONCE(task->se.exec_start);
		sum = READ_ONCE(task->se.sum_exec_runtime);
	} while (start != READ_ONCE(task->se.exec_start) && --tries);
	now = sched_clock_cpu(task_cpu(task));
	now -= min(now, task_clock_lag(task_cpu(task)));
	/*
	 * The slice since the scheduler last accounted it: usually under a
	 * tick, but ticks come late on a loaded (or emulated) machine, and a
	 * cap below the real slice would blame a thread that then sleeps.
	 */
	return now > start ? sum + min_t(u64, now - start, NSEC_PER_SEC) : sum;
}

/**
 * stallcap_times_snap() - read @task's counters now
 * @task: the watched thread (a reference held)
 * @sn: output
 * @now: CLOCK_MONOTONIC time of the snapshot (ns)
 *
 * Context: any, NMI included: loads only.
 */
void stallcap_times_snap(struct task_struct *task,
			 struct stallcap_times_snap *sn, u64 now)
{
	memset(sn, 0, sizeof(*sn));
	sn->at_ns = now;
	sn->cpu = task_cpu(task);
	sn->running = stallcap_task_state(task) == TASK_RUNNING;
	sn->on_cpu = stallcap_task_cputime(task);
	sn->utime = READ_ONCE(task->utime);
	sn->stime = READ_ONCE(task->stime);
	sn->nvcsw = READ_ONCE(task->nvcsw);
	sn->nivcsw = READ_ONCE(task->nivcsw);
	sn->min_flt = READ_ONCE(task->min_flt);
	sn->maj_flt = READ_ONCE(task->maj_flt);
	sn->valid = TASK_BITS;
	snap_sched_info(task, sn);
	snap_delays(task, sn);
	snap_cpu(sn->cpu, sn);
}

static u64 delta(u64 now, u64 then)
{
	return now > then ? now - then : 0;
}

/*
 * The thread ran or waited for a CPU all through [@a, @b]: runnable at both
 * ends and no voluntary switch between (a thread that blocks, even for a
 * page fault's I/O, switches voluntarily; one blocked at @a, woken since,
 * did too, before @a, which is why @a must see it runnable).
 */
static bool never_slept(const struct stallcap_times_snap *a,
			const struct stallcap_times_snap *b, u64 valid)
{
	return a->running && b->running && (valid & BIT_OF(NVCSW)) &&
	       b->nvcsw == a->nvcsw;
}

/**
 * stallcap_times_fill() - the STALLCAP_SEC_TIMES section for [@a, @b]
 * @a: snapshot at the start of the interval (arm or previous sample)
 * @b: snapshot at the capture; its on_cpu and run_delay are set to what
 *	the section says, so that an estimate's excess (see below) is not
 *	carried into the next interval, which starts at @b
 * @out: output section (header included)
 *
 * Context: any, NMI included.
 * Return: the section's size.
 */
u32 stallcap_times_fill(const struct stallcap_times_snap *a,
			struct stallcap_times_snap *b,
			struct stallcap_sec_times *out)
{
	u64 valid = a->valid & b->valid, span, busy;
	struct stallcap_sec_times sec, *t = &sec;

	/* built here and copied: @out may be the ring, never read back */
	memset(t, 0, sizeof(*t));
	t->sec.size = sizeof(*t);
	t->sec.type = STALLCAP_SEC_TIMES;
	if (a->cpu != b->cpu)
		valid &= ~CPU_BITS;
	t->valid = valid;
	t->since_ns = a->at_ns;
	t->on_cpu_ns = delta(b->on_cpu, a->on_cpu);
	t->user_ns = delta(b->utime, a->utime);
	t->system_ns = delta(b->stime, a->stime);
	t->run_delay_ns = delta(b->run_delay, a->run_delay);
	t->nvcsw = delta(b->nvcsw, a->nvcsw);
	t->nivcsw = delta(b->nivcsw, a->nivcsw);
	t->min_flt = delta(b->min_flt, a->min_flt);
	t->maj_flt = delta(b->maj_flt, a->maj_flt);
	span = delta(b->at_ns, a->at_ns);
	/*
	 * A wait is added to the delay counters when it ends, with a start
	 * the kernel recorded: 6.12's delayed dequeue can record it on
	 * another task (seen: 31 s of block I/O in a 60 ms interval).
	 */
	if (valid & (DELAY_BITS & ~BIT_OF(COMPACT_DELAY))) {
		t->blkio_delay_ns = min(delta(b->blkio, a->blkio), span);
		t->swapin_delay_ns = min(delta(b->swapin, a->swapin), span);
		t->reclaim_delay_ns = min(delta(b->reclaim, a->reclaim), span);
		t->thrashing_delay_ns = min(delta(b->thrashing, a->thrashing), span);
	}
	if (valid & BIT_OF(COMPACT_DELAY))
		t->compact_delay_ns = min(delta(b->compact, a->compact), span);
	if (valid & BIT_OF(CPU_IRQS)) {
		t->cpu_irqs = delta(b->cpu_irqs, a->cpu_irqs);
		t->cpu_softirqs = delta(b->cpu_softirqs, a->cpu_softirqs);
	}
	if (valid & BIT_OF(CPU_IRQ_TIME)) {
		t->cpu_irq_ns = delta(b->cpu_irq_ns, a->cpu_irq_ns);
		t->cpu_softirq_ns = delta(b->cpu_softirq_ns, a->cpu_softirq_ns);
	}
	if (valid & BIT_OF(STEAL))
		t->steal_ns = delta(b->steal_ns, a->steal_ns);
	/*
	 * The scheduler's clock (on_cpu, run_delay) and CLOCK_MONOTONIC (the
	 * interval) drift apart by a few percent in a VM, and the running
	 * slice is estimated against an rq clock that excludes IRQ time: a
	 * thread cannot have run or waited longer than the interval.
	 */
	t->on_cpu_ns = min(t->on_cpu_ns, span);
	t->run_delay_ns = min(t->run_delay_ns, span - t->on_cpu_ns);
	/*
	 * The same drift makes a thread that never left its CPU look as if
	 * it slept a few milliseconds (seen: 5.4 ms of 41.7 for a user-mode
	 * spinner): what it did not wait for a CPU, it ran.
	 */
	if ((valid & BIT_OF(ON_CPU)) && never_slept(a, b, valid))
		t->on_cpu_ns = span - t->run_delay_ns;
	if ((valid & BIT_OF(ON_CPU)) && (valid & BIT_OF(RUN_DELAY))) {
		busy = t->on_cpu_ns + t->run_delay_ns;
		t->sleep_ns = delta(span, busy);
		t->valid |= BIT_OF(SLEEP);
	}
	b->on_cpu = a->on_cpu + t->on_cpu_ns;
	b->run_delay = a->run_delay + t->run_delay_ns;
	memcpy(out, t, sizeof(*t));
	return sizeof(*t);
}
