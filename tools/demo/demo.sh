#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The README's first example, run in the guest by `make run`: the demo's
# three stalls recorded by stallcap, then the symbolized report.
#   demo.sh [DIR]   (DIR keeps the record file; default a temporary one)
set -e

dir=${1:-${TMPDIR:-/tmp}}
data="$dir/stallcap-demo.data"

echo "\$ stallcap record -o $data -- stallcap-demo"
stallcap record -o "$data" -- stallcap-demo
echo
echo "\$ stallcap report $data"
stallcap report "$data"
