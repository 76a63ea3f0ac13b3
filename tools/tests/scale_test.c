// SPDX-License-Identifier: GPL-2.0
/*
 * Scale: 100,000 stalls (a file written by the tool's own writer) report in
 * under 5 s of CPU time with --top, as folded stacks and as text, and the report's
 * peak memory does not grow with the number of stalls: 100,000 stalls take
 * at most 8 MiB more than 20,000 with the same 50 distinct stacks, and far
 * less than the file.  Bounds are on CPU time and RSS (from wait4), so a
 * loaded machine does not make the test flaky; wall time is printed.
 */
#include <sys/stat.h>

#include "scale_gen.h"
#include "kselftest_harness.h"

static char *slurp(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

FIXTURE(scale)
{
	char small[64], big[64], out[64];
};

FIXTURE_SETUP(scale)
{
	snprintf(self->small, sizeof(self->small), "/tmp/stallcap-scale-20k.%d", getpid());
	snprintf(self->big, sizeof(self->big), "/tmp/stallcap-scale-100k.%d", getpid());
	snprintf(self->out, sizeof(self->out), "/tmp/stallcap-scale-out.%d", getpid());
	ASSERT_EQ(0, gen_stalls(self->small, 20000));
	ASSERT_EQ(0, gen_stalls(self->big, 100000));
}

FIXTURE_TEARDOWN(scale)
{
	unlink(self->small);
	unlink(self->big);
	unlink(self->out);
}

TEST_F_TIMEOUT(scale, top_100k_fast_and_small, 120)
{
	struct run small, big;
	struct stat st;
	char *txt;

	ASSERT_EQ(0, stat(self->big, &st));
	ASSERT_EQ(0, run_report(fixture_path("../stallcap/stallcap"), self->small, "--top", self->out, &small));
	ASSERT_EQ(0, small.status);
	ASSERT_EQ(0, run_report(fixture_path("../stallcap/stallcap"), self->big, "--top", self->out, &big));
	ASSERT_EQ(0, big.status);
	TH_LOG("100,000 stalls (%lld MiB file): %.2f s CPU, %.2f s wall, %ld KiB peak RSS "
	       "(20,000: %.2f s CPU, %ld KiB)", (long long)(st.st_size >> 20), big.cpu_s,
	       big.wall_s, big.maxrss_kb, small.cpu_s, small.maxrss_kb);
	EXPECT_LT(big.cpu_s, 5.0);
	EXPECT_LT(big.maxrss_kb - small.maxrss_kb, 8 * 1024);
	EXPECT_LT(big.maxrss_kb * 1024, st.st_size / 2);
	/* and the sums are right: 10,000 stalls each of 2..11 ms */
	txt = slurp(self->out);
	ASSERT_NE(NULL, txt);
	EXPECT_EQ(0, strncmp(txt, "100000 stalls, 650000.000 ms stalled; by user and kernel "
			     "stack, 50 groups, ranked by stalled time\n", 96)) TH_LOG("%.200s", txt);
	EXPECT_NE(NULL, strstr(txt, "\nprocess 100 (gen-worker): 100000 stalls, 650000.000 ms\n"
			       "    2-4ms:20000 4-8ms:40000 8-16ms:40000\n"));
}

TEST_F_TIMEOUT(scale, folded_100k_fast_and_small, 120)
{
	struct run small, big;
	unsigned long long sum = 0, v;
	char line[512], *sp;
	FILE *f;

	ASSERT_EQ(0, run_report(fixture_path("../stallcap/stallcap"), self->small, "-ffolded", self->out, &small));
	ASSERT_EQ(0, run_report(fixture_path("../stallcap/stallcap"), self->big, "-ffolded", self->out, &big));
	ASSERT_EQ(0, big.status);
	TH_LOG("folded, 100,000 stalls: %.2f s CPU, %.2f s wall, %ld KiB peak RSS",
	       big.cpu_s, big.wall_s, big.maxrss_kb);
	EXPECT_LT(big.cpu_s, 5.0);
	EXPECT_LT(big.maxrss_kb - small.maxrss_kb, 8 * 1024);
	/* 50 lines whose microseconds add up to the 650 s stalled */
	f = fopen(self->out, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		sp = strrchr(line, ' ');
		ASSERT_NE(NULL, sp);
		v = strtoull(sp + 1, NULL, 10);
		sum += v;
	}
	fclose(f);
	EXPECT_EQ(650000000ULL, sum);
}

/* every stall printed: memory still follows the stalls in progress */
TEST_F_TIMEOUT(scale, text_100k_fast_and_small, 120)
{
	struct run small, big;

	ASSERT_EQ(0, run_report(fixture_path("../stallcap/stallcap"), self->small, "-ftext",
				"/dev/null", &small));
	ASSERT_EQ(0, run_report(fixture_path("../stallcap/stallcap"), self->big, "-ftext",
				"/dev/null", &big));
	ASSERT_EQ(0, big.status);
	TH_LOG("text, 100,000 stalls: %.2f s CPU, %.2f s wall, %ld KiB peak RSS",
	       big.cpu_s, big.wall_s, big.maxrss_kb);
	EXPECT_LT(big.cpu_s, 5.0);
	EXPECT_LT(big.maxrss_kb - small.maxrss_kb, 8 * 1024);
}

TEST_HARNESS_MAIN
