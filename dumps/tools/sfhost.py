#!/usr/bin/env python3
"""sfhost.py <core> [<host file>]: what a core holds of a single-file app's host executable.

A single-file app's runtime (coreclr) is linked into its host executable, which also carries the
bundle (the assemblies, mapped by the runtime from the file at their offsets).  A reader of the
dump finds the runtime by the host's exports (DotNetRuntimeInfo, g_dacTable; .NET 9+ also
DotNetRuntimeContractDescriptor) and reads its globals from the host's .data/.bss, so what matters
is which of the host's pieces the dump writer saved.  This reports, from the core's own memory
(no file fallback), against the host file (default: the path the core's NT_FILE note records):

  host       path, base (the mapping at file offset 0), ELF image extent, file size
  sections   every allocated section of the host: address, size, bytes the core holds, and for
             the sections the process never writes (not SHF_WRITE) whether those bytes equal
             the file's
  symbols    the exports above: address, size, whether the core holds them
  bundle     the host's mappings past its ELF image (bundled files mapped by the runtime): count,
             bytes mapped, bytes the core holds

Prints JSON.  Standard library only (and tools/dacprobe/elfcore.py).
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'dacprobe'))
import elfcore  # noqa: E402
import dacprobe  # noqa: E402

SYMBOLS = ('DotNetRuntimeInfo', 'g_dacTable', 'DotNetRuntimeContractDescriptor', 'DotNetRuntimeDebugHeader')


def elf_sections(data):
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    secs = []
    for i in range(shnum):
        secs.append(struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize))
    strtab = secs[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    out = []
    for name, typ, flags, addr, off, size, link, info, align, entsize in secs:
        n = names[name:names.index(b'\0', name)].decode()
        out.append({'name': n, 'type': typ, 'flags': flags, 'addr': addr, 'offset': off, 'size': size,
                    'link': link, 'entsize': entsize})
    return out


def dynsyms(data, secs):
    out = {}
    for s in secs:
        if s['name'] != '.dynsym':
            continue
        strs = secs[s['link']]
        for i in range(s['size'] // 24):
            st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from('<IBBHQQ', data, s['offset'] + 24 * i)
            start = strs['offset'] + st_name
            n = data[start:data.index(b'\0', start)].decode('utf-8', 'replace')
            if n in SYMBOLS:
                out[n] = (st_value, st_size)
    return out


def held(core, addr, size):
    """Bytes of [addr, addr+size) the core holds (PT_LOAD data)."""
    got = 0
    a, end = addr, addr + size
    while a < end:
        d = core._core_read(a, min(end - a, 1 << 20))
        if d:
            got += len(d)
            a += len(d)
        else:
            a = (a // 4096 + 1) * 4096
    return got


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    core = elfcore.Core(sys.argv[1], file_fallback=False)
    module = dacprobe.find_runtime_module(core)
    path = sys.argv[2] if len(sys.argv) > 2 else core.module_path(module)
    recorded = core.module_path(module) or core.module_path(os.path.basename(path))
    with open(path, 'rb') as f:
        data = f.read()
    base = core.module_base(os.path.basename(recorded))
    secs = elf_sections(data)
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    image_end = 0
    for i in range(phnum):
        t, fl, off, va, pa, fsz, msz, al = struct.unpack_from('<IIQQQQQQ', data, phoff + i * phentsize)
        if t == 1:
            image_end = max(image_end, off + fsz)
    out = {'core': os.path.basename(sys.argv[1]), 'runtime_module': module,
           'host': {'path': recorded, 'file': path, 'base': hex(base), 'elf_image_bytes': image_end,
                    'file_size': len(data)},
           'sections': [], 'symbols': {}, 'bundle': {}}
    for s in secs:
        if not (s['flags'] & 2) or not s['size']:      # SHF_ALLOC
            continue
        a = base + s['addr']
        h = held(core, a, s['size'])
        row = {'name': s['name'], 'addr': hex(a), 'size': s['size'], 'in_core': h,
               'writable': bool(s['flags'] & 1)}
        if h and not (s['flags'] & 1) and s['type'] != 8:     # not SHF_WRITE, not NOBITS
            mem = core._core_read(a, s['size'])
            if len(mem) == s['size']:
                row['equals_file'] = mem == data[s['offset']:s['offset'] + s['size']]
        out['sections'].append(row)
    for n, (v, sz) in sorted(dynsyms(data, secs).items()):
        a = base + v
        out['symbols'][n] = {'addr': hex(a), 'size': sz, 'in_core': held(core, a, max(sz, 8))}
    maps = [(st, en, off) for st, en, off, n in core.files if n == recorded and off >= image_end]
    out['bundle'] = {'mappings': len(maps), 'bytes_mapped': sum(en - st for st, en, off in maps),
                     'bytes_in_core': sum(held(core, st, en - st) for st, en, off in maps)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
