#!/usr/bin/env python3
"""dacroots: the runtime DAC's view of a dump's GC roots, as independent truth for
dumpshell's `gchandles`, `finalizequeue` and `gcroot`.

    python3 dumps/tools/dacroots.py --dac .../libmscordaccore.so core.dmp > X.roots.dac.json

An extension of dacprobe (--dacprobe-dir, see below): it hosts the DAC
the same way (its DataTarget and Dac classes) and asks ISOSDacInterface for
- GetHandleEnum: every handle the DAC reports (handle, type, object, secondary, strong);
- ISOSDacInterface8::GetFinalizationFillPointers(Svr) and the finalization queue entries;
- GetStackReferences per managed thread: the precise stack roots (object, address, source).
Interfaces and layouts: dotnet/runtime src/coreclr/inc/sospriv.idl and dacprivate.h
(SOSHandleData, SOSStackRefData, ISOSEnum: Skip, Reset, GetCount, then Next).
"""
import argparse
import hashlib
import json
import os
import sys
from ctypes import POINTER, Structure, byref, c_int32, c_uint32, c_uint64, c_void_p

ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
ap.add_argument('--dac', required=True)
HERE = os.path.dirname(os.path.abspath(__file__))
ap.add_argument('--dacprobe-dir',
                default=next((d for d in (os.path.join(HERE, "dacprobe"),
                                          os.path.join(HERE, '../../../shared/tools/dacprobe'))
                              if os.path.isfile(os.path.join(d, 'dacprobe.py'))), None),
                help='the folder of dacprobe.py and elfcore.py (default: dumps/tools/dacprobe, '
                     'else ../shared/tools/dacprobe beside the repository)')
ap.add_argument('--max-handles', type=int, default=1 << 20)
ap.add_argument('--no-stack-refs', action='store_true',
                help='skip GetStackReferences (the 10.0.14 DAC crashes in its enumerator on '
                     'some dumps); the output then has no stack_refs')
ap.add_argument('dump')
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.dacprobe_dir))
import dacprobe as dp  # noqa: E402
from elfcore import Core  # noqa: E402

CLRDATA_ADDRESS = c_uint64
ENUM_METHODS = ['Skip', 'Reset', 'GetCount', 'Next']
HANDLE_TYPES = {0: 'weak_short', 1: 'weak_long', 2: 'strong', 3: 'pinned', 4: 'variable',
                5: 'ref_counted', 6: 'dependent', 7: 'async_pinned', 8: 'sized_ref',
                9: 'weak_native_com'}


class SOSHandleData(Structure):
    _fields_ = [('AppDomain', CLRDATA_ADDRESS), ('Handle', CLRDATA_ADDRESS),
                ('Secondary', CLRDATA_ADDRESS), ('Type', c_uint32), ('StrongReference', c_int32),
                ('RefCount', c_uint32), ('JupiterRefCount', c_uint32), ('IsPegged', c_int32)]


class SOSStackRefData(Structure):
    _fields_ = [('HasRegisterInformation', c_int32), ('Register', c_int32), ('Offset', c_int32),
                ('Address', CLRDATA_ADDRESS), ('Object', CLRDATA_ADDRESS), ('Flags', c_uint32),
                ('SourceType', c_int32), ('Source', CLRDATA_ADDRESS),
                ('StackPointer', CLRDATA_ADDRESS)]


def drain(enum_ptr, cls, limit):
    it = dp.Iface(enum_ptr, ENUM_METHODS)
    out = []
    buf = (cls * 256)()
    while len(out) < limit:
        got = c_uint32(0)
        hr = it('Next', [c_uint32, c_void_p, POINTER(c_uint32)], 256, buf, byref(got))
        for i in range(got.value):
            # a copy: buf[i] is a view into the buffer, which the next batch overwrites
            out.append(cls.from_buffer_copy(buf[i]))
        # Stop on a failure or an empty batch, not on S_FALSE: the 11.0.0 DAC's handle
        # enumerator answers S_FALSE with a full first batch of 256 and S_OK with the rest
        # (seen on aspnethang-net11: 256 + 129 handles, then 0; before, this stopped after 256); earlier DACs answer S_FALSE
        # with their last, short batch and 0 after it, so they give the same list either way.
        if hr < 0 or got.value == 0:
            break
    dp.com_release(enum_ptr)
    return out


