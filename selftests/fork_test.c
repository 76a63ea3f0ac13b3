// SPDX-License-Identifier: GPL-2.0
/*
 * fork() and exec(): the ring and slot mappings are not inherited by a
 * forked child (VM_DONTCOPY): the range is unmapped there, so the child's
 * stores can never move its parent's slot.  A child that arms on the
 * inherited session gets a watch of its own whose records carry its pid;
 * so does a program it execs with the session's descriptor (this test
 * re-executed with --exec-child FD).
 */
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TIMEOUT		SC_MS(20)
#define TAG_CHILD	0x666f726b0001ULL
#define TAG_EXEC	0x666f726b0002ULL

/* Is [@addr, @addr + @len) (partly) mapped in this process? */
static bool mapped(const void *addr, size_t len)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return true;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < a + len && a < hi)
			found = true;
	fclose(f);
	return found;
}

static sigjmp_buf fault_jmp;

static void on_segv(int sig)
{
	siglongjmp(fault_jmp, 1);
}

/* Does storing to @p fault? */
static bool store_faults(volatile __u64 *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	bool faulted = false;

	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(fault_jmp, 1))
		faulted = true;
	else
		*p += 1;
	sigaction(SIGSEGV, &old, NULL);
	return faulted;
}

/* Arm on @fd, stall in user mode until a sample is counted; 0 or an errno. */
static int stall_on(int fd, uint64_t tag)
{
	struct sc_stopper st = { .cpu = -1 };
	int ret;

	if (sc_stopper_start(&st, fd, 1, SC_WAIT_MS))
		return 100;
	ret = sc_arm(fd, TIMEOUT, 0, tag);
	if (ret) {
		ret = errno;
		st.stop = 1;
	} else {
		spin_in_user(&st.stop);
		sc_disarm(fd);
	}
	sc_stopper_join(&st);
	return ret ? ret : st.timed_out ? 101 : 0;
}

FIXTURE(fork) {
	struct sc_session s;
	struct sc_records rs;
	struct stallcap_slot *slots;
	size_t slots_len;
};

FIXTURE_SETUP(fork)
{
	memset(&self->rs, 0, sizeof(self->rs));
	ASSERT_EQ(0, sc_session_setup(&self->s, NULL));
	self->slots_len = (size_t)self->s.cfg.slots * sizeof(*self->slots);
	self->slots = mmap(NULL, self->slots_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			   self->s.fd, STALLCAP_MMAP_SLOTS);
	ASSERT_NE(MAP_FAILED, self->slots);
}

FIXTURE_TEARDOWN(fork)
{
	munmap(self->slots, self->slots_len);
	sc_records_free(&self->rs);
	sc_session_close(&self->s);
}

TEST_F(fork, child_has_no_mappings_and_cannot_move_the_parents_slot)
{
	int slot = sc_arm(self->s.fd, 10 * TIMEOUT, STALLCAP_ARM_HEARTBEAT, 1);
	volatile __u64 *beats;
	uint64_t before;
	int status;
	pid_t pid;

	ASSERT_LE(0, slot);
	beats = &self->slots[slot].beats;
	before = *beats;
	ASSERT_TRUE(mapped(self->s.map, self->s.map_len));
	ASSERT_TRUE(mapped(self->slots, self->slots_len));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int bad = 0;

		if (mapped(self->s.map, self->s.map_len))
			bad |= 1;
		if (mapped(self->slots, self->slots_len))
			bad |= 2;
		for (int i = 0; i < 10; i++)
			if (!store_faults(beats))
				bad |= 4;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("in the child: 1 ring mapped, 2 slots mapped, 4 a store went through: %d",
		       WEXITSTATUS(status));
	EXPECT_EQ(before, *beats);
	EXPECT_EQ(0, sc_release(self->s.fd));
}

/* The records' pid of @pid's first sample, checked; the sample or NULL. */
static const struct stallcap_sample *sample_of_pid(const struct sc_records *rs, pid_t pid)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct stallcap_sample *r = (const void *)rs->rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE && r->pid == (uint32_t)pid &&
		    r->sample_index == 0)
			return r;
	}
	return NULL;
}

