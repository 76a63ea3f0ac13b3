// SPDX-License-Identifier: GPL-2.0
/*
 * Every ioctl and mmap given a wrong size, an unknown flag, a non-zero
 * reserved field, a bad pointer, a value out of range, or called by a
 * thread that does not own the watch: the errno the uapi header documents,
 * and nothing changed (configuration and counters compared before/after).
 */
#include <linux/capability.h>
#include <sys/wait.h>

#include "stallcap_test.h"

#include "sc_harness.h"

#define TAG		0x6162697465737431ULL
#define HOUR_NS		(3600ULL * SC_NSEC_PER_SEC)
#define KERNEL_PTR	((void *)0xffffffff81000000UL)

/* An ioctl that must fail with @err. */
#define EXPECT_ERRNO(err, call) do {					\
	errno = 0;							\
	EXPECT_EQ(-1, (call));						\
	EXPECT_EQ(err, errno) TH_LOG("%s: %s", #call, strerror(errno));	\
} while (0)

struct state {
	struct stallcap_config cfg;
	struct stallcap_stats st;
};

FIXTURE(abi) {
	struct sc_session s;	/* opened, not configured, not mapped */
	struct state before;
	void *unmapped;		/* an address with nothing mapped */
	void *readonly;		/* a read-only page */
	uint64_t min;		/* min_deadline_ns */
};

static void snapshot(struct __test_metadata *_metadata, int fd, struct state *st)
{
	ASSERT_EQ(0, sc_get_config(fd, &st->cfg));
	ASSERT_EQ(0, sc_get_stats(fd, &st->st, 0));
}

/* Nothing changed since the fixture's (or the last) snapshot. */
static void expect_unchanged(struct __test_metadata *_metadata, FIXTURE_DATA(abi) *self)
{
	struct state now;

	snapshot(_metadata, self->s.fd, &now);
	EXPECT_EQ(0, memcmp(&self->before.cfg, &now.cfg, sizeof(now.cfg)))
		TH_LOG("the configuration changed");
	EXPECT_EQ(0, memcmp(&self->before.st, &now.st, sizeof(now.st)))
		TH_LOG("the counters changed: watches %llu armed %llu stalls %llu",
		       (unsigned long long)now.st.watches, (unsigned long long)now.st.armed,
		       (unsigned long long)now.st.stalls);
}

FIXTURE_SETUP(abi)
{
	ASSERT_EQ(0, sc_open(&self->s));
	self->min = self->s.info.min_deadline_ns;
	/* kept mapped PROT_NONE, so that no other mapping lands there */
	self->unmapped = mmap(NULL, self->s.page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->unmapped);
	/* holds a valid size field for every struct, but cannot be written */
	self->readonly = mmap(NULL, self->s.page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->readonly);
	*(uint32_t *)self->readonly = sizeof(struct stallcap_stats);
	ASSERT_EQ(0, mprotect(self->readonly, self->s.page, PROT_READ));
	snapshot(_metadata, self->s.fd, &self->before);
}

FIXTURE_TEARDOWN(abi)
{
	munmap(self->readonly, self->s.page);
	munmap(self->unmapped, self->s.page);
	sc_session_close(&self->s);
}

/* ------------------------------------------------------------------------
 * GET_INFO, GET_CONFIG, GET_STATS, unknown commands
 * ------------------------------------------------------------------------
 */

/* Was the module loaded with capture=ipi? */
static bool capture_by_ipi(void)
{
	char mode[16] = "";
	FILE *f = fopen("/sys/module/stallcap/parameters/capture", "r");

	if (f) {
		if (!fgets(mode, sizeof(mode), f))
			mode[0] = 0;
		fclose(f);
	}
	return !strncmp(mode, "ipi", 3);
}

TEST_F(abi, info_describes_the_module)
{
	struct stallcap_info *i = &self->s.info;

	EXPECT_EQ(sizeof(*i), i->size);
	EXPECT_EQ(STALLCAP_ABI_VERSION, i->abi_version);
	EXPECT_LT(0, i->min_deadline_ns);
	EXPECT_GE(HOUR_NS, i->min_deadline_ns);
	EXPECT_LE(sc_min_ring_bytes(STALLCAP_MAX_USER_STACK), i->max_ring_bytes)
		TH_LOG("max_ring_bytes too small for the largest user_stack_bytes");
	EXPECT_LT(0, i->max_watches_per_user);
	EXPECT_EQ(0, i->features & ~((STALLCAP_FEAT_WAIT_SPLICE << 1) - 1));
	/* needs task_work_add(): absent only where the module lacks it */
	EXPECT_EQ(!sc_expect_no_task_work(),
		  !!(i->features & STALLCAP_FEAT_DEFER_USER));
	EXPECT_EQ(!sc_expect_no_task_work(),
		  !!(i->features & STALLCAP_FEAT_USER_STACK_MORE));
	/* NMI capture unless loaded with capture=ipi (capture_ipi_test) */
	EXPECT_EQ(!capture_by_ipi(), !!(i->features & STALLCAP_FEAT_NMI));
	/*
	 * the kernel's lock holders (6.16's hung-task blocker tracking, not
	 * on PREEMPT_RT): on 7.2 and 7.3, on none of the others
	 */
	EXPECT_EQ(!sc_kernel_before(6, 16) && !sc_kernel_is_rt(),
		  !!(i->features & STALLCAP_FEAT_KERNEL_LOCKS));
	EXPECT_TRUE(i->features & STALLCAP_FEAT_HEARTBEAT);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_CPUTIME);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_GLOBAL);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_TIMES);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_WHY);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_SHARED_DEADLINE);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_ATTACH);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_ATTACH_INHERIT);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_ATTACH_PARK);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_ATTACH_RECV);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_RECV_PIPE);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_RECV_TTY);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_WAIT_DEVICES);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_WAIT_SPLICE);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_SEC_SYSCALL);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_WATCH_BUSY);
	/* every kernel of the matrix has CONFIG_CFS_BANDWIDTH */
	EXPECT_TRUE(i->features & STALLCAP_FEAT_THROTTLE);
	/* and CONFIG_PSI (the debug kernel's fragment adds both) */
	EXPECT_TRUE(i->features & STALLCAP_FEAT_MEMSTALL);
	EXPECT_TRUE(i->features & STALLCAP_FEAT_SIGNAL_STACK);
	/* the guests boot with tsc=reliable: a counter rate between 0.1 and 10 GHz */
	EXPECT_TRUE(i->features & STALLCAP_FEAT_DEADLINE_TSC);
	EXPECT_LT(100000, i->tsc_khz);
	EXPECT_GT(10000000, i->tsc_khz);
	EXPECT_EQ(STALLCAP_ARCH_X86_64, i->arch);
	EXPECT_EQ(sizeof(struct stallcap_sample), i->sample_fixed_size);
	EXPECT_EQ(0, i->__reserved);
}

