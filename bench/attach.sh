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
#  - attach.self.{getppid,epoll0}.{base,attached}.p50: the same loop in a
#    process that is itself watched (`stallcap record --deadline 1s --
#    stallcap_bench`): each epoll_wait(0) is an event-loop iteration (the
#    entry and return hooks, the deadline started and stopped), getppid is
#    busy time (nothing of stallcap on its path);
#  - attach.redis.{set,get}.{base,attached}: redis-benchmark requests per
#    second (100,000 requests each, 50 clients) against redis-server, without,
#    then with, a 20 ms deadline on its event loop;
#  - attach.redis.{set,get}.hooks{,_ratio}: the same with a 1 s deadline,
#    which the loop never misses: the hooks of every iteration without the
#    captures of stalls (the 20 ms side's stalls come from the emulated
#    host's speed, attach.stalls_during_benchmark counts them);
#  - attach.twin.{set,get}.{watched,unwatched,ratio}: two redis-servers
#    benchmarked at the same time, one watched with the 20 ms deadline
#    (see "twins" below; ATTACH_TWINS=0 skips them);
#  - attach.hooks.share{,_base}_pct: the hooks' share of redis-server's CPU
#    in a perf profile (when perf is in the guest), and the reader's share
#    of a CPU, attach.reader.{full,hooks}.cpu_pct.
#
# The host is shared and a TCG guest's throughput drifts by tens of percent
# from one minute to the next, so each figure is measured ATTACH_ROUNDS
# times (default 5) side by side: the watched process's loop in pairs, the
# order alternating (base then attached, then attached then base), redis in
# threes (without, 20 ms, 1 s), the order rotating.  Printed: the median of
# each side, and attach.*.ratio, the median of the rounds' ratios (attached
# / base), which the report's targets use.  The hot loops
# run HOT_TRIES times (default 3) per side and keep the lowest p50 (a vCPU
# the host stops only ever adds time).  The processes are pinned as a
# deployment would pin them: redis-server on vCPU 1, the benchmark client,
# the hot loops and the stallcap reader on vCPU 0.  The reader's share of a
# CPU over each redis side (from the attach to the detach, hot loops
# included on the 20 ms side) is attach.reader.{full,hooks}.cpu_pct: it
# shares vCPU 0 with the benchmark's client.
port=6399

cli() { redis-cli -p "$port" "$@"; }

