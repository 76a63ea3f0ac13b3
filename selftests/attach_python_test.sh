#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Python's asyncio (Debian's python3.11, unmodified, a non-PIE executable
# without a symbol table: its exported functions name its frames), under
# `stallcap record --deadline 100ms -- python3 server.py`: the classic
# asyncio bug, a blocking call inside a coroutine.  time.sleep() blocks the
# loop (blocked: clock_nanosleep, called from the interpreter), a
# CPU-bound Python function holds it (running: in the interpreter's eval
# loop).  Python 3.11 writes no perf map (3.12's -X perf does; the
# collector reads it as for node), so the Python function itself is not
# named: the assertions are on the native frames and the wait state.
. ./tool_lib.sh
need stallcap python3 nc

port=8098
cp spin.py "$work/"
cat >"$work/server.py" <<'PY'
import asyncio, sys, time
from spin import spin_for

async def handle(reader, writer):
    cmd = (await reader.readline()).strip()
    if cmd == b"sleep":
        time.sleep(0.5)
    elif cmd == b"spin":
        spin_for(0.5)
    writer.write(b"ok\n")
    await writer.drain()
    writer.close()

async def main(port):
    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    print("listening", flush=True)
    async with srv:
        await srv.serve_forever()

asyncio.run(main(int(sys.argv[1])))
PY

ask() { echo "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }

stallcap record --deadline 100ms -o "$work/py.data" -- \
	python3 "$work/server.py" "$port" >"$work/record.out" 2>&1 &
rec=$!
answers() { ask ping | grep -q '^ok'; }
wait_until answers
check "the asyncio server answers" sh -c "echo ping | nc 127.0.0.1 $port | grep -q '^ok'"
py=$(pidof python3 || pidof python3.11)
# each stall comes after 1.5 s of waiting in epoll: a stall's time
# breakdown must cover its busy period, not the idle wait before it
ask ping >/dev/null
sleep 1.5
ask sleep >/dev/null
ask ping >/dev/null
sleep 1.5
ask spin >/dev/null
ask ping >/dev/null
# SIGTERM, not SIGINT: asyncio.run()'s SIGINT handler (Python 3.11) only
# marks the signal, to be acted on by the interpreter's next bytecode, and
# sets no wakeup fd; a SIGINT landing between the loop's last bytecode and
# its epoll_wait() is acted on once epoll_wait returns, for a server with no
# clients never (CI57: the server ran on for 60 s, until wait_record's
# SIGINT to the record).  SIGTERM's default action ends it at once.
kill -TERM "$py"
wait_record "$rec"
sed 's/^/# record: /' "$work/record.out"

stallcap report "$work/py.data" >"$work/report.txt"
stallcap report -f json "$work/py.data" >"$work/report.json"
show "$work/report.txt"

# first LINE VERDICT: LINE is a stall's first sample, its verdict begins
# with VERDICT and its time breakdown spans the busy period only (the
# deadline and the lateness: under the 1.5 s idle before it)
first() {
	echo "$1" | grep -q '"sample_index":0,' &&
		echo "$1" | grep -q "\"verdict\":\"$2" || return 1
	cap=$(echo "$1" | sed -n 's/.*"capture_ns":\([0-9]*\).*/\1/p')
	since=$(echo "$1" | sed -n 's/.*"since_ns":\([0-9]*\).*/\1/p')
	[ -n "$cap" ] && [ -n "$since" ] && [ $((cap - since)) -lt 1000000000 ]
}
# the sleep: blocked in clock_nanosleep (kernel: the nanosleep; user: the
# C library's call, below the interpreter's eval loop)
in_sleep() {
	first "$1" blocked && echo "$1" | grep -q '"state":"sleeping"' &&
		ksyms "$1" | grep -qE '^(do_nanosleep|hrtimer_nanosleep)$' &&
		usyms "$1" | head -n 1 | grep -q 'clock_nanosleep' &&
		usyms "$1" | grep -q '^_PyEval_EvalFrameDefault '
}
# the spin: running Python code, the eval loop on its user stack
in_spin() {
	first "$1" "on CPU" && echo "$1" | grep -q '"state":"running"' &&
		usyms "$1" | grep -q '^_PyEval_EvalFrameDefault '
}
check "time.sleep in a coroutine: blocked in clock_nanosleep under the eval loop, blocked for its busy period" \
	any_sample "$work/report.json" python3 in_sleep '"sample_index":0,'
check "a CPU-bound function: running in the eval loop, on CPU for its busy period" \
	any_sample "$work/report.json" python3 in_spin '"sample_index":0,'
finish
