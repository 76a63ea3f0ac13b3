// SPDX-License-Identifier: GPL-2.0
/*
 * report --top, its histograms, --group-by, the filters on every mode and
 * the folded weights, on a small file written by the tool's own writer and
 * read back by the tool itself (its output compared exactly).
 *
 * Three stalls, kernel stacks only (symbols kA, kB, kC):
 *   1: alpha (pid 10, tid 11, tag 0x1), running: kA at +1 ms, kB at +2 ms,
 *      ended at +10 ms: kA weighs 1 ms, kB 1 + 8 ms; it lasted 10 ms
 *   2: alpha, running: kA at +1 ms, ended at +3 ms: kA 3 ms
 *   3: beta (pid 20, tid 21, tag 0x2), sleeping: kC at +1 ms, ended at +50 ms
 * 100 s apart in wall-clock time from 2023-11-14T22:13:20Z.
 */
#include <sys/syscall.h>

#include "helpers.h"
#include "record_file.h"
#include "kselftest_harness.h"

#define RT0	1700000000000000000ULL	/* 2023-11-14T22:13:20Z */
#define KA	0xffffffff81001000ULL
#define KB	0xffffffff81002000ULL
#define KC	0xffffffff81003000ULL

struct smp_def {
	__u32 pid, tid;
	const char *comm;
	__u64 tag, stall_id, ip, at_ms;
	__u8 state;
};

static void put_sample(struct sc_sink *sk, const struct smp_def *d, __u64 base)
{
	__u64 ip = d->ip + 0x10;
	struct rec_spec sp = { .stall_id = d->stall_id, .pid = d->pid, .tid = d->tid,
			       .comm = d->comm, .deadline_ns = base,
			       .capture_ns = base + d->at_ms * NSEC_PER_MSEC,
			       .timeout_ns = NSEC_PER_MSEC, .state = d->state,
			       .kips = &ip, .nk = 1 };
	struct stallcap_sample *s;

	sp.realtime_ns = RT0 + (base - NSEC_PER_SEC) + d->at_ms * NSEC_PER_MSEC;
	s = make_sample(&sp);
	s->user_tag = d->tag;
	sk->record(sk, &s->hdr);
	free(s);
}

static int write_file(const char *path)
{
	static const struct { const char *name; __u64 addr; } syms[] = {
		{ "kA", KA }, { "kB", KB }, { "kC", KC },
	};
	struct scfile *f = scfile_create(path);
	struct stallcap_stall_end e;
	struct sc_sink *sk;
	__u64 b1 = NSEC_PER_SEC, b2 = b1 + 100 * NSEC_PER_SEC, b3 = b2 + 100 * NSEC_PER_SEC;
	size_t i;

	if (!f)
		return -1;
	sk = scfile_sink(f);
	for (i = 0; i < ARRAY_SIZE(syms); i++) {
		struct ksym k = { .addr = syms[i].addr, .size = 0x100, .name = syms[i].name };

		sk->ksym(sk, &k);
	}
	put_sample(sk, &(struct smp_def){ 10, 11, "alpha", 1, 1, KA, 1, 0 }, b1);
	put_sample(sk, &(struct smp_def){ 10, 11, "alpha", 1, 1, KB, 2, 0 }, b1);
	e = make_end(1, 10, 11, b1, b1 + 10 * NSEC_PER_MSEC, 2);
	sk->record(sk, &e.hdr);
	put_sample(sk, &(struct smp_def){ 10, 11, "alpha", 1, 2, KA, 1, 0 }, b2);
	e = make_end(2, 10, 11, b2, b2 + 3 * NSEC_PER_MSEC, 1);
	sk->record(sk, &e.hdr);
	put_sample(sk, &(struct smp_def){ 20, 21, "beta", 2, 1, KC, 1,
					  STALLCAP_STATE_SLEEPING }, b3);
	e = make_end(1, 20, 21, b3, b3 + 50 * NSEC_PER_MSEC, 1);
	sk->record(sk, &e.hdr);
	return scfile_close(f);
}

FIXTURE(rep)
{
	char path[64];
	char out[8192];
};

FIXTURE_SETUP(rep)
{
	snprintf(self->path, sizeof(self->path), "/tmp/stallcap-report-test.%d", getpid());
	ASSERT_EQ(0, write_file(self->path));
}