TEST_F(fork, child_arming_on_the_inherited_session_gets_its_own_watch)
{
	const struct stallcap_sample *r;
	int status;
	pid_t pid;

	/* the parent's own watch, far from its deadline, is left alone */
	ASSERT_EQ(0, sc_arm(self->s.fd, 3600 * SC_NSEC_PER_SEC, 0, 7));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(stall_on(self->s.fd, TAG_CHILD));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child: %s", strerror(WEXITSTATUS(status)));
	ASSERT_LE(1, sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	r = sample_of_pid(&self->rs, pid);
	ASSERT_NE(NULL, r) sc_log_records(NULL, &self->rs);
	EXPECT_EQ((uint32_t)pid, r->tid);
	EXPECT_EQ((uint32_t)pid, r->ns_pid);
	EXPECT_EQ(TAG_CHILD, r->user_tag);
	EXPECT_TRUE(sc_ip_in_fn(sc_regs(r)->ip, spin_in_user));
	EXPECT_EQ(NULL, sample_of_pid(&self->rs, getpid()));
	/* the parent's watch is still its own and armed */
	EXPECT_EQ(1, SC_STAT(self->s.fd, armed));
	EXPECT_EQ(0, sc_release(self->s.fd));
}

/*
 * One fork + exec of this program as an exec'd child arming on descriptor
 * fd; returns the child's first sample (NULL if it has none) with self->rs
 * holding the records.
 */
static const struct stallcap_sample *exec_child_stall(struct __test_metadata *_metadata,
						      FIXTURE_DATA(fork) *self, int fd)
{
	char fdarg[16];
	int status;
	pid_t pid;

	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	pid = fork();
	if (pid < 0)
		return NULL;
	if (!pid) {
		execl("/proc/self/exe", "fork_test", "--exec-child", fdarg, (char *)NULL);
		_exit(127);
	}
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("exec'd child: status 0x%x", status);
	if (sc_ring_collect(&self->s, &self->rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) < 1)
		return NULL;
	return sample_of_pid(&self->rs, pid) ?: (sc_log_records(NULL, &self->rs), NULL);
}

TEST_F(fork, an_execd_program_using_the_session_gets_its_own_watch)
{
	const struct stallcap_sample *r = NULL;
	int fd, attempt;

	/* libstallcap's sessions are O_CLOEXEC: a program passes one on on purpose */
	fd = fcntl(self->s.fd, F_DUPFD, 10);
	ASSERT_LE(0, fd);
	/*
	 * A deadline that passed while the child was still in the kernel (on
	 * its way out of ARM, faulting in its spin: a loaded TCG host stops a
	 * vCPU for tens of milliseconds) is sampled in kernel mode: tried
	 * again, at most 6 times (CI39's loaded debug guest: 3 in a row);
	 * the sample must be of the spin.
	 */
	for (attempt = 1; attempt <= 6; attempt++) {
		sc_records_free(&self->rs);
		r = exec_child_stall(_metadata, self, fd);
		ASSERT_NE(NULL, r) TH_LOG("no sample of the exec'd child");
		if (r->flags & STALLCAP_SAMPLE_USER_MODE)
			break;
		TH_LOG("attempt %d: the exec'd child was sampled in kernel mode", attempt);
		sc_log_sample(NULL, r);
	}
	close(fd);
	EXPECT_EQ(r->pid, r->tid);
	EXPECT_EQ(TAG_EXEC, r->user_tag);
	/* (its addresses are its own program's: not resolvable here) */
	EXPECT_TRUE(r->flags & STALLCAP_SAMPLE_USER_MODE);
	EXPECT_NE(0, sc_regs(r)->ip);
}

/* The exec'd program: it maps nothing, arms on the descriptor it was given. */
static int exec_child(const char *fdarg)
{
	int fd = atoi(fdarg);
	struct stallcap_info info;

	if (sc_get_info(fd, &info))
		return 102;
	return stall_on(fd, TAG_EXEC);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--exec-child"))
		return exec_child(argv[2]);
	return test_harness_run(argc, argv);
}
