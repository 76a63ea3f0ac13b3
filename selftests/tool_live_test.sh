#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A watchdog's view of a deadlock: stallcap-deadlock's two threads take two
# mutexes in opposite orders and block forever.  While they are blocked (the
# stall has no end), the live `stallcap report` (text and JSON) must already
# show the stall as ongoing with its samples, and `stallcap top -b` must show
# the threads stalled right now: blocked, a futex wait in the kernel stack,
# glibc's lock-wait function (__lll_lock_wait: the program is static, so its
# symbol table names it) as the innermost user frame.  A thread blocked for
# good never returns to user space, so its own samples carry that frame (the
# registers of its system call) and not a walk of its stack; the stack of
# the lock holder, which the why-chain reads, shows lock_pair.  The main
# thread, which waits for SIGUSR1 in sigwait() (a wait the attach counts)
# and then joins locker-ab, is stalled too: the first and worst of the three.
. ./tool_lib.sh
need stallcap stallcap-deadlock

stallcap-deadlock >"$work/dl.out" &
dl=$!
sleep 0.2
stallcap report --deadline 20ms -p "$dl" >"$work/live.txt" 2>"$work/live.err" &
rep=$!
stallcap report -f json --deadline 20ms -p "$dl" >"$work/live.json" 2>"$work/json.err" &
json=$!
stallcap top -b -n 8 --deadline 20ms -p "$dl" >"$work/top.txt" 2>"$work/top.err" &
top=$!

watching() { [ "$(grep -c "^watch started" "$work/live.txt")" -ge 3 ] &&
	[ "$(grep -c '"type":"watch"' "$work/live.json")" -ge 3 ] &&
	grep -q "^threads watched 3," "$work/top.txt"; }
check "report, report -f json and top watch the 3 threads" until_ok watching

# block FILE COMM: the last stall of thread COMM printed as ongoing, its
# first block and the blocks of its later samples (earlier stalls of its
# poll loop, preempted in a loaded guest, may come first, and may have been
# printed as ongoing before they ended)
block() {
	awk -v comm="($2)" '
		/^stall [0-9]+ of tid .* on cpu / {
			inside = index($0, comm) > 0 ? 1 : 0; cur = $2; cap = "" }
		/^stall [0-9]+ of tid .*, (ongoing|ended): samples / {
			inside = (index($0, comm) > 0 && $2 == id) ? 2 : 0 }
		/^$/ { if (inside == 1 && cap ~ /ongoing \(no end yet\)/) { last = cap; id = cur }
			inside = 0 }
		inside == 1 { cap = cap $0 "\n" }
		inside == 2 { last = last $0 "\n" }
		END { printf "%s", last }' "$1"
}
# the JSON sample lines of the last ongoing stall of locker-ab
json_stall() {
	line=$(grep '"type":"stall"' "$1" | grep '"comm":"locker-ab"' | grep '"ongoing":true' | tail -n 1)
	jid=$(echo "$line" | sed -n 's/.*"stall_id":\([0-9]*\),.*/\1/p')
	[ -n "$jid" ] && grep '"type":"sample"' "$1" | grep "\"stall_id\":$jid,"
}

kill -USR1 "$dl"
# the stall may begin in the barrier wait before the locks (a slow guest):
# wait for a sample in the lock wait itself
ongoing() { block "$work/live.txt" locker-ab | grep -q "__lll_lock_wait+0x" &&
	json_stall "$work/live.json" | grep -q '"sym":"__lll_lock_wait"'; }
check "the deadlocked thread is reported while it lasts" until_ok ongoing
sleep 0.5
# a copy as it stands: both programs still running, the threads still stuck
cp "$work/live.txt" "$work/now.txt"
cp "$work/live.json" "$work/now.json"
check "the reports are still running" kill -0 "$rep" "$json"
check "the program is still deadlocked" kill -0 "$dl"
show "$work/now.txt"

ab=$(block "$work/now.txt" locker-ab)
id=$(echo "$ab" | sed -n 's/^stall \([0-9]*\) of tid .*/\1/p' | head -n 1)
echo "# the deadlock: stall ${id:-?} of locker-ab"
check "locker-ab: a stall marked ongoing" [ -n "$id" ]
check "locker-ab: no end printed for it" \
	sh -c '! grep -q "^stall $2 of tid .*(locker-ab) ended" "$1"' _ "$work/now.txt" "$id"
