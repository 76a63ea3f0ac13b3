// SPDX-License-Identifier: GPL-2.0
/*
 * A C++ program for the symbol tests (cxx_symbols_test.c), built -O2 -g:
 * namespaces, a class template, an operator, a function template, and a
 * forced-inline function in the path to the innermost frame:
 *
 *   main -> app::Server::poll -> app::Ring<long>::operator()
 *        -> app::detail::check_budget (inlined) -> app::detail::spin<app::Tag>
 *
 * Each frame saves its return address, as a frame-pointer walk finds it;
 * main prints them with the source lines the test expects, then waits to be
 * killed (its maps are read meanwhile):
 *   spin=ADDR ret0=ADDR ret1=ADDR ret2=ADDR inline_line=N call_line=N
 */
#include <cstdio>
#include <unistd.h>

#define NOIPA __attribute__((noipa, used))

volatile unsigned long fixture_sink;
static int inline_line, call_line;

namespace app {

struct Tag {
	int id;
};

namespace detail {

template <typename T>
NOIPA void spin(const T &t, void **ret)
{
	*ret = __builtin_return_address(0);
	fixture_sink += (unsigned long)t.id;
}

__attribute__((always_inline)) inline void check_budget(const Tag &t, void **ret)
{
	inline_line = __LINE__ + 1;
	spin(t, ret);
	fixture_sink++;
}

} // namespace detail

template <typename T>
struct Ring {
	NOIPA bool operator()(int n, void **ret);
};

template <typename T>
bool Ring<T>::operator()(int n, void **ret)
{
	Tag t{n};

	call_line = __LINE__ + 1;
	detail::check_budget(t, &ret[0]);
	ret[1] = __builtin_return_address(0);
	fixture_sink++;
	return true;
}

class Server {
public:
	NOIPA void poll(void **ret);

private:
	Ring<long> ring_;
};

void Server::poll(void **ret)
{
	ring_(3, ret);
	ret[2] = __builtin_return_address(0);
	fixture_sink++;
}

} // namespace app

int main()
{
	void *ret[3];
	app::Server s;

	s.poll(ret);
	std::printf("spin=%p ret0=%p ret1=%p ret2=%p inline_line=%d call_line=%d\n",
		    (void *)&app::detail::spin<app::Tag>, ret[0], ret[1], ret[2],
		    inline_line, call_line);
	std::fflush(stdout);
	for (;;)
		pause();
}
