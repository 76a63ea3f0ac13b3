/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the host-side tests: synthetic records, and a real fixture
 * process (tests/fixture.c) stopped with ptrace whose registers and stack
 * are copied the way the module copies them.
 */
#ifndef STALLCAP_TESTS_HELPERS_H
#define STALLCAP_TESTS_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

#define TEST_STACK_BYTES	16384

/* ---- synthetic records ---- */

struct rec_spec {
	__u16 type;
	__u64 stall_id, cookie, deadline_ns, capture_ns, timeout_ns, realtime_ns;
	__u32 pid, tid, ns_pid, ns_tid, cpu, sample_index, flags;
	__u8 state, origin;
	const char *comm;
	const __u64 *kips, *uips;
	unsigned int nk, nu;
	const void *stack;
	__u32 stack_size;
	__u64 stack_start;
	const struct stallcap_regs_x86_64 *regs;
	__u32 arch;		/* of regs; 0: STALLCAP_ARCH_X86_64 */
	__u32 regs_size;	/* 0: sizeof(*regs) */
	__u32 fixed_tail;	/* extra fixed-part bytes (a newer module), 0xa5 */
	__u32 unknown_sec;	/* bytes of an unknown section before each known one */
	bool times;		/* a STALLCAP_SEC_TIMES section */
	const void *istack;	/* a STALLCAP_SEC_INTERRUPTED_STACK section */
	__u32 istack_size;
	__u64 istack_start;
	bool istack_twice;	/* two of them (malformed) */
	const void *more;	/* STALLCAP_SEC_USER_STACK_MORE sections: */
	__u32 more_size;	/* each of these bytes of @more, */
	__u64 more_start;	/* from here, */
	unsigned int nr_more;	/* this many, 8 KiB apart */
	__u32 more_bad_len;	/* the last one's len says this instead */
	const struct stallcap_sec_syscall *sys;	/* a STALLCAP_SEC_SYSCALL section */
	__u32 sys_size;		/* its size: 0 for sizeof(*sys) */
	bool sys_twice;		/* two of them (malformed) */
};

#define ALIGN8_(x)	(((x) + 7) & ~(size_t)7)

/* An unknown section (type 0x7f01, as the module's abi_test writes), 0x5a. */
static inline size_t put_unknown(unsigned char *p, __u32 len)
{
	struct stallcap_section *sec = (void *)p;

	if (!len)
		return 0;
	memset(p, 0x5a, len);
	sec->size = len;
	sec->type = 0x7f01;
	sec->flags = 0;
	return len;
}

static inline size_t put_section(unsigned char *p, __u16 type, const void *body,
				 size_t hdr_len, const void *payload, size_t len)
{
	struct stallcap_section *sec = (void *)p;
	size_t size = ALIGN8_(hdr_len + len);

	memset(p, 0, size);
	if (hdr_len > sizeof(*sec))
		memcpy(p + sizeof(*sec), (const char *)body + sizeof(*sec),
		       hdr_len - sizeof(*sec));
	if (len)
		memcpy(p + hdr_len, payload, len);
	sec->size = (__u32)size;
	sec->type = type;
	return size;
}

