/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the torture, fuzz and unprivileged tests, on top of
 * stallcap_test.h (which they reuse, never copy):
 *
 *  - a small PRNG (xorshift64*) with a seed that can be fixed from the
 *    environment, so that a failing run can be replayed;
 *  - tunables read from the environment or, in the test guest, from the
 *    kernel command line (unknown NAME=value parameters reach init's
 *    environment, /proc/cmdline is the fallback);
 *  - errno sets, to check every call against the errnos documented for it;
 *  - a record accountant: consumes what sc_ring_drain() collected (each
 *    record already checked with sc_record_check()), keeps per-stall state
 *    and checks the session's counters against what was delivered;
 *  - background load (a CPU hog per CPU, a fork storm);
 *  - module parameters, dropping privileges, "a normal capture still works".
 *
 * Like stallcap_test.h, nothing here uses the harness's ASSERT/EXPECT
 * macros: errors come back as return values and messages.
 */
#ifndef STALLCAP_TORTURE_UTIL_H
#define STALLCAP_TORTURE_UTIL_H

#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "stallcap_test.h"

/* ------------------------------------------------------------------------
 * PRNG and tunables
 * ------------------------------------------------------------------------
 */

struct tu_rng {
	uint64_t s;
};

static inline void tu_rng_seed(struct tu_rng *r, uint64_t seed)
{
	/* splitmix64 of the seed: nearby seeds give unrelated streams */
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	r->s = (z ^ (z >> 31)) | 1;
}

static inline uint64_t tu_next(struct tu_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n); 0 when n is 0. */
static inline uint64_t tu_below(struct tu_rng *r, uint64_t n)
{
	return n ? tu_next(r) % n : 0;
}

/* Uniform in [lo, hi]. */
static inline uint64_t tu_range(struct tu_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + tu_below(r, hi - lo + 1);
}

static inline bool tu_pct(struct tu_rng *r, unsigned int pct)
{
	return tu_below(r, 100) < pct;
}

/* The seed of this run: $STALLCAP_SEED, else from the clock (printed). */
static inline uint64_t tu_seed(void)
{
	uint64_t seed = sc_tunable("STALLCAP_SEED", 0);

	if (!seed)
		seed = sc_now_ns() ^ ((uint64_t)getpid() << 32);
	return seed;
}

/* Path of the running program (for re-exec), or NULL. */
static inline const char *tu_self_exe(void)
{
	static char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return buf;
}

/* ------------------------------------------------------------------------
 * errno sets
 * ------------------------------------------------------------------------
 */

typedef unsigned __int128 tu_errset;

#define TU_E(e)		((tu_errset)1 << (e))
/* success (return value >= 0) is bit 0: errno 0 never happens */
#define TU_OK		TU_E(0)

static inline bool tu_errset_has(tu_errset set, int ret, int err)
{
	if (ret >= 0)
		return set & TU_OK;
	return err > 0 && err < 128 && (set & TU_E(err));
}

/* "0|EINVAL|E2BIG" into @buf. */
static inline const char *tu_errset_str(tu_errset set, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int e = 0; e < 128 && off < len; e++) {
		if (!(set & TU_E(e)))
			continue;
		off += snprintf(buf + off, len - off, "%s%s", off ? "|" : "",
				e ? strerrorname_np(e) ?: "?" : "ok");
	}
	return buf;
}

/* ------------------------------------------------------------------------
 * Record accounting and the session invariants
 * ------------------------------------------------------------------------
 */

/* What was delivered of one stall (indexed by stall_id). */
struct tu_stall {
	uint64_t idx_seen;	/* bit i: sample_index i delivered (i < 64) */
	uint32_t samples;	/* SAMPLE records delivered */
	uint32_t end_nr;	/* the stall-end's nr_samples */
	uint32_t tid;
	bool first;		/* sample_index 0 delivered */
	bool ended;		/* stall-end delivered */
};

/* Last (stall_id, sample_index) seen per tid: ring order per watch. */
struct tu_tidpos {
	uint32_t tid;		/* 0: free slot */
	uint64_t stall_id;
	int64_t idx;		/* -1 after the stall-end */
};

#define TU_TIDS		4096	/* open addressing; torture uses far fewer */

/* A deferred user-stack request, known by the cookie of its first sample. */
struct tu_cookie {
	uint64_t cookie;	/* 0: free slot */
	uint64_t stall_id;
	uint64_t user_tag;
	uint32_t tid;
	bool delivered;		/* its USER_STACK record came */
};

struct tu_acct {
	uint32_t max_samples;	/* of the session's configuration */
	struct tu_stall *st;
	size_t cap;		/* entries of st (stall ids 0..cap-1) */
	uint64_t max_stall_id;
	struct tu_tidpos tids[TU_TIDS];
	struct tu_cookie *ck;	/* open addressing, ck_cap a power of two */
	size_t ck_cap, ck_n;
	/* records delivered */
	uint64_t samples, stall_ends, user_stacks, pads;
	uint64_t first_samples;
	uint64_t suppressed_in_records;	/* sum of first samples' suppressed */
	uint64_t abandoned, migrated, kaddr_hidden;
	uint64_t futex_owner_named, futex_owner_gone;	/* blocked on a futex */
	uint64_t by_path[8];
	char err[320];		/* first problem seen */
};

