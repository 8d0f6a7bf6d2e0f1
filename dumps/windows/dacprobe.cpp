// dacprobe.exe <dump.dmp> <path\to\mscordaccore.dll> [--check-every N] [--max-frames N] > out.json
// dacprobe.exe <dump.dmp> <path\to\mscordaccore.dll> --loader-heaps > <name>.loaderheaps.dac.json
//
// Hosts the .NET runtime's own Windows DAC (mscordaccore.dll) over a Windows minidump (an
// ICLRDataTarget backed by the dump file) and prints ground truth as JSON, in the same shape
// and with the same algorithms as the Linux host /work/shared/tools/dacprobe/dacprobe.py:
// runtime, threads, gc_heap (segments), heap_stat, stacks, async_state_machine_boxes, plus
// diagnostics (errors, target_log, memory_stats). Meant to run under wine (built with mingw).
//
// Interfaces, vtable orders, IIDs and struct layouts follow dotnet/runtime
// src/coreclr/inc/{clrdata,xclrdata,sospriv}.idl and dacprivate.h (sizes static_assert'ed).
// Algorithms copied from dacprobe.py (keep them in step):
//  - threads: GetThreadStoreData, then GetThreadData along nextThread.
//  - heap: GetGCHeapData; GetGCHeapStaticData (workstation) or GetGCHeapList+GetGCHeapDetails;
//    generation table from ISOSDacInterface8 (5 entries, POH included); segments in ClrMD's
//    order LOH(3), gen2, [gen1, gen0 with regions], POH(4), duplicates removed; walk ends at
//    alloc_allocated for the ephemeral_heap_segment, at `allocated` otherwise; allocation
//    contexts (threads, generation table, ISOSDacInterface12 global) skipped to limit + 24;
//    String BaseSize +2 (GetMethodTableData reports it minus sizeof(WCHAR)); free objects
//    counted apart; every object checked against GetObjectData (--check-every 1).
//  - stacks: GetTaskByOSThreadID, CreateStackWalk(0xf), GetContext/Next; explicit frames
//    (DACSTACKPRIV_REQUEST_FRAME_DATA) take their method from GetMethodDescPtrFromFrame,
//    others from GetMethodDescPtrFromIP; names from GetMethodDescName.
#include <windows.h>
#include <bcrypt.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

typedef uint64_t CLRDATA_ADDRESS;
static const HRESULT E_PARTIAL_COPY_ = (HRESULT)0x8007012B;  // HRESULT_FROM_WIN32(ERROR_PARTIAL_COPY)

// ------------------------------------------------------------------ GUIDs
static GUID guid(const char* s) {  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
    GUID g; unsigned a, b, c, d[8];
    sscanf(s, "%8x-%4x-%4x-%2x%2x-%2x%2x%2x%2x%2x%2x", &a, &b, &c, &d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &d[6], &d[7]);
    g.Data1 = a; g.Data2 = (USHORT)b; g.Data3 = (USHORT)c; for (int i = 0; i < 8; i++) g.Data4[i] = (BYTE)d[i];
    return g;
}
static const char* IIDS[][2] = {
    {"IUnknown", "00000000-0000-0000-C000-000000000046"},
    {"ICLRDataTarget", "3E11CCEE-D08B-43e5-AF01-32717A64DA03"},
    {"ICLRDataTarget2", "6d05fae3-189c-4630-a6dc-1c251e1c01ab"},
    {"ICLRDataTarget3", "a5664f95-0af4-4a1b-960e-2f3346b4214c"},
    {"ICLRRuntimeLocator", "b760bf44-9377-4597-8be7-58083bdc5146"},
    {"ICLRMetadataLocator", "aa8fa804-bc05-4642-b2c5-c353ed22fc63"},
    {"ICLRDataEnumMemoryRegionsLoggingCallback", "F315248D-8B79-49DB-B184-37426559F703"},
    {"IXCLRDataTarget3", "59d9b5e1-4a6f-4531-84c3-51d12da22fd4"},
    {"IXCLRDataProcess", "5c552ab6-fc09-4cb3-8e36-22fa03c798b7"},
    {"IXCLRDataTask", "A5B0BEEA-EC62-4618-8012-A24FFC23934C"},
    {"IXCLRDataStackWalk", "E59D8D22-ADA7-49a2-89B5-A415AFCFC95F"},
    {"ISOSDacInterface", "436f00f2-b42a-4b9f-870c-e73db66ae930"},
    {"ISOSDacInterface8", "c12f35a9-e55c-4520-a894-b3dc5165dfce"},
    {"ISOSDacInterface12", "1b93bacc-8ca4-432d-943a-3e6e7ec0b0a3"},
    {"ISOSDacInterface13", "3176a8ed-597b-4f54-a71f-83695c6a8c5e"},
    {"ICLRContractLocator", "17d5b8c6-34a9-407f-af4f-a930201d4e02"},
};
static GUID IIDof(const char* name) {
    for (auto& e : IIDS) if (!strcmp(e[0], name)) return guid(e[1]);
    fprintf(stderr, "unknown iid %s\n", name); exit(9);
}
static std::string iid_name(REFIID g) {
    for (auto& e : IIDS) { GUID x = guid(e[1]); if (IsEqualGUID(x, g)) return e[0]; }
    char b[64]; snprintf(b, sizeof b, "%08lx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", (unsigned long)g.Data1, g.Data2, g.Data3,
        g.Data4[0], g.Data4[1], g.Data4[2], g.Data4[3], g.Data4[4], g.Data4[5], g.Data4[6], g.Data4[7]);
    return b;
}

// ------------------------------------------------------------------ vtable orders
static const char* ISOSDAC_METHODS[] = {
    "GetThreadStoreData", "GetAppDomainStoreData", "GetAppDomainList", "GetAppDomainData",
    "GetAppDomainName", "GetDomainFromContext", "GetAssemblyList", "GetAssemblyData",
    "GetAssemblyName", "GetModule", "GetModuleData", "TraverseModuleMap",
    "GetAssemblyModuleList", "GetILForModule", "GetThreadData", "GetThreadFromThinlockID",
    "GetStackLimits", "GetMethodDescData", "GetMethodDescPtrFromIP", "GetMethodDescName",
    "GetMethodDescPtrFromFrame", "GetMethodDescFromToken", "GetMethodDescTransparencyData",
    "GetCodeHeaderData", "GetJitManagerList", "GetJitHelperFunctionName", "GetJumpThunkTarget",
    "GetThreadpoolData", "GetWorkRequestData", "GetHillClimbingLogEntry", "GetObjectData",
    "GetObjectStringData", "GetObjectClassName", "GetMethodTableName", "GetMethodTableData",
    "GetMethodTableSlot", "GetMethodTableFieldData", "GetMethodTableTransparencyData",
    "GetMethodTableForEEClass", "GetFieldDescData", "GetFrameName", "GetPEFileBase",
    "GetPEFileName", "GetGCHeapData", "GetGCHeapList", "GetGCHeapDetails", "GetGCHeapStaticData",
    "GetHeapSegmentData", "GetOOMData", "GetOOMStaticData", "GetHeapAnalyzeData",
    "GetHeapAnalyzeStaticData", "GetDomainLocalModuleData", "GetDomainLocalModuleDataFromAppDomain",
    "GetDomainLocalModuleDataFromModule", "GetThreadLocalModuleData", "GetSyncBlockData",
    "GetSyncBlockCleanupData", "GetHandleEnum", "GetHandleEnumForTypes", "GetHandleEnumForGC",
    "TraverseEHInfo", "GetNestedExceptionData", "GetStressLogAddress", "TraverseLoaderHeap",
    "GetCodeHeapList", "TraverseVirtCallStubHeap", "GetUsefulGlobals", "GetClrWatsonBuckets",
    "GetTLSIndex", "GetDacModuleHandle", "GetRCWData", "GetRCWInterfaces", "GetCCWData",
    "GetCCWInterfaces", "TraverseRCWCleanupList", "GetStackReferences", "GetRegisterName",
    "GetThreadAllocData", "GetHeapAllocData", "GetFailedAssemblyList", "GetPrivateBinPaths",
    "GetAssemblyLocation", "GetAppDomainConfigFile", "GetApplicationBase",
    "GetFailedAssemblyData", "GetFailedAssemblyLocation", "GetFailedAssemblyDisplayName", nullptr};
static const char* ISOSDAC8_METHODS[] = {"GetNumberGenerations", "GetGenerationTable", "GetFinalizationFillPointers",
    "GetGenerationTableSvr", "GetFinalizationFillPointersSvr", "GetAssemblyLoadContext", nullptr};
static const char* ISOSDAC12_METHODS[] = {"GetGlobalAllocationContext", nullptr};
static const char* ISOSDAC13_METHODS[] = {"TraverseLoaderHeap", "GetDomainLoaderAllocator",
    "GetLoaderAllocatorHeapNames", "GetLoaderAllocatorHeaps", "GetHandleTableMemoryRegions",
    "GetGCBookkeepingMemoryRegions", "GetGCFreeRegions", "LockedFlush", nullptr};
