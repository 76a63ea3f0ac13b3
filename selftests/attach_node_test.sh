#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Node.js, unmodified, under `stallcap record --deadline 100ms -- node
# --perf-basic-prof --interpreted-frames-native-stack server.js`: an HTTP
# handler that blocks the event loop in a named JavaScript function
# (busyLoop) is named through /tmp/perf-PID.map, the map V8 writes for its
# JIT code (and, with the second flag, for a copy of the interpreter's entry
# per interpreted function: without it an interpreted function's frame is
# Builtins_InterpreterEntryTrampoline); a synchronous crypto call
# (crypto.pbkdf2Sync) shows its native frames.
. ./tool_lib.sh
need stallcap node nc

port=8099
cat >"$work/server.js" <<'JS'
const http = require('http');
const crypto = require('crypto');

function busyLoop(ms) {
	const end = Date.now() + ms;
	let x = 0;
	while (Date.now() < end)
		for (let i = 0; i < 100000; i++)
			x += i * 0.5;
	return x;
}

http.createServer((req, res) => {
	if (req.url === '/busy')
		busyLoop(1000);
	else if (req.url === '/crypto')
		crypto.pbkdf2Sync('secret', 'salt', 300000, 64, 'sha512');
	res.end('ok\n');
}).listen(process.argv[2], '127.0.0.1', () => console.log('listening'));
JS

get() { printf 'GET %s HTTP/1.0\r\n\r\n' "$1" | nc 127.0.0.1 "$port" 2>/dev/null; }

# 5 samples per stall (a sample whose frame 0 is a frameless V8 builtin
# misses its caller, the JavaScript function: see README): symbolizing node's 95 MB binary is what takes time
stallcap record --deadline 100ms --samples 5 -o "$work/node.data" -- \
	node --perf-basic-prof --interpreted-frames-native-stack "$work/server.js" "$port" >"$work/record.out" 2>&1 &
rec=$!
i=0
until get / | grep -q '^ok'; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || break
	sleep 0.1
done
check "node answers" sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc 127.0.0.1 $port | grep -q '^ok'"
node=$(pidof node)
check "V8 writes /tmp/perf-$node.map" [ -s "/tmp/perf-$node.map" ]
get / >/dev/null
get /busy >/dev/null
get / >/dev/null
get /crypto >/dev/null
get / >/dev/null
kill "$node"
wait_record "$rec"
sed 's/^/# record: /' "$work/record.out"

# inline frames would walk node's 50 MB of DWARF scopes per address: this
# test is about names (tools/tests covers inline frames)
stallcap report --no-inline -f json "$work/node.data" >"$work/report.json"
grep -o '"type":"stall".*"over_ns":[0-9]*' "$work/report.json" | sed 's/^/# /'

samples "$work/report.json" node | head -n 40 | while read -r line; do
	echo "# sample $(echo "$line" | grep -o '"flag_names":[^]]*]'): $(uframes "$line" | head -n 8 | cut -c1-40 | tr '\t\n' '@|')"
done
# the innermost JavaScript frame (the first from the perf map) is busyLoop
in_busy() {
	uframes "$1" | awk -F'\t' '$2 == "[perf-map]" { print $1; exit }' | grep -q busyLoop
}
# frame 0 is node's own native code (OpenSSL is linked in), a function of
# the PBKDF2-HMAC-SHA512 computation (the SHA-512 block function itself,
# often: its assembly may end the unwind there)
in_pbkdf2() {
	uframes "$1" | head -n 1 | grep -q "$(printf '\t')$(command -v node)\$" &&
		uframes "$1" | head -n 1 | cut -f1 | grep -qiE 'pbkdf2|sha512|hmac'
}
check "the blocked loop is named: busyLoop, the innermost JavaScript frame (perf map)" \
	any_sample "$work/report.json" node in_busy busyLoop
check "the synchronous crypto call: frame 0 in node's native code, PBKDF2 / SHA-512" \
	any_sample "$work/report.json" node in_pbkdf2
rm -f "/tmp/perf-$node.map"
finish
