#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# stallcap's Debian packages.
#
#   scripts/package.sh build    `make deb`: build the source and binary
#                               packages (dpkg-buildpackage) from a copy of
#                               the tree in build/deb/, then run lintian
#   scripts/package.sh test     build them, then on this machine (root):
#                               install them with dpkg -i, check that DKMS
#                               built the module for every kernel of the
#                               matrix whose headers are installed, that
#                               stallcap --version, pkg-config and a CMake
#                               consumer work, then dpkg --purge them and
#                               check that nothing is left; and make
#                               install / uninstall into a DESTDIR
#
# Results go to the results file (scripts/lib.sh) as packages/* items.
set -uo pipefail
# No `grep -q` after a pipe here: it exits at its first match, and under
# pipefail the writer's SIGPIPE then fails the test (a CI run's packages/cmake).
# The whole script is one block: bash parses it before running it, so
# editing this file while it runs cannot derail the run.
{

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib.sh"

out=$build/deb
soversion=$(sed -n 's/^SOVERSION := //p' "$top/tools/Makefile")
pkgs=(stallcap-dkms stallcap "libstallcap$soversion" libstallcap-dev)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
failed=0
fail() { result FAIL "$@"; failed=1; }

version() { dpkg-parsechangelog -l "$top/debian/changelog" -SVersion; }

build_debs() {
	local ver src log=$logs/deb-build.log
	ver=$(version)
	src=$out/stallcap-$ver
	rm -rf "$out"
	mkdir -p "$src"
	# the tree as git has it (tracked and new files), without build products
	(cd "$top" && git ls-files -co --exclude-standard -z 2>/dev/null |
		rsync -a --from0 --files-from=- ./ "$src/") ||
		(cd "$top" && rsync -a --exclude=/build --exclude=/.cache --exclude=.git ./ "$src/")
	if (cd "$src" && dpkg-buildpackage -us -uc -j"${JOBS:-2}") >"$log" 2>&1; then
		result PASS packages/build "$(cd "$out" && ls ./*.deb | xargs -n1 basename | xargs)"
	else
		tail -n 20 "$log" | sed 's/^/    /'
		fail packages/build "dpkg-buildpackage failed, see $log"
		return 1
	fi
	# lintian at its default profile: no errors, no warnings
	if lintian --fail-on error,warning "$out"/stallcap_"$ver"_*.changes >"$logs/lintian.log" 2>&1; then
		result PASS packages/lintian "$(grep -c . "$logs/lintian.log") info/pedantic tags"
	else
		grep -E '^[EW]: ' "$logs/lintian.log" | head -n 10 | sed 's/^/    /'
		fail packages/lintian "lintian: $(grep -cE '^[EW]: ' "$logs/lintian.log") errors/warnings, see $logs/lintian.log"
	fi
	# one version everywhere: changelog, dkms.conf, the tools
	local dk tv
	dk=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
	tv=$(sed -n 's/^VERSION := //p' "$top/tools/Makefile")
	if [ "$dk" = "$ver" ] && [ "$tv" = "$ver" ] && [ -e "$top/debian/libstallcap$soversion.install" ]; then
		result PASS packages/version "$ver, libstallcap$soversion"
	else
		fail packages/version "debian/changelog $ver, dkms.conf $dk, tools/Makefile $tv; library package for SONAME $soversion: debian/libstallcap$soversion.install"
	fi
}

# every file the packages own, and their directories named after stallcap
owned_files() {
	local p f
	for p in "${pkgs[@]}"; do dpkg-query -L "$p" 2>/dev/null; done | sort -u |
		while read -r f; do
			if [ -d "$f" ]; then
				case ${f##*/} in *stallcap*) echo "$f" ;; esac
			else
				echo "$f"
			fi
		done
}

purge() {
	$SUDO dpkg --purge "${pkgs[@]}" >>"$logs/deb-install.log" 2>&1
}

test_debs() {
	local ver log=$logs/deb-install.log debs=() p
	ver=$(version)
	for p in "${pkgs[@]}"; do
		debs+=("$(ls "$out/${p}_${ver}_"*.deb)")
	done
	: >"$log"
	# a left-over installation of a previous run goes first
	purge
	if $SUDO dpkg -i "${debs[@]}" >>"$log" 2>&1; then
		result PASS packages/install "dpkg -i ${pkgs[*]}"
	else
		tail -n 20 "$log" | sed 's/^/    /'
		fail packages/install "dpkg -i failed, see $log"
		purge
		return 1
	fi

	# DKMS: the module for every matrix kernel whose headers are here
	local name kver built=() missing=()
	while read -r name kver; do
		[ -d "/lib/modules/$kver/build" ] || continue
		if dkms status -m stallcap -v "$ver" -k "$kver" 2>/dev/null | grep ': installed' >/dev/null &&
			modinfo -F vermagic "/lib/modules/$kver/updates/dkms/stallcap.ko"* 2>/dev/null |
				grep "^$kver " >/dev/null; then
			built+=("$name")
		else
			missing+=("$name ($kver)")
		fi
	done <"$top/.cache/kernels.list"
	if [ ${#built[@]} -gt 0 ] && [ ${#missing[@]} -eq 0 ]; then
		result PASS packages/dkms "built and installed for ${built[*]}"
	else
		dkms status 2>&1 | sed 's/^/    /'
		fail packages/dkms "no module for ${missing[*]:-any kernel}, see $log"
	fi

	# the tool, the group and the udev rule
	local got
	got=$(stallcap --version 2>&1)
	if [[ $got == "stallcap $ver "* ]]; then
		result PASS packages/tool "$got"
	else
		fail packages/tool "stallcap --version: '$got'"
	fi
	if getent group stallcap >/dev/null && grep -q 'GROUP="stallcap"' /lib/udev/rules.d/60-stallcap.rules &&
		man -w stallcap >/dev/null 2>&1 && [ -s /usr/share/bash-completion/completions/stallcap ]; then
		result PASS packages/files "group stallcap, udev rule, man page, bash completion"
	else
		fail packages/files "group stallcap, /lib/udev/rules.d/60-stallcap.rules, man page or completion missing"
	fi

	# the library: pkg-config and a CMake consumer (shared and static)
	local cdir=$build/consumer
	got=$(pkg-config --libs stallcap 2>&1 | xargs)
	rm -rf "$cdir"
	mkdir -p "$cdir"
	if [ "$got" = "-lstallcap" ] &&
		gcc -o "$cdir/pc-consumer" "$top/tools/tests/consumer/consumer.c" \
			$(pkg-config --cflags --libs stallcap) >"$logs/consumer.log" 2>&1 &&
		"$cdir/pc-consumer" >>"$logs/consumer.log" 2>&1; then
		result PASS packages/pkg-config "pkg-config --libs stallcap: $got; a program built with it runs"
	else
		fail packages/pkg-config "pkg-config --libs stallcap: '$got', see $logs/consumer.log"
	fi
	if cmake -S "$top/tools/tests/consumer" -B "$cdir/cmake" -DSTALLCAP_WANT_VERSION="$ver" \
		>>"$logs/consumer.log" 2>&1 &&
		cmake --build "$cdir/cmake" >>"$logs/consumer.log" 2>&1 &&
		"$cdir/cmake/consumer" >>"$logs/consumer.log" 2>&1 &&
		"$cdir/cmake/consumer_static" >>"$logs/consumer.log" 2>&1 &&
		ldd "$cdir/cmake/consumer" | grep "libstallcap.so.$soversion => /" >/dev/null; then
		result PASS packages/cmake "find_package(stallcap): shared and static consumers build and run"
	else
		tail -n 10 "$logs/consumer.log" | sed 's/^/    /'
		fail packages/cmake "CMake consumer failed, see $logs/consumer.log"
	fi

	# removal: dpkg -r, then --purge; nothing of ours is left
	local files left
	files=$(owned_files)
	if ! $SUDO dpkg -r "${pkgs[@]}" >>"$log" 2>&1 || ! purge; then
		fail packages/remove "dpkg -r / --purge failed, see $log"
		return 1
	fi
	left=$(for f in $files /usr/src/stallcap-"$ver" /var/lib/dkms/stallcap; do
		[ ! -e "$f" ] && [ ! -L "$f" ] || echo "$f"
	done; find /lib/modules/*/updates -name 'stallcap.ko*' 2>/dev/null)
	if dkms status 2>/dev/null | grep '^stallcap[/,]' >/dev/null; then
		left+=" dkms: $(dkms status 2>/dev/null | grep '^stallcap[/,]' | head -n 1)"
	fi
	if [ -z "$left" ] && ! dpkg-query -W "${pkgs[@]}" 2>/dev/null | grep . >/dev/null; then
		result PASS packages/remove "$(echo "$files" | grep -c .) files and DKMS entries gone"
	else
		fail packages/remove "left after purge: $(echo $left | cut -c1-200)"
	fi
}

# make install DESTDIR=... then make uninstall: every file comes and goes
test_make_install() {
	local d=$build/destdir log=$logs/make-install.log want f missing=() left
	rm -rf "$d"
	want=(usr/local/bin/stallcap usr/local/lib/libstallcap.so.$soversion usr/local/lib/libstallcap.a
		usr/local/lib/libstallcap.so usr/local/lib/pkgconfig/stallcap.pc
		usr/local/lib/cmake/stallcap/stallcapConfig.cmake usr/local/include/stallcap/stallcap.h
		usr/local/include/linux/stallcap.h usr/local/share/man/man1/stallcap.1
		usr/local/share/bash-completion/completions/stallcap etc/udev/rules.d/60-stallcap.rules)
	if ! make -C "$top" install DESTDIR="$d" PREFIX=/usr/local >"$log" 2>&1; then
		fail packages/make-install "make install failed, see $log"
		return 1
	fi
	for f in "${want[@]}"; do [ -e "$d/$f" ] || missing+=("$f"); done
	make -C "$top" uninstall DESTDIR="$d" PREFIX=/usr/local >>"$log" 2>&1
	left=$(find "$d" -not -type d | sed "s|^$d/||" | xargs)
	if [ ${#missing[@]} -eq 0 ] && [ -z "$left" ]; then
		result PASS packages/make-install "make install and uninstall (DESTDIR): ${#want[@]} files come and go"
	else
		fail packages/make-install "missing after install: ${missing[*]:-none}; left after uninstall: ${left:-none}"
	fi
	rm -rf "$d"
}

case ${1:-} in
build)
	lock_tree
	: >"$RESULTS"
	build_debs
	echo "packages in $out"
	;;
test)
	lock_tree
	[ -n "${VMTEST_NESTED:-}" ] || : >"$RESULTS"
	test_make_install
	build_debs && test_debs
	[ -n "${VMTEST_NESTED:-}" ] || tally "$RESULTS" >/dev/null
	;;
*) sed -n '3,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
exit $failed
}
