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
#   make check KERNELS="6.1"    a subset (names: 6.1 6.12 6.12-rt debug)
#   make deps            install packages and the kernel matrix (idempotent)
#   make static          checkpatch, sparse, uapi header as C/C++
#   make vmtest          only the guests (KERNELS), no static checks
#   make selfcheck       only the harness self-check
#   make bench           boot the default kernel (6.12) in QEMU, load the module,
#                        run the benchmarks, write bench/results/latest.{md,json}
#   make install         install the module for the running kernel (root)
#   make help            this text
#
# Useful variables: KDIR, KERNELS, TEST_TIMEOUT, GUEST_TIMEOUT, SMP, MEM,
# MODULE_PARAMS, MODULE_KCFLAGS (default -Werror; -Wno-error to relax),
# SELFCHECK=0 (skip the self-check), V=1 (show guest output),
# FUZZ_SECONDS (each fuzz target of the tools runs this long, default 60).

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# KDIR: the running kernel's headers; on a machine without them (such as a
# build host that cannot load modules) the 6.12 kernel of the test matrix.
KVER ?= $(shell uname -r)
KDIR ?= $(firstword $(wildcard /lib/modules/$(KVER)/build) \
	$(shell awk '$$1 == "6.12" { print "/lib/modules/" $$2 "/build" }' \
		$(TOP)/.cache/kernels.list 2>/dev/null))

KERNELS ?= 6.1 6.12 6.12-rt debug
RUN_KERNEL ?= 6.12
SELFCHECK ?= 1
V ?= 0

# variables the scripts read from the environment
export KERNELS RUN_KERNEL SELFCHECK V
export TEST_TIMEOUT GUEST_TIMEOUT SMP MEM MODULE_PARAMS MODULE_KCFLAGS FUZZ_SECONDS

HAVE_TOOLS := $(wildcard $(TOP)/tools/Makefile)
HAVE_KSFT := $(wildcard $(TOP)/.cache/linux-tools/kselftest_harness.h)

all: module tools selftests

module:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || { echo "No kernel headers: set KDIR=/path/to/kernel/build (or run make deps)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) modules

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
	@RESULTS=$(TOP)/build/static-results.txt; : >$$RESULTS; export RESULTS; \
		$(TOP)/scripts/static-check.sh

vmtest: deps
	@$(TOP)/scripts/vmtest.sh $(KERNELS)

selfcheck: deps
	@$(TOP)/scripts/vmtest.sh --selfcheck

bench: deps
	@$(TOP)/bench/run.sh $(RUN_KERNEL)

debug-kernel: deps
	@$(TOP)/scripts/debug-kernel.sh

install: module
	$(MAKE) -C $(KDIR) M=$(TOP) modules_install
	depmod -a $$($(MAKE) -s --no-print-directory -C $(KDIR) kernelrelease)

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
	debug-kernel install clean help
