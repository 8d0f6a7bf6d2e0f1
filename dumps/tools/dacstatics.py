#!/usr/bin/env python3
"""dacstatics: the runtime DAC's statics of every loaded type, as independent truth for
dumpshell's statics on .NET 9 and later (per-type statics, thread statics in ThreadLocalData).

    python3 dumps/tools/dacstatics.py --dac .../libmscordaccore.so core.dmp > X.statics.dac.json

An extension of dacprobe (--dacprobe-dir), hosting the DAC as the other tools do (dachost.py). It
walks the modules of every assembly of the app domain (GetAppDomainStoreData,
GetAppDomainList, GetAssemblyList, GetAssemblyModuleList) and each module's TypeDef map
(TraverseModuleMap TYPEDEFTOMETHODTABLE): every loaded MethodTable of a TypeDef. For each one
that has statics (GetMethodTableFieldData: wNumStaticFields > 0) it records
- its name (GetMethodTableName), token and module;
- ISOSDacInterface14 (sospriv.idl, .NET 9+): GetMethodTableInitializationFlags (1 initialized,
  2 failed), GetStaticBaseAddress (non-GC and GC bases), and for a type with thread statics
  GetThreadStaticBaseAddress on every thread (the bases of threads where both are 0 are left
  out);
- its static FieldDescs (GetFieldDescData along NextField): token, CorElementType, offset and
  whether thread-static.
Generic instantiations are not in the TypeDef map: they are not listed.
"""
import json
import os
import sys
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_int32, c_uint16, c_uint32, c_uint64,
                    c_void_p)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dachost  # noqa: E402

ap = dachost.arg_parser(__doc__)
args, dp, Core = dachost.parse(ap)

A = c_uint64
# sospriv.idl: ISOSDacInterface14 {GetStaticBaseAddress, GetThreadStaticBaseAddress,
# GetMethodTableInitializationFlags}.
IID_SOS14 = dp.GUID.from_str('9aa22aca-6dc6-4a0c-b4e0-70d2416b9837')
SOS14_METHODS = ['GetStaticBaseAddress', 'GetThreadStaticBaseAddress',
                 'GetMethodTableInitializationFlags']
TYPEDEFTOMETHODTABLE = 0
MODULEMAPTRAVERSE = CFUNCTYPE(None, c_uint32, A, c_void_p)


class DacpAppDomainStoreData(Structure):
    _fields_ = [('sharedDomain', A), ('systemDomain', A), ('DomainCount', c_int32)]


class DacpMethodTableFieldData(Structure):
    _fields_ = [('wNumInstanceFields', c_uint16), ('wNumStaticFields', c_uint16),
                ('wNumThreadStaticFields', c_uint16), ('FirstField', A),
                ('wContextStaticOffset', c_uint16), ('wContextStaticsSize', c_uint16)]


class DacpFieldDescData(Structure):
    _fields_ = [('Type', c_int32), ('sigType', c_int32), ('MTOfType', A), ('ModuleOfType', A),
                ('TokenOfType', c_uint32), ('mb', c_uint32), ('MTOfEnclosingClass', A),
                ('dwOffset', c_uint32), ('bIsThreadLocal', c_int32), ('bIsContextLocal', c_int32),
                ('bIsStatic', c_int32), ('NextField', A)]


def addr_list(call, *pre):
    """Calls a (pre..., count, values[], *needed) list getter with room for 4096 entries (the
    DAC's list getters do not all answer the size when asked with count 0)."""
    need = c_uint32(0)
    arr = (A * 4096)()
    hr = call(*pre, 4096, arr, byref(need))
    if hr < 0:
        return hr, []
    return hr, list(arr)[:min(need.value, 4096)]


