#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A device driver built as a module and loaded after the attach's probes
# were registered: evdev, removed and loaded again while an attach exists
# (a record of a sleeping process).  Each later attach probes what was
# loaded since, so a blocking read of an input device is a wait for the
# next one: attach_test's input case passes in that state, its own attach
# made while the first still holds the probes; and again after evdev was
# removed and loaded once more under the same first attach.
. ./tool_lib.sh
PATH=$PWD:$PATH
need stallcap attach_test
ko=/lib/modules/evdev.ko
if [ ! -e "$ko" ]; then
	echo "1..0 # SKIP evdev is built in (no evdev.ko to load late)"
	exit 4
fi
if grep -q '^evdev ' /proc/modules && ! rmmod evdev; then
	echo "1..0 # SKIP evdev is in use"
	exit 4
fi
sleep 600 &
holder=$!
stallcap record -v --deadline 1s -p "$holder" -o "$work/holder.data" \
	>"$work/holder.record" 2>&1 &
rec=$!
check "a first attach registers the probes (evdev not loaded)" \
	reading "$work/holder.record"
# input_case N WHAT: attach_test's input case, run N, passes (WHAT) unskipped
input_case() {
	./attach_test -t input_device_read_is_idle_and_a_nonblocking_one_busy \
		>"$work/attach$1.out" 2>&1
	rc=$?
	show "$work/attach$1.out"
	check "$2" [ "$rc" = 0 ]
	check "and did not skip" sh -c "! grep -q SKIP '$work/attach$1.out'"
}
check "evdev loaded after it" insmod "$ko"
input_case 1 "a later attach counts the input device's blocking read as a wait"
# removed and loaded again under the same attach: its probe was gone with
# the module's code, and the next attach probes the new code
check "evdev removed and loaded again" sh -c "rmmod evdev && insmod $ko"
input_case 2 "the next attach counts the reloaded driver's read as a wait"
kill "$holder"
wait_record "$rec"
wait "$holder" 2>/dev/null
finish
