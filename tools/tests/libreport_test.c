// SPDX-License-Identifier: GPL-2.0
/*
 * libstallcap's in-process reporting on forged records: one block per
 * stall (its header with the verdict the record gives, its samples under
 * it, the same stack again as one line, a run of them as "xN", its end
 * with the samples lost), exactly as written; two stalls interleaved; a
 * deferred user stack merged into the sample that waited for it, what
 * followed in its stall written after it; memory that does not grow with
 * a stall's samples nor with the stalls followed; user frames named by
 * dladdr() (this test is linked -rdynamic); snprintf()-style truncation;
 * the no-op session of STALLCAP_OPEN_NOOP when the module is absent.
 */
#include "helpers.h"
#include "kselftest_harness.h"

#include <dlfcn.h>
#include <malloc.h>

#define KIP	0xffffffff81001010ULL

/* exported (-rdynamic): dladdr() names it */
__attribute__((noipa, used)) void libreport_marker(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static struct stallcap_sample *forge_at(__u16 type, __u32 flags, __u64 cookie, const __u64 *uips,
					unsigned int nu, __u32 index, __u64 kip)
{
	struct rec_spec sp = { .type = type, .stall_id = 7, .pid = 1230, .tid = 1234,
			       .comm = "reactor", .deadline_ns = NSEC_PER_SEC,
			       .capture_ns = NSEC_PER_SEC + (5 + 20 * (__u64)index) * NSEC_PER_MSEC,
			       .timeout_ns = 20 * NSEC_PER_MSEC, .cpu = 1, .flags = flags,
			       .cookie = cookie, .state = STALLCAP_STATE_SLEEPING,
			       .sample_index = index, .kips = &kip, .nk = 1, .uips = uips,
			       .nu = nu };
	struct stallcap_sample *s = make_sample(&sp);

	s->user_tag = 0x2a;
	return s;
}

static struct stallcap_sample *forge(__u16 type, __u32 flags, __u64 cookie, const __u64 *uips,
				     unsigned int nu)
{
	return forge_at(type, flags, cookie, uips, nu, 0, KIP);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/* a reporter writing into a string */
struct sink {
	struct stallcap_reporter *r;
	FILE *f;
	char *text;
	size_t len;
};

static void sink_open(struct sink *k)
{
	memset(k, 0, sizeof(*k));
	k->f = open_memstream(&k->text, &k->len);
	if (!k->f || stallcap_reporter_new(&k->r, k->f))
		abort();
}

static void feed(struct sink *k, const struct stallcap_rec_header *rec)
{
	if (stallcap_report_record(rec, k->r))
		abort();
}

/* what was written so far (without flushing the reporter) */
static const char *sink_text(struct sink *k)
{
	fflush(k->f);
	return k->text ? k->text : "";
}

static void sink_close(struct sink *k)
{
	stallcap_reporter_free(k->r);
	fclose(k->f);
	free(k->text);
}

/* dladdr()'s file of this test, as user frames name it */
static const char *self_file(void)
{
	Dl_info di;

	return dladdr((void *)libreport_marker, &di) ? di.dli_fname : "?";
}

#define HEADER	"stallcap: stall 7 of tid 1234 (reactor), tag 0x2a: 5.00 ms past its " \
		"20.00 ms deadline so far, blocked (sleeping)"

TEST(sample_text)
{
	__u64 uips[2] = { (__u64)(unsigned long)libreport_marker + 4,
			  (__u64)(unsigned long)libreport_marker + 6 };
	struct stallcap_sample *s = forge(0, 0, 0, uips, 2);
	char buf[1024], want[1024];
	int n;

	n = stallcap_format_record(&s->hdr, buf, sizeof(buf));
	ASSERT_EQ((int)strlen(buf), n);
	/* stateless: a sample is a block's header and the sample */
	snprintf(want, sizeof(want),
		 HEADER "\n"
		 "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		 "stallcap:     kernel #0  0xffffffff81001010\n"
		 "stallcap:     user   #0  0x%016llx  libreport_marker+0x4 (%s)\n"
		 "stallcap:     user   #1  0x%016llx  libreport_marker+0x6 (%s)\n",
		 (unsigned long long)uips[0], self_file(), (unsigned long long)uips[1],
		 self_file());
	EXPECT_STREQ(want, buf);

	/* cut like snprintf: the whole length, a NUL-terminated prefix */
	EXPECT_EQ(n, stallcap_format_record(&s->hdr, buf, 10));
	EXPECT_STREQ("stallcap:", buf);
	EXPECT_EQ(n, stallcap_format_record(&s->hdr, NULL, 0));
	EXPECT_EQ(-EINVAL, stallcap_format_record(NULL, buf, sizeof(buf)));
	s->hdr.size = 16;	/* shorter than its fixed part */
	EXPECT_EQ(-EBADMSG, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	free(s);
}

/*
 * The header's verdict from the record's own time breakdown: where most
 * of the interval went (nothing when the kernel gave no breakdown).
 */
TEST(header_verdict)
{
	struct rec_spec sp = { .stall_id = 3, .pid = 50, .tid = 51, .comm = "loop",
			       .deadline_ns = NSEC_PER_SEC, .timeout_ns = 10 * NSEC_PER_MSEC,
			       .capture_ns = NSEC_PER_SEC + 2 * NSEC_PER_MSEC, .times = true };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sec_times *t = (void *)find_section(s, STALLCAP_SEC_TIMES);
	char buf[512];

	ASSERT_NE(NULL, t);
	ASSERT_LT(0, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	*strchr(buf, '\n') = '\0';
	EXPECT_STREQ("stallcap: stall 3 of tid 51 (loop), tag 0x0: 2.00 ms past its 10.00 ms "
		     "deadline so far, running", buf);
	t->valid |= 1ULL << STALLCAP_TIME_ON_CPU;
	t->on_cpu_ns = 1800 * 1000;
	ASSERT_LT(0, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	*strchr(buf, '\n') = '\0';
	EXPECT_STREQ("stallcap: stall 3 of tid 51 (loop), tag 0x0: 2.00 ms past its 10.00 ms "
		     "deadline so far, running: on cpu 1.80 of 2.00 ms", buf);
	t->on_cpu_ns = 300 * 1000;
	s->state = STALLCAP_STATE_RUNNABLE;
	t->valid |= 1ULL << STALLCAP_TIME_RUN_DELAY;
	t->run_delay_ns = 1500 * 1000;
	ASSERT_LT(0, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	*strchr(buf, '\n') = '\0';
	EXPECT_STREQ("stallcap: stall 3 of tid 51 (loop), tag 0x0: 2.00 ms past its 10.00 ms "
		     "deadline so far, runnable (preempted): runnable 1.50 of 2.00 ms", buf);
	free(s);
}

/* a sample with a WAIT section and the TASK section of its lock's owner */
static struct stallcap_sample *with_owner(struct stallcap_sample *s, __u32 wflags)
{
	size_t size = s->hdr.size + sizeof(struct stallcap_sec_wait) +
		      sizeof(struct stallcap_sec_task);
	unsigned char *p = calloc(1, size);
	struct stallcap_sec_wait *w = (void *)(p + s->hdr.size);
	struct stallcap_sec_task *t = (void *)(w + 1);

	memcpy(p, s, s->hdr.size);
	free(s);
	w->sec.size = sizeof(*w);
	w->sec.type = STALLCAP_SEC_WAIT;
	w->kind = STALLCAP_WAIT_FUTEX;
	w->flags = wflags;
	w->object = 0x7f00001000ULL;
	w->nr_hops = 1;
	t->sec.size = sizeof(*t);
	t->sec.type = STALLCAP_SEC_TASK;
	t->fixed_size = sizeof(*t);
	t->role = STALLCAP_ROLE_OWNER;
	t->hop = 1;
	t->tid = t->ns_tid = 1240;
	t->pid = t->ns_pid = 1230;
	t->state = STALLCAP_STATE_SLEEPING;
	strcpy(t->comm, "worker");
	s = (void *)p;
	s->hdr.size = (__u32)size;
	return s;
}

/* blocked on a lock: what, who holds it, and a deadlock when the chain loops */
TEST(header_lock_owner)
{
	struct stallcap_sample *s = with_owner(forge(0, 0, 0, NULL, 0), STALLCAP_WAIT_F_CYCLE);
	char buf[1024];

	ASSERT_LT(0, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	*strchr(buf, '\n') = '\0';
	EXPECT_STREQ(HEADER ": waits on a futex 0x7f00001000 held by tid 1240 (worker), deadlock",
		     buf);
	free(s);
}

/* pthread_join() of a thread that has not exited: the thread joined */
TEST(header_join)
{
	struct stallcap_sample *s = with_owner(forge(0, 0, 0, NULL, 0), STALLCAP_WAIT_F_JOIN);
	char buf[1024];

	ASSERT_LT(0, stallcap_format_record(&s->hdr, buf, sizeof(buf)));
	*strchr(buf, '\n') = '\0';
	EXPECT_STREQ(HEADER ": waits on a futex 0x7f00001000 joining tid 1240 (worker)", buf);
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

/*
 * One block per stall: its header once, its samples under it, the same
 * stack again as "same stack as sample N" (a run as "xN"), its end with
 * the samples that never came.
 */
TEST(stall_block)
{
	static const __u64 kips[] = { KIP, KIP, KIP, KIP + 8, KIP + 8, KIP };
	struct stallcap_stall_end e = make_end(7, 1230, 1234, NSEC_PER_SEC,
					       NSEC_PER_SEC + 150 * NSEC_PER_MSEC, 8);
	struct stallcap_sample *s[6];
	struct sink k;
	unsigned int i;

	for (i = 0; i < 6; i++)
		s[i] = forge_at(0, 0, 0, NULL, 0, i, kips[i]);
	sink_open(&k);
	for (i = 0; i < 3; i++)
		feed(&k, &s[i]->hdr);
	/* a run is written when a different stack (or the end) comes */
	EXPECT_STREQ(HEADER "\n"
		     "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001010\n", sink_text(&k));
	for (; i < 6; i++)
		feed(&k, &s[i]->hdr);
	feed(&k, &e.hdr);
	EXPECT_STREQ(HEADER "\n"
		     "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001010\n"
		     "stallcap:   samples 1-2 at +25.00 to +45.00 ms, blocked (sleeping): "
		     "same stack as sample 0 (x2)\n"
		     "stallcap:   sample 3 at +65.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001018\n"
		     "stallcap:   sample 4 at +85.00 ms, blocked (sleeping), cpu 1: "
		     "same stack as sample 3\n"
		     "stallcap:   sample 5 at +105.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001010\n"
		     "stallcap: stall 7 of tid 1234 ended: 150.00 ms over its deadline, "
		     "8 samples, 2 lost\n", sink_text(&k));
	sink_close(&k);
	for (i = 0; i < 6; i++)
		free(s[i]);
}

/* two stalls at once: a block that resumes after the other's lines says so */
TEST(interleaved_blocks)
{
	struct stallcap_sample *a0 = forge_at(0, 0, 0, NULL, 0, 0, KIP);
	struct stallcap_sample *a1 = forge_at(0, 0, 0, NULL, 0, 1, KIP + 8);
	struct stallcap_sample *b0 = forge_at(0, 0, 0, NULL, 0, 0, KIP);
	struct stallcap_stall_end ea = make_end(7, 1230, 1234, NSEC_PER_SEC,
						NSEC_PER_SEC + 30 * NSEC_PER_MSEC, 2);
	struct sink k;

	b0->tid = b0->ns_tid = 1235;
	b0->stall_id = 2;
	strcpy(b0->comm, "other");
	sink_open(&k);
	feed(&k, &a0->hdr);
	feed(&k, &b0->hdr);
	feed(&k, &a1->hdr);
	feed(&k, &ea.hdr);
	EXPECT_STREQ(HEADER "\n"
		     "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001010\n"
		     "stallcap: stall 2 of tid 1235 (other), tag 0x2a: 5.00 ms past its "
		     "20.00 ms deadline so far, blocked (sleeping)\n"
		     "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001010\n"
		     "stallcap: stall 7 of tid 1234 (reactor), continued\n"
		     "stallcap:   sample 1 at +25.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001018\n"
		     "stallcap: stall 7 of tid 1234 ended: 30.00 ms over its deadline, "
		     "2 samples, 0 lost\n", sink_text(&k));
	sink_close(&k);
	free(a0);
	free(a1);
	free(b0);
}

/*
 * A sample waiting for its user stack is written once, with the stack; the
 * samples and the end of its stall that come meanwhile wait behind it.
 */
TEST(deferred_stack_merged)
{
	__u64 uip = (__u64)(unsigned long)libreport_marker + 2;
	struct stallcap_sample *s0 = forge(0, STALLCAP_SAMPLE_DEFER_PENDING, 9, NULL, 0);
	struct stallcap_sample *s1 = forge_at(0, 0, 0, NULL, 0, 1, KIP + 8);
	struct stallcap_sample *us = forge(STALLCAP_REC_USER_STACK, 0, 9, &uip, 1);
	struct stallcap_stall_end e = make_end(7, 1230, 1234, NSEC_PER_SEC,
					       NSEC_PER_SEC + 28 * NSEC_PER_MSEC, 2);
	char want[2048];
	struct sink k;

	sink_open(&k);
	feed(&k, &s0->hdr);
	feed(&k, &s1->hdr);
	feed(&k, &e.hdr);
	EXPECT_STREQ("", sink_text(&k));	/* all wait for the user stack */
	feed(&k, &us->hdr);
	snprintf(want, sizeof(want),
		 HEADER "\n"
		 "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		 "stallcap:     kernel #0  0xffffffff81001010\n"
		 "stallcap:     user stack completed on return to user space (deferred)\n"
		 "stallcap:     user   #0  0x%016llx  libreport_marker+0x2 (%s)\n"
		 "stallcap:   sample 1 at +25.00 ms, blocked (sleeping), cpu 1\n"
		 "stallcap:     kernel #0  0xffffffff81001018\n"
		 "stallcap: stall 7 of tid 1234 ended: 28.00 ms over its deadline, "
		 "2 samples, 0 lost\n", (unsigned long long)uip, self_file());
	EXPECT_STREQ(want, sink_text(&k));
	sink_close(&k);

	/* never completed: written as it is when flushed, the end after it */
	sink_open(&k);
	feed(&k, &s0->hdr);
	feed(&k, &e.hdr);
	stallcap_reporter_flush(k.r);
	EXPECT_STREQ(HEADER "\n"
		     "stallcap:   sample 0 at +5.00 ms, blocked (sleeping), cpu 1\n"
		     "stallcap:     kernel #0  0xffffffff81001010\n"
		     "stallcap:     user stack deferred, not received\n"
		     "stallcap: stall 7 of tid 1234 ended: 28.00 ms over its deadline, "
		     "2 samples, 1 lost\n", sink_text(&k));
	sink_close(&k);
	free(s0);
	free(s1);
	free(us);
}

/*
 * A stall of 100,000 samples of one stack: one sample in full, then one
 * line, and the reporter's memory does not grow with them; 100 stalls at
 * once (more than the 32 it follows): each still one header, its samples
 * counted right.
 */
TEST(bounded)
{
	struct stallcap_sample *s = forge_at(0, 0, 0, NULL, 0, 0, KIP);
	struct stallcap_stall_end e;
	struct mallinfo2 before, after;
	char want[512];
	const char *text;
	struct sink k;
	unsigned int i;

	sink_open(&k);
	feed(&k, &s->hdr);
	before = mallinfo2();
	for (i = 1; i < 100000; i++) {
		s->sample_index = i;
		feed(&k, &s->hdr);
	}
	after = mallinfo2();
	EXPECT_GE(4096, (long)(after.uordblks - before.uordblks));
	stallcap_reporter_flush(k.r);
	text = sink_text(&k);
	EXPECT_EQ(1, count(text, "stallcap: stall 7 "));
	EXPECT_EQ(1, count(text, "kernel #0"));
	EXPECT_EQ(1, count(text, "stallcap:   samples 1-99999 at +5.00 to +5.00 ms, "
				 "blocked (sleeping): same stack as sample 0 (x99999)\n")) TH_LOG("%s", text);
	sink_close(&k);

	sink_open(&k);
	for (i = 0; i < 100; i++) {
		s->stall_id = 100 + i;
		s->sample_index = 0;
		feed(&k, &s->hdr);
		s->sample_index = 1;
		feed(&k, &s->hdr);
	}
	for (i = 0; i < 100; i++) {
		e = make_end(100 + i, 1230, 1234, NSEC_PER_SEC, 2 * NSEC_PER_SEC, 3);
		feed(&k, &e.hdr);
	}
	text = sink_text(&k);
	EXPECT_EQ(100, count(text, "past its 20.00 ms deadline so far"));
	EXPECT_EQ(100, count(text, "same stack as sample 0\n"));
	EXPECT_EQ(100, count(text, "3 samples, 1 lost\n")) TH_LOG("%s", text);
	/* a stall it never saw: how many were lost is not known */
	e = make_end(99, 1230, 1234, NSEC_PER_SEC, 2 * NSEC_PER_SEC, 3);
	feed(&k, &e.hdr);
	EXPECT_EQ(1, count(sink_text(&k), "stallcap: stall 99 of tid 1234 ended: "
					  "1000.00 ms over its deadline, 3 samples\n"));
	for (i = 0; i < 100; i++) {
		snprintf(want, sizeof(want), "stallcap: stall %u of tid 1234 ended:", 100 + i);
		EXPECT_EQ(1, count(text, want));
	}
	sink_close(&k);
	free(s);
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
