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
# begin asleep there (the spin inside one of them), and the record's hint
# advises --recv.
. ./tool_lib.sh
need stallcap python3

cp spin.py "$work/"
cat >"$work/pool.py" <<'PY'
import multiprocessing, time
from spin import spin_for

if __name__ == "__main__":
    with multiprocessing.Pool(2) as pool:
        for seconds, pause in ((0.001, 1.5), (0.5, 1.5), (0.001, 0)):
            pool.apply(spin_for, (seconds,))
            time.sleep(pause)
    print("done", flush=True)
PY

# run NAME OPTION...: the program under record; $work/NAME.{out,data,txt,json}
run() {
	name=$1
	shift
	stallcap record --deadline 100ms "$@" -o "$work/$name.data" -- \
		python3 "$work/pool.py" >"$work/$name.out" 2>&1
	check "$name: the pool ran its jobs" grep -qx done "$work/$name.out"
	sed 's/^/# record: /' "$work/$name.out"
	reports "$name"
	# the pool's own process: the first watched (the command run)
	main=$(grep -m1 '"type":"watch","event":"started"' "$work/$name.json" |
		sed -n 's/.*"pid":\([0-9]*\),.*/\1/p')
	echo "# $name: the pool's process $main"
}

# the first sample of a stall of a worker process (not the pool's own
# process, the first to start a watch), running Python in the eval loop
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
no_sample() { ! any_sample "$@"; }

run recv --park --recv
check "--recv: the job's spin is a stall of a worker, running in the eval loop" \
	any_sample "$work/recv.json" python3 worker_spin '"sample_index":0,'
check "--recv: no sample asleep in a pipe read (the waits for jobs and results)" \
	no_sample "$work/recv.json" python3 asleep_in_pipe_read '"state":"sleeping"'

run park --park
check "--park alone: stalls asleep in the pipe reads" \
	any_sample "$work/park.json" python3 asleep_in_pipe_read '"state":"sleeping"'
check "--park alone: no stall begins with the spin (it is inside a pipe read's)" \
	no_sample "$work/park.json" python3 worker_spin '"sample_index":0,'
check "--park alone: the hint advises --recv" \
	grep -q '^stallcap: hint: [0-9]* of [0-9]* stalls began with the thread in a socket receive or a pipe read: .* record with --recv, ' \
	"$work/park.out"
finish
