#!/bin/sh
# scratch (not committed)
. ./tool_lib.sh
need stallcap redis-server
ip link set lo up
redis-server --port 6399 --save '' --appendonly no >/dev/null 2>&1 &
sleep 2
pid=$(pidof redis-server)
stallcap top --batch --deadline 30ms -p "$pid" -n 6 >"$work/top.out" 2>&1 &
top=$!
sleep 2
for i in 1 2 3; do redis-cli -p 6399 eval 'local i = 0 while i < 300000 do i = i + 1 end return i' 0 >/dev/null; done
redis-cli -p 6399 debug sleep 0.2 >/dev/null
wait $top
cat "$work/top.out" | tail -40
stallcap report --deadline 30ms -p "$pid" -d 4s >"$work/live.out" 2>&1 &
rep=$!
sleep 2
redis-cli -p 6399 eval 'local i = 0 while i < 300000 do i = i + 1 end return i' 0 >/dev/null
wait $rep
head -40 "$work/live.out"
kill $pid
ok "ran"
finish
