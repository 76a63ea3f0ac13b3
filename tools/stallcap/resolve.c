// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): turning a stall's samples into symbolized, labelled frames
 * for the formatters.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "usyms.h"

const char *sc_state_name(__u8 state)
{
	static const char *const names[] = {
		[STALLCAP_STATE_RUNNING] = "running",
		[STALLCAP_STATE_RUNNABLE] = "runnable",
		[STALLCAP_STATE_SLEEPING] = "sleeping",
		[STALLCAP_STATE_UNINTERRUPTIBLE] = "uninterruptible",
		[STALLCAP_STATE_STOPPED] = "stopped",
		[STALLCAP_STATE_EXITING] = "exiting",
	};

	return state < ARRAY_SIZE(names) && names[state] ? names[state] : "unknown";
}

const char *sc_path_name(__u8 path)
{
	static const char *const names[] = {
		[STALLCAP_PATH_LOCAL] = "local",
		[STALLCAP_PATH_NMI] = "nmi",
		[STALLCAP_PATH_IPI] = "ipi",
		[STALLCAP_PATH_BLOCKED] = "blocked",
		[STALLCAP_PATH_DEFERRED] = "deferred",
	};

	return path < ARRAY_SIZE(names) && names[path] ? names[path] : "unknown";
}

const char *sc_clock_name(__u8 clock)
{
	static const char *const names[] = {
		[STALLCAP_CLOCK_WALL] = "wall",
		[STALLCAP_CLOCK_CPUTIME] = "cputime",
		[STALLCAP_CLOCK_HEARTBEAT] = "heartbeat",
		[STALLCAP_CLOCK_SHARED] = "shared",
	};

	return clock < ARRAY_SIZE(names) && names[clock] ? names[clock] : "unknown";
}

/* who made the watch: the thread itself (ARM) or the module (ATTACH) */
const char *sc_origin_name(__u32 origin)
{
	switch (origin) {
	case STALLCAP_ORIGIN_ARM:
		return "armed";
	case STALLCAP_ORIGIN_ATTACH:
		return "attached";
	default:
		return "unknown";
	}
}

const char *sc_arch_name(__u32 arch)
{
	switch (arch) {
	case STALLCAP_ARCH_X86_64:
		return "x86_64";
	case STALLCAP_ARCH_ARM64:
		return "arm64";
	default:
		return "unknown";
	}
}

/**
 * sc_realtime() - CLOCK_REALTIME of CLOCK_MONOTONIC time @mono of a stall
 * @s: the sample @mono comes from (its own realtime stamp), or NULL
 *
 * A sample's stamps were read together, so its own pair converts exactly;
 * else the stall's (first sample or end), else the recording's offset.
 */
bool sc_realtime(const struct sc_rstall *rs, const struct stallcap_sample *s, __u64 mono,
		 __u64 *rt)
{
	if (s && s->capture_realtime_ns) {
		*rt = mono + (s->capture_realtime_ns - s->capture_ns);
		return true;
	}
	if (!rs->rt_known)
		return false;
	*rt = mono + (__u64)rs->rt_offset_ns;
	return true;
}

/* The stall's realtime offset: from a sample, its end, or the recording. */
static void stall_rt_offset(const struct resolver *r, const struct sc_stall *st,
			    struct sc_rstall *out)
{
	const struct sc_sample *m;

	for (m = st->samples; m; m = m->next) {
		if (m->v.s.capture_realtime_ns) {
			out->rt_offset_ns = (__s64)(m->v.s.capture_realtime_ns - m->v.s.capture_ns);
			out->rt_known = true;
			return;
		}
	}
	if (st->ended && st->end.end_realtime_ns) {
		out->rt_offset_ns = (__s64)(st->end.end_realtime_ns - st->end.end_ns);
		out->rt_known = true;
		return;
	}
	out->rt_offset_ns = r->rt_offset_ns;
	out->rt_known = r->rt_offset_known;
}

const char *sc_method_name(__u8 method)
{
	static const char *const names[] = {
		[SC_METHOD_KERNEL] = "kernel",
		[SC_METHOD_FP] = "fp",
		[SC_METHOD_DWARF] = "dwarf",
	};

	return method < ARRAY_SIZE(names) ? names[method] : "unknown";
}

