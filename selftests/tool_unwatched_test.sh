#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A thread that never waits in an event-loop call is never watched by
# `record --deadline`, however long it runs: a pool's worker fed through a
# condition variable (Apache's event MPM without --park), a thread that
# only computes.  record names such threads that used more CPU than the
# deadline, so that their stalls are not missed in silence.  Here Python's
# main thread waits once in select() (watched) and starts a worker that
# computes for two seconds without a system call (the clock read in the
# vDSO) while main joins it: the hint names the worker, and only it; a
# command that only sleeps gets no hint.
. ./tool_lib.sh
need stallcap python3

prog='
import select, threading, time
select.select([], [], [], 0.05)
def spin():
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        pass
t = threading.Thread(target=spin)
t.start()
print(t.native_id, flush=True)
t.join()
'
stallcap record --deadline 50ms -o "$work/a.data" -- python3 -c "$prog" \
	>"$work/a.out" 2>"$work/a.err"
check "record exits 0" [ $? = 0 ]
sed 's/^/# /' "$work/a.err"
worker=$(cat "$work/a.out")
check "the hint names the worker, never watched, and advises --park" \
	grep -q "^stallcap: hint: 1 thread of the watched processes never waited in an event-loop call, so it was never watched, and used more CPU than the deadline while recording: python3 (tid $worker, [0-9.]* s) (workers fed by another thread through a condition variable are watched with --park)$" \
	"$work/a.err"

stallcap record --deadline 50ms -o "$work/c.data" -- sh -c 'sleep 2; sleep 1' 2>"$work/c.err"
sed 's/^/# /' "$work/c.err"
check "a command that only sleeps gets no hint" \
	sh -c "! grep -q 'never waited' '$work/c.err'"
finish
