#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Harness self-check: fails on its first run in a boot and passes on the
# second; the harness must run it again and report it FLAKY (a NOTE) and
# passed, never silently.
ran=/tmp/harness_flaky_test.ran
echo "TAP version 13"
echo "1..1"
if [ -e "$ran" ]; then
	echo "ok 1 harness_flaky_second_run"
	exit 0
fi
: >"$ran"
echo "not ok 1 harness_flaky_first_run"
exit 1
