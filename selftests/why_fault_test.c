// SPDX-License-Identifier: GPL-2.0
/*
 * Why it stalled, for a stall made of major page faults: a file mapping is
 * read after its pages were dropped from the page cache, and the sample's
 * STALLCAP_SEC_TIMES must put the time where it went (blocked in major
 * faults, in block I/O wait when delay accounting is on).
 *
 * The guest runs from an initramfs, without block devices: the file lives
 * on a FUSE file system that this test serves itself, through /dev/fuse and
 * the kernel protocol of <linux/fuse.h> (no libfuse), from a thread on CPU 0
 * that answers every READ after READ_DELAY_US, as a slow disk would.  FUSE
 * is built into Debian's 6.12 and 7.2 and into the debug kernel; on 5.10
 * and 6.1 it is a module, which the harness loads from the kernel's own
 * package (scripts/guest-modules.sh).  Without /dev/fuse the test skips.
 *
 * Each fault reads one page the way a disk file system does: the INIT reply
 * asks for one page of read-ahead and asynchronous reads, so the fault's
 * read-around (one page) goes out as a background request and the faulting
 * thread waits for the folio lock in io_schedule(), which the kernel's delay
 * accounting counts as block I/O wait.  (With no read-ahead, or with
 * MADV_RANDOM, FUSE reads the page synchronously in ->read_folio and the
 * thread sleeps in FUSE's own request wait: no I/O wait is accounted.)
 */
#include <linux/fuse.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>

#include "sc_harness.h"
#include "why_util.h"

#define FILE_PAGES	32
#define FILE_INO	2
#define FILE_NAME	"data"
#define READ_DELAY_US	10000
#define WATCH_MS	60
/*
 * Rounds to find one caught in a wait: 5 were too few on the debug guest
 * (CI30: each of 5 found the thread running, 25-50 ms of CPU in 60 ms).
 */
#define ROUNDS		8
/* a request buffer: FUSE_MIN_READ_BUFFER, and more than a write of max_write */
#define REQ_BUF		(64 * 1024)
#define DELAYACCT	"/proc/sys/kernel/task_delayacct"

/* The byte at every offset of page @i of the file. */
static unsigned char page_pattern(unsigned long i)
{
	return (unsigned char)(i * 7 + 3);
}

/* ---- a FUSE server of one read-only file ---- */

struct fusesrv {
	pthread_t th;
	int fd;
	long psize;
	bool mounted, running;
	char dir[64];
	int stop;
	/* set by the server thread, read by the test (__atomic) */
	unsigned int inited, reads, bad_reads;
	unsigned char *page;
	uint64_t req[REQ_BUF / 8];
};

static int srv_reply(struct fusesrv *s, uint64_t unique, int error,
		     const void *data, size_t len)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh) + (error ? 0 : len),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &oh, .iov_len = sizeof(oh) },
		{ .iov_base = (void *)data, .iov_len = len },
	};

	return writev(s->fd, iov, error || !len ? 1 : 2) == (ssize_t)oh.len ?
	       0 : -1;
}

static void srv_attr(const struct fusesrv *s, uint64_t ino, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->blksize = s->psize;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0555;
		a->nlink = 2;
		return;
	}
	a->mode = S_IFREG | 0444;
	a->nlink = 1;
	a->size = (uint64_t)FILE_PAGES * s->psize;
	a->blocks = a->size / 512;
}

/*
 * INIT: one page of read-ahead and asynchronous reads (see the top of the
 * file), no other feature.
 */
static void srv_init(struct fusesrv *s, const struct fuse_in_header *ih,
		     const struct fuse_init_in *in)
{
	struct fuse_init_out out = {
		.major = FUSE_KERNEL_VERSION,
		.minor = FUSE_KERNEL_MINOR_VERSION,
		.max_readahead = s->psize,
		.flags = in->flags & FUSE_ASYNC_READ,
		.max_write = s->psize,
		.time_gran = 1,
	};

	if (in->minor < out.minor)
		out.minor = in->minor;
	if (!srv_reply(s, ih->unique, 0, &out, sizeof(out)))
		__atomic_store_n(&s->inited, 1, __ATOMIC_RELEASE);
}

