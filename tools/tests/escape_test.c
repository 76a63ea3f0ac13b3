// SPDX-License-Identifier: GPL-2.0
/*
 * Names in records and record files are untrusted: a stall whose thread
 * name, kernel symbols, module names, process name and map paths carry
 * terminal escape sequences, BEL, CR, newlines, ';' and invalid UTF-8 goes
 * through `stallcap report` in each format.  The text is safe to print (no
 * control character, nothing that starts a forged line), every JSON line
 * parses with python3's json module and gives the names back (invalid bytes
 * as U+FFFD), every folded line keeps the form "a;b;c N".
 */
#include <regex.h>

#include "helpers.h"
#include "json_check.h"
#include "kselftest_harness.h"

#define D	1000000000ULL
#define KBASE	0xffffffff81000000ULL

static const char *const names[] = {
	"\x1b]0;owned\x07", "a\nstall 9 of tid 1 (x) on cpu 0", "cr\roverwrite",
	"semi;colon 99", "bad\xff\xfe" "utf8", "\xc0\xaf" "overlong", "\xed\xa0\x80" "surr",
	"c1\xc2\x9b" "31m", "bidi\xe2\x80\xae" "evil", "ok-\xc3\xa9t\xc3\xa9",
};
#define NR	(sizeof(names) / sizeof(names[0]))
#define COMM	"\x1b[2J\x07\r\n\xff;x y"

FIXTURE(esc)
{
	char in[64], out[64];
	char *buf;
	size_t len;
};

/* One stall: every kernel frame named by one of names[], every user frame in a map so named. */
static int write_hostile(const char *path)
{
	struct sc_map maps[NR];
	struct sc_proc p = { .pid = 300, .nr_maps = NR, .maps = maps };
	__u64 kips[NR], uips[NR];
	struct ksym k = { .size = 0x100 };
	struct rec_spec sp = {
		.stall_id = 3, .pid = 300, .tid = 301, .comm = COMM,
		.timeout_ns = NSEC_PER_MSEC, .deadline_ns = D, .capture_ns = D + 1,
		.kips = kips, .nk = NR, .uips = uips, .nu = NR,
	};
	struct stallcap_stall_end e = make_end(3, 300, 301, D, D + 2 * NSEC_PER_MSEC, 1);
	struct scfile *f = scfile_create(path);
	char paths[NR][80];
	struct stallcap_sample *s;
	struct sc_sink *sk;
	unsigned int i;

	if (!f)
		return -1;
	sk = scfile_sink(f);
	snprintf(p.comm, sizeof(p.comm), "%s", "\x1b[31mred\n");
	for (i = 0; i < NR; i++) {
		k.addr = KBASE + 0x1000 * i;
		k.name = names[i];
		k.mod = i % 2 ? names[(i + 1) % NR] : NULL;
		sk->ksym(sk, &k);
		kips[i] = k.addr + 8;
		snprintf(paths[i], sizeof(paths[i]), "/nonexistent/%s", names[i]);
		memset(&maps[i], 0, sizeof(maps[i]));
		maps[i].start = 0x400000 + 0x1000 * i;
		maps[i].end = maps[i].start + 0x1000;
		maps[i].prot = SC_PROT_R | SC_PROT_X;
		maps[i].path = paths[i];
		uips[i] = maps[i].start + 0x10;
	}
	sk->proc(sk, &p);
	s = make_sample(&sp);
	sk->record(sk, &s->hdr);
	free(s);
	sk->record(sk, &e.hdr);
	return scfile_close(f);
}

static int report(struct _test_data_esc *self, const char *fmt)
{
	char *argv[] = { "report", self->in, "-f", (char *)fmt, "-o", self->out, NULL };
	FILE *f;
	int ret;

	optind = 0;
	ret = cmd_report(6, argv);
	free(self->buf);
	self->buf = NULL;
	f = fopen(self->out, "r");
	if (!f)
		return -1;
	if (getdelim(&self->buf, &self->len, 0, f) < 0) {
		free(self->buf);
		self->buf = strdup("");
	}
	self->len = strlen(self->buf);
	fclose(f);
	return ret;
}

FIXTURE_SETUP(esc)
{
	snprintf(self->in, sizeof(self->in), "/tmp/stallcap-esc-in.%d", getpid());
	snprintf(self->out, sizeof(self->out), "/tmp/stallcap-esc-out.%d", getpid());
	self->buf = NULL;
	ASSERT_EQ(0, write_hostile(self->in));
}

FIXTURE_TEARDOWN(esc)
{
	unlink(self->in);
	unlink(self->out);
	free(self->buf);
}

/* Only newlines, printable ASCII and well-formed UTF-8 that is not a control. */
static bool terminal_safe(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i;
	int n;

	for (i = 0; i < len; i++) {
		if (p[i] == '\n' || (p[i] >= 0x20 && p[i] < 0x7f))
			continue;
		if (p[i] < 0x80)
			return false;
		n = json_utf8_tail(p + i);
		if (!n || (p[i] == 0xc2 && p[i + 1] < 0xa0) ||
		    (p[i] == 0xe2 && p[i + 1] == 0x80 && p[i + 2] >= 0xaa && p[i + 2] <= 0xae))
			return false;
		i += n;
	}
	return true;
}

