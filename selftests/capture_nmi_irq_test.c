// SPDX-License-Identifier: GPL-2.0
/*
 * An NMI sent to capture a thread spinning in user code on another CPU may
 * land while that CPU serves an interrupt on top of the thread: stallcap's
 * own buddy checker (buddy_fn), a watch timer, the tick.  That interrupt is
 * not the thread's stall: stallcap's own code is looked under (the thread's
 * registers the interrupt saved), another interrupt is retried (bounded);
 * neither may be reported as the thread's frame 0.
 *
 * To make the collision likely the buddy checkers run at their shortest
 * period (check_us=100) on both CPUs, and the thread is sampled at the
 * shortest interval (sample_cap = min_deadline) for many samples, by NMI
 * from CPU 0 while it spins on CPU 1; idle watches in other sessions make
 * every buddy_fn walk a long list.  No sample may have a function of the
 * stallcap module as its kernel frame 0 (before the fix about one NMI in six
 * landed in stallcap's code under TCG).  How many are flagged as taken in
 * another interrupt (after the bounded retries) is logged, not judged: it
 * depends on how much of the CPU interrupts take (most, on the debug kernel).
 *
 * Also here, with the same setup: a thread migrating onto the timer's CPU
 * is not read from the timer's own frame, an NMI stallcap did not send
 * is not swallowed (issue 11, review items 12 and 7), and stallcap's own
 * NMI, held off on its CPU long after its last send, is not reported to the
 * kernel as unknown (2026-11-28).
 */
#include "stallcap_test.h"

#include "sc_harness.h"

#define TAG		0x6e6d69697271ULL
#define CHECK_US	"/sys/module/stallcap/parameters/check_us"
#define SPIN_DIR	"/sys/kernel/debug/stallcap_spin/"
#define BLOCK_MS	100	/* NMIs held off on the thread's CPU: several timeouts */
/* samples 1, 2, 4 and 8 ms apart: the next is due 16 ms after the 4th */
#define BLOCK_AFTER_SAMPLES	4
#define BLOCK_SAMPLE_CAP_MS	20
/* samples 1, 2, ... 64 ms apart: the 9th is due 128 ms after the 8th */
#define LONG_AFTER_SAMPLES	8
#define LONG_SAMPLE_CAP_MS	200
#define LONG_BLOCK_GAP_MS	60	/* the 8th send's window closed */
#define LONG_BLOCK_MS		250	/* past the 9th's send, timeout and window */
#define STALLS		12	/* stalls of max_samples samples each */
#define MIN_NMI_SAMPLES	100	/* NMI samples needed for the test to mean much */
#define BUDGET_MS	20000	/* keep going for this long to reach them */
#define SC_STR_(x)	#x
#define SC_STR(x)	SC_STR_(x)
#define IDLE_WATCHES	192	/* armed far ahead: buddy_fn walks them all */

/*
 * Addresses of the stallcap module's text symbols in /proc/kallsyms, sorted:
 * a frame is stallcap's when the symbol containing it is one of them (names
 * alone are ambiguous: the module has its own copies of kernel inlines).
 */
struct own_syms {
	uint64_t *addr;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int own_syms_load(struct own_syms *o)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], mod[64], type;
	unsigned long long addr;

	memset(o, 0, sizeof(*o));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s [%63[^]]]", &addr, &type, name, mod) != 4)
			continue;
		if (strcmp(mod, "stallcap") || (type != 't' && type != 'T'))
			continue;
		o->addr = realloc(o->addr, (o->n + 1) * sizeof(*o->addr));
		if (!o->addr)
			abort();
		o->addr[o->n++] = addr;
	}
	fclose(f);
	qsort(o->addr, o->n, sizeof(*o->addr), cmp_u64);
	return o->n ? 0 : -1;
}

/* Address of the text symbol containing @ip, or 0. */
static uint64_t ksym_addr(const struct sc_ksyms *ks, uint64_t ip)
{
	const struct sc_ksym *sym = sc_ksym_at(ks, ip);

	return sym ? sym->addr : 0;
}

/* Is @ip inside a function of the stallcap module? */
static bool own_ip(const struct sc_ksyms *ks, const struct own_syms *o, uint64_t ip)
{
	uint64_t a = ksym_addr(ks, ip);

	return a && bsearch(&a, o->addr, o->n, sizeof(*o->addr), cmp_u64);
}

