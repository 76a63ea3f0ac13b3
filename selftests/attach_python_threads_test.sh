#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Python's http.server with a thread per connection (ThreadingHTTPServer of
# Debian's python3.11, the standard library's, unmodified): each
# connection's handler thread waits for the client's next request in a
# blocking recv() of its socket (rfile.readline()) and never calls an
# event-loop wait.  A keep-alive client asks for /ping, waits 1.5 s, asks
# for /spin (0.5 s of Python in the handler), waits 1.5 s, asks for /ping.
# Under `stallcap record --deadline 100ms --recv -- python3 server.py` the
# handler thread is watched from its first receive: the spin is a stall of
# that thread (running, the eval loop on its stack), the 1.5 s waits for
# the next request are no stall.  Under `record --deadline 100ms` without
# --recv the same spin is reported in no thread, and the record's hint
# names the handler thread and advises --recv.
. ./tool_lib.sh
need stallcap python3

port=8099
cp spin.py "$work/"
cat >"$work/server.py" <<'PY'
import http.server, sys
from spin import spin_for

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive: one thread, many requests
    def do_GET(self):
        if self.path == "/spin":
            spin_for(0.5)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("listening", flush=True)
srv.serve_forever()
PY
cat >"$work/client.py" <<'PY'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
for path, pause in (("/ping", 1.5), ("/spin", 1.5), ("/ping", 0)):
    c.request("GET", path)
    r = c.getresponse()
    assert r.read() == b"ok\n", path
    time.sleep(pause)
c.close()
PY

# serve NAME [--recv]: the server under record, the client's three
# requests, then the server's end; $work/NAME.{out,data,txt,json}, and
# $server the server's pid
serve() {
	name=$1
	shift
	stallcap record --deadline 100ms "$@" -o "$work/$name.data" -- \
		python3 "$work/server.py" "$port" >"$work/$name.out" 2>&1 &
	rec=$!
	wait_until grep -q listening "$work/$name.out"
	server=$(pidof python3 || pidof python3.11)
	check "$name: the server runs (pid $server)" kill -0 "${server:-none}"
	check "$name: the client's three requests on one connection" \
		python3 "$work/client.py" "$port"
	kill -TERM "$server"
	wait_record "$rec"
	sed 's/^/# record: /' "$work/$name.out"
	reports "$name"
}

# a sample of the handler thread (not the server's main thread) running
# Python in the eval loop, its stall's first
handler_spin() {
	echo "$1" | grep -q '"sample_index":0,' &&
		echo "$1" | grep -q '"state":"running"' &&
		! echo "$1" | grep -q "\"tid\":$server," &&
		usyms "$1" | grep -q '^_PyEval_EvalFrameDefault '
}
# no_sample FILE COMM TEST [WORD]: no sample of COMM passes TEST
no_sample() { ! any_sample "$@"; }

# a sample asleep in a socket receive (the wait for the next request)
asleep_in_recv() {
	echo "$1" | grep -q '"state":"sleeping"' &&
		ksyms "$1" | grep -qE '^(tcp_recvmsg|sk_wait_data|__sys_recvfrom)$'
}

serve recv --recv
check "--recv: the handler thread's spin is a stall, running in the eval loop" \
	any_sample "$work/recv.json" python3 handler_spin '"sample_index":0,'
check "--recv: the waits for the next request are no stall" \
	no_sample "$work/recv.json" python3 asleep_in_recv '"state":"sleeping"'

serve plain
check "without --recv: the spin is reported in no thread" \
	no_sample "$work/plain.json" python3 handler_spin '"sample_index":0,'
check "without --recv: the hint names the handler thread and advises --recv" \
	grep -q '^stallcap: hint: .* never waited in an event-loop call, .* python3 (tid [0-9]*, .* watched with --recv)$' \
	"$work/plain.out"
finish
