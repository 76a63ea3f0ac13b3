// SPDX-License-Identifier: GPL-2.0
/*
 * The installable header compiles as C++ (-std=c++11 -pedantic -Werror),
 * links against libstallcap.a, and its inline slot marks (heartbeat, shared
 * deadline) do what the uapi contract says: plain stores to the thread's own
 * slot.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <stallcap/stallcap.h>

static_assert(sizeof(struct stallcap_slot) == 64, "slot is one cache line");
static_assert(sizeof(struct stallcap_sample) == 128, "sample fixed part");

static int failures;

#define CHECK(cond) do { if (!(cond)) { \
	std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

int main()
{
	struct stallcap_slot slot;
	struct stallcap_session *s = nullptr;
	struct timespec t0, t1;
	__u64 lo, hi;
	int ret;

	std::memset(&slot, 0, sizeof(slot));
	stallcap_beat(&slot);
	stallcap_beat(&slot);
	CHECK(slot.beats == 2);
	stallcap_beat_idle(&slot);
	CHECK(slot.idle == 1);
	stallcap_beat_busy(&slot);
	CHECK(slot.idle == 0 && slot.beats == 3);

	/* shared deadline: absolute, relative to CLOCK_MONOTONIC, idle = 0 */
	stallcap_deadline_set(&slot, 123456789ULL);
	CHECK(slot.deadline_ns == 123456789ULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	stallcap_deadline_in(&slot, 5000000ULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	lo = (__u64)t0.tv_sec * 1000000000ULL + (__u64)t0.tv_nsec + 5000000ULL;
	hi = (__u64)t1.tv_sec * 1000000000ULL + (__u64)t1.tv_nsec + 5000000ULL;
	CHECK(slot.deadline_ns >= lo && slot.deadline_ns <= hi);
	CHECK(slot.beats == 3 && slot.idle == 0);	/* nothing else written */
	stallcap_deadline_idle(&slot);
	CHECK(slot.deadline_ns == 0);
	CHECK(stallcap_deadline_arm(nullptr, 1000000, 0, 0, nullptr) == -EINVAL);
	CHECK(stallcap_watch_arm(nullptr, 1000000, 0, STALLCAP_ARM_SHARED_DEADLINE) == -EINVAL);

	/* no device here: a negative errno, nothing else */
	ret = stallcap_session_open(&s, nullptr, 0);
	if (ret == 0)
		stallcap_session_close(s);
	else
		CHECK(ret == -ENOENT || ret == -EACCES || ret == -ENXIO || ret == -ENODEV);
	CHECK(stallcap_session_open(&s, nullptr, 0x80) == -EINVAL);
	CHECK(stallcap_watch_arm(nullptr, 1000000, 0, 0) == -EINVAL);
	CHECK(stallcap_ring_consume(nullptr, nullptr, nullptr) == -ENXIO);
	std::printf("%s header_cxx\n", failures ? "not ok 1" : "ok 1");
	return failures ? 1 : 0;
}
