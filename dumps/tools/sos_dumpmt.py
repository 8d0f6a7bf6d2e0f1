#!/usr/bin/env python3
"""sos_dumpmt.py: SOS's dumpmt of the generic type definitions' own MethodTables of a corpus dump.

    python3 dumps/tools/sos_dumpmt.py NAME [--core PATH]

The MethodTables are those SOS's token2ee gave for a generic TypeDef (its `Name:` has
`<T1`...) in dumps/NAME.sos-threads.txt or dumps/NAME.sos-modules.txt (dumps/tools/
sos_threads.py): a generic type's definition, whose type arguments are its own generic
variables. Runs dotnet-dump 10.0.750501 offline as sos_threads.py does and writes
dumps/NAME.sos-dumpmt.txt: `### dumpmt <MethodTable>` and SOS's text (its `Name:` line is
the DAC's GetMethodTableName). tests/tests/sos_threads.rs compares dumpshell's dumpmt names.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sos_threads  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    a = ap.parse_args()
    mts = []
    for kind in ('sos-threads', 'sos-modules'):
        p = os.path.join(sos_threads.DUMPS, f'{a.name}.{kind}.txt')
        if os.path.isfile(p):
            text = open(p, encoding='utf-8').read()
            for m in re.finditer(r'(?m)^MethodTable: ([0-9a-f]{16})\nName:        \S*<T1[>,]', text):
                if m.group(1) not in mts:
                    mts.append(m.group(1))
    if not mts:
        sos_threads.die(f'{a.name}: no generic type definition in its token2ee truth')
    dd = os.environ.get('DOTNET_DUMP') or os.path.expanduser('~/.dotnet/tools/dotnet-dump')
    ver = subprocess.run([dd, '--version'], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(sos_threads.DUMPS, f'{a.name}.manifest.json'), encoding='utf-8') as f:
        rt = json.load(f)['runtime']['version']
    pack = os.path.join(os.environ.get('NUGET_PACKAGES') or os.path.expanduser('~/.nuget/packages'),
                        'microsoft.netcore.app.runtime.linux-x64', rt, 'runtimes/linux-x64/native')
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
        out = [f'# {a.name}: SOS\'s dumpmt of generic type definitions (dumps/tools/sos_dumpmt.py)',
               f'# dotnet-dump {ver}; core sha256 {sos_threads.sha256(core)}',
               f'# setup: setsymbolserver -disable; setclrpath {shown}']
        text = sos_threads.run(dd, core, setup, [f'dumpmt {mt}' for mt in mts])
        # Each output starts with its Parent line (SOS 10.0.750501; EEClass follows on .NET 8).
        blocks = [b for b in re.split(r'(?m)^(?=Parent: )', text) if b.strip()]
        if len(blocks) != len(mts):
            sos_threads.die(f'dumpmt: {len(blocks)} outputs for {len(mts)} MethodTables:\n{text}')
        for mt, b in zip(mts, blocks):
            out += [f'### dumpmt {mt}', b.rstrip('\n')]
        with open(os.path.join(sos_threads.DUMPS, f'{a.name}.sos-dumpmt.txt'), 'w',
                  encoding='utf-8') as f:
            f.write('\n'.join(out) + '\n')
    finally:
        if tmp:
            os.unlink(tmp.name)


if __name__ == '__main__':
    main()
