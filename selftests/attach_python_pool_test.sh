#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A pool of worker processes (Python's multiprocessing.Pool, Debian's
# python3.11, the standard library's, unmodified): each worker waits for
# its next job in a blocking read() of the pool's job pipe (behind a
# semaphore, a futex), and the pool's result thread in a read() of the
# result pipe.  The program runs three jobs, 1.5 s apart: the middle one
# spins 0.5 s of Python.  Under `stallcap record --deadline 100ms --park
# --recv` the pipe reads are waits: the spin is a stall of the worker
# process that ran it (running, the eval loop on its stack, from its first
# sample), and no sample is asleep in a pipe read.  With --park alone the
# workers and the result thread are busy in their pipe reads: stalls that
# begin asleep there, and the record's hint advises --recv (how many: a
# worker is watched from its first futex wait, when it found the job
# queue's lock taken; the spin is inside such a stall or its own, when the
# job was in the pipe before the worker read it: CI105).  The same with `record -p PID --children --park --recv`
# on a pool already running, a worker and the result thread inside their
# pipe reads at the attach: the spin is the stall, no pipe read is.
. ./tool_lib.sh
need stallcap python3

cp spin.py "$work/"
cat >"$work/pool.py" <<'PY'
import multiprocessing, os, sys, time
from spin import spin_for

if __name__ == "__main__":
    with multiprocessing.Pool(2) as pool:
        pool.apply(spin_for, (0.001,))
        print("pool", flush=True)
        while len(sys.argv) > 1 and not os.path.exists(sys.argv[1]):
            time.sleep(0.05)        # until the attach is made
        for seconds, pause in ((0.001, 1.5), (0.5, 1.5), (0.001, 0)):
            pool.apply(spin_for, (seconds,))
            time.sleep(pause)
    print("done", flush=True)
PY

# in_pipe_read: a python3 thread is inside a pipe read (its kernel stack)
in_pipe_read() {
	for t in /proc/[0-9]*/task/[0-9]*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = python3 ] &&
			grep -qE '^\[<[0-9a-f]*>\] (anon_)?pipe_read(\.llvm\.[0-9]+)?\+' "$t/stack" 2>/dev/null &&
			return 0
	done
	return 1
}

# run NAME [-p] OPTION...: the program under record (with -p: attached
# once it runs, a thread inside a pipe read); $work/NAME.{out,data,txt,json}
run() {
	name=$1
	shift
	if [ "$1" = -p ]; then
		shift
		python3 "$work/pool.py" "$work/go" >"$work/$name.out" 2>&1 &
		pool=$!
		wait_until grep -qx pool "$work/$name.out"
		check "$name: a thread inside a pipe read before the attach" \
			until_ok in_pipe_read
		stallcap record -v --deadline 100ms "$@" -p "$pool" --children \
			-o "$work/$name.data" >"$work/$name.record" 2>&1 &
		rec=$!
		check "$name: record attached the pool and its workers" \
			reading "$work/$name.record"
		touch "$work/go"
		wait "$pool"
		wait_record "$rec"
		cat "$work/$name.record" >>"$work/$name.out"
	else
		pool=
		stallcap record --deadline 100ms "$@" -o "$work/$name.data" -- \
			python3 "$work/pool.py" >"$work/$name.out" 2>&1
	fi
	check "$name: the pool ran its jobs" grep -qx done "$work/$name.out"
	sed 's/^/# record: /' "$work/$name.out"
	reports "$name"
	# the pool's own process: the first watched (the command run)
	main=${pool:-$(grep -m1 '"type":"watch","event":"started"' "$work/$name.json" |
		sed -n 's/.*"pid":\([0-9]*\),.*/\1/p')}
	echo "# $name: the pool's process $main"
}

# the first sample of a stall of a worker process (not the pool's own
# process: the command run, or the one attached), running Python in the
# eval loop
worker_spin() {
	[ -n "$main" ] &&
		echo "$1" | grep -q '"sample_index":0,' &&
		echo "$1" | grep -q '"state":"running"' &&
		! echo "$1" | grep -q "\"pid\":$main," &&
		usyms "$1" | grep -q '^_PyEval_EvalFrameDefault '
}
# a sample asleep in a pipe read
asleep_in_pipe_read() {
	echo "$1" | grep -q '"state":"sleeping"' && ksyms "$1" | grep -qxE "(anon_)?pipe_read"
}
# ... and its system call: read() of a pipe (what record found the fd open on)
asleep_in_read_of_a_pipe() {
	asleep_in_pipe_read "$1" &&
		echo "$1" | grep -qE '"syscall":\{"nr":0,"name":"read","args":\[[^]]*\],"fd":[0-9]+,"file":"pipe:\[[0-9]+\]"\}'
}
no_sample() { ! any_sample "$@"; }

run recv --park --recv
check "--recv: the job's spin is a stall of a worker, running in the eval loop" \
	any_sample "$work/recv.json" python3 worker_spin '"sample_index":0,'
check "--recv: no sample asleep in a pipe read (the waits for jobs and results)" \
	no_sample "$work/recv.json" python3 asleep_in_pipe_read '"state":"sleeping"'

run park --park
check "--park alone: stalls asleep in the pipe reads" \
	any_sample "$work/park.json" python3 asleep_in_pipe_read '"state":"sleeping"'
check "--park alone: such a sample is in read() of a pipe, as the record says" \
	any_sample "$work/park.json" python3 asleep_in_read_of_a_pipe '"state":"sleeping"'
check "--park alone: the report names the call and the pipe" \
	grep -qE '^    in system call: read, fd [0-9]+ \(pipe:\[[0-9]+\]\)$' "$work/park.txt"
check "--park alone: the hint advises --recv" \
	grep -q '^stallcap: hint: [0-9]* of [0-9]* stalls began with the thread in a socket receive, a pipe or a terminal read: .* record with --recv, ' \
	"$work/park.out"

run attach -p --park --recv
check "-p: the job's spin is a stall of a worker, running in the eval loop" \
	any_sample "$work/attach.json" python3 worker_spin '"sample_index":0,'
check "-p: no sample asleep in a pipe read" \
	no_sample "$work/attach.json" python3 asleep_in_pipe_read '"state":"sleeping"'
finish
