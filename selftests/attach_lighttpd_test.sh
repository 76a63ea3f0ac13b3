#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's lighttpd, unmodified: one thread, one event loop (its fdevent
# layer over epoll), already running and serving when `stallcap record
# --deadline 30ms -p PID` attaches to it.  A directory listing of a
# directory of 40,000 files (mod_dirlisting, a plugin loaded at run time)
# is built in one go inside the loop: a stall of a hundred milliseconds or
# more under TCG.  It is reported with its user stack unwound through the
# plugin (no symbols: `mod_dirlisting.so+0x...`) back to lighttpd's
# http_response_handler, connection_state_machine and main; the waits in
# epoll before and after it are not stalls.
. ./tool_lib.sh
need stallcap lighttpd nc awk seq xargs

port=8298
mkdir -p "$work/www/big"
(cd "$work/www/big" && seq 1 40000 | sed 's/^/file-with-a-longer-name-/' | xargs touch)
echo ok >"$work/www/index.html"
cat >"$work/lighttpd.conf" <<CFG
server.document-root = "$work/www"
server.port = $port
server.bind = "127.0.0.1"
server.errorlog = "$work/lighttpd.err"
server.upload-dirs = ( "$work" )
server.modules += ( "mod_dirlisting" )
dir-listing.activate = "enable"
CFG

get() { printf 'GET %s HTTP/1.0\r\n\r\n' "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }
answers() { get /index.html | grep -q '^ok'; }
lighttpd -D -f "$work/lighttpd.conf" >"$work/lighttpd.out" 2>&1 &
ld=$!
wait_until answers
check "lighttpd answers" answers
for i in 1 2 3; do get /index.html >/dev/null; done
stallcap record --deadline 30ms -v -p "$ld" -o "$work/ld.data" >"$work/record.out" 2>&1 &
rec=$!
reading "$work/record.out"
check "record attached to the running lighttpd" reading "$work/record.out"
for i in 1 2 3; do get /index.html >/dev/null; done
get /big/ >"$work/list.out"
check "the listing is answered" grep -q 'file-with-a-longer-name-' "$work/list.out"
sleep 0.5

kill "$ld"
wait "$ld"
wait_record "$rec"
check "record exits when lighttpd does" [ "$?" = 0 ]
sed 's/^/# record: /' "$work/record.out"

reports ld

# the listing: a frame in the plugin, under lighttpd's request handling
in_listing() {
	echo "$1" | grep -q '"dso":"[^"]*/mod_dirlisting\.so"' &&
		usyms "$1" | in_order http_response_handler connection_state_machine main
}
check "the listing's stall is reported, in mod_dirlisting under connection_state_machine" \
	any_sample "$work/ld.json" lighttpd in_listing mod_dirlisting
# frame 0 of the listing's first sample: the listing's own work (the
# plugin, or the C library's sort and string functions it calls)
first=$(grep '"type":"sample"' "$work/ld.json" | grep -F 'mod_dirlisting' | head -n 1)
echo "# frame 0 of the listing's first sample: in $(frame0_dso "$first")"
check "the listing's first sample has its innermost frame in the listing" \
	sh -c "case '$(frame0_dso "$first")' in mod_dirlisting.so|libc.so.6) exit 0;; *) exit 1;; esac"
check "waiting in epoll_wait is never a stall" \
	no_kernel_frame "$work/ld.json" lighttpd ep_poll do_epoll_wait
finish
