// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap-demo: threads that miss their deadline in the three ways a thread
 * stalls, one after the other, each under a deadline armed with libstallcap:
 *
 *   spin-user   burns CPU in demo_spin_in_user()          (running in user)
 *   in-kernel   populates huge mappings in demo_stall_in_kernel()
 *                                                          (running in kernel)
 *   lock-wait   waits in demo_block_on_lock() for a mutex another thread
 *               holds                                      (blocked in futex)
 *
 * Each deadline is armed with one ioctl (STALLCAP_IOC_ARM), or with
 * --shared as a shared deadline: the thread stores its absolute deadline in
 * its slot, no system call (stallcap_deadline_arm() once, then
 * stallcap_deadline_in() / stallcap_deadline_idle()).
 *
 * Run it under the tool to see the symbolized stacks:
 *   stallcap record -o demo.data -- stallcap-demo && stallcap report demo.data
 * Alone, it opens its own session and prints what it captured, unsymbolized.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <stallcap/stallcap.h>

#define NOINLINE __attribute__((noinline))

static struct stallcap_session *session;
static bool use_shared;
static unsigned long long deadline_ms = 20, stall_ms = 200, map_mb = 16;
static volatile unsigned long demo_sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

NOINLINE void demo_spin_in_user(unsigned long long ms)
{
	unsigned long long until = now_ns() + ms * 1000000ULL;
	unsigned long i;

	do {
		for (i = 0; i < (1UL << 16); i++)
			demo_sink += i * i;
	} while (now_ns() < until);
}

NOINLINE void demo_stall_in_kernel(unsigned long long ms)
{
	unsigned long long until = now_ns() + ms * 1000000ULL;
	size_t len = map_mb << 20;
	void *p;

	do {
		/* MAP_POPULATE faults every page in before mmap returns */
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED) {
			perror("stallcap-demo: mmap");
			return;
		}
		munmap(p, len);
	} while (now_ns() < until);
}

NOINLINE void demo_block_on_lock(pthread_mutex_t *lock)
{
	pthread_mutex_lock(lock);
	demo_sink++;
	pthread_mutex_unlock(lock);
}

struct lock_demo {
	pthread_mutex_t lock;
	pthread_mutex_t ready_lock;
	pthread_cond_t ready;
	int held;
};

static void *lock_holder(void *arg)
{
	struct lock_demo *ld = arg;
	struct timespec ts = { .tv_sec = (time_t)(stall_ms / 1000),
			       .tv_nsec = (long)(stall_ms % 1000) * 1000000L };

	pthread_setname_np(pthread_self(), "lock-holder");
	pthread_mutex_lock(&ld->lock);
	pthread_mutex_lock(&ld->ready_lock);
	ld->held = 1;
	pthread_cond_signal(&ld->ready);
	pthread_mutex_unlock(&ld->ready_lock);
	nanosleep(&ts, NULL);	/* holds the lock: the waiter's stall */
	pthread_mutex_unlock(&ld->lock);
	return NULL;
}

enum stall_kind { SPIN, KERNEL, LOCK };

static const char *const kind_name[] = { "spin-user", "in-kernel", "lock-wait" };
static const char *const kind_what[] = {
	"spins in demo_spin_in_user()",
	"populates memory in demo_stall_in_kernel()",
	"waits in demo_block_on_lock() for a mutex held by lock-holder",
};

