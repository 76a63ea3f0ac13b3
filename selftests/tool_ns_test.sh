#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A reader inside a pid namespace (a container) sees the ids of its own
# namespace, the initial namespace's beside them, and still resolves the
# program's user frames (its /proc names the process by the namespace's id).
. ./tool_lib.sh
need stallcap stallcap-demo unshare
unshare -p -f --mount-proc true 2>/dev/null ||
	{ echo "1..0 # SKIP no pid namespaces here"; exit 4; }

unshare -p -f --mount-proc stallcap record -o "$work/ns.data" -- \
	stallcap-demo --only spin-user >"$work/ns.out" 2>&1
check "record in a new pid namespace exits 0" [ $? = 0 ]
stallcap report -f json "$work/ns.data" >"$work/ns.json"
stallcap report "$work/ns.data" >"$work/ns.txt"
show "$work/ns.txt"
ns_ids() {
	p=$(echo "$1" | sed 's/.*"pid":\([0-9]*\),"tid":\([0-9]*\),"ns_pid":\([0-9]*\),"ns_tid":\([0-9]*\),.*/\1 \2 \3 \4/')
	set -- $p
	# in the new namespace the demo is a child of pid 1 (the tool)
	[ "$#" = 4 ] && [ "$3" -lt 10 ] && [ "$3" != 0 ] && [ "$1" != "$3" ] && [ "$2" != "$4" ]
}
check "json: ns ids small, host ids different" any_sample "$work/ns.json" spin-user ns_ids
check "text: tid N (host M)" \
	grep -qE '^stall [0-9]+ of tid [0-9]+ \(host [0-9]+\) \(spin-user\) on cpu' "$work/ns.txt"
check "text: process N (host M)" \
	grep -qE '^  began .*, process [0-9]+ \(host [0-9]+\) \(stallcap-demo\),' "$work/ns.txt"
spin() { [ "$(usyms "$1" | head -n 1 | cut -d' ' -f1)" = demo_spin_in_user ]; }
check "user frames resolved through the namespace's /proc" \
	any_sample "$work/ns.json" spin-user spin
finish
