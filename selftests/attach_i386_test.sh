#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A 32-bit program's system calls take the kernel's compat entry points,
# which the attach does not probe: none of its threads would ever be
# reported.  `stallcap record --deadline -p` says so at once (never a
# silent nothing), and still records and ends normally.
. ./tool_lib.sh
PATH=$PWD:$PATH
need stallcap attach_i386_pause

attach_i386_pause 2>"$work/run.err" &
p=$!
sleep 0.2
if ! kill -0 "$p" 2>/dev/null; then
	sed 's/^/# /' "$work/run.err"
	echo "1..0 # SKIP this kernel runs no 32-bit programs (IA32 emulation)"
	exit 4
fi
stallcap record --deadline 20ms -p "$p" -d 0.5s -o "$work/i386.data" \
	>"$work/record.out" 2>&1
rc=$?
sed 's/^/# record: /' "$work/record.out"
check "record ends normally" [ "$rc" = 0 ]
check "it says that a 32-bit program's threads are never reported" \
	grep -q "process $p runs a 32-bit program: .*is ever reported" "$work/record.out"
check "and does not call it a Go program" \
	sh -c "! grep -q 'Go program' '$work/record.out'"
kill "$p"
wait "$p" 2>/dev/null
finish
