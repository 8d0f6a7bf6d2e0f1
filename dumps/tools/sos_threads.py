#!/usr/bin/env python3
"""sos_threads.py: SOS's thread (and module list) commands on a corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_threads.py NAME [--core PATH] [--modules]

Runs the dotnet tool dotnet-dump offline as dumps/tools/sosrun.py does (the runtime's DAC from
its NuGet runtime pack, no symbol server) on dumps/NAME.dmp.zst (decompressed into a temporary
file, or --core: the uncompressed core), and writes
dumps/NAME.sos-threads.txt:

  ### clrthreads                  the managed threads (its DBG column: the debugger's index)
  ### setthread                   the dump's threads with their debugger indexes
  ### setthread <i>; registers    for each index i: the registers SOS prints for that thread
  ### setthread <i>; clrstack     for each index i: SOS's clrstack of the current thread (its
                                  "OS Thread Id" header, or that the thread is not managed)
  ### clrmodules -v               the runtime's modules: image base and size, Module, Assembly,
                                  layout, path
  ### dumpassembly <addr>         for each AssemblyAddress clrmodules -v lists
  ### token2ee <module> <token>   the app's TypeDef and MethodDef tokens 1-40 (its dll: the
                                  module clrmodules lists outside Microsoft.NETCore.App), CoreLib's
                                  1-16; and `token2ee * 02000002`
  ### threadstate <hex>           for each State value clrthreads printed, and ffffffff, 0

--modules writes only the clrmodules -v, dumpassembly and token2ee sections, into
dumps/NAME.sos-modules.txt (the .NET 11 dumps without a sos-threads truth).

A header of `#` lines names the dump, dotnet-dump's version, the core's sha256 and the setup.
Each `setthread <i>; <command>` section comes from one dotnet-dump session running every index in
turn (`-c "setthread 0" -c registers -c "setthread 1" -c registers ...`), its output cut where each
command's output starts (`cs = ` for registers, `OS Thread Id: ` for clrstack); every other section
from a session of its own. tests/tests/sos_threads.rs compares dumpshell with these files.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sosrun  # noqa: E402
from sosrun import die  # noqa: E402


def per_thread(d, count, command, start):
    """`setthread i; command` for every index in one session, cut where each output starts."""
    cmds = []
    for i in range(count):
        cmds += [f'setthread {i}', command]
    text = d.run(cmds)
    parts, cur = [], None
    for line in text.splitlines():
        if line.startswith(start):
            cur = []
            parts.append(cur)
        if cur is None:
            die(f'{command}: output before the first "{start}": {line!r}')
        cur.append(line)
    if len(parts) != count:
        die(f'{command}: {len(parts)} outputs for {count} threads:\n{text}')
    return ['\n'.join(p) for p in parts]


def module_sections(d):
    """The clrmodules -v, dumpassembly and token2ee sections."""
    out = []
    mods = d.run(['clrmodules -v'])
    out += ['### clrmodules -v', mods.rstrip('\n')]
    addrs = re.findall(r'(?m)^    AssemblyAddress: ([0-9A-F]+)$', mods)
    text = d.run([f'dumpassembly {x}' for x in addrs])
    blocks = [b for b in re.split(r'(?m)^(?=Parent Domain: )', text) if b.strip()]
    if not addrs or len(blocks) != len(addrs):
        die(f'dumpassembly: {len(blocks)} outputs for {len(addrs)} assemblies:\n{text}')
    for x, b in zip(addrs, blocks):
        out += [f'### dumpassembly {x}', b.rstrip('\n')]
    # token2ee: the app's first TypeDef and MethodDef rows (and some past its tables), CoreLib's
    # first ones, each in one session cut at its `Module:` line; `*` in a session of its own.
    app = [l.rsplit('/', 1)[-1] for l in mods.splitlines()
           if l and not l.startswith(' ') and 'Microsoft.NETCore.App' not in l]
    queries = []
    for module in app[:1] + ['System.Private.CoreLib.dll']:
        n = 40 if module in app else 16
        queries += [(module, f'{k:02x}{rid:06x}') for k in (2, 6) for rid in range(1, n + 1)]
    text = d.run([f'token2ee {m} {t}' for m, t in queries])
    blocks = re.split(r'(?m)^(?=Module: )', text)
    blocks = [b for b in blocks if b.strip()]
    if len(blocks) != len(queries):
        die(f'token2ee: {len(blocks)} outputs for {len(queries)} tokens:\n{text}')
    for (m, t), b in zip(queries, blocks):
        out += [f'### token2ee {m} {t}', b.rstrip('\n')]
    out += ['### token2ee * 02000002', d.run(['token2ee * 02000002']).rstrip('\n')]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--modules', action='store_true',
                    help='only the module sections, into dumps/NAME.sos-modules.txt')
    a = ap.parse_args()
    with sosrun.Dump(a.name, a.core) as d:
        if a.modules:
            out = d.header("SOS's module commands (dumps/tools/sos_threads.py --modules)")
            out += module_sections(d)
            sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-modules.txt'), out)
            return
        out = d.header("SOS's thread commands (dumps/tools/sos_threads.py)")
        clrthreads = d.run(['clrthreads'])
        out += ['### clrthreads', clrthreads.rstrip('\n')]
        listing = d.run(['setthread'])
        out += ['### setthread', listing.rstrip('\n')]
        count = sum(1 for l in listing.splitlines() if re.match(r'^[ *]\d+ 0x[0-9A-F]+ \(\d+\)$', l))
        if count == 0:
            die(f'setthread listed no thread:\n{listing}')
        for i, r in enumerate(per_thread(d, count, 'registers', 'cs = ')):
            out += [f'### setthread {i}; registers', r]
        # clrstack's output starts with the thread's header, or for a thread that is not managed
        # with SOS's statement (its first line).
        stacks = d.run([c for i in range(count) for c in (f'setthread {i}', 'clrstack')])
        parts = re.split(r'(?m)^(?=OS Thread Id: )', stacks)
        parts = [p for p in parts if p.strip()]
        if len(parts) != count:
            die(f'clrstack: {len(parts)} outputs for {count} threads:\n{stacks}')
        for i, p in enumerate(parts):
            out += [f'### setthread {i}; clrstack', p.rstrip('\n')]
        out += module_sections(d)
        states = []
        for l in clrthreads.splitlines():
            x = re.match(r'^\s*(\d+|XXXX)\s+\d+\s+\S+\s+[0-9A-F]{16}\s+([0-9a-f]+)\s', l)
            if x and x.group(2) not in states:
                states.append(x.group(2))
        for st in states + ['ffffffff', '0']:
            out += [f'### threadstate {st}', d.run([f'threadstate {st}']).rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{a.name}.sos-threads.txt'), out)


if __name__ == '__main__':
    main()
