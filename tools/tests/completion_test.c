// SPDX-License-Identifier: GPL-2.0
/*
 * The bash completion (completion/stallcap), run by bash as readline would:
 * options from the command's --help (the symbol options among them), and
 * the values of --format, --group-by, --state.
 */
#include "helpers.h"
#include "kselftest_harness.h"

/* COMPREPLY for the command line @words, the cursor on its last word */
static const char *complete(const char *words)
{
	static char out[4096];
	char cmd[16384], comp[4096], tool[4096];
	size_t n;
	FILE *p;

	snprintf(comp, sizeof(comp), "%s", fixture_path("../completion/stallcap"));
	snprintf(tool, sizeof(tool), "%s", fixture_path("../stallcap/stallcap"));
	snprintf(cmd, sizeof(cmd),
		 "bash -c 'source %s; COMP_WORDS=(%s %s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));"
		 " _stallcap; echo \"${COMPREPLY[*]}\"'", comp, tool, words);
	out[0] = 0;
	p = popen(cmd, "r");
	if (!p)
		return out;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	pclose(p);
	return out;
}

TEST(options_from_help)
{
	EXPECT_STREQ("record report\n", complete("re"));
	EXPECT_STREQ("archive\n", complete("ar"));
	EXPECT_STREQ("--help --output\n", complete("archive --"));
	EXPECT_STREQ("--no-demangle --no-dwarf --no-inherit --no-inline\n",
		     complete("report --no-"));
	EXPECT_STREQ("--no-inherit\n", complete("record --no-inh"));
	EXPECT_STREQ("--symfs\n", complete("report --sym"));
	EXPECT_STREQ("--group-by\n", complete("report --gr"));
	EXPECT_STREQ("top\n", complete("to"));
	EXPECT_STREQ("--iterations\n", complete("top --it"));
	EXPECT_STREQ("--max-stalls\n", complete("report --max"));
}

TEST(option_values)
{
	EXPECT_STREQ("pprof\n", complete("report -f pp"));
	EXPECT_STREQ("html\n", complete("report --format h"));
	EXPECT_STREQ("verdict\n", complete("report --group-by v"));
	EXPECT_STREQ("both kernel user state verdict syscall\n",
		     complete("report --group-by \"\""));
	EXPECT_STREQ("running runnable\n", complete("report --state ru"));
}

TEST_HARNESS_MAIN
