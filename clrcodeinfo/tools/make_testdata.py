#!/usr/bin/env python3
"""make_testdata: write clrcodeinfo/tests/data/<name>.json for one corpus dump: the GC info and
debug info blobs of every method on its managed stacks, with independent truths.

    python3 make_testdata.py --name hang-net8 --runtime 8.0.33 --dac <libmscordaccore.so> \
        --image-dir <runtime pack>/runtimes/linux-x64 [--sos-dac-dir <dir>] core.dmp

Per method (blobs, as the runtime finds them):
- `gc_info`: the bytes at the DAC's GCInfo address (ISOSDacInterface::GetCodeHeaderData), as
  many as the blob can occupy: up to the debug info that the JIT allocated right after it
  (JIT'd code), else 512 bytes (ReadyToRun: the image's next data follows);
- `debug_info`: JIT'd code: at RealCodeHeader::phdrDebugInfo (the pointer at MethodStart - 8
  names the code header, whose first field it is); ReadyToRun: the image's DebugInfo section
  entry for the method's RUNTIME_FUNCTION (codeprobe.r2r_debug_info).
Truths:
- `sos_gcinfo`: what SOS's `gcinfo <method start>` printed (dotnet-dump 10.0.750501, the
  runtime's own GcInfoDecoder/GcInfoDumper code on 8-10; on 11 SOS asks the cDAC's GCInfo
  contract through ISOSDacInterface18), from "Pointer table:" on; `sos_eeversion` is the
  runtime version SOS saw (it picks the GC info version by it: 0.0.0.0, as in the runtime's
  own crash dumps, makes it decode .NET 10 GC info as version 3);
- `dac_il_address_map`: the DAC's IXCLRDataMethodInstance::GetILAddressMap, as offsets;
- `dac_eh_clauses`: ISOSDacInterface::TraverseEHInfo (which code is a catch, finally or
  filter funclet: how the stack walk flags a funclet's parent frame);
- per frame: the IP, the frame's registers, the DAC's GetILOffsetsByAddress at IP and IP-1,
  its arguments and locals (IXCLRDataFrame: number of locations, memory address or register,
  value bytes), and the roots GetStackReferences reports for that frame (base register or
  register number, offset, flags).
"""
import argparse
import base64
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import codeprobe  # noqa: E402


def sos_gcinfo(core_path, starts, dac_dir, dotnet_dump):
    """{method start: text after 'Pointer table:'} from one dotnet-dump session."""
    cmd = [dotnet_dump, 'analyze', core_path]
    if dac_dir:
        # SOS picks the GC info version by the runtime's version, which it reads from the
        # runtime module's file: found by build id in the pack (no download: -disable).
        cmd += ['-c', 'setsymbolserver -disable', '-c', 'setsymbolserver -directory ' + dac_dir,
                '-c', 'setclrpath ' + dac_dir]
    cmd += ['-c', 'eeversion']
    for s in starts:
        cmd += ['-c', 'gcinfo ' + s]
    cmd += ['-c', 'exit']
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1200).stdout
    res = {}
    cur = None
    lines = []
    version = None
    for line in out.splitlines():
        if version is None and re.match(r'^\d+\.\d+\.\d+', line):
            version = line.strip()
        m = re.match(r'^entry point ([0-9A-Fa-f]+)', line)
        if m:
            if cur:
                res[cur] = lines
            cur = '0x%x' % int(m.group(1), 16)
            lines = []
            continue
        if re.match(r'^[0-9A-Fa-f]+ is not a valid MethodDesc', line):
            # the next command's failure (an address SOS cannot resolve): not this method's
            if cur:
                res[cur] = lines
            cur, lines = None, []
            continue
        if cur is not None:
            lines.append(line)
    if cur:
        res[cur] = lines
    texts = {}
    for k, ls in res.items():
        if 'Pointer table:' in ls:
            ls = ls[ls.index('Pointer table:') + 1:]
        texts[k] = '\n'.join(l.rstrip() for l in ls if l.strip() != '') + '\n'
    return texts, version


