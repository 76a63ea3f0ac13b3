#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Harness self-check: a test that skips (kselftest KSFT_SKIP).
echo "TAP version 13"
echo "1..1"
echo "ok 1 harness_skip # SKIP deliberate"
exit 4
