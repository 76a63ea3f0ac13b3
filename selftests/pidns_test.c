// SPDX-License-Identifier: GPL-2.0
/*
 * Pid namespaces: a process in a new pid namespace (pid 1 there, as a
 * container's init) opens its own session; the control page names its
 * namespace (pid_ns_inum is the inode of its /proc/self/ns/pid) and every
 * record carries its ids there (ns_pid = ns_tid = 1) beside the ids of the
 * initial namespace (the real pid, as its parent's fork() returned it).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TIMEOUT		SC_MS(20)

/* What the process in the new namespace saw, for the test to judge. */
struct ns_result {
	int err;			/* 0, or where it went wrong */
	pid_t getpid;			/* its own pid there: 1 */
	pid_t real_pid;			/* fork()'s return in the intermediate child */
	uint64_t ns_inum;		/* st_ino of /proc/self/ns/pid */
	uint64_t ctl_inum;		/* ctl->pid_ns_inum */
	struct stallcap_sample sample;	/* fixed part of its first sample */
	struct stallcap_stall_end end;
	bool have_end;
};

/* In the new namespace: a session of its own, one stall. */
static int in_namespace(struct ns_result *res)
{
	struct sc_stopper st = { .cpu = -1 };
	struct sc_records rs = { 0 };
	const struct stallcap_sample *r;
	struct sc_session s;
	struct stat sb;

	res->getpid = getpid();
	if (stat("/proc/self/ns/pid", &sb))
		return 1;
	res->ns_inum = sb.st_ino;
	if (sc_session_setup(&s, NULL))
		return 2;
	res->ctl_inum = s.ctl->pid_ns_inum;
	if (sc_stopper_start(&st, s.fd, 1, SC_WAIT_MS))
		return 3;
	if (sc_arm(s.fd, TIMEOUT, 0, 0x6e73)) {
		st.stop = 1;
		sc_stopper_join(&st);
		return 4;
	}
	spin_in_user(&st.stop);
	sc_stopper_join(&st);
	if (sc_disarm(s.fd) || st.timed_out)
		return 5;
	if (sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) < 1)
		return 6;
	r = sc_records_nth(&rs, STALLCAP_REC_SAMPLE, 0);
	if (!r)
		return 7;
	res->sample = *r;
	if (sc_stall_end_of(&rs, r->stall_id)) {
		res->end = *sc_stall_end_of(&rs, r->stall_id);
		res->have_end = true;
	}
	sc_records_free(&rs);
	sc_session_close(&s);
	return 0;
}

TEST(records_carry_the_ids_of_the_openers_namespace)
{
	struct ns_result *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, res);
	memset(res, 0, sizeof(*res));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(errno == EPERM ? 4 : 1);
		inner = fork();
		if (inner < 0)
			_exit(1);
		if (!inner)
			_exit((res->err = in_namespace(res)) ? 1 : 0);
		res->real_pid = inner;
		if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(1);
		_exit(WEXITSTATUS(status));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(return, "unshare(CLONE_NEWPID): not permitted");
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("in the namespace: step %d failed", res->err);
	EXPECT_EQ(1, res->getpid);
	EXPECT_NE(0, res->ns_inum);
	EXPECT_EQ(res->ns_inum, res->ctl_inum);
	/* the ids of the opener's namespace, and of the initial one */
	EXPECT_EQ(1, res->sample.ns_pid);
	EXPECT_EQ(1, res->sample.ns_tid);
	EXPECT_EQ((uint32_t)res->real_pid, res->sample.pid);
	EXPECT_EQ((uint32_t)res->real_pid, res->sample.tid);
	EXPECT_NE(1, res->sample.pid);
	ASSERT_TRUE(res->have_end);
	EXPECT_EQ(1, res->end.ns_pid);
	EXPECT_EQ(1, res->end.ns_tid);
	EXPECT_EQ((uint32_t)res->real_pid, res->end.pid);
	munmap(res, sizeof(*res));
}

/* The initial namespace's session: both sets of ids agree. */
TEST(in_the_initial_namespace_both_ids_agree)
{
	struct sc_records rs = { 0 };
	struct sc_stopper st = { .cpu = -1 };
	const struct stallcap_sample *r;
	struct sc_session s;
	struct stat sb;

	ASSERT_EQ(0, stat("/proc/self/ns/pid", &sb));
	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	EXPECT_EQ(sb.st_ino, s.ctl->pid_ns_inum);
	ASSERT_EQ(0, sc_stopper_start(&st, s.fd, 1, SC_WAIT_MS));
	ASSERT_EQ(0, sc_arm(s.fd, TIMEOUT, 0, 1));
	spin_in_user(&st.stop);
	sc_stopper_join(&st);
	ASSERT_EQ(0, sc_disarm(s.fd));
	ASSERT_LE(1, sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&rs, sc_gettid());
	ASSERT_NE(NULL, r);
	EXPECT_EQ(r->pid, r->ns_pid);
	EXPECT_EQ(r->tid, r->ns_tid);
	EXPECT_EQ((uint32_t)getpid(), r->ns_pid);
	sc_records_free(&rs);
	sc_session_close(&s);
}

TEST_HARNESS_MAIN
