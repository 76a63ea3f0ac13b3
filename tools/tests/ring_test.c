// SPDX-License-Identifier: GPL-2.0
/*
 * The reader's side of the ring (stallcap_ring_read) on a ring in plain
 * memory, written by a test writer that follows the module's protocol:
 * reserve with the BUSY bit set, publish data_head, fill, clear BUSY.
 */
#include <pthread.h>

#include "helpers.h"
#include "kselftest_harness.h"

#define PAGE	4096
#define DATA	4096

struct mem_ring {
	union {
		struct stallcap_ring_ctl ctl;
		unsigned char page[PAGE];
	};
	unsigned char data[DATA];
};

static void mem_ring_init(struct mem_ring *m)
{
	memset(m, 0, sizeof(*m));
	m->ctl.abi_version = STALLCAP_ABI_VERSION;
	m->ctl.ctl_size = sizeof(m->ctl);
	m->ctl.data_offset = PAGE;
	m->ctl.data_size = DATA;
}

/* Reserve size bytes (padding at the end of the data area); NULL if full. */
static struct stallcap_rec_header *reserve(struct mem_ring *m, __u32 size)
{
	__u64 head = m->ctl.data_head, tail, off = head & (DATA - 1);
	struct stallcap_rec_header *h;

	tail = __atomic_load_n(&m->ctl.data_tail, __ATOMIC_ACQUIRE);
	if (off + size > DATA) {
		if (head + (DATA - off) + size - tail > DATA)
			return NULL;
		h = (void *)(m->data + off);
		h->size = (__u32)(DATA - off);
		h->type = STALLCAP_REC_PAD;
		h->flags = 0;
		head += DATA - off;
		off = 0;
	}
	if (head + size - tail > DATA)
		return NULL;
	h = (void *)(m->data + off);
	h->size = size;
	h->type = STALLCAP_REC_SAMPLE;
	h->flags = STALLCAP_REC_F_BUSY;
	__atomic_store_n(&m->ctl.data_head, head + size, __ATOMIC_RELEASE);	/* A */
	return h;
}

static void commit(struct stallcap_rec_header *h)
{
	__atomic_store_n(&h->flags, 0, __ATOMIC_RELEASE);			/* C */
}

/* Write a record whose payload is n 8-byte words valued seq. */
static struct stallcap_rec_header *put(struct mem_ring *m, unsigned int words, __u64 seq,
				       bool done)
{
	struct stallcap_rec_header *h = reserve(m, 8 + 8 * words);
	unsigned int i;

	if (!h)
		return NULL;
	for (i = 0; i < words; i++)
		((__u64 *)(h + 1))[i] = seq;
	if (done)
		commit(h);
	return h;
}

struct seen {
	__u64 seq[1024];
	unsigned int n;
	int stop_at;		/* return this from the callback at record n... */
	unsigned int stop_n;	/* ...when stop_n == n (1-based) */
	bool bad;
};

static int collect(const struct stallcap_rec_header *h, void *arg)
{
	struct seen *s = arg;
	unsigned int words = (h->size - 8) / 8, i;
	const __u64 *w = (const void *)(h + 1);

	if (s->stop_n && s->n + 1 == s->stop_n && s->stop_at < 0)
		return s->stop_at;
	for (i = 1; i < words; i++)
		s->bad |= w[i] != w[0];
	if (h->type != STALLCAP_REC_SAMPLE || (h->flags & STALLCAP_REC_F_BUSY))
		s->bad = true;
	s->seq[s->n++ % 1024] = words ? w[0] : 0;
	return s->stop_n && s->n == s->stop_n ? s->stop_at : 0;
}

FIXTURE(ring)
{
	struct mem_ring m;
	struct stallcap_ring r;
	struct seen seen;
};

FIXTURE_SETUP(ring)
{
	mem_ring_init(&self->m);
	memset(&self->seen, 0, sizeof(self->seen));
	ASSERT_EQ(0, stallcap_ring_init(&self->r, &self->m, sizeof(self->m)));
}

FIXTURE_TEARDOWN(ring)
{
}

