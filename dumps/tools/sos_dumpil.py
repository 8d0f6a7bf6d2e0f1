#!/usr/bin/env python3
"""sos_dumpil.py: SOS's dumpil of the app's methods of a corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_dumpil.py NAME [--core PATH] [--rids N]

Runs dotnet-dump offline (dumps/tools/sosrun.py) on dumps/NAME.dmp.zst and writes
dumps/NAME.sos-dumpil.txt:

  ### dumpil <MethodDesc>        SOS's dumpil of each MethodDesc that SOS's token2ee gives for
                                the app's MethodDef tokens 1..N (default 200), code or not
  ### dumpil <object>           SOS's dumpil of each System.Reflection.Emit.DynamicMethod
                                object on the heap (dynamic IL: the resolver's code array)

The app is the first module `clrmodules` lists outside Microsoft.NETCore.App. Each kind of
section comes from one session running every command in turn, its output cut where each
command's output starts. A header of `#` lines names the dump, dotnet-dump's version and the
core's sha256. tests/tests/sos_dumpil.rs compares dumpshell's dumpil with these files.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sosrun  # noqa: E402

# How each dumpil output starts: a MethodDesc with IL, one without, GetILAddress's errors (each
# followed by `Unable to retrieve IL for this method`), a dynamic method and its errors.
START = (r'(?:ilAddr is |This method has no IL body|Found profiler modified IL|Unknown error in '
         r'reading function IL|FindIL failed|error in import|bad import|Unable to get module|'
         r'This is dynamic IL|Error gathering dynamic info|Unable to print IL|\S+ is not a MethodDesc)')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--rids', type=int, default=200, help='MethodDef rows asked (default 200)')
    a = ap.parse_args()
    with sosrun.Dump(a.name, a.core) as d:
        out = d.header("SOS's dumpil (dumps/tools/sos_dumpil.py)")
        mds = []
        for b in sosrun.app_methods(d, a.rids):
            md = re.search(r'(?m)^MethodDesc:\s+([0-9a-f]+)$', b)
            if md:
                mds.append(md.group(1))
        heap = d.run(['dumpheap -type System.Reflection.Emit.DynamicMethod -short'])
        objs = [l.strip() for l in heap.splitlines() if re.fullmatch(r'[0-9a-f]{8,16}', l.strip())]
        # Only exact DynamicMethod objects (not RTDynamicMethod and the like).
        objs = [o for o in objs
                if re.search(r'(?m)^Name:\s+System\.Reflection\.Emit\.DynamicMethod$',
                             d.run([f'dumpobj {o}']))]
        cmds = [f'dumpil {x}' for x in mds + objs]
        parts = []
        while len(parts) < len(cmds):
            # A command that fails (`Unable to retrieve IL`) ends its session: the next session
            # starts at the command after it.
            text = d.run(cmds[len(parts):])
            got = [p for p in re.split(f'(?m)^(?={START})', text) if p.strip()]
            if not got:
                sosrun.die(f'no output for {cmds[len(parts)]}:\n{text}')
            parts += got
        if len(parts) != len(cmds):
            sosrun.die(f'{len(parts)} outputs for {len(cmds)} commands')
        for c, b in zip(cmds, parts):
            out += [f'### {c}', b.rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-dumpil.txt'), out)


if __name__ == '__main__':
    main()
