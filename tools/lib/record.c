// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libstallcap: checking and splitting records.
 *
 * Records are self-describing (see "Records" in the uapi header): a fixed
 * part of fixed_size bytes, then typed sections up to hdr.size.  This file
 * reads the fixed part as min(fixed_size, what it knows), zero for the rest,
 * and walks the sections with bounds checks, skipping types it does not
 * know.  Every function here is a pure function of the caller's buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* smallest fixed part: the header and the fixed_size word (and its pair) */
#define FIXED_MIN	16

/*
 * Check a record's header and fixed part against @len and copy the fixed
 * part into @dst (@known bytes), zero-filling what the record lacks.
 * Returns the fixed size the record declares, or -EBADMSG.
 */
static long fixed_copy(const void *rec, size_t len, __u16 type, void *dst, size_t known)
{
	const struct stallcap_rec_header *h = rec;
	__u32 size, fixed;

	if (len < FIXED_MIN)
		return -EBADMSG;
	size = h->size;
	memcpy(&fixed, (const char *)rec + sizeof(*h), sizeof(fixed));
	if (h->type != type || size > len || size < FIXED_MIN || size % 8)
		return -EBADMSG;
	if (fixed < FIXED_MIN || fixed > size)
		return -EBADMSG;
	memset(dst, 0, known);
	memcpy(dst, rec, fixed < known ? fixed : known);
	/* the copy keeps the values checked above, not a second read */
	((struct stallcap_rec_header *)dst)->size = size;
	memcpy((char *)dst + sizeof(*h), &fixed, sizeof(fixed));
	return fixed;
}

static void section_copy(void *dst, size_t known, const struct stallcap_section *sec,
			 __u32 size)
{
	memset(dst, 0, known);
	memcpy(dst, sec, size < known ? size : known);
	((struct stallcap_section *)dst)->size = size;
}

/* a STALLCAP_SEC_SYSCALL section has at least its number */
#define SYSCALL_MIN_BYTES	offsetof(struct stallcap_sec_syscall, args)

static int ips_section(const struct stallcap_section *sec, __u32 size,
		       const __u64 **ips, unsigned int *nr)
{
	__u32 n = (size - sizeof(*sec)) / 8;

	if (*ips || n > STALLCAP_MAX_FRAMES)
		return -EBADMSG;
	*ips = (const __u64 *)(sec + 1);
	*nr = n;
	return 0;
}

static int regs_section(const struct stallcap_section *sec, __u32 size,
			struct stallcap_sample_view *v)
{
	const struct stallcap_sec_regs *r = (const void *)sec;
	__u32 rsize;

	if (v->regs || size < sizeof(*r))
		return -EBADMSG;
	rsize = r->regs_size;
	if (rsize > size - sizeof(*r))
		return -EBADMSG;
	v->regs_arch = r->arch;
	v->regs_size = rsize;
	v->regs = r + 1;
	return 0;
}

/* The bytes of a section of struct stallcap_sec_user_stack layout, or -1. */
static long stack_bytes(const struct stallcap_section *sec, __u32 size)
{
	const struct stallcap_sec_user_stack *us = (const void *)sec;
	__u32 n;

	if (size < sizeof(*us))
		return -1;
	n = us->len;
	if (n > size - sizeof(*us) || n > STALLCAP_MAX_USER_STACK)
		return -1;
	return n;
}

static int stack_section(const struct stallcap_section *sec, __u32 size,
			 struct stallcap_sample_view *v)
{
	const struct stallcap_sec_user_stack *us = (const void *)sec;
	long n = stack_bytes(sec, size);

	if (v->stack || n < 0)
		return -EBADMSG;
	v->stack = us + 1;
	v->stack_start = us->start;
	v->stack_size = (__u32)n;
	return 0;
}

static int task_section(const struct stallcap_section *sec, __u32 size,
			struct stallcap_sample_view *v)
{
	const struct stallcap_sec_task *t = (const void *)sec;
	struct stallcap_task_view *tv;
	__u16 fixed, nk, nu;

