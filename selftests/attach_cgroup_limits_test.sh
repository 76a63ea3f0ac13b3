#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's redis-server, unmodified, in a cgroup with a container's limits,
# attached with `stallcap record --deadline 50ms -p PID`.
# CPU (cgroup v2 cpu.max 10 ms per 100 ms): a Lua busy loop in EVAL needs
# more CPU than the quota gives: the event loop stalls, and most of the
# stall it is runnable but throttled.  The report must say so ("throttled
# by its cgroup's CPU quota", the sample's "throttled" flag, state
# runnable) with the user stack of the EVAL request: the loop
# (evalGenericCommand), or the read of the request before it when the
# quota ran out there (CI101 on 5.10: the stall's only throttled sample in
# readQueryFromClient, the samples in the loop all taken while it ran); the
# same loop without the limit stalls too, but is never reported throttled.
# Memory (memory.high a few MiB over what redis uses, no swap): a Lua
# script filling a table of 3 million numbers goes over it, and the kernel
# makes the event loop sleep on its way back to user space: the report
# must say "in a memory stall" (the sample's "memstall" flag), its kernel
# stack in mem_cgroup_handle_over_high, its user stack in
# evalGenericCommand; no sample of the CPU phases is marked so.
. ./tool_lib.sh
need stallcap redis-server redis-cli

port=6398
cg_root=/sys/fs/cgroup
cg=$cg_root/stallcap-quota-$$
cli() { redis-cli -p "$port" "$@"; }

grep -q "^[^ ]* $cg_root cgroup2 " /proc/self/mounts ||
	mount -t cgroup2 none "$cg_root"
echo +cpu >"$cg_root/cgroup.subtree_control"
mkdir "$cg"
check "a cgroup with the cpu controller" test -e "$cg/cpu.max"

sh -c "echo \$\$ >$cg/cgroup.procs && exec redis-server --port $port \
	--bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--loglevel warning" >"$work/redis.out" 2>&1 &
server=$!
pong() { [ "$(cli ping 2>/dev/null)" = PONG ]; }
until_ok pong
check "redis-server answers" pong
check "redis-server is in the cgroup" grep -qx "$server" "$cg/cgroup.procs"

stallcap record --deadline 50ms -p "$server" -o "$work/quota.data" >"$work/record.out" 2>&1 &
rec=$!
attached() { grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats; }
check "the attach is in place" until_ok attached
sleep 0.3

loop() { echo "local i = 0 while i < $1 do i = i + 1 end return i"; }
# without a limit first: a stall, not throttled (attach_redis_test's loop,
# over the deadline on every kernel: 300,000 rounds were not on 6.1)
cli eval "$(loop 1000000)" 0 >/dev/null
sleep 0.2
echo "10000 100000" >"$cg/cpu.max"
throttled_before=$(awk '$1 == "nr_throttled" { print $2 }' "$cg/cpu.stat")
t0=$(date +%s)
# 600,000 rounds: on Linux 6.18 and later a task is throttled on its way
# back to user space, so the first throttled samples may find redis held
# off at the end of the read() of the command, before the script (7.2,
# samples 0-3 of a stall once); the later ones, in the loop, must be there
cli eval "$(loop 600000)" 0 >"$work/eval.out"
echo "# the loop took $(($(date +%s) - t0)) s under the quota"
check "the loop under the quota is answered" grep -qx 600000 "$work/eval.out"
throttled_after=$(awk '$1 == "nr_throttled" { print $2 }' "$cg/cpu.stat")
check "the cgroup was throttled ($throttled_before -> $throttled_after)" \
	[ "$throttled_after" -gt "$throttled_before" ]
echo max >"$cg/cpu.max"

