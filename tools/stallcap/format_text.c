// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the human-readable report, one block per stall:
 *
 *   stall 7 of tid 1234 (reactor-0) on cpu 1: 31.2 ms over a 25 ms deadline, running in kernel
 *     began 2026-11-22T16:55:47.123456+01:00, process 1230 (server), wall clock, armed,
 *     tag 0x0, 2 samples, ended
 *     sample 0 at 2026-11-22T16:55:47.123556+01:00 (+0.1 ms), running in kernel, captured by nmi
 *       kernel:
 *         #0  0xffffffff81234567  do_sys_poll+0x2f1
 *       user:
 *         #0  0x000055d4c2a1b2c3  parse_header  http.h:12  [inlined] server
 *         #1  0x000055d4c2a1b2c3  handle_event+0x1c  server.c:41  [fp] server
 *     sample 1 at ... (+25.0 ms), running in kernel: same stacks as sample 0
 *
 * Ids are the ones of the session's pid namespace, followed by the initial
 * namespace's when they differ: "tid 12 (host 3456)".  Times are wall-clock
 * (ISO 8601, local time or UTC with --utc).
 */
#include <string.h>

#include "tool.h"
#include "output.h"
#include "usyms.h"

static void ms(char *buf, size_t len, __u64 ns)
{
	double v = (double)ns / NSEC_PER_MSEC;

	if (ns % NSEC_PER_MSEC == 0)
		snprintf(buf, len, "%llu ms", (unsigned long long)(ns / NSEC_PER_MSEC));
	else
		snprintf(buf, len, v < 10 ? "%.2f ms" : "%.1f ms", v);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* "running in kernel", "sleeping in kernel", ... for a sample */
static void where(char *buf, size_t len, const struct stallcap_sample *s)
{
	bool user = s->flags & STALLCAP_SAMPLE_USER_MODE;

	switch (s->state) {
	case STALLCAP_STATE_RUNNING:
		snprintf(buf, len, "running in %s", user ? "user" : "kernel");
		break;
	case STALLCAP_STATE_RUNNABLE:
		snprintf(buf, len, "%s in %s",
			 s->flags & STALLCAP_SAMPLE_THROTTLED ? "throttled" : "preempted",
			 user ? "user" : "kernel");
		break;
	case STALLCAP_STATE_SLEEPING:
		snprintf(buf, len, "blocked in kernel (sleeping)");
		break;
	case STALLCAP_STATE_UNINTERRUPTIBLE:
		snprintf(buf, len, "blocked in kernel (uninterruptible)");
		break;
	default:
		snprintf(buf, len, "%s", sc_state_name(s->state));
	}
}

static const char *deadline_kind(__u8 clock)
{
	switch (clock) {
	case STALLCAP_CLOCK_CPUTIME:
		return "CPU-time deadline";
	case STALLCAP_CLOCK_HEARTBEAT:
		return "heartbeat threshold";
	case STALLCAP_CLOCK_SHARED:
		return "shared deadline";
	default:
		return "deadline";
	}
}

void sc_frame_line(FILE *out, const struct sc_frame *f, int i)
{
	fprintf(out, "      #%-2d 0x%016llx  ", i, (unsigned long long)f->addr);
	if (f->sym) {
		text_str(out, f->sym);
		if (!f->inlined)
			fprintf(out, "+0x%llx", (unsigned long long)f->off);
	} else if (f->dso && f->method != SC_METHOD_KERNEL) {
		text_str(out, base_name(f->dso));
		fprintf(out, "+0x%llx", (unsigned long long)f->dso_off);
	} else {
		fprintf(out, "[unknown]");
	}
	if (f->file) {
		fputs("  ", out);
		text_str(out, base_name(f->file));
		fprintf(out, ":%d", f->line);
	}
	if (f->method == SC_METHOD_KERNEL) {
		if (f->dso && strcmp(f->dso, "kernel")) {
			fputs(" [", out);
			text_str(out, f->dso);
			fputc(']', out);
		}
	} else {
		fprintf(out, "  [%s]", f->inlined ? "inlined" : sc_method_name(f->method));
		if (f->dso) {
			fputc(' ', out);
			text_str(out, base_name(f->dso));
		}
		/* as gdb's "<signal handler called>": the next frame was interrupted */
		if (f->signal_frame)
			fputs("  <signal frame>", out);
	}
	fputc('\n', out);
}

static void sample_flags(FILE *out, const struct stallcap_sample *s)
{
	static const struct { __u32 bit; const char *what; } notes[] = {
		{ STALLCAP_SAMPLE_IRQS_OFF, "interrupts disabled" },
		{ STALLCAP_SAMPLE_IN_HARDIRQ, "in hard irq" },
		{ STALLCAP_SAMPLE_IN_SOFTIRQ, "in softirq" },
		{ STALLCAP_SAMPLE_KSTACK_TRUNC, "kernel stack truncated" },
		{ STALLCAP_SAMPLE_USTACK_TRUNC, "user stack truncated" },
		{ STALLCAP_SAMPLE_KADDR_HIDDEN, "kernel addresses hidden" },
		{ STALLCAP_SAMPLE_RACED, "thread ran during capture" },
		{ STALLCAP_SAMPLE_MIGRATED, "migrated, read remotely" },
		{ STALLCAP_SAMPLE_NO_USER, "no user context" },
		{ STALLCAP_SAMPLE_USTACK_REMOTE, "thread off CPU" },
		{ STALLCAP_SAMPLE_ABANDONED, "capture abandoned" },
		{ STALLCAP_SAMPLE_PREEMPT_OFF, "preemption disabled" },
		{ STALLCAP_SAMPLE_USTACK_MISSED, "user stack missed" },
		{ STALLCAP_SAMPLE_MEMSTALL, "in a memory stall" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(notes); i++)
		if (s->flags & notes[i].bit)
			fprintf(out, ", %s", notes[i].what);
	if (s->suppressed)
		fprintf(out, ", %u stalls suppressed before", s->suppressed);
}

/* "2026-11-22T16:55:47.123456+01:00" or "(wall clock unknown)" */
static void wall(char *buf, size_t len, const struct sc_rstall *rs,
		 const struct stallcap_sample *s, __u64 mono)
{
	__u64 rt;

	if (sc_realtime(rs, s, mono, &rt))
		sc_wallclock(buf, len, rt);
	else
		snprintf(buf, len, "(wall clock unknown)");
}

/*
 * A register set this tool cannot interpret is said so, never guessed at:
 * kernel frames and the module's frame-pointer walk stay valid.
 */
static void regs_note(FILE *out, const struct stallcap_sample_view *v)
{
	if (!v->regs || stallcap_sample_regs_x86_64(v))
		return;
	if (v->regs_arch == STALLCAP_ARCH_ARM64)
		fprintf(out, "    registers: arm64, not unwound by this stallcap "
			"(kernel frames and frame-pointer user frames only)\n");
	else
		fprintf(out, "    registers: architecture %u unknown to this stallcap, "
			"not interpreted (kernel frames and frame-pointer user frames only)\n",
			v->regs_arch);
}

/*
 * The stack copy @u was cut at a page the module could not read (it copies
 * resident pages only, and faults none in): its end is on a page boundary.
 */
static bool cut_at_page(const struct stallcap_sample_view *u)
{
	__u64 end = u->stack_start + u->stack_size;

	return (u->s.flags & STALLCAP_SAMPLE_COPY_PARTIAL) &&
	       (end % 4096 == 0 || end % 4096 > 4096 - 8);
}

/* Below a sample's user frames: why they end there, unless they are whole. */
static void user_end_note(FILE *out, const struct sc_rsample *r, __u32 copied)
{
	const struct unwind_stop *st = &r->ustop;
	const struct stallcap_sample_view *u = &r->smp->user;

	switch (st->end) {
	case UNWIND_END_COPY:
		if (cut_at_page(u))
			fprintf(out, "      (the stack copy ends here, %u bytes, at a page that "
				"was not resident: stallcap copies resident pages only)\n", copied);
		else if (copied < STALLCAP_MAX_USER_STACK)
			fprintf(out, "      (the stack copy ends here, %u bytes: record with a larger "
				"--stack-bytes, at most %u, for the frames beyond)\n",
				copied, STALLCAP_MAX_USER_STACK);
		else
			fprintf(out, "      (the stack copy ends here, %u bytes, the most stallcap "
				"copies)\n", copied);
		break;
	case UNWIND_END_OUTSIDE:
		if (st->addr < u->stack_start)
			fprintf(out, "      (the walk stops here: the next frame is read at 0x%llx, "
				"below the stack pointer: not on this stack)\n",
				(unsigned long long)st->addr);
		else if (st->addr - u->stack_start >= STALLCAP_USER_STACK_REACH)
			fprintf(out, "      (the walk stops here: the next frame is read at 0x%llx, "
				"%.1f KiB above the stack pointer, beyond the %u bytes copied and "
				"the reach of a copy, %u KiB: a frame that large, or another "
				"stack)\n", (unsigned long long)st->addr,
				(double)(st->addr - u->stack_start) / 1024, copied,
				STALLCAP_USER_STACK_REACH / 1024);
		else if (cut_at_page(u) && !r->smp->user_copies.nr_more)
			fprintf(out, "      (the walk stops here: the next frame is read at 0x%llx, "
				"%.1f KiB above the stack pointer, past the %u bytes copied, which "
				"ended at a page that was not resident)\n",
				(unsigned long long)st->addr,
				(double)(st->addr - u->stack_start) / 1024, copied);
		else
			fprintf(out, "      (the walk stops here: the next frame is read at 0x%llx, "
				"%.1f KiB above the stack pointer, outside the %u bytes copied: "
				"a larger --stack-bytes, at most %u, may reach it)\n",
				(unsigned long long)st->addr,
				(double)(st->addr - u->stack_start) / 1024, copied,
				STALLCAP_MAX_USER_STACK);
		break;
	case UNWIND_END_ERROR:
		fprintf(out, "      (the walk stops here: %s)\n", st->msg);
		break;
	case UNWIND_END_STACK_SWITCH:
		fprintf(out, "      (the walk stops here: runtime.mcall runs the Go scheduler on "
			"the thread's own stack (g0); the goroutine's frames are on its stack, "
			"not under this one)\n");
		break;
	case UNWIND_END_JIT:
		fprintf(out, "      (the walk stops here: in code no file describes (a JIT's), whose "
			"callers only frame pointers chain, and its frame pointer leads to no "
			"frame on this stack: the JIT keeps none (a JVM keeps them with "
			"-XX:+PreserveFramePointer, Erlang's with +JPperf true), or the caller's "
			"frames are on another stack)\n");
		break;
	case UNWIND_END_JIT_CHAIN:
		fprintf(out, "      (the walk stops here: the frame-pointer chain through a JIT's "
			"code ends: the bottom of the stack its code runs on (a runtime's own: its "
			"callers run on another), or a caller that keeps no frame pointer)\n");
		break;
	default:
		break;
	}
}

static void sample_block(FILE *out, const struct sc_rstall *rs, const struct sc_rsample *r,
			 struct stack_set *seen)
{
	const struct stallcap_sample *s = &r->smp->v.s;
	char w[64], at[32], when[48];
	__u32 first;
	int i;

	where(w, sizeof(w), s);
	ms(at, sizeof(at), s->capture_ns > s->deadline_ns ? s->capture_ns - s->deadline_ns : 0);
	wall(when, sizeof(when), rs, s, s->capture_ns);
	fprintf(out, "  sample %u at %s (+%s), %s", s->sample_index, when, at, w);
	if (seen && stack_set_seen(seen, r, &first)) {
		fprintf(out, ": same stacks as sample %u\n", first);
		fmt_text_why(out, r);
		return;
	}
	fprintf(out, ", captured by %s", sc_path_name(s->path));
	sample_flags(out, s);
	fputc('\n', out);
	regs_note(out, &r->smp->user);
	fmt_text_why(out, r);
	if (r->nk) {
		fprintf(out, "    kernel:\n");
		for (i = 0; i < r->nk; i++)
			sc_frame_line(out, &r->kf[i], i);
	}
	if (r->nu) {
		/* with the stack a handler on the alternate stack interrupted */
		__u32 copied = r->smp->user.stack_size + sc_copies_bytes(&r->smp->user_copies);

		fprintf(out, "    user%s:\n", r->smp->has_deferred ? " (deferred)" : "");
		for (i = 0; i < r->nu; i++)
			sc_frame_line(out, &r->uf[i], i);
		user_end_note(out, r, copied);
		if (r->jit_unnamed)
			fprintf(out, "      (a JIT's code is named from /tmp/perf-%u.map, which this "
				"process did not write: a JVM writes it on `jcmd %u "
				"Compiler.perfmap`, node with --perf-basic-prof)\n",
				r->smp->user.s.pid, r->smp->user.s.pid);
	} else if ((s->flags & STALLCAP_SAMPLE_DEFER_PENDING) && !r->smp->has_deferred) {
		/* read on the way back to user space, which never came */
		fprintf(out, "    user: not read (the thread did not return to user space "
			"after this sample: it exited, or the record was lost)\n");
	} else if (!(s->flags & STALLCAP_SAMPLE_NO_USER)) {
		fprintf(out, "    user: no frames\n");
	}
}

/* "stall 7 of tid 1234 (comm)" */
static void stall_name(FILE *out, const struct sc_rstall *rs)
{
	const struct sc_stall *st = rs->st;
	const struct stallcap_sample *s = rs->first;
	char tid[48];

	sc_ids(tid, sizeof(tid), s ? s->ns_tid : st->end.ns_tid, st->tid);
	fprintf(out, "stall %llu of tid %s (", (unsigned long long)st->stall_id, tid);
	if (s)
		text_strn(out, s->comm, sizeof(s->comm));
	else
		fputc('?', out);
	fputc(')', out);
}

static void stall_header(FILE *out, struct sc_rstall *rs, bool live)
{
	const struct sc_stall *st = rs->st;
	const struct stallcap_sample *s = rs->first;
	char over[32], dl[32], w[64], pid[48], when[48];

	ms(over, sizeof(over), sc_stall_over_ns(st));
	ms(dl, sizeof(dl), s->timeout_ns);
	where(w, sizeof(w), s);
	sc_ids(pid, sizeof(pid), s->ns_pid, st->pid);
	wall(when, sizeof(when), rs, s, s->deadline_ns);
	stall_name(out, rs);
	fprintf(out, " on cpu %u: %s over a %s %s, %s\n", s->cpu, over, dl,
		deadline_kind(s->clock), w);
	fprintf(out, "  began %s, process %s (", when, pid);
	text_str(out, rs->proc_comm && rs->proc_comm[0] ? rs->proc_comm : "?");
	fprintf(out, "), %s clock, %s, tag 0x%llx, %u sample%s",
		sc_clock_name(s->clock), sc_origin_name(s->origin),
		(unsigned long long)s->user_tag, rs->nr, rs->nr == 1 ? "" : "s");
	if (st->ended) {
		fprintf(out, ", ended");
		if (st->end.nr_samples > rs->nr)
			fprintf(out, " (%u samples taken, %u not in the ring)",
				st->end.nr_samples, st->end.nr_samples - rs->nr);
	} else if (live) {
		fprintf(out, ", ongoing (no end yet)");
	} else {
		fprintf(out, ", no end seen (still stalled at the last sample)");
	}
	fputc('\n', out);
}

/*
 * fmt_text_stall_part() - a stall, or what a live report did not show of it
 * yet: the header and the samples before the @to-th (@from 0), or the
 * samples from the @from-th on, under a one-line reminder; then "ended" if
 * it ended (and all samples are shown).
 * @live: a stall without an end is in progress ("ongoing"), not cut short.
 */
void fmt_text_stall_part(FILE *out, struct sc_rstall *rs, unsigned int from, unsigned int to,
			 bool live)
{
	const struct sc_stall *st = rs->st;
	struct stack_set *seen;
	char over[32], when[48], tid[48];
	unsigned int i = 0;

	if (!rs->first) {
		ms(over, sizeof(over), sc_stall_over_ns(st));
		sc_ids(tid, sizeof(tid), st->ended ? st->end.ns_tid : st->tid, st->tid);
		wall(when, sizeof(when), rs, NULL, st->end.deadline_ns);
		fprintf(out, "stall %llu of tid %s: %s over its deadline (began %s), "
			"no sample recorded\n\n", (unsigned long long)st->stall_id, tid, over,
			when);
		return;
	}
	if (to > rs->nr)
		to = rs->nr;
	if (!from) {
		stall_header(out, rs, live);
	} else if (from < to) {
		ms(over, sizeof(over), sc_stall_over_ns(st));
		stall_name(out, rs);
		fprintf(out, ", %s: samples %u to %u of %u, %s over %s\n",
			st->ended ? "ended" : "ongoing", from, to - 1, rs->nr, over,
			st->ended ? "its deadline" : "so far");
	}
	seen = stack_set_new();
	resolve_stall_rewind(rs);
	while (resolve_stall_next(rs) > 0) {
		__u32 first;

		if (i >= to)
			break;
		if (i++ >= from)
			sample_block(out, rs, &rs->cur, seen);
		else if (seen)
			stack_set_seen(seen, &rs->cur, &first);
	}
	stack_set_free(seen);
	if (from && st->ended && to == rs->nr) {
		ms(over, sizeof(over), sc_stall_over_ns(st));
		stall_name(out, rs);
		fprintf(out, " ended: %s over its deadline, %u sample%s\n", over, rs->nr,
			rs->nr == 1 ? "" : "s");
	}
	if (from < to || (st->ended && to == rs->nr))
		fputc('\n', out);
}

void fmt_text_stall(FILE *out, struct sc_rstall *rs)
{
	fmt_text_stall_part(out, rs, 0, ~0U, false);
}

void fmt_text_watch(FILE *out, const struct stallcap_watch_event *ev)
{
	char tid[48], pid[48], when[48], dl[32];

	sc_ids(tid, sizeof(tid), ev->ns_tid, ev->tid);
	sc_ids(pid, sizeof(pid), ev->ns_pid, ev->pid);
	if (ev->realtime_ns)
		sc_wallclock(when, sizeof(when), ev->realtime_ns);
	else
		snprintf(when, sizeof(when), "(wall clock unknown)");
	ms(dl, sizeof(dl), ev->timeout_ns);
	fprintf(out, "watch %s at %s: tid %s (",
		ev->event == STALLCAP_WATCH_STARTED ? "started" :
		ev->event == STALLCAP_WATCH_ENDED ? "ended" :
		ev->event == STALLCAP_WATCH_BUSY ? "busy" :
		ev->event == STALLCAP_WATCH_MISSED ? "missed" : "event", when, tid);
	text_strn(out, ev->comm, sizeof(ev->comm));
	fprintf(out, ") of process %s, %s deadline, tag 0x%llx%s\n\n",
		pid, dl, (unsigned long long)ev->user_tag,
		ev->event == STALLCAP_WATCH_MISSED ?
		": not watched (watch limit, memory or a set-user-ID program)" : "");
}
