// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): the options of the live collector, shared by record, a live
 * report and top (COLLECT_LONG_OPTIONS).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

void collect_opts_init(struct collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->cfg.size = sizeof(o->cfg);
}

static int parse_u32(const char *arg, __u32 *v, unsigned long long mult)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(arg, &end, 0);
	if (errno || *end || x * mult > 0xffffffffULL)
		return -EINVAL;
	*v = (__u32)(x * mult);
	return 0;
}

/**
 * collect_check() - settle where records come from
 *
 * Without --fd, --global or a command, root reads system-wide.
 */
int collect_check(struct collect_opts *o)
{
	if ((o->npids || o->cputime || o->no_inherit || o->park || o->recv) &&
	    !o->deadline_ns) {
		warnx_("-p, --cputime, --no-inherit, --park and --recv go with --deadline DUR");
		return -EINVAL;
	}
	if (o->children && !o->npids) {
		warnx_("--children goes with -p PID");
		return -EINVAL;
	}
	if (o->deadline_ns) {
		if (o->fd >= 0 || o->global || (o->npids && o->cmd) ||
		    (!o->npids && !o->cmd)) {
			warnx_("--deadline watches a command (-- CMD) or processes (-p PID), with no --fd or --global");
			return -EINVAL;
		}
		return 0;
	}
	if (o->fd >= 0 && (o->global || o->cmd)) {
		warnx_("--fd takes the application's session: no --global, no command");
		return -EINVAL;
	}
	if (o->fd < 0 && !o->global && !o->cmd) {
		if (geteuid()) {
			warnx_("give --fd N, a command to run, or --global (as root)");
			return -EINVAL;
		}
		o->global = true;
	}
	return 0;
}

/* Options shared by record and a live report; see collect_long_options. */
int collect_parse_opt(struct collect_opts *o, int opt, const char *arg)
{
	char *end;

	switch (opt) {
	case 'F':
		o->fd = (int)strtol(arg, &end, 10);
		return *end || o->fd < 0 ? -EINVAL : 0;
	case 'g':
		o->global = true;
		return 0;
	case 'd': {
		__u64 ns;

		/* a run of days (a deadline is at most an hour) */
		if (parse_duration_max(arg, &ns, 366 * 86400e9))
			return -EINVAL;
		o->duration = ns / 1e9;
		return 0;
	}
	case 'T':
		return parse_duration(arg, &o->deadline_ns) ||
		       !o->deadline_ns ? -EINVAL : 0;
	case 'C':
		o->cputime = true;
		return 0;
	case COLLECT_OPT_NO_INHERIT:
		o->no_inherit = true;
		return 0;
	case COLLECT_OPT_PARK:
		o->park = true;
		return 0;
	case COLLECT_OPT_RECV:
		o->recv = true;
		return 0;
	case COLLECT_OPT_CHILDREN:
		o->children = true;
		return 0;
	case 'p':
		return parse_pids(o, arg);
	case 'R':
		return parse_u32(arg, &o->cfg.ring_bytes, 1024);
	case 'S':
		return parse_u32(arg, &o->cfg.user_stack_bytes, 1);
	case 'N':
		return parse_u32(arg, &o->cfg.max_samples, 1);
	case 'L':
		return parse_u32(arg, &o->cfg.rate_limit, 1);
	case 'D':
		o->cfg.flags |= STALLCAP_CFG_DEFER_USER;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	default:
		return -ENOENT;
	}
}