TEST_F(abi, get_info_rejects_bad_sizes_and_pointers)
{
	struct { struct stallcap_info i; uint64_t tail[2]; } big;

	memset(&big, 0, sizeof(big));
	big.i.size = STALLCAP_INFO_SIZE_VER0 - 8;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, &big));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, self->unmapped));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, KERNEL_PTR));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, self->readonly));

	/* larger than known with a non-zero tail: E2BIG, nothing written */
	memset(&big, 0xa5, sizeof(big));
	big.i.size = sizeof(big);
	EXPECT_ERRNO(E2BIG, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, &big));
	EXPECT_EQ(sizeof(big), big.i.size);
	/* with a zero tail: size says what the module knows, tail untouched */
	memset(&big, 0, sizeof(big));
	big.i.size = sizeof(big);
	ASSERT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_GET_INFO, &big));
	EXPECT_EQ(sizeof(struct stallcap_info), big.i.size);
	EXPECT_EQ(STALLCAP_ABI_VERSION, big.i.abi_version);
	EXPECT_EQ(0, big.tail[0]);
	expect_unchanged(_metadata, self);
}

TEST_F(abi, config_defaults_are_resolved)
{
	struct stallcap_config *c = &self->before.cfg;
	uint32_t ring = 1024 * 1024;

	if (ring > self->s.info.max_ring_bytes)
		ring = self->s.info.max_ring_bytes;
	EXPECT_EQ(sizeof(*c), c->size);
	EXPECT_EQ(0, c->flags);
	EXPECT_EQ(ring, c->ring_bytes);
	EXPECT_EQ(16384, c->user_stack_bytes);
	EXPECT_EQ(64, c->slots);
	EXPECT_EQ(8, c->max_samples);
	EXPECT_EQ(SC_NSEC_PER_SEC, c->sample_cap_ns);
	EXPECT_EQ(0, c->rate_limit);
	for (int k = 0; k < 5; k++)
		EXPECT_EQ(0, c->__reserved[k]);
}

TEST_F(abi, get_config_writes_only_what_it_knows)
{
	struct { struct stallcap_config c; uint64_t tail[2]; } big;

	/* a tail the module does not know must be zero, even for output */
	memset(&big, 0xa5, sizeof(big));
	big.c.size = sizeof(big);
	EXPECT_ERRNO(E2BIG, ioctl(self->s.fd, STALLCAP_IOC_GET_CONFIG, &big));
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, big.c.sample_cap_ns);
	memset(&big, 0, sizeof(big));
	big.c.size = sizeof(big);
	big.tail[1] = 0;
	ASSERT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_GET_CONFIG, &big));
	EXPECT_EQ(sizeof(struct stallcap_config), big.c.size);
	EXPECT_EQ(self->before.cfg.ring_bytes, big.c.ring_bytes);
	EXPECT_EQ(0, big.tail[0]);
	EXPECT_EQ(0, big.tail[1]);

	memset(&big, 0, sizeof(big));
	big.c.size = STALLCAP_CONFIG_SIZE_VER0 - 8;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_CONFIG, &big));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_CONFIG, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_CONFIG, self->readonly));
	expect_unchanged(_metadata, self);
}

TEST_F(abi, get_stats_rejects_unknown_flags_sizes_and_pointers)
{
	struct stallcap_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	st.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, &st));
	st.flags = STALLCAP_STATS_GLOBAL << 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, &st));
	st.flags = 0;
	st.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, &st));
	st.__reserved = 0;
	/* the counters are output only: what they held is not looked at */
	st.stalls = 7;
	EXPECT_EQ(0, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, &st));
	EXPECT_EQ(0, st.stalls);
	st.size = sizeof(st);
	st.size = STALLCAP_STATS_SIZE_VER0 - 8;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, &st));
	st.size = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, &st));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, KERNEL_PTR));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, self->unmapped));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_GET_STATS, self->readonly));

	/* the module-wide counters are there too */
	ASSERT_EQ(0, sc_get_stats(self->s.fd, &st, STALLCAP_STATS_GLOBAL));
	EXPECT_EQ(sizeof(st), st.size);
	expect_unchanged(_metadata, self);
}

/* ------------------------------------------------------------------------
 * Sizes: every struct ioctl takes its size from the struct's size field
 * ------------------------------------------------------------------------
 */

struct sized_cmd {
	unsigned int cmd;
	uint32_t ksize, ver0;
	const char *name;
};

static const struct sized_cmd sized_cmds[] = {
	{ STALLCAP_IOC_ARM, sizeof(struct stallcap_arm), STALLCAP_ARM_SIZE_VER0, "ARM" },
	{ STALLCAP_IOC_SET_CONFIG, sizeof(struct stallcap_config), STALLCAP_CONFIG_SIZE_VER0,
	  "SET_CONFIG" },
	{ STALLCAP_IOC_GET_CONFIG, sizeof(struct stallcap_config), STALLCAP_CONFIG_SIZE_VER0,
	  "GET_CONFIG" },
	{ STALLCAP_IOC_GET_STATS, sizeof(struct stallcap_stats), STALLCAP_STATS_SIZE_VER0,
	  "GET_STATS" },
	{ STALLCAP_IOC_GET_INFO, sizeof(struct stallcap_info), STALLCAP_INFO_SIZE_VER0,
	  "GET_INFO" },
};

