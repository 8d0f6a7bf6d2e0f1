#!/usr/bin/env python3
"""dacprobe: host the .NET runtime's own DAC (libmscordaccore.so) against an
ELF core dump of a .NET (8) process and print ground truth as JSON.

    python3 dacprobe.py --dac /path/to/libmscordaccore.so core.dmp > out.json

Interfaces, vtable orders, IIDs and struct layouts follow dotnet/runtime
src/coreclr/inc/{clrdata,xclrdata,sospriv}.idl and dacprivate.h; hosting
(dlopen, DllMain(DLL_PROCESS_ATTACH) when DAC_PAL_InitializeDLL is exported,
CLRDataCreateInstance(IID_IXCLRDataProcess, target)) follows microsoft/clrmd
DacLibrary.cs / DacDataTargetCOM.cs.
"""
import argparse
import ctypes
import json
import os
import struct
import sys
import traceback
import uuid
from ctypes import (CFUNCTYPE, POINTER, Structure, addressof, byref, c_int32, c_uint16,
                    c_uint32, c_uint64, c_void_p, cast, create_string_buffer, memmove, sizeof)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elfcore import Core  # noqa: E402

# The module that holds the runtime (coreclr).  libcoreclr.so, except in a single-file app,
# where coreclr is linked into the host executable (see find_runtime_module and --runtime-module).
RUNTIME_MODULE = 'libcoreclr.so'


def find_runtime_module(core):
    """libcoreclr.so when it is mapped; otherwise the mapped ELF file that exports the
    runtime's DotNetRuntimeInfo symbol (the single-file host), by its basename."""
    if core.module_base('libcoreclr.so') is not None:
        return 'libcoreclr.so'
    seen = set()
    for st, en, pg, n in core.files:
        if n in seen or not os.path.isfile(n):
            continue
        seen.add(n)
        try:
            with open(n, 'rb') as f:
                if f.read(4) != b'\x7fELF':
                    continue
                f.seek(0)
                data = f.read()
        except OSError:
            continue
        if b'DotNetRuntimeInfo' in data and b'g_dacTable' in data:
            return os.path.basename(n)
    return 'libcoreclr.so'

# --------------------------------------------------------------------------
# HRESULTs
HRESULT = c_int32


def _h(x):
    return x - (1 << 32) if x & 0x80000000 else x


S_OK = 0
S_FALSE = 1
E_NOTIMPL = _h(0x80004001)
E_NOINTERFACE = _h(0x80004002)
E_POINTER = _h(0x80004003)
E_FAIL = _h(0x80004005)
E_INVALIDARG = _h(0x80070057)
# HRESULT_FROM_WIN32(ERROR_PARTIAL_COPY) - what ReadVirtual returns for absent memory
E_PARTIAL_COPY = _h(0x8007012B)


def hx(v):
    return None if v is None else '0x%x' % v


def hr_str(hr):
    return '0x%08x' % (hr & 0xffffffff)


# --------------------------------------------------------------------------
# GUIDs
class GUID(Structure):
    _fields_ = [('Data1', c_uint32), ('Data2', c_uint16), ('Data3', c_uint16),
                ('Data4', ctypes.c_ubyte * 8)]

    @classmethod
    def from_str(cls, s):
        return cls.from_buffer_copy(uuid.UUID(s).bytes_le)

    def key(self):
        return bytes(self).hex()

    def __str__(self):
        return str(uuid.UUID(bytes_le=bytes(self)))


IIDS = {
    # clrdata.idl
    'IUnknown': '00000000-0000-0000-C000-000000000046',
    'ICLRDataTarget': '3E11CCEE-D08B-43e5-AF01-32717A64DA03',
    'ICLRDataTarget2': '6d05fae3-189c-4630-a6dc-1c251e1c01ab',
    'ICLRDataTarget3': 'a5664f95-0af4-4a1b-960e-2f3346b4214c',
    'ICLRRuntimeLocator': 'b760bf44-9377-4597-8be7-58083bdc5146',
    'ICLRMetadataLocator': 'aa8fa804-bc05-4642-b2c5-c353ed22fc63',
    'ICLRDataEnumMemoryRegionsLoggingCallback': 'F315248D-8B79-49DB-B184-37426559F703',
    # xclrdata.idl
    'IXCLRDataTarget3': '59d9b5e1-4a6f-4531-84c3-51d12da22fd4',
    'IXCLRDataProcess': '5c552ab6-fc09-4cb3-8e36-22fa03c798b7',
    'IXCLRDataTask': 'A5B0BEEA-EC62-4618-8012-A24FFC23934C',
    'IXCLRDataStackWalk': 'E59D8D22-ADA7-49a2-89B5-A415AFCFC95F',
    # sospriv.idl
    'ISOSDacInterface': '436f00f2-b42a-4b9f-870c-e73db66ae930',
    'ISOSDacInterface8': 'c12f35a9-e55c-4520-a894-b3dc5165dfce',
    'ISOSDacInterface12': '1b93bacc-8ca4-432d-943a-3e6e7ec0b0a3',
    # clrmd DacDataTarget.cs (newer, optional)
    'ICLRContractLocator': '17d5b8c6-34a9-407f-af4f-a930201d4e02',
}
IID = {k: GUID.from_str(v) for k, v in IIDS.items()}
IID_NAME = {g.key(): k for k, g in IID.items()}

# --------------------------------------------------------------------------
# Vtable orders (method index = 3 + position after IUnknown's 3 slots)
IUNKNOWN = ['QueryInterface', 'AddRef', 'Release']

ISOSDAC_METHODS = [
    'GetThreadStoreData', 'GetAppDomainStoreData', 'GetAppDomainList', 'GetAppDomainData',
    'GetAppDomainName', 'GetDomainFromContext', 'GetAssemblyList', 'GetAssemblyData',
    'GetAssemblyName', 'GetModule', 'GetModuleData', 'TraverseModuleMap',
    'GetAssemblyModuleList', 'GetILForModule', 'GetThreadData', 'GetThreadFromThinlockID',
    'GetStackLimits', 'GetMethodDescData', 'GetMethodDescPtrFromIP', 'GetMethodDescName',
    'GetMethodDescPtrFromFrame', 'GetMethodDescFromToken', 'GetMethodDescTransparencyData',
    'GetCodeHeaderData', 'GetJitManagerList', 'GetJitHelperFunctionName', 'GetJumpThunkTarget',
    'GetThreadpoolData', 'GetWorkRequestData', 'GetHillClimbingLogEntry', 'GetObjectData',
    'GetObjectStringData', 'GetObjectClassName', 'GetMethodTableName', 'GetMethodTableData',
    'GetMethodTableSlot', 'GetMethodTableFieldData', 'GetMethodTableTransparencyData',
    'GetMethodTableForEEClass', 'GetFieldDescData', 'GetFrameName', 'GetPEFileBase',
    'GetPEFileName', 'GetGCHeapData', 'GetGCHeapList', 'GetGCHeapDetails', 'GetGCHeapStaticData',
    'GetHeapSegmentData', 'GetOOMData', 'GetOOMStaticData', 'GetHeapAnalyzeData',
    'GetHeapAnalyzeStaticData', 'GetDomainLocalModuleData', 'GetDomainLocalModuleDataFromAppDomain',
    'GetDomainLocalModuleDataFromModule', 'GetThreadLocalModuleData', 'GetSyncBlockData',
    'GetSyncBlockCleanupData', 'GetHandleEnum', 'GetHandleEnumForTypes', 'GetHandleEnumForGC',
    'TraverseEHInfo', 'GetNestedExceptionData', 'GetStressLogAddress', 'TraverseLoaderHeap',
    'GetCodeHeapList', 'TraverseVirtCallStubHeap', 'GetUsefulGlobals', 'GetClrWatsonBuckets',
    'GetTLSIndex', 'GetDacModuleHandle', 'GetRCWData', 'GetRCWInterfaces', 'GetCCWData',
    'GetCCWInterfaces', 'TraverseRCWCleanupList', 'GetStackReferences', 'GetRegisterName',
    'GetThreadAllocData', 'GetHeapAllocData', 'GetFailedAssemblyList', 'GetPrivateBinPaths',
    'GetAssemblyLocation', 'GetAppDomainConfigFile', 'GetApplicationBase',
    'GetFailedAssemblyData', 'GetFailedAssemblyLocation', 'GetFailedAssemblyDisplayName']
