#!/usr/bin/env python3
"""Print the contract descriptor (DotNetRuntimeContractDescriptor) of a runtime image file.

Reads an ELF64 little-endian shared object (libcoreclr.so, libclrgc.so, a single-file host)
with the Python standard library only:

  * the export `DotNetRuntimeContractDescriptor` (.dynsym) or, failing that, every 8-aligned
    "DNCCDAC\\0" header in the file's PT_LOAD data;
  * its header: u64 magic, u32 flags (bit 0 always 1, bit 1 set = 32-bit target), u32 JSON
    size, JSON pointer, u32 pointer_data count, 4 bytes of padding, pointer_data pointer
    (40 bytes on x64);
  * the pointers of the header and of pointer_data are resolved through the file's dynamic
    relocations (.rela.dyn: R_X86_64_RELATIVE = addend, R_X86_64_64 / GLOB_DAT = symbol value
    + addend): in the file they are zero (the linker writes RELA addends only into
    .rela.dyn), so every address below is an RVA (relative to the image's load base);
  * sub-descriptors: the main JSON's `subDescriptors` name pointer_data slots holding the
    address of a pointer the runtime fills at startup with the sub-descriptor's address
    (in the file that pointer is in .bss, i.e. zero). Statically we cannot know which one
    the runtime picks, so every other DNCCDAC header found in the image is listed as a
    candidate; `--sub N` merges candidate N (0-based, in file order) under the name given by
    the main descriptor.

Output (stdout): one JSON document
  {"file", "descriptors": [{"rva", "flags", "json_size", "pointer_count", "pointer_data",
   "json" (parsed)} ...], "merged": {"version", "baseline", "types", "globals",
   "contracts", "subDescriptors"}}
Global values given as [[idx], type] or [idx] are resolved to {"rva": "0x..."}; direct values
are kept as written (numbers, hex strings or strings), with their type when given.

  descriptor_dump.py libcoreclr.so                 # everything, main merged with no sub
  descriptor_dump.py libcoreclr.so --sub 0         # merge the first other header as the GC's
  descriptor_dump.py --diff OLD.so NEW.so [--sub N] # added/removed/changed types, fields,
                                                   # globals, contracts (text)
  descriptor_dump.py --core app.dmp                # from an ELF core (createdump 11 saves the
                                                   # descriptor): absolute addresses; the GC
                                                   # sub-descriptor is followed through its
                                                   # pointer slot as the runtime filled it
"""

import argparse
import json
import struct
import sys

MAGIC = b"DNCCDAC\x00"
R_X86_64_64 = 1
R_X86_64_GLOB_DAT = 6
R_X86_64_RELATIVE = 8