FIXTURE_TEARDOWN(rep)
{
	if (!getenv("KEEP"))
		unlink(self->path);
}

/* run `stallcap report FILE ARGS` (a shell word list); its stdout, exit status */
static int report(struct _test_data_rep *self, const char *args)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "TZ=UTC %s report %s %s", fixture_path("../stallcap/stallcap"),
		 self->path, args);
	return command_output(cmd, self->out, sizeof(self->out));
}

TEST_F(rep, top_ranks_stacks_by_stalled_time)
{
	ASSERT_EQ(0, report(self, "--top"));
	EXPECT_STREQ(
"3 stalls, 63.000 ms stalled; by user and kernel stack, 3 groups, ranked by stalled time\n"
"#1 50.000 ms (79.4%)  1 stall  p50 50.000 ms  p99 50.000 ms  max 50.000 ms\n"
"    1 thread: 21  1 tag: 0x2\n"
"    kC_[k]\n"
"#2 9.000 ms (14.3%)  1 stall  p50 10.000 ms  p99 10.000 ms  max 10.000 ms\n"
"    1 thread: 11  1 tag: 0x1\n"
"    kB_[k]\n"
"#3 4.000 ms (6.3%)  2 stalls  p50 3.000 ms  p99 10.000 ms  max 10.000 ms\n"
"    1 thread: 11  1 tag: 0x1\n"
"    kA_[k]\n"
"\n"
"stall durations\n"
"process 20 (beta): 1 stall, 50.000 ms\n"
"    32-64ms:1\n"
"process 10 (alpha): 2 stalls, 13.000 ms\n"
"    2-4ms:1 8-16ms:1\n"
"thread 21 (beta): 1 stall, 50.000 ms\n"
"    32-64ms:1\n"
"thread 11 (alpha): 2 stalls, 13.000 ms\n"
"    2-4ms:1 8-16ms:1\n"
"tag 0x2: 1 stall, 50.000 ms\n"
"    32-64ms:1\n"
"tag 0x1: 2 stalls, 13.000 ms\n"
"    2-4ms:1 8-16ms:1\n", self->out);
}

TEST_F(rep, top_n_and_group_by_state)
{
	static const char want[] =
"3 stalls, 63.000 ms stalled; by thread state, 2 groups, ranked by stalled time\n"
"#1 50.000 ms (79.4%)  1 stall  p50 50.000 ms  p99 50.000 ms  max 50.000 ms\n"
"    1 thread: 21  1 tag: 0x2\n"
"    sleeping\n"
"(1 more)\n\n";

	ASSERT_EQ(0, report(self, "--top=1 --group-by state"));
	EXPECT_EQ(0, strncmp(self->out, want, strlen(want))) TH_LOG("%s", self->out);
	ASSERT_EQ(0, report(self, "--top --group-by kernel"));
	EXPECT_NE(NULL, strstr(self->out, "by kernel stack, 3 groups"));
	EXPECT_NE(0, report(self, "--top --group-by nonsense"));
}

/*
 * --group-by verdict: the kind of why-it-stalled verdict (why.c), from the
 * samples' why-sections, else their state: two stalls on CPU (a TIMES
 * section) in one group, whatever their amounts, then the file's own
 */
