#!/usr/bin/env python3
"""aotsymbols.py: the symbol and runtime-header truth of a NativeAOT dump (dumps/generate-aot.sh).

    python3 aotsymbols.py --core core.dmp --app <executable> --dbg <executable>.dbg \
        --manifest <name>.manifest.json --name <name>  >  <name>.symbols.json

No DAC exists for NativeAOT, so this is what stands beside the program's manifest:
  * from the .dbg's symbol table (PublishAot's StripSymbols moves .symtab there): the address of
    every manifest method (`<assembly>_<Namespace>_<Type>__<Method>`, each character that is not a
    letter, digit or '_' becoming '_') and the MethodTable of every manifest type
    (`_ZTV<length><mangled type>`: ILC names a MethodTable as a C++ vtable), relocated by the
    executable's load address in the core;
  * each such MethodTable's fields, decoded with the offsets the runtime's own debug header gives;
  * `DotNetRuntimeDebugHeader` (an export of the executable): cookie, version, flags, every
    (type, field, offset) entry and every global, read from the core's memory (the strings the
    entries point at from the executable's file where the core lacks them: gdb gcore leaves out
    file pages the process never wrote);
  * `DotNetRuntimeContractDescriptor` (.NET 11's export) when present: its header and its JSON;
  * `g_CrashInfoBuffer` (the JSON the runtime writes on a FailFast or unhandled exception), when
    not empty;
  * what the core lacks of the executable's mappings (bytes, and the reads that needed the file).
Written for the corpus (stdlib only); it is our own reading of the formats that
docs/nativeaot-layout.md documents with their sources.
"""
import argparse
import json
import os
import struct
import subprocess
import sys