ISOSDAC8_METHODS = ['GetNumberGenerations', 'GetGenerationTable', 'GetFinalizationFillPointers',
                    'GetGenerationTableSvr', 'GetFinalizationFillPointersSvr',
                    'GetAssemblyLoadContext']
ISOSDAC12_METHODS = ['GetGlobalAllocationContext']
IXCLRDATAPROCESS_METHODS = ['Flush', 'StartEnumTasks', 'EnumTask', 'EndEnumTasks',
                            'GetTaskByOSThreadID', 'GetTaskByUniqueID']
IXCLRDATATASK_METHODS = ['GetProcess', 'GetCurrentAppDomain', 'GetUniqueID', 'GetFlags',
                         'IsSameObject', 'GetManagedObject', 'GetDesiredExecutionState',
                         'SetDesiredExecutionState', 'CreateStackWalk', 'GetOSThreadID',
                         'GetContext', 'SetContext', 'GetCurrentExceptionState', 'Request',
                         'GetName', 'GetLastExceptionState']
IXCLRDATASTACKWALK_METHODS = ['GetContext', 'SetContext', 'Next', 'GetStackSizeSkipped',
                              'GetFrameType', 'GetFrame', 'Request', 'SetContext2']


def slot(methods, name):
    return 3 + methods.index(name)


# --------------------------------------------------------------------------
# dacprivate.h structures (sizes are static_assert'ed there; checked below)
CLRDATA_ADDRESS = c_uint64


class DacpThreadStoreData(Structure):
    _fields_ = [('threadCount', c_int32), ('unstartedThreadCount', c_int32),
                ('backgroundThreadCount', c_int32), ('pendingThreadCount', c_int32),
                ('deadThreadCount', c_int32), ('firstThread', CLRDATA_ADDRESS),
                ('finalizerThread', CLRDATA_ADDRESS), ('gcThread', CLRDATA_ADDRESS),
                ('fHostConfig', c_uint32)]


class DacpThreadData(Structure):
    _fields_ = [('corThreadId', c_uint32), ('osThreadId', c_uint32), ('state', c_int32),
                ('preemptiveGCDisabled', c_uint32), ('allocContextPtr', CLRDATA_ADDRESS),
                ('allocContextLimit', CLRDATA_ADDRESS), ('context', CLRDATA_ADDRESS),
                ('domain', CLRDATA_ADDRESS), ('pFrame', CLRDATA_ADDRESS), ('lockCount', c_uint32),
                ('firstNestedException', CLRDATA_ADDRESS), ('teb', CLRDATA_ADDRESS),
                ('fiberData', CLRDATA_ADDRESS), ('lastThrownObjectHandle', CLRDATA_ADDRESS),
                ('nextThread', CLRDATA_ADDRESS)]


class DacpGcHeapData(Structure):
    _fields_ = [('bServerMode', c_int32), ('bGcStructuresValid', c_int32),
                ('HeapCount', c_uint32), ('g_max_generation', c_uint32)]


class DacpGenerationData(Structure):
    _fields_ = [('start_segment', CLRDATA_ADDRESS), ('allocation_start', CLRDATA_ADDRESS),
                ('allocContextPtr', CLRDATA_ADDRESS), ('allocContextLimit', CLRDATA_ADDRESS)]


DAC_NUMBERGENERATIONS = 4


class DacpGcHeapDetails(Structure):
    _fields_ = [('heapAddr', CLRDATA_ADDRESS), ('alloc_allocated', CLRDATA_ADDRESS),
                ('mark_array', CLRDATA_ADDRESS), ('current_c_gc_state', CLRDATA_ADDRESS),
                ('next_sweep_obj', CLRDATA_ADDRESS), ('saved_sweep_ephemeral_seg', CLRDATA_ADDRESS),
                ('saved_sweep_ephemeral_start', CLRDATA_ADDRESS),
                ('background_saved_lowest_address', CLRDATA_ADDRESS),
                ('background_saved_highest_address', CLRDATA_ADDRESS),
                ('generation_table', DacpGenerationData * DAC_NUMBERGENERATIONS),
                ('ephemeral_heap_segment', CLRDATA_ADDRESS),
                ('finalization_fill_pointers', CLRDATA_ADDRESS * (DAC_NUMBERGENERATIONS + 3)),
                ('lowest_address', CLRDATA_ADDRESS), ('highest_address', CLRDATA_ADDRESS),
                ('card_table', CLRDATA_ADDRESS)]


class DacpHeapSegmentData(Structure):
    _fields_ = [('segmentAddr', CLRDATA_ADDRESS), ('allocated', CLRDATA_ADDRESS),
                ('committed', CLRDATA_ADDRESS), ('reserved', CLRDATA_ADDRESS),
                ('used', CLRDATA_ADDRESS), ('mem', CLRDATA_ADDRESS), ('next', CLRDATA_ADDRESS),
                ('gc_heap', CLRDATA_ADDRESS), ('highAllocMark', CLRDATA_ADDRESS),
                ('flags', c_uint64), ('background_allocated', CLRDATA_ADDRESS)]


class DacpMethodTableData(Structure):
    _fields_ = [('bIsFree', c_int32), ('Module', CLRDATA_ADDRESS), ('Class', CLRDATA_ADDRESS),
                ('ParentMethodTable', CLRDATA_ADDRESS), ('wNumInterfaces', c_uint16),
                ('wNumMethods', c_uint16), ('wNumVtableSlots', c_uint16), ('wNumVirtuals', c_uint16),
                ('BaseSize', c_uint32), ('ComponentSize', c_uint32), ('cl', c_uint32),
                ('dwAttrClass', c_uint32), ('bIsShared', c_int32), ('bIsDynamic', c_int32),
                ('bContainsPointers', c_int32)]