TEST_F(rep, top_group_by_verdict)
{
	static const char want[] =
"3 stalls, 63.000 ms stalled; by verdict, 2 groups, ranked by stalled time\n"
"#1 50.000 ms (79.4%)  1 stall  p50 50.000 ms  p99 50.000 ms  max 50.000 ms\n"
"    1 thread: 21  1 tag: 0x2\n"
"    sleeping\n"
"#2 13.000 ms (20.6%)  2 stalls  p50 3.000 ms  p99 10.000 ms  max 10.000 ms\n"
"    1 thread: 11  1 tag: 0x1\n"
"    running\n";
	static const char want_times[] =
"2 stalls, 6.000 ms stalled; by verdict, 1 group, ranked by stalled time\n"
"#1 6.000 ms (100.0%)  2 stalls  p50 2.000 ms  p99 4.000 ms  max 4.000 ms\n"
"    1 thread: 31  1 tag: 0\n"
"    on CPU\n\n";
	__u64 ip = KA + 0x10, base = NSEC_PER_SEC, id;
	struct stallcap_stall_end e;
	struct stallcap_sample *smp;
	struct scfile *f;
	struct sc_sink *sk;

	ASSERT_EQ(0, report(self, "--top --group-by verdict"));
	EXPECT_EQ(0, strncmp(self->out, want, strlen(want))) TH_LOG("%s", self->out);

	f = scfile_create(self->path);
	ASSERT_NE(NULL, f);
	sk = scfile_sink(f);
	for (id = 1; id <= 2; id++, base += NSEC_PER_SEC) {
		struct rec_spec sp = { .stall_id = id, .pid = 30, .tid = 31, .comm = "gamma",
				       .deadline_ns = base, .capture_ns = base + id * NSEC_PER_MSEC,
				       .timeout_ns = NSEC_PER_MSEC, .kips = &ip, .nk = 1,
				       .times = true };

		smp = make_sample(&sp);
		sk->record(sk, &smp->hdr);
		free(smp);
		e = make_end(id, 30, 31, base, base + 2 * id * NSEC_PER_MSEC, 1);
		sk->record(sk, &e.hdr);
	}
	ASSERT_EQ(0, scfile_close(f));
	ASSERT_EQ(0, report(self, "--top --group-by verdict"));
	EXPECT_EQ(0, strncmp(self->out, want_times, strlen(want_times))) TH_LOG("%s", self->out);
}

/* each filter alone, then together; --top's first line counts what passed */
TEST_F(rep, filters)
{
	static const struct { const char *args, *first; } cases[] = {
		{ "--top -p 10", "2 stalls, 13.000 ms" },
		{ "--top -t 21", "1 stall, 50.000 ms" },
		{ "--top --comm alpha", "2 stalls, 13.000 ms" },
		{ "--top --tag 2", "1 stall, 50.000 ms" },
		{ "--top --tag 0x1", "2 stalls, 13.000 ms" },
		{ "--top --min-duration 5ms", "2 stalls, 60.000 ms" },
		{ "--top --min-duration 10000us", "2 stalls, 60.000 ms" },
		{ "--top --state blocked", "1 stall, 50.000 ms" },
		{ "--top --state running,runnable", "2 stalls, 13.000 ms" },
		{ "--top -u --since 2023-11-14T22:14:00 --until 2023-11-14T22:16:00",
		  "1 stall, 3.000 ms" },
		{ "--top -u --since 2023-11-14T22:15:00.5", NULL },
		{ "--top --since -1h", "0 stalls, 0.000 ms" },
		{ "--top -p 10 --min-duration 5ms --state running", "1 stall, 10.000 ms" },
		{ "--top --state idle", NULL },
		{ "--top --min-duration 5parsecs", NULL },
	};
	size_t i;
	int st;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		st = report(self, cases[i].args);
		if (!cases[i].first) {
			EXPECT_NE(0, st) TH_LOG("%s: accepted", cases[i].args);
			continue;
		}
		EXPECT_EQ(0, st);
		EXPECT_EQ(0, strncmp(self->out, cases[i].first, strlen(cases[i].first)))
			TH_LOG("%s: %.80s", cases[i].args, self->out);
	}
}

/* the filters apply to the stall blocks, JSON and folded output too */
TEST_F(rep, filters_on_every_mode)
{
	ASSERT_EQ(0, report(self, "-p 20"));
	EXPECT_NE(NULL, strstr(self->out, "1 of 3 stalls, 4 samples\n")) TH_LOG("%s", self->out);
	EXPECT_EQ(NULL, strstr(self->out, "alpha"));
	ASSERT_EQ(0, report(self, "-f json --comm beta"));
	EXPECT_NE(NULL, strstr(self->out, "\"comm\":\"beta\""));
	EXPECT_EQ(NULL, strstr(self->out, "alpha"));
	ASSERT_EQ(0, report(self, "-f folded -t 11"));
	/* weighted by stalled time in µs, kernel frames _[k] */
	EXPECT_STREQ("alpha;kA_[k] 4000\nalpha;kB_[k] 9000\n", self->out);
	ASSERT_EQ(0, report(self, "-f folded"));
	EXPECT_STREQ("alpha;kA_[k] 4000\nalpha;kB_[k] 9000\nbeta;kC_[k] 50000\n", self->out);
}

