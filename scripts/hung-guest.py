#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Say where the vCPUs of a hung test guest are, through QEMU's monitor.

Usage: hung-guest.py read SOCKET
       hung-guest.py name SYMBOLS GUEST_TEXT <READ_OUTPUT

read: SOCKET is the guest's human monitor (QEMU's "-monitor unix:SOCKET,
server,nowait").  The guest is stopped; for each vCPU it prints the
instruction pointer, the stack pointer and the interrupt flag, and every
word of the top of the kernel stack that is a kernel address, the way the
kernel's own stack dumps list their "?" entries: a guess at the call chain,
enough to tell a vCPU spinning on a lock from one halted in the idle loop.

name: the same lines with each kernel address as symbol+offset, from
SYMBOLS (a System.map, or the kernel's /proc/kallsyms read in a boot
without KASLR) and the guest's address of _text (KASLR moved it; the
guest prints it at boot).

scripts/vmtest.sh reads a guest that fell silent before it kills it
(where_hung), and names the addresses afterwards (name_hung).
"""
import bisect
import re
import socket
import sys
import time

STACK_WORDS = 64
PROMPT = b"(qemu) "
ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]|\r")


class Monitor:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.read_to_prompt()

    def read_to_prompt(self):
        buf = b""
        deadline = time.time() + 20
        while not buf.endswith(PROMPT) and time.time() < deadline:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            buf += ANSI.sub(b"", chunk)
        return buf[: -len(PROMPT)] if buf.endswith(PROMPT) else buf

    def cmd(self, line):
        self.sock.sendall(line.encode() + b"\n")
        out = self.read_to_prompt().decode(errors="replace")
        # drop the echoed command (the first line)
        return out.split("\n", 1)[1] if "\n" in out else ""


class Symbols:
    """A System.map or a /proc/kallsyms of the kernel: its text symbols."""

    def __init__(self, path, guest_text):
        entries, text = [], None
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 3 or parts[1] not in ("t", "T", "w", "W"):
                    continue
                addr = int(parts[0], 16)
                entries.append((addr, parts[2]))
                if parts[2] == "_text":
                    text = addr
        entries.sort()
        self.addrs = [a for a, _ in entries]
        self.names = [n for _, n in entries]
        self.offset = int(guest_text, 16) - text if text is not None else 0
        if len(entries) < 1000:
            sys.exit("%s: not a kernel's symbol table (%d text symbols)" % (path, len(entries)))

    def name(self, addr):
        a = addr - self.offset
        i = bisect.bisect_right(self.addrs, a) - 1
        # (past the end of the text or of the init text: data)
        if i < 0 or self.names[i] in ("_etext", "_einittext") or a > self.addrs[-1] + 0x100000:
            return "%#x" % addr
        return "%s+%#x" % (self.names[i], a - self.addrs[i])


def kernel_address(addr):
    return addr >= 0xFFFFFFFF80000000


def registers(text):
    regs = {}
    for name, val in re.findall(r"\b(RIP|RSP|RFL)=([0-9a-fA-F]+)", text):
        regs.setdefault(name, int(val, 16))
    halted = re.search(r"\bHLT=(\d)", text)
    return regs, bool(halted and halted.group(1) == "1")


def stack_words(mon, rsp):
    out = mon.cmd("x/%dgx %#x" % (STACK_WORDS, rsp))
    words = []
    for line in out.splitlines():
        if ":" not in line:
            continue
        words += [int(w, 16) for w in re.findall(r"0x([0-9a-fA-F]{16})", line.split(":", 1)[1])]
    return words


def read_vcpus(path):
    """Each vCPU of the guest behind monitor @path, addresses in hex."""
    mon = Monitor(path)
    mon.cmd("stop")
    for cpu in re.findall(r"CPU #(\d+)", mon.cmd("info cpus")):
        mon.cmd("cpu %s" % cpu)
        regs, halted = registers(mon.cmd("info registers"))
        rip, rsp, rfl = regs.get("RIP"), regs.get("RSP"), regs.get("RFL", 0)
        if rip is None or rsp is None:
            print("cpu %s: no registers" % cpu)
            continue
        print("cpu %s: %#x%s, interrupts %s, rsp %#x" % (
            cpu, rip, " (halted)" if halted else "",
            "on" if rfl & 0x200 else "off", rsp))
        if not kernel_address(rip):
            continue
        for w in stack_words(mon, rsp):
            if kernel_address(w):
                print("  ? %#x" % w)


def name_addresses(syms):
    """Standard input to output, each code address as symbol+offset."""
    for line in sys.stdin:
        sys.stdout.write(re.sub(
            r"^(cpu \d+: |  \? )0x([0-9a-f]+)\b",
            lambda m: m.group(1) + syms.name(int(m.group(2), 16)), line))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "read":
        try:
            read_vcpus(sys.argv[2])
        except OSError as e:
            # (a QEMU whose main loop is stuck does not answer)
            print("monitor: %s" % e)
    elif len(sys.argv) == 4 and sys.argv[1] == "name":
        name_addresses(Symbols(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
