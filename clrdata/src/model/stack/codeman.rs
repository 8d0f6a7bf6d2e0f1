//! The code manager's view: is an address managed code, which method, and its unwind info.
//!
//! - `ExecutionManager::g_codeRangeMap` (.NET 8 RangeSectionMap): 5 levels of 256 pointers,
//!   the leaf entries heading lists of RangeSectionFragments, each naming its RangeSection.
//! - JIT'd code (RangeSection flag CODEHEAP): the HeapList's nibble map gives the method's
//!   start; the pointer just before it is the RealCodeHeader (MethodDesc, unwind infos).
//! - ReadyToRun code (a RangeSection with an R2R Module): the image's RuntimeFunctions section
//!   (binary search), mapped back to a MethodDef through MethodDefEntryPoints, or, when the dump
//!   lacks those tables and no image file is at hand, through the runtime's own search and
//!   entry point map (see the `r2r` module).

use super::image_file::{ImageFile, Overlay};
use super::r2r::R2rImage;
use super::unwind::RuntimeFunction;
use crate::discovery::layout::NibbleMapEncoding;
use crate::discovery::runtime::Runtime;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// RangeSection flag: a JIT code heap.
const RS_CODEHEAP: u32 = 2;
/// Bound on a fragment list.
const MAX_FRAGMENTS: usize = 4096;
/// Bound on the nibble-map scan back to a method's start (32 bytes per bucket: 64 MB).
const MAX_BUCKETS: u64 = 1 << 21;
/// Bound on a JIT'd method's unwind infos (the main body and its funclets).
const MAX_UNWIND_INFOS: u32 = 4096;

/// Which code manager owns the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeKind {
    /// JIT'd code in a code heap.
    Jit,
    /// Precompiled ReadyToRun code in an image.
    ReadyToRun,
}

/// What the code manager knows of a managed code address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeInfo {
    /// JIT or ReadyToRun.
    pub kind: CodeKind,
    /// The method's first instruction.
    pub method_start: u64,
    /// The MethodDesc (JIT'd code; ReadyToRun code has none without the runtime's hash map).
    pub method_desc: Option<u64>,
    /// The Module of an R2R method.
    pub module: Option<u64>,
    /// The MethodDef token of an R2R method.
    pub token: Option<u32>,
    /// The RUNTIME_FUNCTION covering the address (its unwind info).
    pub unwind: RuntimeFunction,
    /// The end of the method's code (exclusive): JIT'd code, the largest EndAddress of the
    /// RUNTIME_FUNCTIONs in its RealCodeHeader (main body and funclets; the GC info that
    /// follows is excluded); ReadyToRun code, the end of the entry point's RUNTIME_FUNCTION, or
    /// of the one covering the address when that lies further (a funclet).
    pub code_end: u64,
    /// Why the method is not known, when neither a MethodDesc nor a token was found.
    pub method_note: Option<crate::ClrError>,
}

pub use super::eh::EhClause;

/// Most bytes of a JIT'd method's debug info blob read (the blob's header bounds the decode).
const MAX_DEBUG_INFO: usize = 64 << 10;
/// Bound on a JIT'd method's EH clauses.
const MAX_EH_CLAUSES: u64 = 4096;
/// `sizeof(EE_ILEXCEPTION_CLAUSE)`: five DWORDs, then a pointer-aligned union (the type
/// handle, class token or filter offset).
const EE_CLAUSE_SIZE: u64 = 32;

/// Code lookups with per-image caches; one per session or command.
#[derive(Default)]
pub struct CodeIndex {
    r2r: Mutex<HashMap<u64, crate::Result<Arc<R2rImage>>>>,
    files: Mutex<Vec<Arc<ImageFile>>>,
}

impl CodeIndex {
    /// Empty caches.
    pub fn new() -> CodeIndex {
        CodeIndex::default()
    }

