#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A thread that never waits in an event-loop call is never watched by
# `record --deadline`, however long it runs: a pool's worker fed through a
# condition variable (Apache's event MPM without --park), a thread that
# only computes.  record names such threads that used more CPU than the
# deadline, so that their stalls are not missed in silence.  Here Python's
# main thread waits once in select() (watched) and starts a worker that
# computes for two seconds without a system call (the clock read in the
# vDSO) while main joins it: the hint names the worker, and only it; the
# same for a child process it forks, which computes while the parent
# waits for its end in select(); a command that only sleeps gets no hint.
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
check "the hint names the worker, never watched, and advises --park and --recv" \
	grep -q "^stallcap: hint: 1 thread of the watched processes never waited in an event-loop call, so it was never watched, and used more CPU than the deadline while recording: python3 (tid $worker, [0-9.]* s) (workers fed by another thread through a condition variable are watched with --park) (a thread per connection that waits for requests in a blocking socket receive, a worker process fed through a pipe, is watched with --recv)$" \
	"$work/a.err"

# a process the watched one forks, followed by the module, that computes
# without ever waiting (a parallel query's worker): its thread has a watch
# (each thread of a followed process gets one) that never sees a busy
# period (no STALLCAP_WATCH_BUSY record): never watched in effect
prog='
import os, select, sys, time
select.select([], [], [], 0.05)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        pass
    os._exit(0)
os.close(w)
print(pid, flush=True)
select.select([r], [], [])
os.waitpid(pid, 0)
'
stallcap record --deadline 50ms -o "$work/b.data" -- python3 -c "$prog" \
	>"$work/b.out" 2>"$work/b.err"
check "record exits 0 (a forked child)" [ $? = 0 ]
sed 's/^/# /' "$work/b.err"
child=$(cat "$work/b.out")
check "the hint names the forked child, never watched" \
	grep -q "^stallcap: hint: 1 thread of the watched processes never waited in an event-loop call, so it was never watched, and used more CPU than the deadline while recording: python3 (tid $child, [0-9.]* s)" \
	"$work/b.err"

# (a deadline over what starting a program costs on the debug kernel,
# 0.1 s of CPU: that start is a stretch of running that no wait precedes)
stallcap record --deadline 500ms -o "$work/c.data" -- sh -c 'sleep 2; sleep 1' 2>"$work/c.err"
sed 's/^/# /' "$work/c.err"
check "a command that only sleeps gets no hint" \
	sh -c "! grep -q 'never waited' '$work/c.err'"
finish
