// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap used by unprivileged users.  The test starts as root (the
 * guest runs every test as root), prepares what needs root (module
 * parameters, a setuid-root program, a system-wide reader) and runs the
 * user's side in forked children that became uid 1000 ("user" in the
 * guest's /etc/passwd) or 65534 ("nobody") with setresuid(), which leaves
 * them no capability.
 *
 *  - kernel addresses are hidden: GET_INFO has no STALLCAP_FEAT_KADDR, and
 *    every kernel frame of a capture in the kernel (running or blocked) is
 *    zero with STALLCAP_SAMPLE_KADDR_HIDDEN set;
 *  - the per-user limit holds: with max_watches_per_user = N, the
 *    (N+1)-th watch is refused with ENOSPC, in any session of the user,
 *    until one goes (RELEASE or exit); root (CAP_SYS_RESOURCE) is exempt;
 *    an ATTACH raced to the limit by another session is refused whole,
 *    leaving nothing in its ring, or watches every thread;
 *  - a deadline under min_deadline_us is refused with ERANGE (ARM and
 *    REARM), and the user cannot change the module's parameters;
 *  - sessions are per open file: another session of the same user, a
 *    reopen through /proc/self/fd and root's session see none of the
 *    user's records; another user cannot open the user's session through
 *    /proc/<pid>/fd; nobody can act on a watch it does not own;
 *  - by design, a session's file descriptor passed to another uid keeps
 *    working: the receiver reads the opener's records (and a session that
 *    root opened and passed on shows kernel addresses: visibility is the
 *    opener's);
 *  - STALLCAP_CFG_GLOBAL needs CAP_SYS_ADMIN: EPERM for the user;
 *  - a setuid-root program exec'd by a watched thread of the user is not
 *    captured into the user's session (its registers and stack are not the
 *    user's to read: exec drops perf events the same way when the new image
 *    is not dumpable);
 *  - records a system-wide reader (root) receives come from the module, not
 *    from what an unprivileged session wrote into its own ring.
 *
 * Without root the test skips.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "torture_util.h"

#include "sc_harness.h"

#define TIMEOUT		SC_MS(20)
#define LIMIT_N		4
#define SUID_NAME	"sc-suid-target"
#define SUID_CANARY	0x5ec12e7c0ffee000ULL
#define FORGED_PID	1
#define FORGED_COMM	"forged-comm"

#define CHK	TU_CHK

FIXTURE(unpriv) {
	long long max_watches;		/* to restore */
	char suid_path[64];
};

FIXTURE_SETUP(unpriv)
{
	if (geteuid() != 0)
		SKIP(return, "needs root to become other users");
	if (access(STALLCAP_DEVICE, R_OK | W_OK))
		SKIP(return, "no %s", STALLCAP_DEVICE);
	self->max_watches = tu_param_read("max_watches_per_user");
	self->suid_path[0] = 0;
	/*
	 * The users' locked memory as on any kernel since 5.16 (8 MiB): some
	 * tests hold more default sessions at once than the allowance of
	 * kernels with a 64 KiB default (memlock_test covers that).
	 */
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){ 8 << 20, 8 << 20 }));
}

FIXTURE_TEARDOWN(unpriv)
{
	if (self->max_watches > 0)
		tu_param_write("max_watches_per_user", self->max_watches);
	if (self->suid_path[0])
		unlink(self->suid_path);
}

/* ------------------------------------------------------------------------
 * Helpers run as the user
 * ------------------------------------------------------------------------
 */

struct staller {
	int fd;
	int kind;		/* 0 spin in user, 1 in the kernel, 2 blocked */
	uint64_t timeout;
	int pipefd[2];
	struct sc_stopper *st;
	pid_t tid;
	int ret;
};

SC_NOINLINE void *staller_main(void *arg)
{
	struct staller *s = arg;
	static char buf[1 << 20];
	int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	char c;

	s->tid = sc_gettid();
	s->ret = sc_arm(s->fd, s->timeout, 0, 0x756e7072697600ULL + s->kind);
	if (s->ret)
		goto out;
	switch (s->kind) {
	case 0:
		spin_in_user_caller(&s->st->stop);
		break;
	case 1:
		while (!__atomic_load_n(&s->st->stop, __ATOMIC_ACQUIRE))
			raw_syscall6(SYS_read, zero, (long)buf, sizeof(buf), 0, 0, 0);
		break;
	default:
		if (read(s->pipefd[0], &c, 1) != 1)
			s->ret = -2;
		break;
	}
	if (!s->ret)
		s->ret = sc_disarm(s->fd);
out:
	if (zero >= 0)
		close(zero);
	return NULL;
}

/* Let a thread stall (@kind) in session @s until it has @n samples. */
static int stall_once(struct sc_session *s, int kind, unsigned int n, pid_t *tid)
{
	struct sc_stopper st = { .cpu = -1 };
	struct staller sl = { .fd = s->fd, .kind = kind, .timeout = TIMEOUT, .st = &st };
	pthread_t th;

	if (sl.timeout < s->info.min_deadline_ns)
		sl.timeout = s->info.min_deadline_ns;
	if (kind == 2 && pipe(sl.pipefd))
		return -1;
	if (sc_stopper_start(&st, s->fd, n, SC_WAIT_MS) ||
	    pthread_create(&th, NULL, staller_main, &sl))
		return -1;
	sc_stopper_join(&st);
	if (kind == 2 && write(sl.pipefd[1], "x", 1) != 1)
		return -1;
	pthread_join(th, NULL);
	if (kind == 2) {
		close(sl.pipefd[0]);
		close(sl.pipefd[1]);
	}
	if (tid)
		*tid = sl.tid;
	return st.timed_out || sl.ret ? -1 : 0;
}

/* ------------------------------------------------------------------------
 * Kernel addresses
 * ------------------------------------------------------------------------
 */