static inline void tu_acct_init(struct tu_acct *a, uint32_t max_samples)
{
	memset(a, 0, sizeof(*a));
	a->max_samples = max_samples;
}

static inline void tu_acct_free(struct tu_acct *a)
{
	free(a->st);
	a->st = NULL;
	a->cap = 0;
	free(a->ck);
	a->ck = NULL;
	a->ck_cap = a->ck_n = 0;
}

/* The entry of @cookie; created (zeroed but for the cookie) if @add. */
static inline struct tu_cookie *tu_acct_cookie(struct tu_acct *a, uint64_t cookie, bool add)
{
	if (add && 2 * (a->ck_n + 1) > a->ck_cap) {
		struct tu_cookie *old = a->ck;
		size_t ocap = a->ck_cap;

		a->ck_cap = ocap ? 2 * ocap : 1024;
		a->ck = calloc(a->ck_cap, sizeof(*a->ck));
		if (!a->ck)
			abort();
		a->ck_n = 0;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].cookie)
				*tu_acct_cookie(a, old[i].cookie, true) = old[i];
		free(old);
	}
	for (size_t i = 0, h = (cookie * 0x9e3779b97f4a7c15ULL) >> 20; i < a->ck_cap; i++) {
		struct tu_cookie *c = &a->ck[(h + i) & (a->ck_cap - 1)];

		if (c->cookie == cookie)
			return c;
		if (!c->cookie) {
			if (!add)
				return NULL;
			c->cookie = cookie;
			a->ck_n++;
			return c;
		}
	}
	return NULL;
}

