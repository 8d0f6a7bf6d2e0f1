#!/usr/bin/env python3
"""codeprobe: ask the runtime's own DAC (hosted by dumps/tools/dacprobe) about the code of the
managed frames on a dump's stacks, and pull the raw GC info and debug info blobs out of the dump
as test data for clrcodeinfo.

    python3 codeprobe.py --dac .../libmscordaccore.so core.dmp > frames.json

Per managed frame (IXCLRDataStackWalk, as dacprobe walks): the frame's full register context
(IXCLRDataStackWalk::GetContext), ISOSDacInterface::GetCodeHeaderData of its IP (GC info
address, JIT or ReadyToRun, method start and size), the method's name, the DAC's IL address map
(IXCLRDataMethodInstance::GetILAddressMap), GetILOffsetsByAddress at the IP and at IP-1, and
every argument and local the frame has (IXCLRDataFrame::GetArgumentByIndex /
GetLocalVariableByIndex: name, number of locations, each location's flags and address, and the
value's bytes when it has one location). Per distinct method: the GC info bytes (read from the
DAC's GCInfo address) and, for JIT'd code, the debug info bytes (RealCodeHeader::phdrDebugInfo,
the pointer at offset 0 of the code header found at MethodStart - 8); for ReadyToRun code the
image's DebugInfo section is read by the caller from the image file (see r2rdebug.py).

Interfaces and vtable orders: dotnet/diagnostics src/shared/inc/xclrdata.idl and dacprivate.h.
"""
import argparse
import base64
import json
import os
import struct
import sys
from ctypes import (POINTER, Structure, byref, c_int32, c_uint32, c_uint64, c_void_p,
                    create_string_buffer, sizeof)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get('DACPROBE_DIR') or
                os.path.join(HERE, '..', '..', 'dumps', 'tools', 'dacprobe'))
import dacprobe  # noqa: E402
from dacprobe import (CLRDATA_ADDRESS, CONTEXT_ALL, CTX_OFF, Dac, DataTarget, Iface,  # noqa: E402
                      IXCLRDATAPROCESS_METHODS, IXCLRDATASTACKWALK_METHODS, IXCLRDATATASK_METHODS,
                      S_OK, com_release, hr_str, hx)
from elfcore import Core  # noqa: E402

IXCLRDATAFRAME_METHODS = ['GetFrameType', 'GetContext', 'GetAppDomain', 'GetNumArguments',
                          'GetArgumentByIndex', 'GetNumLocalVariables', 'GetLocalVariableByIndex',
                          'GetCodeName', 'GetMethodInstance', 'Request', 'GetNumTypeArguments',
                          'GetTypeArgumentByIndex']
IXCLRDATAVALUE_METHODS = ['GetFlags', 'GetAddress', 'GetSize', 'GetBytes', 'SetBytes', 'GetType',
                          'GetNumFields', 'GetFieldByIndex', 'Request', 'GetNumFields2',
                          'StartEnumFields', 'EnumField', 'EndEnumFields', 'StartEnumFieldsByName',
                          'EnumFieldByName', 'EndEnumFieldsByName', 'GetFieldByToken',
                          'GetAssociatedValue', 'GetAssociatedType', 'GetString',
                          'GetArrayProperties', 'GetArrayElement', 'EnumField2', 'EnumFieldByName2',
                          'GetFieldByToken2', 'GetNumLocations', 'GetLocationByIndex']
IXCLRDATAMETHODINSTANCE_METHODS = ['GetTypeInstance', 'GetDefinition', 'GetTokenAndScope', 'GetName',
                                   'GetFlags', 'IsSameObject', 'GetEnCVersion',
                                   'GetNumTypeArguments', 'GetTypeArgumentByIndex',
                                   'GetILOffsetsByAddress', 'GetAddressRangesByILOffset',
                                   'GetILAddressMap', 'StartEnumExtents', 'EnumExtent',
                                   'EndEnumExtents', 'Request', 'GetRepresentativeEntryAddress']
REGS = ['Rax', 'Rcx', 'Rdx', 'Rbx', 'Rsp', 'Rbp', 'Rsi', 'Rdi', 'R8', 'R9', 'R10', 'R11', 'R12',
        'R13', 'R14', 'R15', 'Rip']


