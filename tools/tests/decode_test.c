// SPDX-License-Identifier: GPL-2.0
/*
 * Decoding records (stallcap_sample_parse, stallcap_stall_end_parse) and
 * grouping them into stalls (stalls.c), from synthetic records built here.
 */
#include "helpers.h"
#include "kselftest_harness.h"

static const __u64 kips[] = { 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030 };
static const __u64 uips[] = { 0x401000, 0x401100 };
static const unsigned char stack[20] = { 1, 2, 3, 4, 5 };

TEST(sample_parts)
{
	struct rec_spec sp = { .stall_id = 7, .pid = 10, .tid = 11, .kips = kips, .nk = 3,
			       .uips = uips, .nu = 2, .stack = stack, .stack_size = 20,
			       .stack_start = 0x7ffc0000 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;

	ASSERT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	EXPECT_EQ(264, sizeof(struct stallcap_sample));
	EXPECT_EQ(264 + 5 * 8 + 24, s->hdr.size);
	EXPECT_EQ(3, v.nr_kernel);
	EXPECT_EQ(2, v.nr_user);
	EXPECT_EQ(kips[2], v.kernel_ips[2]);
	EXPECT_EQ(uips[0], v.user_ips[0]);
	EXPECT_EQ(20, v.stack_size);
	EXPECT_EQ(0, memcmp(v.stack, stack, 20));
	EXPECT_EQ(7, v.s->stall_id);
	free(s);
}

TEST(sample_malformed)
{
	struct rec_spec sp = { .kips = kips, .nk = 3, .uips = uips, .nu = 2 };
	struct stallcap_sample *s = make_sample(&sp);
	struct stallcap_sample_view v;

	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size - 8, &v)); /* short buffer */
	s->nr_kernel_frames = 4;	/* one frame more than the record holds */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->nr_kernel_frames = STALLCAP_MAX_FRAMES + 1;
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->nr_kernel_frames = 3;
	s->stack_size = 8;		/* raw stack beyond the record */
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->stack_size = 0;
	s->hdr.type = STALLCAP_REC_STALL_END;
	EXPECT_EQ(-EBADMSG, stallcap_sample_parse(s, s->hdr.size, &v));
	s->hdr.type = STALLCAP_REC_USER_STACK;
	EXPECT_EQ(0, stallcap_sample_parse(s, s->hdr.size, &v));
	free(s);
}

TEST(stall_end_parts)
{
	struct stallcap_stall_end e = make_end(3, 10, 11, 100, 250, 2);
	const struct stallcap_stall_end *p;

	ASSERT_EQ(0, stallcap_stall_end_parse(&e, sizeof(e), &p));
	EXPECT_EQ(150, p->end_ns - p->deadline_ns);
	EXPECT_EQ(-EBADMSG, stallcap_stall_end_parse(&e, sizeof(e) - 8, &p));
	e.hdr.type = STALLCAP_REC_SAMPLE;
	EXPECT_EQ(-EBADMSG, stallcap_stall_end_parse(&e, sizeof(e), &p));
}

FIXTURE(group)
{
	struct stalls st;
};

FIXTURE_SETUP(group)
{
	stalls_init(&self->st);
}

FIXTURE_TEARDOWN(group)
{
	stalls_free(&self->st);
}

static void add(struct stalls *st, const struct rec_spec *sp)
{
	struct stallcap_sample *s = make_sample(sp);

	stalls_add(st, &s->hdr);
	free(s);
}

TEST_F(group, samples_grouped_under_their_stall)
{
	struct rec_spec a = { .stall_id = 1, .pid = 10, .tid = 11, .kips = kips, .nk = 1 };
	struct rec_spec b = { .stall_id = 2, .pid = 10, .tid = 12, .kips = kips, .nk = 2 };
	struct stallcap_stall_end e = make_end(1, 10, 11, 0, 5000, 2);
	struct sc_stall *s;

	add(&self->st, &a);
	add(&self->st, &b);
	a.sample_index = 1;
	add(&self->st, &a);
	/* same stall id from another thread (another session): another stall */
	b.tid = 13;
	b.stall_id = 1;
	add(&self->st, &b);
	stalls_add(&self->st, &e.hdr);

	ASSERT_EQ(3, self->st.nr);
	s = self->st.head;
	EXPECT_EQ(11, s->tid);
	EXPECT_EQ(2, s->nr_samples);
	EXPECT_EQ(0, s->samples->v.s->sample_index);
	EXPECT_EQ(1, s->samples->next->v.s->sample_index);
	EXPECT_TRUE(s->ended);
	EXPECT_EQ(5000, sc_stall_over_ns(s));
	EXPECT_EQ(12, s->next->tid);
	EXPECT_FALSE(s->next->ended);
	EXPECT_EQ(13, s->next->next->tid);
	EXPECT_EQ(1, s->next->next->nr_samples);
	EXPECT_EQ(5, self->st.records);
	EXPECT_EQ(0, self->st.bad_records);
}

TEST_F(group, deferred_user_stack_completes_its_samples)
{
	struct rec_spec k = { .stall_id = 4, .pid = 10, .tid = 11, .kips = kips, .nk = 3,
			      .cookie = 99, .flags = STALLCAP_SAMPLE_DEFER_PENDING |
						     STALLCAP_SAMPLE_USTACK_REMOTE };
	struct rec_spec u = { .type = STALLCAP_REC_USER_STACK, .stall_id = 4, .pid = 10,
			      .tid = 11, .cookie = 99, .uips = uips, .nu = 2 };
	struct sc_sample *m;

	/* two samples of one kernel entry share the one deferred record */
	add(&self->st, &k);
	k.sample_index = 1;
	add(&self->st, &k);
	add(&self->st, &u);
	/* a later kernel entry: a new cookie, completed by nothing yet */
	k.sample_index = 2;
	k.cookie = 100;
	add(&self->st, &k);
	ASSERT_EQ(1, self->st.nr);
	EXPECT_EQ(3, self->st.head->nr_samples);
	m = self->st.head->samples;
	EXPECT_TRUE(m->has_deferred);
	EXPECT_EQ(3, m->v.nr_kernel);
	EXPECT_EQ(2, m->user.nr_user);
	EXPECT_EQ(uips[1], m->user.user_ips[1]);
	EXPECT_TRUE(m->next->has_deferred);
	EXPECT_EQ(2, m->next->user.nr_user);
	EXPECT_TRUE(m->next->next->merged);
	EXPECT_FALSE(m->next->next->next->has_deferred);
	EXPECT_EQ(0, m->next->next->next->user.nr_user);
}

TEST_F(group, bad_records_counted)
{
	struct rec_spec a = { .stall_id = 1, .kips = kips, .nk = 1 };
	struct stallcap_sample *s = make_sample(&a);

	s->nr_user_frames = 9;
	EXPECT_EQ(NULL, stalls_add(&self->st, &s->hdr));
	EXPECT_EQ(1, self->st.bad_records);
	EXPECT_EQ(0, self->st.nr);
	free(s);
}

TEST_HARNESS_MAIN