static inline void tu_acct_fail(struct tu_acct *a, const char *fmt, ...)
{
	va_list ap;

	if (a->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
}

static inline struct tu_stall *tu_acct_stall(struct tu_acct *a, uint64_t id)
{
	if (id >= a->cap) {
		size_t ncap = a->cap ? a->cap : 1024;

		while (ncap <= id)
			ncap *= 2;
		a->st = realloc(a->st, ncap * sizeof(*a->st));
		if (!a->st)
			abort();
		memset(a->st + a->cap, 0, (ncap - a->cap) * sizeof(*a->st));
		a->cap = ncap;
	}
	if (id > a->max_stall_id)
		a->max_stall_id = id;
	return &a->st[id];
}

static inline struct tu_tidpos *tu_acct_tid(struct tu_acct *a, uint32_t tid)
{
	uint32_t h = (tid * 2654435761U) % TU_TIDS;

	for (unsigned int i = 0; i < TU_TIDS; i++) {
		struct tu_tidpos *p = &a->tids[(h + i) % TU_TIDS];

		if (p->tid == tid)
			return p;
		if (!p->tid) {
			p->tid = tid;
			p->stall_id = 0;
			p->idx = -1;
			return p;
		}
	}
	return NULL;	/* table full: ordering not checked for this tid */
}

/*
 * Account the records of @rs (from sc_ring_drain(), so each one already
 * passed sc_record_check()).  Checks, per record: a sample belongs to a
 * stall id >= 1, its index is below max_samples and not seen before, and it
 * does not come after its stall's end; a stall-end counts at least the
 * samples delivered for its stall; per thread, (stall_id, sample_index)
 * only grows in ring order (a watch reserves all its records under its
 * lock).  Returns 0, or -1 with a->err set.
 */
/* A futex wait whose owner the sample names, or says is gone. */
static inline void tu_acct_wait(struct tu_acct *a, const struct stallcap_sample *r)
{
	const struct stallcap_sec_wait *w = (const void *)sc_section(r, STALLCAP_SEC_WAIT);

	if (!w || w->sec.size < sizeof(*w) || w->kind != STALLCAP_WAIT_FUTEX)
		return;
	if (w->flags & STALLCAP_WAIT_F_OWNER_GONE)
		a->futex_owner_gone++;
	else if (w->nr_hops)
		a->futex_owner_named++;
}

static inline int tu_acct_feed(struct tu_acct *a, const struct sc_records *rs)
{
	a->pads += rs->nr_pad;
	if (rs->err[0])
		tu_acct_fail(a, "malformed ring: %s", rs->err);
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_rec_header *h = rs->rec[i];
		const struct stallcap_sample *r = (const void *)h;
		const struct stallcap_stall_end *e = (const void *)h;
		struct tu_tidpos *tp;
		struct tu_stall *s;

		switch (h->type) {
		case STALLCAP_REC_SAMPLE:
			a->samples++;
			a->by_path[r->path & 7]++;
			if (r->flags & SC_SAMPLE_ABANDONED)
				a->abandoned++;
			if (r->flags & STALLCAP_SAMPLE_MIGRATED)
				a->migrated++;
			if (r->flags & STALLCAP_SAMPLE_KADDR_HIDDEN)
				a->kaddr_hidden++;
			tu_acct_wait(a, r);
			if (r->flags & STALLCAP_SAMPLE_DEFER_PENDING) {
				struct tu_cookie *c;

				if (!r->cookie) {
					tu_acct_fail(a, "stall %llu: DEFER_PENDING without a cookie",
						     (unsigned long long)r->stall_id);
				} else if (!(c = tu_acct_cookie(a, r->cookie, false))) {
					c = tu_acct_cookie(a, r->cookie, true);
					c->stall_id = r->stall_id;
					c->user_tag = r->user_tag;
					c->tid = r->tid;
				} else if (c->tid != r->tid) {
					tu_acct_fail(a, "cookie %llu shared by tids %u and %u",
						     (unsigned long long)r->cookie, c->tid, r->tid);
				}
			}
			if (!r->stall_id) {
				tu_acct_fail(a, "sample with stall_id 0 (tid %u)", r->tid);
				break;
			}
			if (r->sample_index >= a->max_samples)
				tu_acct_fail(a, "stall %llu: sample_index %u >= max_samples %u",
					     (unsigned long long)r->stall_id, r->sample_index,
					     a->max_samples);
			if (r->capture_ns < r->deadline_ns)
				tu_acct_fail(a, "stall %llu: captured %llu ns before its deadline",
					     (unsigned long long)r->stall_id,
					     (unsigned long long)(r->deadline_ns - r->capture_ns));
			s = tu_acct_stall(a, r->stall_id);
			if (s->ended)
				tu_acct_fail(a, "stall %llu: sample %u after its stall-end",
					     (unsigned long long)r->stall_id, r->sample_index);
			if (s->tid && s->tid != r->tid)
				tu_acct_fail(a, "stall %llu: samples of tids %u and %u",
					     (unsigned long long)r->stall_id, s->tid, r->tid);
			s->tid = r->tid;
			if (r->sample_index < 64) {
				if (s->idx_seen & (1ULL << r->sample_index))
					tu_acct_fail(a, "stall %llu: sample_index %u twice",
						     (unsigned long long)r->stall_id,
						     r->sample_index);
				s->idx_seen |= 1ULL << r->sample_index;
			}
			s->samples++;
			if (!r->sample_index) {
				s->first = true;
				a->first_samples++;
				a->suppressed_in_records += r->suppressed;
			} else if (r->suppressed) {
				tu_acct_fail(a, "stall %llu: sample %u carries suppressed %u",
					     (unsigned long long)r->stall_id, r->sample_index,
					     r->suppressed);
			}
			tp = tu_acct_tid(a, r->tid);
			if (tp) {
				if (r->stall_id < tp->stall_id ||
				    (r->stall_id == tp->stall_id &&
				     (int64_t)r->sample_index <= tp->idx))
					tu_acct_fail(a, "tid %u: sample (stall %llu, index %u) after "
						     "(stall %llu, index %lld) in ring order",
						     r->tid, (unsigned long long)r->stall_id,
						     r->sample_index,
						     (unsigned long long)tp->stall_id,
						     (long long)tp->idx);
				tp->stall_id = r->stall_id;
				tp->idx = r->sample_index;
			}
			break;
		case STALLCAP_REC_STALL_END:
			a->stall_ends++;
			if (!e->stall_id) {
				tu_acct_fail(a, "stall-end with stall_id 0 (tid %u)", e->tid);
				break;
			}
			s = tu_acct_stall(a, e->stall_id);
			if (s->ended)
				tu_acct_fail(a, "stall %llu: two stall-ends",
					     (unsigned long long)e->stall_id);
			if (s->tid && s->tid != e->tid)
				tu_acct_fail(a, "stall %llu: stall-end of tid %u, samples of tid %u",
					     (unsigned long long)e->stall_id, e->tid, s->tid);
			if (!e->nr_samples || e->nr_samples > a->max_samples)
				tu_acct_fail(a, "stall %llu: stall-end nr_samples %u (max_samples %u)",
					     (unsigned long long)e->stall_id, e->nr_samples,
					     a->max_samples);
			if (e->nr_samples < s->samples)
				tu_acct_fail(a, "stall %llu: stall-end counts %u samples, %u delivered",
					     (unsigned long long)e->stall_id, e->nr_samples,
					     s->samples);
			if (e->nr_samples < 64 && (s->idx_seen >> e->nr_samples))
				tu_acct_fail(a, "stall %llu: a sample_index >= the stall-end's "
					     "nr_samples %u", (unsigned long long)e->stall_id,
					     e->nr_samples);
			s->ended = true;
			s->end_nr = e->nr_samples;
			s->tid = e->tid;
			tp = tu_acct_tid(a, e->tid);
			if (tp) {
				if (e->stall_id < tp->stall_id)
					tu_acct_fail(a, "tid %u: stall-end of stall %llu after stall %llu",
						     e->tid, (unsigned long long)e->stall_id,
						     (unsigned long long)tp->stall_id);
				tp->stall_id = e->stall_id;
				tp->idx = 63;	/* nothing more of this stall */
			}
			break;
		case STALLCAP_REC_USER_STACK: {
			struct tu_cookie *c = tu_acct_cookie(a, r->cookie, false);

			a->user_stacks++;
			if (!c) {
				tu_acct_fail(a, "USER_STACK with cookie %llu that no earlier sample "
					     "asked for", (unsigned long long)r->cookie);
				break;
			}
			if (c->delivered)
				tu_acct_fail(a, "two USER_STACK records with cookie %llu",
					     (unsigned long long)r->cookie);
			c->delivered = true;
			if (c->stall_id != r->stall_id || c->tid != r->tid ||
			    c->user_tag != r->user_tag)
				tu_acct_fail(a, "USER_STACK cookie %llu: stall %llu tid %u tag %#llx, "
					     "its sample: stall %llu tid %u tag %#llx",
					     (unsigned long long)r->cookie,
					     (unsigned long long)r->stall_id, r->tid,
					     (unsigned long long)r->user_tag,
					     (unsigned long long)c->stall_id, c->tid,
					     (unsigned long long)c->user_tag);
			break;
		}
		default:
			break;
		}
	}
	return a->err[0] ? -1 : 0;
}

