#!/usr/bin/env python3
"""sos_heaprefs.py: SOS's dumpobjgcrefs, pathto, memory display (db dw dd dq dp dc da du),
ephrefs and ephtoloh on a corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_heaprefs.py NAME [--core PATH]

Runs dotnet-dump offline (dumps/tools/sosrun.py: `setsymbolserver -disable`, `setclrpath` to the
runtime pack of the dump's build), each command in a session of its own, and writes
dumps/NAME.sos-heaprefs.txt with one `### CMD` section per command. The objects come from
SOS's own `gcroot` output recorded in dumps/NAME.sos-gcroot.txt (its `-> ADDR TYPE` chains),
so the choice is independent of dumpshell:

  ### dumpobjgcrefs ADDR    the first object of each type met in the chains (not the last of a
                            chain), except a chain's first `System.Object[]` (the statics
                            array), at most 10 of those listing at most 40 references (the
                            file is kept small), and the first System.String (none)
  ### pathto A B            the first and last object of chains of 3 objects or more, at
                            most 6 pairs, and one reversed (usually no path)
  ### db|dw|dd|dq|dp|dc A   the first System.String of the chains
  ### du A+0xc / da A+0xc   its characters (the terminating zero after them)
  ### ephrefs, ephtoloh     the whole heap

tests/tests/sos_heaprefs.rs compares dumpshell's output with these files.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sosrun  # noqa: E402

MAX_ROWS = 40
LINK = re.compile(r'^\s+-> ([0-9a-f]+)\s+(\S.*?)\s*(\(.*\))?\s*$')


def chains(name):
    """The `-> ADDR TYPE` chains of SOS's gcroot truth, each a list of (address, type)."""
    path = os.path.join(sosrun.DUMPS, f'{name}.sos-gcroot.txt')
    if not os.path.isfile(path):
        sosrun.die(f'no {path}: the objects are chosen from SOS\'s gcroot output')
    out, cur = [], []
    with open(path, encoding='utf-8') as f:
        for l in f:
            m = LINK.match(l)
            if m:
                cur.append((int(m.group(1), 16), m.group(2)))
            elif cur:
                out.append(cur)
                cur = []
    if cur:
        out.append(cur)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    a = ap.parse_args()
    cs = chains(a.name)
    if not cs:
        sosrun.die('no chains in the gcroot truth')
    refs, types = [], set()
    for c in cs:
        for i, (addr, ty) in enumerate(c[:-1]):
            if i == 0 and ty == 'System.Object[]':
                continue
            if ty not in types:
                types.add(ty)
                refs.append(addr)
    none = next((addr for c in cs for addr, ty in c if ty == 'System.String'), None)
    pairs = []
    for c in cs:
        p = (c[0][0], c[-1][0])
        if len(c) >= 3 and p not in pairs and len(pairs) < 6:
            pairs.append(p)
    if pairs:
        pairs.append((pairs[0][1], pairs[0][0]))
    cmds = [f'pathto {x:x} {y:x}' for x, y in pairs]
    s = next((addr for c in cs for addr, ty in c if ty == 'System.String'), None)
    if s:
        cmds += [f'{d} {s:x}' for d in ['db', 'dw', 'dd', 'dq', 'dp', 'dc']]
        cmds += [f'du {s + 0xc:x}', f'da {s + 0xc:x}']
    cmds += ['ephrefs', 'ephtoloh']
    with sosrun.Dump(a.name, a.core) as d:
        out = d.header("SOS's dumpobjgcrefs, pathto, memory display, ephrefs, ephtoloh "
                       "(dumps/tools/sos_heaprefs.py)")
        kept = 0
        for x in refs:
            if kept == 10:
                break
            cmd = f'dumpobjgcrefs {x:x}'
            text = d.run([cmd]).rstrip('\n')
            if text.count('\n') > MAX_ROWS:
                continue  # a long array: the file is kept small
            out += [f'### {cmd}', text]
            kept += 1
        if none:
            cmd = f'dumpobjgcrefs {none:x}'
            out += [f'### {cmd}', d.run([cmd]).rstrip('\n')]
        for cmd in cmds:
            out += [f'### {cmd}', d.run([cmd]).rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-heaprefs.txt'), out)


if __name__ == '__main__':
    main()