static unsigned int with_size_bits(unsigned int cmd, unsigned int size)
{
	return (cmd & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
	       ((size & _IOC_SIZEMASK) << _IOC_SIZESHIFT);
}

/*
 * Call @c with a struct of @size bytes in @buf: valid contents (an ARM of an
 * hour, a SET_CONFIG of the defaults this session has), then @tail at byte
 * @ksize + 8 when @size allows.  A successful ARM is released again.
 */
static long sized_call(int fd, const struct sized_cmd *c, unsigned int cmd, uint8_t *buf,
		       size_t buflen, uint32_t size, uint8_t tail)
{
	long ret;

	memset(buf, 0, buflen);
	if (c->cmd == STALLCAP_IOC_ARM)
		((struct stallcap_arm *)buf)->timeout_ns = HOUR_NS;
	*(uint32_t *)buf = size;
	if (size >= c->ksize + 16)
		buf[c->ksize + 8] = tail;
	ret = ioctl(fd, cmd, buf);
	if (ret == 0 && c->cmd == STALLCAP_IOC_ARM && sc_release(fd))
		return -2;
	return ret;
}

TEST_F(abi, every_struct_ioctl_takes_its_size_from_the_size_field)
{
	size_t buflen = self->s.page + 64;
	uint8_t *buf = calloc(1, buflen);

	ASSERT_NE(NULL, buf);
	/* the first ARM creates the ring, charged in locked_bytes: not a change here */
	ASSERT_EQ(0, sc_arm(self->s.fd, HOUR_NS, 0, 0));
	ASSERT_EQ(0, sc_release(self->s.fd));
	snapshot(_metadata, self->s.fd, &self->before);
	for (size_t i = 0; i < sizeof(sized_cmds) / sizeof(sized_cmds[0]); i++) {
		const struct sized_cmd *c = &sized_cmds[i];
		uint32_t big = c->ksize + 16;
		/* the size bits of the command say nothing: as declared, the larger size, garbage */
		unsigned int cmds[3] = { c->cmd, with_size_bits(c->cmd, big),
					 with_size_bits(c->cmd, 0x3a5b) };

		for (int v = 0; v < 3; v++) {
			unsigned int cmd = cmds[v];
			bool get = _IOC_DIR(c->cmd) & _IOC_READ;

			TH_LOG("%s, size bits %u", c->name, _IOC_SIZE(cmd));
			/* VER0 and the size this header declares */
			EXPECT_EQ(0, sized_call(self->s.fd, c, cmd, buf, buflen, c->ver0, 0));
			EXPECT_EQ(0, sized_call(self->s.fd, c, cmd, buf, buflen, c->ksize, 0));
			if (get)
				EXPECT_EQ(c->ksize, *(uint32_t *)buf);
			/* larger with a zero tail: works, output not beyond what is known */
			EXPECT_EQ(0, sized_call(self->s.fd, c, cmd, buf, buflen, big, 0));
			if (get) {
				EXPECT_EQ(c->ksize, *(uint32_t *)buf);
				for (uint32_t b = c->ksize; b < big; b++)
					EXPECT_EQ(0, buf[b]);
			}
			/* a page exactly, zero tail: works */
			EXPECT_EQ(0, sized_call(self->s.fd, c, cmd, buf, buflen, self->s.page, 0));
			/* larger with a non-zero tail: E2BIG, nothing written */
			EXPECT_ERRNO(E2BIG, sized_call(self->s.fd, c, cmd, buf, buflen, big, 1));
			EXPECT_EQ(big, *(uint32_t *)buf);
			EXPECT_EQ(1, buf[c->ksize + 8]);
			/* below VER0: EINVAL */
			EXPECT_ERRNO(EINVAL, sized_call(self->s.fd, c, cmd, buf, buflen,
							c->ver0 - 8, 0));
			EXPECT_ERRNO(EINVAL, sized_call(self->s.fd, c, cmd, buf, buflen, 0, 0));
			/* above a page: E2BIG, even with a zero tail */
			EXPECT_ERRNO(E2BIG, sized_call(self->s.fd, c, cmd, buf, buflen,
						       self->s.page + 8, 0));
		}
	}
	free(buf);
	/* ARMs were released, SET_CONFIGs set the defaults in force: all as before */
	expect_unchanged(_metadata, self);
}

TEST_F(abi, unknown_commands_are_enotty)
{
	uint64_t v = 0;

	EXPECT_ERRNO(ENOTTY, ioctl(self->s.fd, _IO(STALLCAP_IOC_MAGIC, 0x7f), 0));
	EXPECT_ERRNO(ENOTTY, ioctl(self->s.fd, _IO(STALLCAP_IOC_MAGIC, 0x00), 0));
	/* a known number with another direction is another command */
	EXPECT_ERRNO(ENOTTY, ioctl(self->s.fd, _IOR(STALLCAP_IOC_MAGIC, 0x01, uint64_t), &v));
	EXPECT_ERRNO(ENOTTY, ioctl(self->s.fd, _IOWR(STALLCAP_IOC_MAGIC, 0x02, uint64_t), &v));
	/* DETACH exists: nothing attached (attach_test covers both) */
	EXPECT_ERRNO(ENOENT, ioctl(self->s.fd, STALLCAP_IOC_DETACH, 0));
	EXPECT_ERRNO(ENOTTY, ioctl(self->s.fd, _IOR(STALLCAP_IOC_MAGIC, 0x07,
						     struct stallcap_stats), &v));
	EXPECT_ERRNO(ENOTTY, ioctl(self->s.fd, _IO(0x42, 0x01), 0));
	expect_unchanged(_metadata, self);
}

/* ------------------------------------------------------------------------
 * ARM
 * ------------------------------------------------------------------------
 */

struct big_arm {
	struct stallcap_arm a;
	uint64_t tail[2];
};

static int arm_raw(int fd, uint32_t size, uint32_t flags, uint64_t timeout, uint64_t reserved,
		   uint64_t tail)
{
	struct big_arm b;

	memset(&b, 0, sizeof(b));
	b.a.size = size;
	b.a.flags = flags;
	b.a.timeout_ns = timeout;
	b.a.user_tag = TAG;
	b.a.__reserved = reserved;
	b.tail[1] = tail;
	return ioctl(fd, STALLCAP_IOC_ARM, &b);
}

TEST_F(abi, arm_rejects_bad_sizes_flags_and_reserved)
{
	int fd = self->s.fd;
	uint64_t t = SC_MS(500);

	EXPECT_ERRNO(EINVAL, arm_raw(fd, 0, 0, t, 0, 0));
	EXPECT_ERRNO(EINVAL, arm_raw(fd, STALLCAP_ARM_SIZE_VER0 - 8, 0, t, 0, 0));
	EXPECT_ERRNO(E2BIG, arm_raw(fd, sizeof(struct big_arm), 0, t, 0, 1));
	EXPECT_ERRNO(EINVAL, arm_raw(fd, sizeof(struct stallcap_arm), 1U << 31, t, 0, 0));
	EXPECT_ERRNO(EINVAL, arm_raw(fd, sizeof(struct stallcap_arm),
				     STALLCAP_ARM_FLAGS_ALL + 1, t, 0, 0));
	EXPECT_ERRNO(EINVAL, arm_raw(fd, sizeof(struct stallcap_arm), 0, t, 1, 0));
	EXPECT_ERRNO(EINVAL, arm_raw(fd, sizeof(struct stallcap_arm),
				     STALLCAP_ARM_CPUTIME | STALLCAP_ARM_ABSOLUTE,
				     sc_now_ns() + t, 0, 0));
	EXPECT_ERRNO(EINVAL, arm_raw(fd, sizeof(struct stallcap_arm),
				     STALLCAP_ARM_CPUTIME | STALLCAP_ARM_HEARTBEAT, t, 0, 0));
	expect_unchanged(_metadata, self);

	/* larger than a page, even with a zero tail: E2BIG */
	{
		size_t len = 2 * self->s.page;
		struct stallcap_arm *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		ASSERT_NE(MAP_FAILED, a);
		a->size = self->s.page + 8;
		a->timeout_ns = t;
		EXPECT_ERRNO(E2BIG, ioctl(fd, STALLCAP_IOC_ARM, a));
		munmap(a, len);
	}
	expect_unchanged(_metadata, self);

	/* larger than known with a zero tail: accepted */
	ASSERT_EQ(0, arm_raw(fd, sizeof(struct big_arm), 0, t, 0, 0));
	EXPECT_EQ(1, SC_STAT(fd, armed));
	ASSERT_EQ(0, sc_release(fd));
}

TEST_F(abi, arm_rejects_bad_pointers)
{
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_ARM, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_ARM, self->unmapped));
	EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_ARM, KERNEL_PTR));
	/* the size field readable, the rest of the struct not */
	{
		char *two = mmap(NULL, 2 * self->s.page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct stallcap_arm *a;

		ASSERT_NE(MAP_FAILED, two);
		munmap(two + self->s.page, self->s.page);
		a = (void *)(two + self->s.page - 8);
		a->size = sizeof(*a);
		a->flags = 0;
		EXPECT_ERRNO(EFAULT, ioctl(self->s.fd, STALLCAP_IOC_ARM, a));
		munmap(two, self->s.page);
	}
	expect_unchanged(_metadata, self);
}

