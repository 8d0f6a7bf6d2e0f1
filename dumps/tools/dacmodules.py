#!/usr/bin/env python3
"""dacmodules: the runtime DAC's view of the loaded assemblies and modules, as independent truth
for the runtime records dumpshell anchors image files to (clrdata/src/discovery/imagecheck.rs).

    python3 dumps/tools/dacmodules.py --dac .../libmscordaccore.so [--image-dir DIR ...] \
        core.dmp > X.modules.dac.json

An extension of dacprobe (--dacprobe-dir, as dacroots.py), hosting the DAC the same way. For
every app domain (GetAppDomainStoreData, GetAppDomainList, GetAppDomainData) it lists the
assemblies in the DAC's order (GetAssemblyList) with their name (GetAssemblyName) and modules
(GetAssemblyModuleList), and for each module GetModuleData: its PEAssembly, the image base the
runtime's loaded layout gives (ilBase; also GetPEFileBase), the metadata's address and size,
the Assembly, and the `pTable` of each lookup map (TypeDef, TypeRef, MethodDef, FieldDef,
MemberRef, File, AssemblyRef).

A gdb gcore core lacks the pages of the assemblies' files: the DAC reads their headers and
metadata through dacprobe's file fallback from the paths the core records. --image-dir names
folders whose files stand in for those paths, by file name (the NuGet runtime pack's
`lib/net*/`, dumps/images/<name>/), when the recorded paths are gone.
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
                help='the folder of dacprobe.py and elfcore.py (default: dumps/tools/dacprobe)')
ap.add_argument('--image-dir', action='append', default=[],
                help='a folder whose files stand in for the recorded paths, by file name')
ap.add_argument('dump')
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.dacprobe_dir))
import dacprobe as dp  # noqa: E402
from elfcore import Core  # noqa: E402

A = c_uint64


# dacprivate.h
class AppDomainStoreData(Structure):
    _fields_ = [('sharedDomain', A), ('systemDomain', A), ('DomainCount', c_int32)]


class AppDomainData(Structure):
    _fields_ = [('AppDomainPtr', A), ('AppSecDesc', A), ('pLowFrequencyHeap', A),
                ('pHighFrequencyHeap', A), ('pStubHeap', A), ('DomainLocalBlock', A),
                ('pDomainLocalModules', A), ('dwId', c_int32), ('AssemblyCount', c_int32),
                ('FailedAssemblyCount', c_int32), ('appDomainStage', c_int32)]


class ModuleData(Structure):
    _fields_ = [('Address', A), ('PEAssembly', A), ('ilBase', A), ('metadataStart', A),
                ('metadataSize', c_uint64), ('Assembly', A), ('bIsReflection', c_int32),
                ('bIsPEFile', c_int32), ('dwBaseClassIndex', c_uint64), ('dwModuleID', c_uint64),
                ('dwTransientFlags', c_uint32), ('TypeDefToMethodTableMap', A),
                ('TypeRefToMethodTableMap', A), ('MethodDefToDescMap', A),
                ('FieldDefToDescMap', A), ('MemberRefToDescMap', A), ('FileReferencesMap', A),
                ('ManifestModuleReferencesMap', A), ('LoaderAllocator', A), ('ThunkHeap', A),
                ('dwModuleIndex', c_uint64)]


MAPS = ['TypeDefToMethodTableMap', 'TypeRefToMethodTableMap', 'MethodDefToDescMap',
        'FieldDefToDescMap', 'MemberRefToDescMap', 'FileReferencesMap',
        'ManifestModuleReferencesMap']


def addresses(call, count):
    """A (count, values[], needed*) list getter's values."""
    buf = (A * max(count, 1))()
    need = c_uint32()
    hr = call(count, buf, need)
    return hr, list(buf)[:min(need.value, count)]


def main():
    core = Core(args.dump)
    stand_in = {}
    for d in args.image_dir:
        for f in sorted(os.listdir(d)):
            stand_in.setdefault(f, os.path.abspath(os.path.join(d, f)))
    core.files = [(s, e, o, stand_in.get(os.path.basename(n), n)) for s, e, o, n in core.files]
    dp.RUNTIME_MODULE = dp.find_runtime_module(core)
    target = dp.DataTarget(core, [os.path.dirname(os.path.abspath(args.dac))])
    dac = dp.Dac(args.dac, target)
    sos = dac.sos
    sha = hashlib.sha256()
    with open(args.dump, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha.update(chunk)
    res = {'tool': 'dacmodules', 'dump': os.path.basename(args.dump),
           'dump_sha256': sha.hexdigest(), 'dac': os.path.basename(args.dac),
           'errors': [], 'app_domains': []}
    hr, store = dac.struct_call(sos, 'GetAppDomainStoreData', AppDomainStoreData)
    if hr < 0:
        raise RuntimeError('GetAppDomainStoreData failed %s' % dp.hr_str(hr))
    hr, domains = addresses(lambda n, b, need: sos(
        'GetAppDomainList', [c_uint32, c_void_p, POINTER(c_uint32)], n, b, byref(need)),
        store.DomainCount)
    for ad in domains:
        hr, add = dac.struct_call(sos, 'GetAppDomainData', AppDomainData, ad)
        asms_buf = (A * max(add.AssemblyCount, 1))()
        needi = c_int32()
        hr = sos('GetAssemblyList', [A, c_int32, c_void_p, POINTER(c_int32)], ad,
                 add.AssemblyCount, asms_buf, byref(needi))
        if hr < 0:
            res['errors'].append({'call': 'GetAssemblyList', 'hr': dp.hr_str(hr)})
        dom = {'address': dp.hx(ad), 'assembly_count': add.AssemblyCount, 'assemblies': []}
        for asm in list(asms_buf)[:min(needi.value, add.AssemblyCount)]:
            name, _ = dac.wname('GetAssemblyName', asm)
            hr, mods = addresses(lambda n, b, need: sos(
                'GetAssemblyModuleList', [A, c_uint32, c_void_p, POINTER(c_uint32)], asm, n, b,
                byref(need)), 8)
            e = {'assembly': dp.hx(asm), 'name': name, 'modules': []}
            for m in mods:
                hr, md = dac.struct_call(sos, 'GetModuleData', ModuleData, m)
                if hr < 0:
                    # (a gcore core whose file for this image is not at hand)
                    res['errors'].append({'call': 'GetModuleData', 'module': dp.hx(m),
                                          'hr': dp.hr_str(hr)})
                    e['modules'].append({'module': dp.hx(m), 'error': dp.hr_str(hr)})
                    continue
                base = c_uint64()
                hrb = sos('GetPEFileBase', [A, POINTER(c_uint64)], md.PEAssembly, byref(base))
                e['modules'].append({
                    'module': dp.hx(m), 'pe_assembly': dp.hx(md.PEAssembly),
                    'il_base': dp.hx(md.ilBase),
                    'pe_file_base': dp.hx(base.value) if hrb >= 0 else None,
                    'metadata_start': dp.hx(md.metadataStart),
                    'metadata_size': md.metadataSize, 'assembly': dp.hx(md.Assembly),
                    'is_reflection': bool(md.bIsReflection), 'is_pe_file': bool(md.bIsPEFile),
                    'maps': {k: dp.hx(getattr(md, k)) for k in MAPS}})
            dom['assemblies'].append(e)
        res['app_domains'].append(dom)
    res['memory_stats'] = dict(core.stats)
    res['memory_stats']['file_fallback_by_file'] = {
        os.path.basename(k): v for k, v in core.fallback_files.items()}
    json.dump(res, sys.stdout, indent=1)
    sys.stdout.write('\n')


main()