/* stats --prometheus -i FILE, read back by the Prometheus client's parser */
TEST_F(rep, prometheus_parsed_by_the_client)
{
	char cmd[12288], tool[4096];
	size_t n;
	FILE *p;
	int st;

	snprintf(tool, sizeof(tool), "%s", fixture_path("../stallcap/stallcap"));
	snprintf(cmd, sizeof(cmd), "%s stats --prometheus -i %s | /usr/bin/python3 %s",
		 tool, self->path, fixture_path("prom_parse.py"));
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	n = fread(self->out, 1, sizeof(self->out) - 1, p);
	self->out[n] = 0;
	st = pclose(p);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		SKIP(return, "python3-prometheus-client not installed (scripts/deps.sh)");
	ASSERT_EQ(0, st);
	EXPECT_NE(NULL, strstr(self->out,
		"counter stallcap_process_stalls_total comm=alpha,pid=10 2\n"
		"counter stallcap_process_stalls_total comm=beta,pid=20 1\n")) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out,
		"histogram stallcap_process_stall_duration_seconds_bucket comm=alpha,le=0.002,pid=10 0\n"
		"histogram stallcap_process_stall_duration_seconds_bucket comm=alpha,le=0.005,pid=10 1\n"
		"histogram stallcap_process_stall_duration_seconds_bucket comm=alpha,le=0.01,pid=10 2\n"));
	EXPECT_NE(NULL, strstr(self->out,
		"histogram stallcap_process_stall_duration_seconds_count comm=beta,pid=20 1\n"));
	EXPECT_NE(NULL, strstr(self->out,
		"histogram stallcap_process_stall_duration_seconds_sum comm=alpha,pid=10 0.013\n"));
	EXPECT_NE(NULL, strstr(self->out,
		"histogram stallcap_process_stall_duration_seconds_bucket comm=beta,le=+Inf,pid=20 1\n"));
	EXPECT_NE(NULL, strstr(self->out, "counter stallcap_file_records_lost_total  0\n"));
}

/*
 * A thread name the kernel cut inside a character (15 bytes: "w", seven
 * "é", the first byte of an eighth): its label is valid UTF-8, the cut
 * byte U+FFFD (Prometheus refuses a whole exposition for one bad byte).
 */
TEST_F(rep, prometheus_label_of_a_name_cut_inside_a_character)
{
	static const char comm[] = "w\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3";
	struct scfile *f = scfile_create(self->path);
	struct stallcap_stall_end e;
	char cmd[8192];

	ASSERT_NE(NULL, f);
	put_sample(scfile_sink(f), &(struct smp_def){ 30, 31, comm, 3, 1, KA, 1, 0 },
		   NSEC_PER_SEC);
	e = make_end(1, 30, 31, NSEC_PER_SEC, NSEC_PER_SEC + 5 * NSEC_PER_MSEC, 1);
	scfile_sink(f)->record(scfile_sink(f), &e.hdr);
	ASSERT_EQ(0, scfile_close(f));
	snprintf(cmd, sizeof(cmd), "%s stats --prometheus -i %s",
		 fixture_path("../stallcap/stallcap"), self->path);
	ASSERT_EQ(0, command_output(cmd, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "stallcap_process_stalls_total{pid=\"30\",comm=\"w"
			       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			       "\xef\xbf\xbd\"} 1\n")) TH_LOG("%s", self->out);
}

/* -f pprof: gzip + profile.proto, decoded by protoc (protobuf-compiler) */
/* `report PATH -f pprof ARGS`, decoded by protoc into @out (text format) */
static int pprof_decode_file(const char *path, const char *args, char *out, size_t size)
{
	char cmd[32768], tool[4096], proto[4096];
	size_t n;
	FILE *p;

	snprintf(tool, sizeof(tool), "%s", fixture_path("../stallcap/stallcap"));
	snprintf(proto, sizeof(proto), "%s", fixture_path("../stallcap/proto"));
	snprintf(cmd, sizeof(cmd), "%s report %s -f pprof %s -o %s.pb.gz && "
		 "gzip -dc %s.pb.gz | protoc --decode perftools.profiles.Profile -I%s "
		 "%s/profile.proto; st=$?; rm -f %s.pb.gz; exit $st", tool, path, args,
		 path, path, proto, proto, path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, size - 1, p);
	out[n] = 0;
	return pclose(p);
}

