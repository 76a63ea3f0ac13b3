#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tools/examples/event_loop: its slow handler is caught with heartbeat marks
# (inline stores of libstallcap), with per-event deadlines (REARM) and with
# shared deadlines (inline stores, no system call); its session is
# close-on-exec.
. ./tool_lib.sh
need stallcap event_loop

in_handler() { usyms "$1" | in_order handle_tick main; }

stallcap record -o "$work/hb.data" -- event_loop -n 15 -t 20 -s 80
check "heartbeat: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/hb.data" >"$work/hb.json"
check "heartbeat: stalls reported with the heartbeat clock" grep -q '"clock":"heartbeat"' "$work/hb.json"
check "heartbeat: caught in handle_tick" any_sample "$work/hb.json" event_loop in_handler

stallcap record -o "$work/dl.data" -- event_loop -d -n 15 -t 20 -s 80
check "deadline: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/dl.data" >"$work/dl.json"
check "deadline: caught in handle_tick" any_sample "$work/dl.json" event_loop in_handler
check "deadline: idle waits are not reported" \
	sh -c "! grep '\"type\":\"sample\"' '$work/dl.json' | grep -q epoll_wait"

stallcap record -o "$work/sd.data" -- event_loop -S -n 15 -t 20 -s 80
check "shared deadline: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/sd.data" >"$work/sd.json"
check "shared deadline: stalls reported with the shared clock" grep -q '"clock":"shared"' "$work/sd.json"
check "shared deadline: caught in handle_tick" any_sample "$work/sd.json" event_loop in_handler
check "shared deadline: idle waits are not reported" \
	sh -c "! grep '\"type\":\"sample\"' '$work/sd.json' | grep -q epoll_wait"
# three slow handlers of 80 ms over a 20 ms deadline: three stalls, each ended
check "shared deadline: every slow handler is one stall that ended" \
	[ "$(grep -c '"type":"stall_end"' "$work/sd.json")" = 3 ]

# the library opens its session O_CLOEXEC (flags in fdinfo are octal)
event_loop -S -n 30 >/dev/null &
pid=$!
sleep 0.2
cloexec() {
	for fd in /proc/$pid/fd/*; do
		[ "$(readlink "$fd")" = /dev/stallcap ] || continue
		flags=$(sed -n 's/^flags:[[:space:]]*//p' "/proc/$pid/fdinfo/${fd##*/}")
		[ $(( 0$flags & 02000000 )) != 0 ] && return 0
	done
	return 1
}
check "the session fd is close-on-exec" cloexec
wait $pid
finish
