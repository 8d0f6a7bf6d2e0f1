#!/usr/bin/env python3
"""Writes a damaged copy of an ELF core dump, for trying dumpshell on bad input by hand.

The deterministic tests make the same kinds of damage in memory (tests/src/damage.rs,
tests/tests/damaged.rs); this script writes files. Addresses are process addresses (take
them from dumpshell's own output: `eeheap -gc` for regions, `clrthreads` for Threads,
`dumpheap -stat` for MethodTables, `threads` for stack pointers); the script maps them to
file offsets through the core's PT_LOAD program headers.

  damage.py IN OUT --truncate 50%          # cut the file (also: --truncate 123456)
  damage.py IN OUT --zero 0x7f..:4096      # zero bytes at an address
  damage.py IN OUT --u64 0x7f..=0x7f..     # write a pointer (plant a cycle)
  damage.py IN OUT --flip 0x7f..:65536 --count 400 --seed 1   # random bit flips in a range

Options combine; IN may be a .zst file (decompressed with the zstd command).
"""
import argparse
import random
import shutil
import struct
import subprocess
import sys


def load_segments(f):
    """[(vaddr, filesz, offset)] of the core's PT_LOAD headers."""
    f.seek(0)
    ident = f.read(64)
    if ident[:4] != b"\x7fELF" or ident[4] != 2:
        sys.exit("not a 64-bit ELF core")
    phoff, = struct.unpack_from("<Q", ident, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", ident, 0x36)
    segs = []
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p_type, _flags, offset, vaddr, _paddr, filesz = struct.unpack("<IIQQQQ", f.read(40))
        if p_type == 1 and filesz:
            segs.append((vaddr, filesz, offset))
    return segs


def file_offset(segs, addr, length):
    for vaddr, filesz, offset in segs:
        if vaddr <= addr < vaddr + filesz:
            if addr + length > vaddr + filesz:
                sys.exit(f"{addr:#x}+{length:#x} runs past its segment at {vaddr:#x}")
            return offset + (addr - vaddr)
    sys.exit(f"{addr:#x} is not in the dump")


def span(s):
    a, _, n = s.partition(":")
    return int(a, 0), int(n or "8", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--truncate", help="keep this many bytes, or N%% of the file")
    ap.add_argument("--zero", action="append", default=[], metavar="ADDR:LEN")
    ap.add_argument("--u64", action="append", default=[], metavar="ADDR=VALUE")
    ap.add_argument("--flip", action="append", default=[], metavar="ADDR:LEN")
    ap.add_argument("--count", type=int, default=100, help="bit flips per --flip range")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    if a.input.endswith(".zst"):
        subprocess.run(["zstd", "-d", "-f", "-q", a.input, "-o", a.output], check=True)
    else:
        shutil.copyfile(a.input, a.output)
    rng = random.Random(a.seed)
    with open(a.output, "r+b") as f:
        segs = load_segments(f)
        for z in a.zero:
            addr, n = span(z)
            f.seek(file_offset(segs, addr, n))
            f.write(b"\0" * n)
        for w in a.u64:
            addr, _, val = w.partition("=")
            addr = int(addr, 0)
            f.seek(file_offset(segs, addr, 8))
            f.write(struct.pack("<Q", int(val, 0)))
        for fl in a.flip:
            addr, n = span(fl)
            base = file_offset(segs, addr, n)
            for _ in range(a.count):
                off = base + rng.randrange(n)
                f.seek(off)
                b = f.read(1)[0] ^ (1 << rng.randrange(8))
                f.seek(off)
                f.write(bytes([b]))
        if a.truncate:
            f.seek(0, 2)
            size = f.tell()
            t = a.truncate
            keep = size * float(t[:-1]) / 100 if t.endswith("%") else int(t, 0)
            f.truncate(int(keep))


if __name__ == "__main__":
    main()
