// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark program works: stallcap_bench (bench/), compiled into this
 * test as one translation unit so that the selftests' one-source build rule
 * builds it, runs every section with --smoke (tiny counts, seconds), and
 * must print well-formed "@bench KEY=VALUE" lines, every section must
 * succeed, the figures the report needs must be there, and its report must
 * turn them into the Markdown tables and a JSON file.
 *
 * This proves the program, not the figures: `make bench` runs it for real.
 */
#define main stallcap_bench_main
#include "../bench/stallcap_bench.c"
#undef main
#include "../bench/common.c"
#include "../bench/hotpath.c"
#include "../bench/lateness.c"
#include "../bench/capture_cost.c"
#include "../bench/scale.c"
#include "../bench/seastar.c"
#include "../bench/beats.c"
#include "../bench/nmi_time.c"
#include "../bench/report.c"

#include <ctype.h>

/* as in stallcap_test.h: the harness's TEST_F wrapper and setjmp() */
#pragma GCC diagnostic ignored "-Wclobbered"

#include "sc_harness.h"

#define RAW	"/tmp/bench_smoke.raw"
#define OUT	"/tmp/bench_smoke"

/* Numbers that must be in a run's output. */
static const char *const required[] = {
	"info.kernel", "hot.store.p50", "hot.heartbeat.p50", "hot.getppid.p50",
	"hot.enotty.p50", "hot.rearm.p50", "hot.settime.p50",
	"lateness.idle.baseline.p99", "lateness.idle.stallcap.p99",
	"lateness.hog.baseline.p99", "lateness.hog.stallcap.p99",
	"capture.local.user.16k.p50_lo", "capture.local.kernel.64k.p99_hi",
	"scale.1.plain.iters", "scale.1.stallcap.iters", "scale.tp.rearm.scaling",
	"seastar.user.stallcap.detected", "seastar.sleeping.stallcap.detected",
	"hot.shared.p50", "hot.clock_store.p50", "lateness.idle.shared.p99",
	"beats.10.threads", "beats.10.watched.soak_per_s", "nmi.deferred.samples",
	NULL,
};

static bool well_formed(const char *line)
{
	const char *p = line + strlen("@bench ");

	if (strncmp(line, "@bench ", 7))
		return false;
	for (; *p && *p != '='; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) &&
		    *p != '.' && *p != '_')
			return false;
	return *p == '=' && p > line + 7 && p[1] != '\0';
}

static bool file_has(const char *path, const char *what)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

FIXTURE(bench) {
	int saved_stdout;
};

FIXTURE_SETUP(bench)
{
	if (access(STALLCAP_DEVICE, R_OK | W_OK))
		SKIP(return, "no %s", STALLCAP_DEVICE);
	self->saved_stdout = -1;
}

FIXTURE_TEARDOWN(bench)
{
	unlink(RAW);
	unlink(OUT ".md");
	unlink(OUT ".json");
}

TEST_F_TIMEOUT(bench, smoke_run_prints_a_wellformed_result, 300)
{
	char *argv[] = { "stallcap_bench", "--smoke", "all", NULL };
	char line[1024];
	unsigned int lines = 0, bad = 0, failed = 0, i;
	int fd, rc;
	FILE *f;

	/* the sections print to stdout: send it to RAW */
	fflush(stdout);
	fd = open(RAW, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd);
	self->saved_stdout = dup(1);
	ASSERT_LE(0, self->saved_stdout);
	ASSERT_EQ(1, dup2(fd, 1));
	close(fd);
	/* no perf event: its static-key patching of __schedule (hotpath.c) */
	setenv("STALLCAP_BENCH_NO_PERF", "1", 1);
	rc = stallcap_bench_main(3, argv);
	fflush(stdout);
	dup2(self->saved_stdout, 1);
	close(self->saved_stdout);
	EXPECT_EQ(0, rc);

	f = fopen(RAW, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		lines++;
		if (!well_formed(line)) {
			bad++;
			TH_LOG("malformed: %s", line);
		}
		if (strstr(line, ".rc=") && !strstr(line, ".rc=0")) {
			failed++;
			TH_LOG("%s", line);
		}
	}
	fclose(f);
	EXPECT_LT(50U, lines);
	EXPECT_EQ(0U, bad);
	EXPECT_EQ(0U, failed);

	ASSERT_EQ(0, kv_load(RAW));
	for (i = 0; required[i]; i++) {
		struct kv *kv = kv_find(required[i]);

		EXPECT_TRUE(kv != NULL) TH_LOG("missing %s", required[i]);
		if (kv && strcmp(required[i], "info.kernel"))
			EXPECT_TRUE(kv->isnum && kv->num >= 0)
				TH_LOG("%s=%s is not a number", required[i], kv->val);
	}
	nkv = 0;	/* bench_report() loads the file again */

	/* the report: tables and JSON */
	fflush(stdout);
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	self->saved_stdout = dup(1);
	dup2(fd, 1);
	close(fd);
	rc = bench_report(RAW, OUT);
	fflush(stdout);
	dup2(self->saved_stdout, 1);
	close(self->saved_stdout);
	ASSERT_EQ(0, rc);
	EXPECT_TRUE(file_has(OUT ".md", "| #16.1 exact deadline without a system call | "
			     "shared-deadline re-arm ≤ 0.1× getppid (median) |"));
	EXPECT_TRUE(file_has(OUT ".md", "| REARM ioctl ≤ 1.5× getppid (median;"));
	EXPECT_TRUE(file_has(OUT ".md", "| #16.5 capture straight into the ring |"));
	EXPECT_TRUE(file_has(OUT ".md", "### 6. Heartbeat watches at scale"));
	EXPECT_TRUE(file_has(OUT ".md", "### 7. Time in NMI context per capture"));
	EXPECT_TRUE(file_has(OUT ".md", "### 1. Hot path"));
	EXPECT_TRUE(file_has(OUT ".md", "### 5. Against Seastar"));
	EXPECT_TRUE(file_has(OUT ".json", "\"targets\": ["));
	EXPECT_TRUE(file_has(OUT ".json", "\"hot.rearm.p50\": "));
	EXPECT_FALSE(file_has(OUT ".json", ": nan"));
}

TEST_HARNESS_MAIN
