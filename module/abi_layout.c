// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap ABI layout: every offset and size of every struct of
 * uapi/linux/stallcap.h, pinned at compile time.  The ABI is stable: a
 * change here is a change of the ABI, which only additions at the ends of
 * structs (and new structs) may make.  Generated once from pahole's view of
 * the header, then kept by hand.
 */
#include <linux/build_bug.h>
#include <linux/stddef.h>

#include "stallcap.h"

#define PIN(s, f, off, size) do {					\
	BUILD_BUG_ON(offsetof(struct s, f) != (off));			\
	BUILD_BUG_ON(sizeof_field(struct s, f) != (size));		\
} while (0)

static void __init pin_arm(void)
{
	PIN(stallcap_arm, size, 0, 4);
	PIN(stallcap_arm, flags, 4, 4);
	PIN(stallcap_arm, timeout_ns, 8, 8);
	PIN(stallcap_arm, user_tag, 16, 8);
	PIN(stallcap_arm, __reserved, 24, 8);
	BUILD_BUG_ON(sizeof(struct stallcap_arm) != 32);
}

static void __init pin_attach(void)
{
	PIN(stallcap_attach, size, 0, 4);
	PIN(stallcap_attach, flags, 4, 4);
	PIN(stallcap_attach, pid, 8, 4);
	PIN(stallcap_attach, __reserved0, 12, 4);
	PIN(stallcap_attach, timeout_ns, 16, 8);
	PIN(stallcap_attach, user_tag, 24, 8);
	PIN(stallcap_attach, __reserved, 32, 16);
	BUILD_BUG_ON(sizeof(struct stallcap_attach) != 48);
}

static void __init pin_config(void)
{
	PIN(stallcap_config, size, 0, 4);
	PIN(stallcap_config, flags, 4, 4);
	PIN(stallcap_config, ring_bytes, 8, 4);
	PIN(stallcap_config, user_stack_bytes, 12, 4);
	PIN(stallcap_config, slots, 16, 4);
	PIN(stallcap_config, max_samples, 20, 4);
	PIN(stallcap_config, sample_cap_ns, 24, 8);
	PIN(stallcap_config, rate_limit, 32, 4);
	PIN(stallcap_config, __reserved, 36, 20);
	BUILD_BUG_ON(sizeof(struct stallcap_config) != 56);
}

static void __init pin_info(void)
{
	PIN(stallcap_info, size, 0, 4);
	PIN(stallcap_info, abi_version, 4, 4);
	PIN(stallcap_info, features, 8, 8);
	PIN(stallcap_info, min_deadline_ns, 16, 8);
	PIN(stallcap_info, max_ring_bytes, 24, 4);
	PIN(stallcap_info, max_watches_per_user, 28, 4);
	PIN(stallcap_info, arch, 32, 4);
	PIN(stallcap_info, sample_fixed_size, 36, 4);
	PIN(stallcap_info, mlock_bytes, 40, 8);
	PIN(stallcap_info, mlock_used_bytes, 48, 8);
	PIN(stallcap_info, tsc_khz, 56, 4);
	PIN(stallcap_info, __reserved, 60, 4);
	BUILD_BUG_ON(sizeof(struct stallcap_info) != 64);
}

static void __init pin_stats(void)
{
	PIN(stallcap_stats, size, 0, 4);
	PIN(stallcap_stats, flags, 4, 4);
	PIN(stallcap_stats, watches, 8, 8);
	PIN(stallcap_stats, armed, 16, 8);
	PIN(stallcap_stats, stalls, 24, 8);
	PIN(stallcap_stats, samples, 32, 8);
	PIN(stallcap_stats, stall_ends, 40, 8);
	PIN(stallcap_stats, deferred, 48, 8);
	PIN(stallcap_stats, lost, 56, 8);
	PIN(stallcap_stats, suppressed, 64, 8);
	PIN(stallcap_stats, capture_local, 72, 8);
	PIN(stallcap_stats, capture_nmi, 80, 8);
	PIN(stallcap_stats, capture_ipi, 88, 8);
	PIN(stallcap_stats, capture_blocked, 96, 8);
	PIN(stallcap_stats, migrate_retries, 104, 8);
	PIN(stallcap_stats, lost_first, 112, 8);
	PIN(stallcap_stats, lost_deferred, 120, 8);
	PIN(stallcap_stats, attached, 128, 8);
	PIN(stallcap_stats, locked_bytes, 136, 8);
	PIN(stallcap_stats, locked_rlimit_bytes, 144, 8);
	PIN(stallcap_stats, __reserved, 152, 8);
	PIN(stallcap_stats, capture_cost_hist, 160, 192);
	PIN(stallcap_stats, lateness_hist, 352, 192);
	PIN(stallcap_stats, nmi_time_hist, 544, 192);
	BUILD_BUG_ON(sizeof(struct stallcap_stats) != 736);
}