static int pprof_decode(struct _test_data_rep *self, const char *args)
{
	return pprof_decode_file(self->path, args, self->out, sizeof(self->out));
}

/* the index of "@s" in a decoded profile's string table, or -1 */
static int pprof_string(const char *out, const char *s)
{
	const char *p = out;
	char want[256];
	int i = 0;

	snprintf(want, sizeof(want), "string_table: \"%s\"\n", s);
	while ((p = strstr(p, "string_table: "))) {
		if (!strncmp(p, want, strlen(want)))
			return i;
		i++;
		p++;
	}
	return -1;
}

TEST_F(rep, pprof_decoded_by_protoc)
{
	static const char *const strs[] = {
		"\"stalled\"", "\"nanoseconds\"", "\"kA\"", "\"kB\"", "\"kC\"",
		"\"alpha\"", "\"beta\"", "\"running\"", "\"sleeping\"", "\"pid\"",
		"\"tid\"", "\"tag\"", "\"comm\"", "\"state\"",
	};
	size_t i;

	if (system("command -v protoc >/dev/null"))
		SKIP(return, "protoc not installed (scripts/deps.sh)");
	ASSERT_EQ(0, pprof_decode(self, ""));
	/* the weights of the folded output, in ns: kC 50 ms, kB 9 ms, kA 1 + 3 ms */
	EXPECT_NE(NULL, strstr(self->out, "value: 50000000\n"));
	EXPECT_NE(NULL, strstr(self->out, "value: 9000000\n"));
	EXPECT_NE(NULL, strstr(self->out, "value: 4000000\n")) TH_LOG("%s", self->out);
	for (i = 0; i < ARRAY_SIZE(strs); i++)
		EXPECT_NE(NULL, strstr(self->out, strs[i])) TH_LOG("string %zu missing", i);
	/* the filters apply: only beta's stall */
	ASSERT_EQ(0, pprof_decode(self, "-t 21"));
	EXPECT_NE(NULL, strstr(self->out, "value: 50000000\n"));
	EXPECT_EQ(NULL, strstr(self->out, "value: 9000000\n"));
	EXPECT_EQ(NULL, strstr(self->out, "\"alpha\""));
}

/* -f html, read by Python's HTML parser: the flame graph and timeline are there */
TEST_F(rep, html_flame_graph_and_timeline)
{
	char cmd[12288], tool[4096];
	size_t n;
	FILE *p;

	snprintf(tool, sizeof(tool), "%s", fixture_path("../stallcap/stallcap"));
	snprintf(cmd, sizeof(cmd), "%s report %s -f html | /usr/bin/python3 %s", tool,
		 self->path, fixture_path("html_check.py"));
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	n = fread(self->out, 1, sizeof(self->out) - 1, p);
	self->out[n] = 0;
	ASSERT_EQ(0, pclose(p));
	/* widths: 1200 px for the 63 ms; kC 50 ms, kB 9 ms, kA 4 ms */
	EXPECT_STREQ("svg flamegraph\n"
		     "frame all (63.000 ms, 100.00%) 1200.00\n"
		     "frame beta (50.000 ms, 79.37%) 952.38\n"
		     "frame kC_[k] (50.000 ms, 79.37%) 952.38\n"
		     "frame alpha (13.000 ms, 20.63%) 247.62\n"
		     "frame kB_[k] (9.000 ms, 14.29%) 171.43\n"
		     "frame kA_[k] (4.000 ms, 6.35%) 76.19\n"
		     "svg timeline\n"
		     "stall tid 11: 10.000 ms at +0.000 s\n"
		     "stall tid 11: 3.000 ms at +100.000 s\n"
		     "stall tid 21: 50.000 ms at +200.000 s\n", self->out);
}

/*
 * A kernel stack through an interrupt: the frame under the entry
 * (asm_sysvec_*) is the instruction the interrupt found, here a retpoline
 * thunk's first, named exactly; looked up one byte back, as a return
 * address, it was named after the code before it (7.3: a softirq over
 * __x86_indirect_thunk_rax+0x0 named __softirqentry_text_end+0x10).  The
 * frames above it are return addresses again.
 */
