// SPDX-License-Identifier: GPL-2.0
/*
 * Decoding records (stallcap_sample_parse, stallcap_stall_end_parse) and
 * grouping them into stalls (stalls.c), from synthetic records built here.
 */
#include <sys/mman.h>

#include "helpers.h"
#include "kselftest_harness.h"

static const __u64 kips[] = { 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030 };
static const __u64 uips[] = { 0x401000, 0x401100 };
static const unsigned char stack[20] = { 1, 2, 3, 4, 5 };

static const struct stallcap_regs_x86_64 regs = { .ax = 1, .bp = 0x7ffc0040,
						    .sp = 0x7ffc0000, .ip = 0x401010,
						    .flags = 0x246 };

TEST(sample_parts)
{
	struct rec_spec sp = { .stall_id = 7, .pid = 10, .tid = 11, .kips = kips, .nk = 3,
			       .uips = uips, .nu = 2, .stack = stack, .stack_size = 20,
			       .stack_start = 0x7ffc0000, .regs = &regs };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(128, sizeof(struct stallcap_sample));
	EXPECT_EQ(128 + (16 + 144) + (8 + 24) + (8 + 16) + (24 + 24), s->hdr.size);
	EXPECT_EQ(3, v.nr_kernel);
	EXPECT_EQ(2, v.nr_user);
	EXPECT_EQ(kips[2], v.kernel_ips[2]);
	EXPECT_EQ(uips[0], v.user_ips[0]);
	EXPECT_EQ(20, v.stack_size);
	EXPECT_EQ(0x7ffc0000, v.stack_start);
	EXPECT_EQ(0, memcmp(v.stack, stack, 20));
	EXPECT_EQ(7, v.s.stall_id);
	EXPECT_EQ(STALLCAP_ARCH_X86_64, v.regs_arch);
	ASSERT_NE(NULL, stallcap_sample_regs_x86_64(&v));
	EXPECT_EQ(0x401010, stallcap_sample_regs_x86_64(&v)->ip);
	EXPECT_EQ(NULL, stallcap_sample_regs_arm64(&v));
	EXPECT_EQ(0, v.nr_unknown);
	EXPECT_EQ(NULL, stallcap_sample_times(&v));
	EXPECT_EQ(NULL, stallcap_sample_wait(&v));
	free(s);
}

/*
 * A sample in a handler on the alternate signal stack: the stack it
 * interrupted comes in a section the view does not hold, found by
 * stallcap_sample_interrupted_stack(); one per record.
 */
TEST(interrupted_stack_section)
{
	static const unsigned char istack[24] = { 9, 8, 7 };
	struct rec_spec sp = { .stall_id = 7, .pid = 10, .tid = 11, .uips = uips, .nu = 2,
			       .stack = stack, .stack_size = 20, .stack_start = 0x5600001000,
			       .regs = &regs, .istack = istack, .istack_size = 24,
			       .istack_start = 0x7ffc0000 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;
	const void *bytes = NULL;
	__u64 start = 0;
	__u32 size = 0;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(0, v.nr_unknown);
	EXPECT_EQ(20, v.stack_size);
	ASSERT_EQ(1, stallcap_sample_interrupted_stack(s, s->hdr.size, &bytes, &start, &size));
	EXPECT_EQ(0x7ffc0000, start);
	EXPECT_EQ(24, size);
	EXPECT_EQ(0, memcmp(bytes, istack, 24));
	EXPECT_EQ(-EINVAL, stallcap_sample_interrupted_stack(s, s->hdr.size, NULL, &start, &size));
	/* a bad record is not searched */
	EXPECT_EQ(-EBADMSG, stallcap_sample_interrupted_stack(s, 64, &bytes, &start, &size));
	free(s);

	sp.istack_size = 0;
	s = make_sample(&sp);
	EXPECT_EQ(0, stallcap_sample_interrupted_stack(s, s->hdr.size, &bytes, &start, &size));
	free(s);

	sp.istack_size = 24;
	sp.istack_twice = true;
	s = make_sample(&sp);
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);
}

