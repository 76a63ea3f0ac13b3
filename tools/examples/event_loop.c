// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * An event loop watched by stallcap, the three ways libstallcap offers to an
 * event loop that links it:
 *
 *  - heartbeat (default): the loop marks progress in its slot once per
 *    iteration and marks itself idle around epoll_wait(): no system call on
 *    the hot path; the module reports the loop when a handler runs longer
 *    than the threshold (detected between 1 and 1.25 thresholds late);
 *  - deadline (-d): the loop re-arms its deadline before each handler and
 *    disarms before waiting (one ioctl each): exact detection;
 *  - shared deadline (-S): the loop stores its next absolute deadline in its
 *    slot before each handler and 0 before waiting: no system call on the
 *    hot path (the clock is read through the vDSO) and exact detection;
 *    with -T (x86) the deadline is a time-stamp counter value: one RDTSC and
 *    one store (where the module offers it, STALLCAP_FEAT_DEADLINE_TSC).
 *
 * (A fourth way needs no change to the program at all: a reader's
 * STALLCAP_IOC_ATTACH, where the module offers it (STALLCAP_FEAT_ATTACH),
 * watches its epoll_wait() boundaries; see the README.)
 *
 * Every fifth tick one handler is slow (--slow-ms), which stallcap catches.
 * Alone, the example reads its own ring and writes what it caught into its
 * output with one call, stallcap_report() ("stallcap: stall 3 of tid ...",
 * user frames named by dladdr(): build it with -rdynamic to see its own
 * names); under `stallcap record -- event_loop` the tool reads it instead.
 * Without the module it runs all the same: STALLCAP_OPEN_NOOP makes every
 * libstallcap call succeed and do nothing, so no call site needs an "if".
 *
 *   cc -o event_loop event_loop.c $(pkg-config --cflags --libs stallcap)
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <stallcap/stallcap.h>

static volatile unsigned long work;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* not static: with -rdynamic, dladdr() names it in the in-process report */
__attribute__((noinline)) void handle_tick(unsigned long n, unsigned long slow_ms)
{
	unsigned long long until = now_ns() + (n % 5 == 4 ? slow_ms : 1) * 1000000ULL;

	while (now_ns() < until)
		work++;
}

/* A shared deadline's idle mark, in the unit the watch was armed with. */
static void mark_idle(struct stallcap_slot *slot, bool tsc)
{
#if defined(__x86_64__) || defined(__i386__)
	if (tsc) {
		stallcap_deadline_tsc_idle(slot);
		return;
	}
#endif
	stallcap_deadline_idle(slot);
}

static void deadline_tsc_in(struct stallcap_slot *slot, __u64 ticks)
{
#if defined(__x86_64__) || defined(__i386__)
	stallcap_deadline_tsc_in(slot, ticks);
#endif
}

int main(int argc, char **argv)
{
	struct itimerspec its = { .it_interval = { 0, 10000000 }, .it_value = { 0, 10000000 } };
	unsigned long threshold_ms = 20, slow_ms = 60, ticks = 20, n = 0;
	struct epoll_event ev = { .events = EPOLLIN };
	struct stallcap_slot *beat = NULL, *shared = NULL;
	struct stallcap_session *s;
	bool deadline = false, use_shared = false, own_ring = !getenv(STALLCAP_FD_ENV);
	bool use_tsc = false;
	__u64 threshold_ns, threshold_ticks = 0;
	int opt, ep, tfd, ret;
	__u64 expirations;

	while ((opt = getopt(argc, argv, "dSTt:s:n:")) != -1) {
		switch (opt) {
		case 'd': deadline = true; break;
		case 'S': use_shared = true; break;
#if defined(__x86_64__) || defined(__i386__)
		case 'T': use_shared = use_tsc = true; break;
#endif
		case 't': threshold_ms = strtoul(optarg, NULL, 0); break;
		case 's': slow_ms = strtoul(optarg, NULL, 0); break;
		case 'n': ticks = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: event_loop [-d | -S | -T] [-t THRESHOLD_MS] [-s SLOW_MS] [-n TICKS]\n");
			return 2;
		}
	}
	ret = stallcap_session_open(&s, NULL, STALLCAP_OPEN_ENV | STALLCAP_OPEN_NOOP);
	if (ret) {
		fprintf(stderr, "event_loop: %s\n", strerror(-ret));
		return 1;
	}
	if (stallcap_session_is_noop(s))
		fprintf(stderr, "event_loop: no stallcap module: running unwatched\n");
	if (own_ring && (ret = stallcap_ring_map(s)))
		fprintf(stderr, "event_loop: ring: %s\n", strerror(-ret));
	threshold_ns = threshold_ms * 1000000ULL;
	if (deadline)
		ret = stallcap_watch_arm(s, threshold_ns, 1, 0);
	else if (use_tsc && !stallcap_session_is_noop(s) &&
		 !(threshold_ticks = stallcap_tsc_ticks(s, threshold_ns)))
		ret = -EOPNOTSUPP;	/* the module takes no deadline in ticks */
	else if (use_shared)
		ret = stallcap_deadline_arm(s, threshold_ns, 1,
					    use_tsc ? STALLCAP_ARM_DEADLINE_TSC : 0, &shared);
	else
		ret = stallcap_heartbeat_attach(s, threshold_ns, 1, &beat);
	if (ret < 0) {
		fprintf(stderr, "event_loop: watch: %s\n", strerror(-ret));
		return 1;
	}
	if (deadline)
		stallcap_watch_disarm(s);
	if (shared)
		mark_idle(shared, use_tsc);

	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	timerfd_settime(tfd, 0, &its, NULL);
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	while (n < ticks) {
		unsigned long long busy_from;	/* then: how long */

		if (beat)
			stallcap_beat_idle(beat);	/* waiting by design */
		if (epoll_wait(ep, &ev, 1, -1) < 1)
			continue;
		busy_from = now_ns();
		if (beat)
			stallcap_beat_busy(beat);
		else if (shared && use_tsc)
			deadline_tsc_in(shared, threshold_ticks);	/* one store */
		else if (shared)
			stallcap_deadline_in(shared, threshold_ns);	/* one store */
		else
			stallcap_watch_rearm(s, 0);	/* the last ARM's timeout */
		if (read(tfd, &expirations, sizeof(expirations)) == sizeof(expirations))
			handle_tick(n++, slow_ms);
		if (beat)
			stallcap_beat(beat);		/* one iteration done */
		else if (shared)
			mark_idle(shared, use_tsc);	/* waiting by design: one store */
		else
			stallcap_watch_disarm(s);
		/* the ground truth a test compares stallcap's findings with */
		busy_from = now_ns() - busy_from;
		if (busy_from >= threshold_ns / 2)
			printf("event_loop: iteration %lu busy %llu us\n", n,
			       busy_from / 1000);
		if (own_ring && stallcap_session_ring(s))
			stallcap_report(s, stdout);	/* its stalls, into its own log */
	}
	stallcap_watch_release(s);
	if (own_ring && stallcap_session_ring(s)) {
		usleep(50000);
		stallcap_report(s, stdout);
	}
	close(tfd);
	close(ep);
	stallcap_session_close(s);
	return 0;
}