TEST(interrupted_frame_named_exactly)
{
	static const struct { const char *name; __u64 addr, size; } syms[] = {
		{ "spin_tasklet_fn", 0xffffffff81001000, 0x100 },
		{ "asm_sysvec_apic_timer_interrupt", 0xffffffff81002000, 0x20 },
		{ "before_the_thunk", 0xffffffff81002f00, 0x100 },
		{ "__x86_indirect_thunk_rax", 0xffffffff81003000, 0x20 },
		{ "thunk_caller", 0xffffffff81004000, 0x100 },
		/* a caller whose call is its last instruction */
		{ "noreturn_caller", 0xffffffff81005000, 0x10 },
		{ "after_it", 0xffffffff81005010, 0x10 },
	};
	__u64 kips[] = { 0xffffffff81001010, 0xffffffff8100201a, 0xffffffff81003000,
			 0xffffffff81004025, 0xffffffff81005010 };
	struct rec_spec sp = { .stall_id = 1, .pid = 10, .tid = 10, .comm = "broker",
			       .deadline_ns = NSEC_PER_SEC,
			       .capture_ns = NSEC_PER_SEC + NSEC_PER_MSEC,
			       .timeout_ns = NSEC_PER_MSEC, .kips = kips, .nk = 5 };
	char path[64], cmd[8192], out[8192];
	struct stallcap_stall_end e;
	struct stallcap_sample *smp;
	struct scfile *f;
	struct sc_sink *sk;
	size_t i;

	snprintf(path, sizeof(path), "/tmp/stallcap-report-irq.%d", getpid());
	f = scfile_create(path);
	ASSERT_NE(NULL, f);
	sk = scfile_sink(f);
	for (i = 0; i < ARRAY_SIZE(syms); i++) {
		struct ksym k = { .addr = syms[i].addr, .size = (__u32)syms[i].size,
				  .name = syms[i].name };

		sk->ksym(sk, &k);
	}
	smp = make_sample(&sp);
	sk->record(sk, &smp->hdr);
	free(smp);
	e = make_end(1, 10, 10, NSEC_PER_SEC, NSEC_PER_SEC + 2 * NSEC_PER_MSEC, 1);
	sk->record(sk, &e.hdr);
	ASSERT_EQ(0, scfile_close(f));
	snprintf(cmd, sizeof(cmd), "%s report %s -f folded", fixture_path("../stallcap/stallcap"),
		 path);
	ASSERT_EQ(0, command_output(cmd, out, sizeof(out)));
	EXPECT_STREQ("broker;noreturn_caller_[k];thunk_caller_[k];__x86_indirect_thunk_rax_[k];"
		     "asm_sysvec_apic_timer_interrupt_[k];spin_tasklet_fn_[k] 2000\n", out);
	if (!getenv("KEEP"))
		unlink(path);
}

/* schedule() of the running kernel, 0x10 into it; 0 when unreadable */
static __u64 running_kernel_schedule(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long addr;
	char line[512], type, sym[256];
	__u64 found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 &&
		    (type == 'T' || type == 't') && !strcmp(sym, "schedule"))
			found = addr ? addr + 0x10 : 0;
	if (f)
		fclose(f);
	return found;
}

/* a file of one sample at kernel address @ip, from boot @boot (NULL: unsaid) */
static int write_kernel_sample_file(const char *path, __u64 ip, const char *boot)
{
	struct rec_spec sp = { .stall_id = 1, .pid = 10, .tid = 10, .comm = "loop",
			       .deadline_ns = NSEC_PER_SEC,
			       .capture_ns = NSEC_PER_SEC + NSEC_PER_MSEC,
			       .timeout_ns = NSEC_PER_MSEC, .kips = &ip, .nk = 1 };
	struct sc_host_info hi = { .release = "6.1.0-test", .host_flags = SCF_HOST_KNOWN };
	struct scfile *f = scfile_create(path);
	struct stallcap_stall_end e;
	struct stallcap_sample *smp;
	struct sc_sink *sk;

	if (!f)
		return -1;
	sk = scfile_sink(f);
	if (boot) {
		snprintf(hi.boot_id, sizeof(hi.boot_id), "%s", boot);
		sk->info(sk, &hi);
	}
	smp = make_sample(&sp);
	sk->record(sk, &smp->hdr);
	free(smp);
	e = make_end(1, 10, 10, NSEC_PER_SEC, NSEC_PER_SEC + 2 * NSEC_PER_MSEC, 1);
	sk->record(sk, &e.hdr);
	return scfile_close(f);
}

