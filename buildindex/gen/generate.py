#!/usr/bin/env python3
"""Generates buildindex's committed data from the NuGet runtime and host packs.

    python3 buildindex/gen/generate.py            # restore the packs of packs.txt, write the data
    python3 buildindex/gen/generate.py --no-restore   # use what ~/.nuget/packages already holds

For every package and version of gen/packs.txt it restores the pack into the NuGet cache (a
PackageDownload restore, as dumps/sdk/Fetch.csproj does), reads each runtime module in it
(libcoreclr.so, coreclr.dll, singlefilehost, singlefilehost.exe) and writes:

  buildindex/data/builds.bin.zst   the index (format: buildindex/README.md), zstd -19
  buildindex/data/builds.tsv       one line a build: identity, module, versions, source package

Python 3 standard library only, plus the `dotnet` SDK (restore) and the `zstd` program. The
uncompressed bytes depend only on the packs' files (entries sorted, strings deduplicated in
order of first use); a failure to read any fact a module should hold stops the run: the data
holds only what was read, never a guess.
"""

import argparse
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CRATE = os.path.dirname(HERE)
DATA = os.path.join(CRATE, 'data')

MAGIC = b'DSBIDX\x00\x01'
DESC_MAGIC = b'DNCCDAC\x00'

# Module kinds (the numbers are the data format's).
KIND_LIBCORECLR = 1
KIND_CORECLR_DLL = 2
KIND_SINGLEFILEHOST_ELF = 3
KIND_SINGLEFILEHOST_PE = 4
MODULE_FILES = {
    'libcoreclr.so': KIND_LIBCORECLR,
    'coreclr.dll': KIND_CORECLR_DLL,
    'singlefilehost': KIND_SINGLEFILEHOST_ELF,
    'singlefilehost.exe': KIND_SINGLEFILEHOST_PE,
}

# Pointer kinds.
PTR_RAW = 0      # the value as it is in the file: nothing relocates it
PTR_RVA = 1      # relocated: the address is module base + this RVA
PTR_UNFILLED = 2  # the location has no file bytes (.bss): zero until the runtime writes it

# Descriptor roles.
ROLE_MAIN = 1       # the DotNetRuntimeContractDescriptor export
ROLE_SUB = 2        # reached from another descriptor's subDescriptors through file bytes
ROLE_IN_IMAGE = 3   # a header found in the image that no file bytes point at (e.g. the GC's,
                    # whose pointer the runtime stores into a .bss slot at startup)


class Fail(Exception):
    pass


def u16(b, o): return struct.unpack_from('<H', b, o)[0]
def u32(b, o): return struct.unpack_from('<I', b, o)[0]
def u64(b, o): return struct.unpack_from('<Q', b, o)[0]


SCCSID = re.compile(rb'@\(#\)Version ([0-9][0-9.]*) @Commit: ([0-9a-f]{40})\x00')
# The same text in UTF-16LE (PE images): digits, commas and hex digits each followed by a NUL.
_D, _H = rb'(?:[0-9]\x00)', rb'(?:[0-9a-f]\x00)'
VERSION_UTF16 = re.compile(_D + rb'+,\x00' + _D + rb'+,\x00' + _D + rb'+,\x00' + _D +
                           rb'+ \x00@\x00C\x00o\x00m\x00m\x00i\x00t\x00:\x00 \x00' + _H +
                           rb'{40}\x00\x00')


# ----------------------------------------------------------------------------------------------
# ELF (x86-64 shared objects and PIEs)

R_X86_64_64 = 1
R_X86_64_GLOB_DAT = 6
R_X86_64_JUMP_SLOT = 7
R_X86_64_RELATIVE = 8


