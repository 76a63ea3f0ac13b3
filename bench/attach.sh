#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The cost of watching an unmodified program (`stallcap record --deadline`),
# run by bench/guest-init.sh with the module loaded.  Prints "@bench" lines:
#
#  - attach.getppid.{base,attached}.p50: getppid() in another process
#    (stallcap_bench's hot loop) without, then with, a --deadline session
#    attached to an idle redis-server: the wait-call probes must cost other
#    processes nothing;
#  - attach.redis.{set,get}.{base,attached}: redis-benchmark requests per
#    second (100,000 requests each, 50 clients) against redis-server, without,
#    then with, a 20 ms deadline on its event loop.
#
# Each pair is measured twice in the order base, attached, base, attached;
# the figures are the better of each pair (the host is shared).
port=6399

cli() { redis-cli -p "$port" "$@"; }

start_redis() {
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--daemonize no --loglevel warning >/tmp/redis.out 2>&1 &
	redis=$!
	i=0
	until [ "$(cli ping 2>/dev/null)" = PONG ] || [ "$i" -gt 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
}

attach() {
	stallcap record --deadline 20ms -p "$redis" -o /tmp/attach.data 2>/tmp/attach.err &
	rec=$!
	sleep 1
}

detach() {
	kill -INT "$rec"
	wait "$rec"
}

# getppid p50 of stallcap_bench's hot section (its short form: 20 batches of
# 1000 calls per method), in ns
getppid_p50() {
	stallcap_bench --smoke hot 2>/dev/null | sed -n 's/^@bench hot\.getppid\.p50=//p'
}

# redis-benchmark rps of SET and GET: "set get"
bench_redis() {
	redis-benchmark -p "$port" -t set,get -n 100000 -c 50 -q 2>/dev/null |
		tr '\r' '\n' | awk '/^SET: / { s = $2 } /^GET: / { g = $2 }
			END { print s + 0, g + 0 }'
}

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }

command -v redis-server >/dev/null && command -v stallcap >/dev/null || {
	echo "@bench attach.available=0"
	echo "@bench attach.why=redis-server or stallcap missing in the guest"
	exit 0
}
echo "@bench attach.available=1"
start_redis

gb=; ga=; sb=0; sa=0; rb=0; ra=0
for round in 1 2; do
	p=$(getppid_p50)
	gb=$(min "${gb:-$p}" "$p")
	set -- $(bench_redis)
	sb=$(max "$sb" "$1"); rb=$(max "$rb" "$2")
	attach
	p=$(getppid_p50)
	ga=$(min "${ga:-$p}" "$p")
	set -- $(bench_redis)
	sa=$(max "$sa" "$1"); ra=$(max "$ra" "$2")
	detach
	echo "# attach round $round: getppid $gb / $ga ns, SET $sb / $sa, GET $rb / $ra"
done
echo "@bench attach.getppid.base.p50=$gb"
echo "@bench attach.getppid.attached.p50=$ga"
echo "@bench attach.redis.set.base=$sb"
echo "@bench attach.redis.set.attached=$sa"
echo "@bench attach.redis.get.base=$rb"
echo "@bench attach.redis.get.attached=$ra"
stallcap report /tmp/attach.data 2>/dev/null | tail -n 1 |
	sed 's/^/@bench attach.stalls_during_benchmark=/; s/ stalls.*//'
cli shutdown nosave >/dev/null 2>&1
wait "$redis"
