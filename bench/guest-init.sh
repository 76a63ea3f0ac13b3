#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the benchmark guest (busybox), written by bench/run.sh together
# with /etc/bench.conf.  Loads stallcap (NMI capture), runs every section of
# stallcap_bench, then reloads the module with capture=ipi for the IPI rows
# of the capture-cost section, dumps dmesg and powers off.
#
# Output goes to ttyS1 (the kernel console is ttyS0).  "@bench" lines are
# results, "@@BENCH" lines markers for bench/run.sh.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null

chan=/dev/ttyS1
[ -c "$chan" ] || chan=/dev/console
stty -F "$chan" raw -echo 2>/dev/null
exec >"$chan" 2>&1 </dev/null

BENCH_ARGS=
BENCH_SECTIONS=all
BENCH_TIMEOUT=3000
BENCH_IPI=1
BENCH_ATTACH=1
ATTACH_ROUNDS=5
MODULE_PARAMS=
. /etc/bench.conf

mark() { echo "@@BENCH $*"; }
mark boot "$(uname -r)" "cpus=$(nproc)"

# 10000 threads in a 1 GiB guest: the default threads-max is about 8000 there
echo 100000 >/proc/sys/kernel/threads-max
echo 4194304 >/proc/sys/kernel/pid_max 2>/dev/null

mod=/lib/modules/stallcap.ko
t0=$(date +%s)
if insmod "$mod" $MODULE_PARAMS; then
	mark insmod ok
	timeout -k 10 "$BENCH_TIMEOUT" stallcap_bench $BENCH_ARGS $BENCH_SECTIONS
	mark bench rc=$?
	if [ -x /usr/share/stallcap/attach.sh ] && [ "$BENCH_ATTACH" != 0 ]; then
		ip link set lo up 2>/dev/null
		# about 2 minutes a pair under TCG
		ATTACH_ROUNDS=$ATTACH_ROUNDS timeout -k 10 \
			$((ATTACH_ROUNDS > 5 ? ATTACH_ROUNDS * 180 : 900)) \
			/usr/share/stallcap/attach.sh
		mark bench-attach rc=$?
	fi
	rmmod stallcap && mark rmmod ok || mark rmmod fail
else
	mark insmod fail
fi

if [ "$(nproc)" -ge 2 ] && [ "$BENCH_IPI" != 0 ]; then
	if insmod "$mod" $MODULE_PARAMS capture=ipi; then
		mark insmod-ipi ok
		timeout -k 10 "$BENCH_TIMEOUT" stallcap_bench $BENCH_ARGS --remote-only capture
		mark bench-ipi rc=$?
		rmmod stallcap && mark rmmod-ipi ok || mark rmmod-ipi fail
	else
		mark insmod-ipi fail
	fi
fi
echo "@bench info.clocksource_end=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "@bench info.guest_seconds=$(($(date +%s) - t0))"

mark dmesg-begin
dmesg
mark dmesg-end
mark done
sync
poweroff -f
