// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): record, report and count the stalls stallcap captures.
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} cmds[] = {
	{ "record", cmd_record, "follow a session's records live and write them to a file" },
	{ "report", cmd_report, "print stalls, symbolized, from a file or live" },
	{ "stats", cmd_stats, "print the module's or a session's counters" },
	{ "archive", cmd_archive, "pack the binaries and debug files a record needs" },
};

static void usage(FILE *out)
{
	unsigned int i;

	fprintf(out, "usage: %s COMMAND [OPTIONS]\n\n"
		"stallcap captures the stack of a thread that misses its deadline.\n\n"
		"commands:\n", prog);
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(out, "  %-8s %s\n", cmds[i].name, cmds[i].what);
	fprintf(out, "\n'%s COMMAND --help' describes a command's options.\n"
		"Examples:\n"
		"  %s record -o stall.data -- ./server     # run and record a program\n"
		"  %s report stall.data                    # read what was recorded\n"
		"  %s report --global --format folded      # live, system-wide (root)\n",
		prog, prog, prog, prog);
}

int main(int argc, char **argv)
{
	unsigned int i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("stallcap %s (ABI %d)\n", STALLCAP_TOOL_VERSION, STALLCAP_ABI_VERSION);
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	warnx_("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
