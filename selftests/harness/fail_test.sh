#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Harness self-check: a test that fails with exit status 1 and no TAP.
echo "harness: failing on purpose"
exit 1