/*
 * A kernel frame that the file's own symbols do not name (a module loaded
 * after the recorder read them) is named from the running kernel's only
 * when the file says it was recorded in this boot: never for a file from
 * another boot or machine, nor one that does not say (before, the running
 * kernel's symbols named it as the file was read, and a fuzzed file made
 * each report load them: a fuzz target's timeout, CI123).
 */
TEST(kernel_frames_named_from_the_running_kernel_only_for_its_boot)
{
	char path[64], cmd[8192], out[8192], boot[64] = "";
	const char *boots[] = { "another-boot", NULL, boot }, *name = ";schedule_[k]";
	FILE *bf = fopen("/proc/sys/kernel/random/boot_id", "r");
	__u64 ip = running_kernel_schedule();

	if (!ip)
		SKIP(return, "no kernel address in /proc/kallsyms (not root?)");
	ASSERT_NE(NULL, bf);
	ASSERT_NE(NULL, fgets(boot, sizeof(boot), bf));
	fclose(bf);
	boot[strcspn(boot, "\n")] = 0;
	snprintf(path, sizeof(path), "/tmp/stallcap-report-boot.%d", getpid());
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, write_kernel_sample_file(path, ip, boots[i]));
		snprintf(cmd, sizeof(cmd), "%s report %s -f folded",
			 fixture_path("../stallcap/stallcap"), path);
		ASSERT_EQ(0, command_output(cmd, out, sizeof(out)));
		if (i < 2) {
			EXPECT_EQ(NULL, strstr(out, name))
				TH_LOG("%s: named %s: %s", boots[i] ? boots[i] : "no boot said",
				       name, out);
		} else {
			EXPECT_NE(NULL, strstr(out, name))
				TH_LOG("this boot's file: %s not named: %s", name, out);
		}
	}
	if (!getenv("KEEP"))
		unlink(path);
}

/*
 * A sample inside a system call names it, and for a call on a descriptor
 * what `record` found it open on (an SCF_FDNAME chunk before the record),
 * in text and JSON; a chunk for another sample names nothing; a call
 * without a descriptor, or one the kernel headers do not know, is named
 * by its number.
 */
