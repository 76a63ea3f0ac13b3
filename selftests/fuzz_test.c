// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl and mmap fuzzer: random commands, sizes, flags, reserved fields,
 * pointers and mmap arguments, from one thread per CPU at once,
 * on sessions shared by all threads and on private ones that are closed
 * and reopened.  Every call must return success or an errno documented for
 * that call in uapi/linux/stallcap.h (the tables below), and, where the
 * arguments decide it, the errno they call for: EFAULT for a pointer that
 * cannot be read, EINVAL for a size below VER0, ENOTTY for an unknown
 * command, ENOENT exactly when the calling thread has no watch, success for
 * a well-formed request, and so on.  A model of each thread's watches and of
 * each session's frozen ring layout makes the expectations exact.
 *
 * Pointers: NULL, unmapped, PROT_NONE, kernel (0xffffffff81000000, the
 * direct map), non-canonical, misaligned, straddling into a PROT_NONE page,
 * read-only memory (output ioctls must fail with EFAULT), and pointers into
 * a ring or slot mapping itself.  Sizes: 0, below VER0, VER0, above it with
 * a zero or non-zero tail, PAGE_SIZE, above PAGE_SIZE, huge, for every
 * struct ioctl (GET_* included); half the commands carry random size bits,
 * which the module ignores.  mmap: the two
 * offsets and random ones (unaligned, overflowing), lengths from 0 to huge,
 * PROT_EXEC, MAP_PRIVATE, MAP_SHARED_VALIDATE with unknown flags, read-only
 * file descriptors; the data_tail of mapped rings gets random values.
 *
 * mmap(2) itself rejects some arguments before the module sees them: those
 * errnos (EOVERFLOW, EACCES, EPERM for PROT_EXEC on a noexec mount,
 * EOPNOTSUPP for MAP_SHARED_VALIDATE) are allowed only for the arguments
 * that cause them.
 *
 * Calls: 1,000,000 by default (make check), within at most 240 s of guest
 * time; more in the long form: STALLCAP_FUZZ_CALLS=<n> and
 * STALLCAP_FUZZ_SECONDS=<s> (environment or guest kernel command line).
 * STALLCAP_SEED=<n> replays the random choices.  The rate is printed.
 *
 * After the fuzzing, in the same test: every watch released, session and
 * global counts back, and a normal capture (spin_in_user past a deadline)
 * is still captured correctly.
 *
 * Targeted tests: a failed heartbeat ARM must change nothing (uapi: "a
 * failing ioctl changes nothing"); SET_CONFIG(GLOBAL), which creates the
 * ring, creates it with the layout it sets; a reader writing into a record
 * that is being filled must not make the kernel write outside that record.
 */
#include <sys/wait.h>

#include "torture_util.h"

#include "sc_harness.h"

#define DEFAULT_CALLS		1000000ULL
#define DEFAULT_SECONDS		240
#define NR_SHARED		3
#define NR_PRIV			2
#define NR_SLOTS		(NR_SHARED + NR_PRIV)
#define HOUR_NS			(3600ULL * SC_NSEC_PER_SEC)
#define MAX_RING_FUZZ		(1U << 20)	/* rings the fuzzer asks for */

#define E(x)	TU_E(x)
/* errnos documented for every ioctl */
#define COMMON	(E(EFAULT) | E(EINVAL) | E(E2BIG) | E(ENOMEM) | E(ENOTTY))

/* The documented results of each command (uapi/linux/stallcap.h). */
static const struct {
	unsigned long cmd;
	const char *name;
	tu_errset doc;
} cmds[] = {
	{ STALLCAP_IOC_ARM, "ARM", TU_OK | COMMON | E(ERANGE) | E(ENOSPC) | E(ESRCH) |
	  E(EOPNOTSUPP) },
	{ STALLCAP_IOC_REARM, "REARM", TU_OK | E(ENOENT) | E(ERANGE) | E(EINVAL) | E(ENOMEM) },
	{ STALLCAP_IOC_DISARM, "DISARM", TU_OK | E(ENOENT) | E(EINVAL) | E(ENOMEM) },
	{ STALLCAP_IOC_RELEASE, "RELEASE", TU_OK | E(ENOENT) | E(EINVAL) | E(ENOMEM) },
	{ STALLCAP_IOC_SET_CONFIG, "SET_CONFIG", TU_OK | COMMON | E(EBUSY) | E(ERANGE) | E(EPERM) },
	{ STALLCAP_IOC_GET_CONFIG, "GET_CONFIG", TU_OK | COMMON },
	{ STALLCAP_IOC_GET_STATS, "GET_STATS", TU_OK | COMMON },
	{ STALLCAP_IOC_GET_INFO, "GET_INFO", TU_OK | COMMON },
};
enum { C_ARM, C_REARM, C_DISARM, C_RELEASE, C_SET_CONFIG, C_GET_CONFIG, C_GET_STATS,
       C_GET_INFO, C_NR, C_RANDOM = C_NR, C_MMAP, C_MUNMAP, C_COUNT };

static const char *const cname[C_COUNT] = {
	"ARM", "REARM", "DISARM", "RELEASE", "SET_CONFIG", "GET_CONFIG", "GET_STATS",
	"GET_INFO", "random", "mmap", "munmap",
};

/* mmap(2): documented EINVAL and ENOMEM; the rest only for their causes */
#define MMAP_DOC	(TU_OK | E(EINVAL) | E(ENOMEM))

/* A session the fuzzer calls into, as each thread models it. */
struct fsess {
	struct sc_session s;
	int ro_fd;		/* the device opened O_RDONLY: another session */
	/* frozen once the ring exists: the model needs them for mmap/EBUSY */
	bool ring;
	uint32_t ring_bytes, user_stack_bytes, slots;
	void *ring_map;		/* a RW mapping of control page + data */
	size_t ring_map_len;
};

struct fz {
	uint64_t seed;
	unsigned long long target_calls;
	unsigned long long max_seconds;
	uint64_t end_ns;
	size_t page;
	bool root, have_hb, have_defer, have_tsc;
	uint64_t min_deadline;
	uint32_t max_ring;
	pthread_mutex_t shared_lock;	/* SET_CONFIG on shared sessions */
	struct fsess shared[NR_SHARED];
	/* special memory */
	unsigned char *ro;		/* 2 read-only pages, then PROT_NONE */
	unsigned char *none;		/* a PROT_NONE page */
	unsigned char *hole;		/* an unmapped page */
	/* results */
	unsigned long long calls, per_cmd[C_COUNT], ok[C_COUNT];
	volatile int stop;
	pthread_mutex_t err_lock;
	unsigned int nerr;
	char err[512];
};

struct fthread {
	struct fz *f;
	int id;
	pthread_t th;
	struct tu_rng rng;
	unsigned char *buf;	/* 3 RW pages, then a PROT_NONE page */
	struct fsess priv[NR_PRIV];
	/* the model: this thread's watch in each session slot */
	bool has[NR_SLOTS], hb[NR_SLOTS], unsure[NR_SLOTS];
	unsigned long long calls;
};

static void fz_fail(struct fz *f, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&f->err_lock);
	if (f->nerr++ < 10)
		fprintf(stderr, "# fuzz error: %s\n", msg);
	if (!f->err[0])
		snprintf(f->err, sizeof(f->err), "%s", msg);
	pthread_mutex_unlock(&f->err_lock);
}

static struct fsess *slot_sess(struct fthread *t, int slot)
{
	return slot < NR_SHARED ? &t->f->shared[slot] : &t->priv[slot - NR_SHARED];
}

/* Judge one result: documented for the call, and what the arguments ask. */
static void judge(struct fthread *t, int c, const char *what, long ret, int err,
		  tu_errset doc, tu_errset want)
{
	struct fz *f = t->f;
	char b1[160], b2[160];

	t->calls++;
	__atomic_fetch_add(&f->per_cmd[c], 1, __ATOMIC_RELAXED);
	if (ret >= 0)
		__atomic_fetch_add(&f->ok[c], 1, __ATOMIC_RELAXED);
	if (!tu_errset_has(doc, ret, err))
		fz_fail(f, "%s (%s): returned %ld errno %s, not documented (%s)", cname[c], what,
			ret, ret < 0 ? strerrorname_np(err) ?: "?" : "-",
			tu_errset_str(doc, b1, sizeof(b1)));
	else if (!tu_errset_has(want, ret, err))
		fz_fail(f, "%s (%s): returned %ld errno %s, the arguments call for %s", cname[c],
			what, ret, ret < 0 ? strerrorname_np(err) ?: "?" : "-",
			tu_errset_str(want, b2, sizeof(b2)));
}

/* ------------------------------------------------------------------------
 * Pointers
 * ------------------------------------------------------------------------
 */

enum ptr_kind { P_GOOD, P_STRADDLE, P_BAD, P_RO, P_RING };

struct arg {
	enum ptr_kind kind;
	void *p;		/* what is passed */
	size_t avail;		/* P_GOOD/P_STRADDLE: bytes accessible from p */
	const char *desc;
};