/* Drain @s now and account what came; returns records consumed or -1. */
static inline int tu_drain(struct sc_session *s, struct tu_acct *a)
{
	struct sc_records rs = { 0 };
	int got = sc_ring_drain(s, &rs);

	if (tu_acct_feed(a, &rs) < 0)
		got = -1;
	sc_records_free(&rs);
	return got;
}

/*
 * Drain until the ring is empty (head == tail, nothing busy) or @timeout_ms
 * passed: at the end of a run, once every watch is gone, nothing may stay
 * busy.  Returns 0 when empty, -1 on a malformed ring or a timeout.
 */
static inline int tu_drain_all(struct sc_session *s, struct tu_acct *a, int timeout_ms)
{
	uint64_t end = sc_now_ns() + SC_MS(timeout_ms);

	for (;;) {
		if (tu_drain(s, a) < 0)
			return -1;
		if (__atomic_load_n(&s->ctl->data_head, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&s->ctl->data_tail, __ATOMIC_RELAXED))
			return 0;
		if (sc_now_ns() > end) {
			tu_acct_fail(a, "ring not empty %d ms after the last watch went: "
				     "a record stayed busy (head %llu tail %llu)", timeout_ms,
				     (unsigned long long)s->ctl->data_head,
				     (unsigned long long)s->ctl->data_tail);
			return -1;
		}
		sc_sleep_ms(2);
	}
}

/* Result of the final check, for the log. */
struct tu_verdict {
	bool exact;		/* no stall-end was lost: the invariant is exact */
	uint64_t lost_first_min, lost_first_max;
	uint64_t lost_ends, lost_samples;
	uint64_t deferred_asked, lost_deferred;
};

/*
 * The session's counters against everything delivered, once every watch of
 * the session is gone and the ring was drained to empty (tu_drain_all):
 *
 *   delivered SAMPLE records     == stats.samples
 *   delivered STALL_END records  == stats.stall_ends
 *   delivered USER_STACK records == stats.deferred
 *   ctl->lost == stats.lost (but see deferred stacks below),
 *   ctl->suppressed == stats.suppressed
 *   stats.watches == stats.armed == 0
 *
 * and the documented invariant stalls == first samples + stats.lost_first
 * + suppressed, exactly; stats.lost_deferred == deferred requests never
 * delivered.  stats.lost counts lost samples, stall-ends and deferred
 * user stacks; deferred requests are known exactly (a cookie each, on a
 * delivered sample), so their losses are too.  The ABI has no count of *which* records were lost, so the
 * lost first samples are derived: every reported (not suppressed) stall
 * gets exactly one stall-end (once its watch is gone) and at least one
 * sample, so with N = stalls - suppressed reported stalls and E stall-ends
 * delivered, N - E stall-ends were lost; a delivered stall-end without a
 * delivered sample_index 0 proves a lost first sample (K of them).  Then
 * lost first samples = N - first samples must lie in [K, K + (N - E)], and
 * the samples lost = stats.lost - (N - E) must cover them.  When no
 * stall-end was lost the check is exact: lost first = K, and the stall-ends'
 * nr_samples add up to stats.samples + lost samples.
 */