/*
 * A user-mode sample whose copy ended at a page not resident: the resident
 * runs above the gap come in sections the view does not hold, found one by
 * one with stallcap_sample_stack_more(), in record order; a section whose
 * length does not fit makes the record malformed.
 */
TEST(stack_more_sections)
{
	static const unsigned char more[16] = { 4, 4, 4, 4, 4, 4, 4, 4, 0x5a };
	struct rec_spec sp = { .stall_id = 7, .pid = 10, .tid = 11, .uips = uips, .nu = 2,
			       .stack = stack, .stack_size = 20, .stack_start = 0x7ffc0000,
			       .regs = &regs, .more = more, .more_size = 16,
			       .more_start = 0x7ffc2000, .nr_more = 3 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;
	const void *bytes = NULL;
	__u64 start = 0;
	__u32 size = 0;
	unsigned int i;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(0, v.nr_unknown);
	EXPECT_EQ(20, v.stack_size);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, stallcap_sample_stack_more(s, s->hdr.size, i, &bytes, &start, &size));
		EXPECT_EQ(0x7ffc2000 + 8192 * i, start);
		EXPECT_EQ(16, size);
		EXPECT_EQ(0, memcmp(bytes, more, 16));
	}
	EXPECT_EQ(0, stallcap_sample_stack_more(s, s->hdr.size, 3, &bytes, &start, &size));
	EXPECT_EQ(0, stallcap_sample_interrupted_stack(s, s->hdr.size, &bytes, &start, &size));
	EXPECT_EQ(-EINVAL, stallcap_sample_stack_more(s, s->hdr.size, 0, NULL, &start, &size));
	EXPECT_EQ(-EBADMSG, stallcap_sample_stack_more(s, 64, 0, &bytes, &start, &size));
	free(s);

	sp.more_bad_len = 17;	/* more than the section holds */
	s = make_sample(&sp);
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);
}

/*
 * A sample inside a system call: its number and six arguments come from
 * stallcap_sample_syscall(), not the view; a shorter section (the number
 * only) reads with zero arguments, a longer one (a newer module) with what
 * this reader knows; one without its number, or two, make the record
 * malformed.
 */
TEST(syscall_section)
{
	struct stallcap_sec_syscall in = { .nr = 0, .args = { 5, 0x7ffc1000, 4096, 0, 0, 7 } };
	struct rec_spec sp = { .stall_id = 7, .pid = 10, .tid = 11, .regs = &regs, .sys = &in,
			       .state = STALLCAP_STATE_SLEEPING };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sec_syscall out;
	struct stallcap_sample_view v;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(0, v.nr_unknown);
	memset(&out, 0xff, sizeof(out));
	ASSERT_EQ(1, stallcap_sample_syscall(s, s->hdr.size, &out));
	EXPECT_EQ(STALLCAP_SEC_SYSCALL, out.sec.type);
	EXPECT_EQ(0, out.nr);
	EXPECT_EQ(5, out.args[0]);
	EXPECT_EQ(0x7ffc1000, out.args[1]);
	EXPECT_EQ(4096, out.args[2]);
	EXPECT_EQ(7, out.args[5]);
	EXPECT_EQ(-EINVAL, stallcap_sample_syscall(s, s->hdr.size, NULL));
	EXPECT_EQ(-EBADMSG, stallcap_sample_syscall(s, 64, &out));
	free(s);

	sp.sys_size = 16;	/* the number only */
	in.nr = 202;
	s = make_sample(&sp);
	memset(&out, 0xff, sizeof(out));
	ASSERT_EQ(1, stallcap_sample_syscall(s, s->hdr.size, &out));
	EXPECT_EQ(202, out.nr);
	EXPECT_EQ(0, out.args[0]);
	EXPECT_EQ(0, out.args[5]);
	free(s);

	sp.sys_size = 8;	/* no number */
	s = make_sample(&sp);
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);

	sp.sys_size = 0;
	sp.sys_twice = true;
	s = make_sample(&sp);
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);

	sp.sys = NULL;
	sp.sys_twice = false;
	s = make_sample(&sp);
	EXPECT_EQ(0, stallcap_sample_syscall(s, s->hdr.size, &out));
	free(s);
}

