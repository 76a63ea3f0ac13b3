// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap report: the command line (options, input or live source,
 * output file); report.c does the reporting.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report.h"
#include "usyms.h"

static const char report_help[] =
"usage: stallcap report [FILE] [OPTIONS]\n"
"       stallcap report --fd N | --global | -- CMD [ARGS]   (live)\n\n"
"Print the stalls of FILE (default stallcap.data, '-' for stdin), or follow\n"
"records live.  One block per stall: where the thread was, then kernel and\n"
"user frames, each labelled with how it was found (fp, dwarf).\n\n"
"  -i, --input FILE     the record file\n"
"  -f, --format FMT     text (default), json (JSON lines), folded (stacks\n"
"                       weighted by stalled time in us) or pprof (gzipped\n"
"                       profile.proto for go tool pprof; use -o FILE) or\n"
"                       html (flame graph of stalled time + stalls per thread)\n"
"      --no-dwarf       user stacks from the frame-pointer walk only\n"
"      --no-demangle    C++ symbols as the ELF file spells them (_ZN...)\n"
"      --no-inline      no frames for functions inlined at an address\n"
"      --symfs DIR      look for binaries under DIR (DIR/usr/bin/x...) and\n"
"                       for debug files under DIR/usr/lib/debug first\n"
"  -k, --kallsyms FILE  kernel symbols from FILE (default: the file's own,\n"
"                       then /proc/kallsyms if recorded on this boot)\n"
"      --top[=N]        culprit stacks ranked by stalled time (the N first),\n"
"                       then stall durations per process, thread and tag\n"
"      --group-by G     --top groups by: both (user and kernel stack, default),\n"
"                       kernel, user, state, verdict (why it stalled:\n"
"                       runnable: preempted by X, blocked on futex...), or\n"
"                       syscall (the system call the thread was inside)\n"
"  -o, --output FILE    write the report to FILE\n"
"  -u, --utc            wall-clock times in UTC (default: local time)\n"
"      --max-stalls N   stalls held at once, in progress or waiting for a\n"
"                       deferred stack (default 10000); over it, the oldest\n"
"                       is printed as it stands and let go (counted)\n"
FILTER_HELP
"live: a stall is printed at its first samples, marked ongoing, its later\n"
"samples as they come, then its end (text and json)\n"
COLLECT_HELP
"  -h, --help           this text\n";

enum { OPT_NO_DWARF = 0x100, OPT_TOP, OPT_GROUP_BY, OPT_NO_DEMANGLE, OPT_NO_INLINE, OPT_SYMFS,
       OPT_MAX_STALLS };

static const struct option report_options[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "format", required_argument, NULL, 'f' },
	{ "no-dwarf", no_argument, NULL, OPT_NO_DWARF },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "symfs", required_argument, NULL, OPT_SYMFS },
	{ "kallsyms", required_argument, NULL, 'k' },
	{ "output", required_argument, NULL, 'o' },
	{ "utc", no_argument, NULL, 'u' },
	{ "help", no_argument, NULL, 'h' },
	{ "top", optional_argument, NULL, OPT_TOP },
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	{ "max-stalls", required_argument, NULL, OPT_MAX_STALLS },
	FILTER_LONG_OPTIONS,
	COLLECT_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static int parse_count(const char *arg, unsigned int *n)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (end == arg || *end || v > 1000000)
		return -EINVAL;
	*n = (unsigned int)v;
	return 0;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int parse_format(const char *arg, enum report_format *fmt)
{
	if (!strcmp(arg, "text"))
		*fmt = FMT_TEXT;
	else if (!strcmp(arg, "json"))
		*fmt = FMT_JSON;
	else if (!strcmp(arg, "folded"))
		*fmt = FMT_FOLDED;
	else if (!strcmp(arg, "pprof"))
		*fmt = FMT_PPROF;
	else if (!strcmp(arg, "html"))
		*fmt = FMT_HTML;
	else
		return -EINVAL;
	return 0;
}

static int run(struct report *rp, struct collect_opts *o, const char *in, int *status)
{
	int ret;

	*status = 0;
	if (!rp->live) {
		ret = scfile_read(in, &rp->sink);
		if (ret)
			warnx_("%s: %s", in, ret == -EPROTO ? "not a stallcap record file" :
			       strerror(-ret));
		return ret;
	}
	if (collect_check(o))
		return -EINVAL;
	return collect_run(o, &rp->sink, status);
}

