// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap records: a sample is its fixed part (struct stallcap_sample,
 * fixed_size bytes) followed by typed sections that carry their own size,
 * so that readers skip what they do not know (see "Records" in the uapi
 * header).  The writer only appends: it never reads back what it wrote,
 * since the record may be in the ring, which user space can write.
 *
 * With the abi_test parameter every sample's fixed part is
 * STALLCAP_TEST_FIXED_EXTRA bytes longer (zeros) and its first section is
 * of an unassigned type (0x7f00..0x7fff), so that readers can prove they
 * skip both.  Both fit in the slack of STALLCAP_RECORD_MAX_BYTES: its
 * register section is sized for the larger arm64 set, which the x86-64
 * set, the system call section and these two fit in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/ptrace.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "stallcap.h"

/* What a test section carries: a recognisable pattern. */
#define TEST_SEC_PATTERN	0x5eca7e57ab1e0001ULL

static_assert(sizeof(struct stallcap_regs_arm64) >=
	      sizeof(struct stallcap_regs_x86_64) +
	      sizeof(struct stallcap_sec_syscall) +
	      STALLCAP_TEST_FIXED_EXTRA + STALLCAP_TEST_SEC_BYTES);
static_assert(STALLCAP_TEST_SEC_TYPE >= 0x7f00 && STALLCAP_TEST_SEC_TYPE <= 0x7fff);

/**
 * stallcap_sample_stamp() - the capture's CLOCK_MONOTONIC and CLOCK_REALTIME
 * @s: the fixed part
 *
 * Both read back to back with the NMI-safe accessors, so that their
 * difference converts the record's monotonic times to wall-clock time.
 */
void stallcap_sample_stamp(struct stallcap_sample *s)
{
	s->capture_ns = ktime_get_mono_fast_ns();
	s->capture_realtime_ns = ktime_get_real_fast_ns();
}

/**
 * stallcap_rec_begin() - start a sample record after its fixed part
 * @wr: the writer
 * @s: the fixed part (its fixed_size is set here; copied in later)
 * @rec: where the record is built
 *
 * Context: any, NMI included.
 */
void stallcap_rec_begin(struct stallcap_rec_writer *wr,
			struct stallcap_sample *s, void *rec)
{
	u32 extra = READ_ONCE(stallcap_abi_test) ? STALLCAP_TEST_FIXED_EXTRA : 0;
	u64 *payload;

	wr->rec = rec;
	wr->len = sizeof(*s) + extra;
	s->fixed_size = wr->len;
	memset(wr->rec + sizeof(*s), 0, extra);
	if (!extra)
		return;
	payload = stallcap_sec_start(wr) + sizeof(struct stallcap_section);
	payload[0] = TEST_SEC_PATTERN;
	payload[1] = ~TEST_SEC_PATTERN;
	stallcap_sec_end(wr, STALLCAP_TEST_SEC_TYPE, STALLCAP_TEST_SEC_BYTES);
}

/**
 * stallcap_sec_start() - where the next section begins
 * @wr: the writer
 *
 * The caller writes the payload after the section's header, then calls
 * stallcap_sec_end().
 */
void *stallcap_sec_start(struct stallcap_rec_writer *wr)
{
	return wr->rec + wr->len;
}

/**
 * stallcap_sec_end() - finish the section begun at stallcap_sec_start()
 * @wr: the writer
 * @type: STALLCAP_SEC_*
 * @bytes: bytes of the section, header included; padded to 8 with zeros
 */
void stallcap_sec_end(struct stallcap_rec_writer *wr, u16 type, u32 bytes)
{
	struct stallcap_section *sec = stallcap_sec_start(wr);
	u32 size = ALIGN(bytes, 8);

	memset((u8 *)sec + bytes, 0, size - bytes);
	sec->size = size;
	sec->type = type;
	sec->flags = 0;
	wr->len += size;
}

static void copy_regs_x86_64(struct stallcap_regs_x86_64 *d,
			     const struct pt_regs *r)
{
	d->ax = r->ax;
	d->bx = r->bx;
	d->cx = r->cx;
	d->dx = r->dx;
	d->si = r->si;
	d->di = r->di;
	d->bp = r->bp;
	d->sp = r->sp;
	d->r8 = r->r8;
	d->r9 = r->r9;
	d->r10 = r->r10;
	d->r11 = r->r11;
	d->r12 = r->r12;
	d->r13 = r->r13;
	d->r14 = r->r14;
	d->r15 = r->r15;
	d->ip = r->ip;
	d->flags = r->flags;
}

