// SPDX-License-Identifier: GPL-2.0
/*
 * A thread stalled in the kernel while it calls through a retpoline thunk:
 * the test-only module stallcap_spin (selftests/kmod) spins with preemption
 * off, calling an empty function through a pointer, which a kernel using
 * retpolines compiles into a call of __x86_indirect_thunk_<reg>.  The
 * thunk's unwind hint is "undefined": the kernel's ORC unwinder stops at
 * once in it (seen on 7.3 in a real server: kernel frame 0
 * __x86_indirect_thunk_rdx+0x0, the only one, "kernel stack truncated").
 * Every sample taken in a thunk must still hold the whole kernel stack:
 * frame 1 the loop that called it, the write(2) that runs the loop under
 * it, down to the system call's entry, and no truncation flag.  Samples
 * land in the thunk now and then (at its first instruction, and after the
 * retpoline's own call): the spin is repeated until three landed at the
 * first instruction.  Kernels whose indirect calls do not go through the
 * thunks (spectre_v2 mitigated otherwise) skip the test.
 */
#include "stallcap_test.h"

#include "sc_harness.h"

#define TAG		0x7468756e6b303031ULL
#define SPIN_FILE	"/sys/kernel/debug/stallcap_spin/thunk"
#define SPECTRE_V2	"/sys/devices/system/cpu/vulnerabilities/spectre_v2"
#define TIMEOUT		SC_MS(2)
#define SPIN_MS		100
#define MAX_SPINS	60
#define WANT_AT_ENTRY	3

/* Does the kernel call through retpoline thunks?  @mit gets its mitigation. */
static bool retpolines_in_use(char *mit, size_t len)
{
	FILE *f = fopen(SPECTRE_V2, "r");

	snprintf(mit, len, "unknown");
	if (f) {
		if (!fgets(mit, (int)len, f))
			snprintf(mit, len, "unreadable");
		mit[strcspn(mit, "\n")] = 0;
		fclose(f);
	}
	return strstr(mit, "Retpolines");
}

struct thunk_counts {
	unsigned int samples;	/* on CPU, not migrated, during the spins */
	unsigned int in_thunk;	/* kernel frame 0 in a thunk */
	unsigned int at_entry;	/* at its first instruction */
	unsigned int whole;	/* in a thunk, with the whole stack */
	const char *frame0[8];	/* the functions of frame 0, for the log */
	unsigned int nr_frame0[8];
};

static void count_frame0(struct thunk_counts *c, const char *name)
{
	unsigned int i;

	for (i = 0; i < 8 && c->frame0[i] && strcmp(c->frame0[i], name); i++)
		;
	if (i < 8) {
		c->frame0[i] = name;
		c->nr_frame0[i]++;
	}
}

static void log_frame0(const struct thunk_counts *c, const char *which)
{
	for (unsigned int i = 0; i < 8 && c->frame0[i]; i++)
		ksft_print_msg("  %s in %s: %u\n", which, c->frame0[i], c->nr_frame0[i]);
}

/*
 * Is @r, taken in a retpoline thunk, whole: its caller the spinning loop,
 * the write under it, the system call's entry outermost, not cut?
 */
static bool thunk_sample_whole(const struct sc_ksyms *ks, const struct stallcap_sample *r)
{
	static const char *const loop[] = { "stallcap_spin_thunk_loop", NULL };
	static const char *const write[] = { "vfs_write", NULL };

	return sc_nk(r) >= 3 && sc_kip_named(ks, sc_kernel_ips(r)[1], loop) &&
	       sc_kstack_has(ks, r, write) && sc_kstack_whole_syscall(ks, r);
}

/*
 * The thunk holding @ip: the symbol of a name like __x86_indirect_thunk_rax
 * at or below it (kallsyms may list another name at the same address, such
 * as __softirqentry_text_end on 6.12, which ends the section before).
 */
static const struct sc_ksym *thunk_at(const struct sc_ksyms *ks, uint64_t ip)
{
	static const char *const thunk[] = { "__x86_indirect_thunk_", NULL };
	const struct sc_ksym *sym = sc_ksym_at(ks, ip), *alias;

	if (!sym)
		return NULL;
	while (sym > ks->sym && sym[-1].addr == sym->addr)
		sym--;
	for (alias = sym; alias < ks->sym + ks->n && alias->addr == sym->addr; alias++)
		if (sc_name_has_prefix(alias->name, thunk))
			return alias;
	return NULL;
}