class DacpUsefulGlobalsData(Structure):
    _fields_ = [('ArrayMethodTable', CLRDATA_ADDRESS), ('StringMethodTable', CLRDATA_ADDRESS),
                ('ObjectMethodTable', CLRDATA_ADDRESS), ('ExceptionMethodTable', CLRDATA_ADDRESS),
                ('FreeMethodTable', CLRDATA_ADDRESS)]


class DacpObjectData(Structure):
    _fields_ = [('MethodTable', CLRDATA_ADDRESS), ('ObjectType', c_int32), ('Size', c_uint64),
                ('ElementTypeHandle', CLRDATA_ADDRESS), ('ElementType', c_int32),
                ('dwRank', c_uint32), ('dwNumComponents', c_uint64), ('dwComponentSize', c_uint64),
                ('ArrayDataPtr', CLRDATA_ADDRESS), ('ArrayBoundsPtr', CLRDATA_ADDRESS),
                ('ArrayLowerBoundsPtr', CLRDATA_ADDRESS), ('RCW', CLRDATA_ADDRESS),
                ('CCW', CLRDATA_ADDRESS)]


for _cls, _size in [(DacpThreadStoreData, 0x38), (DacpThreadData, 0x68), (DacpGcHeapData, 0x10),
                    (DacpGenerationData, 0x20), (DacpGcHeapDetails, 0x120),
                    (DacpHeapSegmentData, 0x58), (DacpMethodTableData, 0x48),
                    (DacpUsefulGlobalsData, 0x28), (DacpObjectData, 0x60)]:
    assert sizeof(_cls) == _size, (_cls.__name__, hex(sizeof(_cls)), hex(_size))


def sdict(s):
    out = {}
    for name, typ in s._fields_:
        v = getattr(s, name)
        if isinstance(v, ctypes.Array):
            out[name] = [sdict(x) if isinstance(x, Structure) else hx(x) for x in v]
        elif typ is CLRDATA_ADDRESS:
            out[name] = hx(v)
        else:
            out[name] = v
    return out


# --------------------------------------------------------------------------
# x64 (Windows-layout / PAL) CONTEXT
CONTEXT_AMD64 = 0x00100000
CONTEXT_CONTROL = CONTEXT_AMD64 | 0x1
CONTEXT_INTEGER = CONTEXT_AMD64 | 0x2
CONTEXT_SEGMENTS = CONTEXT_AMD64 | 0x4
CONTEXT_FLOATING_POINT = CONTEXT_AMD64 | 0x8
CONTEXT_FULL = CONTEXT_CONTROL | CONTEXT_INTEGER | CONTEXT_FLOATING_POINT
CONTEXT_ALL = CONTEXT_AMD64 | 0x1f
CTX_OFF = {'ContextFlags': 0x30, 'MxCsr': 0x34, 'SegCs': 0x38, 'SegDs': 0x3a, 'SegEs': 0x3c,
           'SegFs': 0x3e, 'SegGs': 0x40, 'SegSs': 0x42, 'EFlags': 0x44,
           'Rax': 0x78, 'Rcx': 0x80, 'Rdx': 0x88, 'Rbx': 0x90, 'Rsp': 0x98, 'Rbp': 0xa0,
           'Rsi': 0xa8, 'Rdi': 0xb0, 'R8': 0xb8, 'R9': 0xc0, 'R10': 0xc8, 'R11': 0xd0,
           'R12': 0xd8, 'R13': 0xe0, 'R14': 0xe8, 'R15': 0xf0, 'Rip': 0xf8, 'FltSave': 0x100}
CONTEXT_MIN_SIZE = 0x4d0  # Windows AMD64 CONTEXT; PAL's may be larger (XSTATE)


def build_context(regs, fxsave, size):
    buf = bytearray(size)
    flags = CONTEXT_CONTROL | CONTEXT_INTEGER | CONTEXT_SEGMENTS

    def p64(name, v):
        struct.pack_into('<Q', buf, CTX_OFF[name], v & 0xffffffffffffffff)

    def p16(name, v):
        struct.pack_into('<H', buf, CTX_OFF[name], v & 0xffff)
    for k in ['Rax', 'Rcx', 'Rdx', 'Rbx', 'Rsp', 'Rbp', 'Rsi', 'Rdi', 'R8', 'R9', 'R10', 'R11',
              'R12', 'R13', 'R14', 'R15', 'Rip']:
        p64(k, regs[k.lower()])
    struct.pack_into('<I', buf, CTX_OFF['EFlags'], regs['eflags'] & 0xffffffff)
    p16('SegCs', regs['cs'])
    p16('SegSs', regs['ss'])
    p16('SegDs', regs['ds'])
    p16('SegEs', regs['es'])
    p16('SegFs', regs['fs'])
    p16('SegGs', regs['gs'])
    if fxsave is not None and len(fxsave) >= 512:
        buf[CTX_OFF['FltSave']:CTX_OFF['FltSave'] + 512] = fxsave[:512]
        struct.pack_into('<I', buf, CTX_OFF['MxCsr'], struct.unpack_from('<I', fxsave, 24)[0])
        flags |= CONTEXT_FLOATING_POINT
    struct.pack_into('<I', buf, CTX_OFF['ContextFlags'], flags)
    return bytes(buf)


# --------------------------------------------------------------------------
# Minimal PE reader (for ICLRMetadataLocator::GetMetadata)
def pe_metadata(path, md_rva=0):
    """(file_offset, size) of the CLI metadata of a PE file; md_rva overrides the RVA."""
    with open(path, 'rb') as f:
        d = f.read()
    if d[:2] != b'MZ':
        return None
    (peoff,) = struct.unpack_from('<I', d, 0x3c)
    if d[peoff:peoff + 4] != b'PE\0\0':
        return None
    nsec, = struct.unpack_from('<H', d, peoff + 6)
    optsz, = struct.unpack_from('<H', d, peoff + 20)
    opt = peoff + 24
    magic, = struct.unpack_from('<H', d, opt)
    ddir = opt + (96 if magic == 0x10b else 112)
    secs = []
    so = opt + optsz
    for i in range(nsec):
        vsz, va, rawsz, rawptr = struct.unpack_from('<IIII', d, so + 40 * i + 8)
        secs.append((va, max(vsz, rawsz), rawptr, rawsz))

    def rva2off(rva):
        for va, sz, rawptr, rawsz in secs:
            if va <= rva < va + sz:
                return rawptr + rva - va
        return None
    cli_rva, cli_sz = struct.unpack_from('<II', d, ddir + 14 * 8)
    if not cli_rva:
        return None
    co = rva2off(cli_rva)
    mdr, mds = struct.unpack_from('<II', d, co + 8)
    if md_rva:
        mdr = md_rva
    off = rva2off(mdr)
    if off is None:
        return None
    return d, off, mds


# --------------------------------------------------------------------------
class ComObj:
    """A COM object implemented in Python: [lpVtbl] -> [fn0, fn1, ...]."""

    def __init__(self, funcs):
        self.funcs = funcs  # keep CFUNCTYPE objects alive
        self.vtbl = (c_void_p * len(funcs))(*[cast(f, c_void_p).value for f in funcs])
        self.obj = (c_void_p * 1)(addressof(self.vtbl))
        self.ptr = addressof(self.obj)


