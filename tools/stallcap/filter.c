// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap report filters: which stalls a report shows.  A stall matches
 * if it matches every filter given; its pid, tid, name and tag are those of
 * its first sample, its time that sample's wall-clock capture time, its
 * duration as summary.c defines it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"
#include "output.h"

/* "50ms", "2s", "300us", "1500000ns", "1.5s"; a bare number is milliseconds */
int parse_duration_ns(const char *arg, __u64 *ns)
{
	static const struct { const char *s; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 },
		{ "h", 3600e9 }, { "", 1e6 },
	};
	char *end;
	double v = strtod(arg, &end);
	size_t i;

	if (end == arg || v < 0)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(end, units[i].s)) {
			*ns = (__u64)(v * units[i].mul + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_states(const char *arg, unsigned int *states)
{
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "running"))
			*states |= 1U << STALLCAP_STATE_RUNNING;
		else if (!strcmp(tok, "runnable"))
			*states |= 1U << STALLCAP_STATE_RUNNABLE;
		else if (!strcmp(tok, "blocked"))
			*states |= 1U << STALLCAP_STATE_SLEEPING |
				   1U << STALLCAP_STATE_UNINTERRUPTIBLE |
				   1U << STALLCAP_STATE_STOPPED;
		else
			return -EINVAL;
	}
	return *states ? 0 : -EINVAL;
}

static int parse_u32(const char *arg, __u32 *v)
{
	char *end;
	unsigned long x = strtoul(arg, &end, 0);

	if (end == arg || *end || x > 0xffffffffUL)
		return -EINVAL;
	*v = (__u32)x;
	return 0;
}

int filter_parse_opt(struct sc_filter *f, int opt, const char *arg)
{
	char *end;
	int ret = 0;

	switch (opt) {
	case 'p':
		ret = parse_u32(arg, &f->pid);
		break;
	case 't':
		ret = parse_u32(arg, &f->tid);
		break;
	case FILTER_OPT_FIRST:
		f->comm = arg;
		break;
	case FILTER_OPT_FIRST + 1:
		f->tag = strtoull(arg, &end, 0);
		f->has_tag = true;
		ret = end == arg || *end ? -EINVAL : 0;
		break;
	case FILTER_OPT_FIRST + 2:
		ret = parse_duration_ns(arg, &f->min_ns);
		break;
	case FILTER_OPT_FIRST + 3:
		f->since = arg;
		break;
	case FILTER_OPT_FIRST + 4:
		f->until = arg;
		break;
	case FILTER_OPT_FIRST + 5:
		ret = parse_states(arg, &f->states);
		break;
	default:
		return -ENOENT;		/* not a filter option */
	}
	if (ret)
		warnx_("bad value '%s' for a filter option", arg);
	f->active = true;
	return ret;
}

/*
 * -10m, -2h, -30s (ago), or a wall-clock time: YYYY-MM-DDTHH:MM[:SS] or
 * HH:MM[:SS] today, local time unless -u.
 */
static int parse_time(const char *arg, __u64 *ns)
{
	struct tm tm = { 0 };
	__u64 now = now_ns(CLOCK_REALTIME), d;
	const char *end;
	time_t t;

	if (arg[0] == '-') {
		if (parse_duration_ns(arg + 1, &d) || d > now)
			return -EINVAL;
		*ns = now - d;
		return 0;
	}
	t = (time_t)(now / NSEC_PER_SEC);
	if (sc_time_utc)
		gmtime_r(&t, &tm);
	else
		localtime_r(&t, &tm);
	tm.tm_sec = 0;
	end = strptime(arg, "%Y-%m-%dT%H:%M", &tm);
	if (!end)
		end = strptime(arg, "%H:%M", &tm);
	if (end && *end == ':')
		end = strptime(end + 1, "%S", &tm);
	if (!end || *end)
		return -EINVAL;
	tm.tm_isdst = -1;
	t = sc_time_utc ? timegm(&tm) : mktime(&tm);
	if (t < 0)
		return -EINVAL;
	*ns = (__u64)t * NSEC_PER_SEC;
	return 0;
}

int filter_finish(struct sc_filter *f)
{
	if (f->since && parse_time(f->since, &f->since_ns)) {
		warnx_("bad time '%s' (e.g. 2026-11-22T17:05, 17:05:30, -10m)", f->since);
		return -EINVAL;
	}
	if (f->until && parse_time(f->until, &f->until_ns)) {
		warnx_("bad time '%s' (e.g. 2026-11-22T17:05, 17:05:30, -10m)", f->until);
		return -EINVAL;
	}
	return 0;
}

static bool state_match(const struct sc_filter *f, const struct sc_stall *st)
{
	const struct sc_sample *m;

	for (m = st->samples; m; m = m->next)
		if (m->v.s.hdr.type == STALLCAP_REC_SAMPLE && m->v.s.state < 32 &&
		    f->states & (1U << m->v.s.state))
			return true;
	return false;
}

bool filter_match(const struct sc_filter *f, const struct sc_rstall *rs)
{
	const struct stallcap_sample *s = rs->first;
	__u64 rt;

	if (!f->active)
		return true;
	if (!s)
		return false;	/* an end without samples: nothing to filter on */
	if ((f->pid && s->pid != f->pid) || (f->tid && s->tid != f->tid))
		return false;
	if (f->comm && strncmp(s->comm, f->comm, sizeof(s->comm)))
		return false;
	if (f->has_tag && s->user_tag != f->tag)
		return false;
	if (f->min_ns && sc_stall_duration_ns(rs->st) < f->min_ns)
		return false;
	if (f->states && !state_match(f, rs->st))
		return false;
	if (f->since_ns || f->until_ns) {
		if (!sc_realtime(rs, s, s->capture_ns, &rt))
			return false;
		if ((f->since_ns && rt < f->since_ns) || (f->until_ns && rt > f->until_ns))
			return false;
	}
	return true;
}