/* How far past its deadline the stall went: to its end, or its last sample. */
__u64 sc_stall_over_ns(const struct sc_stall *st)
{
	const struct sc_sample *m;
	__u64 over = 0;

	if (st->ended && st->end.end_ns > st->end.deadline_ns)
		return st->end.end_ns - st->end.deadline_ns;
	for (m = st->samples; m; m = m->next)
		if (m->v.s.capture_ns > m->v.s.deadline_ns &&
		    m->v.s.capture_ns - m->v.s.deadline_ns > over)
			over = m->v.s.capture_ns - m->v.s.deadline_ns;
	return over;
}

static bool same_frames(const struct sc_frame *a, int na, const struct sc_frame *b, int nb)
{
	int i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].addr != b[i].addr)
			return false;
	return true;
}

bool sc_same_stack(const struct sc_rsample *a, const struct sc_rsample *b)
{
	return a->smp->v.s.state == b->smp->v.s.state &&
	       same_frames(a->kf, a->nk, b->kf, b->nk) &&
	       same_frames(a->uf, a->nu, b->uf, b->nu);
}

static void resolve_kernel(struct resolver *r, const struct stallcap_sample_view *v,
			   struct sc_frame *f, int n)
{
	const struct ksym *k = NULL;
	__u64 a;
	int i;

	for (i = 0; i < n; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].addr = v->kernel_ips[i];
		f[i].method = SC_METHOD_KERNEL;
		f[i].is_return = ksym_frame_is_return((unsigned int)i, k);
		a = f[i].is_return && f[i].addr ? f[i].addr - 1 : f[i].addr;
		k = ksyms_find(r->ks, a);
		if (!k && r->live_path && !r->live_tried) {
			r->live_tried = true;
			r->live = ksyms_new();
			if (r->live && ksyms_load(r->live, r->live_path)) {
				ksyms_free(r->live);
				r->live = NULL;
			}
		}
		if (!k && r->live)
			k = ksyms_find(r->live, a);
		if (!k)
			continue;
		f[i].sym = k->name;
		f[i].off = f[i].addr - k->addr;
		f[i].dso = k->mod ? k->mod : "kernel";
	}
}

/*
 * Symbolize the @n user frames of @raw into @out (room for SC_MAX_UFRAMES),
 * each preceded by the functions inlined at its address; every frame of
 * @raw is kept, inline ones while there is room.  Returns the frames in @out.
 */
static int resolve_user(struct resolver *r, __u32 pid, struct sc_frame *raw, int n,
			struct sc_frame *out)
{
	int i, k = 0;

	for (i = 0; i < n; i++) {
		usyms_resolve(r->us, pid, &raw[i]);
		k += usyms_inlines(r->us, pid, &raw[i], out + k, SC_MAX_UFRAMES - k - (n - i));
		out[k++] = raw[i];
	}
	return k;
}

/* A task section's frames: kernel ones by symbol, user ones in its process. */
static void resolve_task(struct sc_rstall *rs, const struct stallcap_task_view *tv,
			 struct sc_rtask *rt)
{
	struct stallcap_sample_view kv = { .kernel_ips = tv->kernel_ips };
	const struct sc_proc *p = usyms_proc(rs->r->us, tv->t.pid);
	int i;

	rt->nk = (int)tv->nr_kernel;
	resolve_kernel(rs->r, &kv, rt->f, rt->nk);
	/* the frame-pointer walk, up to its first address outside the code */
	for (i = 0; i < (int)tv->nr_user; i++) {
		struct sc_frame *f = &rs->rbuf[i];

		if (p && !sc_proc_is_text(p, tv->user_ips[i]))
			break;

		memset(f, 0, sizeof(*f));
		f->addr = tv->user_ips[i];
		f->method = SC_METHOD_FP;
		f->is_return = i > 0;
	}
	rt->nu = resolve_user(rs->r, tv->t.pid, rs->rbuf, i, rt->f + rt->nk);
}

/*
 * Frames that end in code no file describes (a JIT's: named from a perf map,
 * or not at all) were cut short, whatever the walk that gave them says: no
 * thread's outermost frame is there.  The frame-pointer walk stops there
 * when the JIT keeps no frame pointers (a JVM without
 * -XX:+PreserveFramePointer), and so does libdw's fallback.
 */
