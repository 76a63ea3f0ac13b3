#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the fuzz targets of tools/tests/fuzz (built by `make -C tools fuzz`).
#
#   run.sh OUT regress     every saved regression input and every large input
#                          of OUT/corpus/slow once: no crash, no sanitizer
#                          report, no timeout, no out-of-memory
#   run.sh OUT fuzz SECS   the above, then each target for SECS seconds from
#                          its seed corpus (generated) plus the regression
#                          inputs; prints executions and findings per target
#   run.sh OUT timed SECS  only the timed runs
#
# Exit status 1 if anything failed; crashing inputs are kept under
# OUT/artifacts/ (add them to tests/fuzz/regress/TARGET/ once fixed).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$1 mode=$2 secs=${3:-60}
fail=0
mkdir -p "$out/artifacts" "$out/logs"

# target -> seed subdirectory of OUT/corpus
declare -A seeds=([fuzz_ring]=ring [fuzz_report]=report)

run_inputs() {	# target, log name, timeout, files...
	local t=$1 log=$2 to=$3
	shift 3
	[ $# -gt 0 ] || return 0
	if ! "$out/$t" -timeout="$to" -rss_limit_mb=2048 \
		-artifact_prefix="$out/artifacts/$t-" "$@" >"$out/logs/$log.log" 2>&1; then
		echo "fuzz: $t: FAILED on saved inputs ($log), see $out/logs/$log.log"
		grep -E 'ERROR|SUMMARY|runtime error|Running:|timeout|out-of-memory' \
			"$out/logs/$log.log" | tail -n 15 | sed 's/^/    /'
		fail=1
		return
	fi
	echo "fuzz: $t: $# saved inputs ($log) ran clean"
}

[ "$mode" = timed ] ||
for t in fuzz_ring fuzz_report; do
	mapfile -t reg < <(find "$here/regress/${t#fuzz_}" -type f 2>/dev/null | sort)
	run_inputs "$t" "$t-regress" 30 "${reg[@]}"
done
if [ "$mode" != timed ]; then
	mapfile -t slow < <(find "$out/corpus/slow" -type f | sort)
	start=$(date +%s%N)
	# libFuzzer's timeout is wall-clock time: an input costing 25 s of
	# CPU here (the instrumented JSON check of 86 MB of output) took 69 s
	# on a loaded host, and CI builds the debug kernel beside these runs;
	# the scale bound itself is scale_test's, in CPU time
	run_inputs fuzz_report fuzz_report-slow 300 "${slow[@]}"
	echo "fuzz: fuzz_report: large inputs took $((($(date +%s%N) - start) / 1000000)) ms"
fi

# fuzz_one TARGET: SECS seconds of TARGET; its summary line (and on failure
# its log's tail) go to OUT/logs/TARGET-summary.txt; exit status 1 if it
# failed
fuzz_one() {
	local t=$1 work="$out/work/$1" log="$out/logs/$1-fuzz.log" status rc=0 execs rate cov

	rm -rf "$work"
	mkdir -p "$work"
	if "$out/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
		"$work" "$out/corpus/${seeds[$t]}" "$here/regress/${t#fuzz_}" \
		>"$log" 2>&1; then
		status="no crash, no sanitizer report, no timeout, no OOM"
	else
		status="FAILED: $(grep -m1 -E 'ERROR|runtime error|timeout|out-of-memory' "$log")"
		rc=1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1)
	{
		echo "fuzz: $t: ${execs:-?} executions in $secs s (${rate:-?}/s), $cov: $status"
		[ "$rc" = 0 ] || tail -n 30 "$log" | sed 's/^/    /'
	} >"$out/logs/$t-summary.txt"
	return $rc
}

# The targets run side by side when there are CPUs for them (libFuzzer is
# single-threaded; each still gets its SECS seconds).
if [ "$mode" != regress ]; then
	targets=(fuzz_ring fuzz_report)
	if [ "$(nproc)" -ge ${#targets[@]} ]; then
		pids=()
		for t in "${targets[@]}"; do
			fuzz_one "$t" &
			pids+=($!)
		done
		for p in "${pids[@]}"; do
			wait "$p" || fail=1
		done
	else
		for t in "${targets[@]}"; do
			fuzz_one "$t" || fail=1
		done
	fi
	for t in "${targets[@]}"; do
		cat "$out/logs/$t-summary.txt"
	done
fi
exit $fail