static const char* IXCLRDATAPROCESS_METHODS[] = {"Flush", "StartEnumTasks", "EnumTask", "EndEnumTasks",
    "GetTaskByOSThreadID", "GetTaskByUniqueID", nullptr};
static const char* IXCLRDATATASK_METHODS[] = {"GetProcess", "GetCurrentAppDomain", "GetUniqueID", "GetFlags",
    "IsSameObject", "GetManagedObject", "GetDesiredExecutionState", "SetDesiredExecutionState", "CreateStackWalk",
    "GetOSThreadID", "GetContext", "SetContext", "GetCurrentExceptionState", "Request", "GetName",
    "GetLastExceptionState", nullptr};
static const char* IXCLRDATASTACKWALK_METHODS[] = {"GetContext", "SetContext", "Next", "GetStackSizeSkipped",
    "GetFrameType", "GetFrame", "Request", "SetContext2", nullptr};
static int slot(const char** methods, const char* name) {
    for (int i = 0; methods[i]; i++) if (!strcmp(methods[i], name)) return 3 + i;
    fprintf(stderr, "unknown method %s\n", name); exit(9);
}
struct Iface {
    void* p = nullptr; const char** m = nullptr;
    template<class... A> HRESULT operator()(const char* name, A... a) const {
        typedef HRESULT (STDMETHODCALLTYPE *F)(void*, A...);
        return ((F)((*(void***)p)[slot(m, name)]))(p, a...);
    }
};
static void com_release(void* o) { if (o) ((ULONG (STDMETHODCALLTYPE*)(void*))((*(void***)o)[2]))(o); }

// ------------------------------------------------------------------ dacprivate.h structures
struct DacpThreadStoreData { int32_t threadCount, unstartedThreadCount, backgroundThreadCount, pendingThreadCount, deadThreadCount;
    CLRDATA_ADDRESS firstThread, finalizerThread, gcThread; uint32_t fHostConfig; };
struct DacpThreadData { uint32_t corThreadId, osThreadId; int32_t state; uint32_t preemptiveGCDisabled;
    CLRDATA_ADDRESS allocContextPtr, allocContextLimit, context, domain, pFrame; uint32_t lockCount;
    CLRDATA_ADDRESS firstNestedException, teb, fiberData, lastThrownObjectHandle, nextThread; };
struct DacpGcHeapData { int32_t bServerMode, bGcStructuresValid; uint32_t HeapCount, g_max_generation; };
struct DacpGenerationData { CLRDATA_ADDRESS start_segment, allocation_start, allocContextPtr, allocContextLimit; };
#define DAC_NUMBERGENERATIONS 4
struct DacpGcHeapDetails { CLRDATA_ADDRESS heapAddr, alloc_allocated, mark_array, current_c_gc_state, next_sweep_obj,
    saved_sweep_ephemeral_seg, saved_sweep_ephemeral_start, background_saved_lowest_address, background_saved_highest_address;
    DacpGenerationData generation_table[DAC_NUMBERGENERATIONS]; CLRDATA_ADDRESS ephemeral_heap_segment;
    CLRDATA_ADDRESS finalization_fill_pointers[DAC_NUMBERGENERATIONS + 3]; CLRDATA_ADDRESS lowest_address, highest_address, card_table; };
struct DacpHeapSegmentData { CLRDATA_ADDRESS segmentAddr, allocated, committed, reserved, used, mem, next, gc_heap, highAllocMark;
    uint64_t flags; CLRDATA_ADDRESS background_allocated; };
struct DacpMethodTableData { int32_t bIsFree; CLRDATA_ADDRESS Module, Class, ParentMethodTable;
    uint16_t wNumInterfaces, wNumMethods, wNumVtableSlots, wNumVirtuals; uint32_t BaseSize, ComponentSize, cl, dwAttrClass;
    int32_t bIsShared, bIsDynamic, bContainsPointers; };
struct DacpUsefulGlobalsData { CLRDATA_ADDRESS ArrayMethodTable, StringMethodTable, ObjectMethodTable, ExceptionMethodTable, FreeMethodTable; };
struct DacpObjectData { CLRDATA_ADDRESS MethodTable; int32_t ObjectType; uint64_t Size; CLRDATA_ADDRESS ElementTypeHandle;
    int32_t ElementType; uint32_t dwRank; uint64_t dwNumComponents, dwComponentSize; CLRDATA_ADDRESS ArrayDataPtr,
    ArrayBoundsPtr, ArrayLowerBoundsPtr, RCW, CCW; };
static_assert(sizeof(DacpThreadStoreData) == 0x38, "");
static_assert(sizeof(DacpThreadData) == 0x68, "");
static_assert(sizeof(DacpGcHeapData) == 0x10, "");
static_assert(sizeof(DacpGenerationData) == 0x20, "");
static_assert(sizeof(DacpGcHeapDetails) == 0x120, "");
static_assert(sizeof(DacpHeapSegmentData) == 0x58, "");
static_assert(sizeof(DacpMethodTableData) == 0x48, "");
static_assert(sizeof(DacpUsefulGlobalsData) == 0x28, "");
static_assert(sizeof(DacpObjectData) == 0x60, "");

// ------------------------------------------------------------------ tiny JSON builder
struct J {
    std::string s;
    enum K { OBJ, ARR, RAW } k = RAW;
    static std::string esc(const std::string& v) {
        std::string o = "\"";
        for (unsigned char c : v) {
            if (c == '"') o += "\\\""; else if (c == '\\') o += "\\\\";
            else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
            else o += (char)c;
        }
        return o + "\"";
    }
    static J obj() { J j; j.k = OBJ; return j; }
    static J arr() { J j; j.k = ARR; return j; }
    static J str(const std::string& v) { J j; j.s = esc(v); return j; }
    static J num(long long v) { J j; j.s = std::to_string(v); return j; }
    static J unum(unsigned long long v) { J j; j.s = std::to_string(v); return j; }
    static J boolean(bool v) { J j; j.s = v ? "true" : "false"; return j; }
    static J null() { J j; j.s = "null"; return j; }
    static J hex(uint64_t v) { char b[32]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)v); return str(b); }
    J& set(const std::string& key, const J& v) { s += (s.empty() ? "" : ",") + esc(key) + ":" + v.text(); return *this; }
    J& push(const J& v) { s += (s.empty() ? "" : ",") + v.text(); return *this; }
    std::string text() const { return k == OBJ ? "{" + s + "}" : k == ARR ? "[" + s + "]" : s; }
};
static std::string hr_str(HRESULT hr) { char b[16]; snprintf(b, sizeof b, "0x%08lx", (unsigned long)(uint32_t)hr); return b; }
static std::string hx(uint64_t v) { char b[32]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)v); return b; }
static std::string utf8(const wchar_t* w, int n = -1) {
    if (n < 0) n = (int)wcslen(w);
    if (!n) return "";
    int k = WideCharToMultiByte(CP_UTF8, 0, w, n, NULL, 0, NULL, NULL);
    std::string o(k, '\0'); WideCharToMultiByte(CP_UTF8, 0, w, n, &o[0], k, NULL, NULL); return o;
}

// ------------------------------------------------------------------ the minidump
struct Range { uint64_t va, size; const uint8_t* data; };
struct Mod { uint64_t base; uint32_t size, timestamp; std::wstring name; };
struct Thr { uint32_t tid; const uint8_t* ctx; uint32_t csz; uint64_t teb, stack_start; uint32_t stack_size, stack_rva; };
static std::vector<Range> g_ranges; static std::vector<Mod> g_mods; static std::vector<Thr> g_thr;
static std::vector<uint32_t> g_stream_types;
static const uint8_t* g_b; static uint64_t g_len;
template<class T> T rd(uint64_t o) { T v; memcpy(&v, g_b + o, sizeof v); return v; }
static const Range* find_range(uint64_t a) {  // g_ranges sorted by va, non-overlapping
    auto it = std::upper_bound(g_ranges.begin(), g_ranges.end(), a, [](uint64_t x, const Range& r) { return x < r.va; });
    if (it == g_ranges.begin()) return nullptr;
    --it; return (a < it->va + it->size) ? &*it : nullptr;
}
static size_t readmem(uint64_t a, uint8_t* buf, size_t n) {  // partial read: stops at the first hole
    size_t done = 0;
    while (done < n) {
        const Range* r = find_range(a + done); if (!r) break;
        size_t off = a + done - r->va, k = r->size - off; if (k > n - done) k = n - done;
        memcpy(buf + done, r->data + off, k); done += k;
    }
    return done;
}
static bool u64at(uint64_t a, uint64_t* v) { return readmem(a, (uint8_t*)v, 8) == 8; }
static const Mod* module_named(const wchar_t* want) {
    for (auto& m : g_mods) { const wchar_t* n = wcsrchr(m.name.c_str(), L'\\'); n = n ? n + 1 : m.name.c_str();
        const wchar_t* n2 = wcsrchr(n, L'/'); n = n2 ? n2 + 1 : n;
        if (_wcsicmp(n, want) == 0) return &m; }
    return nullptr;
}

