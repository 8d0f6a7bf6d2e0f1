#!/usr/bin/env python3
"""dacdelegates: the runtime DAC's names for the methods a dump's delegates call, as
independent truth for dumpshell's delegate resolution (timerinfo, threadpoolqueue, ...).

    dumpshell core.dmp -c "dumpheap -short" > objects.txt
    python3 dumps/tools/dacdelegates.py --dac .../libmscordaccore.so --objects objects.txt \\
        core.dmp > X.delegates.dac.json

An extension of dacprobe (../../shared/tools/dacprobe, or --dacprobe-dir), hosting the DAC the
same way. Of the objects listed (any heap listing: only their addresses are used), the DAC
decides which are delegates (a MethodTable whose parent chain, per GetMethodTableData and
GetMethodTableName, reaches System.MulticastDelegate). For each delegate it reads the raw
fields at the offsets of src/coreclr/vm/amd64/asmconstants.h (Delegate: _target +8,
_methodPtr +0x18, _methodPtrAux +0x20; MulticastDelegate: _invocationCount +0x30; with
--net11, .NET 11's layout as the 11.0.0 DAC gives it through SOS's dumpobj: _helperObject +8,
_target +0x10, _methodPtr +0x18, _methodPtrAux +0x20, _extraData +0x28, no
_invocationCount, so invocation_count is null) and asks
IXCLRDataProcess::GetRuntimeNameByAddress (the 13th method after IUnknown's three, per
xclrdata.idl) for the name of each non-null code pointer: the DAC names JIT'd code and
precodes (FixupPrecode, StubPrecode) by their MethodDesc, and stubs as CLRStub[...].
"""
import argparse
import hashlib
import json
import os
import sys
from ctypes import POINTER, byref, c_uint32, c_uint64, c_void_p, create_string_buffer

ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
ap.add_argument('--dac', required=True)
ap.add_argument('--objects', required=True, help='a file with one object address (hex) a line')
ap.add_argument('--net11', action='store_true', help="the Delegate fields at .NET 11's offsets")
ap.add_argument('--dacprobe-dir',
                default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     '../../../shared/tools/dacprobe'))
ap.add_argument('dump')
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.dacprobe_dir))
import dacprobe as dp  # noqa: E402
from elfcore import Core  # noqa: E402

PROCESS_METHODS = dp.IXCLRDATAPROCESS_METHODS + [
    'GetFlags', 'IsSameObject', 'GetManagedObject', 'GetDesiredExecutionState',
    'SetDesiredExecutionState', 'GetAddressType', 'GetRuntimeNameByAddress']


def main():
    core = Core(args.dump)
    target = dp.DataTarget(core, [os.path.dirname(os.path.abspath(args.dac))])
    dac = dp.Dac(args.dac, target)
    proc = dp.Iface(dac.process.ptr, PROCESS_METHODS)
    sha = hashlib.sha256()
    with open(args.dump, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha.update(chunk)
    res = {'tool': 'dacdelegates', 'dump': os.path.basename(args.dump),
           'dump_sha256': sha.hexdigest(), 'errors': [], 'delegates': []}

    def runtime_name(ip):
        buf = create_string_buffer(4096)
        n = c_uint32()
        disp = c_uint64()
        hr = proc('GetRuntimeNameByAddress',
                  [c_uint64, c_uint32, c_uint32, POINTER(c_uint32), c_void_p, POINTER(c_uint64)],
                  ip, 0, 2048, byref(n), buf, byref(disp))
        if hr < 0:
            return None, dp.hr_str(hr)
        return buf.raw[:2 * n.value].decode('utf-16-le', 'replace').split('\0', 1)[0], None

    is_delegate = {}

    def delegate_mt(mt):
        if mt in is_delegate:
            return is_delegate[mt]
        cur, found = mt, False
        for _ in range(64):
            if not cur:
                break
            name, _ = dac.wname('GetMethodTableName', cur)
            if name == 'System.MulticastDelegate':
                found = True
                break
            hr, d = dac.struct_call(dac.sos, 'GetMethodTableData', dp.DacpMethodTableData, cur)
            if hr < 0:
                break
            cur = d.ParentMethodTable
        is_delegate[mt] = found
        return found

    with open(args.objects) as f:
        addrs = []
        for line in f:
            w = line.strip().split()
            if not w:
                continue
            try:
                addrs.append(int(w[0], 16))
            except ValueError:
                continue
    for a in addrs:
        try:
            mt = core.u64(a) & ~7
        except Exception:  # noqa: BLE001
            res['errors'].append({'address': dp.hx(a), 'what': 'header not in the dump'})
            continue
        if not mt or not delegate_mt(mt):
            continue
        tname, _ = dac.wname('GetMethodTableName', mt)
        ent = {'address': dp.hx(a), 'type': tname,
               'target': dp.hx(core.u64(a + (0x10 if args.net11 else 8))),
               'method_ptr': dp.hx(core.u64(a + 0x18)),
               'method_ptr_aux': dp.hx(core.u64(a + 0x20)),
               'invocation_count': None if args.net11 else core.u64(a + 0x30)}
        for k in ('method_ptr', 'method_ptr_aux'):
            ip = int(ent[k], 16)
            if ip:
                name, err = runtime_name(ip)
                ent[k + '_name'] = name
                if err:
                    ent[k + '_error'] = err
            else:
                ent[k + '_name'] = None
        res['delegates'].append(ent)
    res['delegates'].sort(key=lambda d: int(d['address'], 16))
    json.dump(res, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