    /// The dump's memory with the image files read so far filling its gaps (what unwinding
    /// ReadyToRun code reads).
    pub fn memory<'m, M: Memory + ?Sized>(&self, inner: &'m M) -> Overlay<'m, M> {
        Overlay {
            inner,
            files: self.files.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }

    /// The RangeSection containing `ip`, if any: (RangeSection address).
    pub fn range_section<M: Memory>(&self, rt: &Runtime<M>, ip: u64) -> Option<u64> {
        let l = rt.layout.stack();
        let m = rt.memory();
        let mut p = rt.globals.code_range_map;
        if p == 0 {
            return None;
        }
        for level in (1..=l.range_map_levels).rev() {
            let shift = l.range_map_low_bits + 8 * (level - 1);
            if shift >= 64 {
                return None;
            }
            let idx = (ip >> shift) & 0xFF;
            let v = m.read_u64(p + idx * 8).ok()?;
            if v & !1 == 0 {
                return None;
            }
            p = v & !1;
        }
        // p: the first RangeSectionFragment.
        let mut frag = p;
        for _ in 0..MAX_FRAGMENTS {
            if frag == 0 {
                return None;
            }
            let begin = m.read_u64(frag + l.fragment_begin).ok()?;
            let end = m.read_u64(frag + l.fragment_end).ok()?;
            if ip >= begin && ip < end {
                let rs = m.read_u64(frag + l.fragment_range_section).ok()?;
                return (rs != 0).then_some(rs);
            }
            frag = m.read_u64(frag + l.fragment_next).ok()? & !1;
        }
        None
    }

    /// Whether `ip` is managed code (in a RangeSection).
    pub fn is_managed<M: Memory>(&self, rt: &Runtime<M>, ip: u64) -> bool {
        self.range_section(rt, ip).is_some()
    }

    /// Where the GC info of the method at `info` starts (the blob clrcodeinfo::gcinfo
    /// decodes, of the whole method: its funclets share it):
    /// - JIT'd code: the RealCodeHeader's phdrJitGCInfo (the header's address is the word
    ///   before the method's first instruction);
    /// - ReadyToRun code: right after the UNWIND_INFO of the method's main RUNTIME_FUNCTION
    ///   (ReadyToRunJitManager::GetGCInfoToken: unwind codes, then a DWORD-aligned personality
    ///   routine or chained RUNTIME_FUNCTION when the flags say so).
    pub fn gc_info<M: Memory>(&self, rt: &Runtime<M>, info: &CodeInfo) -> crate::Result<u64> {
        let m = rt.memory();
        match info.kind {
            CodeKind::Jit => {
                let off = rt.layout.stack().code_header_gc_info;
                if off == crate::discovery::supplement::NOT_PUBLISHED {
                    return Err(crate::ClrError::corrupt(
                        "RealCodeHeader",
                        0,
                        "this runtime's layout gives no GCInfo field",
                    ));
                }
                let a = info.method_start - 8;
                let hdr = m
                    .read_u64(a)
                    .map_err(|_| crate::ClrError::read("the code header pointer", a))?;
                m.read_u64(hdr + off)
                    .map_err(|_| crate::ClrError::read("RealCodeHeader::phdrJitGCInfo", hdr))
            }
            CodeKind::ReadyToRun => {
                let module = info.module.ok_or_else(|| {
                    crate::ClrError::corrupt("R2R code", info.method_start, "no module")
                })?;
                let img = self.r2r_image(rt, module)?;
                let mem = self.memory(m);
                let Some((rf, _, _, _)) = img.lookup(&mem, info.method_start)? else {
                    return Err(crate::ClrError::not_found_at(
                        "RUNTIME_FUNCTION",
                        info.method_start,
                        "no entry of the image covers the method's start",
                    ));
                };
                let unwind = rf.base + rf.unwind as u64;
                let mut head = [0u8; 4];
                if mem.read(unwind, &mut head) != 4 {
                    return Err(crate::ClrError::read("UNWIND_INFO", unwind));
                }
                let (flags, codes) = (head[0] >> 3, head[2] as u64);
                let mut size = 4 + 2 * codes;
                if flags & 4 != 0 {
                    // UNW_FLAG_CHAININFO: a RUNTIME_FUNCTION follows.
                    size = size.next_multiple_of(4) + 12;
                } else if flags & 3 != 0 {
                    // UNW_FLAG_EHANDLER | UNW_FLAG_UHANDLER: a personality routine RVA.
                    size = size.next_multiple_of(4) + 4;
                }
                Ok(unwind + size)
            }
        }
    }

    /// The GC info version of the method at `info` (what [`CodeIndex::gc_info`]'s blob is
    /// decoded as): JIT'd code, the runtime's (`GcInfo::version_for_runtime`); ReadyToRun
    /// code, its image's (`GcInfo::version_for_ready_to_run` of the R2R header's major
    /// version).
    pub fn gc_info_version<M: Memory>(
        &self,
        rt: &Runtime<M>,
        info: &CodeInfo,
    ) -> crate::Result<u32> {
        match info.kind {
            CodeKind::Jit => Ok(clrcodeinfo::GcInfo::version_for_runtime(
                rt.layout.family.major(),
            )),
            CodeKind::ReadyToRun => {
                let module = info.module.ok_or_else(|| {
                    crate::ClrError::corrupt("R2R code", info.method_start, "no module")
                })?;
                let img = self.r2r_image(rt, module)?;
                Ok(clrcodeinfo::GcInfo::version_for_ready_to_run(img.major))
            }
        }
    }

    /// The EH clauses of the method at `info` (`IJitManager::InitializeEHEnumeration`):
    /// - JIT'd code: `RealCodeHeader::phdrJitEHInfo`, an `EE_ILEXCEPTION` (a 4-byte section
    ///   header, then `EE_ILEXCEPTION_CLAUSE`s from +8) whose clause count is the size_t just
    ///   before it; null when the method has none;
    /// - ReadyToRun code: its image's ExceptionInfo section.
    pub fn eh_clauses<M: Memory>(
        &self,
        rt: &Runtime<M>,
        info: &CodeInfo,
    ) -> crate::Result<Vec<EhClause>> {
        let m = rt.memory();
        match info.kind {
            CodeKind::Jit => {
                let off = rt.layout.stack().code_header_eh_info;
                if off == crate::discovery::supplement::NOT_PUBLISHED {
                    return Err(crate::ClrError::corrupt(
                        "RealCodeHeader",
                        0,
                        "this runtime's layout gives no EHInfo field",
                    ));
                }
                let a = info.method_start - 8;
                let hdr = m
                    .read_u64(a)
                    .map_err(|_| crate::ClrError::read("the code header pointer", a))?;
                let eh = m
                    .read_u64(hdr + off)
                    .map_err(|_| crate::ClrError::read("RealCodeHeader::phdrJitEHInfo", hdr))?;
                if eh == 0 {
                    return Ok(Vec::new());
                }
                let n = m
                    .read_u64(eh - 8)
                    .map_err(|_| crate::ClrError::read("the EH clause count", eh - 8))?;
                if n > MAX_EH_CLAUSES {
                    return Err(crate::ClrError::corrupt(
                        "EE_ILEXCEPTION",
                        eh,
                        format!("{n} clauses"),
                    ));
                }
                let b = m.read_bytes(eh + 8, (n * EE_CLAUSE_SIZE) as usize);
                if (b.len() as u64) < n * EE_CLAUSE_SIZE {
                    return Err(crate::ClrError::read(
                        format!("{n} EH clauses"),
                        eh + 8 + b.len() as u64,
                    ));
                }
                Ok(b.chunks_exact(EE_CLAUSE_SIZE as usize)
                    .map(|c| {
                        let w = |k: usize| u32::from_le_bytes(c[k..k + 4].try_into().unwrap());
                        let mut clause = EhClause::new(w(0), w(4), w(8), w(12), w(16), w(24));
                        if clause.is_typed() && clause.flags & super::eh::CACHED_CLASS != 0 {
                            clause.cached_type =
                                Some(u64::from_le_bytes(c[24..32].try_into().unwrap()));
                        }
                        clause
                    })
                    .collect())
            }
            CodeKind::ReadyToRun => {
                let module = info.module.ok_or_else(|| {
                    crate::ClrError::corrupt("R2R code", info.method_start, "no module")
                })?;
                let img = self.r2r_image(rt, module)?;
                let mem = self.memory(m);
                let Some((rf, _, _, _)) = img.lookup(&mem, info.method_start)? else {
                    return Err(crate::ClrError::not_found_at(
                        "RUNTIME_FUNCTION",
                        info.method_start,
                        "no entry of the image covers the method's start",
                    ));
                };
                img.eh_clauses(&mem, rf.begin)
            }
        }
    }

    /// Whether the code at `info` is a filter funclet (`IJitManager::IsFilterFunclet`): a
    /// funclet (its RUNTIME_FUNCTION is not the method's first) starting at a filter clause's
    /// filter offset (duplicate clauses, listed last, left out).
    pub fn is_filter_funclet<M: Memory>(
        &self,
        rt: &Runtime<M>,
        info: &CodeInfo,
    ) -> crate::Result<bool> {
        let start = info.unwind.start();
        if start == info.method_start {
            return Ok(false);
        }
        let offset = start.wrapping_sub(info.method_start);
        Ok(self
            .eh_clauses(rt, info)?
            .iter()
            .take_while(|c| !c.is_duplicate())
            .any(|c| c.is_filter() && c.filter_or_class as u64 == offset))
    }

    /// The method and unwind info of the managed code at `ip`. `Ok(None)`: not managed code.
    pub fn lookup<M: Memory>(&self, rt: &Runtime<M>, ip: u64) -> crate::Result<Option<CodeInfo>> {
        let Some(rs) = self.range_section(rt, ip) else {
            return Ok(None);
        };
        let l = rt.layout.stack();
        let m = rt.memory();
        let flags = m
            .read_u32(rs + l.rs_flags)
            .map_err(|_| crate::ClrError::read("RangeSection", rs))?;
        if flags & RS_CODEHEAP != 0 {
            let hl = m.read_u64(rs + l.rs_heap_list).map_err(|_| {
                crate::ClrError::corrupt("RangeSection", rs, "HeapList not in the dump")
            })?;
            return self.jit_lookup(rt, hl, ip).map(Some);
        }
        let module = m.read_u64(rs + l.rs_r2r_module).map_err(|_| {
            crate::ClrError::corrupt("RangeSection", rs, "R2R module not in the dump")
        })?;
        if module == 0 {
            // A range list (stubs): managed-looking but no method.
            return Ok(None);
        }
        let img = self.r2r_image(rt, module)?;
        let mem = self.memory(m);
        let Some((rf, mut main, mut main_end, rid)) = img.lookup(&mem, ip)? else {
            return Ok(None);
        };
        // The runtime's entry point map names the method (as the runtime does: the nearest
        // entry point at or before the code that it maps). MethodDefEntryPoints has only
        // non-generic methods; when it has a start nearer the code than the map's, that one
        // is the method (the map's pages may be partly missing from the dump).
        let mut method_desc = None;
        let mut method_note = None;
        let mut rid = rid;
        if let Some(i) = img.function_index(&mem, ip)? {
            match img.method_desc_of(&mem, i) {
                Ok((md, s, e)) if rid.is_none() || s > main => {
                    method_desc = Some(md);
                    (main, main_end) = (s, e);
                    rid = None;
                }
                // The same method: the runtime's MethodDesc of it.
                Ok((md, s, _)) if s == main => method_desc = Some(md),
                Ok(_) => {}
                Err(e) if rid.is_none() => method_note = Some(e),
                Err(_) => {}
            }
        }
        Ok(Some(CodeInfo {
            kind: CodeKind::ReadyToRun,
            method_start: main,
            method_desc,
            module: Some(module),
            token: rid.map(|r| 0x0600_0000 | r),
            unwind: rf,
            code_end: main_end.max(rf.base + rf.end as u64),
            method_note,
        }))
    }

    /// The decoded debug info (native-to-IL bounds, variable locations) of the method whose
    /// code `info` describes, and the address of its blob:
    /// - JIT'd code: `RealCodeHeader::phdrDebugInfo` (the code header's address is the word
    ///   before the method's first instruction), in the runtime's layout with the flag byte;
    /// - ReadyToRun code: the image's DebugInfo section ([`CodeIndex::r2r_debug_info`]), in
    ///   the family's ReadyToRun layout (a runtime loads only images of its own family).
    pub fn debug_info<M: Memory>(
        &self,
        rt: &Runtime<M>,
        info: &CodeInfo,
    ) -> crate::Result<(clrcodeinfo::debuginfo::DebugInfo, u64)> {
        use clrcodeinfo::debuginfo::{DebugInfo, DebugInfoFormat};
        let major = rt.layout.family.major();
        let m = rt.memory();
        let (bytes, blob) = match info.kind {
            CodeKind::Jit => {
                let hdr = m.read_u64(info.method_start.wrapping_sub(8)).map_err(|_| {
                    crate::ClrError::read("the code header pointer", info.method_start - 8)
                })?;
                let off = rt
                    .descriptor()
                    .and_then(|d| d.field("RealCodeHeader", "DebugInfo"))
                    .unwrap_or(0);
                let blob = m.read_u64(hdr.wrapping_add(off)).map_err(|_| {
                    crate::ClrError::read("RealCodeHeader.DebugInfo", hdr.wrapping_add(off))
                })?;
                if blob == 0 {
                    return Err(crate::ClrError::not_found_at(
                        "debug info",
                        hdr,
                        "the method's code header has none",
                    ));
                }
                let mut bytes = vec![0u8; MAX_DEBUG_INFO];
                // The blob may end near the end of a mapping: read what is there.
                let mut got = m.read(blob, &mut bytes);
                if got == 0 {
                    let first = (0x1000 - (blob & 0xFFF)) as usize;
                    got = m.read(blob, &mut bytes[..first]);
                }
                bytes.truncate(got);
                (bytes, blob)
            }
            CodeKind::ReadyToRun => {
                let module = info.module.ok_or_else(|| {
                    crate::ClrError::not_found_at(
                        "the ReadyToRun module",
                        info.method_start,
                        "the code names none",
                    )
                })?;
                (
                    self.r2r_debug_info(rt, module, info.method_start)?,
                    info.method_start,
                )
            }
        };
        let format = DebugInfoFormat::for_runtime(major, info.kind == CodeKind::Jit);
        let di = DebugInfo::decode(&bytes, format).map_err(|e| {
            crate::ClrError::corrupt("the method's debug info", blob, e.to_string())
        })?;
        Ok((di, blob))
    }

    /// The debug info blob of the ReadyToRun method of `module` whose code starts at
    /// `method_start` (see [`R2rImage::debug_info`]), running to its section's end.
    pub fn r2r_debug_info<M: Memory>(
        &self,
        rt: &Runtime<M>,
        module: u64,
        method_start: u64,
    ) -> crate::Result<Vec<u8>> {
        let img = self.r2r_image(rt, module)?;
        let mem = self.memory(rt.memory());
        img.debug_info(&mem, method_start).map(<[u8]>::to_vec)
    }

    fn r2r_image<M: Memory>(&self, rt: &Runtime<M>, module: u64) -> crate::Result<Arc<R2rImage>> {
        if let Some(r) = self
            .r2r
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&module)
        {
            return r.clone();
        }
        let r = R2rImage::read(rt, module).map(Arc::new);
        if let Ok(img) = &r {
            if let Some(f) = &img.file {
                self.files
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(f.clone());
            }
        }
        self.r2r
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(module, r.clone());
        r
    }

    fn jit_lookup<M: Memory>(&self, rt: &Runtime<M>, hl: u64, ip: u64) -> crate::Result<CodeInfo> {
        let l = rt.layout.stack();
        let m = rt.memory();
        let rd = |a: u64, what: &str| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
        let map_base = rd(hl + l.heap_list_map_base, "HeapList::mapBase")?;
        let hdr_map = rd(hl + l.heap_list_hdr_map, "HeapList::pHdrMap")?;
        let module_base = rd(
            hl + l.heap_list_module_base,
            "HeapList::CLRPersonalityRoutine",
        )?;
        if ip < map_base {
            return Err(crate::ClrError::corrupt(
                "HeapList",
                hl,
                format!("ip {ip:#x} below its code heap's map base {map_base:#x}"),
            ));
        }
        let read_unit = |di: u64| {
            let a = hdr_map + di * 4;
            m.read_u32(a)
                .map_err(|_| crate::ClrError::read("nibble map", a))
        };
        let start = match l.nibble_map {
            NibbleMapEncoding::Linear => nibble_map_linear(read_unit, map_base, ip)?,
            NibbleMapEncoding::ConstantLookup => nibble_map_constant(read_unit, map_base, ip)?,
        };
        let start = start.ok_or_else(|| {
            crate::ClrError::not_found_at(
                "method start",
                ip,
                "no entry in the code heap's nibble map",
            )
        })?;
        let hdr = rd(start - 8, "the code header pointer")?;
        let md = rd(hdr + l.code_header_method_desc, "RealCodeHeader::phdrMDesc")?;
        let n = m
            .read_u32(hdr + l.code_header_unwind_count)
            .map_err(|_| crate::ClrError::read("RealCodeHeader", hdr))?;
        if n == 0 || n > MAX_UNWIND_INFOS {
            return Err(crate::ClrError::corrupt(
                "RealCodeHeader",
                hdr,
                format!("{n} unwind infos"),
            ));
        }
        let mut found = None;
        let mut code_end = start;
        for i in 0..n as u64 {
            let a = hdr + l.code_header_unwind_infos + 12 * i;
            let mut b = [0u8; 12];
            m.read_exact(a, &mut b)
                .map_err(|_| crate::ClrError::read("RUNTIME_FUNCTION", a))?;
            let rf = RuntimeFunction {
                base: module_base,
                begin: u32::from_le_bytes(b[0..4].try_into().unwrap()),
                end: u32::from_le_bytes(b[4..8].try_into().unwrap()),
                unwind: u32::from_le_bytes(b[8..12].try_into().unwrap()),
            };
            let (s, e) = (module_base + rf.begin as u64, module_base + rf.end as u64);
            code_end = code_end.max(e);
            if ip >= s && ip < e && found.is_none() {
                found = Some(rf);
            }
        }
        let unwind = found.ok_or_else(|| {
            crate::ClrError::not_found_at(
                "unwind info",
                ip,
                format!("none of the {n} unwind infos of the method at {start:#x} covers it"),
            )
        })?;
        Ok(CodeInfo {
            kind: CodeKind::Jit,
            method_start: start,
            method_desc: Some(md),
            module: None,
            token: None,
            unwind,
            code_end,
            method_note: None,
        })
    }
}