/*
 * The "reader built against today's layout reads a record with
 * extra fields": a newer module's record has a longer fixed part (bytes this
 * reader does not know, 0xa5) and sections of unknown types between the
 * known ones (0x5a); the reader sees exactly what it knows.
 */
TEST(newer_record_extra_fixed_part_and_unknown_sections)
{
	struct rec_spec sp = { .stall_id = 9, .pid = 10, .tid = 11, .ns_pid = 2, .ns_tid = 3,
			       .kips = kips, .nk = 3, .uips = uips, .nu = 2, .stack = stack,
			       .stack_size = 20, .stack_start = 0x7ffc0000, .regs = &regs,
			       .fixed_tail = 40, .unknown_sec = 48, .times = true,
			       .realtime_ns = 1700000000123456789ULL, .capture_ns = 5000 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;

	ASSERT_EQ(168, s->fixed_size);
	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(168, v.s.fixed_size);
	EXPECT_EQ(9, v.s.stall_id);
	EXPECT_EQ(2, v.s.ns_pid);
	EXPECT_EQ(3, v.s.ns_tid);
	EXPECT_EQ(1700000000123456789ULL, v.s.capture_realtime_ns);
	EXPECT_EQ(0, strcmp("test", v.s.comm));
	EXPECT_EQ(5, v.nr_unknown);
	EXPECT_EQ(3, v.nr_kernel);
	EXPECT_EQ(kips[0], v.kernel_ips[0]);
	EXPECT_EQ(kips[2], v.kernel_ips[2]);
	EXPECT_EQ(2, v.nr_user);
	EXPECT_EQ(uips[1], v.user_ips[1]);
	EXPECT_EQ(20, v.stack_size);
	EXPECT_EQ(0, memcmp(v.stack, stack, 20));
	ASSERT_NE(NULL, stallcap_sample_regs_x86_64(&v));
	EXPECT_EQ(0x7ffc0000, stallcap_sample_regs_x86_64(&v)->sp);
	ASSERT_NE(NULL, stallcap_sample_times(&v));
	EXPECT_EQ(12345, stallcap_sample_times(&v)->on_cpu_ns);
	free(s);
}

/* An older module's shorter fixed part: the fields it lacks read as zero. */
TEST(older_record_short_fixed_part)
{
	struct rec_spec sp = { .stall_id = 9, .pid = 10, .tid = 11, .kips = kips, .nk = 1,
			       .comm = "short" };
	struct stallcap_sample *s = make_sample(&sp);
	size_t cut = offsetof(struct stallcap_sample, comm);
	struct stallcap_sample_view v;
	unsigned char *p = (unsigned char *)s;

	/* drop the comm field: move the sections down */
	memmove(p + cut, p + sizeof(*s), s->hdr.size - sizeof(*s));
	s->hdr.size -= sizeof(*s) - cut;
	s->fixed_size = (__u32)cut;
	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(9, v.s.stall_id);
	EXPECT_EQ(0, v.s.comm[0]);
	EXPECT_EQ(1, v.nr_kernel);
	EXPECT_EQ(kips[0], v.kernel_ips[0]);
	free(s);
}

/* A smaller TIMES section (an older module) is zero-filled; a larger one cut. */
TEST(times_section_sizes)
{
	struct rec_spec sp = { .kips = kips, .nk = 1, .times = true };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sec_times *t = (void *)find_section(s, STALLCAP_SEC_TIMES);
	struct stallcap_sample_view v;

	ASSERT_NE(NULL, t);
	t->sleep_ns = 77;
	t->sec.size = offsetof(struct stallcap_sec_times, sleep_ns);
	s->hdr.size -= sizeof(*t) - t->sec.size;
	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	ASSERT_TRUE(v.has_times);
	EXPECT_EQ(12345, v.times.on_cpu_ns);
	EXPECT_EQ(0, v.times.sleep_ns);
	free(s);
}

TEST(unknown_arch_registers_not_interpreted)
{
	struct rec_spec sp = { .kips = kips, .nk = 1, .uips = uips, .nu = 2, .regs = &regs,
			       .arch = 0x7e, .regs_size = 40 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(0x7e, v.regs_arch);
	EXPECT_EQ(40, v.regs_size);
	EXPECT_NE(NULL, v.regs);
	EXPECT_EQ(NULL, stallcap_sample_regs_x86_64(&v));
	EXPECT_EQ(NULL, stallcap_sample_regs_arm64(&v));
	EXPECT_EQ(2, v.nr_user);
	free(s);
	/* x86-64's tag on a set too short for x86-64's struct: refused as well */
	sp.arch = STALLCAP_ARCH_X86_64;
	sp.regs_size = 64;
	s = make_sample(&sp);
	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(NULL, stallcap_sample_regs_x86_64(&v));
	free(s);
}

TEST(sample_malformed)
{
	struct rec_spec sp = { .kips = kips, .nk = 3, .uips = uips, .nu = 2, .regs = &regs,
			       .stack = stack, .stack_size = 8 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;
	struct stallcap_section *k = find_section(s, STALLCAP_SEC_KERNEL_IPS);
	struct stallcap_section *u = find_section(s, STALLCAP_SEC_USER_IPS);
	struct stallcap_sec_regs *r = (void *)find_section(s, STALLCAP_SEC_REGS);
	struct stallcap_sec_user_stack *us = (void *)find_section(s, STALLCAP_SEC_USER_STACK);
	__u32 ok;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size - 8, &v)); /* short buffer */
	EXPECT_EQ(-EINVAL, stallcap_sample_parse((char *)s + 4, s->hdr.size, &v));
	s->fixed_size = s->hdr.size + 8;		/* fixed part beyond the record */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->fixed_size = 12;
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->fixed_size = sizeof(*s) + 4;			/* sections misaligned */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->fixed_size = sizeof(*s);
	ok = k->size;
	k->size = 4;					/* below a section header */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	k->size = s->hdr.size;				/* beyond the record */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	k->size = ok + 4;				/* not a multiple of 8 */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	k->size = ok;
	u->type = STALLCAP_SEC_KERNEL_IPS;		/* twice the same section */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	u->type = STALLCAP_SEC_USER_IPS;
	r->regs_size = r->sec.size;			/* registers beyond the section */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	r->regs_size = sizeof(regs);
	us->len = 16;					/* raw stack beyond the section */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	us->len = 8;
	s->hdr.type = STALLCAP_REC_STALL_END;
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->hdr.type = STALLCAP_REC_USER_STACK;
	EXPECT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);
}