static void __init pin_ring_ctl(void)
{
	PIN(stallcap_ring_ctl, abi_version, 0, 4);
	PIN(stallcap_ring_ctl, ctl_size, 4, 4);
	PIN(stallcap_ring_ctl, data_offset, 8, 8);
	PIN(stallcap_ring_ctl, data_size, 16, 8);
	PIN(stallcap_ring_ctl, pid_ns_inum, 24, 8);
	PIN(stallcap_ring_ctl, __reserved0, 32, 32);
	PIN(stallcap_ring_ctl, data_head, 64, 8);
	PIN(stallcap_ring_ctl, lost, 72, 8);
	PIN(stallcap_ring_ctl, suppressed, 80, 8);
	PIN(stallcap_ring_ctl, __reserved1, 88, 40);
	PIN(stallcap_ring_ctl, data_tail, 128, 8);
	PIN(stallcap_ring_ctl, __reserved2, 136, 56);
	BUILD_BUG_ON(sizeof(struct stallcap_ring_ctl) != 192);
}

static void __init pin_slot(void)
{
	PIN(stallcap_slot, beats, 0, 8);
	PIN(stallcap_slot, idle, 8, 4);
	PIN(stallcap_slot, armed, 12, 4);
	PIN(stallcap_slot, tid, 16, 4);
	PIN(stallcap_slot, kind, 20, 4);
	PIN(stallcap_slot, deadline_ns, 24, 8);
	PIN(stallcap_slot, deadline_tsc, 32, 8);
	PIN(stallcap_slot, __reserved, 40, 24);
	BUILD_BUG_ON(sizeof(struct stallcap_slot) != 64);
}

static void __init pin_rec_header(void)
{
	PIN(stallcap_rec_header, size, 0, 4);
	PIN(stallcap_rec_header, type, 4, 2);
	PIN(stallcap_rec_header, flags, 6, 2);
	BUILD_BUG_ON(sizeof(struct stallcap_rec_header) != 8);
}

static void __init pin_sample(void)
{
	PIN(stallcap_sample, hdr, 0, 8);
	PIN(stallcap_sample, fixed_size, 8, 4);
	PIN(stallcap_sample, flags, 12, 4);
	PIN(stallcap_sample, stall_id, 16, 8);
	PIN(stallcap_sample, cookie, 24, 8);
	PIN(stallcap_sample, user_tag, 32, 8);
	PIN(stallcap_sample, deadline_ns, 40, 8);
	PIN(stallcap_sample, capture_ns, 48, 8);
	PIN(stallcap_sample, capture_realtime_ns, 56, 8);
	PIN(stallcap_sample, timeout_ns, 64, 8);
	PIN(stallcap_sample, pid, 72, 4);
	PIN(stallcap_sample, tid, 76, 4);
	PIN(stallcap_sample, ns_pid, 80, 4);
	PIN(stallcap_sample, ns_tid, 84, 4);
	PIN(stallcap_sample, cpu, 88, 4);
	PIN(stallcap_sample, sample_index, 92, 4);
	PIN(stallcap_sample, state, 96, 1);
	PIN(stallcap_sample, path, 97, 1);
	PIN(stallcap_sample, clock, 98, 1);
	PIN(stallcap_sample, origin, 99, 1);
	PIN(stallcap_sample, suppressed, 100, 4);
	PIN(stallcap_sample, migrate_retries, 104, 4);
	PIN(stallcap_sample, __reserved0, 108, 4);
	PIN(stallcap_sample, comm, 112, 16);
	BUILD_BUG_ON(sizeof(struct stallcap_sample) != 128);
}

static void __init pin_section(void)
{
	PIN(stallcap_section, size, 0, 4);
	PIN(stallcap_section, type, 4, 2);
	PIN(stallcap_section, flags, 6, 2);
	BUILD_BUG_ON(sizeof(struct stallcap_section) != 8);
}