static int user_sees_no_kernel_addresses(void *arg)
{
	struct sc_records rs = { 0 };
	struct sc_session s;
	unsigned int with_kframes = 0, samples = 0;

	CHK(!sc_session_setup(&s, NULL), "session setup: %s", strerror(errno));
	CHK(!(s.info.features & STALLCAP_FEAT_KADDR), "FEAT_KADDR for an unprivileged session");
	for (int kind = 1; kind <= 2; kind++)
		CHK(!stall_once(&s, kind, 2, NULL), "no stall %s",
		    kind == 1 ? "in the kernel" : "blocked");
	CHK(sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 2, SC_WAIT_MS) >= 2,
	    "no stall-ends (%s)", rs.err);
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_sample *r = (const void *)rs.rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE && r->hdr.type != STALLCAP_REC_USER_STACK)
			continue;
		samples++;
		CHK(!sc_section(r, STALLCAP_SEC_KERNEL_IPS),
		    "sample (path %u) with a kernel frames section (%u frames)", r->path, sc_nk(r));
		/* an abandoned capture has no registers, no frames (CI55) */
		if (r->hdr.type != STALLCAP_REC_SAMPLE ||
		    (r->flags & (STALLCAP_SAMPLE_USER_MODE | STALLCAP_SAMPLE_ABANDONED)))
			continue;
		/* a kernel-mode sample: its kernel frames were left out */
		with_kframes++;
		CHK(r->flags & STALLCAP_SAMPLE_KADDR_HIDDEN,
		    "kernel-mode sample (path %u) without KADDR_HIDDEN", r->path);
		CHK(sc_regs(r)->ip < 0x0000800000000000ULL && sc_regs(r)->sp < 0x0000800000000000ULL,
		    "user registers ip %#llx sp %#llx", (unsigned long long)sc_regs(r)->ip,
		    (unsigned long long)sc_regs(r)->sp);
	}
	CHK(with_kframes, "none of %u samples was in kernel mode: nothing was checked", samples);
	sc_records_free(&rs);
	sc_session_close(&s);
	return 0;
}

TEST_F_TIMEOUT(unpriv, kernel_addresses_are_hidden, 120)
{
	struct sc_session s;

	ASSERT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_sees_no_kernel_addresses, NULL));
	/* and root's session does see them (visibility is per opener) */
	ASSERT_EQ(0, sc_open(&s));
	EXPECT_TRUE(s.info.features & STALLCAP_FEAT_KADDR);
	sc_session_close(&s);
}

/* ------------------------------------------------------------------------
 * The per-user limit
 * ------------------------------------------------------------------------
 */

struct holder {
	int fd;
	int ret, err;
	volatile int release;
	volatile int done;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	h->ret = sc_arm(h->fd, 60 * SC_NSEC_PER_SEC, 0, 0x11);
	h->err = errno;
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	while (!h->release)
		sc_sleep_ms(1);
	if (h->release == 1 && !h->ret)
		sc_release(h->fd);
	return NULL;	/* release == 2: exit armed */
}

static void wait_done(struct holder *h)
{
	while (!__atomic_load_n(&h->done, __ATOMIC_ACQUIRE))
		sc_sleep_ms(1);
}

/* Start a holder thread on @fd and wait for its ARM's result. */
static int hold(pthread_t *th, struct holder *h, int fd)
{
	*h = (struct holder){ .fd = fd };
	if (pthread_create(th, NULL, holder_main, h))
		return -1;
	wait_done(h);
	return h->ret;
}

static void unhold(pthread_t th, struct holder *h, int how)
{
	h->release = how;
	pthread_join(th, NULL);
}

static int user_hits_the_limit(void *arg)
{
	struct holder h[LIMIT_N + 1], extra;
	pthread_t th[LIMIT_N + 1], eth;
	struct sc_session a, b;
	struct stallcap_info info;

	CHK(!sc_session_setup(&a, NULL) && !sc_session_setup(&b, NULL), "session setup");
	CHK(!sc_get_info(a.fd, &info) && info.max_watches_per_user == LIMIT_N,
	    "GET_INFO max_watches_per_user %u, set to %d", info.max_watches_per_user, LIMIT_N);
	for (int i = 0; i < LIMIT_N; i++)
		CHK(hold(&th[i], &h[i], i % 2 ? b.fd : a.fd) == 0, "watch %d of %d: %s", i + 1,
		    LIMIT_N, strerror(h[i].err));
	/* the (N+1)-th, in either session, from another thread or this one */
	CHK(hold(&th[LIMIT_N], &h[LIMIT_N], a.fd) == -1 && h[LIMIT_N].err == ENOSPC,
	    "watch %d of %d in session a: ret %d %s", LIMIT_N + 1, LIMIT_N, h[LIMIT_N].ret,
	    strerror(h[LIMIT_N].err));
	unhold(th[LIMIT_N], &h[LIMIT_N], 1);
	CHK(sc_arm(b.fd, SC_MS(100), 0, 1) == -1 && errno == ENOSPC,
	    "watch %d of %d in session b: %s", LIMIT_N + 1, LIMIT_N, strerror(errno));
	CHK(SC_STAT(a.fd, watches) + SC_STAT(b.fd, watches) == LIMIT_N,
	    "the failed ARMs left watches: %llu + %llu", (unsigned long long)SC_STAT(a.fd, watches),
	    (unsigned long long)SC_STAT(b.fd, watches));
	/* one released: room for one more */
	unhold(th[0], &h[0], 1);
	CHK(hold(&eth, &extra, b.fd) == 0, "after a RELEASE: %s", strerror(extra.err));
	CHK(sc_arm(a.fd, SC_MS(100), 0, 1) == -1 && errno == ENOSPC, "over the limit again: %s",
	    strerror(errno));
	/* one exits armed: room again once it is reaped */
	unhold(th[1], &h[1], 2);
	CHK(TU_WAIT_STAT(b.fd, 0, watches, 2, SC_WAIT_MS) == 2, "the exited thread's watch stays");
	CHK(sc_arm(a.fd, SC_MS(500), 0, 1) == 0, "after an exit: %s", strerror(errno));
	CHK(sc_release(a.fd) == 0, "RELEASE: %s", strerror(errno));
	unhold(eth, &extra, 1);
	for (int i = 2; i < LIMIT_N; i++)
		unhold(th[i], &h[i], 1);
	CHK(SC_STAT(a.fd, watches) == 0 && SC_STAT(b.fd, watches) == 0, "watches left");
	/* all gone: the whole allowance is back */
	for (int i = 0; i < LIMIT_N; i++)
		CHK(hold(&th[i], &h[i], a.fd) == 0, "again, watch %d: %s", i + 1,
		    strerror(h[i].err));
	for (int i = 0; i < LIMIT_N; i++)
		unhold(th[i], &h[i], 1);
	sc_session_close(&a);
	sc_session_close(&b);
	return 0;
}