/* More frames than the ABI allows is corruption, not truncation. */
TEST(too_many_frames)
{
	static __u64 many[STALLCAP_MAX_FRAMES + 1];
	struct rec_spec sp = { .kips = many, .nk = STALLCAP_MAX_FRAMES + 1 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;

	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);
	sp.nk = STALLCAP_MAX_FRAMES;
	s = make_sample(&sp);
	EXPECT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(STALLCAP_MAX_FRAMES, v.nr_kernel);
	free(s);
}

/* Task sections: their own fixed part and frames, zero-filled when shorter. */
TEST(task_sections)
{
	struct rec_spec sp = { .kips = kips, .nk = 1 };
	struct stallcap_sample *s0 = make_sample(&sp);
	size_t tsize = sizeof(struct stallcap_sec_task) + 3 * 8;
	struct stallcap_sample *s = calloc(1, s0->hdr.size + 2 * tsize);
	struct stallcap_sec_task *t;
	struct stallcap_sample_view v;
	__u64 *ips;

	memcpy(s, s0, s0->hdr.size);
	t = (void *)((char *)s + s0->hdr.size);
	t->sec.size = (__u32)tsize;
	t->sec.type = STALLCAP_SEC_TASK;
	t->fixed_size = sizeof(*t);
	t->role = STALLCAP_ROLE_OWNER;
	t->hop = 1;
	t->tid = 77;
	t->nr_kernel_frames = 2;
	t->nr_user_frames = 1;
	ips = (__u64 *)(t + 1);
	ips[0] = 0xffffffff81000100;
	ips[1] = 0xffffffff81000200;
	ips[2] = 0x401234;
	/* the same, written by an older module: no frame counts, no comm */
	memcpy((char *)t + tsize, t, tsize);
	t = (void *)((char *)t + tsize);
	t->fixed_size = offsetof(struct stallcap_sec_task, comm);
	s->hdr.size = s0->hdr.size + 2 * (__u32)tsize;
	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	ASSERT_EQ(2, v.nr_tasks);
	EXPECT_EQ(tsize, v.tasks[0].t.sec.size);
	EXPECT_EQ(sizeof(*t), v.tasks[0].t.fixed_size);
	EXPECT_EQ(77, v.tasks[0].t.tid);
	EXPECT_EQ(STALLCAP_ROLE_OWNER, v.tasks[0].t.role);
	EXPECT_EQ(2, v.tasks[0].nr_kernel);
	EXPECT_EQ(1, v.tasks[0].nr_user);
	EXPECT_EQ(0xffffffff81000200, v.tasks[0].kernel_ips[1]);
	EXPECT_EQ(0x401234, v.tasks[0].user_ips[0]);
	EXPECT_EQ(77, v.tasks[1].t.tid);
	EXPECT_EQ(0, v.tasks[1].nr_kernel);
	EXPECT_EQ(0, v.tasks[1].nr_user);
	/* frames beyond the section */
	((struct stallcap_sec_task *)((char *)s + s0->hdr.size))->nr_kernel_frames = 9;
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);
	free(s0);
}

