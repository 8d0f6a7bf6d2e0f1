#!/usr/bin/env python3
"""sweep: GC info of methods spread over System.Private.CoreLib's ReadyToRun code (not only
those on stacks), with SOS's gcinfo text and the DAC's code header as truth.

    python3 sweep.py --name <family> --runtime <version> --dac <libmscordaccore.so> \
        --image-dir <pack>/runtimes/linux-x64 --count 150 --out tests/data/sweep/<name>.json core

Takes `count` RUNTIME_FUNCTIONs evenly spread over CoreLib's table (readytorun.h section 102),
keeps those that begin a method (ISOSDacInterface::GetCodeHeaderData: MethodStart is the
entry's address; funclets and cold parts are dropped; the DAC reads the image pages the dump
lacks from the pack's file of the same build, codeprobe.alias_images), and records per method
its start, the DAC's method size and GC info address, 512 bytes from there, and SOS's
`gcinfo <start>` text (make_testdata.sos_gcinfo); methods SOS cannot print (their pages are
not in the dump) are dropped.
"""
import argparse
import os
import struct
import sys
from ctypes import POINTER, byref

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import codeprobe  # noqa: E402
import make_testdata  # noqa: E402
from codeprobe import CLRDATA_ADDRESS, DacpCodeHeaderData, hx  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--name', required=True)
    ap.add_argument('--runtime', required=True)
    ap.add_argument('--dac', required=True)
    ap.add_argument('--image-dir', action='append', default=[])
    ap.add_argument('--count', type=int, default=150)
    ap.add_argument('--keep', type=int, default=120)
    ap.add_argument('--dotnet-dump', default=os.path.expanduser('~/.dotnet/tools/dotnet-dump'))
    ap.add_argument('--out', required=True)
    ap.add_argument('core')
    args = ap.parse_args()
    core = codeprobe.Core(args.core, file_fallback=True)
    codeprobe.alias_images(core, args.image_dir)
    codeprobe.dacprobe.RUNTIME_MODULE = codeprobe.dacprobe.find_runtime_module(core)
    target = codeprobe.DataTarget(core, [os.path.dirname(os.path.abspath(args.dac))])
    dac = codeprobe.Dac(args.dac, target)

    # CoreLib's image: of the mappings of its file offset 0 (the runtime also maps the file
    # flat), the one whose sections follow at their RVAs (the image layout).
    path = next(n for s, e, o, n in core.files if n.endswith('/System.Private.CoreLib.dll'))
    img = codeprobe.Image(core, 0, os.path.basename(path), args.image_dir)
    maps = {(s, o) for s, e, o, n in core.files if n == path}
    base = None
    for s, o in sorted(maps):
        h = core.read(s, 4096)
        if o != 0 or not h or h[:2] != b'MZ':
            continue
        va, sz, rp = codeprobe.Image._pe_sections(h)[0]
        if (s + (va & ~0xFFF), rp & ~0xFFF) in maps:
            base = s
            break
    img.base = base
    pe = img.u32(0x3c)
    magic = struct.unpack('<H', img.read(pe + 24, 2)[0])[0]
    dd = pe + 24 + (112 if magic == 0x20b else 96)
    hdr = img.u32(img.u32(dd + 14 * 8) + 0x40)
    _, major, minor, _, nsec = struct.unpack('<IHHII', img.read(hdr, 16)[0])
    secs = {}
    for i in range(nsec):
        t, rva, size = struct.unpack('<III', img.read(hdr + 16 + 12 * i, 12)[0])
        secs[t] = (rva, size)
    rf, rf_size = secs[102]
    n = rf_size // 12
    step = max(1, n // args.count)
    methods = []
    for i in range(0, n, step):
        begin = img.u32(rf + 12 * i)
        addr = base + begin
        ch = DacpCodeHeaderData()
        hr = dac.sos('GetCodeHeaderData', [CLRDATA_ADDRESS, POINTER(DacpCodeHeaderData)], addr, byref(ch))
        if hr < 0 or ch.MethodStart != addr or not ch.GCInfo:
            continue
        gc, src = img.read(ch.GCInfo - base, 512)
        if gc is None:
            continue
        name, _ = dac.wname('GetMethodDescName', ch.MethodDescPtr)
        methods.append({'name': name, 'start': hx(addr), 'size': ch.MethodSize, 'code': 'r2r',
                        'gc_info': {'version': 3 if major < 11 else (4 if major < 21 else 5),
                                    'address': hx(ch.GCInfo), 'hex': gc.hex()},
                        'gc_info_extent': 'the first 512 bytes at the address'})
    texts, version = make_testdata.sos_gcinfo(args.core, [m['start'] for m in methods],
                                              os.path.dirname(args.dac), args.dotnet_dump)
    for m in methods:
        m['sos_gcinfo'] = texts.get(m['start'])
    # SOS reads only the image pages the dump holds (its DAC finds no method elsewhere: "not a
    # valid MethodDesc"); only methods it printed are kept.
    methods = [m for m in methods if m['sos_gcinfo']]
    # At most `--keep`: every method whose GC info has a rarer feature (GS cookie, generics
    # context, pinned or interior slots, PSPSym, fully interruptible ranges), then evenly.
    def rare(m):
        t = m['sos_gcinfo']
        return ('GS cookie: caller' in t or 'GenericInst slot: caller' in t or '(pinned)' in t
                or 'PSPSym: initial' in t or 'Varargs: 1' in t)
    if len(methods) > args.keep:
        first = [m for m in methods if rare(m)][:args.keep // 2]
        rest = [m for m in methods if m not in first]
        step = max(1, len(rest) // (args.keep - len(first)))
        methods = sorted(first + rest[::step][:args.keep - len(first)], key=lambda m: m['start'])
    out = {'dump': args.name, 'runtime': args.runtime, 'r2r_version': [major, minor],
           'made_by': 'clrcodeinfo/tools/sweep.py', 'sos_eeversion': version,
           'methods': methods, 'frames': []}
    make_testdata.write_json(args.out, out)


if __name__ == '__main__':
    main()
