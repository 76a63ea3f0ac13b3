// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): JSON lines.  Per stall: one {"type":"stall"} line, one
 * {"type":"sample"} line per sample with every field of the record and its
 * resolved frames, and {"type":"stall_end"} when the end was seen.  Integers
 * are printed exactly (u64 timestamps included); addresses as "0x..." strings.
 */
#include <string.h>

#include "tool.h"

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
		fprintf(out, ",\"line\":%d}", f[i].line);
	}
	fputc(']', out);
}

static void regs(FILE *out, const struct stallcap_user_regs *r)
{
	static const char *const names[] = {
		"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "r8", "r9", "r10",
		"r11", "r12", "r13", "r14", "r15", "ip", "flags",
	};
	const __u64 *v = &r->ax;
	unsigned int i;

	fputs(",\"regs\":{", out);
	for (i = 0; i < ARRAY_SIZE(names); i++)
		fprintf(out, "%s\"%s\":\"0x%llx\"", i ? "," : "", names[i],
			(unsigned long long)v[i]);
	fputc('}', out);
}

static void flags(FILE *out, __u32 f)
{
	static const char *const names[] = {
		"user_mode", "irqs_off", "in_hardirq", "in_softirq", "kstack_trunc",
		"ustack_trunc", "ustack_fault", "copy_partial", "kaddr_hidden",
		"raced", "migrated", "defer_pending", "no_user", "ustack_remote",
		"abandoned",
	};
	unsigned int i, n = 0;

	fprintf(out, ",\"flags\":%u,\"flag_names\":[", f);
	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (f & (1U << i))
			fprintf(out, "%s\"%s\"", n++ ? "," : "", names[i]);
	fputc(']', out);
}

static void sample_line(FILE *out, const struct sc_rsample *r)
{
	const struct stallcap_sample *s = r->smp->v.s;
	const struct stallcap_sample *u = r->smp->user.s;

	fprintf(out, "{\"type\":\"sample\",\"stall_id\":%llu,\"pid\":%u,\"tid\":%u,\"comm\":",
		(unsigned long long)s->stall_id, s->pid, s->tid);
	comm_str(out, s->comm);
	fprintf(out, ",\"cpu\":%u,\"sample_index\":%u,\"state\":\"%s\",\"path\":\"%s\","
		"\"clock\":\"%s\",\"record_type\":%u,\"cookie\":%llu,\"user_tag\":%llu,"
		"\"deadline_ns\":%llu,\"capture_ns\":%llu,\"timeout_ns\":%llu,"
		"\"lateness_ns\":%lld,\"suppressed\":%u,\"migrate_retries\":%u",
		s->cpu, s->sample_index, sc_state_name(s->state), sc_path_name(s->path),
		sc_clock_name(s->clock), s->hdr.type, (unsigned long long)s->cookie,
		(unsigned long long)s->user_tag, (unsigned long long)s->deadline_ns,
		(unsigned long long)s->capture_ns, (unsigned long long)s->timeout_ns,
		(long long)(s->capture_ns - s->deadline_ns), s->suppressed,
		s->migrate_retries);
	flags(out, s->flags);
	regs(out, &u->regs);
	fprintf(out, ",\"nr_kernel_frames\":%u,\"nr_user_frames\":%u,\"stack_start\":\"0x%llx\","
		"\"stack_size\":%u,\"deferred_user\":%s",
		s->nr_kernel_frames, u->nr_user_frames, (unsigned long long)u->stack_start,
		u->stack_size, r->smp->has_deferred ? "true" : "false");
	frames(out, "kernel_stack", r->kf, r->nk);
	frames(out, "user_stack", r->uf, r->nu);
	fputs("}\n", out);
}

void fmt_json_stall(FILE *out, struct sc_rstall *rs)
{
	const struct sc_stall *st = rs->st;
	const struct stallcap_sample *s = rs->first;

	fprintf(out, "{\"type\":\"stall\",\"stall_id\":%llu,\"pid\":%u,\"tid\":%u,\"comm\":",
		(unsigned long long)st->stall_id, st->pid, st->tid);
	if (s)
		comm_str(out, s->comm);
	else
		fputs("null", out);
	fputs(",\"process\":", out);
	json_str(out, rs->proc_comm);
	fprintf(out, ",\"over_ns\":%llu,\"timeout_ns\":%llu,\"nr_samples\":%u,\"ended\":%s}\n",
		(unsigned long long)sc_stall_over_ns(st),
		(unsigned long long)(s ? s->timeout_ns : 0), rs->nr,
		st->ended ? "true" : "false");
	resolve_stall_rewind(rs);
	while (resolve_stall_next(rs) > 0)
		sample_line(out, &rs->cur);
	if (!st->ended)
		return;
	fprintf(out, "{\"type\":\"stall_end\",\"stall_id\":%llu,\"pid\":%u,\"tid\":%u,"
		"\"user_tag\":%llu,\"deadline_ns\":%llu,\"end_ns\":%llu,\"nr_samples\":%u}\n",
		(unsigned long long)st->end.stall_id, st->end.pid, st->end.tid,
		(unsigned long long)st->end.user_tag, (unsigned long long)st->end.deadline_ns,
		(unsigned long long)st->end.end_ns, st->end.nr_samples);
}

void fmt_json_lost(FILE *out, __u64 lost, __u64 suppressed)
{
	fprintf(out, "{\"type\":\"lost\",\"lost\":%llu,\"suppressed\":%llu}\n",
		(unsigned long long)lost, (unsigned long long)suppressed);
}