static inline int tu_acct_check_final(struct tu_acct *a, const struct stallcap_stats *st,
				      const struct stallcap_ring_ctl *ctl, struct tu_verdict *v)
{
	uint64_t n_reported, known_lost_first = 0, sum_end_nr = 0, lost_first;

	memset(v, 0, sizeof(*v));
	if (a->err[0])
		return -1;
	if (a->samples != st->samples)
		tu_acct_fail(a, "%llu SAMPLE records delivered, stats.samples %llu",
			     (unsigned long long)a->samples, (unsigned long long)st->samples);
	if (a->stall_ends != st->stall_ends)
		tu_acct_fail(a, "%llu STALL_END records delivered, stats.stall_ends %llu",
			     (unsigned long long)a->stall_ends,
			     (unsigned long long)st->stall_ends);
	if (a->user_stacks != st->deferred)
		tu_acct_fail(a, "%llu USER_STACK records delivered, stats.deferred %llu",
			     (unsigned long long)a->user_stacks,
			     (unsigned long long)st->deferred);
	/*
	 * Deferred user stacks: each request has its cookie, first seen on a
	 * delivered sample (a lost sample was never captured, so asked for
	 * nothing); each one ends as one USER_STACK record or one lost.
	 */
	v->deferred_asked = a->ck_n;
	if (a->user_stacks > a->ck_n)
		tu_acct_fail(a, "%llu USER_STACK records for %zu requests",
			     (unsigned long long)a->user_stacks, a->ck_n);
	else
		v->lost_deferred = a->ck_n - a->user_stacks;
	/*
	 * ctl->lost counts every record lost, a deferred user stack whose
	 * thread exited first included; stats.lost_deferred exactly those
	 * deferred requests that never became a USER_STACK record.
	 */
	if (ctl->lost != st->lost)
		tu_acct_fail(a, "ctl->lost %llu, stats.lost %llu (%llu deferred requests lost)",
			     (unsigned long long)ctl->lost, (unsigned long long)st->lost,
			     (unsigned long long)v->lost_deferred);
	if (st->lost_deferred != v->lost_deferred)
		tu_acct_fail(a, "stats.lost_deferred %llu, %llu deferred requests never delivered",
			     (unsigned long long)st->lost_deferred,
			     (unsigned long long)v->lost_deferred);
	if (st->lost_first + st->lost_deferred > st->lost)
		tu_acct_fail(a, "stats.lost_first %llu + lost_deferred %llu > lost %llu",
			     (unsigned long long)st->lost_first,
			     (unsigned long long)st->lost_deferred, (unsigned long long)st->lost);
	/* the invariant, exactly: every stall has its first sample somewhere */
	if (st->stalls != a->first_samples + st->lost_first + st->suppressed)
		tu_acct_fail(a, "stalls %llu != first samples delivered %llu + lost_first %llu "
			     "+ suppressed %llu", (unsigned long long)st->stalls,
			     (unsigned long long)a->first_samples,
			     (unsigned long long)st->lost_first,
			     (unsigned long long)st->suppressed);
	if (ctl->suppressed != st->suppressed)
		tu_acct_fail(a, "ctl->suppressed %llu, stats.suppressed %llu",
			     (unsigned long long)ctl->suppressed,
			     (unsigned long long)st->suppressed);
	if (st->watches || st->armed)
		tu_acct_fail(a, "stats.watches %llu, stats.armed %llu after every watch went",
			     (unsigned long long)st->watches, (unsigned long long)st->armed);
	if (st->suppressed > st->stalls)
		tu_acct_fail(a, "stats.suppressed %llu > stats.stalls %llu",
			     (unsigned long long)st->suppressed, (unsigned long long)st->stalls);
	if (a->max_stall_id > st->stalls)
		tu_acct_fail(a, "stall id %llu delivered, stats.stalls %llu",
			     (unsigned long long)a->max_stall_id, (unsigned long long)st->stalls);
	if (a->suppressed_in_records > st->suppressed)
		tu_acct_fail(a, "first samples report %llu suppressed stalls, stats %llu",
			     (unsigned long long)a->suppressed_in_records,
			     (unsigned long long)st->suppressed);
	if (a->err[0])
		return -1;

	n_reported = st->stalls - st->suppressed;
	if (a->stall_ends > n_reported) {
		tu_acct_fail(a, "%llu stall-ends for %llu reported stalls",
			     (unsigned long long)a->stall_ends, (unsigned long long)n_reported);
		return -1;
	}
	if (a->first_samples > n_reported) {
		tu_acct_fail(a, "%llu first samples for %llu reported stalls",
			     (unsigned long long)a->first_samples,
			     (unsigned long long)n_reported);
		return -1;
	}
	v->lost_ends = n_reported - a->stall_ends;
	for (size_t id = 1; id < a->cap; id++) {
		const struct tu_stall *s = &a->st[id];

		if (s->ended) {
			known_lost_first += !s->first;
			sum_end_nr += s->end_nr;
		} else if (s->samples && !v->lost_ends) {
			tu_acct_fail(a, "stall %zu: samples delivered but no stall-end, "
				     "and no stall-end was lost", id);
		}
	}
	if (v->lost_ends + v->lost_deferred > st->lost) {
		tu_acct_fail(a, "%llu stall-ends and %llu deferred stacks missing, stats.lost "
			     "only %llu", (unsigned long long)v->lost_ends,
			     (unsigned long long)v->lost_deferred, (unsigned long long)st->lost);
		return -1;
	}
	v->lost_samples = st->lost - v->lost_ends - v->lost_deferred;
	lost_first = n_reported - a->first_samples;
	if (lost_first != st->lost_first)
		tu_acct_fail(a, "%llu first samples missing, stats.lost_first %llu",
			     (unsigned long long)lost_first, (unsigned long long)st->lost_first);
	v->lost_first_min = known_lost_first;
	v->lost_first_max = known_lost_first + v->lost_ends;
	if (lost_first < v->lost_first_min || lost_first > v->lost_first_max)
		tu_acct_fail(a, "stalls %llu - suppressed %llu - first samples %llu = %llu lost "
			     "first samples, outside [%llu, %llu] derived from the stall-ends",
			     (unsigned long long)st->stalls, (unsigned long long)st->suppressed,
			     (unsigned long long)a->first_samples, (unsigned long long)lost_first,
			     (unsigned long long)v->lost_first_min,
			     (unsigned long long)v->lost_first_max);
	if (lost_first > v->lost_samples)
		tu_acct_fail(a, "%llu first samples lost, but only %llu samples lost",
			     (unsigned long long)lost_first, (unsigned long long)v->lost_samples);
	if (!v->lost_ends) {
		v->exact = true;
		if (sum_end_nr != st->samples + v->lost_samples)
			tu_acct_fail(a, "stall-ends count %llu samples taken; stats.samples %llu + "
				     "%llu lost = %llu", (unsigned long long)sum_end_nr,
				     (unsigned long long)st->samples,
				     (unsigned long long)v->lost_samples,
				     (unsigned long long)(st->samples + v->lost_samples));
	}
	return a->err[0] ? -1 : 0;
}

