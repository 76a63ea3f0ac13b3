#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the module against a kernel source tree from outside Debian's
# archive (an upstream release, another distribution's), which CI cannot
# fetch: a check by hand for kernels the matrix never boots.
#
#   scripts/upstream-check.sh TREE [distro]
#
# TREE: an unbuilt kernel source tree (it is configured in place).  The
# configuration is x86_64_defconfig with what the module needs; "distro"
# adds what distributions turn on (full preemption, paravirt steal time,
# NO_HZ_FULL, core scheduling, kernel IBT, MODVERSIONS, HZ 1000, CPU
# bandwidth control, PSI, hung-task blocker tracking, IRQ time accounting:
# compat.h's #ifdef CONFIG_ paths that defconfig leaves out).  Then
# modules_prepare, and a Module.symvers made from the tree's own EXPORT_*
# macros (approximate: grep ignores #ifdef; the config-dependent exports
# are worth a look by hand), so that modpost fails on any import the tree
# does not export.  Module/Kbuild takes the path without task_work_add()
# by itself where the tree does not export it (upstream Linux).  Compiler
# warnings fail the check too.  Output: build/upstream/NAME/.
# PREPARE_ARGS: more make arguments for modules_prepare (v5.15's objtool
# needs EXTRA_CFLAGS=-Wno-error=use-after-free under gcc 12).
set -euo pipefail

tree=$(cd "${1:?usage: $0 TREE [distro]}" && pwd)
flavour=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
name=$(basename "$tree")${flavour:+-$flavour}
out=$top/build/upstream/$name
jobs=$(nproc)

opts=(-e MODULES -e MODULE_UNLOAD -e KPROBES -e KRETPROBES -e FTRACE
      -e FUNCTION_TRACER -e DYNAMIC_FTRACE -e KALLSYMS -e KALLSYMS_ALL
      -e DEBUG_FS -e TASK_DELAY_ACCT -e TASKSTATS -e SCHED_INFO -e IRQ_WORK
      -e UNWINDER_ORC)
if [ "$flavour" = distro ]; then
	opts+=(-d PREEMPT_VOLUNTARY -e PREEMPT -e PREEMPT_DYNAMIC
	       -e HYPERVISOR_GUEST -e PARAVIRT -e KVM_GUEST
	       -e PARAVIRT_TIME_ACCOUNTING -e NO_HZ_FULL -e CPU_ISOLATION
	       -e SCHEDSTATS -e SCHED_CORE -e X86_KERNEL_IBT -e MODVERSIONS
	       -d HZ_250 -e HZ_1000 -e CFS_BANDWIDTH -e PSI -e DETECT_HUNG_TASK
	       -e DETECT_HUNG_TASK_BLOCKER -e IRQ_TIME_ACCOUNTING)
fi
make -s -C "$tree" x86_64_defconfig
"$tree/scripts/config" --file "$tree/.config" "${opts[@]}"
make -s -C "$tree" olddefconfig
# shellcheck disable=SC2086 # PREPARE_ARGS: words for make
make -s -C "$tree" -j"$jobs" ${PREPARE_ARGS:-} modules_prepare

# Module.symvers from the tree's export macros (and the macro-made names)
python3 - "$tree" >"$tree/Module.symvers" <<'EOF'
import re, subprocess, sys
tree = sys.argv[1]
pat = re.compile(r'\b(EXPORT_(?:PER_CPU_)?SYMBOL(?:_GPL)?(?:_NS)?(?:_GPL)?|'
                 r'EXPORT_STATIC_CALL(?:_GPL|_TRAMP|_TRAMP_GPL)?|'
                 r'EXPORT_TRACEPOINT_SYMBOL(?:_GPL)?)\s*\(\s*(\w+)')
out = subprocess.run(['grep', '-rhE', '--include=*.c', '--include=*.S',
                      '--include=*.h', r'EXPORT_(PER_CPU_)?SYMBOL|'
                      r'EXPORT_STATIC_CALL|EXPORT_TRACEPOINT_SYMBOL', '.'],
                     cwd=tree, capture_output=True, text=True,
                     errors='replace').stdout
names = {}
for line in out.splitlines():
    for m in pat.finditer(line):
        mac, n = m.group(1), m.group(2)
        kind = 'EXPORT_SYMBOL_GPL' if 'GPL' in mac else 'EXPORT_SYMBOL'
        if mac.startswith('EXPORT_STATIC_CALL'):
            made = ['__SCT__' + n, '__SCK__' + n]
        elif mac.startswith('EXPORT_TRACEPOINT'):
            made = ['__tracepoint_' + n, '__traceiter_' + n,
                    '__SCT__tp_func_' + n, '__SCK__tp_func_' + n]
        else:
            made = [n]
        for x in made:
            names.setdefault(x, kind)
for p in ('uint', 'ushort', 'int', 'ulong', 'bool', 'charp', 'byte', 'short',
          'long', 'ullong', 'hexint'):
    names.setdefault('param_ops_' + p, 'EXPORT_SYMBOL')
for r in ('rax', 'rbx', 'rcx', 'rdx', 'rsi', 'rdi', 'rbp', 'r8', 'r9', 'r10',
          'r11', 'r12', 'r13', 'r14', 'r15'):
    for pre in ('__x86_indirect_thunk_', '__x86_indirect_alt_call_',
                '__x86_indirect_alt_jmp_', '__x86_indirect_call_thunk_',
                '__x86_indirect_jump_thunk_'):
        names.setdefault(pre + r, 'EXPORT_SYMBOL')
for n, kind in sorted(names.items()):
    print('0x00000000\t%s\tvmlinux\t%s\t' % (n, kind))
EOF

rm -rf "$out"
mkdir -p "$out"
cp -r "$top/Kbuild" "$top/module" "$top/uapi" "$out/"
if ! make -C "$tree" M="$out" -j"$jobs" modules >"$out/build.log" 2>&1 ||
	grep -E 'warning:|error:|ERROR:' "$out/build.log"; then
	tail -n 30 "$out/build.log"
	echo "upstream-check: $name: FAIL (log: $out/build.log)"
	exit 1
fi
if nm -u "$out/module/stallcap.ko" | grep -qw task_work_add; then
	how="with task_work_add()"
else
	how="without task_work_add()"
fi
echo "upstream-check: $name: built $how, every import exported" \
     "($(nm -u "$out/module/stallcap.ko" | wc -l) imports)"
