#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Erlang/OTP, unmodified, under `stallcap record --park --deadline 30ms --
# erl +JPperf true ...`: a process that keeps a scheduler thread busy for
# 800 ms in native code the BEAM's JIT made (erlang/stall.erl's busy/2) is
# a stall of that scheduler, each sample's frames named
# through /tmp/perf-PID.map, the map the JIT writes (+JPperf true also
# keeps frame pointers in its code, which the walk follows through the
# Erlang frames to the callers run/1 and worker/2, and ends at the bottom
# of the process's stack, which the report says: "jit_chain_end", not
# "jit_code").  The busy process is bound to scheduler 1 (spawn_opt's
# {scheduler, 1}): unbound, BEAM moved it between its two schedulers
# (busy/2 in stalls of both), as any M:N runtime may: a thread's deadline
# then sees pieces.  Schedulers do not poll I/O (+IOs false): by default
# a scheduler may take the poll set over from the poll thread, and the one
# running the busy process then called epoll_wait(fd, ..., 0) every 0.6 ms
# between its time slices (strace in the guest, 2 to 6 runs of 24): an
# event loop's iterations, rightly no stall (the loop is responsive), and
# with one scheduler (+S 1) always so.
# The schedulers' busy wait before they sleep is off (+sbwt none and the
# dirty schedulers' too, as latency-minded deployments run BEAM: with it,
# 10 dirty I/O schedulers yielding to each other on 2 vCPUs are stalls,
# preempted, at the start); their sleeps are futex waits, which --park
# counts as idle: no sample finds a thread asleep in one.  Then the same
# node started alone and attached while it runs (`record -p PID --park`:
# its schedulers asleep on futexes at the attach), which catches the same
# stall the same way.  Then once more with the busy wait on, at its longest
# (+sbwt very_long, as for throughput): the schedulers yielding to each
# other are stalls, and the report says they are a busy wait (its hint).
. ./tool_lib.sh
need stallcap erl
[ -f erlang/stall.beam ] || { echo "1..0 # SKIP erlang/stall.beam not built"; exit 4; }

stallcap record --park --deadline 30ms --samples 8 -o "$work/erl.data" -- \
	erl -noshell +JPperf true +IOs false +sbwt none +sbwtdcpu none +sbwtdio none -pa "$PWD/erlang" \
	-run stall main 800 >"$work/record.out" 2>&1 &
rec=$!
wait_record "$rec"
rc=$?
check "record ends with the program (status $rc)" [ "$rc" = 0 ]
sed 's/^/# record: /' "$work/record.out"
reports erl
show "$work/erl.txt" | head -n 60
beam=$(grep -o '"type":"sample","stall_id":[0-9]*,"pid":[0-9]*' "$work/erl.json" | head -n 1 |
	sed 's/.*"pid"://')
check "the JIT wrote /tmp/perf-$beam.map" [ -s "/tmp/perf-$beam.map" ]

# the stalls, by thread: one scheduler's, and no other thread's
grep -o '"type":"stall".*"comm":"[^"]*"' "$work/erl.json" | sed 's/.*"comm":"\([^"]*\)"/\1/' |
	sort | uniq -c | sed 's/^/# stalls of /'
# with --park a thread asleep in a futex wait is idle: never a sample
asleep_in_futex() {
	echo "$1" | grep -q '"state":"\(sleeping\|uninterruptible\)"' &&
		ksyms "$1" | grep -q 'futex_wait'
}
grep '"type":"sample"' "$work/erl.json" >"$work/all"
asleep=0
while read -r line; do
	! asleep_in_futex "$line" || asleep=$((asleep + 1))
done <"$work/all"
check "no sample finds a thread asleep in a futex wait (got $asleep)" [ "$asleep" = 0 ]
# the stalls of busy/2: all of scheduler 1, where it is bound
busy_stalls=$(grep '"type":"sample"' "$work/erl.json" |
	grep -E '"sym":"\$stall:busy/2(-CodeInfoPrologue)?"' |
	awk '{ match($0, /"stall_id":[0-9]+/); id = substr($0, RSTART + 11, RLENGTH - 11)
		match($0, /"comm":"[^"]*"/); print id, substr($0, RSTART + 8, RLENGTH - 9) }' |
	sort -u)
echo "# stalls with busy/2: $(echo "$busy_stalls" | tr '\n' ' ')"
check "busy/2 is a stall" [ -n "$busy_stalls" ]
check "of scheduler 1 only" [ "$(echo "$busy_stalls" | cut -d' ' -f2 | sort -u)" = 1_scheduler ]
sched=1_scheduler
samples "$work/erl.json" "$sched" | while read -r line; do
	echo "# sample: $(uframes "$line" | head -n 5 | tr '\t\n' '@|')"