class Elf:
    def __init__(self, path):
        self.path = path
        with open(path, 'rb') as f:
            self.data = f.read()
        d = self.data
        if d[:4] != b'\x7fELF' or d[4] != 2:
            raise SystemExit(f'{path}: not a 64-bit ELF file')
        (self.type, _, _, _, self.phoff, self.shoff, _, _, self.phentsize, self.phnum,
         self.shentsize, self.shnum, self.shstrndx) = struct.unpack_from('<HHIQQQIHHHHHH', d, 16)
        self.phdrs = [struct.unpack_from('<IIQQQQQQ', d, self.phoff + i * self.phentsize)
                      for i in range(self.phnum)]
        self.sections = []
        if self.shoff and self.shnum:
            raw = [struct.unpack_from('<IIQQQQIIQQ', d, self.shoff + i * self.shentsize)
                   for i in range(self.shnum)]
            strtab = raw[self.shstrndx]
            for s in raw:
                self.sections.append({'name': self.cstr(strtab[4] + s[0]), 'type': s[1], 'addr': s[3],
                                      'offset': s[4], 'size': s[5], 'link': s[6], 'entsize': s[9]})

    def cstr(self, off):
        end = self.data.index(b'\0', off)
        return self.data[off:end].decode('utf-8', 'replace')

    def section(self, name):
        return next((s for s in self.sections if s['name'] == name), None)

    def symbols(self, secname):
        s = self.section(secname)
        if not s:
            return []
        strs = self.sections[s['link']]
        out = []
        for i in range(s['size'] // 24):
            name, info, other, shndx, value, size = struct.unpack_from('<IBBHQQ', self.data, s['offset'] + i * 24)
            if name and shndx:
                out.append((self.cstr(strs['offset'] + name), value, size, info & 0xf))
        return out

    def notes(self):
        for p in self.phdrs:
            if p[0] != 4:  # PT_NOTE
                continue
            off, end = p[2], p[2] + p[5]
            while off + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from('<III', self.data, off)
                name = self.data[off + 12:off + 12 + namesz].rstrip(b'\0').decode()
                doff = off + 12 + ((namesz + 3) & ~3)
                yield name, ntype, self.data[doff:doff + descsz]
                off = doff + ((descsz + 3) & ~3)

    def build_id(self):
        s = self.section('.note.gnu.build-id')
        if not s:
            return None
        namesz, descsz, _ = struct.unpack_from('<III', self.data, s['offset'])
        doff = s['offset'] + 12 + ((namesz + 3) & ~3)
        return self.data[doff:doff + descsz].hex()


class Memory:
    """The process's memory as the core holds it, with the executable's file as a fallback."""

    def __init__(self, core, app, app_path_in_core):
        self.core, self.app = core, app
        self.loads = [(p[3], p[2], p[5], p[6]) for p in core.phdrs if p[0] == 1]  # vaddr, off, filesz, memsz
        self.files = []
        for name, ntype, desc in core.notes():
            if name == 'CORE' and ntype == 0x46494c45:  # NT_FILE
                count, page = struct.unpack_from('<QQ', desc, 0)
                strs = 16 + count * 24
                names = desc[strs:].split(b'\0')
                for i in range(count):
                    st, en, pg = struct.unpack_from('<QQQ', desc, 16 + i * 24)
                    self.files.append((st, en, pg * page, names[i].decode('utf-8', 'replace')))
        maps = [f for f in self.files if f[3] == app_path_in_core]
        if not maps:
            raise SystemExit(f'the core maps no {app_path_in_core}: {sorted({f[3] for f in self.files})}')
        self.base = min(f[0] - f[2] for f in maps)
        self.app_maps = maps
        self.from_file = 0
        self.from_core = 0

    def in_core(self, addr, size):
        for va, off, filesz, memsz in self.loads:
            if va <= addr and addr + size <= va + filesz:
                return self.core.data[off + addr - va:off + addr - va + size]
        return None

    def in_file(self, addr, size):
        rva = addr - self.base
        for p in self.app.phdrs:
            if p[0] == 1 and p[3] <= rva and rva + size <= p[3] + p[5]:
                return self.app.data[p[2] + rva - p[3]:p[2] + rva - p[3] + size]
        return None

    def read(self, addr, size):
        b = self.in_core(addr, size)
        if b is not None:
            self.from_core += 1
            return b
        b = self.in_file(addr, size)
        if b is not None:
            self.from_file += 1
            return b
        raise KeyError(hex(addr))

    def u8(self, a): return self.read(a, 8) and struct.unpack('<Q', self.read(a, 8))[0]
    def u32(self, a): return struct.unpack('<I', self.read(a, 4))[0]
    def u16(self, a): return struct.unpack('<H', self.read(a, 2))[0]

    def cstr(self, addr, limit=1 << 20):
        out = bytearray()
        while len(out) < limit:
            chunk = self.read(addr + len(out), 1)
            if chunk == b'\0':
                break
            out += chunk
        return out.decode('utf-8', 'replace')

    def coverage(self):
        """What the core holds of the executable's file mappings."""
        total = held = 0
        for st, en, foff, _ in self.app_maps:
            total += en - st
            a = st
            while a < en:
                if self.in_core(a, 1) is not None:
                    held += 0x1000
                a += 0x1000
        return {'mapped_bytes': total, 'in_core_bytes': min(held, total), 'missing_bytes': max(total - held, 0)}


def mangle(s):
    return ''.join(c if c.isalnum() or c == '_' else '_' for c in s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--core', required=True)
    ap.add_argument('--app', required=True)
    ap.add_argument('--dbg', required=True)
    ap.add_argument('--manifest', required=True)
    ap.add_argument('--name', required=True)
    a = ap.parse_args()
    core, app, dbg = Elf(a.core), Elf(a.app), Elf(a.dbg)
    with open(a.manifest, encoding='utf-8') as f:
        man = json.load(f)
    mem = Memory(core, app, os.path.abspath(a.app))
    out = {'dump': a.name + '.dmp.zst', 'made_by': 'dumps/tools/aotsymbols.py',
           'executable': {'path_in_core': os.path.abspath(a.app), 'load_base': hex(mem.base),
                          'build_id': app.build_id(), 'dbg_build_id': dbg.build_id(),
                          'debuglink': None}}
    dl = app.section('.gnu_debuglink')
    if dl:
        out['executable']['debuglink'] = app.cstr(dl['offset'])
    if app.build_id() != dbg.build_id():
        raise SystemExit('the .dbg does not belong to the executable (build ids differ)')
    symtab = dbg.symbols('.symtab')
    by_name = {}
    for n, v, sz, t in symtab:
        by_name.setdefault(n, (v, sz, t))
    dynsym = {n: v for n, v, sz, t in app.symbols('.dynsym')}
    out['symtab'] = {'symbols': len(symtab), 'method_table_symbols': sum(1 for n, *_ in symtab if n.startswith('_ZTV')),
                     'exports': sorted(dynsym)}

    # ---- the debug header
    hdr = {}
    if 'DotNetRuntimeDebugHeader' in dynsym:
        h = mem.base + dynsym['DotNetRuntimeDebugHeader']
        raw = mem.read(h, 32)
        cookie, major, minor, flags, pad, types_p, globals_p = struct.unpack('<4sHHIIQQ', raw)
        hdr = {'address': hex(h), 'rva': hex(dynsym['DotNetRuntimeDebugHeader']), 'cookie': cookie.decode('latin-1'),
               'major_version': major, 'minor_version': minor, 'flags': flags,
               'debug_type_entries': hex(types_p), 'global_entries': hex(globals_p), 'entries': [], 'globals': []}
        if types_p:
            i = 0
            while True:
                tn, fn, off, _ = struct.unpack('<QQII', mem.read(types_p + i * 24, 24))
                if not tn:
                    break
                hdr['entries'].append({'type': mem.cstr(tn), 'field': mem.cstr(fn), 'offset': off})
                i += 1
            hdr['entry_slots_used'] = i
        if globals_p:
            i = 0
            while True:
                gn, ga = struct.unpack('<QQ', mem.read(globals_p + i * 16, 16))
                if not gn:
                    break
                g = {'name': mem.cstr(gn), 'address': hex(ga)}
                try:
                    g['value'] = hex(struct.unpack('<Q', mem.read(ga, 8))[0])
                except KeyError:
                    g['value'] = None
                hdr['globals'].append(g)
                i += 1
    out['debug_header'] = hdr or None
    off = {(e['type'], e['field']): e['offset'] for e in hdr.get('entries', [])}

    # ---- the contract descriptor (.NET 11)
    cd = None
    if 'DotNetRuntimeContractDescriptor' in dynsym or 'DotNetRuntimeContractDescriptor' in by_name:
        rva = dynsym.get('DotNetRuntimeContractDescriptor', by_name.get('DotNetRuntimeContractDescriptor', (0,))[0])
        c = mem.base + rva
        magic, flags, size, desc_p, count, _, data_p = struct.unpack('<QIIQIIQ', mem.read(c, 40))
        cd = {'address': hex(c), 'rva': hex(rva), 'exported': 'DotNetRuntimeContractDescriptor' in dynsym,
              'magic': hex(magic), 'magic_text': struct.pack('<Q', magic).rstrip(b'\0').decode('latin-1'),
              'flags': flags, 'descriptor_size': size, 'pointer_data_count': count,
              'pointer_data': [hex(struct.unpack('<Q', mem.read(data_p + 8 * i, 8))[0]) for i in range(count)]}
        text = mem.read(desc_p, size).rstrip(b'\0').decode('utf-8', 'replace')
        try:
            cd['descriptor'] = json.loads(text)
        except ValueError:
            cd['descriptor_text'] = text
        # sub-descriptors: [[index], "pointer"] names a pointer_data slot holding the address of
        # another descriptor of the same shape
        subs = {}
        for sname, sval in (cd.get('descriptor') or {}).get('subDescriptors', {}).items():
            try:
                sp = int(cd['pointer_data'][sval[0][0]], 16)
                if not sp:
                    subs[sname] = {'address': '0x0'}
                    continue
                sp2 = struct.unpack('<Q', mem.read(sp, 8))[0]
                # the slot may hold the descriptor itself or a pointer to it: take the one with the magic
                for cand in (sp, sp2):
                    try:
                        mg, fl, sz, dp, cnt, _, pp = struct.unpack('<QIIQIIQ', mem.read(cand, 40))
                    except KeyError:
                        continue
                    if mg == magic:
                        sd = {'address': hex(cand), 'flags': fl, 'descriptor_size': sz, 'pointer_data_count': cnt,
                              'pointer_data': [hex(struct.unpack('<Q', mem.read(pp + 8 * i, 8))[0]) for i in range(cnt)]}
                        t = mem.read(dp, sz).rstrip(b'\0').decode('utf-8', 'replace')
                        try:
                            sd['descriptor'] = json.loads(t)
                        except ValueError:
                            sd['descriptor_text'] = t
                        subs[sname] = sd
                        break
                else:
                    subs[sname] = {'slot': hex(sp), 'note': 'no descriptor magic at the slot or behind it'}
            except (KeyError, IndexError, ValueError) as e:
                subs[sname] = {'unread': str(e)}
        cd['sub_descriptors'] = subs
    out['contract_descriptor'] = cd

    # ---- crash info
    g = {x['name']: int(x['address'], 16) for x in hdr.get('globals', [])}
    if 'g_CrashInfoBuffer' in g:
        text = mem.cstr(g['g_CrashInfoBuffer'], 1 << 16)
        out['crash_info'] = {'address': hex(g['g_CrashInfoBuffer']), 'text': text or None}
        if text:
            try:
                out['crash_info']['json'] = json.loads(text)
            except ValueError:
                pass

    if 'crash_info' not in out and man.get('scenario', '').startswith('crash'):
        # no debug header (.NET 11): find the crash info JSON in the core by its opening
        key = b'{"version":"1.0.0","runtime_base"'
        at = core.data.find(key)
        if at >= 0:
            va = next((v + at - o for v, o, fs, ms in mem.loads if o <= at < o + fs), None)
            text = core.data[at:core.data.index(b'\0', at)].decode('utf-8', 'replace')
            out['crash_info'] = {'address': hex(va) if va else None, 'found_by': 'searching the core for ' + key.decode(),
                                 'text': text}
            try:
                out['crash_info']['json'] = json.loads(text)
            except ValueError:
                pass

    # ---- the thread list: RuntimeInstance -> ThreadStore -> SList<Thread>, with the offsets the
    # header gives; the transition frame slot is not in the header: it sits 24 bytes before
    # m_pNext (thread.h: m_pTransitionFrame, m_pDeferredTransitionFrame, m_pCachedTransitionFrame,
    # m_pNext), which each frame confirms (PInvokeTransitionFrame.m_pThread, 16 bytes in on x64,
    # is the thread)
    funcs = sorted((v, sz, n) for n, v, sz, t in symtab if sz and t == 2)
    import bisect
    starts = [f[0] for f in funcs]
    mts = {mem.base + v: n for n, v, sz, t in symtab if n.startswith('_ZTV')}

    def func_at(ip):
        i = bisect.bisect_right(starts, ip - mem.base) - 1
        if i >= 0 and funcs[i][0] <= ip - mem.base < funcs[i][0] + funcs[i][1]:
            return f'{funcs[i][2]}+{ip - mem.base - funcs[i][0]:#x}'
        return None

    tl = next((t for t in ('RuntimeThreadLocals', 'ThreadBuffer', 'Thread') if (t, 'm_pNext') in off), None)
    if tl and 'g_pTheRuntimeInstance' in g:
        q = lambda x: struct.unpack('<Q', mem.read(x, 8))[0]
        ts = q(g['g_pTheRuntimeInstance'] + off[('RuntimeInstance', 'm_pThreadStore')])
        t = q(ts + off[('ThreadStore', 'm_ThreadList')])
        nxt = off[(tl, 'm_pNext')]
        threads = []
        while t and len(threads) < 1000:
            th = {'thread': hex(t), 'os_id': q(t + off[(tl, 'm_threadId')]),
                  'state_flags': hex(mem.u32(t + nxt - 32))}
            tf = q(t + nxt - 24)
            th['transition_frame'] = hex(tf)
            if tf and tf not in (2 ** 64 - 1, 2 ** 64 - 2):
                rip, fp, pthr, fl = struct.unpack('<QQQI', mem.read(tf, 28))
                th['frame'] = {'rip': hex(rip), 'rip_symbol': func_at(rip), 'frame_pointer': hex(fp),
                               'thread_matches': pthr == t, 'flags': hex(fl)}
            ex = q(t + off[(tl, 'm_pExInfoStackHead')])
            chain = []
            while ex and len(chain) < 16:
                o = q(ex + off[('ExInfo', 'm_exception')])
                mt = q(o) if o else 0
                chain.append({'exinfo': hex(ex), 'exception': hex(o), 'method_table_symbol': mts.get(mt & ~7)})
                ex = q(ex + off[('ExInfo', 'm_pPrevExInfo')])
            th['exinfo_chain'] = chain
            threads.append(th)
            t = q(t + nxt)
        out['thread_store'] = {'thread_locals_type': tl, 'threads': threads}

    if 'thread_store' not in out and cd and cd.get('descriptor'):
        q = lambda x: struct.unpack('<Q', mem.read(x, 8))[0]
        de = cd['descriptor']
        T = de['types']['Thread']
        pd = [int(x, 16) for x in cd['pointer_data']]
        slot = pd[de['globals']['ThreadStore'][0][0]]
        for how, ts in (('the slot is the ThreadStore', slot), ('the slot holds the ThreadStore pointer', q(slot))):
            try:
                t = q(ts + de['types']['ThreadStore']['FirstThreadLink'])
                threads = []
                while t and len(threads) < 1000:
                    th = {'thread': hex(t), 'os_id': q(t + T['OSId']), 'state_flags': hex(mem.u32(t + T['State']))}
                    tf = q(t + T['TransitionFrame'])
                    th['transition_frame'] = hex(tf)
                    if tf and tf not in (2 ** 64 - 1, 2 ** 64 - 2):
                        rip, fp, pthr, fl = struct.unpack('<QQQI', mem.read(tf, 28))
                        th['frame'] = {'rip': hex(rip), 'rip_symbol': func_at(rip), 'frame_pointer': hex(fp),
                                       'thread_matches': pthr == t, 'flags': hex(fl)}
                    ex = q(t + T['ExceptionTracker'])
                    chain = []
                    while ex and len(chain) < 16:
                        o = q(ex + de['types']['ExInfo']['ThrownObject'])
                        mt = q(o) if o else 0
                        chain.append({'exinfo': hex(ex), 'exception': hex(o), 'method_table_symbol': mts.get(mt & ~7)})
                        ex = q(ex + de['types']['ExInfo']['PreviousNestedInfo'])
                    th['exinfo_chain'] = chain
                    threads.append(th)
                    t = q(t + T['LinkNext'])
            except KeyError:
                continue
            if threads and all(x.get('frame', {}).get('thread_matches', True) for x in threads):
                out['thread_store'] = {'from': 'contract descriptor (' + how + ')', 'threads': threads}
                break

    # ---- the manifest's methods and types
    asm = man.get('app', {}).get('executable') or os.path.basename(a.app)
    methods = set()
    for t in man.get('threads', []):
        methods.update(t.get('frames', []))
    for c in man.get('async_chains', []):
        methods.update(c.get('methods', []))
    for e in man.get('exceptions', []):
        for x in (e, e.get('inner') or {}):
            if x.get('thrown_in'):
                methods.add(x['thrown_in'])
    out['methods'] = []
    for m in sorted(methods):
        typ, _, meth = m.rpartition('.')
        sym = f'{asm}_{mangle(typ)}__{mangle(meth)}'
        hit = by_name.get(sym)
        out['methods'].append({'name': m, 'symbol': sym, 'rva': hex(hit[0]) if hit else None,
                               'address': hex(mem.base + hit[0]) if hit else None,
                               'size': hit[1] if hit else None})
    types = [t['name'] for t in man.get('types', [])]
    for c in man.get('async_chains', []):
        types += c.get('state_machine_types', [])
    out['types'] = []
    for tn in sorted(set(types)):
        if '`' in tn or '[' in tn:
            out['types'].append({'name': tn, 'symbol': None, 'note': 'generic or array: not looked up'})
            continue
        m = f'{asm}_{mangle(tn)}'
        sym = f'_ZTV{len(m)}{m}'
        boxed = f'Boxed_{m}'
        hit, used = by_name.get(sym), sym
        if not hit:  # a value type's MethodTable is its boxed form
            used = f'_ZTV{len(boxed)}{boxed}'
            hit = by_name.get(used)
        ent = {'name': tn, 'symbol': used if hit else sym, 'rva': None, 'method_table': None}
        if hit:
            mt = mem.base + hit[0]
            ent.update(rva=hex(hit[0]), method_table=hex(mt))
            try:
                flags = mem.u32(mt + off.get(('MethodTable', 'm_uFlags'), 0))
                ent['flags'] = hex(flags)
                ent['base_size'] = mem.u32(mt + off.get(('MethodTable', 'm_uBaseSize'), 4))
                ent['component_size'] = mem.u16(mt + off.get(('MethodTable', 'm_usComponentSize'), 0)) if flags & 0x80000000 else 0
                bt = struct.unpack('<Q', mem.read(mt + off.get(('MethodTable', 'm_pBaseType'), 8), 8))[0]
                ent['base_type'] = hex(bt)
                bsym = next((n for n, v, sz, t in symtab if n.startswith('_ZTV') and mem.base + v == bt), None)
                ent['base_type_symbol'] = bsym
            except KeyError as e:
                ent['unread'] = f'not in the core or the file: {e}'
        out['types'].append(ent)

    out['executable']['coverage'] = mem.coverage()
    out['executable']['coverage']['reads_from_core'] = mem.from_core
    out['executable']['coverage']['reads_from_file'] = mem.from_file
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write('\n')
    missing = [m['name'] for m in out['methods'] if not m['rva']] + \
              [t['name'] for t in out['types'] if t.get('symbol') and not t.get('rva')]
    if missing:
        print(f'aotsymbols.py: no symbol for {missing}', file=sys.stderr)
    if not hdr:
        print('aotsymbols.py: no DotNetRuntimeDebugHeader export', file=sys.stderr)


if __name__ == '__main__':
    main()
