#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Why the demo's stalls stalled, as `stallcap report` says it: a verdict
# line before the stacks of every sample, the time breakdown, the lock
# owner of the lock-wait stall (with its stack), and JSON with every field
# (unavailable ones null, never 0).
. ./tool_lib.sh
need stallcap stallcap-demo

stallcap record -o "$work/demo.data" -- stallcap-demo >"$work/demo.out" 2>&1
check "stallcap record -- stallcap-demo exits 0" [ $? = 0 ]
stallcap report "$work/demo.data" >"$work/demo.txt"
check "report exits 0" [ $? = 0 ]
stallcap report -f json "$work/demo.data" >"$work/demo.json"
check "report -f json exits 0" [ $? = 0 ]
show "$work/demo.txt"

# the first sample block of the stall of thread COMM
block() {
	awk -v comm="($1)" '
		/^stall / { inside = index($0, comm) > 0; next }
		inside && /^  sample 0 / { on = 1; print; next }
		on && /^  sample / { exit }
		on { print }' "$work/demo.txt"
}

# every sample of the stall of thread COMM
stall_of() {
	awk -v comm="($1)" '/^stall / { inside = index($0, comm) > 0; next }
		inside' "$work/demo.txt"
}

spin=$(block spin-user)
# on CPU: the first sample, or a later one where the first found the thread
# runnable (CI59's loaded 6.12-rt guest: "runnable 19.7 ms of 37.0",
# woken on a vCPU the host had stopped; true, and not what this checks)
check "spin-user: verdict on CPU" \
	sh -c 'echo "$1" | grep -qE "^    why: on CPU [0-9.]+ ms of [0-9.]+" ||
	       { echo "$1" | grep -qE "^    why: runnable " &&
		 echo "$2" | grep -qE "^    why: on CPU [0-9.]+ ms of [0-9.]+"; }' \
	_ "$spin" "$(stall_of spin-user)"
check "spin-user: breakdown line" \
	sh -c 'echo "$1" | grep -qE "^    time: on CPU [0-9.]+ ms \(user [0-9.]+, system [0-9.]+\), runnable [0-9.]+ ms, blocked [0-9.]+ ms; switches"' _ "$spin"
check "spin-user: the verdict comes before the stacks" \
	sh -c 'echo "$1" | awk "/why:/ { w = NR } /^    user( \\(deferred\\))?:/ { u = NR } END { exit !(w && u && w < u) }"' _ "$spin"

# lock-wait: its first sample found asleep on the lock. Sample 0 may
# legitimately find it before the lock: CI83's loaded debug guest took the
# deadline while the thread was still preempted inside the arm ioctl
# ("running in kernel", its true state); the verdict checked is the wait's.
lock=$(awk '/^stall / { inside = index($0, "(lock-wait)") > 0; next }
	inside && /^  sample [0-9]+ .*blocked in kernel \(sleeping\)/ && !on { on = 1; print; next }
	on && /^  sample / { exit }
	on { print }' "$work/demo.txt")
check "lock-wait: a sample found it asleep on the lock" [ -n "$lock" ]
check "lock-wait: verdict names the holder" \
	sh -c 'echo "$1" | grep -qE "^    why: blocked [0-9.]+ ms on futex 0x[0-9a-f]+: held by tid [0-9]+ \(lock-holder\), sleeping"' _ "$lock"
check "lock-wait: the holder's stack (nanosleep in the kernel)" \
	sh -c 'echo "$1" | grep -A40 "owner (hop 1): lock-holder" | grep -qE "hrtimer_nanosleep|do_nanosleep"' _ "$lock"
check "lock-wait: the holder's user frames (frame pointers)" \
	sh -c 'echo "$1" | grep -A60 "owner (hop 1): lock-holder" | grep -q "^      user:"' _ "$lock"

line=$(samples "$work/demo.json" lock-wait | grep '"state":"sleeping"' | head -n 1)
check "json: verdict, times, wait and an owner" \
	sh -c 'echo "$1" | grep -q "\"verdict\":\"blocked" && echo "$1" | grep -q "\"times\":{" &&
	       echo "$1" | grep -q "\"wait\":{\"kind\":\"futex\"" && echo "$1" | grep -q "\"role\":\"owner\""' _ "$line"
check "json: no steal clock in the guest: steal_ns is null" \
	sh -c 'echo "$1" | grep -q "\"steal_ns\":null"' _ "$line"
finish