static const uint64_t bad_ptrs[] = {
	0, 1, 0xffffffff81000000ULL, 0xffff888000000000ULL, 0xffffffffff600000ULL,
	0x0000800000000000ULL, 0x8000000000000000ULL, 0xfffffffffffffff0ULL,
};

/* Where the argument struct of a pointer ioctl goes. */
static void pick_ptr(struct fthread *t, struct arg *a, bool for_output)
{
	struct fz *f = t->f;
	struct tu_rng *r = &t->rng;
	unsigned int p = tu_below(r, 100);
	size_t misalign = tu_pct(r, 70) ? 0 : tu_range(r, 1, 7);

	memset(a, 0, sizeof(*a));
	if (p < 70) {
		a->kind = P_GOOD;
		a->p = t->buf + misalign;
		a->avail = 3 * f->page - misalign;
		a->desc = misalign ? "misaligned" : "good";
	} else if (p < 77) {
		/* up to the PROT_NONE page */
		size_t left = tu_below(r, 8) ? tu_range(r, 1, 600) : tu_range(r, 0, 3);

		a->kind = P_STRADDLE;
		a->p = t->buf + 3 * f->page - left;
		a->avail = left;
		a->desc = "straddling a PROT_NONE page";
	} else if (p < 87) {
		static const char *const descs[] = { "NULL", "1", "kernel text", "direct map",
						     "vsyscall", "non-canonical", "non-canonical",
						     "top" };
		unsigned int i = tu_below(r, 11);

		a->kind = P_BAD;
		if (i < 8) {
			a->p = (void *)(uintptr_t)bad_ptrs[i];
			a->desc = descs[i];
		} else if (i == 8) {
			a->p = f->none + misalign;
			a->desc = "PROT_NONE";
		} else {
			a->p = f->hole + tu_below(r, f->page - 8);
			a->desc = "unmapped (below mmap_min_addr)";
		}
	} else if (p < 94) {
		a->kind = P_RO;
		a->p = f->ro + (tu_pct(r, 50) ? 0 : f->page / 2) + misalign;
		a->desc = "read-only";
	} else {
		/* into a ring (control page or data) or a beat area */
		struct fsess *s = slot_sess(t, tu_below(r, NR_SLOTS));

		if (!s->ring_map || s->ring_map_len < 3 * f->page) {
			a->kind = P_GOOD;
			a->p = t->buf;
			a->avail = 3 * f->page;
			a->desc = "good";
			return;
		}
		a->kind = P_RING;
		a->p = (unsigned char *)s->ring_map +
		       (tu_below(r, s->ring_map_len - 2 * f->page) & ~7UL) + misalign;
		a->desc = "into a ring";
	}
	(void)for_output;
}

/* A size field for a struct the module knows as @ksize bytes. */
static uint32_t pick_size(struct fthread *t, uint32_t ksize, bool *tail_nonzero)
{
	struct tu_rng *r = &t->rng;
	unsigned int p = tu_below(r, 100);

	*tail_nonzero = false;
	if (p < 60)
		return ksize;
	if (p < 66)
		return 0;
	if (p < 74)
		return tu_range(r, 1, ksize - 1);
	if (p < 86) {
		*tail_nonzero = tu_pct(r, 50);
		return ksize + tu_range(r, 1, 64) * (tu_pct(r, 50) ? 8 : 1);
	}
	if (p < 90)
		return t->f->page;
	if (p < 94)
		return t->f->page + 8;
	if (p < 97)
		return tu_pct(r, 50) ? 0xffffffffU : 0x80000000U;
	return (uint32_t)tu_next(r);
}

/* ------------------------------------------------------------------------
 * Argument contents and their expected results
 * ------------------------------------------------------------------------
 */

static uint64_t pick_timeout(struct fthread *t)
{
	struct fz *f = t->f;
	struct tu_rng *r = &t->rng;

	switch (tu_below(r, 10)) {
	case 0:
		return 0;
	case 1:
		return f->min_deadline - 1;
	case 2:
		return f->min_deadline;
	case 3:
		return HOUR_NS + tu_range(r, 0, 1);
	case 4:
		return tu_next(r);
	case 5:
		return tu_range(r, SC_MS(100), HOUR_NS);
	case 6:
		return tu_range(r, f->min_deadline, SC_MS(20));
	default:
		/* mostly beyond the next call: captures are costly under TCG */
		return tu_range(r, SC_MS(20), SC_MS(500));
	}
}

static bool timeout_ok(struct fz *f, uint64_t v)
{
	return v >= f->min_deadline && v <= HOUR_NS;
}

/* Fill an ARM argument; returns the errors its contents call for (0: none). */
#define SLOT_KINDS	(STALLCAP_ARM_HEARTBEAT | STALLCAP_ARM_SHARED_DEADLINE)

/*
 * The module matches commands by type, number and direction: half the time
 * the size bits say something else (a random size, or 0), with the same
 * outcome expected.
 */
