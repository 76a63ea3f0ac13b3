// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): JSON lines.  Per stall: one {"type":"stall"} line, one
 * {"type":"sample"} line per sample with every field of the record and its
 * resolved frames, and {"type":"stall_end"} when the end was seen;
 * {"type":"watch"} lines for the watches of attached processes.  Integers
 * are printed exactly (u64 timestamps included); addresses as "0x..." strings;
 * pid/tid are the initial pid namespace's, ns_pid/ns_tid the session's;
 * *_time fields are ISO 8601 wall-clock times (local, or UTC with --utc).
 */
#include <string.h>

#include "tool.h"
#include "output.h"

/*
 * A JSON string: quote, backslash and control characters escaped (C1 and
 * bidirectional controls too, as \uXXXX), valid UTF-8 as is, any byte of
 * invalid UTF-8 replaced by U+FFFD: every line parses as JSON.
 */
void json_strn(FILE *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i, len;
	__u32 cp;

	n = strnlen(s, n);
	fputc('"', out);
	for (i = 0; i < n; i += len) {
		len = utf8_decode(p + i, n - i, &cp);
		if (!len) {
			fputs("\\ufffd", out);
			len = 1;
		} else if (cp == '"' || cp == '\\') {
			fprintf(out, "\\%c", (char)cp);
		} else if (cp == '\n') {
			fputs("\\n", out);
		} else if (unsafe_char(cp)) {
			fprintf(out, "\\u%04x", cp);
		} else {
			fwrite(p + i, 1, len, out);
		}
	}
	fputc('"', out);
}

void json_str(FILE *out, const char *s)
{
	if (!s)
		fputs("null", out);
	else
		json_strn(out, s, (size_t)-1);
}

static void comm_str(FILE *out, const char *comm)
{
	json_strn(out, comm, 16);
}

static void frames(FILE *out, const char *key, const struct sc_frame *f, int n)
{
	int i;

	fprintf(out, ",\"%s\":[", key);
	for (i = 0; i < n; i++) {
		fprintf(out, "%s{\"addr\":\"0x%llx\",\"method\":\"%s\",\"sym\":", i ? "," : "",
			(unsigned long long)f[i].addr, sc_method_name(f[i].method));
		json_str(out, f[i].sym);
		fprintf(out, ",\"off\":%llu,\"dso\":", (unsigned long long)f[i].off);
		json_str(out, f[i].dso);
		if (f[i].method != SC_METHOD_KERNEL)
			fprintf(out, ",\"dso_off\":%llu", (unsigned long long)f[i].dso_off);
		fputs(",\"file\":", out);
		json_str(out, f[i].file);
		fprintf(out, ",\"line\":%d,\"inlined\":%s%s}", f[i].line,
			f[i].inlined ? "true" : "false",
			f[i].signal_frame ? ",\"signal_frame\":true" : "");
	}
	fputc(']', out);
}

/* Register names in the order of the uapi structs. */
static const char *const x86_64_names[] = {
	"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "r8", "r9", "r10",
	"r11", "r12", "r13", "r14", "r15", "ip", "flags",
};

static void regs_list(FILE *out, const __u64 *v, const char *const *names, unsigned int n)
{
	unsigned int i;

	fputc('{', out);
	for (i = 0; i < n; i++)
		fprintf(out, "%s\"%s\":\"0x%llx\"", i ? "," : "", names[i],
			(unsigned long long)v[i]);
	fputc('}', out);
}

/*
 * "regs_arch" always; "regs" only for an architecture this tool knows, with
 * that architecture's names; null otherwise (never guessed at).
 */
