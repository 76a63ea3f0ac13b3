// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap_spin: a test-only module that keeps the calling thread in the
 * kernel, in a named function that calls nothing, for a given time:
 *
 *   echo MS > /sys/kernel/debug/stallcap_spin/irqsoff     local_irq_save()
 *   echo MS > /sys/kernel/debug/stallcap_spin/preemptoff  preempt_disable()
 *   echo MS > /sys/kernel/debug/stallcap_spin/thunk       preempt_disable(),
 *        calling an empty function through a pointer in a loop: with
 *        retpolines, through the kernel's __x86_indirect_thunk_<reg>
 *   echo MS > /sys/kernel/debug/stallcap_spin/thunk_irq   the thunk loop,
 *        interrupted a millisecond after each spin by an irq_work (queued
 *        from a pinned hrtimer, so it interrupts the loop wherever the timer
 *        did) that spins 5 ms with interrupts off in
 *        stallcap_spin_irq_work_loop(): stacks
 *        that cross an interrupt frame whose ip is anywhere in the loop,
 *        the thunk included
 *   echo MS > /sys/kernel/debug/stallcap_spin/softirq     in a tasklet, run
 *                                                         by local_bh_enable()
 *        (EAGAIN when the kernel left the tasklet to ksoftirqd instead, as
 *        kernels before 6.5 do while ksoftirqd is runnable: the spin was
 *        not in the writer's context)
 *
 *   echo MS > /sys/kernel/debug/stallcap_spin/mutex_hold  takes the
 *                                 module's mutex and sleeps MS ms holding it
 *   echo 1 > /sys/kernel/debug/stallcap_spin/mutex_take   takes and drops
 *                                 it (blocks while another holds it)
 *   echo MS > .../rwsem_write_hold, .../rwsem_read_hold   the same with the
 *                                 module's rw-semaphore, held for writing or
 *                                 for reading
 *   echo 1 > .../rwsem_read_take, .../rwsem_write_take    takes and drops it
 *                                 for reading or for writing
 *
 * and, for the NMI tests, on another CPU:
 *
 *   echo "CPU MS" > .../nmi_block   an NMI to CPU that spins MS there in its
 *                                   handler (NMIs held off meanwhile)
 *   echo CPU > .../nmi_raw          an NMI to CPU that no handler claims
 *   cat .../nmi_unknown             NMIs that reached the kernel as unknown
 *                                   (counted by an NMI_UNKNOWN handler)
 *
 * The spinning functions are stallcap_spin_irqsoff_loop(),
 * stallcap_spin_preemptoff_loop() and stallcap_spin_softirq_loop(): the
 * innermost frame of any capture taken during the spin.  They read the TSC
 * inline, so an interrupt always lands in them and never in a callee.
 * stallcap_spin_thunk_loop() does call one, stallcap_spin_thunk_callee(),
 * through the retpoline thunk: a capture lands in either or in the thunk.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/rwsem.h>
#include <linux/uaccess.h>
#include <asm/apic.h>
#include <asm/msr.h>
#include <asm/nmi.h>
#include <asm/tsc.h>

#define MAX_MS	2000

/* TSC cycles per ms, measured against CLOCK_MONOTONIC at load (tsc_khz
 * need not match the TSC a TCG guest reads)
 */
static u64 cycles_per_ms;

static u64 ms_to_cycles(unsigned int ms)
{
	return (u64)ms * cycles_per_ms;
}

/*
 * A TSC reading and the CLOCK_MONOTONIC time of it, taken with interrupts
 * off; false if the vCPU was held up between the two clock reads (a loaded
 * host stops TCG vCPUs for milliseconds: one such gap skewed a 50 ms
 * calibration by 5%).
 */
static bool clock_pair(u64 *t, u64 *c)
{
	unsigned long flags;
	u64 before, after;

	local_irq_save(flags);
	before = ktime_get_ns();
	*c = rdtsc();
	after = ktime_get_ns();
	local_irq_restore(flags);
	*t = before + (after - before) / 2;
	return after - before < 20 * NSEC_PER_USEC;
}

static void calibrate(void)
{
	u64 t0, c0, t1, c1;
	int tries = 20;

	do {
		while (!clock_pair(&t0, &c0) && --tries)
			;
		msleep(50);
		while (!clock_pair(&t1, &c1) && --tries)
			;
	} while (tries > 0 && --tries && t1 - t0 > 80 * NSEC_PER_MSEC);
	cycles_per_ms = div64_u64((c1 - c0) * NSEC_PER_MSEC, t1 - t0);
	pr_info("%llu TSC cycles per ms (tsc_khz %u)\n", cycles_per_ms, tsc_khz);
}

/* Kept out of line and named: the tests look for these names. */
static noinline void stallcap_spin_irqsoff_loop(u64 cycles)
{
	u64 end = rdtsc() + cycles;

	while (rdtsc() < end)
		cpu_relax();
}

static noinline void stallcap_spin_preemptoff_loop(u64 cycles)
{
	u64 end = rdtsc() + cycles;

	while (rdtsc() < end)
		cpu_relax();
}

/* called through a pointer read each time: an indirect call, kept */
static noinline void stallcap_spin_thunk_callee(void)
{
	barrier();
}

static void (*thunk_callee)(void) = stallcap_spin_thunk_callee;

static noinline void stallcap_spin_thunk_loop(u64 cycles)
{
	u64 end = rdtsc() + cycles;

	while (rdtsc() < end)
		READ_ONCE(thunk_callee)();
}

static noinline void stallcap_spin_softirq_loop(u64 cycles)
{
	u64 end = rdtsc() + cycles;

	while (rdtsc() < end)
		cpu_relax();
}

/* ---- the thunk loop under an interrupt that spins ---- */

#define THUNK_IRQ_KICK_MS	1
#define THUNK_IRQ_SPIN_MS	5

static noinline void stallcap_spin_irq_work_loop(u64 cycles)
{
	u64 end = rdtsc() + cycles;

	while (rdtsc() < end)
		cpu_relax();
}

static bool thunk_irq_busy;		/* the irq_work queued or spinning */
static u64 thunk_irq_done;		/* when it last stopped, in cycles */
static unsigned int thunk_irq_spins;	/* spins in the writer's interrupts */
static struct task_struct *thunk_irq_writer;

static void thunk_irq_work_fn(struct irq_work *work)
{
	if (current == READ_ONCE(thunk_irq_writer))
		thunk_irq_spins++;
	stallcap_spin_irq_work_loop(ms_to_cycles(THUNK_IRQ_SPIN_MS));
	WRITE_ONCE(thunk_irq_done, rdtsc());
	WRITE_ONCE(thunk_irq_busy, false);
}

static struct irq_work thunk_irq_work;

/*
 * Queued from the timer's interrupt, the irq_work's self-IPI is taken as
 * the timer's interrupt returns: at the instruction the timer interrupted.
 * Not within a kick period of the last spin's end: the timer, due during
 * the spin, would interrupt the loop at once, and so would the next spin,
 * leaving the loop no instruction to run.
 */
static enum hrtimer_restart thunk_irq_kick(struct hrtimer *timer)
{
	u64 since = rdtsc() - READ_ONCE(thunk_irq_done);

	if (!READ_ONCE(thunk_irq_busy) && since >= ms_to_cycles(THUNK_IRQ_KICK_MS)) {
		WRITE_ONCE(thunk_irq_busy, true);
		irq_work_queue(&thunk_irq_work);
	}
	hrtimer_forward_now(timer, ms_to_ktime(THUNK_IRQ_KICK_MS));
	return HRTIMER_RESTART;
}

static struct hrtimer thunk_irq_timer;
static DEFINE_MUTEX(thunk_irq_mutex);	/* one such spin at a time */

/* -EAGAIN (after the spin) when no irq_work spun over the loop */
static int spin_thunk_under_irq(unsigned int ms)
{
	int ret = 0;

	mutex_lock(&thunk_irq_mutex);
	thunk_irq_spins = 0;
	WRITE_ONCE(thunk_irq_done, rdtsc());
	WRITE_ONCE(thunk_irq_writer, current);
	preempt_disable();
	hrtimer_start(&thunk_irq_timer, ms_to_ktime(THUNK_IRQ_KICK_MS),
		      HRTIMER_MODE_REL_PINNED_HARD);
	stallcap_spin_thunk_loop(ms_to_cycles(ms));
	hrtimer_cancel(&thunk_irq_timer);
	preempt_enable();
	irq_work_sync(&thunk_irq_work);
	WRITE_ONCE(thunk_irq_writer, NULL);
	WRITE_ONCE(thunk_irq_busy, false);
	if (!thunk_irq_spins)
		ret = -EAGAIN;
	mutex_unlock(&thunk_irq_mutex);
	return ret;
}

/* ---- a tasklet that spins ---- */

static u64 softirq_cycles;
static struct task_struct *softirq_spun_in;	/* whose context ran it */
static DECLARE_COMPLETION(softirq_spun);
static DEFINE_MUTEX(softirq_spin_mutex);	/* one softirq spin at a time */

static void spin_tasklet_fn(struct tasklet_struct *t)
{
	WRITE_ONCE(softirq_spun_in, current);
	stallcap_spin_softirq_loop(READ_ONCE(softirq_cycles));
	complete(&softirq_spun);
}

static DECLARE_TASKLET(spin_tasklet, spin_tasklet_fn);

/*
 * Spin in a tasklet that local_bh_enable() runs in this thread's context;
 * -EAGAIN (after the spin) when the kernel deferred it to ksoftirqd.
 */
static int spin_in_softirq(unsigned int ms)
{
	int ret = 0;

	mutex_lock(&softirq_spin_mutex);
	WRITE_ONCE(softirq_cycles, ms_to_cycles(ms));
	WRITE_ONCE(softirq_spun_in, NULL);
	reinit_completion(&softirq_spun);
	local_bh_disable();
	tasklet_schedule(&spin_tasklet);
	local_bh_enable();
	if (!wait_for_completion_timeout(&softirq_spun, msecs_to_jiffies(10 * MAX_MS)))
		ret = -ETIMEDOUT;
	else if (READ_ONCE(softirq_spun_in) != current)
		ret = -EAGAIN;
	mutex_unlock(&softirq_spin_mutex);
	return ret;
}


enum spin_kind {
	SPIN_IRQSOFF, SPIN_PREEMPTOFF, SPIN_THUNK, SPIN_THUNK_IRQ, SPIN_SOFTIRQ
};

static int spin(enum spin_kind kind, unsigned int ms)
{
	unsigned long flags;

	switch (kind) {
	case SPIN_IRQSOFF:
		local_irq_save(flags);
		stallcap_spin_irqsoff_loop(ms_to_cycles(ms));
		local_irq_restore(flags);
		break;
	case SPIN_PREEMPTOFF:
		preempt_disable();
		stallcap_spin_preemptoff_loop(ms_to_cycles(ms));
		preempt_enable();
		break;
	case SPIN_THUNK:
		preempt_disable();
		stallcap_spin_thunk_loop(ms_to_cycles(ms));
		preempt_enable();
		break;
	case SPIN_THUNK_IRQ:
		return spin_thunk_under_irq(ms);
	case SPIN_SOFTIRQ:
		return spin_in_softirq(ms);
	}
	return 0;
}

/* ---- a kernel mutex that a test thread holds while another waits ---- */

static DEFINE_MUTEX(stallcap_spin_mutex);

/* Kept out of line and named: the holder's kernel stack shows it. */
static noinline void stallcap_spin_mutex_holder(unsigned int ms)
{
	mutex_lock(&stallcap_spin_mutex);
	msleep(ms);
	mutex_unlock(&stallcap_spin_mutex);
}

static noinline void stallcap_spin_mutex_taker(void)
{
	mutex_lock(&stallcap_spin_mutex);
	mutex_unlock(&stallcap_spin_mutex);
}

/* ---- the same with an rw-semaphore, for writing and for reading ---- */

static DECLARE_RWSEM(stallcap_spin_rwsem);

static noinline void stallcap_spin_rwsem_writer(unsigned int ms)
{
	down_write(&stallcap_spin_rwsem);
	if (ms)
		msleep(ms);
	up_write(&stallcap_spin_rwsem);
}

static noinline void stallcap_spin_rwsem_reader(unsigned int ms)
{
	down_read(&stallcap_spin_rwsem);
	if (ms)
		msleep(ms);
	up_read(&stallcap_spin_rwsem);
}

enum lock_op {
	MUTEX_TAKE, MUTEX_HOLD,
	RWSEM_WRITE_HOLD, RWSEM_READ_HOLD, RWSEM_READ_TAKE, RWSEM_WRITE_TAKE,
};

static ssize_t lock_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	enum lock_op op = (uintptr_t)file_inode(file)->i_private;
	unsigned int ms;
	int ret;

	ret = kstrtouint_from_user(ubuf, len, 10, &ms);
	if (ret)
		return ret;
	if (ms > MAX_MS)
		return -ERANGE;
	switch (op) {
	case MUTEX_HOLD:
		stallcap_spin_mutex_holder(ms);
		break;
	case MUTEX_TAKE:
		stallcap_spin_mutex_taker();
		break;
	case RWSEM_WRITE_HOLD:
	case RWSEM_WRITE_TAKE:
		stallcap_spin_rwsem_writer(op == RWSEM_WRITE_HOLD ? ms : 0);
		break;
	case RWSEM_READ_HOLD:
	case RWSEM_READ_TAKE:
		stallcap_spin_rwsem_reader(op == RWSEM_READ_HOLD ? ms : 0);
		break;
	}
	return len;
}

