#!/usr/bin/env python3
"""dachost.py: the setup the DAC truth tools share (dacloaderheaps.py, dacmodules.py,
dacstatics.py), as sosrun.py is for the SOS runners: hosting the runtime's DAC on a core through
dacprobe (dumps/tools/dacprobe: dacprobe.py and elfcore.py).

    import dachost
    ap = dachost.arg_parser(__doc__)     # --dac, --dacprobe-dir and the dump
    ap.add_argument(...)                 # the tool's own options
    args, dp, Core = dachost.parse(ap)   # dacprobe and elfcore's Core, from --dacprobe-dir
    core = Core(args.dump)               # (the tool may adjust the core here)
    dac = dachost.host(dp, core, args.dac)
    res = dachost.result('dacX', args)   # the truth file's first keys

`host` finds the runtime module in the core (dacprobe.find_runtime_module: libcoreclr.so, or
the host executable of a single-file app), gives the DAC a data target over the core that looks
for the runtime's files beside the DAC, and loads the DAC (`.sos` is its ISOSDacInterface).
`result` starts the JSON every tool writes: the tool, the dump's file name and sha256 (tests
check it against the committed dump's), the DAC's file name (unless with_dac=False) and an empty
error list. Also shared: the dacprivate.h structures the tools ask for (AppDomainStoreData,
AppDomainData, ModuleData), `addresses` (a list getter's values), `assemblies` (an app
domain's, GetAssemblyList) and `assembly_modules` (GetAssemblyModuleList).
"""
import argparse
import hashlib
import os
import sys
from ctypes import POINTER, Structure, byref, c_int32, c_uint32, c_uint64, c_void_p

HERE = os.path.dirname(os.path.abspath(__file__))


def arg_parser(doc):
    """The tools' common options: --dac, --dacprobe-dir and the dump (positional, last)."""
    ap = argparse.ArgumentParser(description=doc.split('\n')[1])
    ap.add_argument('--dac', required=True)
    ap.add_argument('--dacprobe-dir',
                    default=next((d for d in (os.path.join(HERE, 'dacprobe'),
                                              os.path.join(HERE, '../../../shared/tools/dacprobe'))
                                  if os.path.isfile(os.path.join(d, 'dacprobe.py'))), None),
                    help='the folder of dacprobe.py and elfcore.py (default: dumps/tools/dacprobe)')
    return ap


def parse(ap):
    """Adds the dump argument, parses, and imports dacprobe and elfcore from --dacprobe-dir:
    (args, the dacprobe module, elfcore.Core)."""
    ap.add_argument('dump')
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.dacprobe_dir))
    import dacprobe  # noqa: E402
    from elfcore import Core  # noqa: E402
    return args, dacprobe, Core


def host(dp, core, dac_path):
    """The DAC at dac_path hosted on `core` (a dacprobe.Dac; its data target, whose callbacks
    the DAC calls, is kept alive as its `target`)."""
    dp.RUNTIME_MODULE = dp.find_runtime_module(core)
    target = dp.DataTarget(core, [os.path.dirname(os.path.abspath(dac_path))])
    dac = dp.Dac(dac_path, target)
    dac.target = target
    return dac


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def result(tool, args, with_dac=True):
    """The first keys of a tool's JSON: tool, dump, dump_sha256, dac (with_dac), errors."""
    res = {'tool': tool, 'dump': os.path.basename(args.dump), 'dump_sha256': sha256(args.dump)}
    if with_dac:
        res['dac'] = os.path.basename(args.dac)
    res['errors'] = []
    return res


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


def addresses(call, count):
    """A (count, values[], needed*) list getter's values."""
    buf = (A * max(count, 1))()
    need = c_uint32()
    hr = call(count, buf, need)
    return hr, list(buf)[:min(need.value, count)]


def assemblies(dac, ad):
    """(hr, AppDomainData, the assemblies of app domain `ad`: GetAssemblyList)."""
    sos = dac.sos
    hr, add = dac.struct_call(sos, 'GetAppDomainData', AppDomainData, ad)
    buf = (A * max(add.AssemblyCount, 1))()
    need = c_int32()
    hr = sos('GetAssemblyList', [A, c_int32, c_void_p, POINTER(c_int32)], ad, add.AssemblyCount,
             buf, byref(need))
    return hr, add, list(buf)[:min(need.value, add.AssemblyCount)]


def assembly_modules(dac, asm):
    """(hr, the modules of assembly `asm`: GetAssemblyModuleList)."""
    return addresses(lambda n, b, need: dac.sos(
        'GetAssemblyModuleList', [A, c_uint32, c_void_p, POINTER(c_uint32)], asm, n, b,
        byref(need)), 8)
