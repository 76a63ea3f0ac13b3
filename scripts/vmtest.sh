#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build stallcap for a kernel, boot that kernel in QEMU (TCG) with a busybox
# initramfs, load the module, run the selftests (or the demo), unload it and
# judge the guest's output.
#
#   scripts/vmtest.sh [-v] [KERNEL...]   selftests on each kernel (default
#                                        $KERNELS or all seven)
#   scripts/vmtest.sh --prepare          only the host builds and the
#                                        initramfs base (for runs that set
#                                        VMTEST_PREPARED=1, see below)
#   scripts/vmtest.sh --build KERNEL...  only the modules for each kernel
#   scripts/vmtest.sh --run [KERNEL]     `make run`: the demo (or the smoke
#                                        test) on one kernel (default 6.12)
#   scripts/vmtest.sh --selfcheck [KERNEL]
#                                        prove the harness sees failures: a
#                                        failing and a hanging test, a module
#                                        that WARNs, an rmmod that fails and a
#                                        guest that times out (default 6.1)
#
# KERNEL is a name of .cache/kernels.list (6.1, 6.12, 6.12-rt: Debian 12's,
# built on the host), of .cache/kernels-roots.list (5.10, 7.2, 7.2-rt, 7.3: other
# suites', built in their debootstrap root, see scripts/kernel-root.sh), or
# "debug" (scripts/debug-kernel.sh: lockdep, KASAN, kmemleak; built once,
# ~15 min), "6.12-clang" (scripts/debug-kernel.sh clang: clang with kCFI
# and ThinLTO; outside the default list), or "tree" (the kernel tree built at TREE_KDIR, its bzImage and
# modules: an upstream release, e.g. one checked by scripts/upstream-check.sh
# and then built whole; by hand).
#
# A second, short boot with nohz_full=1 isolcpus=1 runs isolated_cpu_test on
# the kernels of ISOLATED_KERNELS (default "6.12 6.12-rt"; results named
# KERNEL-isolated/...).
#
# A boot with kernel settings other than Debian's defaults, "alt":
# page-table isolation forced on (pti=on: the system call entry then uses
# %rsp as scratch for its page-table switch, module/capture_entry.c) and
# pressure stall information off (psi=0: no sample can be marked a memory
# stall, and reports say why), with ALT_SMP vCPUs (default 4: more CPUs
# than run buddy checkers, module/buddy.c), runs ALT_TESTS (default
# "capture_nmi_irq_test capture_irqsoff_test tool_global_test.sh") on the
# kernels of ALT_KERNELS (default 6.12; results named KERNEL-alt/...).
#
# On the kernels of NOTW_KERNELS (default "6.12 debug") the guest then
# loads the module again, built as for a kernel that does not export
# task_work_add() (upstream Linux, Fedora, RHEL, Arch: see
# kdir_without_task_work), and runs NOTW_TESTS (on debug NOTW_TESTS_DEBUG),
# with STALLCAP_TEST_NO_TASK_WORK=1 in their environment (results named
# KERNEL-notw/...); NOTW_SAME_BOOT=0 gives them a boot of their own.
#
# A guest that dies of the emulator's stale int3 (emulator_int3), or hangs
# with a vCPU running a patched site's stale translation forever
# (emulator_stale_patch), is booted again (BOOT_RETRIES, default 1) to run
# the tests that had not finished.
#
# Environment: FUZZ_KERNEL (the kernel whose fuzz_test makes its full 10^6
# calls, default 6.1; the others make FUZZ_CALLS_SHORT=100000 in at most
# FUZZ_SECONDS_SHORT=45 s), TORTURE_KERNELS (the kernels whose torture_test
# runs its full 30 s, default "6.1"; the others TORTURE_SECONDS_SHORT=15),
# ARM_CYCLES_DEBUG (arm_test's cycles on debug, default 1000 of 10000),
# TEST_TIMEOUT (s per test, default 300, doubled on debug),
# GUEST_TIMEOUT (s per boot), GUEST_SILENCE (s without guest output before
# the guest counts as hung, default TEST_TIMEOUT + 120; after
# GUEST_PEEK_AFTER s of silence, default 90, and every minute after, its
# vCPUs are looked at for the emulator's int3 loop), SMP (vCPUs, default 2), MEM (default 1G, 2G on
# debug), MODULE_PARAMS (insmod arguments), MODULE_KCFLAGS (default -Werror),
# V=1 (stream the guest's output), RESULTS (results file, see scripts/lib.sh),
# TESTS (names of selftests to run instead of all, e.g. TESTS="arm_test why_test"),
# REPEAT (with TESTS, or ALT_TESTS in the alt boot: each named test runs
# REPEAT times in one boot, to hunt a flaky one; default 1),
# RETRY_FAILED (default 2: a test that fails runs again in the same boot,
# up to that many times while it fails: a kselftest-harness program only
# its failed cases (-r), a script, a program that timed out or died before
# it reported every case whole, and a second timeout ends it; passing then,
# it counts as passed and its failures are a NOTE "FLAKY" with the failed
# cases, which make check's summary lists; 0 fails it at once; REPEAT > 1
# never retries),
# SLOW_NMI_FAILS=1 (an NMI handler over 1 ms fails the kernel; default: a NOTE),
# TOOL_TESTS, TOOL_KERNELS, DEBUG_SKIP (which kernels leave which tests to
# the others: see their definitions below), GUEST_CMDLINE (the kernel
# command line's last words, default loglevel=7: e.g. "loglevel=7
# preempt=full threadirqs"), GUEST_EXTRA (more host files for the guest's
# root, with their libraries: a program to try by hand before a test of it
# exists), QEMU_EXTRA (more QEMU arguments).
#
# A guest silent for GUEST_SILENCE seconds is read through its QEMU monitor
# before it is killed (where_hung, scripts/hung-guest.py): each vCPU's
# instruction pointer, interrupt flag and the kernel addresses on its
# stack, named by the kernel's symbols (kernel_symbols: a System.map, or its
# /proc/kallsyms read once in a second boot); they are in the failure's
# summary line and in build/logs/<kernel>.log.
#
# A kernel fails when a test fails on its last retry (exit status other than
# 0 = pass and 4 = skip) or times out, when insmod or rmmod fails, when the
# guest does not finish in time or dies, when the kernel log holds a splat
# (see splat_re) or when kmemleak reports a leak that mentions stallcap.
# The guest's full output is kept in build/logs/<kernel>.log.
#
# Guest contract for the tools (tools/Makefile, target print-guest-files):
# one path per line, relative to tools/.  An ELF file goes to /usr/bin, any
# other file to /usr/share/stallcap; "PATH DEST" (two fields) puts PATH at
# the absolute guest path DEST.  `make run` runs /usr/share/stallcap/demo.sh
# when it exists.
set -uo pipefail
# The whole script is one block: bash parses it before running it, so
# editing this file while it runs cannot derail the run.
{

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib.sh"
lock_tree

mode=check
verbose=${V:-0}
# Tool-level tests: they check the tool's own output (formats, DWARF,
# namespaces, an exited program's symbols, the in-process library, a live
# report) over module paths the C selftests and the tool tests every kernel
# keeps (tool_global, tool_why, capture_ipi) drive everywhere.  They run on
# the production kernels of TOOL_KERNELS: the oldest (5.10) and the newest
# (7.3); 6.1, 6.12, 7.2, the PREEMPT_RT kernels and debug differ from those in
# module paths only, which their C selftests drive.  tool_live reads a live
# report's first printed block of a deadlocked thread, which on debug (3x
# slower) was too often a sample taken before the thread slept in its futex
# (2 of 2 runs on 2026-11-23).  The guests are most of `make check` (CI
# budget: 60 minutes): this saves about 40 s of each of 6.1 and 6.12 and
# 60 s of each RT guest.  TOOL_KERNELS="5.10 6.1 6.12 6.12-rt 7.2 7.2-rt
# debug" runs them everywhere.  The real servers watched unmodified
# (attach_redis, attach_node, attach_memcached: the claim of `stallcap
# record --deadline`, whose probes differ from kernel to kernel) run on
# every kernel, debug included: there redis and node took 228 s and 215 s
# while the reader read /proc/kallsyms at their first stall (sscanf and a
# string per symbol under KASAN) and were left out (DEBUG_SKIP); since the
# reader reads it once, when the session opens, in one pass, they take
# 36 s and 34 s there, and debug runs beside the production kernels
# (scripts/check.sh).  DEBUG_SKIP names tests the debug kernel leaves to
# the others: haproxy (CI38: under a loaded host its recv() and shutdown()
# took 100 ms of CPU time there, real stalls of a 100 ms CPU-time watch
# besides the one the test makes), nginx and node, the longest there (219 s each by the guest's
# clock beside the production guests, CI26; 198 s and 408 s on the CI
# machine of 2026-11-27, where the debug guest, CPU-bound, ran for the
# whole main lane and slowed it by a third).  The module paths they take
# (a process's children attached, a many-threaded process, exec and fork
# followed) are driven there by attach_test, attach_follow_test and the
# Go and memcached servers.  Redis and Python too went to the production
# kernels (2026-11-29): on CI39's debug guest they took 257 s and 127 s
# (74 s and 56 s the day before), the longest there, and the debug lane's
# length decides how many kernels it can take off the main lane.
# lighttpd (its 40,000-file directory listing) was added to the production
# kernels only, for the same reason.  mosquitto (2026-12-02) is a test of
# the tool's unwinding (a stack through recursive functions, DWARF only)
# more than of the attach, which the other servers drive on every kernel:
# it runs where the tool tests do.  Apache (2026-12-03: prefork children
# idle in accept(), event workers with --park) runs on the production
# kernels, the others' servers driving its module paths on debug.
TOOL_TESTS=${TOOL_TESTS-tool_demo_test.sh tool_event_loop_test.sh tool_exited_test.sh \
tool_dwarf_test.sh tool_newer_records_test.sh tool_ns_test.sh tool_inprocess_test.sh \
tool_live_test.sh tool_kmod_test.sh tool_idle_reader_test.sh tool_unwatched_test.sh \
tool_runner_test.sh attach_mosquitto_test.sh attach_java_test.sh attach_tokio_test.sh \
attach_erlang_test.sh attach_postgres_test.sh attach_cyclictest_test.sh attach_kallsyms_ns_test.sh}
TOOL_KERNELS=${TOOL_KERNELS-5.10 7.3}
# Tests the debug kernel leaves to the others (see above).  The Go server
# (2026-12-05: 176 s of CI100's debug guest, the longest there, on the debug
# lane that a fresh machine waits for) too: attach_test and
# attach_follow_test drive the same module paths on debug.  The benchmark's
# smoke run (below) as well: figures under KASAN prove nothing more.
# memcached too (2026-12-06: 75 s of CPU there, the most of any test after
# attach_test; the i386 program is the unmodified one attached there, and
# attach_test drives every wait with the kprobes as int3 traps).  And the
# why tool test (47 s of CPU there, 4 elsewhere): why_test, why_fault_test,
# why_throttle_test and why_times_test drive its module paths on debug.
DEBUG_SKIP=${DEBUG_SKIP-attach_nginx_test.sh attach_node_test.sh attach_haproxy_test.sh \
attach_redis_test.sh attach_python_test.sh attach_lighttpd_test.sh attach_cgroup_limits_test.sh \
attach_apache_test.sh attach_go_test.sh attach_python_threads_test.sh \
attach_python_pool_test.sh attach_fuse_test.sh attach_fuse_overlayfs_test.sh \
bench_smoke_test attach_memcached_test.sh tool_why_test.sh}
# The longer real servers on three production kernels each (TEST:K,K,K),
# not seven (2026-12-05, CI's 60 minutes: 7 x 110 s of guest time became
# 3 x 110 s): each on an old kernel (5.10 or 6.1), a newer one and a
# PREEMPT_RT one, each kernel attaching to three of them; every wait they
# make is a case of attach_test, which runs on every kernel, and the
# cheaper servers (memcached, haproxy, the CPU quota, the i386 program)
# still run on all seven.  Of the tool kernels' runtimes, the JVM's and
# Erlang's (about 50 s each) run on one of the two: Java on 7.3, Erlang on
# 5.10.  The benchmark's smoke run (bench_smoke_test: the program works,
# not its figures; 14 s of each guest, 29 s on debug) runs on the oldest,
# the default and the newest kernel (2026-12-06: the CI machine took 60.3
# minutes for stop 72).  attach_close_test (2026-12-07: 17 s, most of it
# waiting for the probes' linger to end) runs on the oldest kernel, an RT
# one and the newest, and on debug (the delayed work under lockdep).
# PROGRAM_KERNELS= runs them everywhere.
PROGRAM_KERNELS=${PROGRAM_KERNELS-attach_apache_test.sh:5.10,6.12,7.2-rt \
attach_close_test:5.10,6.12-rt,7.3 \
bench_smoke_test:5.10,6.12,7.3 \
attach_java_test.sh:7.3 attach_erlang_test.sh:5.10 \
attach_go_test.sh:5.10,6.12-rt,7.3 attach_node_test.sh:6.1,6.12,7.3 \
attach_python_test.sh:6.1,7.2,7.2-rt attach_redis_test.sh:5.10,6.12-rt,7.2 \
attach_python_threads_test.sh:5.10,6.12,7.3 attach_python_pool_test.sh:6.1,6.12-rt,7.3 \
attach_nginx_test.sh:6.1,6.12-rt,7.2 attach_lighttpd_test.sh:6.12,7.2-rt,7.3 \
attach_fuse_test.sh:5.10,6.12,7.3 attach_fuse_overlayfs_test.sh:6.1,6.12-rt,7.2}
[ "$verbose" = 1 ] || verbose=0
kernels=()
while [ $# -gt 0 ]; do
	case $1 in
	--run) mode=run ;;
	--selfcheck) mode=selfcheck ;;
	--prepare) mode=prepare ;;
	--build) mode=build ;;
	-v) verbose=1 ;;
	-h|--help) sed -n '3,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) kernels+=("$1") ;;
	esac
	shift
