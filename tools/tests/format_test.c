// SPDX-License-Identifier: GPL-2.0
/*
 * Output formats on one stall of two samples: kernel frames from a symbol
 * table, user frames from a real fixture's snapshot.  Text is checked line
 * by line, every JSON line is parsed, the folded line is checked whole.
 */
#include "helpers.h"
#include "json_check.h"
#include "kselftest_harness.h"
#include "output.h"
#include "usyms.h"

/* ---- the stall ---- */

#define D	1000000000ULL		/* the deadline, CLOCK_MONOTONIC */
/* CLOCK_REALTIME of D: 2025-11-22T16:55:47.123456Z */
#define RT_D	(1763830547ULL * NSEC_PER_SEC + 123456000ULL)
#define KSYS	0xffffffff81a00000ULL
#define KPOLL	0xffffffff81300000ULL

FIXTURE(fmt)
{
	struct fixture fx;
	struct stalls st;
	struct resolver r;
	struct sc_rstall rs;
	char *out;
	size_t len;
	FILE *m;
};

FIXTURE_SETUP(fmt)
{
	struct sc_proc *p;
	__u64 kips[2] = { KPOLL + 0x2f1, KSYS + 0x6f };
	__u64 uips[4];
	static const struct stallcap_regs_x86_64 regs = { .ip = 0x401000, .sp = 0x7ffc0000 };
	struct rec_spec sp = {
		.stall_id = 7, .pid = 1230, .tid = 1234, .cpu = 1, .comm = "reactor-0",
		.timeout_ns = 25 * NSEC_PER_MSEC, .deadline_ns = D,
		.capture_ns = D + 100000, .realtime_ns = RT_D + 100000,
		.kips = kips, .nk = 2, .uips = uips, .nu = 4, .regs = &regs,
		.flags = STALLCAP_SAMPLE_MEMSTALL,	/* a note of the sample line */
	};
	struct stallcap_stall_end e = make_end(7, 1230, 1234, D, D + 31200000, 2);
	struct stallcap_sample *s;

	ASSERT_EQ(0, fixture_start(fixture_path("fixture-fp"), &self->fx));
	ASSERT_EQ(0, procmaps_snapshot((__u32)self->fx.pid, NULL, &p));
	fixture_kill(&self->fx);
	p->pid = 1230;
	uips[0] = self->fx.spin + 4;
	uips[1] = self->fx.level2 + 0x10;
	uips[2] = self->fx.level1 + 0x10;
	uips[3] = self->fx.main_ + 0x10;

	self->r.ks = ksyms_new();
	self->r.us = usyms_new();
	ASSERT_EQ(0, ksyms_add(self->r.ks, KSYS, 0x100, "entry_SYSCALL_64", NULL));
	ASSERT_EQ(0, ksyms_add(self->r.ks, KPOLL, 0x400, "do_sys_poll", NULL));
	ASSERT_EQ(0, usyms_add_proc(self->r.us, p));
	sc_proc_free(p);

	stalls_init(&self->st);
	s = make_sample(&sp);
	stalls_add(&self->st, &s->hdr);
	free(s);
	sp.sample_index = 1;
	sp.flags = 0;
	sp.capture_ns = D + 25 * NSEC_PER_MSEC;
	sp.realtime_ns = RT_D + 25 * NSEC_PER_MSEC;
	s = make_sample(&sp);
	stalls_add(&self->st, &s->hdr);
	free(s);
	stalls_add(&self->st, &e.hdr);
	ASSERT_EQ(1, self->st.nr);
	ASSERT_EQ(0, resolve_stall(&self->r, self->st.head, &self->rs));
	self->m = open_memstream(&self->out, &self->len);
	sc_time_utc = true;
}

FIXTURE_TEARDOWN(fmt)
{
	fixture_kill(&self->fx);
	resolve_stall_free(&self->rs);
	stalls_free(&self->st);
	ksyms_free(self->r.ks);
	usyms_free(self->r.us);
	if (self->m)
		fclose(self->m);
	free(self->out);
}