/* [p, p + n) lies inside [lo, hi) */
static bool inside(const void *p, size_t n, const void *lo, const void *hi)
{
	return !n || (p && (const char *)p >= (const char *)lo &&
		      (const char *)p + n <= (const char *)hi);
}

/*
 * Hostile records: random bytes of a valid record changed, the record put
 * against a PROT_NONE page.  The parser never reads past the buffer (else
 * this test dies of SIGSEGV) and what it accepts points inside it.
 */
TEST(mutated_records_stay_in_bounds)
{
	struct rec_spec sp = { .kips = kips, .nk = 3, .uips = uips, .nu = 2, .regs = &regs,
			       .stack = stack, .stack_size = 20, .times = true,
			       .fixed_tail = 8, .unknown_sec = 16 };
	struct stallcap_sample *s = make_sample(&sp);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = s->hdr.size;
	unsigned char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *buf, *end;
	struct stallcap_sample_view v;
	unsigned int i, j, accepted = 0;

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	ASSERT_LE(len, page);
	buf = map + page - len;
	end = map + page;
	srandom(1234);
	for (i = 0; i < 20000; i++) {
		memcpy(buf, s, len);
		for (j = 0; j < 1 + (unsigned int)random() % 4; j++)
			buf[random() % len] = (unsigned char)random();
		if (stallcap_sample_parse(buf, len, &v))
			continue;
		accepted++;
		ASSERT_LE(v.s.hdr.size, len);
		ASSERT_TRUE(inside(v.kernel_ips, 8 * v.nr_kernel, buf, end));
		ASSERT_TRUE(inside(v.user_ips, 8 * v.nr_user, buf, end));
		ASSERT_TRUE(inside(v.stack, v.stack_size, buf, end));
		ASSERT_TRUE(inside(v.regs, v.regs_size, buf, end));
		for (j = 0; j < v.nr_tasks; j++) {
			ASSERT_TRUE(inside(v.tasks[j].kernel_ips, 8 * v.tasks[j].nr_kernel,
					   buf, end));
			ASSERT_TRUE(inside(v.tasks[j].user_ips, 8 * v.tasks[j].nr_user,
					   buf, end));
		}
	}
	EXPECT_GT(accepted, 100);	/* changes in payload bytes are accepted */
	munmap(map, 2 * page);
	free(s);
}