// ------------------------------------------------------------------ target log
struct Log {
    std::map<std::string, std::string> qi, image_base;
    std::map<uint32_t, int> ctx_calls; std::set<std::pair<uint32_t, uint32_t>> ctx_sizes;
    long long rv_calls = 0, rv_failed = 0, rv_partial = 0;
    std::map<std::string, int> other;
    std::vector<J> metadata;
} g_log;
static void other(const char* k) { g_log.other[k]++; }
static std::vector<std::wstring> g_runtime_dirs;  // for ICLRMetadataLocator

// ------------------------------------------------------------------ COM data target
struct ComObj { const void* vtbl; };
static ComObj g_target, g_locator, g_mdloc;
static bool g_use_locator = true, g_use_mdloc = true;
#define M(name) static HRESULT STDMETHODCALLTYPE name
M(QI)(void*, REFIID iid, void** pp) {
    std::string n = iid_name(iid);
    void* o = nullptr;
    if (n == "IUnknown" || n == "ICLRDataTarget") o = &g_target;
    else if (n == "ICLRRuntimeLocator" && g_use_locator) o = &g_locator;
    else if (n == "ICLRMetadataLocator" && g_use_mdloc) o = &g_mdloc;
    g_log.qi[n] = o ? "S_OK" : "E_NOINTERFACE";
    if (!pp) return E_POINTER;
    *pp = o; return o ? S_OK : E_NOINTERFACE;
}
static ULONG STDMETHODCALLTYPE AddRef(void*) { return 2; }
static ULONG STDMETHODCALLTYPE Release(void*) { return 1; }  // static objects: we own the lifetime
M(GetMachineType)(void*, ULONG32* m) { *m = IMAGE_FILE_MACHINE_AMD64; return S_OK; }
M(GetPointerSize)(void*, ULONG32* p) { *p = 8; return S_OK; }
M(GetImageBase)(void*, LPCWSTR path, CLRDATA_ADDRESS* base) {
    const wchar_t* want = wcsrchr(path, L'\\'); want = want ? want + 1 : path;
    const wchar_t* w2 = wcsrchr(want, L'/'); want = w2 ? w2 + 1 : want;
    const Mod* m = module_named(want);
    g_log.image_base[utf8(path)] = m ? hx(m->base) : "null";
    if (!m) return E_FAIL;
    *base = m->base; return S_OK;
}
M(ReadVirtual)(void*, CLRDATA_ADDRESS a, BYTE* buf, ULONG32 n, ULONG32* got) {
    g_log.rv_calls++;
    size_t k = n ? readmem(a, buf, n) : 0;
    if (got) *got = (ULONG32)k;
    if (n && !k) { g_log.rv_failed++; return E_PARTIAL_COPY_; }
    if (k < n) g_log.rv_partial++;
    return S_OK;
}
M(WriteVirtual)(void*, CLRDATA_ADDRESS, BYTE*, ULONG32, ULONG32* w) { other("WriteVirtual"); if (w) *w = 0; return E_NOTIMPL; }
M(GetTLSValue)(void*, ULONG32, ULONG32, CLRDATA_ADDRESS*) { other("GetTLSValue"); return E_NOTIMPL; }
M(SetTLSValue)(void*, ULONG32, ULONG32, CLRDATA_ADDRESS) { other("SetTLSValue"); return E_NOTIMPL; }
M(GetCurrentThreadID)(void*, ULONG32* t) { other("GetCurrentThreadID"); if (g_thr.empty()) return E_FAIL; *t = g_thr[0].tid; return S_OK; }
M(T_GetThreadContext)(void*, ULONG32 tid, ULONG32 flags, ULONG32 sz, BYTE* ctx) {
    g_log.ctx_calls[tid]++; g_log.ctx_sizes.insert({flags, sz});
    for (auto& t : g_thr) if (t.tid == tid) {
        if (sz < 0x100) return E_INVALIDARG;
        memset(ctx, 0, sz); memcpy(ctx, t.ctx, sz < t.csz ? sz : t.csz); return S_OK; }
    return E_FAIL;
}
M(T_SetThreadContext)(void*, ULONG32, ULONG32, BYTE*) { other("SetThreadContext"); return E_NOTIMPL; }
M(Request)(void*, ULONG32 code, ULONG32, BYTE*, ULONG32, BYTE*) { char b[32]; snprintf(b, sizeof b, "Request:0x%x", code); other(b); return E_NOTIMPL; }
static const void* g_vt[] = {(void*)QI, (void*)AddRef, (void*)Release, (void*)GetMachineType, (void*)GetPointerSize,
    (void*)GetImageBase, (void*)ReadVirtual, (void*)WriteVirtual, (void*)GetTLSValue, (void*)SetTLSValue,
    (void*)GetCurrentThreadID, (void*)T_GetThreadContext, (void*)T_SetThreadContext, (void*)Request};
// ICLRRuntimeLocator
M(GetRuntimeBase)(void*, CLRDATA_ADDRESS* b) {
    other("GetRuntimeBase"); const Mod* m = module_named(L"coreclr.dll"); if (!m) return E_FAIL; *b = m->base; return S_OK; }
static const void* g_vt_loc[] = {(void*)QI, (void*)AddRef, (void*)Release, (void*)GetRuntimeBase};
// ICLRMetadataLocator: serve CLI metadata from the PE file on disk (runtime folder, app folder)
static bool pe_metadata(const std::vector<uint8_t>& d, uint32_t md_rva, size_t* off, uint32_t* size) {
    if (d.size() < 0x40 || d[0] != 'M' || d[1] != 'Z') return false;
    uint32_t pe; memcpy(&pe, &d[0x3c], 4); if (pe + 0x200 > d.size() || memcmp(&d[pe], "PE\0\0", 4)) return false;
    uint16_t nsec, optsz, magic; memcpy(&nsec, &d[pe + 6], 2); memcpy(&optsz, &d[pe + 20], 2);
    uint32_t opt = pe + 24; memcpy(&magic, &d[opt], 2);
    uint32_t ddir = opt + (magic == 0x10b ? 96 : 112), so = opt + optsz;
    auto rva2off = [&](uint32_t rva, size_t* o) {
        for (int i = 0; i < nsec; i++) { uint32_t vsz, va, rawsz, rawptr; const uint8_t* p = &d[so + 40 * i + 8];
            memcpy(&vsz, p, 4); memcpy(&va, p + 4, 4); memcpy(&rawsz, p + 8, 4); memcpy(&rawptr, p + 12, 4);
            if (rva >= va && rva < va + std::max(vsz, rawsz)) { *o = rawptr + rva - va; return true; } }
        return false; };
    uint32_t cli_rva; memcpy(&cli_rva, &d[ddir + 14 * 8], 4); if (!cli_rva) return false;
    size_t co; if (!rva2off(cli_rva, &co)) return false;
    uint32_t mdr, mds; memcpy(&mdr, &d[co + 8], 4); memcpy(&mds, &d[co + 12], 4);
    if (md_rva) mdr = md_rva;
    if (!rva2off(mdr, off)) return false; *size = mds; return true;
}
M(GetMetadata)(void*, LPCWSTR name, ULONG32 timestamp, ULONG32 imagesize, GUID*, ULONG32 mdrva, ULONG32, ULONG32 bufsize, BYTE* buf, ULONG32* datasize) {
    J e = J::obj(); e.set("image", J::str(utf8(name))).set("timestamp", J::hex(timestamp)).set("size", J::hex(imagesize))
        .set("mdRva", J::hex(mdrva)).set("bufferSize", J::unum(bufsize));
    const wchar_t* f = wcsrchr(name, L'\\'); f = f ? f + 1 : name;
    std::vector<std::wstring> cands; cands.push_back(name);
    for (auto& d : g_runtime_dirs) cands.push_back(d + L"\\" + f);
    J rej = J::arr(); bool anyrej = false;
    for (auto& c : cands) {
        FILE* fp = _wfopen(c.c_str(), L"rb"); if (!fp) continue;
        std::vector<uint8_t> d; fseek(fp, 0, SEEK_END); d.resize(ftell(fp)); fseek(fp, 0, SEEK_SET);
        size_t got = fread(d.data(), 1, d.size(), fp); fclose(fp); d.resize(got);
        if (d.size() < 0x400) continue;
        uint32_t pe, ts, soi; memcpy(&pe, &d[0x3c], 4); memcpy(&ts, &d[pe + 8], 4); memcpy(&soi, &d[pe + 24 + 56], 4);
        if ((timestamp && ts != timestamp) || (imagesize && soi != imagesize)) { rej.push(J::str(utf8(c.c_str()))); anyrej = true; continue; }
        size_t off; uint32_t mds; if (!pe_metadata(d, mdrva, &off, &mds)) continue;
        size_t n = std::min<size_t>(bufsize, mdrva ? bufsize : mds); n = std::min(n, d.size() - off);
        memcpy(buf, &d[off], n); if (datasize) *datasize = (ULONG32)n;
        if (anyrej) e.set("rejected", rej);
        e.set("served_from", J::str(utf8(c.c_str()))).set("bytes", J::unum(n));
        g_log.metadata.push_back(e); return S_OK;
    }
    if (anyrej) e.set("rejected", rej);
    e.set("result", J::str("E_FAIL")); g_log.metadata.push_back(e); return E_FAIL;
}
static const void* g_vt_md[] = {(void*)QI, (void*)AddRef, (void*)Release, (void*)GetMetadata};

