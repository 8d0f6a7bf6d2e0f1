#!/usr/bin/env python3
"""sos_dumpsig.py: records SOS's dumpsig and dumpsigelem on corpus dumps (dumps/NAME.sos-dumpsig.txt).

    python3 dumps/tools/sos_dumpsig.py [--core-dir DIR] NAME...

The signatures are real ones: System.Private.CoreLib's MethodDef and Field signature blobs in the
dump's memory. SOS's `clrmodules -v` gives CoreLib's Module and MetadataAddress; the metadata
tables are read from the same file in the build's runtime pack (lib/net<N>.0), whose blob heap
is at the same offset from the metadata's start: a signature's address is MetadataAddress + the
#Blob stream's offset + the row's blob index + the length prefix. Chosen by their bytes (first
matches in row order): generic methods, instance methods of a generic type (VAR), methods with
generic instantiations, by-ref and array parameters; fields of a generic instantiation, a
class, a value type, an array and a primitive type. Each is recorded as `dumpsig <addr>
<module>`; each field's type also as `dumpsigelem <addr+1> <module>`, and each method's first
parameter's position as `dumpsigelem`. One session per dump (sosrun.Dump.run_split, cut at the
"""
import argparse
import os
import re
import struct

import sosrun


def comp(b, i):
    """ECMA-335 compressed unsigned integer at b[i]: (value, length)."""
    x = b[i]
    if x & 0x80 == 0:
        return x, 1
    if x & 0xC0 == 0x80:
        return ((x & 0x3F) << 8) | b[i + 1], 2
    return ((x & 0x1F) << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3], 4


def metadata_of(pe):
    pe_off = struct.unpack_from('<I', pe, 0x3C)[0]
    nsec = struct.unpack_from('<H', pe, pe_off + 6)[0]
    opt = pe_off + 24
    magic = struct.unpack_from('<H', pe, opt)[0]
    dd = opt + (112 if magic == 0x20B else 96)
    cli_rva = struct.unpack_from('<I', pe, dd + 14 * 8)[0]
    secs = pe_off + 24 + struct.unpack_from('<H', pe, pe_off + 20)[0]

    def off(rva):
        for s in range(nsec):
            h = secs + 40 * s
            vsize, va, rsize, raw = struct.unpack_from('<IIII', pe, h + 8)
            if va <= rva < va + max(vsize, rsize):
                return rva - va + raw
        raise ValueError(f'rva {rva:#x}')
    md_rva, md_size = struct.unpack_from('<II', pe, off(cli_rva) + 8)
    return pe[off(md_rva):off(md_rva) + md_size]


def tables(md):
    assert md[:4] == b'BSJB'
    vlen = struct.unpack_from('<I', md, 12)[0]
    p = 16 + vlen + 2
    n = struct.unpack_from('<H', md, p)[0]
    p += 2
    streams = {}
    for _ in range(n):
        o, size = struct.unpack_from('<II', md, p)
        p += 8
        e = md.index(b'\0', p)
        name = md[p:e].decode()
        p = (e + 4) & ~3
        streams[name] = (o, size)
    t = streams['#~'][0]
    heap_sizes = md[t + 6]
    valid = struct.unpack_from('<Q', md, t + 8)[0]
    rows = {}
    q = t + 24
    for i in range(64):
        if valid >> i & 1:
            rows[i] = struct.unpack_from('<I', md, q)[0]
            q += 4
    sidx = 4 if heap_sizes & 1 else 2
    gidx = 4 if heap_sizes & 2 else 2
    bidx = 4 if heap_sizes & 4 else 2

    def simple(tid):
        return 2 if rows.get(tid, 0) < 0x10000 else 4

    def coded(tids, bits):
        return 2 if max(rows.get(x, 0) for x in tids) < (1 << (16 - bits)) else 4
    rs = coded([0x00, 0x1A, 0x23, 0x01], 2)
    tdor = coded([0x02, 0x01, 0x1B], 2)
    sizes = {
        0x00: 2 + sidx + 3 * gidx,
        0x01: rs + 2 * sidx,
        0x02: 4 + 2 * sidx + tdor + simple(0x04) + simple(0x06),
        0x03: simple(0x04),
        0x04: 2 + sidx + bidx,
        0x05: simple(0x06),
        0x06: 4 + 2 + 2 + sidx + bidx + simple(0x08),
    }
    start = {}
    for tid in range(0x07):
        start[tid] = q
        q += sizes[tid] * rows.get(tid, 0)

    def blob_col(tid, col_off):
        out = []
        for r in range(rows.get(tid, 0)):
            a = start[tid] + sizes[tid] * r + col_off
            out.append(struct.unpack_from('<I' if bidx == 4 else '<H', md, a)[0])
        return out
    fields = blob_col(0x04, 2 + sidx)
    methods = blob_col(0x06, 8 + sidx)
    return streams['#Blob'][0], fields, methods