def main():
    core = Core(args.dump)
    rt_dirs = [os.path.dirname(os.path.abspath(args.dac))]
    # a single-file app: the runtime is the host executable (dacprobe.find_runtime_module)
    dp.RUNTIME_MODULE = dp.find_runtime_module(core)
    target = dp.DataTarget(core, rt_dirs)
    dac = dp.Dac(args.dac, target)
    sos = dac.sos
    sha = hashlib.sha256()
    with open(args.dump, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha.update(chunk)
    # dump_sha256 is the uncompressed core's, as in <name>.dac.json's dump_file.sha256: a test
    # can tell when this file no longer belongs to the committed dump.
    res = {'tool': 'dacroots', 'dump': os.path.basename(args.dump),
           'dump_sha256': sha.hexdigest(), 'errors': []}

    # Handles.
    e = c_void_p()
    hr = sos('GetHandleEnum', [POINTER(c_void_p)], byref(e))
    handles = []
    if hr >= 0 and e.value:
        for h in drain(e.value, SOSHandleData, args.max_handles):
            try:
                obj = dp.hx(core.u64(h.Handle))
            except Exception:  # noqa: BLE001 (the handle's slot is not in the dump)
                obj = None
            handles.append({'handle': dp.hx(h.Handle), 'type': HANDLE_TYPES.get(h.Type, h.Type),
                            'object': obj,
                            'secondary': dp.hx(h.Secondary), 'strong': bool(h.StrongReference),
                            'ref_count': h.RefCount})
    else:
        res['errors'].append({'where': 'GetHandleEnum', 'hr': dp.hr_str(hr)})
    res['handles'] = handles
    counts = {}
    for h in handles:
        counts[h['type']] = counts.get(h['type'], 0) + 1
    res['handle_counts'] = counts

    # Finalization queue fill pointers (workstation; server per heap).
    fq = []
    if dac.sos8 is not None:
        hr, gcd = dac.struct_call(sos, 'GetGCHeapData', dp.DacpGcHeapData)
        server = hr >= 0 and gcd.bServerMode
        heaps = [None]
        if server:
            n = gcd.HeapCount
            arr = (CLRDATA_ADDRESS * n)()
            need = c_uint32()
            sos('GetGCHeapList', [c_uint32, c_void_p, POINTER(c_uint32)], n, arr, byref(need))
            heaps = list(arr)
        for hp in heaps:
            fp = (CLRDATA_ADDRESS * 16)()
            need = c_uint32()
            if hp is None:
                hr = dac.sos8('GetFinalizationFillPointers', [c_uint32, c_void_p, POINTER(c_uint32)],
                              16, fp, byref(need))
            else:
                hr = dac.sos8('GetFinalizationFillPointersSvr',
                              [CLRDATA_ADDRESS, c_uint32, c_void_p, POINTER(c_uint32)],
                              hp, 16, fp, byref(need))
            if hr < 0:
                res['errors'].append({'where': 'GetFinalizationFillPointers', 'hr': dp.hr_str(hr)})
                continue
            fq.append({'heap': dp.hx(hp or 0), 'fill_pointers': [dp.hx(fp[i]) for i in range(need.value)]})
    res['finalization_fill_pointers'] = fq

    if args.no_stack_refs:
        json.dump(res, sys.stdout, indent=1)
        sys.stdout.write('\n')
        return
    # Precise stack roots per managed thread.
    stacks = []
    hr, ts = dac.struct_call(sos, 'GetThreadStoreData', dp.DacpThreadStoreData)
    addr = ts.firstThread if hr >= 0 else 0
    seen = set()
    while addr and addr not in seen:
        seen.add(addr)
        hr, td = dac.struct_call(sos, 'GetThreadData', dp.DacpThreadData, addr)
        if hr < 0:
            break
        if td.osThreadId:
            e = c_void_p()
            hr2 = sos('GetStackReferences', [c_uint32, POINTER(c_void_p)], td.osThreadId, byref(e))
            refs = []
            if hr2 >= 0 and e.value:
                for r in drain(e.value, SOSStackRefData, 100000):
                    refs.append({'address': dp.hx(r.Address), 'object': dp.hx(r.Object),
                                 'flags': r.Flags, 'register': r.Register if r.HasRegisterInformation else None,
                                 'source_type': r.SourceType, 'source': dp.hx(r.Source),
                                 'sp': dp.hx(r.StackPointer)})
            else:
                res['errors'].append({'where': 'GetStackReferences', 'os_id': td.osThreadId,
                                      'hr': dp.hr_str(hr2)})
            stacks.append({'os_id': td.osThreadId, 'managed_id': td.corThreadId, 'refs': refs})
        addr = td.nextThread
    res['stack_refs'] = stacks
    json.dump(res, sys.stdout, indent=1)
    sys.stdout.write('\n')


main()
