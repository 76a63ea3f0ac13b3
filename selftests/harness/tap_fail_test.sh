#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Harness self-check: one failed TAP case among passing ones.
echo "TAP version 13"
echo "1..3"
echo "ok 1 harness_first"
echo "not ok 2 harness_deliberate_failure"
echo "ok 3 harness_third"
echo "# Totals: pass:2 fail:1 xfail:0 xpass:0 skip:0 error:0"
exit 1