def pick(md, blob_off, idxs, tests):
    """For each (label, test) the first blob (in row order) whose bytes pass: (label, offset
    of the signature in the metadata, its bytes)."""
    out = []
    for label, test in tests:
        for i in idxs:
            n, pl = comp(md, blob_off + i)
            sig = md[blob_off + i + pl:blob_off + i + pl + n]
            if sig and test(sig):
                out.append((label, blob_off + i + pl, sig))
                break
    return out


METHODS = [
    ('generic method with a generic instantiation', lambda s: s[0] & 0x10 and 0x15 in s[1:]),
    ('instance method with a VAR parameter', lambda s: s[0] == 0x20 and 0x13 in s[3:]),
    ('static method with a by-ref parameter', lambda s: s[0] == 0 and 0x10 in s[3:]),
    ('instance method with an SZARRAY parameter', lambda s: s[0] == 0x20 and 0x1d in s[3:]),
    ('static method with a class and a value type', lambda s: s[0] == 0 and 0x12 in s[2:] and 0x11 in s[2:]),
    ('generic method with an MVAR and no instantiation', lambda s: s[0] & 0x10 and 0x1e in s[3:] and 0x15 not in s),
]
FIELDS = [
    ('field of a generic instantiation', lambda s: s[1] == 0x15),
    ('field of a class', lambda s: s[1] == 0x12),
    ('field of a value type', lambda s: s[1] == 0x11),
    ('field of an array', lambda s: s[1] == 0x1d),
    ('field of a primitive type', lambda s: len(s) == 2 and s[1] == 0x08),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('names', nargs='+')
    ap.add_argument('--core-dir')
    a = ap.parse_args()
    for name in a.names:
        core = os.path.join(a.core_dir, f'{name}.dmp') if a.core_dir else None
        with sosrun.Dump(name, core) as d:
            mods = d.run(['clrmodules -v'])
            m = re.search(r'System\.Private\.CoreLib\.dll\n(?:    .*\n)*?    ModuleAddress:\s+([0-9A-F]+)\n'
                          r'(?:    .*\n)*?    MetadataAddress:\s+([0-9A-F]+)', mods)
            module, md_addr = int(m.group(1), 16), int(m.group(2), 16)
            major = d.manifest['runtime']['version'].split('.')[0]
            lib = os.path.join(os.path.dirname(d.pack), 'lib', f'net{major}.0',
                               'System.Private.CoreLib.dll')
            md = metadata_of(open(lib, 'rb').read())
            blob_off, fields, methods = tables(md)
            cmds, notes = [], []
            for label, o, sig in pick(md, blob_off, methods, METHODS):
                cmds.append(f'dumpsig {md_addr + o:x} {module:x}')
                notes.append(f'# {label}: {sig.hex()}')
                # the first parameter: after the calling convention, generic count, parameter
                # count and the return type (a one-byte return type only).
                p = 1 + (comp(sig, 1)[1] if sig[0] & 0x10 else 0)
                p += comp(sig, p)[1]
                if sig[p] in (0x01, 0x02, 0x08, 0x0e, 0x1c):
                    cmds.append(f'dumpsigelem {md_addr + o + p + 1:x} {module:x}')
                    notes.append(f'# its first parameter')
            for label, o, sig in pick(md, blob_off, fields, FIELDS):
                cmds.append(f'dumpsig {md_addr + o:x} {module:x}')
                notes.append(f'# {label}: {sig.hex()}')
                cmds.append(f'dumpsigelem {md_addr + o + 1:x} {module:x}')
                notes.append('# its type')
            parts = [d.run([c]) for c in cmds]
            out = d.header('SOS dumpsig and dumpsigelem of CoreLib signatures '
                           '(dumps/tools/sos_dumpsig.py)')
            for c, n, p in zip(cmds, notes, parts):
                out += [f'### {c}', n, p.rstrip('\n')]
            sosrun.write(os.path.join(sosrun.DUMPS, f'{name}.sos-dumpsig.txt'), out)
            print(name, len(cmds), 'commands')


if __name__ == '__main__':
    main()