TEST_F_TIMEOUT(unpriv, per_user_watch_limit_holds, 120)
{
	struct holder h[LIMIT_N + 2];
	pthread_t th[LIMIT_N + 2];
	struct sc_session s;

	if (self->max_watches < 0)
		SKIP(return, "no max_watches_per_user parameter");
	ASSERT_EQ(0, tu_param_write("max_watches_per_user", LIMIT_N));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_hits_the_limit, NULL));

	/* root is exempt (CAP_SYS_RESOURCE) */
	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	for (int i = 0; i < LIMIT_N + 2; i++) {
		EXPECT_EQ(0, hold(&th[i], &h[i], s.fd)) TH_LOG("root's watch %d: %s", i + 1,
							      strerror(h[i].err));
	}
	for (int i = 0; i < LIMIT_N + 2; i++)
		unhold(th[i], &h[i], 1);
	sc_session_close(&s);
	EXPECT_EQ(0, tu_param_write("max_watches_per_user", self->max_watches));
}

/* ------------------------------------------------------------------------
 * The minimum deadline
 * ------------------------------------------------------------------------
 */

static int user_below_minimum(void *arg)
{
	struct sc_session s;
	uint64_t min;
	int fd;

	CHK(!sc_session_setup(&s, NULL), "session setup");
	min = s.info.min_deadline_ns;
	CHK(min > 1, "min_deadline_ns %llu", (unsigned long long)min);
	CHK(sc_arm(s.fd, min - 1, 0, 1) == -1 && errno == ERANGE, "ARM(min - 1): %s",
	    strerror(errno));
	CHK(sc_arm(s.fd, min - 1, STALLCAP_ARM_CPUTIME, 1) == -1 && errno == ERANGE,
	    "ARM(CPUTIME, min - 1): %s", strerror(errno));
	CHK(SC_STAT(s.fd, watches) == 0, "a refused ARM left a watch");
	CHK(sc_arm(s.fd, 60 * SC_NSEC_PER_SEC, 0, 1) == 0, "ARM(60 s): %s", strerror(errno));
	CHK(sc_rearm(s.fd, min - 1) == -1 && errno == ERANGE, "REARM(min - 1): %s",
	    strerror(errno));
	CHK(sc_rearm(s.fd, 60 * SC_NSEC_PER_SEC) == 0, "REARM(60 s): %s", strerror(errno));
	CHK(sc_release(s.fd) == 0, "RELEASE: %s", strerror(errno));
	/* and the user cannot lower the minimum */
	fd = open(TU_PARAM_DIR "min_deadline_us", O_WRONLY);
	CHK(fd < 0 && errno == EACCES, "min_deadline_us writable by the user (%s)",
	    fd < 0 ? strerror(errno) : "opened");
	fd = open(TU_PARAM_DIR "max_watches_per_user", O_WRONLY);
	CHK(fd < 0 && errno == EACCES, "max_watches_per_user writable by the user");
	sc_session_close(&s);
	return 0;
}

TEST_F(unpriv, deadline_under_the_minimum_is_erange)
{
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_below_minimum, NULL));
}

/* ------------------------------------------------------------------------
 * Sessions are per open file
 * ------------------------------------------------------------------------
 */

struct iso {
	int root_fd;		/* a session root opened before */
	int ready[2];		/* user -> parent: pid and fd of its session */
	int go[2];		/* parent -> user: the other user is done */
};

static int user_isolated(void *arg)
{
	struct iso *x = arg;
	struct sc_records ra = { 0 }, rb = { 0 }, rc = { 0 };
	struct sc_session a, b, c;
	char path[64], ch;
	int msg[2];
	pid_t tid;

	close(x->root_fd);
	CHK(!sc_session_setup(&a, NULL) && !sc_session_setup(&b, NULL), "session setup");
	CHK(!stall_once(&a, 0, 1, &tid), "no stall in session a");
	CHK(sc_ring_collect(&a, &ra, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) == 1,
	    "no stall-end in a");
	CHK(sc_first_sample_of(&ra, tid), "no sample of the thread in a");
	CHK(sc_ring_collect(&b, &rb, 0, 0, SC_QUIET_MS) == 0, "session b got %zu records", rb.n);
	CHK(SC_STAT(b.fd, stalls) == 0, "session b counts stalls");
	/* a reopen through /proc is a new session */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a.fd);
	memset(&c, 0, sizeof(c));
	c.page = a.page;
	c.fd = open(path, O_RDWR | O_CLOEXEC);
	CHK(c.fd >= 0, "reopen %s: %s", path, strerror(errno));
	CHK(!sc_get_info(c.fd, &c.info) && !sc_get_config(c.fd, &c.cfg) && !sc_map(&c),
	    "map the reopened session");
	CHK(SC_STAT(c.fd, stalls) == 0 && c.ctl->data_head == 0,
	    "the reopened session sees the first one's stalls");
	CHK(sc_ring_collect(&c, &rc, 0, 0, 50) == 0, "the reopened session has records");
	/* let another user try to reach session a through /proc */
	msg[0] = getpid();
	msg[1] = a.fd;
	CHK(write(x->ready[1], msg, sizeof(msg)) == sizeof(msg), "pipe");
	CHK(read(x->go[0], &ch, 1) == 1, "pipe");
	sc_records_free(&ra);
	sc_records_free(&rb);
	sc_records_free(&rc);
	sc_session_close(&a);
	sc_session_close(&b);
	sc_session_close(&c);
	return 0;
}

struct other {
	pid_t pid;
	int fd;
};

