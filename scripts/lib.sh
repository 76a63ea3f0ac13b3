# SPDX-License-Identifier: GPL-2.0
# Helpers shared by scripts/check.sh, scripts/vmtest.sh, scripts/static-check.sh.
# Sourced, not run.

top=${top:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
build=${BUILD_DIR:-$top/build}
logs=$build/logs
mkdir -p "$logs"

# One run at a time per tree: the runs share build/ (module builds, initramfs,
# logs, results) and a 2-core machine.  A nested script inherits the lock.
lock_tree() {
	[ -z "${STALLCAP_TREE_LOCKED:-}" ] || return 0
	exec 9>"$build/.lock"
	if ! flock -n 9; then
		echo "$(basename "$0"): another make check/run is using $build, waiting for it..." >&2
		flock 9
	fi
	export STALLCAP_TREE_LOCKED=1
}

# Every check appends one line to the results file:
#   PASS|FAIL|SKIP <TAB> item <TAB> detail
# scripts/check.sh truncates it at the start of a run and tallies it at the end.
RESULTS=${RESULTS:-$build/results.txt}
export RESULTS

result() {
	local status=$1 item=$2
	shift 2
	printf '%s\t%s\t%s\n' "$status" "$item" "$*" >>"$RESULTS"
	printf '  %-4s %s%s\n' "$status" "$item" "${*:+  -- $*}"
}

# tally FILE: print "N passed, N failed" (plus skips before it), exit 1 on failures
tally() {
	awk -F'\t' '
		$1 == "PASS" { p++ } $1 == "FAIL" { f++ } $1 == "SKIP" { s++ }
		END {
			if (s) printf "%d skipped\n", s
			printf "%d passed, %d failed\n", p, f
			exit f ? 1 : 0
		}' "$1"
}

die() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

# seconds since the epoch with a fraction, and a difference of two of them
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# kernel_info NAME: set KNAME KVER KDIR KIMAGE KROOT for a matrix kernel name:
# a name of .cache/kernels.list (Debian 12's kernels, headers on the host),
# of .cache/kernels-roots.list (other suites' kernels: KDIR is a path inside
# the build root KROOT, see scripts/kernel-root.sh), or "debug" (the
# lockdep/KASAN kernel), or "6.12-clang" (the same source built by clang
# with kCFI and ThinLTO; outside the default list), or "tree": the kernel
# tree built at $TREE_KDIR (bzImage and modules, e.g. an upstream release:
# by hand, not in CI).  KROOT is empty when the host builds the module;
# KLLVM is the LLVM= of the kernel's build, which its modules' builds need
# (a tree built by clang: set TREE_LLVM, e.g. to -16).
kernel_info() {
	local suite
	KNAME=$1
	KROOT=
	KLLVM=
	if [ "$KNAME" = debug ] || [ "$KNAME" = 6.12-clang ]; then
		[ "$KNAME" = debug ] || KLLVM=-16
		KDIR=$("$top/scripts/debug-kernel.sh" "${KLLVM:+clang}") || return 1
		KIMAGE=$KDIR/arch/x86/boot/bzImage
		KVER=$(cat "$KDIR/../release" 2>/dev/null || make -s -C "$KDIR" kernelrelease)
	elif [ "$KNAME" = tree ]; then
		KDIR=${TREE_KDIR:-}
		KLLVM=${TREE_LLVM:-}
		[ -n "$KDIR" ] || { echo "tree: set TREE_KDIR to a built kernel tree" >&2; return 1; }
		KIMAGE=$KDIR/arch/x86/boot/bzImage
		KVER=$(make -s -C "$KDIR" kernelrelease)
	else
		KVER=$(awk -v n="$KNAME" '$1 == n { print $2 }' "$top/.cache/kernels.list" 2>/dev/null)
		KDIR=/lib/modules/$KVER/build
		if [ -z "$KVER" ]; then
			read -r KVER suite < <(awk -v n="$KNAME" '$1 == n { print $2, $3 }' \
				"$top/.cache/kernels-roots.list" 2>/dev/null) || true
			[ -n "$KVER" ] || { echo "unknown kernel '$KNAME' (not in .cache/kernels.list or kernels-roots.list; run make deps)" >&2; return 1; }
			KROOT=$("$top/scripts/kernel-root.sh" root "$suite") || return 1
			KDIR=/usr/src/linux-headers-$KVER
		fi
		KIMAGE=$top/.cache/kernels/$KVER/vmlinuz
	fi
	[ -d "$KROOT$KDIR" ] || { echo "$KNAME: no kernel headers at $KROOT$KDIR" >&2; return 1; }
	[ -s "$KIMAGE" ] || { echo "$KNAME: no kernel image at $KIMAGE" >&2; return 1; }
}

# sync_tree DEST PATH...: copy sources (relative to $top) into DEST, keeping
# build products already in DEST so that kbuild rebuilds only what changed.
sync_tree() {
	local dest=$1
	shift
	mkdir -p "$dest"
	(cd "$top" && rsync -a --delete -R \
		--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
		--exclude='.*.cmd' --exclude='*.order' --exclude='Module.symvers' \
		--exclude='*.a' --exclude='.*.d' --exclude='*.dwo' \
		"$@" "$dest/")
}

# kbuild DIR KDIR LOG: build the external module tree in DIR against KDIR
# (inside the build root $KROOT when kernel_info set one)
kbuild() {
	local dir=$1 kdir=$2 log=$3
	if [ -n "${KROOT:-}" ]; then
		BUILD_DIR=$build "$top/scripts/kernel-root.sh" make "$KROOT" -C "$kdir" M="$dir" \
			KCFLAGS="${MODULE_KCFLAGS:--Werror}" -j"${JOBS:-2}" ${KBUILD_ARGS:-} modules >"$log" 2>&1
		return
	fi
	make -C "$kdir" M="$dir" KCFLAGS="${MODULE_KCFLAGS:--Werror}" \
		${KLLVM:+LLVM=$KLLVM} -j"${JOBS:-2}" ${KBUILD_ARGS:-} modules >"$log" 2>&1
}