static bool own_named(const struct sc_ksyms *ks, const struct own_syms *o, const char *name)
{
	for (size_t i = 0; i < ks->n; i++)
		if (!strcmp(ks->sym[i].name, name) && own_ip(ks, o, ks->sym[i].addr))
			return true;
	return false;
}

static void own_syms_free(struct own_syms *o)
{
	free(o->addr);
}

static int read_param(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	return ok ? 0 : -1;
}

static int write_param(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(val, f) < 0;
	ret |= fclose(f);
	return ret ? -1 : 0;
}

FIXTURE(nmi_irq) {
	struct sc_session s;
	struct sc_ksyms ks;
	struct own_syms own;
	char check_us[32];
	bool restore;
	struct sc_session idle[IDLE_WATCHES];
	int nr_idle;
};

FIXTURE_SETUP(nmi_irq)
{
	struct sc_opts o = {
		.ring_bytes = 4 << 20, .user_stack_bytes = 64,
		.max_samples = SC_MAX_SAMPLES,
	};

	self->s.fd = -1;
	if (geteuid() != 0)
		SKIP(return, "needs root (check_us, kernel addresses)");
	if (sc_nr_cpus_allowed() < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, sc_open(&self->s));
	if (!(self->s.info.features & STALLCAP_FEAT_NMI))
		SKIP(return, "capture by IPI: no NMI lands on top of an interrupt");
	ASSERT_TRUE(self->s.info.features & STALLCAP_FEAT_KADDR);
	o.sample_cap_ns = self->s.info.min_deadline_ns;
	ASSERT_EQ(0, sc_configure(&self->s, &o));
	ASSERT_EQ(0, sc_map(&self->s));
	ASSERT_EQ(0, sc_ksyms_load(&self->ks));
	ASSERT_EQ(0, own_syms_load(&self->own)) TH_LOG("no [stallcap] symbols");
	ASSERT_TRUE(own_named(&self->ks, &self->own, "buddy_fn")) TH_LOG("buddy_fn not found");
	ASSERT_EQ(0, read_param(CHECK_US, self->check_us, sizeof(self->check_us)));
	ASSERT_EQ(0, write_param(CHECK_US, "100"));
	self->restore = true;
	ASSERT_EQ(0, sc_pin_self(0));
	for (int i = 0; i < IDLE_WATCHES; i++) {
		struct sc_opts idle = {
			.user_stack_bytes = 8, .ring_bytes = sc_min_ring_bytes(8),
			.no_map = true,
		};
		struct sc_session *s = &self->idle[i];

		ASSERT_EQ(0, sc_session_setup(s, &idle));
		self->nr_idle++;
		ASSERT_EQ(0, sc_arm(s->fd, SC_MS(60000), 0, TAG + 1));
	}
}

FIXTURE_TEARDOWN(nmi_irq)
{
	if (self->restore)
		write_param(CHECK_US, self->check_us);
	for (int i = 0; i < self->nr_idle; i++)
		sc_session_close(&self->idle[i]);
	own_syms_free(&self->own);
	sc_ksyms_free(&self->ks);
	sc_session_close(&self->s);
}

/*
 * Frame 0 and every frame up to __schedule stallcap's (or the tracepoint's
 * iterator): the sched_switch probe, which __schedule calls directly.  The
 * timer's own frame read as blocked would have hrtimer and interrupt
 * frames between stallcap's and whatever it interrupted.
 */
static bool in_switch_probe(const struct sc_ksyms *ks, const struct own_syms *own,
			    const struct stallcap_sample *r)
{
	for (unsigned int i = 0; i < sc_nk(r); i++) {
		/* a return address past frame 0: the call is the byte before */
		uint64_t ip = sc_kernel_ips(r)[i] - (i > 0);
		const char *name;

		if (own_ip(ks, own, ip))
			continue;
		name = sc_ksym_name(ks, ip);
		if (name && !strcmp(name, "__traceiter_sched_switch"))
			continue;
		return name && !strcmp(name, "__schedule");
	}
	return false;
}

