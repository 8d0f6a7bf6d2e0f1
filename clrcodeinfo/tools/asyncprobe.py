#!/usr/bin/env python3
"""asyncprobe: the runtime-async continuations of a .NET 11 dump, with the debug info of the
methods they resume, as test data for clrcodeinfo's async suspension points.

    python3 asyncprobe.py --dac <11.0.0 libmscordaccore.so> --dac-json <name>.dac.json \
        --name <name> --out tests/data/<name>.async.json core.dmp

A continuation (System.Runtime.CompilerServices.Continuation, .NET 11: AsyncHelpers.CoreCLR.cs)
holds `Next`, `ResumeInfo` (a native AsyncResumeInfo {Resume, DiagnosticIP}), `Flags` and
`State`. The JIT makes one subclass per locals layout (`Continuation_<size>_...`, no metadata),
so instances are found here by their MethodTables (the DAC's heap census in <name>.dac.json,
types named `Continuation_*`) scanned for in the dump's memory, and kept only when
ResumeInfo->DiagnosticIP is managed code (ISOSDacInterface::GetCodeHeaderData). The field
offsets are the managed layout of the class (refs first: Next at +8; then the pointer
ResumeInfo at +0x10; then Flags and State, ints, at +0x18 and +0x1c) and are checked per
object: Next is null or another object, ResumeInfo points at {Resume, DiagnosticIP}.

Truth recorded per continuation: its type name, State, DiagnosticIP's offset in its method, the
method's start, its first 128 bytes and the text of every System.String they point to; per
method its debug info blob (RealCodeHeader::phdrDebugInfo); and the scenario manifest's
`hoisted` arguments and locals (what the program knows it left in each suspended method).
"""
import argparse
import base64
import json
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
    ap.add_argument('--dac', required=True)
    ap.add_argument('--dac-json', required=True)
    ap.add_argument('--name', required=True)
    ap.add_argument('--manifest', default=None,
                    help="the scenario's manifest: its `hoisted` values are copied as truth")
    ap.add_argument('--out', required=True)
    ap.add_argument('core')
    args = ap.parse_args()
    census = json.load(open(args.dac_json))['heap_stat']['types']
    mts = {int(t['mt'], 16): t['type'] for t in census if t['type'].startswith('Continuation_')}

    core = codeprobe.Core(args.core, file_fallback=True)
    codeprobe.dacprobe.RUNTIME_MODULE = codeprobe.dacprobe.find_runtime_module(core)
    rt_dirs = [os.path.dirname(os.path.abspath(args.dac))]
    target = codeprobe.DataTarget(core, rt_dirs)
    dac = codeprobe.Dac(args.dac, target)

    hr, ug = dac.struct_call(dac.sos, 'GetUsefulGlobals', codeprobe.dacprobe.DacpUsefulGlobalsData)
    string_mt = ug.StringMethodTable if hr >= 0 else None

    def string_at(a):
        """The text of the System.String at a, or None."""
        if not a or a % 8 or core.u64(a) != string_mt:
            return None
        n = core.u32(a + 8)
        if n is None or n > 4096:
            return None
        b = core.read(a + 12, 2 * n)
        return None if b is None else b.decode('utf-16-le', 'replace')

    objs = []
    for va, msz, off, fsz in core.loads:
        data = core.m[off:off + fsz]
        for mt, tname in mts.items():
            pat = struct.pack('<Q', mt)
            i = data.find(pat)
            while i >= 0:
                if i % 8 == 0:
                    objs.append((va + i, mt, tname))
                i = data.find(pat, i + 1)
    conts = []
    methods = {}
    for addr, mt, tname in sorted(objs):
        nxt = core.u64(addr + 8)
        resume_info = core.u64(addr + 0x10)
        raw = core.read(addr + 0x18, 8)
        if resume_info is None or raw is None:
            continue
        flags, state = struct.unpack('<iI', raw)
        diag = core.u64(resume_info + 8) if resume_info else None
        if not diag:
            continue
        ch = DacpCodeHeaderData()
        hr = dac.sos('GetCodeHeaderData', [CLRDATA_ADDRESS, POINTER(DacpCodeHeaderData)], diag, byref(ch))
        if hr < 0 or not ch.MethodStart:
            continue
        if nxt and core.u64(nxt) is None:
            continue
        key = hx(ch.MethodStart)
        if key not in methods:
            name, _ = dac.wname('GetMethodDescName', ch.MethodDescPtr)
            m = {'name': name, 'start': key, 'size': ch.MethodSize, 'jit_type': ch.JITType}
            if ch.JITType == 1:
                hdr = core.u64(ch.MethodStart - 8)
                dbg = core.u64(hdr)
                blob = codeprobe.read_avail(core, dbg, 4096)
                n = make_testdata.debug_info_extent(blob, 'net11')
                m['debug_info'] = {'format': 'net11', 'address': hx(dbg), 'hex': blob[:n].hex(),
                                   'extent': "the header's sizes"}
            methods[key] = m
        body = codeprobe.read_avail(core, addr, 128)
        strings = {}
        for o in range(8, len(body) - 7, 8):
            v = struct.unpack_from('<Q', body, o)[0]
            t = string_at(v)
            if t is not None:
                strings[hx(v)] = t
        conts.append({'object': hx(addr), 'type': tname, 'state': state, 'flags': flags,
                      'diagnostic_ip_offset': diag - ch.MethodStart, 'method_start': key,
                      'bytes': body.hex(), 'strings': strings})
    out = {'dump': args.name, 'made_by': 'clrcodeinfo/tools/asyncprobe.py',
           'continuations': conts, 'methods': sorted(methods.values(), key=lambda m: m['start'])}
    if args.manifest:
        out['manifest_hoisted'] = json.load(open(args.manifest)).get('hoisted')
    make_testdata.write_json(args.out, out)


if __name__ == '__main__':
    main()