TEST_F(abi, arm_rejects_timeouts_out_of_range)
{
	int fd = self->s.fd;

	EXPECT_ERRNO(ERANGE, sc_arm(fd, 0, 0, TAG));
	if (self->min > 1)
		EXPECT_ERRNO(ERANGE, sc_arm(fd, self->min - 1, 0, TAG));
	EXPECT_ERRNO(ERANGE, sc_arm(fd, HOUR_NS + 1, 0, TAG));
	EXPECT_ERRNO(ERANGE, sc_arm(fd, ~0ULL, 0, TAG));
	EXPECT_ERRNO(ERANGE, sc_arm(fd, sc_now_ns() + HOUR_NS + SC_NSEC_PER_SEC,
				    STALLCAP_ARM_ABSOLUTE, TAG));
	if (sc_now_ns() > HOUR_NS + SC_NSEC_PER_SEC)
		EXPECT_ERRNO(ERANGE, sc_arm(fd, sc_now_ns() - HOUR_NS - SC_NSEC_PER_SEC,
					    STALLCAP_ARM_ABSOLUTE, TAG));
	expect_unchanged(_metadata, self);

	/* the bounds themselves are accepted */
	ASSERT_EQ(0, sc_arm(fd, HOUR_NS, 0, TAG));
	ASSERT_EQ(0, sc_arm(fd, self->min > SC_MS(500) ? self->min : SC_MS(500), 0, TAG));
	ASSERT_EQ(0, sc_release(fd));
}

/* A failing ARM leaves an armed watch as it was: its stall keeps its deadline and tag. */
TEST_F(abi, failed_arm_leaves_the_armed_watch_as_it_was)
{
	const struct stallcap_sample *r;
	struct sc_records rs = {};
	struct sc_session *s = &self->s;
	uint64_t timeout = SC_MS(100), t0, t1;

	ASSERT_EQ(0, sc_configure(s, &(struct sc_opts){}));
	ASSERT_EQ(0, sc_map(s));
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(s->fd, timeout, 0, TAG));
	t1 = sc_now_ns();
	EXPECT_ERRNO(ERANGE, arm_raw(s->fd, sizeof(struct stallcap_arm), 0, 0, 0, 0));
	EXPECT_ERRNO(EINVAL, arm_raw(s->fd, sizeof(struct stallcap_arm), 0, HOUR_NS, 1, 0));
	EXPECT_ERRNO(E2BIG, arm_raw(s->fd, sizeof(struct big_arm), 0, HOUR_NS, 0, 1));
	EXPECT_ERRNO(ERANGE, sc_rearm(s->fd, HOUR_NS + 1));
	if (self->min > 1)
		EXPECT_ERRNO(ERANGE, sc_rearm(s->fd, self->min - 1));
	EXPECT_ERRNO(EINVAL, ioctl(s->fd, STALLCAP_IOC_DISARM, 1UL));
	EXPECT_ERRNO(EINVAL, ioctl(s->fd, STALLCAP_IOC_RELEASE, 1UL));
	EXPECT_EQ(1, SC_STAT(s->fd, armed));
	EXPECT_EQ(1, SC_STAT(s->fd, watches));

	ASSERT_LE(1, sc_ring_collect(s, &rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&rs, sc_gettid());
	ASSERT_NE(NULL, r);
	EXPECT_EQ(TAG, r->user_tag);
	EXPECT_EQ(timeout, r->timeout_ns);
	EXPECT_LE(t0 + timeout, r->deadline_ns);
	EXPECT_GE(t1 + timeout, r->deadline_ns);
	ASSERT_EQ(0, sc_release(s->fd));
	sc_records_free(&rs);
}