static const struct file_operations lock_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = lock_write,
	.llseek = noop_llseek,
};

static ssize_t spin_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	enum spin_kind kind = (uintptr_t)file_inode(file)->i_private;
	unsigned int ms;
	int ret;

	ret = kstrtouint_from_user(ubuf, len, 10, &ms);
	if (ret)
		return ret;
	if (ms > MAX_MS)
		return -ERANGE;
	ret = spin(kind, ms);
	return ret ?: len;
}

/* ---- NMIs ---- */

static DEFINE_PER_CPU(u64, nmi_block_cycles);	/* 0: no NMI of ours due */
static atomic_t nmi_unknown = ATOMIC_INIT(0);

static int block_nmi_handler(unsigned int type, struct pt_regs *regs)
{
	u64 cycles = this_cpu_xchg(nmi_block_cycles, 0);

	if (!cycles)
		return NMI_DONE;
	stallcap_spin_irqsoff_loop(cycles - 1);
	return NMI_HANDLED;
}

static int unknown_nmi_handler(unsigned int type, struct pt_regs *regs)
{
	atomic_inc(&nmi_unknown);
	return NMI_HANDLED;
}

static int send_nmi(unsigned int cpu, unsigned int ms, bool claimed)
{
	u64 *due = per_cpu_ptr(&nmi_block_cycles, cpu);
	int i;

	if (cpu >= nr_cpu_ids || !cpu_online(cpu) || ms > MAX_MS)
		return -EINVAL;
	if (claimed)
		WRITE_ONCE(*due, ms_to_cycles(ms) + 1);
	apic->send_IPI(cpu, NMI_VECTOR);
	/* an NMI of ours is handled within its spin plus a second */
	for (i = 0; claimed && READ_ONCE(*due) && i < ms + 1000; i++)
		usleep_range(1000, 2000);
	return claimed && xchg(due, 0) ? -ETIMEDOUT : 0;
}

