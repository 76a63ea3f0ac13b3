#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: build stallcap and stallcap_bench, boot the default kernel
# (6.12) in QEMU (TCG, 2 vCPUs, 1 GiB) with a busybox initramfs, load the
# module, run every benchmark section, reload the module with capture=ipi
# for the IPI rows, then write bench/results/latest.md (the tables) and
# bench/results/latest.json, and print the tables.
#
#   bench/run.sh [--smoke] [KERNEL]
#
# KERNEL is a name of .cache/kernels.list (default $RUN_KERNEL or 6.12).
# --smoke runs tiny counts (a minute) and writes build/bench/smoke.{md,json}
# instead of the results.
#
# Environment: SMP (vCPUs, default 2), MEM (default 1G), BENCH_TIMEOUT
# (seconds for the whole guest, default 3600), BENCH_ARGS (more
# stallcap_bench options, e.g. "--scale-max 1000"), BENCH_SECTIONS (default
# all; e.g. "info hot" for a partial run, with BENCH_OUT), BENCH_IPI=0 (skip
# the capture=ipi reload), BENCH_ATTACH=0 (skip bench/attach.sh, the
# redis rounds), ATTACH_ROUNDS (its pairs, default 5), MODULE_PARAMS
# (insmod arguments), BENCH_OUT
# (output base, default bench/results/latest), BENCH_COMMIT (how the
# results name the sources, default the git commit), V=1 (stream the
# guest's output).
#
# Exits non-zero when the module does not load or unload, a section fails,
# the guest does not finish, or the kernel log shows a splat; the results
# are written in every case where the guest produced some.
#
# Reuses scripts/lib.sh (tree lock, kernel matrix, module build); builds its
# own initramfs under build/bench/ so that it never touches vmtest's files.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib.sh"

smoke=0
k=${RUN_KERNEL:-6.12}
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) smoke=1 ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) k=$1 ;;
	esac
	shift
done

[ -s "$top/.cache/kernels.list" ] || die "no kernel matrix: run 'make deps' first"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run 'make deps'"
lock_tree

bdir=$build/bench
out=${BENCH_OUT:-$top/bench/results/latest}
bench_args=${BENCH_ARGS:-}
if [ "$smoke" = 1 ]; then
	out=${BENCH_OUT:-$bdir/smoke}
	bench_args="--smoke $bench_args"
fi
mem=${MEM:-1G}
smp=${SMP:-2}
tmo=${BENCH_TIMEOUT:-3600}
mkdir -p "$bdir" "$(dirname "$out")"

kernel_info "$k" || die "kernel $k not available"
echo "== bench on $k ($KVER), $smp vCPUs, $mem"

# ---- build ----
sync_tree "$bdir/src" Kbuild module uapi
if ! kbuild "$bdir/src" "$KDIR" "$logs/bench-$k.build.log"; then
	grep -E 'error|warning' "$logs/bench-$k.build.log" | head -n 20
	die "module build failed, see $logs/bench-$k.build.log"
fi
make -s -C "$top/bench" OUT="$bdir/stallcap_bench" TOP="$top" ||
	die "stallcap_bench build failed"

# ---- initramfs ----
st=$bdir/initramfs
rm -rf "$st"
mkdir -p "$st"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,lib/modules}
cp /bin/busybox "$st/bin/busybox"
busybox --list-full | while read -r f; do
	[ -e "$st/$f" ] || [ -L "$st/$f" ] || ln -s /bin/busybox "$st/$f"
