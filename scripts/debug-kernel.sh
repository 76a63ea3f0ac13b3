#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) the lockdep/KASAN/kmemleak debug kernel from Debian's
# linux-source-6.12 with scripts/kconfig/debug.config, cached outside the git
# tree.  The cache key is the source tarball's version plus the fragment's
# hash, so a changed fragment or a new linux-source rebuilds it.
# Prints the build directory (usable as KDIR) on stdout.
#
#   scripts/debug-kernel.sh [clang]
#
# "clang" builds the kernel "6.12-clang" instead, outside the default
# matrix: the same source with scripts/kconfig/clang.config (kCFI and
# ThinLTO), compiled by clang-16 and linked by ld.lld-16 (LLVM=-16, which
# the module's build then needs too: scripts/lib.sh).
set -euo pipefail
# The whole script is one block: bash parses it before running it, so
# editing this file while it runs cannot derail the run.
{

top=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-debug}
case $flavour in
debug)	llvm=() required="PROVE_LOCKING KASAN DEBUG_ATOMIC_SLEEP DEBUG_OBJECTS_TIMERS DEBUG_KMEMLEAK DEBUG_LIST" ;;
clang)	llvm=(LLVM=-16) required="CFI_CLANG LTO_CLANG_THIN" ;;
*)	echo "usage: $0 [clang]" >&2; exit 2 ;;
esac
frag="$top/scripts/kconfig/$flavour.config"
src=$(ls /usr/src/linux-source-6.12*.tar.xz | sort -V | tail -n 1)
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
# recipe: bump when the build steps below change what gets built
recipe=2
key="$srcver-$(sha256sum "$frag" | cut -c1-12)-r$recipe"
base="${STALLCAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stallcap}/$flavour-kernel"
out="$base/$key"

if [ -s "$out/done" ]; then
	echo "$out/linux"
	exit 0
fi

# one build at a time: a second caller waits for the first one's result
mkdir -p "$base"
exec 8>"$base/.lock"
if ! flock -n 8; then
	echo "debug-kernel: another build of the $flavour kernel is running, waiting for it" >&2
	flock 8
	if [ -s "$out/done" ]; then
		echo "$out/linux"
		exit 0
	fi
fi
rm -rf "$out"
mkdir -p "$out"
log="$out/build.log"
echo "debug-kernel: building $key (about 10 minutes on 2 cores), log: $log" >&2
tar -C "$out" -xf "$src"
mv "$out"/linux-source-6.12* "$out/linux"
cd "$out/linux"
{
	make "${llvm[@]}" x86_64_defconfig
	make "${llvm[@]}" kvm_guest.config
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make "${llvm[@]}" olddefconfig
	# no in-tree modules: the guest loads only ours
	make "${llvm[@]}" mod2noconfig
	jobs=$(($(nproc) + 1))
	make "${llvm[@]}" -j"$jobs" bzImage modules_prepare
	# writes Module.symvers, which external modules link against
	make "${llvm[@]}" -j"$jobs" modules
} >"$log" 2>&1 || { echo "debug-kernel: build failed, see $log" >&2; tail -n 30 "$log" >&2; exit 1; }
# (and attach_test's event sources, which would otherwise skip unseen)
for opt in $required FANOTIFY USERFAULTFD INPUT_UINPUT; do
	grep -q "^CONFIG_$opt=y" .config || { echo "debug-kernel: CONFIG_$opt missing" >&2; exit 1; }
done
[ -s Module.symvers ] || { echo "debug-kernel: Module.symvers missing" >&2; exit 1; }
make "${llvm[@]}" -s kernelrelease >"$out/release"
echo "debug-kernel: built in $SECONDS s" >&2
date -u +%FT%TZ >"$out/done"
echo "$out/linux"
exit
}
