// SPDX-License-Identifier: GPL-2.0
/*
 * A user stack with a gap: a thread spins in user mode under a frame of
 * 96 KiB whose buffer it wrote only the lowest bytes of (a parser's line
 * buffer: unbound keeps 64-128 KiB ones), on a fresh thread stack whose
 * untouched pages are not resident.  Its user-mode sample's user stack,
 * read on the way back to user space from resident pages only, ends at the
 * first untouched page of the buffer; the STALLCAP_SEC_USER_STACK_MORE
 * sections must hold the resident runs above that gap: the caller's marker
 * words among them, byte for byte, where they are in the thread's memory,
 * in address order, within the stack's mapping, the reach and the room for
 * the stack.  Before them, the unwinder stopped at the big frame.
 */
#include "stallcap_test.h"

#include "sc_harness.h"

#define TIMEOUT		SC_MS(20)
#define TAG		0x6d6f72652d303031ULL
#define MARKER		0x6d61726b65723030ULL
#define BIG_FRAME	(96 * 1024)
#define THREAD_STACK	(2 * 1024 * 1024)
#define ATTEMPTS	3

struct spinner {
	int fd;
	const volatile int *stop;
	volatile uint64_t *marker;	/* where the caller's marker words are */
	int arm_ret;
	pid_t tid;
};

SC_NOINLINE void spin_here(const volatile int *stop)
{
	while (!*stop)
		;
}

/* The buffer's lowest bytes written, its pages above never touched. */
SC_NOINLINE void big_frame(const volatile int *stop)
{
	volatile char buf[BIG_FRAME];

	buf[0] = 1;
	spin_here(stop);
	if (buf[0] != 1)
		abort();
}

SC_NOINLINE void marked_caller(struct spinner *sp)
{
	volatile uint64_t marker[4];

	for (int i = 0; i < 4; i++)
		marker[i] = MARKER + i;
	sp->marker = marker;
	big_frame(sp->stop);
	for (int i = 0; i < 4; i++)
		if (marker[i] != MARKER + i)
			abort();
}

static void *spinner_main(void *arg)
{
	struct spinner *sp = arg;

	sp->tid = sc_gettid();
	sp->arm_ret = sc_arm(sp->fd, TIMEOUT, 0, TAG);
	if (!sp->arm_ret)
		marked_caller(sp);
	sc_disarm(sp->fd);
	return NULL;
}

/* The sample of @tid with @cookie, or NULL. */
static const struct stallcap_sample *sample_of(const struct sc_records *rs, pid_t tid,
					       uint64_t cookie)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->tid == (uint32_t)tid &&
		    r->cookie == cookie)
			return r;
	}
	return NULL;
}

/*
 * The USER_STACK record of @tid whose first copy ended at a gap, or NULL.
 * Only a user-mode sample's copy reads resident pages alone: a sample that
 * found the thread in the kernel (an interrupt's handler, on a slow guest)
 * has its stack read on the way out with faults allowed, up to the reach,
 * and is partial for that (CI91 and CI94, debug: a first copy that ended
 * mid-page, 64 KiB above the stack pointer, past the gap).
 */
static const struct stallcap_sample *gapped_user_stack(const struct sc_records *rs, pid_t tid)
{
	const struct stallcap_sample *smp;

	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type != STALLCAP_REC_USER_STACK || r->tid != (uint32_t)tid ||
		    !(r->flags & STALLCAP_SAMPLE_COPY_PARTIAL))
			continue;
		smp = sample_of(rs, tid, r->cookie);
		if (smp && (smp->flags & STALLCAP_SAMPLE_USER_MODE))
			return r;
		ksft_print_msg("a USER_STACK record of a sample %s (flags %#x): not the one\n",
			       smp ? "taken in the kernel" : "not collected",
			       smp ? smp->flags : 0);
	}
	return NULL;
}

/*
 * One stall of the spinner; its records in @rs.  Return: its tid when a
 * USER_STACK record of it came, 0 when its sample said none would (flags
 * without DEFER_PENDING: a capture the guest delayed past its irq_work,
 * USTACK_MISSED, or a kernel-mode sample that read the stack in place),
 * for another attempt.  A sample that promised one fails the test.
 */
static pid_t one_stall(struct __test_metadata *_metadata, struct sc_session *s,
		       struct sc_records *rs, struct spinner *sp)
{
	struct sc_stopper st = { .cpu = -1 };
	const struct stallcap_sample *smp;
	struct stallcap_stats stats;
	pthread_attr_t attr;
	pthread_t th;
	void *stack;

