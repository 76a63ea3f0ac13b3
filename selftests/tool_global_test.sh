#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A system-wide reader (root) records another process's session; stats
# counts it (and the locked memory of its ring while it runs); an
# unprivileged user is refused.
. ./tool_lib.sh
need stallcap stallcap-exit-early

# The reader records until SIGINT, once the stall is over (-d 300 bounds
# it should the test die first).
stallcap record -v --global -o "$work/global.data" -d 300 &
rec=$!
# it is up once it has written its first chunks (host info, vDSO): up to
# 60 s (a loaded debug guest took over 5 s)
data_bytes() { wc -c <"$work/global.data" 2>/dev/null || echo 0; }
i=0
while [ "$i" -lt 600 ] && [ "$(data_bytes)" -lt 4096 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the system-wide reader is up" [ "$(data_bytes)" -ge 4096 ]
# the reader's ring is charged while it runs: locked memory is counted
stallcap stats --json >"$work/during.json"
cat "$work/during.json" | sed 's/^/# /'
check "stats while recording: the ring's locked bytes, the allowance and its use" \
	grep -qE '"mlock_bytes":[1-9][0-9]*,"mlock_used_bytes":[1-9][0-9]*,.*"locked_bytes":[1-9][0-9]*,"locked_rlimit_bytes":[0-9]+' "$work/during.json"
check "stats text: locked_bytes, locked_rlimit_bytes and the allowance" \
	sh -c 'stallcap stats >"$1" && grep -qE "^  locked_bytes +[1-9]" "$1" &&
	       grep -qE "^  locked_rlimit_bytes +[0-9]+$" "$1" &&
	       grep -qE "^  locked memory allowance [1-9][0-9]* KiB per user \(mlock_kb\), [1-9][0-9]* KiB used by this user$" "$1"' _ "$work/during.txt"
stallcap-exit-early 300 20
check "the program under watch exits 0" [ $? = 0 ]
sleep 1
kill -INT $rec
wait $rec
check "record --global exits 0" [ $? = 0 ]
stallcap report -f json "$work/global.data" >"$work/global.json"
stallcap report "$work/global.data" >"$work/global.txt"
show "$work/global.txt"
resolved() { usyms "$1" | in_order fixture_spin fixture_level1 main; }
check "the other session's stall is recorded and resolved" \
	any_sample "$work/global.json" stallcap-exit-e resolved
# the file says what the recording host could mark: this kernel, PSI on
# (the matrix's kernels), or off (the harness's alt boot, psi=0) and why
if [ -e /proc/pressure/memory ]; then
	check "the report's host line: this kernel, memory stalls marked, no note" \
		sh -c 'grep -qF "{\"type\":\"host\",\"release\":\"$(uname -r)\"," "$1" &&
		       grep -qE "^\{\"type\":\"host\",.*\"psi\":true,\"memstall_marked\":true\}$" "$1" &&
		       ! grep -q "memory stalls not marked" "$2"' _ "$work/global.json" "$work/global.txt"
else
	check "the report's host line: this kernel, PSI off, memory stalls not marked, why" \
		sh -c 'grep -qF "{\"type\":\"host\",\"release\":\"$(uname -r)\"," "$1" &&
		       grep -qE "^\{\"type\":\"host\",.*\"psi\":false,\"memstall_marked\":false,\"memstall_note\":\"[^\"]*psi=0" "$1" &&
		       grep -q "^memory stalls not marked: pressure stall information was off on the recording host" "$2"' \
		_ "$work/global.json" "$work/global.txt"
fi

stallcap stats --json >"$work/stats.json"
check "stats --json exits 0" [ $? = 0 ]
cat "$work/stats.json" | sed 's/^/# /'
check "stats: ABI 2, x86-64 registers, at least one stall counted" \
	grep -qE '"abi_version":2,.*"arch":"x86_64",.*"stalls":[1-9]' "$work/stats.json"
check "stats text" sh -c 'stallcap stats | grep -q "^  stalls  *[1-9]"'
# every kernel of the matrix has CPU bandwidth control and pressure stall
# information: each feature by its name (none as "bitN"), PSI on (off in
# the alt boot: said in both forms)
if [ -e /proc/pressure/memory ]; then psi=true; else psi=false; fi
check "stats: the newest features by name, pressure stall information $psi" \
	grep -qE '"features":\[[a-z_",]*"throttle","memstall","signal_stack","user_stack_more","deadline_tsc","watch_busy","attach_recv","recv_pipe","syscall","recv_tty","wait_devices","wait_splice"\],"psi":'$psi, "$work/stats.json"
check "stats text: the newest features by name, a note of PSI off only when it is" \
	sh -c 'stallcap stats >"$1" && grep -qE "^module: ABI 2, features:( [a-z_]+)* throttle memstall signal_stack user_stack_more deadline_tsc watch_busy attach_recv recv_pipe syscall recv_tty wait_devices wait_splice$" "$1" &&
	       if [ "$2" = true ]; then ! grep -q "memory stalls not marked" "$1";
	       else grep -q "memory stalls not marked: .*psi=0" "$1"; fi' _ "$work/stats2.txt" "$psi"

if command -v su >/dev/null && id user >/dev/null 2>&1; then
	su user -s /bin/sh -c "stallcap record --global -o /tmp/x.data -d 1" >"$work/user.out" 2>&1
	rc=$?
	sed 's/^/# /' "$work/user.out"
	refused() { [ "$rc" != 0 ] && grep -q CAP_SYS_ADMIN "$work/user.out"; }
	check "--global as a user fails with a clear message" refused
fi
finish
