// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap report: print stalls from a record file or live, one block (or
 * JSON lines, or folded stacks) per stall, frames symbolized.  This file is
 * the report's sink (what it does with each record, when a stall is shown);
 * report_cmd.c is its command line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record_file.h"
#include "report.h"
#include "usyms.h"

/* live: how long an ended stall waits for a deferred user stack */
#define DEFER_WAIT_NS	(500 * NSEC_PER_MSEC)
/* stalls held at once (in progress, or waiting for their user stack) */
#define MAX_STALLS_DEFAULT	10000

static bool shows_ongoing(const struct report *rp)
{
	return rp->live && (rp->fmt == FMT_TEXT || rp->fmt == FMT_JSON);
}

/* text and json: the part of @s not printed yet, up to its @to-th sample */
static void print_part(struct report *rp, struct sc_rstall *rs, struct sc_stall *s,
		       unsigned int to)
{
	if (rp->fmt == FMT_TEXT)
		fmt_text_stall_part(rp->out, rs, s->shown, to, rp->live);
	else
		fmt_json_stall_part(rp->out, rs, s->shown, to, rp->live);
	if (to > rs->nr)
		to = rs->nr;
	if (to > s->shown)
		s->shown = to;
}

/*
 * The samples of a stall in progress that can be shown now: those before
 * the first one still waiting, for less than DEFER_WAIT_NS, for its
 * deferred user stack (in the order resolve_stall_next() shows them).
 */
static unsigned int ready_samples(const struct sc_stall *s, __u64 now)
{
	const struct sc_sample *m;
	unsigned int n = 0;

	for (m = s->samples; m; m = m->next) {
		if (m->merged)
			continue;
		if ((m->v.s.flags & STALLCAP_SAMPLE_DEFER_PENDING) && !m->has_deferred &&
		    now - m->seen_ns < DEFER_WAIT_NS)
			break;
		n++;
	}
	return n;
}

/*
 * live: a stall in progress is printed at its first samples, marked
 * ongoing, and its later samples as they come; print_stall() prints the
 * rest and its end.  A deadlocked thread shows up without an end.  A
 * sample waiting for its deferred user stack waits for it DEFER_WAIT_NS at
 * most, then is shown without it.
 */
static void print_ongoing(struct report *rp, struct sc_stall *s, __u64 now)
{
	unsigned int to = ready_samples(s, now);
	struct sc_rstall rs;

	if (to <= s->shown)
		return;		/* still fresh: tried again at the next flush */
	s->fresh = false;
	if (resolve_stall(&rp->r, s, &rs)) {
		warnx_("out of memory");
		resolve_stall_free(&rs);
		return;
	}
	if (s->shown || filter_match(&rp->filt, &rs)) {
		if (!s->shown)
			rp->printed++;
		print_part(rp, &rs, s, to);
		fflush(rp->out);
	}
	resolve_stall_free(&rs);
}

static void print_stall(struct report *rp, struct sc_stall *s)
{
	struct sc_rstall rs;

	s->printed = true;
	rp->samples += s->nr_samples;
	if (resolve_stall(&rp->r, s, &rs)) {
		warnx_("out of memory");
		resolve_stall_free(&rs);
		return;
	}
	if (s->shown) {		/* shown while ongoing: the rest, whatever the filter */
		print_part(rp, &rs, s, ~0U);
		resolve_stall_free(&rs);
		fflush(rp->out);
		return;
	}
	if (!filter_match(&rp->filt, &rs)) {
		resolve_stall_free(&rs);
		return;
	}
	switch (rp->fmt) {
	case FMT_TEXT:
	case FMT_JSON:
		print_part(rp, &rs, s, ~0U);
		break;
	case FMT_FOLDED:
		folded_add_stall(rp->fo, &rs);
		break;
	case FMT_TOP:
		summary_add_stall(rp->sm, &rs);
		break;
	case FMT_PPROF:
		pprof_add_stall(rp->pp, &rs);
		break;
	case FMT_HTML:
		html_add_stall(rp->html, &rs);
		break;
	}
	rp->printed++;
	rp->yielding += sc_stall_yields(&rs);
	resolve_stall_free(&rs);
	fflush(rp->out);
}

