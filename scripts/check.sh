#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check` (after `make deps`): static checks, the tools' host unit
# tests, the selftests in a guest of every kernel of KERNELS, and the harness
# self-check.  Keeps going after a failure, prints a per-kernel summary and
# ends with the line "N passed, N failed"; exits non-zero if anything failed.
#
# Counted: the host builds of selftests and tools, each static check, the
# tools' unit tests (one item), the tools' fuzz targets (one item), the
# package test (scripts/package.sh: build, lintian, install, DKMS, consumers,
# purge), each selftest on each kernel, the harness self-check; plus, as
# failures only, anything
# wrong with a kernel itself (module build, insmod, rmmod, splat, kmemleak,
# guest timeout or crash).
set -uo pipefail
# The whole script is one block: bash parses it before running it, so
# editing this file while it runs cannot derail the run.
{

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib.sh"
lock_tree

t_start=$(now)
: >"$RESULTS"
export VMTEST_NESTED=1
timings=()

step() {
	local name=$1 t0
	shift
	echo
	echo "=== $name"
	t0=$(now)
	"$@"
	timings+=("$(printf '%-24s %6ss' "$name" "$(elapsed "$t0" "$(now)")")")
}

tools_check() {
	if [ ! -f "$top/tools/Makefile" ]; then
		echo "  (no tools/Makefile yet)"
		return 0
	fi
	# (not `make -n check`: its recipe runs sub-makes even in a dry run)
	if ! grep -q '^check:' "$top/tools/Makefile"; then
		result FAIL tools/check "tools/Makefile has no check target"
		return
	fi
	if make --no-print-directory -C "$top/tools" check >"$logs/tools-check.log" 2>&1; then
		result PASS tools/check "$(grep -cE '^ok ' "$logs/tools-check.log") TAP ok lines"
	else
		tail -n 30 "$logs/tools-check.log" | sed 's/^/    /'
		result FAIL tools/check "make -C tools check failed, see $logs/tools-check.log"
	fi
}

# The fuzz targets of the tools, FUZZ_SECONDS (default 60) each; their saved
# inputs already ran in tools_check.
tools_fuzz() {
	if ! command -v clang-14 >/dev/null; then
		result FAIL tools/fuzz "clang-14 missing: run scripts/deps.sh"
		return
	fi
	if make --no-print-directory -C "$top/tools" fuzz-timed \
		FUZZ_SECONDS="${FUZZ_SECONDS:-60}" >"$logs/tools-fuzz.log" 2>&1; then
		grep '^fuzz: ' "$logs/tools-fuzz.log" | sed 's/^/  /'
		result PASS tools/fuzz "$(grep -c 'executions in' "$logs/tools-fuzz.log") targets, \
${FUZZ_SECONDS:-60} s each"
	else
		tail -n 30 "$logs/tools-fuzz.log" | sed 's/^/    /'
		result FAIL tools/fuzz "a fuzz target failed, see $logs/tools-fuzz.log"
	fi
}

host_build() {
	local d
	for d in selftests tools; do
		if [ "$d" = tools ] && [ ! -f "$top/tools/Makefile" ]; then
			echo "  (no tools/Makefile yet)"
			continue
		fi
		if make -s -k --no-print-directory -C "$top/$d" >"$logs/$d-build.log" 2>&1; then
			result PASS "$d/build"
		else
			grep -E 'error|Error' "$logs/$d-build.log" | head -n 10 | sed 's/^/    /'
			result FAIL "$d/build" "make -C $d failed, see $logs/$d-build.log"
		fi
	done
}

read -r -a kernels <<<"${KERNELS:-5.10 6.1 6.12 6.12-rt 7.2 7.2-rt 7.3 debug}"

# The debug kernel (about 15 minutes of CPU on a fresh machine) builds in
# the background at the lowest priority while the other steps run (the
# guests of the other kernels wait on timers much of the time); its turn in
# the loop below waits for the build (scripts/debug-kernel.sh locks).
# DEBUG_KERNEL_BACKGROUND=0 builds it in its turn instead.
if [[ " ${kernels[*]} " == *" debug "* ]] && [ "${DEBUG_KERNEL_BACKGROUND:-1}" = 1 ]; then
	echo
	echo "=== debug kernel: building in the background (log: $logs/debug-kernel.log)"
	nice -n 19 "$top/scripts/debug-kernel.sh" >/dev/null 2>"$logs/debug-kernel.log" &
fi
main_kernels=() beside_kernels=()
for k in "${kernels[@]}"; do
	if [[ " ${BESIDE_KERNELS-debug} " == *" $k "* ]] && [ ${#kernels[@]} -gt 1 ]; then
		beside_kernels+=("$k")
	else
		main_kernels+=("$k")
	fi
done
step "host build" host_build
step "static checks" "$top/scripts/static-check.sh"
# With a second lane the tools' unit tests and fuzz targets (host only,
# about 100 s and 60 s) are its first items, beside the first guest: that
# lane waits for the debug kernel's build after the package test anyway
# (CI85, cold: 5.5 minutes idle), and the main lane's guests start 160 s
# sooner.  HOST_TESTS_BESIDE=0 runs them here, before the guests.
host_tests_beside=0
[ ${#beside_kernels[@]} -eq 0 ] || [ "${HOST_TESTS_BESIDE:-1}" = 0 ] || host_tests_beside=1
if [ "$host_tests_beside" = 0 ]; then
	step "tools unit tests" tools_check
	step "tools fuzz targets" tools_fuzz
fi
# The harness self-check (three short 6.1 guests, about 65 s) is an item of
# the second lane when there is one: on a fresh machine that lane waits for
# the debug kernel's build after the package test anyway.
if [ "${SELFCHECK:-1}" != 0 ] && [ "$host_tests_beside" = 0 ]; then
	step "harness self-check" "$top/scripts/vmtest.sh" --selfcheck
fi
# The kernels of BESIDE_KERNELS (default "debug") run in a second lane,
# beside the others, at nice BESIDE_NICE (default 5), after the package
# test.  A production guest keeps about one of the two host CPUs busy on
# average (its tests wait on deadlines and timers); the debug guest
# (CPU-bound: KASAN) and the package test's builds take most of what they
# leave, and the production guests' timing keeps priority (at nice 10 the
# debug guest's busy-CPU cases of capture_irqsoff_test were late 8 times
# of 8 while 5.10 ran beside it).  The debug guest took 350 s to 1,060 s
# alone, after its kernel's build (about 20 minutes from `make deps`,
# which starts it); the package test about 2 minutes.  The lane's output
# is printed when it is done.  BESIDE_KERNELS="" runs everything in turn.
# Done with its own, the second lane takes the main lane's kernels from the
# end of the list while the main lane takes them from the start (a claim is
# a directory made in build/claims, which only one lane can make): when the
# debug kernel was built before (a warm cache), the two lanes end together
# instead of one CPU idling through the last kernels; on a cold machine the
# debug lane is the longer one and claims nothing.
beside=()
[ "$host_tests_beside" = 0 ] || beside+=(host-tests)
[ "$host_tests_beside" = 0 ] || [ "${SELFCHECK:-1}" = 0 ] || beside+=(selfcheck)
[ ${#beside_kernels[@]} -eq 0 ] || [ "${PACKAGES:-1}" = 0 ] || beside+=(packages)
[ ${#beside_kernels[@]} -eq 0 ] || beside+=("${beside_kernels[@]}")
if [ ${#beside_kernels[@]} -eq 0 ] && [ "${PACKAGES:-1}" != 0 ]; then
	step "packages" "$top/scripts/package.sh" test
fi

# beside_item NAME [NICE]: one item of the second lane, its output to a
# file; at nice BESIDE_NICE unless NICE is given (a kernel claimed from the
# main lane keeps the main lane's priority)
beside_item() {
	local t0 out=$logs/beside-$1.out nice=${2:-${BESIDE_NICE:-5}}
	t0=$(now)
	if [ "$1" = host-tests ]; then
		(
			renice -n "$nice" -p "$BASHPID" >/dev/null
			echo "=== tools unit tests"
			tools_check
			echo "=== tools fuzz targets"
			tools_fuzz
		) >"$out" 2>&1
		printf '%-24s %6ss\n' "tools tests (beside)" "$(elapsed "$t0" "$(now)")" >>"$logs/beside.timings"
		echo "=== tools unit tests and fuzz targets (beside the guests) done"
		return
	fi
	if [ "$1" = selfcheck ]; then
		nice -n "$nice" "$top/scripts/vmtest.sh" --selfcheck >"$out" 2>&1
		printf '%-24s %6ss\n' "harness self-check (beside)" "$(elapsed "$t0" "$(now)")" >>"$logs/beside.timings"
		echo "=== harness self-check (beside the guests) done"
		return
	fi
	if [ "$1" = packages ]; then
		nice -n "$nice" "$top/scripts/package.sh" test >"$out" 2>&1
		printf '%-24s %6ss\n' "packages (beside)" "$(elapsed "$t0" "$(now)")" >>"$logs/beside.timings"
		echo "=== packages (beside the guests) done"
		return
	fi
	nice -n "$nice" "$top/scripts/vmtest.sh" "$1" >"$out" 2>&1
	printf '%-24s %6ss\n' "kernel $1 (beside)" "$(elapsed "$t0" "$(now)")" >>"$logs/beside.timings"
	echo "=== kernel $1 (beside the others) done: $(grep -E '^-- ' "$out" | head -n 1)"
}

# claim KERNEL: this lane runs KERNEL (no other lane has it)
claims=$build/claims
rm -rf "$claims"
mkdir -p "$claims"
claim() { mkdir "$claims/$1" 2>/dev/null; }

beside_pid=
if [ ${#beside[@]} -gt 0 ]; then
	echo
	echo "=== guests: preparing the initramfs base"
	"$top/scripts/vmtest.sh" --prepare || result FAIL guests/prepare "scripts/vmtest.sh --prepare failed"
	export VMTEST_PREPARED=1
	: >"$logs/beside.timings"
	echo "=== ${beside[*]}: running beside the other kernels at nice ${BESIDE_NICE:-5}" \
		"(output at the end; live: $logs/beside-NAME.out)"
	: >"$logs/beside.items"
	(
		for b in "${beside[@]}"; do
			echo "$b" >>"$logs/beside.items"
			beside_item "$b"
		done
		for ((i = ${#main_kernels[@]} - 1; i >= 0; i--)); do
			claim "${main_kernels[i]}" || break
			echo "${main_kernels[i]}" >>"$logs/beside.items"
			beside_item "${main_kernels[i]}" 0
		done
	) &
	beside_pid=$!
fi
for k in "${main_kernels[@]}"; do
	claim "$k" || break
	step "kernel $k" "$top/scripts/vmtest.sh" "$k"
done
if [ -n "$beside_pid" ]; then
	wait "$beside_pid"
	mapfile -t beside <"$logs/beside.items"
	for b in "${beside[@]}"; do
		echo
		if [ "$b" = host-tests ]; then
			echo "=== tools unit tests and fuzz targets (ran beside the guests)"
		elif [ "$b" = packages ]; then
			echo "=== packages (ran beside the guests)"
		elif [ "$b" = selfcheck ]; then
			echo "=== harness self-check (ran beside the guests)"
		else
			echo "=== kernel $b (ran beside the others)"
		fi
		cat "$logs/beside-$b.out"
	done
	while read -r line; do
		timings+=("$line")
	done <"$logs/beside.timings"
fi

# failure_details: the assertion and log lines of each failed guest test
# (a CI that shows only the end of the output shows why, not only what)
failure_details() {
	local item k t
	awk -F'\t' '$1 == "FAIL" && $2 ~ /\// { print $2 }' "$RESULTS" | while read -r item; do
		k=${item%%/*} t=${item#*/}
		[ -e "$logs/$k.chan.txt" ] || continue
		echo "  why $item:"
		awk -v t="$t" '
			$0 == "@@VMTEST test-begin " t { on = 1; next }
			on && index($0, "@@VMTEST test " t " ") == 1 { on = 0 }
			on && (/^# [A-Za-z0-9_.]+:[0-9]+:/ || /^not ok / || /^#   +[a-z]/) { print "    " $0 }
		' "$logs/$k.chan.txt" | head -n 40
	done
}

echo
echo "=== summary"
for t in "${timings[@]}"; do echo "  $t"; done
printf '  %-24s %6ss\n' "total" "$(elapsed "$t_start" "$(now)")"
for k in "${kernels[@]}"; do
	awk -F'\t' -v k="$k/" 'index($2, k) == 1 { c[$1]++ }
		END { printf "  %-10s %s: %d passed, %d failed, %d skipped\n", substr(k, 1, length(k) - 1),
			c["FAIL"] ? "FAIL" : "ok  ", c["PASS"], c["FAIL"], c["SKIP"] }' "$RESULTS"
done
if grep -q $'^NOTE\t[^\t]*\tFLAKY' "$RESULTS"; then
	echo "  flaky (failed, then passed on a retry; RETRY_FAILED=0 fails them):"
	awk -F'\t' '$1 == "NOTE" && $3 ~ /^FLAKY/ { printf "    %s  -- %s\n", $2, $3 }' "$RESULTS"
fi
if grep -q '^FAIL' "$RESULTS"; then
	echo "  failed:"
	awk -F'\t' '$1 == "FAIL" { printf "    %s  -- %s\n", $2, $3 }' "$RESULTS"
	for k in "${kernels[@]}"; do
		if [ -e "$logs/$k.log" ] &&
			awk -F'\t' -v k="$k/" '$1 == "FAIL" && index($2, k) == 1 { f = 1 } END { exit !f }' "$RESULTS"; then
			echo "  guest log of $k: $logs/$k.log"
		fi
	done
	failure_details
fi
tally "$RESULTS"
exit
}