static unsigned int fz_cmd(struct fthread *t, unsigned int cmd)
{
	if (tu_pct(&t->rng, 50))
		return cmd;
	return (cmd & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
	       ((unsigned int)tu_below(&t->rng, _IOC_SIZEMASK + 1) << _IOC_SIZESHIFT);
}

static tu_errset fill_arm(struct fthread *t, struct stallcap_arm *a, uint64_t *now_out)
{
	struct fz *f = t->f;
	struct tu_rng *r = &t->rng;
	uint64_t now = sc_now_ns();
	tu_errset e = 0;
	uint32_t fl;

	switch (tu_below(r, 12)) {
	case 0:
		fl = (uint32_t)tu_next(r);
		break;
	case 1:
		fl = 1U << tu_below(r, 32);
		break;
	case 2:
	case 3:
		fl = tu_below(r, 32);		/* every combination of the known flags */
		break;
	case 7:
		fl = STALLCAP_ARM_SHARED_DEADLINE | (tu_pct(r, 30) ? STALLCAP_ARM_ABSOLUTE : 0) |
		     (tu_pct(r, 40) ? STALLCAP_ARM_DEADLINE_TSC : 0);
		break;
	case 4:
		fl = STALLCAP_ARM_ABSOLUTE;
		break;
	case 5:
		fl = STALLCAP_ARM_CPUTIME;
		break;
	case 6:
		fl = STALLCAP_ARM_HEARTBEAT;
		break;
	default:
		fl = 0;
	}
	a->flags = fl;
	a->user_tag = tu_next(r);
	a->__reserved = tu_pct(r, 8) ? tu_next(r) | 1 : 0;
	if (fl & STALLCAP_ARM_ABSOLUTE) {
		switch (tu_below(r, 6)) {
		case 0:
			a->timeout_ns = now - tu_below(r, SC_MS(50));	/* just past */
			break;
		case 1:
			a->timeout_ns = now > HOUR_NS + SC_MS(10) ? now - HOUR_NS - SC_MS(10) : 0;
			break;
		case 2:
			a->timeout_ns = now + HOUR_NS + SC_MS(100);
			break;
		case 3:
			a->timeout_ns = tu_next(r);
			break;
		default:
			a->timeout_ns = now + tu_range(r, 0, SC_MS(30));
		}
	} else {
		a->timeout_ns = pick_timeout(t);
	}
	/* what the contents call for */
	if ((fl & ~STALLCAP_ARM_FLAGS_ALL) || a->__reserved ||
	    ((fl & STALLCAP_ARM_CPUTIME) && (fl & (STALLCAP_ARM_ABSOLUTE | SLOT_KINDS))) ||
	    ((fl & STALLCAP_ARM_ABSOLUTE) && (fl & STALLCAP_ARM_HEARTBEAT)) ||
	    (fl & SLOT_KINDS) == SLOT_KINDS ||
	    ((fl & STALLCAP_ARM_DEADLINE_TSC) && !(fl & STALLCAP_ARM_SHARED_DEADLINE)))
		e |= E(EINVAL);
	/* checked before the timeout: EOPNOTSUPP comes before ERANGE */
	else if ((fl & STALLCAP_ARM_DEADLINE_TSC) && !f->have_tsc)
		e |= E(EOPNOTSUPP);
	if (fl & STALLCAP_ARM_ABSOLUTE) {
		/* the module reads the clock a little later: allow a margin */
		uint64_t v = a->timeout_ns;

		if (v > now + HOUR_NS + SC_MS(50) || (now > HOUR_NS + SC_MS(50) && v < now - HOUR_NS - SC_MS(50)) ||
		    v > UINT64_MAX - HOUR_NS)
			e |= E(ERANGE);
		else if (v > now + HOUR_NS - SC_MS(50) || (now > HOUR_NS && v < now - HOUR_NS + SC_MS(50)))
			e |= E(ERANGE) | TU_OK;	/* at the edge: either */
	} else if (!timeout_ok(f, a->timeout_ns)) {
		e |= E(ERANGE);
	}
	if ((fl & STALLCAP_ARM_HEARTBEAT) && !f->have_hb && !(e & ~TU_OK))
		e |= E(EOPNOTSUPP);
	*now_out = now;
	return e;
}

struct cfg_expect {
	tu_errset e;
	uint32_t ring_bytes, user_stack_bytes, slots;	/* defaults resolved */
	bool global;
};

static uint32_t pick_pow2(struct tu_rng *r, unsigned int lo_shift, unsigned int hi_shift)
{
	return 1U << tu_range(r, lo_shift, hi_shift);
}

static tu_errset fill_config(struct fthread *t, struct fsess *s, struct stallcap_config *c,
			     struct cfg_expect *x)
{
	struct fz *f = t->f;
	struct tu_rng *r = &t->rng;
	uint32_t rb, usb, bs, ms;
	uint64_t cap;
	tu_errset e = 0;

	c->flags = tu_pct(r, 75) ? 0 : tu_pct(r, 50) ? STALLCAP_CFG_DEFER_USER :
		   tu_pct(r, 30) ? STALLCAP_CFG_GLOBAL : (uint32_t)tu_next(r);
	/* mostly the session's own layout, so that many calls succeed */
	if (tu_pct(r, 60) && s->ring) {
		c->ring_bytes = s->ring_bytes;
		c->user_stack_bytes = s->user_stack_bytes;
		c->slots = s->slots;
	} else {
		switch (tu_below(r, 5)) {
		case 0:
			c->ring_bytes = 0;
			break;
		case 1:
			c->ring_bytes = (uint32_t)tu_next(r);
			break;
		default:
			c->ring_bytes = pick_pow2(r, 12, 20);
		}
		/* mostly small: under TCG a capture copying 64 KiB is slow */
		switch (tu_below(r, 10)) {
		case 0:
			c->user_stack_bytes = 0;	/* the default, 16 KiB */
			break;
		case 1:
			c->user_stack_bytes = (uint32_t)tu_range(r, 0, 70000);
			break;
		case 2:
		case 3:
			c->user_stack_bytes = tu_range(r, 0, 1024) * 8;
			break;
		default:
			c->user_stack_bytes = tu_range(r, 1, 64) * 8;
		}
		switch (tu_below(r, 5)) {
		case 0:
			c->slots = (uint32_t)tu_range(r, 0, 5000);
			break;
		default:
			c->slots = tu_range(r, 0, 8) * 64;
		}
	}
	c->max_samples = tu_pct(r, 60) ? tu_range(r, 0, 8) : tu_pct(r, 50) ? tu_range(r, 9, 64) :
			 (uint32_t)tu_range(r, 65, 1000);
	switch (tu_below(r, 5)) {
	case 0:
		c->sample_cap_ns = 0;
		break;
	case 1:
		c->sample_cap_ns = tu_below(r, f->min_deadline);
		break;
	case 2:
		c->sample_cap_ns = tu_next(r);
		break;
	default:
		c->sample_cap_ns = tu_range(r, f->min_deadline, SC_MS(50));
	}
	c->rate_limit = tu_pct(r, 70) ? 0 : (uint32_t)tu_next(r) % 1000;
	for (int i = 0; i < 5; i++)
		c->__reserved[i] = tu_pct(r, 3) ? (uint32_t)tu_next(r) | 1 : 0;

	/* what the contents call for, defaults resolved as the module does */
	rb = c->ring_bytes ? c->ring_bytes : 1U << 20;
	usb = c->user_stack_bytes ? c->user_stack_bytes : 16384;
	bs = c->slots ? c->slots : 64;
	ms = c->max_samples;
	cap = c->sample_cap_ns ? c->sample_cap_ns : SC_NSEC_PER_SEC;
	if ((c->flags & ~STALLCAP_CFG_FLAGS_ALL) || c->__reserved[0] || c->__reserved[1] ||
	    c->__reserved[2] || c->__reserved[3] || c->__reserved[4])
		e |= E(EINVAL);
	/* a module that cannot defer (no task_work_add() export) */
	if ((c->flags & STALLCAP_CFG_DEFER_USER) && !f->have_defer)
		e |= E(EINVAL);
	if ((c->flags & STALLCAP_CFG_GLOBAL) && !f->root)
		e |= E(EPERM);
	if (usb > STALLCAP_MAX_USER_STACK || usb % 8)
		e |= E(ERANGE);
	if ((rb & (rb - 1)) || rb < f->page || rb > f->max_ring ||
	    rb < 4 * STALLCAP_RECORD_MAX_BYTES(usb))
		e |= E(ERANGE);
	if (bs % 64 || bs > 4096)
		e |= E(ERANGE);
	if (ms > 64)
		e |= E(ERANGE);
	if (cap < f->min_deadline)
		e |= E(ERANGE);
	if (s->ring && (rb != s->ring_bytes || usb != s->user_stack_bytes || bs != s->slots))
		e |= E(EBUSY);
	x->e = e;
	x->ring_bytes = rb;
	x->user_stack_bytes = usb;
	x->slots = bs;
	x->global = c->flags & STALLCAP_CFG_GLOBAL;
	return e;
}

/*
 * The result a pointer ioctl calls for, from its pointer and size, before
 * its contents: @in the struct is read, else written (GET_*: the size
 * field is read first, GET_STATS also reads its flags).  @content: what the
 * contents call for when the struct is read whole.  Returns the set.
 */
static tu_errset expect_ptr(struct fz *f, const struct arg *a, uint32_t size, bool tail_nonzero,
			    uint32_t ksize, bool in, tu_errset content, tu_errset doc)
{
	size_t need;

	switch (a->kind) {
	case P_BAD:
		return E(EFAULT);
	case P_RO:
		/* the contents are what the read-only page holds: anything */
		return in ? doc & ~E(EFAULT) : E(EFAULT) | E(EINVAL);
	case P_RING:
		return doc & ~E(EFAULT);
	default:
		break;
	}
	if (a->avail < 4)
		return E(EFAULT);
	if (size < ksize)
		return E(EINVAL) | (a->avail < 8 ? E(EFAULT) : 0);
	if (in) {
		tu_errset e;

		if (size > f->page)
			return E(E2BIG);	/* uapi: "or larger than a page" */
		need = size;
		if (need > a->avail)
			return E(EFAULT) | E(E2BIG) | content;
		e = tail_nonzero ? E(E2BIG) : 0;
		if (e)
			return e | content;	/* either check may come first */
		return content ? content : TU_OK;
	}
	need = ksize < size ? ksize : size;
	if (need > a->avail)
		return E(EFAULT) | content;
	return content ? content : TU_OK;
}

/* Put the size field and a struct of @len bytes (+ tail) at @a. */
static void place(struct fthread *t, const struct arg *a, const void *st, size_t len,
		  uint32_t size, bool tail_nonzero)
{
	size_t room = a->avail, n;
	unsigned char *p = a->p;

	if (a->kind != P_GOOD && a->kind != P_STRADDLE)
		return;	/* the contents there are what they are */
	n = len < room ? len : room;
	memcpy(p, st, n);
	if (room >= 4)
		memcpy(p, &size, 4);
	/* the tail up to size: zero, or one non-zero byte somewhere */
	if (size > len && room > len) {
		size_t end = size < room ? size : room;

		memset(p + len, 0, end - len);
		if (tail_nonzero)
			p[len + tu_below(&t->rng, end - len)] = (unsigned char)tu_range(&t->rng, 1, 255);
	}
}

/* ------------------------------------------------------------------------
 * One fuzzed call
 * ------------------------------------------------------------------------
 */

/* The ring now exists: its layout is frozen as configured (or default). */
static void freeze(struct fsess *s)
{
	if (s->ring)
		return;
	s->ring = true;
	if (!s->ring_bytes) {
		s->ring_bytes = 1U << 20;
		s->user_stack_bytes = 16384;
		s->slots = 64;
	}
}

static void apply_arm_success(struct fthread *t, int slot, const struct stallcap_arm *a)
{
	t->has[slot] = true;
	t->hb[slot] = a->flags & SLOT_KINDS;
	t->unsure[slot] = a->flags & STALLCAP_ARM_ABSOLUTE;
	freeze(slot_sess(t, slot));
}

static void fz_arm(struct fthread *t, int slot)
{
	struct fz *f = t->f;
	struct fsess *s = slot_sess(t, slot);
	struct stallcap_arm a = { 0 };
	struct arg arg;
	tu_errset content, want, doc = cmds[C_ARM].doc;
	bool tail;
	uint32_t size;
	uint64_t now;
	long ret;
	int err;
	struct stallcap_stats before, after;
	bool check_nochange = slot >= NR_SHARED && tu_pct(&t->rng, 5);

	pick_ptr(t, &arg, false);
	size = pick_size(t, sizeof(a), &tail);
	content = fill_arm(t, &a, &now);
	a.size = size;
	place(t, &arg, &a, sizeof(a), size, tail);
	if (!s->ring)
		doc |= E(ENOMEM);	/* the first ARM allocates the ring */
	want = expect_ptr(f, &arg, size, tail, sizeof(a), true, content, doc);
	if (want & TU_OK && ((a.flags & SLOT_KINDS) || !f->root))
		want |= E(ENOSPC);	/* slots; the per-user limit */
	if (check_nochange && sc_get_stats(s->s.fd, &before, 0))
		check_nochange = false;
	ret = ioctl(s->s.fd, fz_cmd(t, STALLCAP_IOC_ARM), arg.p);
	err = errno;
	judge(t, C_ARM, arg.desc, ret, err, doc, want);
	if (ret >= 0) {
		if (arg.kind == P_GOOD || arg.kind == P_STRADDLE) {
			apply_arm_success(t, slot, &a);
		} else {
			/* contents unknown (ring, read-only page): ask the module */
			t->has[slot] = true;
			t->hb[slot] = ret > 0;	/* a slot index >0 is a heartbeat */
			t->unsure[slot] = true;
			freeze(s);
			if (sc_rearm(s->s.fd, 0) && errno == EINVAL)
				t->hb[slot] = true;
			else
				t->hb[slot] = false;
			t->calls++;
		}
	} else if (check_nochange) {
		if (!sc_get_stats(s->s.fd, &after, 0) &&
		    (after.watches != before.watches || after.armed != before.armed))
			fz_fail(f, "ARM failed with %s but watches %llu->%llu armed %llu->%llu",
				strerrorname_np(err), (unsigned long long)before.watches,
				(unsigned long long)after.watches, (unsigned long long)before.armed,
				(unsigned long long)after.armed);
		t->calls += 2;
	}
}

static void fz_rearm(struct fthread *t, int slot)
{
	struct fz *f = t->f;
	struct fsess *s = slot_sess(t, slot);
	uint64_t v = tu_pct(&t->rng, 30) ? 0 : pick_timeout(t);
	tu_errset want;
	long ret;

	if (!t->has[slot]) {
		want = E(ENOENT);
	} else if (t->hb[slot]) {
		want = E(EINVAL);
	} else if (!v) {
		want = t->unsure[slot] ? TU_OK | E(ERANGE) : TU_OK;
	} else {
		want = timeout_ok(f, v) ? TU_OK : E(ERANGE);
	}
	ret = ioctl(s->s.fd, fz_cmd(t, STALLCAP_IOC_REARM), (unsigned long)v);
	judge(t, C_REARM, v ? "timeout" : "0", ret, errno, cmds[C_REARM].doc, want);
	if (!ret && v)
		t->unsure[slot] = false;
}

static void fz_disarm_release(struct fthread *t, int slot, bool release)
{
	struct fsess *s = slot_sess(t, slot);
	unsigned long arg = tu_pct(&t->rng, 70) ? 0 : tu_pct(&t->rng, 50) ? 1 : tu_next(&t->rng);
	tu_errset want = arg ? E(EINVAL) : t->has[slot] ? TU_OK : E(ENOENT);
	int c = release ? C_RELEASE : C_DISARM;
	long ret;

	if (arg && !t->has[slot])
		want |= E(ENOENT);	/* either check may come first */
	ret = ioctl(s->s.fd, fz_cmd(t, cmds[c].cmd), arg);
	judge(t, c, arg ? "arg" : "0", ret, errno, cmds[c].doc, want);
	if (!ret && release)
		t->has[slot] = t->hb[slot] = false;
}

static void fz_set_config(struct fthread *t, int slot)
{
	struct fz *f = t->f;
	struct fsess *s = slot_sess(t, slot);
	struct stallcap_config c = { 0 }, before, after;
	struct cfg_expect x;
	struct arg arg;
	tu_errset content, want, doc = cmds[C_SET_CONFIG].doc;
	bool tail, shared = slot < NR_SHARED, check_nochange;
	uint32_t size;
	long ret;
	int err;

	pick_ptr(t, &arg, false);
	size = pick_size(t, sizeof(c), &tail);
	if (shared)
		pthread_mutex_lock(&f->shared_lock);
	content = fill_config(t, s, &c, &x);
	c.size = size;
	place(t, &arg, &c, sizeof(c), size, tail);
	if (x.global && f->root && !s->ring)
		doc |= E(ENOMEM);	/* a global reader gets its ring at once */
	want = expect_ptr(f, &arg, size, tail, sizeof(c), true, content, doc);
	check_nochange = !shared && tu_pct(&t->rng, 10) && !sc_get_config(s->s.fd, &before);
	ret = ioctl(s->s.fd, fz_cmd(t, STALLCAP_IOC_SET_CONFIG), arg.p);
	err = errno;
	judge(t, C_SET_CONFIG, arg.desc, ret, err, doc, want);
	if (!ret && (arg.kind == P_GOOD || arg.kind == P_STRADDLE)) {
		if (!s->ring) {
			s->ring_bytes = x.ring_bytes;
			s->user_stack_bytes = x.user_stack_bytes;
			s->slots = x.slots;
		}
		if (x.global)
			freeze(s);
	} else if (!ret) {
		/* contents unknown: ask what is in force now */
		struct stallcap_config now;

		if (!sc_get_config(s->s.fd, &now) && !s->ring) {
			s->ring_bytes = now.ring_bytes;
			s->user_stack_bytes = now.user_stack_bytes;
			s->slots = now.slots;
			if (now.flags & STALLCAP_CFG_GLOBAL)
				freeze(s);
		}
		t->calls++;
	} else if (check_nochange) {
		if (!sc_get_config(s->s.fd, &after) && memcmp(&before, &after, sizeof(after)))
			fz_fail(f, "SET_CONFIG failed with %s but changed the configuration",
				strerrorname_np(err));
		t->calls += 2;
	}
	if (shared)
		pthread_mutex_unlock(&f->shared_lock);
	if (arg.kind == P_RO && ret < 0 && err == EFAULT)
		fz_fail(f, "SET_CONFIG from read-only memory: EFAULT (it only reads)");
}

static void fz_get(struct fthread *t, int slot, int c)
{
	struct fz *f = t->f;
	struct fsess *s = slot_sess(t, slot);
	union {
		struct stallcap_config c;
		struct stallcap_stats st;
		struct stallcap_info i;
	} u;
	uint32_t ksize = c == C_GET_CONFIG ? sizeof(u.c) : c == C_GET_STATS ? sizeof(u.st) :
			 sizeof(u.i);
	tu_errset content = 0, want;
	struct arg arg;
	uint32_t size;
	bool tail;
	long ret;

	memset(&u, 0, sizeof(u));
	pick_ptr(t, &arg, true);
	size = pick_size(t, ksize, &tail);
	if (c == C_GET_STATS) {
		uint32_t fl = tu_pct(&t->rng, 70) ? 0 : tu_pct(&t->rng, 50) ?
			      STALLCAP_STATS_GLOBAL : (uint32_t)tu_next(&t->rng);

		u.st.flags = fl;
		if (fl & ~STALLCAP_STATS_GLOBAL)
			content = E(EINVAL);
	}
	place(t, &arg, &u, ksize, size, tail);
	/* read as an input struct (tail, page), then written as an output */
	want = expect_ptr(f, &arg, size, tail, ksize, true, content, cmds[c].doc);
	if (want & TU_OK)
		want = (want & ~TU_OK) |
		       expect_ptr(f, &arg, size, tail, ksize, false, content, cmds[c].doc);
	ret = ioctl(s->s.fd, fz_cmd(t, cmds[c].cmd), arg.p);
	judge(t, c, arg.desc, ret, errno, cmds[c].doc, want);
	if (!ret && arg.kind == P_GOOD && *(uint32_t *)arg.p != ksize)
		fz_fail(f, "%s wrote size %u, the module knows %u", cname[c],
			*(uint32_t *)arg.p, ksize);
}

/* Commands do_vfs_ioctl() handles itself (never reaching the module). */
static bool vfs_ioctl_type(unsigned int cmd)
{
	unsigned int type = (cmd >> 8) & 0xff;

	return type == 'T' || type == 'X' || type == 'f' || type == 0x94 || type == 0x15 ||
	       type == 0;
}

static void fz_random_cmd(struct fthread *t, int slot)
{
	struct fsess *s = slot_sess(t, slot);
	struct tu_rng *r = &t->rng;
	unsigned int cmd;
	struct arg arg;
	long ret;

	do {
		switch (tu_below(r, 4)) {
		case 0:	/* our magic, any number, any direction and size */
			cmd = _IOC(tu_below(r, 4), STALLCAP_IOC_MAGIC, tu_below(r, 256),
				   tu_below(r, 1 << 14));
			break;
		case 1:	/* a known number with another direction (any size) */
			cmd = _IOC(tu_below(r, 4), STALLCAP_IOC_MAGIC, tu_range(r, 1, 8),
				   tu_pct(r, 50) ? tu_below(r, 1024) : sizeof(struct stallcap_arm));
			break;
		default:
			cmd = (unsigned int)tu_next(r);
		}
	} while (vfs_ioctl_type(cmd));
	for (int i = 0; i < C_NR; i++)
		if (_IOC_TYPE(cmd) == STALLCAP_IOC_MAGIC && _IOC_NR(cmd) == _IOC_NR(cmds[i].cmd) &&
		    _IOC_DIR(cmd) == _IOC_DIR(cmds[i].cmd))
			return;	/* a valid command after all (size bits are ignored) */
	/* ATTACH and DETACH are valid too (attach_test covers them) */
	if (_IOC_TYPE(cmd) == STALLCAP_IOC_MAGIC &&
	    ((_IOC_NR(cmd) == _IOC_NR(STALLCAP_IOC_ATTACH) &&
	      _IOC_DIR(cmd) == _IOC_DIR(STALLCAP_IOC_ATTACH)) ||
	     (_IOC_NR(cmd) == _IOC_NR(STALLCAP_IOC_DETACH) &&
	      _IOC_DIR(cmd) == _IOC_DIR(STALLCAP_IOC_DETACH))))
		return;
	pick_ptr(t, &arg, true);
	ret = ioctl(s->s.fd, cmd, tu_pct(r, 50) ? (unsigned long)arg.p : tu_next(r));
	judge(t, C_RANDOM, "unknown command", ret, errno, E(ENOTTY), E(ENOTTY));
}

/* ------------------------------------------------------------------------
 * mmap
 * ------------------------------------------------------------------------
 */

static void fz_mmap(struct fthread *t, int slot)
{
	struct fz *f = t->f;
	struct fsess *s = slot_sess(t, slot);
	struct tu_rng *r = &t->rng;
	size_t page = f->page, len;
	uint64_t off;
	int prot, flags, fd;
	bool ro_fd = tu_pct(r, 10), shared_ok, exec, known_flags = true;
	tu_errset want, doc = MMAP_DOC;
	uint64_t ring_area, beat_area;
	void *p;
	int err;

	fd = ro_fd ? s->ro_fd : s->s.fd;
	switch (tu_below(r, 10)) {
	case 0:
		off = tu_below(r, 64) * page;
		break;
	case 1:
		off = tu_next(r);
		break;
	case 2:
		off = STALLCAP_MMAP_SLOTS + (tu_pct(r, 50) ? page : -page);
		break;
	case 3:
		off = (tu_next(r) | 0x8000000000000000ULL) & ~(page - 1);
		break;
	case 4:
	case 5:
		off = STALLCAP_MMAP_SLOTS;
		break;
	default:
		off = STALLCAP_MMAP_RING;
	}
	ring_area = page + (s->ring ? s->ring_bytes : s->ring_bytes ? s->ring_bytes : 1U << 20);
	beat_area = (uint64_t)(s->slots ? s->slots : 64) * 64;
	switch (tu_below(r, 10)) {
	case 0:
		len = 0;
		break;
	case 1:
		len = tu_range(r, 1, 3 * page);
		break;
	case 2:
		len = (size_t)1 << tu_range(r, 30, 62);
		break;
	case 3:
		len = (size_t)tu_next(r);
		break;
	case 4:
		len = (off == STALLCAP_MMAP_SLOTS ? beat_area : ring_area) + page;
		break;
	case 5:
		len = page;
		break;
	default:
		len = off == STALLCAP_MMAP_SLOTS ? beat_area : ring_area;
		if (tu_pct(r, 30))
			len -= tu_below(r, len / page) * page;
	}
	prot = tu_pct(r, 70) ? PROT_READ | PROT_WRITE : (int)tu_below(r, 8);
	switch (tu_below(r, 10)) {
	case 0:
		flags = MAP_PRIVATE;
		break;
	case 1:
		flags = MAP_SHARED_VALIDATE;
		break;
	case 2:
		flags = MAP_SHARED_VALIDATE | 0x080000;	/* MAP_SYNC: DAX files only */
		known_flags = false;
		break;
	case 3:
		flags = MAP_SHARED | MAP_POPULATE;
		break;
	case 4:
		flags = MAP_SHARED | MAP_NORESERVE;
		break;
	case 5:
		flags = 0;	/* neither shared nor private */
		break;
	default:
		flags = MAP_SHARED;
	}
	exec = prot & PROT_EXEC;
	shared_ok = (flags & MAP_SHARED) && known_flags;	/* MAP_SHARED_VALIDATE has it */

	/* what the arguments call for, in the order mm/mmap.c checks them */
	if (!len || (off & (page - 1))) {
		want = E(EINVAL);
	} else if (len + page < len) {
		want = E(ENOMEM);			/* PAGE_ALIGN(len) overflows */
	} else {
		uint64_t alen = (len + page - 1) & ~(uint64_t)(page - 1);
		/* no room for it in the address space */
		tu_errset room = alen >= (1ULL << 30) ? E(ENOMEM) : 0;

		if ((off >> 12) > (UINT64_MAX - alen) >> 12)
			want = E(EOVERFLOW);		/* file_mmap_ok(), a char device */
		else if (!(flags & (MAP_SHARED | MAP_PRIVATE)))
			want = E(EINVAL);
		else if (!known_flags)
			want = E(EOPNOTSUPP);
		else if (ro_fd && (flags & MAP_SHARED) && (prot & PROT_WRITE))
			want = E(EACCES);
		else if (!shared_ok || ro_fd)
			want = E(EINVAL) | (exec ? E(EPERM) : 0);
		else if (exec)
			want = E(EINVAL) | E(EPERM);	/* EPERM: a noexec mount */
		else if (off == STALLCAP_MMAP_RING && alen <= ring_area)
			want = TU_OK | E(ENOMEM);
		else if (off == STALLCAP_MMAP_SLOTS && alen <= beat_area)
			want = TU_OK | E(ENOMEM);
		else
			want = E(EINVAL);
		want |= room;
	}
	doc |= want & (E(EOVERFLOW) | E(EACCES) | E(EPERM) | E(EOPNOTSUPP));

	p = mmap(NULL, len, prot, flags, fd, (off_t)off);
	err = errno;
	judge(t, C_MMAP, "mmap", p == MAP_FAILED ? -1 : 0, err, doc, want);
	if (p == MAP_FAILED)
		return;
	if (fd == s->s.fd)
		freeze(s);	/* the first mmap freezes the layout */
	if (prot & PROT_READ)
		(void)*(volatile unsigned char *)p;
	if ((prot & PROT_WRITE) && off == STALLCAP_MMAP_RING && len >= page && tu_pct(r, 30)) {
		/* a reader's bogus tail only makes the ring look full or empty */
		struct stallcap_ring_ctl *ctl = p;

		__atomic_store_n(&ctl->data_tail, tu_pct(r, 50) ? tu_next(r) :
				 ctl->data_head - tu_below(r, 4096), __ATOMIC_RELEASE);
	}
	if (munmap(p, len)) {
		fz_fail(f, "munmap of a stallcap mapping failed: %s", strerror(errno));
		return;
	}
	judge(t, C_MUNMAP, "munmap", 0, 0, TU_OK, TU_OK);
}

/* ------------------------------------------------------------------------
 * Sessions and threads
 * ------------------------------------------------------------------------
 */

static int fsess_open(struct fz *f, struct fsess *s, bool map)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = sc_open(&s->s);
	if (ret)
		return ret;
	s->ro_fd = open(STALLCAP_DEVICE, O_RDONLY | O_CLOEXEC);
	if (s->ro_fd < 0)
		return -errno;
	if (!map)
		return 0;
	ret = sc_configure(&s->s, &(struct sc_opts){ .ring_bytes = 256 << 10,
						     .user_stack_bytes = 1024 });
	if (ret)
		return ret;
	s->ring = true;
	s->ring_bytes = s->s.cfg.ring_bytes;
	s->user_stack_bytes = s->s.cfg.user_stack_bytes;
	s->slots = s->s.cfg.slots;
	s->ring_map_len = f->page + s->ring_bytes;
	s->ring_map = mmap(NULL, s->ring_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->s.fd,
			   STALLCAP_MMAP_RING);
	if (s->ring_map == MAP_FAILED) {
		s->ring_map = NULL;
		return -errno;
	}
	return 0;
}

