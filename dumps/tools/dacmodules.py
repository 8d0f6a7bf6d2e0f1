#!/usr/bin/env python3
"""dacmodules: the runtime DAC's view of the loaded assemblies and modules, as independent truth
for the runtime records dumpshell anchors image files to (clrdata/src/discovery/imagecheck.rs).

    python3 dumps/tools/dacmodules.py --dac .../libmscordaccore.so [--image-dir DIR ...] \
        core.dmp > X.modules.dac.json

An extension of dacprobe (--dacprobe-dir), hosting the DAC as the other tools do (dachost.py). For
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
import json
import os
import sys
from ctypes import POINTER, byref, c_uint32, c_uint64, c_void_p

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dachost  # noqa: E402

ap = dachost.arg_parser(__doc__)
ap.add_argument('--image-dir', action='append', default=[],
                help='a folder whose files stand in for the recorded paths, by file name')
args, dp, Core = dachost.parse(ap)

from dachost import A, AppDomainStoreData, ModuleData  # noqa: E402

MAPS = ['TypeDefToMethodTableMap', 'TypeRefToMethodTableMap', 'MethodDefToDescMap',
        'FieldDefToDescMap', 'MemberRefToDescMap', 'FileReferencesMap',
        'ManifestModuleReferencesMap']


def main():
    core = Core(args.dump)
    stand_in = {}
    for d in args.image_dir:
        for f in sorted(os.listdir(d)):
            stand_in.setdefault(f, os.path.abspath(os.path.join(d, f)))
    core.files = [(s, e, o, stand_in.get(os.path.basename(n), n)) for s, e, o, n in core.files]
    dac = dachost.host(dp, core, args.dac)
    sos = dac.sos
    res = dachost.result('dacmodules', args)
    res['app_domains'] = []
    hr, store = dac.struct_call(sos, 'GetAppDomainStoreData', AppDomainStoreData)
    if hr < 0:
        raise RuntimeError('GetAppDomainStoreData failed %s' % dp.hr_str(hr))
    hr, domains = dachost.addresses(lambda n, b, need: sos(
        'GetAppDomainList', [c_uint32, c_void_p, POINTER(c_uint32)], n, b, byref(need)),
        store.DomainCount)
    for ad in domains:
        hr, add, asms = dachost.assemblies(dac, ad)
        if hr < 0:
            res['errors'].append({'call': 'GetAssemblyList', 'hr': dp.hr_str(hr)})
        dom = {'address': dp.hx(ad), 'assembly_count': add.AssemblyCount, 'assemblies': []}
        for asm in asms:
            name, _ = dac.wname('GetAssemblyName', asm)
            hr, mods = dachost.assembly_modules(dac, asm)
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
