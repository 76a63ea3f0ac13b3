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
	__u64 stall_id, cookie, deadline_ns, capture_ns, timeout_ns;
	__u32 pid, tid, cpu, sample_index, flags;
	__u8 state;
	const char *comm;
	const __u64 *kips, *uips;
	unsigned int nk, nu;
	const void *stack;
	__u32 stack_size;
	__u64 stack_start;
	const struct stallcap_user_regs *regs;
};

/* A SAMPLE (or USER_STACK) record laid out as the module writes it. */
static inline struct stallcap_sample *make_sample(const struct rec_spec *sp)
{
	size_t size = sizeof(struct stallcap_sample) + 8 * (sp->nk + sp->nu) +
		      ((sp->stack_size + 7) & ~7U);
	struct stallcap_sample *s = calloc(1, size);
	__u64 *ips = (__u64 *)(s + 1);

	s->hdr.size = (__u32)size;
	s->hdr.type = sp->type ? sp->type : STALLCAP_REC_SAMPLE;
	s->stall_id = sp->stall_id;
	s->cookie = sp->cookie;
	s->deadline_ns = sp->deadline_ns;
	s->capture_ns = sp->capture_ns;
	s->timeout_ns = sp->timeout_ns;
	s->pid = sp->pid;
	s->tid = sp->tid;
	s->cpu = sp->cpu;
	s->sample_index = sp->sample_index;
	s->state = sp->state ? sp->state : STALLCAP_STATE_RUNNING;
	s->path = STALLCAP_PATH_NMI;
	s->clock = STALLCAP_CLOCK_WALL;
	s->flags = sp->flags;
	strncpy(s->comm, sp->comm ? sp->comm : "test", sizeof(s->comm));
	if (sp->regs)
		s->regs = *sp->regs;
	s->nr_kernel_frames = (__u16)sp->nk;
	s->nr_user_frames = (__u16)sp->nu;
	s->stack_size = sp->stack_size;
	s->stack_start = sp->stack_start;
	if (sp->nk)
		memcpy(ips, sp->kips, 8 * sp->nk);
	if (sp->nu)
		memcpy(ips + sp->nk, sp->uips, 8 * sp->nu);
	if (sp->stack_size)
		memcpy(ips + sp->nk + sp->nu, sp->stack, sp->stack_size);
	return s;
}

static inline struct stallcap_stall_end make_end(__u64 stall_id, __u32 pid, __u32 tid,
						 __u64 deadline_ns, __u64 end_ns,
						 __u32 nr_samples)
{
	struct stallcap_stall_end e;

	memset(&e, 0, sizeof(e));
	e.hdr.size = sizeof(e);
	e.hdr.type = STALLCAP_REC_STALL_END;
	e.stall_id = stall_id;
	e.pid = pid;
	e.tid = tid;
	e.deadline_ns = deadline_ns;
	e.end_ns = end_ns;
	e.nr_samples = nr_samples;
	return e;
}

/* ---- the fixture process ---- */

struct fixture {
	pid_t pid;
	unsigned long long spin, level2, level1, main_;
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

/* Start the fixture; it prints its functions' addresses, then spins. */
static inline int fixture_start(const char *path, struct fixture *fx)
{
	char line[512];
	int p[2];
	FILE *f;

	if (pipe(p))
		return -errno;
	fx->pid = fork();
	if (fx->pid < 0)
		return -errno;
	if (!fx->pid) {
		dup2(p[1], 1);
		close(p[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "fixture_spin=%llx fixture_level2=%llx fixture_level1=%llx main=%llx",
		   &fx->spin, &fx->level2, &fx->level1, &fx->main_) != 4) {
		kill(fx->pid, SIGKILL);
		waitpid(fx->pid, NULL, 0);
		if (f)
			fclose(f);
		return -EPROTO;
	}
	fclose(f);
	return 0;
}

static inline void fixture_kill(struct fixture *fx)
{
	if (fx->pid > 0) {
		kill(fx->pid, SIGKILL);
		waitpid(fx->pid, NULL, 0);
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
		} else if (c->regs.rip >= fx->spin && c->regs.rip < fx->spin + 0x100) {
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

static inline void capture_regs(const struct capture *c, struct stallcap_user_regs *r)
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
						     struct stallcap_user_regs *regs)
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
