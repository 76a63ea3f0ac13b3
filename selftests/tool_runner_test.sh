#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A watched program preempted by another program: the report names the task
# that ran in its place and resolves that task's user frames from the other
# program's own maps, which the recorder snapshots when a sample names it
# (before, its frames stayed "[unknown]": only watched processes were read),
# up to the first address outside its code.
. ./tool_lib.sh
need stallcap stallcap-spin-nofp python3 taskset mkfifo

# The watched program first, on CPU 0, spinning 3 s past its 20 ms
# deadline; once it runs, the other program: SCHED_FIFO on CPU 0 for 1.5 s
# (the stall's samples at +0.62 and +1.26 s fall in it), spinning in
# fixture_spin (its own session, a 100 s deadline it never misses).  Started
# the other way round, the other program had ended before the watched one
# began on a loaded host (record's start-up reads the kernel's symbols
# first: CI73-CI76, the watched program ran its whole stall unpreempted);
# a SCHED_FIFO task that arrives preempts it at once.  python3 starts
# beforehand and waits on a fifo, so that its own start-up is not in the
# way either.
mkfifo "$work/go"
python3 -c 'import os, sys
open(sys.argv[1]).read(1)
os.sched_setaffinity(0, {0})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
os.execvp(sys.argv[2], sys.argv[2:])' "$work/go" stallcap-spin-nofp 1500 100000 &
hog=$!
# python3 started, asleep in the fifo's open()
hog_waits() { [ "$(proc_state "$hog")" = S ]; }
wait_until hog_waits
stallcap record -o "$work/pre.data" -- taskset -c 0 stallcap-spin-nofp 3000 20 &
rec=$!
# the watched program, once taskset has exec'd it (record's child: a few
# reads, as a scan of /proc by the shell took 2 s on CPU 0 under TCG)
watched=
# a process's children: its children file, or (a kernel without
# CONFIG_PROC_CHILDREN) a scan of /proc for the processes whose parent it is
children_of() {
	local s p pp
	if [ -e "/proc/$1/task/$1/children" ]; then
		cat "/proc/$1/task/$1/children" 2>/dev/null
		return
	fi
	for s in /proc/[0-9]*/stat; do
		read -r p _ _ pp _ <"$s" 2>/dev/null && [ "$pp" = "$1" ] && echo "$p"
	done
}
watched_runs() {
	watched=$(children_of "$rec" | tr '\n' ' ')
	watched=${watched%% *}
	[ -n "$watched" ] &&
		[ "$(cut -d' ' -f2 "/proc/$watched/stat" 2>/dev/null)" = "(stallcap-spin-n)" ]
}
wait_until watched_runs
check "the watched program runs" watched_runs
sleep 0.1
# (a python3 gone would leave the fifo without a reader: no write then)
! kill -0 "$hog" 2>/dev/null || echo go >"$work/go"
wait "$hog"
check "the other program exits 0" [ $? = 0 ]
wait_record "$rec"
check "record exits 0" [ $? = 0 ]
reports pre
check "a sample of the watched program was preempted by the other one" \
	grep -q "^    ran instead on cpu 0: stallcap-spin-n (tid $hog, SCHED_FIFO" "$work/pre.txt"
# its user frames, innermost first: fixture_spin, named from its own binary
# (in a sample of it spinning: the first may find it still in ld.so, just
# exec'd, as on 7.3 in CI77)
check "the frames of the task that ran instead are resolved in its own program" \
	sh -c 'grep -A2 "^    ran instead on cpu 0: stallcap-spin-n (tid $1," "$2" |
	       grep -q "^      #0  0x[0-9a-f]*  fixture_spin+0x[0-9a-f]*  .*stallcap-spin-nofp\$"' \
	_ "$hog" "$work/pre.txt"
# the module's frame-pointer walk of a program built without frame pointers
# reads garbage past the first frame: cut at the first address outside code
check "and their frame-pointer walk ends at the first address outside its code" \
	sh -c '! grep -A8 "^    ran instead on cpu 0: stallcap-spin-n (tid $1," "$2" |
	       sed -n "/^      user:/,/^    [a-z]/p" | grep -q "\[unknown\]"' \
	_ "$hog" "$work/pre.txt"
finish