done
if [ ${#kernels[@]} -eq 0 ]; then
	case $mode in
	run) kernels=("${RUN_KERNEL:-6.12}") ;;
	selfcheck) kernels=("${SELFCHECK_KERNEL:-6.1}") ;;
	build) ;;	# only the kernels named (check.sh: none with one main kernel)
	*) read -r -a kernels <<<"${KERNELS:-5.10 6.1 6.12 6.12-rt 7.2 7.2-rt 7.3 debug}" ;;
	esac
fi
[ "$mode" = run ] && verbose=1

SMP=${SMP:-2}
initramfs=$build/initramfs
STALLCAP_GID=990	# group stallcap in the guest
isolated_kernels=${ISOLATED_KERNELS-6.12 6.12-rt}
alt_kernels=${ALT_KERNELS-6.12}
alt_tests=${ALT_TESTS-capture_nmi_irq_test capture_irqsoff_test tool_global_test.sh}
notw_kernels=${NOTW_KERNELS-6.12 debug}
notw_tests=${NOTW_TESTS-abi_test smoke_test capture_user_test capture_kernel_test \
capture_nmi_irq_test capture_irqsoff_test capture_blocked_test deferred_test \
attach_test attach_follow_test fork_test \
attach_lighttpd_test.sh attach_memcached_test.sh attach_go_test.sh \
unprivileged_test capture_defer_test attach_cgroup_limits_test.sh \
tool_dwarf_test.sh}
# (the tool test of the event loop left it on 2026-12-06, for CI's budget:
# the deferred user stack it reads is capture_user_test's, deferred_test's
# and the three servers'; tool_dwarf_test.sh came back for its sleep under
# a 96 KiB frame, which only it reads from outside, past the gap)
# on debug, the paths that differ, under lockdep and KASAN: the deferred
# user copy, attach and its followed threads (the Go server, 102 s of the
# debug lane's CPU-starved time in CI56, runs without task_work on 6.12;
# on debug, attach_follow_test drives the same follow path)
notw_tests_debug=${NOTW_TESTS_DEBUG-capture_user_test deferred_test attach_test \
attach_follow_test}

# Kernel log lines that mean trouble (extended regex, matched after the
# "[ time]" prefix is removed).  Lockdep and KASAN reports start with a line
# of "=" signs; "Call Trace:" catches a dump_stack() of any other origin.
splat_re='WARNING:|BUG:|kernel BUG at|Oops|general protection fault|Kernel panic|'
splat_re+='possible circular locking|inconsistent lock state|possible recursive locking|'
splat_re+='suspicious RCU usage|^=+$|KASAN:|UBSAN:|KFENCE:|ODEBUG:|list_(add|del) corruption|'
splat_re+='turning off the locking correctness validator|'
splat_re+='scheduling while atomic|sleeping function called from invalid context|'
splat_re+='detected stalls? on CPU|RCU stall|rcu_(sched|preempt) (self-)?detected stall|'
splat_re+='soft lockup|hard LOCKUP|blocked for more than|Call Trace:|stack-protector|double fault|'
# a kCFI check that failed (6.12-clang: an indirect call to a function of
# another type)
splat_re+='CFI failure'
# An NMI handler over 1 ms.  stallcap's handler copies no user stack any
# more, but under TCG its kernel-stack unwind still passes 1 ms now and then
# (a first unwind in an NMI costs ~1.3 ms there, a second one 30 us): shown
# as a NOTE, a failure with SLOW_NMI_FAILS=1.
slow_nmi_re='NMI handler .* took too long'
# Expected lines that a pattern above could match (none today; be strict).
allow_re='module verification failed: signature and/or required key missing|loading out-of-tree module taints kernel'

# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------

# copy_with_libs SRC DEST_IN_STAGING: copy an executable or data file
copy_file() {
	local src=$1 dest=$2
	mkdir -p "$(dirname "$dest")"
	cp -L "$src" "$dest"
}

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# add_libs STAGING: copy the shared libraries of every ELF file in STAGING
add_libs() {
	local st=$1 f lib
	find "$st" -type f -perm -u+x | while read -r f; do
		is_elf "$f" || continue
		ldd "$f" 2>/dev/null | awk '
			/=> \// { print $3 } /^[ \t]*\/[^ ]+ \(/ { print $1 }'
	done | sort -u | while read -r lib; do
		[ -e "$st$lib" ] || copy_file "$lib" "$st$lib"
	done
}

# build the kernel-independent part of the initramfs: busybox, init, users,
# selftests, tools and their libraries
build_base() {
	local st=$initramfs/base f line src dest
	rm -rf "$st"
	mkdir -p "$st"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root,home/user} \
		"$st"/{lib/modules,usr/share/stallcap,selftests}
	cp /bin/busybox "$st/bin/busybox"
	busybox --list-full | while read -r f; do
		[ -e "$st/$f" ] || [ -L "$st/$f" ] || ln -s /bin/busybox "$st/$f"
	done
	install -m 755 "$top/scripts/guest/init" "$st/init"
	cat >"$st/etc/passwd" <<-EOF
	root:x:0:0:root:/root:/bin/sh
	user:x:1000:1000:unprivileged test user:/home/user:/bin/sh
	nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	# group stallcap (gid $STALLCAP_GID, the module's gid= in the guest):
	# user is a member, nobody is not
	cat >"$st/etc/group" <<-EOF
	root:x:0:
	user:x:1000:
	stallcap:x:$STALLCAP_GID:user
	nogroup:x:65534:
	EOF
	chown 1000:1000 "$st/home/user" 2>/dev/null || true
	chmod 1777 "$st/tmp"

	# selftests: every built file of selftests/ except sources and harness/
	(cd "$top/selftests" && rsync -a --exclude='harness/' --exclude='kmod/' --exclude='*.[cho]' \
		--exclude='Makefile' --exclude='.*' ./ "$st/selftests/")

	# tools
	if [ -f "$top/tools/Makefile" ]; then
		make -s --no-print-directory -C "$top/tools" print-guest-files 2>/dev/null | while read -r src dest; do
			[ -n "$src" ] || continue
			[ -e "$top/tools/$src" ] || { echo "vmtest: tools file $src missing" >&2; continue; }
			if [ -z "$dest" ]; then
				if is_elf "$top/tools/$src"; then dest=/usr/bin/$(basename "$src")
				else dest=/usr/share/stallcap/$(basename "$src"); fi
			fi
			copy_file "$top/tools/$src" "$st$dest"
		done
	fi
	# real servers from Debian's packages (scripts/deps.sh), unmodified,
	# for the attach tests: the binaries, their libraries (add_libs) and
	# what they read at run time
	for f in $guest_servers ${GUEST_EXTRA:-}; do
		[ -e "$f" ] && copy_file "$f" "$st$f"
	done
	guest_python "$st"
	guest_jre "$st"
	guest_erlang "$st"
	guest_postgres "$st"
	add_libs "$st"
	(cd "$st" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		initrd_compress >"$initramfs/base.cpio.lz4"
}

# initrd_compress: stdin to stdout as the guests' initramfs is compressed.
# LZ4 in its legacy frame, the one the kernel unpacks (each kernel of the
# matrix has CONFIG_RD_LZ4): the kernel took 5.7-7.5 s of every boot to
# gunzip the 300 MB archive under TCG (50 s on debug, under KASAN), the
# guests' one wait that is no test's; LZ4 decompresses about 10 times as
# fast for a quarter more bytes.  Archives compressed apart may be
# concatenated: the kernel reads on past the next frame's magic.
initrd_compress() {
	lz4 -l -q -c
}

# guest_jre STAGING: a Java runtime for attach_java_test.sh at /opt/jre,
# cut from Debian's JDK by jlink to the modules the test uses (the HTTP
# server, jcmd and its attach): about 50 MB instead of the JDK's 260;
# built once per JDK version; native libraries made executable so that
# add_libs copies their libraries
guest_jre() {
	local st=$1 jre=$build/jre ver
	command -v jlink >/dev/null || return 0
	ver=$(jlink --version 2>/dev/null)
	if [ "$(cat "$jre.version" 2>/dev/null)" != "$ver" ] || [ ! -x "$jre/bin/java" ]; then
		rm -rf "$jre" "$jre.version"
		jlink --add-modules java.base,jdk.httpserver,jdk.jcmd,jdk.attach,jdk.management \
			--no-header-files --no-man-pages --output "$jre" >&2 || return 0
		echo "$ver" >"$jre.version"
	fi
	mkdir -p "$st/opt"
	cp -a "$jre" "$st/opt/jre"
	find "$st/opt/jre" -name '*.so' -exec chmod 755 {} +
}

# guest_erlang STAGING: Debian's Erlang runtime (erlang-base) at
# /usr/lib/erlang for attach_erlang_test.sh, without the applications the
# test does not start (the compiler: its module is compiled on the host),
# sources and headers: about 12 MB; /usr/bin/erl the link Debian makes
guest_erlang() {
	local st=$1 root=/usr/lib/erlang
	[ -x "$root/bin/erl" ] || return 0
	mkdir -p "$st/usr/lib" "$st/usr/bin"
	rsync -a --exclude='lib/compiler-*' --exclude='lib/syntax_tools-*' \
		--exclude='lib/erl_interface-*' --exclude='src/' --exclude='include/' \
		--exclude='doc/' --exclude='man/' "$root" "$st/usr/lib/"
	ln -sfn ../lib/erlang/bin/erl "$st/usr/bin/erl"
}

# guest_postgres STAGING: Debian's PostgreSQL server (postgresql-15) for
# attach_postgres_test.sh at its own paths (initdb finds the share
# directory relative to its binary): the server, initdb and psql, the share
# directory without its documentation, the two libraries initdb loads
# (plpgsql, snowball), made executable so that add_libs copies their
# libraries, and the UTC zone
guest_postgres() {
	local st=$1 pg=/usr/lib/postgresql/15 f
	[ -x "$pg/bin/postgres" ] || return 0
	for f in bin/postgres bin/initdb bin/psql bin/pg_isready lib/plpgsql.so \
		lib/dict_snowball.so; do
		copy_file "$pg/$f" "$st$pg/$f"
		chmod 755 "$st$pg/$f"
	done
	mkdir -p "$st/usr/share/postgresql" "$st/usr/share/zoneinfo/Etc"
	rsync -a --exclude='man/' --exclude='doc/' /usr/share/postgresql/15 \
		"$st/usr/share/postgresql/"
	copy_file /usr/share/zoneinfo/Etc/UTC "$st/usr/share/zoneinfo/Etc/UTC"
	copy_file /usr/share/zoneinfo/Etc/UTC "$st/usr/share/zoneinfo/UTC"
}