static void srv_lookup(struct fusesrv *s, const struct fuse_in_header *ih,
		       const char *name)
{
	struct fuse_entry_out out = {
		.nodeid = FILE_INO,
		.generation = 1,
		.entry_valid = 3600,
		.attr_valid = 3600,
	};

	if (ih->nodeid != FUSE_ROOT_ID || strcmp(name, FILE_NAME)) {
		srv_reply(s, ih->unique, -ENOENT, NULL, 0);
		return;
	}
	srv_attr(s, FILE_INO, &out.attr);
	srv_reply(s, ih->unique, 0, &out, sizeof(out));
}

static void srv_getattr(struct fusesrv *s, const struct fuse_in_header *ih)
{
	struct fuse_attr_out out = { .attr_valid = 3600 };

	if (ih->nodeid != FUSE_ROOT_ID && ih->nodeid != FILE_INO) {
		srv_reply(s, ih->unique, -ENOENT, NULL, 0);
		return;
	}
	srv_attr(s, ih->nodeid, &out.attr);
	srv_reply(s, ih->unique, 0, &out, sizeof(out));
}

/* READ: one page at most (max_readahead), after READ_DELAY_US. */
static void srv_read(struct fusesrv *s, const struct fuse_in_header *ih,
		     const struct fuse_read_in *in)
{
	uint64_t size = (uint64_t)FILE_PAGES * s->psize;
	size_t len = in->size;

	if (ih->nodeid != FILE_INO) {
		srv_reply(s, ih->unique, -EIO, NULL, 0);
		return;
	}
	if (in->offset % s->psize || len != (size_t)s->psize)
		__atomic_fetch_add(&s->bad_reads, 1, __ATOMIC_RELAXED);
	if (in->offset >= size)
		len = 0;
	else if (len > size - in->offset)
		len = size - in->offset;
	if (len > (size_t)s->psize)
		len = s->psize;
	memset(s->page, page_pattern(in->offset / s->psize), s->psize);
	usleep(READ_DELAY_US);
	__atomic_fetch_add(&s->reads, 1, __ATOMIC_RELEASE);
	srv_reply(s, ih->unique, 0, s->page, len);
}

static void srv_statfs(struct fusesrv *s, const struct fuse_in_header *ih)
{
	struct fuse_statfs_out out = {
		.st = { .blocks = FILE_PAGES, .bsize = s->psize,
			.frsize = s->psize, .namelen = 255, .files = 2 },
	};

	srv_reply(s, ih->unique, 0, &out, sizeof(out));
}

static void srv_handle(struct fusesrv *s, size_t n)
{
	const struct fuse_in_header *ih = (const void *)s->req;
	const void *arg = ih + 1;
	struct fuse_open_out open_out = { .fh = 1 };

	if (n < sizeof(*ih) || ih->len != n)
		return;
	((char *)s->req)[n < REQ_BUF ? n : REQ_BUF - 1] = '\0';
	switch (ih->opcode) {
	case FUSE_INIT:
		srv_init(s, ih, arg);
		break;
	case FUSE_LOOKUP:
		srv_lookup(s, ih, arg);
		break;
	case FUSE_GETATTR:
		srv_getattr(s, ih);
		break;
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		srv_reply(s, ih->unique, 0, &open_out, sizeof(open_out));
		break;
	case FUSE_READ:
		srv_read(s, ih, arg);
		break;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		srv_reply(s, ih->unique, 0, NULL, 0);
		break;
	case FUSE_STATFS:
		srv_statfs(s, ih);
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break;		/* no reply (INTERRUPT: the READ is answered) */
	default:	/* the protocol's "not implemented": not asked again */
		srv_reply(s, ih->unique, -ENOSYS, NULL, 0);
		break;
	}
}

