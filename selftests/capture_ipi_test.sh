#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Capture by IPI (module parameter capture=ipi): reload the module with it,
# run the capture tests (capture_user_test expects path IPI for a thread on
# another CPU when the module reports no STALLCAP_FEAT_NMI), the torture test
# and a shorter fuzz run (the IPI path's own races: one csd per CPU, revoked
# requests, mirroring), then reload the module with its defaults.
MODULE=${STALLCAP_MODULE:-/lib/modules/stallcap.ko}
# the device's group as loaded (/dev/stallcap keeps it across the reloads)
GID=$(cat /sys/module/stallcap/parameters/gid 2>/dev/null || echo 0)

[ -r "$MODULE" ] || { echo "# SKIP: no $MODULE"; exit 4; }
rmmod stallcap || { echo "# rmmod failed"; exit 1; }
if ! insmod "$MODULE" capture=ipi gid="$GID"; then
	echo "# insmod capture=ipi failed"
	insmod "$MODULE" gid="$GID"
	exit 1
fi
rc=0
if [ "$(cat /sys/module/stallcap/parameters/capture)" != ipi ]; then
	echo "# capture parameter is not ipi"
	rc=1
fi
for t in capture_user_test capture_blocked_test; do
	echo "# --- $t (capture=ipi)"
	./$t || { echo "# $t failed in IPI mode"; rc=1; }
done
# the torture run's length: STALLCAP_IPI_TORTURE_SECONDS if set (shorter
# than the NMI-mode run on the kernels that do not run it in full, see
# TORTURE_KERNELS in scripts/vmtest.sh), else torture_test's own
echo "# --- torture_test (capture=ipi)"
if [ -n "${STALLCAP_IPI_TORTURE_SECONDS:-}" ]; then
	STALLCAP_TORTURE_SECONDS=$STALLCAP_IPI_TORTURE_SECONDS ./torture_test
else
	./torture_test
fi || { echo "# torture_test failed in IPI mode"; rc=1; }
echo "# --- fuzz_test (capture=ipi)"
STALLCAP_FUZZ_CALLS=${STALLCAP_IPI_FUZZ_CALLS:-50000} \
STALLCAP_FUZZ_SECONDS=${STALLCAP_IPI_FUZZ_SECONDS:-20} ./fuzz_test ||
	{ echo "# fuzz_test failed in IPI mode"; rc=1; }
rmmod stallcap || rc=1
insmod "$MODULE" gid="$GID" || rc=1
exit $rc