int cmd_report(int argc, char **argv)
{
	struct report rp;
	const char *in = NULL, *kallsyms = NULL, *outpath = NULL, *symfs = NULL, *pid_arg = NULL;
	bool demangle = true, inlines = true;
	struct collect_opts o;
	int opt, ret, status, i;

	report_init(&rp);
	collect_opts_init(&o);
	/* a command follows "--"; before it, a FILE may come anywhere */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			if (i + 1 < argc) {
				o.cmd = argv + i + 1;
				rp.live = true;
			}
			argc = i;
			break;
		}
	}
	while ((opt = getopt_long(argc, argv, "i:f:k:o:uh" FILTER_SHORT_OPTIONS
				  COLLECT_SHORT_OPTIONS,
				  report_options, NULL)) != -1) {
		switch (opt) {
		case 'i':
			in = optarg;
			break;
		case 'f':
			if (parse_format(optarg, &rp.fmt)) {
				warnx_("unknown format '%s' (text, json, folded, pprof, html)", optarg);
				return 2;
			}
			break;
		case OPT_NO_DWARF:
			rp.r.unwind_flags |= UNWIND_NO_DWARF;
			break;
		case OPT_NO_DEMANGLE:
			demangle = false;
			break;
		case OPT_NO_INLINE:
			inlines = false;
			break;
		case OPT_SYMFS:
			symfs = optarg;
			break;
		case 'k':
			kallsyms = optarg;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'u':
			sc_time_utc = true;
			break;
		case 'h':
			fputs(report_help, stdout);
			return 0;
		case OPT_TOP:
			rp.fmt = FMT_TOP;
			if (optarg && parse_count(optarg, &rp.top)) {
				warnx_("--top: bad count '%s'", optarg);
				return 2;
			}
			break;
		case OPT_MAX_STALLS:
			if (parse_count(optarg, &rp.max_stalls) || !rp.max_stalls) {
				warnx_("--max-stalls: bad count '%s'", optarg);
				return 2;
			}
			break;
		case OPT_GROUP_BY:
			if (parse_group_by(optarg, &rp.group_by)) {
				warnx_("unknown --group-by '%s' (both, kernel, user, state, verdict, syscall)", optarg);
				return 2;
			}
			break;
		case 'p':
			pid_arg = optarg;	/* a filter, or with --deadline what to watch */
			break;
		case 't':
		case FILTER_OPT_FIRST ... FILTER_OPT_FIRST + 5:
			if (filter_parse_opt(&rp.filt, opt, optarg))
				return 2;
			break;
		default:
			if (collect_parse_opt(&o, opt, optarg)) {
				fputs(report_help, stderr);
				return 2;
			}
			rp.live |= opt == 'F' || opt == 'g';
		}
	}
	if (pid_arg && o.deadline_ns) {
		/* perf's -p: the processes to watch (and so the only ones shown) */
		if (parse_pids(&o, pid_arg)) {
			warnx_("-p: bad process list '%s'", pid_arg);
			return 2;
		}
		rp.live = true;
	} else if (pid_arg && filter_parse_opt(&rp.filt, 'p', pid_arg)) {
		return 2;
	}
	if (optind < argc && !in)
		in = argv[optind++];
	if (optind < argc) {
		warnx_("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (in && rp.live) {
		warnx_("a file or a live source, not both");
		return 2;
	}
	if (filter_finish(&rp.filt))
		return 2;
	if (symfs && !is_dir(symfs)) {
		warnx_("--symfs %s: not a directory", symfs);
		return 2;
	}
	if (outpath && !(rp.out = fopen(outpath, "we"))) {
		warnx_("%s: %m", outpath);
		return 1;
	}
	if (report_setup(&rp))
		return 1;
	/* a file's: only --kallsyms, until its host record says same boot */
	rp.kallsyms = kallsyms;
	rp.r.live_path = kallsyms ? kallsyms : rp.live ? "/proc/kallsyms" : NULL;
	rp.same_boot = rp.live || kallsyms;
	usyms_set_demangle(rp.r.us, demangle);
	usyms_set_inline(rp.r.us, inlines);
	if (symfs && usyms_set_symfs(rp.r.us, symfs))
		return 1;
	ret = run(&rp, &o, in ? in : "stallcap.data", &status);
	report_finish(&rp, ret != 0);
	report_teardown(&rp);
	if (rp.out != stdout && fclose(rp.out))
		ret = -EIO;
	return exit_code(ret, &o, status);
}
