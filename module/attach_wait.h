/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap attach: what the wait probes' files share (attach_wait.c, the
 * event-loop waits and the entry and return work; attach_wait_kinds.c, the
 * kinds that only some attaches count).
 */
#ifndef STALLCAP_ATTACH_WAIT_H
#define STALLCAP_ATTACH_WAIT_H

#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <uapi/linux/futex.h>

int stallcap_wait_boundary_entry(unsigned int kind);
void stallcap_wait_boundary_return(struct pt_regs *regs, unsigned int kind);
int stallcap_wait_fd_entry(struct kretprobe_instance *ri, unsigned long fd,
			   unsigned int kind);
int stallcap_wait_fd_read_entry(const struct file *file, int iocb_flags,
				unsigned int kind);

/*
 * Instances of a return probe: one per thread inside a probed call of a
 * watched thread (unwatched threads take none beyond the entry handler).
 * A runtime may park thousands of threads on futexes at once (a JVM's
 * pools), and a server with a thread per connection may have thousands
 * waiting for their next request: the futex and receive probes have more.
 * A watched thread that finds none left is not seen to wait: it stays
 * busy, and a long wait is reported.
 */
#define WAIT_MAXACTIVE	1024
#define FUTEX_MAXACTIVE	4096
#define RECV_MAXACTIVE	4096

#define WAIT_PROBE_N(sym, entry, ret, n) {			\
	.kp.symbol_name = sym,					\
	.entry_handler = entry,					\
	.handler = ret,						\
	.maxactive = n,						\
}
#define WAIT_PROBE(sym, entry, ret)				\
	WAIT_PROBE_N(sym, entry, ret, WAIT_MAXACTIVE)
#define FD_PROBE_N(sym, entry, ret, n) {			\
	.kp.symbol_name = sym,					\
	.entry_handler = entry,					\
	.handler = ret,						\
	.data_size = sizeof(bool),				\
	.maxactive = n,						\
}
#define FD_PROBE(sym, entry, ret)				\
	FD_PROBE_N(sym, entry, ret, WAIT_MAXACTIVE)

/* The user registers of the system call (the x86-64 wrappers' argument). */
static inline const struct pt_regs *
syscall_uregs(const struct pt_regs *regs)
{
	return (const struct pt_regs *)regs->di;
}

/* futex(uaddr, op, ...) parks: FUTEX_WAIT and FUTEX_WAIT_BITSET */
static inline bool stallcap_futex_op_parks(unsigned long op)
{
	op &= FUTEX_CMD_MASK;
	return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
}

#endif /* STALLCAP_ATTACH_WAIT_H */
