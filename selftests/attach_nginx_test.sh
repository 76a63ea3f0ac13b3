#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's nginx, unmodified, as a master process and two worker processes,
# watched two ways: `stallcap record --deadline 100ms -- nginx ...` (the
# master forks its workers after the attach: followed), then `stallcap
# record --deadline 100ms --children -p MASTER` on an nginx already running
# (its workers exist before the attach: --children attaches to them).  The
# access log is a FIFO that nobody reads (the test holds its read end
# open): after a few requests with a large header the pipe is full and the
# worker that logs the next request blocks in write() at the end of that
# request.  That worker's event loop is reported blocked, with pipe_write
# (anon_pipe_write since 6.16) in its kernel stack and the C library's
# write() innermost in user space under nginx's
# ngx_process_events_and_timers; the master (waiting for signals in sigsuspend)
# is never reported.  Once the pipe is drained nginx answers again, and
# record exits with nginx.
. ./tool_lib.sh
need stallcap nginx nc mkfifo awk

port=8099
fifo=$work/access.fifo
mkfifo "$fifo"
# a read end that never reads: nginx's open() of the log does not block,
# and its writes fill the pipe (64 KiB)
exec 3<>"$fifo"
mkdir -p "$work/nginx/logs"
cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 64; }
http {
	client_body_temp_path $work/nginx/body;
	proxy_temp_path $work/nginx/proxy;
	fastcgi_temp_path $work/nginx/fastcgi;
	uwsgi_temp_path $work/nginx/uwsgi;
	scgi_temp_path $work/nginx/scgi;
	log_format big '\$remote_addr \$http_x_pad';
	access_log $fifo big;
	server {
		listen 127.0.0.1:$port;
		location / { return 200 "ok\n"; }
	}
}
EOF

get() { printf 'GET / HTTP/1.0\r\nX-Pad: %s\r\n\r\n' "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }
answers() { get x | grep -q '^ok'; }
# the children of the master (no pgrep in the guest)
children() {
	for st in /proc/[0-9]*/stat; do
		awk -v pp="$1" '$4 == pp { printf "%s ", $1 }' "$st" 2>/dev/null
	done
}
# 6,000 bytes per log line: the pipe is full after 11 of them
pad=$(awk 'BEGIN { for (i = 0; i < 6000; i++) printf "a" }')

# watched MODE: "cmd" (record -- nginx) or "children" (-p MASTER --children)
watched() {
	mode=$1 ngx=
	rm -f "$work/nginx/nginx.pid" "$work/nginx.data"
	if [ "$mode" = cmd ]; then
		stallcap record --deadline 100ms -o "$work/nginx.data" -- \
			nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" >"$work/record.out" 2>&1 &
		rec=$!
		wait_until answers
		master=$(cat "$work/nginx/nginx.pid")
		workers=$(children "$master")
	else
		nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
		ngx=$!
		wait_until answers
		master=$(cat "$work/nginx/nginx.pid")
		workers=$(children "$master")
		stallcap record --deadline 100ms -v --children -p "$master" \
			-o "$work/nginx.data" >"$work/record.out" 2>&1 &
		rec=$!
		attached() { grep -q "process $master: 2 child processes attached" "$work/record.out"; }
		wait_until attached
		check "$mode: record -v says both workers were attached" attached
	fi
	check "$mode: nginx answers" sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc 127.0.0.1 $port | grep -q '^ok'"
	check "$mode: nginx has a master and two workers" [ "$(echo $workers | wc -w)" = 2 ]

	# the request that fills the pipe blocks its worker in write(); each
	# request is sent in the background, so that the test goes on when its
	# answer never comes
	for r in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
		get "$pad" >/dev/null &
	done
	sleep 1.5
	# drain the pipe: the worker's write() returns, nginx runs on
	cat <&3 >/dev/null &
	drain=$!
	sleep 0.5
	check "$mode: nginx answers once its log is drained" sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc 127.0.0.1 $port | grep -q '^ok'"
	kill -QUIT "$master"
	wait_record "$rec"
	rc=$?
	kill "$drain" 2>/dev/null
	[ -z "$ngx" ] || wait "$ngx"
	check "$mode: record exits when nginx does, with its status" [ "$rc" = 0 ]
	sed 's/^/# record: /' "$work/record.out"
	sed 's/^/# nginx: /' "$work/nginx/error.log"

	stallcap report "$work/nginx.data" >"$work/report.txt"
	stallcap report -f json "$work/nginx.data" >"$work/report.json"
	show "$work/report.txt"

	grep '"type":"sample"' "$work/report.json" >"$work/samples"
	blocked_in_log_write() {
		echo "$1" | grep -q '"state":"sleeping"' &&
			ksyms "$1" | grep -qxE '(anon_)?pipe_write' &&
			usyms "$1" | head -n 1 | grep -qE '^(__)?(libc_)?write ' &&
			usyms "$1" | grep -q '^ngx_process_events_and_timers '
	}
	check "$mode: a worker is reported blocked writing its log" \
		any_sample "$work/report.json" nginx blocked_in_log_write pipe_write
	pids=$(sed 's/^[^"]*"type":"sample","stall_id":[0-9]*,"pid":\([0-9]*\),.*/\1/' \
		"$work/samples" | sort -u)
	only_workers() {
		for p in $pids; do
			case " $workers " in *" $p "*) ;; *) return 1 ;; esac
		done
	}
	check "$mode: only worker processes are reported" only_workers
	# each sample's own pid: a sample also names the task that ran instead
	# of it (a worker exiting, preempted by the master, names the master)
	check "$mode: the master is never reported" sh -c "case ' $(echo $pids) ' in *' $master '*) false ;; esac"
}

watched cmd
watched children
exec 3<&-
finish