/*
 * Serves requests until told to stop or the connection is gone (ENODEV:
 * unmounted or aborted).  Polls, so that a stop request is seen in 50 ms.
 */
static void *srv_fn(void *arg)
{
	struct fusesrv *s = arg;
	struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
	ssize_t n;

	why_pin(0);
	prctl(PR_SET_NAME, "why-fuse");
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (pfd.revents & (POLLERR | POLLHUP))
			break;
		n = read(s->fd, s->req, REQ_BUF);
		if (n < 0 && errno == ENODEV)
			break;
		if (n > 0)
			srv_handle(s, n);
	}
	return NULL;
}

/*
 * Mounts the file system on a new directory of /tmp and starts its server.
 * Returns 0, 1 when this kernel has no FUSE (@why says why), or -1.
 */
static int srv_start(struct fusesrv *s, const char **why)
{
	char opts[128];
	int i;

	s->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		*why = errno == ENOENT || errno == ENODEV || errno == ENXIO ?
		       "no /dev/fuse: FUSE is not built into this kernel (the guest loads no modules)" :
		       NULL;
		return *why ? 1 : -1;
	}
	s->psize = sysconf(_SC_PAGESIZE);
	s->page = malloc(s->psize);
	snprintf(s->dir, sizeof(s->dir), "/tmp/why-fuse-XXXXXX");
	if (!s->page || !mkdtemp(s->dir))
		return -1;
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0",
		 s->fd);
	if (mount("why-fuse", s->dir, "fuse", MS_NOSUID | MS_NODEV | MS_RDONLY,
		  opts)) {
		if (errno != ENODEV)
			return -1;
		*why = "mount: no file system type fuse in this kernel";
		return 1;
	}
	s->mounted = true;
	if (pthread_create(&s->th, NULL, srv_fn, s))
		return -1;
	s->running = true;
	/* INIT is answered within a few ms; 5 s covers a loaded TCG host */
	for (i = 0; i < 5000 && !__atomic_load_n(&s->inited, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return __atomic_load_n(&s->inited, __ATOMIC_ACQUIRE) ? 0 : -1;
}

/* Unmount (lazily), stop the server, remove the directory: on every path. */
static void srv_stop(struct fusesrv *s)
{
	if (s->mounted)
		umount2(s->dir, MNT_DETACH);
	s->mounted = false;
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	if (s->running)
		pthread_join(s->th, NULL);
	s->running = false;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->dir[0])
		rmdir(s->dir);
	s->dir[0] = '\0';
	free(s->page);
	s->page = NULL;
}

/* ---- the test ---- */

static int read_int(const char *path)
{
	char buf[16] = "";
	int fd = open(path, O_RDONLY), n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

static int write_str(const char *path, const char *str)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, str, strlen(str)) == (ssize_t)strlen(str);
	close(fd);
	return ok ? 0 : -1;
}

/* Pages of [@p, @p + @len) in the page cache. */
static long resident_pages(void *p, size_t len, long psize)
{
	unsigned char vec[FILE_PAGES];
	long i, n = 0;

	if (len / psize > FILE_PAGES || mincore(p, len, vec))
		return -1;
	for (i = 0; i < (long)(len / psize); i++)
		n += vec[i] & 1;
	return n;
}

/*
 * The stalled code: reads every page of the mapping (each read a major
 * fault) and returns how many did not hold the file's pattern.  Its frame
 * is the innermost user frame of a sample taken in a fault.
 */
WHY_NOINLINE int why_touch_pages(const volatile unsigned char *p, long psize)
{
	int i, bad = 0;

	for (i = 0; i < FILE_PAGES; i++)
		bad += p[i * psize] != page_pattern(i) ||
		       p[(i + 1) * psize - 1] != page_pattern(i);
	return bad;
}

FIXTURE(fault)
{
	struct why_session s;
	struct fusesrv srv;
	int delayacct_old;	/* to restore, or -1 */
	uint64_t buf[65536 / 8];
};