static ssize_t nmi_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	bool claimed = file_inode(file)->i_private;
	unsigned int cpu, ms = 0;
	char buf[32];
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%u %u", &cpu, &ms) < (claimed ? 2 : 1))
		return -EINVAL;
	ret = send_nmi(cpu, ms, claimed);
	return ret ? ret : len;
}

static ssize_t nmi_unknown_read(struct file *file, char __user *ubuf,
				size_t len, loff_t *ppos)
{
	char buf[16];
	int n = scnprintf(buf, sizeof(buf), "%d\n", atomic_read(&nmi_unknown));

	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations nmi_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = nmi_write,
	.llseek = noop_llseek,
};

static const struct file_operations nmi_unknown_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = nmi_unknown_read,
	.llseek = noop_llseek,
};

static const struct file_operations spin_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = spin_write,
	.llseek = noop_llseek,
};

static struct dentry *dir;

static int __init stallcap_spin_init(void)
{
	int ret;

	calibrate();
	if (!cycles_per_ms)
		return -ENODEV;
#ifdef IRQ_WORK_INIT_HARD
	thunk_irq_work = IRQ_WORK_INIT_HARD(thunk_irq_work_fn);
#else	/* before 5.11 every irq_work runs in hard interrupt context */
	init_irq_work(&thunk_irq_work, thunk_irq_work_fn);
#endif
#ifdef STALLCAP_SPIN_HRTIMER_SETUP
	hrtimer_setup(&thunk_irq_timer, thunk_irq_kick, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_PINNED_HARD);
#else
	hrtimer_init(&thunk_irq_timer, CLOCK_MONOTONIC,
		     HRTIMER_MODE_REL_PINNED_HARD);
	thunk_irq_timer.function = thunk_irq_kick;
#endif
	ret = register_nmi_handler(NMI_LOCAL, block_nmi_handler, 0,
				   "stallcap_spin");
	if (ret)
		return ret;
	ret = register_nmi_handler(NMI_UNKNOWN, unknown_nmi_handler, 0,
				   "stallcap_spin");
	if (ret) {
		unregister_nmi_handler(NMI_LOCAL, "stallcap_spin");
		return ret;
	}
	dir = debugfs_create_dir("stallcap_spin", NULL);
	debugfs_create_file("irqsoff", 0200, dir, (void *)SPIN_IRQSOFF,
			    &spin_fops);
	debugfs_create_file("preemptoff", 0200, dir, (void *)SPIN_PREEMPTOFF,
			    &spin_fops);
	debugfs_create_file("thunk", 0200, dir, (void *)SPIN_THUNK,
			    &spin_fops);
	debugfs_create_file("thunk_irq", 0200, dir, (void *)SPIN_THUNK_IRQ,
			    &spin_fops);
	debugfs_create_file("softirq", 0200, dir, (void *)SPIN_SOFTIRQ,
			    &spin_fops);
	debugfs_create_file("mutex_hold", 0200, dir, (void *)MUTEX_HOLD,
			    &lock_fops);
	debugfs_create_file("mutex_take", 0200, dir, (void *)MUTEX_TAKE,
			    &lock_fops);
	debugfs_create_file("rwsem_write_hold", 0200, dir,
			    (void *)RWSEM_WRITE_HOLD, &lock_fops);
	debugfs_create_file("rwsem_read_hold", 0200, dir,
			    (void *)RWSEM_READ_HOLD, &lock_fops);
	debugfs_create_file("rwsem_read_take", 0200, dir,
			    (void *)RWSEM_READ_TAKE, &lock_fops);
	debugfs_create_file("rwsem_write_take", 0200, dir,
			    (void *)RWSEM_WRITE_TAKE, &lock_fops);
	debugfs_create_file("nmi_block", 0200, dir, (void *)1, &nmi_fops);
	debugfs_create_file("nmi_raw", 0200, dir, NULL, &nmi_fops);
	debugfs_create_file("nmi_unknown", 0400, dir, NULL, &nmi_unknown_fops);
	return 0;
}

static void __exit stallcap_spin_exit(void)
{
	debugfs_remove_recursive(dir);
	tasklet_kill(&spin_tasklet);
	unregister_nmi_handler(NMI_UNKNOWN, "stallcap_spin");
	unregister_nmi_handler(NMI_LOCAL, "stallcap_spin");
}

module_init(stallcap_spin_init);
module_exit(stallcap_spin_exit);
MODULE_DESCRIPTION("stallcap test-only module: spins in the kernel on request");
MODULE_LICENSE("GPL");