def main():
    # a single-file app: the runtime is the host executable (dacprobe.find_runtime_module)
    dac = dachost.host(dp, Core(args.dump), args.dac)
    sos = dac.sos
    res = dachost.result('dacstatics', args, with_dac=False)
    hr, s14 = dp.com_qi(dac.process.ptr, IID_SOS14)
    if hr < 0:
        raise RuntimeError('QueryInterface(ISOSDacInterface14) failed %s' % dp.hr_str(hr))
    sos14 = dp.Iface(s14, SOS14_METHODS)

    # Threads.
    threads = []
    hr, ts = dac.struct_call(sos, 'GetThreadStoreData', dp.DacpThreadStoreData)
    addr = ts.firstThread if hr >= 0 else 0
    seen = set()
    while addr and addr not in seen:
        seen.add(addr)
        hr, td = dac.struct_call(sos, 'GetThreadData', dp.DacpThreadData, addr)
        if hr < 0:
            res['errors'].append({'where': 'GetThreadData', 'thread': dp.hx(addr), 'hr': dp.hr_str(hr)})
            break
        threads.append({'address': addr, 'managed_id': td.corThreadId, 'os_id': td.osThreadId})
        addr = td.nextThread

    # Modules of every assembly of every domain (system domain first).
    hr, ads = dac.struct_call(sos, 'GetAppDomainStoreData', DacpAppDomainStoreData)
    domains = [ads.systemDomain] if hr >= 0 and ads.systemDomain else []
    hr, lst = addr_list(lambda n, v, p: sos('GetAppDomainList', [c_uint32, c_void_p, POINTER(c_uint32)], n, v, p))
    domains += [d for d in lst if d not in domains]
    modules = []
    for d in domains:
        need = c_int32(0)
        arr = (A * 4096)()
        hr = sos('GetAssemblyList', [A, c_int32, c_void_p, POINTER(c_int32)], d, 4096, arr, byref(need))
        if hr < 0:
            continue
        for asm in list(arr)[:min(need.value, 4096)]:
            hr, mods = addr_list(lambda n, v, p: sos('GetAssemblyModuleList',
                                                    [A, c_uint32, c_void_p, POINTER(c_uint32)],
                                                    asm, n, v, p))
            modules += [m for m in mods if m not in modules]

    types = []
    for m in modules:
        mts = []

        def visit(index, mt, token, mts=mts):
            mts.append((index, mt))
        cb = MODULEMAPTRAVERSE(visit)
        hr = sos('TraverseModuleMap', [c_int32, A, MODULEMAPTRAVERSE, c_void_p],
                 TYPEDEFTOMETHODTABLE, m, cb, None)
        if hr < 0:
            res['errors'].append({'where': 'TraverseModuleMap', 'module': dp.hx(m), 'hr': dp.hr_str(hr)})
            continue
        for index, mt in mts:
            if not mt:
                continue
            hr, fd = dac.struct_call(sos, 'GetMethodTableFieldData', DacpMethodTableFieldData, mt)
            if hr < 0 or fd.wNumStaticFields == 0:
                continue
            t = {'mt': dp.hx(mt), 'module': dp.hx(m), 'token': '0x%08x' % (0x02000000 | index)}
            t['name'], _ = dac.wname('GetMethodTableName', mt)
            flags = c_int32(0)
            hr = sos14('GetMethodTableInitializationFlags', [A, POINTER(c_int32)], mt, byref(flags))
            t['init_flags'] = flags.value if hr >= 0 else None
            ngc, gc = A(0), A(0)
            hr = sos14('GetStaticBaseAddress', [A, POINTER(A), POINTER(A)], mt, byref(ngc), byref(gc))
            if hr >= 0:
                t['non_gc_base'] = dp.hx(ngc.value)
                t['gc_base'] = dp.hx(gc.value)
            else:
                t['static_base_hr'] = dp.hr_str(hr)
            fields = []
            f_addr = fd.FirstField
            # The list runs through the instance fields, then the statics; the DAC's NextField
            # past the last one is no FieldDesc (it answers an error), so stop at the count.
            while f_addr and len(fields) < fd.wNumStaticFields:
                f = DacpFieldDescData()
                hr = sos('GetFieldDescData', [A, POINTER(DacpFieldDescData)], f_addr, byref(f))
                if hr < 0:
                    res['errors'].append({'where': 'GetFieldDescData', 'mt': dp.hx(mt),
                                          'field_desc': dp.hx(f_addr), 'hr': dp.hr_str(hr)})
                    break
                if f.bIsStatic:
                    fields.append({'field_desc': dp.hx(f_addr), 'token': '0x%08x' % f.mb,
                                   'type': f.Type, 'offset': f.dwOffset,
                                   'thread_static': bool(f.bIsThreadLocal)})
                f_addr = f.NextField
            t['fields'] = fields
            if fd.wNumThreadStaticFields:
                per = []
                for th in threads:
                    ngc, gc = A(0), A(0)
                    hr = sos14('GetThreadStaticBaseAddress', [A, A, POINTER(A), POINTER(A)], mt,
                               th['address'], byref(ngc), byref(gc))
                    if hr < 0:
                        per.append({'thread': dp.hx(th['address']), 'hr': dp.hr_str(hr)})
                    elif ngc.value or gc.value:
                        per.append({'thread': dp.hx(th['address']), 'managed_id': th['managed_id'],
                                    'non_gc_base': dp.hx(ngc.value), 'gc_base': dp.hx(gc.value)})
                t['thread_bases'] = per
            types.append(t)
    res['threads'] = [{'address': dp.hx(t['address']), 'managed_id': t['managed_id'],
                       'os_id': t['os_id']} for t in threads]
    res['modules'] = [dp.hx(m) for m in modules]
    res['types'] = types
    # One type a line: the file is long and its rows alike.
    out = sys.stdout
    body = json.dumps({k: v for k, v in res.items() if k != 'types'}, indent=1)
    out.write(body[:-2] + ',\n "types": [')
    out.write(','.join('\n  ' + json.dumps(t, ensure_ascii=False) for t in types))
    out.write('\n ]\n}\n')


main()