	if (size < offsetof(struct stallcap_sec_task, role))
		return -EBADMSG;
	fixed = t->fixed_size;
	if (fixed < offsetof(struct stallcap_sec_task, role) || fixed % 8 || fixed > size)
		return -EBADMSG;
	if (v->nr_tasks == STALLCAP_VIEW_MAX_TASKS) {
		v->nr_tasks_dropped++;
		return 0;
	}
	tv = &v->tasks[v->nr_tasks];
	section_copy(&tv->t, sizeof(tv->t), sec, fixed);
	tv->t.sec.size = size;
	tv->t.fixed_size = fixed;
	nk = tv->t.nr_kernel_frames;
	nu = tv->t.nr_user_frames;
	if (nk > STALLCAP_MAX_FRAMES || nu > STALLCAP_MAX_FRAMES ||
	    8 * ((size_t)nk + nu) > (size_t)(size - fixed))
		return -EBADMSG;
	tv->kernel_ips = nk ? (const __u64 *)((const char *)sec + fixed) : NULL;
	tv->user_ips = nu ? (const __u64 *)((const char *)sec + fixed) + nk : NULL;
	tv->nr_kernel = nk;
	tv->nr_user = nu;
	v->nr_tasks++;
	return 0;
}

static int section(const struct stallcap_section *sec, __u32 size,
		   struct stallcap_sample_view *v)
{
	switch (sec->type) {
	case STALLCAP_SEC_REGS:
		return regs_section(sec, size, v);
	case STALLCAP_SEC_KERNEL_IPS:
		return ips_section(sec, size, &v->kernel_ips, &v->nr_kernel);
	case STALLCAP_SEC_USER_IPS:
		return ips_section(sec, size, &v->user_ips, &v->nr_user);
	case STALLCAP_SEC_USER_STACK:
		return stack_section(sec, size, v);
	case STALLCAP_SEC_TIMES:
		if (v->has_times)
			return -EBADMSG;
		section_copy(&v->times, sizeof(v->times), sec, size);
		v->has_times = 1;
		return 0;
	case STALLCAP_SEC_WAIT:
		if (v->has_wait)
			return -EBADMSG;
		section_copy(&v->wait, sizeof(v->wait), sec, size);
		v->has_wait = 1;
		return 0;
	case STALLCAP_SEC_TASK:
		return task_section(sec, size, v);
	default:
		v->nr_unknown++;
		return 0;
	}
}

int stallcap_sample_parse(const void *rec, size_t len, struct stallcap_sample_view *v)
{
	const unsigned char *p = rec;
	const struct stallcap_section *sec;
	unsigned int nr_istack = 0, nr_syscall = 0;
	__u32 off, end, size;
	long fixed;
	__u16 type;
	int ret;

	if (!rec || !v || (uintptr_t)rec % 8)
		return -EINVAL;
	if (len < sizeof(struct stallcap_rec_header))
		return -EBADMSG;
	type = ((const struct stallcap_rec_header *)rec)->type;
	if (type != STALLCAP_REC_SAMPLE && type != STALLCAP_REC_USER_STACK)
		return -EBADMSG;
	memset(v, 0, sizeof(*v));
	fixed = fixed_copy(rec, len, type, &v->s, sizeof(v->s));
	if (fixed < 0)
		return (int)fixed;
	if (fixed % 8)
		return -EBADMSG;
	end = v->s.hdr.size;
	for (off = (__u32)fixed; off < end; off += size) {
		if (end - off < sizeof(*sec))
			return -EBADMSG;
		sec = (const void *)(p + off);
		size = sec->size;
		if (size < sizeof(*sec) || size % 8 || size > end - off)
			return -EBADMSG;
		/* not in the view (its layout is the library's ABI): see below */
		if (sec->type == STALLCAP_SEC_INTERRUPTED_STACK)
			ret = stack_bytes(sec, size) < 0 || nr_istack++ ? -EBADMSG : 0;
		else if (sec->type == STALLCAP_SEC_USER_STACK_MORE)
			ret = stack_bytes(sec, size) < 0 ? -EBADMSG : 0;
		else if (sec->type == STALLCAP_SEC_SYSCALL)
			ret = size < SYSCALL_MIN_BYTES || nr_syscall++ ? -EBADMSG : 0;
		else
			ret = section(sec, size, v);
		if (ret)
			return ret;
	}
	return 0;
}

