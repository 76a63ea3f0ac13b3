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
#  - attach.epoll0.{base,attached}.p50: epoll_wait(timeout 0) in another
#    process, the same way: a probed call, where another process does pay
#    the probe's entry (one hash lookup, no return hook);
#  - attach.redis.{set,get}.{base,attached}: redis-benchmark requests per
#    second (100,000 requests each, 50 clients) against redis-server, without,
#    then with, a 20 ms deadline on its event loop.
#
# The host is shared and a TCG guest's throughput drifts by tens of percent
# from one minute to the next, so each figure is measured ATTACH_ROUNDS
# times (default 5) in pairs, the order alternating (base then attached,
# then attached then base): a pair's two runs are side by side.  Printed:
# the median of each side, and attach.*.ratio, the median of the pairs'
# ratios (attached / base), which the report's targets use.
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
	stallcap record --deadline 20ms -p "$redis" -o "/tmp/attach.$round.data" 2>/tmp/attach.err &
	rec=$!
	sleep 1
}

detach() {
	kill -INT "$rec"
	wait "$rec"
}

# "getppid epoll0": p50 of stallcap_bench's hot section (its short form: 20
# batches of 1000 calls per method), in ns
hot_p50() {
	stallcap_bench --smoke hot 2>/dev/null | awk -F= '
		$1 == "@bench hot.getppid.p50" { g = $2 }
		$1 == "@bench hot.epoll0.p50" { e = $2 }
		END { print g + 0, e + 0 }'
}

# redis-benchmark rps of SET and GET: "set get"
bench_redis() {
	redis-benchmark -p "$port" -t set,get -n 100000 -c 50 -q 2>/dev/null |
		tr '\r' '\n' | awk '/^SET: / { s = $2 } /^GET: / { g = $2 }
			END { print s + 0, g + 0 }'
}


command -v redis-server >/dev/null && command -v stallcap >/dev/null || {
	echo "@bench attach.available=0"
	echo "@bench attach.why=redis-server or stallcap missing in the guest"
	exit 0
}
echo "@bench attach.available=1"
start_redis

rounds=${ATTACH_ROUNDS:-5}
# one discarded run first: the guest's first requests run cold (TCG
# translates the code the first time it runs) and would tilt pair 1
bench_redis >/dev/null
: >/tmp/attach.rounds
round=1
while [ "$round" -le "$rounds" ]; do
	# one side of a pair: "getppid set get"
	if [ $((round % 2)) = 1 ]; then
		set -- $(hot_p50) $(bench_redis); gb=$1; eb=$2; sb=$3; rb=$4
		attach
		set -- $(hot_p50) $(bench_redis); ga=$1; ea=$2; sa=$3; ra=$4
		detach
	else
		attach
		set -- $(hot_p50) $(bench_redis); ga=$1; ea=$2; sa=$3; ra=$4
		detach
		set -- $(hot_p50) $(bench_redis); gb=$1; eb=$2; sb=$3; rb=$4
	fi
	echo "$gb $ga $sb $sa $rb $ra $eb $ea" >>/tmp/attach.rounds
	echo "# attach round $round: getppid $gb / $ga ns, epoll_wait $eb / $ea ns, SET $sb / $sa, GET $rb / $ra"
	round=$((round + 1))
done
# median COLUMN-EXPRESSION: the median over the rounds
median() {
	awk "{ print $1 }" /tmp/attach.rounds | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] :
						(v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "@bench attach.rounds=$rounds"
echo "@bench attach.getppid.base.p50=$(median '$1')"
echo "@bench attach.getppid.attached.p50=$(median '$2')"
echo "@bench attach.getppid.ratio=$(median '($1 > 0 ? $2 / $1 : 0)')"
echo "@bench attach.epoll0.base.p50=$(median '$7')"
echo "@bench attach.epoll0.attached.p50=$(median '$8')"
echo "@bench attach.epoll0.ratio=$(median '($7 > 0 ? $8 / $7 : 0)')"
echo "@bench attach.redis.set.base=$(median '$3')"
echo "@bench attach.redis.set.attached=$(median '$4')"
echo "@bench attach.redis.set.ratio=$(median '($3 > 0 ? $4 / $3 : 0)')"
echo "@bench attach.redis.get.base=$(median '$5')"
echo "@bench attach.redis.get.attached=$(median '$6')"
echo "@bench attach.redis.get.ratio=$(median '($5 > 0 ? $6 / $5 : 0)')"
stalls=0
for f in /tmp/attach.*.data; do
	n=$(stallcap report "$f" 2>/dev/null | tail -n 1 | sed -n 's/^\([0-9]*\) stall.*/\1/p')
	stalls=$((stalls + ${n:-0}))
done
echo "@bench attach.stalls_during_benchmark=$stalls"
cli shutdown nosave >/dev/null 2>&1
wait "$redis"
