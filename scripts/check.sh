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
	timings+=("$(printf '%-28s %6ss' "$name" "$(elapsed "$t0" "$(now)")")")
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
# Host-only items (the static checks, the tools' unit tests and fuzz
# targets, the package test: about 55, 100, 60 and 230 s), and before them
# the modules of the main lane's kernels but its first (vmtest.sh --build:
# 20-40 s of each kernel's turn, made in its turn no more), run in a third
# lane at nice BACKGROUND_NICE (default 19) when there is a second lane of
# guests: in what the guests leave of the 2 host CPUs (CI108: 84 of 100
# busy, a guest waits on deadlines and timers) rather than as items of
# either lane, whose guests start at once.  On a fresh machine the debug
# kernel's build (nice 19 too) shares that room with them, as it shared
# it with the same items at nice 5 before (they then delayed the second
# lane instead).  The fuzz targets run FUZZ_SECONDS each by the clock,
# on less CPU there: their saved inputs run whole in the unit tests.
# HOST_BACKGROUND=0 runs them here, before the guests (the package test in
# the second lane), as one lane does.
background=()
if [ ${#beside_kernels[@]} -gt 0 ] && [ "${HOST_BACKGROUND:-1}" != 0 ]; then
	background=(modules static host-tests)
	[ "${PACKAGES:-1}" = 0 ] || background+=(packages)
fi
step "host build" host_build
if [ ${#background[@]} -eq 0 ]; then
	step "static checks" "$top/scripts/static-check.sh"
	step "tools unit tests" tools_check
	step "tools fuzz targets" tools_fuzz
fi
# The harness self-check (three short 6.1 guests, about 55 s) is the first
# item of the second lane when there is one (on a fresh machine that lane
# waits for the debug kernel's build anyway), else a step here.
if [ "${SELFCHECK:-1}" != 0 ] && [ ${#beside_kernels[@]} -eq 0 ]; then
	step "harness self-check" "$top/scripts/vmtest.sh" --selfcheck
fi
# The kernels of BESIDE_KERNELS (default "debug") run in a second lane,
# beside the others, at nice BESIDE_NICE (default 5).  A production guest
# keeps about one of the two host CPUs busy on average (its tests wait on
# deadlines and timers); the debug guest (CPU-bound: KASAN) takes most of
# what it leaves, and the production guests' timing keeps priority (at
# nice 10 the debug guest's busy-CPU cases of capture_irqsoff_test were
# late 8 times of 8 while 5.10 ran beside it).  The debug guest took 350 s
# to 1,060 s alone, after its kernel's build (about 20 minutes from `make
# deps`, which starts it).  The lane's output is printed when it is done.
# BESIDE_KERNELS="" runs everything in turn.
# Done with its own, the second lane takes the main lane's kernels from the
# end of the list while the main lane takes them from the start (a claim is
# a directory made in build/claims, which only one lane can make): when the
# debug kernel was built before (a warm cache), the two lanes end together
# instead of one CPU idling through the last kernels; on a cold machine the
# debug lane is the longer one and claims nothing.
beside=()
[ ${#beside_kernels[@]} -eq 0 ] || [ "${SELFCHECK:-1}" = 0 ] || beside+=(selfcheck)
[ ${#beside_kernels[@]} -eq 0 ] || [ ${#background[@]} -gt 0 ] || [ "${PACKAGES:-1}" = 0 ] ||
	beside+=(packages)
[ ${#beside_kernels[@]} -eq 0 ] || beside+=("${beside_kernels[@]}")
if [ ${#beside_kernels[@]} -eq 0 ] && [ "${PACKAGES:-1}" != 0 ]; then
	step "packages" "$top/scripts/package.sh" test
fi

# item_title NAME: what an item of a lane is, for its lines
item_title() {
	case $1 in
	modules) echo "modules ahead" ;;
	static) echo "static checks" ;;
	host-tests) echo "tools tests" ;;
	selfcheck) echo "harness self-check" ;;
	packages) echo "packages" ;;
	*) echo "kernel $1" ;;
	esac
}

# lane_item LANE NAME NICE: one item of the second lane (LANE "beside") or
# of the host-only one ("background"), at nice NICE, its output to
# build/logs/LANE-NAME.out and its time to build/logs/lanes.timings
lane_item() {
	local lane=$1 name=$2 nice=$3 t0 out=$logs/$1-$2.out
	t0=$(now)
	case $name in
	modules) nice -n "$nice" "$top/scripts/vmtest.sh" --build "${main_kernels[@]:1}" ;;
	static) nice -n "$nice" "$top/scripts/static-check.sh" ;;
	host-tests)
		(
			renice -n "$nice" -p "$BASHPID" >/dev/null
			echo "=== tools unit tests"
			tools_check
			echo "=== tools fuzz targets"
			tools_fuzz
		)
		;;
	selfcheck) nice -n "$nice" "$top/scripts/vmtest.sh" --selfcheck ;;
	packages) nice -n "$nice" "$top/scripts/package.sh" test ;;
	*) nice -n "$nice" "$top/scripts/vmtest.sh" "$name" ;;
	esac >"$out" 2>&1
	printf '%-28s %6ss\n' "$(item_title "$name") ($lane)" "$(elapsed "$t0" "$(now)")" \
		>>"$logs/lanes.timings"
	echo "=== $(item_title "$name") ($lane) done$(grep -E '^-- ' "$out" | head -n 1 | sed 's/^/: /')"
}

# lane_output LANE: print the output of LANE's items, in their order
lane_output() {
	local b items where="beside the guests"
	[ "$1" = beside ] || where="in the background"
	mapfile -t items <"$logs/$1.items"
	for b in "${items[@]}"; do
		echo
		echo "=== $(item_title "$b") (ran $where)"
		cat "$logs/$1-$b.out"
	done
}

# claim KERNEL: this lane runs KERNEL (no other lane has it)
claims=$build/claims
rm -rf "$claims"
mkdir -p "$claims"
claim() { mkdir "$claims/$1" 2>/dev/null; }

: >"$logs/lanes.timings"
beside_pid=
if [ ${#beside[@]} -gt 0 ]; then
	echo
	echo "=== guests: preparing the initramfs base"
	"$top/scripts/vmtest.sh" --prepare || result FAIL guests/prepare "scripts/vmtest.sh --prepare failed"
	export VMTEST_PREPARED=1
fi
# (after the initramfs base: the tools' unit tests build in tools/, whose
# programs the base copies)
background_pid=
if [ ${#background[@]} -gt 0 ]; then
	echo "=== ${background[*]}: running in the background at nice ${BACKGROUND_NICE:-19}" \
		"(output at the end; live: $logs/background-NAME.out)"
	printf '%s\n' "${background[@]}" >"$logs/background.items"
	(
		for b in "${background[@]}"; do
			lane_item background "$b" "${BACKGROUND_NICE:-19}"
		done
	) &
	background_pid=$!
fi
if [ ${#beside[@]} -gt 0 ]; then
	echo "=== ${beside[*]}: running beside the other kernels at nice ${BESIDE_NICE:-5}" \
		"(output at the end; live: $logs/beside-NAME.out)"
	: >"$logs/beside.items"
	(
		for b in "${beside[@]}"; do
			echo "$b" >>"$logs/beside.items"
			lane_item beside "$b" "${BESIDE_NICE:-5}"
		done
		# a kernel claimed from the main lane keeps its priority
		for ((i = ${#main_kernels[@]} - 1; i >= 0; i--)); do
			claim "${main_kernels[i]}" || break
			echo "${main_kernels[i]}" >>"$logs/beside.items"
			lane_item beside "${main_kernels[i]}" 0
		done
	) &
	beside_pid=$!
fi
for k in "${main_kernels[@]}"; do
	claim "$k" || break
	step "kernel $k" "$top/scripts/vmtest.sh" "$k"
done
[ -z "$beside_pid" ] || { wait "$beside_pid"; lane_output beside; }
[ -z "$background_pid" ] || { wait "$background_pid"; lane_output background; }
while read -r line; do
	timings+=("$line")
done <"$logs/lanes.timings"

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
printf '  %-28s %6ss\n' "total" "$(elapsed "$t_start" "$(now)")"
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
