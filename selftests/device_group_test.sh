#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Who may use /dev/stallcap: root and the members of group stallcap (mode
# 0660, group from the module's gid= parameter, as udev/60-stallcap.rules
# sets it), nobody else.  A user outside the group gets EACCES, and the tool
# says what to do.
. ./tool_lib.sh
need stallcap su

gid=$(cat /sys/module/stallcap/parameters/gid)
ggid=$(awk -F: '$1 == "stallcap" { print $3 }' /etc/group)
[ -n "$ggid" ] || { echo "1..0 # SKIP no group stallcap in /etc/group"; exit 4; }

check "module parameter gid is group stallcap ($ggid)" [ "$gid" = "$ggid" ]
check "module parameter mode is 0660" [ "$(cat /sys/module/stallcap/parameters/mode)" = 432 ]
check "/dev/stallcap is root:stallcap 0660" \
	[ "$(stat -c '%u %g %a' /dev/stallcap)" = "0 $ggid 660" ]

as() { su -s /bin/sh "$1" -c "$2" >"$work/out" 2>&1; }

# a member (user) opens it: the counters of its own session
check "a member of group stallcap (user) can open it" as user 'exec 3<>/dev/stallcap'
# a non-member (nobody) is refused, and the tool explains
check "a user outside the group cannot open it" \
	sh -c "! su -s /bin/sh nobody -c 'exec 3<>/dev/stallcap' 2>/dev/null"
as nobody 'stallcap record -o /tmp/nobody.rec -- true'
sed 's/^/# /' "$work/out"
check "the tool tells a non-member to join group stallcap" \
	grep -q "no permission on /dev/stallcap: add yourself to group stallcap" "$work/out"
finish