FIXTURE_SETUP(fault)
{
	self->srv.fd = -1;
	self->delayacct_old = -1;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, why_open(&self->s));
}

FIXTURE_TEARDOWN(fault)
{
	srv_stop(&self->srv);
	if (self->delayacct_old == 0)
		write_str(DELAYACCT, "0");
	why_close(&self->s);
}

/*
 * One round, in a thread of its own: the kernel gives a thread delay
 * accounting only when it is created while kernel.task_delayacct is 1.
 */
struct round {
	FIXTURE_DATA(fault) *self;
	struct stallcap_sample *smp;
	const struct stallcap_sec_times *t;
	long resident;		/* pages in the page cache before the touches */
	int bad;		/* pages without the pattern */
	long majflt, minflt;	/* getrusage(RUSAGE_THREAD) over the touches */
	unsigned int reads;	/* READ requests served over the touches */
	int rc;
};

/* Map the file, drop its pages, touch them under a watch. */
static int fault_round(FIXTURE_DATA(fault) *self, struct round *r, int fd)
{
	size_t len = (size_t)FILE_PAGES * self->srv.psize;
	struct rusage ru0, ru1;
	unsigned int reads0;
	void *p;
	int ret = -1;

	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	/* out of the page cache: the file's own pages, else all clean pages */
	posix_fadvise(fd, 0, len, POSIX_FADV_DONTNEED);
	r->resident = resident_pages(p, len, self->srv.psize);
	if (r->resident) {
		write_str("/proc/sys/vm/drop_caches", "3");
		r->resident = resident_pages(p, len, self->srv.psize);
	}
	reads0 = __atomic_load_n(&self->srv.reads, __ATOMIC_ACQUIRE);
	getrusage(RUSAGE_THREAD, &ru0);
	if (why_arm(&self->s, WHY_MS(WATCH_MS)))
		goto out;
	r->bad = why_touch_pages(p, self->srv.psize);
	if (why_disarm(&self->s))
		goto out;
	getrusage(RUSAGE_THREAD, &ru1);
	r->reads = __atomic_load_n(&self->srv.reads, __ATOMIC_ACQUIRE) - reads0;
	r->majflt = ru1.ru_majflt - ru0.ru_majflt;
	r->minflt = ru1.ru_minflt - ru0.ru_minflt;
	r->smp = why_first_sample(&self->s, why_gettid(), self->buf,
				  sizeof(self->buf));
	if (r->smp)
		r->t = why_section(r->smp, STALLCAP_SEC_TIMES, 0);
	ret = 0;
out:
	munmap(p, len);
	return ret;
}

static void *round_fn(void *arg)
{
	struct round *r = arg;
	char path[96];
	int fd;

	r->rc = -1;
	if (why_pin(1))
		return NULL;
	snprintf(path, sizeof(path), "%s/" FILE_NAME, r->self->srv.dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);	/* a fresh read-ahead state */
	if (fd < 0)
		return NULL;
	r->rc = fault_round(r->self, r, fd);
	close(fd);
	return NULL;
}

/*
 * A wait of this round's stall, and its time broken down as it should be.
 * Two faults at least completed in the interval: on the debug guest one
 * fault cost 29 ms of CPU once, and the 60 ms interval held only one.
 */
static bool round_ok(const struct round *r, bool delayacct)
{
	const struct stallcap_sec_times *t = r->t;

	if (!t || r->smp->state != STALLCAP_STATE_UNINTERRUPTIBLE ||
	    !(t->valid & (1ULL << STALLCAP_TIME_SLEEP)) ||
	    t->sleep_ns < (r->smp->capture_ns - t->since_ns) / 2 ||
	    t->maj_flt < 2)
		return false;
	/*
	 * The wait in progress at the capture is not in blkio yet: on the
	 * debug guest a slow FUSE reply made it over half the sleep (blkio
	 * 24.0 of 55.1 ms).  Such a round says nothing; the last one is
	 * judged whatever it holds.
	 */
	return !delayacct ||
	       ((t->valid & (1ULL << STALLCAP_TIME_BLKIO_DELAY)) &&
		t->blkio_delay_ns >= t->sleep_ns / 2);
}

