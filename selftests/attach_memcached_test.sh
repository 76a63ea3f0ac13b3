#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's memcached, unmodified and multi-threaded (a listener and four
# worker threads, each with its own libevent loop), started by
# `stallcap record --deadline 250ms --cputime -- memcached ...` (CPU time
# only: a worker preempted on the emulated guest's two vCPUs is not a
# stall).  One multiget of 50,000 keys keeps the worker that serves that
# connection busy far past the deadline.  Only that worker's thread is
# reported, in its event loop (event_base_loop of libevent); the listener,
# the other workers and the maintenance threads (which never wait in epoll)
# are not.  (attach_test covers threads created after the attach.)
. ./tool_lib.sh
need stallcap memcached nc awk

port=11299
# 1s on the debug kernel (scripts/vmtest.sh): there an ordinary request's
# first iteration in a worker took up to 220 ms of CPU (TCG translating the
# code for the first time, under KASAN), the multiget 7.7 s and more.
# 250 ms elsewhere: a worker's first loop took 123 ms of CPU on 6.12 under
# CI's load (CI114), the multiget 1-1.7 s.
deadline=${STALLCAP_MEMCACHED_DEADLINE:-250ms}
stallcap record --deadline "$deadline" --cputime -o "$work/mc.data" -- \
	memcached -u root -l 127.0.0.1 -p "$port" -t 4 -U 0 >"$work/record.out" 2>&1 &
rec=$!
i=0
until echo version | nc 127.0.0.1 "$port" 2>/dev/null | grep -q VERSION; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || break
	sleep 0.1
done
check "memcached answers" sh -c "echo version | nc 127.0.0.1 $port | grep -q VERSION"
mc=$(pidof memcached)
check "memcached has 4 mc-worker threads" \
	[ "$(cat /proc/$mc/task/*/comm | grep -c '^mc-worker$')" = 4 ]

# ordinary requests (two per worker): no stall; a worker that was inside
# epoll_wait at the attach counts as idle until it enters its next wait
for k in 1 2 3 4 5 6 7 8; do
	printf 'set k%s 0 0 5\r\nhello\r\nget k%s\r\nquit\r\n' "$k" "$k" |
		nc 127.0.0.1 "$port" >/dev/null
done
# the stall: one request line with 50,000 keys
awk 'BEGIN { printf "get"; for (i = 0; i < 50000; i++) printf " key%d", i
	printf "\r\nquit\r\n" }' | nc 127.0.0.1 "$port" >"$work/multiget.out"
check "the multiget is answered" grep -q '^END' "$work/multiget.out"
sleep 0.5

kill "$mc"
wait_record "$rec"
rc=$?
# memcached exits 0 on SIGTERM (or by the signal: 143)
check "record exits when memcached does, with its status" [ "$rc" = 0 -o "$rc" = 143 ]
sed 's/^/# record: /' "$work/record.out"

stallcap report "$work/mc.data" >"$work/report.txt" 2>"$work/report.err"
stallcap report -f json "$work/mc.data" >"$work/report.json"
show "$work/report.txt"
sed 's/^/# report: /' "$work/report.err"

grep '"type":"sample"' "$work/report.json" >"$work/samples"
tids=$(sample_tids "$work/samples")
in_loop() { usyms "$1" | grep -q '^event_base_loop '; }
check "the stalled worker is reported" any_sample "$work/report.json" mc-worker in_loop event_base_loop
check "only one thread is reported" [ "$(echo "$tids" | grep -c .)" = 1 ]
check "and it is a worker thread" \
	sh -c "! grep -v '\"comm\":\"mc-worker\"' '$work/samples' | grep -q ."
# (by the samples' own tids: a worker's sample may name the main thread as
# the task that ran instead of it, CI64)
check "the listener (the main thread) is never reported" \
	sh -c "! echo '$tids' | grep -qx '$mc'"
# Debian strips memcached and libc of their symbol tables: the worker's
# frames in them (its own functions, start_thread) have no name, and the
# report's hint names those files
files=$(unnamed_files "$work/report.json")
echo "# frames without a name in: $(echo $files)"
check "some of the worker's frames have no name" [ -n "$files" ]
check "the report's hint names the files they are in" \
	hint_names_files "$work/report.err" "$files"

# a server that does not end by itself: --duration ends the run and the
# server with it (SIGTERM, as timeout(1) gives it; record waited for the
# server's own end before, reading nothing meanwhile), into /dev/null
t0=$(date +%s)
stallcap record --deadline "$deadline" -d 2 -o /dev/null -- \
	memcached -u root -l 127.0.0.1 -p "$((port + 1))" -t 4 -U 0 >"$work/duration.out" 2>&1
rc=$?
sed 's/^/# record -d 2: /' "$work/duration.out"
check "record -d 2 -- memcached ends within 30 s" [ $(($(date +%s) - t0)) -lt 30 ]
check "with memcached's status (0, or 143 by SIGTERM)" [ "$rc" = 0 -o "$rc" = 143 ]
check "and memcached is gone" sh -c '! pidof memcached'
check "/dev/null is still the character device" [ -c /dev/null ]
finish
