#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A program built with -fomit-frame-pointer -O2 spinning in fixture_spin is
# unwound to main by DWARF from the record's stack copy; where the frames
# end early (the copy too short, a frame too large), the report says why.
. ./tool_lib.sh
need stallcap stallcap-spin-nofp

stallcap record -o "$work/nofp.data" -- stallcap-spin-nofp 300 20
check "record exits 0" [ $? = 0 ]
stallcap report -f json "$work/nofp.data" >"$work/nofp.json"
stallcap report "$work/nofp.data" >"$work/nofp.txt"
show "$work/nofp.txt"

to_main() {
	usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 main &&
		usyms "$1" | grep -qx 'main dwarf' &&
		usyms "$1" | grep -qx 'fixture_level1 dwarf'
}
check "a user-mode sample unwinds to main by DWARF" \
	any_sample "$work/nofp.json" stallcap-spin-n to_main

stallcap report --no-dwarf -f json "$work/nofp.data" >"$work/fp.json"
fp_to_main() { usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 main; }
if any_sample "$work/fp.json" stallcap-spin-n fp_to_main; then
	echo "# note: the frame-pointer walk alone reached main too"
else
	echo "# the frame-pointer walk alone does not reach main, as expected"
fi

# a stack copy too short for the whole stack (--stack-bytes 128): the
# frames end where DWARF ran out of bytes, and the report says so
stallcap record --stack-bytes 128 -o "$work/cut.data" -- stallcap-spin-nofp 300 20
check "record --stack-bytes 128 exits 0" [ $? = 0 ]
stallcap report "$work/cut.data" >"$work/cut.txt"
stallcap report -f json "$work/cut.data" >"$work/cut.json"
check "the report says where the stack copy ended the frames" \
	sh -c 'grep -q "^      (the stack copy ends here, 128 bytes: record with a larger --stack-bytes" "$1" &&
	       grep -q "\"user_stack_cut_by_copy\":true,\"user_walk_end\":\"copy\"" "$2"' _ "$work/cut.txt" "$work/cut.json"
check "and says it of no sample of the whole copy" \
	sh -c '! grep -q "stack copy ends here" "$1" && ! grep -q "\"user_stack_cut_by_copy\":true" "$2"' \
	_ "$work/nofp.txt" "$work/nofp.json"

# under a frame of 96 KiB (a parser's buffer on the stack, its pages above
# the lowest never touched, so not resident): the copy ends at the first of
# them, the module copies the resident runs above that gap, and DWARF goes
# on through the big frame to main
FIXTURE_BIG_FRAME=1 stallcap record -o "$work/big.data" -- stallcap-spin-nofp 300 20
check "record of the spin under a 96 KiB frame exits 0" [ $? = 0 ]
reports big
through_big_frame() {
	usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 fixture_big_frame main &&
		usyms "$1" | grep -qx 'main dwarf' &&
		echo "$1" | grep -q '"stack_more":\[{"start":"0x'
}
# (a module without task_work, the notw boot, copies a user-mode sample's
# stack at the capture, resident pages only, and nothing past the gap: the
# report says where the frames end, and why)
if stallcap stats | grep -q "^module: ABI [0-9]*, features:.* user_stack_more"; then
	check "a user-mode sample unwinds through the 96 KiB frame to main, from the runs past its gap" \
		any_sample "$work/big.json" stallcap-spin-n through_big_frame
	check "and no sample of it says its walk stopped" \
		sh -c '! grep -q "walk stops here" "$1"' _ "$work/big.txt"
	# the same frame, the time spent in system calls (read() of
	# /dev/zero): a sample taken in the kernel copies the user stack at
	# once, up to the gap, and asks for the deferred read on the way back
	# to user space, which copies the runs past it (CI128's 5.10 flake:
	# such a sample, taken in the spin's return to user space, had not)
	FIXTURE_BIG_FRAME=1 FIXTURE_IN_KERNEL=1 stallcap record -o "$work/sys.data" -- \
		stallcap-spin-nofp 300 20
	check "record of the system calls under a 96 KiB frame exits 0" [ $? = 0 ]
	reports sys
	in_kernel_through_big_frame() {
		! echo "$1" | grep -q '"flag_names":\[[^]]*"user_mode"' &&
			echo "$1" | grep -q '"nr_kernel_frames":[1-9]' &&
			echo "$1" | grep -q '"deferred_user":true' &&
			usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 \
				fixture_big_frame main
	}
	check "a sample running in a system call under it unwinds through the 96 KiB frame to main" \
		any_sample "$work/sys.json" stallcap-spin-n in_kernel_through_big_frame \
		'"state":"running"'
	check "and no sample of it says its walk stopped" \
		sh -c '! grep -q "walk stops here" "$1"' _ "$work/sys.txt"