/*
 * A stall is shown (or added to the sums) once complete, then forgotten:
 * memory follows the stalls in progress (and for folded and --top the
 * distinct stacks), not the length of the recording.
 */
static void done_with(struct report *rp, struct sc_stall *s)
{
	print_stall(rp, s);
	stalls_release(&rp->st, s);
}

/*
 * Over --max-stalls held: the oldest stall is printed as it stands and let
 * go (a later record of it starts a new one), so that memory stays bounded
 * when ends never come (a ring that lost them, threads stuck for days).
 */
static void evict_oldest(struct report *rp, struct sc_stall *keep)
{
	struct sc_stall *old = rp->st.head;

	if (old == keep)
		old = old->next;
	if (!old)
		return;
	if (!old->printed)
		print_stall(rp, old);
	if (rp->fmt == FMT_TEXT && old->shown)
		fprintf(rp->out, "stall %llu of tid %u: let go before its end (over %u held)\n\n",
			(unsigned long long)old->stall_id, old->tid, rp->max_stalls);
	stalls_release(&rp->st, old);
	rp->evicted++;
}

static int on_record(struct sc_sink *sk, const struct stallcap_rec_header *rec)
{
	struct report *rp = (struct report *)sk;
	struct stallcap_watch_event ev;
	struct sc_stall *s;

	if (rec->type == STALLCAP_REC_WATCH) {
		if (stallcap_watch_event_parse(rec, rec->size, &ev))
			rp->st.bad_records++;
		else if (rp->fmt == FMT_JSON)
			fmt_json_watch(rp->out, &ev);
		else if (rp->fmt == FMT_TEXT && ev.event != STALLCAP_WATCH_BUSY)
			fmt_text_watch(rp->out, &ev);	/* busy: JSON only */
		if (rp->live)
			fflush(rp->out);	/* a watchdog reads it now */
		return 0;
	}
	s = stalls_add(&rp->st, rec);
	if (s && rp->st.live > rp->max_stalls)
		evict_oldest(rp, s);
	if (rp->live && s && !s->ended && rec->type == STALLCAP_REC_SAMPLE) {
		s->fresh = true;
		s->last->seen_ns = now_ns(CLOCK_MONOTONIC);
	}

	/*
	 * live: a stall is shown once it ended and its deferred user stack
	 * came (written when the thread returns to user space, after the end)
	 * or did not come in time; the rest when reading stops.  A file's
	 * stalls are shown the same way, in the order they ended.
	 */
	if (s && s->ended && !s->printed) {
		if (!stall_defer_pending(s))
			done_with(rp, s);
		else if (!s->end_seen_ns && rp->live)
			s->end_seen_ns = now_ns(CLOCK_MONOTONIC);
	}
	return 0;
}

static int on_flush(struct sc_sink *sk)
{
	struct report *rp = (struct report *)sk;
	__u64 now = now_ns(CLOCK_MONOTONIC);
	struct sc_stall *s, *next;

	for (s = rp->st.head; s; s = next) {
		next = s->next;
		if (s->ended && !s->printed && s->end_seen_ns &&
		    now - s->end_seen_ns >= DEFER_WAIT_NS)
			done_with(rp, s);
		else if (!s->ended && s->fresh && shows_ongoing(rp))
			print_ongoing(rp, s, now);
	}
	return 0;
}

/* live: a stall held is shown, or let go, with time (on_flush) */
static bool on_timed(struct sc_sink *sk)
{
	return ((struct report *)sk)->st.head != NULL;
}

static int on_proc(struct sc_sink *sk, const struct sc_proc *p)
{
	return usyms_add_proc(((struct report *)sk)->r.us, p);
}

/* the process exited: its symbols go, unless a stall of it is still held */
static int on_proc_gone(struct sc_sink *sk, __u32 pid)
{
	struct report *rp = (struct report *)sk;

	if (stalls_of_pid(&rp->st, pid))
		return -EBUSY;
	usyms_forget_proc(rp->r.us, pid);
	return 0;
}

