#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# In-process reporting: tools/examples/event_loop reads its own ring and
# writes its stalls into its own output with stallcap_report(): each slow
# handler's stall, sampled in handle_tick (named by dladdr(): the example
# is linked -rdynamic), then its end.
. ./tool_lib.sh
need event_loop

event_loop -d -n 15 -t 20 -s 80 >"$work/el.out" 2>"$work/el.err"
check "event_loop exits 0" [ $? = 0 ]
show "$work/el.out"
check "no 'running unwatched' (the module is here)" sh -c '! grep -q unwatched "$1"' _ "$work/el.err"
check "a stall's first sample, running, in the log" \
	grep -qE "^stallcap: stall [0-9]+ of tid [0-9]+ \(event_loop\): sample 0 at \+[0-9.]+ ms over a 20.00 ms deadline, running, cpu [0-9]+$" "$work/el.out"
check "its user frames: handle_tick, then main, named by dladdr()" \
	sh -c 'grep -E "^stallcap:   user   #" "$1" | grep -m1 -A4 " handle_tick+0x" | grep -q " main+0x"' _ "$work/el.out"
check "its kernel frames as addresses, or none when it ran in user mode" \
	sh -c '! grep -E "^stallcap:   kernel #" "$1" | grep -vqE "0x[0-9a-f]{16}$"' _ "$work/el.out"
# three slow handlers of 80 ms over a 20 ms deadline
ends=$(grep -cE "^stallcap: stall [0-9]+ of tid [0-9]+ ended: [0-9.]+ ms over its deadline, [0-9]+ samples?$" "$work/el.out")
check "one end per slow handler ($ends)" [ "$ends" -ge 3 ]
finish
