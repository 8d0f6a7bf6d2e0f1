#!/usr/bin/env python3
"""Count the handle-like slots of 64 KB handle-table blocks in an ELF core, to check the handles
ClrMD (<name>.clrmd.json, gc_handles[]) reports against what the handle tables hold.

    python3 handle_block_scan.py <core> <name.clrmd.json> [0xBLOCK ...]

Without block addresses it takes the 64 KB blocks holding ClrMD's handles and their neighbours
up to 4 blocks either side. For each block it counts the 8-byte slots from +0x1000 to the end
whose value points into a GC heap segment (ClrMD's segments[]): a live handle's slot does;
other table data rarely does. Prints, per block, that count and how many of ClrMD's handles lie
there. Used for the DATAS finding in README.md (a handle-table block of the second server-GC
slot that ClrMD, through the DAC, does not walk). Standard library only; ELF cores only.
"""
import json
import mmap
import struct
import sys


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    core, cj = argv[0], argv[1]
    d = json.load(open(cj))
    segs = [(int(s["start"], 16), int(s["end"], 16)) for s in d["segments"]]
    handles = [int(h["address"], 16) for h in d["gc_handles"]]
    f = open(core, "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if m[:4] != b"\x7fELF":
        print("not an ELF core")
        return 1
    e_phoff, = struct.unpack_from("<Q", m, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", m, 0x36)
    loads = []
    for i in range(e_phnum):
        p_type, _flags, p_off, p_vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", m, e_phoff + i * e_phentsize)
        if p_type == 1 and p_filesz:
            loads.append((p_vaddr, p_off, p_filesz))

    def v2o(v):
        for va, off, sz in loads:
            if va <= v < va + sz:
                return off + v - va
        return None

    if len(argv) > 2:
        blocks = [int(a, 16) for a in argv[2:]]
    else:
        mine = {h & ~0xFFFF for h in handles}
        blocks = sorted({b + k * 0x10000 for b in mine for k in range(-4, 5)})
    names = {int(t["mt"], 16): t["type"] for t in d["heap_stat"]["types"]}
    reported_set = set(handles)
    for base in blocks:
        n, seen, missed = 0, False, []
        for a in range(base + 0x1000, base + 0x10000, 8):
            o = v2o(a)
            if o is None:
                continue
            seen = True
            v, = struct.unpack_from("<Q", m, o)
            if any(s <= v < e for s, e in segs):
                n += 1
                if a not in reported_set:
                    mo = v2o(v)
                    mt = struct.unpack_from("<Q", m, mo)[0] if mo is not None else 0
                    missed.append((a, v, names.get(mt, f"MT {mt:#x}")))
        if not seen:
            continue
        reported = sum(1 for h in handles if h & ~0xFFFF == base)
        if n or reported:
            print(f"block {base:#x}: {n} slots point into the GC heap, ClrMD reports {reported} handles there")
            for a, v, t in missed:
                print(f"    not reported: slot {a:#x} -> {v:#x} {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