/*
 * On CPU and waiting for block I/O at once: one of the figures is off (a
 * sample read by the timer on the thread's CPU has shown on_cpu = the whole
 * interval with 5 faults' waits in blkio).  Said, for the record.
 */
static void note_impossible(const struct round *r)
{
	const struct stallcap_sec_times *t = r->t;
	uint64_t span;

	if (!t || !(t->valid & (1ULL << STALLCAP_TIME_BLKIO_DELAY)))
		return;
	span = r->smp->capture_ns - t->since_ns;
	if (t->on_cpu_ns + t->blkio_delay_ns > span + span / 10)
		fprintf(stderr, "# note: on CPU %.2f ms + block I/O %.2f ms > interval %.2f ms\n",
			t->on_cpu_ns / 1e6, t->blkio_delay_ns / 1e6, span / 1e6);
}

/* The fault of a file mapping, and the wait for the page's read. */
static const char *const fault_fns[] = {
	"filemap_fault", "__do_fault", "do_read_fault", NULL,
};
static const char *const wait_fns[] = {
	"folio_wait_bit_common", "__folio_lock_killable", "io_schedule", NULL,
};

static void check_round(struct __test_metadata *_metadata,
			FIXTURE_DATA(fault) *self, const struct round *r,
			bool delayacct)
{
	const uint64_t rd = (uint64_t)READ_DELAY_US * 1000;
	struct stallcap_info info = { .size = sizeof(info) };
	const struct stallcap_sec_times *t = r->t;
	const struct stallcap_section *u;
	uint64_t span;

	/* every page was out of the cache, read from the file, as it holds */
	ASSERT_EQ(0, r->resident);
	ASSERT_EQ(0, r->bad);
	ASSERT_EQ((unsigned int)FILE_PAGES, r->reads);
	/* one page per READ */
	ASSERT_EQ(0U, __atomic_load_n(&self->srv.bad_reads, __ATOMIC_RELAXED));
	/* and the kernel counted each fault as major */
	ASSERT_GE(r->majflt, (long)FILE_PAGES);

	/* caught waiting for a page's read, in the fault */
	ASSERT_EQ(STALLCAP_STATE_UNINTERRUPTIBLE, r->smp->state);
	ASSERT_EQ(STALLCAP_PATH_BLOCKED, r->smp->path);
	ASSERT_EQ(1U, r->smp->cpu);
	u = why_section(r->smp, STALLCAP_SEC_USER_IPS, 0);
	if (u && u->size >= sizeof(*u) + 8)
		ASSERT_TRUE(why_ip_in(*(const uint64_t *)(u + 1),
				      "why_touch_pages"));
	ASSERT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, &info));
	if (info.features & STALLCAP_FEAT_KADDR) {
		ASSERT_TRUE(why_kstack_has(r->smp, fault_fns));
		ASSERT_TRUE(why_kstack_has(r->smp, wait_fns));
	}

	ASSERT_NE(NULL, t);
	ASSERT_NE(0ULL, t->valid & (1ULL << STALLCAP_TIME_MAJ_FLT));
	ASSERT_NE(0ULL, t->valid & (1ULL << STALLCAP_TIME_MIN_FLT));
	ASSERT_NE(0ULL, t->valid & (1ULL << STALLCAP_TIME_SLEEP));
	span = r->smp->capture_ns - t->since_ns;
	ASSERT_GE(span, WHY_MS(WATCH_MS));
	/*
	 * The faults of the interval: major (as getrusage counted them), a
	 * few (each one slept READ_DELAY_US: at most span / READ_DELAY_US).
	 */
	ASSERT_GE(t->maj_flt, 2ULL);
	ASSERT_LE(t->maj_flt, span / rd + 1);
	ASSERT_LE(t->min_flt, (uint64_t)r->minflt);
	/*
	 * Blocked is the bulk of the interval.  Each fault sleeps
	 * READ_DELAY_US, and costs 1 to 7 ms of CPU under TCG on a loaded
	 * host (14 ms in a hiccup): blocked was 57% to 93% of the 60 ms in the
	 * 12 blocked samples of 20 rounds on 6.12, 6.12-rt and 7.2, and a
	 * round under half is run again (up to ROUNDS times: a host hiccup is
	 * no verdict).  Every fault completed in the interval slept
	 * READ_DELAY_US at least; 3/4 of that allows for the scheduler's clock
	 * (on_cpu, hence sleep) drifting from CLOCK_MONOTONIC (6.6% seen) and
	 * for a running slice estimated long.
	 */
	ASSERT_GE(t->sleep_ns, span / 2);
	ASSERT_GE(t->sleep_ns, t->maj_flt * rd * 3 / 4);
	if (!delayacct)
		return;
	/*
	 * With delay accounting, the waits are block I/O waits (the folio
	 * lock, in io_schedule()).  A wait is added when it ends: the one in
	 * progress at the capture is missing, a third of the blocked time at
	 * most with 2 faults done, so blkio covers half of it at least (79% to
	 * 100% seen); each completed fault adds READ_DELAY_US (3/4 margin, as
	 * above).
	 */
	ASSERT_NE(0ULL, t->valid & (1ULL << STALLCAP_TIME_BLKIO_DELAY));
	ASSERT_GE(t->blkio_delay_ns, t->sleep_ns / 2);
	ASSERT_GE(t->blkio_delay_ns, t->maj_flt * rd * 3 / 4);
	/*
	 * The kernel's own figure can be far too large: since 6.12 (EEVDF's
	 * delayed dequeue) a sleep that completes later, from another task,
	 * has its start stored on that task (__block_task() uses current),
	 * and the wake-up adds the time since an older start (31 s and
	 * 64.6 ms seen in 60 ms intervals on 6.12-rt).  The module clamps
	 * every delay field to the interval.
	 */
	ASSERT_LE(t->blkio_delay_ns, span);
}

