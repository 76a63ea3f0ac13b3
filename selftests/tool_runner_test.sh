#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A watched program preempted by another program: the report names the task
# that ran in its place and resolves that task's user frames from the other
# program's own maps, which the recorder snapshots when a sample names it
# (before, its frames stayed "[unknown]": only watched processes were read),
# up to the first address outside its code.
. ./tool_lib.sh
need stallcap stallcap-spin-nofp python3 taskset

# the other program: SCHED_FIFO on CPU 0 for 2.5 s, spinning in fixture_spin
# (its own session, a 100 s deadline it never misses)
python3 -c 'import os, sys
os.sched_setaffinity(0, {0})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
os.execvp(sys.argv[1], sys.argv[1:])' stallcap-spin-nofp 2500 100000 &
hog=$!
# running, once python3 has exec'd it: a fixed wait was too short on a
# loaded host (CI73: the watched program ran before the other, 3 times)
hog_runs() { [ "$(cut -d' ' -f2 "/proc/$hog/stat" 2>/dev/null)" = "(stallcap-spin-n)" ]; }
wait_until hog_runs
sleep 0.1
# the watched one, on CPU 0 too: its 20 ms deadline passes while the hog runs
stallcap record -o "$work/pre.data" -- taskset -c 0 stallcap-spin-nofp 300 20
check "record exits 0" [ $? = 0 ]
wait "$hog"
check "the other program exits 0" [ $? = 0 ]
reports pre
check "a sample of the watched program was preempted by the other one" \
	grep -q "^    ran instead on cpu 0: stallcap-spin-n (tid $hog, SCHED_FIFO" "$work/pre.txt"
# its user frames, innermost first: fixture_spin, named from its own binary
check "the frames of the task that ran instead are resolved in its own program" \
	sh -c 'grep -A8 "^    ran instead on cpu 0: stallcap-spin-n (tid $1," "$2" |
	       sed -n "/^      user:/,\$p" | sed -n 2p |
	       grep -q "^      #0  0x[0-9a-f]*  fixture_spin+0x[0-9a-f]*  .*stallcap-spin-nofp\$"' \
	_ "$hog" "$work/pre.txt"
# the module's frame-pointer walk of a program built without frame pointers
# reads garbage past the first frame: cut at the first address outside code
check "and their frame-pointer walk ends at the first address outside its code" \
	sh -c '! grep -A8 "^    ran instead on cpu 0: stallcap-spin-n (tid $1," "$2" |
	       sed -n "/^      user:/,/^    [a-z]/p" | grep -q "\[unknown\]"' \
	_ "$hog" "$work/pre.txt"
finish