	sp->fd = s->fd;
	sp->stop = &st.stop;
	sp->tid = 0;
	/*
	 * A stack of its own, mapped fresh, not huge pages: pages never
	 * touched are not resident.  Not pthread_attr_setstacksize(): the C
	 * library may hand out a cached stack whose pages an earlier thread
	 * touched (CI91, debug: a first copy that ran 16 KiB past the marker).
	 */
	stack = mmap(NULL, THREAD_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	EXPECT_NE(MAP_FAILED, stack);
	if (stack == MAP_FAILED)
		return 0;
	madvise(stack, THREAD_STACK, MADV_NOHUGEPAGE);
	if (sc_stopper_start(&st, s->fd, 1, SC_WAIT_MS) ||
	    pthread_attr_init(&attr)) {
		munmap(stack, THREAD_STACK);
		return 0;
	}
	if (pthread_attr_setstack(&attr, stack, THREAD_STACK) ||
	    pthread_create(&th, &attr, spinner_main, sp)) {
		st.stop = 1;
		sc_stopper_join(&st);
		munmap(stack, THREAD_STACK);
		return 0;
	}
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	munmap(stack, THREAD_STACK);
	sc_stopper_join(&st);
	EXPECT_EQ(0, sp->arm_ret);
	EXPECT_FALSE(st.timed_out);
	if (sp->arm_ret || st.timed_out)
		return 0;
	sc_ring_collect(s, rs, STALLCAP_REC_USER_STACK, 1, SC_WAIT_MS);
	if (sc_records_count(rs, STALLCAP_REC_USER_STACK))
		return sp->tid;
	smp = sc_first_sample_of(rs, sp->tid);
	memset(&stats, 0, sizeof(stats));
	sc_get_stats(s->fd, &stats, 0);
	EXPECT_NE(NULL, smp) TH_LOG("no sample of the spinner");
	if (!smp)
		return 0;
	EXPECT_FALSE(smp->flags & STALLCAP_SAMPLE_DEFER_PENDING)
		TH_LOG("sample (path %u, state %u, flags %#x) promised a USER_STACK record that never came (deferred %llu, lost %llu, lost deferred %llu)",
		       smp->path, smp->state, smp->flags,
		       (unsigned long long)stats.deferred,
		       (unsigned long long)stats.lost,
		       (unsigned long long)stats.lost_deferred);
	TH_LOG("no USER_STACK record promised: path %u, state %u, flags %#x; once more",
	       smp->path, smp->state, smp->flags);
	return 0;
}

TEST(runs_above_a_gap_are_copied_past_it)
{
	const struct stallcap_sample *r = NULL;
	const struct stallcap_section *sec;
	struct sc_records rs = { 0 };
	struct sc_session s;
	struct spinner sp = { 0 };
	uint64_t marker, prev_end, used = 0;
	unsigned int nr_more = 0, found = 0;
	pid_t tid = 0;

	ASSERT_EQ(0, sc_session_setup(&s, &(struct sc_opts){ 0 }));
	if (sc_expect_no_task_work())
		SKIP(sc_session_close(&s); return,
		     "without task_work the user stack is read from outside, faults allowed");
	/* a sample the timer took in the kernel (a loaded guest) has no gap */
	for (int attempt = 0; attempt < ATTEMPTS && !r; attempt++) {
		sc_records_free(&rs);
		memset(&rs, 0, sizeof(rs));
		tid = one_stall(_metadata, &s, &rs, &sp);
		ASSERT_FALSE(_metadata->exit_code);
		if (tid)
			r = gapped_user_stack(&rs, tid);
	}
	ASSERT_NE(NULL, r) TH_LOG("no user-mode sample whose copy ended at the gap in %d stalls",
				  ATTEMPTS);
	ASSERT_EQ(NULL, sc_sample_check(&r->hdr, &s.cfg));
	marker = (uint64_t)(uintptr_t)sp.marker;
	/* the first copy: from sp into the buffer, ending below the marker */
	ASSERT_LE(sc_stack_start(r) + sc_stack_size(r), marker - BIG_FRAME / 2);
	used = sc_stack_size(r);
	prev_end = sc_stack_start(r) + sc_stack_size(r);
	for (SC_FOR_EACH_SECTION(r, off, sec)) {
		const struct stallcap_sec_user_stack *us = (const void *)sec;

		if (sec->type != STALLCAP_SEC_USER_STACK_MORE)
			continue;
		nr_more++;
		used += sizeof(*us) + us->len;
		/* in address order, past a gap, within the reach */
		EXPECT_LT(prev_end, us->start);
		EXPECT_EQ(0, us->start % s.page);
		EXPECT_LE(us->start + us->len, sc_stack_start(r) + STALLCAP_USER_STACK_REACH);
		EXPECT_EQ(0, us->len % 8);
		prev_end = us->start + us->len;
		if (us->start <= marker && marker + 32 <= us->start + us->len) {
			const unsigned char *bytes = (const void *)(us + 1);
			uint64_t w;

			for (int i = 0; i < 4; i++) {
				memcpy(&w, bytes + (marker - us->start) + 8 * i, 8);
				EXPECT_EQ(MARKER + i, w) TH_LOG("marker word %d", i);
			}
			found++;
		}
	}
	EXPECT_LE(1, nr_more);
	EXPECT_EQ(1, found) TH_LOG("%u sections past the gap, none holding the marker at %#llx",
				   nr_more, (unsigned long long)marker);
	EXPECT_LE(used, s.cfg.user_stack_bytes);
	sc_records_free(&rs);
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
