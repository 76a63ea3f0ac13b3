#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A JVM, unmodified: `stallcap record --deadline 50ms -- java
# -XX:+PreserveFramePointer StallServer PORT` (java_server/, on the JDK's own
# HTTP server: its dispatcher thread waits in epoll and runs the handlers,
# an event loop).  Each /spin request blocks it 300 ms in spinFor(), which
# the JIT compiles once hot; `jcmd PID Compiler.perfmap` has the JVM write
# /tmp/perf-PID.map (its compiled methods, the interpreter, its stubs),
# as perf users do.  Then a stall's innermost Java frame is
# StallServer.spinFor, and the walk goes through the interpreted frames
# and the JVM's call stub into libjvm.so's JavaCalls::call_helper: frame
# pointers through code without CFI (the flag keeps rbp a frame pointer in
# compiled code), DWARF in the JVM's own code.  Without the flag the frames
# end at spinFor, and the report says why.  Runs on a JRE cut from
# Debian's JDK by jlink (/opt/jre, scripts/vmtest.sh).
. ./tool_lib.sh
J=/opt/jre/bin
[ -x "$J/java" ] || { echo "1..0 # SKIP no JRE in the guest (Debian's JDK on the host)"; exit 4; }
[ -e java_server/StallServer.class ] || { echo "1..0 # SKIP java_server not built (javac)"; exit 4; }
need stallcap nc

port=8089
get() { printf 'GET %s HTTP/1.0\r\n\r\n' "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }

# serve NAME JAVA_FLAGS...: record the server under the flags while it
# serves 5 /spin requests, then has it write its perf map
serve() {
	name=$1
	shift
	stallcap record --deadline 50ms -o "$work/$name.data" -- "$J/java" -Xmx64m "$@" \
		-XX:ErrorFile="$work/hs_err_%p.log" \
		-cp java_server StallServer "$port" >"$work/$name.out" 2>&1 &
	rec=$!
	i=0
	until get /ok | grep -q '^ok'; do
		i=$((i + 1))
		[ "$i" -lt 600 ] || break
		sleep 0.2
	done
	check "$name: the server answers" sh -c "printf 'GET /ok HTTP/1.0\r\n\r\n' | nc 127.0.0.1 $port | grep -q '^ok'"
	pid=$(pidof java)
	# hot: the JIT compiles spinFor (an on-stack replacement of its loop first)
	for k in 1 2 3 4 5; do get /spin >/dev/null; done
	# the map of the code as it is after the last request: a compile that
	# ended during it is in the map too
	"$J/jcmd" "$pid" Compiler.perfmap >"$work/jcmd.out" 2>&1
	sed 's/^/# jcmd: /' "$work/jcmd.out"
	check "$name: the JVM wrote /tmp/perf-$pid.map with spinFor" \
		grep -q 'StallServer.spinFor' "/tmp/perf-$pid.map"
	kill "$pid"
	wait_record "$rec"
	sed 's/^/# record: /' "$work/$name.out"
	# a JVM that died of a signal (CI90, 5.10, once in ~100 runs: SIGSEGV
	# in C1 code, no answer): what it says of the signal, its registers
	# and the code around the pc, for the next look
	for f in "$work"/hs_err_*.log; do
		[ -f "$f" ] || continue
		awk '/^siginfo:/ || /^# (SIGSEGV|SIGBUS|SIGILL)/ { print }
			/^Registers:/ { n = 8 } /^Instructions: / { n = 24 }
			n > 0 { print; n-- }' "$f" | sed 's/^/# hs_err: /'
		mv "$f" "$f.seen"
	done
	stallcap report -f json "$work/$name.data" >"$work/$name.json"
	stallcap report "$work/$name.data" >"$work/$name.txt"
	# the same record without the map: its JIT frames unnamed
	rm -f "/tmp/perf-$pid.map"
	stallcap report "$work/$name.data" >"$work/$name.nomap.txt"
}

# last_stall NAME: the samples of the last stall of a /spin (the fifth: by
# then the JIT has compiled spinFor) into $work/last, shown.  A /spin's
# stall is 250 ms over the deadline; not one of a few ms, which jcmd's
# start-up may cause after it (jcmd runs on the dispatcher's CPU)
last_stall() {
	last=$(grep '"type":"stall"' "$work/$1.json" | grep '"comm":"HTTP-Dispatcher"' |
		awk -F'"over_ns":' '{ split($2, v, /[,}]/); if (v[1] >= 150000000) print }' |
		tail -n 1 | sed 's/.*"stall_id":\([0-9]*\),.*/\1/')
	samples "$work/$1.json" HTTP-Dispatcher | grep "\"stall_id\":$last," >"$work/last"
	while read -r line; do
		echo "# stall $last: $(uframes "$line" | head -n 24 | cut -c1-48 | tr '\t\n' '@|')"
	done <"$work/last"
	grep -A 30 "^stall $last " "$work/$1.txt" | sed 's/^/# /'
}

serve fp -XX:+PreserveFramePointer
grep '"type":"stall"' "$work/fp.json" | grep -o '"comm":"[^"]*".*"over_ns":[0-9]*' | sed 's/^/# /'
check "each /spin is a stall of the dispatcher thread (5 at least)" \
	[ "$(grep '"type":"stall"' "$work/fp.json" | grep -c '"comm":"HTTP-Dispatcher"')" -ge 5 ]

last_stall fp
# the innermost frame from the perf map (frame 0, or under a clock read) is
# spinFor, compiled
in_spin() {
	uframes "$1" | awk -F'\t' '$2 == "[perf-map]" { print $1; exit }' |
		grep -qx 'long StallServer.spinFor(long)'
}
# ...and the frames go on, through the Java frames, into the JVM's C++
through_java() {
	uframes "$1" | awk -F'\t' '$1 == "long StallServer.spinFor(long)" { s = 1 }
		s && $1 ~ /^JavaCalls::call_helper/ && $2 ~ /libjvm\.so$/ { f = 1 }
		END { exit !f }'
}
every() {
	[ -s "$work/last" ] || return 1
	while read -r line; do
		"$1" "$line" || return 1
	done <"$work/last"
}
check "every sample of it: the innermost Java frame is StallServer.spinFor (perf map)" every in_spin
check "every sample of it: the walk goes through the Java frames to JavaCalls::call_helper in libjvm.so" \
	every through_java
# without the map the report says where a JIT's names come from
check "no perf map: the report says how to have the JVM write one" \
	grep -q "a JIT's code is named from /tmp/perf-$pid.map, which this process did not write: a JVM writes it on .jcmd $pid Compiler.perfmap." \
	"$work/fp.nomap.txt"
check "with the perf map: no such note" sh -c "! grep -q \"code is named from\" $work/fp.txt"

# Without the flag the compiled code keeps no frame pointers: the frames
# end at spinFor, and the report says why (not a whole stack)
port=8090
serve nofp
last_stall nofp
jit_end() {
	in_spin "$1" && ! through_java "$1" && echo "$1" | grep -q '"user_walk_end":"jit_\(code\|chain_end\)"'
}
check "nofp: every sample of the last stall ends in spinFor, user_walk_end jit_code (or jit_chain_end)" every jit_end
check "nofp: the text says why the frames end there" \
	grep -q "the walk stops here: in code no file describes (a JIT's).*-XX:+PreserveFramePointer" \
	"$work/nofp.txt"
finish
