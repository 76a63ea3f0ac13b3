// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): what a sample says about why the thread stalled: where its
 * time went (STALLCAP_SEC_TIMES), what it waits on (STALLCAP_SEC_WAIT) and
 * the other tasks involved (STALLCAP_SEC_TASK).  The formatters call these
 * once per sample: text after the sample's first line (the verdict, the
 * time breakdown, then each task with its stacks), JSON before the frame
 * lists (every field; unavailable ones null).
 */
#include "tool.h"
#include "output.h"
#include "why.h"

static void task_frames(FILE *out, const struct sc_rtask *rt)
{
	int i;

	if (rt->nk) {
		fprintf(out, "      kernel:\n");
		for (i = 0; i < rt->nk; i++)
			sc_frame_line(out, &rt->f[i], i);
	}
	if (rt->nu) {
		fprintf(out, "      user:\n");
		for (i = 0; i < rt->nu; i++)
			sc_frame_line(out, &rt->f[rt->nk + i], i);
	}
}

void fmt_text_why(FILE *out, const struct sc_rsample *r)
{
	const struct stallcap_sample_view *v = &r->smp->v;
	struct why_input in;
	char line[1024];
	unsigned int i;

	why_from_view(&in, v);
	if (in.times || in.wait || v->nr_tasks) {
		why_verdict(&in, line, sizeof(line));
		fprintf(out, "    why: %s\n", line);
	}
	/* a section without counters (no interval base) has no line */
	if (in.times && why_breakdown(in.times, line, sizeof(line)) > 0)
		fprintf(out, "    time: %s\n", line);
	if (r->smp->has_syscall) {
		fputs("    in system call: ", out);
		sc_syscall_text(out, r->smp);
		fputc('\n', out);
	}
	for (i = 0; i < v->nr_tasks; i++) {
		why_task_line(&v->tasks[i].t, line, sizeof(line));
		fprintf(out, "    %s\n", line);
		task_frames(out, &r->tasks[i]);
	}
	if (v->nr_tasks_dropped)
		fprintf(out, "    (%u task sections beyond %u not shown)\n",
			v->nr_tasks_dropped, STALLCAP_VIEW_MAX_TASKS);
}

void fmt_json_why(FILE *out, const struct sc_rsample *r)
{
	const struct stallcap_sample_view *v = &r->smp->v;
	struct why_input in;

	fprintf(out, ",\"has_times\":%s,\"has_wait\":%s,\"nr_tasks\":%u",
		v->has_times ? "true" : "false", v->has_wait ? "true" : "false",
		v->nr_tasks + v->nr_tasks_dropped);
	why_from_view(&in, v);
	why_json(out, &in);
	sc_syscall_json(out, r->smp);
}
