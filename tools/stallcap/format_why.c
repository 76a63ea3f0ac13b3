// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): what a sample says about why the thread stalled: where its
 * time went (STALLCAP_SEC_TIMES), what it waits on (STALLCAP_SEC_WAIT) and
 * the other tasks involved (STALLCAP_SEC_TASK).  The formatters call these
 * once per sample: text after the sample's first line, JSON before the
 * frame lists.
 *
 * For now this says which of those sections a sample carries; the full
 * rendering of their fields is issue 13's ("why it stalled").
 */
#include "tool.h"

void fmt_text_why(FILE *out, const struct sc_rsample *r)
{
	const struct stallcap_sample_view *v = &r->smp->v;

	if (v->nr_tasks_dropped)
		fprintf(out, "    (%u task sections beyond %u not shown)\n",
			v->nr_tasks_dropped, STALLCAP_VIEW_MAX_TASKS);
}

void fmt_json_why(FILE *out, const struct sc_rsample *r)
{
	const struct stallcap_sample_view *v = &r->smp->v;

	fprintf(out, ",\"has_times\":%s,\"has_wait\":%s,\"nr_tasks\":%u",
		v->has_times ? "true" : "false", v->has_wait ? "true" : "false",
		v->nr_tasks + v->nr_tasks_dropped);
}