/* ------------------------------------------------------------------------
 * REARM, DISARM, RELEASE
 * ------------------------------------------------------------------------
 */

TEST_F(abi, rearm_disarm_release_without_a_watch_are_enoent)
{
	EXPECT_ERRNO(ENOENT, sc_rearm(self->s.fd, SC_MS(500)));
	EXPECT_ERRNO(ENOENT, sc_rearm(self->s.fd, 0));
	EXPECT_ERRNO(ENOENT, sc_disarm(self->s.fd));
	EXPECT_ERRNO(ENOENT, sc_release(self->s.fd));
	expect_unchanged(_metadata, self);
}

TEST_F(abi, disarm_and_release_reject_a_nonzero_argument)
{
	ASSERT_EQ(0, sc_arm(self->s.fd, SC_MS(500), 0, TAG));
	snapshot(_metadata, self->s.fd, &self->before);
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_DISARM, 1UL));
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_DISARM, ~0UL));
	EXPECT_ERRNO(EINVAL, ioctl(self->s.fd, STALLCAP_IOC_RELEASE, 1UL));
	expect_unchanged(_metadata, self);
	EXPECT_EQ(1, self->before.st.armed);
	ASSERT_EQ(0, sc_release(self->s.fd));
}

TEST_F(abi, rearm_rejects_timeouts_out_of_range)
{
	ASSERT_EQ(0, sc_arm(self->s.fd, SC_MS(500), 0, TAG));
	ASSERT_EQ(0, sc_disarm(self->s.fd));
	snapshot(_metadata, self->s.fd, &self->before);
	EXPECT_ERRNO(ERANGE, sc_rearm(self->s.fd, HOUR_NS + 1));
	if (self->min > 1)
		EXPECT_ERRNO(ERANGE, sc_rearm(self->s.fd, self->min - 1));
	expect_unchanged(_metadata, self);
	EXPECT_EQ(0, self->before.st.armed);
	ASSERT_EQ(0, sc_release(self->s.fd));
}

struct intruder {
	int fd;
	int rearm_errno, disarm_errno, release_errno;
	int rearm_ret, disarm_ret, release_ret;
};

static void *intruder_main(void *arg)
{
	struct intruder *in = arg;

	in->rearm_ret = sc_rearm(in->fd, SC_MS(500));
	in->rearm_errno = errno;
	in->disarm_ret = sc_disarm(in->fd);
	in->disarm_errno = errno;
	in->release_ret = sc_release(in->fd);
	in->release_errno = errno;
	return NULL;
}

/*
 * Another thread's REARM/DISARM/RELEASE act on its own (absent) watch:
 * ENOENT, and the owner's watch stays armed with its deadline.
 */
TEST_F(abi, another_thread_cannot_act_on_the_watch)
{
	struct intruder in = { .fd = self->s.fd };
	struct sc_session *s = &self->s;
	const struct stallcap_sample *r;
	struct sc_records rs = {};
	uint64_t timeout = SC_MS(300), t0, t1;
	pthread_t th;

	ASSERT_EQ(0, sc_configure(s, &(struct sc_opts){}));
	ASSERT_EQ(0, sc_map(s));
	t0 = sc_now_ns();
	ASSERT_EQ(0, sc_arm(s->fd, timeout, 0, TAG));
	t1 = sc_now_ns();
	ASSERT_EQ(0, pthread_create(&th, NULL, intruder_main, &in));
	pthread_join(th, NULL);
	EXPECT_EQ(-1, in.rearm_ret);
	EXPECT_EQ(ENOENT, in.rearm_errno);
	EXPECT_EQ(-1, in.disarm_ret);
	EXPECT_EQ(ENOENT, in.disarm_errno);
	EXPECT_EQ(-1, in.release_ret);
	EXPECT_EQ(ENOENT, in.release_errno);
	EXPECT_EQ(1, SC_STAT(s->fd, armed));
	EXPECT_EQ(1, SC_STAT(s->fd, watches));

	/* the owner's stall is reported at its own deadline */
	ASSERT_LE(1, sc_ring_collect(s, &rs, STALLCAP_REC_SAMPLE, 1, SC_WAIT_MS));
	r = sc_first_sample_of(&rs, sc_gettid());
	ASSERT_NE(NULL, r);
	EXPECT_LE(t0 + timeout, r->deadline_ns);
	EXPECT_GE(t1 + timeout, r->deadline_ns);
	ASSERT_EQ(0, sc_release(s->fd));
	sc_records_free(&rs);
}

/* ------------------------------------------------------------------------
 * SET_CONFIG
 * ------------------------------------------------------------------------
 */

struct big_config {
	struct stallcap_config c;
	uint64_t tail[2];
};

static int set_config(int fd, const struct stallcap_config *c)
{
	struct stallcap_config copy = *c;

	copy.size = sizeof(copy);
	return ioctl(fd, STALLCAP_IOC_SET_CONFIG, &copy);
}