/* A SAMPLE (or USER_STACK) record laid out as the module writes it. */
static inline struct stallcap_sample *make_sample(const struct rec_spec *sp)
{
	size_t fixed = sizeof(struct stallcap_sample) + ALIGN8_(sp->fixed_tail);
	__u32 rsize = sp->regs_size ? sp->regs_size : sizeof(struct stallcap_regs_x86_64);
	size_t max = fixed + 5 * (sp->unknown_sec + 8) + sizeof(struct stallcap_sec_regs) +
		     ALIGN8_(rsize) + 8 * (sp->nk + sp->nu) + 16 +
		     sizeof(struct stallcap_sec_user_stack) + ALIGN8_(sp->stack_size) +
		     sizeof(struct stallcap_sec_times) +
		     2 * (sizeof(struct stallcap_sec_user_stack) + ALIGN8_(sp->istack_size)) +
		     sp->nr_more * (sizeof(struct stallcap_sec_user_stack) + ALIGN8_(sp->more_size)) +
		     2 * sizeof(struct stallcap_sec_syscall);
	struct stallcap_sample *s = calloc(1, max);
	unsigned char *p = (unsigned char *)s;
	size_t off = fixed;

	memset(p + sizeof(*s), 0xa5, fixed - sizeof(*s));
	s->hdr.type = sp->type ? sp->type : STALLCAP_REC_SAMPLE;
	s->fixed_size = (__u32)fixed;
	s->stall_id = sp->stall_id;
	s->cookie = sp->cookie;
	s->deadline_ns = sp->deadline_ns;
	s->capture_ns = sp->capture_ns;
	s->capture_realtime_ns = sp->realtime_ns;
	s->timeout_ns = sp->timeout_ns;
	s->pid = sp->pid;
	s->tid = sp->tid;
	s->ns_pid = sp->ns_pid ? sp->ns_pid : sp->pid;
	s->ns_tid = sp->ns_tid ? sp->ns_tid : sp->tid;
	s->cpu = sp->cpu;
	s->sample_index = sp->sample_index;
	s->state = sp->state ? sp->state : STALLCAP_STATE_RUNNING;
	s->path = STALLCAP_PATH_NMI;
	s->clock = STALLCAP_CLOCK_WALL;
	s->origin = sp->origin ? sp->origin : STALLCAP_ORIGIN_ARM;
	s->flags = sp->flags;
	strncpy(s->comm, sp->comm ? sp->comm : "test", sizeof(s->comm));
	off += put_unknown(p + off, sp->unknown_sec);
	if (sp->regs) {
		struct stallcap_sec_regs r = { .arch = sp->arch ? sp->arch : STALLCAP_ARCH_X86_64,
					       .regs_size = rsize };
		unsigned char buf[512] = { 0 };

		memcpy(buf, sp->regs, rsize < sizeof(*sp->regs) ? rsize : sizeof(*sp->regs));
		off += put_section(p + off, STALLCAP_SEC_REGS, &r, sizeof(r), buf, rsize);
		off += put_unknown(p + off, sp->unknown_sec);
	}
	for (int i = 0; sp->sys && i < 1 + sp->sys_twice; i++)
		off += put_section(p + off, STALLCAP_SEC_SYSCALL, sp->sys,
				   sp->sys_size ? sp->sys_size : sizeof(*sp->sys), NULL, 0);
	if (sp->nk) {
		off += put_section(p + off, STALLCAP_SEC_KERNEL_IPS, NULL, 8, sp->kips, 8 * sp->nk);
		off += put_unknown(p + off, sp->unknown_sec);
	}
	if (sp->nu) {
		off += put_section(p + off, STALLCAP_SEC_USER_IPS, NULL, 8, sp->uips, 8 * sp->nu);
		off += put_unknown(p + off, sp->unknown_sec);
	}
	if (sp->stack_size) {
		struct stallcap_sec_user_stack us = { .start = sp->stack_start,
						      .len = sp->stack_size };

		off += put_section(p + off, STALLCAP_SEC_USER_STACK, &us, sizeof(us),
				   sp->stack, sp->stack_size);
		off += put_unknown(p + off, sp->unknown_sec);
	}
	for (int i = 0; sp->istack_size && i < 1 + sp->istack_twice; i++) {
		struct stallcap_sec_user_stack is = { .start = sp->istack_start,
						      .len = sp->istack_size };

		off += put_section(p + off, STALLCAP_SEC_INTERRUPTED_STACK, &is, sizeof(is),
				   sp->istack, sp->istack_size);
	}
	for (unsigned int i = 0; i < sp->nr_more; i++) {
		struct stallcap_sec_user_stack ms = { .start = sp->more_start + 8192 * i,
						      .len = sp->more_size };

		if (sp->more_bad_len && i + 1 == sp->nr_more)
			ms.len = sp->more_bad_len;
		off += put_section(p + off, STALLCAP_SEC_USER_STACK_MORE, &ms, sizeof(ms),
				   sp->more, sp->more_size);
	}
	if (sp->times) {
		struct stallcap_sec_times t = { .valid = 1ULL << STALLCAP_TIME_ON_CPU,
						.since_ns = sp->deadline_ns,
						.on_cpu_ns = 12345 };

		off += put_section(p + off, STALLCAP_SEC_TIMES, &t, sizeof(t), NULL, 0);
	}
	s->hdr.size = (__u32)off;
	return s;
}

/* the sections of a made sample: where one of type @type starts, or NULL */
static inline struct stallcap_section *find_section(struct stallcap_sample *s, __u16 type)
{
	unsigned char *p = (unsigned char *)s;
	__u32 off;

	for (off = s->fixed_size; off < s->hdr.size;
	     off += ((struct stallcap_section *)(p + off))->size)
		if (((struct stallcap_section *)(p + off))->type == type)
			return (void *)(p + off);
	return NULL;
}

