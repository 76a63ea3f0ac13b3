// SPDX-License-Identifier: GPL-2.0
/*
 * The options of `stallcap record --deadline`: durations with units, pid
 * lists, and which combinations are accepted; JIT symbols from perf maps.
 */
#include "helpers.h"
#include "kselftest_harness.h"
#include "usyms.h"

TEST(durations)
{
	__u64 ns = 0;

	ASSERT_EQ(0, parse_duration("20ms", &ns));
	EXPECT_EQ(20000000ULL, ns);
	ASSERT_EQ(0, parse_duration("500us", &ns));
	EXPECT_EQ(500000ULL, ns);
	ASSERT_EQ(0, parse_duration("1.5s", &ns));
	EXPECT_EQ(1500000000ULL, ns);
	ASSERT_EQ(0, parse_duration("100ns", &ns));
	EXPECT_EQ(100ULL, ns);
	ASSERT_EQ(0, parse_duration("2", &ns));	/* seconds */
	EXPECT_EQ(2000000000ULL, ns);
	EXPECT_EQ(-EINVAL, parse_duration("20 ms", &ns));
	EXPECT_EQ(-EINVAL, parse_duration("20min", &ns));
	EXPECT_EQ(-EINVAL, parse_duration("ms", &ns));
	EXPECT_EQ(-EINVAL, parse_duration("-1ms", &ns));
	EXPECT_EQ(-EINVAL, parse_duration("2h", &ns));
	EXPECT_EQ(-EINVAL, parse_duration("3601s", &ns));
	/* a run's --duration may be longer than a deadline */
	ASSERT_EQ(0, parse_duration_max("7200", &ns, 86400e9));
	EXPECT_EQ(7200000000000ULL, ns);
	EXPECT_EQ(-EINVAL, parse_duration_max("86401", &ns, 86400e9));
}

TEST(a_run_of_two_hours)
{
	struct collect_opts o;

	collect_opts_init(&o);
	ASSERT_EQ(0, collect_parse_opt(&o, 'd', "7200"));
	EXPECT_EQ(7200, (long)o.duration);
	EXPECT_EQ(-EINVAL, collect_parse_opt(&o, 'd', "-1"));
}

TEST(pids)
{
	struct collect_opts o;

	collect_opts_init(&o);
	ASSERT_EQ(0, parse_pids(&o, "12,34"));
	ASSERT_EQ(0, parse_pids(&o, "56"));
	ASSERT_EQ(3, o.npids);
	EXPECT_EQ(12, o.pids[0]);
	EXPECT_EQ(34, o.pids[1]);
	EXPECT_EQ(56, o.pids[2]);
	EXPECT_EQ(-EINVAL, parse_pids(&o, "1,,2"));
	EXPECT_EQ(-EINVAL, parse_pids(&o, "x"));
	EXPECT_EQ(-EINVAL, parse_pids(&o, "0"));
	EXPECT_EQ(-EINVAL, parse_pids(&o, "-5"));
}

TEST(combinations)
{
	static char *cmd[] = { "redis-server", NULL };
	struct collect_opts o;

	collect_opts_init(&o);
	o.deadline_ns = 20000000;
	EXPECT_NE(0, collect_check(&o)) TH_LOG("--deadline needs -p or a command");
	o.cmd = cmd;
	EXPECT_EQ(0, collect_check(&o));
	o.npids = 1;
	o.pids[0] = 1;
	EXPECT_NE(0, collect_check(&o)) TH_LOG("-p and a command");
	o.cmd = NULL;
	EXPECT_EQ(0, collect_check(&o));
	o.global = true;
	EXPECT_NE(0, collect_check(&o)) TH_LOG("--deadline with --global");
	collect_opts_init(&o);
	o.npids = 1;
	EXPECT_NE(0, collect_check(&o)) TH_LOG("-p without --deadline");
	collect_opts_init(&o);
	o.cputime = true;
	o.cmd = cmd;
	EXPECT_NE(0, collect_check(&o)) TH_LOG("--cputime without --deadline");
	collect_opts_init(&o);
	o.deadline_ns = 20000000;
	o.cmd = cmd;
	o.children = true;
	EXPECT_NE(0, collect_check(&o)) TH_LOG("--children without -p");
	o.cmd = NULL;
	o.npids = 1;
	o.pids[0] = 1;
	EXPECT_EQ(0, collect_check(&o)) TH_LOG("--children with -p");
}

TEST(perf_map)
{
	char dir[] = "/tmp/stallcap-perfmap.XXXXXX", path[64];
	__u64 off = 0;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf-4242.map", dir);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("7f0000001000 80 LazyCompile:~busyLoop /srv/app.js:3:18\n"
	      "garbage line\n"
	      "7f0000000100 40 Builtin:ArgumentsAdaptorTrampoline\n"
	      "7f0000002000 0 empty\n", f);
	fclose(f);
	perfmap_set_dir(dir);
	EXPECT_STREQ("LazyCompile:~busyLoop /srv/app.js:3:18",
		     perfmap_lookup(4242, 0x7f0000001010, &off));
	EXPECT_EQ(0x10, off);
	EXPECT_STREQ("Builtin:ArgumentsAdaptorTrampoline",
		     perfmap_lookup(4242, 0x7f0000000100, &off));
	EXPECT_EQ(0, off);
	EXPECT_EQ(NULL, perfmap_lookup(4242, 0x7f0000001080, &off));
	EXPECT_EQ(NULL, perfmap_lookup(4242, 0x7f0000002000, &off));
	EXPECT_EQ(NULL, perfmap_lookup(4243, 0x7f0000001010, &off));
	perfmap_free_all();
	unlink(path);
	rmdir(dir);
}

/* JIT names as a report shows them: C++ ones demangled, '@' kept */
TEST(perf_map_names_shown)
{
	char dir[] = "/tmp/stallcap-perfmap.XXXXXX", path[64];
	struct sc_frame f = { .addr = 0x7f0000003008 };
	struct usyms *us = usyms_new(), *raw = usyms_new();
	FILE *fp;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf-4244.map", dir);
	fp = fopen(path, "w");
	ASSERT_NE(NULL, fp);
	fputs("7f0000003000 40 _ZN2js3jit7CompileEPv\n"
	      "7f0000004000 40 LazyCompile:~f /app/node_modules/@scope/x.js:1:1\n", fp);
	fclose(fp);
	perfmap_set_dir(dir);
	usyms_resolve(us, 4244, &f);
	EXPECT_STREQ("js::jit::Compile(void*)", f.sym);
	EXPECT_EQ(8, f.off);
	EXPECT_STREQ("[perf-map]", f.dso);
	usyms_set_demangle(raw, false);
	memset(&f, 0, sizeof(f));
	f.addr = 0x7f0000003008;
	usyms_resolve(raw, 4244, &f);
	EXPECT_STREQ("_ZN2js3jit7CompileEPv", f.sym);
	memset(&f, 0, sizeof(f));
	f.addr = 0x7f0000004000;
	usyms_resolve(us, 4244, &f);
	EXPECT_STREQ("LazyCompile:~f /app/node_modules/@scope/x.js:1:1", f.sym);
	usyms_free(us);
	usyms_free(raw);
	perfmap_free_all();
	unlink(path);
	rmdir(dir);
}

TEST_HARNESS_MAIN
