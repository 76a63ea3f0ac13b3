#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything stallcap needs to build and test, idempotently:
#  - Debian packages (compilers, qemu, busybox, sparse, elfutils, ...);
#  - the kernel matrix: newest 6.1 LTS, 6.12 LTS and 6.12 LTS PREEMPT_RT of
#    Debian 12 (headers installed with apt, images unpacked into the cache);
#    newest 5.10 of Debian 11, 7.2 (and 7.2 PREEMPT_RT) of unstable and 7.3 of
#    trixie-backports, whose
#    headers need their own suite's compiler: each suite gets a build root
#    (scripts/kernel-root.sh, cached outside the tree), only for the kernels
#    named in KERNELS when it is set;
#  - kselftest headers and checkpatch.pl from linux-source-6.12.
# A second run only checks and returns in a few seconds.
set -euo pipefail
# The whole script is one block: bash parses it before running it, so
# editing this file while it runs cannot derail the run.
{

top=$(cd "$(dirname "$0")/.." && pwd)
cache="$top/.cache"
mkdir -p "$cache"

export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

packages=(
	build-essential gcc g++ make bc flex bison libssl-dev libelf-dev dwarves libiberty-dev
	kmod cpio lz4 xz-utils zstd rsync busybox-static qemu-system-x86 sparse
	elfutils libdw-dev libelf-dev pkg-config python3 perl
	clang-14 libclang-rt-14-dev lld-14
	protobuf-c-compiler libprotobuf-c-dev protobuf-compiler zlib1g-dev
	python3-prometheus-client
	linux-source-6.12 debootstrap
	dpkg-dev debhelper dh-dkms dkms lintian fakeroot cmake pandoc
	redis-server redis-tools memcached nodejs golang-go nginx haproxy lighttpd rustc cargo librust-tokio-dev
	mosquitto mosquitto-clients apache2-bin openjdk-17-jdk-headless erlang-base
	postgresql-15 rt-tests bindfs fuse-overlayfs
	linux-perf
)
# the clang kernel (KERNELS="6.12-clang", outside the default list:
# scripts/debug-kernel.sh clang) and the module built for it
if [[ " ${KERNELS:-} " == *" 6.12-clang "* ]]; then
	packages+=(clang-16 lld-16 llvm-16)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "ok installed" >/dev/null ||
		missing+=("$p")
done

apt_updated=0
apt_update() {
	[ "$apt_updated" = 1 ] && return
	$SUDO apt-get update -qq
	apt_updated=1
}

if [ "${#missing[@]}" -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt_update
	$SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
		"${missing[@]}" >/dev/null
fi

# newest package whose name matches an extended regex
newest() {
	apt-cache search --names-only "$1" | awk '{print $1}' | sort -V | tail -n 1
}

# The matrix is chosen once per cache; delete .cache/kernels.list to refresh.
kernels_list="$cache/kernels.list"
if [ ! -s "$kernels_list" ]; then
	[ "$apt_updated" = 1 ] || apt_update
	img61=$(newest '^linux-image-6\.1\.0-[0-9]+-amd64$')
	img612=$(newest '^linux-image-6\.12\.[0-9]+\+deb12-amd64$')
	img612rt=$(newest '^linux-image-6\.12\.[0-9]+\+deb12-rt-amd64$')
	for img in "$img61" "$img612" "$img612rt"; do
		[ -n "$img" ] || { echo "deps: kernel image not found in apt" >&2; exit 1; }
	done
	{
		echo "6.1 ${img61#linux-image-}"
		echo "6.12 ${img612#linux-image-}"
		echo "6.12-rt ${img612rt#linux-image-}"
	} >"$kernels_list.tmp"
	mv "$kernels_list.tmp" "$kernels_list"
fi

# Extra kernels of Debian 12 (headers on the host like the three above), added
# when KERNELS names them: its cloud flavours, built for virtual machines
# (make check KERNELS="6.1-cloud 6.12-cloud"; 6.12-cloud passed 41 of 41 on
# 2026-11-27, 6.1-cloud 42 of 42 on 2026-11-29).
for extra in "6.1-cloud:^linux-image-6\.1\.0-[0-9]+-cloud-amd64$" \
	     "6.12-cloud:^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64$"; do
	name=${extra%%:*}
	[[ " ${KERNELS:-} " == *" $name "* ]] || continue
	awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' "$kernels_list" && continue
	[ "$apt_updated" = 1 ] || apt_update
	img=$(newest "${extra#*:}")
	[ -n "$img" ] || { echo "deps: no package matching ${extra#*:}" >&2; exit 1; }
	echo "$name ${img#linux-image-}" >>"$kernels_list"
done

while read -r name ver; do
	hdr="linux-headers-$ver"
	if ! dpkg-query -W -f='${Status}' "$hdr" 2>/dev/null | grep "ok installed" >/dev/null; then
		echo "deps: installing $hdr"
		apt_update
		$SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "$hdr" >/dev/null
	fi
	kdir="$cache/kernels/$ver"
	# (a cache from before the guest's modules were kept is unpacked again)
	if [ ! -s "$kdir/vmlinuz" ] || "$top/scripts/guest-modules.sh" stale "$kdir"; then
		echo "deps: unpacking linux-image-$ver ($name)"
		apt_update
		rm -rf "$kdir/deb" "$kdir/root"
		mkdir -p "$kdir/deb"
		chmod 0777 "$kdir/deb"	# apt downloads as user _apt
		(cd "$kdir/deb" && apt-get download -qq "linux-image-$ver" >/dev/null)
		dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root"
		"$top/scripts/guest-modules.sh" "$kdir/root" "$kdir" "$ver"
		cp "$kdir/root/boot/vmlinuz-$ver" "$kdir/vmlinuz.tmp"
		cp "$kdir/root/boot/config-$ver" "$kdir/config" 2>/dev/null || true
		mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
		rm -rf "$kdir/deb" "$kdir/root"
	fi
done <"$kernels_list"

# Kernels of other suites (names of scripts/kernel-root.sh names): chosen once
# per cache like the others (delete .cache/kernels-roots.list to refresh).
roots_list="$cache/kernels-roots.list"
want=()
for name in $("$top/scripts/kernel-root.sh" names ${KERNELS:+--all}); do
	if [ -n "${KERNELS:-}" ] && ! [[ " $KERNELS " == *" $name "* ]]; then
		continue
	fi
	want+=("$name")
done
missing=()
for name in "${want[@]}"; do
	awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' "$roots_list" 2>/dev/null ||
		missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: choosing ${missing[*]} from their suites"
	"$top/scripts/kernel-root.sh" resolve "${missing[@]}" >"$roots_list.new"
	cat "$roots_list" "$roots_list.new" 2>/dev/null | sort -u -k1,1 >"$roots_list.tmp" || true
	mv "$roots_list.tmp" "$roots_list"
	rm -f "$roots_list.new"
fi
for name in "${want[@]}"; do
	read -r ver suite < <(awk -v n="$name" '$1 == n { print $2, $3 }' "$roots_list")
	"$top/scripts/kernel-root.sh" root "$suite" >/dev/null
	if [ ! -s "$cache/kernels/$ver/vmlinuz" ] ||
		"$top/scripts/guest-modules.sh" stale "$cache/kernels/$ver"; then
		echo "deps: unpacking the image of $ver ($name, $suite)"
		"$top/scripts/kernel-root.sh" image "$ver" "$suite"
	fi
done

# kselftest headers and checkpatch from linux-source-6.12
ktools="$cache/linux-tools"
if [ ! -s "$ktools/scripts/checkpatch.pl" ] || [ ! -s "$ktools/kselftest_harness.h" ] ||
	[ ! -s "$ktools/scripts/kernel-doc" ]; then
	echo "deps: extracting kselftest headers, checkpatch.pl and kernel-doc"
	src=$(ls /usr/src/linux-source-6.12*.tar.xz | sort -V | tail -n 1)
	tmp=$(mktemp -d)
	tar -C "$tmp" -xf "$src" --wildcards \
		'*/tools/testing/selftests/kselftest.h' \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch' '*/scripts/kernel-doc'
	d=$(echo "$tmp"/*)
	mkdir -p "$ktools/scripts"
	cp "$d"/tools/testing/selftests/kselftest.h \
		"$d"/tools/testing/selftests/kselftest_harness.h "$ktools/"
	cp "$d"/scripts/checkpatch.pl "$d"/scripts/spelling.txt \
		"$d"/scripts/const_structs.checkpatch "$d"/scripts/kernel-doc \
		"$ktools/scripts/"
	rm -rf "$tmp"
fi

# In CI (CI=true) the debug kernel of the matrix (about 15 minutes of CPU,
# scripts/debug-kernel.sh) starts building once the kernel roots are here,
# at the lowest priority: `make run` and the first steps of `make check`
# leave the CPUs idle much of the time, and the debug guest, last of
# `make check`, then need not wait for it.  (Started before the roots, its
# disk traffic made their debootstraps three times slower.)
# Its later callers wait for this build (debug-kernel.sh locks).  Elsewhere
# `make check` starts it (scripts/check.sh); DEBUG_KERNEL_EARLY=0 or 1
# overrides.
if [ "${DEBUG_KERNEL_EARLY:-${CI:-false}}" != false ] &&
	[ "${DEBUG_KERNEL_EARLY:-1}" != 0 ] &&
	{ [ -z "${KERNELS:-}" ] || [[ " $KERNELS " == *" debug "* ]]; }; then
	mkdir -p "$top/build/logs"
	echo "deps: the debug kernel builds in the background unless cached (log: build/logs/debug-kernel-early.log)"
	setsid nice -n 19 "$top/scripts/debug-kernel.sh" >/dev/null \
		2>"$top/build/logs/debug-kernel-early.log" </dev/null &
fi

echo "deps: ok ($(cat "$kernels_list" "$roots_list" 2>/dev/null | awk '{printf "%s%s", sep, $2; sep=", "}'))"
exit
}
