#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# An idle reader stays idle: `stallcap record --deadline 1s -p PID` on an
# event loop that never misses it sleeps until a record or an exit comes
# (the session's fd and a pidfd of the process), waking about once a second
# at most, not ten times (it shares a CPU with what it watches).  It still
# ends when the process exits, and on SIGINT (the time each took printed);
# the same with the command it started (`record --deadline -- CMD`); and a
# command that exits inside a stall has that stall's end recorded.
. ./tool_lib.sh
need stallcap python3

# an event loop: poll() every 200 ms, never near the deadline
loop='import select
p = select.poll()
while True:
    p.poll(200)'

# now_cs: CLOCK_BOOTTIME in centiseconds (busybox date has no %N)
now_cs() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
# no_python_running: no python3 process runs (one ended that this shell
# has not reaped is a zombie: ended; the guest has no pgrep)
no_python_running() {
	for d in /proc/[0-9]*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = python3 ] || continue
		awk '{ exit $3 == "Z" }' "$d/stat" 2>/dev/null && return 1
	done
	return 0
}
# vcsw PID: the thread's voluntary context switches (each is one sleep)
vcsw() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$1/status"; }
# ends_within PID CS: PID exits within CS centiseconds (polled every 10 ms)
ends_within() {
	end=$(($(now_cs) + $2))
	while kill -0 "$1" 2>/dev/null && [ "$(now_cs)" -le "$end" ]; do
		sleep 0.01
	done
	! kill -0 "$1" 2>/dev/null
}
attached() { grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats; }
# idle_sleeps ERRFILE WHAT: the reader $rec writing ERRFILE reads records
# and WHAT is attached; then its sleeps over 5 s, checked (at most 10)
idle_sleeps() {
	check "the reader of $2 reads records" reading "$1"
	check "$2 is attached" wait_until attached
	sleep 1
	v0=$(vcsw "$rec")
	sleep 5
	v1=$(vcsw "$rec")
	echo "# reader of $2: $((v1 - v0)) sleeps in 5 s (it polled every 100 ms before: 50)"
	check "the idle reader of $2 sleeps at most 10 times in 5 s" [ $((v1 - v0)) -le 10 ]
}

python3 -c "$loop" &
target=$!
stallcap record -v --deadline 1s -p "$target" -o "$work/idle.data" 2>"$work/idle.err" &
rec=$!
idle_sleeps "$work/idle.err" "-p PID"
# within 2 s: it drains the ring once more and closes its session (0.35 s
# on idle 7.3 and 5.10 guests while it waited 300 ms after the exit for
# stall ends, which the exit itself writes; 0.84 s idle and 2.4-3.1 s
# beside CI117's lanes on 7.3 while the close waited for the attach's
# probes to be removed)
kill "$target"
t0=$(now_cs)
check "it ends within 2 s of the process's exit" ends_within "$rec" 200
echo "# record ended $(($(now_cs) - t0))0 ms after the process was killed"
wait "$rec"
check "and exits 0" [ $? = 0 ]

stallcap record -v --deadline 1s -o "$work/cmd.data" -- python3 -c "$loop" \
	2>"$work/cmd.err" &
rec=$!
idle_sleeps "$work/cmd.err" "-- CMD"
# within 2 s: record's last look at the unwatched threads comes before it
# sends the SIGINT on to its command, a Python program whose
# KeyboardInterrupt and exit follow, then the session's close (1.8-3.4 s on
# 7.3 beside CI117's lanes while the close removed the probes; 0.12-0.2 s on
# an idle 7.3 or 5.10 guest since)
kill -INT "$rec"
t0=$(now_cs)
check "SIGINT ends it within 2 s, its command too" ends_within "$rec" 200
echo "# record and its command ended $(($(now_cs) - t0))0 ms after the SIGINT"
wait "$rec"
check "no python3 left" no_python_running

# a stall that its process's exit ends: record stops once the process is
# gone, without waiting, and still has the stall's end (written by the
# thread's exit, before the process could be reaped)
spin='import select, os, time
select.select([], [], [], 0.01)
t = time.monotonic()
while time.monotonic() - t < 0.5:
    pass
os._exit(0)'
# (--no-inherit: record does not wait for the session's attached watches
# to be freed either, its only wait when followed processes might run)
for opt in "" --no-inherit; do
	t0=$(now_cs)
	stallcap record -v --deadline 50ms $opt -o "$work/exit.data" -- \
		python3 -c "$spin" 2>"$work/exit.err"
	check "record ${opt:+$opt }of a program that exits inside its stall exits 0" [ $? = 0 ]
	echo "# record ${opt:+$opt }of the 0.5 s spin took $(($(now_cs) - t0))0 ms in all"
	sed 's/^/# /' "$work/exit.err"
	stallcap report -f json "$work/exit.data" >"$work/exit.json"
	check "${opt:+$opt: }the stall that the exit ended is recorded, ended" \
		grep -q '"type":"stall".*"ended":true' "$work/exit.json"
done
finish