TEST_F(fmt, text)
{
	fmt_text_stall(self->m, &self->rs);
	fflush(self->m);
	EXPECT_EQ(0, strncmp(self->out, "stall 7 of tid 1234 (reactor-0) on cpu 1: 31.2 ms over "
			     "a 25 ms deadline, running in kernel\n", 88));
	EXPECT_NE(NULL, strstr(self->out, "  began 2025-11-22T16:55:47.123456Z, process 1230 "
			       "(fixture-fp), wall clock, armed, tag 0x0, 2 samples, ended\n"));
	EXPECT_NE(NULL, strstr(self->out, "  sample 0 at 2025-11-22T16:55:47.123556Z (+0.10 ms), "
			       "running in kernel, captured by nmi, in a memory stall\n"));
	EXPECT_NE(NULL, strstr(self->out, "    kernel:\n      #0  0xffffffff813002f1  do_sys_poll+0x2f1\n"
			       "      #1  0xffffffff81a0006f  entry_SYSCALL_64+0x6f\n    user:\n"));
	EXPECT_NE(NULL, strstr(self->out, "  fixture_spin+0x4  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "  fixture_level2+0x10  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "  main+0x10  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "[fp] fixture-fp\n"));
	EXPECT_NE(NULL, strstr(self->out, "  sample 1 at 2025-11-22T16:55:47.148456Z (+25 ms), "
			       "running in kernel: same stacks as sample 0\n"));
	EXPECT_EQ(NULL, strstr(self->out, "registers:"));	/* x86-64: no note */
	if (getenv("SHOW") || !__test_passed(_metadata))
		fprintf(stderr, "%s", self->out);
}

TEST_F(fmt, json)
{
	char *line, *save = NULL;
	int n = 0;

	fmt_json_stall(self->m, &self->rs);
	fmt_json_lost(self->m, 3, 1);
	fflush(self->m);
	EXPECT_NE(NULL, strstr(self->out, "{\"type\":\"stall\",\"stall_id\":7,\"pid\":1230,"
			       "\"tid\":1234,\"ns_pid\":1230,\"ns_tid\":1234,\"comm\":\"reactor-0\","
			       "\"process\":\"fixture-fp\",\"origin\":\"armed\","
			       "\"over_ns\":31200000,\"timeout_ns\":25000000,\"nr_samples\":2,"
			       "\"ended\":true,\"deadline_time\":\"2025-11-22T16:55:47.123456Z\"}\n"));
	EXPECT_NE(NULL, strstr(self->out, "\"capture_time\":\"2025-11-22T16:55:47.148456Z\""));
	EXPECT_NE(NULL, strstr(self->out, "\"capture_realtime_ns\":1763830547148456000,"));
	EXPECT_NE(NULL, strstr(self->out, "\"end_time\":\"2025-11-22T16:55:47.154656Z\""));
	EXPECT_NE(NULL, strstr(self->out, "\"regs_arch\":1,\"regs_arch_name\":\"x86_64\","
			       "\"regs_size\":144,\"regs\":{\"ax\":\"0x0\","));
	EXPECT_NE(NULL, strstr(self->out, "\"ip\":\"0x401000\",\"flags\":\"0x0\"}"));
	EXPECT_NE(NULL, strstr(self->out, "\"flags\":262144,\"flag_names\":[\"memstall\"]"));
	EXPECT_NE(NULL, strstr(self->out, "\"origin\":\"armed\",\"record_type\":2,"
			       "\"fixed_size\":128,"));
	EXPECT_NE(NULL, strstr(self->out, "\"sym\":\"do_sys_poll\",\"off\":753,\"dso\":\"kernel\""));
	EXPECT_NE(NULL, strstr(self->out, "\"method\":\"fp\",\"sym\":\"fixture_spin\",\"off\":4"));
	EXPECT_NE(NULL, strstr(self->out, "\"deadline_ns\":1000000000,\"capture_ns\":1025000000"));
	EXPECT_NE(NULL, strstr(self->out, "\"type\":\"stall_end\""));
	EXPECT_NE(NULL, strstr(self->out, "{\"type\":\"lost\",\"lost\":3,\"suppressed\":1}\n"));
	for (line = strtok_r(self->out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		EXPECT_TRUE(json_line_ok(line));
		if (!json_line_ok(line))
			fprintf(stderr, "bad JSON: %s\n", line);
		n++;
	}
	EXPECT_EQ(5, n);	/* stall, 2 samples, stall_end, lost */
}

TEST_F(fmt, json_escapes)
{
	struct sc_sample *m = self->st.head->samples;

	strcpy(m->v.s.comm, "a\"b\\c\td");
	fmt_json_stall(self->m, &self->rs);
	fflush(self->m);
	EXPECT_NE(NULL, strstr(self->out, "\"comm\":\"a\\\"b\\\\c\\u0009d\""));
	EXPECT_TRUE(json_line_ok(strtok(self->out, "\n")));
	EXPECT_FALSE(json_line_ok("{\"a\":1,}"));	/* the checker does check */
}

/* Ids of the session's pid namespace first, the initial namespace's after. */
TEST_F(fmt, namespace_ids)
{
	struct sc_sample *m;

	for (m = self->st.head->samples; m; m = m->next) {
		m->v.s.ns_pid = 7;
		m->v.s.ns_tid = 12;
	}
	fmt_text_stall(self->m, &self->rs);
	fmt_json_stall(self->m, &self->rs);
	fflush(self->m);
	EXPECT_EQ(0, strncmp(self->out, "stall 7 of tid 12 (host 1234) (reactor-0) on cpu 1:", 51));
	EXPECT_NE(NULL, strstr(self->out, ", process 7 (host 1230) (fixture-fp),"));
	EXPECT_NE(NULL, strstr(self->out, "\"pid\":1230,\"tid\":1234,\"ns_pid\":7,\"ns_tid\":12,"));
	fclose(self->m);
	free(self->out);
	self->out = NULL;
	self->m = open_memstream(&self->out, &self->len);
	/* not visible in the session's namespace */
	for (m = self->st.head->samples; m; m = m->next)
		m->v.s.ns_tid = 0;
	fmt_text_stall(self->m, &self->rs);
	fflush(self->m);
	EXPECT_EQ(0, strncmp(self->out, "stall 7 of tid ? (host 1234) (reactor-0)", 40));
	if (getenv("SHOW") || !__test_passed(_metadata))
		fprintf(stderr, "%s", self->out);
}

/* A register set of an unknown architecture: said so, not interpreted. */
TEST_F(fmt, unknown_arch_registers)
{
	struct sc_sample *m = self->st.head->samples;

	m->user.regs_arch = 0x7e;
	fmt_text_stall(self->m, &self->rs);
	fmt_json_stall(self->m, &self->rs);
	fflush(self->m);
	EXPECT_NE(NULL, strstr(self->out, "    registers: architecture 126 unknown to this "
			       "stallcap, not interpreted (kernel frames and frame-pointer user "
			       "frames only)\n"));
	/* the frames are still there */
	EXPECT_NE(NULL, strstr(self->out, "do_sys_poll+0x2f1\n"));
	EXPECT_NE(NULL, strstr(self->out, "  main+0x10  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "\"regs_arch\":126,\"regs_arch_name\":\"unknown\","
			       "\"regs_size\":144,\"regs\":null,"));
}

/* ISO 8601 with microseconds, UTC or local time with its offset. */
TEST(wallclock)
{
	char buf[48];
	char *tz = getenv("TZ");

	sc_time_utc = true;
	sc_wallclock(buf, sizeof(buf), RT_D);
	EXPECT_STREQ("2025-11-22T16:55:47.123456Z", buf);
	sc_wallclock(buf, sizeof(buf), 0);
	EXPECT_STREQ("1970-01-01T00:00:00.000000Z", buf);
	sc_time_utc = false;
	setenv("TZ", "XST-2:30", 1);
	tzset();
	sc_wallclock(buf, sizeof(buf), RT_D + 999);
	EXPECT_STREQ("2025-11-22T19:25:47.123456+02:30", buf);
	setenv("TZ", "YST5", 1);
	tzset();
	sc_wallclock(buf, sizeof(buf), RT_D);
	EXPECT_STREQ("2025-11-22T11:55:47.123456-05:00", buf);
	if (tz)
		setenv("TZ", tz, 1);
	else
		unsetenv("TZ");
	tzset();
}

/* A record's realtime stamp converts its own monotonic times exactly. */
TEST(realtime_conversion)
{
	struct stallcap_sample s = { .capture_ns = 5000, .capture_realtime_ns = 1005000 };
	struct sc_rstall rs = { .rt_offset_ns = 7, .rt_known = true };
	__u64 rt;

	ASSERT_TRUE(sc_realtime(&rs, &s, 4000, &rt));
	EXPECT_EQ(1004000, rt);
	s.capture_realtime_ns = 0;	/* no stamp: the stall's offset */
	ASSERT_TRUE(sc_realtime(&rs, &s, 4000, &rt));
	EXPECT_EQ(4007, rt);
	rs.rt_known = false;
	EXPECT_FALSE(sc_realtime(&rs, &s, 4000, &rt));
}

TEST_F(fmt, folded)
{
	struct folded *fo = folded_new();

	folded_add_stall(fo, &self->rs);
	folded_print(fo, self->m);
	fflush(self->m);
	/* both samples on one stack: the whole 31.2 ms from deadline to end */
	EXPECT_STREQ("reactor-0;main;fixture_level1;fixture_level2;fixture_spin;"
		     "entry_SYSCALL_64_[k];do_sys_poll_[k] 31200\n", self->out);
	folded_free(fo);
}

TEST_HARNESS_MAIN
