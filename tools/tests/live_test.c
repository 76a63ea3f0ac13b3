// SPDX-License-Identifier: GPL-2.0
/*
 * The live report and stallcap top, fed by hand as the collector feeds
 * them (records, then a flush at the end of each ring drain):
 *  - a stall is printed at its first sample, marked ongoing, before any end
 *    (a deadlock never sends one), its later samples as they come, then its
 *    end, each part once (text and JSON lines);
 *  - at most --max-stalls stalls are held: beyond, the oldest is printed as
 *    it stands, let go and counted;
 *  - an exited process's symbol state is freed once no stall of it is held;
 *  - top shows the thread stalled right now with its ongoing stall (state,
 *    kernel and user frames of its last sample), then the stall as ended.
 */
#include "helpers.h"
#include "kselftest_harness.h"

#define RT0	1700000000000000000ULL	/* 2023-11-14T22:13:20Z */
#define KSCHED	0xffffffff81001000ULL
#define KFUTEX	0xffffffff81002000ULL

struct mem_out {
	char *buf;
	size_t len;
	FILE *f;
};

static void mem_open(struct mem_out *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
}

/* what was written since the last call */
static char *mem_take(struct mem_out *m, size_t *from)
{
	char *s;

	fflush(m->f);
	s = strndup(m->buf + *from, m->len - *from);
	*from = m->len;
	return s;
}

static void add_ksyms(struct sc_sink *sk)
{
	struct ksym a = { .addr = KSCHED, .size = 0x100, .name = "schedule" };
	struct ksym b = { .addr = KFUTEX, .size = 0x100, .name = "futex_wait" };

	sk->ksym(sk, &a);
	sk->ksym(sk, &b);
}

/* sample @idx of stall @id of tid @tid, blocked in futex_wait < schedule */
static void put(struct sc_sink *sk, __u64 id, __u32 tid, __u32 idx, __u64 base, __u64 at_ms)
{
	__u64 ips[2] = { KSCHED + 0x10, KFUTEX + 0x20 };
	struct rec_spec sp = { .stall_id = id, .pid = 10, .tid = tid, .comm = "locker",
			       .deadline_ns = base, .capture_ns = base + at_ms * NSEC_PER_MSEC,
			       .timeout_ns = 20 * NSEC_PER_MSEC, .sample_index = idx,
			       .state = STALLCAP_STATE_SLEEPING, .kips = ips, .nk = 2,
			       .realtime_ns = RT0 + at_ms * NSEC_PER_MSEC };
	struct stallcap_sample *s = make_sample(&sp);

	sk->record(sk, &s->hdr);
	free(s);
}

