// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that misses its deadline inside a long system call: the record
 * says it was running in kernel mode, its kernel frames (resolved with
 * /proc/kallsyms, as root) name the kernel functions doing the work, and its
 * user registers are those saved at the system call's entry.
 */
#include <sys/stat.h>

#include "stallcap_test.h"

#include "sc_harness.h"
#include "stall_util.h"

#define TAG		0x6b65726e656c3031ULL
#define MIB		(1024UL * 1024)

/* Functions on the kernel stack for the whole of each system call. */
static const char *const populate_fns[] = {
	"__mm_populate", "populate_vma_page_range", "__get_user_pages", NULL,
};
static const char *const mmap_entry_fns[] = {
	"vm_mmap_pgoff", "ksys_mmap_pgoff", "__x64_sys_mmap", "do_syscall_64", NULL,
};
static const char *const shmem_read_fns[] = { "shmem_file_read_iter", NULL };
static const char *const read_entry_fns[] = {
	"vfs_read", "ksys_read", "__x64_sys_read", "do_syscall_64", NULL,
};

FIXTURE(kernel) {
	struct sc_session s;
	struct sc_records rs;
	struct sc_ksyms ks;
	uint64_t timeout;
};

static int read_int_file(const char *path, int dflt)
{
	FILE *f = fopen(path, "r");
	int v = dflt;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

FIXTURE_SETUP(kernel)
{
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	if (geteuid() != 0 || read_int_file("/proc/sys/kernel/kptr_restrict", 0) >= 2)
		SKIP(return, "kernel addresses are hidden from this user");
	ASSERT_TRUE(self->s.info.features & STALLCAP_FEAT_KADDR)
		TH_LOG("root with kptr_restrict < 2 must see kernel addresses");
	if (sc_ksyms_load(&self->ks))
		SKIP(return, "no addresses in /proc/kallsyms");
	self->timeout = SC_MS(10);
	if (self->timeout < self->s.info.min_deadline_ns)
		self->timeout = self->s.info.min_deadline_ns;
	ASSERT_EQ(0, sc_pin_self(0));
}

FIXTURE_TEARDOWN(kernel)
{
	sc_ksyms_free(&self->ks);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;
	char line[128];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

SC_NOINLINE long populate_in_kernel(size_t len)
{
	long ret = raw_syscall6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	__asm__ volatile ("" ::: "memory");	/* no tail call: keep this frame */
	return ret;
}

SC_NOINLINE long read_in_kernel(int fd, void *buf, size_t len)
{
	long ret = raw_syscall6(SYS_read, fd, (long)buf, (long)len, 0, 0, 0);

	__asm__ volatile ("" ::: "memory");
	return ret;
}

#define ATTEMPTS	SC_ATTEMPTS

/*
 * Collect the stall of one run; returns whether its first sample found the
 * thread running in the system call's work (@work_fns): not preempted (the
 * deadline may find it so on a loaded TCG host, or on PREEMPT_RT), not still
 * in ARM, not still in the call's setup before the work (the debug kernel's
 * KASAN once spent the whole deadline in mmap's VMA setup, CI5).  A run that
 * did not is logged and retried.
 */
static bool collect_running(struct __test_metadata *_metadata, FIXTURE_DATA(kernel) *self,
			    int attempt, const char *const *work_fns)
{
	const struct stallcap_sample *r;

	ASSERT_EQ(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1,
				     SC_WAIT_MS));
	r = sc_first_sample_of(&self->rs, sc_gettid());
	ASSERT_NE(NULL, r);
	/* a host that descheduled the vCPU may let the deadline pass in ARM */
	/* (an interrupt handled on top of the work: the thread's, but not the work) */
	if (r->state == STALLCAP_STATE_RUNNING && r->path != STALLCAP_PATH_BLOCKED && !sc_late(r) &&
	    sc_ip_in_fn(sc_regs(r)->ip, raw_syscall6) && sc_kstack_has(&self->ks, r, work_fns) &&
	    !sc_kstack_under_interrupt(&self->ks, r))
		return true;
	TH_LOG("attempt %d: the deadline found the thread in state %u, path %u, %llu us late",
	       attempt, r->state, r->path,
	       (unsigned long long)(r->capture_ns - r->deadline_ns) / 1000);
	/*
	 * The sample in full only when giving up: its lines go to the serial
	 * console through the harness's tee, which then preempted the next
	 * attempt on this CPU (CI78, debug: attempt 2 preempted by tee,
	 * attempt 3 caught just switched back in)
	 */
	if (attempt >= ATTEMPTS)
		sc_log_sample(&self->ks, r);
	ASSERT_GT(ATTEMPTS, attempt) TH_LOG("never caught running in the kernel's work");
	sc_records_free(&self->rs);
	return false;
}

/* stallcap's own code and data: [*@lo, *@hi) from /proc/modules; 0 or -1 */
static int own_module_range(uint64_t *lo, uint64_t *hi)
{
	FILE *f = fopen("/proc/modules", "r");
	unsigned long long size, base;
	char line[512], name[64];
	int ret = -1;

	if (!f)
		return -1;
	while (ret && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %llu %*s %*s %*s %llx", name, &size, &base) == 3 &&
		    !strcmp(name, "stallcap") && base) {
			*lo = base;
			*hi = base + size;
			ret = 0;
		}
	fclose(f);
	return ret;
}

/* Index of @r's first kernel frame named by @fns, or -1. */
static int kframe_index(const struct sc_ksyms *ks, const struct stallcap_sample *r,
			const char *const *fns)
{
	for (unsigned int i = 0; i < sc_nk(r); i++)
		if (sc_kip_named(ks, sc_kernel_ips(r)[i], fns))
			return (int)i;
	return -1;
}

/*
 * Frame 0 is what was executing: the work function itself or one it
 * called, each frame up to the work the caller of the one before; never
 * stallcap's own code (the capture's frames are not the thread's).  A
 * sample with an interrupt's entry on the stack (the thread's interrupt,
 * not the work) is tried again by collect_running(), which then fails
 * after SC_ATTEMPTS.
 */
static void check_frames_inside_work(struct __test_metadata *_metadata,
				     FIXTURE_DATA(kernel) *self,
				     const struct stallcap_sample *r,
				     const char *const *work_fns)
{
	int k = kframe_index(&self->ks, r, work_fns);
	uint64_t lo, hi, ip;

	/* (a work frame and no interrupt entry: collect_running() took it so) */
	ASSERT_LE(0, k);
	ASSERT_EQ(0, own_module_range(&lo, &hi)) TH_LOG("stallcap not in /proc/modules");
	for (int i = 0; i <= k; i++) {
		ip = sc_kernel_ips(r)[i];
		EXPECT_FALSE(ip >= lo && ip < hi)
			TH_LOG("kernel frame %d (%#llx) is stallcap's own code", i,
			       (unsigned long long)ip);
	}
	TH_LOG("frame 0: %s, the work (%s) at frame %d",
	       sc_ksym_name(&self->ks, sc_kernel_ips(r)[0]) ?: "?",
	       sc_ksym_name(&self->ks, sc_kernel_ips(r)[k]) ?: "?", k);
}

/* The first sample of a stall inside a system call made by @caller. */
static void check_kernel_sample(struct __test_metadata *_metadata,
				FIXTURE_DATA(kernel) *self, uint64_t t0, uint64_t t1,
				const void *caller, const char *const *work_fns,
				const char *const *entry_fns,
				const struct stallcap_sec_syscall *call)
{
	const struct stallcap_sample *r = sc_first_sample_of(&self->rs, sc_gettid()), *u;
	const struct stallcap_sec_syscall *sys;
	unsigned int unresolved = 0;

	ASSERT_NE(NULL, r);

	/* the system call it was inside, with its first three arguments */
	sys = sc_syscall(r);
	ASSERT_NE(NULL, sys) TH_LOG("no SYSCALL section");
	EXPECT_EQ(call->nr, sys->nr);
	EXPECT_EQ(call->args[0], sys->args[0]);
	EXPECT_EQ(call->args[1], sys->args[1]);
	EXPECT_EQ(call->args[2], sys->args[2]);

	EXPECT_EQ(getpid(), (pid_t)r->pid);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(STALLCAP_STATE_RUNNING, r->state);
	EXPECT_TRUE(r->path == STALLCAP_PATH_LOCAL || r->path == STALLCAP_PATH_NMI ||
		    r->path == STALLCAP_PATH_IPI) TH_LOG("path %u", r->path);
	EXPECT_FALSE(r->flags & STALLCAP_SAMPLE_USER_MODE);
	EXPECT_FALSE(r->flags & (STALLCAP_SAMPLE_KADDR_HIDDEN | STALLCAP_SAMPLE_NO_USER));
	EXPECT_LE(t0, r->capture_ns) TH_LOG("captured before the system call");
	EXPECT_GE(t1, r->capture_ns) TH_LOG("captured after the system call");
	EXPECT_LE(r->deadline_ns, r->capture_ns);
	EXPECT_GT(SC_MAX_LATENESS_NS, r->capture_ns - r->deadline_ns);

	/* kernel frames: real kernel text, naming the work and the entry */
	ASSERT_LE(3, sc_nk(r));
	for (unsigned int i = 0; i < sc_nk(r); i++)
		unresolved += !sc_ksym_name(&self->ks, sc_kernel_ips(r)[i]);
	EXPECT_EQ(0, unresolved) TH_LOG("kernel frames outside kernel text");
	check_frames_inside_work(_metadata, self, r, work_fns);
	EXPECT_TRUE(sc_kstack_has(&self->ks, r, entry_fns))
		TH_LOG("no kernel frame in %s...", entry_fns[0]);

	/* user side: the registers saved at the system call's entry */
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, raw_syscall6))
		TH_LOG("regs.ip %#llx in %s", (unsigned long long)sc_regs(r)->ip,
		       sc_usym_name(sc_regs(r)->ip) ?: "?");
	EXPECT_NE(0, sc_regs(r)->sp);
	/*
	 * and the user stack above them: in the sample, or (an NMI whose
	 * irq_work found the thread gone from its CPU, or held off by
	 * interrupts-off code: 6.12-rt CI) in the USER_STACK record read when
	 * the system call returned, with the used stack to its mapping's end
	 */
	u = sc4_user_frames_of(&self->rs, r);
	ASSERT_NE(NULL, u) TH_LOG("no USER_STACK record of cookie %llu",
				  (unsigned long long)r->cookie);
	EXPECT_EQ(sc_regs(r)->sp, sc_regs(u)->sp);
	ASSERT_LE(2, sc_nu(u));
	EXPECT_EQ(1, sc_ustack_find(u, caller)) TH_LOG("the caller is not user frame 1");
	EXPECT_EQ(sc_regs(r)->sp, sc_stack_start(u));
	if (u == r && !(r->flags & STALLCAP_SAMPLE_COPY_PARTIAL))
		EXPECT_EQ(self->s.cfg.user_stack_bytes, sc_stack_size(r));

	if (_metadata->exit_code)
		sc_log_records(&self->ks, &self->rs);
}