static void regs(FILE *out, const struct stallcap_sample_view *v)
{
	const struct stallcap_regs_x86_64 *x = stallcap_sample_regs_x86_64(v);
	const struct stallcap_regs_arm64 *a = stallcap_sample_regs_arm64(v);
	char name[8];
	unsigned int i;

	fprintf(out, ",\"regs_arch\":%u,\"regs_arch_name\":\"%s\",\"regs_size\":%u,\"regs\":",
		v->regs_arch, sc_arch_name(v->regs_arch), v->regs_size);
	if (x) {
		regs_list(out, &x->ax, x86_64_names, ARRAY_SIZE(x86_64_names));
	} else if (a) {
		fputc('{', out);
		for (i = 0; i < 31; i++) {
			snprintf(name, sizeof(name), "x%u", i);
			fprintf(out, "%s\"%s\":\"0x%llx\"", i ? "," : "", name,
				(unsigned long long)a->x[i]);
		}
		fprintf(out, ",\"sp\":\"0x%llx\",\"pc\":\"0x%llx\",\"pstate\":\"0x%llx\"}",
			(unsigned long long)a->sp, (unsigned long long)a->pc,
			(unsigned long long)a->pstate);
	} else {
		fputs("null", out);
	}
}

static void flags(FILE *out, __u32 f)
{
	static const char *const names[] = {
		"user_mode", "irqs_off", "in_hardirq", "in_softirq", "kstack_trunc",
		"ustack_trunc", "ustack_fault", "copy_partial", "kaddr_hidden",
		"raced", "migrated", "defer_pending", "no_user", "ustack_remote",
		"abandoned", "preempt_off", "ustack_missed", "throttled",
		"memstall",
	};
	unsigned int i, n = 0;

	fprintf(out, ",\"flags\":%u,\"flag_names\":[", f);
	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (f & (1U << i))
			fprintf(out, "%s\"%s\"", n++ ? "," : "", names[i]);
	fputc(']', out);
}

/* ,"KEY":"ISO time" or null */
static void time_field(FILE *out, const char *key, const struct sc_rstall *rs,
		       const struct stallcap_sample *s, __u64 mono)
{
	char buf[48];
	__u64 rt;

	fprintf(out, ",\"%s\":", key);
	if (!sc_realtime(rs, s, mono, &rt)) {
		fputs("null", out);
		return;
	}
	sc_wallclock(buf, sizeof(buf), rt);
	json_str(out, buf);
}

/* "stack_more": the resident runs copied above the first copy's gap */
static void stack_more(FILE *out, const struct sc_copies *x)
{
	unsigned int i;

	if (!x->nr_more)
		return;
	fputs(",\"stack_more\":[", out);
	for (i = 0; i < x->nr_more; i++)
		fprintf(out, "%s{\"start\":\"0x%llx\",\"size\":%u}", i ? "," : "",
			(unsigned long long)x->more[i].start, x->more[i].size);
	fputc(']', out);
}

/* Why the user frames end: "user_walk_end", and what it needed or met. */
static void walk_end(FILE *out, const struct unwind_stop *st)
{
	static const char *const names[] = {
		[UNWIND_END_STOPPED] = "stopped",
		[UNWIND_END_OUTERMOST] = "outermost",
		[UNWIND_END_COPY] = "copy",
		[UNWIND_END_OUTSIDE] = "outside_copy",
		[UNWIND_END_ERROR] = "unwinder",
		[UNWIND_END_JIT] = "jit_code",
		[UNWIND_END_STACK_SWITCH] = "stack_switch",
		[UNWIND_END_JIT_CHAIN] = "jit_chain_end",
	};

	fprintf(out, ",\"user_walk_end\":\"%s\"", names[st->end]);
	if (st->end == UNWIND_END_COPY || st->end == UNWIND_END_OUTSIDE)
		fprintf(out, ",\"user_walk_needed\":\"0x%llx\"", (unsigned long long)st->addr);
	if (st->end == UNWIND_END_ERROR) {
		fputs(",\"user_walk_error\":", out);
		json_str(out, st->msg);
	}
}

