# SPDX-License-Identifier: GPL-2.0
# Helpers of the tool_*_test.sh guest tests (busybox sh): run the stallcap
# tool, read its JSON lines, print TAP.  Sourced, not run.

n=0
failed=0
work=$(mktemp -d /tmp/stallcap-tool.XXXXXX)
trap 'rm -rf "$work"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else not_ok "$desc"; fi; }
finish() { echo "1..$n"; [ "$failed" = 0 ]; exit $?; }

need() {
	for c in "$@"; do
		command -v "$c" >/dev/null || { echo "1..0 # SKIP $c not installed"; exit 4; }
	done
	[ -c /dev/stallcap ] || { echo "1..0 # SKIP no /dev/stallcap"; exit 4; }
}

# wait_until CMD...: runs CMD every 0.1 s until it succeeds, 30 s at most
wait_until() {
	i=0
	until "$@"; do
		i=$((i + 1))
		[ "$i" -lt 300 ] || return 1
		sleep 0.1
	done
}

# reading ERRFILE: a `stallcap ... -v` reader writing ERRFILE says it reads
# records (after the kernel's symbols); waits up to 60 s for it
reading() {
	i=0
	while [ "$i" -lt 600 ] && ! grep -qx "stallcap: reading records" "$1"; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -qx "stallcap: reading records" "$1"
}

# samples FILE COMM: the JSON sample lines of thread COMM, by the sample's
# own comm (a line may name another thread too: the task that ran instead,
# a lock owner; CI125's 7.3 tokio flake took the main thread's sample, a
# worker ran in its place, for a worker's)
samples() {
	grep "^{\"type\":\"sample\",\"stall_id\":[0-9]*,\"pid\":[0-9]*,\"tid\":[0-9]*,\"ns_pid\":[0-9]*,\"ns_tid\":[0-9]*,\"comm\":\"$2\"" "$1"
}

# sample_tids FILE: the distinct tids of FILE's JSON sample lines, each
# sample's own (the first of its line: a sample may also name the task that
# ran instead of it, or a lock owner, with theirs)
sample_tids() {
	sed 's/^[^"]*"type":"sample","stall_id":[0-9]*,"pid":[0-9]*,"tid":\([0-9]*\),.*/\1/' \
		"$1" | sort -u
}

# ksyms LINE: kernel symbols of a sample line, innermost first
ksyms() {
	echo "$1" | sed 's/.*"kernel_stack":\(.*\),"user_stack":.*/\1/' |
		grep -o '"sym":"[^"]*"' | cut -d'"' -f4
}

# usyms LINE: "symbol method" of each user frame, innermost first
usyms() {
	echo "$1" | sed 's/.*"user_stack"://' |
		grep -o '"method":"[a-z]*","sym":"[^"]*"' |
		sed 's/"method":"\([a-z]*\)","sym":"\([^"]*\)"/\2 \1/'
}

# uframes LINE: "SYM<TAB>DSO" of each user frame, innermost first ("?" for
# an unresolved symbol or an unknown file)
uframes() {
	echo "$1" | sed 's/.*"user_stack"://' |
		grep -o '"sym":\("[^"]*"\|null\),"off":[0-9]*,"dso":\("[^"]*"\|null\)' |
		sed -e 's/^"sym":null,/"sym":"?",/' -e 's/"dso":null$/"dso":"?"/' \
			-e 's/^"sym":"\([^"]*\)","off":[0-9]*,"dso":"\([^"]*\)"$/\1\t\2/'
}

# unnamed_files JSON: the files of sample user frames that no symbol
# names (a program or library stripped of its symbol table), one per line
unnamed_files() {
	grep '"type":"sample"' "$1" | while read -r line; do
		uframes "$line" | awk -F'\t' '$1 == "?" && $2 ~ /^\// { print $2 }'
	done | sort -u
}

# hint_names_files ERR FILES: the report's hint (in ERR, its standard
# error) names each of FILES, the first four (past them: "and others")
# (its own variable names: n is the TAP count)
hint_names_files() {
	hint_line=$(grep 'hint: user frames in ' "$1") || return 1
	hint_n=0
	for hint_f in $2; do
		hint_n=$((hint_n + 1))
		if [ "$hint_n" -gt 4 ]; then
			echo "$hint_line" | grep -q ' and others have no name'
			return
		fi
		echo "$hint_line" | grep -qF "$hint_f" || return 1
	done
}

# frame0_dso LINE: the file name of the DSO of a JSON sample's innermost
# user frame
frame0_dso() {
	echo "$1" | sed 's/.*"user_stack":\[{[^}]*"dso":"\([^"]*\)".*/\1/' | sed 's|.*/||'
}

# in_order WORD...: stdin holds every WORD (first field), in this order
in_order() {
	awk -v want="$*" 'BEGIN { n = split(want, w, " "); i = 1 }
		i <= n && $1 == w[i] { i++ } END { exit i <= n }'
}