static bool in_jit_code(struct resolver *r, __u32 pid, const struct sc_frame *f)
{
	return sc_proc_is_jit(usyms_proc(r->us, pid), f->addr);
}

/*
 * Go's runtime.mcall switches from a goroutine's stack to its thread's
 * scheduler stack (g0) and calls a function there that never returns: the
 * words above that call are g0's, not callers (DWARF's walk took one for a
 * frame of runtime.newproc, then a data address).  The frames end there.
 */
static void go_stack_switch_end(struct sc_rsample *c)
{
	int i;

	for (i = 1; i < c->nu; i++) {
		if (c->uf[i].is_return && c->uf[i].sym && !strcmp(c->uf[i].sym, "runtime.mcall")) {
			c->nu = i + 1;
			c->ustop.end = UNWIND_END_STACK_SWITCH;
			return;
		}
	}
}

/*
 * The ends a JIT's code explains when the last frame is in it: the walk
 * stopped or found no caller, or the frame-pointer fallback, taking the
 * JIT's rbp (a general register there: a loop count, say) for a frame
 * pointer, read a word on no stack or got a pc in no code.  Not the end of
 * the stack copy: that one is true and the remedy differs (a larger copy).
 */
static bool jit_may_end(enum unwind_end end)
{
	return end == UNWIND_END_STOPPED || end == UNWIND_END_OUTERMOST ||
	       end == UNWIND_END_OUTSIDE || end == UNWIND_END_ERROR;
}

/*
 * The walk went from one frame in a JIT's code to another (only frame
 * pointers chain them) before it ended: the JIT keeps frame pointers, and
 * its chain ends there, as an Erlang process's does at the bottom of its
 * stack (normal_exit), whose caller, the scheduler's C code, runs on
 * another stack.
 */
static bool jit_chain_ended(struct resolver *r, __u32 pid, const struct sc_rsample *c)
{
	return c->nu >= 2 && in_jit_code(r, pid, &c->uf[c->nu - 2]);
}

static void jit_end(struct resolver *r, __u32 pid, struct sc_rsample *c)
{
	const struct sc_frame *f = c->nu ? &c->uf[c->nu - 1] : NULL;
	int i;

	/* and a frame there that no perf map named: the report says where names come from */
	c->jit_unnamed = false;
	for (i = 0; i < c->nu && !c->jit_unnamed; i++)
		c->jit_unnamed = !c->uf[i].sym && in_jit_code(r, pid, &c->uf[i]);
	if (!f || !jit_may_end(c->ustop.end))
		return;
	if (in_jit_code(r, pid, f))
		c->ustop.end = jit_chain_ended(r, pid, c) ? UNWIND_END_JIT_CHAIN : UNWIND_END_JIT;
}

/* Note the files of @f's frames that no symbol names, for hint_unnamed(). */
static void note_unnamed(struct resolver *r, const struct sc_frame *f, int n)
{
	unsigned int k;
	int i;

	for (i = 0; i < n; i++) {
		if (!f[i].unnamed)
			continue;
		for (k = 0; k < r->nr_unnamed_files; k++)
			if (!strcmp(r->unnamed_files[k], f[i].dso))
				break;
		if (k < r->nr_unnamed_files)
			continue;
		if (k == RESOLVER_UNNAMED_FILES) {
			r->more_unnamed_files = true;
			continue;
		}
		snprintf(r->unnamed_files[k], sizeof(r->unnamed_files[k]), "%s", f[i].dso);
		r->nr_unnamed_files++;
	}
}

/* A thread inside sched_yield(): its kernel frames, or its user frame 0 */
static bool sample_yields(const struct sc_rsample *c)
{
	int i;

	for (i = 0; i < c->nk; i++)
		if (c->kf[i].sym && str_ends_with(c->kf[i].sym, "sys_sched_yield"))
			return true;
	return c->nu && c->uf[0].sym &&
	       (!strcmp(c->uf[0].sym, "sched_yield") || !strcmp(c->uf[0].sym, "__sched_yield"));
}

/*
 * A stall whose every sample finds its thread in sched_yield() is a busy
 * wait: the thread yields the CPU in a loop (a runtime's scheduler spinning
 * before it sleeps, a lock that yields), runnable, not working
 * (hint_busy_wait()).  Counted on the first pass over the samples.
 */
