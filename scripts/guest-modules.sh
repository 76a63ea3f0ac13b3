#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest-modules.sh ROOT KDIR VERSION: from the unpacked image package
# of kernel VERSION (ROOT: its files, lib/modules/VERSION/...), keep in KDIR
# (.cache/kernels/VERSION) the kernel's own modules that the selftests need
# and that this kernel builds as modules, decompressed for the guest's
# busybox insmod: fuse.ko (why_fault_test's FUSE file system; built in on
# 6.12 and 7.2, a module on 5.10 and 6.1), evdev.ko and uinput.ko
# (attach_test's input device), uio.ko and uio_pci_generic.ko (attach_test's
# UIO driver of QEMU's edu device).  scripts/vmtest.sh loads what it finds
# there before stallcap, in this order.  Prints nothing; fails only on a
# module that is there but cannot be copied.
#
# scripts/guest-modules.sh missing KDIR: succeeds when KDIR's kernel config
# says one of them is a module and KDIR lacks it.
# scripts/guest-modules.sh stale KDIR: that, or KDIR was made when the list
# was another (a cache from before they were kept: its image is unpacked
# again).
# scripts/guest-modules.sh names: the module names, in their load order.
set -euo pipefail

# CONFIG option and module name of each, in load order (uio before its user)
modules="FUSE_FS:fuse INPUT_EVDEV:evdev INPUT_UINPUT:uinput UIO:uio UIO_PCI_GENERIC:uio_pci_generic"

case $1 in
names)
	for m in $modules; do echo "${m#*:}"; done
	exit 0
	;;
missing|stale)
	if [ "$1" = stale ] && [ "$(cat "$2/guest-modules" 2>/dev/null)" != "$modules" ]; then
		exit 0
	fi
	for m in $modules; do
		if grep -qs "^CONFIG_${m%%:*}=m" "$2/config" && [ ! -e "$2/${m#*:}.ko" ]; then
			exit 0
		fi
	done
	exit 1
	;;
esac

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
echo "$modules" >"$kdir/guest-modules"