# guest_python STAGING: Debian's python3 and the part of its standard
# library an asyncio server, a threading HTTP server and its client, and a
# process pool import (attach_python_test.sh, attach_python_threads_test.sh,
# attach_python_pool_test.sh): each module loaded by `import asyncio,
# http.server, http.client, encodings.idna` (a host name's encoding:
# socket.getfqdn(), getaddrinfo()) and multiprocessing's pool, a package
# whole, about 4 MB; extension modules made executable so that add_libs copies
# their libraries
guest_python() {
	local st=$1 py=/usr/bin/python3 f
	[ -x "$py" ] || return 0
	copy_file "$py" "$st/usr/bin/python3"
	"$py" -I -c 'import asyncio, http.server, http.client, encodings.idna, sys
import multiprocessing.pool, multiprocessing.synchronize
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None)
    if f and f.startswith(sys.base_prefix + "/lib/python3"):
        print(f)' | while read -r f; do
		case $f in
		*/__init__.py)
			mkdir -p "$st${f%/*}"
			rsync -a --exclude=__pycache__ "${f%/*}/" "$st${f%/*}/" ;;
		*.so) copy_file "$f" "$st$f" && chmod 755 "$st$f" ;;
		*) copy_file "$f" "$st$f" ;;
		esac
	done
}

guest_servers="/usr/bin/redis-server /usr/bin/redis-cli /usr/bin/redis-benchmark
	/usr/bin/memcached /usr/bin/node /usr/sbin/nginx /usr/sbin/haproxy
	/usr/sbin/lighttpd /usr/lib/lighttpd/mod_dirlisting.so
	/usr/sbin/mosquitto /usr/bin/mosquitto_sub /usr/sbin/apache2
	/usr/lib/apache2/modules/mod_mpm_prefork.so /usr/lib/apache2/modules/mod_mpm_event.so
	/usr/lib/apache2/modules/mod_authz_core.so /usr/lib/apache2/modules/mod_filter.so
	/usr/lib/apache2/modules/mod_deflate.so /usr/bin/cyclictest /usr/bin/bindfs
	/usr/bin/fuse-overlayfs"

# build_overlay NAME DIR: the per-boot part (module, config, test list)
pack_overlay() {
	local dir=$1 out=$2
	(cd "$dir" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		initrd_compress >"$out.overlay"
	cat "$initramfs/base.cpio.lz4" "$out.overlay" >"$out"
	rm -f "$out.overlay"
}

# module_dir KNAME: where stallcap.ko for KNAME (and this mode) is built
module_dir() {
	if [ "$mode" = notw ]; then
		echo "$build/$1/src-notw"
	else
		echo "$build/$1/src"
	fi
}

# kdir_without_task_work KNAME: a copy of KDIR whose Module.symvers lacks
# task_work_add, as upstream Linux's does (module/Kbuild then builds the
# module without it, and modpost fails on any use left); its path.  Debian's
# header packages link scripts/ and tools/ relatively: the copy's links are
# absolute.
kdir_without_task_work() {
	local copy=$build/$1/kdir-notw l
	if [ ! -s "$copy/Module.symvers" ] || [ "$KDIR/Module.symvers" -nt "$copy/Module.symvers" ]; then
		rm -rf "$copy"
		cp -a "$(readlink -f "$KDIR")" "$copy" || return 1
		for l in scripts tools; do
			[ ! -L "$copy/$l" ] || ln -sfn "$(readlink -f "$KDIR/$l")" "$copy/$l"
		done
		grep -vP '\ttask_work_add\t' "$KDIR/Module.symvers" >"$copy/Module.symvers"
	fi
	echo "$copy"
}

# build_module KNAME: build stallcap.ko for kernel KNAME in module_dir; in
# the notw boot as for a kernel without the task_work_add export (against
# kdir_without_task_work, a Debian header package's copy; a kernel built in
# a debootstrap root or a full build tree, the debug kernel's: by the
# STALLCAP_NO_TASK_WORK=1 switch of module/Kbuild)
build_module() {
	locked "$(module_dir "$1").lock" build_module_unlocked "$1"
}

# locked FILE CMD...: CMD under an exclusive lock of FILE, in a subshell
# (scripts/check.sh builds modules ahead of its lanes, vmtest.sh --build,
# while a lane may come to the same kernel)
locked() {
	local lock=$1
	shift
	mkdir -p "$(dirname "$lock")"
	(flock 8 && "$@") 8>"$lock"
}

build_module_unlocked() {
	local k=$1 dir kdir
	dir=$(module_dir "$k")
	sync_tree "$dir" Kbuild module uapi
	if [ "$mode" != notw ]; then
		kbuild "$dir" "$KDIR" "$logs/$k.build.log"
	elif [ -n "${KROOT:-}" ] || [ ! -L "$KDIR/scripts" ]; then
		KBUILD_ARGS=STALLCAP_NO_TASK_WORK=1 kbuild "$dir" "$KDIR" "$logs/$k-notw.build.log"
	else
		kdir=$(kdir_without_task_work "$k") &&
			kbuild "$dir" "$kdir" "$logs/$k-notw.build.log"
	fi
}

# build_test_module KNAME: the test-only module of the selftests (selftests/kmod)
build_test_module() {
	locked "$build/$1/kmod.lock" build_test_module_unlocked "$1"
}

build_test_module_unlocked() {
	local k=$1 dir=$build/$1/kmod
	mkdir -p "$dir"
	rsync -a --include='*.c' --include='*.h' --include='Kbuild' --exclude='*' \
		"$top/selftests/kmod/" "$dir/"
	kbuild "$dir" "$KDIR" "$logs/$k.kmod-build.log"
}

# add_test_module KNAME DIR CONF: the test-only module in the overlay DIR,
# loaded after stallcap (CONF: the guest's configuration)
add_test_module() {
	local k=$1 dir=$2 conf=$3
	if ! build_test_module "$k"; then
		result FAIL "$k/build" "test module build failed, see $logs/$k.kmod-build.log"
		return 1
	fi
	cp "$build/$k/kmod/stallcap_spin.ko" "$dir/lib/modules/"
	echo "EXTRA_MODULES=/lib/modules/stallcap_spin.ko" >>"$conf"
}

build_harness_module() {
	local k=$1 dir=$build/$1/harness
	mkdir -p "$dir"
	rsync -a --include='*.c' --include='*.h' --include='Kbuild' --exclude='*' \
		"$top/selftests/harness/" "$dir/"
	kbuild "$dir" "$KDIR" "$logs/$k.harness-build.log"
}

# ---------------------------------------------------------------------------
# Booting
# ---------------------------------------------------------------------------

# boot TAG INITRD TIMEOUT MEM SILENCE: run the guest; sets qemu_rc and
# guest_silent, leaves $logs/TAG.console (ttyS0, the kernel console) and
# $logs/TAG.chan (ttyS1).  The guest is killed after TIMEOUT seconds, or when
# it printed nothing on ttyS1 for SILENCE seconds (the guest kills a hung test
# itself, so a silent guest is a hung kernel).
boot() {
	local tag=$1 initrd=$2 tmo=$3 mem=$4 silence=$5
	last_initrd=$initrd
	local con=$logs/$tag.console chan=$logs/$tag.chan
	# (a socket's path is at most 107 bytes: not under $logs)
	local mon
	mon=$(mktemp -u "${TMPDIR:-/tmp}/stallcap-mon.XXXXXX")
	: >"$con"
	: >"$chan"
	local cmdline="console=ttyS0,115200 panic=-1 log_buf_len=8M printk.devkmsg=on"
	# 5.10 panics in its IO-APIC timer check under TCG ("IO-APIC + timer
	# doesn't work!"); newer kernels skip the check in a VM by themselves
	cmdline+=" no_timer_check"
	# TCG's TSC fails the clocksource watchdog some seconds after boot;
	# the switch to an unstable sched_clock then patches kernel text while
	# tests run (an int3 Oops in sched_clock_cpu() was seen on 7.2)
	cmdline+=" tsc=reliable"
	# -cpu max offers LA57: with 5-level paging, a KASAN kernel checks an
	# interrupt that comes before its boot patches the CPU features (the
	# LA57 test included) against the 4-level shadow and reports a
	# "wild-memory-access" in the IRQ's lock (seen once on the debug
	# kernel at 0.005 s, long before stallcap loads): 4-level paging
	cmdline+=" no5lvl"
	# the whole kernel log on the console (a hung guest leaves no dmesg
	# dump, and quiet would hide the stack dumps of a stall report)
	cmdline+=" ${GUEST_CMDLINE-loglevel=7} ${kernel_cmdline:-}"
	qemu_cmd=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$mem" -smp "$SMP"
		-nodefaults -display none -monitor "unix:$mon,server,nowait" -no-reboot
		-kernel "$KIMAGE" -initrd "$initrd" -append "$cmdline"
		-serial "file:$con" -serial "file:$chan"
		# QEMU's educational PCI device: an interrupt source for a UIO
		# driver (attach_test; no driver binds it unless told)
		-device edu)
	# shellcheck disable=SC2206 # QEMU_EXTRA: words
	qemu_cmd+=(${QEMU_EXTRA:-})
	local tailpid=
	timeout -k 5 "$tmo" "${qemu_cmd[@]}" </dev/null >"$logs/$tag.qemu" 2>&1 &
	local qpid=$!
	if [ "$verbose" = 1 ]; then
		tail -n +1 -f --pid=$qpid "$chan" 2>/dev/null |
			sed -u -e '/^@@VMTEST dmesg-begin/,/^@@VMTEST dmesg-end/d' \
				-e '/^@@VMTEST test-begin /{s//--- /;s/$/ ---/;b}' -e '/^@@VMTEST /d' &
		tailpid=$!
	fi
	guest_silent=0
	rm -f "$logs/$tag.peek"	# (the last look is kept)
	local last t peeked=0 peek_after=${GUEST_PEEK_AFTER:-90}
	while kill -0 $qpid 2>/dev/null; do
		sleep 0.5
		last=$(stat -c %Y "$chan")
		t=$(date +%s)
		# (SILENCE_FROM_INIT=1: not before /init's first line, for
		# the self-check's silent guest, whose kernel may take longer
		# than its short silence to boot on a loaded host)
		if [ $((t - last)) -gt "$silence" ] &&
			{ [ "${SILENCE_FROM_INIT:-0}" = 0 ] || [ -s "$chan" ]; }; then
			guest_silent=$((t - last))
			where_hung "$mon" >"$logs/$tag.hung" 2>&1
			kill $qpid 2>/dev/null
			break
		fi
		# silent a while: a look through the monitor (the guest runs
		# on) every minute for the emulator's int3 loop, which never
		# ends by itself (CI127 waited 421 s for it)
		if [ "$silence" -gt "$peek_after" ] && [ $((t - last)) -gt "$peek_after" ] &&
			[ $((t - peeked)) -gt 60 ]; then
			peeked=$t
			python3 "$top/scripts/hung-guest.py" peek "$mon" >"$logs/$tag.peek" 2>&1
			if emulator_int3_loop "$logs/$tag.peek" "$(int3_entry "$chan")" >/dev/null; then
				guest_silent=$((t - last))
				mv "$logs/$tag.peek" "$logs/$tag.hung"
				kill $qpid 2>/dev/null
				break
			fi
		fi
	done
	wait $qpid
	qemu_rc=$?
	rm -f "$mon"
	[ -z "$tailpid" ] || wait "$tailpid" 2>/dev/null
}

# where_hung MONITOR: where the vCPUs of a silent guest are (its
# instruction pointers and the kernel addresses on their stacks: see
# scripts/hung-guest.py), read through its QEMU monitor before the kill
where_hung() {
	timeout 60 python3 "$top/scripts/hung-guest.py" read "$1"
}

