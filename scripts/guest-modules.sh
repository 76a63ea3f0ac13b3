#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest-modules.sh ROOT KDIR VERSION: from the unpacked image package
# of kernel VERSION (ROOT: its files, lib/modules/VERSION/...), keep in KDIR
# (.cache/kernels/VERSION) the kernel's own modules that the selftests need
# and that this kernel builds as modules, decompressed for the guest's
# busybox insmod: today fuse.ko (why_fault_test's FUSE file system; built in
# on 6.12 and 7.2, a module on 5.10 and 6.1).  scripts/vmtest.sh loads what
# it finds there before stallcap.  Prints nothing; fails only on a module
# that is there but cannot be copied.
#
# scripts/guest-modules.sh missing KDIR: succeeds when KDIR's kernel config
# says one of them is a module and KDIR lacks it (a cache from before they
# were kept: its image is unpacked again).
set -euo pipefail

# CONFIG option and module name of each
modules="FUSE_FS:fuse"

if [ "$1" = missing ]; then
	for m in $modules; do
		if grep -qs "^CONFIG_${m%%:*}=m" "$2/config" && [ ! -e "$2/${m#*:}.ko" ]; then
			exit 0
		fi
	done
	exit 1
fi

root=$1 kdir=$2 ver=$3
for m in $modules; do
	name=${m#*:}
	f=$(find "$root/lib/modules/$ver" "$root/usr/lib/modules/$ver" -name "$name.ko*" \
		-type f 2>/dev/null | head -n 1 || true)
	[ -n "$f" ] || continue
	case $f in
	*.ko) cp "$f" "$kdir/$name.ko.tmp" ;;
	*.ko.xz) xz -dc "$f" >"$kdir/$name.ko.tmp" ;;
	*.ko.zst) zstd -qdc "$f" >"$kdir/$name.ko.tmp" ;;
	*.ko.gz) gzip -dc "$f" >"$kdir/$name.ko.tmp" ;;
	*) continue ;;
	esac
	mv "$kdir/$name.ko.tmp" "$kdir/$name.ko"
done