# any_sample FILE COMM TEST [WORD]: some sample of COMM passes "TEST LINE";
# with WORD, only the samples whose line holds WORD (a fixed string) are
# tried.  TEST forks a few times per line, and a run of a real server on a
# guest beside another (2 CPUs, CI) reports thousands of samples: on the
# debug kernel a scan of all took more than 10 minutes (CI of 2026-11-27).
any_sample() {
	f=$1 c=$2 t=$3
	samples "$f" "$c" >"$work/lines" || return 1
	if [ -n "${4:-}" ]; then
		grep -F -- "$4" "$work/lines" >"$work/lines.word" || return 1
		mv "$work/lines.word" "$work/lines"
	fi
	while read -r line; do
		"$t" "$line" && return 0
	done <"$work/lines"
	return 1
}

# no_kernel_frame FILE COMM SYM...: no sample of COMM has a kernel frame
# named SYM (one pass over all samples, ksyms's parsing)
no_kernel_frame() {
	f=$1 c=$2
	shift 2
	samples "$f" "$c" |
		sed 's/.*"kernel_stack":\(.*\),"user_stack":.*/\1/' |
		grep -o '"sym":"[^"]*"' | cut -d'"' -f4 >"$work/ksyms"
	for s in "$@"; do
		! grep -qx -- "$s" "$work/ksyms" || return 1
	done
}

# every_sample FILE COMM TEST: TEST holds for every sample of COMM (one
# at least)
every_sample() {
	f=$1 c=$2 t=$3
	samples "$f" "$c" >"$work/lines" || return 1
	while read -r line; do
		"$t" "$line" || return 1
	done <"$work/lines"
}

# show FILE: the report, for the log, prefixed as TAP comments
show() { sed 's/^/# /' "$1"; }

# reports NAME: $work/NAME.data reported as $work/NAME.txt (shown in the
# log) and $work/NAME.json
reports() {
	stallcap report "$work/$1.data" >"$work/$1.txt"
	stallcap report -f json "$work/$1.data" >"$work/$1.json"
	show "$work/$1.txt"
}

# wait until CMD succeeds, up to 10 s
until_ok() {
	i=0
	while [ "$i" -lt 100 ]; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# proc_state PID: the state letter of process PID (empty when it is gone)
proc_state() { awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null; }

# running_for PID TENTHS: wait while process PID runs (a zombie does not),
# at most TENTHS tenths of a second; true if it still runs
running_for() {
	i=0
	while :; do
		rstate=$(proc_state "$1")
		[ -n "$rstate" ] && [ "$rstate" != Z ] || return 1
		[ "$i" -lt "$2" ] || return 0
		sleep 0.1
		i=$((i + 1))
	done
}

# wait_record PID [TENTHS]: wait for a `stallcap record` (a child of this
# shell) that ends by itself once its program has exited, at most TENTHS
# tenths of a second (600); returns its status.  One still running then is
# a failure of its own, not the test's timeout: what it waits in and what
# the module still counts (debugfs) are printed, every process left with
# its state, then SIGINT ends it as an interrupted run ends (SIGKILL 10 s
# later).
wait_record() {
	if running_for "$1" "${2:-600}"; then
		echo "# record $1 still runs (state $rstate), waiting in: $(cat /proc/$1/wchan 2>/dev/null)"
		sed 's/^/#   kernel stack: /' "/proc/$1/stack" 2>/dev/null
		sed 's/^/#   module: /' /sys/kernel/debug/stallcap/stats 2>/dev/null
		for s in /proc/[0-9]*/stat; do
			awk '{ print "#   process " $0 }' "$s" 2>/dev/null | cut -c1-100
		done
		kill -INT "$1"
		! running_for "$1" 100 || kill -KILL "$1"
	fi
	wait "$1"
}

# fuse_lower_stall NAME PID DIR LATE LOWER: `stallcap record --deadline
# 100ms -p PID` (a FUSE server) into $work/NAME.data while ten reads and
# stats of DIR/file go through its mount DIR, then a stat of DIR/LATE (a
# path it has not looked up) while LOWER, the process serving its backing
# store, is stopped (SIGSTOP, SIGCONT 0.6 s later); reported (reports).
# DIR/file is read once before the record: the first open through both
# servers, cold in a fresh guest, took 107 ms once (a real stall of 100).
fuse_lower_stall() {
	cat "$3/file" >/dev/null
	stallcap record -v --deadline 100ms -p "$2" -o "$work/$1.data" \
		>"$work/$1.record" 2>&1 &
	rec=$!
	check "record attached the FUSE server" reading "$work/$1.record"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		cat "$3/file" >/dev/null
		stat "$3/file" >/dev/null
	done
	sleep 0.5
	kill -STOP "$5"
	stat "$3/$4" >/dev/null &
	st=$!
	sleep 0.6
	kill -CONT "$5"
	wait "$st"
	check "the lookup through both came back" [ $? = 0 ]
	sleep 0.5
	kill -INT "$rec"
	wait_record "$rec"
	cat "$work/$1.record"
	reports "$1"
}

# in_lower_request LINE: a sample asleep in a FUSE request (its kernel stack)
in_lower_request() {
	echo "$1" | grep -qE '"state":"(sleeping|uninterruptible)"' &&
		ksyms "$1" | grep -qxE 'fuse_lookup_name|fuse_lookup|request_wait_answer|__fuse_simple_request'
}
