#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tools/examples/event_loop: its slow handler is caught with heartbeat marks
# (inline stores of libstallcap), with per-event deadlines (REARM) and with
# shared deadlines (inline stores, no system call); its session is
# close-on-exec.
. ./tool_lib.sh
need stallcap event_loop stallcap-spin-nofp

in_handler() { usyms "$1" | in_order handle_tick main; }

# stalls_match OUT JSON LATE_MS: one ended stall per iteration that the
# program itself measured busy past its 20 ms threshold by more than LATE_MS
# (how late the mode may detect), none for one under the threshold; the
# ones in between (a TCG guest preempts a 1 ms handler, too) may go either
# way.
stalls_match() {
	must=$(awk -v l="$3" '$4 == "busy" && $5 > (20 + l) * 1000' "$1" | grep -c .)
	maybe=$(awk -v l="$3" '$4 == "busy" && $5 > 20000 && $5 <= (20 + l) * 1000' "$1" | grep -c .)
	ended=$(grep -c '"type":"stall_end"' "$2")
	stalls=$(grep '"type":"sample"' "$2" | grep -c '"sample_index":0[,}]')
	echo "# $1: $must stalls due, $maybe may be, $ended ended, $stalls first samples"
	[ "$must" -ge 3 ] && [ "$ended" -ge "$must" ] &&
		[ "$ended" -le $((must + maybe)) ] && [ "$stalls" = "$ended" ]
}

stallcap record -o "$work/hb.data" -- event_loop -n 15 -t 20 -s 80 >"$work/hb.out"
check "heartbeat: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/hb.data" >"$work/hb.json"
check "heartbeat: stalls reported with the heartbeat clock" grep -q '"clock":"heartbeat"' "$work/hb.json"
check "heartbeat: caught in handle_tick" any_sample "$work/hb.json" event_loop in_handler
# a heartbeat is checked every threshold / 4
check "heartbeat: one stall per busy iteration" stalls_match "$work/hb.out" "$work/hb.json" 15

stallcap record -o "$work/dl.data" -- event_loop -d -n 15 -t 20 -s 80 >"$work/dl.out"
check "deadline: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/dl.data" >"$work/dl.json"
check "deadline: caught in handle_tick" any_sample "$work/dl.json" event_loop in_handler
check "deadline: idle waits are not reported" \
	sh -c "! grep '\"type\":\"sample\"' '$work/dl.json' | grep -q epoll_wait"
check "deadline: one stall per busy iteration" stalls_match "$work/dl.out" "$work/dl.json" 10

stallcap record -o "$work/sd.data" -- event_loop -S -n 15 -t 20 -s 80 >"$work/sd.out"
check "shared deadline: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/sd.data" >"$work/sd.json"
check "shared deadline: stalls reported with the shared clock" grep -q '"clock":"shared"' "$work/sd.json"
check "shared deadline: caught in handle_tick" any_sample "$work/sd.json" event_loop in_handler
# no stall begins in epoll_wait; a later sample of a real stall may catch
# the loop there: the module learns of its one-store "idle" only at its
# next check, and a capture already under way (an NMI to the loop's CPU)
# finds it waiting (REARM and DISARM, system calls, cannot race that way)
check "shared deadline: idle waits are not reported" \
	sh -c "! grep '\"type\":\"sample\"' '$work/sd.json' | grep '\"sample_index\":0[,}]' | grep -q epoll_wait"
grep '"type":"sample"' "$work/sd.json" | grep epoll_wait | cut -c1-300 | sed 's/^/# in epoll_wait: /'
# three slow handlers of 80 ms over a 20 ms deadline: (at least) three stalls
check "shared deadline: one stall per busy iteration" stalls_match "$work/sd.out" "$work/sd.json" 10

# the same in TSC ticks (-T: STALLCAP_ARM_DEADLINE_TSC, one RDTSC and a
# store; the guests' TSC is their clocksource): the deadlines the module
# converted are the loop's, so the same stalls, each caught in the handler
stallcap record -o "$work/tsc.data" -- event_loop -T -n 15 -t 20 -s 80 >"$work/tsc.out"
check "shared deadline in TSC ticks: record exits 0" [ $? = 0 ]
stallcap report -f json "$work/tsc.data" >"$work/tsc.json"
check "shared deadline in TSC ticks: stalls reported with the shared clock" \
	grep -q '"clock":"shared"' "$work/tsc.json"