static void sample_line(FILE *out, const struct sc_rstall *rs, const struct sc_rsample *r)
{
	const struct stallcap_sample *s = &r->smp->v.s;
	const struct stallcap_sample_view *u = &r->smp->user;

	fprintf(out, "{\"type\":\"sample\",\"stall_id\":%llu,\"pid\":%u,\"tid\":%u,"
		"\"ns_pid\":%u,\"ns_tid\":%u,\"comm\":", (unsigned long long)s->stall_id,
		s->pid, s->tid, s->ns_pid, s->ns_tid);
	comm_str(out, s->comm);
	fprintf(out, ",\"cpu\":%u,\"sample_index\":%u,\"state\":\"%s\",\"path\":\"%s\","
		"\"clock\":\"%s\",\"origin\":\"%s\",\"record_type\":%u,\"fixed_size\":%u,"
		"\"cookie\":%llu,\"user_tag\":%llu,\"deadline_ns\":%llu,\"capture_ns\":%llu,"
		"\"capture_realtime_ns\":%llu,\"timeout_ns\":%llu,\"lateness_ns\":%lld,"
		"\"suppressed\":%u,\"migrate_retries\":%u",
		s->cpu, s->sample_index, sc_state_name(s->state), sc_path_name(s->path),
		sc_clock_name(s->clock), sc_origin_name(s->origin), s->hdr.type, s->fixed_size,
		(unsigned long long)s->cookie, (unsigned long long)s->user_tag,
		(unsigned long long)s->deadline_ns, (unsigned long long)s->capture_ns,
		(unsigned long long)s->capture_realtime_ns, (unsigned long long)s->timeout_ns,
		(long long)(s->capture_ns - s->deadline_ns), s->suppressed, s->migrate_retries);
	time_field(out, "deadline_time", rs, s, s->deadline_ns);
	time_field(out, "capture_time", rs, s, s->capture_ns);
	flags(out, s->flags);
	regs(out, u);
	fprintf(out, ",\"nr_kernel_frames\":%u,\"nr_user_frames\":%u,\"stack_start\":\"0x%llx\","
		"\"stack_size\":%u,\"deferred_user\":%s,\"unknown_sections\":%u,"
		"\"user_stack_cut_by_copy\":%s",
		r->smp->v.nr_kernel, u->nr_user, (unsigned long long)u->stack_start,
		u->stack_size, r->smp->has_deferred ? "true" : "false", r->smp->v.nr_unknown,
		r->ustop.end == UNWIND_END_COPY ? "true" : "false");
	walk_end(out, &r->ustop);
	if (r->smp->user_copies.istack.size)
		fprintf(out, ",\"interrupted_stack_start\":\"0x%llx\",\"interrupted_stack_size\":%u",
			(unsigned long long)r->smp->user_copies.istack.start,
			r->smp->user_copies.istack.size);
	stack_more(out, &r->smp->user_copies);
	fmt_json_why(out, r);
	/* the frame lists come last: scripts cut the line at "kernel_stack" */
	frames(out, "kernel_stack", r->kf, r->nk);
	frames(out, "user_stack", r->uf, r->nu);
	fputs("}\n", out);
}

/*
 * fmt_json_stall_part() - the stall line and its sample lines before the
 * @to-th (@from 0), or the sample lines from the @from-th on; then the
 * stall_end line if it ended (and all samples are shown).  @live: the stall
 * line says "ongoing":true for a stall without end.
 */
