// SPDX-License-Identifier: GPL-2.0
/*
 * Self-describing records, read as a program built against this header
 * reads them: with the module's abi_test parameter set, a sample's fixed
 * part is longer than struct stallcap_sample and it carries a section of a
 * type this header does not define; the section walker of stallcap_test.h
 * must skip both and still find every known field and section.  And the
 * records' CLOCK_REALTIME stamps: capture_realtime_ns - capture_ns is the
 * REALTIME - MONOTONIC offset the test reads itself.
 */
#include "stallcap_test.h"

#include "sc_harness.h"
#include "stall_util.h"

#define ABI_TEST_PARAM	"/sys/module/stallcap/parameters/abi_test"
#define TIMEOUT		SC_MS(20)
#define TAG		0x7265636f72647331ULL
/* REALTIME - MONOTONIC may differ this much between two readings (TCG) */
#define OFFSET_SLACK_NS	SC_MS(5)

static int set_abi_test(int on)
{
	return sc_write_bool(ABI_TEST_PARAM, on);
}

static int64_t realtime_offset_ns(void)
{
	struct timespec m, r;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((int64_t)r.tv_sec - m.tv_sec) * (int64_t)SC_NSEC_PER_SEC +
	       (r.tv_nsec - m.tv_nsec);
}

FIXTURE(rec) {
	struct sc_session s;
	struct sc_records rs;
};

FIXTURE_SETUP(rec)
{
	memset(&self->rs, 0, sizeof(self->rs));
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
}

FIXTURE_TEARDOWN(rec)
{
	set_abi_test(0);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

/* Stall in user mode until captured; the first sample, or NULL. */
static const struct stallcap_sample *stall_in_user(struct __test_metadata *_metadata,
						    FIXTURE_DATA(rec) *self)
{
	struct sc_stopper st = { .cpu = -1 };

	sc_records_free(&self->rs);	/* this attempt's records only */
	if (sc_stopper_start(&st, self->s.fd, 1, SC_WAIT_MS))
		return NULL;
	if (sc_arm(self->s.fd, TIMEOUT, 0, TAG)) {
		st.stop = 1;
		sc_stopper_join(&st);
		return NULL;
	}
	spin_in_user_caller(&st.stop);
	sc_stopper_join(&st);
	EXPECT_EQ(0, sc_disarm(self->s.fd));
	EXPECT_FALSE(st.timed_out);
	EXPECT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS))
		TH_LOG("no stall-end: %s", self->rs.err);
	return sc_first_sample_of(&self->rs, sc_gettid());
}

/*
 * The first sample of a stall in user mode, retried when it came late or
 * caught the spinner in the kernel (an interrupt's way back to user space,
 * on a loaded host): what the tests check is the record's layout.
 */
static const struct stallcap_sample *stall_in_user_mode(struct __test_metadata *_metadata,
							 FIXTURE_DATA(rec) *self)
{
	const struct stallcap_sample *r = NULL;

	for (int attempt = 0; attempt < SC_ATTEMPTS; attempt++) {
		r = stall_in_user(_metadata, self);
		if (!r || (!sc_late(r) && (r->flags & STALLCAP_SAMPLE_USER_MODE)))
			break;
		TH_LOG("attempt %d: sample %s, %llu ns late", attempt,
		       r->flags & STALLCAP_SAMPLE_USER_MODE ? "in user mode" : "in the kernel",
		       (unsigned long long)(r->capture_ns - r->deadline_ns));
	}
	return r;
}

/* What any reader of this header must find in a user-mode sample. */
static void expect_known_parts(struct __test_metadata *_metadata,
			       FIXTURE_DATA(rec) *self, const struct stallcap_sample *r)
{
	EXPECT_EQ(STALLCAP_REC_SAMPLE, r->hdr.type);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ((uint32_t)getpid(), r->pid);
	EXPECT_EQ((uint32_t)sc_gettid(), r->tid);
	EXPECT_EQ(0, r->sample_index);
	EXPECT_EQ(STALLCAP_CLOCK_WALL, r->clock);
	EXPECT_EQ(STALLCAP_ORIGIN_ARM, r->origin);
	EXPECT_EQ(TIMEOUT, r->timeout_ns);
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	EXPECT_TRUE(r->flags & STALLCAP_SAMPLE_USER_MODE);
	EXPECT_NE(NULL, sc_section(r, STALLCAP_SEC_REGS));
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user))
		TH_LOG("regs.ip %#llx is in %s", (unsigned long long)sc_regs(r)->ip,
		       sc_usym_name(sc_regs(r)->ip) ?: "?");
	/* the user stack: its own, or read on the interrupt's way back */
	r = sc4_user_frames_of(&self->rs, r);
	ASSERT_NE(NULL, r) TH_LOG("no USER_STACK record of the sample's cookie");
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user));
	ASSERT_LE(2, sc_nu(r));
	EXPECT_TRUE(sc_ip_in_fn(sc_user_ips(r)[1], spin_in_user_caller));
	EXPECT_EQ(sc_regs(r)->sp, sc_stack_start(r));
	/* the configured size, or less near the top of the stack */
	if (r->flags & STALLCAP_SAMPLE_COPY_PARTIAL) {
		EXPECT_GT(self->s.cfg.user_stack_bytes, sc_stack_size(r));
	} else {
		EXPECT_EQ(self->s.cfg.user_stack_bytes, sc_stack_size(r));
	}
	EXPECT_TRUE(sc_stack_has_canary(r));
}