static void fsess_close(struct fsess *s)
{
	if (s->ring_map)
		munmap(s->ring_map, s->ring_map_len);
	s->ring_map = NULL;
	if (s->ro_fd > 0)
		close(s->ro_fd);
	s->ro_fd = -1;
	sc_session_close(&s->s);
}

/* A short valid sequence: arm, stall a little, progress, stats. */
SC_NOINLINE void fuzz_spin(uint64_t until)
{
	sc_spin_frame = __builtin_frame_address(0);
	while (sc_now_ns() < until)
		;
}

static void fz_valid_sequence(struct fthread *t, int slot)
{
	struct fz *f = t->f;
	struct fsess *s = slot_sess(t, slot);
	uint64_t timeout = tu_range(&t->rng, f->min_deadline, SC_MS(3));
	struct stallcap_stats st;
	long ret;

	if (t->hb[slot]) {
		ret = sc_release(s->s.fd);
		judge(t, C_RELEASE, "valid", ret, errno, cmds[C_RELEASE].doc, TU_OK);
		if (!ret)
			t->has[slot] = t->hb[slot] = false;
	}
	ret = sc_arm(s->s.fd, timeout, tu_pct(&t->rng, 20) ? STALLCAP_ARM_CPUTIME : 0,
		     0xf022000000000000ULL | t->id);
	judge(t, C_ARM, "valid", ret, errno, cmds[C_ARM].doc, TU_OK | (s->ring ? 0 : E(ENOMEM)));
	if (ret)
		return;
	t->has[slot] = true;
	t->hb[slot] = t->unsure[slot] = false;
	freeze(s);
	/* mostly progress before the deadline, sometimes a stall */
	fuzz_spin(sc_now_ns() + (tu_pct(&t->rng, 80) ? tu_range(&t->rng, 0, timeout / 2) :
				 tu_range(&t->rng, timeout, 2 * timeout)));
	ret = sc_rearm(s->s.fd, 0);
	judge(t, C_REARM, "valid", ret, errno, cmds[C_REARM].doc, TU_OK);
	ret = sc_get_stats(s->s.fd, &st, tu_pct(&t->rng, 50) ? STALLCAP_STATS_GLOBAL : 0);
	judge(t, C_GET_STATS, "valid", ret, errno, cmds[C_GET_STATS].doc, TU_OK);
	if (tu_pct(&t->rng, 50)) {
		ret = sc_disarm(s->s.fd);
		judge(t, C_DISARM, "valid", ret, errno, cmds[C_DISARM].doc, TU_OK);
	} else {
		ret = sc_release(s->s.fd);
		judge(t, C_RELEASE, "valid", ret, errno, cmds[C_RELEASE].doc, TU_OK);
		if (!ret)
			t->has[slot] = false;
	}
}