static int other_user_cannot_reach(void *arg)
{
	struct other *o = arg;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)o->pid, o->fd);
	fd = open(path, O_RDWR);
	CHK(fd < 0 && (errno == EACCES || errno == EPERM), "nobody opened %s (%s)", path,
	    fd < 0 ? strerror(errno) : "ok");
	return 0;
}

TEST_F_TIMEOUT(unpriv, sessions_are_isolated, 120)
{
	struct sc_records rs = { 0 };
	struct sc_session root;
	struct iso x;
	struct other o;
	int msg[2], status;
	pid_t pid;

	ASSERT_EQ(0, sc_session_setup(&root, NULL));
	ASSERT_EQ(0, pipe(x.ready));
	ASSERT_EQ(0, pipe(x.go));
	x.root_fd = root.fd;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ret = tu_drop_privileges(TU_USER_UID, TU_USER_GID);

		_exit(ret ? 253 : user_isolated(&x) ? 1 : 0);
	}
	ASSERT_EQ(sizeof(msg), read(x.ready[0], msg, sizeof(msg)));
	o.pid = msg[0];
	o.fd = msg[1];
	EXPECT_EQ(0, tu_run_as(TU_NOBODY_UID, TU_NOBODY_UID, other_user_cannot_reach, &o));
	ASSERT_EQ(1, write(x.go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("user: %#x", status);
	/* root's own session saw nothing of it */
	EXPECT_EQ(0, sc_ring_collect(&root, &rs, 0, 0, 50));
	EXPECT_EQ(0, SC_STAT(root.fd, stalls));
	sc_records_free(&rs);
	sc_session_close(&root);
}

/* ------------------------------------------------------------------------
 * A file descriptor passed to another uid (by design: it keeps working)
 * ------------------------------------------------------------------------
 */

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char b = 'f';
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

struct passing {
	int sock[2];
	pid_t tid;		/* the user's stalled thread (shared page) */
};

static int user_passes_its_session(void *arg)
{
	struct passing *p = arg;
	struct sc_session s;
	char ch;

	close(p->sock[1]);
	CHK(!sc_session_setup(&s, NULL), "session setup");
	CHK(!stall_once(&s, 0, 1, &p->tid), "no stall");
	CHK(!send_fd(p->sock[0], s.fd), "sendmsg");
	CHK(read(p->sock[0], &ch, 1) == 1, "wait for nobody");
	sc_session_close(&s);
	return 0;
}

static int nobody_uses_the_passed_session(void *arg)
{
	struct passing *p = arg;
	struct sc_records rs = { 0 };
	struct sc_session s;

	close(p->sock[0]);
	memset(&s, 0, sizeof(s));
	s.page = sysconf(_SC_PAGESIZE);
	s.fd = recv_fd(p->sock[1]);
	CHK(s.fd >= 0, "recvmsg");
	CHK(!sc_get_info(s.fd, &s.info) && !sc_get_config(s.fd, &s.cfg) && !sc_map(&s),
	    "using the passed session: %s", strerror(errno));
	CHK(sc_ring_collect(&s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) == 1,
	    "the passed session's records are not readable");
	CHK(sc_first_sample_of(&rs, p->tid), "no sample of the user's thread %d", (int)p->tid);
	/* it cannot act on the user's watch: it has none */
	CHK(sc_rearm(s.fd, SC_MS(100)) == -1 && errno == ENOENT, "REARM: %s", strerror(errno));
	CHK(sc_disarm(s.fd) == -1 && errno == ENOENT, "DISARM: %s", strerror(errno));
	CHK(sc_release(s.fd) == -1 && errno == ENOENT, "RELEASE: %s", strerror(errno));
	CHK(write(p->sock[1], "x", 1) == 1, "socket");
	sc_records_free(&rs);
	sc_session_close(&s);
	return 0;
}

/* Root opens, a user arms in it: the records show kernel addresses. */
static int user_in_roots_session(void *arg)
{
	struct sc_session *s = arg;
	struct sc_records rs = { 0 };
	unsigned int kframes = 0;

	/* mappings are not inherited across fork() (VM_DONTCOPY): map it here */
	CHK(!sc_map(s), "mapping root's ring: %s", strerror(errno));
	CHK(!stall_once(s, 2, 1, NULL), "no stall");
	CHK(sc_ring_collect(s, &rs, STALLCAP_REC_STALL_END, 1, SC_WAIT_MS) == 1, "no stall-end");
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_sample *r = (const void *)rs.rec[i];

		if (r->hdr.type == STALLCAP_REC_SAMPLE && sc_nk(r) &&
		    !(r->flags & STALLCAP_SAMPLE_KADDR_HIDDEN) && sc_kernel_ips(r)[0])
			kframes++;
	}
	CHK(kframes, "no visible kernel frames in root's session used by a user");
	sc_records_free(&rs);
	return 0;
}

TEST_F_TIMEOUT(unpriv, fd_passed_to_another_uid_keeps_working, 120)
{
	struct passing *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sc_session s;
	pid_t u;
	int status;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, p->sock));
	u = fork();
	ASSERT_LE(0, u);
	if (u == 0) {
		int ret = tu_drop_privileges(TU_USER_UID, TU_USER_GID);

		_exit(ret ? 253 : user_passes_its_session(p) ? 1 : 0);
	}
	EXPECT_EQ(0, tu_run_as(TU_NOBODY_UID, TU_NOBODY_UID, nobody_uses_the_passed_session, p));
	ASSERT_EQ(u, waitpid(u, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("user: %#x", status);

	/* the other way round: what the session shows is the opener's right */
	ASSERT_EQ(0, sc_session_setup(&s, NULL));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_in_roots_session, &s));
	ksft_print_msg("by design: a session's fd works for whoever holds it; kernel address "
		       "visibility and the per-user charge follow the opener\n");
	sc_session_close(&s);
	munmap(p, sizeof(*p));
}

/* ------------------------------------------------------------------------
 * Watches with timer periods under 1 ms are bounded per user
 * ------------------------------------------------------------------------
 */

struct fast_arm {
	int fd;
	uint64_t timeout;
	int ret;
};

