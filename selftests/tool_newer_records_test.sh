#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The issue's "reader built against today's layout reads a record with extra
# fields": loaded with abi_test, the module writes samples with a longer
# fixed part and a section of an unassigned type; the tool (and libstallcap)
# read them exactly as the usual ones and say what they skipped.
. ./tool_lib.sh
need stallcap stallcap-demo
param=/sys/module/stallcap/parameters/abi_test
[ -w "$param" ] || { echo "1..0 # SKIP no abi_test parameter"; exit 4; }
trap 'echo 0 >"$param"; rm -rf "$work"' EXIT

echo 1 >"$param"
stallcap record -o "$work/new.data" -- stallcap-demo --only spin-user >"$work/new.out" 2>&1
check "record of newer-layout samples exits 0" [ $? = 0 ]
echo 0 >"$param"
stallcap report -f json "$work/new.data" >"$work/new.json"
stallcap report "$work/new.data" >"$work/new.txt"
show "$work/new.txt"
newer() {
	fs=$(echo "$1" | sed 's/.*"fixed_size":\([0-9]*\),.*/\1/')
	[ "$fs" -gt 128 ] && echo "$1" | grep -q '"unknown_sections":1,'
}
check "json: fixed part longer than known, one unknown section skipped" \
	any_sample "$work/new.json" spin-user newer
spin() {
	newer "$1" && echo "$1" | grep -q '"state":"running".*"user_mode"' &&
		echo "$1" | grep -q '"regs_arch_name":"x86_64"' &&
		[ "$(usyms "$1" | head -n 1 | cut -d' ' -f1)" = demo_spin_in_user ]
}
check "the known fields and sections read as usual (frame 0 demo_spin_in_user)" \
	any_sample "$work/new.json" spin-user spin
check "text: the usual block" \
	grep -qE '^stall [0-9]+ of tid [0-9]+ \(spin-user\) on cpu [0-9]+: [0-9.]+ ms over a 20 ms deadline, (running|preempted) in (user|kernel)$' "$work/new.txt"
finish