/* ------------------------------------------------------------------------
 * Waiting for counters (exit and reaping are asynchronous)
 * ------------------------------------------------------------------------
 */

/* Wait until field @off (a __u64 of struct stallcap_stats) equals @want. */
static inline uint64_t tu_wait_stat_at(int fd, uint32_t flags, size_t off, uint64_t want,
				       int timeout_ms)
{
	uint64_t end = sc_now_ns() + SC_MS(timeout_ms), v = ~0ULL;
	struct stallcap_stats st;

	for (;;) {
		if (!sc_get_stats(fd, &st, flags)) {
			memcpy(&v, (const char *)&st + off, sizeof(v));
			if (v == want)
				return v;
		}
		if (sc_now_ns() > end)
			return v;
		sc_sleep_ms(5);
	}
}

#define TU_WAIT_STAT(fd, flags, field, want, ms) \
	tu_wait_stat_at((fd), (flags), offsetof(struct stallcap_stats, field), (want), (ms))

/* ------------------------------------------------------------------------
 * Background load
 * ------------------------------------------------------------------------
 */

struct tu_load {
	pid_t pid[64];
	int n;
};

/* A process spinning forever (killed by tu_load_stop). */
static inline pid_t tu_spawn_hog(int cpu)
{
	pid_t pid = fork();

	if (pid == 0) {
		volatile unsigned long n = 0;

		prctl(PR_SET_NAME, "sc-hog", 0, 0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (cpu >= 0)
			sc_pin_self(cpu);
		for (;;)
			n++;
	}
	return pid;
}

/* A process forking short-lived children as fast as it can. */
static inline pid_t tu_spawn_fork_storm(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_NAME, "sc-forkstorm", 0, 0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		for (;;) {
			pid_t c = fork();

			if (c == 0)
				_exit(0);
			if (c > 0)
				waitpid(c, NULL, 0);
			else
				sc_sleep_ms(1);
		}
	}
	return pid;
}

/* A CPU hog per CPU this process may use, and @storms fork storms. */
static inline void tu_load_start(struct tu_load *l, int storms)
{
	int ncpu = sc_nr_cpus_allowed();

	memset(l, 0, sizeof(*l));
	for (int i = 0; i < ncpu && l->n < 32; i++)
		l->pid[l->n++] = tu_spawn_hog(-1);
	for (int i = 0; i < storms && l->n < 64; i++)
		l->pid[l->n++] = tu_spawn_fork_storm();
}

static inline void tu_load_stop(struct tu_load *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->pid[i] > 0)
			kill(l->pid[i], SIGKILL);
	for (int i = 0; i < l->n; i++)
		if (l->pid[i] > 0)
			waitpid(l->pid[i], NULL, 0);
	l->n = 0;
}

/* ------------------------------------------------------------------------
 * Module parameters and privileges
 * ------------------------------------------------------------------------
 */

#define TU_PARAM_DIR	"/sys/module/stallcap/parameters/"

/* A module parameter as an unsigned number; -1 if unreadable. */
static inline long long tu_param_read(const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), TU_PARAM_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Set a module parameter; 0 or -errno. */
static inline int tu_param_write(const char *name, long long v)
{
	char path[256];

	snprintf(path, sizeof(path), TU_PARAM_DIR "%s", name);
	return sc_write_num(path, v);
}

#define TU_USER_UID	1000	/* "user" in the guest's /etc/passwd */
#define TU_USER_GID	1000
#define TU_NOBODY_UID	65534

/*
 * Become @uid/@gid for good: no supplementary groups, no capabilities left
 * (setresuid() from root to non-zero uids clears them all).  0 or -errno.
 */
static inline int tu_drop_privileges(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);

	/* the user's groups from /etc/group: user is in group stallcap */
	if ((pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL)) ||
	    setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	if (geteuid() != uid || getegid() != gid)
		return -EPERM;
	/* dumpable, as a process the user started would be */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return 0;
}

