#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A module loaded after the reader opened its session still has its kernel
# frames named in the record.  The reader reads /proc/kallsyms when the
# session opens; a kernel frame outside the kernel's own text makes it look
# at /proc/modules (at most every 100 ms) and read the symbols again when
# the modules changed.  stallcap_spin (selftests/kmod) is unloaded, a session
# opened for a shell waiting in poll(), the module loaded, and the shell
# then spins 300 ms in stallcap_spin_preemptoff_loop over a 50 ms deadline.
# The report is read with the module unloaded again, so that the names can
# only come from the record (a report of this boot falls back to the live
# /proc/kallsyms).
. ./tool_lib.sh
need stallcap
ko=/lib/modules/stallcap_spin.ko
loaded() { grep -q '^stallcap_spin ' /proc/modules; }
if [ ! -f "$ko" ] || ! loaded; then
	echo "1..0 # SKIP no stallcap_spin module"
	exit 4
fi
# the guest's other tests need it: loaded again whatever happens
trap 'loaded || insmod "$ko"; rm -rf "$work"' EXIT

rmmod stallcap_spin
check "stallcap_spin unloaded" sh -c '! grep -q "^stallcap_spin " /proc/modules'
mkfifo "$work/go"
# busybox read -t waits in poll(): the shell is idle until told
stallcap record -v --deadline 50ms -o "$work/kmod.data" -- sh -c \
	"exec 3<>'$work/go'; read -t 60 x <&3; echo 300 >/sys/kernel/debug/stallcap_spin/preemptoff" \
	2>"$work/rec.err" &
rec=$!
check "the reader reads records (its symbols read)" reading "$work/rec.err"
insmod "$ko"
check "stallcap_spin loaded after that" loaded
echo go >"$work/go"
wait $rec
check "record exits 0" [ $? = 0 ]
sed 's/^/# /' "$work/rec.err"
check "the reader read the symbols again" \
	grep -qx "stallcap: kernel symbols read again (the modules changed)" "$work/rec.err"

rmmod stallcap_spin
stallcap report -f json "$work/kmod.data" >"$work/kmod.json"
check "report exits 0" [ $? = 0 ]
in_module() { [ "$(ksyms "$1" | head -n 1)" = stallcap_spin_preemptoff_loop ]; }
check "kernel frame 0 is stallcap_spin_preemptoff_loop, named from the record" \
	any_sample "$work/kmod.json" sh in_module
stallcap report "$work/kmod.data" >"$work/kmod.txt"
text_frame() { grep -q 'stallcap_spin_preemptoff_loop+0x[0-9a-f]* \[stallcap_spin\]' "$work/kmod.txt"; }
check "text: the frame with its module" text_frame
text_frame || sed -n '1,40s/^/# /p' "$work/kmod.txt"
finish