class Elf:
    def __init__(self, data, path):
        self.d = d = data
        self.path = path
        if d[:4] != b'\x7fELF' or d[4] != 2 or d[5] != 1:
            raise Fail(f'{path}: not a 64-bit little-endian ELF')
        if u16(d, 0x12) != 62:
            raise Fail(f'{path}: not x86-64')
        phoff, shoff = u64(d, 0x20), u64(d, 0x28)
        phnum, shnum, shstrndx = u16(d, 0x38), u16(d, 0x3c), u16(d, 0x3e)
        self.loads = []   # (vaddr, offset, filesz, memsz)
        self.notes = []
        self.dynamic = None
        for i in range(phnum):
            t, _f, off, va, _pa, fs, ms, _al = struct.unpack_from('<IIQQQQQQ', d, phoff + 56 * i)
            if t == 1:
                self.loads.append((va, off, fs, ms))
            elif t == 2:
                self.dynamic = (off, fs)
            elif t == 4:
                self.notes.append((va, off, fs))
        if not self.loads:
            raise Fail(f'{path}: no PT_LOAD')
        self.base = min(l[0] for l in self.loads) & ~0xfff
        if self.base != 0:
            raise Fail(f'{path}: lowest PT_LOAD at {self.base:#x}, not 0 (not position-independent?)')
        self.image_size = max(va + ms for va, _o, _f, ms in self.loads) - self.base
        self.sections = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + 64 * i) for i in range(shnum)]
        self.build_id, self.build_id_rva = self._build_id()
        self.symbols = self._dynsym()
        self.relocs = self._relocs()

    def _build_id(self):
        for va, off, fs in self.notes:
            o = off
            while o + 12 <= off + fs:
                namesz, descsz, typ = struct.unpack_from('<III', self.d, o)
                name = self.d[o + 12:o + 12 + namesz]
                desc_at = o + 12 + ((namesz + 3) & ~3)
                if typ == 3 and name == b'GNU\x00':
                    return self.d[desc_at:desc_at + descsz], va + (desc_at - off)
                o = desc_at + ((descsz + 3) & ~3)
        raise Fail(f'{self.path}: no NT_GNU_BUILD_ID note')

    def read(self, rva, n):
        """The image's bytes at rva: None where a byte is not in a PT_LOAD; the part past
        p_filesz (bss) is not file bytes and reads as None too."""
        for va, off, fs, ms in self.loads:
            if va <= rva and rva + n <= va + fs:
                return self.d[off + rva - va:off + rva - va + n]
        return None

    def is_bss(self, rva, n):
        return any(va + fs <= rva and rva + n <= va + ms for va, off, fs, ms in self.loads)

    def file_to_rva(self, o):
        for va, off, fs, ms in self.loads:
            if off <= o < off + fs:
                return va + o - off
        return None

    def _dynsym(self):
        out = []
        for s in self.sections:
            if s[1] != 11:  # SHT_DYNSYM
                continue
            strtab = self.sections[s[6]]
            for i in range(s[5] // 24):
                st_name, info, _other, shndx, value, size = struct.unpack_from('<IBBHQQ', self.d, s[4] + 24 * i)
                e = self.d.index(b'\x00', strtab[4] + st_name)
                out.append((self.d[strtab[4] + st_name:e].decode(), info, shndx, value, size))
        if not out:
            raise Fail(f'{self.path}: no .dynsym section')
        return out

    def exports(self):
        """Defined global/weak dynamic symbols (functions and objects): name -> (rva, size)."""
        out = {}
        for name, info, shndx, value, size in self.symbols:
            bind, typ = info >> 4, info & 0xf
            if shndx == 0 or not name or bind not in (1, 2) or typ not in (1, 2):
                continue
            if name in out and out[name] != (value, size):
                raise Fail(f'{self.path}: two definitions of {name}')
            out[name] = (value - self.base, size)
        return out

    def _relocs(self):
        if self.dynamic is None:
            raise Fail(f'{self.path}: no PT_DYNAMIC')
        off, fs = self.dynamic
        tags = {}
        for i in range(fs // 16):
            tag, val = struct.unpack_from('<qQ', self.d, off + 16 * i)
            if tag == 0:
                break
            tags.setdefault(tag, val)
        relocs = {}

        def rela(addr, size):
            o = self.file_offset(addr)
            for i in range(size // 24):
                r_off, info, addend = struct.unpack_from('<QQq', self.d, o + 24 * i)
                relocs[r_off] = (info & 0xffffffff, info >> 32, addend)
        if 7 in tags:
            rela(tags[7], tags.get(8, 0))
        if 23 in tags and tags.get(20) == 7:  # DT_JMPREL with DT_PLTREL = DT_RELA
            rela(tags[23], tags.get(2, 0))
        if 17 in tags:
            raise Fail(f'{self.path}: DT_REL relocations (not read)')
        if 36 in tags:  # DT_RELR: packed relative relocations, addends in place
            o, n = self.file_offset(tags[36]), tags.get(35, 0) // 8
            where = 0
            for i in range(n):
                e = u64(self.d, o + 8 * i)
                if e & 1 == 0:
                    relocs[e] = (R_X86_64_RELATIVE, 0, None)
                    where = e + 8
                else:
                    for b in range(63):
                        if (e >> (b + 1)) & 1:
                            relocs[where + 8 * b] = (R_X86_64_RELATIVE, 0, None)
                    where += 63 * 8
        return relocs

    def file_offset(self, rva):
        for va, off, fs, ms in self.loads:
            if va <= rva < va + fs:
                return off + rva - va
        raise Fail(f'{self.path}: {rva:#x} is not in the file')

    def pointer(self, rva):
        """The pointer-sized value at rva as the loaded image has it: (PTR_RVA, rva) when a
        relocation makes it an address in this module, (PTR_RAW, value) when nothing relocates
        it, (PTR_UNFILLED, 0) for .bss."""
        raw = self.read(rva, 8)
        if raw is None:
            if self.is_bss(rva, 8):
                if rva in self.relocs:
                    raise Fail(f'{self.path}: relocation into .bss at {rva:#x}')
                return (PTR_UNFILLED, 0)
            raise Fail(f'{self.path}: {rva:#x} is outside the image')
        value = u64(raw, 0)
        r = self.relocs.get(rva)
        if r is None:
            return (PTR_RAW, value)
        typ, sym, addend = r
        if typ == R_X86_64_RELATIVE:
            a = value if addend is None else addend
            if addend is not None and value not in (0, addend):
                raise Fail(f'{self.path}: RELATIVE at {rva:#x}: file holds {value:#x}, addend {addend:#x}')
            return (PTR_RVA, a - self.base)
        if typ in (R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT):
            name, _info, shndx, svalue, _size = self.symbols[sym] if sym < len(self.symbols) else (None, 0, 0, 0, 0)
            if name is None or shndx == 0:
                raise Fail(f'{self.path}: pointer at {rva:#x} relocated against an undefined symbol {name}')
            add = addend if typ == R_X86_64_64 else 0
            return (PTR_RVA, svalue + add - self.base)
        raise Fail(f'{self.path}: pointer at {rva:#x} has relocation type {typ} (not read)')

    def scan(self, pattern):
        """RVAs of the 8-aligned occurrences of pattern in the file bytes of PT_LOADs."""
        out = []
        for m in re.finditer(re.escape(pattern), self.d):
            rva = self.file_to_rva(m.start())
            if rva is not None and rva % 8 == 0:
                out.append(rva)
        return sorted(set(out))

    def sccsids(self):
        out = []
        for m in SCCSID.finditer(self.d):
            rva = self.file_to_rva(m.start())
            if rva is not None:
                out.append((rva, m.group(0)[:-1].decode(), m.group(1).decode(), m.group(2).decode()))
        return out


# ----------------------------------------------------------------------------------------------
# PE32+ (x64)

class Pe:
    def __init__(self, data, path):
        self.d = d = data
        self.path = path
        if d[:2] != b'MZ':
            raise Fail(f'{path}: not a PE file')
        pe = u32(d, 0x3c)
        if d[pe:pe + 4] != b'PE\x00\x00':
            raise Fail(f'{path}: no PE signature')
        coff = pe + 4
        if u16(d, coff) != 0x8664:
            raise Fail(f'{path}: not x64')
        nsec, self.timestamp, opt_size = u16(d, coff + 2), u32(d, coff + 4), u16(d, coff + 16)
        opt = coff + 20
        if u16(d, opt) != 0x20b:
            raise Fail(f'{path}: not PE32+')
        self.image_base = u64(d, opt + 24)
        self.size_of_image = u32(d, opt + 56)
        ndirs = u32(d, opt + 108)
        self.dirs = [struct.unpack_from('<II', d, opt + 112 + 8 * i) for i in range(ndirs)]
        sec = opt + opt_size
        self.sections = []  # (name, va, vsize, rawsize, rawptr)
        for i in range(nsec):
            name = d[sec + 40 * i:sec + 40 * i + 8].rstrip(b'\x00').decode()
            vsize, va, rawsize, rawptr = struct.unpack_from('<IIII', d, sec + 40 * i + 8)
            self.sections.append((name, va, vsize, rawsize, rawptr))
        self.image_size = self.size_of_image
        self.relocs = self._base_relocs()

    def read(self, rva, n):
        for _name, va, vsize, rawsize, rawptr in self.sections:
            if va <= rva and rva + n <= va + min(vsize, rawsize):
                return self.d[rawptr + rva - va:rawptr + rva - va + n]
        return None

    def is_bss(self, rva, n):
        return any(va + min(vsize, rawsize) <= rva and rva + n <= va + vsize
                   for _n, va, vsize, rawsize, _p in self.sections)

    def file_to_rva(self, o):
        for _name, va, vsize, rawsize, rawptr in self.sections:
            if rawptr <= o < rawptr + min(vsize, rawsize):
                return va + o - rawptr
        return None

    def cstr(self, rva):
        out = bytearray()
        while True:
            b = self.read(rva + len(out), 1)
            if b is None:
                raise Fail(f'{self.path}: string at {rva:#x} runs out of the file')
            if b == b'\x00':
                return out.decode()
            out += b

    def _base_relocs(self):
        rva, size = self.dirs[5] if len(self.dirs) > 5 else (0, 0)
        out = set()
        o = 0
        while o + 8 <= size:
            page, block = struct.unpack('<II', self.read(rva + o, 8))
            if block < 8:
                raise Fail(f'{self.path}: base relocation block of {block} bytes')
            ents = self.read(rva + o + 8, block - 8)
            for i in range(0, len(ents), 2):
                e = u16(ents, i)
                typ, off = e >> 12, e & 0xfff
                if typ == 10:  # IMAGE_REL_BASED_DIR64
                    out.add(page + off)
                elif typ != 0:
                    raise Fail(f'{self.path}: base relocation type {typ} (not read)')
            o += block
        if not out:
            raise Fail(f'{self.path}: no base relocations (a fixed-base image is not read)')
        return out

    def exports(self):
        rva, size = self.dirs[0]
        if not rva:
            return {}
        h = self.read(rva, 40)
        nfunc, nnames = u32(h, 20), u32(h, 24)
        afunc, anames, aords = u32(h, 28), u32(h, 32), u32(h, 36)
        out = {}
        for i in range(nnames):
            name = self.cstr(u32(self.read(anames + 4 * i, 4), 0))
            ordinal = u16(self.read(aords + 2 * i, 2), 0)
            if ordinal >= nfunc:
                raise Fail(f'{self.path}: export {name} has ordinal index {ordinal} of {nfunc}')
            f = u32(self.read(afunc + 4 * ordinal, 4), 0)
            if rva <= f < rva + size:
                continue  # a forwarder: no code or data in this module
            out[name] = (f, 0)
        return out

    def pointer(self, rva):
        raw = self.read(rva, 8)
        if raw is None:
            if self.is_bss(rva, 8):
                if rva in self.relocs:
                    raise Fail(f'{self.path}: base relocation into uninitialized data at {rva:#x}')
                return (PTR_UNFILLED, 0)
            raise Fail(f'{self.path}: {rva:#x} is outside the image')
        value = u64(raw, 0)
        if rva in self.relocs:
            if not self.image_base <= value < self.image_base + self.size_of_image:
                raise Fail(f'{self.path}: relocated pointer at {rva:#x} holds {value:#x}, '
                           f'outside the image at {self.image_base:#x}')
            return (PTR_RVA, value - self.image_base)
        return (PTR_RAW, value)

    def scan(self, pattern):
        out = []
        for m in re.finditer(re.escape(pattern), self.d):
            rva = self.file_to_rva(m.start())
            if rva is not None and rva % 8 == 0:
                out.append(rva)
        return sorted(set(out))

    def version_texts(self):
        out = []
        for m in VERSION_UTF16.finditer(self.d):
            rva = self.file_to_rva(m.start())
            if rva is not None and m.start() % 2 == 0:
                text = m.group(0)[:-2].decode('utf-16-le')
                v, commit = text.split(' @Commit: ')
                out.append((rva, text, v.replace(',', '.'), commit))
        return out

    def version_resource(self):
        """(file_version from VS_FIXEDFILEINFO, {string name: value}) of the RT_VERSION resource."""
        rva, _size = self.dirs[2] if len(self.dirs) > 2 else (0, 0)
        if not rva:
            raise Fail(f'{self.path}: no resources')

        def entries(dir_off):
            h = self.read(rva + dir_off, 16)
            n = u16(h, 12) + u16(h, 14)
            return [struct.unpack('<II', self.read(rva + dir_off + 16 + 8 * i, 8)) for i in range(n)]
        node = None
        for ident, off in entries(0):
            if ident == 16:  # RT_VERSION
                node = off
        if node is None:
            raise Fail(f'{self.path}: no RT_VERSION resource')
        for _level in range(2):  # name, then language: take the first
            if not node & 0x80000000:
                raise Fail(f'{self.path}: RT_VERSION resource tree too shallow')
            node = entries(node & 0x7fffffff)[0][1]
        data_rva, data_size = struct.unpack('<II', self.read(rva + node, 8))
        blob = self.read(data_rva, data_size)

        def block(o):
            length, vlen, typ = struct.unpack_from('<HHH', blob, o)
            k = o + 6
            key_end = k
            while u16(blob, key_end) != 0:
                key_end += 2
            key = blob[k:key_end].decode('utf-16-le')
            v = (key_end + 2 + 3) & ~3
            vbytes = vlen * 2 if typ == 1 else vlen
            value = blob[v:v + vbytes]
            c = (v + vbytes + 3) & ~3
            children = []
            while c < o + length:
                child = block(c)
                children.append(child)
                c = (c + child[3] + 3) & ~3
            return key, value, children, length
        root = block(0)
        if root[0] != 'VS_VERSION_INFO' or u32(root[1], 0) != 0xFEEF04BD:
            raise Fail(f'{self.path}: malformed VS_VERSION_INFO')
        ms, ls = u32(root[1], 8), u32(root[1], 12)
        fixed = f'{ms >> 16}.{ms & 0xffff}.{ls >> 16}.{ls & 0xffff}'
        strings = {}
        for key, _v, kids, _l in root[2]:
            if key == 'StringFileInfo' and kids:
                for skey, sval, _k, _l2 in kids[0][2]:
                    strings[skey] = sval.decode('utf-16-le').rstrip('\x00')
        return fixed, strings


# ----------------------------------------------------------------------------------------------
# Contract descriptors

def read_descriptor(img, rva):
    """The descriptor whose header is at rva, as the image holds it."""
    h = img.read(rva, 40)
    if h is None or h[:8] != DESC_MAGIC:
        raise Fail(f'{img.path}: no descriptor header at {rva:#x}')
    flags, size, count = u32(h, 8), u32(h, 12), u32(h, 24)
    json_ptr, data_ptr = img.pointer(rva + 16), img.pointer(rva + 32)
    if json_ptr[0] != PTR_RVA:
        raise Fail(f'{img.path}: descriptor at {rva:#x}: its JSON pointer is {json_ptr} (not relocated)')
    text = img.read(json_ptr[1], size)
    if text is None:
        raise Fail(f'{img.path}: descriptor at {rva:#x}: JSON not in the file')
    if count and data_ptr[0] != PTR_RVA:
        raise Fail(f'{img.path}: descriptor at {rva:#x}: pointer_data pointer is {data_ptr}')
    entries = [img.pointer(data_ptr[1] + 8 * i) for i in range(count)]
    parsed = json.loads(text.split(b'\x00', 1)[0])
    subs = []
    for name, v in (parsed.get('subDescriptors') or {}).items():
        if isinstance(v, list) and v and isinstance(v[0], list) and len(v[0]) == 1 and isinstance(v[0][0], int):
            idx = v[0][0]
        else:
            raise Fail(f'{img.path}: descriptor at {rva:#x}: sub-descriptor {name}: {v!r} (not read)')
        if idx >= count:
            raise Fail(f'{img.path}: sub-descriptor {name} index {idx} outside pointer_data ({count})')
        slot = entries[idx]
        if slot[0] != PTR_RVA:
            raise Fail(f'{img.path}: sub-descriptor {name}: pointer_data[{idx}] is {slot}')
        subs.append({'name': name, 'index': idx, 'content': img.pointer(slot[1]), 'target': None})
    return {
        'rva': rva, 'role': None, 'flags': flags, 'size': size, 'json_ptr': json_ptr,
        'json': bytes(text), 'count': count, 'data_ptr': data_ptr, 'entries': entries,
        'subs': subs, 'parsed': parsed,
    }


def descriptors(img, exports):
    """Every descriptor of the image: the exported one, those its sub-descriptor slots reach
    through file bytes, and the other headers in the image's file bytes."""
    found = {}
    for rva in img.scan(DESC_MAGIC):
        try:
            found[rva] = read_descriptor(img, rva)
        except Fail as e:
            # An 8-aligned "DNCCDAC\0" that is not a descriptor would be a surprise: say so.
            raise Fail(f'a descriptor-like header that does not parse: {e}')
    main = exports.get('DotNetRuntimeContractDescriptor')
    if main is None:
        if found:
            raise Fail(f'{img.path}: descriptor headers {sorted(found)} but no export')
        return []
    if main[0] not in found:
        raise Fail(f'{img.path}: the export at {main[0]:#x} is not a descriptor header')
    found[main[0]]['role'] = ROLE_MAIN
    todo = [main[0]]
    while todo:
        d = found[todo.pop()]
        for s in d['subs']:
            kind, value = s['content']
            if kind == PTR_RVA:
                if value not in found:
                    raise Fail(f'{img.path}: sub-descriptor {s["name"]} points at {value:#x}: no header')
                s['target'] = value
                if found[value]['role'] is None:
                    found[value]['role'] = ROLE_SUB
                    todo.append(value)
            elif kind == PTR_RAW and value != 0:
                raise Fail(f'{img.path}: sub-descriptor {s["name"]} slot holds raw {value:#x}')
    for d in found.values():
        if d['role'] is None:
            d['role'] = ROLE_IN_IMAGE
    order = sorted(found, key=lambda r: (found[r]['role'], r))
    for d in found.values():
        for s in d['subs']:
            s['target'] = -1 if s['target'] is None else order.index(s['target'])
    return [found[r] for r in order]


# ----------------------------------------------------------------------------------------------

def runtime_info(img, exports):
    e = exports.get('DotNetRuntimeInfo')
    if e is None:
        return None
    head = img.read(e[0], 24)
    if head is None or head[:18] != b'DotNetRuntimeInfo\x00':
        raise Fail(f'{img.path}: DotNetRuntimeInfo has no signature')
    version = struct.unpack_from('<i', head, 20)[0]
    size = 96 + (16 if version >= 2 else 0)
    if e[1] and e[1] != size:
        raise Fail(f'{img.path}: DotNetRuntimeInfo version {version} but symbol size {e[1]}')
    return img.read(e[0], size)


def read_module(path, kind, package, version, rel):
    data = open(path, 'rb').read()
    is_elf = kind in (KIND_LIBCORECLR, KIND_SINGLEFILEHOST_ELF)
    img = Elf(data, path) if is_elf else Pe(data, path)
    exports = img.exports()
    if 'g_dacTable' not in exports:
        raise Fail(f'{path}: no g_dacTable export')
    rec = {
        'kind': kind, 'file_name': os.path.basename(path), 'package': package,
        'package_version': version, 'path': rel, 'file_size': len(data),
        'image_size': img.image_size, 'exports': exports,
        'runtime_info': runtime_info(img, exports),
        'descriptors': descriptors(img, exports),
        'sha256': hashlib.sha256(data).hexdigest(),
    }
    if is_elf:
        rec['identity'] = ('elf', img.build_id)
        rec['build_id_rva'] = img.build_id_rva
        found = img.sccsids()
        if not found:
            raise Fail(f'{path}: no "@(#)Version ... @Commit: ..." string')
        texts = {t for _r, t, _v, _c in found}
        if len(texts) != 1:
            raise Fail(f'{path}: different version strings {sorted(texts)}')
        _r, text, fv, commit = found[0]
        rec.update(version_text=text, file_version=fv, commit=commit,
                   version_rvas=[r for r, *_ in found])
    else:
        rec['identity'] = ('pe', img.timestamp, img.size_of_image)
        rec['build_id_rva'] = None
        # The runtime's version text "10,0,1426,52326 @Commit: <sha>" in UTF-16: coreclr.dll's
        # version resource holds it (FileVersion); singlefilehost.exe has no version resource
        # (the SDK stamps the app's) but holds the same strings in its data.
        found = img.version_texts()
        if not found:
            raise Fail(f'{path}: no "a,b,c,d @Commit: ..." version string')
        texts = {t for _r, t, _v, _c in found}
        if len(texts) != 1:
            raise Fail(f'{path}: different version strings {sorted(texts)}')
        _r, text, fv, commit = found[0]
        if kind == KIND_CORECLR_DLL:
            fixed, strings = img.version_resource()
            if strings.get('FileVersion') != text or fixed != fv:
                raise Fail(f'{path}: version resource {fixed} {strings.get("FileVersion")!r}, '
                           f'strings {text!r}')
        rec.update(version_text=text, file_version=fv, commit=commit,
                   version_rvas=[r for r, *_ in found])
    return rec


# ----------------------------------------------------------------------------------------------
# Encoding (buildindex/README.md, "The data format")

class Writer:
    def __init__(self):
        self.strings, self.index, self.out = [], {}, bytearray()

    def s(self, b):
        if isinstance(b, str):
            b = b.encode()
        if b not in self.index:
            self.index[b] = len(self.strings)
            self.strings.append(b)
        self.u32(self.index[b])

    def u8(self, v): self.out += struct.pack('<B', v)
    def u32(self, v): self.out += struct.pack('<I', v)
    def u64(self, v): self.out += struct.pack('<Q', v)
    def i32(self, v): self.out += struct.pack('<i', v)
    def ptr(self, p): self.u8(p[0]); self.u64(p[1])

    def blob(self, b):
        self.u32(len(b)); self.out += b


def encode(records):
    w = Writer()
    w.u32(len(records))
    for r in records:
        w.u8(r['kind'])
        ident = r['identity']
        if ident[0] == 'elf':
            w.u8(1); w.blob(ident[1])
        else:
            w.u8(2); w.u32(ident[1]); w.u32(ident[2])
        w.s(r['file_name']); w.s(r['package']); w.s(r['package_version']); w.s(r['path'])
        w.u64(r['file_size']); w.out += bytes.fromhex(r['sha256']); w.u64(r['image_size'])
        w.s(r['version_text']); w.s(r['file_version']); w.s(r['commit'])
        w.u64(0xffffffffffffffff if r['build_id_rva'] is None else r['build_id_rva'])
        w.u32(len(r['version_rvas']))
        for v in r['version_rvas']:
            w.u64(v)
        w.u32(len(r['exports']))
        for name in sorted(r['exports']):
            rva, size = r['exports'][name]
            w.s(name); w.u64(rva); w.u64(size)
        if r['runtime_info'] is None:
            w.u8(0)
        else:
            w.u8(1); w.blob(r['runtime_info'])
        w.u32(len(r['descriptors']))
        for d in r['descriptors']:
            w.u64(d['rva']); w.u8(d['role']); w.u32(d['flags']); w.u32(d['size'])
            w.ptr(d['json_ptr']); w.s(d['json']); w.u32(d['count']); w.ptr(d['data_ptr'])
            for e in d['entries']:
                w.ptr(e)
            w.u32(len(d['subs']))
            for s in d['subs']:
                w.s(s['name']); w.u32(s['index']); w.ptr(s['content']); w.i32(s['target'])
    body = bytes(w.out)
    head = bytearray(MAGIC)
    head += struct.pack('<I', len(w.strings))
    for b in w.strings:
        head += struct.pack('<I', len(b)) + b
    return bytes(head) + body


# ----------------------------------------------------------------------------------------------

def read_packs():
    packs = []
    for line in open(os.path.join(HERE, 'packs.txt')):
        line = line.split('#', 1)[0].split()
        if line:
            packs.append((line[0], line[1:]))
    return packs


def restore(packs):
    with tempfile.TemporaryDirectory() as work:
        items = '\n'.join(
            f'    <PackageDownload Include="{pid}" Version="{";".join(f"[{v}]" for v in vs)}" />'
            for pid, vs in packs)
        proj = os.path.join(work, 'fetch.csproj')
        with open(proj, 'w') as f:
            f.write('<Project Sdk="Microsoft.NET.Sdk">\n  <PropertyGroup><TargetFramework>net10.0'
                    '</TargetFramework><EnableDefaultItems>false</EnableDefaultItems></PropertyGroup>\n'
                    f'  <ItemGroup>\n{items}\n  </ItemGroup>\n</Project>\n')
        subprocess.run(['dotnet', 'restore', proj, '-v', 'quiet'], check=True, stdout=sys.stderr)


def nuget_root():
    return os.environ.get('NUGET_PACKAGES') or os.path.expanduser('~/.nuget/packages')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--no-restore', action='store_true', help='use the NuGet cache as it is')
    ap.add_argument('--out', default=DATA, help='where to write builds.bin.zst and builds.tsv')
    args = ap.parse_args()
    t0 = time.time()
    packs = read_packs()
    if not args.no_restore:
        restore(packs)
    t1 = time.time()
    root = nuget_root()
    records = []
    for pid, versions in packs:
        for v in versions:
            pdir = os.path.join(root, pid.lower(), v)
            if not os.path.isdir(pdir):
                raise Fail(f'{pdir}: not restored')
            found = 0
            rid = pid.rsplit('.', 1)[1]
            native = os.path.join('runtimes', rid, 'native')
            for fname in sorted(MODULE_FILES):
                p = os.path.join(pdir, native, fname)
                if os.path.isfile(p):
                    records.append(read_module(p, MODULE_FILES[fname], pid, v, f'{native}/{fname}'))
                    found += 1
            if not found:
                raise Fail(f'{pdir}: no runtime module in {native}')
    # One entry per identity; the same identity with other bytes would make lookups ambiguous.
    by_id = {}
    for r in records:
        key = r['identity']
        if key in by_id:
            raise Fail(f'{r["package"]} {r["package_version"]} {r["path"]}: identity {key} also '
                       f'of {by_id[key]["package"]} {by_id[key]["package_version"]}')
        by_id[key] = r
    records.sort(key=lambda r: (r['kind'], tuple(int(x) for x in r['package_version'].split('.')),
                                r['package']))
    raw = encode(records)
    os.makedirs(args.out, exist_ok=True)
    zpath = os.path.join(args.out, 'builds.bin.zst')
    z = subprocess.run(['zstd', '-19', '-q', '-c'], input=raw, check=True, capture_output=True).stdout
    with open(zpath, 'wb') as f:
        f.write(z)
    with open(os.path.join(args.out, 'builds.tsv'), 'w') as f:
        f.write('# kind\tidentity\tpackage\tversion\tpath\tfile_version\tcommit\tfile_size\t'
                'image_size\tsha256\texports (name=rva)\tdescriptors (role:rva:json_bytes:'
                'pointer_data)\n')
        for r in records:
            ident = r['identity']
            ident = ident[1].hex() if ident[0] == 'elf' else f'{ident[1]:08x}/{ident[2]:x}'
            kind = {1: 'libcoreclr.so', 2: 'coreclr.dll', 3: 'singlefilehost',
                    4: 'singlefilehost.exe'}[r['kind']]
            ex = ','.join(f'{n}={r["exports"][n][0]:x}' for n in sorted(r['exports']))
            ds = ','.join(f'{ {1: "main", 2: "sub", 3: "image"}[d["role"]] }:{d["rva"]:x}:'
                          f'{d["size"]}:{d["count"]}' for d in r['descriptors'])
            f.write(f'{kind}\t{ident}\t{r["package"]}\t{r["package_version"]}\t{r["path"]}\t'
                    f'{r["file_version"]}\t{r["commit"]}\t{r["file_size"]}\t{r["image_size"]}\t'
                    f'{r["sha256"]}\t{ex}\t{ds}\n')
    t2 = time.time()
    jsons = {d['json'] for r in records for d in r['descriptors']}
    print(f'generate: {len(records)} modules, {len(jsons)} distinct descriptor JSON texts '
          f'({sum(map(len, jsons))} bytes); data {len(raw)} bytes, {len(z)} compressed '
          f'({zpath}); sha256 of the uncompressed data {hashlib.sha256(raw).hexdigest()}; '
          f'restore {t1 - t0:.1f} s, reading and writing {t2 - t1:.1f} s', file=sys.stderr)


if __name__ == '__main__':
    try:
        main()
    except Fail as e:
        sys.exit(f'generate: {e}')
