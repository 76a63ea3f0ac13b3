#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Harness self-check: a test that passes.
echo "TAP version 13"
echo "1..1"
echo "ok 1 harness_pass"
exit 0