# kernel_symbols TAG: the text symbols of the kernel being tested, for
# name_hung: the debug kernel's System.map, or (Debian's packages hold a
# placeholder System.map) its /proc/kallsyms read once in a guest booted
# without KASLR ("vmtest.kallsyms": the guest's /init prints it and powers
# off), cached beside the kernel image.  Run in a subshell ($(...)): that
# boot leaves the hung guest's qemu_rc, guest_silent and qemu_cmd alone.
kernel_symbols() {
	local map=$KDIR/System.map cache ktag=$1-kallsyms tmp
	cache=$(dirname "$KIMAGE")/kallsyms
	tmp=$cache.$BASHPID
	if [ -z "$KROOT" ] && [ -s "$map" ] && [ "$(wc -l <"$map")" -gt 1000 ]; then
		echo "$map"
		return
	fi
	if [ ! -s "$cache" ]; then
		local kernel_cmdline="nokaslr vmtest.kallsyms"
		boot "$ktag" "$last_initrd" 300 1G 60 >/dev/null 2>&1
		strip_log "$logs/$ktag.chan" |
			awk '$1 == "@@VMTEST" && $2 == "kallsyms-end" { done = 1 }
				NF == 3 && $1 ~ /^[0-9a-f]+$/ { print } END { exit !done }' \
				>"$tmp" && mv "$tmp" "$cache"
		rm -f "$tmp" "$logs/$ktag".{chan,console,qemu}
	fi
	[ -s "$cache" ] && echo "$cache"
}

# name_hung HUNG CHAN TAG: where_hung's output in HUNG with the kernel's
# addresses named (symbol+offset), if the guest printed its _text ("@@VMTEST
# text ADDR", at boot) and the kernel's symbols are at hand
name_hung() {
	local text syms
	text=$(awk '$1 == "@@VMTEST" && $2 == "text" { print $3; exit }' "$2")
	[ -s "$1" ] && [ -n "$text" ] && syms=$(kernel_symbols "$3") || return 0
	python3 "$top/scripts/hung-guest.py" name "$syms" "$text" <"$1" >"$1.named" &&
		mv "$1.named" "$1"
	rm -f "$1.named"
}

# ---------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------

# strip_log FILE: drop carriage returns (the console's)
strip_log() { tr -d '\r' <"$1"; }

# emulator_int3 CONSOLE: succeed, and say where, when the guest's first splat
# is an "Oops: int3" whose "Code:" line shows that the byte before the
# trapping address is not an int3 (0xcc): the vCPU executed an int3 that
# memory no longer holds.  On hardware that cannot happen (text_poke_bp()
# synchronizes every CPU before it returns, and its int3 handler covers the
# time before); under TCG a vCPU can still run code translated while a
# text-poke had its int3 in place.  An int3 that is in memory (a wild jump
# into padding) is a real bug and does not match.
emulator_int3() {
	local first
	first=$(splats "$1" | head -n 1)
	[[ "$first" == *"Oops: int3"* ]] || return 1
	strip_log "$1" | awk '
		{ sub(/^<[0-9]+>/, ""); sub(/^\[ *[0-9]+\.[0-9]+\] /, ""); sub(/^\[ *T?C?[0-9]+\] /, "") }
		/Oops: int3/ { oops = 1; next }
		oops && /^RIP: / && !rip { rip = $2 }
		oops && /^Code: / {
			for (i = 3; i <= NF; i++)
				if ($i ~ /^<[0-9a-f][0-9a-f]>$/) {
					if ($(i - 1) == "cc") exit 1
					printf "at %s (memory holds %s there)", rip ? rip : "?", $(i - 1)
					found = 1
					exit 0
				}
			exit 1
		}
		END { exit !found }'
}

# emulator_stale_patch CONSOLE: the same emulator fault where the kernel's
# int3 handler forgives an int3 that memory no longer holds (5.10) and
# returns to it: the vCPU runs its stale translation of the patch site
# again, forever.  Succeeds, and says where, when the guest's first splat is
# an RCU stall or a soft lockup whose first kernel RIP is a function's first
# instruction and memory holds a 5-byte nop there (a kprobe's or ftrace's
# site, as text_poke_bp() leaves it): hardware never returns to one
# instruction forever with interrupts on.  A CPU stuck anywhere else, or on
# an instruction that is no such nop, does not match.
emulator_stale_patch() {
	local first
	first=$(splats "$1" | head -n 1)
	[[ "$first" == *"self-detected stall"* || "$first" == *"soft lockup"* ]] || return 1
	strip_log "$1" | awk '
		{ sub(/^<[0-9]+>/, ""); sub(/^\[ *[0-9]+\.[0-9]+\] /, ""); sub(/^\[ *T?C?[0-9]+\] /, "") }
		/self-detected stall|soft lockup/ { stuck = 1 }
		stuck && !rip && /^RIP: 0010:/ {
			rip = $2
			sub(/^0010:/, "", rip)
			if (rip !~ /[+]0x0\//)
				exit 1
			next
		}
		stuck && rip && /^Code: / {
			for (i = 2; i + 4 <= NF; i++)
				if ($i ~ /^<[0-9a-f][0-9a-f]>$/) {
					nop = substr($i, 2, 2) " " $(i + 1) " " $(i + 2) " " $(i + 3) " " $(i + 4)
					if (nop == "66 66 66 66 90" || nop == "0f 1f 44 00 00") {
						printf "at %s, looping (memory holds a 5-byte nop there: %s)", rip, nop
						found = 1
					}
					exit !found
				}
			exit 1
		}
		END { exit !found }'
}

# int3_entry CHAN: the guest's address of its int3 entry (it prints it)
int3_entry() {
	strip_log "$1" | awk '$1 == "@@VMTEST" && $2 == "int3-entry" && $3 ~ /^[0-9a-f]+$/ {
		print "0x" $3; exit }'
}

# emulator_int3_loop HUNG [ENTRY]: the same forgiven stale int3 where the
# site ran with interrupts off (a jump label in __schedule(), under the
# runqueue lock): no tick comes, so no stall names the site, and the guest falls
# silent (CI127's 5.10 guest, CI119's 6.1).  Succeeds, and says where, when
# the silent guest's vCPUs (where_hung, named: its first stop or one of the
# few after it) show one at the int3 entry's first instruction whose trap
# frame returns past a byte that memory does not hold as an int3: hardware
# cannot trap there again and again.  HUNG's addresses are named, or raw
# with ENTRY the int3 entry's address (int3_entry).
emulator_int3_loop() {
	awk -v entry="${2:-asm_exc_int3[+]0x0}" '
		/^cpu |^  also at: / { at = ($0 ~ ("^(cpu [0-9]+|  also at): " entry "[ ,(]")) }
		at && /^  trap frame: / {
			split($0, half, "before it: ")
			split(half[2], code, " ")
			if (code[1] ~ /^[0-9a-f][0-9a-f]$/ && code[1] != "cc") {
				rip = $3
				sub(/,$/, "", rip)
				printf "a vCPU at the int3 entry forever, its trap frame returning to %s (memory holds %s there)", rip, half[2]
				found = 1
				exit
			}
		}
		END { exit !found }' "$1" 2>/dev/null
}

# The marks a guest prints after its tests (scripts/guest/init)
closing_marks='kmemleak-begin|rmmod|dmesg-begin|done'

# finished_tests CHAN OUT: of the tests a guest that died began, all but the
# last one (running when it died) finished: append their lines to OUT (from
# the first one's begin to the last one's end, retries and output included)
# and print their number.  A test's retries follow it: a begin that names
# another test than the one before it (in the same phase) is the next test
# of the list (a guest whose list names a test twice in a row, REPEAT, is
# not resumed).
finished_tests() {
	strip_log "$1" | awk -v out="$2" '
		{ line[NR] = $0 }
		$1 == "@@VMTEST" && $2 == "phase" { last = "" }
		$1 == "@@VMTEST" && $2 == "test-begin" && $3 != last { last = $3; start[++n] = NR }
		END {
			for (i = start[1]; n > 1 && i < start[n]; i++) print line[i] >>out
			print (n > 1 ? n - 1 : 0)
		}'
}

# merge_resumed CHAN FINISHED: put the lines of the tests the earlier boots
# finished (FINISHED, from finished_tests) into CHAN before the first test
# its own boot ran, so that CHAN reads as one guest's run of the whole list
merge_resumed() {
	strip_log "$1" | awk -v fin="$2" -v re="^(test-begin|phase|$closing_marks)\$" '
		function put() { while ((getline l <fin) > 0) print l; put_done = 1 }
		!put_done && $1 == "@@VMTEST" && $2 ~ re { put() }
		{ print }
		END { if (!put_done) put() }' >"$1.merged"
	mv "$1.merged" "$1"
}

# split_phase TAG TAG2: the guest's second phase (the tests after "@@VMTEST
# phase", against the module loaded again from its notw build) out of TAG's
# channel into TAG2's; each keeps the boot's lines before its first test
# (TAG2 without the first load's "insmod") and its last ones (kmemleak,
# rmmod, dmesg, done); TAG2's console and emulator output are TAG's
split_phase() {
	local chan=$logs/$1.chan
	strip_log "$chan" | awk -v a="$chan.a" -v b="$logs/$2.chan" -v re="^($closing_marks)\$" '
		$1 == "@@VMTEST" && $2 == "phase" && !st { st = 1 }
		$1 == "@@VMTEST" && $2 ~ re { st = 2 }
		$1 == "@@VMTEST" && $2 == "test-begin" { began = 1 }
		st != 1 { print >a }
		st != 0 || (!began && !($1 == "@@VMTEST" && $2 == "insmod")) { print >b }'
	mv "$chan.a" "$chan"
	cp "$logs/$1.console" "$logs/$2.console"
	cp "$logs/$1.qemu" "$logs/$2.qemu"
}

# section FILE NAME: the lines between "@@VMTEST NAME-begin" and NAME-end
section() {
	awk -v b="@@VMTEST $2-begin" -v e="@@VMTEST $2-end" '
		$0 == e { on = 0 } on { print } $0 == b { on = 1 }' "$1"
}

# splats FILE...: print "test<TAB>line" for each splat line in kernel logs;
# test is the selftest running when it happened ("-" outside any).
# "Call Trace:" between "vmtest: allow-trace begin" and "... end" is allowed;
# "NMI handler ... took too long" (slow_nmi_re) between "vmtest: allow-slow-nmi
# begin" and "... end" (capture_defer_test's rounds that copy in the handler
# on purpose, capture_nmi_irq_test's NMI held off by the test module) is not
# reported.
splats() {
	splats_matching "$splat_re" "$@"
}

# splats_matching RE FILE...: likewise for the lines matching RE
splats_matching() {
	local re=$1
	shift
	cat "$@" | awk -v re="$re" -v allow="$allow_re" '
		{
			line = $0
			sub(/^<[0-9]+>/, "", line)
			sub(/^\[ *[0-9]+\.[0-9]+\] /, "", line)
			sub(/^\[ *T?C?[0-9]+\] /, "", line)
		}
		line ~ /^vmtest: begin / { cur = substr(line, 15); next }
		line ~ /^vmtest: end / { cur = ""; next }
		line ~ /^vmtest: allow-trace begin/ { trace_ok = 1; next }
		line ~ /^vmtest: allow-trace end/ { trace_ok = 0; next }
		line ~ /^vmtest: allow-slow-nmi begin/ { slow_nmi_ok = 1; next }
		line ~ /^vmtest: allow-slow-nmi end/ { slow_nmi_ok = 0; next }
		line ~ allow { next }
		line ~ re {
			if (trace_ok && line ~ /Call Trace:/) next
			if (slow_nmi_ok && line ~ /NMI handler .* took too long/) next
			if (line ~ /^=+$/ && length(line) < 10) next
			if (!seen[line]++) print (cur == "" ? "-" : cur) "\t" line
		}'
}