static inline struct stallcap_stall_end make_end(__u64 stall_id, __u32 pid, __u32 tid,
						 __u64 deadline_ns, __u64 end_ns,
						 __u32 nr_samples)
{
	struct stallcap_stall_end e;

	memset(&e, 0, sizeof(e));
	e.hdr.size = sizeof(e);
	e.hdr.type = STALLCAP_REC_STALL_END;
	e.fixed_size = sizeof(e);
	e.origin = STALLCAP_ORIGIN_ARM;
	e.stall_id = stall_id;
	e.pid = pid;
	e.tid = tid;
	e.ns_pid = pid;
	e.ns_tid = tid;
	e.deadline_ns = deadline_ns;
	e.end_ns = end_ns;
	e.nr_samples = nr_samples;
	return e;
}

/*
 * A record file at @path: @p's maps, then one stall of @p's main thread
 * (named @comm) with one user-mode sample, whose frame-pointer walk gave
 * @ips (@n of them), and the stall's end.
 */
static inline int write_fp_stall(const char *path, struct sc_proc *p, const char *comm,
				 const __u64 *ips, unsigned int n)
{
	__u64 base = NSEC_PER_SEC;
	struct rec_spec sp = { .stall_id = 1, .pid = p->pid, .tid = p->pid,
			       .comm = comm, .flags = STALLCAP_SAMPLE_USER_MODE,
			       .deadline_ns = base, .capture_ns = base + NSEC_PER_MSEC,
			       .timeout_ns = NSEC_PER_MSEC, .uips = ips, .nu = n };
	struct scfile *f = scfile_create(path);
	struct stallcap_stall_end e;
	struct stallcap_sample *s;
	struct sc_sink *sk;

	if (!f)
		return -1;
	sk = scfile_sink(f);
	sk->proc(sk, p);
	s = make_sample(&sp);
	sk->record(sk, &s->hdr);
	free(s);
	e = make_end(1, p->pid, p->pid, base, base + 10 * NSEC_PER_MSEC, 1);
	sk->record(sk, &e.hdr);
	return scfile_close(f);
}

/* The standard output of the shell command @cmd in @out (@size), its exit status. */
static inline int command_output(const char *cmd, char *out, size_t size)
{
	size_t n;
	FILE *p = popen(cmd, "r");

	if (!p)
		return -1;
	n = fread(out, 1, size - 1, p);
	out[n] = 0;
	return pclose(p);
}

/* Index of the first of @n frames @f named @sym at or after @from, or -1. */
static inline int frame_named(const struct sc_frame *f, int n, int from, const char *sym)
{
	for (; from < n; from++)
		if (f[from].sym && !strcmp(f[from].sym, sym))
			return from;
	return -1;
}

/* ---- the fixture process ---- */

struct fixture {
	pid_t pid;
	unsigned long long spin, level2, level1, main_;
	unsigned long long pc_lo, pc_hi;	/* the capture's pc range, else fixture_spin's */
};

static inline const char *fixture_path(const char *name)
{
	static char path[4096];
	char self[4000];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	self[n > 0 ? n : 0] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(path, sizeof(path), "%s/%s", self, name);
	return path;
}

/* @to: a copy of @from, executable (a program the test may delete or replace) */
static inline int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -1;
	unlink(to);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	return out < 0 ? -1 : close(out);
}

/*
 * Run the program @path; the first line it prints in @line (@size).
 * Return: its pid, still running (the caller kills it), or -errno.
 */
