#!/usr/bin/env python3
"""sos_pdb.py: SOS's source lines (and local names) for a corpus dump, with the app's PDB.

    python3 dumps/tools/sos_pdb.py NAME [--locals] [--core PATH]

Runs the dotnet tool dotnet-dump (`dotnet tool install -g dotnet-dump --version 10.0.750501`;
$DOTNET_DUMP overrides the path) on dumps/NAME.dmp.zst (decompressed into a temporary file, or
--core: the uncompressed core) with the app's portable PDB from dumps/pdbs/ (the one whose id the
dump's dll names, see dumps/pdbs/README.md, or dumps/pdbs-ahead/ for the .NET 11 dumps: --pdb-dir overrides; the
program is the manifest's `program`, else the dump's name up to `-net`) and the runtime's DAC from its
NuGet runtime pack, and writes

  dumps/NAME.sos-lines.txt    `clrstack -all` ([file @ line] per frame), then `ip2md <IP>` for
                              each IP of a frame with a line (the method's token, MethodDesc, ...),
                              then `clrthreads` and `pe -lines -nested <object>` for each exception
                              object it lists as a thread's last thrown one and for their inner
                              exceptions (each frame of the exception's recorded trace with
                              [file @ line])
  dumps/NAME.sos-locals.txt   (--locals) `clrstack -a -all` (the DAC walk: parameters by name,
                              locals by slot location and value; SOS prints no local names
                              there), then per OS thread `setthread --tid <id>` + `clrstack -i -a`
                              (the ICorDebug walk: parameters and locals with names from the PDB
                              and values), then `ip2md <IP>` for each frame of the app's dll

Each file: a header of `#` lines (dump, dotnet-dump version, core sha256, PDB path and id, the
setup commands), then one section per command: a line `### <command>` and what dotnet-dump printed
for it (its "Loading core dump" line and the setup commands' echo left out). Every section runs in
its own `dotnet-dump analyze <core> -c <setup>... -c <command> -c exit` (a failing command ends a
session: the others must not be lost).

How SOS is made to print lines: `setsymbolserver -disable` (no symbol server: nothing is
downloaded), `setsymbolserver -directory <folder holding <app>.pdb>` (SOS opens the PDB only when
its id is the one the dll's CodeView entry names: a PDB of another build prints no lines), and
`setclrpath <pack>/runtimes/linux-x64/native` (the DAC: the dump's recorded runtime path does not
exist here), and that folder as a symbol directory too: SOS finds the runtime's libcoreclr.so there
by build id and reads its file version. SOS must know that version: `ConvertNativeToIlOffset`
(dotnet/diagnostics src/SOS/Strike/util.cpp) asks the DAC's `GetILOffsetsByAddress` only when
`IsRuntimeVersionAtLeast(5)`; with the version unknown (`runtimes` prints `runtime 0.0`: the
recorded path is absent and the file not found) it takes its pre-.NET 5 fallback
`GetILOffsetFromAddressMap`, which walks `GetILAddressMap` (the map of the method's current
native code, not of the frame's code version) and takes an entry whose range is empty (two
bounds entries at one native offset: a call instruction and its statement, an IL offset and an
epilog) as open-ended, so a frame after it gets that entry's line. The header records the
version SOS knew (`runtimes`); an unknown one is refused.

For a gcore dump whose dll pages are not in the core, `--image-dir` (default
dumps/images/NAME when present) is added as a symbol directory too, where SOS finds the dll.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DUMPS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pdbkey  # noqa: E402
from sosrun import SETUP_ECHO, TIMEOUT, die, dotnet_dump, sha256  # noqa: E402


class Session:
    def __init__(self, dd, core, setup):
        self.dd, self.core, self.setup = dd, core, setup

    def run(self, *cmds):
        args = [self.dd, 'analyze', self.core]
        for c in list(self.setup) + list(cmds):
            args += ['-c', c]
        args += ['-c', 'exit']
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
            out = p.stdout + p.stderr
            if p.returncode != 0:
                out += f'(dotnet-dump exit status {p.returncode})\n'
        except subprocess.TimeoutExpired:
            out = f'(dotnet-dump timed out after {TIMEOUT} s)\n'
        return ''.join(l for l in out.splitlines(keepends=True) if not SETUP_ECHO.match(l))


FRAME_LINE = re.compile(r'^([0-9A-Fa-f]{16}) ([0-9A-Fa-f]{16}) (.*) \[(.+) @ (\d+)\]\s*$')
ICD_FRAME = re.compile(r'^([0-9A-Fa-f]{16}) ([0-9a-fA-F]{16}) \[[A-Z]+\] .* \((.+)\)\s*$')
# a clrthreads row's last thrown exception: `System.InvalidOperationException 00007f2c0c010e28`
THREAD_EXCEPTION = re.compile(r' \S+ ([0-9a-f]{16})( \(nested exceptions\))?\s*$')
INNER = re.compile(r'^InnerException: .*Use printexception ([0-9A-Fa-f]{16}) to see more', re.M)
THREAD = re.compile(r'^OS Thread Id: 0x([0-9a-fA-F]+)')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--pdb-dir', help='folder holding the PDB (default: found in dumps/pdbs by id)')
    ap.add_argument('--image-dir', help='folder with image files the core lacks')
    ap.add_argument('--locals', action='store_true', help='also write NAME.sos-locals.txt')
    ap.add_argument('--out-dir', default=DUMPS)
    a = ap.parse_args()
    dd = dotnet_dump()
    ver = subprocess.run([dd, '--version'], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(DUMPS, f'{a.name}.manifest.json'), encoding='utf-8') as f:
        m = json.load(f)
    rt = m['runtime']['version']
    prog = m.get('program') or a.name.split('-net')[0]
    # servergc runs hang's program, crashorder crash's (built as crash-9.0.22-fd-false)
    prog = {'servergc': 'hang', 'crashorder': 'crash'}.get(prog, prog)
    pack = os.path.join(os.environ.get('NUGET_PACKAGES') or os.path.expanduser('~/.nuget/packages'),
                        'microsoft.netcore.app.runtime.linux-x64', rt, 'runtimes/linux-x64/native')
    if not os.path.isfile(os.path.join(pack, 'libmscordaccore.so')):
        die(f'no DAC in {pack} (dumps/fetch-frameworks.sh restores the packs)')
    tmp = None
    core = a.core
    if not core:
        tmp = tempfile.NamedTemporaryFile(prefix=f'{a.name}.', suffix='.dmp', delete=False,
                                          dir=os.environ.get('TMPDIR', '/tmp'))
        tmp.close()
        subprocess.run(['zstd', '-d', '-q', '-f', os.path.join(DUMPS, f'{a.name}.dmp.zst'),
                        '-o', tmp.name], check=True)
        core = tmp.name
    try:
        run(a, dd, ver, core, prog, pack)
    finally:
        if tmp:
            os.unlink(tmp.name)


def find_pdb_dir(name, prog, core):
    """The kept PDB whose GUID the core's dll names (CodeView RSDS records in the core)."""
    want = set()
    pat = re.compile(rb'RSDS(.{16}).{4}[^\0]*/' + re.escape(prog.encode()) + rb'\.pdb\0', re.S)
    with open(core, 'rb') as f:
        prev = b''
        for chunk in iter(lambda: f.read(1 << 24), b''):
            buf = prev + chunk
            for x in pat.finditer(buf):
                want.add(x.group(1))
            prev = buf[-4096:]
    found = []
    # pdbs-ahead/: the PDBs of dumps of a runtime family dumpshell does not read yet (.NET 11)
    for p in (glob.glob(os.path.join(DUMPS, 'pdbs', '*', '*', f'{prog}.pdb')) +
              glob.glob(os.path.join(DUMPS, 'pdbs-ahead', '*', '*', f'{prog}.pdb'))):
        with open(p, 'rb') as f:
            if pdbkey.pdb_id(f.read())[:16] in want:
                found.append(p)
    return found


