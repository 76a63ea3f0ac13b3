#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The attach's probes are found whatever the recording process's own root
# and mount namespace hold.  On a kernel linked by ThinLTO the module looks
# up the renamed read functions (pipe_read.llvm.N) in /proc/kallsyms, once
# per probe set: it reads the machine's, from a kernel worker, never the
# caller's, which a user namespace may cover with anything (a bind mount of
# /dev/null: a file that is no seq_file; reading it as kallsyms oopsed).
# The module is loaded afresh, so that this test's attach registers the
# probe sets; the recorder runs in its own mount namespace with /dev/null
# over /proc/kallsyms, and watches with --recv a shell that reads a line
# from a FIFO for about a second (a blocking pipe read: idle), then counts
# to 30,000 (a stall).  Only the count may be reported: no sample asleep.
# On a kernel not linked by LTO the names are found by kallsyms itself and
# the same holds.
. ./tool_lib.sh
need stallcap unshare mount mkfifo
MODULE=${STALLCAP_MODULE:-/lib/modules/stallcap.ko}
GID=$(cat /sys/module/stallcap/parameters/gid 2>/dev/null || echo 0)
[ -r "$MODULE" ] || { echo "1..0 # SKIP no $MODULE"; exit 4; }

rmmod stallcap || { echo "# rmmod failed"; exit 1; }
insmod "$MODULE" gid="$GID" || { echo "# insmod failed"; exit 1; }
mkfifo "$work/fifo"
unshare -m sh -c "mount --bind /dev/null /proc/kallsyms &&
	[ ! -s /proc/kallsyms ] &&
	exec stallcap record --recv --deadline 50ms -v -o $work/ns.data -- \
		sh -c 'exec 3<>$work/fifo; read -r x <&3;
			i=0; while [ \$i -lt 30000 ]; do i=\$((i + 1)); done'" \
	>"$work/record.out" 2>&1 &
rec=$!
check "record reads in a namespace whose /proc/kallsyms is /dev/null" \
	reading "$work/record.out"
sleep 1.5
echo go >"$work/fifo"
wait_record "$rec"
check "record exits when the shell does" [ "$?" = 0 ]
sed 's/^/# record: /' "$work/record.out"
reports ns

running() { echo "$1" | grep -q '"state":"running'; }
check "the count is reported" grep -q '"type":"sample"' "$work/ns.json"
check "the read of the FIFO is not (the pipe's read function probed)" \
	every_sample "$work/ns.json" sh running
finish