done
install -m 755 "$top/bench/guest-init.sh" "$st/init"
install -m 755 "$bdir/stallcap_bench" "$st/usr/bin/stallcap_bench"
cp "$bdir/src/module/stallcap.ko" "$st/lib/modules/"
# the attach section (bench/attach.sh): the stallcap tool, Debian's redis,
# perf (the hooks' share of redis-server's CPU) and their shared libraries
make -s -C "$top/tools" stallcap/stallcap || die "tools build failed"
mkdir -p "$st/usr/share/stallcap"
install -m 755 "$top/bench/attach.sh" "$st/usr/share/stallcap/attach.sh"
for f in "$top/tools/stallcap/stallcap" /usr/bin/redis-server /usr/bin/redis-cli \
	/usr/bin/redis-benchmark /usr/bin/perf; do
	[ -e "$f" ] || continue
	cp -L "$f" "$st/usr/bin/$(basename "$f")"
	ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^[ \t]*\/[^ ]+ \(/ { print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p "$st$(dirname "$lib")"
	cp -L "$lib" "$st$lib"
done
echo "root:x:0:0:root:/root:/bin/sh" >"$st/etc/passwd"
cat >"$st/etc/bench.conf" <<-EOF
BENCH_ARGS='$bench_args'
BENCH_SECTIONS='${BENCH_SECTIONS:-all}'
BENCH_TIMEOUT=$((tmo - 120))
BENCH_IPI=${BENCH_IPI:-1}
BENCH_ATTACH=${BENCH_ATTACH:-1}
ATTACH_ROUNDS=${ATTACH_ROUNDS:-5}
MODULE_PARAMS='${MODULE_PARAMS:-}'
EOF
(cd "$st" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -1 >"$bdir/initrd.gz"

# ---- boot ----
con=$logs/bench-$k.console
chan=$logs/bench-$k.chan
: >"$con"
: >"$chan"
# 10,000 runnable SCHED_OTHER threads (the scale section) on 2 emulated
# vCPUs starve RCU's grace-period kthread for over 21 s ("rcu_preempt
# kthread starved", an RCU stall splat): it runs as SCHED_FIFO 1 here.
rcu_prio=rcutree.kthread_prio=1
# tsc=reliable (as the test guests): no clocksource watchdog, which under a
# loaded TCG host can mark the TSC unstable mid-run, changing the clock
# every figure is read with and patching sched_clock's static key while
# the other vCPU runs it (TCG then oopses on the int3: seen at 183 s)
tsc=tsc=reliable
qemu_cmd=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$mem" -smp "$smp"
	-nodefaults -display none -monitor none -no-reboot
	-kernel "$KIMAGE" -initrd "$bdir/initrd.gz"
	-append "console=ttyS0,115200 panic=-1 log_buf_len=8M quiet $rcu_prio $tsc"
	-serial "file:$con" -serial "file:$chan")
t0=$(now)
load0=$(cut -d' ' -f1 /proc/loadavg)
timeout -k 5 "$tmo" "${qemu_cmd[@]}" </dev/null >"$logs/bench-$k.qemu" 2>&1 &
qpid=$!
if [ "${V:-0}" = 1 ]; then
	tail -n +1 -f --pid=$qpid "$chan" 2>/dev/null |
		sed -u '/^@@BENCH dmesg-begin/,/^@@BENCH dmesg-end/d' &
fi
wait $qpid
qemu_rc=$?
wait 2>/dev/null
tr -d '\r' <"$chan" >"$chan.txt"
tr -d '\r' <"$con" >"$con.txt"
rm -f "$chan" "$con"
echo "-- guest finished in $(elapsed "$t0" "$(now)") s (qemu exit $qemu_rc); log: $chan.txt"

# ---- judge ----
fail=()
grep -q '^@@BENCH done' "$chan.txt" || fail+=("guest did not finish (qemu exit $qemu_rc)")
grep -q '^@@BENCH insmod ok' "$chan.txt" || fail+=("insmod failed")
grep -q '^@@BENCH rmmod ok' "$chan.txt" || fail+=("rmmod failed")
ipi_error=
if [ "$smp" -ge 2 ] && [ "${BENCH_IPI:-1}" != 0 ]; then
	grep -q '^@@BENCH insmod-ipi ok' "$chan.txt" || fail+=("insmod capture=ipi failed")
	grep -q '^@@BENCH rmmod-ipi ok' "$chan.txt" || fail+=("rmmod (capture=ipi) failed")
	if grep -q '^@@BENCH insmod-ipi ok' "$chan.txt" &&
	   ! grep -q '^@@BENCH bench-ipi ' "$chan.txt"; then
		ipi_error="the guest kernel crashed during the capture=ipi run: $(
			grep -m1 -E 'BUG:|Oops|RIP:|panic' "$con.txt" | sed 's/^\[ *[0-9.]*\] //')"
	fi
fi
while read -r line; do
	fail+=("$line")
done < <(grep -E '^@bench section\.[a-z]+\.rc=[1-9]' "$chan.txt" | sed 's/^@bench /failed: /')
splat_re='WARNING:|BUG:|kernel BUG at|Oops|general protection fault|Kernel panic|'
splat_re+='scheduling while atomic|sleeping function called|RCU stall|detected stall|'
splat_re+='soft lockup|hard LOCKUP|blocked for more than|Call Trace:|double fault'
if grep -E "$splat_re" "$con.txt" \
	<(awk '/^@@BENCH dmesg-begin/ { on = 1; next } /^@@BENCH dmesg-end/ { on = 0 } on' "$chan.txt") \
	>"$logs/bench-$k.splats" 2>/dev/null; then
	fail+=("kernel splat: $(head -n 1 "$logs/bench-$k.splats")")
fi

# ---- report ----
raw=$bdir/raw.txt
{
	grep '^@bench ' "$chan.txt"
	[ -z "$ipi_error" ] || echo "@bench capture.ipi.error=$ipi_error"
	# "NMI handler ... took too long" in the guest's kernel log: inside the
	# nmi section's rounds that copy in the handler on purpose, and elsewhere
	# (stallcap's handler, or another one, which does nothing for our NMIs:
	# such a line shows the host stopping the vCPU in the middle of an NMI)
	awk '/^@@BENCH dmesg-begin/ { on = 1; next } /^@@BENCH dmesg-end/ { on = 0 }
		!on { next }
		/vmtest: allow-slow-nmi begin/ { w = 1; next }
		/vmtest: allow-slow-nmi end/ { w = 0; next }
		/NMI handler .* took too long/ {
			if (w) { inw++; next }
			if (/stallcap/) { if (!sc++) first_sc = $0 }
			else if (!other++) first_other = $0
		}
		/hrtimer: interrupt took/ { hrt++ }
		END { printf "@bench nmi.too_long.in_handler_rounds=%d\n", inw
		      printf "@bench nmi.hrtimer_slow=%d\n", hrt
		      printf "@bench nmi.too_long.elsewhere=%d\n", sc
		      printf "@bench nmi.too_long.other_handlers=%d\n", other
		      if (sc) printf "@bench nmi.too_long.first_elsewhere=%s\n", first_sc
		      if (other) printf "@bench nmi.too_long.first_other=%s\n", first_other
		}' "$chan.txt"
	"$top/bench/report-scale.sh" || echo "@bench host.report.error=1"
	echo "@bench meta.date=$(date -u +%Y-%m-%d)"
	echo "@bench meta.host_cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "@bench meta.host_cores=$(nproc)"
	echo "@bench meta.host_load_start=$load0"
	echo "@bench meta.host_load_end=$(cut -d' ' -f1 /proc/loadavg)"
	echo "@bench meta.qemu=$(qemu-system-x86_64 --version | awk 'NR == 1 { print $4 }')"
	echo "@bench meta.guest_kernel_package=$KVER"
	echo "@bench meta.smp=$smp"
	echo "@bench meta.mem=$mem"
	echo "@bench meta.commit=${BENCH_COMMIT:-$(git -C "$top" rev-parse --short HEAD 2>/dev/null ||
		echo unknown)$(git -C "$top" diff --quiet HEAD -- module uapi bench 2>/dev/null ||
		echo '+local changes')}"
} >"$raw"
if grep -q '^@bench section\.' "$raw"; then
	"$bdir/stallcap_bench" report "$raw" "$out" || fail+=("report failed")
	echo "-- results: $out.md, $out.json (raw: $raw)"
else
	fail+=("no results")
fi

if [ ${#fail[@]} -gt 0 ]; then
	printf 'bench: FAIL: %s\n' "${fail[@]}" >&2
	exit 1
fi
echo "bench: PASS"
