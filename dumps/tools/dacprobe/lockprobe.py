#!/usr/bin/env python3
"""lockprobe: the runtime DAC's view of sync blocks and exception objects in an ELF core, as
JSON, for dumpshell's syncblk / printexception tests.

    python3 lockprobe.py --dac .../libmscordaccore.so core.dmp [--exception ADDR ...] > out.json

Built on dacprobe.py (a copy of ../../../shared/tools/dacprobe, unchanged) for hosting the DAC.
It asks ISOSDacInterface::GetSyncBlockData for every sync block (1..SyncBlockCount), the
threads' last thrown objects (GetThreadData), and for each exception (those given, each
thread's last thrown one and their inner exceptions) ISOSDacInterface2::GetObjectExceptionData,
the message and type names (GetObjectStringData, GetObjectClassName), and for every element of
the `_stackTrace` byte[] (read raw from the core: {count, Thread*} then {ip, sp, MethodDesc*,
flags} per element) GetMethodDescName and GetCodeHeaderData (the method's code start).
Struct layouts: dotnet/runtime src/coreclr/inc/dacprivate.h; vtable orders: sospriv.idl.
"""
import argparse
import hashlib
import json
import os
import struct
import sys
from ctypes import POINTER, Structure, byref, c_int32, c_uint32, sizeof

# dacprobe itself: ../shared/tools/dacprobe beside the repository (or DACPROBE_DIR).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get('DACPROBE_DIR')
                or os.path.join(_HERE, '../../../../shared/tools/dacprobe'))
import dacprobe as dp  # noqa: E402
from dacprobe import CLRDATA_ADDRESS, GUID, Iface, hx  # noqa: E402

IID_SOS2 = GUID.from_str('A16026EC-96F4-40BA-87FB-5575986FB7AF')
ISOSDAC2_METHODS = ['GetObjectExceptionData', 'IsRCWDCOMProxy']


class DacpSyncBlockData(Structure):
    _fields_ = [('Object', CLRDATA_ADDRESS), ('bFree', c_int32),
                ('SyncBlockPointer', CLRDATA_ADDRESS), ('COMFlags', c_uint32),
                ('MonitorHeld', c_uint32), ('Recursion', c_uint32),
                ('HoldingThread', CLRDATA_ADDRESS), ('AdditionalThreadCount', c_uint32),
                ('appDomainPtr', CLRDATA_ADDRESS), ('SyncBlockCount', c_uint32)]


class DacpExceptionObjectData(Structure):
    _fields_ = [('Message', CLRDATA_ADDRESS), ('InnerException', CLRDATA_ADDRESS),
                ('StackTrace', CLRDATA_ADDRESS), ('WatsonBuckets', CLRDATA_ADDRESS),
                ('StackTraceString', CLRDATA_ADDRESS), ('RemoteStackTraceString', CLRDATA_ADDRESS),
                ('HResult', c_int32), ('XCode', c_int32)]


class DacpCodeHeaderData(Structure):
    _fields_ = [('GCInfo', CLRDATA_ADDRESS), ('JITType', c_uint32),
                ('MethodDescPtr', CLRDATA_ADDRESS), ('MethodStart', CLRDATA_ADDRESS),
                ('MethodSize', c_uint32), ('ColdRegionStart', CLRDATA_ADDRESS),
                ('ColdRegionSize', c_uint32), ('HotRegionSize', c_uint32)]


assert sizeof(DacpSyncBlockData) == 0x48
assert sizeof(DacpExceptionObjectData) == 0x38
assert sizeof(DacpCodeHeaderData) == 0x38


def string_of(dac, addr):
    if not addr:
        return None
    s, hr = dac.wname('GetObjectStringData', addr)
    return s if hr >= 0 else 'error %s' % dp.hr_str(hr)


def sync_blocks(dac):
    out = []
    hr, first = dac.struct_call(dac.sos, 'GetSyncBlockData', DacpSyncBlockData, 1)
    # GetSyncBlockData takes an unsigned int, not an address: call it directly.
    count = first.SyncBlockCount if hr >= 0 else 0
    for i in range(1, count + 1):
        d = DacpSyncBlockData()
        hr = dac.sos('GetSyncBlockData', [c_uint32, POINTER(DacpSyncBlockData)], i, byref(d))
        if hr < 0:
            out.append({'index': i, 'error': dp.hr_str(hr)})
            continue
        out.append({'index': i, 'free': bool(d.bFree), 'object': hx(d.Object),
                    'sync_block': hx(d.SyncBlockPointer), 'monitor_held': d.MonitorHeld,
                    'recursion': d.Recursion, 'holding_thread': hx(d.HoldingThread),
                    'additional_thread_count': d.AdditionalThreadCount})
    return {'count': count, 'sync_blocks': out}