static void *fast_arm_fn(void *arg)
{
	struct fast_arm *a = arg;

	a->ret = sc_arm(a->fd, a->timeout, 0, 1) ? -errno : 0;
	if (!a->ret)
		sc_release(a->fd);
	return NULL;
}

/* Arm a watch in a new thread of this process (which releases it). */
static int arm_in_thread(int fd, uint64_t timeout)
{
	struct fast_arm a = { .fd = fd, .timeout = timeout };
	pthread_t th;

	if (pthread_create(&th, NULL, fast_arm_fn, &a))
		return -EAGAIN;
	pthread_join(th, NULL);
	return a.ret;
}

static int user_over_fast_limit(void *arg)
{
	uint64_t fast = SC_MS(1) / 2, slow = SC_MS(2);
	struct sc_session s;
	int ret;

	CHK(!sc_session_setup(&s, &(struct sc_opts){ .no_map = true }), "session");
	if (fast < s.info.min_deadline_ns)
		fast = s.info.min_deadline_ns;
	CHK(!sc_arm(s.fd, SC_MS(60000) + fast, 0, 1), "slow ARM");
	CHK(!sc_rearm(s.fd, fast), "first fast watch: %s", strerror(errno));
	ret = arm_in_thread(s.fd, slow);
	CHK(!ret, "a slow watch is not bounded: %s", strerror(-ret));
	/* the limit (1) is taken: a second fast watch is refused, changing nothing */
	ret = arm_in_thread(s.fd, fast);
	CHK(ret == -ENOSPC, "second fast ARM: %s", ret ? strerror(-ret) : "ok");
	CHK(SC_STAT(s.fd, watches) == 1, "the refused ARM left a watch");
	/* back to a slow timeout: the second fits */
	CHK(!sc_rearm(s.fd, slow), "REARM slow: %s", strerror(errno));
	ret = arm_in_thread(s.fd, fast);
	CHK(!ret, "fast ARM once the first is slow again: %s", strerror(-ret));
	CHK(!sc_disarm(s.fd), "disarm");
	sc_session_close(&s);
	return 0;
}

static void *poll_forever(void *arg)
{
	for (;;)
		poll(NULL, 0, 1000);
	return NULL;
}

/* A thread that lives a millisecond. */
static void *poll_once(void *arg)
{
	poll(NULL, 0, 1);
	return NULL;
}

/* Make and join short-lived threads forever: one more thread, half the time. */
static void grow_forever(void)
{
	pthread_t th;

	for (;;)
		if (!pthread_create(&th, NULL, poll_once, NULL))
			pthread_join(th, NULL);
}

/*
 * A process of the user's, to attach to: @threads threads polling forever,
 * or, @grow, one of them making a short-lived thread after another.
 * Return: its pid once they all run, or -1.
 */
static pid_t start_process(int threads, bool grow)
{
	int ready[2];
	pthread_t th;
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);	/* its owner may trace it */
		for (int i = 1; i < threads; i++)
			if (pthread_create(&th, NULL, poll_forever, NULL))
				_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		if (grow)
			grow_forever();
		poll_forever(NULL);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	return pid;
}

static pid_t start_pollers(int threads)
{
	return start_process(threads, false);
}

/* ATTACH to @pid: 0 or -errno. */
static int attach_pid(int fd, pid_t pid, uint64_t timeout)
{
	struct stallcap_attach a = {
		.size = sizeof(a), .pid = (uint32_t)pid, .timeout_ns = timeout,
	};

	return ioctl(fd, STALLCAP_IOC_ATTACH, &a) ? -errno : 0;
}

/*
 * An attach makes a watch per thread: with a deadline under 1 ms they count
 * as fast watches too (the user's own process of two threads, limit 1).
 */
static int user_attach_over_fast_limit(void *arg)
{
	pid_t pid = start_pollers(2);
	struct sc_session s;
	int ret;

	CHK(pid > 0, "the target did not start");
	CHK(!sc_session_setup(&s, &(struct sc_opts){ .no_map = true }), "session");
	ret = attach_pid(s.fd, pid, SC_MS(1) / 2);
	CHK(ret == -ENOSPC, "ATTACH under 1 ms, two threads, limit 1: %s",
	    ret ? strerror(-ret) : "ok");
	CHK(SC_STAT(s.fd, watches) == 0, "the refused ATTACH left a watch");
	ret = attach_pid(s.fd, pid, SC_MS(2));
	CHK(!ret, "ATTACH at 2 ms is not bounded: %s", strerror(-ret));
	CHK(SC_STAT(s.fd, watches) == 2, "%llu watches, not one per thread",
	    (unsigned long long)SC_STAT(s.fd, watches));
	sc_session_close(&s);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}

TEST_F(unpriv, fast_watches_are_bounded_per_user)
{
	long long saved = tu_param_read("max_fast_watches_per_user");

	if (saved < 0 || tu_param_write("max_fast_watches_per_user", 1))
		SKIP(return, "no max_fast_watches_per_user parameter");
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_over_fast_limit, NULL));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_attach_over_fast_limit, NULL));
	tu_param_write("max_fast_watches_per_user", saved);
}

/*
 * An ATTACH raced to the limit by another session of the same user: the
 * attach's watches are counted at once, before any is made, so the ATTACH
 * is refused whole (ENOSPC, nothing written to its ring) or watches every
 * thread, and the other session's ARM is the one refused meanwhile.
 * Before, the count was only looked at: an ARM between the look and the
 * last watch made the ATTACH fail after some watches were announced, their
 * STARTED and ENDED records left in its ring.
 */
struct arm_racer {
	int fd;
	bool stop;
	unsigned long armed, refused;
};

static void *arm_and_release(void *arg)
{
	struct arm_racer *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (sc_arm(r->fd, SC_MS(500), 0, 1) == 0) {
			r->armed++;
			sc_release(r->fd);
		} else {
			r->refused++;
		}
	}
	return NULL;
}

/* ATTACHes to the limit, counted: refused ones that left records are dirty */
struct attach_tally {
	unsigned long attached, refused, dirty, over;
	int ret;	/* the first error other than ENOSPC, or 0 */
};

