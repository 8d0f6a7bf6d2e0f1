#!/usr/bin/env python3
"""sos_heapnear.py: SOS's listnearobj, dumpheap -thinlock, analyzeoom and eeheap -loader on a
corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_heapnear.py NAME [--core PATH]

Runs dotnet-dump offline (dumps/tools/sosrun.py: `setsymbolserver -disable`, `setclrpath` to the
runtime pack of the dump's build), each command in a session of its own, and writes
dumps/NAME.sos-heapnear.txt with one `### CMD` section per command:

  ### listnearobj ADDR   for addresses chosen from SOS's own `dumpheap` and `eeheap -gc`
                         output (the choice is recorded in a `#` line before each):
                         the heap's first object; an object in the middle of the listing; an
                         address 0x18 inside one (of at least 0x40 bytes); an address 0x10
                         inside the first Free object not first on its segment; an unaligned
                         address (an object + 3); 0x100 past the allocated end of the first
                         segment eeheap -gc lists with room before its committed end; the last
                         object of the listing; 0x1000 (on no segment)
  ### dumpheap -thinlock
  ### analyzeoom
  ### eeheap -loader

tests/tests/sos_heapnear.rs compares dumpshell's output with these files.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sosrun  # noqa: E402

OBJ = re.compile(r'^\s*([0-9a-f]{8,16})\s+([0-9a-f]{8,16})\s+([0-9,]+)\s*(Free)?\s*$')
SEG = re.compile(r'^\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    a = ap.parse_args()
    with sosrun.Dump(a.name, a.core) as d:
        out = d.header("SOS's listnearobj, dumpheap -thinlock, analyzeoom, eeheap -loader "
                       "(dumps/tools/sos_heapnear.py)")
        objs = []
        text = d.run(['dumpheap'])
        for l in text.splitlines():
            m = OBJ.match(l)
            if m:
                objs.append((int(m.group(1), 16), int(m.group(3).replace(',', '')),
                             m.group(4) is not None))
        if len(objs) < 10:
            sosrun.die(f'dumpheap listed {len(objs)} objects:\n{text[:2000]}')
        picks = [(objs[0][0], "the heap's first object")]
        mid = objs[len(objs) // 2]
        picks.append((mid[0], 'an object in the middle of the listing'))
        big = next((o for o in objs[len(objs) // 3:] if not o[2] and o[1] >= 0x40), None)
        if big:
            picks.append((big[0] + 0x18, f'0x18 inside the object at {big[0]:x} ({big[1]:#x} bytes)'))
        free = next((o for i, o in enumerate(objs) if o[2] and i > 0 and not objs[i - 1][2]
                     and o[1] >= 0x20), None)
        if free:
            picks.append((free[0] + 0x10, f'0x10 inside the Free object at {free[0]:x} ({free[1]:#x} bytes)'))
        picks.append((mid[0] + 3, f'the object at {mid[0]:x} + 3 (unaligned)'))
        for l in d.run(['eeheap -gc']).splitlines():
            m = SEG.match(l)
            if m:
                alloc, committed = int(m.group(3), 16), int(m.group(4), 16)
                if alloc + 0x100 < committed:
                    picks.append((alloc + 0x100, f'0x100 past the allocated end {alloc:x} of segment {m.group(1)}'))
                    break
        picks.append((objs[-1][0], "the listing's last object"))
        picks.append((0x1000, 'an address on no segment'))
        for addr, why in picks:
            cmd = f'listnearobj {addr:x}'
            out += [f'### {cmd}', f'# {why}', d.run([cmd]).rstrip('\n')]
        for cmd in ['dumpheap -thinlock', 'analyzeoom', 'eeheap -loader']:
            out += [f'### {cmd}', d.run([cmd]).rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-heapnear.txt'), out)


if __name__ == '__main__':
    main()
