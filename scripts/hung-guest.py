#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Say where the vCPUs of a hung test guest are, through QEMU's monitor.

Usage: hung-guest.py read SOCKET
       hung-guest.py peek SOCKET
       hung-guest.py name SYMBOLS GUEST_TEXT <READ_OUTPUT

read: SOCKET is the guest's human monitor (QEMU's "-monitor unix:SOCKET,
server,nowait").  The guest is stopped; for each vCPU it prints the
instruction pointer, the stack pointer and the interrupt flag, and every
word of the top of the kernel stack that is a kernel address, the way the
kernel's own stack dumps list their "?" entries: a guess at the call chain,
enough to tell a vCPU spinning on a lock from one halted in the idle loop.
When the top of the stack is an exception's frame in the kernel, it also
prints the frame's rip and the code bytes from the one before it ("trap
frame:"): for a vCPU caught at the int3 entry, whether memory still holds
the int3 it trapped on.  Then the guest runs for a moment and stops again,
a few times: the other kernel places each vCPU was seen at are listed
("also at:"), with their trap frames.

peek: the same, and the guest runs on afterwards (read leaves it stopped,
to be killed).

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
EXTRA_STOPS = 8
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


def stack_words(mon, rsp, count=STACK_WORDS):
    out = mon.cmd("x/%dgx %#x" % (count, rsp))
    words = []
    for line in out.splitlines():
        if ":" not in line:
            continue
        words += [int(w, 16) for w in re.findall(r"0x([0-9a-fA-F]{16})", line.split(":", 1)[1])]
    return words


def trap_frame(mon, words):
    """If the stack's top is the frame an exception in the kernel pushed
    (rip, cs 0x10, flags, rsp, ss), the line of its rip and the code bytes
    from the one before it: for a vCPU at the int3 entry, what memory holds
    where the int3 was (an int3 is a trap: the frame's rip is the byte after
    it)."""
    if len(words) < 5 or not kernel_address(words[0]) or words[1] != 0x10:
        return []
    out = mon.cmd("x/6bx %#x" % (words[0] - 1))
    code = re.findall(r"0x([0-9a-fA-F]{2})\b", out.split(":", 1)[1] if ":" in out else "")
    return ["  trap frame: %#x, memory from the byte before it: %s" % (
        words[0], " ".join(code).lower() if code else "not read")]


def vcpu_state(mon, cpu):
    """(rip, rsp, interrupt flag, halted) of vCPU @cpu, or None."""
    mon.cmd("cpu %s" % cpu)
    regs, halted = registers(mon.cmd("info registers"))
    if regs.get("RIP") is None or regs.get("RSP") is None:
        return None
    return regs["RIP"], regs["RSP"], bool(regs.get("RFL", 0) & 0x200), halted


def where(state):
    rip, rsp, irqs_on, halted = state
    return "%#x%s, interrupts %s, rsp %#x" % (
        rip, " (halted)" if halted else "", "on" if irqs_on else "off", rsp)


def read_vcpus(path, resume=False):
    """Each vCPU of the guest behind monitor @path, addresses in hex: where
    it is, its stack's kernel words, then where else it was in a few more
    stops (a vCPU looping through an exception shows its entry there)."""
    mon = Monitor(path)
    mon.cmd("stop")
    try:
        print_vcpus(mon)
    finally:
        if resume:
            mon.cmd("cont")


def print_vcpus(mon):
    """read_vcpus() of the stopped guest behind @mon."""
    cpus = re.findall(r"CPU #(\d+)", mon.cmd("info cpus"))
    lines, seen = {}, {}
    for cpu in cpus:
        state = vcpu_state(mon, cpu)
        if state is None:
            lines[cpu] = ["cpu %s: no registers" % cpu]
            continue
        lines[cpu] = ["cpu %s: %s" % (cpu, where(state))]
        seen[cpu] = {state[0]}
        if kernel_address(state[0]):
            words = stack_words(mon, state[1])
            lines[cpu] += trap_frame(mon, words)
            lines[cpu] += ["  ? %#x" % w for w in words if kernel_address(w)]
    for _ in range(EXTRA_STOPS):
        mon.cmd("cont")
        time.sleep(0.05)
        mon.cmd("stop")
        for cpu in cpus:
            state = vcpu_state(mon, cpu)
            if cpu not in seen or state is None or not kernel_address(state[0]) \
                    or state[0] in seen[cpu]:
                continue
            seen[cpu].add(state[0])
            lines[cpu].append("  also at: %s" % where(state))
            lines[cpu] += trap_frame(mon, stack_words(mon, state[1], 5))
    for cpu in cpus:
        print("\n".join(lines[cpu]))


def name_addresses(syms):
    """Standard input to output, each code address as symbol+offset."""
    for line in sys.stdin:
        sys.stdout.write(re.sub(
            r"^(cpu \d+: |  \? |  trap frame: |  also at: )0x([0-9a-f]+)\b",
            lambda m: m.group(1) + syms.name(int(m.group(2), 16)), line))


def main():
    if len(sys.argv) == 3 and sys.argv[1] in ("read", "peek"):
        try:
            read_vcpus(sys.argv[2], sys.argv[1] == "peek")
        except OSError as e:
            # (a QEMU whose main loop is stuck does not answer)
            print("monitor: %s" % e)
    elif len(sys.argv) == 4 and sys.argv[1] == "name":
        name_addresses(Symbols(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
