// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap record: follow a session's records live and write them, with the
 * process maps, build-ids and kernel symbols they need, to a file.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tool.h"

static const char record_help[] =
"usage: stallcap record [-o FILE] [OPTIONS] [-- CMD [ARGS]]\n\n"
"Follow stall records live and write them to FILE (default stallcap.data,\n"
"'-' for stdout) until interrupted, the duration passes, or CMD exits.\n\n"
"  -o, --output FILE    where to write\n"
COLLECT_HELP
"  -h, --help           this text\n";

static const struct option record_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	COLLECT_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* The exit code of a run: the command's, or 0 / 1. */
int exit_code(int ret, const struct collect_opts *o, int status)
{
	if (ret)
		return 1;
	if (!o->cmd)
		return 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

int cmd_record(int argc, char **argv)
{
	const char *out = "stallcap.data";
	struct collect_opts o;
	struct scfile *f;
	int opt, ret, status;

	collect_opts_init(&o);
	while ((opt = getopt_long(argc, argv, "+o:h" COLLECT_SHORT_OPTIONS,
				  record_options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(record_help, stdout);
			return 0;
		default:
			if (collect_parse_opt(&o, opt, optarg)) {
				fputs(record_help, stderr);
				return 2;
			}
		}
	}
	if (optind < argc)
		o.cmd = argv + optind;
	if (collect_check(&o))
		return 2;
	f = scfile_create(out);
	if (!f) {
		warnx_("%s: cannot create: %m", out);
		return 1;
	}
	ret = collect_run(&o, scfile_sink(f), &status);
	if (scfile_close(f) && !ret) {
		warnx_("%s: write error", out);
		ret = -1;
	}
	return exit_code(ret, &o, status);
}
