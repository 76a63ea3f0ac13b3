#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Debian's mosquitto (an MQTT broker, unmodified: one thread, its own epoll
# loop, its internal functions named in its dynamic symbol table), started
# by `stallcap record --deadline 20ms -- mosquitto ...`.  A client publishes
# 20,000 retained messages on distinct topics; one subscription to all of
# them is then answered inside one loop iteration (each retained message
# queued and written to the new client from handle__subscribe()): a stall
# on CPU in the broker, reported with its user stack from that handler
# down to main() through the broker's own event loop, and through the
# recursive walk of the topic tree under it (DWARF: Debian builds it
# without frame pointers).
. ./tool_lib.sh
need stallcap mosquitto mosquitto_sub python3

port=18830
msgs=20000
stallcap record --deadline 20ms -o "$work/mq.data" -- \
	mosquitto -p "$port" >"$work/record.out" 2>&1 &
rec=$!
# mosquitto_sub's exit status 27: it connected, and timed out (-W 1)
up() { mosquitto_sub -h 127.0.0.1 -p "$port" -t none -W 1 -C 1 >/dev/null 2>&1; [ $? = 27 ]; }
wait_until up
mq=$(pidof mosquitto)
check "mosquitto answers" [ -n "$mq" ]
# MQTT 3.1.1 by hand (the guest has no MQTT library for Python): CONNECT,
# then every PUBLISH (QoS 0, retained; topics six levels deep) in one
# write, then DISCONNECT
cat >"$work/pub.py" <<'PY'
import socket, struct, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
def rl(x):
    out = b''
    while True:
        d, x = x % 128, x // 128
        out += bytes([d | (128 if x else 0)])
        if not x:
            return out
def pkt(t, body): return bytes([t]) + rl(len(body)) + body
def st(x): x = x.encode(); return struct.pack('>H', len(x)) + x
c = socket.socket()
c.connect((b'127.0.0.1', port))  # bytes: the guest's Python has no idna codec
c.sendall(pkt(0x10, st('MQTT') + bytes([4, 2]) + struct.pack('>H', 60) + st('pub1')))
assert c.recv(4)[0] == 0x20
c.sendall(b''.join(pkt(0x31, st('r/a/b/c/d/%d' % i) + b'v') for i in range(n)))
c.sendall(pkt(0xe0, b''))
c.close()
PY
python3 "$work/pub.py" "$port" "$msgs"
sleep 1
got=$(mosquitto_sub -h 127.0.0.1 -p "$port" -t 'r/#' -C "$msgs" -W 120 | wc -l)
check "the subscription gets every retained message" [ "$got" = "$msgs" ]
sleep 0.5
kill "$mq"
wait_record "$rec"
sed 's/^/# record: /' "$work/record.out"
reports mq

# a sample of the subscription's stall: on CPU (in the broker or in a
# system call it makes), under the handler, the loop and main, in order
in_subscribe() {
	echo "$1" | grep -q '"state":"running"' &&
		usyms "$1" | in_order handle__subscribe handle__packet mosquitto_main_loop main
}
check "the subscription's stall: on CPU in handle__subscribe, under mosquitto_main_loop and main" \
	any_sample "$work/mq.json" mosquitto in_subscribe handle__subscribe
# the retained messages live in a tree of topic levels, which the broker
# walks by recursive functions (static, above retain__queue when it
# queues them, under db__close when it frees them at exit): their levels
# return to one address, and the unwinding goes on through them to main
# (the tool stopped at the first repeat before 2026-12-02)
uaddrs() {
	echo "$1" | sed 's/.*"user_stack"://' | grep -o '"addr":"0x[0-9a-f]*"' | cut -d'"' -f4
}
through_recursion() {
	[ -n "$(uaddrs "$1" | uniq -d)" ] || return 1
	usyms "$1" | in_order mosquitto_main_loop main && return 0
	usyms "$1" | in_order db__close main
}
check "a stack through the topic tree's recursion reaches main" \
	any_sample "$work/mq.json" mosquitto through_recursion

# the broker writes each retained message by its own system calls: NMIs land
# in the kernel's entry code too, where no kernel stack is in use yet (one
# frame, whole) and the user registers are the moment's, not the previous
# call's (module/capture_entry.c; "kernel stack truncated" before
# 2026-12-02, and a user stack from the call before).  A preempted thread
# read off CPU that ran again during that read is truncated on purpose,
# and says so (CI86: "captured by blocked, kernel stack truncated, thread
# ran during capture"): not one of these.  A sample whose frame 0 is the
# first instruction of a retpoline thunk (CI88, 7.3, twice:
# `__x86_indirect_thunk_rdx+0x0` on the way into the write, by NMI and by
# the timer) was cut there in CI88: the kernel's unwinder does not
# step out of a thunk, the capture now goes on from the return address at
# the stack pointer (module/capture_stack.c, capture_thunk_test).
no_stack_truncated_in_place() {
	awk '/^ *sample [0-9]+ at / { if (cut) f = 1; cut = 0 }
		/kernel stack truncated/ &&
			!(/captured by blocked/ && /thread ran during capture/) { cut = 1 }
		END { exit f || cut }' "$1"
}
check "no sample's kernel stack is truncated (but one read off CPU while the thread ran)" \
	no_stack_truncated_in_place "$work/mq.txt"

# the subscription stall's first sample: in the handler, its verdict on CPU
first_on_cpu() {
	echo "$1" | grep -q '"sample_index":0,' && echo "$1" | grep -q '"verdict":"on CPU' &&
		usyms "$1" | grep -q '^handle__subscribe '
}
check "the subscription's stall is on CPU from its first sample" \
	any_sample "$work/mq.json" mosquitto first_on_cpu '"sample_index":0,'
finish
