#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A tokio (Rust) server, unmodified: `stallcap record --deadline 50ms --park
# -- attach_tokio_server` (tokio_server/, built by cargo from Debian's
# packaged tokio).  Its workers wait in epoll (the one driving I/O) or on a
# futex (the others), idle with --park, as is its main thread parked in
# block_on.  Each /busy request runs 300 ms of CPU inside its task: a stall
# of a worker, whose frames are named as Rust tools name them (the legacy
# and v0 manglings demangled, no hash): the task's spin_for and handle_busy
# under tokio's Core<T,S>::poll and worker::Context::run_task.
. ./tool_lib.sh
PATH=$PWD:$PATH
need stallcap nc attach_tokio_server

port=8093
get() { printf 'GET %s HTTP/1.0\r\n\r\n' "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }
up() { get / | grep -q '^ok'; }

stallcap record --deadline 50ms --park -o "$work/tokio.data" -- \
	attach_tokio_server "127.0.0.1:$port" >"$work/record.out" 2>&1 &
rec=$!
check "the tokio server answers" until_ok up
get /busy >/dev/null
get / >/dev/null
get /busy >/dev/null
get / >/dev/null
kill "$(pidof attach_tokio_server)"
wait_record "$rec"
sed 's/^/# record: /' "$work/record.out"
reports tokio

n_busy=$(grep '"type":"stall"' "$work/tokio.json" | grep -c '"comm":"tokio-runtime-w"')
check "each /busy is a stall of a worker ($n_busy)" [ "$n_busy" -ge 2 ]
# (a stall of its start-up, running, is real: building the runtime, or the
# main future's first poll inside block_on, 96 and 67 ms on the loaded 5.10
# and 7.3 guests of CI76)
in_block_on() {
	echo "$1" | grep -q '"state":"sleeping"' && usyms "$1" | grep -q block_on
}
check "no sample of the main thread parked in block_on (--park)" \
	eval '! any_sample "$work/tokio.json" attach_tokio_se in_block_on'
check "the main thread was watched" \
	grep -q 'watch started at .* (attach_tokio_se) of process' "$work/tokio.txt"
# the task's frames, demangled: spin_for (frame 0, or under the clock read
# of its loop) called by handle_busy, under tokio's task poll and worker
in_task() {
	usyms "$1" | cut -d' ' -f1 | in_order attach_tokio_server::spin_for \
		attach_tokio_server::handle_busy 'tokio::runtime::task::core::Core<T,S>::poll' \
		tokio::runtime::scheduler::multi_thread::worker::Context::run_task
}
check "every sample of a worker: spin_for < handle_busy < Core<T,S>::poll < Context::run_task" \
	every_sample "$work/tokio.json" tokio-runtime-w in_task
check "no mangled Rust name, no hash in the report" \
	sh -c "! grep -E '_ZN[0-9]|_RN[vMCsINY]|::h[0-9a-f]{16}|\\\$LT\\\$' $work/tokio.txt"
finish
