#!/usr/bin/env python3
"""pdbmatch.py <core> <dll name> <pdb>...: does a portable PDB belong to the dll a core holds?

Reads the dll's PE headers and debug directory from the core's own memory (no file fallback: the
module's mapping at file offset 0 is its image base, as createdump and the runtime map it), takes
its CodeView entry (RSDS: GUID, age, PDB path) and that entry's TimeDateStamp, and compares them
with each PDB's id (the first 20 bytes of its #Pdb stream: the GUID, then the stamp; Portable PDB
spec, "#Pdb stream").  Prints one JSON object: the dll's base, the CodeView entry, and per PDB its
id and whether it matches.  Exit status 0 when exactly one PDB matches, 1 otherwise.

Standard library only (and tools/dacprobe/elfcore.py, tools/pdbkey.py beside it).
"""
import json
import os
import struct
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, 'dacprobe'))
import elfcore  # noqa: E402
import pdbkey  # noqa: E402


def codeview(core, base):
    """(guid bytes, stamp, age, path, major, minor, how) of the image at base, from the core's
    memory.  The runtime maps an IL-only assembly flat (a copy of the file: data at its file
    offset) and a ReadyToRun one as an image (data at its RVA): both are tried, each checked by
    the RSDS signature."""
    rd = lambda a, n: core.read(a, n)  # noqa: E731
    mz = rd(base, 0x40)
    if mz is None or mz[:2] != b'MZ':
        raise ValueError('no MZ header at %#x in the core' % base)
    pe = base + struct.unpack_from('<I', mz, 0x3c)[0]
    hdr = rd(pe, 24)
    if hdr is None or hdr[:4] != b'PE\0\0':
        raise ValueError('no PE header at %#x in the core' % pe)
    nsec, = struct.unpack_from('<H', hdr, 6)
    optsize, = struct.unpack_from('<H', hdr, 20)
    opt = pe + 24
    magic = struct.unpack('<H', rd(opt, 2))[0]
    dd = opt + (112 if magic == 0x20b else 96)
    dbg_rva, dbg_size = struct.unpack('<II', rd(dd + 6 * 8, 8))
    if not dbg_rva:
        raise ValueError('no debug directory')
    secs = []
    raw = rd(opt + optsize, 40 * nsec) or b''
    for i in range(len(raw) // 40):
        vsize, va, rawsize, rawptr = struct.unpack_from('<IIII', raw, 40 * i + 8)
        secs.append((va, max(vsize, rawsize), rawptr))

    def offset(rva):
        for va, size, ptr in secs:
            if va <= rva < va + size:
                return rva - va + ptr
        return rva

    missing = []
    for how, at in (('image (RVA)', lambda rva: base + rva), ('flat (file offset)', lambda rva: base + offset(rva))):
        entries = rd(at(dbg_rva), dbg_size)
        if entries is None:
            missing.append(how)
            continue
        for i in range(dbg_size // 28):
            ch, stamp, major, minor, typ, size, rva, ptr = struct.unpack_from('<IIHHIIII', entries, 28 * i)
            if typ != 2:    # IMAGE_DEBUG_TYPE_CODEVIEW
                continue
            data = rd(at(rva), size)
            if data is None or data[:4] != b'RSDS':
                continue
            guid = data[4:20]
            age = struct.unpack_from('<I', data, 20)[0]
            path = data[24:].split(b'\0')[0].decode('utf-8', 'replace')
            return guid, stamp, age, path, major, minor, how
    raise ValueError('no CodeView entry readable from the core (debug directory at rva %#x; not in the core as: %s)'
                     % (dbg_rva, ', '.join(missing) or 'none'))


def scan_rsds(core, dll):
    """The RSDS records naming <dll stem>.pdb anywhere in the dll's own mappings in the core
    (when its debug directory entry is not there, the CodeView data may still be): GUID, age, path."""
    import re
    stem = os.path.splitext(dll)[0].encode()
    pat = re.compile(rb'RSDS(.{16})(.{4})([^\0]*/' + re.escape(stem) + rb'\.pdb)\0', re.S)
    found = set()
    for st, en, off, name in core.files:
        if os.path.basename(name).lower() != dll.lower():
            continue
        data = core.read_partial(st, en - st)
        for x in pat.finditer(data):
            found.add((x.group(1), struct.unpack('<I', x.group(2))[0], x.group(3).decode('utf-8', 'replace')))
    return sorted(found)


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    core = elfcore.Core(sys.argv[1], file_fallback=False)
    dll = sys.argv[2]
    base = core.module_base(dll)
    if base is None:
        print('pdbmatch.py: no mapping of %s in the core' % dll, file=sys.stderr)
        return 1
    out = {'core': os.path.basename(sys.argv[1]), 'dll': dll, 'base': hex(base),
           'module_path': core.module_path(dll), 'pdbs': []}
    try:
        guid, stamp, age, path, major, minor, how = codeview(core, base)
        out['codeview'] = {'guid': str(uuid.UUID(bytes_le=guid)), 'stamp': '%08x' % stamp, 'age': age,
                           'path': path, 'version': '%d.%d' % (major, minor), 'layout': how,
                           'pdb_id': (guid + struct.pack('<I', stamp)).hex()}
        want = [(guid, struct.pack('<I', stamp))]
    except ValueError as e:
        # no debug directory entry in the core: the RSDS data alone (GUID; no stamp to compare)
        recs = scan_rsds(core, dll)
        out['codeview'] = {'debug_directory': str(e),
                           'rsds_found_in_mappings': [{'guid': str(uuid.UUID(bytes_le=g)), 'age': a, 'path': p}
                                                      for g, a, p in recs]}
        want = [(g, None) for g, a, p in recs]
    matches = 0
    for p in sys.argv[3:]:
        with open(p, 'rb') as f:
            i = pdbkey.pdb_id(f.read())
        ok = any(i[:16] == g and (st is None or i[16:20] == st) for g, st in want)
        matches += ok
        out['pdbs'].append({'pdb': p, 'id': i.hex(), 'key': uuid.UUID(bytes_le=bytes(i[:16])).hex + 'FFFFFFFF',
                            'matches': ok, 'compared': 'guid' if want and want[0][1] is None else 'guid+stamp'})
    print(json.dumps(out, indent=1))
    return 0 if matches == 1 else 1


if __name__ == '__main__':
    sys.exit(main())