check "shared deadline in TSC ticks: caught in handle_tick" \
	any_sample "$work/tsc.json" event_loop in_handler
check "shared deadline in TSC ticks: idle waits are not reported" \
	sh -c "! grep '\"type\":\"sample\"' '$work/tsc.json' | grep '\"sample_index\":0[,}]' | grep -q epoll_wait"
check "shared deadline in TSC ticks: one stall per busy iteration" \
	stalls_match "$work/tsc.out" "$work/tsc.json" 10

# --defer-user: the user stack copied on the way back to user space; a
# module built without task_work_add() refuses it, and the tool says why
stallcap record -D -o "$work/du.data" -- event_loop -d -n 15 -t 20 -s 80 \
	>"$work/du.out" 2>"$work/du.err"
rc=$?
if [ "${STALLCAP_TEST_NO_TASK_WORK:-0}" = 1 ]; then
	check "defer-user refused: record exits non-zero" [ $rc != 0 ]
	check "defer-user refused: the tool says why" \
		grep -q -- "--defer-user: .*task_work_add" "$work/du.err"
	check "defer-user refused: the program did not run" [ ! -s "$work/du.out" ]
else
	check "defer-user: record exits 0" [ $rc = 0 ]
	stallcap report -f json "$work/du.data" >"$work/du.json"
	check "defer-user: caught in handle_tick" any_sample "$work/du.json" event_loop in_handler
fi
show "$work/du.err"

# the library opens its session O_CLOEXEC (flags in fdinfo are octal)
event_loop -S -n 30 >/dev/null &
pid=$!
cloexec() {
	for fd in /proc/$pid/fd/*; do
		[ "$(readlink "$fd")" = /dev/stallcap ] || continue
		flags=$(sed -n 's/^flags:[[:space:]]*//p' "/proc/$pid/fdinfo/${fd##*/}")
		[ $(( 0$flags & 02000000 )) != 0 ] && return 0
	done
	return 1
}
# (until_ok: a loaded guest may take a while to open the session)
check "the session fd is close-on-exec" until_ok cloexec
wait $pid

# --duration ends the run, and its command with it (SIGTERM, as timeout(1)
# gives it): before, record waited for the command's own end, reading
# nothing meanwhile.  -o names a device or a FIFO: written to, not moved
# aside as FILE.old (before, /dev/null was renamed and replaced by a file)
t0=$(date +%s)
stallcap record -d 1 -o /dev/null -- sleep 120
check "record -d 1 -- sleep 120 ends within 20 s" [ $(($(date +%s) - t0)) -lt 20 ]
check "and leaves /dev/null the character device it was" [ -c /dev/null ]
check "with no /dev/null.old" [ ! -e /dev/null.old ]
mkfifo "$work/out.fifo"
cat "$work/out.fifo" >"$work/from.fifo" &
reader=$!
stallcap record -d 1 -o "$work/out.fifo" -- event_loop -d -n 5 -t 20 -s 80 >/dev/null
wait $reader
check "-o FIFO: the reader got the recording, the FIFO stayed" \
	sh -c '[ -p "$1/out.fifo" ] && [ ! -e "$1/out.fifo.old" ] &&
	       stallcap report -f json "$1/from.fifo" | grep -q "\"type\":\"stall\""' _ "$work"

# a command that shares the session writes a tail the ring cannot have
# (past its head; the fixture spins 120 s under a deadline it never
# misses): the reader refuses the ring, and says so; the run ends, and the
# command with it (before: a silent stop, then a wait for the command's
# own end)
t0=$(date +%s)
FIXTURE_BREAK_RING=1 stallcap record -o "$work/bad.data" -- stallcap-spin-nofp 120000 600000 \
	2>"$work/bad.err"
rc=$?
show "$work/bad.err"
check "a ring made unreadable: record says why, and ends with its command within 20 s" \
	sh -c '[ "$1" != 0 ] && [ "$2" -lt 20 ] &&
	       grep -q "reading records stopped: Bad message" "$3"' _ "$rc" $(($(date +%s) - t0)) "$work/bad.err"
finish