// ------------------------------------------------------------------ DAC helpers
static Iface sos, sos8, sos12, proc;
static bool has8 = false, has12 = false;
static std::vector<J> errors;
static void err(const std::string& where, HRESULT hr, std::vector<std::pair<std::string, J>> kw = {}, bool with_hr = true) {
    J e = J::obj(); e.set("where", J::str(where)); if (with_hr) e.set("hr", J::str(hr_str(hr)));
    for (auto& p : kw) e.set(p.first, p.second);
    errors.push_back(e);
}
// (addr, count, WCHAR*, unsigned*) name getter, growing the buffer, as dacprobe.py's Dac.wname
static bool wname(const char* method, CLRDATA_ADDRESS addr, std::string* out, HRESULT* phr = nullptr) {
    unsigned count = 512;
    for (int i = 0; i < 3; i++) {
        std::vector<wchar_t> buf(count + 1, 0); unsigned need = 0;
        HRESULT hr = sos(method, addr, count, buf.data(), &need);
        if (phr) *phr = hr;
        if (FAILED(hr)) return false;
        if (need <= count) { size_t n = 0; while (n < need && buf[n]) n++; *out = utf8(buf.data(), (int)n); return true; }
        count = need;
    }
    if (phr) *phr = E_FAIL;
    return false;
}
template<class T> static J sdict_hexarr(const T* a, int n) { J j = J::arr(); for (int i = 0; i < n; i++) j.push(J::hex(a[i])); return j; }
static J sdict(const DacpThreadStoreData& s) { J j = J::obj(); j.set("threadCount", J::num(s.threadCount)).set("unstartedThreadCount", J::num(s.unstartedThreadCount))
    .set("backgroundThreadCount", J::num(s.backgroundThreadCount)).set("pendingThreadCount", J::num(s.pendingThreadCount))
    .set("deadThreadCount", J::num(s.deadThreadCount)).set("firstThread", J::hex(s.firstThread)).set("finalizerThread", J::hex(s.finalizerThread))
    .set("gcThread", J::hex(s.gcThread)).set("fHostConfig", J::unum(s.fHostConfig)); return j; }
static J sdict(const DacpGcHeapData& s) { J j = J::obj(); j.set("bServerMode", J::num(s.bServerMode)).set("bGcStructuresValid", J::num(s.bGcStructuresValid))
    .set("HeapCount", J::unum(s.HeapCount)).set("g_max_generation", J::unum(s.g_max_generation)); return j; }
static J sdict(const DacpGenerationData& s) { J j = J::obj(); j.set("start_segment", J::hex(s.start_segment)).set("allocation_start", J::hex(s.allocation_start))
    .set("allocContextPtr", J::hex(s.allocContextPtr)).set("allocContextLimit", J::hex(s.allocContextLimit)); return j; }
static J sdict(const DacpUsefulGlobalsData& s) { J j = J::obj(); j.set("ArrayMethodTable", J::hex(s.ArrayMethodTable)).set("StringMethodTable", J::hex(s.StringMethodTable))
    .set("ObjectMethodTable", J::hex(s.ObjectMethodTable)).set("ExceptionMethodTable", J::hex(s.ExceptionMethodTable)).set("FreeMethodTable", J::hex(s.FreeMethodTable)); return j; }
static J sdict_details(const DacpGcHeapDetails& s) {
    J j = J::obj(); j.set("heapAddr", J::hex(s.heapAddr)).set("alloc_allocated", J::hex(s.alloc_allocated)).set("mark_array", J::hex(s.mark_array))
        .set("current_c_gc_state", J::hex(s.current_c_gc_state)).set("next_sweep_obj", J::hex(s.next_sweep_obj))
        .set("saved_sweep_ephemeral_seg", J::hex(s.saved_sweep_ephemeral_seg)).set("saved_sweep_ephemeral_start", J::hex(s.saved_sweep_ephemeral_start))
        .set("background_saved_lowest_address", J::hex(s.background_saved_lowest_address))
        .set("background_saved_highest_address", J::hex(s.background_saved_highest_address));
    J g = J::arr(); for (int i = 0; i < DAC_NUMBERGENERATIONS; i++) g.push(sdict(s.generation_table[i]));
    j.set("generation_table", g).set("ephemeral_heap_segment", J::hex(s.ephemeral_heap_segment))
        .set("finalization_fill_pointers", sdict_hexarr(s.finalization_fill_pointers, DAC_NUMBERGENERATIONS + 3))
        .set("lowest_address", J::hex(s.lowest_address)).set("highest_address", J::hex(s.highest_address)).set("card_table", J::hex(s.card_table));
    return j;
}
static uint64_t align8(uint64_t x) { return (x + 7) & ~7ull; }
static const uint64_t MIN_OBJ_SIZE = 24;

// ------------------------------------------------------------------ collection
struct ThreadRec { CLRDATA_ADDRESS addr; DacpThreadData td; J j; };

// ------------------------------------------------------------------ --loader-heaps
// The DAC's view of the loader heaps, in the shape of dumps/tools/dacloaderheaps.py (Linux; keep
// the two in step): for the SystemDomain and every AppDomain (GetAppDomainStoreData,
// GetAppDomainList) ISOSDacInterface13's GetDomainLoaderAllocator, GetLoaderAllocatorHeapNames,
// GetLoaderAllocatorHeaps and each heap's TraverseLoaderHeap; every AppDomain module's
// LoaderAllocator and ThunkHeap (GetModuleData); the JIT managers' code heaps (GetJitManagerList,
// GetCodeHeapList: a LoaderCodeHeap traversed as an explicit-control heap, a HostCodeHeap's base
// and current address). Plus the dump file's sha256 (BCrypt).
struct DacpAppDomainStoreData { CLRDATA_ADDRESS sharedDomain, systemDomain; int32_t DomainCount; };
struct DacpAppDomainData { CLRDATA_ADDRESS AppDomainPtr, AppSecDesc, pLowFrequencyHeap, pHighFrequencyHeap, pStubHeap,
    DomainLocalBlock, pDomainLocalModules; uint32_t dwId; int32_t AssemblyCount, FailedAssemblyCount, appDomainStage; };
struct DacpModuleData { CLRDATA_ADDRESS Address, PEAssembly, ilBase, metadataStart; uint64_t metadataSize;
    CLRDATA_ADDRESS Assembly; int32_t bIsReflection, bIsPEFile; uint64_t dwBaseClassIndex, dwModuleID; uint32_t dwTransientFlags;
    CLRDATA_ADDRESS TypeDefToMethodTableMap, TypeRefToMethodTableMap, MethodDefToDescMap, FieldDefToDescMap,
        MemberRefToDescMap, FileReferencesMap, ManifestModuleReferencesMap, LoaderAllocator, ThunkHeap;
    uint64_t dwModuleIndex; };
