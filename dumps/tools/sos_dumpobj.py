#!/usr/bin/env python3
"""sos_dumpobj.py: SOS's dumpobj (and dumpalc) of a spread of objects of a corpus dump.

    python3 dumps/tools/sos_dumpobj.py NAME [--core PATH]

The objects come from SOS's own output: `dumpheap -stat` names the types, `dumpheap -mt <MT>`
gives each chosen type's objects (the first is taken; for System.String also the smallest,
the largest and a middle one), `syncblk` the objects owning a sync block and
`dumpheap -thinlock` those holding a thin lock. The chosen types: Free, the strings, arrays
(primitive, reference, struct, multi-dimensional), boxed primitives and structs, exceptions,
delegates, tasks, dictionaries, threads (thread statics), generic instantiations and every type
outside System/Microsoft/Internal/Interop (the app's). Runs dotnet-dump 10.0.750501 offline
(dumps/tools/sosrun.py) and writes dumps/NAME.sos-dumpobj.txt: `### dumpobj <addr>` (a few as
`### dumpobj -nofields <addr>`) and `### dumpalc <addr>` for a handful, each with SOS's text.
tests/tests/sos_dumpobj.rs compares dumpshell's dumpobj and dumpalc with it.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sosrun  # noqa: E402

STAT = re.compile(r'^([0-9a-f]+)\s+([\d,]+)\s+([\d,]+)\s+(.+)$')
HEAP_ROW = re.compile(r'^\s*([0-9a-f]{12,16})\s+([0-9a-f]{12,16})\s+([\d,]+)')
# Where one command's output begins when several share a session.
START = r'(?:<Note: |Name:        |Free Object|Invalid )'
MAX_OBJECTS = 45
# How many types of each kind, in this order.
QUOTA = [('free', 1), ('string', 1), ('array', 7), ('boxed', 3), ('exception', 2),
         ('delegate', 2), ('task', 2), ('dictionary', 1), ('statics', 4), ('generic', 3),
         ('app', 10)]
ARRAYS = ['System.Int32[]', 'System.Byte[]', 'System.Char[]', 'System.Object[]', 'System.String[]',
          'System.Double[]', 'System.Boolean[]']


def kinds(name):
    """Why a type is interesting (empty: it is not)."""
    k = []
    if name == 'Free':
        k.append('free')
    if name == 'System.String':
        k.append('string')
    if name.endswith(']'):
        k.append('array')
    if name in ('System.Int32', 'System.Int64', 'System.Boolean', 'System.Double', 'System.Char',
                'System.Guid', 'System.DateTime', 'System.IntPtr', 'System.Byte', 'System.Decimal',
                'System.TimeSpan', 'System.UInt64', 'System.Single'):
        k.append('boxed')
    if name.endswith('Exception'):
        k.append('exception')
    if re.match(r'^System\.(Func|Action|Predicate|Comparison|EventHandler|Reflection\.MemberFilter|'
                r'Threading\.(ThreadStart|TimerCallback|WaitCallback|ContextCallback))\b', name):
        k.append('delegate')
    if name.startswith('System.Threading.Tasks.Task'):
        k.append('task')
    if re.match(r'^System\.Collections\.Generic\.Dictionary<[^+]*>$', name):
        k.append('dictionary')
    if name in ('System.Threading.Thread', 'System.RuntimeType', 'System.Globalization.CultureInfo',
                'System.Object', 'System.Diagnostics.Process', 'System.Text.StringBuilder'):
        k.append('statics')
    if '<' in name and not name.endswith(']'):
        k.append('generic')
    if not re.match(r'^(System|Microsoft|Internal|Interop|Free$)', name):
        k.append('app')
    return k


def split(d, cmds, start):
    """SOS's text of each of `cmds`: one session cut at `start`, or a session each when the cut
    does not give one part per command."""
    text = d.run(cmds)
    parts = [p for p in re.split(f'(?m)^(?={start})', text) if p.strip()]
    if len(parts) == len(cmds):
        return parts
    return [d.run([c]) for c in cmds]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    a = ap.parse_args()
    with sosrun.Dump(a.name, a.core) as d:
        types = []
        for line in d.run(['dumpheap -stat']).splitlines():
            m = STAT.match(line.strip())
            if m and m.group(1) != 'MT':
                types.append((m.group(1), m.group(4)))
        chosen = []
        for kind, quota in QUOTA:
            cands = [t for t in types if kind in kinds(t[1]) and t not in chosen]
            if kind == 'array':
                pref = [t for n in ARRAYS for t in cands if t[1] == n]
                cands = pref + [t for t in cands if '[,' in t[1] and t not in pref] + \
                    [t for t in cands if t not in pref]
            for t in cands:
                if quota and t not in chosen:
                    chosen.append(t)
                    quota -= 1
        heaps = split(d, [f'dumpheap -mt {mt}' for mt, _ in chosen], r'\s+Address\s+MT\s+Size')
        addrs = []
        for (mt, name), text in zip(chosen, heaps):
            rows = [(int(m.group(3).replace(',', '')), m.group(1))
                    for m in map(HEAP_ROW.match, text.splitlines()) if m]
            if not rows:
                continue
            picks = [rows[0][1]]
            if name == 'System.String':
                by = sorted(rows)
                picks += [by[0][1], by[-1][1], by[len(by) // 2][1]]
            for p in picks:
                if p not in addrs:
                    addrs.append(p)
        addrs = addrs[:MAX_OBJECTS]
        locked = []
        for line in d.run(['syncblk']).splitlines():
            f = line.split()
            # Index SyncBlock MonitorHeld Recursion Owning Thread Info  SyncBlock Owner
            if len(f) >= 8 and f[0].isdigit() and re.fullmatch(r'[0-9a-f]{12,16}', f[-2]):
                locked.append(f[-2])
        for line in d.run(['dumpheap -thinlock']).splitlines():
            m = re.match(r'^\s*([0-9a-f]{12,16})\s+\(ThinLock\)', line)
            if m:
                locked.append(m.group(1))
        for p in locked[:3]:
            if p not in addrs:
                addrs.append(p)
        cmds = [f'dumpobj {p}' for p in addrs]
        cmds += [f'dumpobj -nofields {p}' for p in (addrs[1], addrs[len(addrs) // 2])]
        # dumpalc: a Free object, a string, an array, two of the app's objects
        alc, apps = [], 0
        for (mt, name), text in zip(chosen, heaps):
            m = next(filter(None, map(HEAP_ROW.match, text.splitlines())), None)
            if not m:
                continue
            k = kinds(name)
            if 'app' in k and apps < 2:
                apps += 1
                alc.append(m.group(1))
            elif name in ('Free', 'System.String', 'System.Object[]', 'System.Threading.Thread'):
                alc.append(m.group(1))
        cmds += [f'dumpalc {p}' for p in alc]
        out = d.header("SOS's dumpobj and dumpalc of a spread of objects (dumps/tools/sos_dumpobj.py)")
        for c, text in zip(cmds, split(d, cmds, START)):
            out += [f'### {c}', text.rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-dumpobj.txt'), out)


if __name__ == '__main__':
    main()