else
	check "without the copy past a gap, the report says where the frames under the 96 KiB frame end, and why" \
		grep -q "^      (the walk stops here: the next frame is read at 0x[0-9a-f]*, 9[6-9]\.[0-9] KiB above the stack pointer, past the [0-9]* bytes copied, which ended at a page that was not resident)" \
		"$work/big.txt"
fi

# asleep under the 96 KiB frame: the sample is taken in the kernel, and
# the user stack is read as the thread returns to user space, resident
# pages only as at a capture, the runs past the gap too (a read that
# faulted the gap's pages in read zeros in their place, up to the 64 KiB
# a copy holds, and DWARF stopped in the big frame: CI123, 5.10).  A
# module without task_work reads a blocked thread's stack from outside,
# while it is still asleep: there, pages never touched end the copy, and
# the runs past them follow.
FIXTURE_BIG_FRAME=1 FIXTURE_SLEEP=1 stallcap record -o "$work/nap.data" -- \
	stallcap-spin-nofp 300 20
check "record of the sleep under a 96 KiB frame exits 0" [ $? = 0 ]
reports nap
asleep_through_big_frame() {
	through_big_frame "$1" && echo "$1" | grep -q '"deferred_user":true'
}
check "a sample asleep in it, its user stack read later (on the way back, or from outside while it sleeps), unwinds through the 96 KiB frame to main" \
	any_sample "$work/nap.json" stallcap-spin-n asleep_through_big_frame '"state":"sleeping"'
check "and no sample of it says its walk stopped" \
	sh -c '! grep -q "walk stops here" "$1"' _ "$work/nap.txt"

# under a frame of 1.25 MiB: its return address lies beyond what any copy
# reaches (1 MiB), so DWARF stops there, and the report says so with the
# address it needed, rather than ending the stack as if it were whole
FIXTURE_BIG_FRAME=huge stallcap record -o "$work/huge.data" -- stallcap-spin-nofp 300 20
check "record of the spin under a 1.25 MiB frame exits 0" [ $? = 0 ]
reports huge
to_huge_frame() {
	usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 fixture_huge_frame &&
		[ "$(usyms "$1" | tail -n 1)" = "fixture_huge_frame dwarf" ] &&
		echo "$1" | grep -q '"user_walk_end":"outside_copy","user_walk_needed":"0x'
}
check "a sample unwinds to the huge frame, ends there, and JSON says the walk needed memory outside the copy" \
	any_sample "$work/huge.json" stallcap-spin-n to_huge_frame
check "the text says where the walk stopped and why" \
	grep -q "^      (the walk stops here: the next frame is read at 0x[0-9a-f]*, 12[89][0-9]\.[0-9] KiB above the stack pointer, beyond the [0-9]* bytes copied and the reach of a copy, 1024 KiB" \
	"$work/huge.txt"
check "and no whole stack of the first recording says its walk stopped" \
	sh -c '! grep -q "walk stops here" "$1" && ! grep -q "\"user_walk_end\":\"\(outside_copy\|unwinder\|copy\)\"" "$2"' \
	_ "$work/nofp.txt" "$work/nofp.json"

# spinning in a signal handler that runs on an alternate signal stack
# (sigaltstack, SA_ONSTACK): the stack copy ends at that stack's top and
# the stack the handler interrupted comes in a section of its own, so DWARF
# goes on through the kernel's signal frame to raise() and main
FIXTURE_SIGNAL=alt stallcap record -o "$work/alt.data" -- stallcap-spin-nofp 300 20
check "record of the handler on the alternate stack exits 0" [ $? = 0 ]
stallcap report -f json "$work/alt.data" >"$work/alt.json"
stallcap report "$work/alt.data" >"$work/alt.txt"
show "$work/alt.txt"
through_signal() {
	usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 fixture_on_signal raise main &&
		usyms "$1" | grep -qx 'main dwarf' && usyms "$1" | grep -qx 'raise dwarf'
}
check "a sample in the handler on the alternate stack unwinds through its signal frame to main" \
	any_sample "$work/alt.json" stallcap-spin-n through_signal
check "with the stack it interrupted copied apart" \
	grep -q '"interrupted_stack_size":[1-9]' "$work/alt.json"
check "the signal return trampoline is marked, in text and JSON" \
	sh -c 'grep -q "\[dwarf\] libc.so.6  <signal frame>\$" "$1" && grep -q "\"signal_frame\":true" "$2"' \
	_ "$work/alt.txt" "$work/alt.json"
check "and no sample says a larger copy would have more frames" \
	sh -c '! grep -q "stack copy ends here" "$1"' _ "$work/alt.txt"
finish