static void __init pin_regs_x86_64(void)
{
	PIN(stallcap_regs_x86_64, ax, 0, 8);
	PIN(stallcap_regs_x86_64, bx, 8, 8);
	PIN(stallcap_regs_x86_64, cx, 16, 8);
	PIN(stallcap_regs_x86_64, dx, 24, 8);
	PIN(stallcap_regs_x86_64, si, 32, 8);
	PIN(stallcap_regs_x86_64, di, 40, 8);
	PIN(stallcap_regs_x86_64, bp, 48, 8);
	PIN(stallcap_regs_x86_64, sp, 56, 8);
	PIN(stallcap_regs_x86_64, r8, 64, 8);
	PIN(stallcap_regs_x86_64, r9, 72, 8);
	PIN(stallcap_regs_x86_64, r10, 80, 8);
	PIN(stallcap_regs_x86_64, r11, 88, 8);
	PIN(stallcap_regs_x86_64, r12, 96, 8);
	PIN(stallcap_regs_x86_64, r13, 104, 8);
	PIN(stallcap_regs_x86_64, r14, 112, 8);
	PIN(stallcap_regs_x86_64, r15, 120, 8);
	PIN(stallcap_regs_x86_64, ip, 128, 8);
	PIN(stallcap_regs_x86_64, flags, 136, 8);
	BUILD_BUG_ON(sizeof(struct stallcap_regs_x86_64) != 144);
}

static void __init pin_regs_arm64(void)
{
	PIN(stallcap_regs_arm64, x, 0, 248);
	PIN(stallcap_regs_arm64, sp, 248, 8);
	PIN(stallcap_regs_arm64, pc, 256, 8);
	PIN(stallcap_regs_arm64, pstate, 264, 8);
	BUILD_BUG_ON(sizeof(struct stallcap_regs_arm64) != 272);
}

static void __init pin_sec_regs(void)
{
	PIN(stallcap_sec_regs, sec, 0, 8);
	PIN(stallcap_sec_regs, arch, 8, 4);
	PIN(stallcap_sec_regs, regs_size, 12, 4);
	BUILD_BUG_ON(sizeof(struct stallcap_sec_regs) != 16);
}

static void __init pin_sec_user_stack(void)
{
	PIN(stallcap_sec_user_stack, sec, 0, 8);
	PIN(stallcap_sec_user_stack, start, 8, 8);
	PIN(stallcap_sec_user_stack, len, 16, 4);
	PIN(stallcap_sec_user_stack, __reserved, 20, 4);
	BUILD_BUG_ON(sizeof(struct stallcap_sec_user_stack) != 24);
}

static void __init pin_sec_times(void)
{
	PIN(stallcap_sec_times, sec, 0, 8);
	PIN(stallcap_sec_times, valid, 8, 8);
	PIN(stallcap_sec_times, since_ns, 16, 8);
	PIN(stallcap_sec_times, on_cpu_ns, 24, 8);
	PIN(stallcap_sec_times, user_ns, 32, 8);
	PIN(stallcap_sec_times, system_ns, 40, 8);
	PIN(stallcap_sec_times, run_delay_ns, 48, 8);
	PIN(stallcap_sec_times, nvcsw, 56, 8);
	PIN(stallcap_sec_times, nivcsw, 64, 8);
	PIN(stallcap_sec_times, min_flt, 72, 8);
	PIN(stallcap_sec_times, maj_flt, 80, 8);
	PIN(stallcap_sec_times, iowait_ns, 88, 8);
	PIN(stallcap_sec_times, blkio_delay_ns, 96, 8);
	PIN(stallcap_sec_times, swapin_delay_ns, 104, 8);
	PIN(stallcap_sec_times, reclaim_delay_ns, 112, 8);
	PIN(stallcap_sec_times, compact_delay_ns, 120, 8);
	PIN(stallcap_sec_times, thrashing_delay_ns, 128, 8);
	PIN(stallcap_sec_times, cpu_irqs, 136, 8);
	PIN(stallcap_sec_times, cpu_softirqs, 144, 8);
	PIN(stallcap_sec_times, cpu_irq_ns, 152, 8);
	PIN(stallcap_sec_times, cpu_softirq_ns, 160, 8);
	PIN(stallcap_sec_times, steal_ns, 168, 8);
	PIN(stallcap_sec_times, sleep_ns, 176, 8);
	PIN(stallcap_sec_times, __reserved, 184, 32);
	BUILD_BUG_ON(sizeof(struct stallcap_sec_times) != 216);
}

static void __init pin_sec_syscall(void)
{
	PIN(stallcap_sec_syscall, sec, 0, 8);
	PIN(stallcap_sec_syscall, nr, 8, 4);
	PIN(stallcap_sec_syscall, __reserved, 12, 4);
	PIN(stallcap_sec_syscall, args, 16, 48);
	BUILD_BUG_ON(sizeof(struct stallcap_sec_syscall) != 64);
}

static void __init pin_sec_wait(void)
{
	PIN(stallcap_sec_wait, sec, 0, 8);
	PIN(stallcap_sec_wait, kind, 8, 4);
	PIN(stallcap_sec_wait, flags, 12, 4);
	PIN(stallcap_sec_wait, object, 16, 8);
	PIN(stallcap_sec_wait, nr_hops, 24, 4);
	PIN(stallcap_sec_wait, __reserved, 28, 4);
	BUILD_BUG_ON(sizeof(struct stallcap_sec_wait) != 32);
}