done
# frame 0 is busy/2, named by the perf map, its callers run/1 and worker/2.
# A sample at busy/2's entry, which each of its tail calls jumps to, is in
# the map's "$stall:busy/2-CodeInfoPrologue" (BEAM's function header, whose
# last bytes are the entry), or at busy/2+0x0: there the function has not
# yet pushed its frame pointer, and frame pointers lead from it to worker/2,
# past run/1 (as for perf; under TCG, which takes interrupts at the start of
# a block of code only, most samples of the loop land there: CI88's first
# try on 5.10 had 2 such samples of the stall's 4 and none in the body).
# Since stop 67 (2026-12-04) the report takes the return address at the stack
# pointer there (tools/stallcap/unwind.c, jit_entry_return()): run/1 is
# under busy/2 in every sample, at the entry as in the body.
# the innermost user frame of a JSON sample line: "sym":...,"off":N,"dso":...
frame0() { echo "$1" | sed 's/.*"user_stack":\[{\([^}]*\)}.*/\1/'; }
in_busy_body() {
	frame0 "$1" | grep -q '"sym":"\$stall:busy/2","off":[1-9][0-9]*,"dso":"\[perf-map\]"'
}
in_busy_entry() {
	frame0 "$1" | grep -qE '"sym":"\$stall:busy/2(-CodeInfoPrologue","off":[0-9]+|","off":0),"dso":"\[perf-map\]"'
}
in_busy() { in_busy_body "$1" || in_busy_entry "$1"; }
busy_then_callers() {
	in_busy "$1" && uframes "$1" | in_order '$stall:busy/2' '$stall:run/1' '$stall:worker/2'
}
# every sample in busy/2 has run/1 right under it
busy_without_run() {
	in_busy "$1" && [ "$(uframes "$1" | sed -n 2p | cut -f1)" != '$stall:run/1' ]
}
entry_samples=0
while read -r line; do
	! in_busy_entry "$line" || entry_samples=$((entry_samples + 1))
done <"$work/all"
echo "# samples at busy/2's entry: $entry_samples"
check "a sample's innermost frame is the JIT's busy/2, named by the perf map" \
	any_sample "$work/erl.json" "$sched" in_busy
check "under it run/1 and worker/2, through the JIT's frame pointers" \
	any_sample "$work/erl.json" "$sched" busy_then_callers
no_sample() { ! any_sample "$@"; }
check "no sample in busy/2, at its entry or in its body, lacks run/1 under it" \
	no_sample "$work/erl.json" "$sched" busy_without_run
# the bottom frame: the return address BEAM puts under a process's first
# function, erts_beamasm:normal_exit/0's first byte (named from the byte
# before it, its header, before stop 67)
chain_end() {
	busy_then_callers "$1" && echo "$1" | grep -q '"user_walk_end":"jit_chain_end"' &&
		[ "$(uframes "$1" | tail -n 1 | cut -f1)" = '$erts_beamasm:normal_exit/0' ]
}
check "the walk ends where the process's stack does, at normal_exit/0, and says so (jit_chain_end)" \
	any_sample "$work/erl.json" "$sched" chain_end
rm -f "/tmp/perf-$beam.map" "/tmp/jit-$beam.dump"

# attached to a running node, idle until the file $work/go exists
erl -noshell +JPperf true +IOs false +sbwt none +sbwtdcpu none +sbwtdio none -pa "$PWD/erlang" \
	-run stall main 800 "$work/go" >"$work/node.out" 2>&1 &
node=$!
wait_until pidof beam.smp
beam=$(pidof beam.smp)
stallcap record --park --deadline 30ms --samples 8 -v -p "$beam" -o "$work/att.data" \
	>"$work/att.out" 2>&1 &
rec=$!
check "record attached to the running node" reading "$work/att.out"
touch "$work/go"
wait "$node"
wait_record "$rec"
rc=$?
check "record ends with the node (status $rc)" [ "$rc" = 0 ]
sed 's/^/# record: /' "$work/att.out" | grep -v 'watch \(started\|ended\)' | head -n 20
stallcap report "$work/att.data" 2>/dev/null | grep '^stall \|      #0 ' | head -n 30 | sed 's/^/# /'
stallcap report -f json "$work/att.data" >"$work/att.json"
attached_busy() {
	in_busy "$1" && echo "$1" | grep -q '"origin":"attached"'
}
check "attached: the busy process is a stall of a scheduler, frame 0 busy/2, by the perf map" \
	any_sample "$work/att.json" "$sched" attached_busy
check "attached: under it run/1 and worker/2" \
	any_sample "$work/att.json" "$sched" busy_then_callers
rm -f "/tmp/perf-$beam.map" "/tmp/jit-$beam.dump"

stallcap record --park --deadline 50ms --samples 3 -o "$work/spin.data" -- \
	erl -noshell +sbwt very_long +sbwtdcpu very_long +sbwtdio very_long -pa "$PWD/erlang" \
	-run stall main 100 >"$work/spin.out" 2>&1 &
wait_record $!
stallcap report "$work/spin.data" >"$work/spin.txt" 2>"$work/spin.err"
grep -c '^stall ' "$work/spin.txt" | sed 's/^/# stalls with the busy wait on: /'
show "$work/spin.txt" | head -n 80
sed 's/^/# report: /' "$work/spin.err"
yielding=$(sed -n 's/.*hint: \([0-9]*\) of [0-9]* stalls found their thread in sched_yield() at every sample: a busy wait.*/\1/p' \
	"$work/spin.err")
check "with the busy wait on, yielding schedulers are stalls the report calls a busy wait ($yielding)" \
	[ "${yielding:-0}" -ge 1 ]
finish
