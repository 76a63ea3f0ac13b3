#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# In-process reporting: tools/examples/event_loop reads its own ring and
# writes its stalls into its own output with stallcap_report(): each slow
# handler's stall as one block (its header, its samples taken in
# handle_tick, named by dladdr(): the example is linked -rdynamic, then its
# end).
. ./tool_lib.sh
need event_loop

event_loop -d -n 15 -t 20 -s 80 >"$work/el.out" 2>"$work/el.err"
check "event_loop exits 0" [ $? = 0 ]
show "$work/el.out"
check "no 'running unwatched' (the module is here)" sh -c '! grep -q unwatched "$1"' _ "$work/el.err"
# one block per stall: its header, its samples under it, its end
check "a stall's header: thread, tag, how far past the 20 ms deadline, running" \
	grep -qE "^stallcap: stall [0-9]+ of tid [0-9]+ \(event_loop\), tag 0x[0-9a-f]+: [0-9.]+ ms past its 20.00 ms deadline so far, running(: .*)?$" "$work/el.out"
check "its first sample under it" \
	sh -c 'grep -A1 -E "^stallcap: stall [0-9]+ of tid [0-9]+ \(event_loop\), tag " "$1" | grep -qE "^stallcap:   sample 0 at \+[0-9.]+ ms, running, cpu [0-9]+$"' _ "$work/el.out"
check "its user frames: handle_tick, then main, named by dladdr()" \
	sh -c 'grep -E "^stallcap:     user   #" "$1" | grep -m1 -A4 " handle_tick+0x" | grep -q " main+0x"' _ "$work/el.out"
check "its kernel frames as addresses, or none when it ran in user mode" \
	sh -c '! grep -E "^stallcap:     kernel #" "$1" | grep -vqE "0x[0-9a-f]{16}$"' _ "$work/el.out"
check "no sample line outside a block (after its end, before a header)" \
	awk '/^stallcap: stall [0-9]+ of tid [0-9]+ \(/ { open = 1; next }
	     / ended: / { open = 0; next }
	     /^stallcap:   samples? / { if (!open) bad++ }
	     END { exit bad > 0 }' "$work/el.out"
# three slow handlers of 80 ms over a 20 ms deadline
ends=$(grep -cE "^stallcap: stall [0-9]+ of tid [0-9]+ ended: [0-9.]+ ms over its deadline, [0-9]+ samples?, [0-9]+ lost$" "$work/el.out")
check "one end per slow handler ($ends)" [ "$ends" -ge 3 ]
heads=$(grep -cE "^stallcap: stall [0-9]+ of tid [0-9]+ \(event_loop\), tag " "$work/el.out")
check "one header per ended stall ($heads headers, $ends ends)" [ "$heads" = "$ends" ]
check "each end's stall had its one header before it" \
	awk '/ \(event_loop\), tag / { h[$3]++ }
	     / ended: / { if (h[$3] != 1) bad++ }
	     END { exit bad > 0 }' "$work/el.out"
finish
