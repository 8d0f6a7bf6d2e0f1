#!/usr/bin/env python3
"""dac_methods: the runtime DAC's method table of some MethodTables (what SOS `dumpmt -md`
lists), as independent truth for dumpshell's `dumpmt -md`.

    python3 dumps/tools/dac_methods.py --dac .../libmscordaccore.so --mt 0x7f.. --mt 0x7f.. \\
        core.dmp > X.methods.dac.json

An extension of dacprobe (../../shared/tools/dacprobe, or --dacprobe-dir), hosting the DAC the
same way. For each MethodTable it records GetMethodTableName, GetMethodTableData (wNumMethods,
wNumVtableSlots, wNumVirtuals) and the rows SOS's DumpMT -MD prints with this DAC (the 8.0.4
DAC has no ISOSDacInterface15 slot enumerator; diagnostics release/8.x strike.cpp): for each
slot n < wNumMethods, GetMethodTableSlot (request.cpp: a vtable slot's entry point, else the
entry point of the method the type introduces with that slot), its MethodDesc through
GetCodeHeaderData (IP2MethodDesc: code header, or the precode's MethodDesc), and the "JIT"
column as SOS computes it: GetCodeHeaderData(entry).JITType; when unknown, that of
GetMethodDescData's NativeCodeAddr; else NONE (FCALL when that address lies in libcoreclr.so).
GetMethodDescName names each MethodDesc; GetMethodDescData adds its slot, token, MethodTable
and native code.

With --field-class EEClass: for each FieldDesc of the class (EEClass::m_pFieldDescList, 16
bytes each, while their enclosing MethodTable is the class's), GetFieldDescData: its token,
element types, whether static, offset, and MTOfType (the MethodTable SOS prints in the MT
column of dumpobj/dumpclass; 0 when the DAC does not find the field's type loaded).
"""
import argparse
import hashlib
import json
import os
import sys
from ctypes import POINTER, Structure, byref, c_int32, c_uint16, c_uint32, c_uint64, c_void_p, sizeof

ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
ap.add_argument('--dac', required=True)
ap.add_argument('--mt', action='append', default=[], help='a MethodTable address (hex)')
ap.add_argument('--mt-of-md', action='append', default=[],
                help='a MethodDesc (hex) whose MethodTable (GetMethodDescData) to report too')
ap.add_argument('--field-class', action='append', default=[],
                help='an EEClass (hex) whose FieldDescs to report with GetFieldDescData')
ap.add_argument('--dacprobe-dir',
                default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     '../../../shared/tools/dacprobe'))
ap.add_argument('dump')
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.dacprobe_dir))
import dacprobe as dp  # noqa: E402
from elfcore import Core  # noqa: E402

A = dp.CLRDATA_ADDRESS
JIT_TYPES = {0: 'UNKNOWN', 1: 'JIT', 2: 'PreJIT'}


class DacpFieldDescData(Structure):
    _fields_ = [('Type', c_int32), ('sigType', c_int32), ('MTOfType', A), ('ModuleOfType', A),
                ('TokenOfType', c_uint32), ('mb', c_uint32), ('MTOfEnclosingClass', A),
                ('dwOffset', c_uint32), ('bIsThreadLocal', c_int32), ('bIsContextLocal', c_int32),
                ('bIsStatic', c_int32), ('NextField', A)]


class DacpReJitData(Structure):
    _fields_ = [('rejitID', A), ('flags', c_int32), ('NativeCodeAddr', A)]


class DacpMethodDescData(Structure):
    _fields_ = [('bHasNativeCode', c_int32), ('bIsDynamic', c_int32), ('wSlotNumber', c_uint16),
                ('NativeCodeAddr', A), ('AddressOfNativeCodeSlot', A), ('MethodDescPtr', A),
                ('MethodTablePtr', A), ('ModulePtr', A), ('MDToken', c_uint32), ('GCInfo', A),
                ('GCStressCodeCopy', A), ('managedDynamicMethodObject', A), ('requestedIP', A),
                ('rejitDataCurrent', DacpReJitData), ('rejitDataRequested', DacpReJitData),
                ('cJittedRejitVersions', c_uint32)]


