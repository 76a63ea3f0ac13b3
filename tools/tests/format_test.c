// SPDX-License-Identifier: GPL-2.0
/*
 * Output formats on one stall of two samples: kernel frames from a symbol
 * table, user frames from a real fixture's snapshot.  Text is checked line
 * by line, every JSON line is parsed, the folded line is checked whole.
 */
#include "helpers.h"
#include "json_check.h"
#include "kselftest_harness.h"

/* ---- the stall ---- */

#define D	1000000000ULL		/* the deadline, CLOCK_MONOTONIC */
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
	struct rec_spec sp = {
		.stall_id = 7, .pid = 1230, .tid = 1234, .cpu = 1, .comm = "reactor-0",
		.timeout_ns = 25 * NSEC_PER_MSEC, .deadline_ns = D,
		.capture_ns = D + 100000, .kips = kips, .nk = 2, .uips = uips, .nu = 4,
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
	sp.capture_ns = D + 25 * NSEC_PER_MSEC;
	s = make_sample(&sp);
	stalls_add(&self->st, &s->hdr);
	free(s);
	stalls_add(&self->st, &e.hdr);
	ASSERT_EQ(1, self->st.nr);
	ASSERT_EQ(0, resolve_stall(&self->r, self->st.head, &self->rs));
	self->m = open_memstream(&self->out, &self->len);
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
	EXPECT_NE(NULL, strstr(self->out, "  process 1230 (fixture-fp), wall clock, tag 0x0, "
			       "2 samples, ended\n"));
	EXPECT_NE(NULL, strstr(self->out, "  sample 0 at +0.10 ms, running in kernel, captured by nmi\n"));
	EXPECT_NE(NULL, strstr(self->out, "    kernel:\n      #0  0xffffffff813002f1  do_sys_poll+0x2f1\n"
			       "      #1  0xffffffff81a0006f  entry_SYSCALL_64+0x6f\n    user:\n"));
	EXPECT_NE(NULL, strstr(self->out, "  fixture_spin+0x4  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "  fixture_level2+0x10  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "  main+0x10  fixture.c:"));
	EXPECT_NE(NULL, strstr(self->out, "[fp] fixture-fp\n"));
	EXPECT_NE(NULL, strstr(self->out, "  sample 1 at +25 ms, running in kernel: "
			       "same stacks as sample 0\n"));
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
			       "\"tid\":1234,\"comm\":\"reactor-0\",\"process\":\"fixture-fp\","
			       "\"over_ns\":31200000,\"timeout_ns\":25000000,\"nr_samples\":2,"
			       "\"ended\":true}\n"));
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

	strcpy(((struct stallcap_sample *)m->buf)->comm, "a\"b\\c\td");
	fmt_json_stall(self->m, &self->rs);
	fflush(self->m);
	EXPECT_NE(NULL, strstr(self->out, "\"comm\":\"a\\\"b\\\\c\\u0009d\""));
	EXPECT_TRUE(json_line_ok(strtok(self->out, "\n")));
	EXPECT_FALSE(json_line_ok("{\"a\":1,}"));	/* the checker does check */
}

TEST_F(fmt, folded)
{
	struct folded *fo = folded_new();

	folded_add_stall(fo, &self->rs);
	folded_print(fo, self->m);
	fflush(self->m);
	EXPECT_STREQ("reactor-0;main;fixture_level1;fixture_level2;fixture_spin;"
		     "[k] entry_SYSCALL_64;[k] do_sys_poll 2\n", self->out);
	folded_free(fo);
}

TEST_HARNESS_MAIN
