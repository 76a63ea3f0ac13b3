// SPDX-License-Identifier: GPL-2.0
/*
 * libstallcap's in-process reporting on forged records: the text of a
 * sample (user frames named by dladdr(): this test is linked -rdynamic), of
 * a stall's end, snprintf()-style truncation, a deferred user stack merged
 * into the sample that waited for it (written once, after it came), and the
 * no-op session of STALLCAP_OPEN_NOOP when the module is absent.
 */
#include "helpers.h"
#include "kselftest_harness.h"

#define KIP	0xffffffff81001010ULL

/* exported (-rdynamic): dladdr() names it */
__attribute__((noipa, used)) void libreport_marker(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static struct stallcap_sample *forge(__u16 type, __u32 flags, __u64 cookie, const __u64 *uips,
				     unsigned int nu)
{
	__u64 kip = KIP;
	struct rec_spec sp = { .type = type, .stall_id = 7, .pid = 1230, .tid = 1234,
			       .comm = "reactor", .deadline_ns = NSEC_PER_SEC,
			       .capture_ns = NSEC_PER_SEC + 5 * NSEC_PER_MSEC,
			       .timeout_ns = 20 * NSEC_PER_MSEC, .cpu = 1, .flags = flags,
			       .cookie = cookie, .state = STALLCAP_STATE_SLEEPING,
			       .kips = &kip, .nk = 1, .uips = uips, .nu = nu };

	return make_sample(&sp);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

TEST(sample_text)
{
	__u64 uips[2] = { (__u64)(unsigned long)libreport_marker + 4,
			  (__u64)(unsigned long)libreport_marker + 6 };
	struct stallcap_sample *s = forge(0, 0, 0, uips, 2);
	char buf[1024], want[256];
	int n;

	n = stallcap_format_record(&s->hdr, buf, sizeof(buf));
	ASSERT_EQ((int)strlen(buf), n);
	EXPECT_EQ(0, strncmp(buf,
"stallcap: stall 7 of tid 1234 (reactor): sample 0 at +5.00 ms over a 20.00 ms deadline, "
"blocked (sleeping), cpu 1\n"
"stallcap:   kernel #0  0xffffffff81001010\n", strlen(
"stallcap: stall 7 of tid 1234 (reactor): sample 0 at +5.00 ms over a 20.00 ms deadline, "
"blocked (sleeping), cpu 1\n"
"stallcap:   kernel #0  0xffffffff81001010\n"))) TH_LOG("%s", buf);
	/* the innermost frame at its address, a caller's at its return address */
	snprintf(want, sizeof(want), "stallcap:   user   #0  0x%016llx  libreport_marker+0x4 (",
		 (unsigned long long)uips[0]);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	snprintf(want, sizeof(want), "stallcap:   user   #1  0x%016llx  libreport_marker+0x6 (",
		 (unsigned long long)uips[1]);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	EXPECT_EQ(2, count(buf, "libreport_test)\n"));

	/* cut like snprintf: the whole length, a NUL-terminated prefix */
	EXPECT_EQ(n, stallcap_format_record(&s->hdr, buf, 10));
	EXPECT_STREQ("stallcap:", buf);
	EXPECT_EQ(n, stallcap_format_record(&s->hdr, NULL, 0));
	EXPECT_EQ(-EINVAL, stallcap_format_record(NULL, buf, sizeof(buf)));
	s->hdr.size = 16;	/* shorter than its fixed part */
	EXPECT_EQ(-EBADMSG, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	free(s);
}

TEST(end_text)
{
	struct stallcap_stall_end e = make_end(7, 1230, 1234, NSEC_PER_SEC,
					       NSEC_PER_SEC + 31200 * 1000, 2);
	char buf[256];

	ASSERT_LT(0, stallcap_format_record(&e.hdr, buf, sizeof(buf)));
	EXPECT_STREQ("stallcap: stall 7 of tid 1234 ended: 31.20 ms over its deadline, 2 samples\n",
		     buf);
}

/* a sample waiting for its user stack is written once, with the stack */
TEST(deferred_stack_merged)
{
	__u64 uip = (__u64)(unsigned long)libreport_marker + 2;
	struct stallcap_sample *s0 = forge(0, STALLCAP_SAMPLE_DEFER_PENDING, 9, NULL, 0);
	struct stallcap_sample *us = forge(STALLCAP_REC_USER_STACK, 0, 9, &uip, 1);
	struct stallcap_stall_end e = make_end(7, 1230, 1234, NSEC_PER_SEC,
					       NSEC_PER_SEC + 8 * NSEC_PER_MSEC, 1);
	struct stallcap_reporter *r;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ASSERT_EQ(0, stallcap_reporter_new(&r, f));
	ASSERT_EQ(0, stallcap_report_record(&s0->hdr, r));
	ASSERT_EQ(0, stallcap_report_record(&e.hdr, r));
	fflush(f);
	/* the end is written, the sample waits */
	EXPECT_EQ(0, count(text, "sample 0"));
	EXPECT_EQ(1, count(text, "ended: 8.00 ms"));
	ASSERT_EQ(0, stallcap_report_record(&us->hdr, r));
	fflush(f);
	EXPECT_EQ(1, count(text, ": sample 0 at +5.00 ms")) TH_LOG("%s", text);
	EXPECT_EQ(0, count(text, "user stack of sample"));
	EXPECT_EQ(1, count(text, "stallcap:   user stack completed on return to user space (deferred)\n"));
	EXPECT_EQ(1, count(text, "  libreport_marker+0x2 ("));
	stallcap_reporter_free(r);
	fclose(f);
	free(text);

	/* never completed: written as it is when flushed */
	text = NULL;
	f = open_memstream(&text, &len);
	ASSERT_EQ(0, stallcap_reporter_new(&r, f));
	ASSERT_EQ(0, stallcap_report_record(&s0->hdr, r));
	stallcap_reporter_flush(r);
	EXPECT_EQ(1, count(text, ": sample 0 at +5.00 ms"));
	EXPECT_EQ(1, count(text, "user stack deferred, not received"));
	stallcap_reporter_free(r);
	fclose(f);
	free(text);
	free(s0);
	free(us);
}

/* no module: the no-op session takes every call, writes nothing */
TEST(noop_session_without_module)
{
	struct stallcap_session *s;
	struct stallcap_slot *slot = NULL;
	struct stallcap_stats st;
	__u64 lost = 1, supp = 1;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!access(STALLCAP_DEVICE, F_OK))
		SKIP(return, "the module is loaded here");
	EXPECT_EQ(-ENOENT, stallcap_session_open(&s, NULL, 0));
	ASSERT_EQ(0, stallcap_session_open(&s, NULL, STALLCAP_OPEN_NOOP));
	EXPECT_EQ(1, stallcap_session_is_noop(s));
	EXPECT_EQ(-EINVAL, stallcap_session_fd(s));
	EXPECT_EQ(0, stallcap_watch_arm(s, NSEC_PER_MSEC, 1, 0));
	EXPECT_EQ(0, stallcap_watch_rearm(s, 0));
	EXPECT_EQ(0, stallcap_watch_disarm(s));
	EXPECT_EQ(0, stallcap_heartbeat_attach(s, NSEC_PER_MSEC, 1, &slot));
	ASSERT_NE(NULL, slot);
	stallcap_beat(slot);
	stallcap_beat_idle(slot);
	EXPECT_EQ(0, stallcap_deadline_arm(s, NSEC_PER_MSEC, 1, 0, &slot));
	stallcap_deadline_in(slot, NSEC_PER_MSEC);
	EXPECT_EQ(0, stallcap_watch_release(s));
	EXPECT_EQ(0, stallcap_ring_map(s));
	EXPECT_EQ(0, stallcap_ring_wait(s, 1));
	EXPECT_EQ(0, stallcap_ring_counters(s, &lost, &supp));
	EXPECT_EQ(0, lost + supp);
	EXPECT_EQ(0, stallcap_session_get_stats(s, &st, 0));
	EXPECT_EQ(0, st.stalls);
	f = open_memstream(&text, &len);
	EXPECT_EQ(0, stallcap_report(s, f));
	fflush(f);
	EXPECT_EQ(0, len);
	fclose(f);
	free(text);
	stallcap_session_close(s);
}

TEST_HARNESS_MAIN