TEST_F(rec, a_reader_skips_a_longer_fixed_part_and_unknown_sections)
{
	const struct stallcap_sample *r;
	const struct stallcap_section *sec;
	const unsigned char *extra;
	unsigned int unknown = 0;

	if (set_abi_test(1))
		SKIP(return, "cannot write %s: %s", ABI_TEST_PARAM, strerror(errno));
	r = stall_in_user_mode(_metadata, self);
	ASSERT_EQ(0, set_abi_test(0));
	ASSERT_NE(NULL, r) TH_LOG("no sample: %s", self->rs.err);
	/* the module wrote a fixed part longer than this header's struct */
	EXPECT_EQ(sizeof(*r) + 8, r->fixed_size);
	extra = (const unsigned char *)r + sizeof(*r);
	for (unsigned int i = 0; i < r->fixed_size - sizeof(*r); i++)
		EXPECT_EQ(0, extra[i]);
	/* and a section of a type this header does not know, skipped */
	for (SC_FOR_EACH_SECTION(r, off, sec)) {
		if (sec->type >= STALLCAP_SEC_REGS && sec->type <= STALLCAP_SEC_TASK)
			continue;
		unknown++;
		EXPECT_LE(0x7f00, sec->type);
		EXPECT_GE(0x7fff, sec->type);
		EXPECT_LT(sizeof(*sec), sec->size) TH_LOG("the test section has no payload");
	}
	EXPECT_EQ(1, unknown);
	EXPECT_EQ(1, sc_unknown_sections(r));
	/* everything known is still found, and right */
	expect_known_parts(_metadata, self, r);
}

TEST_F(rec, without_abi_test_the_fixed_part_is_the_struct)
{
	const struct stallcap_sample *r;

	ASSERT_EQ(sizeof(struct stallcap_sample), self->s.info.sample_fixed_size);
	r = stall_in_user_mode(_metadata, self);
	ASSERT_NE(NULL, r) TH_LOG("no sample: %s", self->rs.err);
	EXPECT_EQ(sizeof(*r), r->fixed_size);
	EXPECT_EQ(0, sc_unknown_sections(r));
	expect_known_parts(_metadata, self, r);
}

TEST_F(rec, realtime_stamps_match_the_clocks_offset)
{
	const struct stallcap_stall_end *e;
	const struct stallcap_sample *r;
	int64_t before = realtime_offset_ns(), after, off;

	r = stall_in_user(_metadata, self);
	after = realtime_offset_ns();
	ASSERT_NE(NULL, r) TH_LOG("no sample: %s", self->rs.err);
	off = (int64_t)(r->capture_realtime_ns - r->capture_ns);
	EXPECT_LE(before - (int64_t)OFFSET_SLACK_NS, off)
		TH_LOG("sample offset %lld, clocks %lld..%lld", (long long)off,
		       (long long)before, (long long)after);
	EXPECT_GE(after + (int64_t)OFFSET_SLACK_NS, off);
	e = sc_stall_end_of(&self->rs, r->stall_id);
	ASSERT_NE(NULL, e);
	off = (int64_t)(e->end_realtime_ns - e->end_ns);
	EXPECT_LE(before - (int64_t)OFFSET_SLACK_NS, off)
		TH_LOG("stall-end offset %lld, clocks %lld..%lld", (long long)off,
		       (long long)before, (long long)after);
	EXPECT_GE(after + (int64_t)OFFSET_SLACK_NS, off);
	EXPECT_EQ(sizeof(*e), e->fixed_size);
	EXPECT_EQ(STALLCAP_ORIGIN_ARM, e->origin);
	EXPECT_EQ((uint32_t)getpid(), e->pid);
	EXPECT_EQ((uint32_t)sc_gettid(), e->ns_tid);	/* this test runs in the initial namespace */
}

TEST_HARNESS_MAIN
