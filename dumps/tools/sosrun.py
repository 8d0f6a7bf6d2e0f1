#!/usr/bin/env python3
"""sosrun.py: runs SOS (dotnet-dump) offline on a corpus dump and records its output as truth.

    python3 dumps/tools/sosrun.py NAME KIND [--core PATH] [--dac-dir DIR] [--split REGEX] -- COMMAND...

writes dumps/NAME.KIND.txt (KIND as `sos-dumpil`): a header of `#` lines (the dump, dotnet-dump's
version, the core's sha256, the setup), then for each COMMAND a line `### COMMAND` and what SOS
printed for it. Each command runs in a session of its own (a failing command ends its session:
the others must not be lost), or with --split all in one session, its output cut before each
line matching REGEX (one match per command, checked).

It is also the module the other sos_*.py runners share (`import sosrun`):

- `Dump(name, core=None, dac_dir=None)`: the dump's runtime pack (its DAC: `setclrpath`; or
  --dac-dir), dotnet-dump, the uncompressed core (--core, or dumps/NAME.dmp.zst decompressed
  sparse into a temporary file, removed by `close()`; a context manager), and `header(title)`;
- `Dump.run(cmds)`: one `dotnet-dump analyze <core> -c <setup>... -c <cmd>... -c exit` session,
  its text with the setup's echo left out;
- `Dump.run_split(cmds, start)`: one session, cut before each line matching `start`;
- `each_dump(doc)`: the runners' `[--core-dir DIR] NAME...` command line, each dump opened;
- `app_module(d)`, `app_methods(d, rids)`: the app's dll and SOS's token2ee of its MethodDefs;
- `write(path, lines)`.

SOSRUN_DUMPS=DIR reads NAME.manifest.json and NAME.dmp.zst from DIR and writes the truth there
(the on-demand dumps of dumps/build/ondemand); the default is dumps/.

The setup: `setsymbolserver -disable` (nothing is downloaded) and `setclrpath` to the DAC of the
dump's exact build from its NuGet runtime pack (`Microsoft.NETCore.App.Runtime.linux-x64
<manifest's runtime version>` in ~/.nuget/packages or $NUGET_PACKAGES, restored by
dumps/fetch-frameworks.sh); for a build no feed serves (8.0.4), --dac-dir names a folder
holding its libmscordaccore.so (/work/shared/tools/dacs/linux-x64/8.0.4/libmscordaccore.so.xz,
decompressed), and the header records that DAC's sha256. dotnet-dump: `dotnet tool install -g dotnet-dump --version
10.0.750501`, or $DOTNET_DUMP.
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
# the corpus (the dumps, their manifests, the truths written); SOSRUN_DUMPS for another folder
# (dumps/build/ondemand)
DUMPS = os.environ.get('SOSRUN_DUMPS') or os.path.dirname(HERE)
SETUP_ECHO = re.compile(r'^(Current symbol store settings:|-> (Directory|Cache|Server): |'
                        r'Set load path for DAC/DBI to |Loading core dump: )')
TIMEOUT = 900


def die(msg):
    print(f'{os.path.basename(sys.argv[0])}: error: {msg}', file=sys.stderr)
    sys.exit(1)


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for b in iter(lambda: f.read(1 << 20), b''):
            h.update(b)
    return h.hexdigest()


def dotnet_dump():
    p = os.environ.get('DOTNET_DUMP') or os.path.expanduser('~/.dotnet/tools/dotnet-dump')
    if not os.access(p, os.X_OK):
        die(f'dotnet-dump not found ({p}): dotnet tool install -g dotnet-dump --version 10.0.750501')
    return p


def write(path, lines):
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')


class Dump:
    def __init__(self, name, core=None, dac_dir=None):
        self.name = name
        self.dd = dotnet_dump()
        self.version = subprocess.run([self.dd, '--version'], capture_output=True,
                                      text=True).stdout.strip()
        with open(os.path.join(DUMPS, f'{name}.manifest.json'), encoding='utf-8') as f:
            self.manifest = json.load(f)
        rt = self.manifest['runtime']['version']
        self.pack = os.path.abspath(dac_dir) if dac_dir else os.path.join(
            os.environ.get('NUGET_PACKAGES') or os.path.expanduser('~/.nuget/packages'),
            'microsoft.netcore.app.runtime.linux-x64', rt, 'runtimes/linux-x64/native')
        if not os.path.isfile(os.path.join(self.pack, 'libmscordaccore.so')):
            die(f'no DAC in {self.pack} (dumps/fetch-frameworks.sh restores the packs; '
                '--dac-dir names a folder with a libmscordaccore.so)')
        self.dac_dir = dac_dir
        self.setup = ['setsymbolserver -disable', f'setclrpath {self.pack}']
        self._tmp = None
        self.core = core
        if not core:
            tmp = tempfile.NamedTemporaryFile(prefix=f'{name}.', suffix='.dmp', delete=False)
            tmp.close()
            subprocess.run(['zstd', '-d', '-q', '-f', '--sparse',
                            os.path.join(DUMPS, f'{name}.dmp.zst'), '-o', tmp.name], check=True)
            self._tmp = self.core = tmp.name

    def close(self):
        if self._tmp:
            os.unlink(self._tmp)
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def header(self, title):
        shown = re.sub(r'^.*?/packages/', '<nuget packages>/', self.pack)
        if self.dac_dir:
            dac = sha256(os.path.join(self.pack, 'libmscordaccore.so'))
            shown = f'<--dac-dir: libmscordaccore.so sha256 {dac}>'
        return [f'# {self.name}: {title}',
                f'# dotnet-dump {self.version}; core sha256 {sha256(self.core)}',
                f'# setup: setsymbolserver -disable; setclrpath {shown}']

    def run(self, cmds):
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

    def run_split(self, cmds, start):
        """All of `cmds` in one session, the text cut before each line matching `start`: one
        part per command (checked)."""
        text = self.run(cmds)
        parts = [p for p in re.split(f'(?m)^(?={start})', text) if p.strip()]
        if len(parts) != len(cmds):
            die(f'{len(parts)} outputs (cut at {start!r}) for {len(cmds)} commands:\n{text}')
        return parts


def each_dump(doc):
    """The command line `[--core-dir DIR] NAME...` of a runner whose docstring is `doc`: yields
    each NAME with its open Dump (the core DIR/NAME.dmp, or dumps/NAME.dmp.zst decompressed),
    closed after use."""
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    ap.add_argument('names', nargs='+')
    ap.add_argument('--core-dir')
    a = ap.parse_args()
    for name in a.names:
        core = os.path.join(a.core_dir, f'{name}.dmp') if a.core_dir else None
        with Dump(name, core) as d:
            yield name, d


def app_module(d):
    """The app's dll: the first module SOS's clrmodules lists outside Microsoft.NETCore.App that
    is not dynamic."""
    mods = d.run(['clrmodules'])
    app = [l.split()[-1].rsplit('/', 1)[-1] for l in mods.splitlines()
           if l.strip() and 'Microsoft.NETCore.App' not in l and '(Dynamic)' not in l]
    if not app:
        die(f'no app module in:\n{mods}')
    return app[0]


def app_methods(d, rids):
    """SOS's token2ee text of the app's MethodDef tokens 1..rids, one session, in token order."""
    app = app_module(d)
    toks = [f'06{rid:06x}' for rid in range(1, rids + 1)]
    return d.run_split([f'token2ee {app} {t}' for t in toks], 'Module: ')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('name')
    ap.add_argument('kind', help='the truth file dumps/NAME.KIND.txt (e.g. sos-dumpil)')
    ap.add_argument('commands', nargs='+')
    ap.add_argument('--core', help='the uncompressed core (default: decompress dumps/NAME.dmp.zst)')
    ap.add_argument('--dac-dir', help="a folder with the build's libmscordaccore.so (default: "
                    'its NuGet runtime pack)')
    ap.add_argument('--split', help='run every command in one session, cut before lines matching')
    ap.add_argument('--out-dir', default=DUMPS)
    a = ap.parse_args()
    with Dump(a.name, a.core, a.dac_dir) as d:
        out = d.header(f'SOS ({" ".join(sys.argv[1:3])}: dumps/tools/sosrun.py)')
        parts = d.run_split(a.commands, a.split) if a.split else [d.run([c]) for c in a.commands]
        for c, p in zip(a.commands, parts):
            out += [f'### {c}', p.rstrip('\n')]
        write(os.path.join(a.out_dir, f'{a.name}.{a.kind}.txt'), out)


if __name__ == '__main__':
    main()