/*
 * Is @r's kernel frame 0 stallcap's own code in an interrupt on top of the
 * thread, or in the timer's own frame?  stallcap code that the thread runs
 * itself is the thread's own time and may be frame 0: its deferred
 * user-stack task_work on the way back to user mode, and its own ioctl
 * (on the debug kernel an ARM can outlast its 1 ms deadline, and the
 * timer then rightly finds the thread in stallcap_watch_arm) when no
 * interrupt entry lies between that frame and the system call, and its
 * sched_switch probe (heartbeat watches' doze, module/beat_doze.c), which
 * the thread runs in __schedule at each of its context switches (CI91: an
 * NMI found the pinging thread at the probe's first instruction).
 */
static bool own_frame0_of(const struct sc_ksyms *ks, const struct own_syms *own,
			  const struct stallcap_sample *r)
{
	static const char *const task_work[] = { "task_work_run", NULL };
	static const char *const own_ioctl[] = { "__x64_sys_ioctl", NULL };

	if (!sc_nk(r) || !own_ip(ks, own, sc_kernel_ips(r)[0]))
		return false;
	if (sc_kstack_has(ks, r, task_work) || in_switch_probe(ks, own, r))
		return false;
	return !sc_kstack_has(ks, r, own_ioctl) || sc_kstack_under_interrupt(ks, r);
}

#define own_frame0(self, r)	own_frame0_of(&(self)->ks, &(self)->own, (r))

/*
 * Two system call sites, each a bare SYSCALL instruction followed by a
 * global label: the user instruction pointer of a thread inside that call.
 */
extern const char site_getppid_ret[], site_getpid_ret[];

static SC_NOINLINE long site_getppid(void)
{
	long ret;

	asm volatile("syscall\n.globl site_getppid_ret\nsite_getppid_ret:"
		     : "=a"(ret) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
	return ret;
}

static SC_NOINLINE long site_getpid(void)
{
	long ret;

	asm volatile("syscall\n.globl site_getpid_ret\nsite_getpid_ret:"
		     : "=a"(ret) : "0"((long)SYS_getpid) : "rcx", "r11", "memory");
	return ret;
}

static uintptr_t syscall_loop_frame;	/* the loop's frame address */

/* Until *@stop: system calls that do nothing, back to back, two sites. */
static void syscall_loop(const volatile int *stop)
{
	syscall_loop_frame = (uintptr_t)__builtin_frame_address(0);
	while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
		site_getppid();
		site_getpid();
	}
}

/*
 * A sample whose only kernel frame is in the system call entry or return
 * path (entry_SYSCALL_64 and its inner labels, entry_SYSRETQ_*): its user
 * registers are those at one of the two sites (the stack pointer in its
 * frame), and before the entry's
 * stack switch (entry_SYSCALL_64 itself: %rax not saved yet) the call's
 * number names the site.  Return: a reason they are not, or NULL.
 */
static const char *entry_window_regs_wrong(const struct sc_ksyms *ks,
					   const struct stallcap_sample *r)
{
	const struct stallcap_regs_x86_64 *u = sc_regs(r);
	const char *fn = sc_ksym_name(ks, sc_kernel_ips(r)[0]);
	uint64_t want;

	if (!sc_section(r, STALLCAP_SEC_REGS))
		return "no user registers";
	if (u->ip != (uintptr_t)site_getppid_ret && u->ip != (uintptr_t)site_getpid_ret)
		return "user ip at neither call site";
	/* a site's frame is just below the loop's */
	if (u->sp > syscall_loop_frame || syscall_loop_frame - u->sp > 256)
		return "user sp not in the call site's frame";
	if (strcmp(fn, "entry_SYSCALL_64"))
		return NULL;	/* the return: %rax holds the result */
	want = u->ax == SYS_getppid ? (uintptr_t)site_getppid_ret :
	       u->ax == SYS_getpid ? (uintptr_t)site_getpid_ret : 0;
	return u->ip == want ? NULL : "user ip not the site of the call in %rax";
}

/*
 * One stall: armed on CPU 0, then @loop on CPU 1 until the stopper saw the
 * stall's samples taken.
 */