def run(a, dd, ver, core, prog, pack):
    if a.pdb_dir:
        pdbs = glob.glob(os.path.join(a.pdb_dir, f'{prog}.pdb'))
    else:
        pdbs = find_pdb_dir(a.name, prog, core)
        if not pdbs and a.image_dir is None and os.path.isdir(os.path.join(DUMPS, 'images', a.name)):
            # a gcore core lacks the dll's pages: its CodeView entry is in the kept dll
            pdbs = find_pdb_dir(a.name, prog, os.path.join(DUMPS, 'images', a.name, f'{prog}.dll'))
    if len(pdbs) != 1:
        die(f'{a.name}: {len(pdbs)} kept PDBs match the dump\'s dll: {pdbs}')
    pdb = pdbs[0]
    with open(pdb, 'rb') as f:
        pid = pdbkey.pdb_id(f.read()).hex()
    image_dir = a.image_dir
    if image_dir is None and os.path.isdir(os.path.join(DUMPS, 'images', a.name)):
        image_dir = os.path.join(DUMPS, 'images', a.name)
    setup = ['setsymbolserver -disable', f'setsymbolserver -directory {os.path.dirname(pdb)}']
    if image_dir:
        setup.append(f'setsymbolserver -directory {os.path.abspath(image_dir)}')
    setup.append(f'setsymbolserver -directory {pack}')
    setup.append(f'setclrpath {pack}')
    s = Session(dd, core, setup)
    # The runtime's version as SOS knows it (see the module doc: unknown sends SOS's IL offset
    # lookup down its pre-.NET 5 path).
    rts = s.run('runtimes')
    known = re.search(r'^#0 \.NET Core runtime (\S+) at ', rts, re.M)
    if not known or known.group(1) == '0.0':
        die(f'{a.name}: SOS does not know the runtime\'s version (runtimes: {rts.strip()[:300]!r})')
    rel = lambda p: os.path.relpath(p, os.path.dirname(DUMPS))  # noqa: E731
    nuget_rel = lambda p: re.sub(r'^.*?/packages/', '<nuget packages>/', p)  # noqa: E731
    shown = ['setsymbolserver -disable', f'setsymbolserver -directory {rel(os.path.dirname(pdb))}']
    if image_dir:
        shown.append(f'setsymbolserver -directory {rel(os.path.abspath(image_dir))}')
    shown.append(f'setsymbolserver -directory {nuget_rel(pack)}')
    shown.append(f'setclrpath {nuget_rel(pack)}')
    header = [
        f'# {a.name}: SOS with the app\'s PDB (dumps/tools/sos_pdb.py)',
        f'# dotnet-dump {ver}; core sha256 {sha256(core)}',
        f'# PDB {rel(pdb)} (id {pid})',
        '# setup: ' + '; '.join(shown),
        f'# runtime as SOS knows it: {known.group(1)}',
    ]

    # ---- lines
    out = list(header)
    stacks = s.run('clrstack -all')
    out += ['### clrstack -all', stacks.rstrip('\n')]
    ips = []
    for l in stacks.splitlines():
        x = FRAME_LINE.match(l)
        if x and x.group(2).upper() not in ips:
            ips.append(x.group(2).upper())
    if not ips:
        die(f'{a.name}: SOS printed no [file @ line] (output kept in the section above):\n{stacks}')
    for ip in ips:
        out += [f'### ip2md {ip}', s.run(f'ip2md {ip}').rstrip('\n')]
    threads = s.run('clrthreads')
    out += ['### clrthreads', threads.rstrip('\n')]
    objs = []
    for l in threads.splitlines():
        x = THREAD_EXCEPTION.search(l)
        if x and x.group(1) not in objs:
            objs.append(x.group(1))
    i = 0
    while i < len(objs):
        text = s.run(f'pe -lines -nested {objs[i]}')
        out += [f'### pe -lines -nested {objs[i]}', text.rstrip('\n')]
        for x in INNER.finditer(text):  # and each inner exception's
            if x.group(1).lower() not in objs:
                objs.append(x.group(1).lower())
        i += 1
    path = os.path.join(a.out_dir, f'{a.name}.sos-lines.txt')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')
    print(f'{path}: {len(ips)} frame IPs with lines, {len(objs)} thread exceptions', file=sys.stderr)

    # ---- locals
    if not a.locals:
        return
    out = list(header)
    out += ['### clrstack -a -all', s.run('clrstack -a -all').rstrip('\n')]
    tids = [int(x.group(1), 16) for x in map(THREAD.match, stacks.splitlines()) if x]
    ips = []
    for t in tids:
        text = s.run(f'setthread --tid {t}', 'clrstack -i -a')
        out += [f'### setthread --tid {t}; clrstack -i -a', text.rstrip('\n')]
        for l in text.splitlines():
            x = ICD_FRAME.match(l)
            if x and x.group(3).endswith(f'/{prog}.dll') and x.group(2).upper() not in ips:
                ips.append(x.group(2).upper())
    for ip in ips:
        out += [f'### ip2md {ip}', s.run(f'ip2md {ip}').rstrip('\n')]
    path = os.path.join(a.out_dir, f'{a.name}.sos-locals.txt')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')
    print(f'{path}: {len(tids)} threads, {len(ips)} app frame IPs', file=sys.stderr)


if __name__ == '__main__':
    main()