static int on_fdname(struct sc_sink *sk, const struct sc_fdname *f)
{
	stalls_note_fd(&((struct report *)sk)->st, f);
	return 0;
}

static int on_ksym(struct sc_sink *sk, const struct ksym *k)
{
	return ksyms_add(((struct report *)sk)->r.ks, k->addr, k->size, k->name, k->mod);
}

static int on_lost(struct sc_sink *sk, __u64 lost, __u64 suppressed)
{
	struct report *rp = (struct report *)sk;

	rp->lost = lost;
	rp->suppressed = suppressed;
	return 0;
}

static int on_vdso(struct sc_sink *sk, const void *img, size_t len)
{
	usyms_set_vdso(((struct report *)sk)->r.us, img, len);
	return 0;
}

static int on_info(struct sc_sink *sk, const struct sc_host_info *hi)
{
	struct report *rp = (struct report *)sk;
	char boot[40];

	read_boot_id(boot, sizeof(boot));
	rp->same_boot = boot[0] && !strcmp(boot, hi->boot_id);
	/*
	 * The running kernel's symbols name the kernel frames its own record
	 * does not (a module loaded since) only if it is that boot's kernel:
	 * never a file's from another boot or machine, nor one that does not
	 * say (until it says, no record is resolved against them either).
	 */
	if (!rp->live && !rp->kallsyms)
		rp->r.live_path = rp->same_boot ? "/proc/kallsyms" : NULL;
	rp->host = *hi;
	rp->r.rt_offset_ns = hi->realtime_offset_ns;
	rp->r.rt_offset_known = hi->realtime_offset_ns != 0;
	return 0;
}

/*
 * Why no sample can carry the memory-stall mark, if the recording host said
 * so (older record files do not): the module needs the kernel's pressure
 * stall information, built in and on.
 */
static const char *memstall_unmarked(const struct report *rp)
{
	const struct sc_host_info *hi = &rp->host;

	if (!(hi->host_flags & SCF_HOST_KNOWN))
		return NULL;
	if (!(hi->module_features & STALLCAP_FEAT_MEMSTALL))
		return "the recording kernel has no pressure stall information (CONFIG_PSI)";
	if (!(hi->host_flags & SCF_HOST_PSI))
		return "pressure stall information was off on the recording host "
		       "(psi=0 or CONFIG_PSI_DEFAULT_DISABLED; boot with psi=1)";
	return NULL;
}

/* The recording host, one JSON line, if the input said what it was. */
static void host_json(const struct report *rp)
{
	const struct sc_host_info *hi = &rp->host;
	const char *why = memstall_unmarked(rp);

	if (!(hi->host_flags & SCF_HOST_KNOWN))
		return;
	fprintf(rp->out, "{\"type\":\"host\",\"release\":");
	json_str(rp->out, hi->release);
	fprintf(rp->out, ",\"module_features\":%llu,\"psi\":%s,\"memstall_marked\":%s",
		(unsigned long long)hi->module_features,
		hi->host_flags & SCF_HOST_PSI ? "true" : "false", why ? "false" : "true");
	if (why) {
		fprintf(rp->out, ",\"memstall_note\":");
		json_str(rp->out, why);
	}
	fprintf(rp->out, "}\n");
}