static void priv_reopen(struct fthread *t, int i)
{
	struct fz *f = t->f;
	struct fsess *s = &t->priv[i];
	int slot = NR_SHARED + i, ret;

	fsess_close(s);
	ret = fsess_open(f, s, tu_pct(&t->rng, 50));
	if (ret)
		fz_fail(f, "reopening a private session: %s", strerror(-ret));
	t->has[slot] = t->hb[slot] = t->unsure[slot] = false;
}

static void *fuzz_thread(void *arg)
{
	struct fthread *t = arg;
	struct fz *f = t->f;
	unsigned long long n = 0;

	while (!f->stop) {
		int slot = tu_below(&t->rng, NR_SLOTS);
		unsigned int p = tu_below(&t->rng, 1000);

		if (p < 200)
			fz_arm(t, slot);
		else if (p < 300)
			fz_rearm(t, slot);
		else if (p < 350)
			fz_disarm_release(t, slot, false);
		else if (p < 400)
			fz_disarm_release(t, slot, true);
		else if (p < 500)
			fz_set_config(t, slot);
		else if (p < 560)
			fz_get(t, slot, C_GET_CONFIG);
		else if (p < 640)
			fz_get(t, slot, C_GET_STATS);
		else if (p < 700)
			fz_get(t, slot, C_GET_INFO);
		else if (p < 800)
			fz_random_cmd(t, slot);
		else if (p < 950)
			fz_mmap(t, slot);
		else if (p < 997)
			fz_valid_sequence(t, slot);
		else
			priv_reopen(t, tu_below(&t->rng, NR_PRIV));
		if (!(++n & 255)) {
			unsigned long long total = __atomic_add_fetch(&f->calls, t->calls,
								      __ATOMIC_RELAXED);

			t->calls = 0;
			if (total >= f->target_calls || sc_now_ns() > f->end_ns)
				f->stop = 1;
		}
	}
	__atomic_add_fetch(&f->calls, t->calls, __ATOMIC_RELAXED);
	t->calls = 0;
	/* release this thread's watches */
	for (int slot = 0; slot < NR_SLOTS; slot++) {
		long ret = sc_release(slot_sess(t, slot)->s.fd);

		judge(t, C_RELEASE, "final", ret, errno, cmds[C_RELEASE].doc,
		      t->has[slot] ? TU_OK : E(ENOENT));
		t->has[slot] = false;
	}
	return NULL;
}