TEST_F(abi, set_config_round_trips)
{
	struct stallcap_config c = {
		.ring_bytes = 128 * 1024, .user_stack_bytes = 4096, .slots = 128,
		.max_samples = 3, .sample_cap_ns = SC_MS(50), .rate_limit = 7,
	};
	struct stallcap_config got;

	if (c.sample_cap_ns < self->min)
		c.sample_cap_ns = self->min;
	ASSERT_EQ(0, set_config(self->s.fd, &c));
	ASSERT_EQ(0, sc_get_config(self->s.fd, &got));
	EXPECT_EQ(c.ring_bytes, got.ring_bytes);
	EXPECT_EQ(c.user_stack_bytes, got.user_stack_bytes);
	EXPECT_EQ(c.slots, got.slots);
	EXPECT_EQ(c.max_samples, got.max_samples);
	EXPECT_EQ(c.sample_cap_ns, got.sample_cap_ns);
	EXPECT_EQ(c.rate_limit, got.rate_limit);

	/* replaces the whole configuration: zeroes are defaults again */
	memset(&c, 0, sizeof(c));
	ASSERT_EQ(0, set_config(self->s.fd, &c));
	ASSERT_EQ(0, sc_get_config(self->s.fd, &got));
	EXPECT_EQ(0, memcmp(&self->before.cfg, &got, sizeof(got)));
}

TEST_F(abi, set_config_rejects_bad_sizes_flags_reserved_and_pointers)
{
	struct big_config b;
	int fd = self->s.fd;

	memset(&b, 0, sizeof(b));
	b.c.size = STALLCAP_CONFIG_SIZE_VER0 - 8;
	EXPECT_ERRNO(EINVAL, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &b));
	b.c.size = sizeof(b);
	b.tail[1] = 1;
	b.c.ring_bytes = 256 * 1024;
	EXPECT_ERRNO(E2BIG, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &b));
	b.tail[1] = 0;
	b.c.size = sizeof(b.c);
	b.c.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &b));
	b.c.flags = STALLCAP_CFG_FLAGS_ALL + 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &b));
	b.c.flags = 0;
	for (int k = 0; k < 5; k++) {
		b.c.__reserved[k] = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &b));
		b.c.__reserved[k] = 0;
	}
	EXPECT_ERRNO(EFAULT, ioctl(fd, STALLCAP_IOC_SET_CONFIG, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(fd, STALLCAP_IOC_SET_CONFIG, self->unmapped));
	EXPECT_ERRNO(EFAULT, ioctl(fd, STALLCAP_IOC_SET_CONFIG, KERNEL_PTR));
	expect_unchanged(_metadata, self);

	/* larger than known with a zero tail: accepted */
	b.c.size = sizeof(b);
	ASSERT_EQ(0, ioctl(fd, STALLCAP_IOC_SET_CONFIG, &b));
	ASSERT_EQ(0, sc_get_config(fd, &b.c));
	EXPECT_EQ(256 * 1024, b.c.ring_bytes);
}

TEST_F(abi, set_config_rejects_values_out_of_range)
{
	uint32_t maxr = self->s.info.max_ring_bytes;
	struct stallcap_config c;
	int fd = self->s.fd;

#define BAD(field, value) do {						\
		memset(&c, 0, sizeof(c));				\
		c.field = (value);					\
		errno = 0;						\
		EXPECT_EQ(-1, set_config(fd, &c))			\
			TH_LOG(#field " = %llu accepted",		\
			       (unsigned long long)c.field);		\
		EXPECT_EQ(ERANGE, errno)				\
			TH_LOG(#field " = %llu: %s",			\
			       (unsigned long long)c.field, strerror(errno)); \
	} while (0)

	BAD(ring_bytes, 3 * 64 * 1024);			/* not a power of two */
	BAD(ring_bytes, 1024 * 1024 + 4096);
	BAD(ring_bytes, sc_min_ring_bytes(16384) / 2);	/* below 4 max records */
	BAD(ring_bytes, 4096);
	if (maxr < 0x80000000U)				/* above the maximum */
		BAD(ring_bytes, (uint32_t)sc_pow2_roundup((uint64_t)maxr + 1));
	BAD(user_stack_bytes, STALLCAP_MAX_USER_STACK + 8);
	BAD(user_stack_bytes, 100);				/* not a multiple of 8 */
	BAD(user_stack_bytes, 12);
	BAD(slots, 65);
	BAD(slots, 4096 + 64);
	BAD(max_samples, 65);
	BAD(max_samples, 1000);
	if (self->min > 1)
		BAD(sample_cap_ns, self->min - 1);
#undef BAD

	/* the ring too small for the user stack asked for */
	memset(&c, 0, sizeof(c));
	c.user_stack_bytes = STALLCAP_MAX_USER_STACK;
	c.ring_bytes = sc_min_ring_bytes(STALLCAP_MAX_USER_STACK) / 2;
	EXPECT_ERRNO(ERANGE, set_config(fd, &c));
	expect_unchanged(_metadata, self);

	/* the bounds themselves are accepted */
	c.ring_bytes = sc_min_ring_bytes(STALLCAP_MAX_USER_STACK);
	if (c.ring_bytes <= maxr)
		EXPECT_EQ(0, set_config(fd, &c));
	memset(&c, 0, sizeof(c));
	c.max_samples = 64;
	c.slots = 4096;
	c.user_stack_bytes = 8;
	c.ring_bytes = sc_min_ring_bytes(8);
	EXPECT_EQ(0, set_config(fd, &c));
	c.max_samples = 1;
	EXPECT_EQ(0, set_config(fd, &c));
}

static int drop_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[cap / 32].effective &= ~(1U << (cap % 32));
	d[cap / 32].permitted &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &h, d);
}

/*
 * STALLCAP_CFG_GLOBAL (and STATS_GLOBAL) need CAP_SYS_ADMIN in the
 * credentials that opened the file: a process that dropped it opens a
 * session that is refused; a file root opened keeps the right in a process
 * that dropped it since (what the opener may do, as for kernel addresses).
 */