class DacpCodeHeaderData(Structure):
    _fields_ = [('GCInfo', CLRDATA_ADDRESS), ('JITType', c_int32), ('MethodDescPtr', CLRDATA_ADDRESS),
                ('MethodStart', CLRDATA_ADDRESS), ('MethodSize', c_uint32),
                ('ColdRegionStart', CLRDATA_ADDRESS), ('ColdRegionSize', c_uint32),
                ('HotRegionSize', c_uint32)]


class ILAddressMap(Structure):
    _fields_ = [('ilOffset', c_uint32), ('startAddress', CLRDATA_ADDRESS),
                ('endAddress', CLRDATA_ADDRESS), ('type', c_uint32)]


assert sizeof(DacpCodeHeaderData) == 0x38
assert sizeof(ILAddressMap) == 32


def read_avail(core, addr, n):
    """Up to n bytes at addr, stopping at the first byte the dump (or its files) lacks."""
    out = bytearray()
    while len(out) < n:
        chunk = min(256, n - len(out))
        try:
            b = core.read(addr + len(out), chunk)
        except Exception:
            b = None
        if not b:
            if chunk == 1:
                break
            # narrow down byte by byte
            for i in range(chunk):
                try:
                    c = core.read(addr + len(out), 1)
                except Exception:
                    c = None
                if not c:
                    return bytes(out)
                out += c
            continue
        out += b
    return bytes(out)


def value_info(dac, vptr, core):
    v = Iface(vptr, IXCLRDATAVALUE_METHODS)
    info = {}
    n = c_uint32()
    hr = v('GetNumLocations', [POINTER(c_uint32)], byref(n))
    info['GetNumLocations_hr'] = hr_str(hr)
    locs = []
    if hr >= 0:
        for i in range(n.value):
            fl, arg = c_uint32(), c_uint64()
            hr = v('GetLocationByIndex', [c_uint32, POINTER(c_uint32), POINTER(c_uint64)],
                   i, byref(fl), byref(arg))
            if hr < 0:
                locs.append({'hr': hr_str(hr)})
                continue
            loc = {'flags': fl.value, 'kind': 'register' if fl.value & 1 else 'memory'}
            if not fl.value & 1:
                loc['address'] = hx(arg.value)
            locs.append(loc)
    info['locations'] = locs
    size = c_uint64()
    if v('GetSize', [POINTER(c_uint64)], byref(size)) >= 0:
        info['size'] = size.value
        if 0 < size.value <= 64:
            buf = create_string_buffer(size.value)
            got = c_uint32()
            hr = v('GetBytes', [c_uint32, POINTER(c_uint32), c_void_p], size.value, byref(got), buf)
            if hr >= 0:
                info['bytes'] = buf.raw[:got.value].hex()
    flags = c_uint32()
    if v('GetFlags', [POINTER(c_uint32)], byref(flags)) >= 0:
        info['value_flags'] = flags.value
    return info


def frame_vars(dac, frame_ptr, core):
    f = Iface(frame_ptr, IXCLRDATAFRAME_METHODS)
    out = {}
    for kind, num_m, get_m in (('arguments', 'GetNumArguments', 'GetArgumentByIndex'),
                               ('locals', 'GetNumLocalVariables', 'GetLocalVariableByIndex')):
        n = c_uint32()
        hr = f(num_m, [POINTER(c_uint32)], byref(n))
        if hr < 0:
            out[kind] = {'hr': hr_str(hr)}
            continue
        items = []
        for i in range(n.value):
            val = c_void_p()
            name = create_string_buffer(2 * 256)
            nlen = c_uint32()
            hr = f(get_m, [c_uint32, POINTER(c_void_p), c_uint32, POINTER(c_uint32), c_void_p],
                   i, byref(val), 256, byref(nlen), name)
            item = {'index': i, 'hr': hr_str(hr)}
            if nlen.value:
                item['name'] = name.raw[:2 * nlen.value].decode('utf-16-le', 'replace').split('\0')[0]
            if hr >= 0 and val.value:
                item.update(value_info(dac, val.value, core))
                com_release(val.value)
            items.append(item)
        out[kind] = items
    return out


def method_instance(f_ptr):
    f = Iface(f_ptr, IXCLRDATAFRAME_METHODS)
    mi = c_void_p()
    hr = f('GetMethodInstance', [POINTER(c_void_p)], byref(mi))
    return (mi.value if hr >= 0 else None), hr