static void put_end(struct sc_sink *sk, __u64 id, __u32 tid, __u64 base, __u64 ms,
		    __u32 nr)
{
	struct stallcap_stall_end e = make_end(id, 10, tid, base, base + ms * NSEC_PER_MSEC, nr);

	sk->record(sk, &e.hdr);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

TEST(text_ongoing_then_end)
{
	struct mem_out m;
	struct report *rp;
	struct sc_sink *sk;
	size_t from = 0;
	char *out;

	sc_time_utc = true;
	mem_open(&m);
	rp = report_live_new(m.f, false, 100);
	ASSERT_NE(NULL, rp);
	sk = report_live_sink(rp);
	add_ksyms(sk);

	/* the first sample of a stall that has no end: shown at the flush */
	put(sk, 1, 11, 0, NSEC_PER_SEC, 1);
	out = mem_take(&m, &from);
	EXPECT_STREQ("", out);
	free(out);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_STREQ(
"stall 1 of tid 11 (locker) on cpu 0: 1 ms over a 20 ms deadline, blocked in kernel (sleeping)\n"
"  began 2023-11-14T22:13:20.000000Z, process 10 (?), wall clock, armed, tag 0x0, 1 sample, "
"ongoing (no end yet)\n"
"  sample 0 at 2023-11-14T22:13:20.001000Z (+1 ms), blocked in kernel (sleeping), captured by nmi\n"
"    kernel:\n"
"      #0  0xffffffff81001010  schedule+0x10\n"
"      #1  0xffffffff81002020  futex_wait+0x20\n"
"    user: no frames\n"
"\n", out);
	free(out);

	/* nothing new: nothing printed again */
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_STREQ("", out);
	free(out);

	/* two more samples: only they are printed, under a reminder line */
	put(sk, 1, 11, 1, NSEC_PER_SEC, 2);
	put(sk, 1, 11, 2, NSEC_PER_SEC, 4);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_STREQ(
"stall 1 of tid 11 (locker), ongoing: samples 1 to 2 of 3, 4 ms over so far\n"
"  sample 1 at 2023-11-14T22:13:20.002000Z (+2 ms), blocked in kernel (sleeping): same stacks as sample 0\n"
"  sample 2 at 2023-11-14T22:13:20.004000Z (+4 ms), blocked in kernel (sleeping): same stacks as sample 0\n"
"\n", out);
	free(out);

	/* its end: one line */
	put_end(sk, 1, 11, NSEC_PER_SEC, 9, 3);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_STREQ("stall 1 of tid 11 (locker) ended: 9 ms over its deadline, 3 samples\n\n",
		     out);
	free(out);

	/* reading stops: nothing printed twice, the count */
	report_live_end(rp);
	out = mem_take(&m, &from);
	EXPECT_STREQ("1 stall, 3 samples\n", out);
	free(out);
	fclose(m.f);
	free(m.buf);
}

TEST(json_ongoing_then_end)
{
	struct mem_out m;
	struct report *rp;
	struct sc_sink *sk;
	size_t from = 0;
	char *out;

	mem_open(&m);
	rp = report_live_new(m.f, true, 100);
	ASSERT_NE(NULL, rp);
	sk = report_live_sink(rp);
	add_ksyms(sk);
	put(sk, 7, 12, 0, NSEC_PER_SEC, 1);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_EQ(1, count(out, "\"type\":\"stall\""));
	EXPECT_EQ(1, count(out, "\"ended\":false,\"ongoing\":true"));
	EXPECT_EQ(1, count(out, "\"type\":\"sample\""));
	EXPECT_EQ(1, count(out, "\"sym\":\"futex_wait\""));
	EXPECT_EQ(0, count(out, "stall_end"));
	free(out);

	put(sk, 7, 12, 1, NSEC_PER_SEC, 2);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_EQ(0, count(out, "\"type\":\"stall\""));
	EXPECT_EQ(1, count(out, "\"type\":\"sample\""));
	EXPECT_EQ(1, count(out, "\"sample_index\":1"));
	free(out);

	put_end(sk, 7, 12, NSEC_PER_SEC, 5, 2);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_EQ(0, count(out, "\"type\":\"sample\""));
	EXPECT_EQ(1, count(out, "\"type\":\"stall_end\""));
	free(out);
	report_live_end(rp);
	out = mem_take(&m, &from);
	EXPECT_STREQ("", out);
	free(out);
	fclose(m.f);
	free(m.buf);
}

/*
 * A sample whose user stack is deferred is shown once its USER_STACK record
 * came (merged), or after 500 ms without it; the samples after it wait too.
 */
TEST(deferred_stack_waited_for)
{
	__u64 kip = KSCHED + 0x10, uip = 0x401000;
	struct rec_spec sp = { .stall_id = 4, .pid = 10, .tid = 13, .comm = "locker",
			       .deadline_ns = NSEC_PER_SEC, .capture_ns = NSEC_PER_SEC + NSEC_PER_MSEC,
			       .timeout_ns = 20 * NSEC_PER_MSEC, .kips = &kip, .nk = 1,
			       .flags = STALLCAP_SAMPLE_DEFER_PENDING, .cookie = 77 };
	struct stallcap_sample *smp;
	struct mem_out m;
	struct report *rp;
	struct sc_sink *sk;
	size_t from = 0;
	char *out;

	mem_open(&m);
	rp = report_live_new(m.f, false, 100);
	ASSERT_NE(NULL, rp);
	sk = report_live_sink(rp);
	add_ksyms(sk);
	smp = make_sample(&sp);
	sk->record(sk, &smp->hdr);
	free(smp);
	put(sk, 4, 13, 1, NSEC_PER_SEC, 2);	/* not deferred, but after it */
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_STREQ("", out);
	free(out);
	/* its user stack: both samples shown, the first with it */
	sp.type = STALLCAP_REC_USER_STACK;
	sp.flags = 0;
	sp.uips = &uip;
	sp.nu = 1;
	smp = make_sample(&sp);
	sk->record(sk, &smp->hdr);
	free(smp);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_EQ(1, count(out, "ongoing (no end yet)")) TH_LOG("%s", out);
	EXPECT_EQ(1, count(out, "    user (deferred):\n      #0  0x0000000000401000"));
	EXPECT_EQ(1, count(out, "  sample 1 at "));
	free(out);

	/* another stall whose user stack never comes: shown after 500 ms */
	sp.type = 0;
	sp.stall_id = 5;
	sp.flags = STALLCAP_SAMPLE_DEFER_PENDING;
	sp.nu = 0;
	smp = make_sample(&sp);
	sk->record(sk, &smp->hdr);
	free(smp);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_STREQ("", out);
	free(out);
	usleep(550 * 1000);
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_EQ(1, count(out, "stall 5 of tid 13 (locker) on cpu 0")) TH_LOG("%s", out);
	/* said as what it is, not as a stack without frames */
	EXPECT_EQ(1, count(out, "    user: not read (the thread did not return to user space "
			   "after this sample: it exited, or the record was lost)\n"));
	EXPECT_EQ(0, count(out, "user: no frames"));
	free(out);
	report_live_end(rp);
	fclose(m.f);
	free(m.buf);
}

/* 10 stalls in progress, 4 held at most: 6 printed as they stand, let go */
TEST(max_stalls_bounds_what_is_held)
{
	struct mem_out m;
	struct report *rp;
	struct sc_sink *sk;
	size_t from = 0;
	char *out;
	__u32 t;

	sc_time_utc = true;
	mem_open(&m);
	rp = report_live_new(m.f, false, 4);
	ASSERT_NE(NULL, rp);
	sk = report_live_sink(rp);
	add_ksyms(sk);
	for (t = 0; t < 10; t++)
		put(sk, 1, 100 + t, 0, NSEC_PER_SEC, 1);
	/* the 6 oldest: printed when let go (not at a flush), without an end */
	out = mem_take(&m, &from);
	EXPECT_EQ(6, count(out, "ongoing (no end yet)")) TH_LOG("%s", out);
	EXPECT_EQ(6, count(out, ": let go before its end (over 4 held)\n"));
	EXPECT_NE(NULL, strstr(out, "stall 1 of tid 100 "));
	EXPECT_NE(NULL, strstr(out, "stall 1 of tid 105 "));
	EXPECT_EQ(NULL, strstr(out, "stall 1 of tid 106 "));
	free(out);
	/* the 4 held: ongoing at the flush */
	sk->flush(sk);
	out = mem_take(&m, &from);
	EXPECT_EQ(4, count(out, "ongoing (no end yet)"));
	EXPECT_NE(NULL, strstr(out, "stall 1 of tid 109 "));
	free(out);
	/* an end for one held: printed as ended, the others at the end of reading */
	put_end(sk, 1, 109, NSEC_PER_SEC, 3, 1);
	report_live_end(rp);
	out = mem_take(&m, &from);
	EXPECT_EQ(1, count(out, "stall 1 of tid 109 (locker) ended"));
	EXPECT_NE(NULL, strstr(out, "10 stalls, 10 samples; 6 let go before their end (over 4 held)\n"))
		TH_LOG("%s", out);
	free(out);
	fclose(m.f);
	free(m.buf);
}

TEST(top_shows_ongoing_then_ended)
{
	__u64 now = now_ns(CLOCK_MONOTONIC), base = now - 1500 * NSEC_PER_MSEC;
	struct mem_out m;
	struct top *tp;
	struct sc_sink *sk;
	size_t from = 0;
	char *out;

	mem_open(&m);
	tp = top_new(m.f, true, 100);
	ASSERT_NE(NULL, tp);
	sk = top_sink(tp);
	add_ksyms(sk);
	put(sk, 3, 21, 0, base, 20);
	put(sk, 3, 21, 1, base, 40);
	/* its process is kept while the stall is held */
	EXPECT_EQ(-EBUSY, sk->proc_gone(sk, 10));
	top_render(tp, now, 1.0);
	out = mem_take(&m, &from);
	EXPECT_NE(NULL, strstr(out, "threads watched 0, stalls 1 (1 ongoing)")) TH_LOG("%s", out);
	/* the thread row: 1 stall begun in the 1 s interval, ongoing 1500 ms */
	EXPECT_NE(NULL, strstr(out, "     21      10 locker                1.0       0.0      1"
			       "       0.0  ongoing 1500.0 ms\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  ongoing    1500.0 ms over 20.0 ms  tid 21 (locker) stall 3:"
			       " 2 samples, blocked (sleeping)\n"
			       "    kernel: schedule < futex_wait\n")) TH_LOG("%s", out);
	free(out);

	put_end(sk, 3, 21, base, 1600, 2);
	EXPECT_EQ(0, sk->proc_gone(sk, 10));	/* ended: it may go */
	top_render(tp, now + NSEC_PER_SEC, 1.0);
	out = mem_take(&m, &from);
	EXPECT_NE(NULL, strstr(out, "stalls 1 (0 ongoing)")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "     21      10 locker                0.0    1600.0      1"
			       "    1600.0  -\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  ended      1600.0 ms over 20.0 ms  tid 21 (locker) stall 3:"
			       " 2 samples, blocked (sleeping)\n")) TH_LOG("%s", out);
	free(out);

	/* its deferred user stack, after the end: no new stall */
	{
		__u64 uip = 0x401000;
		struct rec_spec sp = { .type = STALLCAP_REC_USER_STACK, .stall_id = 3, .pid = 10,
				       .tid = 21, .comm = "locker", .deadline_ns = base,
				       .capture_ns = base, .uips = &uip, .nu = 1, .cookie = 5 };
		struct stallcap_sample *us = make_sample(&sp);

		sk->record(sk, &us->hdr);
		free(us);
	}
	/* 10 s later, the ended stall is no longer among the worst */
	top_render(tp, now + 11 * NSEC_PER_SEC, 1.0);
	out = mem_take(&m, &from);
	EXPECT_NE(NULL, strstr(out, "ended in the last 10 s):\n  none\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "stalls 1 (0 ongoing)")) TH_LOG("%s", out);
	free(out);
	top_free(tp);
	fclose(m.f);
	free(m.buf);
}

/*
 * Live over days: an exited process's symbol state goes when the collector
 * says it is gone, not while a stall of it is still held.
 */
TEST(exited_process_forgotten)
{
	struct sc_proc snap = { .pid = 10, .comm = "locker" };
	struct mem_out m;
	struct report *rp;
	struct sc_sink *sk;

	mem_open(&m);
	rp = report_live_new(m.f, false, 100);
	ASSERT_NE(NULL, rp);
	sk = report_live_sink(rp);
	ASSERT_NE(NULL, sk->proc_gone);
	ASSERT_EQ(0, sk->proc(sk, &snap));
	snap.pid = 20;
	ASSERT_EQ(0, sk->proc(sk, &snap));
	ASSERT_NE(NULL, report_live_proc(rp, 10));

	/* a stall of it in progress: kept */
	put(sk, 1, 11, 0, NSEC_PER_SEC, 1);
	sk->flush(sk);
	EXPECT_EQ(-EBUSY, sk->proc_gone(sk, 10));
	EXPECT_NE(NULL, report_live_proc(rp, 10));

	/* its stall ended and printed: forgotten, the other process kept */
	put_end(sk, 1, 11, NSEC_PER_SEC, 9, 1);
	sk->flush(sk);
	EXPECT_EQ(0, sk->proc_gone(sk, 10));
	EXPECT_EQ(NULL, report_live_proc(rp, 10));
	EXPECT_NE(NULL, report_live_proc(rp, 20));
	EXPECT_EQ(0, sk->proc_gone(sk, 10));	/* twice: nothing to do */

	/* the pid used again: a new snapshot, kept as before */
	snap.pid = 10;
	ASSERT_EQ(0, sk->proc(sk, &snap));
	EXPECT_NE(NULL, report_live_proc(rp, 10));
	report_live_end(rp);
	fclose(m.f);
	free(m.buf);
}

TEST_HARNESS_MAIN
