#!/usr/bin/env python3
"""contract_descriptor: whether an ELF core holds the runtime's data contract descriptor
(DotNetRuntimeContractDescriptor, exported by libcoreclr.so from .NET 9/10; what the cDAC reads)
and its sub-descriptors (.NET 11: the GC's), read from the core's own memory only (no file
fallback), as JSON.

    python3 dumps/tools/contract_descriptor.py core.dmp [--symbol-offset 0x504150]

The export's offset is taken from the libcoreclr.so at the path the core records (`nm -D`),
unless --symbol-offset gives it. Layout (dotnet/runtime docs/design/datacontracts/
contract-descriptor.md): {u64 magic "DNCCDAC\\0", u32 flags, u32 descriptor_size, char*
descriptor (JSON), u32 pointer_data_count, u32 pad, void** pointer_data}; the JSON's
`subDescriptors` name an index into pointer_data whose slot points at another descriptor.
Reports per descriptor: where, how many of its bytes (header, JSON, pointer data) are in the
core, its version/baseline, contracts with versions, and the counts of types and globals.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'dacprobe'))
from elfcore import Core  # noqa: E402


def descriptor(core, addr, depth=0):
    r = {'address': hex(addr)}
    head = core.read_partial(addr, 40) or b''
    r['header_bytes_in_core'] = len(head)
    if len(head) < 40:
        return r
    magic, flags, dsize, dptr, pcount, _pad, pptr = struct.unpack('<QIIQIIQ', head)
    r['magic'] = head[:8].decode('latin-1')
    r['flags'] = flags
    r['json_size'] = dsize
    r['pointer_data_count'] = pcount
    text = core.read_partial(dptr, dsize) or b''
    r['json_bytes_in_core'] = len(text)
    ptr_bytes = core.read_partial(pptr, 8 * pcount) or b''
    r['pointer_data_bytes_in_core'] = len(ptr_bytes)
    if len(text) < dsize:
        return r
    d = json.loads(text.decode('utf-8'))
    r['version'] = d.get('version')
    r['baseline'] = d.get('baseline')
    r['contracts'] = d.get('contracts', {})
    r['types'] = len(d.get('types', {}))
    r['globals'] = len(d.get('globals', {}))
    ptrs = struct.unpack('<%dQ' % pcount, ptr_bytes) if len(ptr_bytes) == 8 * pcount else ()
    subs = {}
    for name, v in (d.get('subDescriptors') or {}).items():
        idx = v[0] if isinstance(v, list) else v
        idx = idx[0] if isinstance(idx, list) else idx
        s = {'pointer_data_index': idx}
        if isinstance(idx, int) and idx < len(ptrs):
            slot = core.read_partial(ptrs[idx], 8) or b''
            s['slot'] = hex(ptrs[idx])
            s['slot_in_core'] = len(slot) == 8
            if len(slot) == 8:
                target = struct.unpack('<Q', slot)[0]
                s['descriptor'] = descriptor(core, target, depth + 1) if target and depth < 4 else hex(target)
        subs[name] = s
    r['sub_descriptors'] = subs
    return r


def runtime_descriptor_json(core, lib_path=None):
    """The runtime's (not a sub-) descriptor JSON as a dict, read from `core` (an elfcore.Core),
    or None when the core lacks it. For other tools (dac_extras.sh: type layouts)."""
    base = core.module_base('libcoreclr.so')
    if not base:
        return None
    lib = lib_path or core.module_path('libcoreclr.so')
    nm = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True).stdout
    hits = [ln.split()[0] for ln in nm.splitlines() if ln.split()[-1].split('@')[0] == 'DotNetRuntimeContractDescriptor']
    if not hits:
        return None
    head = core.read_partial(base + int(hits[0], 16), 40) or b''
    if len(head) < 40:
        return None
    _magic, _flags, dsize, dptr, _pc, _pad, _pp = struct.unpack('<QIIQIIQ', head)
    text = core.read_partial(dptr, dsize) or b''
    return json.loads(text.decode('utf-8')) if len(text) == dsize else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('core')
    ap.add_argument('--symbol-offset', help='the export\'s offset in libcoreclr.so (hex)')
    a = ap.parse_args()
    core = Core(a.core, file_fallback=False)
    base = core.module_base('libcoreclr.so')
    out = {'tool': 'contract_descriptor', 'core': os.path.basename(a.core),
           'libcoreclr_base': hex(base) if base else None}
    if not base:
        out['error'] = 'no libcoreclr.so mapped in the core'
        print(json.dumps(out, indent=1))
        return 1
    off = int(a.symbol_offset, 16) if a.symbol_offset else None
    if off is None:
        lib = core.module_path('libcoreclr.so')
        nm = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True).stdout
        hits = [ln.split()[0] for ln in nm.splitlines() if ln.split()[-1].split('@')[0] == 'DotNetRuntimeContractDescriptor']
        if not hits:
            out['error'] = '%s exports no DotNetRuntimeContractDescriptor' % lib
            print(json.dumps(out, indent=1))
            return 1
        off = int(hits[0], 16)
    out['symbol_offset'] = hex(off)
    out['descriptor'] = descriptor(core, base + off)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