TEST_F(abi, global_config_needs_cap_sys_admin)
{
	struct stallcap_config c = { .flags = STALLCAP_CFG_GLOBAL };
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct stallcap_stats st;
		struct sc_session s;

		/* STATS_GLOBAL also takes CAP_PERFMON */
		if (drop_cap(CAP_SYS_ADMIN) || drop_cap(CAP_PERFMON))
			_exit(2);
		if (sc_open(&s))
			_exit(3);
		if (set_config(s.fd, &c) != -1 || errno != EPERM)
			_exit(1);
		if (sc_get_stats(s.fd, &st, STALLCAP_STATS_GLOBAL) != -1 || errno != EPERM)
			_exit(4);
		/* opened by root before the drop: allowed */
		_exit(sc_get_stats(self->s.fd, &st, STALLCAP_STATS_GLOBAL) ? 5 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("1: SET_CONFIG not EPERM, 2: cannot drop the capability, 3: open, "
		       "4: STATS_GLOBAL not EPERM, 5: root's file refused");
	expect_unchanged(_metadata, self);
}

TEST_F(abi, ring_layout_is_frozen_once_mapped)
{
	struct stallcap_config c = { .ring_bytes = 64 * 1024, .user_stack_bytes = 1024 };
	struct sc_opts o = { .ring_bytes = 64 * 1024, .user_stack_bytes = 1024 };

	ASSERT_EQ(0, sc_configure(&self->s, &o));
	ASSERT_EQ(0, sc_map(&self->s));
	snapshot(_metadata, self->s.fd, &self->before);
	c.ring_bytes = 128 * 1024;
	EXPECT_ERRNO(EBUSY, set_config(self->s.fd, &c));
	c.ring_bytes = 64 * 1024;
	c.user_stack_bytes = 2048;
	EXPECT_ERRNO(EBUSY, set_config(self->s.fd, &c));
	c.user_stack_bytes = 1024;
	c.slots = 128;
	EXPECT_ERRNO(EBUSY, set_config(self->s.fd, &c));
	memset(&c, 0, sizeof(c));			/* zeroes: the default ring */
	EXPECT_ERRNO(EBUSY, set_config(self->s.fd, &c));
	expect_unchanged(_metadata, self);

	/* the rest may still change */
	c = (struct stallcap_config){ .ring_bytes = 64 * 1024, .user_stack_bytes = 1024,
				      .max_samples = 2 };
	EXPECT_EQ(0, set_config(self->s.fd, &c));
	ASSERT_EQ(0, sc_get_config(self->s.fd, &c));
	EXPECT_EQ(2, c.max_samples);
}

TEST_F(abi, ring_layout_is_frozen_once_a_watch_was_armed)
{
	struct stallcap_config c = { .ring_bytes = 512 * 1024 };

	ASSERT_EQ(0, sc_arm(self->s.fd, SC_MS(500), 0, TAG));
	ASSERT_EQ(0, sc_release(self->s.fd));
	snapshot(_metadata, self->s.fd, &self->before);
	EXPECT_ERRNO(EBUSY, set_config(self->s.fd, &c));
	expect_unchanged(_metadata, self);
}

/* ------------------------------------------------------------------------
 * The per-user watch limit
 * ------------------------------------------------------------------------
 */

#define MAXW_PARAM	"/sys/module/stallcap/parameters/max_watches_per_user"
#define MAXW		3

static int param_rw(const char *path, int *get, int set)
{
	FILE *f = fopen(path, get ? "r" : "w");
	int ret;

	if (!f)
		return -1;
	ret = get ? (fscanf(f, "%d", get) == 1 ? 0 : -1) : (fprintf(f, "%d\n", set) > 0 ? 0 : -1);
	return fclose(f) ? -1 : ret;
}

/*
 * An ATTACH of a process of one thread, the user's watches at the limit:
 * ENOSPC, and no ring made (before, it was: SET_CONFIG then got EBUSY).
 * Return: 0 as expected, else -1.
 */
static int attach_over_the_limit(void)
{
	struct stallcap_attach a = { .size = sizeof(a), .timeout_ns = SC_MS(500) };
	struct sc_session t;
	pid_t target;
	int ret = -1;

	target = fork();
	if (target == 0) {
		pause();
		_exit(0);
	}
	if (target < 0 || sc_open(&t))
		goto out;
	a.pid = (__u32)target;
	errno = 0;
	if (ioctl(t.fd, STALLCAP_IOC_ATTACH, &a) == -1 && errno == ENOSPC &&
	    !sc_configure(&t, &(struct sc_opts){ .ring_bytes = 2U << 20 }))
		ret = 0;
	sc_session_close(&t);
out:
	if (target > 0) {
		kill(target, SIGKILL);
		waitpid(target, NULL, 0);
	}
	return ret;
}

/* In a child without CAP_SYS_RESOURCE: returns a bit mask of failures. */
static int watch_limit_child(void)
{
	struct sc_session s[MAXW + 1];
	struct stallcap_stats st;
	int bad = 0;

	if (drop_cap(CAP_SYS_RESOURCE))
		return 100;
	for (int i = 0; i <= MAXW; i++)
		if (sc_open(&s[i]))
			return 101;
	if (s[MAXW].info.max_watches_per_user != MAXW)
		bad |= 1;
	for (int i = 0; i < MAXW; i++)
		if (sc_arm(s[i].fd, SC_MS(500), 0, TAG))
			bad |= 2;
	errno = 0;
	if (sc_arm(s[MAXW].fd, SC_MS(500), 0, TAG) != -1 || errno != ENOSPC)
		bad |= 4;
	if (sc_get_stats(s[MAXW].fd, &st, 0) || st.watches || st.armed)
		bad |= 8;
	/* nor its ring (the session's first ARM): its size can still be set */
	if (sc_configure(&s[MAXW], &(struct sc_opts){ .ring_bytes = 2U << 20 }))
		bad |= 64;
	if (attach_over_the_limit())
		bad |= 128;
	if (sc_release(s[0].fd))
		bad |= 16;
	if (sc_arm(s[MAXW].fd, SC_MS(500), 0, TAG))
		bad |= 32;
	for (int i = 0; i <= MAXW; i++)
		sc_session_close(&s[i]);
	return bad;
}

TEST_F(abi, watches_beyond_the_per_user_limit_are_enospc)
{
	int saved, status;
	pid_t pid;

	if (param_rw(MAXW_PARAM, &saved, 0) || param_rw(MAXW_PARAM, NULL, MAXW))
		SKIP(return, "cannot set %s", MAXW_PARAM);
	pid = fork();
	if (pid == 0)
		_exit(watch_limit_child());
	if (pid > 0)
		waitpid(pid, &status, 0);
	ASSERT_EQ(0, param_rw(MAXW_PARAM, NULL, saved));
	ASSERT_LT(0, pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("1: info not the parameter, 2: ARM under the limit failed, "
		       "4: ARM over the limit not ENOSPC, 8: failed ARM left a watch, "
		       "16: RELEASE failed, 32: ARM after a RELEASE failed, "
		       "64: the ring's size could not be set after the refused ARM, "
		       "128: ATTACH over the limit not ENOSPC, or its ring made, "
		       "100/101: setup");
}

/*
 * The default ring size goes through the same checks as SET_CONFIG: with
 * max_ring_kb below the 1 MiB default, a session that kept its defaults
 * cannot create its ring (ERANGE), and one sized within the limit can.
 */
TEST_F(abi, default_ring_over_max_ring_kb_is_erange)
{
	const char *param = "/sys/module/stallcap/parameters/max_ring_kb";
	struct stallcap_config c = { .size = sizeof(c), .ring_bytes = 256 * 1024 };
	struct sc_session s;
	int saved;

	if (param_rw(param, &saved, 0) || param_rw(param, NULL, 512))
		SKIP(return, "cannot set %s", param);
	ASSERT_EQ(0, sc_open(&s));
	EXPECT_EQ(-1, sc_arm(s.fd, SC_MS(10000), 0, 1));
	EXPECT_EQ(ERANGE, errno);
	EXPECT_EQ(0, SC_STAT(s.fd, watches)) TH_LOG("the failed ARM left a watch");
	EXPECT_EQ(0, ioctl(s.fd, STALLCAP_IOC_SET_CONFIG, &c));
	EXPECT_EQ(0, sc_arm(s.fd, SC_MS(10000), 0, 1));
	EXPECT_EQ(0, sc_release(s.fd));
	sc_session_close(&s);
	ASSERT_EQ(0, param_rw(param, NULL, saved));
}

/* ------------------------------------------------------------------------
 * mmap
 * ------------------------------------------------------------------------
 */

TEST_F(abi, mmap_rejects_bad_offsets_lengths_and_private_maps)
{
	struct sc_opts o = { .ring_bytes = 256 * 1024 };
	size_t len;
	void *p;

	ASSERT_EQ(0, sc_configure(&self->s, &o));
	snapshot(_metadata, self->s.fd, &self->before);
	len = self->s.page + o.ring_bytes;

#define BAD_MMAP(err, length, prot, flags, off) do {				\
		errno = 0;							\
		p = mmap(NULL, (length), (prot), (flags), self->s.fd, (off));	\
		EXPECT_EQ(MAP_FAILED, p) TH_LOG("mmap(%#zx, off %#llx) worked",	\
						(size_t)(length), (unsigned long long)(off)); \
		EXPECT_EQ(err, errno);						\
		if (p != MAP_FAILED)						\
			munmap(p, (length));					\
	} while (0)

	BAD_MMAP(EINVAL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->s.page);
	BAD_MMAP(EINVAL, self->s.page, PROT_READ | PROT_WRITE, MAP_SHARED, 16 * self->s.page);
	BAD_MMAP(EINVAL, len, PROT_READ | PROT_WRITE, MAP_SHARED, STALLCAP_MMAP_SLOTS + self->s.page);
	BAD_MMAP(EINVAL, len + self->s.page, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	BAD_MMAP(EINVAL, 2 * len, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	BAD_MMAP(EINVAL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0);
	BAD_MMAP(EINVAL, self->s.page, PROT_READ, MAP_PRIVATE, 0);
	BAD_MMAP(EINVAL, len, PROT_READ | PROT_EXEC, MAP_SHARED, 0);
#undef BAD_MMAP
	expect_unchanged(_metadata, self);

	/* the control page alone is fine */
	p = mmap(NULL, self->s.page, PROT_READ | PROT_WRITE, MAP_SHARED, self->s.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(STALLCAP_ABI_VERSION, ((struct stallcap_ring_ctl *)p)->abi_version);
	EXPECT_EQ(256 * 1024, ((struct stallcap_ring_ctl *)p)->data_size);
	munmap(p, self->s.page);
}

/* Only a successful mmap freezes the ring's layout: a failed one changes nothing. */
TEST_F(abi, failed_mmap_leaves_the_ring_resizable)
{
	static const struct { size_t pages_more; unsigned long long off; int flags; } bad[] = {
		{ 0, 1, MAP_SHARED },			/* offset one page */
		{ 0, STALLCAP_MMAP_SLOTS / 4096 + 1, MAP_SHARED },
		{ 1, 0, MAP_SHARED },			/* one page too long */
		{ 0, 0, MAP_PRIVATE },
	};
	uint32_t ring = 256 * 1024;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct sc_opts o = { .ring_bytes = ring };
		size_t len = self->s.page + ring + bad[i].pages_more * self->s.page;
		void *p;

		ASSERT_EQ(0, sc_configure(&self->s, &o));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, bad[i].flags, self->s.fd,
			 bad[i].off * self->s.page);
		ASSERT_EQ(MAP_FAILED, p);
		/* another size is still accepted */
		ring *= 2;
		o.ring_bytes = ring;
		EXPECT_EQ(0, sc_configure(&self->s, &o))
			TH_LOG("mmap #%zu (offset %llu pages, %zu pages long, %s) froze the ring",
			       i, bad[i].off, len / self->s.page,
			       bad[i].flags == MAP_SHARED ? "shared" : "private");
	}
}

TEST_HARNESS_MAIN
