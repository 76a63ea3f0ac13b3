#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's haproxy, unmodified, with two threads (nbthread 2), each running
# its own event loop (run_poll_loop, epoll), already running and serving
# when `stallcap record --deadline 100ms --cputime -p PID` attaches to it.
# A Lua HTTP service (the kind of extension haproxy users write) searches a 3 MB string for a
# substring that is not there: one call into Lua's C library, which
# haproxy's forced yields (counted in Lua instructions) cannot interrupt,
# so the thread that serves the request stays busy for a few hundred
# milliseconds.  That thread is reported, its user stack unwound through
# Lua and the C library back to haproxy's applet and task scheduler inside
# run_poll_loop; the other thread, waiting in epoll, is not.  (haproxy's
# own watchdog kills a thread stuck for about two seconds: the stall stays
# well under that.)
. ./tool_lib.sh
need stallcap haproxy nc awk

port=8299
mkdir -p "$work/hap"
cat >"$work/hap/busy.lua" <<'LUA'
local big = string.rep("a", 3000000)
core.register_service("busy", "http", function(applet)
	local n = tonumber(applet.qs:match("n=(%d+)") or "0")
	local found = 0
	for i = 1, n do
		if big:find("ab", 1, true) then found = found + 1 end
	end
	local body = "ok " .. found .. "\n"
	applet:set_status(200)
	applet:add_header("content-length", string.len(body))
	applet:start_response()
	applet:send(body)
end)
LUA
cat >"$work/hap/haproxy.cfg" <<CFG
global
	nbthread 2
	lua-load $work/hap/busy.lua
defaults
	mode http
	timeout connect 5s
	timeout client 30s
	timeout server 30s
frontend f
	bind 127.0.0.1:$port
	http-request use-service lua.busy
CFG

get() { printf 'GET /?n=%s HTTP/1.0\r\n\r\n' "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }
answers() { get 0 | grep -q '^ok'; }
haproxy -db -f "$work/hap/haproxy.cfg" >"$work/haproxy.out" 2>&1 &
hap=$!
wait_until answers
check "haproxy answers" answers
check "haproxy runs two threads" [ "$(ls "/proc/$hap/task" | grep -c .)" = 2 ]
# warm-up requests on both threads before the attach (on the debug kernel
# a thread's first request takes a few hundred ms of CPU time, its code
# faulted in and translated for the first time)
for i in 1 2 3 4 5 6 7 8; do get 0 >/dev/null; done
stallcap record --deadline 100ms --cputime -v -p "$hap" -o "$work/hap.data" \
	>"$work/record.out" 2>&1 &
rec=$!
reading "$work/record.out"
check "record attached to the running haproxy" reading "$work/record.out"
# ordinary requests: no stall
for i in 1 2 3 4; do get 0 >/dev/null; done
get 1 >"$work/stall.out"
check "the search is answered" grep -q '^ok 0' "$work/stall.out"
sleep 0.5

kill "$hap"
wait "$hap"
wait_record "$rec"
check "record exits when haproxy does" [ "$?" = 0 ]
sed 's/^/# record: /' "$work/record.out"

reports hap

grep '"type":"sample"' "$work/hap.json" >"$work/samples"
in_service() {
	usyms "$1" | in_order lua_resume hlua_applet_http_fct task_run_applet \
		process_runnable_tasks run_poll_loop
}
check "the busy thread is reported, in the Lua service under run_poll_loop" \
	any_sample "$work/hap.json" haproxy in_service lua_resume
# frame 0 of the first sample taken inside the search (under lua_resume): the
# search itself, in Lua's string library or the C library's memchr under
# it, not haproxy
first=$(grep -F '"sym":"lua_resume"' "$work/samples" | head -n 1)
echo "# frame 0 of the search's first sample: in $(frame0_dso "$first")"
check "the search's first sample has its innermost frame in the search" \
	sh -c "case '$(frame0_dso "$first")' in libc.so.6|liblua5.3.so.0) exit 0;; *) exit 1;; esac"
# the other thread waited in epoll_wait all along: idle, never a stall
tids=$(sample_tids "$work/samples")
check "only one thread is reported (the other waits in epoll)" \
	[ "$(echo "$tids" | grep -c .)" = 1 ]
check "waiting in epoll_wait is never a stall" \
	no_kernel_frame "$work/hap.json" haproxy ep_poll do_epoll_wait
finish
