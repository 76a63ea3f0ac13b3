#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A Go HTTP server (selftests/go_server, built static by Debian's go): the
# Go runtime runs goroutines on a few threads, parks the idle ones on a
# futex (runtime.notesleep) while one of them waits in epoll_pwait, and its
# sysmon thread sleeps in nanosleep.  A handler spins 400 ms in
# main.spinFor.
#
# Without --park (started under `stallcap record --deadline 100ms -- ...`),
# a thread that left epoll_pwait and then parked is busy: the idle server
# is reported stalled in the futex (what --park is for, shown here so that
# the second part can fail), and record says that the program is a Go
# program that needs --park.  With --park, attached by -p to the running
# server: the spin is the stall, running in main.spinFor, and no thread is
# reported while parked or sleeping.
. ./tool_lib.sh
PATH=$PWD:$PATH
need stallcap nc attach_go_server

port=8099
deadline=${STALLCAP_GO_DEADLINE:-100ms}
# one request; a connection never answered ends after 20 s (CI once saw a
# readiness probe hang for the test's 300 s while the server kept answering
# other connections: 5.10, beside the debug lane; not reproduced in 16 runs)
get() { printf 'GET %s HTTP/1.0\r\n\r\n' "$1" | timeout 20 nc 127.0.0.1 "$port"; }
up() { get / 2>/dev/null | grep -q '^ok'; }
# traffic, an idle second and a half, the spin, a second
exercise() {
	for i in 1 2 3 4 5 6; do get / >/dev/null; done
	sleep 1.5
	get '/spin?ms=400' >"$work/spin.out"
	sleep 1
}
# a sample in the Go runtime's futex wait (runtime.futex called by
# runtime.futexsleep) or sleep, inside the call (its kernel stack in the
# futex wait or the sleep): a parked thread.  A wake (runtime.futex called
# by runtime.futexwakeup) is busy time: on the debug kernel one took 146 ms
# of CPU in the kernel, a stall rightly reported (CI23).  So is a thread
# preempted on its way back to user space after its wait returned (CI32's
# debug guest: 110 ms in syscall_exit_to_user_mode, its user stack still
# that of the call).
parked() {
	usyms "$1" | head -n 2 | awk 'NR == 1 { a = $1 } NR == 2 { b = $1 }
		END { exit !(a ~ /^runtime\.usleep/ ||
			(a ~ /^runtime\.futex(\.abi0)?([+ ]|$)/ && b ~ /^runtime\.futexsleep/)) }' &&
		ksyms "$1" | grep -qE 'futex_wait|do_futex|sys_futex|nanosleep'
}
spinning() {
	echo "$1" | grep -q '"state":"running' &&
		[ "$(usyms "$1" | head -n 1 | cut -d' ' -f1)" = main.spinFor ]
}
not_parked() { ! parked "$1"; }

# 1. without --park: the parked threads are reported
stallcap record --deadline "$deadline" -o "$work/nopark.data" -- \
	attach_go_server 127.0.0.1:$port >"$work/record1.out" 2>&1 &
rec=$!
check "the Go server answers" until_ok up
exercise
kill "$(pidof attach_go_server)"
wait_record "$rec"
reports nopark
sed 's/^/# record: /' "$work/record1.out"
check "record says it is a Go program that needs --park" \
	grep -q "is a Go program: .*without --park" "$work/record1.out"
check "without --park, a parked thread is reported (in runtime.futex)" \
	any_sample "$work/nopark.json" attach_go_serve parked
check "record's hint counts the stalls that began on a futex, names --park" \
	grep -q "^stallcap: hint: [0-9]* of [0-9]* stalls began with the thread waiting on a futex: .* --park" \
	"$work/record1.out"
# A parked thread's stack through runtime.mcall (the switch to its g0
# stack; not every parked thread's) ends there, and says so: the words
# above that call are not callers (a DWARF walk once showed two)
mcall_end() {
	! echo "$1" | grep -q '"sym":"runtime.mcall"' || {
		[ "$(usyms "$1" | tail -n 1 | cut -d' ' -f1)" = runtime.mcall ] &&
			echo "$1" | grep -q '"user_walk_end":"stack_switch"'
	}
}
echo "# samples through runtime.mcall: $(samples "$work/nopark.json" attach_go_serve | grep -c '"sym":"runtime.mcall"')"
check "a sample through runtime.mcall ends there (stack_switch)" \
	every_sample "$work/nopark.json" attach_go_serve mcall_end

# 2. with --park, attached to the running server
attach_go_server 127.0.0.1:$port >"$work/server.out" 2>&1 &
srv=$!
check "the Go server answers again" until_ok up
stallcap record --deadline "$deadline" --park -p "$srv" -v \
	-o "$work/park.data" >"$work/record2.out" 2>"$work/record2.err" &
rec=$!
check "the reader attached" reading "$work/record2.err"
exercise
check "the spin was served" grep -q '^spun' "$work/spin.out"
kill "$srv"
wait_record "$rec"
sed 's/^/# record: /' "$work/record2.err"
check "with --park it says nothing of it" \
	sh -c "! grep -q 'is a Go program\\|waiting on a futex' '$work/record2.err'"
reports park
check "with --park, the spin is reported: running in main.spinFor" \
	any_sample "$work/park.json" attach_go_serve spinning
check "and no thread is reported while parked or sleeping" \
	every_sample "$work/park.json" attach_go_serve not_parked
finish