static void count_yield(struct sc_rstall *rs)
{
	if (rs->pos++ != rs->counted)
		return;
	rs->counted++;
	rs->yield_samples += sample_yields(&rs->cur);
}

bool sc_stall_yields(const struct sc_rstall *rs)
{
	return rs->nr && rs->counted == rs->nr && rs->yield_samples == rs->nr;
}

/* Resolve @m into rs->cur, in the stall's reused frame buffers. */
static void resolve_sample(struct sc_rstall *rs, const struct sc_sample *m)
{
	struct resolver *r = rs->r;
	const struct stallcap_sample_view *uv = &m->user;
	struct sc_rsample *c = &rs->cur;
	int i;

	c->smp = m;
	c->kf = rs->kbuf;
	c->uf = rs->ubuf;
	c->nk = (int)m->v.nr_kernel;
	resolve_kernel(r, &m->v, c->kf, c->nk);
	i = unwind_user(r->us, uv, &m->user_copies, r->unwind_flags, rs->rbuf,
			STALLCAP_MAX_FRAMES, &c->ustop);
	c->nu = resolve_user(r, uv->s.pid, rs->rbuf, i, c->uf);
	jit_end(r, uv->s.pid, c);
	go_stack_switch_end(c);
	note_unnamed(r, c->uf, c->nu);
	count_yield(rs);
	for (i = 0; i < (int)m->v.nr_tasks && i < STALLCAP_VIEW_MAX_TASKS; i++) {
		c->tasks[i].f = rs->tbuf[i];
		resolve_task(rs, &m->v.tasks[i], &c->tasks[i]);
		note_unnamed(r, c->tasks[i].f + c->tasks[i].nk, c->tasks[i].nu);
	}
}

/*
 * One stall's frames are resolved sample after sample into buffers of
 * STALLCAP_MAX_FRAMES frames (a record never holds more; user frames with
 * their inline frames, SC_MAX_UFRAMES): memory does not grow with the number
 * of samples.
 */
int resolve_stall(struct resolver *r, const struct sc_stall *st, struct sc_rstall *out)
{
	const struct sc_sample *m;
	const struct sc_proc *p;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	out->st = st;
	out->r = r;
	p = usyms_proc(r->us, st->pid);
	out->proc_comm = p ? p->comm : NULL;
	stall_rt_offset(r, st, out);
	for (m = st->samples; m; m = m->next) {
		if (m->merged)
			continue;
		if (!out->first)
			out->first = &m->v.s;
		out->nr++;
	}
	out->kbuf = calloc(STALLCAP_MAX_FRAMES, sizeof(*out->kbuf));
	out->ubuf = calloc(SC_MAX_UFRAMES, sizeof(*out->ubuf));
	out->rbuf = calloc(STALLCAP_MAX_FRAMES, sizeof(*out->rbuf));
	if (!out->kbuf || !out->ubuf || !out->rbuf)
		return -ENOMEM;
	for (i = 0; i < STALLCAP_VIEW_MAX_TASKS; i++) {
		/* a task section holds at most this many frames of each kind */
		out->tbuf[i] = calloc(STALLCAP_MAX_FRAMES + SC_MAX_UFRAMES, sizeof(*out->tbuf[i]));
		if (!out->tbuf[i])
			return -ENOMEM;
	}
	return 0;
}

int resolve_stall_next(struct sc_rstall *rs)
{
	const struct sc_sample *m;

	if (!rs->kbuf || !rs->ubuf)
		return 0;
	m = rs->started ? (rs->next ? rs->next->next : NULL) : rs->st->samples;
	rs->started = true;
	while (m && m->merged)
		m = m->next;
	rs->next = m;
	if (!m)
		return 0;
	resolve_sample(rs, m);
	return 1;
}

void resolve_stall_rewind(struct sc_rstall *rs)
{
	rs->started = false;
	rs->next = NULL;
	rs->pos = 0;
}

void resolve_stall_free(struct sc_rstall *rs)
{
	unsigned int i;

	free(rs->kbuf);
	free(rs->ubuf);
	free(rs->rbuf);
	for (i = 0; i < STALLCAP_VIEW_MAX_TASKS; i++)
		free(rs->tbuf[i]);
	memset(rs, 0, sizeof(*rs));
}