/// Nibble map version 1 (ExecutionManager contract 1): one nibble per 32-byte bucket, 8 per
/// DWORD, most significant first; value n (1-8): a method starts at bucket + (n-1)*4. Scans
/// back from `ip`'s bucket to the nearest start at or before it.
fn nibble_map_linear(
    read_unit: impl Fn(u64) -> crate::Result<u32>,
    map_base: u64,
    ip: u64,
) -> crate::Result<Option<u64>> {
    let mut bucket = (ip - map_base) >> 5;
    let mut cached: Option<(u64, u32)> = None;
    for _ in 0..MAX_BUCKETS {
        let di = bucket >> 3;
        let dword = match cached {
            Some((i, v)) if i == di => v,
            _ => {
                let v = read_unit(di)?;
                cached = Some((di, v));
                v
            }
        };
        let nib = (dword >> (28 - ((bucket & 7) << 2))) & 0xF;
        if nib != 0 {
            let s = map_base + (bucket << 5) + ((nib as u64 - 1) << 2);
            if s <= ip {
                return Ok(Some(s));
            }
        }
        if bucket == 0 {
            break;
        }
        bucket -= 1;
    }
    Ok(None)
}

/// Nibble map version 2 (ExecutionManager contract 2, .NET 10): as version 1, and a DWORD
/// wholly inside one method holds a pointer to its start relative to the map base: the
/// DWORD's top 28 bits, plus (low nibble − 9) × 4 in its low nibble (9-12, where a nibble
/// is at most 8). So the start is in `ip`'s DWORD or, failing that, in the one before it
/// (a pointer, or its last non-zero nibble); an empty DWORD before it means no method.
fn nibble_map_constant(
    read_unit: impl Fn(u64) -> crate::Result<u32>,
    map_base: u64,
    ip: u64,
) -> crate::Result<Option<u64>> {
    let is_pointer = |u: u32| (u & 0xF) > 8;
    let decode = |u: u32| map_base + ((u & !0xF) as u64) + ((((u & 0xF) - 9) as u64) << 2);
    let rel = ip - map_base;
    let bucket = rel >> 5;
    let di = bucket >> 3;
    let unit = read_unit(di)?;
    if is_pointer(unit) {
        return Ok(Some(decode(unit)));
    }
    // Nibbles of this DWORD from `ip`'s bucket back to the DWORD's first.
    let mut b = bucket;
    loop {
        let nib = (unit >> (28 - ((b & 7) << 2))) & 0xF;
        if nib != 0 {
            let s = map_base + (b << 5) + ((nib as u64 - 1) << 2);
            if s <= ip {
                return Ok(Some(s));
            }
        }
        if b & 7 == 0 {
            break;
        }
        b -= 1;
    }
    if di == 0 {
        return Ok(None);
    }
    let prev = read_unit(di - 1)?;
    if prev == 0 {
        return Ok(None);
    }
    if is_pointer(prev) {
        return Ok(Some(decode(prev)));
    }
    // Its last non-zero nibble.
    for k in (0..8u64).rev() {
        let nib = (prev >> (28 - (k << 2))) & 0xF;
        if nib != 0 {
            return Ok(Some(
                map_base + (((di - 1) * 8 + k) << 5) + ((nib as u64 - 1) << 2),
            ));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A method at 0x130 relative to the base (ExecutionManager.md's example: nibble 5 in
    /// bucket 9) is found from inside it, not from before it; a version-2 pointer DWORD
    /// (0x100 relative, low nibble 9) names its method from anywhere in its 256 bytes.
    #[test]
    fn nibble_maps_find_method_starts() {
        let base = 0x1000u64;
        let units = [0u32, 0x0500_0000, 0, 0];
        let read = |i: u64| Ok(units.get(i as usize).copied().unwrap_or(0));
        assert_eq!(
            nibble_map_linear(read, base, base + 0x132),
            Ok(Some(base + 0x130))
        );
        assert_eq!(nibble_map_linear(read, base, base + 0x12E), Ok(None));
        assert_eq!(
            nibble_map_constant(read, base, base + 0x132),
            Ok(Some(base + 0x130))
        );
        assert_eq!(nibble_map_constant(read, base, base + 0x12E), Ok(None));
        // Next DWORD (buckets 16-23) empty: the start is the previous DWORD's last nibble.
        assert_eq!(
            nibble_map_constant(read, base, base + 0x210),
            Ok(Some(base + 0x130))
        );
        // A pointer DWORD: a method starting at 0x104 covers the whole third DWORD.
        let units = [0x0000_0000u32, 0x2000_0000, 0x0000_010A];
        let read = |i: u64| Ok(units.get(i as usize).copied().unwrap_or(0));
        assert_eq!(
            nibble_map_constant(read, base, base + 0x2F0),
            Ok(Some(base + 0x104))
        );
    }
}
