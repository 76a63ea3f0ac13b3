#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rt-tests' cyclictest, unmodified: the measuring loop of a real-time
# program, woken every millisecond by a POSIX timer's signal (-x:
# timer_create() and sigwait()) or paced by clock_nanosleep() (its
# default).  Under `stallcap record --deadline 50ms -- cyclictest ...` the
# measuring thread, waiting in sigwait(), is an event loop: watched (its
# first busy period told: "busy" in the JSON) and never reported (a cycle
# is microseconds of work).  The clock_nanosleep() twin is watched with
# --park; without it the thread never waits in a call the attach counts:
# never watched, and record's hint names it (it used more CPU than a 20 ms
# deadline over its cycles: 0.1 s under TCG).
. ./tool_lib.sh
need stallcap cyclictest awk

cycles=${STALLCAP_CYCLICTEST_LOOPS:-3000}
# run NAME DEADLINE [record options] -- [cyclictest options]
run() {
	name=$1
	deadline=$2
	shift 2
	stallcap record --deadline "$deadline" -o "$work/$name.data" "$@" -q -t1 -i 1000 \
		-l "$cycles" >"$work/$name.out" 2>&1
	echo $? >"$work/$name.rc"
	sed "s/^/# $name: /" "$work/$name.out"
	stallcap report -f json "$work/$name.data" >"$work/$name.json" 2>"$work/$name.err"
}
# busy_threads NAME: the threads (not the main one) told busy
busy_threads() {
	grep '"type":"watch","event":"busy"' "$work/$1.json" |
		sed -n 's/.*"pid":\([0-9]*\),"tid":\([0-9]*\),.*/\1 \2/p' |
		awk '$1 != $2 { print $2 }'
}
nsamples() { grep -c '"type":"sample"' "$work/$1.json"; }
# hinted NAME: the threads record's hint names as never watched
hinted() {
	grep '^stallcap: hint: .* never waited in an event-loop call' "$work/$1.out" |
		grep -o 'cyclictest (tid [0-9]*,' | tr -dc '0-9\n'
}

run sigwait 50ms -- cyclictest -x
check "sigwait: record exits with cyclictest, status 0" [ "$(cat "$work/sigwait.rc")" = 0 ]
check "sigwait: the measuring thread is watched (told busy)" \
	[ "$(busy_threads sigwait | grep -c .)" = 1 ]
check "sigwait: no stall" [ "$(nsamples sigwait)" = 0 ]
# (the main thread, printing between sleeps, is never watched: named when
# its start took more CPU than the deadline, 0.1 s under TCG)
measuring=$(busy_threads sigwait)
check "sigwait: record's hint does not name the measuring thread" \
	sh -c "[ -n '$measuring' ] && ! echo '$(hinted sigwait)' | grep -qx '$measuring'"

run park 50ms --park -- cyclictest
check "clock_nanosleep, --park: record exits with cyclictest, status 0" \
	[ "$(cat "$work/park.rc")" = 0 ]
check "clock_nanosleep, --park: the measuring thread is watched" \
	[ "$(busy_threads park | grep -c .)" = 1 ]
check "clock_nanosleep, --park: no stall" [ "$(nsamples park)" = 0 ]

run nopark 20ms -- cyclictest
check "clock_nanosleep: no thread told busy" [ "$(busy_threads nopark | grep -c .)" = 0 ]
check "clock_nanosleep: no stall" [ "$(nsamples nopark)" = 0 ]
# (a thread that is not the main one: its tid is not the process's, which
# the main thread's watch, made at the attach, says)
pid=$(grep -m1 '"type":"watch","event":"started"' "$work/nopark.json" |
	sed -n 's/.*"pid":\([0-9]*\),.*/\1/p')
echo "# cyclictest: pid $pid"
check "clock_nanosleep: record's hint names the measuring thread" \
	sh -c "[ -n '$pid' ] && echo '$(hinted nopark)' | grep -qvx '$pid'"
finish