TEST(stall_end_parts)
{
	struct stallcap_stall_end e = make_end(3, 10, 11, 100, 250, 2);
	struct {
		struct stallcap_stall_end e;
		__u64 newer[3];
	} big;
	struct stallcap_stall_end p;

	ASSERT_EQ(0, stallcap_stall_end_parse(&e, sizeof(e), &p));
	EXPECT_EQ(150, p.end_ns - p.deadline_ns);
	EXPECT_EQ(STALLCAP_ORIGIN_ARM, p.origin);
	EXPECT_EQ(-EBADMSG, stallcap_stall_end_parse(&e, sizeof(e) - 8, &p));
	/* a newer module's longer record */
	memset(&big, 0xa5, sizeof(big));
	big.e = e;
	big.e.hdr.size = sizeof(big);
	big.e.fixed_size = sizeof(big);
	ASSERT_EQ(0, stallcap_stall_end_parse(&big, sizeof(big), &p));
	EXPECT_EQ(2, p.nr_samples);
	EXPECT_EQ(0, memcmp((char *)&p + 12, (char *)&e + 12, sizeof(e) - 12));
	/* an older one's shorter record: nr_samples and after read as zero */
	e.fixed_size = offsetof(struct stallcap_stall_end, nr_samples);
	e.hdr.size = e.fixed_size;
	ASSERT_EQ(0, stallcap_stall_end_parse(&e, sizeof(e), &p));
	EXPECT_EQ(0, p.nr_samples);
	EXPECT_EQ(11, p.ns_tid);
	e.hdr.type = STALLCAP_REC_SAMPLE;
	EXPECT_EQ(-EBADMSG, stallcap_stall_end_parse(&e, sizeof(e), &p));
}

TEST(watch_event_parts)
{
	struct stallcap_watch_event ev, p;
	char line[256];

	memset(&ev, 0, sizeof(ev));
	ev.hdr.size = sizeof(ev);
	ev.hdr.type = STALLCAP_REC_WATCH;
	ev.fixed_size = sizeof(ev);
	ev.event = STALLCAP_WATCH_STARTED;
	ev.tid = 5;
	ev.ns_tid = 2;
	strcpy(ev.comm, "loop");
	ASSERT_EQ(0, stallcap_watch_event_parse(&ev, sizeof(ev), &p));
	EXPECT_EQ(STALLCAP_WATCH_STARTED, p.event);
	EXPECT_EQ(2, p.ns_tid);
	EXPECT_EQ(0, strcmp("loop", p.comm));
	/* the first busy period (STALLCAP_FEAT_WATCH_BUSY) has its name */
	ev.event = STALLCAP_WATCH_BUSY;
	ASSERT_LT(0, stallcap_format_record(&ev.hdr, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "watch of tid 2 busy")) TH_LOG("%s", line);
	ev.hdr.type = STALLCAP_REC_STALL_END;
	EXPECT_EQ(-EBADMSG, stallcap_watch_event_parse(&ev, sizeof(ev), &p));
}

FIXTURE(group)
{
	struct stalls st;
};

FIXTURE_SETUP(group)
{
	stalls_init(&self->st);
}

FIXTURE_TEARDOWN(group)
{
	stalls_free(&self->st);
}