static void *map_pages(size_t n, int prot)
{
	void *p = mmap(NULL, n, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A page unmapped for sure: below vm.mmap_min_addr, where nothing can be
 * mapped without MAP_FIXED (a freed page could be reused by the fuzzer's own
 * mmap calls); PROT_NONE memory if that is 0.
 */
static unsigned char *unmapped_page(struct fz *f)
{
	FILE *mf = fopen("/proc/sys/vm/mmap_min_addr", "r");
	unsigned long min_addr = 0;

	if (mf) {
		if (fscanf(mf, "%lu", &min_addr) != 1)
			min_addr = 0;
		fclose(mf);
	}
	return min_addr >= 2 * f->page ? (unsigned char *)f->page : f->none;
}

static unsigned long long fuzz_seconds(void)
{
	return sc_tunable("STALLCAP_FUZZ_SECONDS", DEFAULT_SECONDS);
}

FIXTURE(fuzz) {
	struct fz *f;
	struct fthread *t;
	int nthreads;
};

FIXTURE_SETUP(fuzz)
{
	struct fz *f;
	size_t page = sysconf(_SC_PAGESIZE);

	self->f = f = calloc(1, sizeof(*f));
	ASSERT_NE(NULL, f);
	f->page = page;
	pthread_mutex_init(&f->err_lock, NULL);
	pthread_mutex_init(&f->shared_lock, NULL);
	f->seed = tu_seed();
	f->target_calls = sc_tunable("STALLCAP_FUZZ_CALLS", DEFAULT_CALLS);
	f->max_seconds = fuzz_seconds();
	f->root = geteuid() == 0;

	/* read-only pages: a valid-looking size, then zeros; then 0xff bytes */
	f->ro = map_pages(3 * page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, f->ro);
	memset(f->ro + page / 2, 0xff, page);
	*(uint32_t *)f->ro = page;
	ASSERT_EQ(0, mprotect(f->ro, 2 * page, PROT_READ));
	ASSERT_EQ(0, mprotect(f->ro + 2 * page, page, PROT_NONE));
	f->none = map_pages(page, PROT_NONE);
	ASSERT_NE(NULL, f->none);
	f->hole = unmapped_page(f);
	for (int i = 0; i < NR_SHARED; i++) {
		ASSERT_EQ(0, fsess_open(f, &f->shared[i], true));
	}
	f->min_deadline = f->shared[0].s.info.min_deadline_ns;
	f->max_ring = f->shared[0].s.info.max_ring_bytes;
	f->have_hb = f->shared[0].s.info.features & STALLCAP_FEAT_HEARTBEAT;
	f->have_tsc = f->shared[0].s.info.features & STALLCAP_FEAT_DEADLINE_TSC;
	f->have_defer = f->shared[0].s.info.features & STALLCAP_FEAT_DEFER_USER;

	self->nthreads = sc_nr_cpus_allowed();
	self->t = calloc(self->nthreads, sizeof(*self->t));
	ASSERT_NE(NULL, self->t);
	for (int i = 0; i < self->nthreads; i++) {
		struct fthread *t = &self->t[i];

		t->f = f;
		t->id = i;
		tu_rng_seed(&t->rng, f->seed + 0x1234567ULL * (i + 1));
		t->buf = map_pages(4 * page, PROT_READ | PROT_WRITE);
		ASSERT_NE(NULL, t->buf);
		ASSERT_EQ(0, mprotect(t->buf + 3 * page, page, PROT_NONE));
		for (int j = 0; j < NR_PRIV; j++) {
			ASSERT_EQ(0, fsess_open(f, &t->priv[j], j == 0));
		}
	}
}

FIXTURE_TEARDOWN(fuzz)
{
	for (int i = 0; self->t && i < self->nthreads; i++)
		for (int j = 0; j < NR_PRIV; j++)
			fsess_close(&self->t[i].priv[j]);
	for (int i = 0; self->f && i < NR_SHARED; i++)
		fsess_close(&self->f->shared[i]);
	free(self->t);
	free(self->f);
}

TEST_F_TIMEOUT(fuzz, random_calls_return_documented_errnos, DEFAULT_SECONDS + 120)
{
	struct fz *f = self->f;
	struct stallcap_stats g0, g1;
	uint64_t t0, t1;
	char why[256];

	ASSERT_EQ(0, sc_get_stats(f->shared[0].s.fd, &g0, STALLCAP_STATS_GLOBAL));
	ksft_print_msg("fuzz: %llu calls or %llu s, %d threads, seed %llu (STALLCAP_SEED)\n",
		       f->target_calls, f->max_seconds, self->nthreads,
		       (unsigned long long)f->seed);
	t0 = sc_now_ns();
	f->end_ns = t0 + f->max_seconds * SC_NSEC_PER_SEC;
	for (int i = 0; i < self->nthreads; i++) {
		ASSERT_EQ(0, pthread_create(&self->t[i].th, NULL, fuzz_thread, &self->t[i]));
	}
	for (int i = 0; i < self->nthreads; i++)
		pthread_join(self->t[i].th, NULL);
	t1 = sc_now_ns();

	ksft_print_msg("fuzz: %llu calls in %.1f s (%.0f calls/s)%s\n", f->calls,
		       (t1 - t0) / 1e9, f->calls / ((t1 - t0) / 1e9),
		       f->calls < f->target_calls ? ": stopped by the time limit" : "");
	for (int c = 0; c < C_COUNT; c++)
		ksft_print_msg("  %-10s %9llu calls, %9llu succeeded\n", cname[c], f->per_cmd[c],
			       f->ok[c]);
	EXPECT_EQ(0, f->nerr) TH_LOG("%u calls returned what they should not; the first: %s",
				     f->nerr, f->err);
	if (f->calls < f->target_calls)
		ksft_print_msg("fuzz: only %llu of %llu calls within %llu s\n", f->calls,
			       f->target_calls, f->max_seconds);

	/* every watch released: the sessions and the module count none */
	for (int i = 0; i < NR_SHARED; i++) {
		EXPECT_EQ(0, TU_WAIT_STAT(f->shared[i].s.fd, 0, watches, 0, SC_WAIT_MS));
		EXPECT_EQ(0, TU_WAIT_STAT(f->shared[i].s.fd, 0, armed, 0, SC_WAIT_MS));
	}
	for (int i = 0; i < self->nthreads; i++)
		for (int j = 0; j < NR_PRIV; j++)
			fsess_close(&self->t[i].priv[j]);
	EXPECT_EQ(g0.watches, TU_WAIT_STAT(f->shared[0].s.fd, STALLCAP_STATS_GLOBAL, watches,
					   g0.watches, SC_WAIT_MS));
	EXPECT_EQ(g0.armed, TU_WAIT_STAT(f->shared[0].s.fd, STALLCAP_STATS_GLOBAL, armed,
					 g0.armed, SC_WAIT_MS));
	ASSERT_EQ(0, sc_get_stats(f->shared[0].s.fd, &g1, STALLCAP_STATS_GLOBAL));
	ksft_print_msg("during the fuzz: %llu stalls, %llu samples, %llu lost, %llu suppressed\n",
		       (unsigned long long)(g1.stalls - g0.stalls),
		       (unsigned long long)(g1.samples - g0.samples),
		       (unsigned long long)(g1.lost - g0.lost),
		       (unsigned long long)(g1.suppressed - g0.suppressed));

	/* and the module still works */
	EXPECT_EQ(NULL, tu_capture_check(why, sizeof(why))) TH_LOG("after the fuzz: %s", why);
}

static void __attribute__((constructor)) fuzz_set_timeout(void)
{
	_fuzz_random_calls_return_documented_errnos_object->timeout = fuzz_seconds() + 120;
}

/* ------------------------------------------------------------------------
 * A failed heartbeat ARM changes nothing
 * ------------------------------------------------------------------------
 */

struct hb_holder {
	int fd;
	int ret;
	pthread_barrier_t *done, *go;
};

static void *hb_holder_main(void *arg)
{
	struct hb_holder *h = arg;

	h->ret = sc_arm(h->fd, 10 * SC_NSEC_PER_SEC, STALLCAP_ARM_HEARTBEAT, 0x4842);
	pthread_barrier_wait(h->done);
	pthread_barrier_wait(h->go);
	sc_release(h->fd);
	return NULL;
}

TEST(failed_heartbeat_arm_changes_nothing)
{
	struct stallcap_stats before, after;
	struct hb_holder *h;
	pthread_barrier_t done, go;
	struct sc_session s;
	pthread_t *th;
	int n, ret, err;

	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	if (!(s.info.features & STALLCAP_FEAT_HEARTBEAT))
		SKIP(sc_session_close(&s); return, "no heartbeat watches");
	n = s.cfg.slots;
	h = calloc(n, sizeof(*h));
	th = calloc(n, sizeof(*th));
	ASSERT_NE(NULL, h);
	ASSERT_NE(NULL, th);
	pthread_barrier_init(&done, NULL, n + 1);
	pthread_barrier_init(&go, NULL, n + 1);
	for (int i = 0; i < n; i++) {
		h[i] = (struct hb_holder){ .fd = s.fd, .done = &done, .go = &go };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, hb_holder_main, &h[i]));
	}
	pthread_barrier_wait(&done);
	for (int i = 0; i < n; i++) {
		ASSERT_LE(0, h[i].ret) TH_LOG("heartbeat ARM %d of %d failed", i, n);
	}
	/* every beat slot taken; this thread has an armed deadline watch */
	ASSERT_EQ(0, sc_arm(s.fd, 10 * SC_NSEC_PER_SEC, 0, 0x1));
	ASSERT_EQ(0, sc_get_stats(s.fd, &before, 0));
	ret = sc_arm(s.fd, 10 * SC_NSEC_PER_SEC, STALLCAP_ARM_HEARTBEAT, 0x2);
	err = errno;
	ASSERT_EQ(0, sc_get_stats(s.fd, &after, 0));
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(ENOSPC, err);
	EXPECT_EQ(before.watches, after.watches);
	EXPECT_EQ(before.armed, after.armed)
		TH_LOG("the failed ARM disarmed this thread's deadline watch (it destroyed it "
		       "and left a new, unarmed one)");
	EXPECT_EQ(0, sc_disarm(s.fd));
	EXPECT_EQ(0, sc_release(s.fd));
	pthread_barrier_wait(&go);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, TU_WAIT_STAT(s.fd, 0, watches, 0, SC_WAIT_MS));
	free(h);
	free(th);
	sc_session_close(&s);
}

