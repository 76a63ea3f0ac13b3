#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A FUSE server, unmodified: Debian's bindfs (libfuse 2, threads that wait
# for the kernel's next request in a blocking read() of /dev/fuse),
# attached by root with `stallcap record -p`.  That read is a wait
# (STALLCAP_FEAT_WAIT_DEVICES; before, its threads waited in no call an
# attach counts and were never watched).  Its backing directory is another
# bindfs's mount, as a network file system is a server's backing store;
# that one is stopped (SIGSTOP) while a lookup goes through the first,
# whose thread then waits inside the lower mount's request until SIGCONT,
# 0.6 s later.  That is its one stall: asleep in a request of the lower
# file system (its kernel stack), in system call lstat (bindfs's lstat of
# the backing file, named in text and JSON); the requests before it (stats
# and reads of a file, each a short busy period) are none.
. ./tool_lib.sh
PATH=$PWD:$PATH
need stallcap bindfs
if [ ! -c /dev/fuse ]; then
	echo "1..0 # SKIP no /dev/fuse"
	exit 4
fi
# libfuse 2 updates /etc/mtab as root unless it is the kernel's list
[ -e /etc/mtab ] || ln -s /proc/self/mounts /etc/mtab
base=$work/base lower=$work/lower upper=$work/upper
mkdir -p "$base" "$lower" "$upper"
echo hello >"$base/file"
touch "$base/late"
bindfs -f "$base" "$lower" 2>"$work/lower.err" &
low=$!
check "the lower bindfs mounted" wait_until grep -q " $lower fuse" /proc/mounts
bindfs -f "$lower" "$upper" 2>"$work/upper.err" &
up=$!
check "the upper bindfs mounted" wait_until grep -q " $upper fuse" /proc/mounts
fuse_lower_stall fuse "$up" "$upper" late "$low"
# the upper server gone before the lower mount, which it holds, goes
umount "$upper"
wait "$up" 2>/dev/null
umount "$lower"
wait "$low" 2>/dev/null

stalls=$(samples "$work/fuse.json" bindfs | grep -o '"stall_id":[0-9]*' | sort -u | wc -l)
check "one stall of bindfs (the stopped lower mount's), not its quick requests ($stalls)" \
	[ "$stalls" = 1 ]
check "asleep in a request of the lower file system (its kernel stack)" \
	any_sample "$work/fuse.json" bindfs in_lower_request
in_lstat() { echo "$1" | grep -q '"syscall":{"nr":6,"name":"lstat",'; }
check "in system call lstat (bindfs's of the backing file), in JSON" \
	any_sample "$work/fuse.json" bindfs in_lstat
check "and in text" grep -q "in system call: lstat$" "$work/fuse.txt"
finish