static void add(struct stalls *st, const struct rec_spec *sp)
{
	struct stallcap_sample *s = make_sample(sp);

	stalls_add(st, &s->hdr);
	free(s);
}

TEST_F(group, samples_grouped_under_their_stall)
{
	struct rec_spec a = { .stall_id = 1, .pid = 10, .tid = 11, .kips = kips, .nk = 1 };
	struct rec_spec b = { .stall_id = 2, .pid = 10, .tid = 12, .kips = kips, .nk = 2 };
	struct stallcap_stall_end e = make_end(1, 10, 11, 0, 5000, 2);
	struct sc_stall *s;

	add(&self->st, &a);
	add(&self->st, &b);
	a.sample_index = 1;
	add(&self->st, &a);
	/* same stall id from another thread (another session): another stall */
	b.tid = 13;
	b.stall_id = 1;
	add(&self->st, &b);
	stalls_add(&self->st, &e.hdr);

	ASSERT_EQ(3, self->st.nr);
	s = self->st.head;
	EXPECT_EQ(11, s->tid);
	EXPECT_EQ(2, s->nr_samples);
	EXPECT_EQ(0, s->samples->v.s.sample_index);
	EXPECT_EQ(1, s->samples->next->v.s.sample_index);
	EXPECT_TRUE(s->ended);
	EXPECT_EQ(5000, sc_stall_over_ns(s));
	EXPECT_EQ(12, s->next->tid);
	EXPECT_FALSE(s->next->ended);
	EXPECT_EQ(13, s->next->next->tid);
	EXPECT_EQ(1, s->next->next->nr_samples);
	EXPECT_EQ(5, self->st.records);
	EXPECT_EQ(0, self->st.bad_records);
}

TEST_F(group, deferred_user_stack_completes_its_samples)
{
	struct rec_spec k = { .stall_id = 4, .pid = 10, .tid = 11, .kips = kips, .nk = 3,
			      .cookie = 99, .flags = STALLCAP_SAMPLE_DEFER_PENDING |
						     STALLCAP_SAMPLE_USTACK_REMOTE };
	struct rec_spec u = { .type = STALLCAP_REC_USER_STACK, .stall_id = 4, .pid = 10,
			      .tid = 11, .cookie = 99, .uips = uips, .nu = 2 };
	struct sc_sample *m;

	/* two samples of one kernel entry share the one deferred record */
	add(&self->st, &k);
	k.sample_index = 1;
	add(&self->st, &k);
	add(&self->st, &u);
	/* a later kernel entry: a new cookie, completed by nothing yet */
	k.sample_index = 2;
	k.cookie = 100;
	add(&self->st, &k);
	ASSERT_EQ(1, self->st.nr);
	EXPECT_EQ(3, self->st.head->nr_samples);
	m = self->st.head->samples;
	EXPECT_TRUE(m->has_deferred);
	EXPECT_EQ(3, m->v.nr_kernel);
	EXPECT_EQ(2, m->user.nr_user);
	EXPECT_EQ(uips[1], m->user.user_ips[1]);
	EXPECT_TRUE(m->next->has_deferred);
	EXPECT_EQ(2, m->next->user.nr_user);
	EXPECT_TRUE(m->next->next->merged);
	EXPECT_FALSE(m->next->next->next->has_deferred);
	EXPECT_EQ(0, m->next->next->next->user.nr_user);
}

TEST_F(group, bad_records_counted)
{
	struct rec_spec a = { .stall_id = 1, .kips = kips, .nk = 1 };
	struct stallcap_sample *s = make_sample(&a);

	find_section(s, STALLCAP_SEC_KERNEL_IPS)->size = 4;
	EXPECT_EQ(NULL, stalls_add(&self->st, &s->hdr));
	EXPECT_EQ(1, self->st.bad_records);
	EXPECT_EQ(0, self->st.nr);
	free(s);
}

TEST_HARNESS_MAIN
