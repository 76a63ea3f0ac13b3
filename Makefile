# SPDX-License-Identifier: GPL-2.0
#
# stallcap top-level Makefile.  Kbuild reads ./Kbuild (obj-m += module/),
# never this file.
#
#   make                 module (against KDIR), tools and selftests for the host
#   make run             boot the default kernel (6.12) in QEMU, load the
#                        module, run the demo (or the smoke test)
#   make check           deps, static checks, tools' unit tests, the selftests
#                        on every kernel of KERNELS, harness self-check
#   make check KERNELS="6.1"    a subset (names: 5.10 6.1 6.12 6.12-rt 7.2
#                        7.2-rt 7.3 debug) or others (6.12-clang, 6.1-rt,
#                        7.3-rt, ...: README's Kernels tested);
#                        PACKAGES=0 skips the package test
#   make deps            install packages and the kernel matrix (idempotent)
#   make static          checkpatch, kernel-doc, sparse, uapi header as C/C++
#   make vmtest          only the guests (KERNELS), no static checks
#   make selfcheck       only the harness self-check
#   make bench           boot the default kernel (6.12) in QEMU, load the module,
#                        run the benchmarks, write bench/results/latest.{md,json}
#   make deb             Debian packages (dpkg-buildpackage, lintian) in build/deb
#   make install         install from the tree (root): tool, library, headers,
#                        pkg-config and CMake files, man page, completion, the
#                        udev rule and group stallcap, and the module for
#                        KVER (default: the running kernel) through DKMS when
#                        it is installed, else kbuild's modules_install
#   make uninstall       remove all of that again
#   make help            this text
#
# Useful variables: KDIR, KERNELS, TESTS (selftest names), TEST_TIMEOUT, GUEST_TIMEOUT, SMP, MEM,
# MODULE_PARAMS, MODULE_KCFLAGS (default -Werror; -Wno-error to relax),
# SELFCHECK=0 (skip the self-check), V=1 (show guest output), PACKAGES=0 (no
# package test in make check), PREFIX (make install, default /usr/local),
# DESTDIR, MODULE_INSTALL (dkms, kbuild or none),
# FUZZ_SECONDS (each fuzz target of the tools runs this long, default 60).

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# KDIR: the running kernel's headers; on a machine without them (such as a
# build host that cannot load modules) the 6.12 kernel of the test matrix.
KVER ?= $(shell uname -r)
KDIR ?= $(firstword $(wildcard /lib/modules/$(KVER)/build) \
	$(shell awk '$$1 == "6.12" { print "/lib/modules/" $$2 "/build" }' \
		$(TOP)/.cache/kernels.list 2>/dev/null))

# A kernel built by clang (Android's, ChromeOS's, CachyOS's; kCFI, LTO)
# builds its modules with clang and ld.lld too, of its own major version
# when installed as clang-N (LLVM=-N), else LLVM=1; unless LLVM is set.
KDIR_CLANG := $(shell sed -n 's/^CONFIG_CLANG_VERSION=\([0-9]*\)[0-9]\{4\}$$/\1/p' $(KDIR)/.config 2>/dev/null)
KBUILD_LLVM := $(if $(LLVM),,$(if $(KDIR_CLANG),LLVM=$(if $(shell command -v clang-$(KDIR_CLANG)),-$(KDIR_CLANG),1)))

KERNELS ?= 5.10 6.1 6.12 6.12-rt 7.2 7.2-rt 7.3 debug
RUN_KERNEL ?= 6.12
SELFCHECK ?= 1
V ?= 0

# variables the scripts read from the environment
# SELFCHECK=0 (skip the self-check), V=1 (show guest output), PACKAGES=0 (no
# package test in make check), PREFIX (make install, default /usr/local),
# DESTDIR, MODULE_INSTALL (dkms, kbuild or none),
# FUZZ_SECONDS (each fuzz target of the tools runs this long, default 60).

