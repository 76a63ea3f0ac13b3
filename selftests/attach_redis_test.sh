#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's redis-server, unmodified and already running, attached with
# `stallcap record --deadline 50ms -p PID`: the module watches its event
# loop between epoll_wait calls, and each way of
# stalling it is named in the report: DEBUG SLEEP (blocked in nanosleep under
# debugCommand), KEYS * over 50,000 keys from DEBUG POPULATE (running in
# keysCommand; 300,000 keys take 15 s under TCG) and a Lua busy loop in EVAL
# (running under evalGenericCommand).  Idle time inside epoll_wait is never
# reported, and a user may not attach to root's process.
# Then the way init scripts start it: `stallcap record --deadline -- sh -c
# 'exec taskset -c 0 redis-server --daemonize yes'`: the watch follows the
# two execs and redis's daemonizing fork, the stall of the daemon is named
# and the record runs until the daemon exits.
. ./tool_lib.sh
need stallcap redis-server redis-cli

port=6399
cli() { redis-cli -p "$port" "$@"; }

redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--enable-debug-command yes --daemonize no --loglevel warning \
	>"$work/redis.out" 2>&1 &
server=$!
i=0
until [ "$(cli ping 2>/dev/null)" = PONG ]; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || break
	sleep 0.1
done
check "redis-server answers" [ "$(cli ping)" = PONG ]

stallcap record --deadline 50ms -p "$server" -o "$work/redis.data" >"$work/record.out" 2>&1 &
rec=$!
# wait for the attach itself (the module counts its watches: a second is not
# always enough on the debug kernel); the event loop then passes through
# epoll_wait at least every 100 ms (hz 10)
i=0
until grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || break
	sleep 0.1
done
check "the attach is in place" grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats
sleep 0.3

cli debug sleep 0.3 >/dev/null
cli debug populate 50000 >/dev/null
check "50000 keys" [ "$(cli dbsize)" = 50000 ]
cli keys '*' >/dev/null
cli eval 'local i = 0 while i < 1000000 do i = i + 1 end return i' 0 >/dev/null
cli ping >/dev/null

if command -v su >/dev/null && id user >/dev/null 2>&1; then
	su user -s /bin/sh -c "stallcap record --deadline 20ms -p $server -o /tmp/x.data -d 1" \
		>"$work/user.out" 2>&1
	rc=$?
	sed 's/^/# /' "$work/user.out"
	refused() { [ "$rc" != 0 ] && grep -q "cannot attach to process $server: not permitted" "$work/user.out"; }
	check "a user may not attach to root's redis-server: clear message" refused
fi

cli shutdown nosave >/dev/null 2>&1
wait "$server"
wait_record "$rec"
check "record ends by itself when redis-server exits, status 0" [ $? = 0 ]
sed 's/^/# record: /' "$work/record.out"

reports redis

sleeping() {
	ksyms "$1" | grep -q nanosleep && usyms "$1" | grep -q '^debugCommand '
}
# (running: caught on a CPU in the command's own work, not asleep under it)
running() { echo "$1" | grep -q '"state":"running"'; }
in_keys() { running "$1" && usyms "$1" | grep -q '^keysCommand '; }
in_eval() { running "$1" && usyms "$1" | grep -q '^evalGenericCommand '; }

echo "# $(samples "$work/redis.json" redis-server | wc -l) samples of redis-server"
check "DEBUG SLEEP: blocked in nanosleep under debugCommand" \
	any_sample "$work/redis.json" redis-server sleeping debugCommand
check "KEYS *: running in keysCommand" \
	any_sample "$work/redis.json" redis-server in_keys keysCommand
check "EVAL busy loop: running under evalGenericCommand" \
	any_sample "$work/redis.json" redis-server in_eval evalGenericCommand
check "waiting in epoll_wait is never a stall" \
	no_kernel_frame "$work/redis.json" redis-server ep_poll do_epoll_wait

# started through a shell, taskset and a daemonizing fork
stallcap record --deadline 50ms -o "$work/daemon.data" -- sh -c \
	"exec taskset -c 0 redis-server --port $port --bind 127.0.0.1 --save '' \
	--appendonly no --enable-debug-command yes --daemonize yes \
	--loglevel warning --logfile $work/daemon.log" >"$work/record2.out" 2>&1 &
rec=$!
pong() { [ "$(cli ping 2>/dev/null)" = PONG ]; }
until_ok pong
check "the daemonized redis-server answers" [ "$(cli ping)" = PONG ]
daemon=$(cli info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p')
check "the daemon is a process of its own (pid $daemon)" [ -n "$daemon" ]
attached() { grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats; }
check "the daemon's event loop is watched" until_ok attached
sleep 0.3
cli debug sleep 0.3 >/dev/null
# the shell and taskset are gone: the record goes on while the daemon runs
sleep 1
check "record still runs after its command exited" kill -0 "$rec"
cli shutdown nosave >/dev/null 2>&1
wait_record "$rec"
check "record ends when the daemon exits, status 0" [ $? = 0 ]
sed 's/^/# record: /' "$work/record2.out"
reports daemon
daemon_sleeping() {
	echo "$1" | grep -q "\"pid\":$daemon," && sleeping "$1"
}
check "DEBUG SLEEP in the daemon: nanosleep under debugCommand" \
	any_sample "$work/daemon.json" redis-server daemon_sleeping debugCommand
finish
