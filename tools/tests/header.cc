// SPDX-License-Identifier: GPL-2.0
/*
 * The installable header compiles as C++ (-std=c++11 -pedantic -Werror),
 * links against libstallcap.a, and its inline beat marks do what the uapi
 * contract says: plain stores to the thread's own slot.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <stallcap/stallcap.h>

static_assert(sizeof(struct stallcap_beat_slot) == 64, "beat slot is one cache line");
static_assert(sizeof(struct stallcap_sample) == 264, "sample layout");

static int failures;

#define CHECK(cond) do { if (!(cond)) { \
	std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

int main()
{
	struct stallcap_beat_slot slot;
	struct stallcap_session *s = nullptr;
	int ret;

	std::memset(&slot, 0, sizeof(slot));
	stallcap_beat(&slot);
	stallcap_beat(&slot);
	CHECK(slot.beats == 2);
	stallcap_beat_idle(&slot);
	CHECK(slot.idle == 1);
	stallcap_beat_busy(&slot);
	CHECK(slot.idle == 0 && slot.beats == 3);

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