TEST_F_TIMEOUT(kernel, mmap_populate_is_captured_in_the_populate_path, 120)
{
	uint64_t max = mem_available() / 3, t0, t1;
	size_t len = 16 * MIB;
	long addr;

	/* small pages: the longest, most predictable path */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	if (max > 256 * MIB)
		max = 256 * MIB;

	/* find a size that keeps the thread in the kernel for 10 timeouts */
	for (;;) {
		t0 = sc_now_ns();
		addr = populate_in_kernel(len);
		t1 = sc_now_ns();
		ASSERT_FALSE(addr < 0 && addr > -4096) TH_LOG("mmap: %s", strerror(-addr));
		munmap((void *)addr, len);
		if (t1 - t0 >= 10 * self->timeout)
			break;
		if (2 * len > max)
			SKIP(return, "populating %zu MiB takes only %llu us", len / MIB,
			     (unsigned long long)(t1 - t0) / 1000);
		len *= 2;
	}

	for (int attempt = 1; ; attempt++) {
		t0 = sc_now_ns();
		ASSERT_EQ(0, sc_arm(self->s.fd, self->timeout, 0, TAG));
		addr = populate_in_kernel(len);
		t1 = sc_now_ns();
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		ASSERT_FALSE(addr < 0 && addr > -4096);
		munmap((void *)addr, len);
		if (collect_running(_metadata, self, attempt, populate_fns))
			break;
	}
	TH_LOG("populated %zu MiB in %llu ms", len / MIB, (unsigned long long)(t1 - t0) / SC_MS(1));

	check_kernel_sample(_metadata, self, t0, t1, populate_in_kernel, populate_fns,
			    mmap_entry_fns, &(struct stallcap_sec_syscall){
				.nr = SYS_mmap, .args = { 0, len, PROT_READ | PROT_WRITE } });
}