static int stall_once_in(struct sc_session *s, uint64_t timeout, uint64_t *t_spin,
			 void (*loop)(const volatile int *stop))
{
	struct sc_stopper st = { .cpu = 0 };
	int ret;

	if (sc_pin_self(0))
		return -1;
	if (sc_stopper_start(&st, s->fd, SC_MAX_SAMPLES, SC_WAIT_MS))
		return -1;
	ret = sc_arm(s->fd, timeout, 0, TAG);
	sc_pin_self(1);	/* the timer stays on CPU 0: NMIs to CPU 1 */
	*t_spin = sc_now_ns();
	if (!ret)
		loop(&st.stop);
	else
		st.stop = 1;
	sc_stopper_join(&st);
	if (sc_disarm(s->fd))
		ret = -1;
	return ret;
}

/* What a case counts in the NMI samples of its stalls. */
struct nmi_counts {
	size_t nmi, kernel_mode, irq_flag, own;		/* the spin */
	size_t entry, wrong, other_cut;			/* the system call loop */
	size_t min_entry;	/* go on (within the budget) until this many */
};

/*
 * Stalls of @loop (at least STALLS, more until MIN_NMI_SAMPLES NMI samples
 * and @c->min_entry in the system call entry's window, or the budget is
 * spent); each NMI sample of the thread in kernel mode
 * goes to @kernel_sample, and all are counted in @c.
 */
static void nmi_stalls(struct __test_metadata *_metadata, FIXTURE_DATA(nmi_irq) *self,
		       void (*loop)(const volatile int *stop),
		       void (*kernel_sample)(FIXTURE_DATA(nmi_irq) *self,
					     const struct stallcap_sample *r,
					     struct nmi_counts *c),
		       struct nmi_counts *c)
{
	uint64_t timeout = SC_MS(1), end = sc_now_ns() + SC_MS(BUDGET_MS);
	struct sc_records rs = {};

	for (int i = 0; i < STALLS || ((c->nmi < MIN_NMI_SAMPLES || c->entry < c->min_entry) &&
					sc_now_ns() < end); i++) {
		uint64_t t_spin = 0;

		ASSERT_EQ(0, stall_once_in(&self->s, timeout, &t_spin, loop));
		ASSERT_LE(0, sc_ring_collect(&self->s, &rs, STALLCAP_REC_STALL_END,
					     sc_records_count(&rs, STALLCAP_REC_STALL_END) + 1,
					     SC_WAIT_MS));
		for (size_t j = 0; j < rs.n; j++) {
			const struct stallcap_sample *r = (const void *)rs.rec[j];

			if (r->hdr.type != STALLCAP_REC_SAMPLE || r->capture_ns < t_spin ||
			    r->path != STALLCAP_PATH_NMI || r->user_tag != TAG)
				continue;
			c->nmi++;
			/* the thread's own user registers, under any interrupt */
			EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_NO_USER);
			if (r->flags & (STALLCAP_SAMPLE_IN_HARDIRQ | STALLCAP_SAMPLE_IN_SOFTIRQ))
				c->irq_flag++;
			if (r->flags & STALLCAP_SAMPLE_USER_MODE || !sc_nk(r))
				continue;
			c->kernel_mode++;
			kernel_sample(self, r, c);
		}
		sc_records_free(&rs);
		memset(&rs, 0, sizeof(rs));
	}
	EXPECT_LE(MIN_NMI_SAMPLES, c->nmi) TH_LOG("too few NMI samples to judge");
}

/* Frame 0 of stallcap's own code in an interrupt on top of the thread? */
static void count_own_frame0(FIXTURE_DATA(nmi_irq) *self, const struct stallcap_sample *r,
			     struct nmi_counts *c)
{
	if (own_frame0(self, r) && ++c->own <= 3) {
		printf("# sample %u of stall %llu: frame 0 is stallcap's %s\n", r->sample_index,
		       (unsigned long long)r->stall_id, sc_ksym_name(&self->ks, sc_kernel_ips(r)[0]));
		sc_log_sample(&self->ks, r);
	}
}

TEST_F_TIMEOUT(nmi_irq, nmi_on_top_of_an_interrupt_is_not_the_threads_frame_0, 180)
{
	struct nmi_counts c = {};

	nmi_stalls(_metadata, self, spin_in_user_caller, count_own_frame0, &c);
	TH_LOG("%zu NMI samples: %zu in kernel mode, %zu flagged in an interrupt, %zu with a stallcap function as frame 0",
	       c.nmi, c.kernel_mode, c.irq_flag, c.own);
	EXPECT_EQ(0, c.own);
}

