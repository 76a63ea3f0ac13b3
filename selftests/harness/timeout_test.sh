#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Harness self-check: a test that hangs (the harness must kill it).
echo "harness: sleeping until killed"
sleep 1000