struct DacpJitManagerInfo { CLRDATA_ADDRESS managerAddr; uint32_t codeType; CLRDATA_ADDRESS ptrHeapList; };
struct DacpJitCodeHeapInfo { uint32_t codeHeapType; CLRDATA_ADDRESS a, b; };  // LoaderHeap; or baseAddr, currentAddr
static_assert(sizeof(DacpAppDomainStoreData) == 0x18, "");
static_assert(sizeof(DacpAppDomainData) == 0x48, "");
static_assert(sizeof(DacpModuleData) == 0xA0, "");
static_assert(sizeof(DacpJitManagerInfo) == 0x18, "");
static_assert(sizeof(DacpJitCodeHeapInfo) == 0x18, "");
static Iface sos13;
static std::vector<J>* g_blocks;
static void visit_block(CLRDATA_ADDRESS a, size_t size, BOOL current) {
    g_blocks->push_back(J::obj().set("address", J::hex(a)).set("size", J::unum(size)).set("current", J::boolean(current != 0)));
}
static J traverse(CLRDATA_ADDRESS heap, int32_t kind, std::string* hr_out) {
    std::vector<J> blocks; g_blocks = &blocks;
    HRESULT hr = sos13("TraverseLoaderHeap", heap, kind, (void (*)(CLRDATA_ADDRESS, size_t, BOOL))visit_block);
    *hr_out = hr_str(hr);
    J arr = J::arr(); for (auto& b : blocks) arr.push(b); return arr;
}
static std::string file_sha256() {
    BCRYPT_ALG_HANDLE alg = nullptr; BCRYPT_HASH_HANDLE h = nullptr; UCHAR d[32];
    if (BCryptOpenAlgorithmProvider(&alg, BCRYPT_SHA256_ALGORITHM, nullptr, 0) != 0) return "";
    BCryptCreateHash(alg, &h, nullptr, 0, nullptr, 0, 0);
    for (uint64_t o = 0; o < g_len; o += 1u << 24) BCryptHashData(h, (PUCHAR)(g_b + o), (ULONG)std::min<uint64_t>(1u << 24, g_len - o), 0);
    BCryptFinishHash(h, d, 32, 0); BCryptDestroyHash(h); BCryptCloseAlgorithmProvider(alg, 0);
    std::string out; char b[3]; for (auto c : d) { snprintf(b, sizeof b, "%02x", c); out += b; } return out;
}
static std::string base_name(const char* p) { std::string s = p; size_t k = s.find_last_of("\\/"); return k == std::string::npos ? s : s.substr(k + 1); }
static int loader_heaps_mode(const char* dump, const char* dac) {
    J res = J::obj();
    res.set("tool", J::str("dacloaderheaps")).set("host", J::str("dumps/windows/dacprobe.cpp --loader-heaps (wine)"))
       .set("dump", J::str(base_name(dump))).set("dump_sha256", J::str(file_sha256())).set("dac", J::str(base_name(dac)));
    J errs = J::arr();
    int32_t need = 0;
    sos13("GetLoaderAllocatorHeapNames", (int32_t)0, (const char**)nullptr, &need);
    std::vector<const char*> names(std::max(need, 1));
    sos13("GetLoaderAllocatorHeapNames", need, names.data(), &need);
    J jn = J::arr(); for (int i = 0; i < need; i++) jn.push(J::str(names[i]));
    auto allocator = [&](CLRDATA_ADDRESS la, J* heaps) {
        int32_t n = 0;
        sos13("GetLoaderAllocatorHeaps", la, (int32_t)0, (CLRDATA_ADDRESS*)nullptr, (int32_t*)nullptr, &n);
        std::vector<CLRDATA_ADDRESS> addrs(std::max(n, 1)); std::vector<int32_t> kinds(std::max(n, 1));
        HRESULT hr = sos13("GetLoaderAllocatorHeaps", la, n, addrs.data(), kinds.data(), &n);
        for (int i = 0; i < n; i++) {
            std::string thr = "null"; J blocks = J::arr();
            if (addrs[i]) blocks = traverse(addrs[i], kinds[i], &thr);
            heaps->push(J::obj().set("name", i < need ? J::str(names[i]) : J::null()).set("address", J::hex(addrs[i]))
                .set("kind", J::num(kinds[i])).set("traverse", J::str(thr)).set("blocks", blocks));
        }
        return hr_str(hr);
    };
    DacpAppDomainStoreData store = {};
    sos("GetAppDomainStoreData", &store);
    std::vector<CLRDATA_ADDRESS> apps(std::max(store.DomainCount, 1)); uint32_t needu = 0;
    sos("GetAppDomainList", (uint32_t)store.DomainCount, apps.data(), &needu);
    std::vector<std::pair<const char*, CLRDATA_ADDRESS>> doms = {{"system", store.systemDomain}};
    for (uint32_t i = 0; i < needu && i < apps.size(); i++) doms.push_back({"app", apps[i]});
    J jd = J::arr(), jm = J::arr();
    for (auto& d : doms) {
        J e = J::obj(); e.set("kind", J::str(d.first)).set("address", J::hex(d.second));
        if (d.second) {
            CLRDATA_ADDRESS la = 0;
            HRESULT hr = sos13("GetDomainLoaderAllocator", d.second, &la);
            e.set("loader_allocator", SUCCEEDED(hr) ? J::hex(la) : J::str(hr_str(hr)));
            if (SUCCEEDED(hr) && la) { J heaps = J::arr(); std::string h = allocator(la, &heaps); e.set("heaps_hr", J::str(h)).set("heaps", heaps); }
        }
        jd.push(e);
        if (strcmp(d.first, "app") || !d.second) continue;
        DacpAppDomainData add = {};
        sos("GetAppDomainData", d.second, &add);
        std::vector<CLRDATA_ADDRESS> asms(std::max(add.AssemblyCount, 1)); int32_t na = 0;
        HRESULT hr = sos("GetAssemblyList", d.second, add.AssemblyCount, asms.data(), &na);
        if (FAILED(hr)) errs.push(J::obj().set("call", J::str("GetAssemblyList")).set("hr", J::str(hr_str(hr))));
        for (int32_t i = 0; i < std::min(na, add.AssemblyCount); i++) {
            CLRDATA_ADDRESS mods[8]; uint32_t nm = 0;
            hr = sos("GetAssemblyModuleList", asms[i], (uint32_t)8, mods, &nm);
            if (FAILED(hr)) errs.push(J::obj().set("call", J::str("GetAssemblyModuleList")).set("assembly", J::hex(asms[i])).set("hr", J::str(hr_str(hr))));
            for (uint32_t k = 0; k < std::min<uint32_t>(nm, 8); k++) {
                DacpModuleData md = {};
                hr = sos("GetModuleData", mods[k], &md);
                J m = J::obj(); m.set("module", J::hex(mods[k]));
                if (FAILED(hr)) m.set("error", J::str(hr_str(hr)));
                else m.set("loader_allocator", J::hex(md.LoaderAllocator)).set("thunk_heap", J::hex(md.ThunkHeap));
                jm.push(m);
            }
        }
    }
    uint32_t nj = 0;
    sos("GetJitManagerList", (uint32_t)0, (DacpJitManagerInfo*)nullptr, &nj);
    std::vector<DacpJitManagerInfo> mgrs(std::max<uint32_t>(nj, 1));
    sos("GetJitManagerList", nj, mgrs.data(), &nj);
    J jj = J::arr();
    for (uint32_t i = 0; i < nj; i++) {
        uint32_t c = 0;
        sos("GetCodeHeapList", mgrs[i].managerAddr, (uint32_t)0, (DacpJitCodeHeapInfo*)nullptr, &c);
        std::vector<DacpJitCodeHeapInfo> hs(std::max<uint32_t>(c, 1));
        HRESULT hr = sos("GetCodeHeapList", mgrs[i].managerAddr, c, hs.data(), &c);
        J heaps = J::arr();
        for (uint32_t k = 0; k < c; k++) {
            if (hs[k].codeHeapType == 0) {  // CODEHEAP_LOADER
                std::string thr; J blocks = traverse(hs[k].a, 1, &thr);  // LoaderHeapKindExplicitControl
                heaps.push(J::obj().set("type", J::str("loader")).set("loader_heap", J::hex(hs[k].a)).set("traverse", J::str(thr)).set("blocks", blocks));
            } else if (hs[k].codeHeapType == 1) {  // CODEHEAP_HOST
                heaps.push(J::obj().set("type", J::str("host")).set("base", J::hex(hs[k].a)).set("current", J::hex(hs[k].b)));
            } else heaps.push(J::obj().set("type", J::unum(hs[k].codeHeapType)));
        }
        jj.push(J::obj().set("address", J::hex(mgrs[i].managerAddr)).set("code_type", J::unum(mgrs[i].codeType))
            .set("heap_list", J::hex(mgrs[i].ptrHeapList)).set("hr", J::str(hr_str(hr))).set("code_heaps", heaps));
    }
    res.set("errors", errs).set("heap_names", jn).set("domains", jd).set("modules", jm).set("jit_managers", jj);
    puts(res.text().c_str());
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 3) { fprintf(stderr, "usage: dacprobe dump.dmp mscordaccore.dll [--check-every N] [--max-frames N] [--rt-dir DIR]... [--loader-heaps]\n"); return 2; }
    long check_every = 1, max_frames = 500;
    bool loader_heaps = false;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--check-every") && i + 1 < argc) check_every = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max-frames") && i + 1 < argc) max_frames = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rt-dir") && i + 1 < argc) { wchar_t w[1024]; MultiByteToWideChar(CP_UTF8, 0, argv[++i], -1, w, 1024); g_runtime_dirs.push_back(w); }
        else if (!strcmp(argv[i], "--no-runtime-locator")) g_use_locator = false;
        else if (!strcmp(argv[i], "--no-metadata-locator")) g_use_mdloc = false;
        else if (!strcmp(argv[i], "--loader-heaps")) loader_heaps = true;
        else { fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
    }
    HANDLE f = CreateFileA(argv[1], GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
    if (f == INVALID_HANDLE_VALUE) { fprintf(stderr, "open dump failed\n"); return 3; }
    LARGE_INTEGER li; GetFileSizeEx(f, &li); g_len = li.QuadPart;
    HANDLE mp = CreateFileMappingA(f, NULL, PAGE_READONLY, 0, 0, NULL);
    g_b = (const uint8_t*)MapViewOfFile(mp, FILE_MAP_READ, 0, 0, 0);
    if (!g_b || memcmp(g_b, "MDMP", 4)) { fprintf(stderr, "not a minidump\n"); return 3; }
    uint32_t n = rd<uint32_t>(8), dir = rd<uint32_t>(12);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t t = rd<uint32_t>(dir + 12*i), rva = rd<uint32_t>(dir + 12*i + 8);
        g_stream_types.push_back(t);
        if (t == 9) { uint64_t c = rd<uint64_t>(rva), off = rd<uint64_t>(rva + 8);
            for (uint64_t k = 0; k < c; k++) { uint64_t va = rd<uint64_t>(rva+16+16*k), s = rd<uint64_t>(rva+24+16*k);
                if (off + s <= g_len) g_ranges.push_back({va, s, g_b + off}); off += s; } }
        else if (t == 5) { uint32_t c = rd<uint32_t>(rva);
            for (uint32_t k = 0; k < c; k++) { uint64_t va = rd<uint64_t>(rva+4+16*k); uint32_t s = rd<uint32_t>(rva+12+16*k), r = rd<uint32_t>(rva+16+16*k);
                if (r && (uint64_t)r + s <= g_len) g_ranges.push_back({va, s, g_b + r}); } }
        else if (t == 4) { uint32_t c = rd<uint32_t>(rva);
            for (uint32_t k = 0; k < c; k++) { uint64_t o = rva + 4 + 108*k; uint32_t nr = rd<uint32_t>(o+20), nl = rd<uint32_t>(nr);
                g_mods.push_back({rd<uint64_t>(o), rd<uint32_t>(o+8), rd<uint32_t>(o+16), std::wstring((const wchar_t*)(g_b+nr+4), nl/2)}); } }
        else if (t == 3) { uint32_t c = rd<uint32_t>(rva);
            for (uint32_t k = 0; k < c; k++) { uint64_t o = rva + 4 + 48*k;
                g_thr.push_back({rd<uint32_t>(o), g_b + rd<uint32_t>(o+44), rd<uint32_t>(o+40), rd<uint64_t>(o+16),
                                 rd<uint64_t>(o+24), rd<uint32_t>(o+32), rd<uint32_t>(o+36)}); } }
    }
    std::sort(g_ranges.begin(), g_ranges.end(), [](const Range& a, const Range& b) { return a.va < b.va; });
    {   // drop overlaps (a MemoryList range inside a Memory64List one, say): keep the first
        std::vector<Range> r2; for (auto& r : g_ranges) { if (!r2.empty() && r.va < r2.back().va + r2.back().size) continue; r2.push_back(r); }
        g_ranges.swap(r2);
    }
    {   // runtime folder(s) for the metadata locator: the DAC's own folder
        wchar_t w[1024]; MultiByteToWideChar(CP_UTF8, 0, argv[2], -1, w, 1024);
        std::wstring d = w; size_t p = d.find_last_of(L"\\/"); if (p != std::wstring::npos) g_runtime_dirs.insert(g_runtime_dirs.begin(), d.substr(0, p));
    }
    J result = J::obj();
    result.set("tool", J::str("dacprobe (windows, dumps/windows/dacprobe.cpp)")).set("dump", J::str(argv[1])).set("dac", J::str(argv[2]));
    uint64_t memtot = 0; for (auto& r : g_ranges) memtot += r.size;
    {
        J st = J::arr(); for (auto t : g_stream_types) st.push(J::unum(t));
        J core = J::obj(); core.set("format", J::str("minidump")).set("threads_in_threadlist", J::unum(g_thr.size()))
            .set("memory_ranges", J::unum(g_ranges.size())).set("memory_bytes", J::unum(memtot))
            .set("modules", J::unum(g_mods.size())).set("stream_types", st);
        result.set("core", core);
    }
    g_target.vtbl = g_vt; g_locator.vtbl = g_vt_loc; g_mdloc.vtbl = g_vt_md;

    HMODULE dac = LoadLibraryA(argv[2]);
    if (!dac) { fprintf(stderr, "LoadLibrary(DAC) failed %lu\n", GetLastError()); return 4; }
    typedef HRESULT (STDAPICALLTYPE *CreateFn)(REFIID, void*, void**);
    CreateFn create = (CreateFn)GetProcAddress(dac, "CLRDataCreateInstance");
    J init = J::obj();
    void* procp = nullptr;
    GUID iid_proc = IIDof("IXCLRDataProcess");
    HRESULT hr = create(iid_proc, &g_target, &procp);
    init.set("CLRDataCreateInstance", J::str(hr_str(hr)));
    if (FAILED(hr) || !procp) { result.set("dac_init", init).set("fatal", J::str("CLRDataCreateInstance failed " + hr_str(hr))); puts(result.text().c_str()); return 5; }
    proc = {procp, IXCLRDATAPROCESS_METHODS};
    auto qi = [&](const char* name, Iface* out, const char** methods) {
        void* p = nullptr; GUID g = IIDof(name);
        HRESULT h = ((HRESULT (STDMETHODCALLTYPE*)(void*, REFIID, void**))((*(void***)procp)[0]))(procp, g, &p);
        init.set(std::string("QI_") + name, J::str(hr_str(h)));
        if (SUCCEEDED(h) && p) { *out = {p, methods}; return true; } return false; };
    if (!qi("ISOSDacInterface", &sos, ISOSDAC_METHODS)) { result.set("dac_init", init).set("fatal", J::str("QueryInterface(ISOSDacInterface) failed")); puts(result.text().c_str()); return 6; }
    has8 = qi("ISOSDacInterface8", &sos8, ISOSDAC8_METHODS);
    has12 = qi("ISOSDacInterface12", &sos12, ISOSDAC12_METHODS);
    result.set("dac_init", init);
    if (loader_heaps) {
        if (!qi("ISOSDacInterface13", &sos13, ISOSDAC13_METHODS)) { fprintf(stderr, "QueryInterface(ISOSDacInterface13) failed\n"); return 6; }
        return loader_heaps_mode(argv[1], argv[2]);
    }

    // ---------------------------------------------------------- 1. runtime + threads
    J rt = J::obj();
    const Mod* crm = module_named(L"coreclr.dll");
    rt.set("runtime_module", J::str("coreclr.dll")).set("runtime_base", crm ? J::hex(crm->base) : J::null())
      .set("runtime_path", crm ? J::str(utf8(crm->name.c_str())) : J::null());
    DacpThreadStoreData ts = {};
    hr = sos("GetThreadStoreData", &ts);
    rt.set("GetThreadStoreData_hr", J::str(hr_str(hr)));
    std::vector<ThreadRec> threads;
    std::set<uint32_t> dump_tids; for (auto& t : g_thr) dump_tids.insert(t.tid);
    if (SUCCEEDED(hr)) {
        rt.set("thread_store", sdict(ts));
        CLRDATA_ADDRESS addr = ts.firstThread; std::set<CLRDATA_ADDRESS> seen;
        while (addr && !seen.count(addr) && threads.size() < 100000) {
            seen.insert(addr);
            DacpThreadData td = {};
            hr = sos("GetThreadData", addr, &td);
            if (FAILED(hr)) { err("GetThreadData", hr, {{"thread", J::hex(addr)}}); break; }
            J t = J::obj();
            t.set("address", J::hex(addr)).set("osThreadId", J::unum(td.osThreadId)).set("corThreadId", J::unum(td.corThreadId))
             .set("state", J::num(td.state)).set("state_hex", J::hex((uint32_t)td.state))
             .set("preemptiveGCDisabled", J::unum(td.preemptiveGCDisabled))
             .set("allocContextPtr", J::hex(td.allocContextPtr)).set("allocContextLimit", J::hex(td.allocContextLimit))
             .set("lastThrownObjectHandle", J::hex(td.lastThrownObjectHandle)).set("lockCount", J::unum(td.lockCount))
             .set("teb", J::hex(td.teb)).set("pFrame", J::hex(td.pFrame)).set("domain", J::hex(td.domain))
             .set("context", J::hex(td.context)).set("firstNestedException", J::hex(td.firstNestedException))
             .set("nextThread", J::hex(td.nextThread))
             .set("is_finalizer", J::boolean(addr == ts.finalizerThread)).set("is_gc_thread", J::boolean(addr == ts.gcThread))
             .set("in_core_prstatus", J::boolean(dump_tids.count(td.osThreadId) > 0));  // here: in the minidump ThreadList
            threads.push_back({addr, td, t});
            addr = td.nextThread;
        }
        rt.set("threads_walked", J::unum(threads.size()));
        std::set<uint32_t> managed_os; for (auto& t : threads) managed_os.insert(t.td.osThreadId);
        J inc = J::arr(), without = J::arr();
        for (auto& t : g_thr) { inc.push(J::unum(t.tid)); if (!managed_os.count(t.tid)) without.push(J::unum(t.tid)); }
        rt.set("os_threads_in_core", inc).set("os_threads_without_managed_thread", without);
    } else err("GetThreadStoreData", hr);

    // ---------------------------------------------------------- 2. GC heap
    J gc = J::obj();
    DacpGcHeapData gcd = {};
    hr = sos("GetGCHeapData", &gcd);
    gc.set("GetGCHeapData_hr", J::str(hr_str(hr)));
    std::vector<std::pair<CLRDATA_ADDRESS, DacpGcHeapDetails>> heaps;
    if (SUCCEEDED(hr)) {
        gc.set("GetGCHeapData", sdict(gcd));
        if (gcd.bServerMode) {
            unsigned nh = gcd.HeapCount; std::vector<CLRDATA_ADDRESS> arr(std::max(nh, 1u)); unsigned need = 0;
            hr = sos("GetGCHeapList", nh, arr.data(), &need);
            if (FAILED(hr)) err("GetGCHeapList", hr);
            for (unsigned i = 0; i < nh; i++) {
                DacpGcHeapDetails det = {};
                hr = sos("GetGCHeapDetails", arr[i], &det);
                if (FAILED(hr)) { err("GetGCHeapDetails", hr, {{"heap", J::hex(arr[i])}}); continue; }
                heaps.push_back({arr[i], det});
            }
        } else {
            DacpGcHeapDetails det = {};
            hr = sos("GetGCHeapStaticData", &det);
            if (FAILED(hr)) err("GetGCHeapStaticData", hr); else heaps.push_back({0, det});
        }
    } else err("GetGCHeapData", hr);

    DacpUsefulGlobalsData ug = {};
    hr = sos("GetUsefulGlobals", &ug);
    bool ug_ok = SUCCEEDED(hr);
    CLRDATA_ADDRESS free_mt = ug_ok ? ug.FreeMethodTable : 0, string_mt = ug_ok ? ug.StringMethodTable : 0;
    gc.set("useful_globals", ug_ok ? sdict(ug) : J::str(hr_str(hr)));

    std::map<uint64_t, std::pair<uint64_t, std::string>> alloc_ctx;  // ptr -> (limit, source)
    auto add_ctx = [&](uint64_t p, uint64_t l, const std::string& src) { if (p && l && p < l) alloc_ctx[p] = {l, src}; };
    for (auto& t : threads) add_ctx(t.td.allocContextPtr, t.td.allocContextLimit, "thread " + std::to_string(t.td.osThreadId));
    if (has12) {
        uint64_t p = 0, l = 0;
        hr = sos12("GetGlobalAllocationContext", &p, &l);
        J g = J::obj(); g.set("hr", J::str(hr_str(hr))).set("ptr", J::hex(p)).set("limit", J::hex(l));
        gc.set("global_alloc_context", g);
        if (SUCCEEDED(hr)) add_ctx(p, l, "global");
    }

    struct Seg { J j; uint64_t addr, mem, end; std::string kind; uint64_t objects = 0, bytes = 0; };
    std::vector<Seg> segments;
    J heap_out = J::arr();
    for (size_t hidx = 0; hidx < heaps.size(); hidx++) {
        CLRDATA_ADDRESS haddr = heaps[hidx].first; DacpGcHeapDetails& det = heaps[hidx].second;
        J hd = sdict_details(det);
        std::vector<DacpGenerationData> gens(det.generation_table, det.generation_table + DAC_NUMBERGENERATIONS);
        J ngen_j = J::null();
        if (has8) {
            unsigned ng = 0;
            hr = sos8("GetNumberGenerations", &ng);
            if (SUCCEEDED(hr)) {
                ngen_j = J::unum(ng);
                std::vector<DacpGenerationData> arr(ng); unsigned need = 0;
                if (haddr) hr = sos8("GetGenerationTableSvr", haddr, ng, arr.data(), &need);
                else hr = sos8("GetGenerationTable", ng, arr.data(), &need);
                if (SUCCEEDED(hr)) gens = arr; else err("GetGenerationTable", hr);
            }
        }
        J gf = J::arr(); for (auto& g : gens) gf.push(sdict(g));
        hd.set("number_generations_sos8", ngen_j).set("generation_table_full", gf);
        for (auto& g : gens) add_ctx(g.allocContextPtr, g.allocContextLimit, "heap " + std::to_string(hidx) + " generation");
        bool regions = gens.size() >= 2 && gens[0].start_segment != gens[1].start_segment;
        hd.set("uses_regions", J::boolean(regions));
        heap_out.push(hd);
        std::vector<int> order = {3, 2}; if (regions) { order.push_back(1); order.push_back(0); } if (gens.size() > 4) order.push_back(4);
        std::set<uint64_t> seen = {0};
        for (int gen : order) {
            uint64_t sa = gens[gen].start_segment;
            while (sa && !seen.count(sa)) {
                seen.insert(sa);
                DacpHeapSegmentData sd = {};
                hr = sos("GetHeapSegmentData", sa, &sd);
                if (FAILED(hr)) { err("GetHeapSegmentData", hr, {{"segment", J::hex(sa)}}); break; }
                bool eph = sa == det.ephemeral_heap_segment;
                uint64_t end = eph ? det.alloc_allocated : sd.allocated;
                std::string kind = (sd.flags & 1) ? "frozen" : gen == 3 ? "loh" : gen == 4 ? "poh"
                    : regions ? "gen" + std::to_string(gen) : (eph ? "ephemeral" : "gen2");
                J s = J::obj();
                s.set("heap", J::unum(hidx)).set("address", J::hex(sa)).set("generation_list", J::num(gen)).set("kind", J::str(kind))
                 .set("mem", J::hex(sd.mem)).set("allocated", J::hex(sd.allocated)).set("walk_end", J::hex(end))
                 .set("committed", J::hex(sd.committed)).set("reserved", J::hex(sd.reserved)).set("used", J::hex(sd.used))
                 .set("highAllocMark", J::hex(sd.highAllocMark)).set("flags", J::hex(sd.flags)).set("next", J::hex(sd.next))
                 .set("is_ephemeral_heap_segment", J::boolean(eph));
                segments.push_back({s, sa, sd.mem, end, kind});
                sa = sd.next;
            }
        }
    }
    gc.set("heaps", heap_out);
    {
        J a = J::arr();
        for (auto& e : alloc_ctx) { J x = J::obj(); x.set("ptr", J::hex(e.first)).set("limit", J::hex(e.second.first)).set("source", J::str(e.second.second)); a.push(x); }
        gc.set("alloc_contexts_skipped", a);
    }

    // heap walk (reading the dump directly)
    struct MTInfo { bool ok; uint64_t base, comp; std::string name; bool is_free; };
    std::map<uint64_t, MTInfo> mt_cache;
    auto mt_info = [&](uint64_t mt) -> const MTInfo& {
        auto it = mt_cache.find(mt); if (it != mt_cache.end()) return it->second;
        MTInfo r = {false, 0, 0, "", false};
        DacpMethodTableData md = {};
        HRESULT h = sos("GetMethodTableData", (CLRDATA_ADDRESS)mt, &md);
        if (SUCCEEDED(h)) {
            std::string name; HRESULT nhr = 0;
            if (!wname("GetMethodTableName", mt, &name, &nhr)) name = "<GetMethodTableName failed " + hr_str(nhr) + ">";
            uint64_t base = md.BaseSize;
            if (mt == string_mt) base += 2;  // GetMethodTableData reports String's BaseSize minus sizeof(WCHAR)
            r = {true, base, md.ComponentSize, name, md.bIsFree != 0};
        }
        return mt_cache[mt] = r;
    };
    struct Stat { std::string name; uint64_t count = 0, size = 0; };
    std::map<uint64_t, Stat> stats;
    uint64_t free_n = 0, free_sz = 0, total = 0, total_size = 0, checked = 0;
    J mismatches = J::arr(); J boxes = J::arr(); uint64_t nboxes = 0;
    for (auto& seg : segments) {
        uint64_t a = seg.mem, end = seg.end;
        while (a < end) {
            auto ac = alloc_ctx.find(a);
            if (ac != alloc_ctx.end()) { a = ac->second.first + MIN_OBJ_SIZE; continue; }
            uint8_t hdr[16];
            if (readmem(a, hdr, 16) != 16) { err("heapwalk: memory absent", 0, {{"segment", J::hex(seg.addr)}, {"address", J::hex(a)}}, false); break; }
            uint64_t mt; uint32_t cnt; memcpy(&mt, hdr, 8); memcpy(&cnt, hdr + 8, 4);
            mt &= ~7ull;
            const MTInfo* info = mt ? &mt_info(mt) : nullptr;
            if (!info || !info->ok) { err("heapwalk: bad MethodTable", 0, {{"segment", J::hex(seg.addr)}, {"address", J::hex(a)}, {"mt", J::hex(mt)}}, false); break; }
            uint64_t size = align8(info->base + (info->comp ? info->comp * cnt : 0));
            if (size < MIN_OBJ_SIZE && !info->is_free && mt != free_mt) { err("heapwalk: implausible size", 0, {{"address", J::hex(a)}, {"size", J::unum(size)}}, false); break; }
            if (mt == free_mt || info->is_free) { free_n++; free_sz += size; }
            else {
                total++; total_size += size; seg.objects++; seg.bytes += size;
                Stat& s = stats[mt]; if (!s.count) s.name = info->name;
                s.count++; s.size += size;
                if (info->name.find("AsyncStateMachineBox") != std::string::npos) {
                    J b = J::obj(); b.set("address", J::hex(a)).set("mt", J::hex(mt)).set("type", J::str(info->name)).set("size", J::unum(size));
                    boxes.push(b); nboxes++;
                }
                if (check_every && (s.count == 1 || total % check_every == 0)) {
                    DacpObjectData od = {};
                    HRESULT h = sos("GetObjectData", (CLRDATA_ADDRESS)a, &od);
                    checked++;
                    if (FAILED(h) || align8(od.Size) != size || od.MethodTable != mt) {
                        J m = J::obj(); m.set("address", J::hex(a)).set("hr", J::str(hr_str(h))).set("ours", J::unum(size))
                            .set("dac", J::unum(od.Size)).set("mt", J::hex(mt)).set("dac_mt", J::hex(od.MethodTable));
                        mismatches.push(m);
                    }
                }
            }
            a += size ? size : 8;
        }
    }
    J segs = J::arr();
    for (auto& s : segments) { J j = s.j; j.set("objects", J::unum(s.objects)).set("object_bytes", J::unum(s.bytes)); segs.push(j); }
    gc.set("segments", segs);

    std::vector<std::pair<uint64_t, Stat>> table(stats.begin(), stats.end());
    std::sort(table.begin(), table.end(), [](const std::pair<uint64_t, Stat>& x, const std::pair<uint64_t, Stat>& y) {
        if (x.second.size != y.second.size) return x.second.size > y.second.size;
        if (x.second.count != y.second.count) return x.second.count > y.second.count;
        return x.second.name < y.second.name; });
    J types = J::arr();
    for (auto& e : table) { J t = J::obj(); t.set("mt", J::hex(e.first)).set("type", J::str(e.second.name)).set("count", J::unum(e.second.count)).set("total_size", J::unum(e.second.size)); types.push(t); }
    J by_kind = J::obj();
    {
        std::vector<std::string> kinds; std::map<std::string, std::array<uint64_t, 3>> bk;
        for (auto& s : segments) { if (!bk.count(s.kind)) { kinds.push_back(s.kind); bk[s.kind] = {0, 0, 0}; } auto& k = bk[s.kind]; k[0]++; k[1] += s.objects; k[2] += s.bytes; }
        for (auto& k : kinds) { J x = J::obj(); x.set("segments", J::unum(bk[k][0])).set("objects", J::unum(bk[k][1])).set("bytes", J::unum(bk[k][2])); by_kind.set(k, x); }
    }
    J cross = J::obj(); cross.set("checked", J::unum(checked)).set("mismatches", mismatches);
    J hs = J::obj();
    hs.set("sorted_by", J::str("total_size descending")).set("includes", J::str("all segments incl. frozen (NonGC) ones; free objects excluded"))
      .set("by_segment_kind", by_kind).set("total_objects", J::unum(total)).set("total_size", J::unum(total_size))
      .set("free_objects", J::unum(free_n)).set("free_size", J::unum(free_sz)).set("distinct_method_tables", J::unum(table.size()))
      .set("object_size_crosscheck", cross).set("types", types);

    // ---------------------------------------------------------- 3. stacks
    J stacks = J::arr();
    static BYTE ctxbuf[0x2000];
    for (auto& t : threads) {
        uint32_t osid = t.td.osThreadId;
        J st = J::obj(); st.set("osThreadId", J::unum(osid)).set("corThreadId", J::unum(t.td.corThreadId)).set("thread", J::hex(t.addr));
        if (!osid) { st.set("skipped", J::str("no OS thread")); stacks.push(st); continue; }
        void* task = nullptr;
        hr = proc("GetTaskByOSThreadID", (ULONG32)osid, &task);
        if (FAILED(hr) || !task) { st.set("error", J::str("GetTaskByOSThreadID " + hr_str(hr))); stacks.push(st); continue; }
        Iface taskI = {task, IXCLRDATATASK_METHODS};
        void* walk = nullptr;
        hr = taskI("CreateStackWalk", (ULONG32)0xf, &walk);
        if (FAILED(hr) || !walk) { st.set("error", J::str("CreateStackWalk " + hr_str(hr))); com_release(task); stacks.push(st); continue; }
        Iface w = {walk, IXCLRDATASTACKWALK_METHODS};
        J frames = J::arr(); uint32_t ctxsize = 0; bool have_ctxsize = false; std::string next_error;
        for (long i = 0; i < max_frames; i++) {
            ULONG32 csize = 0;
            hr = w("GetContext", (ULONG32)0x10001f, (ULONG32)sizeof ctxbuf, &csize, (BYTE*)ctxbuf);
            if (FAILED(hr)) { J e = J::obj(); e.set("error", J::str("GetContext " + hr_str(hr))); frames.push(e); break; }
            ctxsize = csize; have_ctxsize = true;
            uint64_t ip, sp; memcpy(&ip, ctxbuf + 0xf8, 8); memcpy(&sp, ctxbuf + 0x98, 8);
            J fr = J::obj(); fr.set("sp", J::hex(sp)).set("ip", J::hex(ip));
            uint64_t fa = 0, md = 0;
            hr = w("Request", (ULONG32)0xf0000000, (ULONG32)0, (BYTE*)nullptr, (ULONG32)8, (BYTE*)&fa);  // DACSTACKPRIV_REQUEST_FRAME_DATA
            HRESULT mhr;
            if (SUCCEEDED(hr) && fa) {
                fr.set("frame", J::hex(fa));
                uint64_t vt = 0; std::string fname; bool have = false;
                if (u64at(fa, &vt) && vt) have = wname("GetFrameName", vt, &fname);
                fr.set("frame_name", have ? J::str(fname) : J::null());
                mhr = sos("GetMethodDescPtrFromFrame", (CLRDATA_ADDRESS)fa, &md);
                fr.set("method_source", J::str("GetMethodDescPtrFromFrame"));
            } else {
                mhr = sos("GetMethodDescPtrFromIP", (CLRDATA_ADDRESS)ip, &md);
                fr.set("method_source", J::str("GetMethodDescPtrFromIP"));
            }
            if (SUCCEEDED(mhr) && md) {
                fr.set("methodDesc", J::hex(md));
                std::string name; bool ok = wname("GetMethodDescName", md, &name);
                fr.set("method", ok ? J::str(name) : J::null());
            } else fr.set("method", J::null());
            frames.push(fr);
            hr = w("Next");
            if (hr != S_OK) { if (FAILED(hr)) next_error = hr_str(hr); break; }
        }
        if (have_ctxsize) st.set("context_size", J::unum(ctxsize));
        if (!next_error.empty()) st.set("next_error", J::str(next_error));
        st.set("frames", frames);
        com_release(walk); com_release(task);
        stacks.push(st);
    }
    J asm_ = J::obj(); asm_.set("count", J::unum(nboxes)).set("boxes", boxes);

    J thr = J::arr(); for (auto& t : threads) thr.push(t.j);
    result.set("runtime", rt).set("threads", thr).set("gc_heap", gc).set("heap_stat", hs).set("stacks", stacks)
          .set("async_state_machine_boxes", asm_);
    J errs = J::arr(); for (auto& e : errors) errs.push(e);
    result.set("errors", errs).set("callback_errors", J::arr());
    J tl = J::obj();
    { J q = J::obj(); for (auto& e : g_log.qi) q.set(e.first, J::str(e.second)); tl.set("QueryInterface", q); }
    { J q = J::obj(); for (auto& e : g_log.image_base) q.set(e.first, e.second == "null" ? J::null() : J::str(e.second)); tl.set("GetImageBase", q); }
    { J q = J::obj(); for (auto& e : g_log.ctx_calls) q.set(std::to_string(e.first), J::num(e.second)); tl.set("GetThreadContext", q); }
    { J q = J::arr(); for (auto& e : g_log.ctx_sizes) { J p = J::arr(); p.push(J::str(hx(e.first))).push(J::unum(e.second)); q.push(p); } tl.set("GetThreadContext_sizes", q); }
    tl.set("ReadVirtual_calls", J::num(g_log.rv_calls)).set("ReadVirtual_failed", J::num(g_log.rv_failed)).set("ReadVirtual_partial", J::num(g_log.rv_partial));
    { J q = J::arr(); for (auto& e : g_log.metadata) q.push(e); tl.set("GetMetadata", q); }
    { J q = J::obj(); for (auto& e : g_log.other) q.set(e.first, J::num(e.second)); tl.set("other_calls", q); }
    result.set("target_log", tl);
    J ms = J::obj(); ms.set("memory_ranges", J::unum(g_ranges.size())).set("memory_bytes", J::unum(memtot));
    result.set("memory_stats", ms);
    fputs(result.text().c_str(), stdout); fputs("\n", stdout);
    return 0;
}