TEST_F_TIMEOUT(kernel, tmpfs_read_is_captured_in_shmem_read, 120)
{
	uint64_t max = mem_available() / 3, t0, t1;
	size_t len = 16 * MIB;
	int mfd = memfd_create("stallcap-read", MFD_CLOEXEC);
	void *buf;
	long ret;

	ASSERT_LE(0, mfd);
	if (max > 128 * MIB)
		max = 128 * MIB;
	for (;;) {
		/* a sparse tmpfs file: reading it copies zeroes for len bytes */
		ASSERT_EQ(0, ftruncate(mfd, len));
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		ASSERT_NE(MAP_FAILED, buf);
		ASSERT_EQ(0, lseek(mfd, 0, SEEK_SET));
		t0 = sc_now_ns();
		ret = read_in_kernel(mfd, buf, len);
		t1 = sc_now_ns();
		ASSERT_EQ((long)len, ret);
		if (t1 - t0 >= 10 * self->timeout)
			break;
		munmap(buf, len);
		if (2 * len > max)
			SKIP(return, "reading %zu MiB takes only %llu us", len / MIB,
			     (unsigned long long)(t1 - t0) / 1000);
		len *= 2;
	}

	for (int attempt = 1; ; attempt++) {
		ASSERT_EQ(0, lseek(mfd, 0, SEEK_SET));
		t0 = sc_now_ns();
		ASSERT_EQ(0, sc_arm(self->s.fd, self->timeout, 0, TAG));
		ret = read_in_kernel(mfd, buf, len);
		t1 = sc_now_ns();
		ASSERT_EQ(0, sc_disarm(self->s.fd));
		ASSERT_EQ((long)len, ret);
		if (collect_running(_metadata, self, attempt, shmem_read_fns))
			break;
	}
	munmap(buf, len);
	close(mfd);
	TH_LOG("read %zu MiB in %llu ms", len / MIB, (unsigned long long)(t1 - t0) / SC_MS(1));

	check_kernel_sample(_metadata, self, t0, t1, read_in_kernel, shmem_read_fns,
			    read_entry_fns, &(struct stallcap_sec_syscall){
				.nr = SYS_read, .args = { mfd, (uintptr_t)buf, len } });
}

TEST_HARNESS_MAIN