/* rounds of 32 major faults served by FUSE: over 30 s on a slow debug guest */
TEST_F_TIMEOUT(fault, major_faults_of_a_file_mapping, 180)
{
	const char *why = NULL;
	struct round r = { 0 };
	bool delayacct;
	int rc, attempt;

	rc = srv_start(&self->srv, &why);
	if (rc == 1)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, rc);
	self->delayacct_old = read_int(DELAYACCT);
	if (self->delayacct_old == 0) {
		ASSERT_EQ(0, write_str(DELAYACCT, "1"));
		/* the module re-reads the sysctl at an arm, at most once a second */
		usleep(1100 * 1000);
	}
	/* before 5.14 there is no sysctl and accounting is on by default */
	delayacct = read_int(DELAYACCT) == 1 ||
		    (access(DELAYACCT, F_OK) && sc_kernel_before(5, 14));

	/* a loaded TCG host may run the thread more than it waits: re-run */
	for (attempt = 0; attempt < ROUNDS; attempt++) {
		pthread_t th;

		memset(&r, 0, sizeof(r));
		r.self = self;
		ASSERT_EQ(0, pthread_create(&th, NULL, round_fn, &r));
		ASSERT_EQ(0, pthread_join(th, NULL));
		ASSERT_EQ(0, r.rc);
		ASSERT_NE(NULL, r.smp);
		why_log_sample(r.smp);
		fprintf(stderr, "# round %d: resident %ld reads %u getrusage maj %ld min %ld, fault frames %d wait frames %d\n",
			attempt, r.resident, r.reads, r.majflt, r.minflt,
			why_kstack_has(r.smp, fault_fns), why_kstack_has(r.smp, wait_fns));
		note_impossible(&r);
		if (round_ok(&r, delayacct))
			break;
	}
	check_round(_metadata, self, &r, delayacct);
}

TEST_HARNESS_MAIN