/*
 * ATTACH session @a to @pid once and DETACH, into @t; false on an error
 * other than ENOSPC.  The ring is consumed after each: it never fills, so
 * a record a refused ATTACH left would show.
 */
static bool attach_counted(struct sc_session *a, pid_t pid, struct attach_tally *t)
{
	uint64_t head = __atomic_load_n(&a->ctl->data_head, __ATOMIC_ACQUIRE);
	int ret = attach_pid(a->fd, pid, SC_MS(500));

	if (!ret) {
		t->attached++;
		t->over += SC_STAT(a->fd, watches) > LIMIT_N;
		ioctl(a->fd, STALLCAP_IOC_DETACH, 0);
	} else if (ret == -ENOSPC) {
		t->refused++;
		t->dirty += __atomic_load_n(&a->ctl->data_head, __ATOMIC_ACQUIRE) != head;
	} else {
		t->ret = ret;
		return false;
	}
	__atomic_store_n(&a->ctl->data_tail,
			 __atomic_load_n(&a->ctl->data_head, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	return true;
}

/* What every tally must show: no error, nothing left by a refusal, both outcomes. */
static int tally_checked(const struct attach_tally *t)
{
	CHK(!t->ret, "ATTACH: %s", strerror(-t->ret));
	CHK(!t->dirty, "%lu of %lu refused ATTACHes left records in the ring",
	    t->dirty, t->refused);
	CHK(!t->over, "%lu ATTACHes made more than %d watches", t->over, LIMIT_N);
	CHK(t->attached && t->refused, "the ATTACHes were not both made and refused");
	return 0;
}

static int user_attach_races_an_arm(void *arg)
{
	pid_t pid = start_pollers(LIMIT_N);
	struct attach_tally t = { 0 };
	struct arm_racer r = { 0 };
	struct sc_session a, b;
	pthread_t racer;
	uint64_t end;

	CHK(pid > 0, "the target did not start");
	CHK(!sc_session_setup(&a, NULL), "session a");
	CHK(!sc_session_setup(&b, &(struct sc_opts){ .no_map = true }), "session b");
	r.fd = b.fd;
	CHK(!pthread_create(&racer, NULL, arm_and_release, &r), "racer");
	/* LIMIT_N threads, limit LIMIT_N: no room while b holds one */
	for (end = sc_now_ns() + 2 * SC_NSEC_PER_SEC; sc_now_ns() < end;) {
		if (!attach_counted(&a, pid, &t))
			break;
		usleep(200);	/* the racer's turn to find room */
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELAXED);
	pthread_join(racer, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("# %lu ATTACHes watched every thread, %lu were refused; the racer's ARM %lu times, refused %lu\n",
	       t.attached, t.refused, r.armed, r.refused);
	if (tally_checked(&t))
		return 1;
	CHK(r.armed && r.refused, "the racer's ARMs were not both made and refused");
	CHK(SC_STAT(a.fd, watches) == 0 && SC_STAT(b.fd, watches) == 0, "watches left");
	sc_session_close(&a);
	sc_session_close(&b);
	return 0;
}

/* Run @fn as the test user with max_watches_per_user at LIMIT_N. */
static void as_user_at_limit(struct __test_metadata *_metadata,
			     FIXTURE_DATA(unpriv) *self, int (*fn)(void *))
{
	if (self->max_watches < 0)
		SKIP(return, "no max_watches_per_user parameter");
	ASSERT_EQ(0, tu_param_write("max_watches_per_user", LIMIT_N));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, fn, NULL));
	EXPECT_EQ(0, tu_param_write("max_watches_per_user", self->max_watches));
}

TEST_F_TIMEOUT(unpriv, attach_raced_to_the_limit_is_refused_whole, 120)
{
	as_user_at_limit(_metadata, self, user_attach_races_an_arm);
}

/*
 * The target's threads come and go while ATTACHes run: LIMIT_N threads, one
 * more half the time, limit LIMIT_N.  An ATTACH that counted LIMIT_N may
 * find one more when it makes their watches: it watches the LIMIT_N it
 * counted (the other gets its watch at its first wait call, or is reported
 * missed), and is never refused after watches were announced.
 */
static int user_attach_races_new_threads(void *arg)
{
	pid_t pid = start_process(LIMIT_N, true);
	struct attach_tally t = { 0 };
	struct sc_session a;
	uint64_t end;

	CHK(pid > 0, "the target did not start");
	CHK(!sc_session_setup(&a, NULL), "session");
	for (end = sc_now_ns() + 2 * SC_NSEC_PER_SEC; sc_now_ns() < end;)
		if (!attach_counted(&a, pid, &t))
			break;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("# %lu ATTACHes succeeded, %lu were refused\n", t.attached, t.refused);
	if (tally_checked(&t))
		return 1;
	CHK(SC_STAT(a.fd, watches) == 0, "watches left");
	sc_session_close(&a);
	return 0;
}

TEST_F_TIMEOUT(unpriv, attach_meeting_new_threads_is_refused_whole_or_not_at_all, 120)
{
	as_user_at_limit(_metadata, self, user_attach_races_new_threads);
}

/* ------------------------------------------------------------------------
 * STALLCAP_CFG_GLOBAL
 * ------------------------------------------------------------------------
 */

static int user_asks_for_global(void *arg)
{
	struct stallcap_config c = { .size = sizeof(c), .flags = STALLCAP_CFG_GLOBAL };
	struct stallcap_config now;
	struct sc_session s;

	CHK(!sc_open(&s), "open");
	CHK(ioctl(s.fd, STALLCAP_IOC_SET_CONFIG, &c) == -1 && errno == EPERM,
	    "SET_CONFIG(GLOBAL) by a user: %s", strerror(errno));
	CHK(!sc_get_config(s.fd, &now) && !(now.flags & STALLCAP_CFG_GLOBAL),
	    "the refused SET_CONFIG changed the configuration");
	/* without STALLCAP_FEAT_DEFER_USER the flag alone is refused: EINVAL */
	c.flags = STALLCAP_CFG_GLOBAL | STALLCAP_CFG_DEFER_USER;
	CHK(ioctl(s.fd, STALLCAP_IOC_SET_CONFIG, &c) == -1 &&
	    errno == (s.info.features & STALLCAP_FEAT_DEFER_USER ? EPERM : EINVAL),
	    "SET_CONFIG(GLOBAL | DEFER_USER) by a user: %s", strerror(errno));
	CHK(sc_get_stats(s.fd, &(struct stallcap_stats){ 0 }, STALLCAP_STATS_GLOBAL) == -1 &&
	    errno == EPERM, "GET_STATS(GLOBAL) by a user: %s", strerror(errno));
	CHK(!sc_get_stats(s.fd, &(struct stallcap_stats){ 0 }, 0),
	    "GET_STATS of the user's own session: %s", strerror(errno));
	sc_session_close(&s);
	return 0;
}

TEST_F(unpriv, global_reader_needs_cap_sys_admin)
{
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_asks_for_global, NULL));
}