/*
 * A thread making system calls back to back, sampled by NMI.  An NMI
 * inside the system call entry before its switch to the kernel stack
 * (SYSCALL does not switch stacks) or inside the return after the switch
 * back finds no kernel stack in use: the interrupted instruction is the
 * whole kernel stack, one frame, not a cut one (mosquitto's samples showed
 * "kernel stack truncated" there, 2026-12-02), and the user registers are
 * the moment's (entry_window_regs_wrong()).  Under TCG about one NMI sample
 * in ten lands there, one in a hundred or fewer on the debug kernel (its
 * system calls are longer: 0 of 248 and 0 of 233 in CI69), so the stalls
 * go on until three have.  Other kernel stacks cut are logged, not judged: the
 * unwinder stops in a few places of its own (5.10's retpoline thunks, an
 * interrupt's entry code right after error_entry() on the kernel stack,
 * the context switch on the next thread's stack).
 */
/* A sample in the system call entry's window is right; others are logged. */
static void check_entry_window(FIXTURE_DATA(nmi_irq) *self, const struct stallcap_sample *r,
			       struct nmi_counts *c)
{
	const char *fn = sc_ksym_name(&self->ks, sc_kernel_ips(r)[0]);
	const char *why;

	if (!fn || (strcmp(fn, "entry_SYSCALL_64") && strncmp(fn, "entry_SYSRETQ", 13))) {
		if (r->flags & STALLCAP_SAMPLE_KSTACK_TRUNC && ++c->other_cut <= 3) {
			printf("# sample %u of stall %llu: kernel stack cut at %s\n",
			       r->sample_index, (unsigned long long)r->stall_id, fn ? fn : "?");
			sc_log_sample(&self->ks, r);
		}
		return;
	}
	c->entry++;
	why = entry_window_regs_wrong(&self->ks, r);
	if (sc_nk(r) != 1 || r->flags & STALLCAP_SAMPLE_KSTACK_TRUNC)
		why = "not one whole kernel frame";
	if (why && ++c->wrong <= 3) {
		printf("# sample %u of stall %llu at %s: %s\n", r->sample_index,
		       (unsigned long long)r->stall_id, fn, why);
		sc_log_sample(&self->ks, r);
	}
}

TEST_F_TIMEOUT(nmi_irq, syscall_loop_kernel_stacks_are_whole, 180)
{
	struct nmi_counts c = { .min_entry = 3 };

	nmi_stalls(_metadata, self, syscall_loop, check_entry_window, &c);
	TH_LOG("%zu NMI samples: %zu in kernel mode, %zu in the system call entry's window (%zu wrong), %zu others cut",
	       c.nmi, c.kernel_mode, c.entry, c.wrong, c.other_cut);
	EXPECT_LT(0, c.entry) TH_LOG("no sample in the system call entry's window");
	EXPECT_EQ(0, c.wrong);
}

/* Until *@stop: migrate between CPU 1 and CPU 0 (the timer's) again and again. */
static void ping_pong(const volatile int *stop)
{
	for (int cpu = 1; !__atomic_load_n(stop, __ATOMIC_ACQUIRE); cpu = !cpu)
		sc_pin_self(cpu);
}

/*
 * The timer on CPU 0 sends an NMI to CPU 1; the thread has moved on
 * (MISMATCH), and when the timer looks again it runs on CPU 0, under the
 * timer itself: it must be captured from the registers the timer
 * interrupted, not read "as blocked" from the timer's own frame (whose
 * frame 0 is stallcap's unwinder).
 */