check "locker-ab: samples of it blocked" \
	sh -c 'echo "$1" | grep -qE "^  sample [0-9]+ at .*, blocked in kernel \((sleeping|uninterruptible)\)"' _ "$ab"
check "locker-ab: a futex wait in its kernel stack" \
	sh -c 'echo "$1" | sed -n "/^    kernel:/,/^    user/p" | grep -q futex' _ "$ab"
check "locker-ab: the lock-wait function as its user frame" \
	sh -c 'echo "$1" | grep -A1 "^    user" | grep -qE "^      #0  0x[0-9a-f]+  __lll_lock_wait\+0x"' _ "$ab"
check "locker-ab: the lock holder's user stack shows lock_pair" \
	sh -c 'echo "$1" | grep -q "owner (hop 1): locker-ba" && echo "$1" | grep -q " lock_pair+0x"' _ "$ab"
check "locker-ba: an ongoing stall too" [ -n "$(block "$work/now.txt" locker-ba)" ]

line=$(grep '"type":"stall"' "$work/now.json" | grep '"comm":"locker-ab"' | grep '"ongoing":true' | tail -n 1)
jid=$(echo "$line" | sed -n 's/.*"stall_id":\([0-9]*\),.*/\1/p')
check "json: a stall line of locker-ab says ongoing" [ -n "$jid" ]
check "json: no stall_end for it" \
	sh -c '! grep "\"type\":\"stall_end\",\"stall_id\":$2," "$1" | grep -q "\"tid\":$3,"' _ \
	"$work/now.json" "$jid" "$(echo "$line" | sed -n 's/.*"tid":\([0-9]*\),.*/\1/p')"
json_stall "$work/now.json" >"$work/dl.json"
futex_in() { ksyms "$1" | grep -q futex; }
lock_in() { usyms "$1" | grep -q "^__lll_lock_wait "; }
check "json: a sample of it with a futex wait in its kernel stack" \
	any_sample "$work/dl.json" locker-ab futex_in
check "json: a sample of it with the lock-wait function in its user stack" \
	any_sample "$work/dl.json" locker-ab lock_in

# top: 8 frames a second apart (a slow guest may take longer), the last with
# both threads stalled now
wait "$top"
check "top -b -n 8 exits 0 by itself" [ $? = 0 ]
show "$work/top.txt"
check "top: 8 frames" [ "$(grep -c "^stallcap top - " "$work/top.txt")" = 8 ]
last=$(awk '/^stallcap top - / { f = "" } { f = f $0 "\n" } END { printf "%s", f }' "$work/top.txt")
check "top: both threads stalled now, in the thread table" \
	sh -c 'echo "$1" | grep -E " locker-ab .* ongoing [0-9.]+ ms$" &&
	       echo "$1" | grep -E " locker-ba .* ongoing [0-9.]+ ms$"' _ "$last"
# worst_entry COMM: locker-ab's entry among the worst stalls of the last
# frame (its line and its two lines of frames)
worst_entry() {
	echo "$last" | sed -n '/^worst stalls/,/^$/p' | grep -A2 "^  .* tid [0-9]* ($1) stall "
}
# (the main thread, which left its sigwait() at SIGUSR1 and joins
# locker-ab, is stalled too: the worst, first of the three)
check "top: the worst stall is ongoing, blocked, the main thread's joining a locker" \
	sh -c 'echo "$1" | grep -A1 "^worst stalls" | grep -qE "^  ongoing +[0-9.]+ ms over 20.0 ms  tid [0-9]+ \(stallcap-deadlo\) stall [0-9]+: [0-9]+ samples?, blocked"' _ "$last"
check "top: locker-ab's among the worst stalls, ongoing, blocked" \
	sh -c 'echo "$1" | grep -qE "^  ongoing +[0-9.]+ ms over 20.0 ms  tid [0-9]+ \(locker-ab\) stall [0-9]+: [0-9]+ samples?, blocked"' _ "$(worst_entry locker-ab)"
check "top: its kernel frames show the futex wait" \
	sh -c 'echo "$1" | grep -E "^    kernel: " | grep -q futex' _ "$(worst_entry locker-ab)"
check "top: its user frames show the lock-wait function" \
	sh -c 'echo "$1" | grep -E "^    user: " | grep -q "__lll_lock_wait"' _ "$(worst_entry locker-ab)"

kill -INT "$rep" "$json"
wait "$rep"
check "report exits 0 on SIGINT" [ $? = 0 ]
wait "$json"
kill -KILL "$dl"
wait "$dl" 2>/dev/null
finish