/* ------------------------------------------------------------------------
 * An absolute deadline already past: a stall at once, sampled, and ended
 * ------------------------------------------------------------------------
 *
 * Its timeout is 0 (deadline - now, clamped), so the sampling intervals
 * T, 2T, 4T... are all 0: the module must still space its samples (and not
 * loop forever in the timer looking for the next point ahead).  Any user
 * can ask for this.
 */

struct past {
	int fd;
	uint64_t ago;
	int ret, err;
	struct sc_stopper *st;
};

static void *past_main(void *arg)
{
	struct past *p = arg;

	p->ret = sc_arm(p->fd, sc_now_ns() - p->ago, STALLCAP_ARM_ABSOLUTE, 0x9a57);
	p->err = errno;
	if (!p->ret)
		spin_in_user_caller(&p->st->stop);
	if (!p->ret)
		p->ret = sc_disarm(p->fd);
	return NULL;
}

TEST(absolute_deadline_in_the_past_is_sampled_and_ends)
{
	static const uint64_t agos[] = { 0, 1000, SC_MS(5), SC_MS(500) };
	struct sc_session s;

	ASSERT_EQ(0, sc_session_setup(&s, &(struct sc_opts){ .max_samples = 4,
							     .user_stack_bytes = 256 }));
	for (size_t i = 0; i < sizeof(agos) / sizeof(agos[0]); i++) {
		struct sc_stopper st = { .cpu = -1, .delay_ms = 50 };
		struct past p = { .fd = s.fd, .ago = agos[i], .st = &st };
		struct sc_records rs = { 0 };
		pthread_t th;

		ASSERT_EQ(0, sc_stopper_start(&st, s.fd, 2, SC_WAIT_MS));
		ASSERT_EQ(0, pthread_create(&th, NULL, past_main, &p));
		pthread_join(th, NULL);
		sc_stopper_join(&st);
		ASSERT_EQ(0, p.ret) TH_LOG("deadline %llu ns ago: %s", (unsigned long long)agos[i],
					   strerror(p.err));
		EXPECT_FALSE(st.timed_out);
		EXPECT_LE(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
		EXPECT_GE(4, sc_records_count(&rs, STALLCAP_REC_SAMPLE));
		sc_records_free(&rs);
	}
	sc_session_close(&s);
}

/*
 * The same with min_deadline_us = 0, which root may set: the smallest
 * timeout is then what GET_INFO reports (the module may keep a floor), a
 * relative timeout of it is sampled, and nothing may depend on the
 * parameter being positive for the sampling intervals.
 */
TEST(zero_min_deadline_is_sampled_and_ends)
{
	long long old = tu_param_read("min_deadline_us");
	struct sc_stopper st = { .cpu = -1, .delay_ms = 50 };
	struct past p = { .ago = SC_MS(1) };
	struct sc_records rs = { 0 };
	struct sc_session s;
	pthread_t th;
	int ret;

	if (old < 0 || geteuid())
		SKIP(return, "needs root and the min_deadline_us parameter");
	ASSERT_EQ(0, sc_session_setup(&s, &(struct sc_opts){ .max_samples = 4,
							     .user_stack_bytes = 256 }));
	ASSERT_EQ(0, tu_param_write("min_deadline_us", 0));
	ret = 0;
	/* relative, the smallest timeout there is now */
	{
		struct sc_stopper st0 = { .cpu = -1, .delay_ms = 20 };
		struct stallcap_info info;

		ASSERT_EQ(0, sc_get_info(s.fd, &info));
		ret = sc_arm(s.fd, 0, 0, 1);
		EXPECT_TRUE(info.min_deadline_ns ? ret == -1 && errno == ERANGE : ret == 0)
			TH_LOG("ARM(0) with min_deadline_ns %llu: %s",
			       (unsigned long long)info.min_deadline_ns, strerror(errno));
		ASSERT_EQ(0, sc_stopper_start(&st0, s.fd, 2, SC_WAIT_MS));
		ret = sc_arm(s.fd, info.min_deadline_ns, 0, 1);
		EXPECT_EQ(0, ret) TH_LOG("ARM(%llu) with min_deadline_us=0: %s",
					 (unsigned long long)info.min_deadline_ns, strerror(errno));
		spin_in_user_caller(&st0.stop);
		sc_stopper_join(&st0);
		EXPECT_FALSE(!ret && st0.timed_out)
			TH_LOG("ARM(0): stalls %llu samples %llu",
			       (unsigned long long)SC_STAT(s.fd, stalls),
			       (unsigned long long)SC_STAT(s.fd, samples));
		EXPECT_EQ(0, ret ? 0 : sc_disarm(s.fd));
	}
	/* absolute, already past */
	p.fd = s.fd;
	p.st = &st;
	ASSERT_EQ(0, sc_stopper_start(&st, s.fd, 2, SC_WAIT_MS));
	ASSERT_EQ(0, pthread_create(&th, NULL, past_main, &p));
	pthread_join(th, NULL);
	sc_stopper_join(&st);
	EXPECT_EQ(0, tu_param_write("min_deadline_us", old));
	EXPECT_EQ(0, p.ret);
	EXPECT_FALSE(st.timed_out);
	EXPECT_LE(2, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 2, SC_WAIT_MS));
	sc_records_free(&rs);
	sc_session_close(&s);
}

