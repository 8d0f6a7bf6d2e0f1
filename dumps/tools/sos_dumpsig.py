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
import os
import re

import sosrun
from metadata_fields import Metadata


def comp(b, i):
    """ECMA-335 compressed unsigned integer at b[i]: (value, length)."""
    x = b[i]
    if x & 0x80 == 0:
        return x, 1
    if x & 0xC0 == 0x80:
        return ((x & 0x3F) << 8) | b[i + 1], 2
    return ((x & 0x1F) << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3], 4


def pick(md, table, tests):
    """For each (label, test) the first signature blob of `table` (in row order) whose bytes
    pass: (label, offset of the signature from the metadata root, its bytes)."""
    out = []
    for label, test in tests:
        for r in range(1, md.count(table) + 1):
            i = md.row(table, r)['Signature']
            o = md.streams['#Blob'][0] + i
            n, pl = comp(md.b, o)
            sig = md.b[o + pl:o + pl + n]
            if sig and test(sig):
                out.append((label, o + pl - md.root, sig))
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
    for name, d in sosrun.each_dump(__doc__):
        mods = d.run(['clrmodules -v'])
        m = re.search(r'System\.Private\.CoreLib\.dll\n(?:    .*\n)*?    ModuleAddress:\s+([0-9A-F]+)\n'
                      r'(?:    .*\n)*?    MetadataAddress:\s+([0-9A-F]+)', mods)
        module, md_addr = int(m.group(1), 16), int(m.group(2), 16)
        major = d.manifest['runtime']['version'].split('.')[0]
        lib = os.path.join(os.path.dirname(d.pack), 'lib', f'net{major}.0',
                           'System.Private.CoreLib.dll')
        md = Metadata(lib)
        cmds, notes = [], []
        for label, o, sig in pick(md, 'MethodDef', METHODS):
            cmds.append(f'dumpsig {md_addr + o:x} {module:x}')
            notes.append(f'# {label}: {sig.hex()}')
            # the first parameter: after the calling convention, generic count, parameter
            # count and the return type (a one-byte return type only).
            p = 1 + (comp(sig, 1)[1] if sig[0] & 0x10 else 0)
            p += comp(sig, p)[1]
            if sig[p] in (0x01, 0x02, 0x08, 0x0e, 0x1c):
                cmds.append(f'dumpsigelem {md_addr + o + p + 1:x} {module:x}')
                notes.append(f'# its first parameter')
        for label, o, sig in pick(md, 'Field', FIELDS):
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
