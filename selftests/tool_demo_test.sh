#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo's three stalls, recorded by `stallcap record` and read back by
# `stallcap report`: each names its function in the right stack.
. ./tool_lib.sh
need stallcap stallcap-demo

stallcap record -o "$work/demo.data" -- stallcap-demo >"$work/demo.out" 2>&1
check "stallcap record -- stallcap-demo exits 0" [ $? = 0 ]
stallcap report -f json "$work/demo.data" >"$work/demo.json"
check "report -f json exits 0" [ $? = 0 ]
stallcap report "$work/demo.data" >"$work/demo.txt"
show "$work/demo.txt"

spin_in_user() {
	echo "$1" | grep -q '"state":"running".*"user_mode"' &&
		[ "$(usyms "$1" | head -n 1 | cut -d' ' -f1)" = demo_spin_in_user ]
}
check "spin-user: running in user, frame 0 is demo_spin_in_user" \
	any_sample "$work/demo.json" spin-user spin_in_user

# A spinner that never switched voluntarily never slept: no sample may
# say "blocked" (the scheduler's clock drifting from CLOCK_MONOTONIC once
# made one say so; see why_times_test)
never_slept() {
	! echo "$1" | grep -q '"nvcsw":0[,}]' ||
		echo "$1" | grep -q '"sleep_ns":0[,}]'
}
check "spin-user: no sample without a voluntary switch says it slept" \
	every_sample "$work/demo.json" spin-user never_slept

in_kernel() {
	ksyms "$1" | grep -qE '^(__mm_populate|populate_vma_page_range|vm_mmap_pgoff|do_mmap|__get_user_pages|handle_mm_fault)$' &&
		usyms "$1" | grep -q '^demo_stall_in_kernel '
}
check "in-kernel: mm populate in the kernel stack, demo_stall_in_kernel in the user stack" \
	any_sample "$work/demo.json" in-kernel in_kernel

on_lock() {
	echo "$1" | grep -q '"state":"sleeping"' &&
		ksyms "$1" | grep -q 'futex' &&
		usyms "$1" | grep -q '^demo_block_on_lock '
}
check "lock-wait: sleeping in futex, demo_block_on_lock in the user stack" \
	any_sample "$work/demo.json" lock-wait on_lock

check "every stall of the demo ended" \
	[ "$(grep -c '"type":"stall_end"' "$work/demo.json")" -ge 3 ]
check "text: one block per stall with the thread and the deadline" \
	grep -qE '^stall [0-9]+ of tid [0-9]+ \(spin-user\) on cpu [0-9]+: [0-9.]+ ms over a 20 ms deadline, (running|preempted) in (user|kernel)$' "$work/demo.txt"
check "text: user frames with file:line" grep -q 'demo_spin_in_user+0x[0-9a-f]*  demo.c:[0-9]' "$work/demo.txt"

# wall-clock times: today's date, ISO 8601 with microseconds, UTC with --utc
today=$(date -u +%Y-%m-%d)
stallcap report --utc "$work/demo.data" >"$work/demo-utc.txt"
check "text: the stall began at a wall-clock time of today (UTC)" \
	grep -qE "^  began ${today}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z, process [0-9]+ \(stallcap-demo\), wall clock, armed," "$work/demo-utc.txt"
check "text: samples at wall-clock times" \
	grep -qE "^  sample 0 at ${today}T[0-9:]{8}\.[0-9]{6}Z \(\+[0-9.]+ ms\)" "$work/demo-utc.txt"
stallcap report -u -f json "$work/demo.data" >"$work/demo-utc.json"
rt_sane() {
	echo "$1" | grep -qE "\"capture_time\":\"${today}T[0-9:]{8}\.[0-9]{6}Z\"" &&
		echo "$1" | grep -qE '"capture_realtime_ns":1[0-9]{18},' &&
		echo "$1" | grep -q '"origin":"armed"'
}
check "json: realtime stamp, capture_time of today, origin armed" \
	any_sample "$work/demo-utc.json" spin-user rt_sane
# the initial pid namespace: the session's ids are the host's
same_ids() {
	p=$(echo "$1" | sed 's/.*"pid":\([0-9]*\),"tid":\([0-9]*\),"ns_pid":\([0-9]*\),"ns_tid":\([0-9]*\),.*/\1 \2 \3 \4/')
	set -- $p
	[ "$#" = 4 ] && [ "$1" = "$3" ] && [ "$2" = "$4" ] && [ "$1" != 0 ]
}
check "json: ns ids equal the host's in the initial namespace" \
	any_sample "$work/demo.json" spin-user same_ids

stallcap report -f json -- stallcap-demo --only lock-wait >"$work/live.json" 2>&1
check "live report: the lock wait's user stack (deferred, after the stall's end)" \
	any_sample "$work/live.json" lock-wait on_lock

# shared deadline: armed once, re-armed by plain stores, caught the same
stallcap record -o "$work/shared.data" -- stallcap-demo --shared --only spin-user \
	>"$work/shared.out" 2>&1
check "shared deadline: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/shared.data" >"$work/shared.json"
shared_spin() { echo "$1" | grep -q '"clock":"shared"' && spin_in_user "$1"; }
check "shared deadline: caught in demo_spin_in_user, clock shared" \
	any_sample "$work/shared.json" spin-user shared_spin
check "shared deadline: the stall ended (the idle store)" \
	grep -q '"type":"stall_end"' "$work/shared.json"

stallcap report -f folded "$work/demo.data" >"$work/demo.folded"
check "folded: spin-user;...;demo_spin_in_user N" \
	grep -qE '^spin-user;.*;demo_spin_in_user [0-9]+$' "$work/demo.folded"
check "folded: in-kernel stack ends in _[k] frames" \
	grep -qE '^in-kernel;.*demo_stall_in_kernel;.*;[^;]+_\[k\] [0-9]+$' "$work/demo.folded"

stallcap report --top=3 "$work/demo.data" >"$work/demo.top"
check "top: ranked stacks, the first with its stalls and percentiles" \
	grep -qE '^#1 [0-9.]+ ms \([0-9.]+%\)  [0-9]+ stalls?  p50 ' "$work/demo.top"
check "top: a duration histogram for the demo process" \
	grep -qE '^process [0-9]+ \(.*\): [0-9]+ stall' "$work/demo.top"
stallcap report --comm spin-user "$work/demo.data" >"$work/demo.spin"
check "filter --comm: only spin-user's stalls" \
	sh -c '! grep -q "in-kernel" "$1" && grep -q "spin-user" "$1"' sh "$work/demo.spin"
finish
