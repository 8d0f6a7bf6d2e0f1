#!/usr/bin/env python3
"""sos_dumpmt.py: SOS's dumpmt of the generic type definitions' own MethodTables of a corpus dump.

    python3 dumps/tools/sos_dumpmt.py NAME [--core PATH]

The MethodTables are those SOS's token2ee gave for a generic TypeDef (its `Name:` has
`<T1`...) in dumps/NAME.sos-threads.txt or dumps/NAME.sos-modules.txt (dumps/tools/
sos_threads.py): a generic type's definition, whose type arguments are its own generic
variables. Runs dotnet-dump 10.0.750501 offline (dumps/tools/sosrun.py) and writes
dumps/NAME.sos-dumpmt.txt: `### dumpmt <MethodTable>` and SOS's text (its `Name:` line is
the DAC's GetMethodTableName). tests/tests/sos_threads.rs compares dumpshell's dumpmt names.
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
    a = ap.parse_args()
    mts = []
    for kind in ('sos-threads', 'sos-modules'):
        p = os.path.join(sosrun.DUMPS, f'{a.name}.{kind}.txt')
        if os.path.isfile(p):
            text = open(p, encoding='utf-8').read()
            for m in re.finditer(r'(?m)^MethodTable: ([0-9a-f]{16})\nName:        \S*<T1[>,]', text):
                if m.group(1) not in mts:
                    mts.append(m.group(1))
    if not mts:
        sosrun.die(f'{a.name}: no generic type definition in its token2ee truth')
    with sosrun.Dump(a.name, a.core) as d:
        out = d.header("SOS's dumpmt of generic type definitions (dumps/tools/sos_dumpmt.py)")
        # Each output starts with its Parent line (SOS 10.0.750501; EEClass follows on .NET 8).
        for mt, b in zip(mts, d.run_split([f'dumpmt {mt}' for mt in mts], 'Parent: ')):
            out += [f'### dumpmt {mt}', b.rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-dumpmt.txt'), out)


if __name__ == '__main__':
    main()