/* ------------------------------------------------------------------------
 * SET_CONFIG(GLOBAL) creates the ring: with the layout it sets
 * ------------------------------------------------------------------------
 */

TEST(global_config_creates_the_ring_it_configures)
{
	struct stallcap_config c = {
		.size = sizeof(c),
		.flags = STALLCAP_CFG_GLOBAL,
		.ring_bytes = 2U << 20,		/* not the default 1 MiB */
		.slots = 128,		/* not the default 64 */
	};
	struct sc_session s;
	size_t beats_len = 128 * sizeof(struct stallcap_slot);
	void *beats;

	ASSERT_EQ(0, sc_open(&s));
	if (!(s.info.features & STALLCAP_FEAT_GLOBAL) || geteuid())
		SKIP(sc_session_close(&s); return, "needs STALLCAP_FEAT_GLOBAL and root");
	if (s.info.max_ring_bytes < c.ring_bytes)
		SKIP(sc_session_close(&s); return, "max_ring_kb below 2 MiB");
	/* no ring yet: the global reader gets it now, as configured here */
	ASSERT_EQ(0, ioctl(s.fd, STALLCAP_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, sc_get_config(s.fd, &s.cfg));
	EXPECT_EQ(c.ring_bytes, s.cfg.ring_bytes);
	EXPECT_EQ(c.slots, s.cfg.slots);
	ASSERT_EQ(0, sc_map(&s)) TH_LOG("mmap of page + ring_bytes (%u) as GET_CONFIG reports",
					s.cfg.ring_bytes);
	EXPECT_EQ(s.cfg.ring_bytes, s.ctl->data_size)
		TH_LOG("the ring was created with the configuration in force before the call, "
		       "then the new one was installed: slots and the beat bitmap disagree "
		       "the same way (the 65th heartbeat watch would index past both)");
	beats = mmap(NULL, beats_len, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, STALLCAP_MMAP_SLOTS);
	EXPECT_NE(MAP_FAILED, beats) TH_LOG("mmap of the %u beat slots: %s", c.slots,
					    strerror(errno));
	if (beats != MAP_FAILED)
		munmap(beats, beats_len);
	sc_session_close(&s);
}

/* ------------------------------------------------------------------------
 * A reader writing into a record being filled
 * ------------------------------------------------------------------------
 */

#define ATTACK_RING		(4U << 20)
#define ATTACK_TRIALS		1500
#define ATTACK_FILL		0xa5
/* a bogus fixed_size / section size: where a read-back would make it write */
#define ATTACK_BOGUS_OFF	0x80000

struct attack {
	struct sc_session *s;
	uint32_t rec_len;		/* bytes a sample reserves */
	volatile int stop;
	volatile uint64_t target;	/* ring position of the sample being filled, or ~0 */
	unsigned long writes;
};

/*
 * Keep writing a bogus fixed_size and a bogus size into the first section
 * header of the newest busy sample.
 */
static void *attacker_main(void *arg)
{
	struct attack *at = arg;
	struct stallcap_ring_ctl *ctl = at->s->ctl;
	uint64_t size = ctl->data_size, seen = 0;

	sc_pin_self(1);
	while (!at->stop) {
		uint64_t head = __atomic_load_n(&ctl->data_head, __ATOMIC_ACQUIRE);

		/* walk the records reserved since last time (sizes are the module's) */
		while (seen < head) {
			struct stallcap_rec_header *h = (void *)(at->s->data + (seen & (size - 1)));
			uint32_t rsize = __atomic_load_n(&h->size, __ATOMIC_RELAXED);

			if (h->type == STALLCAP_REC_SAMPLE)
				at->target = seen;
			if (rsize < 8 || rsize & 7)
				break;
			seen += rsize;
		}
		if (at->target != ~0ULL) {
			struct stallcap_sample *r = (void *)(at->s->data + (at->target & (size - 1)));

			if (__atomic_load_n(&r->hdr.flags, __ATOMIC_RELAXED) & STALLCAP_REC_F_BUSY) {
				struct stallcap_section *sec = (void *)(r + 1);

				__atomic_store_n(&r->fixed_size, ATTACK_BOGUS_OFF, __ATOMIC_RELAXED);
				__atomic_store_n(&sec->size, ATTACK_BOGUS_OFF - sizeof(*r),
						 __ATOMIC_RELAXED);
				at->writes++;
			}
		}
	}
	return NULL;
}

FIXTURE(attack) {
	int unused;
};

FIXTURE_SETUP(attack)
{
}

FIXTURE_TEARDOWN(attack)
{
}

TEST_F_TIMEOUT(attack, ring_writes_cannot_make_the_kernel_write_outside_a_record, 240)
{
	struct sc_opts o = { .ring_bytes = ATTACK_RING, .user_stack_bytes = 8, .max_samples = 1 };
	struct attack at = { .target = ~0ULL };
	struct sc_session s;
	uint64_t timeout, size;
	pthread_t th;
	int trials = 0, evidence = -1;
	size_t ev_off = 0, ev_len = 0, ev_rec = 0;

	if (sc_nr_cpus_allowed() < 2)
		SKIP(return, "needs two CPUs");
	ASSERT_EQ(0, sc_session_setup(&s, &o));
	size = s.ctl->data_size;
	ASSERT_EQ(ATTACK_RING, size);
	memset(s.data, ATTACK_FILL, size);
	at.s = &s;
	timeout = s.info.min_deadline_ns;
	ASSERT_EQ(0, sc_pin_self(0));
	ASSERT_EQ(0, pthread_create(&th, NULL, attacker_main, &at));
	for (trials = 0; trials < ATTACK_TRIALS; trials++) {
		uint64_t before = s.ctl->data_head, until, pos, win;
		struct stallcap_sample *r;
		size_t wlen;

		ASSERT_EQ(0, sc_arm(s.fd, timeout, 0, trials));
		/* spin in user space until the timer on this CPU captured us */
		until = sc_now_ns() + timeout + SC_MS(2);
		while (sc_now_ns() < until && s.ctl->data_head == before)
			;
		fuzz_spin(sc_now_ns() + 50000);
		ASSERT_EQ(0, sc_disarm(s.fd));
		if (s.ctl->data_head == before)
			continue;	/* not captured this time */
		/* the sample reserved at @before: where bogus counts make it write */
		pos = before & (size - 1);
		r = (void *)(s.data + pos);
		if (r->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		win = pos + ATTACK_BOGUS_OFF;
		wlen = 8 * (STALLCAP_MAX_FRAMES + 2) + 8;
		for (size_t i = 0; i < wlen && evidence < 0; i++) {
			if (s.data[win + i] == ATTACK_FILL)
				continue;
			evidence = trials;
			ev_off = win + i;
			ev_rec = pos;
			while (i + ev_len < wlen && s.data[win + i + ev_len] != ATTACK_FILL)
				ev_len++;
		}
		if (evidence >= 0)
			break;
		/* stop before the records reach the windows still to be checked */
		if ((s.ctl->data_head & (size - 1)) + 2 * (ATTACK_BOGUS_OFF + wlen) > size)
			break;
	}
	at.stop = 1;
	pthread_join(th, NULL);
	ksft_print_msg("%d trials, %lu writes into busy samples, ring head %llu\n", trials,
		       at.writes, (unsigned long long)s.ctl->data_head);
	EXPECT_EQ(-1, evidence)
		TH_LOG("trial %d: the kernel wrote %zu bytes at data offset %#zx, %#zx bytes past "
		       "the sample at %#zx whose fixed_size and section size the reader overwrote "
		       "while it was busy: the capture reads its offsets back from the "
		       "user-writable ring", evidence, ev_len, ev_off, ev_off - ev_rec, ev_rec);
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