static void count_samples(struct __test_metadata *_metadata, const struct sc_ksyms *ks,
			  const struct sc_records *rs, pid_t tid, struct thunk_counts *c)
{
	const struct stallcap_sample *r;
	const struct sc_ksym *sym;

	for (size_t i = 0; (r = sc_records_nth(rs, STALLCAP_REC_SAMPLE, i)); i++) {
		/* a capture that could not interrupt the thread claims no frame */
		if (r->tid != (__u32)tid || !sc_nk(r) || r->state != STALLCAP_STATE_RUNNING ||
		    r->flags & (STALLCAP_SAMPLE_MIGRATED | STALLCAP_SAMPLE_ABANDONED |
				STALLCAP_SAMPLE_USER_MODE))
			continue;
		c->samples++;
		sym = thunk_at(ks, sc_kernel_ips(r)[0]);
		count_frame0(c, sym ? sym->name : sc_ksym_name(ks, sc_kernel_ips(r)[0]) ?: "?");
		if (!sym)
			continue;
		c->in_thunk++;
		c->at_entry += sym->addr == sc_kernel_ips(r)[0];
		if (thunk_sample_whole(ks, r)) {
			c->whole++;
			continue;
		}
		EXPECT_TRUE(false) TH_LOG("a sample in %s+%#llx lacks its callers (flags %#x):",
					  sym->name,
					  (unsigned long long)(sc_kernel_ips(r)[0] - sym->addr),
					  r->flags);
		sc_log_sample(ks, r);
	}
}

/*
 * What both tests need: the test module's @file, root, retpolines (their
 * mitigation in @mit), a session that may see kernel addresses, kallsyms.
 * Skips, or fails, leaving _metadata->exit_code set.
 */
static void thunk_setup(struct __test_metadata *_metadata, const char *file,
			struct sc_session *s, struct sc_ksyms *ks, char *mit, size_t len)
{
	if (access(file, W_OK))
		SKIP(return, "no test module (%s)", file);
	if (geteuid() != 0)
		SKIP(return, "needs root (kernel addresses, debugfs)");
	if (!retpolines_in_use(mit, len))
		SKIP(return, "indirect calls do not go through retpoline thunks (spectre_v2: %s)",
		     mit);
	ASSERT_EQ(0, sc_session_setup(s, NULL));
	ASSERT_TRUE(s->info.features & STALLCAP_FEAT_KADDR);
	ASSERT_EQ(0, sc_ksyms_load(ks));
}

TEST(a_sample_in_a_retpoline_thunk_has_its_callers)
{
	struct sc_session s = { .fd = -1 };
	struct sc_records rs = { 0 };
	struct thunk_counts c = { 0 };
	struct sc_ksyms ks;
	pid_t tid = sc_gettid();
	unsigned int spins;
	char mit[256];

	thunk_setup(_metadata, SPIN_FILE, &s, &ks, mit, sizeof(mit));
	if (_metadata->exit_code)
		return;

	for (spins = 0; spins < MAX_SPINS && c.at_entry < WANT_AT_ENTRY; spins++) {
		ASSERT_EQ(0, sc_arm(s.fd, TIMEOUT, 0, TAG));
		ASSERT_EQ(0, sc_write_num(SPIN_FILE, SPIN_MS));
		ASSERT_EQ(0, sc_disarm(s.fd));
		sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS);
		count_samples(_metadata, &ks, &rs, tid, &c);
		sc_records_free(&rs);
	}
	ksft_print_msg("spectre_v2: %s; %u spins: %u samples, %u in a thunk (%u at its first instruction), %u of them whole\n",
		       mit, spins, c.samples, c.in_thunk, c.at_entry, c.whole);
	log_frame0(&c, "frame 0");
	EXPECT_LT(0u, c.at_entry) TH_LOG("no sample at a thunk's first instruction");
	EXPECT_EQ(c.in_thunk, c.whole);
	sc_ksyms_free(&ks);
	sc_session_close(&s);
}

/*
 * The same thunk loop, interrupted a millisecond after each spin (at
 * wherever the timer found it) by an irq_work that spins with interrupts
 * off: the samples
 * taken by NMI during such a spin cross the interrupt's register frame,
 * whose ip is the loop, its callee, or now and then a thunk.  The unwind
 * must go on past that frame as it does at frame 0 (seen on 7.3 in a real
 * broker: a softirq's stack cut at the __x86_indirect_thunk_rax+0x0 it
 * interrupted).
 */
#define IRQ_SPIN_FILE	"/sys/kernel/debug/stallcap_spin/thunk_irq"
#define IRQ_WANT_IN_THUNK	2
/*
 * More spins than the thunk's first test: samples over the interrupt land
 * in the thunk loop a fraction of the time, and on the debug kernel also
 * in the softirqs the timer's interrupt runs before it (CI97: 29 samples
 * over an interrupt in 60 spins, none in a thunk; 2 in 14 spins on retry)
 */