TEST_F_TIMEOUT(nmi_irq, thread_migrating_onto_the_timers_cpu_is_not_read_from_the_timers_frame, 180)
{
	size_t samples = 0, migrated = 0, migrated_local = 0, own = 0;
	uint64_t end = sc_now_ns() + SC_MS(BUDGET_MS);
	struct sc_records rs = {};

	for (int i = 0; i < STALLS || (migrated_local < 10 && sc_now_ns() < end); i++) {
		struct sc_stopper st = { .cpu = -1 };
		int ret;

		ASSERT_EQ(0, sc_pin_self(0));
		ASSERT_EQ(0, sc_stopper_start(&st, self->s.fd, SC_MAX_SAMPLES, SC_WAIT_MS));
		ret = sc_arm(self->s.fd, SC_MS(1), 0, TAG + 2);
		if (!ret)
			ping_pong(&st.stop);
		sc_stopper_join(&st);
		ASSERT_EQ(0, ret);
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		ASSERT_LE(0, sc_ring_collect(&self->s, &rs, STALLCAP_REC_STALL_END,
					     sc_records_count(&rs, STALLCAP_REC_STALL_END) + 1,
					     SC_WAIT_MS));
		for (size_t j = 0; j < rs.n; j++) {
			const struct stallcap_sample *r = (const void *)rs.rec[j];

			if (r->hdr.type != STALLCAP_REC_SAMPLE || r->user_tag != TAG + 2)
				continue;
			samples++;
			if (r->flags & STALLCAP_SAMPLE_MIGRATED) {
				migrated++;
				migrated_local += r->path == STALLCAP_PATH_LOCAL;
			}
			if (own_frame0(self, r) && ++own <= 3) {
				TH_LOG("sample %u of stall %llu: frame 0 is stallcap's %s",
				       r->sample_index, (unsigned long long)r->stall_id,
				       sc_ksym_name(&self->ks, sc_kernel_ips(r)[0]));
				sc_log_sample(&self->ks, r);
			}
		}
		sc_records_free(&rs);
		memset(&rs, 0, sizeof(rs));
	}
	TH_LOG("%zu samples: %zu read after migrations, %zu of them under the timer, %zu with a stallcap function as frame 0",
	       samples, migrated, migrated_local, own);
	EXPECT_EQ(0, own);
}

static long read_long(const char *path)
{
	char buf[32];

	return read_param(path, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 10);
}

struct spinner {
	struct sc_session *s;
	volatile int stop;
	int ret;
};

/* Armed on CPU 0, spinning on CPU 1 until ->stop. */
static void *spinner_fn(void *arg)
{
	struct spinner *sp = arg;

	sc_pin_self(0);
	sp->ret = sc_arm(sp->s->fd, SC_MS(1), 0, TAG + 3);
	sc_pin_self(1);
	if (!sp->ret)
		spin_in_user_caller(&sp->stop);
	if (sc_disarm(sp->s->fd))
		sp->ret = -1;
	return NULL;
}

/* Has a sample of @rs caught the thread spinning in user mode? */
static bool user_mode_sample(const struct sc_records *rs)
{
	for (size_t j = 0; j < rs->n; j++) {
		const struct stallcap_sample *r = (const void *)rs->rec[j];

		if (r->hdr.type == STALLCAP_REC_SAMPLE &&
		    (r->flags & STALLCAP_SAMPLE_USER_MODE))
			return true;
	}
	return false;
}

/*
 * How a try holds NMIs off: once @after samples are read (one in user
 * mode among them), @gap_ns after the last one's capture, the test module's
 * handler spins for the time @block names ("CPU MS", its nmi_block file);
 * the session samples a stall @max_samples times at most.
 */
struct block_plan {
	size_t after;
	uint64_t gap_ns;
	const char *block;
	size_t max_samples;
};

/* The latest capture time of @rs's samples. */
static uint64_t last_capture_ns(const struct sc_records *rs)
{
	uint64_t last = 0;

	for (size_t j = 0; j < rs->n; j++) {
		const struct stallcap_sample *r = (const void *)rs->rec[j];

		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->capture_ns > last)
			last = r->capture_ns;
	}
	return last;
}

/*
 * One try: a stall sampled by NMI, NMIs held off on its CPU as @bp says.
 * Returns the samples read after a timed-out request (0: the block did not
 * hold any request off, try again); the unknown NMIs counted during the
 * stall and after a raw NMI go to @during and @raw (-1 both when no block
 * was tried: no user-mode sample among the first @bp->max_samples).
 */