static inline pid_t program_first_line(const char *path, char *line, size_t size)
{
	pid_t pid;
	int p[2];
	FILE *f;

	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		dup2(p[1], 1);
		close(p[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	line[0] = 0;
	if (!f || !fgets(line, (int)size, f))
		line[0] = 0;
	if (f)
		fclose(f);
	else
		close(p[0]);
	return pid;
}

static inline void program_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Start the fixture; it prints its functions' addresses, then spins. */
static inline int fixture_start(const char *path, struct fixture *fx)
{
	char line[512];

	fx->pid = program_first_line(path, line, sizeof(line));
	if (fx->pid < 0)
		return fx->pid;
	if (sscanf(line, "fixture_spin=%llx fixture_level2=%llx fixture_level1=%llx main=%llx",
		   &fx->spin, &fx->level2, &fx->level1, &fx->main_) != 4) {
		program_kill(fx->pid);
		return -EPROTO;
	}
	return 0;
}

static inline void fixture_kill(struct fixture *fx)
{
	if (fx->pid > 0) {
		program_kill(fx->pid);
		fx->pid = 0;
	}
}

struct capture {
	struct user_regs_struct regs;
	unsigned char stack[TEST_STACK_BYTES];
	__u32 stack_size;
	__u64 fp_ips[STALLCAP_MAX_FRAMES];
	unsigned int nr_fp;
};

static inline int mem_read(int memfd, __u64 addr, void *buf, size_t len)
{
	return pread(memfd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

/* The module's frame-pointer walk: ip, then return addresses along rbp. */
static inline void fp_walk(int memfd, struct capture *c)
{
	__u64 fp = c->regs.rbp, frame[2];

	c->fp_ips[c->nr_fp++] = c->regs.rip;
	while (c->nr_fp < STALLCAP_MAX_FRAMES && fp >= c->regs.rsp && !(fp & 7)) {
		if (mem_read(memfd, fp, frame, sizeof(frame)) || !frame[1])
			break;
		c->fp_ips[c->nr_fp++] = frame[1];
		if (frame[0] <= fp)
			break;
		fp = frame[0];
	}
}

/*
 * Stop the fixture while it runs fixture_spin, copy its registers, the top
 * of its stack and a frame-pointer walk, as the module does at a capture.
 */
static inline int fixture_capture(struct fixture *fx, struct capture *c)
{
	char path[64];
	int memfd, tries, ret = -EAGAIN;
	__u32 n;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/proc/%d/mem", fx->pid);
	for (tries = 0; tries < 50 && ret == -EAGAIN; tries++) {
		usleep(20000);
		if (ptrace(PTRACE_ATTACH, fx->pid, NULL, NULL))
			return -errno;
		waitpid(fx->pid, NULL, 0);
		if (ptrace(PTRACE_GETREGS, fx->pid, NULL, &c->regs)) {
			ret = -errno;
		} else if (fx->pc_hi ? c->regs.rip >= fx->pc_lo && c->regs.rip < fx->pc_hi :
			   c->regs.rip >= fx->spin && c->regs.rip < fx->spin + 0x100) {
			memfd = open(path, O_RDONLY | O_CLOEXEC);
			if (memfd < 0)
				return -errno;
			/* the copy may end early at the top of the stack mapping */
			for (n = 0; n < TEST_STACK_BYTES; n += 8)
				if (mem_read(memfd, c->regs.rsp + n, c->stack + n, 8))
					break;
			c->stack_size = n;
			fp_walk(memfd, c);
			close(memfd);
			ret = 0;
		}
		ptrace(PTRACE_DETACH, fx->pid, NULL, NULL);
	}
	return ret;
}

static inline void capture_regs(const struct capture *c, struct stallcap_regs_x86_64 *r)
{
	const struct user_regs_struct *u = &c->regs;

	memset(r, 0, sizeof(*r));
	r->ax = u->rax; r->bx = u->rbx; r->cx = u->rcx; r->dx = u->rdx;
	r->si = u->rsi; r->di = u->rdi; r->bp = u->rbp; r->sp = u->rsp;
	r->r8 = u->r8; r->r9 = u->r9; r->r10 = u->r10; r->r11 = u->r11;
	r->r12 = u->r12; r->r13 = u->r13; r->r14 = u->r14; r->r15 = u->r15;
	r->ip = u->rip; r->flags = u->eflags;
}

/* A sample record holding a capture. */
static inline struct stallcap_sample *capture_sample(const struct capture *c, pid_t pid,
						     struct stallcap_regs_x86_64 *regs)
{
	struct rec_spec sp = {
		.stall_id = 1, .pid = (__u32)pid, .tid = (__u32)pid,
		.flags = STALLCAP_SAMPLE_USER_MODE, .comm = "fixture",
		.uips = c->fp_ips, .nu = c->nr_fp,
		.stack = c->stack, .stack_size = c->stack_size,
		.stack_start = c->regs.rsp, .regs = regs,
		.deadline_ns = 1000, .capture_ns = 2000, .timeout_ns = 1000,
	};

	capture_regs(c, regs);
	return make_sample(&sp);
}

#endif /* STALLCAP_TESTS_HELPERS_H */
