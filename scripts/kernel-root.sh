#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernels of other Debian suites than the machine's own (Debian 12): their
# headers need that suite's compiler and C library (7.2 from sid: gcc-16,
# glibc >= 2.38 for objtool; 5.10 from bullseye: gcc-10; 7.3 from
# trixie-backports: trixie's gcc-14 and glibc), so the module is
# built for them inside a minimal root made by debootstrap from that suite.
#
#   scripts/kernel-root.sh names [--all]    the default matrix's names handled
#                                           here (--all: with the extra ones)
#   scripts/kernel-root.sh resolve NAME...  print "NAME VERSION SUITE": the
#                                           newest kernel of NAME in the
#                                           suite's apt metadata
#   scripts/kernel-root.sh root SUITE       make (once) the build root of
#                                           SUITE for the kernels of SUITE
#                                           in .cache/kernels-roots.list;
#                                           print it
#   scripts/kernel-root.sh image VERSION SUITE
#                                           unpack that kernel's bzImage to
#                                           .cache/kernels/VERSION/vmlinuz
#                                           (and its modules the guest
#                                           needs: scripts/guest-modules.sh)
#   scripts/kernel-root.sh make ROOT ARGS...
#                                           run make ARGS in ROOT (chroot,
#                                           private mounts: /proc and the
#                                           tree's build folder)
#
# The archive is the machine's own: the first URI of the Debian sources in
# /etc/apt/sources.list.d/*.sources (or /etc/apt/sources.list).  Per suite, an
# apt state of its own (lists, downloads) lives in the cache, never in the
# machine's apt configuration.  A root is keyed by the suite, the header
# packages it holds and this script's recipe number, and is cached outside
# the tree (like the debug kernel) under $STALLCAP_CACHE or
# ~/.cache/stallcap/roots; a changed input makes a new root (the old one is
# removed).  Needs root (debootstrap, chroot, mounts) or sudo.
set -euo pipefail
# The whole script is one block: bash parses it before running it, so
# editing this file while it runs cannot derail the run.
{

top=$(cd "$(dirname "$0")/.." && pwd)
kernels_list=$top/.cache/kernels-roots.list
cache="${STALLCAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stallcap}"
# recipe: bump when the way a root is made changes what it holds
recipe=1
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# name, suite, extended regex of its headers package (the newest match wins),
# and whether the default matrix holds it ("extra": tried, and run when
# KERNELS names it; 7.3-rt and 6.1-rt passed 41 of 41 on 2026-11-27,
# 6.12-trixie and 7.3-cloud 42 of 42 on 2026-11-29)
matrix() {
	cat <<-'EOF'
	5.10	bullseye	^linux-headers-5\.10\.0-[0-9]+-amd64$	default
	7.2	sid	^linux-headers-7\.2\.[0-9]+\+deb[0-9]+-amd64$	default
	7.2-rt	sid	^linux-headers-7\.2\.[0-9]+\+deb[0-9]+-rt-amd64$	default
	7.3	trixie-backports	^linux-headers-7\.3\.[0-9]+\+deb[0-9]+-amd64$	default
	7.3-rt	trixie-backports	^linux-headers-7\.3\.[0-9]+\+deb[0-9]+-rt-amd64$	extra
	6.1-rt	bookworm	^linux-headers-6\.1\.0-[0-9]+-rt-amd64$	extra
	6.12-trixie	trixie	^linux-headers-6\.12\.[0-9]+\+deb13-amd64$	extra
	7.3-cloud	trixie-backports	^linux-headers-7\.3\.[0-9]+\+deb13-cloud-amd64$	extra
	EOF
}

die() {
	echo "kernel-root: $*" >&2
	exit 1
}

# the machine's Debian archive (no host name is written into the tree)
archive_uri() {
	local uri
	uri=$(awk '
		/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {
		for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
		/etc/apt/sources.list 2>/dev/null | head -n 1)
	[ -n "$uri" ] || die "no Debian archive URI in /etc/apt/sources.list.d/*.sources"
	echo "$uri"
}

# apt with the private state of SUITE; two runs sharing the cache (two trees'
# make deps at once) take turns instead of failing on apt's own lock
apt_suite() {
	local suite=$1 tool=$2
	shift 2
	local d=$cache/apt/$suite
	mkdir -p "$d"
	flock "$d/.lock" "$tool" -q -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
		-o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" \
		-o Dir::State::status=/dev/null -o Acquire::Check-Valid-Until=false \
		-o APT::Get::List-Cleanup=false -o APT::Sandbox::User=root "$@"
}

# apt_update SUITE: fetch the suite's package lists (once per call of this script)
apt_update() {
	local suite=$1 d=$cache/apt/$1
	[ ! -e "$d/.updated.$$" ] || return 0
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	echo "deb $(archive_uri) $suite main" >"$d/sources.list"
	apt_suite "$suite" apt-get update >/dev/null || die "apt-get update of $suite failed"
	rm -f "$d"/.updated.*
	: >"$d/.updated.$$"
}

resolve() {
	local name=$1 suite re pkg
	read -r _ suite re _ < <(matrix | awk -v n="$name" '$1 == n') || true
	[ -n "${suite:-}" ] || die "unknown kernel $name (known: $(matrix | cut -f1 | xargs))"
	apt_update "$suite"
	pkg=$(apt_suite "$suite" apt-cache search --names-only "$re" | awk '{ print $1 }' |
		grep -E "$re" | sort -V | tail -n 1)
	[ -n "$pkg" ] || die "no package matching $re in $suite"
	printf '%s %s %s\n' "$name" "${pkg#linux-headers-}" "$suite"
}

# versions of SUITE's kernels in kernels.list
suite_versions() {
	awk -v s="$1" '$3 == s { print $2 }' "$kernels_list" 2>/dev/null | sort
}

root_dir() {
	local suite=$1 key
	key=$(printf 'recipe=%s suite=%s kernels=%s' "$recipe" "$suite" "$(suite_versions "$suite" | xargs)" |
		sha256sum | cut -c1-12)
	echo "$cache/roots/$suite-$key"
}

make_root() {
	local suite=$1 out vers v gcc pkgs=(make libc6-dev kmod)
	vers=$(suite_versions "$suite")
	[ -n "$vers" ] || die "no kernel of $suite in $kernels_list (run make deps)"
	out=$(root_dir "$suite")
	if [ -s "$out.done" ]; then
		echo "$out"
		return 0
	fi
	mkdir -p "$cache/roots"
	exec 8>"$cache/roots/.lock-$suite"
	flock 8
	if [ -s "$out.done" ]; then
		echo "$out"
		return 0
	fi
	apt_update "$suite"
	for v in $vers; do
		pkgs+=("linux-headers-$v")
		# the compiler the kernel was built with (a dependency of its headers)
		gcc=$(apt_suite "$suite" apt-cache show "linux-headers-$v" |
			sed -n 's/^Depends:.*\b\(gcc-[0-9][0-9]*\)\b.*/\1/p' | head -n 1)
		[ -z "$gcc" ] || pkgs+=("$gcc")
	done
	echo "kernel-root: making the $suite root for $(echo $vers) (debootstrap, about a minute)" >&2
	local t0=$SECONDS old
	# a previous root of this suite (other inputs) goes away
	for old in "$cache/roots/$suite"-*; do
		[ -e "$old" ] || continue
		case $old in *.done|*.log) continue ;; esac
		$SUDO rm -rf --one-file-system "$old" "$old.done" "$old.log"
	done
	# a backports suite has no base system: its release's, with it beside
	local base=${suite%-backports} extra=()
	[ "$base" = "$suite" ] || extra=(--extra-suites="$suite")
	$SUDO debootstrap --variant=minbase "${extra[@]}" --include="$(IFS=,; echo "${pkgs[*]}")" \
		"$base" "$out" "$(archive_uri)" >"$out.log" 2>&1 ||
		{ tail -n 20 "$out.log" >&2; die "debootstrap of $suite failed, see $out.log"; }
	for v in $vers; do
		[ -e "$out/usr/src/linux-headers-$v/Makefile" ] || die "root lacks linux-headers-$v"
	done
	echo "kernel-root: $suite root made in $((SECONDS - t0)) s: $out" >&2
	date -u +%FT%TZ >"$out.done"
	echo "$out"
}

# image_parts VERSION SUITE KDIR: a split image's modules and config into
# KDIR/root (each package only where the suite has it)
image_parts() {
	local ver=$1 suite=$2 kdir=$3 pkg
	for pkg in "linux-modules-$ver" "linux-base-$ver"; do
		apt_suite "$suite" apt-cache show "$pkg" >/dev/null 2>&1 || continue
		(cd "$kdir/deb" && rm -f ./*.deb && apt_suite "$suite" apt-get download "$pkg" >/dev/null) ||
			die "download of $pkg failed"
		dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root"
	done
}

# image VERSION SUITE: the bzImage from the suite's image package, or its
# binary package where the image package is a metapackage (sid), whose
# modules and config are in linux-modules-VERSION and linux-base-VERSION
image() {
	local ver=$1 suite=$2 kdir=$top/.cache/kernels/$1 pkg f
	if [ -s "$kdir/vmlinuz" ] && ! "$top/scripts/guest-modules.sh" stale "$kdir"; then
		return 0
	fi
	apt_update "$suite"
	rm -rf "$kdir/deb" "$kdir/root"
	mkdir -p "$kdir/deb"
	for pkg in "linux-image-$ver" "linux-binary-$ver"; do
		apt_suite "$suite" apt-cache show "$pkg" >/dev/null 2>&1 || continue
		(cd "$kdir/deb" && rm -f ./*.deb && apt_suite "$suite" apt-get download "$pkg" >/dev/null) ||
			die "download of $pkg failed"
		rm -rf "$kdir/root"
		dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root"
		f=$(find "$kdir/root" -name "vmlinuz*" -type f | head -n 1)
		if [ -n "$f" ]; then
			if [ "$pkg" = "linux-binary-$ver" ]; then
				image_parts "$ver" "$suite" "$kdir"
			fi
			"$top/scripts/guest-modules.sh" "$kdir/root" "$kdir" "$ver"
			cp "$f" "$kdir/vmlinuz.tmp"
			f=$(find "$kdir/root" \( -name "config-$ver" -o -path "*/modules/$ver/config" \) \
				-type f | head -n 1)
			[ -z "$f" ] || cp "$f" "$kdir/config"
			mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
			break
		fi
	done
	rm -rf "$kdir/deb" "$kdir/root"
	[ -s "$kdir/vmlinuz" ] || die "no kernel image in linux-image-$ver or linux-binary-$ver"
}

# chroot_make ROOT ARGS...: make in ROOT, in a private mount namespace where
# /proc (objtool reads it) and the build folder (same path as outside) are
# mounted; nothing stays mounted afterwards
chroot_make() {
	local root=$1 build=${BUILD_DIR:-$top/build}
	shift
	$SUDO mkdir -p "$root$build"
	$SUDO unshare -m --propagation private sh -ec '
		root=$1 build=$2
		shift 2
		mount -t proc proc "$root/proc"
		mount --bind "$build" "$root$build"
		exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LC_ALL=C.UTF-8 make "$@"' sh "$root" "$build" "$@"
}

case ${1:-} in
names) matrix | awk -v all="${2:-}" 'all == "--all" || $4 == "default" { print $1 }' ;;
resolve) shift; for n; do resolve "$n"; done ;;
root) make_root "$2" ;;
image) image "$2" "$3" ;;
make) shift; chroot_make "$@" ;;
-h|--help|"") sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
*) die "unknown command $1 (see --help)" ;;
esac
exit
}
