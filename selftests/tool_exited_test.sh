#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A report made after the process exited still resolves its user frames
# (maps and build-ids were saved while it lived); a live report too.  A
# live global report forgets an exited process (maps, symbol tables) once
# it has been silent 5 s, after its stall was printed resolved.  A binary
# deleted while it runs (a server upgraded in place) is kept by the
# recorder, by build-id, and resolves from that copy.
. ./tool_lib.sh
need stallcap stallcap-exit-early

stallcap record -o "$work/exit.data" -- stallcap-exit-early 300 20
check "record exits 0" [ $? = 0 ]
stallcap report -f json "$work/exit.data" >"$work/exit.json"
pid=$(grep -m1 '"type":"stall"' "$work/exit.json" | sed 's/.*"pid":\([0-9]*\).*/\1/')
gone() { [ -n "$pid" ] && [ ! -d "/proc/$pid" ]; }
check "the recorded process ($pid) is gone" gone

resolved() { usyms "$1" | in_order fixture_spin fixture_level2 fixture_level1 main; }
check "its user frames resolve from the saved maps" \
	any_sample "$work/exit.json" stallcap-exit-e resolved
stallcap report "$work/exit.data" >"$work/exit.txt"
show "$work/exit.txt"
check "with file:line" grep -q 'fixture_spin+0x[0-9a-f]*  fixture.c:[0-9]' "$work/exit.txt"

# the binary deletes itself before its deadline (FIXTURE_UNLINK_SELF): the
# first sample's snapshot finds "PATH (deleted)" and keeps a copy
cp "$(command -v stallcap-exit-early)" "$work/upgraded"
STALLCAP_KEEP_DIR="$work/kept" FIXTURE_UNLINK_SELF=1 \
	stallcap record -o "$work/del.data" -- "$work/upgraded" 300 20 2>"$work/del.err"
check "record of a binary that deletes itself exits 0" [ $? = 0 ]
check "the binary is gone" [ ! -e "$work/upgraded" ]
check "the recorder kept a copy by its build-id" sh -c 'ls "$1"/*/elf >/dev/null' _ "$work/kept"
STALLCAP_KEEP_DIR="$work/kept" stallcap report -f json "$work/del.data" >"$work/del.json"
check "its frames resolve from that copy" any_sample "$work/del.json" upgraded resolved
STALLCAP_KEEP_DIR="$work/none" stallcap report -f json "$work/del.data" \
	>"$work/none.json" 2>"$work/none.err"
sed 's/^/# /' "$work/none.err"
if any_sample "$work/none.json" upgraded resolved; then
	not_ok "without the copy they stay unresolved"
else
	ok "without the copy they stay unresolved"
fi
check "and the report says no copy was kept" grep -q "(deleted): no copy kept" "$work/none.err"

stallcap report -f json -- stallcap-exit-early 200 20 >"$work/live.json"
check "live report (-- CMD) exits 0" [ $? = 0 ]
check "live report resolves the frames" any_sample "$work/live.json" stallcap-exit-e resolved

stallcap report -v --global -f json >"$work/glive.json" 2>"$work/glive.err" &
rep=$!
# the reader is ready once it says so (it reads the kernel's symbols first)
check "live global report says when it reads records" reading "$work/glive.err"
stallcap-exit-early 200 20 &
gpid=$!
wait $gpid
# silent 5 s and gone: forgotten within a second more (waited for up to 30 s)
freed() { grep -qx "stallcap: pid $gpid exited: its maps and symbols freed" "$work/glive.err"; }
i=0
while [ "$i" -lt 300 ] && ! freed; do
	sleep 0.1
	i=$((i + 1))
done
kill -INT $rep
wait $rep
check "live global report exits 0 on SIGINT" [ $? = 0 ]
sed 's/^/# /' "$work/glive.err"
check "it printed the stall resolved" any_sample "$work/glive.json" stallcap-exit-e resolved
check "then freed the exited process's state" freed
finish