static int block_once(struct __test_metadata *_metadata, FIXTURE_DATA(nmi_irq) *self,
		      const struct block_plan *bp, long *during, long *raw)
{
	struct spinner sp = { .s = &self->s };
	struct sc_records rs = {};
	long before, after_block;
	int migrated = 0;
	pthread_t th;

	before = read_long(SPIN_DIR "nmi_unknown");
	if (before < 0 || sc_pin_self(0) || pthread_create(&th, NULL, spinner_fn, &sp))
		return -1;
	/*
	 * The stall has begun and the thread spins on CPU 1: its samples come
	 * by NMI there.  (Until sched_setaffinity() has moved it, which an RT
	 * kernel under TCG may take milliseconds to do, the thread is in the
	 * kernel or runnable, and a request for it names what runs instead.)
	 * The block starts once the intervals between samples are long
	 * (BLOCK_AFTER_SAMPLES): under TCG an NMI can take milliseconds to be
	 * delivered, and a sample's NMI sent just before the block's merges
	 * with it; that request is claimed at the block's start, and its
	 * capture completes when the block ends, which times nothing out.
	 */
	for (int i = 0; migrated >= 0 && (!user_mode_sample(&rs) ||
			sc_records_count(&rs, STALLCAP_REC_SAMPLE) < bp->after); i++) {
		size_t want = sc_records_count(&rs, STALLCAP_REC_SAMPLE) + 1;

		if (want > bp->max_samples) {	/* none in user mode */
			__atomic_store_n(&sp.stop, 1, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
			sc_ring_collect(&self->s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS);
			sc_records_free(&rs);
			*during = *raw = -1;
			return sp.ret ? -1 : 0;
		}
		if (i == SC_MAX_SAMPLES ||
		    sc_ring_collect(&self->s, &rs, STALLCAP_REC_SAMPLE, want,
				    SC_WAIT_MS) < (int)want)
			migrated = -1;
	}
	if (bp->gap_ns) {
		uint64_t at = last_capture_ns(&rs) + bp->gap_ns, now = sc_now_ns();

		if (at > now)
			sc_sleep_ms((at - now + 999999) / 1000000);
	}
	/* the block's NMI handler "took too long" on purpose (scripts/vmtest.sh) */
	sc_kmsg("vmtest: allow-slow-nmi begin\n");
	if (migrated || write_param(SPIN_DIR "nmi_block", bp->block))
		migrated = -1;
	sc_sleep_ms(5);
	__atomic_store_n(&sp.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (sp.ret || sc_ring_collect(&self->s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) < 1)
		migrated = -1;
	for (size_t j = 0; migrated >= 0 && j < rs.n; j++) {
		const struct stallcap_sample *r = (const void *)rs.rec[j];

		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->flags & STALLCAP_SAMPLE_MIGRATED)
			migrated++;
	}
	/* none timed out (the NMIs merged? see above): how */
	for (size_t j = 0; migrated == 0 && j < rs.n; j++) {
		const struct stallcap_sample *r = (const void *)rs.rec[j];
		const struct stallcap_stall_end *e = (const void *)rs.rec[j];

		if (r->hdr.type == STALLCAP_REC_SAMPLE)
			TH_LOG("  sample %u: cpu %u path %u state %u flags %#x retries %u at +%llu us",
			       r->sample_index, r->cpu, r->path, r->state, r->flags,
			       r->migrate_retries,
			       (unsigned long long)(r->capture_ns - r->deadline_ns) / 1000);
		if (r->hdr.type == STALLCAP_REC_STALL_END)
			TH_LOG("  stall end: %u samples, at +%llu us", e->nr_samples,
			       (unsigned long long)(e->end_ns - e->deadline_ns) / 1000);
	}
	sc_records_free(&rs);
	/* stallcap's last send is long past: its window is closed */
	sc_sleep_ms(100);
	sc_kmsg("vmtest: allow-slow-nmi end\n");
	after_block = read_long(SPIN_DIR "nmi_unknown");
	if (write_param(SPIN_DIR "nmi_raw", "1"))
		return -1;
	sc_sleep_ms(50);
	*during = after_block - before;
	*raw = read_long(SPIN_DIR "nmi_unknown") - after_block;
	return migrated;
}

/*
 * Tries of @bp (a session configured with @o) until one times a request
 * out: no unknown NMI may be counted during the stall, exactly one after a
 * raw NMI nobody sent for stallcap.
 */
static void block_tries(struct __test_metadata *_metadata, FIXTURE_DATA(nmi_irq) *self,
			const struct sc_opts *o, const struct block_plan *bp)
{
	long during = 0, raw = 0;
	int migrated = 0;

	/* the usual checking period: the timer stays on CPU 0 */
	ASSERT_EQ(0, write_param(CHECK_US, self->check_us));
	ASSERT_EQ(0, sc_configure(&self->s, o));
	for (int attempt = 1; attempt <= SC_ATTEMPTS && migrated < 1; attempt++) {
		migrated = block_once(_metadata, self, bp, &during, &raw);
		ASSERT_LE(0, migrated);
		TH_LOG("attempt %d: %d samples read after a timed-out NMI; unknown NMIs: %ld during, %ld after the raw one",
		       attempt, migrated, during, raw);
		if (raw < 0)
			continue;	/* no block tried */
		EXPECT_EQ(0, during) TH_LOG("stallcap's own NMI reported unknown");
		EXPECT_EQ(1, raw) TH_LOG("the raw NMI was swallowed");
	}
	EXPECT_LE(1, migrated) TH_LOG("no request timed out: the block never held NMIs off");
}

/*
 * NMIs carry no sender.  Held off on the thread's CPU (the test module's
 * NMI handler spins there BLOCK_MS), stallcap's requests time out and are
 * revoked one after another while their NMIs merge into one; the late NMI
 * is stallcap's to swallow, but afterwards an NMI nobody sent for stallcap
 * must still reach the kernel as unknown.  (A count of revoked requests,
 * as before, kept the surplus and swallowed that NMI.)
 */
TEST_F_TIMEOUT(nmi_irq, an_nmi_stallcap_did_not_send_is_not_swallowed, 180)
{
	const struct sc_opts o = {
		.ring_bytes = 4 << 20, .user_stack_bytes = 64,
		.max_samples = SC_MAX_SAMPLES, .sample_cap_ns = SC_MS(BLOCK_SAMPLE_CAP_MS),
	};
	const struct block_plan plan = {
		.after = BLOCK_AFTER_SAMPLES, .block = "1 " SC_STR(BLOCK_MS),
		.max_samples = SC_MAX_SAMPLES,
	};

	if (access(SPIN_DIR "nmi_block", W_OK))
		SKIP(return, "no test module with NMIs (%s)", SPIN_DIR);
	block_tries(_metadata, self, &o, &plan);
}

/*
 * NMIs held off for long after stallcap's last send (a long NMI handler
 * elsewhere): samples 64 and 128 ms apart (cap LONG_SAMPLE_CAP_MS); after
 * the 8th (LONG_AFTER_SAMPLES), with its own send's window (50 ms) closed,
 * the test module's handler spins LONG_BLOCK_MS on the thread's CPU.  The
 * 9th sample, the last (max_samples), is sent 128 ms after the 8th, inside
 * the block: its request times out and is revoked, and no send follows.
 * Its NMI, held off, comes when the block ends, far past the send's window:
 * it is still stallcap's, owed since the revoke, and must not reach the
 * kernel as unknown; an NMI nobody sent for stallcap afterwards still must.
 * (The block's own NMI comes with no stallcap send within 50 ms: stallcap
 * does not claim it, so the kernel does not swallow the NMI after it as the
 * second event of one NMI.)
 */
TEST_F_TIMEOUT(nmi_irq, a_revoked_request_nmi_held_off_for_long_is_not_unknown, 180)
{
	const struct sc_opts o = {
		.ring_bytes = 4 << 20, .user_stack_bytes = 64,
		.max_samples = LONG_AFTER_SAMPLES + 1,
		.sample_cap_ns = SC_MS(LONG_SAMPLE_CAP_MS),
	};
	const struct block_plan plan = {
		.after = LONG_AFTER_SAMPLES, .gap_ns = SC_MS(LONG_BLOCK_GAP_MS),
		.block = "1 " SC_STR(LONG_BLOCK_MS), .max_samples = LONG_AFTER_SAMPLES + 1,
	};

	if (access(SPIN_DIR "nmi_block", W_OK))
		SKIP(return, "no test module with NMIs (%s)", SPIN_DIR);
	block_tries(_metadata, self, &o, &plan);
}

TEST_HARNESS_MAIN