/*
 * Are @r a thread's entry into a 64-bit system call that has not returned?
 * The entry saves the call's number in orig_ax, sets ax to -ENOSYS until
 * the call returns its result there, and holds the user's instruction
 * pointer and flags in cx and r11 as SYSCALL left them.  An interrupt or
 * exception saves a vector or an error code in orig_ax and the user's own
 * ax and cx; int 0x80 (a 32-bit call) the user's cx.
 */
static bool regs_in_syscall(const struct pt_regs *r)
{
	return (long)r->orig_ax >= 0 && r->ax == SC_AX_IN_SYSCALL &&
	       r->cx == r->ip && r->r11 == r->flags;
}

/* A STALLCAP_SEC_SYSCALL section: the call @r are the entry of. */
static void put_syscall(struct stallcap_rec_writer *wr,
			const struct pt_regs *r)
{
	struct stallcap_sec_syscall *sec = stallcap_sec_start(wr);

	sec->nr = (u32)r->orig_ax;
	sec->__reserved = 0;
	sec->args[0] = r->di;
	sec->args[1] = r->si;
	sec->args[2] = r->dx;
	sec->args[3] = r->r10;
	sec->args[4] = r->r8;
	sec->args[5] = r->r9;
	stallcap_sec_end(wr, STALLCAP_SEC_SYSCALL, sizeof(*sec));
}

/**
 * stallcap_sec_put_regs() - a STALLCAP_SEC_REGS section of user registers
 * @wr: the writer
 * @r: the user registers
 */
void stallcap_sec_put_regs(struct stallcap_rec_writer *wr,
			   const struct pt_regs *r)
{
	struct stallcap_sec_regs *sec = stallcap_sec_start(wr);

	sec->arch = STALLCAP_ARCH_X86_64;
	sec->regs_size = sizeof(struct stallcap_regs_x86_64);
	copy_regs_x86_64((void *)(sec + 1), r);
	stallcap_sec_end(wr, STALLCAP_SEC_REGS,
			 sizeof(*sec) + sizeof(struct stallcap_regs_x86_64));
}

/**
 * stallcap_sec_put_sample_regs() - a sample's user registers and, when they
 *	are the entry of a system call in progress, its STALLCAP_SEC_SYSCALL
 * @wr: the writer
 * @r: the user registers
 *
 * Context: any, NMI included (a copy of saved registers).
 */
void stallcap_sec_put_sample_regs(struct stallcap_rec_writer *wr,
				  const struct pt_regs *r)
{
	stallcap_sec_put_regs(wr, r);
	if (regs_in_syscall(r))
		put_syscall(wr, r);
}

/**
 * stallcap_sec_put_stack_as() - finish a section of struct
 *	stallcap_sec_user_stack layout
 * @wr: the writer; the @len stack bytes are already after the section's
 *	header (struct stallcap_sec_user_stack)
 * @type: STALLCAP_SEC_USER_STACK or STALLCAP_SEC_INTERRUPTED_STACK
 * @start: user address of the first byte
 * @len: bytes copied
 */
void stallcap_sec_put_stack_as(struct stallcap_rec_writer *wr, u16 type,
			       u64 start, u32 len)
{
	struct stallcap_sec_user_stack *sec = stallcap_sec_start(wr);

	sec->start = start;
	sec->len = len;
	sec->__reserved = 0;
	stallcap_sec_end(wr, type, sizeof(*sec) + len);
}

/**
 * stallcap_sec_put_stack() - finish a STALLCAP_SEC_USER_STACK section
 * @wr: the writer, as for stallcap_sec_put_stack_as()
 * @start: user address of the first byte
 * @len: bytes copied
 */
void stallcap_sec_put_stack(struct stallcap_rec_writer *wr, u64 start, u32 len)
{
	stallcap_sec_put_stack_as(wr, STALLCAP_SEC_USER_STACK, start, len);
}
