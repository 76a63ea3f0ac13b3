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
	grep -qE '^stall [0-9]+ of tid [0-9]+ \(spin-user\) on cpu [0-9]+: [0-9.]+ ms over a 20 ms deadline, running in user$' "$work/demo.txt"
check "text: user frames with file:line" grep -q 'demo_spin_in_user+0x[0-9a-f]*  demo.c:[0-9]' "$work/demo.txt"

stallcap report -f json -- stallcap-demo --only lock-wait >"$work/live.json" 2>&1
check "live report: the lock wait's user stack (deferred, after the stall's end)" \
	any_sample "$work/live.json" lock-wait on_lock

stallcap report -f folded "$work/demo.data" >"$work/demo.folded"
check "folded: spin-user;...;demo_spin_in_user N" \
	grep -qE '^spin-user;.*;demo_spin_in_user [0-9]+$' "$work/demo.folded"
check "folded: in-kernel stack ends in [k] frames" \
	grep -qE '^in-kernel;.*demo_stall_in_kernel;.*\[k\] [^;]+ [0-9]+$' "$work/demo.folded"
finish