# memory.high: the limit lifted after a second (each sleep the kernel
# imposes is up to 2 s, one per batch of pages charged over it).  A kernel
# built without the memory controller (CONFIG_MEMCG off: upstream's
# defconfig) skips this part.
memcg=0
grep -qw memory "$cg_root/cgroup.controllers" && memcg=1
skip_memcg() { ok "$1 # SKIP no memory controller in this kernel"; }
if [ "$memcg" = 1 ]; then
	echo +memory >"$cg_root/cgroup.subtree_control"
	check "the memory controller" test -e "$cg/memory.high"
	echo $(($(cat "$cg/memory.current") + 4 * 1024 * 1024)) >"$cg/memory.high"
	high_before=$(awk '$1 == "high" { print $2 }' "$cg/memory.events")
	(sleep 1; echo max >"$cg/memory.high") &
	lift=$!
	cli eval "local t = {} for i = 1, 3000000 do t[i] = i end return #t" 0 \
		>"$work/eval_mem.out"
	wait "$lift"
	check "the table is built" grep -qx 3000000 "$work/eval_mem.out"
	high_after=$(awk '$1 == "high" { print $2 }' "$cg/memory.events")
	check "redis went over memory.high ($high_before -> $high_after)" \
		[ "$high_after" -gt "$high_before" ]
else
	skip_memcg "the memory controller"
fi

cli shutdown nosave >/dev/null 2>&1
wait "$server"
wait_record "$rec"
check "record ends when redis-server exits, status 0" [ $? = 0 ]
sed 's/^/# record: /' "$work/record.out"
rmdir "$cg"

reports quota

in_eval() { usyms "$1" | grep -q '^evalGenericCommand '; }
# the sample's own flag (a task section's "throttled":false is no flag)
marked() { echo "$1" | grep -qE '"throttled"[],]'; }
in_request() { usyms "$1" | grep -qE '^(evalGenericCommand|readQueryFromClient) '; }
throttled_in_request() {
	echo "$1" | grep -qF '"state":"runnable"' && marked "$1" &&
		echo "$1" | grep -qF "throttled by its cgroup's CPU quota (cpu.max)" &&
		in_request "$1"
}
check "a throttled sample: runnable, marked, said so, in the EVAL request (evalGenericCommand or readQueryFromClient)" \
	any_sample "$work/quota.json" redis-server throttled_in_request "throttled by its cgroup"
check "the text report says it" \
	grep -q "why: runnable .*throttled by its cgroup's CPU quota (cpu.max)" "$work/quota.txt"
check "and its sample line: throttled, not preempted" \
	grep -qE "sample [0-9]+ at .*, throttled in (user|kernel)" "$work/quota.txt"
# the loop without the limit ran first: of the stalls in the scripts
# (reported in the order they ended) the first has no marked sample
samples "$work/quota.json" redis-server >"$work/all"
while read -r line; do
	in_eval "$line" && echo "$line" | sed 's/.*"stall_id":\([0-9]*\),.*/\1/'
done <"$work/all" | awk '!seen[$0]++' >"$work/eval_stalls"
first=$(head -n 1 "$work/eval_stalls")
check "the $((2 + memcg)) scripts stalled (stalls $(echo $(cat "$work/eval_stalls")))" \
	[ "$(wc -l <"$work/eval_stalls")" -ge $((2 + memcg)) ]
# the sample's own flag, as "throttled"
memstall() { echo "$1" | grep -qE '"memstall"[],]'; }
unmarked() {
	grep "\"stall_id\":$first," "$work/all" >"$work/first"
	while read -r line; do
		! marked "$line" && ! memstall "$line" || return 1
	done <"$work/first"
}
check "none of the first one's samples is marked throttled or a memory stall" unmarked

memstall_in_eval() {
	memstall "$1" &&
		echo "$1" | grep -qF "in a memory stall (reclaim, compaction, thrashing or its cgroup's memory.high)" &&
		ksyms "$1" | grep -qxE '(__)?mem_cgroup_handle_over_high' && in_eval "$1"
}
if [ "$memcg" = 1 ]; then
	check "a memory stall: marked, said so, in mem_cgroup_handle_over_high and evalGenericCommand" \
		any_sample "$work/quota.json" redis-server memstall_in_eval "memory stall"
	check "the text report says it" \
		grep -q "why: .*in a memory stall" "$work/quota.txt"
else
	skip_memcg "a memory stall"
fi
finish