class DacpCodeHeaderData(Structure):
    _fields_ = [('GCInfo', A), ('JITType', c_int32), ('MethodDescPtr', A), ('MethodStart', A),
                ('MethodSize', c_uint32), ('ColdRegionStart', A), ('ColdRegionSize', c_uint32),
                ('HotRegionSize', c_uint32)]


assert sizeof(DacpCodeHeaderData) == 0x38


def main():
    core = Core(args.dump)
    rt_dirs = [os.path.dirname(os.path.abspath(args.dac))]
    # a single-file app: the runtime is the host executable (dacprobe.find_runtime_module)
    dp.RUNTIME_MODULE = dp.find_runtime_module(core)
    rp = core.module_path(dp.RUNTIME_MODULE)
    if rp:
        rt_dirs.append(os.path.dirname(rp))
    target = dp.DataTarget(core, rt_dirs)
    dac = dp.Dac(args.dac, target)
    sha = hashlib.sha256()
    with open(args.dump, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha.update(chunk)
    res = {'tool': 'dac_methods', 'dump': os.path.basename(args.dump),
           'dump_sha256': sha.hexdigest(), 'errors': [], 'method_tables': []}
    coreclr = [(b, b + s) for (b, s, path) in core_modules(core) if path.endswith('/' + dp.RUNTIME_MODULE)]

    def code_header(ip):
        d = DacpCodeHeaderData()
        hr = dac.sos('GetCodeHeaderData', [A, POINTER(DacpCodeHeaderData)], ip, byref(d))
        return hr, d

    def md_data(md):
        d = DacpMethodDescData()
        hr = dac.sos('GetMethodDescData', [A, A, POINTER(DacpMethodDescData), c_uint32, c_void_p,
                                           POINTER(c_uint32)], md, 0, byref(d), 0, None, None)
        return hr, d

    def jit_column(entry, md):
        # dotnet/diagnostics strike.cpp DumpMT -MD
        jit = 0
        if entry:
            hr, ch = code_header(entry)
            if hr == 0:
                jit = ch.JITType
        if jit == 0 and md:
            hr, d = md_data(md)
            if hr == 0:
                hr, ch = code_header(d.NativeCodeAddr)
                if hr == 0:
                    jit = ch.JITType
        if jit in (1, 2):
            return JIT_TYPES[jit]
        hr, d = md_data(md)
        if hr == 0 and any(b <= d.NativeCodeAddr < e for b, e in coreclr):
            return 'FCALL'
        return 'NONE'

    mts = list(args.mt)
    for md_s in args.mt_of_md:
        hr, d = md_data(int(md_s, 16))
        if hr != 0:
            res['errors'].append({'md': md_s, 'what': 'GetMethodDescData ' + dp.hr_str(hr)})
            continue
        mts.append(dp.hx(d.MethodTablePtr))
    for mt_s in mts:
        mt = int(mt_s, 16)
        ent = {'mt': dp.hx(mt)}
        ent['name'], _ = dac.wname('GetMethodTableName', mt)
        hr, d = dac.struct_call(dac.sos, 'GetMethodTableData', dp.DacpMethodTableData, mt)
        if hr < 0:
            res['errors'].append({'mt': dp.hx(mt), 'what': 'GetMethodTableData ' + dp.hr_str(hr)})
            continue
        ent['num_methods'] = d.wNumMethods
        ent['num_vtable_slots'] = d.wNumVtableSlots
        ent['num_virtuals'] = d.wNumVirtuals
        ent['ee_class'] = dp.hx(d.Class)
        # SOS's DumpMT -MD for .NET 8 (diagnostics release/8.x strike.cpp): for each slot
        # n < wNumMethods, GetMethodTableSlot (vtable slots, then the introduced methods whose
        # slot is beyond the vtable: request.cpp), IP2MethodDesc (GetCodeHeaderData) for the
        # MethodDesc and JIT type.
        methods = []
        for n in range(d.wNumMethods):
            v = c_uint64()
            hr = dac.sos('GetMethodTableSlot', [A, c_uint32, POINTER(c_uint64)], mt, n, byref(v))
            if hr == 1 and v.value == 0:
                # S_FALSE (.NET 9+): the slot holds no entry point yet (request.cpp: a null
                # vtable slot, or an introduced method without GetMethodEntryPointIfExists).
                methods.append({'slot': n, 'entry': '0x0', 'no_entry_point': True})
                continue
            if hr != 0:
                methods.append({'slot': n, 'error': 'GetMethodTableSlot ' + dp.hr_str(hr)})
                continue
            entry = v.value
            hr, ch = code_header(entry)
            md = ch.MethodDescPtr if hr == 0 else 0
            row = {'slot': n, 'entry': dp.hx(entry), 'method_desc': dp.hx(md),
                   'jit': jit_column(entry, md)}
            if md:
                row['name'], _ = dac.wname('GetMethodDescName', md)
                hr, mdd = md_data(md)
                if hr == 0:
                    row['md_slot'] = mdd.wSlotNumber
                    row['token'] = '0x%08x' % mdd.MDToken
                    row['md_mt'] = dp.hx(mdd.MethodTablePtr)
                    row['has_native_code'] = bool(mdd.bHasNativeCode)
                    row['native_code'] = dp.hx(mdd.NativeCodeAddr)
            methods.append(row)
        ent['methods'] = methods
        res['method_tables'].append(ent)
    res['field_classes'] = []
    for ee_s in args.field_class:
        ee = int(ee_s, 16)
        # EEClass (Linux .NET 8): m_pMethodTable +0x10, m_pFieldDescList +0x18.
        mt = core.u64(ee + 0x10)
        fl = core.u64(ee + 0x18)
        cls = {'ee_class': dp.hx(ee), 'mt': dp.hx(mt), 'fields': []}
        cls['name'], _ = dac.wname('GetMethodTableName', mt)
        for i in range(4096):
            fd = fl + 16 * i
            if not fl or core.u64(fd) != mt:
                break
            f = DacpFieldDescData()
            hr = dac.sos('GetFieldDescData', [A, POINTER(DacpFieldDescData)], fd, byref(f))
            if hr != 0:
                if cls['fields']:
                    # The list ends where the DAC rejects a FieldDesc: on .NET 9/10 the word
                    # after a class's last FieldDesc can equal its MethodTable (the counts
                    # equal .NET 8's, which ends on the MethodTable test alone).
                    cls['list_end'] = {'field_desc': dp.hx(fd), 'hr': dp.hr_str(hr)}
                    break
                res['errors'].append({'field_desc': dp.hx(fd), 'what': 'GetFieldDescData ' + dp.hr_str(hr)})
                continue
            cls['fields'].append({'field_desc': dp.hx(fd), 'token': '0x%08x' % f.mb,
                                  'type': f.Type, 'sig_type': f.sigType,
                                  'mt_of_type': dp.hx(f.MTOfType), 'static': bool(f.bIsStatic),
                                  'thread_static': bool(f.bIsThreadLocal), 'offset': f.dwOffset})
        res['field_classes'].append(cls)
    write(res)


def write(res):
    """JSON with one method row a line (the rows are many and alike)."""
    out = sys.stdout
    mts = res.pop('method_tables')
    head = json.dumps(res, indent=1)
    out.write(head[:-2] + ',\n "method_tables": [')
    for i, mt in enumerate(mts):
        rows = mt.pop('methods')
        out.write(',\n  ' if i else '\n  ')
        out.write(json.dumps(mt, ensure_ascii=False)[:-1] + ', "methods": [')
        out.write(','.join('\n   ' + json.dumps(r, ensure_ascii=False) for r in rows))
        out.write(']}')
    out.write('\n ]\n}\n')


def core_modules(core):
    """(base, size, path) of the core's file mappings, grouped by path."""
    out = {}
    for f in core.files:
        start, end, path = f[0], f[1], f[-1]
        b, e = out.get(path, (start, end))
        out[path] = (min(b, start), max(e, end))
    return [(b, e - b, p) for p, (b, e) in out.items()]


if __name__ == '__main__':
    main()