/* The @index-th stack section of @type in a record that parses; 1 if found. */
static int stack_section_at(const void *rec, size_t len, __u16 type, unsigned int index,
			    const void **bytes, __u64 *start, __u32 *size)
{
	const struct stallcap_sec_user_stack *us;
	struct stallcap_sample_view v;
	const unsigned char *p = rec;
	__u32 off, sz;
	int ret;

	if (!bytes || !start || !size)
		return -EINVAL;
	ret = stallcap_sample_parse(rec, len, &v);
	if (ret)
		return ret;
	/* parsed: every section's size fits */
	for (off = v.s.fixed_size; off < v.s.hdr.size; off += sz) {
		us = (const void *)(p + off);
		sz = us->sec.size;
		if (us->sec.type != type || index--)
			continue;
		*bytes = us + 1;
		*start = us->start;
		*size = us->len;
		return 1;
	}
	return 0;
}

int stallcap_sample_interrupted_stack(const void *rec, size_t len, const void **bytes,
				      __u64 *start, __u32 *size)
{
	return stack_section_at(rec, len, STALLCAP_SEC_INTERRUPTED_STACK, 0, bytes, start,
				size);
}

int stallcap_sample_syscall(const void *rec, size_t len, struct stallcap_sec_syscall *sys)
{
	const struct stallcap_section *sec;
	struct stallcap_sample_view v;
	const unsigned char *p = rec;
	__u32 off;
	int ret;

	if (!sys)
		return -EINVAL;
	ret = stallcap_sample_parse(rec, len, &v);
	if (ret)
		return ret;
	/* parsed: every section's size fits, and there is at most one */
	for (off = v.s.fixed_size; off < v.s.hdr.size; off += sec->size) {
		sec = (const void *)(p + off);
		if (sec->type == STALLCAP_SEC_SYSCALL) {
			section_copy(sys, sizeof(*sys), sec, sec->size);
			return 1;
		}
	}
	return 0;
}

int stallcap_sample_stack_more(const void *rec, size_t len, unsigned int index,
			       const void **bytes, __u64 *start, __u32 *size)
{
	return stack_section_at(rec, len, STALLCAP_SEC_USER_STACK_MORE, index, bytes, start,
				size);
}

const struct stallcap_regs_x86_64 *
stallcap_sample_regs_x86_64(const struct stallcap_sample_view *v)
{
	if (!v || !v->regs || v->regs_arch != STALLCAP_ARCH_X86_64 ||
	    v->regs_size < sizeof(struct stallcap_regs_x86_64))
		return NULL;
	return v->regs;
}

const struct stallcap_regs_arm64 *
stallcap_sample_regs_arm64(const struct stallcap_sample_view *v)
{
	if (!v || !v->regs || v->regs_arch != STALLCAP_ARCH_ARM64 ||
	    v->regs_size < sizeof(struct stallcap_regs_arm64))
		return NULL;
	return v->regs;
}

int stallcap_stall_end_parse(const void *rec, size_t len, struct stallcap_stall_end *end)
{
	long fixed;

	if (!rec || !end)
		return -EINVAL;
	fixed = fixed_copy(rec, len, STALLCAP_REC_STALL_END, end, sizeof(*end));
	return fixed < 0 ? (int)fixed : 0;
}

int stallcap_watch_event_parse(const void *rec, size_t len, struct stallcap_watch_event *ev)
{
	long fixed;

	if (!rec || !ev)
		return -EINVAL;
	fixed = fixed_copy(rec, len, STALLCAP_REC_WATCH, ev, sizeof(*ev));
	return fixed < 0 ? (int)fixed : 0;
}