QI_T = CFUNCTYPE(HRESULT, c_void_p, POINTER(GUID), POINTER(c_void_p))
ADDREF_T = CFUNCTYPE(c_uint32, c_void_p)
RELEASE_T = CFUNCTYPE(c_uint32, c_void_p)


def guarded(default):
    """Never let a Python exception escape into native code (ctypes would
    print it and return 0 == S_OK)."""
    def deco(fn):
        def wrapper(*a):
            try:
                return fn(*a)
            except Exception:
                DataTarget.errors.append(traceback.format_exc(limit=3))
                return default
        return wrapper
    return deco


def read_wstr(ptr, maxlen=4096):
    """Read a NUL-terminated UTF-16 (PAL WCHAR) string from host memory."""
    if not ptr:
        return None
    out = []
    for i in range(maxlen):
        (c,) = struct.unpack('<H', ctypes.string_at(ptr + 2 * i, 2))
        if c == 0:
            break
        out.append(c)
    return struct.pack('<%dH' % len(out), *out).decode('utf-16-le', 'replace')


class DataTarget:
    errors = []

    def __init__(self, core, runtime_dirs, use_runtime_locator=True, use_metadata_locator=True):
        self.core = core
        self.runtime_dirs = runtime_dirs
        self.refs = 1
        self.log = {'QueryInterface': {}, 'GetImageBase': {}, 'GetThreadContext': {},
                    'GetThreadContext_sizes': set(), 'ReadVirtual_calls': 0,
                    'ReadVirtual_failed': 0, 'ReadVirtual_partial': 0,
                    'GetMetadata': [], 'other_calls': {}}
        self.runtime_base = core.module_base(RUNTIME_MODULE)
        T = self
        # ---- ICLRDataTarget ----
        fns = [
            QI_T(self._qi), ADDREF_T(self._addref), RELEASE_T(self._release),
            CFUNCTYPE(HRESULT, c_void_p, POINTER(c_uint32))(self.GetMachineType),
            CFUNCTYPE(HRESULT, c_void_p, POINTER(c_uint32))(self.GetPointerSize),
            CFUNCTYPE(HRESULT, c_void_p, c_void_p, POINTER(c_uint64))(self.GetImageBase),
            CFUNCTYPE(HRESULT, c_void_p, c_uint64, c_void_p, c_uint32, POINTER(c_uint32))(self.ReadVirtual),
            CFUNCTYPE(HRESULT, c_void_p, c_uint64, c_void_p, c_uint32, POINTER(c_uint32))(self.WriteVirtual),
            CFUNCTYPE(HRESULT, c_void_p, c_uint32, c_uint32, POINTER(c_uint64))(self.GetTLSValue),
            CFUNCTYPE(HRESULT, c_void_p, c_uint32, c_uint32, c_uint64)(self.SetTLSValue),
            CFUNCTYPE(HRESULT, c_void_p, POINTER(c_uint32))(self.GetCurrentThreadID),
            CFUNCTYPE(HRESULT, c_void_p, c_uint32, c_uint32, c_uint32, c_void_p)(self.GetThreadContext),
            CFUNCTYPE(HRESULT, c_void_p, c_uint32, c_uint32, c_void_p)(self.SetThreadContext),
            CFUNCTYPE(HRESULT, c_void_p, c_uint32, c_uint32, c_void_p, c_uint32, c_void_p)(self.Request),
        ]
        self.target = ComObj(fns)
        # ---- ICLRRuntimeLocator ----
        self.locator = ComObj([QI_T(self._qi), ADDREF_T(self._addref), RELEASE_T(self._release),
                               CFUNCTYPE(HRESULT, c_void_p, POINTER(c_uint64))(self.GetRuntimeBase)])
        # ---- ICLRMetadataLocator ----
        self.mdloc = ComObj([QI_T(self._qi), ADDREF_T(self._addref), RELEASE_T(self._release),
                             CFUNCTYPE(HRESULT, c_void_p, c_void_p, c_uint32, c_uint32, c_void_p,
                                       c_uint32, c_uint32, c_uint32, c_void_p,
                                       POINTER(c_uint32))(self.GetMetadata)])
        self.iface = {IID['IUnknown'].key(): self.target, IID['ICLRDataTarget'].key(): self.target}
        if use_runtime_locator:
            self.iface[IID['ICLRRuntimeLocator'].key()] = self.locator
        if use_metadata_locator:
            self.iface[IID['ICLRMetadataLocator'].key()] = self.mdloc
        del T

    # IUnknown
    @guarded(E_NOINTERFACE)
    def _qi(self, this, riid, ppv):
        k = riid.contents.key()
        name = IID_NAME.get(k, str(riid.contents))
        obj = self.iface.get(k)
        self.log['QueryInterface'][name] = 'S_OK' if obj else 'E_NOINTERFACE'
        if not ppv:
            return E_POINTER
        if obj is None:
            ppv[0] = None
            return E_NOINTERFACE
        ppv[0] = obj.ptr
        self.refs += 1
        return S_OK

    @guarded(1)
    def _addref(self, this):
        self.refs += 1
        return self.refs

    @guarded(1)
    def _release(self, this):
        self.refs -= 1
        return max(self.refs, 1)  # the Python side owns the lifetime

    # ICLRDataTarget
    @guarded(E_FAIL)
    def GetMachineType(self, this, pm):
        pm[0] = 0x8664  # IMAGE_FILE_MACHINE_AMD64
        return S_OK

    @guarded(E_FAIL)
    def GetPointerSize(self, this, ps):
        ps[0] = 8
        return S_OK

    @guarded(E_FAIL)
    def GetImageBase(self, this, pname, pbase):
        name = read_wstr(pname) or ''
        fname = name.replace('\\', '/').rsplit('/', 1)[-1]
        base = self.core.module_base(fname)
        self.log['GetImageBase'][name] = hx(base)
        if base is None:
            return E_FAIL
        pbase[0] = base
        return S_OK

    @guarded(E_FAIL)
    def ReadVirtual(self, this, addr, buf, n, pread):
        self.log['ReadVirtual_calls'] += 1
        d = self.core.read_partial(addr, n) if n else b''
        if pread:
            pread[0] = len(d)
        if n and not d:
            self.log['ReadVirtual_failed'] += 1
            return E_PARTIAL_COPY
        if len(d) < n:
            self.log['ReadVirtual_partial'] += 1
        if d:
            memmove(buf, d, len(d))
        return S_OK

    @guarded(E_FAIL)
    def WriteVirtual(self, this, addr, buf, n, pwritten):
        self._other('WriteVirtual')
        if pwritten:
            pwritten[0] = 0
        return E_NOTIMPL  # a dump is read-only

    @guarded(E_FAIL)
    def GetTLSValue(self, this, tid, idx, pv):
        self._other('GetTLSValue')
        return E_NOTIMPL

    @guarded(E_FAIL)
    def SetTLSValue(self, this, tid, idx, v):
        self._other('SetTLSValue')
        return E_NOTIMPL

    @guarded(E_FAIL)
    def GetCurrentThreadID(self, this, ptid):
        self._other('GetCurrentThreadID')
        if self.core.threads:
            ptid[0] = self.core.threads[0]
            return S_OK
        return E_FAIL

    @guarded(E_FAIL)
    def GetThreadContext(self, this, tid, flags, size, ctx):
        self.log['GetThreadContext'][tid] = self.log['GetThreadContext'].get(tid, 0) + 1
        self.log['GetThreadContext_sizes'].add((hex(flags), size))
        regs = self.core.regs.get(tid)
        if regs is None:
            return E_FAIL
        if size < 0x100:
            return E_INVALIDARG
        data = build_context(regs, self.core.fpregs.get(tid), max(size, CONTEXT_MIN_SIZE))[:size]
        memmove(ctx, data, size)
        return S_OK

    @guarded(E_FAIL)
    def SetThreadContext(self, this, tid, size, ctx):
        self._other('SetThreadContext')
        return E_NOTIMPL

    @guarded(E_FAIL)
    def Request(self, this, code, insz, inbuf, outsz, outbuf):
        self._other('Request:0x%x' % code)
        return E_NOTIMPL

    # ICLRRuntimeLocator
    @guarded(E_FAIL)
    def GetRuntimeBase(self, this, pbase):
        self._other('GetRuntimeBase')
        if not self.runtime_base:
            return E_FAIL
        pbase[0] = self.runtime_base
        return S_OK

    # ICLRMetadataLocator
    @guarded(E_FAIL)
    def GetMetadata(self, this, pname, timestamp, imagesize, mvid, mdrva, flags, bufsize, buf, pdatasize):
        name = read_wstr(pname) or ''
        entry = {'image': name, 'timestamp': hx(timestamp), 'size': hx(imagesize),
                 'mdRva': hx(mdrva), 'bufferSize': bufsize}
        self.log['GetMetadata'].append(entry)
        fname = name.replace('\\', '/').rsplit('/', 1)[-1]
        cands = []
        if name.startswith('/'):
            cands.append(name)
        p = self.core.module_path(fname)
        if p:
            cands.append(p)
        for d in self.runtime_dirs:
            cands.append(os.path.join(d, fname))
        for c in cands:
            if not os.path.isfile(c):
                continue
            # verify the PE timestamp/size the DAC asked for
            with open(c, 'rb') as f:
                hdr = f.read(4096)
            peoff = struct.unpack_from('<I', hdr, 0x3c)[0]
            ts = struct.unpack_from('<I', hdr, peoff + 8)[0]
            opt = peoff + 24
            soi = struct.unpack_from('<I', hdr, opt + 56)[0]
            if (timestamp and ts != timestamp) or (imagesize and soi != imagesize):
                entry.setdefault('rejected', []).append(c)
                continue
            r = pe_metadata(c, mdrva)
            if r is None:
                continue
            d, off, mds = r
            n = min(bufsize, mds if not mdrva else bufsize, len(d) - off)
            memmove(buf, d[off:off + n], n)
            if pdatasize:
                pdatasize[0] = n
            entry['served_from'] = c
            entry['bytes'] = n
            return S_OK
        entry['result'] = 'E_FAIL'
        return E_FAIL

    def _other(self, k):
        self.log['other_calls'][k] = self.log['other_calls'].get(k, 0) + 1

    def log_json(self):
        d = dict(self.log)
        d['GetThreadContext_sizes'] = sorted(list(x) for x in d['GetThreadContext_sizes'])
        d['GetThreadContext'] = {str(k): v for k, v in d['GetThreadContext'].items()}
        return d