/* A check in a child of tu_run_as(): print why and return the line number. */
#define TU_CHK(cond, ...) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "#   uid %d, line %d: ", (int)getuid(), __LINE__);	\
		fprintf(stderr, __VA_ARGS__);					\
		fputc('\n', stderr);						\
		return __LINE__;						\
	}									\
} while (0)

typedef int (*tu_as_fn)(void *arg);

/* Run @fn in a child as @uid/@gid; its result (0 ok), or 255 if it died. */
static inline int tu_run_as(uid_t uid, gid_t gid, tu_as_fn fn, void *arg)
{
	int status, ret;
	pid_t pid;

	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 254;
	if (pid == 0) {
		ret = tu_drop_privileges(uid, gid);
		if (ret) {
			fprintf(stderr, "#   cannot become uid %d: %s\n", (int)uid, strerror(-ret));
			_exit(253);
		}
		ret = fn(arg);
		fflush(stderr);
		_exit(ret ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 254;
	if (!WIFEXITED(status)) {
		fprintf(stderr, "#   child as uid %d died: status %#x\n", (int)uid, status);
		return 255;
	}
	return WEXITSTATUS(status);
}

/* ------------------------------------------------------------------------
 * "A normal capture still works"
 * ------------------------------------------------------------------------
 */

struct tu_spinner {
	struct sc_session *s;
	uint64_t timeout;
	uint64_t tag;
	struct sc_stopper *st;
	uint64_t spin_at;	/* when the spin began */
	pid_t tid;
	int ret;
};

SC_NOINLINE void *tu_spinner_main(void *arg)
{
	struct tu_spinner *sp = arg;

	sp->tid = sc_gettid();
	sp->ret = sc_arm(sp->s->fd, sp->timeout, 0, sp->tag);
	if (sp->ret)
		return NULL;
	sp->spin_at = sc_now_ns();
	spin_in_user_caller(&sp->st->stop);
	sp->ret = sc_release(sp->s->fd);
	return NULL;
}

#define TU_CHECK_SAMPLES	3

/*
 * A spinner that makes no system call enters the kernel only through an
 * interrupt: a sample in kernel mode outside the handler itself is on the
 * interrupt's way back to user space (irqentry_exit_to_user_mode()
 * rescheduling after a reschedule IPI, say), under an asm_* entry frame.
 */
static inline bool tu_entered_by_interrupt(const struct stallcap_sample *r)
{
	static struct sc_ksyms ks;
	static int loaded;

	if (!loaded)
		loaded = sc_ksyms_load(&ks) ? -1 : 1;
	return loaded > 0 && sc_kstack_under_interrupt(&ks, r);
}

/*
 * Where @r's user frames are: in @r, or, for a sample whose user stack was
 * deferred (DEFER_PENDING: an NMI that found interrupts off in the kernel),
 * in the USER_STACK record of its cookie, if it came.
 */
static inline const struct stallcap_sample *tu_user_stack_of(const struct sc_records *rs,
							      const struct stallcap_sample *r)
{
	if (!(r->flags & STALLCAP_SAMPLE_DEFER_PENDING))
		return r;
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *u = (const void *)rs->rec[i];

		if (u->hdr.type == STALLCAP_REC_USER_STACK && u->cookie == r->cookie)
			return u;
	}
	return r;
}

/*
 * One try of tu_capture_check(): false when the deadline passed before the
 * spin began (a slow kernel's return from ARM, or an interrupt between the
 * clock read and the spin), or no sample found the thread in user mode (each
 * preempted, or in an interrupt on top of its spin): a try that says
 * nothing.
 */
static inline bool tu_capture_check_once(char *why, size_t len)
{
	const uint64_t tag = 0x746f727475726521ULL;
	struct sc_stopper st = { .cpu = -1 };
	struct sc_opts o = { .max_samples = TU_CHECK_SAMPLES + 1 };
	struct sc_session s;
	struct sc_records rs = { 0 };
	struct tu_spinner sp = { .s = &s, .tag = tag, .st = &st };
	const struct stallcap_sample *r, *first = NULL;
	unsigned int in_user = 0, n = 0;
	bool early = false;
	pthread_t th;
	int ret;

	why[0] = 0;
	ret = sc_session_setup(&s, &o);
	if (ret) {
		snprintf(why, len, "session setup: %s", strerror(-ret));
		return true;
	}
	sp.timeout = SC_MS(20);
	if (sp.timeout < s.info.min_deadline_ns)
		sp.timeout = s.info.min_deadline_ns;
	if (sc_stopper_start(&st, s.fd, TU_CHECK_SAMPLES, SC_WAIT_MS) ||
	    pthread_create(&th, NULL, tu_spinner_main, &sp)) {
		snprintf(why, len, "cannot start threads");
		sc_session_close(&s);
		return true;
	}
	pthread_join(th, NULL);
	sc_stopper_join(&st);
	if (sp.ret)
		snprintf(why, len, "ARM/RELEASE failed: %s", strerror(errno));
	else if (st.timed_out)
		snprintf(why, len, "not %d samples within %d ms", TU_CHECK_SAMPLES, SC_WAIT_MS);
	else if (sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) < 1)
		snprintf(why, len, "no stall-end (%s)", rs.err[0] ? rs.err : "none came");
	else if (!(first = sc_first_sample_of(&rs, sp.tid)))
		snprintf(why, len, "no first sample of the spinning thread");
	for (size_t i = 0; first && !why[0] && i < rs.n; i++) {
		r = (const void *)rs.rec[i];
		if (r->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		n++;
		if (r->capture_ns < sp.spin_at && r->tid == (uint32_t)sp.tid &&
		    r->deadline_ns <= r->capture_ns) {
			snprintf(why, len, "sample %u taken %llu us before the spin began",
				 r->sample_index,
				 (unsigned long long)(sp.spin_at - r->capture_ns) / 1000);
			early = true;
		} else if (r->tid == (uint32_t)sp.tid && r->capture_ns < st.stop_ns &&
			   (sc_ip_in_fn(sc_regs(r)->ip, tu_spinner_main) ||
			    sc_ip_in_fn(sc_regs(r)->ip, spin_in_user_caller))) {
			/*
			 * after the clock read but not in the spin yet: an
			 * interrupt there outlasted the deadline (CI48, debug:
			 * a timer softirq's wake-up with interrupts off)
			 */
			snprintf(why, len, "sample %u taken on the way into the spin (%s)",
				 r->sample_index, sc_usym_name(sc_regs(r)->ip) ?: "?");
			early = true;
		} else if (r->tid != (uint32_t)sp.tid || r->user_tag != tag || r->stall_id != first->stall_id)
			snprintf(why, len, "sample of tid %u tag %#llx stall %llu", r->tid,
				 (unsigned long long)r->user_tag, (unsigned long long)r->stall_id);
		else if (r->flags & SC_SAMPLE_ABANDONED)
			snprintf(why, len, "sample %u abandoned", r->sample_index);
		else if (r->capture_ns >= st.stop_ns)
			continue;	/* after the spin: maybe in its RELEASE */
		else if (!sc_ip_in_fn(sc_regs(r)->ip, spin_in_user))
			snprintf(why, len, "sample %u: regs.ip %#llx not in spin_in_user (%s)",
				 r->sample_index, (unsigned long long)sc_regs(r)->ip,
				 sc_usym_name(sc_regs(r)->ip) ?: "?");
		else if (r->path == STALLCAP_PATH_BLOCKED) {
			/* preempted on its way back to user space: regs only */
			if (r->state != STALLCAP_STATE_RUNNABLE)
				snprintf(why, len, "sample %u: read remotely, state %u", r->sample_index,
					 r->state);
		} else if (sc_ustack_find(tu_user_stack_of(&rs, r), spin_in_user_caller) < 1)
			snprintf(why, len, "sample %u: spin_in_user_caller not among the user frames",
				 r->sample_index);
		else if (!(r->flags & STALLCAP_SAMPLE_USER_MODE) &&
			 !(r->flags & (STALLCAP_SAMPLE_IN_HARDIRQ | STALLCAP_SAMPLE_IN_SOFTIRQ)) &&
			 !tu_entered_by_interrupt(r))
			snprintf(why, len, "sample %u: kernel mode, not in an interrupt (flags %#x)",
				 r->sample_index, r->flags);
		in_user += !!(r->flags & STALLCAP_SAMPLE_USER_MODE);
	}
	if (first && !why[0] && n < TU_CHECK_SAMPLES)
		snprintf(why, len, "%u samples delivered, %d taken", n, TU_CHECK_SAMPLES);
	if (first && !why[0] && !in_user) {
		snprintf(why, len, "no sample in user mode out of %u", n);
		/*
		 * every one preempted, runnable (CI55's debug guest, busy
		 * after a fuzz), or taken in an interrupt on top of the spin
		 * (CI118's: a tick's softirq, then ksoftirqd, holding the
		 * thread's CPU): each checked above, a try that says nothing
		 * either; three such tries fail the check
		 */
		early = true;
	}
	if (why[0] && !early)
		sc_log_records(NULL, &rs);
	sc_records_free(&rs);
	sc_session_close(&s);
	return !early;
}

/*
 * Is a normal capture still right (after a fuzz or a torture run)?  A fresh
 * session, a thread spinning in spin_in_user() past a 20 ms deadline for
 * TU_CHECK_SAMPLES samples, checked: the thread's tid and tag, one stall,
 * user registers in spin_in_user with spin_in_user_caller among the user
 * frames, each taken in user mode or in an interrupt on top of it (under
 * TCG a tick's softirq often is) or on that interrupt's way back to user
 * space, or read remotely while preempted (RUNNABLE: registers only, the
 * stack comes deferred), at least one in user mode; then its stall-end.
 * A try whose deadline passed before the spin began (a slow kernel's
 * return from ARM) is made again, up to 3 tries.  Returns NULL when all is
 * well, else why not (in @why).
 */
static inline const char *tu_capture_check(char *why, size_t len)
{
	for (int attempt = 0; attempt < 3; attempt++)
		if (tu_capture_check_once(why, len))
			break;
	return why[0] ? why : NULL;
}

#endif /* STALLCAP_TORTURE_UTIL_H */
