#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A libfuse 3 server, unmodified: Debian's fuse-overlayfs (rootless
# containers' file system), attached by root with `stallcap record -p`.
# libfuse 3 takes each request from /dev/fuse with splice() into a pipe
# (FUSE_CAP_SPLICE_READ, its default for a file system with write_buf, as
# fuse-overlayfs and every high-level one, sshfs's), not read(): that
# splice is a wait (STALLCAP_FEAT_WAIT_SPLICE; before, the threads waited
# in no call an attach counts and were never watched).  Its lower layer is
# a bindfs mount, a backing store served by another process; that one is
# stopped (SIGSTOP) while a lookup in a directory fuse-overlayfs has not
# read yet goes through the overlay, whose thread then waits inside the
# lower mount's request until SIGCONT, 0.6 s later.  That is its one
# stall: asleep in a request of the lower file system (its kernel stack),
# in faccessat2 (its whiteout check in the lower layer), inside libfuse
# 3's session loop; the requests before it (stats and reads of a file,
# each a short busy period) are none.
. ./tool_lib.sh
PATH=$PWD:$PATH
need stallcap bindfs fuse-overlayfs
if [ ! -c /dev/fuse ]; then
	echo "1..0 # SKIP no /dev/fuse"
	exit 4
fi
[ -e /etc/mtab ] || ln -s /proc/self/mounts /etc/mtab
base=$work/base lower=$work/lower up=$work/up wk=$work/wk ov=$work/ov
mkdir -p "$base/dir" "$lower" "$up" "$wk" "$ov"
echo hello >"$base/file"
touch "$base/dir/late"
bindfs -f "$base" "$lower" 2>"$work/lower.err" &
low=$!
check "the lower bindfs mounted" wait_until grep -q " $lower fuse" /proc/mounts
fuse-overlayfs -f -o "lowerdir=$lower,upperdir=$up,workdir=$wk" "$ov" \
	2>"$work/ov.err" &
ovl=$!
check "fuse-overlayfs mounted" wait_until grep -q " $ov fuse" /proc/mounts
fuse_lower_stall ovl "$ovl" "$ov" dir/late "$low"
# fuse-overlayfs gone before the lower mount, which it holds, goes
umount "$ov"
wait "$ovl" 2>/dev/null
umount "$lower"
wait "$low" 2>/dev/null

stalls=$(samples "$work/ovl.json" fuse-overlayfs | grep -o '"stall_id":[0-9]*' | sort -u | wc -l)
check "one stall of fuse-overlayfs (the stopped lower mount's), not its quick requests ($stalls)" \
	[ "$stalls" = 1 ]
check "asleep in a request of the lower file system (its kernel stack)" \
	any_sample "$work/ovl.json" fuse-overlayfs in_lower_request
# its check for a whiteout in the lower layer: glibc's faccessat() calls
# faccessat2 (Linux 5.8+)
in_faccessat2() { echo "$1" | grep -q '"syscall":{"nr":439,"name":"faccessat2",'; }
check "in system call faccessat2 (a whiteout check in the lower layer), in JSON" \
	any_sample "$work/ovl.json" fuse-overlayfs in_faccessat2
check "and in text" grep -q "in system call: faccessat2$" "$work/ovl.txt"
from_session_loop() { usyms "$1" | grep -q '^fuse_session_loop '; }
check "handling a request of libfuse 3's loop (its user stack)" \
	any_sample "$work/ovl.json" fuse-overlayfs from_session_loop
finish