TEST_F(esc, text_is_safe_to_print)
{
	char *line, *save = NULL;
	int stalls = 0;

	ASSERT_EQ(0, report(self, "text"));
	EXPECT_TRUE(terminal_safe(self->buf, self->len));
	EXPECT_NE(NULL, strstr(self->buf, "stall 3 of tid 301 (\\x1b[2J\\x07\\x0d\\x0a\\xff;x y) "));
	EXPECT_NE(NULL, strstr(self->buf, "process 300 (\\x1b[31mred\\x0a)"));
	EXPECT_NE(NULL, strstr(self->buf, "\\x1b]0;owned\\x07+0x8"));
	EXPECT_NE(NULL, strstr(self->buf, "a\\x0astall 9 of tid 1 (x) on cpu 0+0x8"));
	EXPECT_NE(NULL, strstr(self->buf, "bad\\xff\\xfeutf8+0x8"));
	EXPECT_NE(NULL, strstr(self->buf, "\\xc0\\xafoverlong"));
	EXPECT_NE(NULL, strstr(self->buf, "\\xed\\xa0\\x80surr"));
	EXPECT_NE(NULL, strstr(self->buf, "c1\\xc2\\x9b31m"));
	EXPECT_NE(NULL, strstr(self->buf, "bidi\\xe2\\x80\\xaeevil"));
	EXPECT_NE(NULL, strstr(self->buf, "ok-\xc3\xa9t\xc3\xa9+0x8"));	/* valid UTF-8 kept */
	for (line = strtok_r(self->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		stalls += !strncmp(line, "stall ", 6);
	EXPECT_EQ(1, stalls);	/* no forged "stall 9" line */
	if (getenv("SHOW") || !__test_passed(_metadata))
		fprintf(stderr, "report in %s\n", self->in);
}

TEST_F(esc, json_parses_with_python)
{
	char cmd[2048], *line, *save = NULL;
	int n = 0;

	ASSERT_EQ(0, report(self, "json"));
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json, sys\n"
		 "lines = [json.loads(l) for l in open(sys.argv[1], encoding=\"utf-8\")]\n"
		 "st = lines[0]; smp = lines[1]\n"
		 "assert st[\"comm\"] == \"\\x1b[2J\\x07\\r\\n\\ufffd;x y\", repr(st[\"comm\"])\n"
		 "assert st[\"process\"] == \"\\x1b[31mred\\n\", repr(st[\"process\"])\n"
		 "syms = [f[\"sym\"] for f in smp[\"kernel_stack\"]]\n"
		 "assert syms[0] == \"\\x1b]0;owned\\x07\", syms\n"
		 "assert syms[4] == \"bad\\ufffd\\ufffdutf8\", syms\n"
		 "assert syms[9] == \"ok-\\u00e9t\\u00e9\", syms\n"
		 "assert smp[\"kernel_stack\"][1][\"dso\"] == \"cr\\roverwrite\"\n"
		 "assert len(lines) == 3, len(lines)' %s", self->out);
	EXPECT_EQ(0, system(cmd));
	for (line = strtok_r(self->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		EXPECT_TRUE(json_line_ok(line));
		n++;
	}
	EXPECT_EQ(3, n);	/* stall, sample, stall_end */
}

TEST_F(esc, folded_keeps_its_form)
{
	char *line, *save = NULL, *p;
	unsigned int semis;
	regex_t re;
	int n = 0;

	ASSERT_EQ(0, report(self, "folded"));
	EXPECT_TRUE(terminal_safe(self->buf, self->len));
	ASSERT_EQ(0, regcomp(&re, "^[^;]+(;[^;]+)* [0-9]+$", REG_EXTENDED | REG_NOSUB));
	for (line = strtok_r(self->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		EXPECT_EQ(0, regexec(&re, line, 0, NULL, 0));
		for (semis = 0, p = line; (p = strchr(p, ';')); p++)
			semis++;
		EXPECT_EQ(2 * NR, semis);	/* thread;NR user frames;NR kernel frames */
		n++;
	}
	regfree(&re);
	EXPECT_EQ(1, n);	/* one sample, one line, its 2 ms stalled */
	if (self->len > 5)
		EXPECT_EQ(0, strcmp(self->buf + strlen(self->buf) - 5, " 2000"));
}

/* --top and html: hostile names stay inert (html: one frame per name, whole) */
TEST_F(esc, top_and_html_are_safe)
{
	char cmd[8192];
	FILE *p;
	int frames = 0;
	char line[4096];

	{
		char *argv[] = { "report", self->in, "--top", "-o", self->out, NULL };

		optind = 0;
		ASSERT_EQ(0, cmd_report(5, argv));
	}
	free(self->buf);
	self->buf = NULL;
	{
		FILE *f = fopen(self->out, "r");

		ASSERT_NE(NULL, f);
		self->buf = calloc(1, 1 << 16);
		self->len = fread(self->buf, 1, (1 << 16) - 1, f);
		fclose(f);
	}
	EXPECT_TRUE(terminal_safe(self->buf, self->len));
	EXPECT_NE(NULL, strstr(self->buf, "ok-\xc3\xa9t\xc3\xa9_[k]\n"));
	ASSERT_EQ(0, report(self, "html"));
	EXPECT_TRUE(terminal_safe(self->buf, self->len));
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s < %s", fixture_path("html_check.py"),
		 self->out);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		EXPECT_EQ(NULL, strstr(line, "external"));
		frames += !strncmp(line, "frame ", 6);
	}
	EXPECT_EQ(0, pclose(p));
	EXPECT_EQ(2 + 2 * NR, frames);	/* all, the thread, NR user + NR kernel frames */
}

TEST_HARNESS_MAIN
