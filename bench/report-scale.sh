#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/report-scale.sh [N]: host side.  Write N (default 100000) generated
# stalls with the tool's own writer (tools/tests/gen_stalls), time
# `stallcap report` over them (--top, -f folded, text: CPU and wall time,
# peak RSS from wait4) and print "@bench host.report.*" lines for
# bench/report.c.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
make -s -C "$top/tools" stallcap/stallcap tests/gen_stalls >&2
exec "$top/tools/tests/gen_stalls" --bench "$top/tools/stallcap/stallcap" "${1:-100000}"