TEST(syscall_and_its_file_named)
{
	struct stallcap_sec_syscall rd = { .nr = SYS_read, .args = { 5, 0x7ffc1000, 4096 } };
	struct stallcap_sec_syscall fx = { .nr = SYS_futex, .args = { 0x601040, 0x80, 2 } };
	struct stallcap_sec_syscall unk = { .nr = 4000 };
	struct stallcap_sec_syscall wr = { .nr = SYS_write, .args = { 9 } };
	struct stallcap_sec_syscall fs = { .nr = SYS_fsync, .args = { 7 } };
	const struct stallcap_sec_syscall *calls[] = { &rd, &fx, &unk, &wr, &fs };
	__u64 kip = 0xffffffff81001010;
	char path[64], cmd[8192], out[16384];
	struct stallcap_stall_end e;
	struct scfile *f;
	struct sc_sink *sk;
	unsigned int i;

	snprintf(path, sizeof(path), "/tmp/stallcap-report-sys.%d", getpid());
	f = scfile_create(path);
	ASSERT_NE(NULL, f);
	sk = scfile_sink(f);
	for (i = 0; i < ARRAY_SIZE(calls); i++) {
		struct rec_spec sp = { .stall_id = 1, .pid = 10, .tid = 10, .comm = "broker",
				       .deadline_ns = NSEC_PER_SEC, .sample_index = i,
				       .capture_ns = NSEC_PER_SEC + (i + 1) * NSEC_PER_MSEC,
				       .timeout_ns = NSEC_PER_MSEC, .kips = &kip, .nk = 1,
				       .regs = &(struct stallcap_regs_x86_64){ .ip = 0x401000 },
				       .state = STALLCAP_STATE_SLEEPING, .sys = calls[i] };
		struct sc_fdname fn = { .pid = 10, .tid = 10, .stall_id = 1, .sample_index = i,
					.fd = (int)calls[i]->args[0], .name = "pipe:[4242]" };
		struct stallcap_sample *smp = make_sample(&sp);

		if (i == 0)
			ASSERT_EQ(0, sk->fdname(sk, &fn));
		if (i == 3) {	/* named for sample 7: not this one */
			fn.sample_index = 7;
			fn.name = "/var/lib/wrong";
			ASSERT_EQ(0, sk->fdname(sk, &fn));
		}
		if (i == 4) {	/* a hostile path: a line break, an escape */
			fn.name = "/tmp/a\nstall 9 of tid 1\x1b[2J";
			ASSERT_EQ(0, sk->fdname(sk, &fn));
		}
		sk->record(sk, &smp->hdr);
		free(smp);
	}
	e = make_end(1, 10, 10, NSEC_PER_SEC, NSEC_PER_SEC + 9 * NSEC_PER_MSEC, 5);
	sk->record(sk, &e.hdr);
	ASSERT_EQ(0, scfile_close(f));

	snprintf(cmd, sizeof(cmd), "%s report %s", fixture_path("../stallcap/stallcap"), path);
	ASSERT_EQ(0, command_output(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "    in system call: read, fd 5 (pipe:[4242])\n"));
	EXPECT_NE(NULL, strstr(out, "    in system call: futex\n"));
	EXPECT_NE(NULL, strstr(out, "    in system call: syscall 4000\n"));
	EXPECT_NE(NULL, strstr(out, "    in system call: write, fd 9\n"));
	EXPECT_EQ(NULL, strstr(out, "wrong"));
	EXPECT_NE(NULL, strstr(out, "    in system call: fsync, fd 7 "
				    "(/tmp/a\\x0astall 9 of tid 1\\x1b[2J)\n")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strchr(out, 0x1b));

	snprintf(cmd, sizeof(cmd), "%s report %s -f json", fixture_path("../stallcap/stallcap"),
		 path);
	ASSERT_EQ(0, command_output(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"syscall\":{\"nr\":0,\"name\":\"read\",\"args\":"
				    "[\"0x5\",\"0x7ffc1000\",\"0x1000\",\"0x0\",\"0x0\",\"0x0\"],"
				    "\"fd\":5,\"file\":\"pipe:[4242]\"}"));
	EXPECT_NE(NULL, strstr(out, "\"syscall\":{\"nr\":4000,\"name\":null,"));
	EXPECT_NE(NULL, strstr(out, "\"fd\":9,\"file\":null}"));

	/* --top by system call: fsync holds the stall from its sample to the end */
	snprintf(cmd, sizeof(cmd), "%s report %s --top --group-by syscall",
		 fixture_path("../stallcap/stallcap"), path);
	ASSERT_EQ(0, command_output(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "1 stall, 9.000 ms stalled; by system call, 5 groups, "
				    "ranked by stalled time\n#1 5.000 ms (55.6%)  1 stall  p50 "
				    "9.000 ms  p99 9.000 ms  max 9.000 ms\n    1 thread: 10  1 tag: "
				    "0\n    fsync\n#2 1.000 ms")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\n    write\n"));
	EXPECT_NE(NULL, strstr(out, "\n    futex\n"));
	EXPECT_NE(NULL, strstr(out, "\n    read\n"));
	EXPECT_NE(NULL, strstr(out, "\n    syscall 4000\n"));

	/* pprof: a "syscall" label on the samples inside one */
	if (!system("command -v protoc >/dev/null")) {
		char want[128];
		int key, val;

		ASSERT_EQ(0, pprof_decode_file(path, "", out, sizeof(out)));
		key = pprof_string(out, "syscall");
		val = pprof_string(out, "futex");
		ASSERT_LE(0, key);
		ASSERT_LE(0, val);
		snprintf(want, sizeof(want), "  label {\n    key: %d\n    str: %d\n  }\n", key,
			 val);
		EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
		EXPECT_LE(0, pprof_string(out, "read"));
		EXPECT_LE(0, pprof_string(out, "syscall 4000"));
	}
	if (!getenv("KEEP"))
		unlink(path);
}

TEST_HARNESS_MAIN