def exception(dac, sos2, core, addr):
    d = DacpExceptionObjectData()
    hr = sos2('GetObjectExceptionData', [CLRDATA_ADDRESS, POINTER(DacpExceptionObjectData)],
              addr, byref(d))
    if hr < 0:
        return {'address': hx(addr), 'error': dp.hr_str(hr)}
    name, _ = dac.wname('GetObjectClassName', addr)
    e = {'address': hx(addr), 'type': name, 'message': string_of(dac, d.Message),
         'inner_exception': hx(d.InnerException) if d.InnerException else None,
         'stack_trace_array': hx(d.StackTrace) if d.StackTrace else None,
         'stack_trace_string': string_of(dac, d.StackTraceString),
         'hresult': '%08x' % (d.HResult & 0xffffffff), 'xcode': '%08x' % (d.XCode & 0xffffffff),
         'stack_trace': []}
    if d.StackTrace:
        arr = d.StackTrace
        length = core.u32(arr + 8)
        data = arr + 16
        count, thread = struct.unpack('<QQ', core.read(data, 16))
        e['stack_trace_thread'] = hx(thread)
        if 16 + count * 32 > length:
            e['stack_trace_error'] = 'count %d does not fit %d bytes' % (count, length)
            count = 0
        for i in range(count):
            ip, sp, md, flags = struct.unpack('<QQQI', core.read(data + 16 + 32 * i, 28))
            f = {'ip': hx(ip), 'sp': hx(sp), 'method_desc': hx(md), 'flags': flags}
            f['method'], _ = dac.wname('GetMethodDescName', md)
            hr, ch = dac.struct_call(dac.sos, 'GetCodeHeaderData', DacpCodeHeaderData, ip)
            if hr >= 0:
                f['method_start'] = hx(ch.MethodStart)
                f['code_method_desc'] = hx(ch.MethodDescPtr)
            else:
                f['code_header_error'] = dp.hr_str(hr)
            e['stack_trace'].append(f)
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--dac', required=True)
    ap.add_argument('dump')
    ap.add_argument('--exception', action='append', default=[], metavar='ADDR')
    args = ap.parse_args()
    core = dp.Core(args.dump)
    dac_dir = os.path.dirname(os.path.abspath(args.dac))
    rt_dirs = [dac_dir]
    # a single-file app: the runtime is the host executable (dacprobe.find_runtime_module)
    dp.RUNTIME_MODULE = dp.find_runtime_module(core)
    rp = core.module_path(dp.RUNTIME_MODULE)
    if rp:
        rt_dirs.append(os.path.dirname(rp))
    target = dp.DataTarget(core, rt_dirs, use_runtime_locator=True, use_metadata_locator=True)
    dac = dp.Dac(args.dac, target)
    hr, s2 = dp.com_qi(dac.process.ptr, IID_SOS2)
    if hr < 0:
        raise SystemExit('QueryInterface(ISOSDacInterface2) failed %s' % dp.hr_str(hr))
    sos2 = Iface(s2, ISOSDAC2_METHODS)
    h = hashlib.sha256()
    with open(args.dump, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    result = {'tool': 'lockprobe', 'dump': os.path.basename(args.dump),
              'dump_sha256': h.hexdigest()}
    result['sync_blocks'] = sync_blocks(dac)
    # Threads and their last thrown objects.
    hr, ts = dac.struct_call(dac.sos, 'GetThreadStoreData', dp.DacpThreadStoreData)
    threads = []
    t = ts.firstThread if hr >= 0 else 0
    todo = [int(a, 16) for a in args.exception]
    while t and len(threads) < 10000:
        hr, td = dac.struct_call(dac.sos, 'GetThreadData', dp.DacpThreadData, t)
        if hr < 0:
            break
        last = core.u64(td.lastThrownObjectHandle) if td.lastThrownObjectHandle else 0
        threads.append({'thread': hx(t), 'managed_id': td.corThreadId, 'os_id': td.osThreadId,
                        'last_thrown_object': hx(last) if last else None})
        if last:
            todo.append(last)
        t = td.nextThread
    result['threads'] = threads
    exceptions = []
    seen = set()
    while todo and len(exceptions) < 1000:
        a = todo.pop(0)
        if a in seen:
            continue
        seen.add(a)
        e = exception(dac, sos2, core, a)
        exceptions.append(e)
        if e.get('inner_exception'):
            todo.append(int(e['inner_exception'], 16))
    result['exceptions'] = exceptions
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