TEST_F(ring, empty)
{
	EXPECT_EQ(0, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(0, self->m.ctl.data_tail);
}

TEST_F(ring, records_in_order_then_tail_released)
{
	ASSERT_NE(NULL, put(&self->m, 3, 1, true));
	ASSERT_NE(NULL, put(&self->m, 1, 2, true));
	EXPECT_EQ(2, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(1, self->seen.seq[0]);
	EXPECT_EQ(2, self->seen.seq[1]);
	EXPECT_FALSE(self->seen.bad);
	EXPECT_EQ(self->m.ctl.data_head, self->m.ctl.data_tail);
	EXPECT_EQ(0, stallcap_ring_pending(&self->r));
}

TEST_F(ring, busy_record_stops_the_reader)
{
	struct stallcap_rec_header *busy;

	ASSERT_NE(NULL, put(&self->m, 1, 1, true));
	ASSERT_NE(NULL, busy = put(&self->m, 1, 2, false));
	ASSERT_NE(NULL, put(&self->m, 1, 3, true));
	EXPECT_EQ(1, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(16, self->m.ctl.data_tail);	/* stopped at the busy one */
	commit(busy);
	EXPECT_EQ(2, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(2, self->seen.seq[1]);
	EXPECT_EQ(3, self->seen.seq[2]);
}

TEST_F(ring, pad_skipped_at_wrap)
{
	unsigned int i;

	/* 3 x 1 KiB records, consumed, then one that does not fit before the end */
	for (i = 0; i < 3; i++)
		ASSERT_NE(NULL, put(&self->m, 127, i, true));
	EXPECT_EQ(3, stallcap_ring_read(&self->r, collect, &self->seen));
	ASSERT_NE(NULL, put(&self->m, 200, 7, true));	/* pads 1 KiB, wraps */
	EXPECT_EQ(1, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(4, self->seen.n);
	EXPECT_EQ(7, self->seen.seq[3]);
	EXPECT_FALSE(self->seen.bad);
	EXPECT_EQ(self->m.ctl.data_head, self->m.ctl.data_tail);
	EXPECT_GT(self->m.ctl.data_tail, DATA);
}

TEST_F(ring, callback_error_keeps_the_record)
{
	ASSERT_NE(NULL, put(&self->m, 1, 1, true));
	ASSERT_NE(NULL, put(&self->m, 1, 2, true));
	self->seen.stop_n = 2;
	self->seen.stop_at = -EIO;
	EXPECT_EQ(-EIO, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(16, self->m.ctl.data_tail);
	self->seen.stop_n = 0;
	EXPECT_EQ(1, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(2, self->seen.seq[1]);
}

TEST_F(ring, callback_stop_consumes_the_record)
{
	ASSERT_NE(NULL, put(&self->m, 1, 1, true));
	ASSERT_NE(NULL, put(&self->m, 1, 2, true));
	self->seen.stop_n = 1;
	self->seen.stop_at = 1;
	EXPECT_EQ(1, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(16, self->m.ctl.data_tail);
}

TEST_F(ring, malformed_size_rejected)
{
	struct stallcap_rec_header *h = put(&self->m, 1, 1, true);

	ASSERT_NE(NULL, h);
	h->size = 12;	/* not a multiple of 8 */
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	h->size = 2 * DATA;	/* beyond data_head and the data area */
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(0, self->m.ctl.data_tail);
	EXPECT_EQ(0, self->seen.n);
}

TEST_F(ring, init_checks_the_control_page)
{
	struct stallcap_ring r;

	self->m.ctl.abi_version = 99;
	EXPECT_EQ(-EPROTO, stallcap_ring_init(&r, &self->m, sizeof(self->m)));
	self->m.ctl.abi_version = STALLCAP_ABI_VERSION;
	self->m.ctl.data_size = 3000;
	EXPECT_EQ(-EBADMSG, stallcap_ring_init(&r, &self->m, sizeof(self->m)));
	self->m.ctl.data_size = 2 * DATA;	/* larger than the mapping */
	EXPECT_EQ(-EBADMSG, stallcap_ring_init(&r, &self->m, sizeof(self->m)));
}

/* A writer thread and the reader at once: every record arrives whole, in order. */
#define NR_CONCURRENT	200000

static void *writer(void *arg)
{
	struct mem_ring *m = arg;
	__u64 seq;

	for (seq = 1; seq <= NR_CONCURRENT; seq++)
		while (!put(m, 1 + seq % 37, seq, true))
			;	/* full: wait for the reader */
	return NULL;
}

TEST_F(ring, concurrent_writer)
{
	pthread_t t;
	__u64 expect = 1;
	unsigned int i, before;
	int n;

	ASSERT_EQ(0, pthread_create(&t, NULL, writer, &self->m));
	while (expect <= NR_CONCURRENT) {
		before = self->seen.n;
		n = stallcap_ring_read(&self->r, collect, &self->seen);
		ASSERT_GE(n, 0);
		for (i = before; i < self->seen.n; i++)
			ASSERT_EQ(expect++, self->seen.seq[i % 1024]);
	}
	pthread_join(t, NULL);
	EXPECT_FALSE(self->seen.bad);
}

/* Control pages a writer (or a thread of the watched program) may forge. */
TEST_F(ring, head_far_ahead_rejected)
{
	ASSERT_NE(NULL, put(&self->m, 1, 1, true));
	self->m.ctl.data_head = self->m.ctl.data_tail + (1ULL << 62);
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(0, self->seen.n);		/* nothing delivered, not once more */
	EXPECT_EQ(0, self->m.ctl.data_tail);
	self->m.ctl.data_head = DATA + 8;	/* one byte-group more than the area */
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	self->m.ctl.data_tail = 1ULL << 40;	/* head behind tail */
	self->m.ctl.data_head = 16;
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(0, self->seen.n);
}

TEST_F(ring, unaligned_tail_rejected)
{
	/* 4 bytes before the end of the area: the header would straddle it */
	self->m.ctl.data_tail = DATA - 4;
	self->m.ctl.data_head = DATA + 4;
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	self->m.ctl.data_tail = 3;		/* odd: misaligned reads */
	self->m.ctl.data_head = 19;
	EXPECT_EQ(-EBADMSG, stallcap_ring_read(&self->r, collect, &self->seen));
	EXPECT_EQ(0, self->seen.n);
	EXPECT_EQ(3, self->m.ctl.data_tail);
}

TEST_F(ring, tiny_data_area_refused)
{
	struct stallcap_ring r;
	unsigned int sz;

	for (sz = 1; sz < 8; sz *= 2) {
		self->m.ctl.data_size = sz;
		EXPECT_EQ(-EBADMSG, stallcap_ring_init(&r, &self->m, PAGE + sz));
	}
	self->m.ctl.data_size = 8;
	EXPECT_EQ(0, stallcap_ring_init(&r, &self->m, PAGE + 8));
	EXPECT_EQ(-EINVAL, stallcap_ring_init(&r, (char *)&self->m + 4, sizeof(self->m) - 4));
}

static int check_private(const struct stallcap_rec_header *h, void *arg)
{
	const struct mem_ring *m = arg;

	return (const void *)h >= (const void *)m && (const void *)h < (const void *)(m + 1) ?
	       -EFAULT : 0;
}

TEST_F(ring, callback_gets_a_private_copy)
{
	ASSERT_NE(NULL, put(&self->m, 3, 1, true));
	EXPECT_EQ(1, stallcap_ring_read(&self->r, check_private, &self->m));
}

/*
 * Double fetch: a thread of the watched program flips a committed record's
 * size between its true value, 16 MiB and the whole area, and the sizes of
 * its fixed part and first section, while the reader reads it again and
 * again.  The reader must never crash nor hand on a byte from outside the
 * record (0xEE fills the rest of the area), and every record it hands on
 * carries the size it checked.
 */
static __u32 flip_rec;	/* the true size of the record */

struct flip {
	struct mem_ring *m;
	volatile int stop;
	unsigned long delivered, rejected, foreign, bad_size, parsed;
	struct stalls st;
};

static void spin(unsigned long n)
{
	volatile unsigned long k;

	for (k = 0; k < n; k++)
		;
}

/* Flips the record's size, its fixed part's size and its first section's size. */
static void *flipper(void *arg)
{
	struct flip *f = arg;
	struct stallcap_sample *s = (void *)f->m->data;
	volatile __u32 *size = &s->hdr.size;
	volatile __u32 *fixed = &s->fixed_size;
	volatile __u32 *sec = (__u32 *)(f->m->data + sizeof(*s));
	__u32 sec_size = *sec;
	unsigned long i;

	for (i = 0; !f->stop; i++) {
		*size = i % 2 ? 16U << 20 : DATA;
		*fixed = i % 3 ? 1U << 20 : sizeof(*s);
		*sec = i % 5 ? sec_size : 1U << 20;
		spin(i % 16);	/* each state lasts: the reader meets all of them */
		*size = flip_rec;
		*fixed = sizeof(*s);
		*sec = sec_size;
		spin(64 + i % 64);
	}
	return NULL;
}

static int flip_cb(const struct stallcap_rec_header *h, void *arg)
{
	struct flip *f = arg;
	const unsigned char *b = (const void *)h;
	struct stallcap_sample_view v;
	size_t i;

	f->delivered++;
	if (h->size != flip_rec)
		f->bad_size++;
	for (i = offsetof(struct stallcap_sample, comm); i < flip_rec; i++)
		f->foreign += b[i] == 0xee;
	if (!stallcap_sample_parse(h, h->size, &v)) {
		f->parsed++;
		stalls_add(&f->st, h);
	}
	return 0;
}

TEST_F(ring, double_fetch_of_a_flipping_record)
{
	__u64 kips[8] = { 0 };
	struct rec_spec sp = { .stall_id = 1, .pid = 1, .tid = 1, .kips = kips, .nk = 8,
			       .comm = "flip" };
	struct stallcap_sample *s = make_sample(&sp);
	struct flip f = { .m = &self->m };
	pthread_t t;
	int i, ret;

	flip_rec = s->hdr.size;
	ASSERT_EQ(sizeof(*s), s->fixed_size);	/* the first section follows */
	memset(self->m.data, 0xee, DATA);
	memcpy(self->m.data, s, flip_rec);
	free(s);
	self->m.ctl.data_head = flip_rec;
	stalls_init(&f.st);
	ASSERT_EQ(0, pthread_create(&t, NULL, flipper, &f));
	for (i = 0; i < 200000 || (!f.delivered && i < 50000000); i++) {
		self->m.ctl.data_tail = 0;
		ret = stallcap_ring_read(&self->r, flip_cb, &f);
		if (ret < 0)
			f.rejected++;
		ASSERT_TRUE(ret == 1 || ret == -EBADMSG);
	}
	f.stop = 1;
	pthread_join(t, NULL);
	stalls_free(&f.st);
	EXPECT_EQ(0, f.bad_size);
	EXPECT_EQ(0, f.foreign);
	EXPECT_GT(f.delivered, 0);
	EXPECT_GT(f.parsed, 0);
	TH_LOG("%lu delivered (%lu parsed), %lu rejected", f.delivered, f.parsed, f.rejected);
}

TEST_HARNESS_MAIN