/* @failed: the input could not be read whole: no summary that looks complete */
void report_finish(struct report *rp, bool failed)
{
	__u64 samples;
	struct sc_stall *s;

	for (s = rp->st.head; s; s = s->next)
		if (!s->printed)
			print_stall(rp, s);
	samples = rp->samples;
	if (rp->fmt == FMT_HTML) {
		html_write(rp->html, rp->out);
	} else if (rp->fmt == FMT_PPROF) {
		if (!failed && pprof_write(rp->pp, rp->out))
			warnx_("cannot write the profile");
	} else if (rp->fmt == FMT_TOP) {
		summary_print(rp->sm, rp->out, rp->top);
		if (rp->lost || rp->suppressed)
			fprintf(rp->out, "%llu records lost (ring full), %llu stalls suppressed"
				" (rate limit)\n", (unsigned long long)rp->lost,
				(unsigned long long)rp->suppressed);
	} else if (rp->fmt == FMT_FOLDED) {
		folded_print(rp->fo, rp->out);
	} else if (rp->fmt == FMT_JSON) {
		if (rp->lost || rp->suppressed)
			fmt_json_lost(rp->out, rp->lost, rp->suppressed);
		host_json(rp);
	} else if (!failed) {
		const char *unmarked = memstall_unmarked(rp);

		if (rp->filt.active)
			fprintf(rp->out, "%u of ", rp->printed);
		fprintf(rp->out, "%u stall%s, %llu sample%s", rp->st.nr, rp->st.nr == 1 ? "" : "s",
			(unsigned long long)samples, samples == 1 ? "" : "s");
		if (rp->lost || rp->suppressed)
			fprintf(rp->out, "; %llu records lost (ring full), %llu stalls suppressed"
				" (rate limit)", (unsigned long long)rp->lost,
				(unsigned long long)rp->suppressed);
		if (rp->evicted)
			fprintf(rp->out, "; %llu let go before their end (over %u held)",
				(unsigned long long)rp->evicted, rp->max_stalls);
		fputc('\n', rp->out);
		if (unmarked)
			fprintf(rp->out, "memory stalls not marked: %s\n", unmarked);
	}
	if (rp->st.bad_records)
		warnx_("%llu malformed records skipped", (unsigned long long)rp->st.bad_records);
	if (rp->evicted)
		warnx_("%llu stalls let go before their end (over --max-stalls %u held)",
		       (unsigned long long)rp->evicted, rp->max_stalls);
	hint_unnamed(&rp->r);
	hint_busy_wait(rp->yielding, rp->printed);
}

void report_init(struct report *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->sink = (struct sc_sink){ on_record, on_proc, on_ksym, on_lost, on_vdso, on_info,
				     on_flush, on_proc_gone, on_timed, on_fdname };
	rp->out = stdout;
	rp->max_stalls = MAX_STALLS_DEFAULT;
}

int report_setup(struct report *rp)
{
	stalls_init(&rp->st);
	rp->r.ks = ksyms_new();
	rp->r.us = usyms_new();
	rp->fo = folded_new();
	rp->sm = summary_new(rp->group_by);
	rp->pp = pprof_new();
	rp->html = html_new();
	return rp->r.ks && rp->r.us && rp->fo && rp->sm && rp->pp && rp->html ? 0 : -ENOMEM;
}

void report_teardown(struct report *rp)
{
	stalls_free(&rp->st);
	ksyms_free(rp->r.ks);
	ksyms_free(rp->r.live);
	usyms_free(rp->r.us);
	folded_free(rp->fo);
	summary_free(rp->sm);
	pprof_free(rp->pp);
	html_free(rp->html);
}

/*
 * report_live_new() - a live report fed by hand, as the collector feeds
 * one (host tests): text or JSON lines to @out, @max_stalls held at once.
 */
struct report *report_live_new(FILE *out, bool json, unsigned int max_stalls)
{
	struct report *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	report_init(rp);
	rp->out = out;
	rp->live = true;
	rp->fmt = json ? FMT_JSON : FMT_TEXT;
	rp->max_stalls = max_stalls;
	if (report_setup(rp)) {
		report_teardown(rp);
		free(rp);
		return NULL;
	}
	return rp;
}

struct sc_sink *report_live_sink(struct report *rp)
{
	return &rp->sink;
}

/** report_live_proc() - the maps the live report keeps of @pid, or NULL. */
const struct sc_proc *report_live_proc(struct report *rp, __u32 pid)
{
	return usyms_proc(rp->r.us, pid);
}

/** report_live_end() - what reading stops prints (the summary), then free. */
void report_live_end(struct report *rp)
{
	report_finish(rp, false);
	report_teardown(rp);
	free(rp);
}