# hung_summary FILE: where_hung's vCPU lines on one line ("cpu 0: ...; cpu
# 1: ..."), or why there are none; the whole of FILE (their stacks) is in
# the kernel's log
hung_summary() {
	awk '/^cpu / { s = s (s ? "; " : "") $0 } NR == 1 { first = $0 }
		/^  (trap frame|also at): / && s { sub(/^  /, ""); s = s ", " $0 }
		END { print s ? s : "vCPUs not read: " first }' "$1" 2>/dev/null ||
		echo "vCPUs not read"
}

# judge TAG KNAME TESTS_FILE: parse a finished guest, record the results
judge() {
	local tag=$1 k=$2 tests=$3
	local chan=$logs/$tag.chan.txt con=$logs/$tag.console.txt log=$logs/$tag.log
	strip_log "$logs/$tag.chan" >"$chan"
	strip_log "$logs/$tag.console" >"$con"
	local failed=0 line name rc secs t
	fail() { result FAIL "$@"; failed=$((failed + 1)); }
	listed_skips=0

	if [ "$guest_silent" != 0 ]; then
		name_hung "$logs/$tag.hung" "$chan" "$tag"
		fail "$k/guest" "hung: no output for ${guest_silent}s (last test started: $(awk '$2 == "test-begin" { t = $3 } END { print t ? t : "none" }' "$chan"); $(hung_summary "$logs/$tag.hung"))"
	elif [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
		fail "$k/guest" "timed out after ${guest_tmo}s (last test started: $(awk '$2 == "test-begin" { t = $3 } END { print t ? t : "none" }' "$chan"))"
	elif ! grep -q '^@@VMTEST done' "$chan"; then
		if grep -q '^@@VMTEST boot' "$chan"; then
			fail "$k/guest" "guest died before the end (qemu exit $qemu_rc; panic?)"
		else
			fail "$k/guest" "guest did not reach /init (qemu exit $qemu_rc: $(tail -n 1 "$logs/$tag.qemu"))"
		fi
	fi

	if grep -q '^@@VMTEST insmod fail' "$chan"; then
		fail "$k/insmod" "insmod failed: $(grep -m1 -iE 'insmod|stallcap' "$chan" | grep -v '^@@' | head -n 1)"
	fi
	while read -r _ what name st; do
		[ "$st" = ok ] || fail "$k/insmod-$name" "insmod of ${what%-insmod} module $name failed"
	done < <(grep -E '^@@VMTEST (extra|kernel)-insmod ' "$chan")

	# tests: every expected test must have reported
	local insmod_ok=0
	grep -q '^@@VMTEST insmod ok' "$chan" && insmod_ok=1
	local notrun=() started first again retries
	started=$(awk '$1 == "@@VMTEST" && $2 == "test-begin" { t = $3 } $1 == "@@VMTEST" && $2 == "test" { t = "" } END { print t }' "$chan")
	local -A nth=()	# REPEAT: the n-th run of a test is its n-th report
	while read -r t; do
		[ -n "$t" ] || continue
		nth[$t]=$((${nth[$t]:-0} + 1))
		if [ "$(grep -c -x -F "$t" "$tests")" -gt 1 ]; then
			line=$(awk -v t="$t" -v n="${nth[$t]}" \
				'$1 == "@@VMTEST" && $2 == "test" && $3 == t && ++c == n' "$chan")
		else
			line=$(awk -v t="$t" '$1 == "@@VMTEST" && $2 == "test" && $3 == t' "$chan" | tail -n 1)
		fi
		if [ -z "$line" ]; then
			if [ "$t" = "$started" ]; then
				fail "$k/$t" "started but never finished (the guest hung or died)"
			elif [ "$insmod_ok" = 1 ]; then
				notrun+=("$t")
			fi
			continue
		fi
		if [ "$mode" = check ] && [ ! -e "$top/selftests/$t" ]; then
			fail "$k/$t" "not built (see $logs/selftests-build.log)"
			continue
		fi
		# (cpu: the guest's CPU time in the test, 1/100 s; what the
		# test costs the host under TCG, for make check's budget)
		read -r _ _ _ rc secs cpu _ <<<"$line"
		[ -z "$cpu" ] || secs="$secs s, CPU $((cpu / 100)).$((cpu % 100 / 10))"
		first=$(awk -v t="$t" '$1 == "@@VMTEST" && $2 == "retry" && $3 == t { r++ }
			$1 == "@@VMTEST" && $2 == "test" && $3 == t && !f { f = $4 " after " $5 "s" }
			END { if (r) print r, f }' "$chan")
		retries=${first%% *}
		first=${first#* }
		if [ -n "$first" ] && [ "$rc" = 0 ]; then
			# visible in the summary, never silent: a flaky test or a
			# bug that shows only sometimes; RETRY_FAILED=0 fails it
			result NOTE "$k/$t" "FLAKY: failed $(n_times "$retries") (first: exit $first$(tap_fails "$chan" "$t")), passed on retry $retries"
		fi
		again=
		[ -z "$first" ] || again=" on retry $retries (first run: $first)"
		check_skips "$k" "$t" "$chan" "$rc" || failed=$((failed + 1))
		case $rc in
		0) result PASS "$k/$t" "${secs}s" ;;
		4) result SKIP "$k/$t" "${secs}s$again" ;;
		timeout) fail "$k/$t" "timed out after ${secs}s$again" ;;
		*) fail "$k/$t" "exit status $rc, ${secs}s$again$(tap_fails "$chan" "$t")" ;;
		esac
	done <"$tests"
	[ ${#notrun[@]} -eq 0 ] ||
		fail "$k/not-run" "${#notrun[@]} tests did not run: ${notrun[*]}"
	[ "$listed_skips" = 0 ] ||
		result NOTE "$k/skips" "$listed_skips tests or cases skipped, each as selftests/expected-skips lists"

	if [ "$insmod_ok" = 1 ] && ! grep -q '^@@VMTEST rmmod ok' "$chan"; then
		if grep -q '^@@VMTEST rmmod fail' "$chan"; then
			fail "$k/rmmod" "rmmod failed: $(grep -m1 -E '^rmmod:' "$chan")"
		elif grep -q '^@@VMTEST done' "$chan"; then
			fail "$k/rmmod" "rmmod did not report"
		fi
	fi
	while read -r _ _ name _; do
		fail "$k/rmmod-$name" "rmmod of test module $name failed"
	done < <(grep '^@@VMTEST extra-rmmod ' "$chan")

	# splats: in the dmesg dump and on the console (which also covers a
	# guest that died before the dump)
	section "$chan" dmesg >"$logs/$tag.dmesg.txt"
	splats "$logs/$tag.dmesg.txt" "$con" >"$logs/$tag.splats"
	if [ -s "$logs/$tag.splats" ]; then
		fail "$k/dmesg" "kernel splat: $(awk -F'\t' '
			NR <= 3 { printf "%s[during %s] %s", sep, $1, $2; sep = " | " }
			END { if (NR > 3) printf " | ... (%d lines)", NR }' "$logs/$tag.splats")"
	fi

	splats_matching "$slow_nmi_re" "$logs/$tag.dmesg.txt" "$con" >"$logs/$tag.slow-nmi"
	if [ -s "$logs/$tag.slow-nmi" ]; then
		local what
		what="slow NMI: $(awk -F'\t' '
			NR <= 3 { printf "%s[during %s] %s", sep, $1, $2; sep = " | " }
			END { if (NR > 3) printf " | ... (%d lines)", NR }' "$logs/$tag.slow-nmi")"
		if [ "${SLOW_NMI_FAILS:-0}" = 1 ]; then fail "$k/nmi" "$what"
		else result NOTE "$k/nmi" "$what"; fi
	fi

	# kmemleak (when the kernel has it)
	if grep -q '^@@VMTEST kmemleak-begin' "$chan"; then
		section "$chan" kmemleak >"$logs/$tag.kmemleak"
		# leak reports whose backtrace goes through a stallcap module
		local leaks
		leaks=$(awk '
			/^unreferenced object/ { obj = $0; n++; in_bt = 0; next }
			/^  backtrace/ { in_bt = 1; next }
			in_bt && /stallcap/ && !(n in seen) {
				seen[n] = 1; c++
				if (!first) { first = obj; sub(/^ +/, "", $0); at = $0 }
			}
			END { if (c) printf "%d object(s), first: %s allocated in %s", c, first, at }' \
			"$logs/$tag.kmemleak")
		[ -z "$leaks" ] || fail "$k/kmemleak" "memory leak in stallcap: $leaks"
	fi

	# one readable log
	{
		echo "===== stallcap vmtest: $k ($KVER), $(date -u +%FT%TZ)"
		echo "===== qemu (exit $qemu_rc): ${qemu_cmd[*]}"
		cat "$logs/$tag.qemu"
		echo "===== guest channel (ttyS1: init, tests, dmesg dump)"
		cat "$chan"
		echo "===== kernel console (ttyS0)"
		cat "$con"
		if [ "$guest_silent" != 0 ]; then
			echo "===== the silent guest's vCPUs (QEMU monitor, scripts/hung-guest.py)"
			cat "$logs/$tag.hung" 2>/dev/null
		fi
		echo "===== verdict"
		awk -F'\t' -v k="$k/" -v n="$results_before" \
			'NR >= n && index($2, k) == 1 { print $1 "\t" $2 "\t" $3 }' "$RESULTS"
	} >"$log"
	rm -f "$logs/$tag.chan" "$logs/$tag.console" "$logs/$tag.qemu"
	judge_failed=$failed
}

# case_skips CHAN TEST: "CASE<TAB>WHY" of each TAP case of TEST that
# skipped (every run of it, each case once)
case_skips() {
	test_lines "$1" "$2" | awk '
		/^ok [0-9]+ .*# SKIP/ {
			c = $0
			sub(/^ok [0-9]+ (- )?/, "", c)
			why = c
			sub(/ *# SKIP.*/, "", c)
			sub(/.*# SKIP:? */, "", why)
			if (c == "") c = "(unnamed)"
			if (!(c in seen)) print c "\t" why
			seen[c] = 1
		}'
}

# skip_expected KERNEL TEST CASE: is the skip listed in
# selftests/expected-skips (lines "KERNEL-GLOB TEST CASE-GLOB why...")?
skip_expected() {
	local kg tg cg _
	while read -r kg tg cg _; do
		[ -n "$kg" ] && [ "${kg#\#}" = "$kg" ] || continue
		# shellcheck disable=SC2053
		[[ $1 == $kg && $2 == $tg && $3 == $cg ]] && return 0
	done <"$top/selftests/expected-skips"
	return 1
}

# check_skips KERNEL TEST CHAN RC: a test or TAP case that skipped where
# selftests/expected-skips does not say it may fails (a kselftest C program
# whose cases all skip exits 0: its skips are read from its TAP lines);
# those listed are counted (listed_skips, one NOTE per guest).  Fails when
# one was not listed.
check_skips() {
	local k=$1 t=$2 c why n=0 bad=0
	if [ "$4" = 4 ] && ! skip_expected "$k" "$t" -; then
		result FAIL "$k/$t" "skipped, not in selftests/expected-skips: $(test_lines "$3" "$t" | grep -m1 -o '# SKIP.*' || echo 'no reason')"
		bad=1
	fi
	while IFS=$'\t' read -r c why; do
		[ -n "$c" ] || continue
		if skip_expected "$k" "$t" "$c"; then
			n=$((n + 1))
		else
			result FAIL "$k/$t" "case skipped, not in selftests/expected-skips: $c ($why)"
			bad=1
		fi
	done < <(case_skips "$3" "$t")
	listed_skips=$((listed_skips + n))
	return $bad
}

# n_times N: "once", "2 times"
n_times() { [ "$1" = 1 ] && echo once || echo "$1 times"; }

# tap_fails CHAN TEST: names of the failed TAP cases of TEST (every run of
# it), as a suffix
tap_fails() {
	test_lines "$1" "$2" | awk '
		/^not ok / && !/# SKIP/ {
			sub(/^not ok [0-9]+ (- )?/, "")
			if (!($0 in seen)) s = s (s ? ", " : "") $0
			seen[$0] = 1
		}
		END { if (s) printf "; failed: %s", substr(s, 1, 200) }'
}

# test_lines CHAN TEST: what TEST printed, every run of it
test_lines() {
	awk -v t="$2" '
		$0 == "@@VMTEST test-begin " t { on = 1; next }
		/^@@VMTEST test / { on = 0 }
		on' "$1"
}

# ---------------------------------------------------------------------------
# One kernel
# ---------------------------------------------------------------------------

# notw_wanted KNAME: whether KNAME runs the module built without
# task_work_add() (NOTW_KERNELS; with TESTS, only when NOTW_TESTS is set)
notw_wanted() {
	[[ " $notw_kernels " == *" $1 "* ]] && { [ -z "${TESTS:-}" ] || [ -n "${NOTW_TESTS:-}" ]; }
}

# notw_list KNAME: the selftests of that module on KNAME, one per line
notw_list() {
	if [ "$1" = debug ]; then
		printf '%s\n' $notw_tests_debug
	else
		printf '%s\n' $notw_tests
	fi | grep -x -F -f - "$build/selftests.list"
}

# The tests kernel $1 leaves to others (TOOL_TESTS, DEBUG_SKIP,
# PROGRAM_KERNELS), one line.
skipped_tests() {
	local skip=()

	case " $TOOL_KERNELS " in
	*" $1 "*) ;;
	*) skip+=($TOOL_TESTS) ;;
	esac
	[ "$1" != debug ] || skip+=($DEBUG_SKIP)
	local p
	for p in $PROGRAM_KERNELS; do
		[ "$1" = debug ] || [[ ",${p#*:}," == *",$1,"* ]] || skip+=("${p%%:*}")
	done
	echo "${skip[*]}"
}