# start_redis [PORT]: a redis-server on vCPU 1 (default $port), its pid in
# $server once it answers
start_redis() {
	taskset -c 1 redis-server --port "${1:-$port}" --bind 127.0.0.1 --save "" \
		--appendonly no --daemonize no --loglevel warning >"/tmp/redis.${1:-$port}.out" 2>&1 &
	server=$!
	i=0
	until [ "$(redis-cli -p "${1:-$port}" ping 2>/dev/null)" = PONG ] ||
		[ "$i" -gt 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
}

# attach [DEADLINE [OPTION [PID]]]: a session watching redis-server's
# event loop (20ms; PID: another server's)
attach() {
	taskset -c 0 stallcap record --deadline "${1:-20ms}" $2 -p "${3:-$redis}" \
		-o "/tmp/attach.$round.${1:-20ms}.data" 2>/tmp/attach.err &
	rec=$!
	# the attach is made once the tool has read the kernel's symbols
	i=0
	until grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats 2>/dev/null ||
		[ "$i" -gt 200 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	sleep 1
	rec_ticks=$(cpu_ticks "$rec")
	rec_cs=$(uptime_cs)
}

# detach [SIDE]: end the session; with SIDE, the reader's share of one CPU
# (%) since the attach is added to /tmp/attach.reader.SIDE
detach() {
	[ -z "${1:-}" ] ||
		awk -v t="$(($(cpu_ticks "$rec") - rec_ticks))" -v w="$(($(uptime_cs) - rec_cs))" \
			'BEGIN { printf "%.2f\n", (w > 0 ? 100 * t / w : 0) }' >>"/tmp/attach.reader.$1"
	kill -INT "$rec"
	wait "$rec"
	probes_gone
}

# probes_gone: wait for the attach's probes to go; they stay 5 s after the
# last session that attached closed (module/attach_probes.c), and a base
# side measured meanwhile would pay their entry on its wait calls
probes_gone() {
	i=0
	while grep -qs 'sys_epoll_wait+' /sys/kernel/debug/kprobes/list &&
		[ "$i" -lt 150 ]; do
		i=$((i + 1))
		sleep 0.1
	done
}

# cpu_ticks PID: user + system time of PID in clock ticks (USER_HZ = 100)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# uptime_cs: the time in centiseconds, the unit of the ticks
uptime_cs() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }

# "getppid epoll0 futex0": p50 of stallcap_bench's hot section (its short
# form: 20 batches of 1000 calls per method), in ns, the lowest of
# HOT_TRIES runs; arguments: a command prefix (the watched run)
hot_p50() {
	t=0
	while [ "$t" -lt "${HOT_TRIES:-3}" ]; do
		"$@" taskset -c 0 stallcap_bench --smoke hot 2>/dev/null
		t=$((t + 1))
	done | awk -F= '
		$1 == "@bench hot.getppid.p50" && (!g || $2 < g) { g = $2 }
		$1 == "@bench hot.epoll0.p50" && (!e || $2 < e) { e = $2 }
		$1 == "@bench hot.futex0.p50" && (!x || $2 < x) { x = $2 }
		END { print g + 0, e + 0, x + 0 }'
}

# the hot loops in a process that is itself watched (1 s deadline: no stall)
watched() {
	stallcap record --deadline 1s -o /tmp/self.data -- "$@"
	probes_gone
}

# redis-benchmark rps of SET and GET: "set get"
bench_redis() {
	taskset -c 0 redis-benchmark -p "$port" -t set,get -n 100000 -c 50 -q 2>/dev/null |
		tr '\r' '\n' | awk '/^SET: / { s = $2 } /^GET: / { g = $2 }
			END { print s + 0, g + 0 }'
}

# hooks_share: "attached base", the share (%) of redis-server's samples,
# in a perf profile of the whole guest over one SET and GET run, that fall
# in stallcap's functions (its symbols in /proc/kallsyms), the kprobe,
# rethook and ftrace machinery or an unresolved kernel address (an upper
# bound: an ftrace trampoline has no symbol): with a 1 s --deadline session
# attached (no stall: the hooks of every iteration), then without, where
# the same names take what they take without stallcap
hooks_share() {
	awk '$4 == "[stallcap]" { print $3 }' /proc/kallsyms >/tmp/attach.syms
	for side in attached base; do
		[ "$side" = base ] || attach 1s
		perf record -q -a -e cpu-clock -F 2000 -o /tmp/attach.perf -- \
			taskset -c 0 redis-benchmark -p "$port" -t set,get -n 100000 -c 50 -q \
			>/dev/null 2>&1
		[ "$side" = base ] || detach
		perf report -i /tmp/attach.perf --stdio -n --comms redis-server --sort sym \
			2>/dev/null | awk 'NR == FNR { mod[$1] = 1; next }
			/^#/ || NF < 4 { next }
			{ total += $2 }
			$3 == "[k]" && (($4 in mod) ||
				$4 ~ /kprobe|kretprobe|rethook|objpool|^ftrace_|^0x/) { hooks += $2 }
			END { printf "%.3f\n", total ? 100 * hooks / total : -1 }' /tmp/attach.syms -
	done | tr '\n' ' '
}

# ---- twins: a watched and an unwatched redis-server at the same time ----
# The host's speed drifts by tens of percent from one minute to the next,
# more than the 5% the sequential sides above must resolve.  Here two
# redis-servers share vCPU 1 and their clients vCPU 0, benchmarked over
# the same 10 s windows (SET, then GET); one is watched with the 20 ms
# deadline, the other not, the roles swapping every round.  Both see the
# same host and the same probes (the unwatched server's wait calls pay the
# kprobe's entry, which the epoll_wait rows measure alone), so the ratio
# watched / unwatched is what watching costs the watched server.
twin_port=6400

# window PORT TEST: requests/s of redis-benchmark TEST over 10 s (its
# running "overall" figure when it is stopped; SIGTERM: a background job
# of this shell ignores SIGINT)
window() {
	timeout -s TERM 10 taskset -c 0 redis-benchmark -p "$1" -t "$2" -n 100000000 \
		-c 50 -q 2>/dev/null | tr '\r' '\n' |
		sed -n 's/.*rps=[0-9.]* (overall: \([0-9.]*\)).*/\1/p' | tail -n 1
}

# twin_round WATCHED: adds "set_watched set_unwatched get_watched
# get_unwatched" to /tmp/attach.twins, WATCHED being "a" ($redis) or "b"
# ($twin)
twin_round() {
	if [ "$1" = a ]; then
		set -- "$redis" "$port" "$twin_port"
	else
		set -- "$twin" "$twin_port" "$port"
	fi
	attach 20ms "" "$1"
	line=
	for t in set get; do
		window "$2" "$t" >/tmp/twin.watched &
		ww=$!
		window "$3" "$t" >/tmp/twin.unwatched &
		wu=$!
		wait "$ww" "$wu"
		line="$line $(cat /tmp/twin.watched) $(cat /tmp/twin.unwatched)"
	done
	detach
	echo $line >>/tmp/attach.twins
}

command -v redis-server >/dev/null && command -v stallcap >/dev/null || {
	echo "@bench attach.available=0"
	echo "@bench attach.why=redis-server or stallcap missing in the guest"
	exit 0
}
echo "@bench attach.available=1"
start_redis
redis=$server

rounds=${ATTACH_ROUNDS:-5}
# the watched process's own loop, in pairs as the rounds below
: >/tmp/attach.self
round=1
while [ "$round" -le "$rounds" ]; do
	if [ $((round % 2)) = 1 ]; then
		set -- $(hot_p50) $(hot_p50 watched)
	else
		set -- $(hot_p50 watched) $(hot_p50); set -- $4 $5 $6 $1 $2 $3
	fi
	echo "$1 $4 0 0 0 0 $2 $5" >>/tmp/attach.self
	echo "# watched-process round $round: getppid $1 / $4 ns, epoll_wait $2 / $5 ns"
	round=$((round + 1))
done

# one discarded run first: the guest's first requests run cold (TCG
# translates the code the first time it runs) and would tilt pair 1
bench_redis >/dev/null
: >/tmp/attach.rounds
: >/tmp/attach.reader.full
: >/tmp/attach.reader.hooks
round=1
while [ "$round" -le "$rounds" ]; do
	# three sides side by side, the order rotating from round to round
	case $((round % 4)) in
	1) sides="base full hooks park" ;;
	2) sides="park base full hooks" ;;
	3) sides="hooks park base full" ;;
	0) sides="full hooks park base" ;;
	esac
	for side in $sides; do
		case $side in
		base)
			set -- $(hot_p50) $(bench_redis)
			gb=$1; eb=$2; xb=$3; sb=$4; rb=$5 ;;
		full)
			attach
			set -- $(hot_p50) $(bench_redis)
			ga=$1; ea=$2; xa=$3; sa=$4; ra=$5
			detach full ;;
		hooks)
			attach 1s
			set -- $(bench_redis); sh=$1; rh=$2
			detach hooks ;;
		park)
			# --park: every process's futex waits pass the probe
			attach 1s --park
			set -- $(hot_p50); gp=$1; xp=$3
			detach ;;
		esac
	done
	echo "$gb $ga $sb $sa $rb $ra $eb $ea $sh $rh $xb $xa $xp $gp" >>/tmp/attach.rounds
	echo "# attach round $round: getppid $gb / $ga ns (--park $gp), epoll_wait $eb / $ea ns, futex wait $xb / $xa / --park $xp ns, SET $sb / $sa (1 s deadline: $sh), GET $rb / $ra ($rh)"
	round=$((round + 1))