/* The user opens the device and hands the file to root. */
static int user_opens_for_root(void *arg)
{
	struct passing *p = arg;
	struct sc_session s;
	char ch;

	close(p->sock[1]);
	CHK(!sc_open(&s), "open");
	CHK(!send_fd(p->sock[0], s.fd), "sendmsg");
	CHK(read(p->sock[0], &ch, 1) == 1, "wait for root");
	sc_session_close(&s);
	return 0;
}

/*
 * What a session may do follows its opener's credentials, not the caller's:
 * root calling on a file a user opened cannot make it a global reader, nor
 * read the module-wide counters through it.
 */
TEST_F(unpriv, global_rights_follow_the_opener_not_the_caller)
{
	struct stallcap_config c = { .size = sizeof(c), .flags = STALLCAP_CFG_GLOBAL };
	struct stallcap_stats st;
	struct passing p;
	pid_t u;
	int fd, status;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, p.sock));
	u = fork();
	ASSERT_LE(0, u);
	if (u == 0) {
		int ret = tu_drop_privileges(TU_USER_UID, TU_USER_GID);

		_exit(ret ? 253 : user_opens_for_root(&p) ? 1 : 0);
	}
	close(p.sock[0]);
	fd = recv_fd(p.sock[1]);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &c));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, sc_get_stats(fd, &st, STALLCAP_STATS_GLOBAL));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(0, sc_get_stats(fd, &st, 0));
	close(fd);
	ASSERT_EQ(1, write(p.sock[1], "x", 1));
	ASSERT_EQ(u, waitpid(u, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("user: %#x", status);
	close(p.sock[1]);
}

/* A user calling on a session root opened: root's rights hold. */
static int user_in_roots_global_session(void *arg)
{
	struct stallcap_config c = { .size = sizeof(c), .flags = STALLCAP_CFG_GLOBAL };
	const struct sc_session *s = arg;
	struct stallcap_config now;
	struct stallcap_stats st;

	CHK(getuid() == TU_USER_UID && geteuid() == TU_USER_UID, "still root");
	CHK(!ioctl(s->fd, STALLCAP_IOC_SET_CONFIG, &c),
	    "SET_CONFIG(GLOBAL) on root's session: %s", strerror(errno));
	CHK(!sc_get_config(s->fd, &now) && (now.flags & STALLCAP_CFG_GLOBAL),
	    "GLOBAL not in force");
	CHK(!sc_get_stats(s->fd, &st, STALLCAP_STATS_GLOBAL),
	    "GET_STATS(GLOBAL) on root's session: %s", strerror(errno));
	return 0;
}

/*
 * The other way round: a file root opened keeps root's rights for whoever
 * calls on it, e.g. a daemon that opens the device and drops privileges.
 */
TEST_F(unpriv, global_rights_of_a_root_opener_survive_dropped_privileges)
{
	struct sc_session s;

	ASSERT_EQ(0, sc_open(&s));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_in_roots_global_session, &s));
	sc_session_close(&s);
}

/* ------------------------------------------------------------------------
 * A setuid-root program exec'd by a watched thread
 * ------------------------------------------------------------------------
 */

/* The setuid program: secrets on its stack, spinning. */
SC_NOINLINE int suid_spin(int ms)
{
	volatile uint64_t secret[8] __attribute__((unused));
	uint64_t end = sc_now_ns() + SC_MS(ms);

	for (int i = 0; i < 8; i++)
		secret[i] = SUID_CANARY + i;
	sc_spin_frame = __builtin_frame_address(0);
	while (sc_now_ns() < end)
		;
	return geteuid() == 0 ? 0 : 3;	/* 3: not setuid (nosuid mount) */
}

struct suid {
	const char *path;
	int fd;			/* the user's session, without O_CLOEXEC */
};

static bool has_canary(const struct stallcap_sample *r)
{
	const unsigned char *p = sc_stack(r);

	for (uint32_t off = 0; off + 8 <= sc_stack_size(r); off += 8) {
		uint64_t w;

		memcpy(&w, p + off, 8);
		if (w == SUID_CANARY)
			return true;
	}
	return false;
}