# run_kernel KNAME: build, boot and judge; returns non-zero on failure
run_kernel() {
	local k=$1 t0 dir tests conf
	t0=$(now)
	echo "== $k"
	if ! kernel_info "$k"; then
		result FAIL "$k/kernel" "kernel not available"
		return 1
	fi
	local mem=${MEM:-1G} test_tmo=${TEST_TIMEOUT:-300}
	if [ "$k" = debug ]; then
		mem=${MEM:-2G}
		test_tmo=${TEST_TIMEOUT:-600}
	fi
	if [ "$mode" != selfcheck ] && ! build_module "$k"; then
		grep -iE 'error|warning' "$logs/$k.build.log" | grep -v '^make' | head -n 20 | sed 's/^/    /'
		result FAIL "$k/build" "module build failed: $(grep -iE 'error' "$logs/$k.build.log" |
			grep -v '^make' | head -n 1 | sed "s|$build/$k/src/||g" | cut -c1-160), see $logs/$k.build.log"
		return 1
	fi

	dir=$build/$k/overlay-$mode
	rm -rf "$dir"
	mkdir -p "$dir/lib/modules" "$dir/etc"
	[ "$mode" = selfcheck ] || cp "$(module_dir "$k")/module/stallcap.ko" "$dir/lib/modules/"
	tests=$build/$k/tests-$mode
	conf=$dir/etc/vmtest.conf
	{
		echo "MODE=$mode"
		echo "TEST_TIMEOUT=$test_tmo"
		echo "MODULE_PARAMS='gid=$STALLCAP_GID ${MODULE_PARAMS:-}'"
		# REPEAT hunts a flaky test: every run counts on its own
		[ "${REPEAT:-1}" -gt 1 ] || echo "RETRY_FAILED=${RETRY_FAILED:-2}"
		# the notw build, or a kernel that does not export task_work_add()
		# (upstream's, a "tree"): the tests expect what such a module does
		if [ "$mode" = notw ] ||
			! grep -qP '\ttask_work_add\t' "$KROOT$KDIR/Module.symvers"; then
			echo "export STALLCAP_TEST_NO_TASK_WORK=1"
		fi
	} >"$conf"
	# the kernel's own modules the selftests need (scripts/guest-modules.sh)
	if [[ $mode == @(check|notw) ]]; then
		local m kmods=
		for m in $("$top/scripts/guest-modules.sh" names); do
			[ -s "$(dirname "$KIMAGE")/$m.ko" ] || continue
			cp "$(dirname "$KIMAGE")/$m.ko" "$dir/lib/modules/"
			kmods+=" /lib/modules/$m.ko"
		done
		echo "KERNEL_MODULES=\"${kmods# }\"" >>"$conf"
	fi
	if [ "$mode" = check ] && "$top/scripts/guest-modules.sh" missing "$(dirname "$KIMAGE")"; then
		# their tests would only skip: say what is missing
		result FAIL "$k/modules" "a module the selftests need (scripts/guest-modules.sh) is a module of $KVER but was not kept (run make deps)"
		return 1
	fi
	case $mode in
	run)
		if [ -e "$initramfs/base/usr/share/stallcap/demo.sh" ]; then
			echo demo >"$tests"
		else
			grep -x 'smoke_test' "$build/selftests.list" >"$tests" ||
				cp "$build/selftests.list" "$tests"
		fi
		;;
	isolated)
		grep -x 'isolated_cpu_test' "$build/selftests.list" >"$tests"
		;;
	alt)
		for ((i = 0; i < ${REPEAT:-1}; i++)); do
			printf '%s\n' $alt_tests | grep -x -F -f - "$build/selftests.list"
		done >"$tests"
		add_test_module "$k" "$dir" "$conf" || return 1
		;;
	check | notw)
		if [ "$mode" = notw ]; then
			notw_list "$k" >"$tests"
		elif [ -n "${TESTS:-}" ]; then
			printf '%s\n' $TESTS | grep -x -F -f - "$build/selftests.list" >"$tests" || {
				result FAIL "$k/tests" "TESTS='$TESTS' names no selftest"
				return 1
			}
			for ((i = 1; i < ${REPEAT:-1}; i++)); do
				printf '%s\n' $TESTS | grep -x -F -f - "$build/selftests.list"
			done >>"$tests"
		else
			skip=$(skipped_tests "$k")
			printf '%s\n' $skip | grep -v -x -F -f - "$build/selftests.list" >"$tests"
			[ -z "$skip" ] || echo "  ($k: not run here, see TOOL_TESTS and PROGRAM_KERNELS in scripts/vmtest.sh:" $skip")"
		fi
		add_test_module "$k" "$dir" "$conf" || return 1
		;;
	selfcheck)
		if ! build_harness_module "$k"; then
			result FAIL "$k/build" "harness module build failed, see $logs/$k.harness-build.log"
			return 1
		fi
		# The harness module stands in for stallcap: it WARNs on load
		# and a process holds its device open so that rmmod fails.
		cp "$build/$k/harness/stallcap_harness.ko" "$dir/lib/modules/"
		mkdir -p "$dir/selftests/harness"
		cp "$top"/selftests/harness/*_test.sh "$dir/selftests/harness/"
		(cd "$top/selftests" && ls harness/*_test.sh) >"$tests"
		# kselftest-harness programs: the retry of failed cases alone
		for c in "$top"/selftests/harness/*_test.c; do
			c=$(basename "$c" .c)
			if ! ${CC:-gcc} -O1 -Wall -D_GNU_SOURCE -I"$top/.cache/linux-tools" \
				-o "$dir/selftests/harness/$c" "$top/selftests/harness/$c.c" \
				>>"$logs/$k.harness-build.log" 2>&1; then
				result FAIL "$k/build" "harness/$c.c did not build, see $logs/$k.harness-build.log"
				return 1
			fi
			echo "harness/$c" >>"$tests"
		done
		{
			echo "TEST_TIMEOUT=${SELFCHECK_TEST_TIMEOUT:-6}"
			echo "MODULE=/lib/modules/stallcap_harness.ko"
			echo "MODULE_PARAMS='warn_on_load=1${SELFCHECK_LEAK:+ leak_on_load=1}'"
			echo "PRE_RMMOD='exec sleep 1000 </dev/stallcap_harness'"
		} >>"$conf"
		;;
	esac
	# The tests of the module built without task_work_add() run in the
	# same guest (NOTW_SAME_BOOT=1, the default): after its list the guest
	# loads the module again from that build and runs them (results
	# KERNEL-notw/TEST).  A boot of their own cost the debug lane 270 s
	# for 100 s of tests in CI100 (boot, kmemleak scans, teardown, build).
	local tests2=
	if [ "$mode" = check ] && [ "${NOTW_SAME_BOOT:-1}" = 1 ] && notw_wanted "$k"; then
		tests2=$build/$k/tests-phase-notw
		notw_list "$k" >"$tests2"
		if ! mode=notw build_module "$k"; then
			result FAIL "$k-notw/build" "module build without task_work failed, see $logs/$k-notw.build.log"
			return 1
		fi
		cp "$(mode=notw module_dir "$k")/module/stallcap.ko" "$dir/lib/modules/stallcap-notw.ko"
		cp "$tests2" "$dir/etc/vmtest.tests2"
		echo "PHASE2_MODULE=/lib/modules/stallcap-notw.ko" >>"$conf"
	fi
	cp "$tests" "$dir/etc/vmtest.tests"
	if [ "$mode" = selfcheck ] && [ -z "${TAG_SUFFIX:-}" ]; then
		# a failing test before the list, which the guest must skip
		# (vmtest.skip=1, as a guest booted again after a death does)
		cp "$top/selftests/harness/resume_skipped.sh" "$dir/selftests/harness/"
		{ echo harness/resume_skipped.sh; cat "$tests"; } >"$dir/etc/vmtest.tests"
	fi
	pack_overlay "$dir" "$build/$k/initrd-$mode.lz4"

	local ntests
	ntests=$(cat "$tests" $tests2 | grep -c .)
	guest_tmo=${GUEST_TIMEOUT:-$((180 + ntests * (test_tmo < 120 ? test_tmo : 120)))}
	[ "$k" = debug ] && [ -z "${GUEST_TIMEOUT:-}" ] && guest_tmo=$((guest_tmo * 3))
	if [ "$mode" = selfcheck ] && [ -z "${GUEST_TIMEOUT:-}" ]; then
		guest_tmo=120
		[ "$k" = debug ] && guest_tmo=600
	fi

	# The fuzzer's 10^6 calls run on one kernel (FUZZ_KERNEL); the others
	# get a shorter run, so that make check stays within CI's budget:
	# 60,000 calls (FUZZ_CALLS_SHORT; 100,000 until 2026-12-06, when the
	# CI machine took 60.3 minutes: the host's 2 CPUs are the budget, and
	# the fuzz, the torture and their IPI-mode reruns were 20% of the
	# guests' CPU), 30,000 on debug (FUZZ_CALLS_DEBUG: 75 s of CPU there
	# for 100,000 under KASAN).
	kernel_cmdline=
	# capture_ipi_test's fuzz run in IPI mode: 50,000 calls in at most 20 s
	# there, 10,000 in at most 10 s on the others.
	if [ "$k" != "${FUZZ_KERNEL:-6.1}" ]; then
		local fuzz_calls=${FUZZ_CALLS_SHORT:-60000}
		[ "$k" != debug ] || fuzz_calls=${FUZZ_CALLS_DEBUG:-30000}
		kernel_cmdline="STALLCAP_FUZZ_CALLS=$fuzz_calls"
		kernel_cmdline+=" STALLCAP_FUZZ_SECONDS=${FUZZ_SECONDS_SHORT:-45}"
		kernel_cmdline+=" STALLCAP_IPI_FUZZ_CALLS=10000 STALLCAP_IPI_FUZZ_SECONDS=10"
	fi
	# Likewise the torture test's 30 s (twice: NMI and IPI mode) run on
	# TORTURE_KERNELS; TORTURE_SECONDS_SHORT (10 s) elsewhere, debug
	# included (10 s there drive every race path under lockdep and KASAN:
	# each session of the test must see stalls, losses and suppressions,
	# and keep make check within its budget).
	# In IPI mode (capture_ipi_test) the others run 5 s (the full 30 s in
	# IPI mode stay on TORTURE_KERNELS; the reruns took 27-45 s of every
	# guest).
	if ! [[ " ${TORTURE_KERNELS:-6.1} " == *" $k "* ]]; then
		kernel_cmdline+=" STALLCAP_TORTURE_SECONDS=${TORTURE_SECONDS_SHORT:-10}"
		kernel_cmdline+=" STALLCAP_IPI_TORTURE_SECONDS=${IPI_TORTURE_SECONDS_SHORT:-5}"
	fi
	# arm_test's 10000 arm/re-arm/disarm cycles take 13x longer on debug
	[ "$k" != debug ] || kernel_cmdline+=" STALLCAP_ARM_CYCLES=${ARM_CYCLES_DEBUG:-1000}"
	# a memcached worker's first request there takes up to 220 ms of CPU
	# (its multiget stall 7.7-10.5 s): the deadline between them
	[ "$k" != debug ] || kernel_cmdline+=" STALLCAP_MEMCACHED_DEADLINE=1s"
	# the debug kernel has no function tracer: its kprobes are int3 traps
	# until optimized into jumps, and a handler entered by the trap runs
	# in an NMI-like context (module/attach_wait.c defers its work); with
	# optimization off, every attach test there takes that path under
	# lockdep and KASAN
	[ "$k" != debug ] || kernel_cmdline+=" sysctl.debug.kprobes-optimization=0"
	# 6.12-clang checks each indirect call's target type (kCFI), but a
	# tracepoint with one probe calls it directly (a static call): the
	# scheduler's trace events, on from boot, make every tracepoint the
	# module probes call through its iterator, where kCFI checks the
	# module's probes' prototypes
	[ "$k" != 6.12-clang ] ||
		kernel_cmdline+=" trace_event=sched:sched_switch,sched:sched_process_exit,sched:sched_process_exec,sched:sched_process_fork"

	# a guest whose CPU 1 is isolated (nohz_full, isolcpus) for the tests
	# that need one; results are named KERNEL-isolated/TEST
	local label=$k SMP=$SMP	# boot() reads SMP
	if [ "$mode" = isolated ]; then
		kernel_cmdline+=" nohz_full=1 isolcpus=1"
		label=$k-isolated
	fi
	if [ "$mode" = alt ]; then
		kernel_cmdline+=" pti=on psi=0"
		SMP=${ALT_SMP:-4}
		label=$k-alt
	fi
	[ "$mode" != notw ] || label=$k-notw

	local tag=$k
	[ "$mode" = check ] || tag=$k-$mode
	tag+=${TAG_SUFFIX:-}
	results_before=$(($(wc -l <"$RESULTS") + 1))
	# resume: the tests of the list (then of the second phase's) the guest
	# does not run (they finished in an earlier boot, whose lines are in
	# $finished)
	local boots=0 why keep n resume=0 finished=$logs/$tag.finished cmdline0=$kernel_cmdline
	rm -f "$finished"
	# the self-check's first guest skips its list's first test, which fails
	[ "$mode" != selfcheck ] || [ -n "${TAG_SUFFIX:-}" ] || resume=1
	while :; do
		kernel_cmdline=$cmdline0
		[ "$resume" = 0 ] || kernel_cmdline+=" vmtest.skip=$resume"
		boot "$tag" "$build/$k/initrd-$mode.lz4" "$guest_tmo" "$mem" \
			"${GUEST_SILENCE:-$((test_tmo + 120))}"
		boots=$((boots + 1))
		# the self-check's guests that time out or fall silent on
		# purpose (TAG_SUFFIX) are never booted again; its first is,
		# as any guest, when its kernel did not reach /init (CI73: a
		# 6.1 boot silent after 5 s, the next boot of 6.1 was fine)
		{ [ "$mode" != selfcheck ] || [ -z "${TAG_SUFFIX:-}" ]; } &&
			[ "$boots" -le "${BOOT_RETRIES:-1}" ] || break
		if ! grep -aq '^@@VMTEST boot' "$logs/$tag.chan"; then
			# The kernel died before /init ran, so before stallcap or
			# any test was there: under TCG a vCPU can execute the
			# int3 of a text-poke that another vCPU already finished
			# (seen at 4 s in sched_clock_cpu(), a static key of late
			# boot, on 6.12-rt and 7.2).
			keep=boot-failed
			why="guest did not reach /init ($(strip_log "$logs/$tag.console" |
				grep -m1 -E 'Oops:|Kernel panic|BUG:' || echo 'no splat'))"
		elif ! grep -aq '^@@VMTEST done' "$logs/$tag.chan" &&
			why=$(emulator_int3 "$logs/$tag.console" ||
			      emulator_stale_patch "$logs/$tag.console" ||
			      { [ "$guest_silent" != 0 ] &&
				{ emulator_int3_loop "$logs/$tag.hung" "$(int3_entry "$logs/$tag.chan")" ||
				  { name_hung "$logs/$tag.hung" <(strip_log "$logs/$tag.chan") "$tag" &&
				    emulator_int3_loop "$logs/$tag.hung"; }; }; }); then
			# The same, while tests ran (attach registers kprobes and
			# tracepoint probes: ftrace and static keys patch text)
			keep=emulator-int3
			why="guest died (or looped) on an int3 that is not in memory, $why"
		else
			break
		fi
		# Boot once more; the first console is kept.  After a death
		# while tests ran, the next guest runs the tests that did not
		# finish (CI100: 6.12-rt died after 356 s and ran them all again)
		cp "$logs/$tag.console" "$logs/$tag.$keep.console"
		cp "$logs/$tag.chan" "$logs/$tag.$keep.chan"
		[ "$guest_silent" = 0 ] || cp "$logs/$tag.hung" "$logs/$tag.$keep.hung"
		if [ "$keep" = emulator-int3 ] && [ "$mode" != selfcheck ] &&
			[ "${REPEAT:-1}" = 1 ]; then
			n=$(finished_tests "$logs/$tag.chan" "$finished")
			resume=$((resume + n))
			why+="; $n tests had finished, booted again to run the other $(($(cat "$tests" $tests2 | grep -c .) - resume))"
		else
			why+="; booted again"
		fi
		result NOTE "$label/boot" "$why, first console in $logs/$tag.$keep.console"
	done
	kernel_cmdline=$cmdline0
	[ ! -s "$finished" ] || merge_resumed "$logs/$tag.chan" "$finished"
	local rc=0
	[ -z "$tests2" ] || split_phase "$tag" "$k-notw${TAG_SUFFIX:-}"
	judge "$tag" "$label" "$tests"
	guest_summary "$tag" "$label" "$t0" || rc=1
	if [ -n "$tests2" ]; then
		judge "$k-notw${TAG_SUFFIX:-}" "$k-notw" "$tests2"
		guest_summary "$k-notw${TAG_SUFFIX:-}" "$k-notw" "$t0" || rc=1
	fi
	return $rc
}

# guest_summary TAG LABEL T0: the line of a guest's results (after judge),
# and where its log is if it failed; fails then
guest_summary() {
	local tag=$1 label=$2 t0=$3
	local bootup doneup
	bootup=$(awk '$2 == "boot" { for (i = 3; i <= NF; i++) if ($i ~ /^uptime=/) print substr($i, 8) }' "$logs/$tag.chan.txt")
	doneup=$(awk '$2 == "done" { print substr($3, 8) }' "$logs/$tag.chan.txt")
	local counts cpu
	# the guest's CPU time in its tests (both vCPUs), 1/100 s each
	cpu=$(awk '$1 == "@@VMTEST" && $2 == "test" && $6 ~ /^[0-9]+$/ { c += $6 }
		END { printf "%.0f", c / 100 }' "$logs/$tag.chan.txt")
	counts=$(awk -F'\t' -v k="$label/" 'NR >= n && index($2, k) == 1 {
			c[$1]++ } END { printf "%d passed, %d failed, %d skipped",
			c["PASS"], c["FAIL"], c["SKIP"] }' n="$results_before" "$RESULTS")
	printf -- '-- %s (%s): %s: %s; boot %ss, guest %ss (CPU in tests %ss), wall %ss\n' \
		"$label" "$KVER" "$([ "$judge_failed" = 0 ] && echo PASS || echo FAIL)" "$counts" \
		"${bootup:-?}" "${doneup:-?}" "$cpu" "$(elapsed "$t0" "$(now)")"
	if [ "$judge_failed" != 0 ]; then
		echo "   guest log: $logs/$tag.log"
		return 1
	fi
	return 0
}

# ---------------------------------------------------------------------------
# Harness self-check
# ---------------------------------------------------------------------------

# resume_selfcheck: finished_tests and merge_resumed on the channels of a
# guest that died in its third test (c, after a retry of b) and of the guest
# booted after it, which ran c and d; finished_tests on a guest that died in
# its second phase
resume_selfcheck() {
	local d=$build/selfcheck-resume n
	rm -rf "$d"
	mkdir -p "$d"
	printf '%s\r\n' '@@VMTEST boot 6.1 cpus=2 uptime=5.0 mode=check' '@@VMTEST insmod ok' \
		'@@VMTEST test-begin a' 'ok 1 a' '@@VMTEST test a 0 1 50' \
		'@@VMTEST test-begin b' 'not ok 1 b' '@@VMTEST test b 1 2 90' '@@VMTEST retry b 1' \
		'@@VMTEST test-begin b' 'ok 1 b' '@@VMTEST test b 0 2 80' \
		'@@VMTEST test-begin c' 'half of c' >"$d/died.chan"
	printf '%s\r\n' '@@VMTEST boot 6.1 cpus=2 uptime=6.0 mode=check' '@@VMTEST insmod ok' \
		'@@VMTEST resume skip=2' '@@VMTEST test-begin c' '@@VMTEST test c 0 3 100' \
		'@@VMTEST test-begin d' '@@VMTEST test d 0 1 40' '@@VMTEST rmmod ok' \
		'@@VMTEST done uptime=20.0' >"$d/chan"
	n=$(finished_tests "$d/died.chan" "$d/finished")
	[ "$n" = 2 ] || return 1
	merge_resumed "$d/chan" "$d/finished"
	# each test once, in the list's order, after the later boot's header
	[ "$(awk '$2 == "test" { printf "%s ", $3 } $2 == "boot" { printf "boot " }' "$d/chan")" = \
		"boot a b b c d " ] &&
		[ "$(grep -c '^@@VMTEST test-begin' "$d/chan")" = 5 ] &&
		! grep -q 'half of c' "$d/chan" || return 1
	# a guest that died in its second phase, whose first test is the
	# first phase's last: both count
	printf '%s\r\n' '@@VMTEST boot 6.1 cpus=2 uptime=5.0 mode=check' '@@VMTEST insmod ok' \
		'@@VMTEST test-begin a' '@@VMTEST test a 0 1 50' '@@VMTEST phase notw' \
		'@@VMTEST insmod ok' '@@VMTEST test-begin a' '@@VMTEST test a 0 1 50' \
		'@@VMTEST test-begin b' >"$d/died.chan"
	n=$(finished_tests "$d/died.chan" "$d/finished2")
	[ "$n" = 2 ]
}

selfcheck() {
	local k=$1 real_results=$RESULTS ok=1 why=()
	RESULTS=$build/selfcheck-results.txt
	: >"$RESULTS"
	echo "== harness self-check on $k (the failures below are expected)"
	run_kernel "$k" | sed 's/^/   | /'
	expect() {
		local status=$1 item=$2 re=${3:-}
		if ! awk -F'\t' -v s="$status" -v i="$k/$item" -v re="$re" \
			'$1 == s && $2 == i && $3 ~ re { f = 1 } END { exit !f }' "$RESULTS"; then
			ok=0
			why+=("expected $status $item${re:+ ($re)}")
		fi
	}
	expect PASS harness/pass_test.sh
	expect SKIP harness/skip_test.sh
	expect FAIL harness/unlisted_skip_test.sh 'case skipped, not in selftests/expected-skips: harness_unlisted_case'
	expect FAIL harness/fail_test.sh 'exit status 1'
	expect FAIL harness/tap_fail_test.sh 'failed: .*deliberate'
	expect FAIL harness/tap_fail_test.sh 'on retry 2'
	expect FAIL harness/timeout_test.sh 'timed out.*on retry 1'
	expect NOTE harness/flaky_test.sh 'FLAKY.*harness_flaky_first_run'
	expect PASS harness/flaky_test.sh
	expect NOTE harness/retry_cases_test 'FLAKY: failed once.*global.fails_on_its_first_run'
	expect PASS harness/retry_cases_test
	expect FAIL harness/retry_unreported_test 'exit status 1.*failed: harness.retried_case'
	expect NOTE harness/retry_died_test 'FLAKY: failed 2 times'
	expect PASS harness/retry_died_test
	expect FAIL dmesg 'WARNING:.*stallcap_harness'
	expect FAIL rmmod 'rmmod failed'
	[ -z "${SELFCHECK_LEAK:-}" ] || expect FAIL kmemleak 'leak'
	if grep -q "^@@VMTEST test-begin harness/resume_skipped" "$logs/$k-selfcheck.chan.txt"; then
		ok=0
		why+=("the guest ran the test vmtest.skip=1 skips")
	fi

	# a guest that does not finish in time
	echo "   guest timeout:"
	local saved_tmo=${GUEST_TIMEOUT:-}
	GUEST_TIMEOUT=${SELFCHECK_GUEST_TIMEOUT:-3} TAG_SUFFIX=-timeout run_kernel "$k" | sed 's/^/   | /'
	GUEST_TIMEOUT=$saved_tmo
	expect FAIL guest 'timed out after'

	# a guest that stops printing (as a hung kernel would): the hanging
	# test, given more than the silence to run, prints nothing after its
	# first line; the guest's vCPUs, read through the monitor before the
	# kill (where_hung), are both in the kernel's idle loop, named by the
	# symbols of a second boot (kernel_symbols, name_hung)
	echo "   silent guest:"
	GUEST_TIMEOUT=300 GUEST_SILENCE=${SELFCHECK_SILENCE:-25} GUEST_PEEK_AFTER=10 SILENCE_FROM_INIT=1 \
		SELFCHECK_TEST_TIMEOUT=200 TAG_SUFFIX=-silent run_kernel "$k" | sed 's/^/   | /'
	GUEST_TIMEOUT=$saved_tmo
	expect FAIL guest 'hung: no output.*harness/timeout_test.sh.*cpu 0: [A-Za-z_][A-Za-z0-9_.]*[+]0x[0-9a-f]+.*, interrupts o.*; cpu 1: [A-Za-z_][A-Za-z0-9_.]*[+]0x'
	# looked at while silent (after GUEST_PEEK_AFTER), and let run on
	grep -q '^cpu 1: 0x' "$logs/$k-selfcheck-silent.peek" 2>/dev/null ||
		{ ok=0; why+=("the silent guest was not looked at before its silence ended it"); }

	# a guest that died of an int3 (fixtures: a run of TCG cannot be
	# made to execute a stale int3 on purpose)
	local fix=$build/selfcheck-int3.console head='[   61.912345] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI
[   61.912351] RIP: 0010:__x64_sys_epoll_wait+0x5/0x30'
	printf '%s\r\n' "$head" '[   61.912352] Code: 90 90 90 f3 0f 1e fa 0f <1f> 44 00 00 48 8b 77 68' >"$fix"
	emulator_int3 "$fix" >/dev/null || { ok=0; why+=("a stale int3 (0f in memory) was not recognized"); }
	printf '%s\r\n' "$head" '[   61.912352] Code: 5d e9 00 00 00 00 cc <cc> cc cc 90 90' >"$fix"
	! emulator_int3 "$fix" >/dev/null || { ok=0; why+=("an int3 in memory was taken for a stale one"); }
	printf '%s\n' '[   60.100000] WARNING: CPU: 1 PID: 9 at module/watch.c:1 f+0x1/0x2 [stallcap]' "$head" \
		'[   61.912352] Code: 90 90 90 f3 0f 1e fa 0f <1f> 44 00 00 48 8b 77 68' >"$fix"
	! emulator_int3 "$fix" >/dev/null || { ok=0; why+=("a stale int3 after a WARNING hid the WARNING"); }
	# the same, forgiven and run again forever (CI124's 5.10 guest)
	head='[  349.808818] rcu: INFO: rcu_sched self-detected stall on CPU
[  349.838950] RIP: 0010:__x64_sys_poll+0x0/0x150'
	printf '%s\r\n' "$head" '[  349.839403] Code: 00 00 00 00 00 <66> 66 66 66 90 55 53 48 83 ec 18' >"$fix"
	emulator_stale_patch "$fix" >/dev/null || { ok=0; why+=("a vCPU looping on a patched nop was not recognized"); }
	printf '%s\r\n' "${head/+0x0\//+0x4\/}" '[  349.839403] Code: 00 00 00 00 00 <66> 66 66 66 90 55 53 48 83 ec 18' >"$fix"
	! emulator_stale_patch "$fix" >/dev/null || { ok=0; why+=("a CPU stuck inside a function was taken for the emulator's loop"); }
	printf '%s\r\n' "$head" '[  349.839403] Code: 00 00 00 00 00 <eb> fe 66 66 90 55 53 48 83 ec 18' >"$fix"
	! emulator_stale_patch "$fix" >/dev/null || { ok=0; why+=("a CPU stuck on a real instruction was taken for the emulator's loop"); }
	# the same with the site's interrupts off: no stall names it, the
	# guest falls silent, its vCPUs read through the monitor (CI127's 5.10)
	head='cpu 0: native_safe_halt+0xe (halted), interrupts on, rsp 0xffffffff83203eb8
cpu 1: asm_exc_int3+0x0, interrupts off, rsp 0xffffb1bc80013f18'
	printf '%s\n' "$head" '  trap frame: __schedule+0x1c1, memory from the byte before it: 0f 1f 44 00 00 48' '  ? __schedule+0x1c1' >"$fix"
	emulator_int3_loop "$fix" >/dev/null || { ok=0; why+=("a vCPU at the int3 entry forever on a stale int3 was not recognized"); }
	printf '%s\n' "$head" '  trap frame: __schedule+0x1c1, memory from the byte before it: cc 1f 44 00 00 48' >"$fix"
	! emulator_int3_loop "$fix" >/dev/null || { ok=0; why+=("a vCPU at the int3 entry on an int3 in memory was taken for the emulator's loop"); }
	printf '%s\n' "${head/asm_exc_int3/__schedule}" '  ? __schedule+0x1c1' '  also at: asm_exc_int3+0x0, interrupts off, rsp 0xffffb1bc80013f18' \
		'  trap frame: __schedule+0x1c1, memory from the byte before it: 0f 1f 44 00 00 48' >"$fix"
	emulator_int3_loop "$fix" >/dev/null || { ok=0; why+=("a vCPU seen at the int3 entry in a later stop was not recognized"); }
	printf '%s\n' "${head/asm_exc_int3/asm_common_interrupt}" '  trap frame: __schedule+0x1c1, memory from the byte before it: 0f 1f 44 00 00 48' >"$fix"
	! emulator_int3_loop "$fix" >/dev/null || { ok=0; why+=("a vCPU at another entry was taken for the int3 loop"); }
	# a look at a guest silent for a while (the guest runs on), its
	# addresses not named: the entry's address is the guest's own
	printf '%s\n' 'cpu 0: 0xffffffff81c01234, interrupts on, rsp 0xffffc90000013e00' \
		'  also at: 0xffffffff81e00b50, interrupts off, rsp 0xffffc90000013f18' \
		'  trap frame: 0xffffffff81101c1, memory from the byte before it: 66 66 66 66 90 41' >"$fix"
	emulator_int3_loop "$fix" 0xffffffff81e00b50 >/dev/null || { ok=0; why+=("the int3 loop seen by its entry's raw address was not recognized"); }
	! emulator_int3_loop "$fix" 0xffffffff81e00b5 >/dev/null || { ok=0; why+=("another address was taken for the int3 entry"); }
	resume_selfcheck || { ok=0; why+=("the channels of a guest that died and of the one booted after it were not merged right"); }

	RESULTS=$real_results
	if [ "$ok" = 1 ]; then
		result PASS harness-selfcheck "every deliberate failure was reported"
	else
		result FAIL harness-selfcheck "$(IFS=';'; echo "${why[*]}"), see $build/selfcheck-results.txt"
	fi
	[ "$ok" = 1 ]
}

# ---------------------------------------------------------------------------

[ -s "$top/.cache/kernels.list" ] || die "no kernel matrix: run 'make deps' first"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run 'make deps'"
[ -e "$RESULTS" ] || : >"$RESULTS"
standalone=0
if [ -z "${VMTEST_NESTED:-}" ]; then
	standalone=1
	: >"$RESULTS"
fi

# host-side builds the guest needs (scripts/check.sh builds and records
# them once for the whole run)
build_host() {
	local record=result
	[ "$standalone" = 1 ] && [ "$mode" != selfcheck ] || record=:
	local record_st=$record
	[ "$mode" != run ] || record_st=:	# only the tests it runs matter
	if ! make -s -k -C "$top/selftests" >"$logs/selftests-build.log" 2>&1; then
		record=$record_st
		[ "$record" = : ] || grep -E 'error|Error' "$logs/selftests-build.log" | head -n 10 | sed 's/^/    /'
		$record FAIL selftests/build "make -C selftests failed, see $logs/selftests-build.log"
	fi
	record=$([ "$standalone" = 1 ] && [ "$mode" != selfcheck ] && echo result || echo :)
	if [ -f "$top/tools/Makefile" ] && ! make -s -k -C "$top/tools" >"$logs/tools-build.log" 2>&1; then
		[ "$record" = : ] || grep -E 'error|Error' "$logs/tools-build.log" | head -n 10 | sed 's/^/    /'
		$record FAIL tools/build "make -C tools failed, see $logs/tools-build.log"
	fi
}
# --build KERNEL... builds only the modules of each (stallcap, its notw build
# where NOTW_KERNELS has one, the selftests' test module) and exits:
# scripts/check.sh makes them ahead of its lanes, in the CPU the guests
# leave; a kernel's own run then finds them built (a failed build is made
# again, and reported, there)
if [ "$mode" = build ]; then
	for k in "${kernels[@]}"; do
		[ "$k" != debug ] && kernel_info "$k" || continue
		mode=check build_module "$k"
		build_test_module "$k"
		! notw_wanted "$k" || mode=notw build_module "$k"
	done
	exit 0
fi
# --prepare makes the host builds, the test list and the initramfs base and
# exits; a run with VMTEST_PREPARED=1 uses them as they are (scripts/check.sh
# prepares once and then runs two kernels at once: one must not rebuild the
# base the other is packing)
if [ "$mode" = prepare ] || [ -z "${VMTEST_PREPARED:-}" ]; then
	build_host
	make -s --no-print-directory -C "$top/selftests" print-tests >"$build/selftests.list" 2>/dev/null ||
		: >"$build/selftests.list"
	mkdir -p "$initramfs"
	build_base
fi
[ "$mode" != prepare ] || exit 0

rc=0
for k in "${kernels[@]}"; do
	case $mode in
	selfcheck) selfcheck "$k" || rc=1 ;;
	*)
		run_kernel "$k" || rc=1
		# the isolated-CPU boot costs ~1 min: on ISOLATED_KERNELS only
		if [ "$mode" = check ] && [[ " $isolated_kernels " == *" $k "* ]] &&
			{ [ -z "${TESTS:-}" ] || [[ " $TESTS " == *" isolated_cpu_test "* ]]; }; then
			mode=isolated run_kernel "$k" || rc=1
		fi
		# other kernel settings (pti=on psi=0): on ALT_KERNELS only
		if [ "$mode" = check ] && [[ " $alt_kernels " == *" $k "* ]] &&
			{ [ -z "${TESTS:-}" ] || [ -n "${ALT_TESTS:-}" ]; }; then
			mode=alt run_kernel "$k" || rc=1
		fi
		# the module without task_work_add(): on NOTW_KERNELS only, in
		# the same guest unless NOTW_SAME_BOOT=0
		if [ "$mode" = check ] && [ "${NOTW_SAME_BOOT:-1}" = 0 ] && notw_wanted "$k"; then
			mode=notw run_kernel "$k" || rc=1
		fi
		;;
	esac
done

if [ "$standalone" = 1 ]; then
	tally "$RESULTS" || rc=1
fi
exit $rc
exit
}