def il_info(mi_ptr, ip):
    m = Iface(mi_ptr, IXCLRDATAMETHODINSTANCE_METHODS)
    out = {}
    need = c_uint32()
    hr = m('GetILAddressMap', [c_uint32, POINTER(c_uint32), c_void_p], 0, byref(need), None)
    out['GetILAddressMap_hr'] = hr_str(hr)
    if hr >= 0 and need.value:
        arr = (ILAddressMap * need.value)()
        hr = m('GetILAddressMap', [c_uint32, POINTER(c_uint32), c_void_p], need.value, byref(need), arr)
        if hr >= 0:
            out['il_address_map'] = [{'il': a.ilOffset, 'start': hx(a.startAddress),
                                      'end': hx(a.endAddress), 'type': a.type} for a in arr]
    for key, addr in (('il_offsets_at_ip', ip), ('il_offsets_at_ip_minus_1', ip - 1)):
        need = c_uint32()
        offs = (c_uint32 * 64)()
        hr = m('GetILOffsetsByAddress', [c_uint64, c_uint32, POINTER(c_uint32), c_void_p],
               addr, 64, byref(need), offs)
        out[key] = {'hr': hr_str(hr), 'offsets': list(offs)[:min(need.value, 64)] if hr >= 0 else []}
    entry = c_uint64()
    hr = m('GetRepresentativeEntryAddress', [POINTER(c_uint64)], byref(entry))
    out['representative_entry'] = hx(entry.value) if hr >= 0 else None
    return out


# ---------------------------------------------------------------- ReadyToRun debug info
# readytorun.h (v10.0): READYTORUN_HEADER {u32 Signature 'RTR'; u16 Major; u16 Minor;
# u32 Flags; u32 NumberOfSections; READYTORUN_SECTION {u32 Type; u32 RVA; u32 Size}[]};
# sections 102 RuntimeFunctions ({begin, end, unwind} RVAs), 105 DebugInfo (a NativeArray
# indexed by the method's RUNTIME_FUNCTION index; ReadyToRunInfo::GetDebugInfo in
# src/coreclr/vm/readytoruninfo.cpp: next = DecodeUnsigned(offset, &lookBack); the blob is at
# offset - lookBack when lookBack != 0, else at next; offsets are RVAs of the image).

class Image:
    """A PE image mapped at `base` in the dump; bytes the dump lacks come from a file of the
    same name under --image-dir (the runtime packs)."""

    def __init__(self, core, base, name, image_dirs):
        self.core, self.base, self.name = core, base, name
        self.file = None
        for d in image_dirs:
            for root, _, files in os.walk(d):
                if name in files:
                    self.file = open(os.path.join(root, name), 'rb').read()
                    break
            if self.file:
                break
        self.sections = None
        if self.file:
            self.sections = self._pe_sections(self.file)

    @staticmethod
    def _pe_sections(d):
        pe = struct.unpack_from('<I', d, 0x3c)[0]
        nsec = struct.unpack_from('<H', d, pe + 6)[0]
        opt = struct.unpack_from('<H', d, pe + 20)[0]
        so = pe + 24 + opt
        out = []
        for i in range(nsec):
            vs, va, rsz, rptr = struct.unpack_from('<IIII', d, so + i * 40 + 8)
            out.append((va, max(vs, rsz), rptr))
        return out

    def read(self, rva, n):
        b = self.core.read(self.base + rva, n)
        if b is not None:
            return b, 'dump'
        if self.file is not None:
            for va, sz, rp in self.sections:
                if va <= rva < va + sz:
                    off = rva - va + rp
                    return self.file[off:off + n], 'file'
        return None, None

    def u32(self, rva):
        b, _ = self.read(rva, 4)
        return None if b is None or len(b) < 4 else struct.unpack('<I', b)[0]


def alias_images(core, image_dirs):
    """Let the core's file fallback (absent pages of file mappings) read a PE image whose
    recorded path is not on this machine from the file of the same name in `image_dirs` (the
    runtime pack of the dump's exact build): what the DAC then reads of an R2R image's
    absent pages (RUNTIME_FUNCTIONs, GC info) is the build's own bytes."""
    index = {}
    for d in image_dirs:
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith('.dll'):
                    index.setdefault(f, os.path.join(root, f))
    n = 0
    for _, _, _, path in core.files:
        if path in core._fh or os.path.exists(path):
            continue
        alt = index.get(os.path.basename(path))
        if alt:
            core._fh[path] = open(alt, 'rb')
            core._elf_ok[path] = None
            n += 1
    return n


