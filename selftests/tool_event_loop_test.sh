#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tools/examples/event_loop: its slow handler is caught with heartbeat marks
# (inline stores of libstallcap) and with per-event deadlines.
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
finish