void fmt_json_stall_part(FILE *out, struct sc_rstall *rs, unsigned int from, unsigned int to,
			 bool live)
{
	const struct sc_stall *st = rs->st;
	const struct stallcap_sample *s = rs->first;
	unsigned int i = 0;
	bool more = false;

	if (from)
		goto samples;
	fprintf(out, "{\"type\":\"stall\",\"stall_id\":%llu,\"pid\":%u,\"tid\":%u,"
		"\"ns_pid\":%u,\"ns_tid\":%u,\"comm\":", (unsigned long long)st->stall_id,
		st->pid, st->tid, s ? s->ns_pid : st->end.ns_pid, s ? s->ns_tid : st->end.ns_tid);
	if (s)
		comm_str(out, s->comm);
	else
		fputs("null", out);
	fputs(",\"process\":", out);
	json_str(out, rs->proc_comm);
	fprintf(out, ",\"origin\":\"%s\",\"over_ns\":%llu,\"timeout_ns\":%llu,"
		"\"nr_samples\":%u,\"ended\":%s",
		sc_origin_name(s ? s->origin : st->end.origin),
		(unsigned long long)sc_stall_over_ns(st),
		(unsigned long long)(s ? s->timeout_ns : 0), rs->nr,
		st->ended ? "true" : "false");
	if (live)
		fprintf(out, ",\"ongoing\":%s", st->ended ? "false" : "true");
	time_field(out, "deadline_time", rs, s, s ? s->deadline_ns : st->end.deadline_ns);
	fputs("}\n", out);
samples:
	resolve_stall_rewind(rs);
	while (resolve_stall_next(rs) > 0) {
		if (i >= to) {
			more = true;
			break;
		}
		if (i++ >= from)
			sample_line(out, rs, &rs->cur);
	}
	if (!st->ended || more)
		return;
	fprintf(out, "{\"type\":\"stall_end\",\"stall_id\":%llu,\"pid\":%u,\"tid\":%u,"
		"\"ns_pid\":%u,\"ns_tid\":%u,\"origin\":\"%s\",\"fixed_size\":%u,"
		"\"user_tag\":%llu,\"deadline_ns\":%llu,\"end_ns\":%llu,"
		"\"end_realtime_ns\":%llu,\"nr_samples\":%u",
		(unsigned long long)st->end.stall_id, st->end.pid, st->end.tid, st->end.ns_pid,
		st->end.ns_tid, sc_origin_name(st->end.origin), st->end.fixed_size,
		(unsigned long long)st->end.user_tag, (unsigned long long)st->end.deadline_ns,
		(unsigned long long)st->end.end_ns, (unsigned long long)st->end.end_realtime_ns,
		st->end.nr_samples);
	time_field(out, "end_time", rs, NULL, st->end.end_ns);
	fputs("}\n", out);
}

void fmt_json_stall(FILE *out, struct sc_rstall *rs)
{
	fmt_json_stall_part(out, rs, 0, ~0U, false);
}

void fmt_json_watch(FILE *out, const struct stallcap_watch_event *ev)
{
	char buf[48];

	fprintf(out, "{\"type\":\"watch\",\"event\":\"%s\",\"pid\":%u,\"tid\":%u,"
		"\"ns_pid\":%u,\"ns_tid\":%u,\"comm\":",
		ev->event == STALLCAP_WATCH_STARTED ? "started" :
		ev->event == STALLCAP_WATCH_ENDED ? "ended" :
		ev->event == STALLCAP_WATCH_BUSY ? "busy" :
		ev->event == STALLCAP_WATCH_MISSED ? "missed" : "unknown",
		ev->pid, ev->tid, ev->ns_pid, ev->ns_tid);
	comm_str(out, ev->comm);
	fprintf(out, ",\"fixed_size\":%u,\"time_ns\":%llu,\"realtime_ns\":%llu,"
		"\"timeout_ns\":%llu,\"user_tag\":%llu,\"time\":", ev->fixed_size,
		(unsigned long long)ev->time_ns, (unsigned long long)ev->realtime_ns,
		(unsigned long long)ev->timeout_ns, (unsigned long long)ev->user_tag);
	if (ev->realtime_ns) {
		sc_wallclock(buf, sizeof(buf), ev->realtime_ns);
		json_str(out, buf);
	} else {
		fputs("null", out);
	}
	fputs("}\n", out);
}

void fmt_json_lost(FILE *out, __u64 lost, __u64 suppressed)
{
	fprintf(out, "{\"type\":\"lost\",\"lost\":%llu,\"suppressed\":%llu}\n",
		(unsigned long long)lost, (unsigned long long)suppressed);
}