HAVE_TOOLS := $(wildcard $(TOP)/tools/Makefile)
HAVE_KSFT := $(wildcard $(TOP)/.cache/linux-tools/kselftest_harness.h)

all: module tools selftests

module:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || { echo "No kernel headers: set KDIR=/path/to/kernel/build (or run make deps)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) $(KBUILD_LLVM) modules

tools:
ifneq ($(HAVE_TOOLS),)
	$(MAKE) -C tools
else
	@echo "tools: no tools/Makefile yet, skipped"
endif

selftests:
ifneq ($(HAVE_KSFT),)
	$(MAKE) -C selftests
else
	@echo "selftests: kselftest headers missing (run make deps), skipped"
endif

deps:
	@$(TOP)/scripts/deps.sh

run: deps
	@$(TOP)/scripts/vmtest.sh --run $(RUN_KERNEL)

check: deps
	@$(TOP)/scripts/check.sh

static: deps
	@mkdir -p $(TOP)/build; RESULTS=$(TOP)/build/static-results.txt; : >$$RESULTS; \
		export RESULTS; \
		$(TOP)/scripts/static-check.sh

vmtest: deps
	@$(TOP)/scripts/vmtest.sh $(KERNELS)

selfcheck: deps
	@$(TOP)/scripts/vmtest.sh --selfcheck

bench: deps
	@$(TOP)/bench/run.sh $(RUN_KERNEL)

debug-kernel: deps
	@$(TOP)/scripts/debug-kernel.sh

deb: deps
	@$(TOP)/scripts/package.sh build

# make install / uninstall: for people who build from the tree
PREFIX ?= /usr/local
UDEVDIR ?= /etc/udev/rules.d
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)
MODULE_INSTALL ?= $(if $(DESTDIR),none,$(if $(shell command -v dkms 2>/dev/null),dkms,kbuild))
DKMS_SRC := /usr/src/stallcap-$(VERSION)

install: tools
	$(MAKE) -C tools install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	install -D -m 644 $(TOP)/udev/60-stallcap.rules $(DESTDIR)$(UDEVDIR)/60-stallcap.rules
ifeq ($(DESTDIR),)
	getent group stallcap >/dev/null || groupadd --system stallcap
endif
ifeq ($(MODULE_INSTALL),dkms)
	-dkms remove -m stallcap -v $(VERSION) --all 2>/dev/null
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)
	cp -r $(TOP)/Kbuild $(TOP)/dkms.conf $(TOP)/uapi $(DKMS_SRC)/
	mkdir -p $(DKMS_SRC)/module && cp $(TOP)/module/Kbuild $(TOP)/module/*.[ch] $(DKMS_SRC)/module/
	dkms add -m stallcap -v $(VERSION)
	dkms install -m stallcap -v $(VERSION) -k $(KVER)
else ifeq ($(MODULE_INSTALL),kbuild)
	$(MAKE) -C $(KDIR) M=$(TOP) $(KBUILD_LLVM) modules
	$(MAKE) -C $(KDIR) M=$(TOP) $(KBUILD_LLVM) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(KVER)
endif

uninstall:
	$(MAKE) -C tools uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	rm -f $(DESTDIR)$(UDEVDIR)/60-stallcap.rules
ifeq ($(MODULE_INSTALL),dkms)
	-dkms remove -m stallcap -v $(VERSION) --all
	rm -rf $(DKMS_SRC)
else ifeq ($(MODULE_INSTALL),kbuild)
	rm -f /lib/modules/$(KVER)/updates/module/stallcap.ko /lib/modules/$(KVER)/updates/stallcap.ko
	depmod -a $(KVER)
endif

clean:
	-test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(TOP) clean
ifneq ($(HAVE_TOOLS),)
	-$(MAKE) -C tools clean
endif
	-$(MAKE) -C selftests clean
	-$(MAKE) -C bench clean
	rm -rf $(TOP)/build

help:
	@sed -n '3,/^$$/p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

.PHONY: all module tools selftests deps run check static vmtest selfcheck bench \
	debug-kernel deb install uninstall clean help