done
# median COLUMN-EXPRESSION [FILE]: the median over the rounds
median() {
	awk "{ print $1 }" "${2:-/tmp/attach.rounds}" | sort -g |
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
echo "@bench attach.futex0.base.p50=$(median '$11')"
echo "@bench attach.futex0.attached.p50=$(median '$12')"
echo "@bench attach.futex0.park.p50=$(median '$13')"
echo "@bench attach.futex0.park_ratio=$(median '($11 > 0 ? $13 / $11 : 0)')"
echo "@bench attach.getppid.park.p50=$(median '$14')"
echo "@bench attach.getppid.park_ratio=$(median '($1 > 0 ? $14 / $1 : 0)')"
for what in getppid:1:2 epoll0:7:8; do
	key=${what%%:*} b=${what#*:} a=${what##*:}
	b=${b%:*}
	echo "@bench attach.self.$key.base.p50=$(median "\$$b" /tmp/attach.self)"
	echo "@bench attach.self.$key.attached.p50=$(median "\$$a" /tmp/attach.self)"
	echo "@bench attach.self.$key.ratio=$(median "(\$$b > 0 ? \$$a / \$$b : 0)" /tmp/attach.self)"
done
echo "@bench attach.redis.set.base=$(median '$3')"
echo "@bench attach.redis.set.attached=$(median '$4')"
echo "@bench attach.redis.set.ratio=$(median '($3 > 0 ? $4 / $3 : 0)')"
echo "@bench attach.redis.get.base=$(median '$5')"
echo "@bench attach.redis.get.attached=$(median '$6')"
echo "@bench attach.redis.get.ratio=$(median '($5 > 0 ? $6 / $5 : 0)')"
echo "@bench attach.redis.set.hooks=$(median '$9')"
echo "@bench attach.redis.set.hooks_ratio=$(median '($3 > 0 ? $9 / $3 : 0)')"
echo "@bench attach.redis.get.hooks=$(median '$10')"
echo "@bench attach.redis.get.hooks_ratio=$(median '($5 > 0 ? $10 / $5 : 0)')"
echo "@bench attach.reader.full.cpu_pct=$(median '$1' /tmp/attach.reader.full)"
echo "@bench attach.reader.hooks.cpu_pct=$(median '$1' /tmp/attach.reader.hooks)"
if command -v perf >/dev/null; then
	set -- $(hooks_share)
	echo "@bench attach.hooks.share_pct=$1"
	echo "@bench attach.hooks.share_base_pct=$2"
fi
stalls=0
for f in /tmp/attach.*.20ms.data; do
	n=$(stallcap report "$f" 2>/dev/null | tail -n 1 | sed -n 's/^\([0-9]*\) stall.*/\1/p')
	stalls=$((stalls + ${n:-0}))
done
echo "@bench attach.stalls_during_benchmark=$stalls"
: >/tmp/attach.twins
if [ "${ATTACH_TWINS:-1}" = 1 ]; then
	start_redis "$twin_port"
	twin=$server
	round=1
	while [ "$round" -le "$rounds" ]; do
		side=a
		[ $((round % 2)) = 1 ] || side=b
		twin_round "$side"
		echo "# twin round $round (server $side watched): SET, GET watched / unwatched: $(tail -n 1 /tmp/attach.twins)"
		round=$((round + 1))
	done
	redis-cli -p "$twin_port" shutdown nosave >/dev/null 2>&1
	wait "$twin"
	echo "@bench attach.twin.set.watched=$(median '$1' /tmp/attach.twins)"
	echo "@bench attach.twin.set.unwatched=$(median '$2' /tmp/attach.twins)"
	echo "@bench attach.twin.set.ratio=$(median '($2 > 0 ? $1 / $2 : 0)' /tmp/attach.twins)"
	echo "@bench attach.twin.get.watched=$(median '$3' /tmp/attach.twins)"
	echo "@bench attach.twin.get.unwatched=$(median '$4' /tmp/attach.twins)"
	echo "@bench attach.twin.get.ratio=$(median '($4 > 0 ? $3 / $4 : 0)' /tmp/attach.twins)"
fi
cli shutdown nosave >/dev/null 2>&1
wait "$redis"