#define IRQ_MAX_SPINS	150

/* The frame an interrupt entry interrupted, under irq_work's spin; -1: none */
static int interrupted_frame(const struct sc_ksyms *ks, const struct stallcap_sample *r)
{
	static const char *const spin[] = { "stallcap_spin_irq_work_loop", NULL };
	static const char *const entry[] = { "asm_sysvec_", "asm_common_interrupt", NULL };
	const __u64 *ip = sc_kernel_ips(r);

	if (!sc_nk(r) || !sc_kip_named(ks, ip[0], spin))
		return -1;
	for (unsigned int i = 1; i + 1 < sc_nk(r); i++)
		if (sc_kip_named(ks, ip[i], entry))
			return (int)i + 1;
	return -1;
}

static void count_interrupted(struct __test_metadata *_metadata, const struct sc_ksyms *ks,
			      const struct sc_records *rs, pid_t tid, struct thunk_counts *c)
{
	static const char *const loop[] = { "stallcap_spin_thunk_loop", NULL };
	static const char *const write[] = { "vfs_write", NULL };
	const struct stallcap_sample *r;
	const struct sc_ksym *sym;
	const __u64 *ip;
	int i;

	for (size_t k = 0; (r = sc_records_nth(rs, STALLCAP_REC_SAMPLE, k)); k++) {
		if (r->tid != (__u32)tid || r->state != STALLCAP_STATE_RUNNING ||
		    r->flags & (STALLCAP_SAMPLE_MIGRATED | STALLCAP_SAMPLE_ABANDONED |
				STALLCAP_SAMPLE_USER_MODE))
			continue;
		i = interrupted_frame(ks, r);
		if (i < 0)
			continue;
		c->samples++;
		ip = sc_kernel_ips(r);
		sym = thunk_at(ks, ip[i]);
		count_frame0(c, sym ? sym->name : sc_ksym_name(ks, ip[i]) ?: "?");
		if (!sym)
			continue;
		c->in_thunk++;
		c->at_entry += sym->addr == ip[i];
		/* the thunk's caller next, then the write, whole to the entry */
		if ((unsigned int)i + 1 < sc_nk(r) && sc_kip_named(ks, ip[i + 1], loop) &&
		    sc_kstack_has(ks, r, write) && sc_kstack_whole_syscall(ks, r)) {
			c->whole++;
			continue;
		}
		EXPECT_TRUE(false) TH_LOG("a sample over an interrupt of %s+%#llx lacks its callers (flags %#x):",
					  sym->name, (unsigned long long)(ip[i] - sym->addr),
					  r->flags);
		sc_log_sample(ks, r);
	}
}

TEST(a_sample_over_an_interrupt_of_a_retpoline_thunk_has_its_callers)
{
	struct sc_session s = { .fd = -1 };
	struct sc_records rs = { 0 };
	struct thunk_counts c = { 0 };
	unsigned int spins, eagain = 0;
	struct sc_ksyms ks;
	int wr;
	pid_t tid = sc_gettid();
	char mit[256];

	thunk_setup(_metadata, IRQ_SPIN_FILE, &s, &ks, mit, sizeof(mit));
	if (_metadata->exit_code)
		return;

	for (spins = 0; spins < IRQ_MAX_SPINS && c.in_thunk < IRQ_WANT_IN_THUNK; spins++) {
		ASSERT_EQ(0, sc_arm(s.fd, TIMEOUT, 0, TAG));
		wr = sc_write_num(IRQ_SPIN_FILE, SPIN_MS);
		if (wr) {
			ASSERT_EQ(-EAGAIN, wr);
			eagain++;
		}
		ASSERT_EQ(0, sc_disarm(s.fd));
		sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS);
		count_interrupted(_metadata, &ks, &rs, tid, &c);
		sc_records_free(&rs);
	}
	ksft_print_msg("%u spins (%u without an irq_work spin): %u samples over an interrupt, %u of a thunk (%u at its first instruction), %u of them whole\n",
		       spins, eagain, c.samples, c.in_thunk, c.at_entry, c.whole);
	log_frame0(&c, "interrupted frame");
	EXPECT_LE(IRQ_WANT_IN_THUNK, c.in_thunk) TH_LOG("no sample over an interrupt of a thunk");
	EXPECT_EQ(c.in_thunk, c.whole);
	sc_ksyms_free(&ks);
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