class Elf:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = f.read()
        b = self.b
        if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
            raise SystemExit(f"{path}: not an ELF64 little-endian file")
        (self.e_phoff, self.e_shoff) = struct.unpack_from("<QQ", b, 0x20)
        (self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum, self.e_shstrndx) = (
            struct.unpack_from("<HHHHH", b, 0x36)
        )
        self.loads = []  # (vaddr, filesz, memsz, offset)
        for i in range(self.e_phnum):
            o = self.e_phoff + i * self.e_phentsize
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, _align = (
                struct.unpack_from("<IIQQQQQQ", b, o)
            )
            if p_type == 1:
                self.loads.append((p_vaddr, p_filesz, p_memsz, p_offset))
        self.sections = []
        for i in range(self.e_shnum):
            o = self.e_shoff + i * self.e_shentsize
            (name, typ, flags, addr, off, size, link, info, align, entsize) = struct.unpack_from(
                "<IIQQQQIIQQ", b, o
            )
            self.sections.append(
                dict(name=name, type=typ, addr=addr, off=off, size=size, link=link,
                     entsize=entsize)
            )
        if self.sections:
            strtab = self.sections[self.e_shstrndx]
            for s in self.sections:
                s["name"] = self._cstr(strtab["off"] + s["name"])
        self.symbols = self._dynsyms()
        self.relocs = self._relocs()

    def _cstr(self, off):
        end = self.b.index(b"\x00", off)
        return self.b[off:end].decode("utf-8", "replace")

    def section(self, name):
        for s in self.sections:
            if s["name"] == name:
                return s
        return None

    def _dynsyms(self):
        syms = {}
        by_index = []
        ds = self.section(".dynsym")
        if ds is None:
            return syms
        strs = self.sections[ds["link"]]
        for i in range(ds["size"] // 24):
            o = ds["off"] + i * 24
            st_name, _info, _other, _shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", self.b, o)
            name = self._cstr(strs["off"] + st_name)
            by_index.append((name, st_value))
            if name:
                syms[name] = (st_value, st_size)
        self.sym_by_index = by_index
        return syms

    def _relocs(self):
        """vaddr -> resolved value (an RVA) for every dynamic relocation we can resolve."""
        out = {}
        for s in self.sections:
            if s["type"] != 4:  # SHT_RELA
                continue
            for i in range(s["size"] // 24):
                r_offset, r_info, r_addend = struct.unpack_from("<QQq", self.b, s["off"] + i * 24)
                typ = r_info & 0xFFFFFFFF
                sym = r_info >> 32
                if typ == R_X86_64_RELATIVE:
                    out[r_offset] = r_addend & 0xFFFFFFFFFFFFFFFF
                elif typ in (R_X86_64_64, R_X86_64_GLOB_DAT) and sym < len(self.sym_by_index):
                    value = self.sym_by_index[sym][1]
                    if value:  # an import (value 0) cannot be resolved statically
                        out[r_offset] = (value + r_addend) & 0xFFFFFFFFFFFFFFFF
        return out

    def off_of(self, vaddr):
        for va, fsz, _msz, off in self.loads:
            if va <= vaddr < va + fsz:
                return off + (vaddr - va)
        return None

    def in_bss(self, vaddr):
        return any(va + fsz <= vaddr < va + msz for va, fsz, msz, _ in self.loads)

    def read(self, vaddr, n):
        off = self.off_of(vaddr)
        if off is None:
            return None
        return self.b[off:off + n]

    def pointer(self, vaddr):
        """The pointer stored at vaddr, as the loader would make it (an RVA)."""
        if vaddr in self.relocs:
            return self.relocs[vaddr]
        raw = self.read(vaddr, 8)
        if raw is None:
            return 0  # in .bss: zero until the runtime writes it
        return struct.unpack("<Q", raw)[0]

    def vaddr_of_offset(self, off):
        for va, fsz, _msz, o in self.loads:
            if o <= off < o + fsz:
                return va + (off - o)
        return None

    def find_headers(self):
        """Every 8-aligned DNCCDAC header in a PT_LOAD's file data, as vaddrs."""
        found = []
        start = 0
        while True:
            i = self.b.find(MAGIC, start)
            if i < 0:
                break
            start = i + 1
            va = self.vaddr_of_offset(i)
            if va is not None and va % 8 == 0:
                found.append(va)
        return found


class Core:
    """An ELF core's memory (PT_LOAD with file data), read by absolute address: the same
    interface as Elf for read_descriptor (pointer = the word stored in memory)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = f.read()
        b = self.b
        if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1 or struct.unpack_from("<H", b, 16)[0] != 4:
            raise SystemExit(f"{path}: not an ELF64 little-endian core")
        phoff = struct.unpack_from("<Q", b, 0x20)[0]
        phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
        self.loads = []
        for i in range(phnum):
            o = phoff + i * phentsize
            p_type, _f, p_offset, p_vaddr, _pa, p_filesz, p_memsz, _al = struct.unpack_from("<IIQQQQQQ", b, o)
            if p_type == 1 and p_filesz:
                self.loads.append((p_vaddr, p_filesz, p_memsz, p_offset))
        self.loads.sort()

    def off_of(self, vaddr):
        for va, fsz, _msz, off in self.loads:
            if va <= vaddr < va + fsz:
                return off + (vaddr - va)
        return None

    def read(self, vaddr, n):
        off = self.off_of(vaddr)
        if off is None:
            return None
        return self.b[off:off + n]

    def pointer(self, vaddr):
        raw = self.read(vaddr, 8)
        if raw is None:
            raise SystemExit(f"0x{vaddr:x} is not in the core")
        return struct.unpack("<Q", raw)[0]

    def vaddr_of_offset(self, off):
        for va, fsz, _msz, o in self.loads:
            if o <= off < o + fsz:
                return va + (off - o)
        return None

    find_headers = Elf.find_headers


def load_core(path):
    core = Core(path)
    descs = []
    for va in core.find_headers():
        try:
            descs.append(read_descriptor(core, va))
        except SystemExit as e:
            print(f"header at 0x{va:x} skipped: {e}", file=sys.stderr)
    mains = [d for d in descs if "subDescriptors" in d["json"] and d["json"]["subDescriptors"]]
    if not mains:
        raise SystemExit("no descriptor with sub-descriptors in the core")
    main = mains[0]
    subs = {}
    for name, v in main["json"]["subDescriptors"].items():
        r = resolve_global(v, main["pointer_data"])
        slot = int(r["rva"], 16)
        target = core.pointer(slot)
        main.setdefault("sub_slots", {})[name] = {"slot": r["rva"], "value": f"0x{target:x}"}
        if target:
            subs[name] = read_descriptor(core, target)
    return dict(file=path, descriptors=descs, merged=merge(main, subs))


def read_descriptor(elf, va):
    raw = elf.read(va, 40)
    if raw is None or raw[:8] != MAGIC:
        raise SystemExit(f"no DNCCDAC header at 0x{va:x}")
    flags, json_size = struct.unpack_from("<II", raw, 8)
    if flags & 2:
        raise SystemExit("a 32-bit descriptor: this reader handles 64-bit images only")
    json_ptr = elf.pointer(va + 16)
    count = struct.unpack_from("<I", raw, 24)[0]
    pdata = elf.pointer(va + 32)
    text = elf.read(json_ptr, json_size)
    if text is None:
        raise SystemExit(f"JSON of the descriptor at 0x{va:x} not in the file (0x{json_ptr:x})")
    text = text.rstrip(b"\x00")
    pointers = [elf.pointer(pdata + 8 * i) for i in range(count)]
    return dict(
        rva=f"0x{va:x}",
        flags=flags,
        json_size=json_size,
        json_rva=f"0x{json_ptr:x}",
        pointer_count=count,
        pointer_data_rva=f"0x{pdata:x}",
        pointer_data=[f"0x{p:x}" for p in pointers],
        json=json.loads(text.decode("utf-8")),
    )


def resolve_global(value, pointers):
    """A global as written: number / string, [value, type], [idx] or [[idx], type]."""
    typ = None
    if isinstance(value, list):
        if len(value) == 2 and isinstance(value[1], str):
            value, typ = value[0], value[1]
        elif len(value) == 1:
            value = value  # [idx]
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], int):
        idx = value[0]
        out = {"rva": pointers[idx] if idx < len(pointers) else None, "index": idx}
    else:
        out = {"value": value}
    if typ:
        out["type"] = typ
    return out


def merge(main, subs):
    """Merge a descriptor with sub-descriptors {name: descriptor}: types, globals and contracts
    of each are added to one view (a name in two of them is reported)."""
    m = {
        "version": main["json"].get("version"),
        "baseline": main["json"].get("baseline"),
        "types": {},
        "globals": {},
        "contracts": {},
        "subDescriptors": {},
        "origin": {},
        "conflicts": [],
    }

    def add(desc, origin):
        j = desc["json"]
        ptrs = desc["pointer_data"]
        for t, fields in (j.get("types") or {}).items():
            if t in m["types"]:
                m["conflicts"].append(f"type {t} in {m['origin']['type:' + t]} and {origin}")
                continue
            norm = {}
            for f, v in fields.items():
                if isinstance(v, list):
                    norm[f] = {"offset": v[0], "type": v[1]} if len(v) > 1 else {"offset": v[0]}
                else:
                    norm[f] = v
            m["types"][t] = norm
            m["origin"]["type:" + t] = origin
        for g, v in (j.get("globals") or {}).items():
            if g in m["globals"]:
                m["conflicts"].append(f"global {g} in {m['origin']['global:' + g]} and {origin}")
                continue
            m["globals"][g] = resolve_global(v, ptrs)
            m["origin"]["global:" + g] = origin
        for c, v in (j.get("contracts") or {}).items():
            if c in m["contracts"]:
                m["conflicts"].append(f"contract {c} in {m['origin']['contract:' + c]} and {origin}")
                continue
            m["contracts"][c] = v
            m["origin"]["contract:" + c] = origin
        for s, v in (j.get("subDescriptors") or {}).items():
            m["subDescriptors"][s] = {"from": origin, **resolve_global(v, ptrs)}

    add(main, "main")
    for name, d in subs.items():
        add(d, name)
    return m


def load(path, sub_choice):
    elf = Elf(path)
    sym = elf.symbols.get("DotNetRuntimeContractDescriptor")
    headers = elf.find_headers()
    if sym:
        main_va = sym[0]
    elif headers:
        main_va = headers[0]
    else:
        raise SystemExit(f"{path}: no DotNetRuntimeContractDescriptor and no DNCCDAC header")
    main = read_descriptor(elf, main_va)
    others = [read_descriptor(elf, va) for va in headers if va != main_va]
    names = list((main["json"].get("subDescriptors") or {}).keys())
    subs = {}
    if sub_choice is not None:
        if not names:
            raise SystemExit("the main descriptor names no sub-descriptor")
        if sub_choice >= len(others):
            raise SystemExit(f"only {len(others)} other headers in the image")
        subs[names[0]] = others[sub_choice]
    for name, v in (main["json"].get("subDescriptors") or {}).items():
        r = resolve_global(v, main["pointer_data"])
        if r.get("rva"):
            slot = int(r["rva"], 16)
            main.setdefault("sub_slots", {})[name] = {
                "slot_rva": r["rva"],
                "slot_in_bss": elf.in_bss(slot),
                "value_in_file": f"0x{elf.pointer(slot):x}",
            }
    return dict(
        file=path,
        descriptors=[main] + others,
        merged=merge(main, subs),
    )


def flat(m):
    """(kind, name) -> value, for a diff."""
    out = {}
    for t, fields in m["types"].items():
        out[("type", t)] = True
        for f, v in fields.items():
            off = v["offset"] if isinstance(v, dict) else v
            out[("field", f"{t}.{f}")] = off
    for g, v in m["globals"].items():
        out[("global", g)] = v.get("value", "(pointer)") if "value" in v else "(pointer)"
    for c, v in m["contracts"].items():
        out[("contract", c)] = v
    return out


def diff(old, new):
    a, b = flat(old["merged"]), flat(new["merged"])
    lines = []
    for kind in ("contract", "type", "field", "global"):
        added = sorted(k[1] for k in b if k[0] == kind and k not in a)
        removed = sorted(k[1] for k in a if k[0] == kind and k not in b)
        changed = sorted(k[1] for k in a if k[0] == kind and k in b and a[k] != b[k])
        lines.append(f"== {kind}s: {len(added)} added, {len(removed)} removed, {len(changed)} changed")
        for n in added:
            lines.append(f"+ {n} = {b[(kind, n)]}")
        for n in removed:
            lines.append(f"- {n} = {a[(kind, n)]}")
        for n in changed:
            lines.append(f"~ {n}: {a[(kind, n)]} -> {b[(kind, n)]}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--sub", type=int, default=None,
                    help="merge the N-th other DNCCDAC header of the image as the sub-descriptor")
    ap.add_argument("--diff", action="store_true", help="compare two images' merged descriptors")
    ap.add_argument("--merged-only", action="store_true", help="print only the merged view")
    ap.add_argument("--core", action="store_true", help="the files are ELF cores")
    args = ap.parse_args()
    if args.core:
        for path in args.files:
            out = load_core(path)
            if args.merged_only:
                out = out["merged"]
            json.dump(out, sys.stdout, indent=1)
            sys.stdout.write("\n")
        return
    if args.diff:
        if len(args.files) != 2:
            raise SystemExit("--diff takes two files")
        old = load(args.files[0], args.sub)
        new = load(args.files[1], args.sub)
        print(diff(old, new))
        return
    for path in args.files:
        out = load(path, args.sub)
        if args.merged_only:
            out = out["merged"]
        json.dump(out, sys.stdout, indent=1, sort_keys=False)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
