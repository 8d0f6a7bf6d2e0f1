#!/usr/bin/env python3
"""sos_ehinfo.py: SOS's ehinfo on the app's methods of a corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_ehinfo.py NAME [--core PATH] [--rids N]

Runs dotnet-dump 10.0.750501 offline as dumps/tools/sos_threads.py does (`setsymbolserver
-disable`, `setclrpath` to the runtime pack of the dump's build) on dumps/NAME.dmp.zst and
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
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sos_threads  # noqa: E402  (run, sha256, die, DUMPS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--rids', type=int, default=200, help='MethodDef rows asked (default 200)')
    a = ap.parse_args()
    dd = os.environ.get('DOTNET_DUMP') or os.path.expanduser('~/.dotnet/tools/dotnet-dump')
    if not os.access(dd, os.X_OK):
        sos_threads.die(f'dotnet-dump not found ({dd})')
    ver = subprocess.run([dd, '--version'], capture_output=True, text=True).stdout.strip()
    import json
    with open(os.path.join(sos_threads.DUMPS, f'{a.name}.manifest.json'), encoding='utf-8') as f:
        rt = json.load(f)['runtime']['version']
    pack = os.path.join(os.environ.get('NUGET_PACKAGES') or os.path.expanduser('~/.nuget/packages'),
                        'microsoft.netcore.app.runtime.linux-x64', rt, 'runtimes/linux-x64/native')
    if not os.path.isfile(os.path.join(pack, 'libmscordaccore.so')):
        sos_threads.die(f'no DAC in {pack}')
    tmp = None
    core = a.core
    if not core:
        tmp = tempfile.NamedTemporaryFile(prefix=f'{a.name}.', suffix='.dmp', delete=False)
        tmp.close()
        subprocess.run(['zstd', '-d', '-q', '-f',
                        os.path.join(sos_threads.DUMPS, f'{a.name}.dmp.zst'), '-o', tmp.name],
                       check=True)
        core = tmp.name
    try:
        setup = ['setsymbolserver -disable', f'setclrpath {pack}']
        shown = re.sub(r'^.*?/packages/', '<nuget packages>/', pack)
        out = [f'# {a.name}: SOS\'s ehinfo (dumps/tools/sos_ehinfo.py)',
               f'# dotnet-dump {ver}; core sha256 {sos_threads.sha256(core)}',
               f'# setup: setsymbolserver -disable; setclrpath {shown}']
        mods = sos_threads.run(dd, core, setup, ['clrmodules'])
        app = [l.split()[-1].rsplit('/', 1)[-1] for l in mods.splitlines()
               if l.strip() and 'Microsoft.NETCore.App' not in l]
        if not app:
            sos_threads.die(f'no app module in:\n{mods}')
        app = app[0]
        toks = [f'06{rid:06x}' for rid in range(1, a.rids + 1)]
        text = sos_threads.run(dd, core, setup, [f'token2ee {app} {t}' for t in toks])
        blocks = [b for b in re.split(r'(?m)^(?=Module: )', text) if b.strip()]
        if len(blocks) != len(toks):
            sos_threads.die(f'token2ee: {len(blocks)} outputs for {len(toks)} tokens')
        mds = []
        for t, b in zip(toks, blocks):
            md = re.search(r'(?m)^MethodDesc:\s+([0-9a-f]+)$', b)
            code = re.search(r'(?m)^JITTED Code Address: ([0-9a-f]+)$', b)
            if md and code and code.group(1) != 'ffffffffffffffff':
                mds.append(md.group(1))
        text = sos_threads.run(dd, core, setup, [f'ehinfo {md}' for md in mds])
        blocks = [b for b in re.split(r'(?m)^(?=MethodDesc: )', text) if b.strip()]
        if len(blocks) != len(mds):
            sos_threads.die(f'ehinfo: {len(blocks)} outputs for {len(mds)} methods:\n{text}')
        for md, b in zip(mds, blocks):
            out += [f'### ehinfo {md}', b.rstrip('\n')]
        with open(os.path.join(sos_threads.DUMPS, f'{a.name}.sos-ehinfo.txt'), 'w',
                  encoding='utf-8') as f:
            f.write('\n'.join(out) + '\n')
    finally:
        if tmp:
            os.unlink(tmp.name)


if __name__ == '__main__':
    main()