def native_unsigned(img, off):
    """NativeFormat DecodeUnsigned at image offset `off`: (value, next offset)."""
    b0 = img.read(off, 1)[0][0]
    if b0 & 1 == 0:
        return b0 >> 1, off + 1
    if b0 & 2 == 0:
        b = img.read(off, 2)[0]
        return (b[0] >> 2) | (b[1] << 6), off + 2
    if b0 & 4 == 0:
        b = img.read(off, 3)[0]
        return (b[0] >> 3) | (b[1] << 5) | (b[2] << 13), off + 3
    if b0 & 8 == 0:
        b = img.read(off, 4)[0]
        return (b[0] >> 4) | (b[1] << 4) | (b[2] << 12) | (b[3] << 20), off + 4
    if b0 & 16 == 0:
        return struct.unpack('<I', img.read(off + 1, 4)[0])[0], off + 5
    raise ValueError('bad NativeFormat unsigned at %#x' % off)


def native_array_get(img, base_rva, index):
    """NativeArray::TryGetAt (src/coreclr/vm/nativeformatreader.h)."""
    val, base = native_unsigned(img, base_rva)
    n, entry_size = val >> 2, val & 3
    if index >= n:
        return None
    block = 16
    if entry_size == 0:
        off = img.read(base + index // block, 1)[0][0]
    elif entry_size == 1:
        off = struct.unpack('<H', img.read(base + 2 * (index // block), 2)[0])[0]
    else:
        off = struct.unpack('<I', img.read(base + 4 * (index // block), 4)[0])[0]
    off += base
    bit = block >> 1
    while bit > 0:
        v, off2 = native_unsigned(img, off)
        if index & bit:
            if v & 2:
                off = off + (v >> 2)
                bit >>= 1
                continue
        else:
            if v & 1:
                off = off2
                bit >>= 1
                continue
        if v & 3 == 0 and (v >> 2) == (index & (block - 1)):
            off = off2
            break
        return None
    return off


def r2r_debug_info(core, method_start, image_dirs, nbytes):
    mp = core.mapping_of(method_start)
    if mp is None:
        return {'error': 'no mapping holds the method'}
    st, en, foff, path = mp
    name = os.path.basename(path)
    # The image base: the runtime maps an R2R image's sections at their RVAs (and may map the
    # file flat elsewhere too): place the mapping holding the code by the section table, read
    # from the file when at hand, else from the headers at each start of a mapping of the
    # file's offset 0.
    img = Image(core, 0, name, image_dirs)
    base = None
    tables = []
    if img.sections:
        tables.append(img.sections)
    for s2, e2, f2, p2 in core.files:
        if p2 == path and f2 == 0:
            hdr = core.read(s2, 4096)
            if hdr and hdr[:2] == b'MZ':
                try:
                    tables.append(Image._pe_sections(hdr))
                except struct.error:
                    pass
    file_off = foff + (method_start - st)
    for secs in tables:
        for va, sz, rp in secs:
            if rp <= file_off < rp + sz:
                base = method_start - (va + file_off - rp)
                break
        if base is not None:
            break
    if base is None:
        return {'error': 'cannot place the image of ' + name}
    img.base = base
    out = {'image': name, 'image_base': hx(base), 'image_file': bool(img.file)}
    pe = img.u32(0x3c)
    magic = struct.unpack('<H', img.read(pe + 24, 2)[0])[0]
    dd = pe + 24 + (112 if magic == 0x20b else 96)
    cli = img.u32(dd + 14 * 8)
    hdr = img.u32(cli + 0x40)
    sig, major, minor, flags, nsec = struct.unpack('<IHHII', img.read(hdr, 16)[0])
    out['r2r_version'] = [major, minor]
    secs = {}
    for i in range(nsec):
        t, rva, size = struct.unpack('<III', img.read(hdr + 16 + 12 * i, 12)[0])
        secs[t] = (rva, size)
    rf_rva, rf_size = secs[102]
    start_rva = method_start - base
    # NativeUnwindInfoLookupTable::LookupUnwindInfoForMethod's own probes (binary search down
    # to 10 entries, then linear): the entries the DAC read, which the dump kept.
    low, high = 0, rf_size // 12 - 1
    index = None

    def begin(i):
        b = img.u32(rf_rva + 12 * i)
        if b is None:
            raise ValueError('RuntimeFunctions entry %d unreadable' % i)
        return b
    try:
        while high - low > 10:
            mid = low + (high - low) // 2
            if start_rva < begin(mid):
                high = mid - 1
            else:
                low = mid
        i = low
        while i <= high:
            if i == high or start_rva < begin(i + 1):
                if begin(i) == start_rva:
                    index = i
                break
            i += 1
    except ValueError as e:
        return dict(out, error=str(e))
    if index is None:
        return dict(out, error='no RUNTIME_FUNCTION starts at the method')
    out['runtime_function_index'] = index
    if 105 not in secs:
        return dict(out, error='no DebugInfo section')
    entry = native_array_get(img, secs[105][0], index)
    if entry is None:
        return dict(out, error='no debug info entry for the method')
    # DecodeUnsigned returns the next offset and the value (lookBack): a non-zero lookBack
    # points back to a blob shared with an earlier method, else the blob follows.
    look_back, nxt = native_unsigned(img, entry)
    rva = entry - look_back if look_back != 0 else nxt
    out['debug_info_rva'] = hx(rva)
    data, src = img.read(rva, nbytes)
    if data is None:
        data, src = img.read(rva, 256)
    out['debug_info_source'] = src
    if data is not None:
        out['debug_info'] = base64.b64encode(data).decode()
    return out


class SOSStackRefData(Structure):
    # dacprivate.h / sospriv.idl SOSStackRefData
    _fields_ = [('HasRegisterInformation', c_int32), ('Register', c_int32), ('Offset', c_int32),
                ('Address', CLRDATA_ADDRESS), ('Object', CLRDATA_ADDRESS), ('Flags', c_uint32),
                ('SourceType', c_int32), ('Source', CLRDATA_ADDRESS),
                ('StackPointer', CLRDATA_ADDRESS)]


def stack_refs(dac, osid, limit=100000):
    """ISOSDacInterface::GetStackReferences: every root the runtime's own GC stack walk
    reports for the thread. Register is the GC info's base for a stack slot (4 SP, -5 caller
    SP, else the frame register) or the register number; Offset the slot's offset."""
    e = c_void_p()
    hr = dac.sos('GetStackReferences', [c_uint32, POINTER(c_void_p)], osid, byref(e))
    if hr < 0 or not e.value:
        return {'hr': hr_str(hr)}
    it = Iface(e.value, ['Skip', 'Reset', 'GetCount', 'Next'])
    out = []
    buf = (SOSStackRefData * 256)()
    while len(out) < limit:
        got = c_uint32(0)
        hr = it('Next', [c_uint32, c_void_p, POINTER(c_uint32)], 256, buf, byref(got))
        for i in range(got.value):
            r = buf[i]
            out.append({'has_register': r.HasRegisterInformation, 'register': r.Register,
                        'offset': r.Offset, 'address': hx(r.Address), 'object': hx(r.Object),
                        'flags': r.Flags, 'source_type': r.SourceType, 'source': hx(r.Source),
                        'sp': hx(r.StackPointer)})
        if hr != 0 or got.value == 0:
            break
    com_release(e.value)
    return out


class DACEHInfo(Structure):
    # dacprivate.h: clauseType EHFault 0, EHFinally 1, EHFilter 2, EHTyped 3; offsets are
    # native offsets in the method
    _fields_ = [('clauseType', c_int32), ('tryStartOffset', CLRDATA_ADDRESS),
                ('tryEndOffset', CLRDATA_ADDRESS), ('handlerStartOffset', CLRDATA_ADDRESS),
                ('handlerEndOffset', CLRDATA_ADDRESS), ('isDuplicateClause', c_int32),
                ('filterOffset', CLRDATA_ADDRESS), ('isCatchAllHandler', c_int32),
                ('moduleAddr', CLRDATA_ADDRESS), ('mtCatch', CLRDATA_ADDRESS),
                ('tokCatch', c_uint32)]


def eh_clauses(dac, ip):
    """ISOSDacInterface::TraverseEHInfo: the method's EH clauses (native offsets)."""
    from ctypes import CFUNCTYPE
    out = []
    CB = CFUNCTYPE(c_int32, c_uint32, c_uint32, POINTER(DACEHInfo), c_void_p)

    def cb(i, n, info, tok):
        e = info.contents
        out.append({'type': ['fault', 'finally', 'filter', 'typed', 'unknown'][min(e.clauseType, 4)],
                    'try': [e.tryStartOffset, e.tryEndOffset],
                    'handler': [e.handlerStartOffset, e.handlerEndOffset],
                    'filter': e.filterOffset if e.clauseType == 2 else None,
                    'duplicate': bool(e.isDuplicateClause)})
        return 1
    f = CB(cb)
    hr = dac.sos('TraverseEHInfo', [CLRDATA_ADDRESS, CB, c_void_p], ip, f, None)
    return out if hr >= 0 else {'hr': hr_str(hr)}


def stack_refs_isolated(dac, osid):
    """stack_refs in a forked child: the 10.0 DACs crash in GetStackReferences on some threads
    (a null dereference in their enumerator), which must cost that thread's refs only."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            data = json.dumps(stack_refs(dac, osid)).encode()
        except Exception as e:  # noqa: BLE001
            data = json.dumps({'error': str(e)}).encode()
        with os.fdopen(w, 'wb') as fh:
            fh.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, 'rb') as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return {'error': 'GetStackReferences crashed the DAC (wait status %#x)' % status}
    return json.loads(data)


def collect(core, dac, args):
    sos = dac.sos
    proc = dac.process
    out = {'threads': [], 'methods': {}}
    methods = out['methods']
    # threads from the thread store
    from dacprobe import DacpThreadStoreData, DacpThreadData
    hr, ts = dac.struct_call(sos, 'GetThreadStoreData', DacpThreadStoreData)
    addr = ts.firstThread if hr >= 0 else 0
    seen = set()
    threads = []
    while addr and addr not in seen:
        seen.add(addr)
        hr, td = dac.struct_call(sos, 'GetThreadData', DacpThreadData, addr)
        if hr < 0:
            break
        threads.append((addr, td.osThreadId, td.corThreadId))
        addr = td.nextThread
    CTX_BUF = 0x2000
    for taddr, osid, cid in threads:
        th = {'osThreadId': osid, 'corThreadId': cid, 'frames': []}
        out['threads'].append(th)
        if not osid:
            continue
        task = c_void_p()
        hr = proc('GetTaskByOSThreadID', [c_uint32, POINTER(c_void_p)], osid, byref(task))
        if hr < 0 or not task.value:
            th['error'] = 'GetTaskByOSThreadID ' + hr_str(hr)
            continue
        taskI = Iface(task.value, IXCLRDATATASK_METHODS)
        walk = c_void_p()
        hr = taskI('CreateStackWalk', [c_uint32, POINTER(c_void_p)], 0xf, byref(walk))
        if hr < 0 or not walk.value:
            th['error'] = 'CreateStackWalk ' + hr_str(hr)
            com_release(task.value)
            continue
        w = Iface(walk.value, IXCLRDATASTACKWALK_METHODS)
        buf = create_string_buffer(CTX_BUF)
        index = 0
        for _ in range(args.max_frames):
            csize = c_uint32()
            hr = w('GetContext', [c_uint32, c_uint32, POINTER(c_uint32), c_void_p],
                   CONTEXT_ALL, CTX_BUF, byref(csize), buf)
            if hr < 0:
                break
            regs = {r.lower(): hx(struct.unpack_from('<Q', buf.raw, CTX_OFF[r])[0]) for r in REGS
                    if r in CTX_OFF}
            ip = struct.unpack_from('<Q', buf.raw, CTX_OFF['Rip'])[0]
            fa = c_uint64(0)
            hr = w('Request', [c_uint32, c_uint32, c_void_p, c_uint32, c_void_p],
                   0xf0000000, 0, None, 8, byref(fa))
            fr = {'index': index, 'ip': hx(ip), 'regs': regs}
            index += 1
            if hr >= 0 and fa.value:
                fr['explicit_frame'] = hx(fa.value)
            else:
                ch = DacpCodeHeaderData()
                hr = sos('GetCodeHeaderData', [CLRDATA_ADDRESS, POINTER(DacpCodeHeaderData)],
                         ip, byref(ch))
                if hr >= 0:
                    fr['code_header'] = {'gc_info': hx(ch.GCInfo), 'jit_type': ch.JITType,
                                         'method_desc': hx(ch.MethodDescPtr),
                                         'method_start': hx(ch.MethodStart),
                                         'method_size': ch.MethodSize,
                                         'cold_start': hx(ch.ColdRegionStart),
                                         'cold_size': ch.ColdRegionSize,
                                         'hot_size': ch.HotRegionSize}
                    name, _ = dac.wname('GetMethodDescName', ch.MethodDescPtr)
                    fr['method'] = name
                    key = hx(ch.MethodStart)
                    if key not in methods:
                        m = {'method': name, 'method_desc': hx(ch.MethodDescPtr),
                             'method_start': key, 'method_size': ch.MethodSize,
                             'jit_type': ch.JITType, 'gc_info_address': hx(ch.GCInfo)}
                        m['gc_info'] = base64.b64encode(
                            read_avail(core, ch.GCInfo, args.blob_bytes)).decode()
                        if ch.JITType == 1:
                            try:
                                hdr = core.u64(ch.MethodStart - 8)
                                m['real_code_header'] = hx(hdr)
                                dbg = core.u64(hdr)
                                m['debug_info_address'] = hx(dbg)
                                if dbg:
                                    m['debug_info'] = base64.b64encode(
                                        read_avail(core, dbg, args.blob_bytes)).decode()
                            except Exception as e:  # noqa: BLE001
                                m['debug_info_error'] = str(e)
                        elif ch.JITType == 2:
                            try:
                                m['r2r'] = r2r_debug_info(core, ch.MethodStart, args.image_dir,
                                                          args.blob_bytes)
                            except Exception as e:  # noqa: BLE001
                                m['r2r'] = {'error': '%s: %s' % (type(e).__name__, e)}
                        m['eh_clauses'] = eh_clauses(dac, ch.MethodStart)
                        methods[key] = m
                else:
                    fr['code_header_hr'] = hr_str(hr)
                # the frame object: variables and the method instance's IL map
                fptr = c_void_p()
                hr = w('GetFrame', [POINTER(c_void_p)], byref(fptr))
                if hr >= 0 and fptr.value:
                    fr['vars'] = frame_vars(dac, fptr.value, core)
                    mi, mhr = method_instance(fptr.value)
                    if mi:
                        fr['il'] = il_info(mi, ip)
                        com_release(mi)
                    else:
                        fr['il'] = {'GetMethodInstance_hr': hr_str(mhr)}
                    com_release(fptr.value)
                else:
                    fr['GetFrame_hr'] = hr_str(hr)
            th['frames'].append(fr)
            hr = w('Next', [])
            if hr != S_OK:
                break
        com_release(walk.value)
        com_release(task.value)
        if args.stack_refs:
            th['stack_refs'] = stack_refs_isolated(dac, osid)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--dac', required=True)
    ap.add_argument('dump')
    ap.add_argument('--max-frames', type=int, default=200)
    ap.add_argument('--blob-bytes', type=int, default=4096,
                    help='bytes read at each blob address (fewer where the dump ends)')
    ap.add_argument('--stack-refs', action='store_true',
                    help='also ask GetStackReferences (the 10.0.14 DAC crashes in it on some dumps)')
    ap.add_argument('--image-dir', action='append', default=[],
                    help='folders searched for image files whose pages the dump lacks')
    args = ap.parse_args()
    core = Core(args.dump, file_fallback=True)
    dacprobe.RUNTIME_MODULE = dacprobe.find_runtime_module(core)
    rt_dirs = [os.path.dirname(os.path.abspath(args.dac))]
    rp = core.module_path(dacprobe.RUNTIME_MODULE)
    if rp:
        rt_dirs.append(os.path.dirname(rp))
    target = DataTarget(core, rt_dirs)
    dac = Dac(args.dac, target)
    body = collect(core, dac, args)
    body['tool'] = 'clrcodeinfo/tools/codeprobe.py'
    body['dac'] = os.path.abspath(args.dac)
    body['runtime_path'] = rp
    json.dump(body, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