static int user_execs_setuid(void *arg)
{
	struct suid *x = arg;
	struct sc_records rs = { 0 };
	unsigned int after_exec = 0, canary = 0;
	struct sc_session s;
	char fdarg[16];
	int status, fd;
	pid_t pid;

	CHK(!sc_session_setup(&s, NULL), "session setup");
	fd = fcntl(s.fd, F_DUPFD, 100);
	CHK(fd >= 0, "dup");
	pid = fork();
	CHK(pid >= 0, "fork");
	if (pid == 0) {
		snprintf(fdarg, sizeof(fdarg), "%d", fd);
		if (sc_arm(fd, TIMEOUT, 0, 0x5e7))
			_exit(8);
		execl(x->path, SUID_NAME, "--suid-spin", "400", (char *)NULL);
		_exit(127);
	}
	close(fd);
	CHK(waitpid(pid, &status, 0) == pid && WIFEXITED(status), "child");
	if (WEXITSTATUS(status) == 3) {
		fprintf(stderr, "#   the setuid bit had no effect here\n");
		return 0;
	}
	CHK(WEXITSTATUS(status) == 0, "exit %d: 8 ARM failed, 127 exec failed",
	    WEXITSTATUS(status));
	CHK(TU_WAIT_STAT(s.fd, 0, watches, 0, SC_WAIT_MS) == 0, "the watch stays after exit");
	sc_ring_collect(&s, &rs, 0, 0, 200);
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_sample *r = (const void *)rs.rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE && r->hdr.type != STALLCAP_REC_USER_STACK)
			continue;
		if (r->tid != (uint32_t)pid || strncmp(r->comm, SUID_NAME, strlen(SUID_NAME)))
			continue;
		after_exec++;
		canary += has_canary(r);
	}
	if (after_exec)
		sc_log_records(NULL, &rs);
	CHK(!after_exec, "%u samples of the setuid-root program (comm '%s') in the user's "
	    "session, %u with its stack secrets: the watch outlives a privilege-raising exec",
	    after_exec, SUID_NAME, canary);
	sc_records_free(&rs);
	sc_session_close(&s);
	return 0;
}

TEST_F_TIMEOUT(unpriv, setuid_exec_is_not_captured_into_the_users_session, 120)
{
	const char *exe = tu_self_exe();
	struct suid x;
	char cmd[4200];

	if (!exe)
		SKIP(return, "cannot find this program");
	snprintf(self->suid_path, sizeof(self->suid_path), "/tmp/%s-%d", SUID_NAME, getpid());
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", exe, self->suid_path);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(0, chown(self->suid_path, 0, 0));
	ASSERT_EQ(0, chmod(self->suid_path, 04755));
	x.path = self->suid_path;
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_execs_setuid, &x));
}

/* ------------------------------------------------------------------------
 * What a system-wide reader receives
 * ------------------------------------------------------------------------
 */

struct forger {
	struct sc_session *s;
	volatile int stop;
	unsigned long writes;
};

/*
 * Rewrite pid and comm of every sample in the ring, again and again while
 * it is busy (the module writes them first); consume what is complete.
 */
static void *forger_main(void *arg)
{
	struct forger *fg = arg;
	struct stallcap_ring_ctl *ctl = fg->s->ctl;
	uint64_t size = ctl->data_size;

	sc_pin_self(1);
	while (!fg->stop) {
		uint64_t head = __atomic_load_n(&ctl->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = ctl->data_tail, pos = tail;
		bool busy = false;

		while (pos < head) {
			struct stallcap_sample *r = (void *)(fg->s->data + (pos & (size - 1)));
			uint32_t rsize = __atomic_load_n(&r->hdr.size, __ATOMIC_RELAXED);

			if (rsize < 8 || (rsize & 7) || rsize > head - pos)
				break;
			if (r->hdr.type == STALLCAP_REC_SAMPLE &&
			    rsize >= sizeof(struct stallcap_sample)) {
				r->pid = FORGED_PID;
				r->tid = FORGED_PID;
				memcpy(r->comm, FORGED_COMM, sizeof(FORGED_COMM));
				fg->writes++;
			}
			if (__atomic_load_n(&r->hdr.flags, __ATOMIC_ACQUIRE) & STALLCAP_REC_F_BUSY)
				busy = true;
			pos += rsize;
			if (!busy)
				tail = pos;	/* consumed up to the first busy one */
		}
		__atomic_store_n(&ctl->data_tail, tail, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int user_forges_records(void *arg)
{
	struct forger fg = { 0 };
	struct sc_session s;
	pthread_t th;

	CHK(!sc_session_setup(&s, &(struct sc_opts){ .user_stack_bytes = 256,
						     .sample_cap_ns = SC_MS(5) }),
	    "session setup");
	fg.s = &s;
	sc_pin_self(0);		/* the stalling threads; the forger on CPU 1 */
	CHK(!pthread_create(&th, NULL, forger_main, &fg), "thread");
	for (int i = 0; i < 12; i++)
		CHK(!stall_once(&s, i % 3, 3, NULL), "no stall %d", i);
	fg.stop = 1;
	pthread_join(th, NULL);
	fprintf(stderr, "#   the user rewrote %lu samples in its own ring\n", fg.writes);
	sc_session_close(&s);
	return 0;
}

TEST_F_TIMEOUT(unpriv, global_reader_gets_records_as_the_module_wrote_them, 120)
{
	struct stallcap_config c = { .size = sizeof(c), .flags = STALLCAP_CFG_GLOBAL };
	struct sc_records rs = { 0 };
	unsigned int forged = 0, mirrored = 0;
	struct sc_session g;

	ASSERT_EQ(0, sc_open(&g));
	if (!(g.info.features & STALLCAP_FEAT_GLOBAL))
		SKIP(sc_session_close(&g); return, "no system-wide readers");
	ASSERT_EQ(0, ioctl(g.fd, STALLCAP_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, sc_get_config(g.fd, &g.cfg));
	ASSERT_EQ(0, sc_map(&g));
	EXPECT_EQ(0, tu_run_as(TU_USER_UID, TU_USER_GID, user_forges_records, NULL));
	sc_ring_collect(&g, &rs, 0, 0, 200);
	for (size_t i = 0; i < rs.n; i++) {
		const struct stallcap_sample *r = (const void *)rs.rec[i];

		if (r->hdr.type != STALLCAP_REC_SAMPLE)
			continue;
		mirrored++;
		if (r->pid == FORGED_PID || !strncmp(r->comm, FORGED_COMM, 16))
			forged++;
	}
	EXPECT_LT(0, mirrored) TH_LOG("the global reader got no sample (%s)", rs.err);
	EXPECT_EQ(0, forged)
		TH_LOG("%u of %u samples mirrored to root's global reader carry the pid/comm an "
		       "unprivileged user wrote into its own ring: mirroring copies from the "
		       "user-writable ring", forged, mirrored);
	sc_records_free(&rs);
	sc_session_close(&g);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--suid-spin"))
		return suid_spin(atoi(argv[2]));
	return test_harness_run(argc, argv);
}