# --------------------------------------------------------------------------
_proto_cache = {}


def vcall(obj, index, argtypes, *args, restype=HRESULT):
    """Call method #index of the COM object at address obj."""
    vtbl = cast(c_void_p(obj), POINTER(POINTER(c_void_p)))[0]
    fp = vtbl[index]
    key = (restype, tuple(argtypes))
    proto = _proto_cache.get(key)
    if proto is None:
        proto = _proto_cache[key] = CFUNCTYPE(restype, c_void_p, *argtypes)
    return proto(fp)(c_void_p(obj), *args)


def com_release(obj):
    if obj:
        vcall(obj, 2, [], restype=c_uint32)


def com_qi(obj, iid):
    out = c_void_p()
    hr = vcall(obj, 0, [POINTER(GUID), POINTER(c_void_p)], byref(iid), byref(out))
    return hr, out.value


class Iface:
    def __init__(self, ptr, methods):
        self.ptr = ptr
        self.methods = methods

    def __call__(self, name, argtypes, *args):
        return vcall(self.ptr, slot(self.methods, name), argtypes, *args)


class Dac:
    def __init__(self, dac_path, target):
        self.lib = ctypes.CDLL(dac_path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.handle = self.lib._handle
        self.init = {}
        # ClrMD DacLibrary: if the DAC exports DAC_PAL_InitializeDLL (or PAL_InitializeDLL),
        # call DllMain(handle, DLL_PROCESS_ATTACH, NULL) to initialise its PAL.
        has_init = False
        for sym in ('DAC_PAL_InitializeDLL', 'PAL_InitializeDLL'):
            try:
                getattr(self.lib, sym)
                has_init = True
                self.init['pal_init_export'] = sym
                break
            except AttributeError:
                pass
        if has_init:
            dllmain = CFUNCTYPE(c_int32, c_void_p, c_uint32, c_void_p)(('DllMain', self.lib))
            self.init['DllMain'] = dllmain(c_void_p(self.handle), 1, None)
        create = CFUNCTYPE(HRESULT, POINTER(GUID), c_void_p, POINTER(c_void_p))(
            ('CLRDataCreateInstance', self.lib))
        out = c_void_p()
        hr = create(byref(IID['IXCLRDataProcess']), c_void_p(target.target.ptr), byref(out))
        self.init['CLRDataCreateInstance'] = hr_str(hr)
        if hr < 0 or not out.value:
            raise RuntimeError('CLRDataCreateInstance failed %s' % hr_str(hr))
        self.process = Iface(out.value, IXCLRDATAPROCESS_METHODS)
        hr, sos = com_qi(out.value, IID['ISOSDacInterface'])
        self.init['QI_ISOSDacInterface'] = hr_str(hr)
        if hr < 0:
            raise RuntimeError('QueryInterface(ISOSDacInterface) failed %s' % hr_str(hr))
        self.sos = Iface(sos, ISOSDAC_METHODS)
        hr, s8 = com_qi(out.value, IID['ISOSDacInterface8'])
        self.init['QI_ISOSDacInterface8'] = hr_str(hr)
        self.sos8 = Iface(s8, ISOSDAC8_METHODS) if hr >= 0 else None
        hr, s12 = com_qi(out.value, IID['ISOSDacInterface12'])
        self.init['QI_ISOSDacInterface12'] = hr_str(hr)
        self.sos12 = Iface(s12, ISOSDAC12_METHODS) if hr >= 0 else None

    # ---- helpers over ISOSDacInterface ----
    def wname(self, method, addr):
        """Call a (addr, count, WCHAR*, unsigned*) name getter, growing the buffer."""
        need = c_uint32(0)
        count = 512
        for _ in range(3):
            buf = create_string_buffer(2 * count)
            hr = self.sos(method, [CLRDATA_ADDRESS, c_uint32, c_void_p, POINTER(c_uint32)],
                          addr, count, buf, byref(need))
            if hr < 0:
                return None, hr
            if need.value <= count:
                n = need.value
                raw = buf.raw[:2 * n]
                s = raw.decode('utf-16-le', 'replace')
                return s.split('\0', 1)[0], hr
            count = need.value
        return None, E_FAIL

    def struct_call(self, iface, method, cls, *pre):
        s = cls()
        argtypes = [CLRDATA_ADDRESS] * len(pre) + [POINTER(cls)]
        hr = iface(method, argtypes, *(list(pre) + [byref(s)]))
        return hr, s


# --------------------------------------------------------------------------
def align8(x):
    return (x + 7) & ~7


MIN_OBJ_SIZE = 24  # Align(min_obj_size) on 64-bit: sync block + MT + one pointer


def collect(core, dac, target, args):
    out = {}
    errors = []
    out['errors'] = errors

    def err(where, hr=None, **kw):
        e = {'where': where}
        if hr is not None:
            e['hr'] = hr_str(hr)
        e.update(kw)
        errors.append(e)

    sos = dac.sos
    # ------------------------------------------------------------ 1. runtime
    rt = {'runtime_module': RUNTIME_MODULE, 'runtime_base': hx(core.module_base(RUNTIME_MODULE)),
          'runtime_path': core.module_path(RUNTIME_MODULE)}
    hr, ts = dac.struct_call(sos, 'GetThreadStoreData', DacpThreadStoreData)
    rt['GetThreadStoreData_hr'] = hr_str(hr)
    threads = []
    if hr >= 0:
        rt['thread_store'] = sdict(ts)
        addr = ts.firstThread
        seen = set()
        while addr and addr not in seen and len(threads) < 100000:
            seen.add(addr)
            hr, td = dac.struct_call(sos, 'GetThreadData', DacpThreadData, addr)
            if hr < 0:
                err('GetThreadData', hr, thread=hx(addr))
                break
            t = {'address': hx(addr), 'osThreadId': td.osThreadId, 'corThreadId': td.corThreadId,
                 'state': td.state, 'state_hex': hx(td.state & 0xffffffff),
                 'preemptiveGCDisabled': td.preemptiveGCDisabled,
                 'allocContextPtr': hx(td.allocContextPtr), 'allocContextLimit': hx(td.allocContextLimit),
                 'lastThrownObjectHandle': hx(td.lastThrownObjectHandle), 'lockCount': td.lockCount,
                 'teb': hx(td.teb), 'pFrame': hx(td.pFrame), 'domain': hx(td.domain),
                 'context': hx(td.context), 'firstNestedException': hx(td.firstNestedException),
                 'nextThread': hx(td.nextThread),
                 'is_finalizer': addr == ts.finalizerThread, 'is_gc_thread': addr == ts.gcThread,
                 'in_core_prstatus': td.osThreadId in core.regs}
            t['_raw'] = td
            threads.append(t)
            addr = td.nextThread
        rt['threads_walked'] = len(threads)
        managed_os = {t['osThreadId'] for t in threads}
        rt['os_threads_in_core'] = list(core.threads)
        rt['os_threads_without_managed_thread'] = [x for x in core.threads if x not in managed_os]
    else:
        err('GetThreadStoreData', hr)
    out['runtime'] = rt

    # ------------------------------------------------------------ 2. GC heap
    gc = {}
    hr, gcd = dac.struct_call(sos, 'GetGCHeapData', DacpGcHeapData)
    gc['GetGCHeapData_hr'] = hr_str(hr)
    heaps = []
    if hr >= 0:
        gc['GetGCHeapData'] = sdict(gcd)
        if gcd.bServerMode:
            n = gcd.HeapCount
            arr = (CLRDATA_ADDRESS * max(n, 1))()
            need = c_uint32()
            hr = sos('GetGCHeapList', [c_uint32, c_void_p, POINTER(c_uint32)], n, arr, byref(need))
            if hr < 0:
                err('GetGCHeapList', hr)
            for h in list(arr)[:n]:
                hr, det = dac.struct_call(sos, 'GetGCHeapDetails', DacpGcHeapDetails, h)
                if hr < 0:
                    err('GetGCHeapDetails', hr, heap=hx(h))
                    continue
                heaps.append((h, det))
        else:
            hr, det = dac.struct_call(sos, 'GetGCHeapStaticData', DacpGcHeapDetails)
            if hr < 0:
                err('GetGCHeapStaticData', hr)
            else:
                heaps.append((0, det))
    else:
        err('GetGCHeapData', hr)

    hr, ug = dac.struct_call(sos, 'GetUsefulGlobals', DacpUsefulGlobalsData)
    free_mt = ug.FreeMethodTable if hr >= 0 else None
    string_mt = ug.StringMethodTable if hr >= 0 else None
    gc['useful_globals'] = sdict(ug) if hr >= 0 else hr_str(hr)

    # allocation contexts to skip: threads, per-heap generation tables, global
    alloc_ctx = {}

    def add_ctx(p, l, src):
        if p and l and p < l:
            alloc_ctx[p] = (l, src)
    for t in threads:
        add_ctx(t['_raw'].allocContextPtr, t['_raw'].allocContextLimit, 'thread %d' % t['osThreadId'])
    if dac.sos12:
        p, l = c_uint64(), c_uint64()
        hr = dac.sos12('GetGlobalAllocationContext', [POINTER(c_uint64), POINTER(c_uint64)],
                       byref(p), byref(l))
        gc['global_alloc_context'] = {'hr': hr_str(hr), 'ptr': hx(p.value), 'limit': hx(l.value)}
        if hr >= 0:
            add_ctx(p.value, l.value, 'global')

    heap_out = []
    segments = []
    for hidx, (haddr, det) in enumerate(heaps):
        hd = sdict(det)
        gens = [det.generation_table[i] for i in range(DAC_NUMBERGENERATIONS)]
        ngen = None
        if dac.sos8:
            n = c_uint32()
            hr = dac.sos8('GetNumberGenerations', [POINTER(c_uint32)], byref(n))
            if hr >= 0:
                ngen = n.value
                arr = (DacpGenerationData * ngen)()
                need = c_uint32()
                if haddr:
                    hr = dac.sos8('GetGenerationTableSvr', [CLRDATA_ADDRESS, c_uint32, c_void_p,
                                                            POINTER(c_uint32)], haddr, ngen, arr, byref(need))
                else:
                    hr = dac.sos8('GetGenerationTable', [c_uint32, c_void_p, POINTER(c_uint32)],
                                  ngen, arr, byref(need))
                if hr >= 0:
                    gens = list(arr)
                else:
                    err('GetGenerationTable', hr)
        hd['number_generations_sos8'] = ngen
        hd['generation_table_full'] = [sdict(g) for g in gens]
        for g in gens:
            add_ctx(g.allocContextPtr, g.allocContextLimit, 'heap %d generation' % hidx)
        regions = len(gens) >= 2 and gens[0].start_segment != gens[1].start_segment
        hd['uses_regions'] = regions
        heap_out.append(hd)
        # ClrMD DacHeap.EnumerateSegments order: LOH(3), gen2, [gen1, gen0 if regions], POH(4)
        order = [3, 2] + ([1, 0] if regions else []) + ([4] if len(gens) > 4 else [])
        seen = {0}
        for gen in order:
            sa = gens[gen].start_segment
            while sa and sa not in seen:
                seen.add(sa)
                hr, sd = dac.struct_call(sos, 'GetHeapSegmentData', DacpHeapSegmentData, sa)
                if hr < 0:
                    err('GetHeapSegmentData', hr, segment=hx(sa))
                    break
                eph = (sa == det.ephemeral_heap_segment)
                end = det.alloc_allocated if eph else sd.allocated
                kind = ('frozen' if sd.flags & 1 else {3: 'loh', 4: 'poh'}.get(gen, 'gen%d' % gen
                        if regions else ('ephemeral' if eph else 'gen2')))
                segments.append({'heap': hidx, 'address': hx(sa), 'generation_list': gen,
                                 'kind': kind, 'mem': hx(sd.mem), 'allocated': hx(sd.allocated),
                                 'walk_end': hx(end), 'committed': hx(sd.committed),
                                 'reserved': hx(sd.reserved), 'used': hx(sd.used),
                                 'highAllocMark': hx(sd.highAllocMark), 'flags': hx(sd.flags),
                                 'next': hx(sd.next), 'is_ephemeral_heap_segment': eph,
                                 '_mem': sd.mem, '_end': end})
                sa = sd.next
    gc['heaps'] = heap_out
    gc['alloc_contexts_skipped'] = [{'ptr': hx(p), 'limit': hx(l), 'source': s}
                                    for p, (l, s) in sorted(alloc_ctx.items())]

    # heap walk (Python side, reading the core directly)
    mt_cache = {}

    def mt_info(mt):
        r = mt_cache.get(mt)
        if r is None:
            hr, md = dac.struct_call(sos, 'GetMethodTableData', DacpMethodTableData, mt)
            if hr < 0:
                r = None
            else:
                name, nhr = dac.wname('GetMethodTableName', mt)
                base = md.BaseSize
                # ClrDataAccess::GetMethodTableData reports String's BaseSize minus
                # sizeof(WCHAR) (the terminator); the object's real size includes it.
                if mt == string_mt:
                    base += 2
                r = (base, md.ComponentSize, name if name is not None else
                     '<GetMethodTableName failed %s>' % hr_str(nhr), bool(md.bIsFree))
            mt_cache[mt] = r
        return r

    stats = {}
    free = [0, 0]
    boxes = []
    total = 0
    total_size = 0
    sample_checks = {'checked': 0, 'mismatches': []}
    check_every = args.check_every
    CHUNK = 1 << 20
    for seg in segments:
        start, end = seg['_mem'], seg['_end']
        nobj = 0
        seg_bytes = 0
        a = start
        cache_base, cache = 0, b''

        def rd(addr, n):
            nonlocal cache_base, cache
            if not (cache_base <= addr and addr + n <= cache_base + len(cache)):
                cache_base = addr
                cache = core.read_partial(addr, max(n, min(CHUNK, end - addr + 16)))
            o = addr - cache_base
            d = cache[o:o + n]
            return d if len(d) == n else None
        while a < end:
            if a in alloc_ctx:
                a = alloc_ctx[a][0] + MIN_OBJ_SIZE
                continue
            hdr = rd(a, 16)
            if hdr is None:
                err('heapwalk: memory absent', segment=seg['address'], address=hx(a))
                break
            mt, cnt = struct.unpack_from('<QI', hdr, 0)
            mt &= ~7
            info = mt_info(mt) if mt else None
            if info is None:
                err('heapwalk: bad MethodTable', segment=seg['address'], address=hx(a), mt=hx(mt))
                break
            base, comp, name, is_free = info
            size = align8(base + (comp * cnt if comp else 0))
            if size < MIN_OBJ_SIZE and not is_free and mt != free_mt:
                err('heapwalk: implausible size', address=hx(a), size=size)
                break
            if mt == free_mt or is_free:
                free[0] += 1
                free[1] += size
            else:
                total += 1
                total_size += size
                nobj += 1
                seg_bytes += size
                s = stats.get(mt)
                if s is None:
                    s = stats[mt] = [name, 0, 0]
                s[1] += 1
                s[2] += size
                if 'AsyncStateMachineBox' in name:
                    boxes.append({'address': hx(a), 'mt': hx(mt), 'type': name, 'size': size})
                if check_every and (s[1] == 1 or total % check_every == 0):
                    hr, od = dac.struct_call(sos, 'GetObjectData', DacpObjectData, a)
                    sample_checks['checked'] += 1
                    # GetObjectData reports the unaligned size (Object::GetSize())
                    if hr < 0 or align8(od.Size) != size or od.MethodTable != mt:
                        sample_checks['mismatches'].append({'address': hx(a), 'hr': hr_str(hr),
                                                            'ours': size, 'dac': od.Size,
                                                            'mt': hx(mt), 'dac_mt': hx(od.MethodTable)})
            a += size if size else 8
        seg['objects'] = nobj
        seg['object_bytes'] = seg_bytes
    for s in segments:
        s.pop('_mem')
        s.pop('_end')
    gc['segments'] = segments
    out['gc_heap'] = gc

    table = [{'mt': hx(mt), 'type': v[0], 'count': v[1], 'total_size': v[2]}
             for mt, v in stats.items()]
    table.sort(key=lambda r: (-r['total_size'], -r['count'], r['type']))
    by_kind = {}
    for sg in segments:
        k = by_kind.setdefault(sg['kind'], {'segments': 0, 'objects': 0, 'bytes': 0})
        k['segments'] += 1
        k['objects'] += sg['objects']
        k['bytes'] += sg['object_bytes']
    out['heap_stat'] = {'sorted_by': 'total_size descending',
                        'includes': 'all segments incl. frozen (NonGC) ones; free objects excluded',
                        'by_segment_kind': by_kind, 'total_objects': total,
                        'total_size': total_size, 'free_objects': free[0], 'free_size': free[1],
                        'distinct_method_tables': len(table), 'object_size_crosscheck': sample_checks,
                        'types': table}

    # ------------------------------------------------------------ 3. stacks
    stacks = []
    proc = dac.process
    CTX_BUF = 0x2000
    for t in threads:
        osid = t['osThreadId']
        st = {'osThreadId': osid, 'corThreadId': t['corThreadId'], 'thread': t['address']}
        stacks.append(st)
        if not osid:
            st['skipped'] = 'no OS thread'
            continue
        task = c_void_p()
        hr = proc('GetTaskByOSThreadID', [c_uint32, POINTER(c_void_p)], osid, byref(task))
        if hr < 0 or not task.value:
            st['error'] = 'GetTaskByOSThreadID ' + hr_str(hr)
            continue
        taskI = Iface(task.value, IXCLRDATATASK_METHODS)
        walk = c_void_p()
        flags = 0xf  # UNRECOGNIZED|MANAGED_METHOD|RUNTIME_MANAGED_CODE|RUNTIME_UNMANAGED_CODE
        hr = taskI('CreateStackWalk', [c_uint32, POINTER(c_void_p)], flags, byref(walk))
        if hr < 0 or not walk.value:
            st['error'] = 'CreateStackWalk ' + hr_str(hr)
            com_release(task.value)
            continue
        w = Iface(walk.value, IXCLRDATASTACKWALK_METHODS)
        frames = []
        buf = create_string_buffer(CTX_BUF)
        for i in range(args.max_frames):
            csize = c_uint32()
            hr = w('GetContext', [c_uint32, c_uint32, POINTER(c_uint32), c_void_p],
                   CONTEXT_ALL, CTX_BUF, byref(csize), buf)
            if hr < 0:
                frames.append({'error': 'GetContext ' + hr_str(hr)})
                break
            st['context_size'] = csize.value
            ip = struct.unpack_from('<Q', buf.raw, CTX_OFF['Rip'])[0]
            sp = struct.unpack_from('<Q', buf.raw, CTX_OFF['Rsp'])[0]
            fr = {'sp': hx(sp), 'ip': hx(ip)}
            fa = c_uint64(0)
            hr = w('Request', [c_uint32, c_uint32, c_void_p, c_uint32, c_void_p],
                   0xf0000000, 0, None, 8, byref(fa))  # DACSTACKPRIV_REQUEST_FRAME_DATA
            md = c_uint64(0)
            if hr >= 0 and fa.value:
                fr['frame'] = hx(fa.value)
                vt = core.u64(fa.value)
                fname = None
                if vt:
                    fname, _ = dac.wname('GetFrameName', vt)
                fr['frame_name'] = fname
                # explicit (clr!Frame) frame: SOS clrstack takes the MethodDesc from the Frame
                mhr = sos('GetMethodDescPtrFromFrame', [CLRDATA_ADDRESS, POINTER(c_uint64)],
                          fa.value, byref(md))
                fr['method_source'] = 'GetMethodDescPtrFromFrame'
            else:
                mhr = sos('GetMethodDescPtrFromIP', [CLRDATA_ADDRESS, POINTER(c_uint64)],
                          ip, byref(md))
                fr['method_source'] = 'GetMethodDescPtrFromIP'
            if mhr >= 0 and md.value:
                fr['methodDesc'] = hx(md.value)
                fr['method'], _ = dac.wname('GetMethodDescName', md.value)
            else:
                fr['method'] = None
            frames.append(fr)
            hr = w('Next', [])
            if hr != S_OK:
                if hr < 0:
                    st['next_error'] = hr_str(hr)
                break
        st['frames'] = frames
        com_release(walk.value)
        com_release(task.value)
    out['stacks'] = stacks

    out['async_state_machine_boxes'] = {'count': len(boxes), 'boxes': boxes}
    for t in threads:
        t.pop('_raw')
    out['threads'] = threads
    return out


def validate(out):
    v = {}
    types = {r['type']: r for r in out.get('heap_stat', {}).get('types', [])}
    pay = types.get('Payload')
    v['payload_objects'] = pay['count'] if pay else 0
    v['payload_ok'] = v['payload_objects'] == 1000
    boxes = out.get('async_state_machine_boxes', {}).get('boxes', [])
    for m in ('Top', 'Middle', 'Leaf'):
        v['boxes_%s' % m] = sum(1 for b in boxes if '<%s>' % m in b['type'])
    v['async_ok'] = all(v['boxes_%s' % m] == 3 for m in ('Top', 'Middle', 'Leaf'))
    blocked = []
    for st in out.get('stacks', []):
        names = [f.get('method') or '' for f in st.get('frames', [])]
        if any('Program.Blocked' in n for n in names):
            blocked.append(st['osThreadId'])
    v['threads_in_Program.Blocked'] = blocked
    v['blocked_ok'] = len(blocked) == 4
    main = [st['osThreadId'] for st in out.get('stacks', [])
            if any('Program.Main' in (f.get('method') or '') for f in st.get('frames', []))]
    v['threads_in_Program.Main'] = main
    v['main_sleep_ok'] = any(
        any('Thread.Sleep' in (f.get('method') or '') for f in st.get('frames', []))
        for st in out.get('stacks', []) if st['osThreadId'] in main)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--dac', required=True, help='path to libmscordaccore.so')
    ap.add_argument('dump', help='ELF core dump')
    ap.add_argument('--no-file-fallback', action='store_true',
                    help='do not read absent file-backed pages from the on-disk files')
    ap.add_argument('--no-runtime-locator', action='store_true',
                    help='answer E_NOINTERFACE for ICLRRuntimeLocator')
    ap.add_argument('--no-metadata-locator', action='store_true',
                    help='answer E_NOINTERFACE for ICLRMetadataLocator')
    ap.add_argument('--check-every', type=int, default=1,
                    help='cross-check every Nth object size with GetObjectData (0 = off)')
    ap.add_argument('--max-frames', type=int, default=500)
    ap.add_argument('--runtime-module', default=None, metavar='BASENAME',
                    help='the mapped file holding coreclr (default: libcoreclr.so, else the file '
                         'exporting DotNetRuntimeInfo, i.e. a single-file app\'s host)')
    ap.add_argument('--hide', action='append', default=[], metavar='START:LEN',
                    help='testing: treat the core\'s data in this hex range as absent (file fallback still applies)')
    args = ap.parse_args()

    core = Core(args.dump, file_fallback=not args.no_file_fallback)
    if args.hide:
        core.hidden = [(int(a, 16), int(a, 16) + int(b, 16))
                       for a, b in (h.split(':') for h in args.hide)]
    dac_dir = os.path.dirname(os.path.abspath(args.dac))
    rt_dirs = [dac_dir]
    global RUNTIME_MODULE
    RUNTIME_MODULE = args.runtime_module or find_runtime_module(core)
    rp = core.module_path(RUNTIME_MODULE)
    if rp:
        rt_dirs.append(os.path.dirname(rp))
    target = DataTarget(core, rt_dirs, use_runtime_locator=not args.no_runtime_locator,
                        use_metadata_locator=not args.no_metadata_locator)
    result = {'tool': 'dacprobe', 'dump': os.path.abspath(args.dump), 'dac': os.path.abspath(args.dac),
              'core': {'threads_in_prstatus': len(core.threads), 'pt_load_segments': len(core.loads),
                       'nt_file_entries': len(core.files), 'e_machine': core.machine}}
    try:
        dac = Dac(args.dac, target)
        result['dac_init'] = dac.init
        body = collect(core, dac, target, args)
    except Exception as e:  # report, never crash
        result['fatal'] = '%s: %s' % (type(e).__name__, e)
        result['traceback'] = traceback.format_exc()
        body = {}
    order = ['runtime', 'threads', 'gc_heap', 'heap_stat', 'stacks', 'async_state_machine_boxes']
    for k in order:
        if k in body:
            result[k] = body[k]
    result['validation'] = validate(body)
    result['errors'] = body.get('errors', [])
    result['callback_errors'] = DataTarget.errors
    result['target_log'] = target.log_json()
    result['memory_stats'] = dict(core.stats)
    result['memory_stats']['file_fallback_by_file'] = core.fallback_files
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
