// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel addresses go only to readers the kernel's own policy allows (as for
 * /proc/kallsyms: CAP_SYSLOG, and kptr_restrict below 2); the others get
 * zeros, STALLCAP_SAMPLE_KADDR_HIDDEN, and no STALLCAP_FEAT_KADDR.
 */
#include <grp.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TIMEOUT		SC_MS(20)
#define KPTR		"/proc/sys/kernel/kptr_restrict"
#define USER_UID	1000	/* the guest's unprivileged user */

static int read_kptr(void)
{
	FILE *f = fopen(KPTR, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_kptr(int v)
{
	FILE *f = fopen(KPTR, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%d\n", v) > 0 ? 0 : -1;
	return fclose(f) ? -1 : ret;
}

/*
 * In the calling process: a session, a blocked stall of this thread, and
 * its first sample taken in the kernel (the first, or the second when the
 * first found the thread still in user mode) checked for hidden kernel
 * addresses.  Returns a bit mask of what was wrong (0: all hidden as
 * expected).
 */
static int hidden_stall(void)
{
	struct sc_session s;
	struct sc_records rs = {};
	const struct stallcap_sample *r;
	int bad = 0;

	if (sc_session_setup(&s, NULL))
		return 1;
	if (s.info.features & STALLCAP_FEAT_KADDR)
		bad |= 2;
	if (sc_arm(s.fd, TIMEOUT, 0, 0))
		return bad | 1;
	if (sc_ring_collect(&s, &rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS) < 1)
		return bad | 1;
	r = sc_first_sample_of(&rs, sc_gettid());
	/*
	 * Captured in user mode, before its wait (a slow kernel): no kernel
	 * frames to hide there.  The next sample, at 2T, finds it in the wait.
	 */
	if (r && (r->flags & STALLCAP_SAMPLE_USER_MODE)) {
		if (sc_ring_collect(&s, &rs, STALLCAP_REC_SAMPLE, 2, SC_WAIT_MS) < 2)
			return bad | 1;
		r = sc_nth_sample_of(&rs, sc_gettid(), 1);
	}
	sc_disarm(s.fd);
	if (!r)
		return bad | 1;
	if (!(r->flags & STALLCAP_SAMPLE_KADDR_HIDDEN))
		bad |= 4;
	/* left out, never written as zeros */
	if (sc_section(r, STALLCAP_SEC_KERNEL_IPS))
		bad |= 8;
	if (!sc_regs(r)->ip || !sc_regs(r)->sp)	/* user addresses are the reader's own */
		bad |= 16;
	if (bad)
		sc_log_records(NULL, &rs);
	sc_records_free(&rs);
	sc_session_close(&s);
	return bad;
}

#define HIDDEN_WHY "1: no stall, 2: FEAT_KADDR set, 4: KADDR_HIDDEN not set, " \
		   "8: a kernel frames section, 16: user registers missing"

FIXTURE(kaddr) {
	int saved;
};

FIXTURE_SETUP(kaddr)
{
	if (geteuid() != 0)
		SKIP(return, "needs root to change users and kptr_restrict");
	self->saved = read_kptr();
	ASSERT_LE(0, self->saved);
}

FIXTURE_TEARDOWN(kaddr)
{
	if (self->saved >= 0)
		write_kptr(self->saved);
}

TEST_F(kaddr, root_sees_kernel_addresses)
{
	struct sc_session s;

	ASSERT_EQ(0, write_kptr(1));
	ASSERT_EQ(0, sc_open(&s));
	EXPECT_TRUE(s.info.features & STALLCAP_FEAT_KADDR);
	sc_session_close(&s);
}

TEST_F(kaddr, unprivileged_reader_gets_zeros_and_the_flag)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, write_kptr(1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* as the user logs in: its groups (stallcap, for the device) */
		if (initgroups("user", USER_UID) || setgid(USER_UID) || setuid(USER_UID))
			_exit(100);
		_exit(hidden_stall());
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_NE(100, WEXITSTATUS(status)) TH_LOG("cannot become uid %d", USER_UID);
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG(HIDDEN_WHY);
}

/* kptr_restrict 2 hides kernel addresses from everyone, root included. */
TEST_F(kaddr, kptr_restrict_2_hides_them_from_root_too)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, write_kptr(2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(hidden_stall());
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG(HIDDEN_WHY);
}

TEST_HARNESS_MAIN
