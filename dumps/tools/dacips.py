#!/usr/bin/env python3
"""dacips: the runtime DAC's names for code addresses (what SOS `ip2md` prints), as independent
truth for the methods dumpshell names a runtime-async continuation by (its
`ResumeInfo->DiagnosticIP`, .NET 11).

    dumpshell core.dmp -c "dumpasync --json" | python3 -c '...diagnostic_ip...' > ips.txt
    python3 dumps/tools/dacips.py --dac .../11.0.0/.../libmscordaccore.so --ips ips.txt \\
        [--image-dir DIR ...] core.dmp > X.ips.dac.json

An extension of dacprobe (dumps/tools/dacprobe, or --dacprobe-dir), hosting the DAC the same
way. For each address: ISOSDacInterface::GetCodeHeaderData (the MethodDesc and the start of the
code holding it, as SOS's ip2md asks) and GetMethodDescName of that MethodDesc. Only the
addresses come from the list; the names are the DAC's own. `--image-dir` names folders where
the image files the core records (the assemblies, ReadyToRun code the dump lacks) are found
when their recorded paths are gone: a file stands in only under its recorded file name.
"""
import argparse
import hashlib
import json
import os
import sys
from ctypes import POINTER, Structure, byref, c_int32, c_uint32, sizeof

ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
ap.add_argument('--dac', required=True)
ap.add_argument('--ips', required=True, help='a file with one code address (hex) a line')
ap.add_argument('--image-dir', action='append', default=[])
ap.add_argument('--dacprobe-dir',
                default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dacprobe'))
ap.add_argument('dump')
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.dacprobe_dir))
import dacprobe as dp  # noqa: E402
from elfcore import Core  # noqa: E402

A = dp.CLRDATA_ADDRESS


class DacpCodeHeaderData(Structure):
    _fields_ = [('GCInfo', A), ('JITType', c_int32), ('MethodDescPtr', A), ('MethodStart', A),
                ('MethodSize', c_uint32), ('ColdRegionStart', A), ('ColdRegionSize', c_uint32),
                ('HotRegionSize', c_uint32)]


assert sizeof(DacpCodeHeaderData) == 0x38


def main():
    core = Core(args.dump)
    # Recorded paths that are gone: the same file name in --image-dir.
    remapped = 0
    for i, (st, en, foff, name) in enumerate(core.files):
        if name.startswith('/') and not os.path.exists(name):
            for d in args.image_dir:
                p = os.path.join(d, os.path.basename(name))
                if os.path.isfile(p):
                    core.files[i] = (st, en, foff, p)
                    remapped += 1
                    break
    rt_dirs = [os.path.dirname(os.path.abspath(args.dac))]
    target = dp.DataTarget(core, rt_dirs)
    dac = dp.Dac(args.dac, target)
    sha = hashlib.sha256()
    with open(args.dump, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha.update(chunk)
    res = {'tool': 'dacips', 'dump': os.path.basename(args.dump), 'dump_sha256': sha.hexdigest(),
           'dac': os.path.basename(args.dac), 'remapped_files': remapped, 'ips': []}
    with open(args.ips) as f:
        ips = sorted({int(l.strip(), 16) for l in f if l.strip()})
    for ip in ips:
        d = DacpCodeHeaderData()
        hr = dac.sos('GetCodeHeaderData', [A, POINTER(DacpCodeHeaderData)], ip, byref(d))
        row = {'ip': dp.hx(ip), 'hr': dp.hr_str(hr)}
        if hr == 0:
            row['method_desc'] = dp.hx(d.MethodDescPtr)
            row['method_start'] = dp.hx(d.MethodStart)
            row['jit_type'] = d.JITType
            row['method'], nhr = dac.wname('GetMethodDescName', d.MethodDescPtr)
            if nhr != 0:
                row['name_hr'] = dp.hr_str(nhr)
        res['ips'].append(row)
    json.dump(res, sys.stdout, indent=1)
    sys.stdout.write('\n')


main()
