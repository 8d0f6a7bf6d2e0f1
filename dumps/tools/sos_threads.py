#!/usr/bin/env python3
"""sos_threads.py: SOS's thread (and module list) commands on a corpus dump, as truth for dumpshell's.

    python3 dumps/tools/sos_threads.py NAME [--core PATH] [--modules]

Runs the dotnet tool dotnet-dump (`dotnet tool install -g dotnet-dump --version 10.0.750501`;
$DOTNET_DUMP overrides the path) on dumps/NAME.dmp.zst (decompressed into a temporary file, or
--core: the uncompressed core) with the runtime's DAC from its NuGet runtime pack (`setclrpath
<pack>/runtimes/linux-x64/native`; `setsymbolserver -disable`: nothing is downloaded), and writes
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
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DUMPS = os.path.dirname(HERE)
SETUP_ECHO = re.compile(r'^(Current symbol store settings:|-> (Directory|Cache|Server): |'
                        r'Set load path for DAC/DBI to |Loading core dump: )')


def die(msg):
    print(f'sos_threads.py: error: {msg}', file=sys.stderr)
    sys.exit(1)


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for b in iter(lambda: f.read(1 << 20), b''):
            h.update(b)
    return h.hexdigest()


def run(dd, core, setup, cmds):
    args = [dd, 'analyze', core]
    for c in list(setup) + list(cmds):
        args += ['-c', c]
    args += ['-c', 'exit']
    p = subprocess.run(args, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        out += f'(dotnet-dump exit status {p.returncode})\n'
    return ''.join(l for l in out.splitlines(keepends=True) if not SETUP_ECHO.match(l))


def per_thread(dd, core, setup, count, command, start):
    """`setthread i; command` for every index in one session, cut where each output starts."""
    cmds = []
    for i in range(count):
        cmds += [f'setthread {i}', command]
    text = run(dd, core, setup, cmds)
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


def module_sections(dd, core, setup):
    """The clrmodules -v, dumpassembly and token2ee sections."""
    out = []
    mods = run(dd, core, setup, ['clrmodules -v'])
    out += ['### clrmodules -v', mods.rstrip('\n')]
    addrs = re.findall(r'(?m)^    AssemblyAddress: ([0-9A-F]+)$', mods)
    text = run(dd, core, setup, [f'dumpassembly {x}' for x in addrs])
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
    text = run(dd, core, setup, [f'token2ee {m} {t}' for m, t in queries])
    blocks = re.split(r'(?m)^(?=Module: )', text)
    blocks = [b for b in blocks if b.strip()]
    if len(blocks) != len(queries):
        die(f'token2ee: {len(blocks)} outputs for {len(queries)} tokens:\n{text}')
    for (m, t), b in zip(queries, blocks):
        out += [f'### token2ee {m} {t}', b.rstrip('\n')]
    out += ['### token2ee * 02000002', run(dd, core, setup, ['token2ee * 02000002']).rstrip('\n')]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--modules', action='store_true',
                    help='only the module sections, into dumps/NAME.sos-modules.txt')
    a = ap.parse_args()
    dd = os.environ.get('DOTNET_DUMP') or os.path.expanduser('~/.dotnet/tools/dotnet-dump')
    if not os.access(dd, os.X_OK):
        die(f'dotnet-dump not found ({dd}): dotnet tool install -g dotnet-dump --version 10.0.750501')
    ver = subprocess.run([dd, '--version'], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(DUMPS, f'{a.name}.manifest.json'), encoding='utf-8') as f:
        rt = json.load(f)['runtime']['version']
    pack = os.path.join(os.environ.get('NUGET_PACKAGES') or os.path.expanduser('~/.nuget/packages'),
                        'microsoft.netcore.app.runtime.linux-x64', rt, 'runtimes/linux-x64/native')
    if not os.path.isfile(os.path.join(pack, 'libmscordaccore.so')):
        die(f'no DAC in {pack} (dumps/fetch-frameworks.sh restores the packs)')
    tmp = None
    core = a.core
    if not core:
        tmp = tempfile.NamedTemporaryFile(prefix=f'{a.name}.', suffix='.dmp', delete=False)
        tmp.close()
        subprocess.run(['zstd', '-d', '-q', '-f', os.path.join(DUMPS, f'{a.name}.dmp.zst'),
                        '-o', tmp.name], check=True)
        core = tmp.name
    try:
        setup = ['setsymbolserver -disable', f'setclrpath {pack}']
        shown = re.sub(r'^.*?/packages/', '<nuget packages>/', pack)
        out = [f'# {a.name}: SOS\'s thread commands (dumps/tools/sos_threads.py)',
               f'# dotnet-dump {ver}; core sha256 {sha256(core)}',
               f'# setup: setsymbolserver -disable; setclrpath {shown}']
        if a.modules:
            out[0] = f'# {a.name}: SOS\'s module commands (dumps/tools/sos_threads.py --modules)'
            out += module_sections(dd, core, setup)
            with open(os.path.join(DUMPS, f'{a.name}.sos-modules.txt'), 'w', encoding='utf-8') as f:
                f.write('\n'.join(out) + '\n')
            return
        clrthreads = run(dd, core, setup, ['clrthreads'])
        out += ['### clrthreads', clrthreads.rstrip('\n')]
        listing = run(dd, core, setup, ['setthread'])
        out += ['### setthread', listing.rstrip('\n')]
        count = sum(1 for l in listing.splitlines() if re.match(r'^[ *]\d+ 0x[0-9A-F]+ \(\d+\)$', l))
        if count == 0:
            die(f'setthread listed no thread:\n{listing}')
        for i, r in enumerate(per_thread(dd, core, setup, count, 'registers', 'cs = ')):
            out += [f'### setthread {i}; registers', r]
        # clrstack's output starts with the thread's header, or for a thread that is not managed
        # with SOS's statement (its first line).
        stacks = run(dd, core, setup, [c for i in range(count) for c in (f'setthread {i}', 'clrstack')])
        parts = re.split(r'(?m)^(?=OS Thread Id: )', stacks)
        parts = [p for p in parts if p.strip()]
        if len(parts) != count:
            die(f'clrstack: {len(parts)} outputs for {count} threads:\n{stacks}')
        for i, p in enumerate(parts):
            out += [f'### setthread {i}; clrstack', p.rstrip('\n')]
        out += module_sections(dd, core, setup)
        states = []
        for l in clrthreads.splitlines():
            x = re.match(r'^\s*(\d+|XXXX)\s+\d+\s+\S+\s+[0-9A-F]{16}\s+([0-9a-f]+)\s', l)
            if x and x.group(2) not in states:
                states.append(x.group(2))
        for st in states + ['ffffffff', '0']:
            out += [f'### threadstate {st}', run(dd, core, setup, [f'threadstate {st}']).rstrip('\n')]
        with open(os.path.join(DUMPS, f'{a.name}.sos-threads.txt'), 'w', encoding='utf-8') as f:
            f.write('\n'.join(out) + '\n')
    finally:
        if tmp:
            os.unlink(tmp.name)


if __name__ == '__main__':
    main()
