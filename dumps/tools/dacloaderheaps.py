#!/usr/bin/env python3
"""dacloaderheaps: the runtime DAC's view of the loader heaps (what SOS's `eeheap -loader` lists),
as independent truth for clrdata/src/model/loaderheap.rs.

    python3 dumps/tools/dacloaderheaps.py --dac .../libmscordaccore.so core.dmp > X.loaderheaps.dac.json

An extension of dacprobe (--dacprobe-dir), hosting the DAC as the other tools do (dachost.py).
For the SystemDomain and every AppDomain (GetAppDomainStoreData, GetAppDomainList) it asks
ISOSDacInterface13 for the domain's LoaderAllocator (GetDomainLoaderAllocator), the names the
DAC gives its heaps (GetLoaderAllocatorHeapNames), the heaps (GetLoaderAllocatorHeaps) and
each heap's blocks (TraverseLoaderHeap: address, reserved size, whether the DAC calls it the
current block); for every Module of the AppDomain (GetAssemblyList, GetAssemblyModuleList) its
LoaderAllocator and ThunkHeap (GetModuleData); and for the JIT managers (GetJitManagerList)
their code heaps (GetCodeHeapList: a LoaderCodeHeap's ExplicitControlLoaderHeap traversed the
same way, a HostCodeHeap's base and current address).
"""
import json
import os
import sys
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int32, c_size_t, c_uint32,
                    c_void_p)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dachost  # noqa: E402

ap = dachost.arg_parser(__doc__)
args, dp, Core = dachost.parse(ap)

from dachost import A, AppDomainStoreData, ModuleData  # noqa: E402

# sospriv.idl: ISOSDacInterface13
IID_SOS13 = dp.GUID.from_str('3176a8ed-597b-4f54-a71f-83695c6a8c5e')
SOS13_METHODS = ['TraverseLoaderHeap', 'GetDomainLoaderAllocator', 'GetLoaderAllocatorHeapNames',
                 'GetLoaderAllocatorHeaps', 'GetHandleTableMemoryRegions',
                 'GetGCBookkeepingMemoryRegions', 'GetGCFreeRegions', 'LockedFlush']
# LoaderHeapKind
KIND_NORMAL, KIND_EXPLICIT = 0, 1
VISITHEAP = CFUNCTYPE(None, A, c_size_t, c_int32)


class JitManagerInfo(Structure):
    _fields_ = [('managerAddr', A), ('codeType', c_uint32), ('ptrHeapList', A)]


class JitCodeHeapInfo(Structure):
    _fields_ = [('codeHeapType', c_uint32), ('a', A), ('b', A)]