static void *stall_thread(void *arg)
{
	enum stall_kind kind = (enum stall_kind)(long)arg;
	struct lock_demo ld = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_COND_INITIALIZER, 0 };
	struct stallcap_slot *slot = NULL;
	pthread_t holder;
	int ret;

	pthread_setname_np(pthread_self(), kind_name[kind]);
	if (kind == LOCK) {
		pthread_create(&holder, NULL, lock_holder, &ld);
		pthread_mutex_lock(&ld.ready_lock);
		while (!ld.held)
			pthread_cond_wait(&ld.ready, &ld.ready_lock);
		pthread_mutex_unlock(&ld.ready_lock);
	}
	printf("stallcap-demo: %-9s %s for %llu ms, past a %llu ms deadline\n",
	       kind_name[kind], kind_what[kind], stall_ms, deadline_ms);
	fflush(stdout);
	if (use_shared) {
		ret = stallcap_deadline_arm(session, deadline_ms * 1000000ULL,
					    (__u64)kind + 1, 0, &slot);
		ret = ret < 0 ? ret : 0;
	} else {
		ret = stallcap_watch_arm(session, deadline_ms * 1000000ULL, (__u64)kind + 1, 0);
	}
	if (ret)
		fprintf(stderr, "stallcap-demo: arm: %s\n", strerror(-ret));
	else if (slot)
		stallcap_deadline_in(slot, deadline_ms * 1000000ULL);	/* one store */
	if (kind == SPIN)
		demo_spin_in_user(stall_ms);
	else if (kind == KERNEL)
		demo_stall_in_kernel(stall_ms);
	else
		demo_block_on_lock(&ld.lock);
	if (slot)
		stallcap_deadline_idle(slot);	/* the stall ends here: one store */
	else
		stallcap_watch_disarm(session);	/* the stall ends here */
	stallcap_watch_release(session);
	if (kind == LOCK)
		pthread_join(holder, NULL);
	return (void *)(long)ret;
}

static int print_record(const struct stallcap_rec_header *ring_rec, void *arg)
{
	struct stallcap_sample_view v;
	__u32 size = ring_rec->size;
	__u64 *rec;

	if (ring_rec->type != STALLCAP_REC_SAMPLE)
		return 0;
	/* the ring is writable by anyone who maps it: check a private copy */
	rec = malloc(size);
	if (!rec)
		return -ENOMEM;
	memcpy(rec, ring_rec, size);
	if (!stallcap_sample_parse(rec, size, &v))
		printf("  stall %llu sample %u: tid %u (%.16s), %u kernel + %u user frames, "
		       "ip 0x%llx\n", (unsigned long long)v.s.stall_id, v.s.sample_index,
		       v.s.ns_tid, v.s.comm, v.nr_kernel, v.nr_user,
		       (unsigned long long)(v.nr_user ? v.user_ips[0] : 0));
	free(rec);
	return 0;
}

static const char usage[] =
"usage: stallcap-demo [--deadline-ms N] [--stall-ms N] [--map-mb N] [--only KIND]\n"
"                     [--shared]\n"
"  KIND: spin-user, in-kernel or lock-wait (default: all three in turn)\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "deadline-ms", required_argument, NULL, 'd' },
		{ "stall-ms", required_argument, NULL, 's' },
		{ "map-mb", required_argument, NULL, 'm' },
		{ "only", required_argument, NULL, 'o' },
		{ "shared", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool standalone = !getenv(STALLCAP_FD_ENV);
	int opt, only = -1, k, ret, fails = 0;
	pthread_t t;
	void *res;

	while ((opt = getopt_long(argc, argv, "d:s:m:o:Sh", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			deadline_ms = strtoull(optarg, NULL, 0);
			break;
		case 's':
			stall_ms = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			map_mb = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			for (k = 0; k < 3; k++)
				if (!strcmp(optarg, kind_name[k]))
					only = k;
			if (only < 0)
				goto bad;
			break;
		case 'S':
			use_shared = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			goto bad;
		}
	}
	ret = stallcap_session_open(&session, NULL, STALLCAP_OPEN_ENV);
	if (ret) {
		fprintf(stderr, "stallcap-demo: %s: %s (is the module loaded?)\n",
			STALLCAP_DEVICE, strerror(-ret));
		return 1;
	}
	if (standalone && (ret = stallcap_ring_map(session)))
		fprintf(stderr, "stallcap-demo: ring: %s\n", strerror(-ret));
	for (k = 0; k < 3; k++) {
		if (only >= 0 && k != only)
			continue;
		pthread_create(&t, NULL, stall_thread, (void *)(long)k);
		pthread_join(t, &res);
		fails += res != NULL;
	}
	if (standalone && stallcap_session_ring(session)) {
		usleep(100000);	/* let the last stall's records land */
		printf("stallcap-demo: captured (run under 'stallcap record' for symbols):\n");
		stallcap_ring_consume(session, print_record, NULL);
	}
	stallcap_session_close(session);
	return fails ? 1 : 0;
bad:
	fputs(usage, stderr);
	return 2;
}
