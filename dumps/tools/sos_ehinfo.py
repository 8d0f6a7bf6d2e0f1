#!/usr/bin/env python3
"""sos_ehinfo.py: SOS's ehinfo on the app's methods of a corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_ehinfo.py NAME [--core PATH] [--rids N]

Runs dotnet-dump 10.0.750501 offline (dumps/tools/sosrun.py: `setsymbolserver -disable`,
`setclrpath` to the runtime pack of the dump's build) on dumps/NAME.dmp.zst and
writes dumps/NAME.sos-ehinfo.txt:

  ### ehinfo <MethodDesc>       SOS's ehinfo of each MethodDesc that SOS's token2ee gives with
                                code (JITTED Code Address other than -1) for the app's
                                MethodDef tokens 1..N (default 200)

The app is the first module `clrmodules` lists outside Microsoft.NETCore.App. Each kind of
section comes from one session running every command in turn, its output cut where each
command's output starts (`Module:` for token2ee, `MethodDesc:` for ehinfo). SOS fails on
ReadyToRun code (`Failed to perform EHInfo traverse`, ending its session): a dump whose app is
ReadyToRun (hang-net10-r2r) gets no file. A header of `#`
lines names the dump, dotnet-dump's version and the core's sha256. tests/tests/sos_ehinfo.rs
compares dumpshell's ehinfo with these files.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sosrun  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--rids', type=int, default=200, help='MethodDef rows asked (default 200)')
    a = ap.parse_args()
    with sosrun.Dump(a.name, a.core) as d:
        out = d.header("SOS's ehinfo (dumps/tools/sos_ehinfo.py)")
        mds = []
        for b in sosrun.app_methods(d, a.rids):
            md = re.search(r'(?m)^MethodDesc:\s+([0-9a-f]+)$', b)
            code = re.search(r'(?m)^JITTED Code Address: ([0-9a-f]+)$', b)
            if md and code and code.group(1) != 'ffffffffffffffff':
                mds.append(md.group(1))
        for md, b in zip(mds, d.run_split([f'ehinfo {md}' for md in mds], 'MethodDesc: ')):
            out += [f'### ehinfo {md}', b.rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-ehinfo.txt'), out)


if __name__ == '__main__':
    main()
