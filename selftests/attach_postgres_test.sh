#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's PostgreSQL 15, unmodified, already running as an unprivileged
# user, attached with `stallcap record --deadline 100ms -p POSTMASTER
# --children`: its background processes (checkpointer, writers, launcher)
# from the attach, and each process the postmaster forks afterwards (a
# backend per connection, a query's parallel workers).  Its processes wait
# in epoll_wait (latches) and select() (the postmaster): idle between
# queries, never reported.  A query that hashes 60,000 numbers (md5 over
# generate_series) is reported in the backend that runs it: its pid, on CPU
# under standard_ExecutorRun and PostgresMain (the server is built without
# frame pointers: DWARF all the way to main).  The same query over a table,
# on another connection, with two parallel workers: reported in that
# connection's backend, which hashes its share of the rows as the workers
# do theirs (the workers themselves, forked by the postmaster for the
# query, never wait in an event-loop call: never watched, as README says).
# With the leader's share off, the leader waits for the workers in
# epoll_wait(), and the workers are named by record's hint on unwatched
# threads (their watches never saw a busy period: no STALLCAP_WATCH_BUSY).
# Then a fast shutdown: record ends with the server.
. ./tool_lib.sh
pg=/usr/lib/postgresql/15/bin
PATH=$pg:$PATH
need stallcap postgres initdb psql pg_isready su

chmod 755 "$work"
data=$work/pgdata sock=$work/sock
mkdir "$data" "$sock" && chown user "$data" "$sock"
asuser() { su user -s /bin/sh -c "$*"; }
asuser "TZ=UTC initdb -N -A trust -U postgres --locale=C -E UTF8 \
	--wal-segsize=1 -D $data" >"$work/initdb.out" 2>&1
check "initdb as an unprivileged user" [ -s "$data/PG_VERSION" ]
sed -n '$p' "$work/initdb.out" | sed 's/^/# initdb: /'

# no autovacuum: its workers' vacuum of the new table would be real stalls
# of their own besides the ones the test makes
asuser "exec postgres -D $data -k $sock -c listen_addresses= \
	-c shared_buffers=16MB -c fsync=off -c autovacuum=off -c jit=off \
	-c max_worker_processes=4 -c max_parallel_workers=4" \
	>"$work/postgres.log" 2>&1 &
ready() { pg_isready -q -h "$sock" -U postgres; }
check "postgres accepts connections" until_ok ready
postmaster=$(sed -n 1p "$data/postmaster.pid" 2>/dev/null)
check "the postmaster runs (pid $postmaster)" kill -0 "${postmaster:-none}"
sql() { psql -X -q -A -t -h "$sock" -U postgres -d postgres "$@"; }
sql -c "create table t as select g from generate_series(1, 200000) g" \
	-c "vacuum analyze t"

stallcap record --deadline 100ms -p "$postmaster" --children \
	-o "$work/pg.data" >"$work/record.out" 2>&1 &
rec=$!
attached() { grep -qE '^attached [1-9]' /sys/kernel/debug/stallcap/stats; }
check "the attach is in place" until_ok attached
# idle: every process in its wait for a second
sleep 1

md5q="select count(*) from generate_series(1, 60000) g where md5(g::text) like 'ab%'"
backend=$(sql -c "select pg_backend_pid()" -c "$md5q" | sed -n 1p)
check "the query ran in backend $backend" [ -n "$backend" ]
par=$(sql -c "select pg_backend_pid()" \
	-c "set max_parallel_workers_per_gather = 2" \
	-c "set parallel_setup_cost = 0" -c "set parallel_tuple_cost = 0" \
	-c "set min_parallel_table_scan_size = 0" \
	-c "explain (analyze, costs off, timing off) select count(*) from t where md5(g::text) like 'ab%'")
echo "$par" | sed 's/^/# plan: /'
leader=$(echo "$par" | sed -n 1p)
other_backend() { [ -n "$leader" ] && [ "$leader" != "$backend" ]; }
check "the parallel query ran in backend $leader" other_backend
launched() { echo "$par" | grep -q 'Workers Launched: [12]'; }
check "the parallel query launched its workers" launched
# the same without the leader's share: the workers alone, unwatched, each
# computing for over a second; the leader idle in epoll_wait()
par=$(sql -c "set max_parallel_workers_per_gather = 2" \
	-c "set parallel_setup_cost = 0" -c "set parallel_tuple_cost = 0" \
	-c "set min_parallel_table_scan_size = 0" \
	-c "set parallel_leader_participation = off" \
	-c "explain (analyze, costs off, timing off) select count(*) from t where md5(g::text) like 'ab%'")
echo "$par" | sed 's/^/# plan without the leader: /'
check "the parallel query without the leader launched its workers" launched
sleep 0.3

kill -INT "$postmaster"
wait_record "$rec"
check "record ends with postgres (fast shutdown), status 0" [ $? = 0 ]
sed 's/^/# record: /' "$work/record.out"
hinted() {
	grep '^stallcap: hint: .* never waited in an event-loop call' "$work/record.out" |
		grep -q 'postgres (tid [0-9]*,'
}
check "the workers, never watched, are named in record's hint" hinted
sed 's/^/# postgres: /' "$work/postgres.log"
reports pg

echo "# $(samples "$work/pg.json" postgres | wc -l) samples of postgres"
of_pid() { echo "$1" | grep -q "\"pid\":$2,"; }
# the backend's query, on CPU in the executor under PostgresMain (by DWARF:
# main outermost), its innermost frame in the server or a library it calls
# (libcrypto's md5, libc; OpenSSL's static functions have no name)
in_backend_query() {
	of_pid "$1" "$backend" || return 1
	usyms "$1" | in_order standard_ExecutorRun PostgresMain main || return 1
	case $(frame0_dso "$1") in
	postgres|libcrypto.so.3|libc.so.6) ;;
	*) return 1 ;;
	esac
}
check "the md5 query: in backend $backend, on CPU under standard_ExecutorRun, PostgresMain, main" \
	any_sample "$work/pg.json" postgres in_backend_query md5_text
# the parallel query's leader, hashing its share
in_leader() {
	of_pid "$1" "$leader" &&
		usyms "$1" | in_order md5_text standard_ExecutorRun PostgresMain main
}
check "the parallel query: in backend $leader, md5_text under standard_ExecutorRun, PostgresMain, main" \
	any_sample "$work/pg.json" postgres in_leader md5_text
idle_never() { samples "$work/pg.json" postgres >/dev/null && no_kernel_frame "$@"; }
check "waiting in epoll_wait or select() is never a stall" \
	idle_never "$work/pg.json" postgres ep_poll do_epoll_wait do_select \
	core_sys_select
finish