def main():
    dac = dachost.host(dp, Core(args.dump), args.dac)
    sos = dac.sos
    hr, p13 = dp.com_qi(dac.process.ptr, IID_SOS13)
    if hr < 0:
        raise RuntimeError('QueryInterface(ISOSDacInterface13) failed %s' % dp.hr_str(hr))
    s13 = dp.Iface(p13, SOS13_METHODS)
    res = dachost.result('dacloaderheaps', args)

    def traverse(heap, kind):
        blocks = []

        def cb(addr, size, current):
            blocks.append({'address': dp.hx(addr), 'size': size, 'current': bool(current)})
        f = VISITHEAP(cb)
        hr = s13('TraverseLoaderHeap', [A, c_int32, c_void_p], heap, kind, f)
        return dp.hr_str(hr), blocks

    need = c_int32()
    s13('GetLoaderAllocatorHeapNames', [c_int32, c_void_p, POINTER(c_int32)], 0, None, byref(need))
    names_buf = (c_char_p * max(need.value, 1))()
    hr = s13('GetLoaderAllocatorHeapNames', [c_int32, c_void_p, POINTER(c_int32)], need.value,
             names_buf, byref(need))
    names = [n.decode() for n in list(names_buf)[:need.value]]
    res['heap_names'] = names

    def allocator(la):
        n = c_int32()
        s13('GetLoaderAllocatorHeaps', [A, c_int32, c_void_p, c_void_p, POINTER(c_int32)], la, 0,
            None, None, byref(n))
        addrs = (A * max(n.value, 1))()
        kinds = (c_int32 * max(n.value, 1))()
        hr = s13('GetLoaderAllocatorHeaps', [A, c_int32, c_void_p, c_void_p, POINTER(c_int32)],
                 la, n.value, addrs, kinds, byref(n))
        heaps = []
        for i in range(n.value):
            hrt, blocks = traverse(addrs[i], kinds[i]) if addrs[i] else ('null', [])
            heaps.append({'name': names[i] if i < len(names) else None,
                          'address': dp.hx(addrs[i]), 'kind': kinds[i], 'traverse': hrt,
                          'blocks': blocks})
        return dp.hr_str(hr), heaps

    hr, store = dac.struct_call(sos, 'GetAppDomainStoreData', AppDomainStoreData)
    buf = (A * max(store.DomainCount, 1))()
    needu = c_uint32()
    sos('GetAppDomainList', [c_uint32, c_void_p, POINTER(c_uint32)], store.DomainCount, buf,
        byref(needu))
    doms = [('system', store.systemDomain)] + [('app', d) for d in list(buf)[:needu.value]]
    res['domains'] = []
    for kind, d in doms:
        e = {'kind': kind, 'address': dp.hx(d)}
        if d:
            la = A()
            hr = s13('GetDomainLoaderAllocator', [A, POINTER(A)], d, byref(la))
            e['loader_allocator'] = dp.hx(la.value) if hr >= 0 else dp.hr_str(hr)
            if hr >= 0 and la.value:
                e['heaps_hr'], e['heaps'] = allocator(la.value)
        res['domains'].append(e)

    # Every module's LoaderAllocator and thunk heap (GetModuleData): what SOS's "Module Thunk
    # heaps" and "Module LoaderAllocators" sections would list (a collectible assembly's module
    # has a LoaderAllocator of its own; no domain's heaps include it).
    res['modules'] = []
    for kind, d in doms:
        if kind != 'app' or not d:
            continue
        hr, _, asms = dachost.assemblies(dac, d)
        if hr < 0:
            res['errors'].append({'call': 'GetAssemblyList', 'hr': dp.hr_str(hr)})
        for asm in asms:
            hr, mods = dachost.assembly_modules(dac, asm)
            if hr < 0:
                res['errors'].append({'call': 'GetAssemblyModuleList', 'assembly': dp.hx(asm),
                                      'hr': dp.hr_str(hr)})
            for m in mods:
                hr, md = dac.struct_call(sos, 'GetModuleData', ModuleData, m)
                if hr < 0:
                    res['modules'].append({'module': dp.hx(m), 'error': dp.hr_str(hr)})
                    continue
                res['modules'].append({'module': dp.hx(m),
                                       'loader_allocator': dp.hx(md.LoaderAllocator),
                                       'thunk_heap': dp.hx(md.ThunkHeap)})

    n = c_uint32()
    sos('GetJitManagerList', [c_uint32, c_void_p, POINTER(c_uint32)], 0, None, byref(n))
    mgrs = (JitManagerInfo * max(n.value, 1))()
    sos('GetJitManagerList', [c_uint32, c_void_p, POINTER(c_uint32)], n.value, mgrs, byref(n))
    res['jit_managers'] = []
    for m in list(mgrs)[:n.value]:
        c = c_uint32()
        sos('GetCodeHeapList', [A, c_uint32, c_void_p, POINTER(c_uint32)], m.managerAddr, 0, None,
            byref(c))
        hs = (JitCodeHeapInfo * max(c.value, 1))()
        hr = sos('GetCodeHeapList', [A, c_uint32, c_void_p, POINTER(c_uint32)], m.managerAddr,
                 c.value, hs, byref(c))
        heaps = []
        for h in list(hs)[:c.value]:
            if h.codeHeapType == 0:  # CODEHEAP_LOADER
                hrt, blocks = traverse(h.a, KIND_EXPLICIT)
                heaps.append({'type': 'loader', 'loader_heap': dp.hx(h.a), 'traverse': hrt,
                              'blocks': blocks})
            elif h.codeHeapType == 1:  # CODEHEAP_HOST
                heaps.append({'type': 'host', 'base': dp.hx(h.a), 'current': dp.hx(h.b)})
            else:
                heaps.append({'type': h.codeHeapType})
        res['jit_managers'].append({'address': dp.hx(m.managerAddr), 'code_type': m.codeType,
                                    'heap_list': dp.hx(m.ptrHeapList), 'hr': dp.hr_str(hr),
                                    'code_heaps': heaps})
    json.dump(res, sys.stdout, indent=1)
    sys.stdout.write('\n')


main()
