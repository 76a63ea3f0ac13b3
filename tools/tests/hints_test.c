// SPDX-License-Identifier: GPL-2.0
/*
 * The tool explains itself: without the module, `record` and `stats` say
 * how to load it, and a failed `record` leaves an existing data file as it
 * was and no temporary file behind.  Skipped where /dev/stallcap exists.
 */
#include <dirent.h>

#include "helpers.h"
#include "kselftest_harness.h"

static int run(const char *args, char *out, size_t len)
{
	char cmd[8192];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", fixture_path("../stallcap/stallcap"), args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	return pclose(p);
}

TEST(no_module_hint_and_old_file_kept)
{
	char dir[] = "/tmp/stallcap-hints-XXXXXX", path[128], args[256], out[4096];
	struct dirent *de;
	int files = 0;
	DIR *d;
	FILE *f;

	if (!access("/dev/stallcap", F_OK))
		SKIP(return, "the module is loaded here");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stall.data", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("an older recording", f);
	fclose(f);
	snprintf(args, sizeof(args), "record -o %s -- true", path);
	EXPECT_NE(0, run(args, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "is the stallcap module loaded?")) TH_LOG("%s", out);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(out, sizeof(out), f));
	fclose(f);
	EXPECT_STREQ("an older recording", out);
	d = opendir(dir);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		files += de->d_name[0] != '.';
	closedir(d);
	EXPECT_EQ(1, files);	/* the old file put back: no stall.data.old */
	unlink(path);
	rmdir(dir);
	EXPECT_NE(0, run("stats", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "is the stallcap module loaded?"));
	/* the output is checked before the session is opened or CMD started */
	EXPECT_EQ(1 << 8, run("record -o /nonexistent/x.data -- true", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "cannot create"));
	EXPECT_EQ(NULL, strstr(out, "module loaded"));
	EXPECT_EQ(2 << 8, run("record --bogus -- true", out, sizeof(out)));
}

/*
 * A stall of @bin (a fixture: its four functions' addresses on its first
 * line), reported: `report` and its hints into @out.
 */
static int report_fixture(const char *bin, char *out, size_t len)
{
	char dir[] = "/tmp/stallcap-unnamed-XXXXXX", data[128], args[256];
	struct sc_proc *p = NULL;
	struct fixture fx;
	int ret;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(data, sizeof(data), "%s/stall.data", dir);
	ret = fixture_start(fixture_path(bin), &fx);
	if (ret)
		goto out;
	ret = procmaps_snapshot((__u32)fx.pid, NULL, &p);
	program_kill(fx.pid);
	if (!ret) {
		__u64 ips[4] = { fx.spin + 4, fx.level2 + 8, fx.level1 + 8, fx.main_ + 8 };

		ret = write_fp_stall(data, p, "fixture", ips, ARRAY_SIZE(ips));
	}
	sc_proc_free(p);
	if (!ret) {
		snprintf(args, sizeof(args), "report %s", data);
		ret = run(args, out, len);
	}
	unlink(data);
out:
	rmdir(dir);
	return ret;
}

/*
 * A program shipped without its symbol table (as a distribution ships it):
 * its frames have no name, and the report says where names would come from,
 * naming the file; not when the file has its symbols.
 */
TEST(unnamed_frames_name_their_file)
{
	char out[16384];

	ASSERT_EQ(0, report_fixture("fixture-stripped", out, sizeof(out)));
	EXPECT_EQ(NULL, strstr(out, "fixture_spin")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "hint: user frames in ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "/fixture-stripped have no name: the file carries no "
			       "symbol for them")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "-dbgsym"));

	ASSERT_EQ(0, report_fixture("fixture-fp", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "fixture_spin+0x4")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "have no name")) TH_LOG("%s", out);
}

#define KSCHED	0xffffffff81100000ULL
#define KYIELD	0xffffffff81200000ULL
#define KPOLL	0xffffffff81300000ULL

/*
 * Stall @id of tid @id: @n samples, the first @yielding of them inside
 * sched_yield() (kernel frames __schedule < __x64_sys_sched_yield), the
 * others in poll().
 */
static void yield_stall(struct sc_sink *sk, __u64 id, int n, int yielding)
{
	__u64 yield[2] = { KSCHED + 0x52a, KYIELD + 0xe }, poll[2] = { KSCHED + 0x52a, KPOLL + 0x2f1 };
	struct rec_spec sp = { .stall_id = id, .pid = 4242, .tid = (__u32)id, .comm = "1_scheduler",
			       .deadline_ns = NSEC_PER_SEC, .timeout_ns = NSEC_PER_MSEC, .nk = 2 };
	struct stallcap_stall_end e;
	struct stallcap_sample *s;
	int i;

	for (i = 0; i < n; i++) {
		sp.sample_index = (__u32)i;
		sp.capture_ns = NSEC_PER_SEC + (__u64)(i + 1) * NSEC_PER_MSEC;
		sp.kips = i < yielding ? yield : poll;
		s = make_sample(&sp);
		sk->record(sk, &s->hdr);
		free(s);
	}
	e = make_end(id, 4242, (__u32)id, NSEC_PER_SEC, 2 * NSEC_PER_SEC, (__u32)n);
	sk->record(sk, &e.hdr);
}

/*
 * A thread found in sched_yield() at every sample of its stall is busy
 * waiting: the report says so, counting only such stalls (not one that
 * yielded at some samples).
 */
TEST(busy_wait_in_sched_yield)
{
	static const struct ksym ks[] = {
		{ KSCHED, 0x1000, "__schedule", NULL },
		{ KYIELD, 0x100, "__x64_sys_sched_yield", NULL },
		{ KPOLL, 0x400, "do_sys_poll", NULL },
	};
	char dir[] = "/tmp/stallcap-yield-XXXXXX", data[128], args[256], out[16384];
	struct scfile *f;
	struct sc_sink *sk;
	unsigned int i;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(data, sizeof(data), "%s/stall.data", dir);
	f = scfile_create(data);
	ASSERT_NE(NULL, f);
	sk = scfile_sink(f);
	for (i = 0; i < ARRAY_SIZE(ks); i++)
		sk->ksym(sk, &ks[i]);
	yield_stall(sk, 1, 3, 3);	/* a busy wait */
	yield_stall(sk, 2, 3, 1);	/* yielded once, then waited in poll */
	yield_stall(sk, 3, 2, 0);
	yield_stall(sk, 4, 1, 1);	/* a busy wait */
	ASSERT_EQ(0, scfile_close(f));
	snprintf(args, sizeof(args), "report %s", data);
	EXPECT_EQ(0, run(args, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "__x64_sys_sched_yield+0xe")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "hint: 2 of 4 stalls found their thread in sched_yield() "
			       "at every sample: a busy wait")) TH_LOG("%s", out);
	/* every format counts them */
	snprintf(args, sizeof(args), "report -f folded %s", data);
	EXPECT_EQ(0, run(args, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "hint: 2 of 4 stalls")) TH_LOG("%s", out);
	/* and none is said where none yields throughout */
	snprintf(args, sizeof(args), "report --tid 2 %s", data);
	EXPECT_EQ(0, run(args, out, sizeof(out)));
	EXPECT_EQ(NULL, strstr(out, "sched_yield() at every sample")) TH_LOG("%s", out);
	unlink(data);
	rmdir(dir);
}

TEST(version)
{
	char out[256];

	ASSERT_EQ(0, run("--version", out, sizeof(out)));
	EXPECT_EQ(0, strncmp(out, "stallcap 0.", 11)) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