def nibbles(data, pos):
    """ReadEncodedU32 values from byte `pos`: a generator of (value, next byte index)."""
    nib = pos * 2
    while True:
        v = 0
        for _ in range(11):
            b = data[nib // 2]
            n = (b & 0xF) if nib % 2 == 0 else (b >> 4)
            nib += 1
            v = (v << 3) | (n & 7)
            if not n & 8:
                break
        yield v, (nib + 1) // 2


def debug_info_extent(data, fmt):
    """The debug info's length from its header (debuginfostore.cpp), or None if it has chunks
    (patchpoint, rich info) this does not size."""
    pos = 0
    if fmt.endswith('-jit'):
        if data[0] != 0:
            return None
        pos = 1
    g = nibbles(data, pos)
    first, nxt = next(g)
    if fmt == 'net11' and first == 0:
        vals = [next(g) for _ in range(6)]
        return vals[-1][1] + sum(v for v, _ in vals)
    if fmt.startswith('net10') and first == 0xFFFFFFFF:
        vals = [next(g) for _ in range(3)]
        return vals[-1][1] + sum(v for v, _ in vals)
    cb_vars, nxt = next(g)
    return nxt + first + cb_vars


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--name', required=True)
    ap.add_argument('--runtime', required=True)
    ap.add_argument('--dac', required=True)
    ap.add_argument('--image-dir', action='append', default=[])
    ap.add_argument('--sos-dac-dir', default=None)
    ap.add_argument('--dotnet-dump', default=os.path.expanduser('~/.dotnet/tools/dotnet-dump'))
    ap.add_argument('--max-frames', type=int, default=200)
    ap.add_argument('--blob-bytes', type=int, default=4096)
    ap.add_argument('--no-stack-refs', action='store_true')
    ap.add_argument('--out', required=True)
    ap.add_argument('core')
    args = ap.parse_args()
    args.stack_refs = not args.no_stack_refs

    core = codeprobe.Core(args.core, file_fallback=True)
    codeprobe.dacprobe.RUNTIME_MODULE = codeprobe.dacprobe.find_runtime_module(core)
    rt_dirs = [os.path.dirname(os.path.abspath(args.dac))]
    rp = core.module_path(codeprobe.dacprobe.RUNTIME_MODULE)
    if rp:
        rt_dirs.append(os.path.dirname(rp))
    target = codeprobe.DataTarget(core, rt_dirs)
    dac = codeprobe.Dac(args.dac, target)
    body = codeprobe.collect(core, dac, args)

    starts = sorted(body['methods'])
    texts, sos_version = sos_gcinfo(args.core, starts, args.sos_dac_dir or os.path.dirname(args.dac),
                            args.dotnet_dump)

    major = int(args.runtime.split('.')[0])
    methods = []
    for k in starts:
        m = body['methods'][k]
        start = int(k, 16)
        gc = base64.b64decode(m['gc_info'])
        jit = m['jit_type'] == 1
        entry = {'name': m['method'], 'start': k, 'size': m['method_size'],
                 'code': 'jit' if jit else 'r2r'}
        if jit:
            gc_version = 3 if major < 10 else (4 if major == 10 else 5)
            gap = int(m['debug_info_address'], 16) - int(m['gc_info_address'], 16) \
                if m.get('debug_info_address') else None
            if gap is not None and 0 < gap <= len(gc):
                gc = gc[:gap]
                entry['gc_info_extent'] = 'up to the debug info allocated after it'
            else:
                gc = gc[:512]
                entry['gc_info_extent'] = 'the first 512 bytes at the address'
            dbg = base64.b64decode(m['debug_info']) if m.get('debug_info') else None
            fmt = ('net8' if major < 10 else 'net10' if major == 10 else 'net11') + \
                  ('-jit' if major < 11 else '')
        else:
            r = m.get('r2r', {})
            entry['r2r'] = {kk: vv for kk, vv in r.items() if kk != 'debug_info'}
            mj = (r.get('r2r_version') or [0])[0]
            gc_version = 3 if mj < 11 else (4 if mj < 21 else 5)
            gc = gc[:512]
            entry['gc_info_extent'] = 'the first 512 bytes at the address'
            dbg = base64.b64decode(r['debug_info']) if r.get('debug_info') else None
            fmt = ('net8' if major < 10 else 'net10' if major == 10 else 'net11') + \
                  ('-r2r' if major < 11 else '')
        entry['gc_info'] = {'version': gc_version, 'address': m['gc_info_address'], 'hex': gc.hex()}
        if dbg is not None:
            n = debug_info_extent(dbg, fmt)
            entry['debug_info'] = {'format': fmt, 'hex': dbg[:n or 2048].hex(),
                                   'extent': 'the header\'s sizes' if n else 'a 2 KB read'}
        entry['sos_gcinfo'] = texts.get(k)
        if m.get('eh_clauses'):
            entry['dac_eh_clauses'] = m['eh_clauses']
        methods.append(entry)

    frames = []
    for t in body['threads']:
        refs = t.get('stack_refs') if isinstance(t.get('stack_refs'), list) else None
        managed = [f for f in t['frames'] if 'code_header' in f]
        for f in t['frames']:
            if 'code_header' not in f:
                continue
            ip = int(f['ip'], 16)
            start = int(f['code_header']['method_start'], 16)
            fr = {'thread': t['osThreadId'], 'index': f['index'],
                  'first_frame': f['index'] == 0, 'method_start': f['code_header']['method_start'],
                  'ip_offset': ip - start, 'regs': f['regs']}
            il = f.get('il', {})
            if 'il_address_map' in il and not any(mm.get('dac_il_address_map') for mm in methods
                                                  if mm['start'] == fr['method_start']):
                for mm in methods:
                    if mm['start'] == fr['method_start']:
                        mm['dac_il_address_map'] = [
                            [a['il'], int(a['start'], 16) - start, int(a['end'], 16) - start]
                            for a in il['il_address_map']]
            for key in ('il_offsets_at_ip', 'il_offsets_at_ip_minus_1'):
                if key in il:
                    fr[key] = il[key]
            fr['vars'] = f.get('vars')
            if refs is not None:
                fr['stack_refs'] = [r for r in refs if r['source_type'] == 0 and
                                    int(r['source'], 16) == ip and r['sp'] == f['regs']['rsp']]
            frames.append(fr)
        if refs is not None:
            # refs no managed frame of this walk claims (explicit Frames report their own)
            claimed = {(int(f['ip'], 16), f['regs']['rsp']) for f in managed}
            extra = [r for r in refs if r['source_type'] == 0 and
                     (int(r['source'], 16), r['sp']) not in claimed]
            if extra:
                frames.append({'thread': t['osThreadId'], 'unclaimed_stack_refs': extra})

    h = hashlib.sha256()
    with open(args.core, 'rb') as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b''):
            h.update(chunk)
    out = {'dump': args.name, 'runtime': args.runtime, 'core_sha256': h.hexdigest(),
           'made_by': 'clrcodeinfo/tools/make_testdata.py (codeprobe.py over dumps/tools/dacprobe; '
                      'SOS gcinfo through dotnet-dump)',
           'dac': os.path.relpath(args.dac, os.path.expanduser('~/.nuget/packages')),
           'sos_eeversion': sos_version,
           'methods': methods, 'frames': frames}
    write_json(args.out, out)


def write_json(path, out):
    """One list element per line: diffable, and a third of an indented file's size."""
    with open(path, 'w') as fh:
        fh.write('{\n')
        keys = list(out)
        for i, k in enumerate(keys):
            sep = ',' if i + 1 < len(keys) else ''
            v = out[k]
            if isinstance(v, list):
                fh.write(' %s: [\n' % json.dumps(k))
                for j, item in enumerate(v):
                    fh.write('  %s%s\n' % (json.dumps(item, separators=(',', ':')),
                                           ',' if j + 1 < len(v) else ''))
                fh.write(' ]%s\n' % sep)
            else:
                fh.write(' %s: %s%s\n' % (json.dumps(k), json.dumps(v), sep))
        fh.write('}\n')


if __name__ == '__main__':
    main()