static void __init pin_sec_task(void)
{
	PIN(stallcap_sec_task, sec, 0, 8);
	PIN(stallcap_sec_task, fixed_size, 8, 2);
	PIN(stallcap_sec_task, role, 10, 2);
	PIN(stallcap_sec_task, hop, 12, 2);
	PIN(stallcap_sec_task, __reserved0, 14, 2);
	PIN(stallcap_sec_task, flags, 16, 4);
	PIN(stallcap_sec_task, pid, 20, 4);
	PIN(stallcap_sec_task, tid, 24, 4);
	PIN(stallcap_sec_task, ns_pid, 28, 4);
	PIN(stallcap_sec_task, ns_tid, 32, 4);
	PIN(stallcap_sec_task, cpu, 36, 4);
	PIN(stallcap_sec_task, state, 40, 1);
	PIN(stallcap_sec_task, policy, 41, 1);
	PIN(stallcap_sec_task, __reserved1, 42, 2);
	PIN(stallcap_sec_task, prio, 44, 4);
	PIN(stallcap_sec_task, wait_kind, 48, 4);
	PIN(stallcap_sec_task, __reserved2, 52, 4);
	PIN(stallcap_sec_task, wait_object, 56, 8);
	PIN(stallcap_sec_task, comm, 64, 16);
	PIN(stallcap_sec_task, nr_kernel_frames, 80, 2);
	PIN(stallcap_sec_task, nr_user_frames, 82, 2);
	PIN(stallcap_sec_task, __reserved3, 84, 4);
	BUILD_BUG_ON(sizeof(struct stallcap_sec_task) != 88);
}

static void __init pin_stall_end(void)
{
	PIN(stallcap_stall_end, hdr, 0, 8);
	PIN(stallcap_stall_end, fixed_size, 8, 4);
	PIN(stallcap_stall_end, origin, 12, 4);
	PIN(stallcap_stall_end, stall_id, 16, 8);
	PIN(stallcap_stall_end, user_tag, 24, 8);
	PIN(stallcap_stall_end, deadline_ns, 32, 8);
	PIN(stallcap_stall_end, end_ns, 40, 8);
	PIN(stallcap_stall_end, end_realtime_ns, 48, 8);
	PIN(stallcap_stall_end, pid, 56, 4);
	PIN(stallcap_stall_end, tid, 60, 4);
	PIN(stallcap_stall_end, ns_pid, 64, 4);
	PIN(stallcap_stall_end, ns_tid, 68, 4);
	PIN(stallcap_stall_end, nr_samples, 72, 4);
	PIN(stallcap_stall_end, __reserved, 76, 4);
	BUILD_BUG_ON(sizeof(struct stallcap_stall_end) != 80);
}

static void __init pin_watch_event(void)
{
	PIN(stallcap_watch_event, hdr, 0, 8);
	PIN(stallcap_watch_event, fixed_size, 8, 4);
	PIN(stallcap_watch_event, event, 12, 4);
	PIN(stallcap_watch_event, time_ns, 16, 8);
	PIN(stallcap_watch_event, realtime_ns, 24, 8);
	PIN(stallcap_watch_event, timeout_ns, 32, 8);
	PIN(stallcap_watch_event, user_tag, 40, 8);
	PIN(stallcap_watch_event, pid, 48, 4);
	PIN(stallcap_watch_event, tid, 52, 4);
	PIN(stallcap_watch_event, ns_pid, 56, 4);
	PIN(stallcap_watch_event, ns_tid, 60, 4);
	PIN(stallcap_watch_event, comm, 64, 16);
	BUILD_BUG_ON(sizeof(struct stallcap_watch_event) != 80);
}

/** stallcap_abi_layout_check() - compiles only if the layout is the ABI's */
void __init stallcap_abi_layout_check(void)
{
	pin_arm();
	pin_attach();
	pin_config();
	pin_info();
	pin_stats();
	pin_ring_ctl();
	pin_slot();
	pin_rec_header();
	pin_sample();
	pin_section();
	pin_regs_x86_64();
	pin_regs_arm64();
	pin_sec_regs();
	pin_sec_user_stack();
	pin_sec_times();
	pin_sec_syscall();
	pin_sec_wait();
	pin_sec_task();
	pin_stall_end();
	pin_watch_event();
	BUILD_BUG_ON(sizeof(struct stallcap_arm) != STALLCAP_ARM_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct stallcap_attach) != STALLCAP_ATTACH_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct stallcap_config) != STALLCAP_CONFIG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct stallcap_info) != STALLCAP_INFO_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct stallcap_stats) != STALLCAP_STATS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct stallcap_ring_ctl) > PAGE_SIZE);
}
