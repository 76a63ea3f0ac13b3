#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's Apache 2.4, unmodified, started under `stallcap record
# --deadline 50ms` with its two process models:
#  - prefork: each child process waits for its next connection in a
#    blocking accept() (one listener: no poll first).  That wait is idle:
#    the children, idle in accept() for over a second, are never reported;
#    a child compressing a 9 MB response (mod_deflate) is, running in
#    zlib under ap_run_handler.  The same with `record -p PID --children`
#    on an Apache already running, its children inside accept() at the
#    attach.
#  - event, with --park: its workers wait for requests on a condition
#    variable (futex), idle with --park; the worker compressing the same
#    response is reported, running in zlib under ap_run_handler.
. ./tool_lib.sh
need stallcap apache2 wget setsid

mods=/usr/lib/apache2/modules
chmod 755 "$work"	# read by the children (user nobody)
mkdir -p "$work/htdocs"
echo ok >"$work/htdocs/small.txt"
awk 'BEGIN { srand(1); for (i = 0; i < 300000; i++)
	printf "%d %x some text of a line to compress\n", i, rand() * 1e9 }' \
	>"$work/htdocs/big.txt"

# conf MPM: a minimal configuration for that MPM
conf() {
	cat <<CONF
ServerRoot "$work"
PidFile $work/apache.pid
Listen 127.0.0.1:8088
ServerName localhost
LoadModule mpm_$1_module $mods/mod_mpm_$1.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule filter_module $mods/mod_filter.so
LoadModule deflate_module $mods/mod_deflate.so
User nobody
Group nogroup
ErrorLog $work/error.log
LogLevel warn
DocumentRoot $work/htdocs
<Directory $work/htdocs>
  Require all granted
</Directory>
SetOutputFilter DEFLATE
CONF
	if [ "$1" = prefork ]; then
		printf 'StartServers 2\nMinSpareServers 2\nMaxSpareServers 3\n'
		printf 'ServerLimit 2\nMaxRequestWorkers 2\n'
	else
		printf 'StartServers 1\nServerLimit 1\nThreadsPerChild 4\n'
		printf 'MaxRequestWorkers 4\nMinSpareThreads 4\nMaxSpareThreads 4\n'
	fi
}

get() { wget -q -O "${2:-/dev/null}" --header 'Accept-Encoding: gzip' "http://127.0.0.1:8088/$1"; }

# apache_tasks: every apache2 thread's /proc/PID/task/TID directory (each
# comm read by the shell's own `read`: a `cat` per task, 100 tries under
# TCG, took most of a minute)
apache_tasks() {
	for t in /proc/[0-9]*/task/*; do
		read -r comm 2>/dev/null <"$t/comm" || continue
		[ "$comm" = apache2 ] && echo "$t"
	done
}

# threads: every apache2 thread's tid and wait channel
threads() {
	for t in $(apache_tasks); do
		echo "${t##*/} $(cat "$t/wchan" 2>/dev/null)"
	done
}

# all_in_accept: both prefork children are waiting in accept(), read from
# their kernel stacks (5.10's wchan reads 0 for every sleeping task: x86's
# get_wchan() followed frame pointers, which Debian's ORC kernels lack)
all_in_accept() {
	accepting=0
	for t in $(apache_tasks); do
		grep -q '^\[<[0-9a-f]*>\] inet_csk_accept+' "$t/stack" 2>/dev/null &&
			accepting=$((accepting + 1))
	done
	[ "$accepting" = 2 ]
}

# run NAME MPM OPTIONS...: start it under record (with -p: attach to it
# once its children wait in accept()), idle, requests, stop
run() {
	name=$1 mpm=$2
	shift 2
	conf "$mpm" >"$work/$mpm.conf"
	rm -f "$work/apache.pid" "$work/error.log"
	# setsid: apache signals its whole process group when it stops
	set -- "$@" setsid apache2 -f "$work/$mpm.conf" -D FOREGROUND
	if [ "$1" = -p ]; then
		shift
		"$@" &
		server=$!
		until_ok get small.txt
		check "$name: both children wait in accept() before the attach" \
			until_ok all_in_accept
		stallcap record --deadline 50ms -p "$(cat "$work/apache.pid")" --children \
			-o "$work/$name.data" >"$work/$name.record" 2>&1 &
		rec=$!
		until_ok grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats
	else
		opts=
		[ "$1" = --park ] && opts=$1 && shift
		stallcap record --deadline 50ms $opts -o "$work/$name.data" -- \
			"$@" >"$work/$name.record" 2>&1 &
		rec=$!
		server=
		until_ok get small.txt
	fi
	check "apache ($name) answers" get small.txt
	# idle: every worker in its wait for a second and more
	sleep 1.5
	threads | sed "s/^/# $name: /"
	# first: the child's first connection since the attach (a wait inside
	# accept() at the attach ends there)
	get big.txt "$work/big.gz"
	check "$name: the deflated response" [ -s "$work/big.gz" ]
	for i in 1 2 3; do get small.txt; done
	sleep 0.3
	kill -TERM "$(cat "$work/apache.pid")"
	wait_record "$rec"
	check "$name: record ends with apache, status 0" [ $? = 0 ]
	[ -z "$server" ] || wait "$server"
	sed "s/^/# $name record: /" "$work/$name.record"
	sed "s/^/# $name error log: /" "$work/error.log"
	reports "$name"
}

in_accept() { ksyms "$1" | grep -q '^inet_csk_accept$'; }
# running in zlib, called by mod_deflate under ap_run_handler
in_deflate() {
	usyms "$1" >"$work/u"
	dso0=$(echo "$1" | sed 's/.*"user_stack":\[{[^}]*"dso":"\([^"]*\)".*/\1/')
	case $dso0 in */libz.so*|libz.so*) ;; *) return 1 ;; esac
	grep -q '^deflate ' "$work/u" && grep -q '^ap_run_handler ' "$work/u"
}

no_sample() { ! any_sample "$@"; }
for name in prefork prefork-attached; do
	if [ "$name" = prefork ]; then
		run prefork prefork
	else
		run prefork-attached prefork -p
	fi
	echo "# $(samples "$work/$name.json" apache2 | wc -l) samples of apache2 ($name)"
	check "$name: no child reported while waiting in accept()" \
		no_sample "$work/$name.json" apache2 in_accept
	check "$name: the compressing child, running in zlib under ap_run_handler" \
		any_sample "$work/$name.json" apache2 in_deflate
done

run event event --park
echo "# $(samples "$work/event.json" apache2 | wc -l) samples of apache2 (event)"
check "event --park: the compressing worker, running in zlib under ap_run_handler" \
	any_sample "$work/event.json" apache2 in_deflate
finish
